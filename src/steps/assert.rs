//! `assert`: expressions that must all hold on the host's variables; runs nothing on the host.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, OneOrMany, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AssertArgs {
    pub that: OneOrMany<String>,
    pub fail_msg: Option<String>,
    pub success_msg: Option<String>,
    /// The arguments from a template, per host and item (Ansible's `assert: '{{ item }}'`):
    /// `that` and the messages above are then the mapping's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_from: Option<ArgsFrom>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ArgsFrom {
    /// The expression whose value is the argument mapping.
    pub expr: String,
    /// The task's own arguments (`args:`), over the mapping's, as Ansible updates them.
    #[serde(default)]
    pub over: serde_json::Map<String, serde_json::Value>,
    /// `fail`'s arguments (only `msg`), where the task always fails.
    #[serde(default)]
    pub fail: bool,
}

/// A condition of `that` as the mapping holds it: an expression, or a value already evaluated.
fn condition(v: &serde_json::Value) -> Result<String, String> {
    match v {
        serde_json::Value::String(s) if s.trim().is_empty() => Err("Empty conditional expression".into()),
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Null => Err("Empty conditional expression".into()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("a condition must be an expression, not {other}")),
    }
}

/// The conditions a `that` wholly a template lists (`that: '{{ checks }}'`): its value where it
/// is a list, each item a condition as it is (not rendered), as ansible-core's assert resolves
/// such a `that` to its container only; `None` for anything else, which is one condition.
fn listed(cx: &StepCtx<'_>, that: &str) -> Option<Vec<String>> {
    let t = that.trim();
    if !(t.starts_with("{{") && t.ends_with("}}")) {
        return None;
    }
    // A variable by name is read as written: its items are conditions, rendered when judged.
    let inner = t[2..t.len() - 2].trim();
    let named = !inner.is_empty()
        && inner.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !inner.starts_with(|c: char| c.is_ascii_digit());
    if let Some(serde_json::Value::Array(items)) = named.then(|| crate::template::raw_var(cx.vars, inner)).flatten() {
        return items
            .iter()
            .map(|c| match c {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Bool(b) => Some(b.to_string()),
                _ => None,
            })
            .collect();
    }
    let v = cx.templates.eval(t, cx.vars).ok()?;
    if v.kind() != minijinja::value::ValueKind::Seq {
        return None;
    }
    v.try_iter()
        .ok()?
        .map(|c| match (c.as_str(), c.kind()) {
            (Some(s), _) => Some(s.to_string()),
            (None, minijinja::value::ValueKind::Bool) => Some(c.is_true().to_string()),
            _ => None,
        })
        .collect()
}

fn text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ArgsFrom {
    /// The arguments this host's mapping gives, checked as the module checks its own.
    fn resolve(&self, cx: &StepCtx<'_>) -> Result<AssertArgs, String> {
        let v = cx.templates.eval(&self.expr, cx.vars).map_err(|e| crate::template::describe_error(&e))?;
        let mut args = match serde_json::to_value(&v) {
            Ok(serde_json::Value::Object(m)) if !v.is_undefined() => m,
            _ => return Err(format!("invalid or malformed argument: '{v}'")),
        };
        args.extend(self.over.clone());
        let (module, valid): (&str, &[&str]) = if self.fail {
            ("fail", &["msg"])
        } else {
            ("assert", &["fail_msg", "msg", "quiet", "success_msg", "that"])
        };
        let unknown: Vec<&str> = args.keys().map(String::as_str).filter(|k| !valid.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "Unsupported parameters for ({module}) module: {}. Supported parameters include: {}.",
                unknown.join(", "),
                valid.join(", ")
            ));
        }
        if self.fail {
            let msg = args.get("msg").map(text).unwrap_or_else(|| "Failed as requested from task".into());
            return Ok(AssertArgs {
                that: OneOrMany::One("false".into()),
                fail_msg: Some(msg),
                success_msg: None,
                args_from: None,
            });
        }
        let that = match args.get("that") {
            None => return Err("missing required arguments: that".into()),
            Some(serde_json::Value::Array(v)) => OneOrMany::Many(v.iter().map(condition).collect::<Result<_, _>>()?),
            Some(v) => OneOrMany::One(condition(v)?),
        };
        let fail_msg = args.get("fail_msg").or(args.get("msg")).map(text).unwrap_or_else(|| "Assertion failed".into());
        let success_msg = args.get("success_msg").map(text).unwrap_or_else(|| "All assertions passed".into());
        Ok(AssertArgs { that, fail_msg: Some(fail_msg), success_msg: Some(success_msg), args_from: None })
    }
}

impl Kind for AssertArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let resolved;
        let a = match &self.args_from {
            None => self,
            Some(from) => match from.resolve(cx) {
                Ok(r) => {
                    resolved = r;
                    &resolved
                }
                Err(e) => return Outcome::failed(e),
            },
        };
        let thats = match &a.that {
            OneOrMany::One(that) => listed(cx, that).unwrap_or_else(|| vec![that.clone()]),
            OneOrMany::Many(v) => v.clone(),
        };
        for expr in thats {
            match cx.templates.judge(&expr, cx.vars) {
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
