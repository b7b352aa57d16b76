//! Steps that run nothing on the host: `assert`, `debug`, `set_fact`.

use serde_json::Value;

use super::{Outcome, StepCtx, render_value};
use crate::playbook::step::{AssertArgs, DebugArgs};

pub fn assert(cx: &StepCtx<'_>, a: &AssertArgs) -> Outcome {
    for expr in a.that.to_vec() {
        match cx.templates.eval(&expr, cx.vars) {
            Ok(v) if v.is_true() => {}
            Ok(_) => {
                let msg = match &a.fail_msg {
                    Some(m) => cx.templates.render_str(m, cx.vars).unwrap_or_else(|_| m.clone()),
                    None => format!("assertion failed: {expr}"),
                };
                return Outcome::failed(msg);
            }
            Err(e) => return Outcome::failed(format!("{expr}: {}", crate::template::describe_error(&e))),
        }
    }
    Outcome::ok(a.success_msg.clone().unwrap_or_else(|| "all assertions passed".into()))
}

pub fn debug(cx: &StepCtx<'_>, a: &DebugArgs) -> Outcome {
    let msg = match (&a.msg, &a.var) {
        (Some(m), _) => cx.templates.render_str(m, cx.vars),
        (None, Some(v)) => cx.templates.eval(v, cx.vars).map(|x| format!("{v} = {x}")),
        (None, None) => Ok("Hello world!".into()),
    };
    match msg {
        Ok(m) => Outcome::ok(m),
        Err(e) => Outcome::failed(crate::template::describe_error(&e)),
    }
}

pub fn set_fact(cx: &StepCtx<'_>, facts: &indexmap::IndexMap<String, Value>) -> Outcome {
    let mut out = serde_json::Map::new();
    for (k, v) in facts {
        match render_value(cx.templates, v, cx.vars) {
            Ok(r) => {
                out.insert(k.clone(), r);
            }
            Err(e) => return Outcome::failed(format!("{k}: {}", crate::template::describe_error(&e))),
        }
    }
    let mut o = Outcome::ok("");
    o.facts = Some(out);
    o
}
