//! One Ansible task (or handler) → one native step: its keywords mapped to the step's common
//! fields, its module to the step's kind (modules.rs). A keyword copctl does not have is a
//! problem at its key; so is a key that is neither a keyword nor a module.

use serde_json::{Map, Value, json};

use super::modules::{self, NOT_YET, SUPPORTED};
use super::node::{Key, Kind, Node};
use super::{Front, closest};
use crate::playbook::{Step, StepDef};

/// Task keywords copctl translates.
pub const KEYWORDS: &[&str] = &[
    "name",
    "when",
    "register",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "notify",
    "loop",
    "with_items",
    "with_dict",
    "loop_control",
    "tags",
    "become",
    "become_user",
    "until",
    "retries",
    "delay",
    "run_once",
    "delegate_to",
    "vars",
    "environment",
    "args",
    "listen",
];

/// Ansible task keywords copctl does not translate yet, with why where it is worth saying.
pub(super) const KEYWORDS_NOT_YET: &[(&str, &str)] = &[
    ("no_log", ""),
    ("check_mode", ""),
    ("diff", ""),
    ("throttle", ""),
    ("async", ""),
    ("poll", ""),
    ("delegate_facts", ""),
    ("any_errors_fatal", "set it on the play"),
    ("debugger", ""),
    ("module_defaults", ""),
    ("collections", ""),
    ("timeout", ""),
    ("connection", ""),
    ("remote_user", ""),
    ("port", ""),
    ("become_method", ""),
    ("become_flags", ""),
    ("become_exe", ""),
    ("ignore_unreachable", ""),
    ("action", "write the module as the task's key"),
    ("local_action", ""),
    ("with_fileglob", ""),
    ("with_together", ""),
    ("with_sequence", ""),
    ("with_subelements", ""),
    ("with_nested", ""),
    ("with_first_found", ""),
    ("with_lines", ""),
    ("with_list", "write loop:"),
    ("with_indexed_items", ""),
    ("with_random_choice", ""),
];

/// Structure copctl does not have yet: blocks and includes.
const STRUCTURE_NOT_YET: &[&str] = &[
    "block",
    "rescue",
    "always",
    "include_tasks",
    "import_tasks",
    "include_role",
    "import_role",
    "include",
    "import_playbook",
    "include_playbook",
    "roles",
];

/// A task's condition (`when`, `changed_when`, `failed_when`) as the native one: a boolean, an
/// expression or a list of them.
pub(super) fn condition(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match &v.kind {
        Kind::Scalar(Value::Bool(b)) => Some(json!(b)),
        Kind::Scalar(Value::String(s)) => Some(json!(s)),
        Kind::Scalar(Value::Number(n)) => Some(json!(n.to_string())),
        Kind::Seq(items) => {
            let mut out = Vec::new();
            for i in items {
                match &i.kind {
                    Kind::Scalar(Value::String(s)) => out.push(s.clone()),
                    Kind::Scalar(Value::Bool(b)) => out.push(b.to_string()),
                    _ => {
                        f.p.add(i.line, i.column, format!("{}: each condition is an expression", k.name), "here", None);
                        return None;
                    }
                }
            }
            Some(json!(out))
        }
        _ => {
            f.p.add_key(
                k,
                format!("{}: a condition is an expression or a list of them, not {}", k.name, v.what()),
                None,
            );
            None
        }
    }
}

pub(super) fn flag(f: &mut Front, k: &Key, v: &Node) -> Option<bool> {
    match &v.kind {
        Kind::Scalar(Value::Bool(b)) => Some(*b),
        Kind::Scalar(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" | "1" => Some(true),
            "no" | "false" | "off" | "0" => Some(false),
            _ => {
                f.p.add_key(k, format!("{}: a literal boolean is supported here, not '{s}'", k.name), None);
                None
            }
        },
        _ => {
            f.p.add_key(k, format!("{}: must be a boolean, not {}", k.name, v.what()), None);
            None
        }
    }
}

pub(super) fn text(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    match &v.kind {
        Kind::Scalar(Value::String(s)) => Some(s.clone()),
        Kind::Scalar(Value::Number(n)) => Some(n.to_string()),
        _ => {
            f.p.add_key(k, format!("{}: must be text, not {}", k.name, v.what()), None);
            None
        }
    }
}

fn number(f: &mut Front, k: &Key, v: &Node) -> Option<u64> {
    match &v.kind {
        Kind::Scalar(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Kind::Scalar(Value::String(s)) if s.trim().parse::<u64>().is_ok() => s.trim().parse().ok(),
        _ => {
            f.p.add_key(k, format!("{}: a literal whole number is supported here, not {}", k.name, v.what()), None);
            None
        }
    }
}

/// Names, from text (`a,b` splits as Ansible's tags do) or a list.
pub(super) fn names(f: &mut Front, k: &Key, v: &Node, split_commas: bool) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let items: Vec<&Node> = match &v.kind {
        Kind::Seq(s) => s.iter().collect(),
        _ => vec![v],
    };
    for i in items {
        match &i.kind {
            Kind::Scalar(Value::String(s)) if split_commas => {
                out.extend(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()))
            }
            Kind::Scalar(Value::String(s)) => out.push(s.clone()),
            Kind::Scalar(Value::Number(n)) => out.push(n.to_string()),
            _ => {
                f.p.add(i.line, i.column, format!("{}: each entry is a name, not {}", k.name, i.what()), "here", None);
                return None;
            }
        }
    }
    Some(out)
}

/// A mapping of variables.
pub(super) fn vars(f: &mut Front, k: &Key, v: &Node) -> Option<Map<String, Value>> {
    match (&v.kind, v.to_value()) {
        (Kind::Map(_), Value::Object(m)) => Some(m),
        (Kind::Scalar(Value::Null), _) => Some(Map::new()),
        _ => {
            f.p.add_key(k, format!("{}: must be a mapping, not {}", k.name, v.what()), None);
            None
        }
    }
}

/// What a task's keys are.
enum Role<'a> {
    Keyword,
    Module(&'a str),
    Unknown,
}

/// Translates one task (a handler when `handler`). `None` when it has problems (reported) or
/// does nothing (`meta: noop`).
pub fn task(f: &mut Front, node: &Node, handler: bool) -> Option<Step> {
    let Some(map) = node.as_map() else {
        f.p.add(node.line, node.column, format!("a task is a mapping, not {}", node.what()), "here", None);
        return None;
    };
    let before = f.p.count();
    let mut module: Option<(&Key, &Node, &str)> = None;
    let mut unknown: Vec<&Key> = Vec::new();
    let mut def = Map::new();
    let mut args: Option<&Node> = None;
    let mut environment: Option<&Key> = None;
    let mut until_at: Option<&Key> = None;
    let mut retries_at: Option<&Key> = None;
    let mut listen: Option<Vec<String>> = None;
    for (k, v) in map {
        let role = if KEYWORDS.contains(&k.name.as_str()) {
            Role::Keyword
        } else if let Some((_, why)) = KEYWORDS_NOT_YET.iter().find(|(n, _)| *n == k.name) {
            f.p.add_key(
                k,
                format!("task keyword '{}' is not supported yet", k.name),
                (!why.is_empty()).then(|| why.to_string()),
            );
            continue;
        } else if k.name == "rescue" || k.name == "always" {
            f.p.add_key(
                k,
                format!("{} without block", k.name),
                Some("rescue and always are parts of a block: put the tasks they guard under block:".into()),
            );
            continue;
        } else if STRUCTURE_NOT_YET.contains(&k.name.as_str()) {
            f.p.add_key(k, format!("{} not supported yet", structure_name(&k.name)), None);
            continue;
        } else {
            match modules::short_name(&k.name) {
                Some(s) if SUPPORTED.contains(&s) => Role::Module(s),
                Some(s) if NOT_YET.iter().any(|(n, _)| *n == s) => {
                    let why = NOT_YET.iter().find(|(n, _)| *n == s).map(|(_, w)| *w).unwrap_or("");
                    let help = if why.is_empty() { modules_help() } else { format!("{why}; {}", modules_help()) };
                    f.p.add_key(k, format!("module '{}' is not supported yet", k.name), Some(help));
                    module = module.or(Some((k, v, "")));
                    continue;
                }
                None => {
                    f.p.add_key(
                        k,
                        format!("module '{}' is not supported: copctl runs ansible.builtin modules only", k.name),
                        Some(modules_help()),
                    );
                    module = module.or(Some((k, v, "")));
                    continue;
                }
                Some(_) => Role::Unknown,
            }
        };
        match role {
            Role::Unknown => unknown.push(k),
            Role::Module(s) => {
                if let Some((other, ..)) = module {
                    f.p.add_key(
                        k,
                        format!("this task has two modules: '{}' and '{}'", other.name, k.name),
                        Some("a task runs one module: split it in two".into()),
                    );
                } else {
                    module = Some((k, v, s));
                }
            }
            Role::Keyword => {
                let n = k.name.as_str();
                let value = match n {
                    "name" => text(f, k, v).map(Value::from),
                    "when" | "changed_when" | "failed_when" => condition(f, k, v),
                    "register" | "delegate_to" => text(f, k, v).map(Value::from),
                    "ignore_errors" | "become" | "run_once" => flag(f, k, v).map(Value::from),
                    // A handler's is checked when the play's handlers are known (mod.rs).
                    "notify" => names(f, k, v, false).map(Value::from),
                    "tags" => names(f, k, v, true).map(Value::from),
                    "loop" => Some(v.to_value()),
                    "with_items" => with_items(f, k, v),
                    "with_dict" => with_dict(f, k, v),
                    "loop_control" => loop_control(f, k, v),
                    "become_user" => {
                        if v.as_str() != Some("root") {
                            f.p.add_key(k, "become_user other than root is not supported yet".into(), None);
                        }
                        None
                    }
                    "until" => {
                        until_at = Some(k);
                        match condition(f, k, v) {
                            Some(Value::Array(a)) => Some(Value::from(
                                a.iter()
                                    .map(|e| format!("({})", e.as_str().unwrap_or_default()))
                                    .collect::<Vec<_>>()
                                    .join(" and "),
                            )),
                            Some(Value::Bool(b)) => Some(Value::from(b.to_string())),
                            other => other,
                        }
                    }
                    "retries" => {
                        retries_at = Some(k);
                        number(f, k, v).map(Value::from)
                    }
                    "delay" => number(f, k, v).map(Value::from),
                    "vars" => vars(f, k, v).map(Value::Object),
                    "environment" => {
                        environment = Some(k);
                        vars(f, k, v).map(|m| {
                            Value::Object(
                                m.into_iter()
                                    .map(|(k, v)| {
                                        let t = match v {
                                            Value::String(s) => s,
                                            other => other.to_string(),
                                        };
                                        (k, Value::String(t))
                                    })
                                    .collect(),
                            )
                        })
                    }
                    "args" => {
                        args = Some(v);
                        None
                    }
                    "listen" => {
                        if handler {
                            listen = names(f, k, v, false);
                        } else {
                            f.p.add_key(
                                k,
                                "listen on a task: it is a handler's keyword".into(),
                                Some("put the task under the play's handlers:, or notify by name".into()),
                            );
                        }
                        None
                    }
                    _ => None,
                };
                if let Some(value) = value {
                    let key = if n == "with_items" || n == "with_dict" { "loop" } else { n };
                    if def.contains_key(key) {
                        f.p.add_key(k, "a task loops once: one of loop, with_items, with_dict".into(), None);
                    }
                    def.insert(key.to_string(), value);
                }
            }
        }
    }
    // A key that is neither: a module when the task has none, else a misspelt keyword.
    for k in &unknown {
        if module.is_none() && unknown.len() == 1 {
            let close = closest(&k.name, SUPPORTED);
            let help = if close.is_empty() {
                modules_help()
            } else {
                format!("did you mean {}? {}", close.join(", "), modules_help())
            };
            f.p.add_key(k, format!("unknown module '{}'", k.name), Some(help));
        } else {
            let close = closest(&k.name, KEYWORDS);
            let help = if close.is_empty() {
                format!("task keywords copctl knows: {}", KEYWORDS.join(", "))
            } else {
                format!("did you mean {}?", close.join(", "))
            };
            f.p.add_key(k, format!("unknown task keyword '{}'", k.name), Some(help));
        }
    }
    if let (Some(r), None) = (retries_at, until_at) {
        f.p.add_key(
            r,
            "retries without until is not supported yet".into(),
            Some("add until: the condition to wait for".into()),
        );
    }
    let Some((mk, mv, short)) = module else {
        if unknown.is_empty() && f.p.count() == before {
            f.p.add(node.line, node.column, "this task has no module".into(), "no module", Some(modules_help()));
        }
        return None;
    };
    if short.is_empty() {
        return None;
    }
    let t = modules::translate(&mut f.p, short, mv, args, &f.place.search)?;
    let kind = t.kind?;
    if let Some(e) = environment
        && kind != "command"
        && kind != "shell"
    {
        f.p.add_key(e, format!("environment on a {} task is not supported (command and shell only)", mk.name), None);
    }
    for (k, v) in t.fields {
        def.entry(k).or_insert(v);
    }
    def.insert(kind.to_string(), t.args);
    // Ansible shows an unnamed task by its module, as written.
    if !handler {
        def.entry("name").or_insert_with(|| json!(mk.name));
    }
    // An unnamed handler is notified through its topics only; copctl's handlers have names.
    if let Some(topics) = &listen {
        def.entry("name")
            .or_insert_with(|| json!(format!("{} (listen: {}, line {})", mk.name, topics.join(", "), node.line)));
    }
    if f.p.count() != before {
        return None;
    }
    let def: StepDef = match serde_json::from_value(Value::Object(def)) {
        Ok(d) => d,
        Err(e) => {
            f.p.add(mk.line, mk.column, format!("{}: {e}", mk.name), "in this task", None);
            return None;
        }
    };
    match crate::playbook::validate_step(&f.p.source, def, node.line, node.column, handler) {
        Ok(s) => {
            if let Some(topics) = listen {
                f.listening.push((s.name.clone(), topics));
            }
            Some(s)
        }
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}

fn structure_name(key: &str) -> String {
    match key {
        "block" | "rescue" | "always" => format!("{key} (block/rescue/always) is"),
        "roles" => "roles are".into(),
        other => format!("{other} is"),
    }
}

/// `with_items`: `loop` over the list flattened one level, as Ansible does: a literal list when
/// the playbook is loaded, a templated one when the loop runs.
fn with_items(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                match i {
                    Value::Array(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            Some(Value::Array(out))
        }
        // One expression: flattened when the loop runs.
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | with_items_flatten }}}}")))
        }
        _ => {
            f.p.add_key(
                k,
                "with_items: a list, or one {{ expression }} giving a list".into(),
                Some("write loop: instead".into()),
            );
            None
        }
    }
}

/// `loop_control`: `loop_var`, `index_var` and `label` as Ansible has them.
fn loop_control(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let Some(m) = v.as_map() else {
        f.p.add_key(k, format!("loop_control: must be a mapping, not {}", v.what()), None);
        return None;
    };
    let mut out = Map::new();
    for (ck, cv) in m {
        match ck.name.as_str() {
            n @ ("loop_var" | "index_var" | "label") => match cv.to_value() {
                Value::String(s) => {
                    out.insert(n.into(), Value::String(s));
                }
                other => f.p.add_key(ck, format!("loop_control: {n} must be text, not {other}"), None),
            },
            other => f.p.add_key(
                ck,
                format!("loop_control: {other} is not supported yet"),
                Some("loop_control takes: loop_var, index_var, label".into()),
            ),
        }
    }
    Some(Value::Object(out))
}

/// `with_dict`: `loop` over the mapping's `{key, value}` items, as Ansible's dict lookup gives
/// them: a literal mapping when the playbook is loaded, a templated one when the loop runs.
fn with_dict(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Object(m) => {
            Some(Value::Array(m.into_iter().map(|(key, value)| json!({"key": key, "value": value})).collect()))
        }
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | dict2items }}}}")))
        }
        _ => {
            f.p.add_key(k, "with_dict: a mapping, or one {{ expression }} giving a mapping".into(), None);
            None
        }
    }
}

pub fn modules_help() -> String {
    format!("copctl runs these Ansible modules: {}", SUPPORTED.join(", "))
}
