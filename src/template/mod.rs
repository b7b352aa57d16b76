//! Templates: one minijinja environment with strict undefined (a missing variable is an error,
//! never an empty string), Ansible-familiar filters (`quote`, `bool`, `to_json`, `b64encode`,
//! `urlencode`, `regex_replace`, ...) and the names `inventory_hostname`, `groups`, `group_names`,
//! `hostvars`.
//! Template files come from a site's override directory first, then the embedded `templates/`.
//!
//! Secret tracking lives here too: every context records which secret variables its renderings
//! read (`take_secret_reads`), through other variables, `hostvars` and facts alike, so that text
//! rendered from a secret, in whatever form a filter gave it, is withheld from every output.

mod clock;
mod filters;
mod format;
pub use format::normpath;
mod password;
pub mod python;
mod random;
mod rewrite;
pub mod sequence;
mod urlsplit;
mod yaml_dump;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use include_dir::{Dir, include_dir};
use minijinja::value::{Enumerator, Object, ObjectRepr, Rest, Value, ValueOrKwargs};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};

use crate::vars::secret::SecretNames;

static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Looks up the variables of any host, for `hostvars[...]`.
pub trait HostVarLookup: Send + Sync + std::fmt::Debug {
    fn host_names(&self) -> Vec<String>;
    /// A host's variables (`inventory_hostname` is set over them by the caller).
    fn vars_of(&self, host: &str) -> Option<crate::vars::VarLayers>;
    /// The inventory's hosts a host pattern selects (no `--limit`), for the inventory_hostnames
    /// lookup; none where the pattern matches nothing.
    fn pattern_hosts(&self, _patterns: &[String]) -> Vec<String> {
        Vec::new()
    }
}

/// `hostvars`: another host's variables, lazily rendered in that host's own context.
#[derive(Debug)]
struct HostVars {
    lookup: Arc<dyn HostVarLookup>,
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

/// A template file's own Jinja settings (Ansible's template module arguments); `None`: Ansible's
/// default (trim_blocks on, lstrip_blocks off, Jinja2's delimiters, `\n`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Syntax {
    pub trim_blocks: Option<bool>,
    pub lstrip_blocks: Option<bool>,
    pub newline_sequence: Option<String>,
    pub block_start_string: Option<String>,
    pub block_end_string: Option<String>,
    pub variable_start_string: Option<String>,
    pub variable_end_string: Option<String>,
    pub comment_start_string: Option<String>,
    pub comment_end_string: Option<String>,
    /// The rest only come from a template's `#jinja2:` first line (no module argument sets them).
    #[serde(skip)]
    pub keep_trailing_newline: Option<bool>,
    #[serde(skip)]
    pub line_statement_prefix: Option<String>,
    #[serde(skip)]
    pub line_comment_prefix: Option<String>,
}

/// Ansible's `#jinja2:` first line: Jinja settings for this one template
/// (`#jinja2: trim_blocks: False, variable_start_string: '[%'`), over the module's arguments;
/// the line itself is not part of the text. Anything else there is Ansible's error too.
fn header_overrides<'a>(source: &'a str, base: &Syntax) -> Result<(&'a str, Syntax), minijinja::Error> {
    let Some(rest) = source.strip_prefix("#jinja2:") else { return Ok((source, base.clone())) };
    let fail = |msg: String| minijinja::Error::new(ErrorKind::SyntaxError, msg);
    let Some((line, body)) = rest.split_once('\n') else {
        return Err(fail("Missing newline after '#jinja2:' override.".into()));
    };
    let mut o = base.clone();
    for pair in line.split(',') {
        if pair.trim().is_empty() {
            return Err(fail("Empty '#jinja2:' override pair not allowed.".into()));
        }
        let Some((key, val)) = pair.split_once(':') else {
            return Err(fail(format!(
                "Missing key-value separator `:` in '#jinja2:' override pair {}.",
                py_repr(pair)
            )));
        };
        let (key, text) = (key.trim(), val.trim());
        let value = crate::inventory::pyliteral::literal_eval(text);
        let flag = |v: &Option<serde_json::Value>| match v {
            Some(serde_json::Value::Bool(b)) => Ok(Some(*b)),
            _ => Err(fail(format!("'#jinja2:' override {key}: {text} is not True or False"))),
        };
        let string = |v: &Option<serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            _ => Err(fail(format!("'#jinja2:' override {key}: {text} is not a quoted string"))),
        };
        match key {
            "trim_blocks" => o.trim_blocks = flag(&value)?,
            "lstrip_blocks" => o.lstrip_blocks = flag(&value)?,
            "keep_trailing_newline" => o.keep_trailing_newline = flag(&value)?,
            "newline_sequence" => o.newline_sequence = string(&value)?,
            "block_start_string" => o.block_start_string = string(&value)?,
            "block_end_string" => o.block_end_string = string(&value)?,
            "variable_start_string" => o.variable_start_string = string(&value)?,
            "variable_end_string" => o.variable_end_string = string(&value)?,
            "comment_start_string" => o.comment_start_string = string(&value)?,
            "comment_end_string" => o.comment_end_string = string(&value)?,
            "line_statement_prefix" => o.line_statement_prefix = string(&value)?,
            "line_comment_prefix" => o.line_comment_prefix = string(&value)?,
            _ => return Err(fail(format!("Invalid '#jinja2:' override key {}.", py_repr(key)))),
        }
    }
    Ok((body, o))
}

/// Ansible renders without Jinja's kept trailing newline (so `{% include %}` adds none), then
/// gives the result as many trailing newlines as the template's text has.
fn pad_trailing_newlines(source: &str, mut out: String, newline: &str) -> String {
    let count = |s: &str| s.len() - s.trim_end_matches('\n').len();
    for _ in count(&out)..count(source) {
        out.push_str(newline);
    }
    out
}

pub struct Templates {
    env: Arc<Environment<'static>>,
    override_dir: Option<PathBuf>,
    /// Which variables are secrets, for the contexts to track their reads.
    secret_names: SecretNames,
    /// The site's own Python plugins (python.rs).
    python: Arc<python::Python>,
}

/// The global through which lookups reach the site's Python plugins.
const PYTHON: &str = "__copctl_python";

#[derive(Debug)]
struct PythonPlugins(Arc<python::Python>);

impl Object for PythonPlugins {}

/// `value` and `args` as JSON for a site's plugin.
fn to_json(v: &Value) -> Result<serde_json::Value, minijinja::Error> {
    serde_json::to_value(v).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))
}

/// Filter or test `name` of the site's plugin file `path` on `value` with `args`.
fn python_call(
    py: &python::Python,
    kind: &str,
    path: &Path,
    name: &str,
    value: Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    // As Ansible's plugin sees an undefined value: an error, not a None.
    if value.is_undefined() {
        return Err(minijinja::Error::new(
            ErrorKind::UndefinedError,
            format!("the {kind} '{name}' was given an undefined value"),
        ));
    }
    let mut pos = vec![to_json(&value)?];
    let mut kwargs = serde_json::Map::new();
    for a in args.into_values() {
        if a.is_kwargs() {
            let kw = minijinja::value::Kwargs::try_from(a)?;
            for k in kw.args().map(str::to_string).collect::<Vec<_>>() {
                let v: Value = kw.get(&k)?;
                kwargs.insert(k, to_json(&v)?);
            }
        } else {
            pos.push(to_json(&a)?);
        }
    }
    // Ansible's words, and the file.
    let fail = |e: String| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("The {kind} plugin '{name}' failed: {e} in {}", path.display()),
        )
    };
    match py.call(kind, path, name, pos, serde_json::Value::Object(kwargs)).map_err(fail)? {
        python::Answer::Value(v) => Ok(to_value(v)),
        python::Answer::Undefined(e) | python::Answer::Failed(e) => Err(fail(e)),
    }
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
    // An Ansible playbook's templates are resolved beside it when it is loaded (absolute).
    if Path::new(name).is_absolute() {
        return std::fs::read_to_string(name).ok();
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
        // Ansible's template settings: trim_blocks on; the trailing newlines are put back after
        // rendering (`pad_trailing_newlines`), as Ansible does.
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).build().expect("valid syntax config"),
        );
        // minijinja escapes by file name (`config.yaml.j2` would get JSON quoting); Ansible never
        // escapes, and config files must come out exactly as written.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // Ansible 2.19 prints a null as nothing (`x{{ none }}y` is `xy`); inside a list it stays
        // `None`, and a template that is one expression keeps the null itself.
        env.set_formatter(|out, state, value| {
            if !matches!(value.kind(), minijinja::value::ValueKind::String | minijinja::value::ValueKind::None) {
                PRINTED.with(|p| p.borrow_mut().as_mut().map(|p| p.push(value.clone())));
            }
            if value.is_none() { Ok(()) } else { minijinja::escape_formatter(out, state, value) }
        });
        let dir = override_dir.clone();
        env.set_loader(move |name| Ok(load_template(&dir, name)));
        add_filters(&mut env);
        filters::add(&mut env);
        format::add(&mut env);
        random::add(&mut env);
        clock::add(&mut env);
        urlsplit::add(&mut env);
        // Python's string, list and dict methods (`x.split(':')`, `s.startswith('/')`,
        // `d.items()`), which Ansible's templates call as Jinja2 lets them.
        env.set_unknown_method_callback(filters::python_method);
        let python = Arc::new(python::Python::default());
        env.add_global(PYTHON, Value::from_object(PythonPlugins(python.clone())));
        Templates { env: Arc::new(env), override_dir, secret_names: SecretNames::default(), python }
    }

    /// The site's Python worker (modules from `library/` are built there).
    pub fn python(&self) -> Arc<python::Python> {
        self.python.clone()
    }

    /// A site's own Python filters and tests in `dirs` (each file's, once) made the
    /// environment's, and its lookup directories where lookups are looked for; a file Python
    /// cannot load is an error naming it.
    pub fn add_python_plugins(&mut self, dirs: &python::PluginDirs) -> Result<(), String> {
        {
            let mut l = self.python.lookup_dirs.lock().unwrap_or_else(|p| p.into_inner());
            for d in &dirs.lookup {
                if !l.contains(d) {
                    l.push(d.clone());
                }
            }
        }
        for (kind, list) in [("filter", &dirs.filter), ("test", &dirs.test)] {
            for file in list.iter().flat_map(|d| python::plugin_files(d)) {
                if !self.python.registered.lock().unwrap_or_else(|p| p.into_inner()).insert(file.clone()) {
                    continue;
                }
                let names = self.python.names(kind, &file)?;
                let env = Arc::make_mut(&mut self.env);
                for name in names {
                    let (py, path, n) = (self.python.clone(), file.clone(), name.clone());
                    if kind == "filter" {
                        env.add_filter(name, move |value: Value, args: Rest<ValueOrKwargs>| {
                            python_call(&py, "filter", &path, &n, value, args)
                        });
                    } else {
                        env.add_test(name, move |value: Value, args: Rest<ValueOrKwargs>| {
                            python_call(&py, "test", &path, &n, value, args).map(|v| v.is_true())
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The site's secret names (`secret_vars` of env.yaml on top of the naming rule), which the
    /// contexts made from here track.
    /// The variables whose values are secrets, for the secret reads of what renders.
    pub fn set_secret_names(&mut self, names: SecretNames) {
        self.secret_names = names;
    }

    pub fn with_secret_names(mut self, names: SecretNames) -> Self {
        self.secret_names = names;
        self
    }

    /// ansible.cfg's `ansible_managed` (Ansible's DEFAULT_MANAGED_STR), which the template
    /// module and lookup make their `ansible_managed` of where the task's variables have none.
    pub fn with_ansible_managed(mut self, format: Option<String>) -> Self {
        if let Some(f) = format {
            Arc::make_mut(&mut self.env).add_global(MANAGED, Value::from(f));
        }
        self
    }

    /// The names Ansible's template module adds for a template file (`template_file_vars`).
    pub fn template_file_vars(
        &self,
        vars: &Value,
        path: &str,
        full: &Path,
        dest: Option<&str>,
    ) -> Result<Value, minijinja::Error> {
        template_file_vars(&self.env, vars, path, full, dest)
    }

    /// The text of a template file, for error snippets and checks.
    pub fn source(&self, name: &str) -> Option<String> {
        load_template(&self.override_dir, name)
    }

    pub fn render_file(&self, name: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        self.render_file_with(name, ctx, &Syntax::default())
    }

    /// Renders a template file with its own Jinja settings (the template module's
    /// `trim_blocks`, delimiters, `newline_sequence`, then the file's `#jinja2:` line).
    pub fn render_file_with(&self, name: &str, ctx: &Value, o: &Syntax) -> Result<String, minijinja::Error> {
        let source = self
            .source(name)
            .ok_or_else(|| minijinja::Error::new(ErrorKind::TemplateNotFound, format!("template {name} not found")))?;
        let dirs = include_dirs(name, ctx);
        if dirs.is_empty() {
            return render_text(&self.env, name, &source, ctx, o);
        }
        // An environment of its own, loading from this template's directories first: another
        // template's `{% include 'bar' %}` may name another role's file of the same name.
        let mut env = (*self.env).clone();
        env.clear_templates();
        let fallback = self.override_dir.clone();
        env.set_loader(move |n| {
            if n.split('/').any(|c| c == "..") {
                return Ok(None);
            }
            let found = dirs.iter().find_map(|d| std::fs::read_to_string(d.join(n)).ok());
            Ok(found.or_else(|| load_template(&fallback, n)))
        });
        render_text(&env, name, &source, ctx, o)
    }

    /// Renders a string when it holds template syntax; plain strings pass through untouched.
    /// Variables holding templates are rendered as they are read (see `LazyVars`), so the
    /// output is never rendered again: text that only looks like a template (`{% raw %}`, a
    /// registered stdout) stays as it is.
    pub fn render_str(&self, text: &str, ctx: &Value) -> Result<String, minijinja::Error> {
        if !is_template(text) {
            return Ok(text.to_string());
        }
        let source = escape_backslashes(text);
        // Jinja drops a template's one trailing newline before Ansible 2.19 renders it natively,
        // and puts it back only on text: `"{{ 2 }}\n"` is the number 2, `"{{ 'a' }}\n"` is "a\n".
        // Rendered once: what the expression printed tells which (lookups run once).
        if ANSIBLE_TASK.try_with(|a| *a).unwrap_or(false)
            && let Some(core) = source.strip_suffix('\n')
            && single_expression(&source).is_some()
        {
            let (out, printed) = noting_printed(|| render_text(&self.env, "<string>", core, ctx, &Syntax::default()));
            let out = out?;
            let native = matches!(printed.as_slice(), [v] if matches!(
                v.kind(),
                minijinja::value::ValueKind::Number
                    | minijinja::value::ValueKind::Bool
                    | minijinja::value::ValueKind::Seq
                    | minijinja::value::ValueKind::Map
            ));
            return Ok(if native { out } else { pad_trailing_newlines(&source, out, "\n") });
        }
        render_text(&self.env, "<string>", &source, ctx, &Syntax::default())
    }

    /// A context of host-independent variables (a play's `hosts:`, `require:`), rendered lazily.
    pub fn context(&self, vars: &crate::inventory::Vars) -> Value {
        let reads = Arc::new(SecretReads::new(self.secret_names.clone()));
        Value::from_object(LazyVars::new(self.env.clone(), crate::vars::VarLayers::one(vars.clone()), None, reads))
    }

    /// Evaluates a bare expression (`when:`, `until:`, `changed_when:`), Ansible-style.
    pub fn eval(&self, expr: &str, ctx: &Value) -> Result<Value, minijinja::Error> {
        let expr = expr.trim();
        let expr = expr.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")).unwrap_or(expr);
        with_root(ctx, || self.env.compile_expression(&prepared(expr))?.eval(ctx))
    }

    /// A conditional (`when`, `changed_when`, `failed_when`, `until`, an assert's `that`) as
    /// ansible-core 2.19 reads one: a bare expression; or, when the whole of it is a template
    /// (`'{{ x }}'`), the template's value: text is then the expression to evaluate (a
    /// condition kept in a variable), anything else is the condition itself, which Ansible
    /// deprecates (`templated_conditionals` counts it). Text made of several templates
    /// (`'{{ a }} == {{ b }}'`) builds an expression out of rendered values: Ansible refuses it
    /// as untrusted, and so does this.
    pub fn judge(&self, expr: &str, ctx: &Value) -> Result<Value, minijinja::Error> {
        let e = expr.trim();
        if rendered_text(e) {
            return Err(untrusted(e));
        }
        let opens = ["{{", "{%", "{#"].iter().any(|d| e.starts_with(d));
        let closes = ["}}", "%}", "#}"].iter().any(|d| e.ends_with(d));
        if !(opens && closes) {
            return self.eval(&rewrite::template_consts(e), ctx);
        }
        let single = e
            .strip_prefix("{{")
            .and_then(|x| x.strip_suffix("}}"))
            .filter(|inner| self.env.compile_expression(&prepared(inner)).is_ok());
        let Some(inner) = single else {
            self.render_str(e, ctx)?;
            return Err(untrusted(e));
        };
        let value = with_root(ctx, || self.env.compile_expression(&prepared(inner))?.eval(ctx))?;
        // A variable the site wrote as a template around other text (`c: "{{ a }} == 1"`) holds
        // rendered text, which Ansible does not trust as an expression either.
        let name = inner.trim();
        if value.as_str().is_some()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && let Some(serde_json::Value::String(raw)) = raw_var(ctx, name)
            && is_template(&raw)
            && yaml_single_expression(&raw).is_none()
        {
            return Err(untrusted(e));
        }
        if let Some(text) = value.as_str() {
            if text.trim().is_empty() {
                return Err(minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!("Empty conditional expressions are not allowed ('{e}' gave empty text)."),
                ));
            }
            if rendered_text(text) {
                return Err(untrusted(text.trim()));
            }
            return self.eval(&rewrite::template_consts(text.trim()), ctx);
        }
        TEMPLATED_CONDITIONALS.try_with(|n| n.set(n.get() + 1)).ok();
        Ok(value)
    }

    /// The top-level variables `text` (a template, or a bare expression where `expr`) reads
    /// without setting them itself; `None` where it does not compile.
    pub fn names_read(&self, text: &str, expr: bool) -> Option<std::collections::HashSet<String>> {
        if expr {
            let e = text.trim();
            let e = e.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")).unwrap_or(e);
            return self.env.compile_expression(&prepared(e)).ok().map(|c| c.undeclared_variables(false));
        }
        let body = escape_backslashes(text);
        let body = rewrite::apply_default(&body, false);
        self.env.template_from_str(&body).ok().map(|t| t.undeclared_variables(false))
    }

    pub fn is_undefined_error(e: &minijinja::Error) -> bool {
        innermost(e).kind() == ErrorKind::UndefinedError
    }

    /// Whether `e` is an error Ansible raises only when the task runs, where copctl's plan may
    /// leave it to the run for a task that expects to fail (ignore_errors, a rescue): an
    /// undefined variable, a lookup no plugin can be, an untrusted conditional. Unsupported
    /// modules, filters and lookups stay refused when planned.
    /// Whether `e` is a site's lookup plugin left to the run while planning.
    pub fn left_to_run(e: &minijinja::Error) -> bool {
        innermost(e).detail().unwrap_or_default().ends_with(LOOKUP_AT_RUN)
    }

    /// Whether `e` is the file lookup's for a file the bastion does not have (yet).
    pub fn reads_missing_file(e: &minijinja::Error) -> bool {
        let detail = innermost(e).detail().unwrap_or_default();
        detail.starts_with("lookup('file', ") && detail.ends_with(&format!(": {}", MISSING))
    }

    pub fn fails_when_run(e: &minijinja::Error) -> bool {
        let detail = innermost(e).detail().unwrap_or_default();
        Self::is_undefined_error(e)
            || (detail.starts_with("The lookup plugin ") && detail.ends_with(" was not found."))
            || detail.starts_with("Encountered untrusted template or expression")
            || ((detail.starts_with("The filter plugin '") || detail.starts_with("The test plugin '"))
                && detail.contains("' failed: "))
    }
}

tokio::task_local! {
    /// Conditionals a task judged that were templates with a value other than text (Ansible
    /// deprecates them, and its task result says so): counted for the task whose scope this is.
    pub static TEMPLATED_CONDITIONALS: std::cell::Cell<u32>;
    /// Text the task's loop made by rendering a template written in the playbook around other
    /// text (`'x == {{ y }}'`): Ansible 2.19 does not trust it as an expression, nor does `judge`.
    pub static RENDERED_TEXT: std::cell::RefCell<std::collections::HashSet<String>>;
    /// Set for the tasks of an Ansible playbook: their strings render as Ansible's do where
    /// copctl's own playbooks keep plain text (`render_str`).
    pub static ANSIBLE_TASK: bool;
}

/// Whether `text` is one `RENDERED_TEXT` holds for the task under way.
fn rendered_text(text: &str) -> bool {
    RENDERED_TEXT.try_with(|r| r.borrow().contains(text.trim())).unwrap_or(false)
}

/// Notes the strings of `rendered` that rendering made of a template in `raw` written around
/// other text (at the same place), for `judge`.
pub fn note_rendered_text(raw: &serde_json::Value, rendered: &serde_json::Value) {
    use serde_json::Value as J;
    match (raw, rendered) {
        (J::String(r), J::String(out)) if is_template(r) && yaml_single_expression(r).is_none() => {
            let _ = RENDERED_TEXT.try_with(|t| t.borrow_mut().insert(out.trim().to_string()));
        }
        (J::Array(r), J::Array(out)) => r.iter().zip(out).for_each(|(a, b)| note_rendered_text(a, b)),
        (J::Object(r), J::Object(out)) => {
            for (k, a) in r {
                if let Some(b) = out.get(k) {
                    note_rendered_text(a, b);
                }
            }
        }
        _ => {}
    }
}

/// A lookup's argument written as a template in the playbook (`rewrite::lookup_terms`),
/// rendered with the variables where the lookup is called (a loop's too): a single expression
/// keeps its value's type, as Ansible's templating of an argument does.
fn lookup_term(state: &minijinja::State, text: String) -> Result<Value, minijinja::Error> {
    // The lookup says what failed: its own name first, when copctl has no such lookup.
    Ok(render_term(state, &text).unwrap_or_else(|e| {
        Value::from_object(TermFailed { kind: e.kind(), detail: e.detail().unwrap_or_default().to_string() })
    }))
}

/// A conditional's string constant written as a template (`rewrite::template_consts`), rendered
/// where it is judged; an error is the condition's.
fn conditional_const(state: &minijinja::State, text: String) -> Result<Value, minijinja::Error> {
    render_term(state, &text).map_err(|e| {
        let detail = e.detail().unwrap_or_default().to_string();
        minijinja::Error::new(e.kind(), format!("the constant {}: {detail}", py_repr(&text)))
    })
}

/// `text` rendered with the variables where it is used: a single expression keeps its value's
/// type, as Ansible's templating of a string does.
fn render_term(state: &minijinja::State, text: &str) -> Result<Value, minijinja::Error> {
    let source = escape_backslashes(text);
    let body = rewrite::apply_default(&source, false);
    let env = state.env();
    let names = env.template_from_str(&body)?.undeclared_variables(false);
    let ctx: BTreeMap<String, Value> = names.into_iter().filter_map(|n| state.lookup(&n).map(|v| (n, v))).collect();
    let ctx = Value::from(ctx);
    match single_expression(&source) {
        Some(expr) => env.compile_expression(&prepared(expr)).and_then(|c| c.eval(&ctx)).and_then(|v| match v {
            v if v.is_undefined() => {
                Err(minijinja::Error::new(ErrorKind::UndefinedError, format!("'{}' is undefined", expr.trim())))
            }
            v => Ok(with_dropped_newline(&source, v)),
        }),
        None => env.render_str(&body, &ctx).map(Value::from),
    }
}

/// A lookup argument that did not render (`lookup_term`): the error, raised by the lookup.
#[derive(Debug)]
struct TermFailed {
    kind: ErrorKind,
    detail: String,
}

impl Object for TermFailed {}

/// The error of the first argument of a lookup copctl has that did not render.
fn term_failed(kind: &str, terms: &[Value]) -> Result<(), minijinja::Error> {
    if !LOOKUPS.replace(" and ", ", ").split(", ").any(|n| n == kind) {
        return Ok(());
    }
    match terms.iter().find_map(|t| t.downcast_object_ref::<TermFailed>()) {
        Some(f) => Err(minijinja::Error::new(f.kind, f.detail.clone())),
        None => Ok(()),
    }
}

/// Ansible's refusal of a condition made by rendering text.
fn untrusted(e: &str) -> minijinja::Error {
    minijinja::Error::new(
        ErrorKind::InvalidOperation,
        format!(
            "Encountered untrusted template or expression: '{e}' builds a condition out of rendered text; \
             write it as one expression, without {{{{ }}}}"
        ),
    )
}

/// Whether `name` can name a plugin: a Python identifier, or dotted ones (a collection's FQCN).
fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|p| {
            p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// Python's `repr` of a string, as Ansible's messages quote names.
pub fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// A template error in one line: what is undefined or wrong.
/// The error inside included and imported templates: minijinja wraps one failing there as
/// `error in "NAME"`, where Jinja2 raises the error itself.
fn innermost(e: &minijinja::Error) -> &minijinja::Error {
    let mut e = e;
    while e.kind() == ErrorKind::BadInclude
        && let Some(inner) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<minijinja::Error>())
    {
        e = inner;
    }
    e
}

pub fn describe_error(e: &minijinja::Error) -> String {
    let e = innermost(e);
    let mut msg = match e.detail() {
        Some(d) => d.to_string(),
        None => e.kind().to_string(),
    };
    if Templates::is_undefined_error(e) && !msg.contains("undefined") && !msg.contains("has no attribute") {
        msg = format!("undefined variable: {msg}");
    }
    python_quotes(msg)
}

/// "`x` is undefined" (Jinja's words in MiniJinja) in Jinja2's and Ansible's: "'x' is
/// undefined", which playbooks test for (`error.msg is contains "'y' is undefined"`); an index
/// past a list's end also in Jinja2's words ("object has no element 0").
fn python_quotes(msg: String) -> String {
    let mut out = match msg.rfind("` is undefined").and_then(|end| Some((msg[..end].rfind('`')?, end))) {
        Some((start, end)) => format!("{}'{}'{}", &msg[..start], &msg[start + 1..end], &msg[end + 1..]),
        None => msg,
    };
    let index = out
        .strip_suffix("]' is undefined")
        .and_then(|e| e.rsplit_once('['))
        .map(|(_, i)| i.trim())
        .filter(|i| i.parse::<i64>().is_ok())
        .map(str::to_string);
    if let Some(i) = index {
        out.push_str(&format!(" (object has no element {i})"));
    }
    out
}

/// The context a template sees for one host: its variables (rendered lazily when they hold
/// templates) and the names `inventory_hostname`, `groups`, `group_names`, `hostvars`.
/// Names a context holds beside the host's variables (the play's magic variables), as values
/// shared by every task that uses them.
pub type Magic = Arc<Vec<(&'static str, Value)>>;

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
    let reads = Arc::new(SecretReads::new(templates.secret_names.clone()));
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

/// Ansible's `omit`: an argument whose value renders to it is left out of the module's
/// arguments (`mode: "{{ m | default(omit) }}"`), as if the task had not named it.
pub const OMIT: &str = "__omit_place_holder__copctl";

/// `v` without the mappings' entries and the lists' items that are `omit` (Ansible's
/// `remove_omit`, over nested mappings and lists too).
pub fn remove_omit(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter().filter(|(_, x)| x.as_str() != Some(OMIT)).map(|(k, x)| (k, remove_omit(x))).collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().filter(|x| x.as_str() != Some(OMIT)).map(remove_omit).collect())
        }
        other => other,
    }
}

/// The lookups copctl runs, for its refusal.
const LOOKUPS: &str = "dict, env, file, fileglob, first_found, indexed_items, inventory_hostnames, items, lines, list, nested, password, pipe, random_choice, sequence, template, together and vars";

thread_local! {
    /// Set while the plan's checks render templates: the pipe lookup runs no command then.
    static PLANNING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set while an Ansible playbook is loaded (its roles' names, include loops): a site's
    /// lookup plugin does not run then, as it does not while planning.
    static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The whole context of each rendering under way on this thread, innermost last: what the
    /// template lookup renders its file with (minijinja gives a function one variable at a
    /// time, and the lookup's file may read any of them, as Ansible's sees the task's vars).
    static ROOTS: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set while the template lookup renders a file: the values other than text that its
    /// expressions printed, for `native_result`.
    static PRINTED: std::cell::RefCell<Option<Vec<Value>>> = const { std::cell::RefCell::new(None) };
}

/// Renders with `render`, noting the values other than text that expressions print.
fn noting_printed<T>(render: impl FnOnce() -> T) -> (T, Vec<Value>) {
    let outer = PRINTED.with(|p| p.replace(Some(Vec::new())));
    let out = render();
    let printed = PRINTED.with(|p| p.replace(outer)).unwrap_or_default();
    (out, printed)
}

/// What Ansible 2.19's template lookup gives for a file rendered to `text`: Jinja's native
/// concatenation returns the one node a template printed as itself (a macro's body likewise,
/// so `{% macro m() %}{{ {'a': 1} }}{% endmacro %}{{ m() }}` is a mapping) and joins several
/// as text. Here: a value printed whose text is the whole output, the trailing newline Jinja
/// strips aside (`render_text` puts it back); several such, the one printed first (a macro's
/// body prints before its caller prints the macro's text).
fn native_result(env: &Environment<'_>, source: &str, text: &str, printed: &[Value]) -> Option<Value> {
    let core = if source.ends_with('\n') { text.strip_suffix('\n')? } else { text };
    let text_of = |v: &Value| noting_printed(|| env.render_str("{{ v }}", minijinja::context! { v => v.clone() })).0;
    printed.iter().find(|v| text_of(v).is_ok_and(|t| t == core)).cloned()
}

/// Runs `f` as a playbook's load-time templates render: a site's Python lookup is left to the
/// run (the template is then not known when loading).
pub fn loading<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&LOADING, f)
}

/// Runs `f` as the plan's checks render: no lookup runs a command on the bastion (`pipe` gives
/// "" then), as planning changes nothing anywhere.
pub fn planning<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&PLANNING, f)
}

/// Runs `f` with the thread's `flag` set, put back as it was however `f` ends (a panic too).
fn with_flag<T>(flag: &'static std::thread::LocalKey<std::cell::Cell<bool>>, f: impl FnOnce() -> T) -> T {
    struct Reset(&'static std::thread::LocalKey<std::cell::Cell<bool>>, bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            self.0.with(|p| p.set(self.1));
        }
    }
    let _reset = Reset(flag, flag.with(|p| p.replace(true)));
    f()
}

/// Ansible's pipe lookup: each term a shell command run on the bastion in the playbook's
/// directory, its output with trailing white space stripped; a command that fails is Ansible's
/// error.
fn pipe_lookup(state: &minijinja::State, terms: &[String]) -> Result<Vec<Value>, minijinja::Error> {
    let mut out = Vec::new();
    for cmd in terms {
        if PLANNING.with(|p| p.get()) {
            out.push(Value::from(""));
            continue;
        }
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg(cmd).stdin(std::process::Stdio::null());
        if let Some(dir) =
            state.lookup("playbook_dir").and_then(|v| v.as_str().map(PathBuf::from)).filter(|d| d.is_dir())
        {
            c.current_dir(dir);
        }
        let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
        let o = c.output().map_err(|e| fail(format!("lookup('pipe', '{cmd}'): {e}")))?;
        if !o.status.success() {
            return Err(fail(format!("lookup_plugin.pipe({cmd}) returned {}", o.status.code().unwrap_or(-1))));
        }
        out.push(Value::from(String::from_utf8_lossy(&o.stdout).trim_end()));
    }
    Ok(out)
}

/// Runs `f` with `ctx` as the innermost rendering's context (see `ROOTS`).
fn with_root<T>(ctx: &Value, f: impl FnOnce() -> T) -> T {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            ROOTS.with(|r| r.borrow_mut().pop());
        }
    }
    ROOTS.with(|r| r.borrow_mut().push(ctx.clone()));
    let _pop = Pop;
    f()
}

/// The file lookup's words for a file that is not there.
const MISSING: &str = "No such file or directory";

/// The global holding ansible.cfg's `ansible_managed`, where the site sets one.
const MANAGED: &str = "__copctl_ansible_managed";

/// What Ansible's template module and lookup add to the task's variables for a template file
/// (`path` as the task named it, `full` where it was found): `template_host` (the bastion's
/// name), `template_path`, `template_fullpath`, `template_uid` (the file's owner),
/// `template_destpath` (the module's), and `ansible_managed` where `vars` has none: ansible.cfg's
/// (Python's `str.format` of it with `{file}`, `{host}` and `{uid}` as those variables, then
/// `time.strftime` at the file's modification time, then rendered as a template), else its
/// default "Ansible managed". Not `template_run_date` or `template_mtime` (datetimes).
fn template_file_vars(
    env: &Environment<'_>,
    vars: &Value,
    path: &str,
    full: &Path,
    dest: Option<&str>,
) -> Result<Value, minijinja::Error> {
    use std::os::unix::fs::MetadataExt;
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    // The bastion's name, read once a run (every host's every template asks for it).
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(|| std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default());
    let meta = std::fs::metadata(full).ok();
    let uid = meta.as_ref().map(|m| m.uid());
    let owner = uid.map(|u| user_name(u).map_or_else(|| Value::from(u), Value::from));
    let mut names: BTreeMap<&str, Value> = BTreeMap::from([
        ("template_host", Value::from(host.trim())),
        ("template_path", Value::from(path)),
        ("template_fullpath", Value::from(full.display().to_string())),
    ]);
    if let Some(o) = owner {
        names.insert("template_uid", o);
    }
    if let Some(d) = dest {
        names.insert("template_destpath", Value::from(d));
    }
    if vars.get_attr("ansible_managed").is_ok_and(|v| !v.is_undefined()) {
        return Ok(Value::from(names));
    }
    let format = env.globals().find(|(k, _)| *k == MANAGED).map(|(_, v)| v.to_string());
    let managed = match format {
        None => Value::from("Ansible managed"),
        Some(f) => {
            let text = python_format(&f, &|k| match k {
                "file" => Some("{{ template_path }}"),
                "host" => Some("{{ template_host }}"),
                "uid" => Some("{{ template_uid }}"),
                _ => None,
            })
            .map_err(|e| fail(format!("ansible.cfg's ansible_managed: {e}")))?;
            let mtime = meta.as_ref().map_or(0, |m| m.mtime());
            let at = chrono::DateTime::from_timestamp(mtime, 0).unwrap_or_default();
            let text = clock::python_strftime(&at.with_timezone(&chrono::Local).naive_local(), &text)?;
            let ctx = minijinja::context! { ..Value::from(names.clone()), ..vars.clone() };
            Value::from(render_text(env, "ansible_managed", &text, &ctx, &Syntax::default())?)
        }
    };
    names.insert("ansible_managed", managed);
    Ok(Value::from(names))
}

/// The bastion's name for user `uid` (Python's `pwd.getpwuid(uid).pw_name`).
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to memory owned here and sized as passed.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r filled pw_name with a NUL-terminated string inside buf.
    Some(unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }.to_string_lossy().into_owned())
}

/// Python's `str.format` with named fields only (`{{`/`}}` a brace): a field `value` does not
/// know is Python's KeyError, in its words.
fn python_format(text: &str, value: &dyn Fn(&str) -> Option<&'static str>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
        if after.as_bytes().first() == Some(&c) {
            out.push(c as char);
            rest = &after[1..];
        } else if c == b'}' {
            return Err("Single '}' encountered in format string".into());
        } else {
            let end = after.find('}').ok_or("Single '{' encountered in format string")?;
            let field = &after[..end];
            out.push_str(value(field).ok_or_else(|| format!("KeyError: {}", py_repr(field)))?);
            rest = &after[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Ansible's template lookup: each term a file found in `templates/` along the task's search
/// path (as the file lookup finds files), rendered with the task's variables, the template
/// module's `ansible_managed`/`template_*` names and `template_vars` over them; Jinja's
/// settings from its options (`trim_blocks` on by default); the text's trailing newlines kept.
/// A file that is one `{{ expression }}` gives the expression's value, as Ansible's native
/// templating does.
fn template_lookup(
    state: &minijinja::State,
    terms: &[String],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    let ctx = ROOTS
        .with(|r| r.borrow().last().cloned())
        .ok_or_else(|| fail("lookup('template', ...): no task's variables to render with".into()))?;
    let extra: Option<Value> = kw.get("template_vars")?;
    if let Some(v) = &extra
        && v.kind() != minijinja::value::ValueKind::Map
    {
        return Err(fail(format!("lookup('template', ...): template_vars must be a mapping, not {v}")));
    }
    // Deprecated in 2.19 and without effect there.
    let _: Option<bool> = kw.get("convert_data")?;
    let _: Option<bool> = kw.get("jinja2_native")?;
    let syntax = Syntax {
        trim_blocks: kw.get("trim_blocks")?,
        variable_start_string: kw.get("variable_start_string")?,
        variable_end_string: kw.get("variable_end_string")?,
        comment_start_string: kw.get("comment_start_string")?,
        comment_end_string: kw.get("comment_end_string")?,
        ..Syntax::default()
    };
    let search = search_path(state);
    let mut out = Vec::new();
    for term in terms {
        let path = find_file(&search, "templates", term);
        let Ok(source) = std::fs::read_to_string(&path) else {
            return Err(fail(format!("the template file {term} could not be found for the lookup")));
        };
        let full = std::path::absolute(&path).unwrap_or(path);
        let vars = minijinja::context! {
            ..extra.clone().unwrap_or_else(|| Value::from(BTreeMap::<String, Value>::new())),
            ..template_file_vars(state.env(), &ctx, term, &full, None)?,
            ..ctx.clone()
        };
        let body = source.strip_suffix('\n').unwrap_or(&source);
        let one = body.starts_with("{{") && body.ends_with("}}") && syntax == Syntax::default();
        match single_expression(body).filter(|_| one) {
            Some(expr) => out.push(with_root(&vars, || state.env().compile_expression(&prepared(expr))?.eval(&vars))?),
            None if search.is_empty() => {
                let (text, printed) = noting_printed(|| render_text(state.env(), term, &source, &vars, &syntax));
                let text = text?;
                out.push(native_result(state.env(), &source, &text, &printed).unwrap_or_else(|| Value::from(text)));
            }
            None => {
                // Its includes and imports as Ansible's lookup finds them: beside the template,
                // then in each directory of the search path's templates/ and itself.
                let mut dirs: Vec<PathBuf> = full.parent().map(Path::to_path_buf).into_iter().collect();
                dirs.extend(search.iter().flat_map(|p| [Path::new(p).join("templates"), PathBuf::from(p)]));
                let mut env = state.env().clone();
                env.clear_templates();
                env.set_loader(move |n| {
                    if n.split('/').any(|c| c == "..") {
                        return Ok(None);
                    }
                    Ok(dirs.iter().find_map(|d| std::fs::read_to_string(d.join(n)).ok()))
                });
                let (text, printed) = noting_printed(|| render_text(&env, term, &source, &vars, &syntax));
                let text = text?;
                out.push(native_result(&env, &source, &text, &printed).unwrap_or_else(|| Value::from(text)));
            }
        }
    }
    Ok(out)
}

/// Ansible's lookup plugin `kind` over `terms`, on the bastion: its list of results.
/// `env` (an unset variable is an error here, not Ansible's silent empty string, unless a
/// default is given as the second term), `file` (found as Ansible finds it: in `files/` and then
/// in each directory of the task's `ansible_search_path`, else from where copctl runs; `rstrip`
/// (default) and `lstrip` as its options) and `list` (the terms as they are).
fn run_lookup(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    let text = |v: &Value| match v.as_str() {
        Some(s) => Ok(s.to_string()),
        None => Err(fail(format!("lookup('{kind}', ...): each term is text, not {v}"))),
    };
    // `with_X: "{{ list }}"` gives the lookup its list as one term: its items are the terms.
    let spread: Vec<Value>;
    let terms = match terms {
        [one]
            if matches!(kind, "inventory_hostnames" | "lines" | "random_choice")
                && one.kind() == minijinja::value::ValueKind::Seq =>
        {
            spread = one.try_iter()?.collect();
            spread.as_slice()
        }
        _ => terms,
    };
    let out = match kind {
        "env" => {
            let names = terms.iter().map(text).collect::<Result<Vec<_>, _>>()?;
            // Ansible's `default=` option; an unset variable without one is an error here.
            let default: Option<String> = kw.get("default")?;
            match names.as_slice() {
                [name] => vec![Value::from(match (std::env::var(name), default) {
                    (Ok(v), _) => v,
                    (Err(_), Some(d)) => d,
                    (Err(_), None) => {
                        return Err(fail(format!(
                            "lookup('env', '{name}'): the environment variable {name} is not set"
                        )));
                    }
                })],
                [name, default] => vec![Value::from(std::env::var(name).unwrap_or_else(|_| default.clone()))],
                _ => return Err(fail("lookup('env', ...) takes one argument (and a default)".into())),
            }
        }
        "file" => {
            let lstrip: bool = kw.get::<Option<bool>>("lstrip")?.unwrap_or(false);
            let rstrip: bool = kw.get::<Option<bool>>("rstrip")?.unwrap_or(true);
            let search = search_path(state);
            let mut out = Vec::new();
            for term in terms {
                let term = text(term)?;
                let path = find_file(&search, "files", &term);
                let t = std::fs::read_to_string(&path).map_err(|e| {
                    let why =
                        if e.kind() == std::io::ErrorKind::NotFound { MISSING.to_string() } else { e.to_string() };
                    fail(format!("lookup('file', '{term}'): cannot read {}: {why}", path.display()))
                })?;
                let t = if lstrip { t.trim_start() } else { &t };
                let t = if rstrip { t.trim_end() } else { t };
                out.push(Value::from(t));
            }
            out
        }
        "list" => terms.to_vec(),
        "template" => template_lookup(state, &terms.iter().map(text).collect::<Result<Vec<_>, _>>()?, kw)?,
        "pipe" => pipe_lookup(state, &terms.iter().map(text).collect::<Result<Vec<_>, _>>()?)?,
        "password" => {
            let base = state.lookup("playbook_dir").and_then(|v| v.as_str().map(PathBuf::from));
            let planning = PLANNING.with(|p| p.get());
            let mut out = Vec::new();
            for t in terms {
                out.push(Value::from(password::password_lookup(&text(t)?, kw, base.as_deref(), planning)?));
            }
            out
        }
        // The with_ loops' lookups, by the filters the front-end's loops use.
        "dict" | "items" | "together" | "nested" => {
            let filter = match kind {
                "dict" => "with_dict_items",
                "items" => "with_items_flatten",
                "together" => "with_together",
                _ => "with_nested",
            };
            let source = format!("terms | {filter}");
            let source = unqualified(&source);
            let expr = state.env().compile_expression(&source)?;
            let v = expr.eval(minijinja::context! { terms => Value::from(terms.to_vec()) })?;
            v.try_iter()?.collect()
        }
        // The lines of each command's output (Ansible's lines lookup: pipe's, split).
        "lines" => {
            let cmds = terms.iter().map(text).collect::<Result<Vec<_>, _>>()?;
            let mut out = Vec::new();
            for (cmd, o) in cmds.iter().zip(pipe_lookup(state, &cmds).map_err(|e| {
                let msg = e.detail().unwrap_or_default().replace("lookup_plugin.pipe(", "lookup_plugin.lines(");
                fail(msg)
            })?) {
                let _ = cmd;
                out.extend(o.as_str().unwrap_or_default().lines().map(Value::from));
            }
            out
        }
        // [index, item] of each item, the terms flattened one level (Ansible's indexed_items).
        "indexed_items" => {
            let mut items = Vec::new();
            for t in terms {
                match t.try_iter() {
                    Ok(i) if t.as_str().is_none() && t.kind() == minijinja::value::ValueKind::Seq => items.extend(i),
                    _ => items.push(t.clone()),
                }
            }
            items.into_iter().enumerate().map(|(i, v)| Value::from(vec![Value::from(i), v])).collect()
        }
        // One of the terms, at random (Ansible's random_choice).
        "random_choice" => {
            use std::hash::{BuildHasher, Hasher};
            if terms.is_empty() {
                vec![]
            } else {
                let r = std::collections::hash_map::RandomState::new().build_hasher().finish();
                vec![terms[(r % terms.len() as u64) as usize].clone()]
            }
        }
        "inventory_hostnames" => {
            let patterns = terms.iter().map(text).collect::<Result<Vec<_>, _>>()?;
            let hostvars = state.lookup("hostvars");
            match hostvars.as_ref().and_then(|h| h.downcast_object_ref::<HostVars>()) {
                Some(h) => h.lookup.pattern_hosts(&patterns).into_iter().map(Value::from).collect(),
                None => return Err(fail("lookup('inventory_hostnames', ...): no inventory here".into())),
            }
        }
        "vars" => {
            // A variable by name (its value as the context holds it), or `default`.
            let default: Option<Value> = kw.get("default")?;
            let mut out = Vec::new();
            for term in terms {
                let name = term.as_str().ok_or_else(|| fail(format!("Variable name must be 'str' not {term}.")))?;
                match state.lookup(name).filter(|v| !v.is_undefined()) {
                    Some(v) => out.push(v),
                    None => match &default {
                        Some(d) => out.push(d.clone()),
                        None => {
                            return Err(minijinja::Error::new(
                                ErrorKind::UndefinedError,
                                format!("No variable named '{name}' was found."),
                            ));
                        }
                    },
                }
            }
            out
        }
        "fileglob" => {
            let search = search_path(state);
            let mut out = Vec::new();
            for term in terms {
                out.extend(fileglob(&search, &text(term)?).into_iter().map(Value::from));
            }
            out
        }
        "first_found" => {
            let search = search_path(state);
            // `with_first_found` looks in the subdirectory its module's name suggests.
            let sub: Option<String> = kw.get("_subdir")?;
            let mut options = FirstFound::from_kwargs(kw)?;
            let mut wanted = Vec::new();
            let terms = if terms.is_empty() { vec![Value::from(())] } else { terms.to_vec() };
            for term in &terms {
                first_found_terms(term, &mut options, &mut wanted)?;
            }
            for name in &wanted {
                if let Some(p) = find_in_search(&search, sub.as_deref(), name) {
                    kw.assert_all_used()?;
                    return Ok(vec![Value::from(p.display().to_string())]);
                }
            }
            if options.skip {
                vec![]
            } else {
                return Err(fail("No file was found when using first_found.".into()));
            }
        }
        "sequence" => {
            let mut out = Vec::new();
            for term in terms {
                let items = sequence::sequence(&text(term)?).map_err(fail)?;
                out.extend(items.into_iter().map(Value::from));
            }
            out
        }
        // A name no plugin can have (Ansible does not render a lookup's name): Ansible fails the
        // task when it runs, so may the run (a task that ignores its errors goes on).
        other if !is_plugin_name(other) => {
            return Err(fail(format!("The lookup plugin {} was not found.", py_repr(other))));
        }
        other => {
            // A site's own plugin, beside the playbook, in a role or in ansible.cfg's lookup
            // plugin paths, is Python Ansible imports: run by the site's Python.
            let mut dirs: Vec<PathBuf> = search_path(state).iter().map(PathBuf::from).collect();
            dirs.extend(state.lookup("playbook_dir").and_then(|d| d.as_str().map(PathBuf::from)));
            let mut files: Vec<PathBuf> =
                dirs.iter().map(|d| d.join("lookup_plugins").join(format!("{other}.py"))).collect();
            let plugins = state.lookup(PYTHON);
            let py = plugins.as_ref().and_then(|p| p.downcast_object_ref::<PythonPlugins>()).map(|p| p.0.clone());
            if let Some(py) = &py {
                let configured = py.lookup_dirs.lock().unwrap_or_else(|p| p.into_inner()).clone();
                files.extend(configured.iter().map(|d| d.join(format!("{other}.py"))));
            }
            match (files.into_iter().find(|p| p.is_file()), py) {
                (Some(file), Some(py)) => return python_lookup(state, &py, other, &file, terms, kw),
                _ => {
                    return Err(fail(format!(
                        "lookup('{other}', ...): copctl has the {LOOKUPS} lookups, and no lookup_plugins/{other}.py is beside the playbook, in its roles or in ansible.cfg's lookup_plugins"
                    )));
                }
            }
        }
    };
    kw.assert_all_used()?;
    Ok(out)
}

/// The words of a site's lookup plugin left to the run while planning.
const LOOKUP_AT_RUN: &str = "runs when its task runs";

/// A site's lookup plugin `file` run for `terms` with the task's variables; while planning,
/// an error saying it is left to the run (a lookup may read or change what the plan must not).
fn python_lookup(
    state: &minijinja::State,
    py: &python::Python,
    name: &str,
    file: &Path,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    let mut kwargs = serde_json::Map::new();
    for k in kw.args().map(str::to_string).collect::<Vec<_>>() {
        if matches!(k.as_str(), "wantlist" | "errors") {
            continue;
        }
        let v: Value = kw.get(&k)?;
        kwargs.insert(k, to_json(&v)?);
    }
    if PLANNING.with(|p| p.get()) || LOADING.with(|p| p.get()) {
        return Err(fail(format!("lookup('{name}', ...): {} {LOOKUP_AT_RUN}", file.display())));
    }
    let mut json_terms = Vec::new();
    for t in terms {
        json_terms.push(match t.downcast_object_ref::<TermFailed>() {
            Some(f) => serde_json::json!({ "__copctl_undefined__": f.detail }),
            None => to_json(t)?,
        });
    }
    // The task's variables as the plugin's `variables`: what can be JSON, hostvars aside.
    let mut variables = serde_json::Map::new();
    if let Some(ctx) = ROOTS.with(|r| r.borrow().last().cloned())
        && let Ok(keys) = ctx.try_iter()
    {
        for k in keys {
            let Some(key) = k.as_str().filter(|k| !matches!(*k, "hostvars" | "vars" | PYTHON)) else { continue };
            if let Ok(v) = ctx.get_attr(key)
                && !v.is_undefined()
                && let Ok(j) = serde_json::to_value(&v)
            {
                variables.insert(key.to_string(), j);
            }
        }
    }
    let basedir = state.lookup("playbook_dir").and_then(|d| d.as_str().map(String::from));
    let answer = py
        .lookup(
            file,
            json_terms,
            serde_json::Value::Object(variables),
            serde_json::Value::Object(kwargs),
            basedir.as_deref(),
        )
        .map_err(|e| fail(format!("lookup('{name}', ...): {e}")))?;
    match answer {
        python::Answer::Value(serde_json::Value::Array(items)) => Ok(items.into_iter().map(to_value).collect()),
        python::Answer::Value(other) => {
            Err(fail(format!("lookup('{name}', ...): {} returned {other}, not a list", file.display())))
        }
        python::Answer::Undefined(e) => {
            let term = terms.iter().find_map(|t| t.downcast_object_ref::<TermFailed>());
            Err(match term {
                Some(f) => minijinja::Error::new(f.kind, f.detail.clone()),
                None => minijinja::Error::new(ErrorKind::UndefinedError, e),
            })
        }
        python::Answer::Failed(e) => Err(fail(format!(
            "An unhandled exception occurred while running the lookup plugin '{name}' ({}): {e}",
            file.display()
        ))),
    }
}

/// Where an Ansible task's template file finds what it includes or imports (`{% include 'bar'
/// %}`), as the template action sets Jinja's search path: each of `ansible_search_path` (the
/// role, the playbook's directory), then the template's own directory, each's `templates/`
/// first. None outside an Ansible task (native templates load from the site's templates).
fn include_dirs(name: &str, ctx: &Value) -> Vec<PathBuf> {
    let Ok(sp) = ctx.get_attr("ansible_search_path") else { return vec![] };
    let Ok(sp) = sp.try_iter() else { return vec![] };
    let mut base: Vec<PathBuf> = sp.filter_map(|p| p.as_str().map(PathBuf::from)).collect();
    if base.is_empty() {
        return vec![];
    }
    if let Some(d) = Path::new(name).parent().filter(|_| Path::new(name).is_absolute()) {
        base.push(d.to_path_buf());
    }
    base.into_iter().flat_map(|p| [p.join("templates"), p]).collect()
}

/// The task's `ansible_search_path` as a list of directories (none outside an Ansible task).
fn search_path(state: &minijinja::State) -> Vec<String> {
    state
        .lookup("ansible_search_path")
        .and_then(|v| v.try_iter().ok().map(|i| i.filter_map(|p| p.as_str().map(String::from)).collect()))
        .unwrap_or_default()
}

/// A shell-style pattern as Python's `fnmatch` reads it (`*`, `?`, `[...]` with `!` for not),
/// matching a whole name.
pub fn fnmatch(pattern: &str) -> Option<regex::Regex> {
    let mut re = String::from("^");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut class = String::from("[");
                for n in chars.by_ref() {
                    if n == ']' {
                        break;
                    }
                    class.push(if n == '!' && class.len() == 1 { '^' } else { n });
                }
                class.push(']');
                re.push_str(&class);
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).ok()
}

/// Ansible's fileglob lookup for one pattern: a pattern with a directory is looked for as a
/// file lookup finds that directory (`files/` first); a bare one in `files/` and then each
/// directory of the search path; the files of the first directory with matches. Python's glob
/// rules (`*` and `?` skip a leading dot, `[...]`), in name order (Python's is the directory's).
fn fileglob(search: &[String], term: &str) -> Vec<String> {
    let (dir, pattern) = match term.rsplit_once('/') {
        Some((d, p)) => (Some(if d.is_empty() { "/" } else { d }), p),
        None => (None, term),
    };
    let dirs: Vec<PathBuf> = match dir {
        Some(d) => vec![find_file(search, "files", d)],
        None => search.iter().flat_map(|p| [Path::new(p).join("files"), PathBuf::from(p)]).collect(),
    };
    let Some(re) = fnmatch(pattern) else { return vec![] };
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut found: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| re.is_match(n) && (!n.starts_with('.') || pattern.starts_with('.')))
            .map(|n| d.join(n).display().to_string())
            .collect();
        if !found.is_empty() {
            found.sort();
            return found;
        }
    }
    vec![]
}

/// The first_found lookup's options: from its keyword arguments, then from each mapping term
/// (which sets them all, as Ansible's `set_options` does).
#[derive(Default)]
struct FirstFound {
    files: Vec<String>,
    paths: Vec<String>,
    skip: bool,
}

impl FirstFound {
    fn from_kwargs(kw: &minijinja::value::Kwargs) -> Result<Self, minijinja::Error> {
        let files: Option<Value> = kw.get("files")?;
        let paths: Option<Value> = kw.get("paths")?;
        Ok(FirstFound {
            files: files.map(|v| split_terms(&v, ",;")).transpose()?.unwrap_or_default(),
            paths: paths.map(|v| split_terms(&v, ",:;")).transpose()?.unwrap_or_default(),
            skip: kw.get::<Option<bool>>("skip")?.unwrap_or(false),
        })
    }
}

/// A text split on any of `on` (Ansible's deprecated splitting), or a list of such texts.
fn split_terms(v: &Value, on: &str) -> Result<Vec<String>, minijinja::Error> {
    if let Some(s) = v.as_str() {
        return Ok(s.split(|c| on.contains(c)).map(str::to_string).collect());
    }
    if v.is_undefined() || v.is_none() {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    for x in v.try_iter()? {
        out.extend(split_terms(&x, on)?);
    }
    Ok(out)
}

/// The candidate names of one first_found term, in order: a text is a file name (joined to each
/// of the current `paths`), a mapping sets the options and gives its `files` × `paths`, a list
/// gives its terms'.
fn first_found_terms(term: &Value, o: &mut FirstFound, out: &mut Vec<String>) -> Result<(), minijinja::Error> {
    let files = if term.is_none() || term.is_undefined() {
        o.files.clone()
    } else if let Some(s) = term.as_str() {
        vec![s.to_string()]
    } else if term.kind() == minijinja::value::ValueKind::Map {
        let get = |k: &str| term.get_attr(k).ok().filter(|v| !v.is_undefined() && !v.is_none());
        let files = get("files").map(|v| split_terms(&v, ",;")).transpose()?.unwrap_or_default();
        let paths = get("paths").map(|v| split_terms(&v, ",:;")).transpose()?.unwrap_or_default();
        let skip = get("skip").is_some_and(|v| v.is_true());
        *o = FirstFound { files: files.clone(), paths, skip };
        files
    } else if term.kind() == minijinja::value::ValueKind::Seq {
        for t in term.try_iter()? {
            first_found_terms(&t, o, out)?;
        }
        return Ok(());
    } else {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("Invalid term supplied. A string, dict or list is required, not {term}."),
        ));
    };
    if o.paths.is_empty() {
        out.extend(files);
    } else {
        for p in &o.paths {
            out.extend(
                files
                    .iter()
                    .map(|f| if f.starts_with('/') { f.clone() } else { format!("{}/{f}", p.trim_end_matches('/')) }),
            );
        }
    }
    Ok(())
}

/// A file found as Ansible's `find_file_in_search_path` finds it, or none: an absolute name if
/// it exists, else `sub/name` and `name` in each directory of `search`.
fn find_in_search(search: &[String], sub: Option<&str>, name: &str) -> Option<PathBuf> {
    let name_path = Path::new(name);
    if name_path.is_absolute() {
        return name_path.exists().then(|| name_path.to_path_buf());
    }
    search.iter().find_map(|d| {
        let d = Path::new(d);
        let in_sub = sub.filter(|s| name.split('/').next() != Some(*s)).map(|s| d.join(s).join(name));
        [in_sub, Some(d.join(name))].into_iter().flatten().find(|p| p.exists())
    })
}

/// Where Ansible's lookups find a relative file (its `path_dwim_relative_stack`): `sub/name`
/// and then `name` in each directory of `search`; else the name as it is (from where copctl
/// runs, when there is no search path).
fn find_file(search: &[String], sub: &str, name: &str) -> PathBuf {
    let name_path = Path::new(name);
    if name_path.is_absolute() || name.starts_with('~') {
        return name_path.to_path_buf();
    }
    let in_sub = name.split('/').next() != Some(sub);
    search
        .iter()
        .flat_map(|d| {
            let d = Path::new(d);
            [in_sub.then(|| d.join(sub).join(name)), Some(d.join(name))]
        })
        .flatten()
        .find(|p| p.exists())
        .unwrap_or_else(|| name_path.to_path_buf())
}

/// The arguments of `lookup(kind, terms..., options...)`: the kind, the terms, the options
/// (keyword arguments may come anywhere, as Python's `*terms, **kwargs` take them).
fn lookup_args(
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<(String, Vec<Value>, minijinja::value::Kwargs), minijinja::Error> {
    let mut pos = Vec::new();
    let mut kw = None;
    for v in args.into_values() {
        if v.is_kwargs() {
            kw = Some(minijinja::value::Kwargs::try_from(v)?);
        } else {
            pos.push(v);
        }
    }
    let kw = kw.unwrap_or_else(|| minijinja::value::Kwargs::from_iter(std::iter::empty::<(&str, Value)>()));
    let Some((kind, terms)) = pos.split_first() else {
        return Err(minijinja::Error::new(ErrorKind::MissingArgument, "lookup: the lookup's name is missing"));
    };
    let kind = kind.as_str().ok_or_else(|| {
        minijinja::Error::new(ErrorKind::InvalidOperation, format!("lookup: the lookup's name is text, not {kind}"))
    })?;
    // `lookup('ansible.builtin.env', ...)`: ansible-core's own lookups by their FQCN.
    let kind = kind.strip_prefix("ansible.builtin.").or_else(|| kind.strip_prefix("ansible.legacy.")).unwrap_or(kind);
    term_failed(kind, terms)?;
    Ok((kind.to_string(), terms.to_vec(), kw))
}

/// ansible-core's filters and tests named by their FQCN (`x | ansible.builtin.basename`, `is
/// ansible.builtin.match`) as their short names, which are the ones copctl registers: the text
/// with the collection's prefix taken out where a filter or a test is named.
fn unqualified(text: &str) -> std::borrow::Cow<'_, str> {
    static FQCN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(\|\s*|\bis\s+(?:not\s+)?)ansible\.(?:builtin|legacy)\.([A-Za-z_])")
            .expect("a valid pattern")
    });
    if !text.contains("ansible.") {
        return std::borrow::Cow::Borrowed(text);
    }
    FQCN.replace_all(text, "$1$2")
}

/// A bare expression as copctl compiles it: FQCN names made short, attribute chains under
/// `default` and `is defined` made chained lookups, `str % args` the format filter (see `rewrite`).
fn prepared(expr: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match unqualified(expr) {
        Cow::Borrowed(t) => rewrite::apply_default(t, true),
        Cow::Owned(t) => Cow::Owned(rewrite::apply_default(&t, true).into_owned()),
    }
}

/// `lookup(kind, terms..., wantlist=False)` as Ansible gives its result: with `wantlist` the
/// list; else none for no result, one result as it is, several texts joined with commas.
fn lookup(
    state: &minijinja::State,
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    let (kind, terms, kw) = lookup_args(args)?;
    let wantlist: bool = kw.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let Some(mut out) = lookup_or_not(state, &kind, &terms, &kw)? else { return Ok(Value::from(())) };
    Ok(match out.len() {
        _ if wantlist => Value::from(out),
        0 => Value::from(()),
        1 => out.remove(0),
        _ if out.iter().all(|v| v.as_str().is_some()) => {
            Value::from(out.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
        }
        _ => Value::from(out),
    })
}

/// The lookup's results, or none where it failed and its `errors` (`strict`, the default;
/// `warn`; `ignore`) says to go on, as Ansible's templar does with every lookup.
fn lookup_or_not(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Option<Vec<Value>>, minijinja::Error> {
    let errors: Option<String> = kw.get("errors")?;
    match (run_lookup(state, kind, terms, kw), errors.as_deref()) {
        (Ok(out), _) => Ok(Some(out)),
        (Err(e), None | Some("strict")) => Err(e),
        (Err(e), Some("warn")) => {
            tracing::warn!("an error occurred while running the lookup plugin '{kind}': {}", describe_error(&e));
            Ok(None)
        }
        (Err(_), Some("ignore")) => Ok(None),
        (Err(_), Some(other)) => Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("lookup('{kind}', ...): errors is one of strict, warn and ignore, not {other:?}"),
        )),
    }
}

/// `query(kind, terms...)` (and `q`): the lookup's list, always.
fn query(
    state: &minijinja::State,
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    let (kind, terms, kw) = lookup_args(args)?;
    let _: Option<bool> = kw.get("wantlist")?;
    Ok(Value::from(lookup_or_not(state, &kind, &terms, &kw)?.unwrap_or_default()))
}

/// One template's text rendered as Ansible renders it: its `#jinja2:` line applied, Jinja's
/// settings `o` (Ansible's defaults when none is set), the trailing newlines put back.
fn render_text(
    env: &Environment<'_>,
    name: &str,
    source: &str,
    ctx: &Value,
    o: &Syntax,
) -> Result<String, minijinja::Error> {
    // Ansible pads with the module's newline_sequence, not the `#jinja2:` line's.
    let newline = o.newline_sequence.clone().unwrap_or_else(|| "\n".into());
    let unqualified_source = unqualified(source);
    let (body, o) = header_overrides(&unqualified_source, o)?;
    let out = if o == Syntax::default() {
        let body = rewrite::apply_default(body, false);
        with_root(ctx, || env.render_named_str(name, &body, ctx))?
    } else {
        let mut b = minijinja::syntax::SyntaxConfig::builder();
        b.trim_blocks(o.trim_blocks.unwrap_or(true)).lstrip_blocks(o.lstrip_blocks.unwrap_or(false));
        b.keep_trailing_newline(o.keep_trailing_newline.unwrap_or(false));
        let pick = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
        b.block_delimiters(pick(&o.block_start_string, "{%"), pick(&o.block_end_string, "%}"));
        b.variable_delimiters(pick(&o.variable_start_string, "{{"), pick(&o.variable_end_string, "}}"));
        b.comment_delimiters(pick(&o.comment_start_string, "{#"), pick(&o.comment_end_string, "#}"));
        if let Some(p) = &o.line_statement_prefix {
            b.line_statement_prefix(p.clone());
        }
        if let Some(p) = &o.line_comment_prefix {
            b.line_comment_prefix(p.clone());
        }
        let config = b.build()?;
        let mut env = env.clone();
        env.set_syntax(config.clone());
        // Jinja2 turns every newline of the template's text into newline_sequence (values put
        // in by expressions keep theirs).
        let body = match o.newline_sequence.as_deref() {
            None | Some("\n") => body.to_string(),
            Some(seq) => body.replace("\r\n", "\n").replace('\r', "\n").replace('\n', seq),
        };
        let body = rewrite::apply(&body, config, false);
        with_root(ctx, || env.render_named_str(name, &body, ctx))?
    };
    Ok(pad_trailing_newlines(body, out, &newline))
}

/// Ansible's `_escape_backslashes` for a template written in YAML (not a template file): every
/// backslash inside a string literal of a `{{ ... }}` is doubled before Jinja reads it, so that
/// YAML's unescaping and Jinja's do not both act on it (`regex_replace('(\\d+)', '\\1')`
/// written once in a double-quoted YAML string keeps its backreference; `join('\n')` in a plain
/// or single-quoted one is a backslash and an `n`, as under Ansible). `{% ... %}`, comments and
/// `raw` blocks are left as they are, as Ansible leaves them.
pub fn escape_backslashes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\\') || !text.contains("{{") {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let mut last = 0;
    while i + 1 < b.len() {
        match &b[i..i + 2] {
            b"{%" => {
                let raw = text[i + 2..].trim_start_matches(['-', '+', ' ', '\t', '\n']).starts_with("raw");
                let end = if raw {
                    text[i..].find("endraw").and_then(|e| text[i + e..].find("%}").map(|x| i + e + x + 2))
                } else {
                    text[i..].find("%}").map(|x| i + x + 2)
                };
                i = end.unwrap_or(b.len());
            }
            b"{#" => i = text[i..].find("#}").map(|x| i + x + 2).unwrap_or(b.len()),
            b"{{" => {
                i += 2;
                // Inside the expression: string literals get their backslashes doubled.
                while i < b.len() && !(b[i] == b'}' && b.get(i + 1) == Some(&b'}')) {
                    if b[i] == b'\'' || b[i] == b'"' {
                        let q = b[i];
                        let start = i;
                        i += 1;
                        while i < b.len() && b[i] != q {
                            i += if b[i] == b'\\' { 2 } else { 1 };
                        }
                        let lit = &text[start..i.min(b.len())];
                        out.push_str(&text[last..start]);
                        out.push_str(&lit.replace('\\', "\\\\"));
                        last = i.min(b.len());
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
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

/// Which secret variables the renderings of a context read: shared by the context and every
/// context reached through it (`hostvars[...]`), kept as a stack of scopes so that a variable
/// rendered as it is read (`LazyVars::resolve`) knows what it read, and says so again each
/// time its cached value is read.
#[derive(Debug)]
struct SecretReads {
    names: SecretNames,
    /// More names to treat as secrets: facts set from secrets during a run.
    derived: Mutex<BTreeSet<String>>,
    /// Open scopes, innermost last; the first is the context's own and is never closed.
    scopes: Mutex<Vec<BTreeSet<String>>>,
}

impl SecretReads {
    fn new(names: SecretNames) -> SecretReads {
        SecretReads { names, derived: Mutex::default(), scopes: Mutex::new(vec![BTreeSet::new()]) }
    }

    fn is_secret(&self, name: &str) -> bool {
        self.names.is_secret(name) || self.derived.lock().expect("secret names").contains(name)
    }

    fn record<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        let mut scopes = self.scopes.lock().expect("secret reads");
        let top = scopes.last_mut().expect("the context's own scope");
        top.extend(names.into_iter().cloned());
    }

    fn open(&self) {
        self.scopes.lock().expect("secret reads").push(BTreeSet::new());
    }

    /// Closes the innermost scope; what it read counts for the scope around it too.
    fn close(&self) -> BTreeSet<String> {
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
/// A variable of a task's context as the site wrote it, before any rendering (assert's `that:
/// '{{ checks }}'` takes the list, not the rendered items); `None` where `ctx` is no task's.
pub fn raw_var(ctx: &Value, name: &str) -> Option<serde_json::Value> {
    let vars = ctx.downcast_object_ref::<LazyVars>()?;
    vars.ready.get(name).map_or_else(|| vars.raw.get(name).cloned(), |v| serde_json::to_value(v).ok())
}

pub fn treat_as_secret<'a>(ctx: &Value, names: impl IntoIterator<Item = &'a String>) {
    if let Some(r) = reads_of(ctx) {
        r.derived.lock().expect("secret names").extend(names.into_iter().cloned());
    }
}

/// Where secret-named keys sit inside a value, as dotted paths below `prefix`.
fn secret_paths(names: &SecretNames, prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
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
    raw: crate::vars::VarLayers,
    /// Names this context does not hold itself (`groups`, `hostvars` for another host's vars).
    fallback: Option<Value>,
    /// Variables converted or rendered as they were read, with the secrets each read.
    rendered: Mutex<BTreeMap<String, (Value, BTreeSet<String>)>>,
    reads: Arc<SecretReads>,
}

impl std::fmt::Debug for LazyVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyVars").field("ready", &self.ready.keys()).field("raw", &self.raw.names()).finish()
    }
}

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

    /// Records a read of `name` when it is, or holds, a secret (`db` holding `db.password`).
    fn note(&self, name: &str) {
        if self.reads.is_secret(name) {
            self.reads.record([&name.to_string()]);
        } else if let Some(v @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) = self.raw.get(name) {
            let mut paths = Vec::new();
            secret_paths(&self.reads.names, name, v, &mut paths);
            if !paths.is_empty() {
                self.reads.record(&paths);
            }
        }
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
        if let Some(v) = self.ready.get(name) {
            self.note(name);
            return Some(v.clone());
        }
        if let Some((raw, data)) = self.raw.get_data(name) {
            self.note(name);
            if !data && holds_template(raw) {
                return Some(self.resolve(name, raw));
            }
            let mut cache = self.rendered.lock().expect("render cache");
            return Some(cache.entry(name.to_string()).or_insert_with(|| (to_value(raw), BTreeSet::new())).0.clone());
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

/// A text that renders as itself (Ansible's `!unsafe`): a raw block around it where it holds
/// template syntax. One holding `endraw` cannot be kept that way and is refused.
pub fn literal(text: &str) -> Result<String, String> {
    if !is_template(text) {
        return Ok(text.to_string());
    }
    if text.contains("endraw") {
        return Err(format!("copctl cannot keep a !unsafe text holding 'endraw' as written: {text:?}"));
    }
    Ok(format!("{{% raw %}}{text}{{% endraw %}}"))
}

/// The expression of a string that is one `{{ expression }}` and nothing else, but for one
/// trailing newline (which Jinja drops before Ansible renders the rest natively): its value keeps
/// its type (Ansible's native values), where any other template, a space around it included,
/// renders to text. A value that is text gets the newline back (`with_dropped_newline`).
pub fn single_expression(s: &str) -> Option<&str> {
    s.strip_suffix('\n')
        .unwrap_or(s)
        .strip_prefix("{{")
        .and_then(|x| x.strip_suffix("}}"))
        .filter(|x| !x.contains("{{") && !x.contains("{%") && (!x.contains("}}") || one_expression(x)))
}

/// Whether `inner` (what is between a text's first `{{` and last `}}`) is one expression: no
/// bracket closes what it did not open (a `}}` ending the expression early), as Jinja's lexer
/// reads `{{ {'a': {'b': 1}} }}` as one mapping.
fn one_expression(inner: &str) -> bool {
    let mut depth = 0usize;
    let mut quote = None;
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0 && quote.is_none()
}

/// The native value of `source`, a `single_expression`: text gets back the trailing newline Jinja
/// dropped, unless it ends with one (Ansible puts back the newlines the result lacks):
/// `"{{ name }}\n"` is the name and a newline, `"{{ port }}\n"` the number.
pub fn with_dropped_newline(source: &str, v: Value) -> Value {
    match v.as_str() {
        Some(text) if source.ends_with('\n') && !text.ends_with('\n') => Value::from(format!("{text}\n")),
        _ => v,
    }
}

/// `with_dropped_newline` for a value already in JSON.
pub fn json_with_dropped_newline(source: &str, v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::String(text) if source.ends_with('\n') && !text.ends_with('\n') => {
            serde_json::Value::String(format!("{text}\n"))
        }
        v => v,
    }
}

/// `single_expression` of a string written in YAML, its backslashes escaped as Ansible's are
/// (`escape_backslashes`).
pub fn yaml_single_expression(s: &str) -> Option<String> {
    single_expression(&escape_backslashes(s)).map(str::to_string)
}

/// Renders every string of a variable's value. A string that is one expression (`"{{ groups['w'] }}"`)
/// keeps the expression's type, as Ansible's native values do; other strings render to text.
fn render_json(env: &Environment<'static>, v: &serde_json::Value, ctx: &Value) -> Result<Value, minijinja::Error> {
    Ok(match v {
        serde_json::Value::String(s) if is_template(s) => match single_expression(&escape_backslashes(s)) {
            Some(expr) => {
                let v = with_root(ctx, || env.compile_expression(&prepared(expr))?.eval(ctx))?;
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

/// Compares dotted versions numerically (`580.95.05` > `565.57.01`, `v1.31.4+rke2r1` < `v1.32.0`).
/// Python's StrictVersion as an ordered key: `N.N[.N]` and a pre-release `aN`/`bN`, which comes
/// before the release (none: after every pre-release).
fn strict_version(s: &str) -> Option<([u64; 3], (u8, char, u64))> {
    static STRICT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:([ab])(\d+))?$").expect("a valid pattern")
    });
    let c = STRICT.captures(s)?;
    let n = |i: usize| c.get(i).map_or(Some(0), |m| m.as_str().parse().ok());
    let pre = match c.get(4) {
        Some(l) => (0, l.as_str().chars().next()?, n(5)?),
        None => (1, ' ', 0),
    };
    Some(([n(1)?, n(2)?, n(3)?], pre))
}

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
    password::add(env);
    // Ansible's `with_together` over templated lists: the lists zipped item by item, a shorter
    // list's missing items none (its together lookup). Used by the Ansible front-end's loops.
    env.add_filter("with_together", |v: Value| -> Result<Value, minijinja::Error> {
        let lists: Vec<Vec<Value>> =
            v.try_iter()?.map(|l| l.try_iter().map(Iterator::collect)).collect::<Result<_, _>>()?;
        let n = lists.iter().map(Vec::len).max().unwrap_or(0);
        Ok(Value::from(
            (0..n)
                .map(|i| {
                    Value::from(lists.iter().map(|l| l.get(i).cloned().unwrap_or(Value::from(()))).collect::<Vec<_>>())
                })
                .collect::<Vec<_>>(),
        ))
    });
    // Ansible's `with_nested` over templated lists: every combination, first list outermost,
    // each flattened one level (its nested lookup; a text term is one item).
    env.add_filter("with_nested", |v: Value| -> Result<Value, minijinja::Error> {
        use minijinja::value::ValueKind;
        let flat1 = |x: Value| -> Result<Vec<Value>, minijinja::Error> {
            let mut out = Vec::new();
            for t in x.try_iter()? {
                if t.kind() == ValueKind::Seq { out.extend(t.try_iter()?) } else { out.push(t) }
            }
            Ok(out)
        };
        let lists: Vec<Vec<Value>> = v
            .try_iter()?
            .map(|l| if l.as_str().is_some() { Ok(vec![l]) } else { l.try_iter().map(Iterator::collect) })
            .collect::<Result<_, _>>()?;
        let Some((first, rest)) = lists.split_first() else {
            return Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                "with_nested requires at least one element in the nested list",
            ));
        };
        let mut result = first.clone();
        for next in rest {
            let mut combined = Vec::new();
            for x in &result {
                for y in next {
                    combined.push(Value::from(flat1(Value::from(vec![x.clone(), y.clone()]))?));
                }
            }
            result = combined;
        }
        // Python iterates a text term character by character here, as Ansible's lookup does.
        Ok(Value::from(result.into_iter().map(|x| flat1(x).map(Value::from)).collect::<Result<Vec<_>, _>>()?))
    });
    // Ansible's `subelements` filter: each element (of a list, or a mapping's values) with each
    // item of the list its dotted key names, as pairs; and the `with_subelements` lookup's
    // form of it (`lookup: true`), which skips elements marked `skipped` and checks each step
    // of the key as the lookup does.
    env.add_filter(
        "subelements",
        |obj: Value,
         key: Value,
         skip_missing: Option<Value>,
         kwargs: minijinja::value::Kwargs|
         -> Result<Value, minijinja::Error> {
            let skip_missing = match kwargs.get::<Option<Value>>("skip_missing")?.or(skip_missing) {
                Some(v) => v.is_true(),
                None => false,
            };
            let lookup = kwargs.get::<Option<bool>>("lookup")?.unwrap_or(false);
            kwargs.assert_all_used()?;
            subelements(obj, key, skip_missing, lookup)
        },
    );
    // Ansible's `with_items` over a templated list: the list flattened one level (a text is one
    // item), as its `items` lookup does. Used by the Ansible front-end's loops.
    env.add_filter("with_items_flatten", |v: Value| -> Result<Value, minijinja::Error> {
        use minijinja::value::ValueKind;
        // Not a list: one term, as Ansible gives a with_ lookup (a text, a mapping).
        if !matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) {
            return Ok(Value::from(vec![v]));
        }
        let mut out = Vec::new();
        for item in v.try_iter()? {
            if item.kind() == ValueKind::Seq {
                out.extend(item.try_iter()?);
            } else {
                out.push(item);
            }
        }
        Ok(Value::from(out))
    });
    // Ansible's `with_list` over a templated value: a list as it is, anything else its one item
    // (its task executor makes a lone term a list).
    env.add_filter("with_list_terms", |v: Value| -> Value {
        use minijinja::value::ValueKind;
        if matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) { v } else { Value::from(vec![v]) }
    });
    // Ansible's `with_dict` over a templated value: each term (a mapping, or each of a list's)
    // as its `{key, value}` items, and Ansible's error for a term that is not a mapping.
    env.add_filter("with_dict_items", |v: Value| -> Result<Value, minijinja::Error> {
        use minijinja::value::ValueKind;
        let terms: Vec<Value> = match v.kind() {
            ValueKind::Seq | ValueKind::Iterable => v.try_iter()?.collect(),
            _ => vec![v],
        };
        let mut out = Vec::new();
        for term in terms {
            if term.kind() != ValueKind::Map {
                let class = match term.kind() {
                    ValueKind::Number if term.is_integer() => "int",
                    ValueKind::Number => "float",
                    ValueKind::String => "str",
                    ValueKind::Bool => "bool",
                    ValueKind::None | ValueKind::Undefined => "NoneType",
                    _ => "list",
                };
                let shown = match term.kind() {
                    ValueKind::Bool => {
                        if term.is_true() {
                            "True".to_string()
                        } else {
                            "False".to_string()
                        }
                    }
                    ValueKind::None | ValueKind::Undefined => "None".to_string(),
                    _ => term.to_string(),
                };
                return Err(minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "The lookup plugin 'dict' failed: the 'dict' lookup plugin expects a dictionary, \
                         got '{shown}' of type <class '{class}'>)"
                    ),
                ));
            }
            for key in term.try_iter()? {
                let value = term.get_item(&key)?;
                out.push(Value::from(std::collections::BTreeMap::from([("key", key), ("value", value)])));
            }
        }
        Ok(Value::from(out))
    });
    // Ansible's `path is file`: a regular file on the bastion (plan-time checks of settings).
    env.add_test("file", |p: String| -> bool { std::path::Path::new(&p).is_file() });
    // Ansible's `lookup('env', NAME)` and `lookup('file', PATH)`: settings kept out of cleartext
    // files (`registry_password: "{{ lookup('env', 'COP_REGISTRY_PASSWORD') }}"`).
    // Jinja2's own globals beside range, dict and namespace.
    env.add_function("joiner", minijinja_contrib::globals::joiner);
    env.add_function("cycler", minijinja_contrib::globals::cycler);
    env.add_function(rewrite::CHAIN, rewrite::walk);
    env.add_function(rewrite::VAR, rewrite::var);
    env.add_function(rewrite::TERM, lookup_term);
    env.add_function(rewrite::CONST, conditional_const);
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
    // Ansible's `list is any` / `list is all`.
    env.add_test("any", |v: Value| -> Result<bool, minijinja::Error> { Ok(v.try_iter()?.any(|x| x.is_true())) });
    env.add_test("all", |v: Value| -> Result<bool, minijinja::Error> { Ok(v.try_iter()?.all(|x| x.is_true())) });
    env.add_test("version_compare", version_test);
    env.add_test("version", version_test);
    // Ansible's `x is version(y, '>=', strict=False, version_type=None)`: LooseVersion's
    // comparison unless `strict` (StrictVersion's: `1.0a1` before `1.0`, anything else that
    // is not `N.N[.N][aN|bN]` an error) or `version_type` (`loose`, `strict`, `semver`/`semantic`).
    fn version_test(
        v: String,
        other: String,
        op: Option<String>,
        kw: minijinja::value::Kwargs,
    ) -> Result<bool, minijinja::Error> {
        use std::cmp::Ordering::*;
        let strict: Option<bool> = kw.get("strict")?;
        let kind: Option<String> = kw.get("version_type")?;
        kw.assert_all_used()?;
        let fail = |m: String| minijinja::Error::new(ErrorKind::InvalidOperation, m);
        if strict.is_some() && kind.is_some() {
            return Err(fail("version: give strict or version_type, not both".into()));
        }
        let kind = match (strict, kind.as_deref()) {
            (Some(true), _) => "strict",
            (_, Some(k)) => k,
            _ => "loose",
        };
        let o = match kind {
            "loose" => compare_versions(&v, &other),
            "strict" => strict_version(&v).zip(strict_version(&other)).map(|(a, b)| a.cmp(&b)).ok_or_else(|| {
                let bad = if strict_version(&v).is_none() { &v } else { &other };
                fail(format!("Version comparison failed: invalid version number '{bad}'"))
            })?,
            "semver" | "semantic" => {
                let parse = |s: &str| {
                    semver::Version::parse(s)
                        .map_err(|_| fail(format!("Version comparison failed: invalid semantic version '{s}'")))
                };
                parse(&v)?.cmp_precedence(&parse(&other)?)
            }
            k => {
                return Err(fail(format!(
                    "version: version_type {k:?} is not one copctl compares (loose, strict, semver, semantic)"
                )));
            }
        };
        Ok(match op.as_deref().unwrap_or("==") {
            ">=" | "ge" => o != Less,
            ">" | "gt" => o == Greater,
            "<=" | "le" => o != Greater,
            "<" | "lt" => o == Less,
            "==" | "eq" | "=" => o == Equal,
            "!=" | "ne" | "<>" => o != Equal,
            other => {
                return Err(minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!("unknown version operator {other}"),
                ));
            }
        })
    }
    // POSIX shell quoting exactly as Ansible's `quote` (Python's shlex.quote) does it, so a
    // site's shell lines render the same under copctl and Ansible.
    env.add_filter("quote", |v: Value| -> String {
        let s = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        shell_quote(&s)
    });
    // Ansible's `bool`: the words yes/on/true/1 and no/off/false/0 in any case, the integers
    // 1 and 0; anything else is false but what equals 1 (Ansible warns it is deprecated).
    env.add_filter("bool", |v: Value| -> bool {
        if let Some(s) = v.as_str() {
            return matches!(s.to_lowercase().as_str(), "yes" | "on" | "true" | "1");
        }
        match v.kind() {
            minijinja::value::ValueKind::Bool => v.is_true(),
            minijinja::value::ValueKind::Number => f64::try_from(v).is_ok_and(|n| n == 1.0),
            _ => false,
        }
    });
    env.add_filter("b64encode", |s: String| -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
    });
    // Jinja2's (and minijinja's) `urlencode`: a string percent-encoded but for `/ . - _`; a
    // mapping as `k=v&...`.
    env.add_filter("urlencode", |v: Value| -> Result<String, minijinja::Error> {
        use crate::vars::secret::urlencode;
        let text = |x: &Value| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string());
        if v.is_undefined() || v.is_none() {
            return Ok(String::new());
        }
        if v.kind() != minijinja::value::ValueKind::Map {
            return Ok(urlencode(&text(&v)));
        }
        let mut pairs = Vec::new();
        for k in v.try_iter()? {
            let x = v.get_item(&k)?;
            if !(x.is_none() || x.is_undefined()) {
                pairs.push(format!("{}={}", urlencode(&text(&k)), urlencode(&text(&x))));
            }
        }
        Ok(pairs.join("&"))
    });
    env.add_filter("basename", |s: String| -> String { s.rsplit('/').next().unwrap_or("").to_string() });
    // Python's os.path.expanduser on the bastion, as Ansible's filter runs it: `~` and `~/...`
    // are $HOME; `~user` and anything else stay as written.
    env.add_filter("expanduser", |s: String| -> String { expanduser(&s, std::env::var("HOME").ok().as_deref()) });
    env.add_filter("dirname", |s: String| -> String {
        match s.rfind('/') {
            Some(0) => "/".into(),
            Some(i) => s[..i].to_string(),
            None => String::new(),
        }
    });
    // Ansible's `ternary(true_val, false_val, none_val)`: the third for a null value.
    env.add_filter("ternary", |v: Value, a: Value, b: Value, none: Option<Value>| -> Value {
        match none {
            Some(n) if v.is_none() => n,
            _ if v.is_true() => a,
            _ => b,
        }
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
fn expanduser(s: &str, home: Option<&str>) -> String {
    match (s.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            let out = format!("{}{rest}", h.trim_end_matches('/'));
            if out.is_empty() { "/".into() } else { out }
        }
        _ => s.to_string(),
    }
}

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

/// Ansible's `subelements` filter (`lookup`: its `with_subelements` lookup's rules).
fn subelements(obj: Value, key: Value, skip_missing: bool, lookup: bool) -> Result<Value, minijinja::Error> {
    use minijinja::value::ValueKind;
    let err = |m: String| minijinja::Error::new(ErrorKind::InvalidOperation, m);
    let py = |v: &Value| v.to_string();
    let elements: Vec<Value> = match obj.kind() {
        ValueKind::Map => {
            if lookup && obj.get_attr("skipped").is_ok_and(|s| !s.is_undefined() && !s.is_none() && s.is_true()) {
                return Ok(Value::from(Vec::<Value>::new()));
            }
            obj.try_iter()?.map(|k| obj.get_item(&k)).collect::<Result<_, _>>()?
        }
        ValueKind::Seq => obj.try_iter()?.collect(),
        _ if lookup => return Err(err("subelements lookup expects a list of two or three items, first a dict or a list, second a string pointing to the subkey".into())),
        _ => return Err(err("obj must be a list of dicts or a nested dict".into())),
    };
    let path: Vec<String> = match (key.as_str(), key.kind()) {
        (Some(s), _) => s.split('.').map(str::to_string).collect(),
        (None, ValueKind::Seq) if !lookup => key.try_iter()?.map(|k| k.to_string()).collect(),
        _ => return Err(err("subelements must be a list or a string".into())),
    };
    let mut out = Vec::new();
    for element in elements {
        if element.kind() != ValueKind::Map {
            if lookup {
                return Err(err(format!("subelements lookup expects a dictionary, got '{}'", py(&element))));
            }
        } else if lookup && element.get_attr("skipped").is_ok_and(|s| !s.is_undefined() && s.is_true()) {
            continue;
        }
        let mut values = element.clone();
        let mut found = true;
        for (i, k) in path.iter().enumerate() {
            let has = values.kind() == ValueKind::Map && values.get_attr(k).is_ok_and(|v| !v.is_undefined());
            if !has {
                if skip_missing {
                    found = false;
                    break;
                }
                return Err(err(format!("could not find '{k}' key in iterated item {}", py(&values))));
            }
            values = values.get_attr(k)?;
            if lookup && i + 1 < path.len() && values.kind() != ValueKind::Map {
                return Err(err(format!("the key {k} should point to a dictionary, got '{}'", py(&values))));
            }
        }
        if !found {
            continue;
        }
        if values.kind() != ValueKind::Seq {
            let last = path.last().cloned().unwrap_or_default();
            return Err(err(format!("the key {last} should point to a list, got {}", py(&values))));
        }
        let first = element.clone();
        for v in values.try_iter()? {
            out.push(Value::from(vec![first.clone(), v]));
        }
    }
    Ok(Value::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_in_expressions_are_escaped_as_ansible_escapes_them() {
        let e = |t: &str| escape_backslashes(t).into_owned();
        assert_eq!(e(r"{{ x | regex_replace('(\d+)', '\1') }}"), r"{{ x | regex_replace('(\\d+)', '\\1') }}");
        assert_eq!(e(r#"a\b {{ "c:\t" ~ 'it\'s' }} d\e"#), r#"a\b {{ "c:\\t" ~ 'it\\'s' }} d\e"#);
        // Statements, comments and raw blocks are Jinja's own.
        assert_eq!(e(r"{% set p = 'a\b' %}{{ p }}"), r"{% set p = 'a\b' %}{{ p }}");
        assert_eq!(
            e(r"{# '\x' #}{% raw %}{{ '\y' }}{% endraw %}{{ '\z' }}"),
            r"{# '\x' #}{% raw %}{{ '\y' }}{% endraw %}{{ '\\z' }}"
        );
        assert_eq!(e(r"no template \here"), r"no template \here");
    }

    #[test]
    fn one_expression_holds_nested_mappings_and_no_second_template() {
        assert_eq!(single_expression("{{ {'a': {'port': 1}} }}"), Some(" {'a': {'port': 1}} "));
        assert_eq!(
            single_expression("{{ x | combine({'a': {'b': '}}'}}) }}"),
            Some(" x | combine({'a': {'b': '}}'}}) ")
        );
        assert_eq!(single_expression("{{ a }} and {{ b }}"), None);
        assert_eq!(single_expression("{{ a }}-{{ {'b': 1} }}"), None);
        assert_eq!(single_expression("{{ a }}}}"), None);
    }

    #[test]
    fn expanduser_is_pythons() {
        assert_eq!(expanduser("~/x", Some("/root")), "/root/x");
        assert_eq!(expanduser("~", Some("/home/a/")), "/home/a");
        assert_eq!(expanduser("~", Some("/")), "/");
        assert_eq!(expanduser("~bob/x", Some("/root")), "~bob/x");
        assert_eq!(expanduser("/tmp/~", Some("/root")), "/tmp/~");
        assert_eq!(expanduser("~/x", None), "~/x");
    }

    #[test]
    fn jinja2_first_line_and_trailing_newlines_are_ansibles() {
        let t = Templates::new(None);
        let ctx = Value::from(());
        let r = |s: &str| t.render_str(s, &ctx).map_err(|e| describe_error(&e));
        // Jinja drops one trailing newline, Ansible puts back as many as the text had.
        assert_eq!(r("{% if true %}\nz\n  {% endif %}\n\n").unwrap(), "z\n  \n\n");
        assert_eq!(r("#jinja2: trim_blocks: False\n{% if true %}\nz{% endif %}\n").unwrap(), "\nz\n");
        assert_eq!(
            r("#jinja2: variable_start_string: '[[', variable_end_string: ']]'\n[[ 1 + 1 ]] {{").unwrap(),
            "2 {{"
        );
        assert_eq!(
            r("#jinja2: trim_blocks: no\n{{ 1 }}").unwrap_err(),
            "'#jinja2:' override trim_blocks: no is not True or False"
        );
        assert_eq!(r("#jinja2: x: 1\n{{ 1 }}").unwrap_err(), "Invalid '#jinja2:' override key 'x'.");
        assert_eq!(r("#jinja2: trim_blocks {{ 1 }}").unwrap_err(), "Missing newline after '#jinja2:' override.");
        assert_eq!(
            r("#jinja2: lstrip_blocks=True\n{{ 1 }}").unwrap_err(),
            "Missing key-value separator `:` in '#jinja2:' override pair ' lstrip_blocks=True'."
        );
        assert_eq!(
            r("#jinja2: trim_blocks: True,\n{{ 1 }}").unwrap_err(),
            "Empty '#jinja2:' override pair not allowed."
        );
    }

    #[test]
    fn bool_is_ansibles() {
        let t = Templates::new(None);
        let ctx = Value::from(());
        // What ansible-core 2.19 renders: only its words and 1 are true.
        let text = "{{ 3 | bool }} {{ 'Y' | bool }} {{ 1 | bool }} {{ 1.0 | bool }} {{ 'On' | bool }} {{ none | bool }} {{ ' yes' | bool }}";
        assert_eq!(t.render_str(text, &ctx).unwrap(), "False False True True True False False");
    }

    #[test]
    fn lookups_read_the_bastions_environment_and_files() {
        let t = Templates::new(None);
        let ctx = Value::from(());
        let path = std::env::var("PATH").unwrap();
        assert_eq!(t.render_str("{{ lookup('env', 'PATH') }}", &ctx).unwrap(), path);
        assert_eq!(t.render_str("{{ lookup('env', 'COPCTL_SURELY_UNSET', 'dflt') }}", &ctx).unwrap(), "dflt");
        let e = t.render_str("{{ lookup('env', 'COPCTL_SURELY_UNSET') }}", &ctx).unwrap_err();
        assert!(
            e.to_string().contains(
                "lookup('env', 'COPCTL_SURELY_UNSET'): the environment variable COPCTL_SURELY_UNSET is not set"
            ),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pw");
        std::fs::write(&f, "s3cret pass\n").unwrap();
        let src = format!("{{{{ lookup('file', '{}') }}}}|{{{{ query('env', 'PATH') | length }}}}", f.display());
        assert_eq!(t.render_str(&src, &ctx).unwrap(), "s3cret pass|1");
        let e = t.render_str("{{ lookup('vault', 'x') }}", &ctx).unwrap_err();
        assert!(
            e.to_string().contains(
                "lookup('vault', ...): copctl has the dict, env, file, fileglob, first_found, indexed_items, inventory_hostnames, items, lines, list, nested, password, pipe, random_choice, sequence, template, together and vars lookups"
            ),
            "{e}"
        );
    }

    #[derive(Debug)]
    struct NoHosts;
    impl HostVarLookup for NoHosts {
        fn host_names(&self) -> Vec<String> {
            vec![]
        }
        fn vars_of(&self, _: &str) -> Option<crate::vars::VarLayers> {
            None
        }
    }

    #[test]
    fn version_test() {
        let t = Templates::new(None);
        let ctx = host_context(
            &t,
            "h",
            crate::inventory::Vars::new(),
            to_value(serde_json::json!({})),
            &[],
            Arc::new(NoHosts),
        );
        assert!(t.eval("'580.95.05' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(!t.eval("'550.1' is version('565.57.01', '>=')", &ctx).unwrap().is_true());
        assert!(t.eval("'v1.31.4+rke2r1' is version('v1.32.0', '<')", &ctx).unwrap().is_true());
    }

    #[test]
    fn ansible_managed_is_pythons_format_of_the_setting() {
        let v = |k: &str| match k {
            "file" => Some("F"),
            "host" => Some("H"),
            _ => None,
        };
        assert_eq!(python_format("{file} on {host} {{literal}} %Y", &v).unwrap(), "F on H {literal} %Y");
        assert_eq!(python_format("by {user}", &v).unwrap_err(), "KeyError: 'user'");
        assert_eq!(python_format("a } b", &v).unwrap_err(), "Single '}' encountered in format string");
        assert_eq!(python_format("a { b", &v).unwrap_err(), "Single '{' encountered in format string");
    }

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

    #[test]
    fn yaml_templates_are_not_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.yaml.j2"), "token: {{ t }}\n").unwrap();
        let t = Templates::new(Some(dir.path().to_path_buf()));
        let mut vars = crate::inventory::Vars::new();
        vars.insert("t".into(), serde_json::json!("K10::x"));
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_file("c.yaml.j2", &ctx).unwrap(), "token: K10::x\n");
    }

    #[test]
    fn strict_undefined_and_filters() {
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("pw".into(), serde_json::json!("it's"));
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_str("{{ pw | quote }}", &ctx).unwrap(), "'it'\"'\"'s'");
        assert_eq!(t.render_str("{{ inventory_hostname }}", &ctx).unwrap(), "h1");
        let e = t.render_str("{{ nope }}", &ctx).unwrap_err();
        assert!(Templates::is_undefined_error(&e));
        assert_eq!(t.render_str("{{ 'abc' | b64encode }}", &ctx).unwrap(), "YWJj");
        assert!(t.eval("'true' | bool", &ctx).unwrap().is_true());
    }

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
    fn urlencode_writes_what_minijinja_and_jinja2_write() {
        let t = Templates::new(None);
        let ctx = t.context(&crate::inventory::Vars::new());
        assert_eq!(
            t.render_str("{{ 'a b/c?d=é&x_y-z.' | urlencode }}", &ctx).unwrap(),
            "a%20b/c%3Fd%3D%C3%A9%26x_y-z."
        );
        assert_eq!(t.render_str("{{ {'k 1': 'v/2', 'n': none} | urlencode }}", &ctx).unwrap(), "k%201=v/2");
    }

    #[test]
    fn every_filter_form_of_a_secret_is_masked_by_the_redactor() {
        use crate::vars::secret::{MASK, Redactor};
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
