//! Modules that steer or report on the run rather than change the host: debug, assert, fail,
//! meta, pause, ping, wait_for and wait_for_connection.

use serde_json::{Map, Value, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;
use crate::playbook::ansible::node::Kind;
use crate::playbook::ansible::split::parse_kv;

/// `debug`: a message or a variable shown.
pub(super) fn debug(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    match a.value(&["msg"]) {
        Some(Value::String(s)) => {
            out.insert("msg".into(), json!(s));
        }
        // A list or mapping of texts, each rendered (Ansible's multi-line report).
        Some(other) => {
            out.insert("msg".into(), other);
        }
        None => {}
    }
    put(&mut out, "var", a.text(&["var"]));
    put(&mut out, "verbosity", a.number(&["verbosity"]));
    a.finish(&["msg", "var", "verbosity"]);
    Translated::native("debug", out)
}

/// `assert` and `fail`: conditions checked, or a task failed as requested.
pub(super) fn assert(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    // `assert: '{{ item }}'`: the whole argument mapping from a template, per item. A k=v
    // string (`fail: msg="{{ msg }}"`) is split before templating, as Ansible's parse_kv
    // does: the templates are values only.
    if let Kind::Scalar(Value::String(t)) = &node.kind
        && t.contains("{{")
        && !is_kv_only(t)
    {
        let Some(expr) = crate::template::single_expression(t) else {
            let m = format!("{name}: arguments from a template ('{t}') are not supported");
            let help = "the whole argument mapping may come from one expression ('{{ item }}'); \
                        else write the arguments as a mapping (that: ...)";
            p.add(node.line, node.column, m, "a templated argument mapping", Some(help.into()));
            return None;
        };
        // The task's own `args:` go over the mapping's when the task runs.
        let mut over = Map::new();
        if let Some(e) = extra {
            let takes: &[&str] =
                if name == "fail" { &["msg"] } else { &["that", "fail_msg", "msg", "success_msg", "quiet"] };
            let mut a = Args::new(p, name, e, None, None);
            let (known, unknown) =
                std::mem::take(&mut a.items).into_iter().partition::<Vec<_>, _>(|it| takes.contains(&it.name.as_str()));
            over.extend(known.into_iter().map(|it| (it.name, it.value)));
            a.items = unknown;
            a.finish(takes);
        }
        out.insert("that".into(), json!([]));
        out.insert("args_from".into(), json!({"expr": expr.trim(), "over": over, "fail": name == "fail"}));
        return Translated::native("assert", out);
    }
    let mut a = Args::new(p, name, node, extra, None);
    if name == "fail" {
        let msg = a.text(&["msg"]).unwrap_or_else(|| "Failed as requested from task".into());
        a.finish(&["msg"]);
        out.insert("that".into(), json!(["false"]));
        out.insert("fail_msg".into(), json!(msg));
        return Translated::native("assert", out);
    }
    match a.value(&["that"]) {
        Some(Value::Array(v)) => {
            out.insert("that".into(), Value::Array(v.into_iter().map(condition_text).collect()));
        }
        Some(v) => {
            out.insert("that".into(), condition_text(v));
        }
        None => a.missing("that"),
    }
    // Ansible's messages by default; `quiet` only changes what its callback shows.
    out.insert("fail_msg".into(), json!(a.text(&["fail_msg", "msg"]).unwrap_or("Assertion failed".into())));
    out.insert("success_msg".into(), json!(a.text(&["success_msg"]).unwrap_or("All assertions passed".into())));
    a.flag(&["quiet"]);
    a.finish(&["that", "fail_msg", "msg", "success_msg", "quiet"]);
    Translated::native("assert", out)
}

/// `meta`: the few actions copctl runs (noop, clear_host_errors, end_host, end_play).
pub(super) fn meta(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { node, .. } = m;
    let what = node.as_str().unwrap_or_default().trim().to_string();
    if what == "noop" {
        return Some(Translated { kind: None, args: Value::Null, fields: Map::new(), fails: None });
    }
    // A step of its own the engine knows by its module (task.rs), run quietly.
    if matches!(what.as_str(), "clear_host_errors" | "end_host" | "end_play") {
        return Some(Translated {
            kind: Some("assert"),
            args: json!({"that": ["true"]}),
            fields: Map::new(),
            fails: None,
        });
    }
    let help = "copctl runs meta: noop, flush_handlers, clear_host_errors, end_host and end_play";
    p.add(node.line, node.column, format!("meta: {what} is not supported yet"), "here", Some(help.into()));
    None
}

/// `pause`: a wait of seconds or minutes.
pub(super) fn pause(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    let seconds = a.number(&["seconds"]);
    let minutes = a.number(&["minutes"]);
    if seconds.is_some() && minutes.is_some() {
        let (l, c) = a.at;
        a.p.add(l, c, "pause: parameters are mutually exclusive: minutes|seconds".into(), "here", None);
    }
    if seconds.is_none() && minutes.is_none() {
        let (l, c) = a.at;
        a.p.add(
            l,
            c,
            "pause: waiting for a key press (no seconds or minutes) is not supported".into(),
            "here",
            Some("copctl runs without a terminal to answer a prompt: give seconds or minutes".into()),
        );
    }
    put(&mut out, "seconds", seconds);
    put(&mut out, "minutes", minutes);
    put(&mut out, "prompt", a.text(&["prompt"]));
    put(&mut out, "echo", a.bool_literal(&["echo"]));
    a.finish(&["seconds", "minutes", "prompt", "echo"]);
    Translated::native("pause", out)
}

/// `ping`: the connection checked.
pub(super) fn ping(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "data", a.text(&["data"]));
    a.finish(&["data"]);
    Translated::native("ping", out)
}

/// `wait_for`: a port or a path waited for.
pub(super) fn wait_for(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "port", a.number(&["port"]));
    put(&mut out, "host", a.text(&["host"]));
    put(&mut out, "path", a.text(&["path"]));
    put(&mut out, "search_regex", a.text(&["search_regex"]));
    put(&mut out, "timeout", a.number(&["timeout"]));
    put(&mut out, "interval", a.number(&["sleep"]));
    a.choice(&["state"], &[("started", ""), ("present", "")], "state: started (a port) or present (a path)");
    put(&mut out, "delay", a.number(&["delay"]));
    if !out.contains_key("port") && !out.contains_key("path") {
        a.p.add(a.at.0, a.at.1, "wait_for: without port or path (a pause) is not supported yet".into(), "here", None);
    }
    if out.contains_key("search_regex") && !out.contains_key("path") {
        a.p.add(
            a.at.0,
            a.at.1,
            "wait_for: search_regex with a port is not supported yet (with path it is)".into(),
            "here",
            None,
        );
    }
    a.finish(&["port", "host", "path", "search_regex", "timeout", "sleep", "state", "delay"]);
    Translated::native("wait_for", out)
}

/// `wait_for_connection`: the connection waited for.
pub(super) fn wait_for_connection(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    for k in ["delay", "sleep", "timeout", "connect_timeout"] {
        put(&mut out, k, a.number(&[k]));
    }
    a.finish(&["delay", "sleep", "timeout", "connect_timeout"]);
    Translated::native("wait_for_connection", out)
}

/// A condition as text (`that: true` is the expression `true`).
fn condition_text(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(s),
        other => Value::String(other.to_string()),
    }
}

/// Whether `text` is nothing but `key=value` words (its templates inside the values).
fn is_kv_only(text: &str) -> bool {
    let (kv, rest) = parse_kv(text, None);
    !kv.is_empty() && rest.is_empty()
}
