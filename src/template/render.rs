//! Rendering as Ansible renders: template files (the site's, else the embedded ones), strings
//! and bare expressions, with a file's `#jinja2:` line, Jinja's settings and the trailing
//! newlines Ansible keeps; and the thread's state a rendering leaves for the lookups it calls.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use minijinja::value::Value;
use minijinja::{Environment, ErrorKind};

use super::native::{single_expression, with_dropped_newline};
use super::source::{escape_backslashes, prepared, unqualified};
use super::{Syntax, Templates, rewrite};
use crate::text::python::{is_template, py_repr};

static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

tokio::task_local! {
    /// Set for the tasks of an Ansible playbook: their strings render as Ansible's do where
    /// copctl's own playbooks keep plain text (`render_str`).
    pub static ANSIBLE_TASK: bool;
}

thread_local! {
    /// The whole context of each rendering under way on this thread, innermost last: what the
    /// template lookup renders its file with (minijinja gives a function one variable at a
    /// time, and the lookup's file may read any of them, as Ansible's sees the task's vars).
    pub(super) static ROOTS: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Set while the template lookup renders a file: the values other than text that its
    /// expressions printed, for `native_result`.
    pub(super) static PRINTED: std::cell::RefCell<Option<Vec<Value>>> = const { std::cell::RefCell::new(None) };
}

pub(super) fn load_template(override_dir: &Option<PathBuf>, name: &str) -> Option<String> {
    // An Ansible playbook's templates are resolved beside it when it is loaded (absolute, and
    // `..` kept as Ansible keeps it: `ansible/../templates/x.j2`).
    if Path::new(name).is_absolute() {
        return std::fs::read_to_string(name).ok();
    }
    // A relative name stays inside the site's templates/ (or the built-in ones).
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

    /// Evaluates a bare expression (`when:`, `until:`, `changed_when:`), Ansible-style.
    pub fn eval(&self, expr: &str, ctx: &Value) -> Result<Value, minijinja::Error> {
        let expr = expr.trim();
        let expr = expr.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")).unwrap_or(expr);
        let (value, unprinted) = super::secrets::noting_reads(|| {
            with_root(ctx, expr, || self.env.compile_expression(&prepared(expr))?.eval(ctx))
        });
        // A value computed from secrets (`signing_key[:12]` of a `debug: var:`) is one.
        if unprinted && let Ok(v) = &value {
            super::secrets::learn_derived(ctx, v, expr, &[]);
        }
        value
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

/// `text` rendered with the variables where it is used: a single expression keeps its value's
/// type, as Ansible's templating of a string does.
pub(super) fn render_term(state: &minijinja::State, text: &str) -> Result<Value, minijinja::Error> {
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

/// Renders with `render`, noting the values other than text that expressions print.
pub(super) fn noting_printed<T>(render: impl FnOnce() -> T) -> (T, Vec<Value>) {
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
pub(super) fn native_result(env: &Environment<'_>, source: &str, text: &str, printed: &[Value]) -> Option<Value> {
    let core = if source.ends_with('\n') { text.strip_suffix('\n')? } else { text };
    let text_of = |v: &Value| noting_printed(|| env.render_str("{{ v }}", minijinja::context! { v => v.clone() })).0;
    printed.iter().find(|v| text_of(v).is_ok_and(|t| t == core)).cloned()
}

/// Runs `f` with `ctx` as the innermost rendering's context (see `ROOTS`), rendering `source`
/// (whose own text is no secret, `secrets::note_printed`).
pub(super) fn with_root<T>(ctx: &Value, source: &str, f: impl FnOnce() -> T) -> T {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            ROOTS.with(|r| r.borrow_mut().pop());
            super::secrets::close_frame();
        }
    }
    ROOTS.with(|r| r.borrow_mut().push(ctx.clone()));
    super::secrets::open_frame(source);
    let _pop = Pop;
    f()
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

/// One template's text rendered as Ansible renders it: its `#jinja2:` line applied, Jinja's
/// settings `o` (Ansible's defaults when none is set), the trailing newlines put back.
pub(super) fn render_text(
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
        with_root(ctx, &body, || env.render_named_str(name, &body, ctx))?
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
        with_root(ctx, &body, || env.render_named_str(name, &body, ctx))?
    };
    Ok(pad_trailing_newlines(body, out, &newline))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use minijinja::value::Value;

    use crate::template::{NoHosts, Templates, describe_error, host_context, to_value};

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
    fn yaml_templates_are_not_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.yaml.j2"), "token: {{ t }}\n").unwrap();
        let t = Templates::new(Some(dir.path().to_path_buf()));
        let mut vars = crate::inventory::Vars::new();
        vars.insert("t".into(), serde_json::json!("K10::x"));
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_file("c.yaml.j2", &ctx).unwrap(), "token: K10::x\n");
    }
}
