//! `python_module`: a site's own Ansible module (`library/NAME.py`, written with AnsibleModule),
//! run as Ansible runs it with pipelining: the payload ansible-core builds for it (AnsiballZ:
//! the module, the module_utils it imports and its arguments, built by the site's Python worker,
//! template/python.rs) fed to the host's Python on stdin, its JSON answer the result. The one
//! kind that needs Python on the host, as the module itself does.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PythonModuleArgs {
    /// The module's name, as the task wrote it (its `_ansible_module_name`).
    pub module: String,
    /// The module's file on the bastion.
    pub path: String,
    /// The module's arguments.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The task's `no_log`: the module logs nothing of its arguments on the host either.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_log: bool,
}

/// The module's JSON answer in what it printed: from the first line that opens a JSON object to
/// the last that closes one (Ansible's `_filter_non_json_lines`: a login banner, a warning
/// before or after stays out).
fn answer(stdout: &str) -> Option<Map<String, Value>> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines.iter().position(|l| l.trim_start().starts_with('{'))?;
    let end = lines.iter().rposition(|l| l.trim_end().ends_with('}'))?;
    if end < start {
        return None;
    }
    match serde_json::from_str(&lines[start..=end].join("\n")).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

impl Kind for PythonModuleArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        // The host's Python, as Ansible's interpreter setting names it (its discovery finds
        // /usr/bin/python3 on the systems copctl runs on).
        let interpreter = cx
            .vars
            .get_attr("ansible_python_interpreter")
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|s| !s.is_empty() && !s.starts_with("auto"))
            .unwrap_or_else(|| "/usr/bin/python3".to_string());
        let python = cx.templates.python();
        // A native step's path is the site's (an Ansible task's is already absolute).
        let path = cx.local_dir.join(&self.path);
        let path = std::path::absolute(&path).unwrap_or(path);
        let (name, args) = (self.module.clone(), Value::Object(self.args.clone()));
        let (check, diff, no_log, interp) = (cx.check, cx.diff, self.no_log, interpreter.clone());
        let built =
            tokio::task::spawn_blocking(move || python.module(&name, &path, args, &interp, check, diff, no_log)).await;
        let payload = match built {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => return Outcome::failed(format!("module {}: {e}", self.module)),
            Err(e) => return Outcome::failed(format!("module {}: {e}", self.module)),
        };
        let command = shell_quote(&interpreter);
        let out = match cx.sh(&command, Some(&payload)).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let Some(result) = answer(&stdout) else {
            // Ansible's words for a module that gave no JSON.
            let mut o = Outcome::failed("MODULE FAILURE: See stdout/stderr for the exact error");
            o.result.insert("module_stdout".into(), json!(stdout));
            o.result.insert("module_stderr".into(), json!(String::from_utf8_lossy(&out.stderr)));
            o.result.insert("rc".into(), json!(out.status.map_or(-1, i64::from)));
            o.commands.push(format!("{interpreter} < AnsiballZ_{}.py", self.module));
            return o;
        };
        let flag = |k: &str| result.get(k).is_some_and(|v| v.as_bool() == Some(true));
        let msg = result.get("msg").map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string)).unwrap_or_default();
        // Without `failed`, a return code other than 0 is a failure, as Ansible reads it.
        let rc_failed =
            !result.contains_key("failed") && result.get("rc").is_some_and(|rc| rc.as_i64().is_some_and(|n| n != 0));
        let mut o = if flag("failed") || rc_failed {
            Outcome::failed(msg)
        } else if flag("skipped") {
            Outcome::skipped(msg)
        } else if flag("changed") {
            Outcome::changed(msg)
        } else {
            Outcome::ok(msg)
        };
        o.commands.push(format!("{interpreter} < AnsiballZ_{}.py", self.module));
        // What is registered is the module's answer, without the `invocation` Ansible leaves
        // out of it (at its default verbosity).
        // The facts a module returns are the host's from then on, as Ansible sets them.
        if let Some(Value::Object(facts)) = result.get("ansible_facts") {
            o.facts = Some(facts.clone());
        }
        o.result.extend(result.into_iter().filter(|(k, _)| k != "invocation"));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_the_json_between_what_else_the_host_printed() {
        let printed = "Welcome to lab-1\n{\"changed\": true,\n \"msg\": \"hi\"}\nbye\n";
        let a = answer(printed).unwrap();
        assert_eq!(a["msg"], "hi");
        assert!(answer("Traceback (most recent call last):\n  oops\n").is_none());
    }
}
