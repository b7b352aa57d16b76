//! Conditionals (`when`, `failed_when`, an assert's `that`) as ansible-core 2.19 judges them:
//! a bare expression, or a template whose value is the condition; a condition built out of
//! rendered text is refused as untrusted, as Ansible refuses it.

use minijinja::ErrorKind;
use minijinja::value::Value;

use super::context::raw_var;
use super::native::yaml_single_expression;
use super::render::{render_term, with_root};
use super::source::prepared;
use super::{Templates, rewrite};
use crate::text::python::{is_template, py_repr};

tokio::task_local! {
    /// Conditionals a task judged that were templates with a value other than text (Ansible
    /// deprecates them, and its task result says so): counted for the task whose scope this is.
    pub static TEMPLATED_CONDITIONALS: std::cell::Cell<u32>;
    /// Text the task's loop made by rendering a template written in the playbook around other
    /// text (`'x == {{ y }}'`): Ansible 2.19 does not trust it as an expression, nor does `judge`.
    pub static RENDERED_TEXT: std::cell::RefCell<std::collections::HashSet<String>>;
}

impl Templates {
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
        let value = with_root(ctx, inner, || self.env.compile_expression(&prepared(inner))?.eval(ctx))?;
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

/// A conditional's string constant written as a template (`rewrite::template_consts`), rendered
/// where it is judged; an error is the condition's.
pub(super) fn conditional_const(state: &minijinja::State, text: String) -> Result<Value, minijinja::Error> {
    render_term(state, &text).map_err(|e| {
        let detail = e.detail().unwrap_or_default().to_string();
        minijinja::Error::new(e.kind(), format!("the constant {}: {detail}", py_repr(&text)))
    })
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
