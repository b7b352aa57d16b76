//! `debug`: a message or a variable's value in the step's output; runs nothing on the host.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DebugArgs {
    /// A text, or a list or mapping of them (Ansible's multi-line report), rendered item by item.
    pub msg: Option<serde_json::Value>,
    pub var: Option<String>,
    /// Shown only at this many `-v` or more; skipped below (the engine decides, run/task.rs).
    pub verbosity: Option<u8>,
}

impl Kind for DebugArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let text = a.msg.as_ref().and_then(serde_json::Value::as_str);
        // A structured message keeps its shape: each string in it rendered as set_fact renders
        // one, shown and registered as the list or mapping it is.
        let structured = a.msg.as_ref().filter(|m| !m.is_string());
        let mut native = None;
        let (msg, reads) = crate::template::tracking_secrets(cx.vars, || match (text, structured, &a.var) {
            (Some(m), _, _) => cx.templates.render_str(m, cx.vars),
            (None, Some(m), _) => super::set_fact::native(cx, m).map(|v| {
                let shown = v.to_string();
                native = Some(v);
                shown
            }),
            (None, None, Some(v)) => cx.templates.eval(v, cx.vars).map(|x| format!("{v} = {}", shown(&x))),
            (None, None, None) => Ok("Hello world!".into()),
        });
        match msg {
            // A message rendered from a secret is shown as written, saying so.
            Ok(_) if !reads.is_empty() => {
                let source = match (&a.msg, &a.var) {
                    (Some(serde_json::Value::String(m)), _) => m.clone(),
                    (Some(m), _) => m.to_string(),
                    (None, v) => v.clone().unwrap_or_default(),
                };
                Outcome::ok(format!("{source}    {}", super::withheld_note(&reads)))
            }
            Ok(m) => {
                let mut o = Outcome::ok(m);
                if let Some(v) = native {
                    o.result.insert("msg".into(), v);
                }
                // Ansible registers `var:`'s value under its name (`r.ansible_remote_tmp`).
                if let (None, Some(v)) = (&a.msg, &a.var)
                    && let Ok(x) = cx.templates.eval(v, cx.vars)
                    && let Ok(j) = serde_json::to_value(shown_value(x))
                {
                    o.result.insert(v.clone(), j);
                }
                o
            }
            Err(e) => Outcome::failed(crate::template::describe_error(&e)),
        }
    }
}

/// Ansible's words for a `var:` that is not defined (the task is still ok).
const NOT_DEFINED: &str = "VARIABLE IS NOT DEFINED!";

fn shown_value(x: minijinja::Value) -> minijinja::Value {
    if x.is_undefined() { minijinja::Value::from(NOT_DEFINED) } else { x }
}

fn shown(x: &minijinja::Value) -> String {
    shown_value(x.clone()).to_string()
}
