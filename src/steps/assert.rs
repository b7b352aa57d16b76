//! `assert`: expressions that must all hold on the host's variables; runs nothing on the host.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, OneOrMany, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AssertArgs {
    pub that: OneOrMany<String>,
    pub fail_msg: Option<String>,
    pub success_msg: Option<String>,
}

impl Kind for AssertArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        for expr in a.that.to_vec() {
            match cx.templates.eval(&expr, cx.vars) {
                Ok(v) if v.is_true() => {}
                Ok(_) => {
                    let msg = match &a.fail_msg {
                        Some(m) => match crate::template::tracking_secrets(cx.vars, || {
                            cx.templates.render_str(m, cx.vars)
                        }) {
                            (Ok(text), reads) if reads.is_empty() => text,
                            (Ok(_), reads) => format!("{m}    {}", super::withheld_note(&reads)),
                            (Err(_), _) => m.clone(),
                        },
                        None => format!("assertion failed: {expr}"),
                    };
                    // What Ansible registers: the assertion that failed, and that it was false.
                    let mut o = Outcome::failed(msg);
                    o.result.insert("assertion".into(), serde_json::json!(expr));
                    o.result.insert("evaluated_to".into(), serde_json::json!(false));
                    return o;
                }
                Err(e) => return Outcome::failed(format!("{expr}: {}", crate::template::describe_error(&e))),
            }
        }
        Outcome::ok(a.success_msg.clone().unwrap_or_else(|| "all assertions passed".into()))
    }
}
