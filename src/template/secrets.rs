//! Secret tracking: every context records which secret variables its renderings read, through
//! other variables, `hostvars` and facts alike, so that text rendered from a secret, in whatever
//! form a filter gave it, is withheld from every output. What an expression prints after
//! reading a secret, and a variable rendered from one, is learned as a secret itself
//! (`DerivedSecrets`): the taint follows the value, so a host printing it back is masked too.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use minijinja::value::{Value, ValueKind};

use super::LazyVars;
use crate::secret::{DerivedSecrets, SecretNames};

/// Which secret variables the renderings of a context read: shared by the context and every
/// context reached through it (`hostvars[...]`), kept as a stack of scopes so that a variable
/// rendered as it is read (`LazyVars::resolve`) knows what it read, and says so again each
/// time its cached value is read.
#[derive(Debug)]
pub(super) struct SecretReads {
    pub(super) names: SecretNames,
    /// More names to treat as secrets: facts set from secrets during a run.
    derived: Mutex<BTreeSet<String>>,
    /// Text computed from secrets, shared with the site's templates and the run's redactor.
    pub(super) derived_text: Arc<DerivedSecrets>,
    /// Open scopes, innermost last; the first is the context's own and is never closed.
    scopes: Mutex<Vec<BTreeSet<String>>>,
}

impl SecretReads {
    pub(super) fn new(names: SecretNames, derived_text: Arc<DerivedSecrets>) -> SecretReads {
        SecretReads { names, derived: Mutex::default(), derived_text, scopes: Mutex::new(vec![BTreeSet::new()]) }
    }

    pub(super) fn is_secret(&self, name: &str) -> bool {
        self.names.is_secret(name) || self.derived.lock().expect("secret names").contains(name)
    }

    pub(super) fn record<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        let mut scopes = self.scopes.lock().expect("secret reads");
        let top = scopes.last_mut().expect("the context's own scope");
        let mut whole = false;
        for n in names {
            whole |= is_whole_variable(n);
            top.insert(n.clone());
        }
        if whole {
            flag_read();
        }
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
        // What read them is a value computed from secrets for the rendering that asked for it.
        if read.iter().any(|n| is_whole_variable(n)) {
            flag_read();
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

/// A secret variable itself (`api_token`), not a secret key inside a variable (`db.password`,
/// recorded when `db` is read): reading `db.host` computes nothing from the password.
pub(super) fn is_whole_variable(name: &str) -> bool {
    !name.contains(['.', '['])
}

/// One rendering under way on this thread: its template text, whether a secret was read since
/// it last printed a value, and the text values of other variables read since that secret.
struct Frame {
    source: String,
    read: bool,
    plain: Vec<String>,
}

thread_local! {
    /// The renderings under way on this thread, innermost last (pushed with `render::ROOTS`).
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

fn flag_read() {
    FRAMES.with(|f| {
        if let Some(top) = f.borrow_mut().last_mut() {
            top.read = true;
        }
    });
}

pub(super) fn open_frame(source: &str) {
    FRAMES.with(|f| f.borrow_mut().push(Frame { source: source.to_string(), read: false, plain: Vec::new() }));
}

/// Ends the innermost rendering; a secret it read and printed nothing of counts for the
/// rendering around it (a filter's argument, a variable resolved in an expression).
pub(super) fn close_frame() -> bool {
    FRAMES.with(|f| {
        let mut f = f.borrow_mut();
        let read = f.pop().is_some_and(|fr| fr.read);
        if read && let Some(outer) = f.last_mut() {
            outer.read = true;
        }
        read
    })
}

/// Runs `f` (which renders) and says whether it read a secret that nothing printed since: its
/// value was computed from one.
pub(super) fn noting_reads<T>(f: impl FnOnce() -> T) -> (T, bool) {
    open_frame("");
    let out = f();
    let read = FRAMES.with(|fr| fr.borrow_mut().pop().is_some_and(|fr| fr.read));
    (out, read)
}

/// For the minijinja formatter, about to print a value: the innermost rendering's template
/// text when it read a secret since it last printed (the value was computed from it:
/// `('pre:' ~ api_token) | b64encode`, `key[:12]`, a `regex_replace`), which it then forgets.
/// The formatter learns the value (`learn_derived`); a value the template's own text holds
/// (`'on' if pw else 'off'`), a boolean or a number (a test's result, a length) is not learned.
/// With it, the text values of the other variables read since the secret: a value printed that
/// is one of them (`{% if pw %}{{ user }}`) was only chosen by the secret, not computed from it.
pub(super) fn take_unprinted_read() -> Option<(String, Vec<String>)> {
    FRAMES.with(|f| {
        let mut f = f.borrow_mut();
        let top = f.last_mut()?;
        let plain = std::mem::take(&mut top.plain);
        std::mem::take(&mut top.read).then(|| (top.source.clone(), plain))
    })
}

/// A variable that holds no secret was read, giving `value`: noted while the rendering has read
/// a secret it has not printed (see `take_unprinted_read`).
pub(super) fn note_plain(value: &Value) {
    FRAMES.with(|f| {
        if let Some(top) = f.borrow_mut().last_mut()
            && top.read
            && top.plain.len() < 64
            && let Some(s) = value.as_str()
        {
            top.plain.push(s.to_string());
        }
    });
}

/// Learns `value`, computed from secrets in `ctx`, as a secret (see `derived_texts`), unless it
/// is one of `plain`, values of variables that hold no secret.
pub(super) fn learn_derived(ctx: &Value, value: &Value, source: &str, plain: &[String]) {
    if let Some(r) = reads_of(ctx) {
        r.derived_text.learn(derived_texts(value, source).into_iter().filter(|t| !plain.contains(t)));
    }
}

/// The texts of a value computed from secrets: a string itself; a list's or mapping's text as
/// printed and each string inside it; nothing for a boolean, a number or a null. Text that
/// `source`, the template, holds literally is no secret.
pub(super) fn derived_texts(value: &Value, source: &str) -> Vec<String> {
    let mut out = Vec::new();
    collect_texts(value, source, &mut out, 0);
    out
}

fn collect_texts(value: &Value, source: &str, out: &mut Vec<String>, depth: usize) {
    let mut push = |t: String| {
        if !t.is_empty() && !source.contains(t.as_str()) {
            out.push(t);
        }
    };
    match value.kind() {
        ValueKind::Bool | ValueKind::Number | ValueKind::None | ValueKind::Undefined | ValueKind::Invalid => {}
        ValueKind::String | ValueKind::Bytes => push(value.to_string()),
        _ => {
            push(value.to_string());
            if depth > 8 {
                return;
            }
            let Ok(items) = value.try_iter() else { return };
            let map = value.kind() == ValueKind::Map;
            for item in items {
                let v = if map { value.get_item(&item).unwrap_or_default() } else { item.clone() };
                if map {
                    collect_texts(&item, source, out, depth + 1);
                }
                collect_texts(&v, source, out, depth + 1);
            }
        }
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

    /// The derived forms an independent check found in clear, and more of the kind: each
    /// rendered value is learned, so the host printing it back (an `echo`) is masked, whole
    /// and in its encodings.
    const DERIVED_FORMS: &[&str] = &[
        "('pre:' ~ api_token ~ ':post') | b64encode",
        "registry_password | regex_replace('[0-9]', '#')",
        "signing_key[:12]",
        "signing_key[-10:] | upper",
        "api_token | replace('-', '')",
        "[api_token, 'x'] | join(',')",
        "'%s-suffix' | format(api_token)",
        "api_token | reverse",
        "api_token | hash('sha256')",
        "(api_token ~ ' x') | urlencode",
        "api_token.split('-')[1]",
        "api_token | regex_search('[a-z]+[0-9]+')",
        "login_line",
        "login_line | b64encode",
        "{'auth': api_token[2:]} | to_json",
        "registry_password | regex_search('Pw-[0-9]+')",
    ];

    fn derived_site() -> (Templates, Value, crate::secret::Redactor) {
        let t = Templates::new(None).with_secret_names(SecretNames::new(vec!["signing_key".into()]));
        let vars: crate::inventory::Vars = serde_json::from_value(serde_json::json!({
            "api_token": "tok-abc123-Zq9x", "registry_password": "Reg1stry-Pw-77",
            "signing_key": "sk_live_51HqLyjWDarjtT1zdp7dc", "user": "ops",
            "login_line": "{{ user }}:{{ api_token | b64encode }}",
            "site_admin": "operator-one", "db": {"host": "db-primary-1", "password": "db-Pw-3141"},
        }))
        .unwrap();
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        let secrets = ["tok-abc123-Zq9x", "Reg1stry-Pw-77", "sk_live_51HqLyjWDarjtT1zdp7dc"];
        let r = crate::secret::Redactor::new(secrets.iter().map(|s| s.to_string()).collect())
            .with_derived(t.derived_secrets());
        (t, ctx, r)
    }

    #[test]
    fn values_computed_from_secrets_are_masked_wherever_they_come_back() {
        use crate::secret::MASK;
        let (t, ctx, r) = derived_site();
        for expr in DERIVED_FORMS {
            let value = t.render_str(&format!("{{{{ {expr} }}}}"), &ctx).unwrap();
            // What a host prints back of it, as it is and in the forms copctl writes.
            let echoed = format!("out: {value} | {} | {}", crate::text::quote::quoted_body(&value), {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.encode(&value)
            });
            let shown = r.redact(&echoed);
            assert_eq!(shown, format!("out: {MASK} | {MASK} | {MASK}"), "{expr} = {value:?}");
        }
        // As a task's set_fact renders it: a single expression, evaluated natively.
        let v = t.eval("signing_key[3:15]", &ctx).unwrap();
        assert_eq!(r.redact(&format!("fact={v}")), format!("fact={MASK}"));
    }

    #[test]
    fn what_a_secret_only_decides_is_not_learned() {
        let (t, ctx, r) = derived_site();
        for (text, out) in [
            ("{{ 'enabled' if api_token else 'disabled' }}", "enabled"),
            ("{{ api_token | length }}", "15"),
            ("{{ api_token is defined }}", "True"),
            ("{% if api_token %}{% endif %}{{ user }}-{{ 'static' }}", "ops-static"),
            ("{{ api_token[:2] }}", "to"),
            ("{% if api_token %}{{ site_admin }}{% endif %}", "operator-one"),
            ("{{ site_admin if api_token else 'nobody' }}", "operator-one"),
            ("{{ db.host }}", "db-primary-1"),
        ] {
            assert_eq!(t.render_str(text, &ctx).unwrap(), out, "{text}");
            assert_eq!(r.redact(&format!("[{out}]")), format!("[{out}]"), "{text} is not a secret");
        }
    }

    /// The corpus fuzzed: random secrets (quotes, spaces, `$`, backslashes, non-ASCII) through
    /// random chains of the forms' filters, each value masked in what a host prints back.
    #[test]
    fn derived_forms_fuzzed_are_masked() {
        use crate::secret::MASK;
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        const CHARS: &[char] = &['a', 'Z', '7', '-', '_', ':', '\'', ' ', '$', '\\', 'ä', '/', '+', '=', 'ß', '9', 'q'];
        const STEPS: &[&str] = &[
            "| b64encode",
            "| upper",
            "| lower",
            "| reverse",
            "| regex_replace('[0-9]', '#')",
            "| replace('a', 'A')",
            "| urlencode",
            "| to_json",
            "| quote",
            "| hash('sha1')",
            "| truncate(9, true, '')",
        ];
        for case in 0..300 {
            let secret: String = (0..8 + next(16)).map(|_| CHARS[next(CHARS.len())]).collect();
            let t = Templates::new(None);
            let mut vars = crate::inventory::Vars::new();
            vars.insert("app_secret".into(), serde_json::json!(secret));
            let ctx = host_context(&t, "h1", vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
            let r = crate::secret::Redactor::new(vec![secret.clone()]).with_derived(t.derived_secrets());
            let mut expr = match next(4) {
                0 => "('x' ~ app_secret ~ 'y')".to_string(),
                1 => format!("app_secret[{}:]", next(4)),
                2 => format!("app_secret[:{}]", 5 + next(4)),
                _ => "app_secret".to_string(),
            };
            for _ in 0..1 + next(3) {
                expr = format!("({expr} {})", STEPS[next(STEPS.len())]);
            }
            let value = t.render_str(&format!("{{{{ {expr} }}}}"), &ctx).unwrap();
            if value.chars().count() < crate::secret::MIN_DERIVED {
                continue;
            }
            let shown = r.redact(&format!("<{value}>"));
            assert!(
                !shown.contains(&value) && shown.contains(MASK),
                "case {case}: {expr} with {secret:?} = {value:?}: {shown}"
            );
        }
    }
}
