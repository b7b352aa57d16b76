//! Templates: one minijinja environment with strict undefined (a missing variable is an error,
//! never an empty string), Ansible-familiar filters (`quote`, `bool`, `to_json`, `b64encode`,
//! `regex_replace`, ...) and the names `inventory_hostname`, `groups`, `group_names`, `hostvars`.
//! Template files come from a site's override directory first, then the embedded `templates/`.

use std::path::PathBuf;
use std::sync::Arc;

use include_dir::{Dir, include_dir};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};

static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Looks up the variables of any host, for `hostvars[...]`.
pub trait HostVarLookup: Send + Sync + std::fmt::Debug {
    fn host_names(&self) -> Vec<String>;
    fn vars_of(&self, host: &str) -> Option<serde_json::Value>;
}

#[derive(Debug)]
struct HostVars(Arc<dyn HostVarLookup>);

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.0.vars_of(key.as_str()?).map(|v| crate::template::to_value(&v))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.0.host_names().into_iter().map(Value::from).collect())
    }
}

pub struct Templates {
    env: Environment<'static>,
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
        Templates { env, override_dir }
    }

    /// The text of a template file, for error snippets and checks.
    pub fn source(&self, name: &str) -> Option<String> {
        load_template(&self.override_dir, name)
    }

    pub fn render_file(&self, name: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }

    /// Renders a string when it holds template syntax; plain strings pass through untouched.
    /// A variable whose value is itself a template (`kube_host: "{{ groups['masters'][0] }}"`)
    /// is rendered in turn, as Ansible's lazy templating does (a few levels deep).
    pub fn render_str(&self, text: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        let mut out = text.to_string();
        for _ in 0..5 {
            if !out.contains("{{") && !out.contains("{%") {
                break;
            }
            let next = self.env.render_str(&out, ctx)?;
            if next == out {
                break;
            }
            out = next;
        }
        Ok(out)
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

/// The context a template sees for one host.
pub fn host_context(
    host: &str,
    vars: &crate::inventory::Vars,
    groups: Value,
    group_names: &[String],
    hostvars: Arc<dyn HostVarLookup>,
) -> Value {
    let mut map: std::collections::BTreeMap<String, Value> =
        vars.iter().map(|(k, v)| (k.clone(), crate::template::to_value(v))).collect();
    map.insert("inventory_hostname".into(), Value::from(host));
    map.insert("inventory_hostname_short".into(), Value::from(host.split('.').next().unwrap_or(host)));
    map.insert("groups".into(), groups);
    map.insert("group_names".into(), crate::template::to_value(group_names));
    map.insert("hostvars".into(), Value::from_object(HostVars(hostvars)));
    Value::from(map)
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
        let ctx =
            host_context("h", &crate::inventory::Vars::new(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
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
        let ctx = host_context("h1", &vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_file("c.yaml.j2", &ctx).unwrap(), "token: K10::x\n");
    }

    #[test]
    fn strict_undefined_and_filters() {
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("pw".into(), serde_json::json!("it's"));
        let ctx = host_context("h1", &vars, to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_str("{{ pw | quote }}", &ctx).unwrap(), "'it'\"'\"'s'");
        assert_eq!(t.render_str("{{ inventory_hostname }}", &ctx).unwrap(), "h1");
        let e = t.render_str("{{ nope }}", &ctx).unwrap_err();
        assert!(Templates::is_undefined_error(&e));
        assert_eq!(t.render_str("{{ 'abc' | b64encode }}", &ctx).unwrap(), "YWJj");
        assert!(t.eval("'true' | bool", &ctx).unwrap().is_true());
    }
}
