//! The context a template sees: a host's variables, each rendered in that same context when it
//! is read (Ansible's lazy templating), with the names copctl sets (`inventory_hostname`,
//! `groups`, `hostvars`, `omit`, ...); another host's through `hostvars`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Environment, ErrorKind};

use super::native::{single_expression, with_dropped_newline};
use super::render::{render_text, with_root};
use super::secrets::{SecretReads, secret_paths};
use super::source::{escape_backslashes, prepared};
use super::{HostVarLookup, LazyVars, Magic, OMIT, Syntax, Templates, to_value};
use crate::text::python::is_template;

/// `hostvars`: another host's variables, lazily rendered in that host's own context.
#[derive(Debug)]
pub(super) struct HostVars {
    pub(super) lookup: Arc<dyn HostVarLookup>,
    env: Arc<Environment<'static>>,
    groups: Value,
    reads: Arc<SecretReads>,
}

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let host = key.as_str()?;
        let vars = self.lookup.vars_of(host)?;
        let mut globals = BTreeMap::new();
        globals.insert("groups".to_string(), self.groups.clone());
        globals.insert("hostvars".to_string(), Value::from_dyn_object(self.clone()));
        let mut ctx = LazyVars::new(self.env.clone(), vars, Some(Value::from(globals)), self.reads.clone());
        ctx.ready.insert("inventory_hostname".into(), Value::from(host));
        Some(Value::from_object(ctx))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.lookup.host_names().into_iter().map(Value::from).collect())
    }
}

/// The context a template sees for one host: its variables (rendered lazily when they hold
/// templates) and the names `inventory_hostname`, `groups`, `group_names`, `hostvars`.
pub fn host_context(
    templates: &Templates,
    host: &str,
    vars: crate::inventory::Vars,
    groups: Value,
    group_names: &[String],
    hostvars: Arc<dyn HostVarLookup>,
) -> Value {
    host_context_with(templates, host, crate::vars::VarLayers::one(vars), groups, group_names, hostvars, None)
}

/// `host_context` with the play's magic variables.
pub fn host_context_with(
    templates: &Templates,
    host: &str,
    vars: crate::vars::VarLayers,
    groups: Value,
    group_names: &[String],
    hostvars: Arc<dyn HostVarLookup>,
    magic: Option<&Magic>,
) -> Value {
    let reads = Arc::new(SecretReads::new(templates.secret_names.clone(), templates.derived.clone()));
    let mut ctx = LazyVars::new(templates.env.clone(), vars, None, reads.clone());
    let hostvars = HostVars { lookup: hostvars, env: templates.env.clone(), groups: groups.clone(), reads };
    ctx.ready.insert("inventory_hostname".into(), Value::from(host));
    ctx.ready.insert("inventory_hostname_short".into(), Value::from(host.split('.').next().unwrap_or(host)));
    ctx.ready.insert("groups".into(), groups);
    ctx.ready.insert("group_names".into(), crate::template::to_value(group_names));
    ctx.ready.insert("hostvars".into(), Value::from_object(hostvars));
    ctx.ready.insert("omit".into(), Value::from(OMIT));
    for (k, v) in magic.map(|m| m.iter()).into_iter().flatten() {
        ctx.ready.insert((*k).into(), v.clone());
    }
    // The ansible-core release whose behaviour copctl follows (its differential tests' oracle).
    ctx.ready.insert(
        "ansible_version".into(),
        to_value(serde_json::json!({"full": "2.19.0", "major": 2, "minor": 19, "revision": 0, "string": "2.19.0"})),
    );
    Value::from_object(ctx)
}

impl Templates {
    /// A context of host-independent variables (a play's `hosts:`, `require:`), rendered lazily.
    pub fn context(&self, vars: &crate::inventory::Vars) -> Value {
        let reads = Arc::new(SecretReads::new(self.secret_names.clone(), self.derived.clone()));
        Value::from_object(LazyVars::new(self.env.clone(), crate::vars::VarLayers::one(vars.clone()), None, reads))
    }
}

thread_local! {
    /// The variables being rendered on this thread, innermost last: a name met again is a cycle.
    static RESOLVING: std::cell::RefCell<Vec<(usize, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

const CYCLE: &str = "variables refer to each other in a cycle";

impl LazyVars {
    /// Takes the variables' layers (shared, never copied per task).
    fn new(
        env: Arc<Environment<'static>>,
        vars: crate::vars::VarLayers,
        fallback: Option<Value>,
        reads: Arc<SecretReads>,
    ) -> LazyVars {
        LazyVars { env, ready: BTreeMap::new(), raw: vars, fallback, rendered: Mutex::new(BTreeMap::new()), reads }
    }

    /// Records a read of `name` when it is, or holds, a secret (`db` holding `db.password`); says
    /// whether it is one.
    fn note(&self, name: &str) -> bool {
        if self.reads.is_secret(name) {
            self.reads.record([&name.to_string()]);
            return true;
        } else if let Some(v @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) = self.raw.get(name) {
            let mut paths = Vec::new();
            secret_paths(&self.reads.names, name, v, &mut paths);
            if !paths.is_empty() {
                self.reads.record(&paths);
            }
        }
        false
    }

    fn resolve(self: &Arc<Self>, name: &str, raw: &serde_json::Value) -> Value {
        if let Some((v, read)) = self.rendered.lock().expect("render cache").get(name) {
            self.reads.record(read);
            return v.clone();
        }
        let me = (Arc::as_ptr(self) as usize, name.to_string());
        let cycle = RESOLVING.with(|r| {
            let r = r.borrow();
            // Through `hostvars` each read makes a new context: depth bounds those cycles.
            let start = r.iter().position(|x| *x == me).or_else(|| (r.len() >= 32).then(|| r.len() - 8));
            start.map(|p| {
                let mut chain: Vec<&str> = r[p..].iter().map(|x| x.1.as_str()).collect();
                chain.push(name);
                chain.join(" → ")
            })
        });
        if let Some(chain) = cycle {
            return Value::from(minijinja::Error::new(ErrorKind::InvalidOperation, format!("{CYCLE}: {chain}")));
        }
        RESOLVING.with(|r| r.borrow_mut().push(me));
        let ctx = Value::from_dyn_object(self.clone());
        self.reads.open();
        let out = render_json(&self.env, raw, &ctx);
        let read = self.reads.close();
        RESOLVING.with(|r| r.borrow_mut().pop());
        match out {
            Ok(v) => {
                // A variable rendered from secrets is one, whatever its name.
                if read.iter().any(|n| super::secrets::is_whole_variable(n)) {
                    self.reads.derived_text.learn(super::secrets::derived_texts(&v, &raw.to_string()));
                }
                self.rendered.lock().expect("render cache").insert(name.to_string(), (v.clone(), read));
                v
            }
            Err(e) => {
                let detail = e.detail().unwrap_or_default().to_string();
                if detail.starts_with(CYCLE) || detail.starts_with("variable '") {
                    return Value::from(e);
                }
                let what = if detail.is_empty() { e.kind().to_string() } else { detail };
                Value::from(minijinja::Error::new(e.kind(), format!("variable '{name}' ({raw}): {what}")))
            }
        }
    }
}

impl Object for LazyVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        let plain = |v: Value, secret: bool| {
            if !secret {
                super::secrets::note_plain(&v);
            }
            Some(v)
        };
        if let Some(v) = self.ready.get(name) {
            let secret = self.note(name);
            return plain(v.clone(), secret);
        }
        if let Some((raw, data)) = self.raw.get_data(name) {
            let secret = self.note(name);
            if !data && holds_template(raw) {
                return plain(self.resolve(name, raw), secret);
            }
            let mut cache = self.rendered.lock().expect("render cache");
            let v = cache.entry(name.to_string()).or_insert_with(|| (to_value(raw), BTreeSet::new())).0.clone();
            drop(cache);
            return plain(v, secret);
        }
        let found = self.fallback.as_ref().and_then(|f| f.get_attr(name).ok()).filter(|v| !v.is_undefined());
        // No facts gathered: `ansible_facts` is an empty mapping, as Ansible's is.
        found.or_else(|| (name == "ansible_facts").then(|| Value::from(BTreeMap::<String, Value>::new())))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<Value> =
            self.ready.keys().map(String::as_str).chain(self.raw.names()).map(Value::from).collect();
        keys.sort();
        keys.dedup();
        Enumerator::Values(keys)
    }
}

/// A variable of a task's context as the site wrote it, before any rendering (assert's `that:
/// '{{ checks }}'` takes the list, not the rendered items); `None` where `ctx` is no task's.
pub fn raw_var(ctx: &Value, name: &str) -> Option<serde_json::Value> {
    let vars = ctx.downcast_object_ref::<LazyVars>()?;
    vars.ready.get(name).map_or_else(|| vars.raw.get(name).cloned(), |v| serde_json::to_value(v).ok())
}

fn holds_template(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => is_template(s),
        serde_json::Value::Array(a) => a.iter().any(holds_template),
        serde_json::Value::Object(m) => m.values().any(holds_template),
        _ => false,
    }
}

/// Renders every string of a variable's value. A string that is one expression (`"{{ groups['w'] }}"`)
/// keeps the expression's type, as Ansible's native values do; other strings render to text.
fn render_json(env: &Environment<'static>, v: &serde_json::Value, ctx: &Value) -> Result<Value, minijinja::Error> {
    Ok(match v {
        serde_json::Value::String(s) if is_template(s) => match single_expression(&escape_backslashes(s)) {
            Some(expr) => {
                let v = with_root(ctx, expr, || env.compile_expression(&prepared(expr))?.eval(ctx))?;
                if v.is_undefined() {
                    return Err(minijinja::Error::new(
                        ErrorKind::UndefinedError,
                        format!("'{}' is undefined", expr.trim()),
                    ));
                }
                with_dropped_newline(s, v)
            }
            None => Value::from(render_text(env, "<string>", &escape_backslashes(s), ctx, &Syntax::default())?),
        },
        serde_json::Value::Array(a) => {
            Value::from(a.iter().map(|x| render_json(env, x, ctx)).collect::<Result<Vec<_>, _>>()?)
        }
        // A mapping, in its order (minijinja makes a list of pairs from an iterator of pairs).
        serde_json::Value::Object(m) => Value::from_object(
            m.iter()
                .map(|(k, x)| Ok((Value::from(k.as_str()), render_json(env, x, ctx)?)))
                .collect::<Result<indexmap::IndexMap<Value, Value>, minijinja::Error>>()?,
        ),
        other => to_value(other),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::template::{NoHosts, Templates, describe_error, host_context, to_value};

    #[test]
    fn a_variable_whose_value_reads_an_undefined_one_is_undefined_to_default_and_defined() {
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("deep".into(), serde_json::json!("{{ nope }}"));
        let ctx = host_context(&t, "h", vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_str("{{ deep | default('d') }} {{ deep is undefined }}", &ctx).unwrap(), "d True");
        assert!(t.judge("deep is undefined and deep.x is undefined", &ctx).unwrap().is_true());
        // Printed, it fails on what it reads.
        let e = t.render_str("{{ deep }}", &ctx).unwrap_err();
        assert_eq!(describe_error(&e), "variable 'deep' (\"{{ nope }}\"): 'nope' is undefined");
    }
}
