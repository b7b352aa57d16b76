//! Modules that run a command line on the host: command, shell, script and raw.

use serde_json::{Map, Value, json};

use super::args::{Args, put};
use super::sources::{find_beside, list_dirs};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;
use crate::playbook::ansible::split::{split_args, unquote};

/// `command` and `shell`: the command line (or argv) and its guards.
pub(super) fn command(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut fields = Map::new();
    // The only `k=v` words Ansible takes out of a command line (splitter.py's parse_kv
    // with check_raw); any other stays part of the command.
    let guard_keys: &[&str] = &["creates", "removes", "chdir", "executable", "warn", "stdin"];
    let mut a = Args::new(p, name, node, extra, Some(guard_keys));
    for k in ["chdir", "creates", "removes", "executable"] {
        put(&mut fields, k, a.text(&[k]));
    }
    // Ansible ends stdin with a newline unless stdin_add_newline is false.
    let newline = a.bool_literal(&["stdin_add_newline"]).unwrap_or(true);
    if a.bool_literal(&["strip_empty_ends"]) == Some(false) {
        fields.insert("strip_empty_ends".into(), json!(false));
    }
    if name == "command" && a.bool_literal(&["expand_argument_vars"]).unwrap_or(true) {
        fields.insert("expand_argument_vars".into(), json!(true));
    }
    // The option is the command module's: given to shell, the module's argument check
    // fails the task (with its words), refused unless the task may fail.
    let mut unsupported = None;
    if name == "shell" && a.bool_literal(&["expand_argument_vars"]).is_some() {
        unsupported = Some((
            "Unsupported parameters for (shell) module: expand_argument_vars".to_string(),
            "shell: expand_argument_vars is the command module's (a shell expands its own line)".to_string(),
        ));
    }
    put(&mut fields, "stdin", a.text(&["stdin"]).map(|s| if newline { format!("{s}\n") } else { s }));
    let cmd = a.text(&["cmd"]);
    let argv = a.value(&["argv"]);
    let raw = a.take_raw();
    // argv is command's only (shell takes a line).
    let all: &[&str] = &[
        "cmd",
        "argv",
        "chdir",
        "creates",
        "removes",
        "stdin",
        "stdin_add_newline",
        "executable",
        "expand_argument_vars",
        "strip_empty_ends",
    ];
    let takes: Vec<&str> = all.iter().copied().filter(|k| name == "command" || *k != "argv").collect();
    let takes = takes.as_slice();
    // A command missing or given twice fails the task on each host, as the module's
    // argument checks do (with its words): refused unless the task may fail.
    let mut fails = None;
    let line = match (raw, cmd, argv) {
        (Some((r, ..)), None, None) => Some(Value::String(r)),
        (None, Some(c), None) => Some(Value::String(c)),
        (None, None, Some(Value::Array(v))) if name == "command" => Some(Value::Array(v)),
        (None, None, None) => {
            fails = Some((
                "one of the following is required: _raw_params, cmd, argv".to_string(),
                format!("{name}: the command (free form, cmd or argv) is required"),
            ));
            None
        }
        _ => {
            fails = Some((
                "parameters are mutually exclusive: _raw_params|cmd|argv".to_string(),
                format!("{name}: give the command once (free form, cmd or argv)"),
            ));
            None
        }
    };
    a.finish(takes);
    let Some(line) = line else {
        return Some(Translated { kind: Some("command"), args: json!(["true"]), fields, fails });
    };
    if name == "shell" {
        return Some(Translated { kind: Some("shell"), args: line, fields, fails: unsupported });
    }
    // `command` runs no shell: the words are split as Ansible splits them (shlex), each
    // passed as one argument, so `>` or `|` mean themselves as in Ansible (`$HOME` and a
    // leading `~` are expanded on the host, as its expand_argument_vars does).
    let argv: Vec<Value> = match line {
        Value::Array(v) => v,
        Value::String(s) if !s.contains("{{") && !s.contains("{%") => match shlex::split(&s) {
            Some(w) => w.into_iter().map(Value::String).collect(),
            None => {
                p.add(node.line, node.column, format!("command: unbalanced quotes in '{s}'"), "here", None);
                return None;
            }
        },
        Value::String(s) => split_args(&s).iter().map(|w| Value::String(unquote(w))).collect(),
        _ => return None,
    };
    Some(Translated { kind: Some("command"), args: Value::Array(argv), fields, fails: None })
}

/// `script`: a script from the controller, run with its arguments.
pub(super) fn script(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, dirs, .. } = m;
    let mut out = Map::new();
    let mut fields = Map::new();
    // The free form is the script and its arguments, with Ansible's k=v words taken out.
    let keys: &[&str] = &["creates", "removes", "chdir", "executable", "cmd"];
    let mut a = Args::new(p, name, node, extra, Some(keys));
    for k in ["chdir", "creates", "removes"] {
        put(&mut fields, k, a.text(&[k]));
    }
    put(&mut out, "executable", a.text(&["executable"]));
    let line = match (a.take_raw(), a.text(&["cmd"])) {
        (Some((r, ..)), None) => Some(r),
        (None, Some(c)) => Some(c),
        (None, None) => {
            a.missing("the script (free form or cmd)");
            None
        }
        _ => {
            let (l, c) = a.at;
            a.p.add(l, c, "script: give the script once (free form or cmd)".into(), "here", None);
            None
        }
    };
    a.finish(&["cmd", "creates", "removes", "chdir", "executable"]);
    let line = line?;
    let line = line.trim();
    let (script, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let script = unquote(script);
    if script.contains("{{") || script.contains("{%") {
        p.add(
            node.line,
            node.column,
            format!("script: a templated script name ('{script}') is not supported yet"),
            "here",
            None,
        );
        return None;
    }
    match find_beside(dirs, "files", &script) {
        Some(found) => {
            out.insert("src".into(), json!(found));
        }
        None => {
            p.add(
                node.line,
                node.column,
                format!("script: '{script}' not found"),
                "here",
                Some(format!("looked in files/{script} and {script} under {}", list_dirs(dirs))),
            );
            return None;
        }
    }
    out.insert("args".into(), json!(args.trim()));
    Some(Translated { kind: Some("script"), args: Value::Object(out), fields, fails: None })
}

/// `raw`: the line itself, through the login shell.
pub(super) fn raw(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    // What raw runs is the line itself, through the login shell: copctl's shell kind
    // runs it the same way, changed as raw always is.
    let mut a = Args::new(p, name, node, extra, Some(&["executable"]));
    if let Some(x) = a.take(&["executable"]) {
        let m = "raw: executable is not supported".to_string();
        a.bad(&x, m, Some("copctl runs raw lines with the login shell".into()));
    }
    let line = a.take_raw();
    a.finish(&[]);
    let Some((line, ..)) = line else {
        p.add(node.line, node.column, "raw: the command is required".into(), "here", None);
        return None;
    };
    Some(Translated { kind: Some("shell"), args: json!(line), fields: Map::new(), fails: None })
}
