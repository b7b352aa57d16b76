//! `set_fact`: variables of the host for the rest of the run, rendered when the step runs;
//! runs nothing on the host.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Guards, Kind, Outcome, StepCtx, render_value};

/// `set_fact:` is the map of names to values itself.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(transparent)]
pub struct SetFactArgs(pub IndexMap<String, Value>);

impl std::ops::Deref for SetFactArgs {
    type Target = IndexMap<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Kind for SetFactArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let mut out = serde_json::Map::new();
        for (k, v) in &self.0 {
            // A name written as a template (`"path_{{ idx }}": ...`) is rendered, as Ansible's
            // is, and must then be a variable's name.
            let name = if crate::template::is_template(k) {
                match cx.templates.render_str(k, cx.vars) {
                    Ok(n) if is_identifier(&n) => n,
                    Ok(n) => return Outcome::failed(format!("The variable name '{n}' is not valid. Variables must start with a letter or underscore character, and contain only letters, numbers and underscores.")),
                    Err(e) => return Outcome::failed(format!("{k}: {}", crate::template::describe_error(&e))),
                }
            } else {
                k.clone()
            };
            match native(cx, v) {
                Ok(r) => {
                    out.insert(name, r);
                }
                Err(e) => return Outcome::failed(format!("{k}: {}", crate::template::describe_error(&e))),
            }
        }
        let mut o = Outcome::ok("");
        o.facts = Some(out);
        o
    }
}

/// Whether `n` is a variable's name as Python's `isidentifier` (ASCII) has it.
fn is_identifier(n: &str) -> bool {
    let mut c = n.chars();
    c.next().is_some_and(|f| f == '_' || f.is_ascii_alphabetic()) && c.all(|x| x == '_' || x.is_ascii_alphanumeric())
}

/// A value rendered as Ansible's set_fact does: a string that is one `{{ expression }}` keeps
/// the expression's type (`'{{ 1 + 1 }}'` is the number 2, `'{{ x is defined }}'` a boolean),
/// as a variable's value does; other strings render to text.
pub(super) fn native(cx: &StepCtx<'_>, v: &Value) -> Result<Value, minijinja::Error> {
    match v {
        Value::String(s) => match crate::template::yaml_single_expression(s) {
            Some(expr) => {
                let r = cx.templates.eval(&expr, cx.vars)?;
                if r.is_undefined() {
                    return Err(minijinja::Error::new(
                        minijinja::ErrorKind::UndefinedError,
                        format!("'{}' is undefined", expr.trim()),
                    ));
                }
                serde_json::to_value(&r)
                    .map(|j| crate::template::json_with_dropped_newline(s, j))
                    .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::BadSerialization, e.to_string()))
            }
            None => render_value(cx.templates, v, cx.vars),
        },
        Value::Array(a) => Ok(Value::Array(a.iter().map(|x| native(cx, x)).collect::<Result<_, _>>()?)),
        Value::Object(m) => Ok(Value::Object(
            m.iter().map(|(k, x)| Ok::<_, minijinja::Error>((k.clone(), native(cx, x)?))).collect::<Result<_, _>>()?,
        )),
        other => Ok(other.clone()),
    }
}
