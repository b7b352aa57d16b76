//! Templates: one minijinja environment with strict undefined (a missing variable is an error,
//! never an empty string), Ansible-familiar filters (`quote`, `bool`, `to_json`, `b64encode`,
//! `regex_replace`, ...) and the names `inventory_hostname`, `groups`, `group_names`, `hostvars`.
//! Template files come from a site's override directory first, then the embedded `templates/`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use include_dir::{Dir, include_dir};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};

static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Looks up the variables of any host, for `hostvars[...]`.
pub trait HostVarLookup: Send + Sync + std::fmt::Debug {
    fn host_names(&self) -> Vec<String>;
    fn vars_of(&self, host: &str) -> Option<serde_json::Value>;
}

/// `hostvars`: another host's variables, lazily rendered in that host's own context.
#[derive(Debug)]
struct HostVars {
    lookup: Arc<dyn HostVarLookup>,
    env: Arc<Environment<'static>>,
    groups: Value,
}

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let serde_json::Value::Object(vars) = self.lookup.vars_of(key.as_str()?)? else { return None };
        let vars: crate::inventory::Vars = vars.into_iter().collect();
        let mut globals = BTreeMap::new();
        globals.insert("groups".to_string(), self.groups.clone());
        globals.insert("hostvars".to_string(), Value::from_dyn_object(self.clone()));
        Some(Value::from_object(LazyVars::new(self.env.clone(), &vars, Some(Value::from(globals)))))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.lookup.host_names().into_iter().map(Value::from).collect())
    }
}

pub struct Templates {
    env: Arc<Environment<'static>>,
    override_dir: Option<PathBuf>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates").field("override_dir", &self.override_dir).finish()
    }
}

fn load_template(override_dir: &Option<PathBuf>, name: &str) -> Option<String> {
    if name.split('/').any(|c| c == "..") {
        return None;
    }
    if let Some(dir) = override_dir
        && let Ok(text) = std::fs::read_to_string(dir.join(name))
    {
        return Some(text);
    }
    EMBEDDED.get_file(name).and_then(|f| f.contents_utf8()).map(str::to_string)
}

impl Templates {
    pub fn new(override_dir: Option<PathBuf>) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Ansible's template settings: trim_blocks on, trailing newline kept.
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .keep_trailing_newline(true)
                .build()
                .expect("valid syntax config"),
        );
        // minijinja escapes by file name (`config.yaml.j2` would get JSON quoting); Ansible never
        // escapes, and config files must come out exactly as written.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        let dir = override_dir.clone();
        env.set_loader(move |name| Ok(load_template(&dir, name)));
        add_filters(&mut env);
        Templates { env: Arc::new(env), override_dir }
    }

    /// The text of a template file, for error snippets and checks.
    pub fn source(&self, name: &str) -> Option<String> {
        load_template(&self.override_dir, name)
    }

    pub fn render_file(&self, name: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }

    /// Renders a string when it holds template syntax; plain strings pass through untouched.
    /// Variables holding templates are rendered as they are read (see `LazyVars`), so the
    /// output is never rendered again: text that only looks like a template (`{% raw %}`, a
    /// registered stdout) stays as it is.
    pub fn render_str(&self, text: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        if !is_template(text) {
            return Ok(text.to_string());
        }
        self.env.render_str(text, ctx)
    }

    /// A context of host-independent variables (a play's `hosts:`, `require:`), rendered lazily.
    pub fn context(&self, vars: &crate::inventory::Vars) -> Value {
        Value::from_object(LazyVars::new(self.env.clone(), vars, None))
    }

    /// Evaluates a bare expression (`when:`, `until:`, `changed_when:`), Ansible-style.
    pub fn eval(&self, expr: &str, ctx: &Value) -> Result<Value, minijinja::Error> {
        let expr = expr.trim();
        let expr = expr.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")).unwrap_or(expr);
        self.env.compile_expression(expr)?.eval(ctx)
    }

    pub fn is_undefined_error(e: &minijinja::Error) -> bool {
        e.kind() == ErrorKind::UndefinedError
    }
}

/// A template error in one line: what is undefined or wrong.
pub fn describe_error(e: &minijinja::Error) -> String {
    let mut msg = match e.detail() {
        Some(d) => d.to_string(),
        None => e.kind().to_string(),
    };
    if Templates::is_undefined_error(e) && !msg.contains("undefined") {
        msg = format!("undefined variable: {msg}");
    }
    msg
}

/// The context a template sees for one host: its variables (rendered lazily when they hold
/// templates) and the names `inventory_hostname`, `groups`, `group_names`, `hostvars`.
pub fn host_context(
    templates: &Templates,
    host: &str,
    vars: &crate::inventory::Vars,
    groups: Value,
    group_names: &[String],
    hostvars: Arc<dyn HostVarLookup>,
) -> Value {
    let mut ctx = LazyVars::new(templates.env.clone(), vars, None);
    let hostvars = HostVars { lookup: hostvars, env: templates.env.clone(), groups: groups.clone() };
    ctx.ready.insert("inventory_hostname".into(), Value::from(host));
    ctx.ready.insert("inventory_hostname_short".into(), Value::from(host.split('.').next().unwrap_or(host)));
    ctx.ready.insert("groups".into(), groups);
    ctx.ready.insert("group_names".into(), crate::template::to_value(group_names));
    ctx.ready.insert("hostvars".into(), Value::from_object(hostvars));
    Value::from_object(ctx)
}

/// Whether a string holds template syntax.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
}

fn holds_template(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => is_template(s),
        serde_json::Value::Array(a) => a.iter().any(holds_template),
        serde_json::Value::Object(m) => m.values().any(holds_template),
        _ => false,
    }
}

thread_local! {
    /// The variables being rendered on this thread, innermost last: a name met again is a cycle.
    static RESOLVING: std::cell::RefCell<Vec<(usize, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

const CYCLE: &str = "variables refer to each other in a cycle";

/// A template context whose variables holding templates (`node_token: "{{ inventory_hostname }}-x"`)
/// are rendered when they are read, in the same context, as Ansible's lazy templating does: in a
/// template file, a step's arguments, `when` or a play's pattern alike. A variable that needs
/// itself is an error naming the chain.
struct LazyVars {
    env: Arc<Environment<'static>>,
    /// Names set by copctl (`inventory_hostname`, `groups`, ...): they shadow variables.
    ready: BTreeMap<String, Value>,
    /// The variables as loaded, converted when first read: a context is made per host and task,
    /// and converting a large env.yaml whole each time made planning O(hosts x tasks x settings).
    raw: crate::inventory::Vars,
    /// Names this context does not hold itself (`groups`, `hostvars` for another host's vars).
    fallback: Option<Value>,
    rendered: Mutex<BTreeMap<String, Value>>,
}

impl std::fmt::Debug for LazyVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyVars").field("ready", &self.ready.keys()).field("raw", &self.raw.keys()).finish()
    }
}

impl LazyVars {
    fn new(env: Arc<Environment<'static>>, vars: &crate::inventory::Vars, fallback: Option<Value>) -> LazyVars {
        LazyVars { env, ready: BTreeMap::new(), raw: vars.clone(), fallback, rendered: Mutex::new(BTreeMap::new()) }
    }

    fn resolve(self: &Arc<Self>, name: &str, raw: &serde_json::Value) -> Value {
        if let Some(v) = self.rendered.lock().expect("render cache").get(name) {
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
        let out = render_json(&self.env, raw, &ctx);
        RESOLVING.with(|r| r.borrow_mut().pop());
        match out {
            Ok(v) => {
                self.rendered.lock().expect("render cache").insert(name.to_string(), v.clone());
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
        if let Some(v) = self.ready.get(name) {
            return Some(v.clone());
        }
        if let Some(raw) = self.raw.get(name) {
            if holds_template(raw) {
                return Some(self.resolve(name, raw));
            }
            let mut cache = self.rendered.lock().expect("render cache");
            return Some(cache.entry(name.to_string()).or_insert_with(|| to_value(raw)).clone());
        }
        self.fallback.as_ref()?.get_attr(name).ok().filter(|v| !v.is_undefined())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<Value> = self.ready.keys().chain(self.raw.keys()).map(|k| Value::from(k.as_str())).collect();
        keys.sort();
        keys.dedup();
        Enumerator::Values(keys)
    }
}

/// Renders every string of a variable's value. A string that is one expression (`"{{ groups['w'] }}"`)
/// keeps the expression's type, as Ansible's native values do; other strings render to text.
fn render_json(env: &Environment<'static>, v: &serde_json::Value, ctx: &Value) -> Result<Value, minijinja::Error> {
    Ok(match v {
        serde_json::Value::String(s) if is_template(s) => {
            let t = s.trim();
            let single = t
                .strip_prefix("{{")
                .and_then(|x| x.strip_suffix("}}"))
                .filter(|x| !x.contains("{{") && !x.contains("}}") && !x.contains("{%"));
            match single {
                Some(expr) => {
                    let v = env.compile_expression(expr)?.eval(ctx)?;
                    if v.is_undefined() {
                        return Err(minijinja::Error::new(
                            ErrorKind::UndefinedError,
                            format!("'{}' is undefined", expr.trim()),
                        ));
                    }
                    v
                }
                None => Value::from(env.render_str(s, ctx)?),
            }
        }
        serde_json::Value::Array(a) => {
            Value::from(a.iter().map(|x| render_json(env, x, ctx)).collect::<Result<Vec<_>, _>>()?)
        }
        serde_json::Value::Object(m) => Value::from_iter(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), render_json(env, x, ctx)?)))
                .collect::<Result<Vec<(String, Value)>, minijinja::Error>>()?,
        ),
        other => to_value(other),
    })
}

/// Compares dotted versions numerically (`580.95.05` > `565.57.01`, `v1.31.4+rke2r1` < `v1.32.0`).
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| -> Vec<u64> {
        s.trim_start_matches('v')
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let (x, y) = (parts(a), parts(b));
    for i in 0..x.len().max(y.len()) {
        let o = x.get(i).copied().unwrap_or(0).cmp(&y.get(i).copied().unwrap_or(0));
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

fn add_filters(env: &mut Environment<'static>) {
    // Ansible's `x is version(y, '>=')`.
    env.add_test("version", |v: String, other: String, op: Option<String>| -> Result<bool, minijinja::Error> {
        use std::cmp::Ordering::*;
        let o = compare_versions(&v, &other);
        Ok(match op.as_deref().unwrap_or("==") {
            ">=" | "ge" => o != Less,
            ">" | "gt" => o == Greater,
            "<=" | "le" => o != Greater,
            "<" | "lt" => o == Less,
            "==" | "eq" | "=" => o == Equal,
            "!=" | "ne" => o != Equal,
            other => {
                return Err(minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!("unknown version operator {other}"),
                ));
            }
        })
    });
    // Ansible's `path is file`: a regular file on the bastion (plan-time checks of settings).
    env.add_test("file", |p: String| -> bool { std::path::Path::new(&p).is_file() });
    // POSIX shell quoting exactly as Ansible's `quote` (Python's shlex.quote) does it, so a
    // site's shell lines render the same under copctl and Ansible.
    env.add_filter("quote", |v: Value| -> String {
        let s = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        shell_quote(&s)
    });
    env.add_filter("bool", |v: Value| -> bool {
        match v.as_str() {
            Some(s) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1" | "y" | "t"),
            None => v.is_true(),
        }
    });
    env.add_filter("to_json", |v: Value| -> Result<String, minijinja::Error> {
        serde_json::to_string(&v).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))
    });
    env.add_filter("to_nice_json", |v: Value| -> Result<String, minijinja::Error> {
        serde_json::to_string_pretty(&v).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))
    });
    env.add_filter("b64encode", |s: String| -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
    });
    env.add_filter("regex_replace", |s: String, pat: String, rep: String| -> Result<String, minijinja::Error> {
        let re =
            regex::Regex::new(&pat).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
        // Ansible (Python) writes groups as \1; the regex crate as ${1}.
        let rep = regex::Regex::new(r"\\(\d+)").expect("static regex").replace_all(&rep, "$${$1}").into_owned();
        Ok(re.replace_all(&s, rep.as_str()).into_owned())
    });
    env.add_filter("basename", |s: String| -> String { s.rsplit('/').next().unwrap_or("").to_string() });
    env.add_filter("dirname", |s: String| -> String {
        match s.rfind('/') {
            Some(0) => "/".into(),
            Some(i) => s[..i].to_string(),
            None => String::new(),
        }
    });
    env.add_filter("ternary", |v: Value, a: Value, b: Value| -> Value {
        if v.is_true() { a } else { b }
    });
    env.add_filter("mandatory", |v: Value| -> Result<Value, minijinja::Error> {
        if v.is_undefined() {
            Err(minijinja::Error::new(ErrorKind::UndefinedError, "mandatory variable is not defined"))
        } else {
            Ok(v)
        }
    });
}

/// Python's `shlex.quote`.
pub fn shell_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

/// Any serializable value as a template value.
pub fn to_value<T: serde::Serialize>(v: T) -> Value {
    Value::from(minijinja::value::Serde(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct NoHosts;
    impl HostVarLookup for NoHosts {
        fn host_names(&self) -> Vec<String> {
            vec![]
        }
        fn vars_of(&self, _: &str) -> Option<serde_json::Value> {
            None
        }
    }

    #[test]
    fn version_test() {
        let t = Templates::new(None);
        let ctx = host_context(
            &t,
            "h",
            &crate::inventory::Vars::new(),
            to_value(serde_json::json!({})),
            &[],
            Arc::new(NoHosts),
        );
        assert!(t.eval("'580.95.05' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(!t.eval("'550.1' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(t.eval("'v1.31.4+rke2r1' is version('v1.32.0', '<')", &ctx).unwrap().is_true());
    }

    #[test]
    fn yaml_templates_are_not_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.yaml.j2"), "token: {{ t }}\n").unwrap();
        let t = Templates::new(Some(dir.path().to_path_buf()));
        let mut vars = crate::inventory::Vars::new();
        vars.insert("t".into(), serde_json::json!("K10::x"));
        let ctx = host_context(&t, "h1", &vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_file("c.yaml.j2", &ctx).unwrap(), "token: K10::x\n");
    }

    #[test]
    fn strict_undefined_and_filters() {
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("pw".into(), serde_json::json!("it's"));
        let ctx = host_context(&t, "h1", &vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_str("{{ pw | quote }}", &ctx).unwrap(), "'it'\"'\"'s'");
        assert_eq!(t.render_str("{{ inventory_hostname }}", &ctx).unwrap(), "h1");
        let e = t.render_str("{{ nope }}", &ctx).unwrap_err();
        assert!(Templates::is_undefined_error(&e));
        assert_eq!(t.render_str("{{ 'abc' | b64encode }}", &ctx).unwrap(), "YWJj");
        assert!(t.eval("'true' | bool", &ctx).unwrap().is_true());
    }
}
