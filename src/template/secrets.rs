//! Secret tracking: every context records which secret variables its renderings read, through
//! other variables, `hostvars` and facts alike, so that text rendered from a secret, in whatever
//! form a filter gave it, is withheld from every output.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use minijinja::value::Value;

use super::LazyVars;
use crate::secret::SecretNames;

/// Which secret variables the renderings of a context read: shared by the context and every
/// context reached through it (`hostvars[...]`), kept as a stack of scopes so that a variable
/// rendered as it is read (`LazyVars::resolve`) knows what it read, and says so again each
/// time its cached value is read.
#[derive(Debug)]
pub(super) struct SecretReads {
    pub(super) names: SecretNames,
    /// More names to treat as secrets: facts set from secrets during a run.
    derived: Mutex<BTreeSet<String>>,
    /// Open scopes, innermost last; the first is the context's own and is never closed.
    scopes: Mutex<Vec<BTreeSet<String>>>,
}

impl SecretReads {
    pub(super) fn new(names: SecretNames) -> SecretReads {
        SecretReads { names, derived: Mutex::default(), scopes: Mutex::new(vec![BTreeSet::new()]) }
    }

    pub(super) fn is_secret(&self, name: &str) -> bool {
        self.names.is_secret(name) || self.derived.lock().expect("secret names").contains(name)
    }

    pub(super) fn record<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        let mut scopes = self.scopes.lock().expect("secret reads");
        let top = scopes.last_mut().expect("the context's own scope");
        top.extend(names.into_iter().cloned());
    }

    pub(super) fn open(&self) {
        self.scopes.lock().expect("secret reads").push(BTreeSet::new());
    }

    /// Closes the innermost scope; what it read counts for the scope around it too.
    pub(super) fn close(&self) -> BTreeSet<String> {
        let mut scopes = self.scopes.lock().expect("secret reads");
        let read = if scopes.len() > 1 { scopes.pop().unwrap_or_default() } else { BTreeSet::new() };
        if let Some(outer) = scopes.last_mut() {
            outer.extend(read.iter().cloned());
        }
        read
    }

    fn current(&self, take: bool) -> BTreeSet<String> {
        let mut scopes = self.scopes.lock().expect("secret reads");
        let top = scopes.last_mut().expect("the context's own scope");
        if take { std::mem::take(top) } else { top.clone() }
    }
}

fn reads_of(ctx: &Value) -> Option<&Arc<SecretReads>> {
    ctx.downcast_object_ref::<LazyVars>().map(|l| &l.reads)
}

/// The secret variables read through `ctx` since the last call, which it then forgets: a
/// variable named like a secret or listed in `secret_vars` (`admin_password`), read directly,
/// through another variable whose value reads it, through `hostvars`, or a secret key inside a
/// variable (`db.password`). Empty for a value that is not a context made here.
pub fn take_secret_reads(ctx: &Value) -> BTreeSet<String> {
    reads_of(ctx).map(|r| r.current(true)).unwrap_or_default()
}

/// What `take_secret_reads` would return, without forgetting it.
pub fn secret_reads(ctx: &Value) -> BTreeSet<String> {
    reads_of(ctx).map(|r| r.current(false)).unwrap_or_default()
}

/// Runs `f`, which renders with `ctx`, and says which secret variables it read (they count
/// for `take_secret_reads` too).
pub fn tracking_secrets<R>(ctx: &Value, f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
    let Some(reads) = reads_of(ctx) else { return (f(), BTreeSet::new()) };
    reads.open();
    let out = f();
    (out, reads.close())
}

/// Treats `names` as secret variables in `ctx` (and the contexts reached through it): facts a
/// run has set from secrets.
pub fn treat_as_secret<'a>(ctx: &Value, names: impl IntoIterator<Item = &'a String>) {
    if let Some(r) = reads_of(ctx) {
        r.derived.lock().expect("secret names").extend(names.into_iter().cloned());
    }
}

/// Where secret-named keys sit inside a value, as dotted paths below `prefix`.
pub(super) fn secret_paths(names: &SecretNames, prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let path = format!("{prefix}.{k}");
                if names.is_secret(k) {
                    out.push(path);
                } else {
                    secret_paths(names, &path, x, out);
                }
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                secret_paths(names, &format!("{prefix}[{i}]"), x, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::template::{HostVarLookup, NoHosts, Templates, host_context, to_value};

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn renderings_say_which_secrets_they_read_in_any_form() {
        let t = Templates::new(None).with_secret_names(SecretNames::new(vec!["harbor_auth".into()]));
        let vars: crate::inventory::Vars = serde_json::from_value(serde_json::json!({
            "admin_password": "pw'1 $x", "harbor_auth": "h-auth", "user": "ops",
            "login": "admin:{{ admin_password }}", "db": {"host": "db1", "password": "dbpw"},
        }))
        .unwrap();
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        let render = |text: &str| tracking_secrets(&ctx, || t.render_str(text, &ctx).unwrap());
        assert_eq!(render("{{ user }}@{{ inventory_hostname }}"), ("ops@h1".to_string(), set(&[])));
        for expr in [
            "admin_password",
            "admin_password | quote",
            "admin_password | to_json",
            "admin_password | tojson",
            "admin_password | b64encode",
            "admin_password | urlencode",
            "admin_password | regex_replace('[0-9]', '#')",
            "admin_password | upper",
            "admin_password[1:]",
            "'user:' ~ admin_password",
            "admin_password | length",
        ] {
            assert_eq!(render(&format!("{{{{ {expr} }}}}")).1, set(&["admin_password"]), "{expr}");
        }
        // Through another variable, twice: the second read comes from the cache, and counts.
        for _ in 0..2 {
            assert_eq!(render("{{ login | b64encode }}").1, set(&["admin_password"]));
        }
        assert_eq!(render("{{ harbor_auth }}").1, set(&["harbor_auth"]), "listed in secret_vars");
        assert_eq!(render("{{ db.host }}").1, set(&["db.password"]), "a variable holding a secret key");
        assert_eq!(
            take_secret_reads(&ctx),
            set(&["admin_password", "db.password", "harbor_auth"]),
            "every reading so far"
        );
        assert_eq!(take_secret_reads(&ctx), set(&[]), "taken");
        // A fact set from a secret during a run.
        treat_as_secret(&ctx, &["user".to_string()]);
        assert_eq!(render("{{ user | upper }}").1, set(&["user"]));
        // Conditions and template files read through the same context.
        assert!(t.eval("admin_password != ''", &ctx).unwrap().is_true());
        assert_eq!(take_secret_reads(&ctx), set(&["admin_password", "user"]));
    }

    #[derive(Debug)]
    struct TwoHosts;
    impl HostVarLookup for TwoHosts {
        fn host_names(&self) -> Vec<String> {
            vec!["h1".into(), "h2".into()]
        }
        fn vars_of(&self, host: &str) -> Option<crate::vars::VarLayers> {
            let v = serde_json::json!({"node_token": format!("tok-{host}"), "peer": "{{ node_token }}@{{ inventory_hostname }}"});
            Some(crate::vars::VarLayers::one(serde_json::from_value(v).ok()?))
        }
    }

    #[test]
    fn reads_through_hostvars_count() {
        let t = Templates::new(None);
        let ctx = host_context(
            &t,
            "h1",
            crate::inventory::Vars::new(),
            to_value(serde_json::json!({})),
            &[],
            Arc::new(TwoHosts),
        );
        let (out, read) = tracking_secrets(&ctx, || t.render_str("{{ hostvars['h2'].node_token | upper }}", &ctx));
        assert_eq!((out.unwrap(), read), ("TOK-H2".to_string(), set(&["node_token"])));
        let (out, read) = tracking_secrets(&ctx, || t.render_str("{{ hostvars['h2']['peer'] }}", &ctx));
        assert_eq!((out.unwrap(), read), ("tok-h2@h2".to_string(), set(&["node_token"])));
        let (_, read) = tracking_secrets(&ctx, || t.render_str("{{ groups | length }} {{ inventory_hostname }}", &ctx));
        assert_eq!(read, set(&[]));
    }

    #[test]
    fn every_filter_form_of_a_secret_is_masked_by_the_redactor() {
        use crate::secret::{MASK, Redactor};
        let pw = "pä'ss w$rd\\1<&ÿ?!";
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("admin_password".into(), serde_json::json!(pw));
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        let r = Redactor::new(vec![pw.into()]);
        for (expr, masked) in [
            ("admin_password | quote", format!("'{MASK}'")),
            ("admin_password | to_json", format!("\"{MASK}\"")),
            ("admin_password | tojson", format!("\"{MASK}\"")),
            ("admin_password | b64encode", MASK.to_string()),
            ("admin_password | urlencode", MASK.to_string()),
            ("admin_password | upper", MASK.to_string()),
            ("admin_password | lower", MASK.to_string()),
            ("('u:' ~ admin_password ~ '@h') | quote", format!("'u:{MASK}@h'")),
        ] {
            let out = t.render_str(&format!("{{{{ {expr} }}}}"), &ctx).unwrap();
            assert_eq!(r.redact(&out), masked, "{expr}: {out}");
        }
    }
}
