//! The values of the keywords plays, blocks, includes and tasks share (conditions, flags, text,
//! numbers, names, `become_*`, `vars`, `module_defaults`), each read as Ansible reads it, a
//! wrong one a problem at its key. Apart from task.rs because every level of a play uses them.

use serde_json::{Map, Value, json};

use super::node::{Key, Kind, Node};
use super::{Front, closest, modules};

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

pub(super) fn number(f: &mut Front, k: &Key, v: &Node) -> Option<u64> {
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

/// `become_user`: a user named literally (the step's connection is chosen before templates
/// render for it).
/// `become_user`: a name, or a template rendered for each host when the task runs.
pub(super) fn become_user(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    text(f, k, v)
}

/// `become_method`: `sudo` or `su` (by their FQCNs too), the two copctl becomes with.
pub(super) fn become_method(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    match v.as_str().map(str::trim) {
        Some("sudo" | "ansible.builtin.sudo") => Some("sudo".into()),
        Some("su" | "ansible.builtin.su") => Some("su".into()),
        Some(other) => {
            f.p.add_key(
                k,
                format!("become_method: '{other}' is not supported"),
                Some("copctl becomes with sudo or su".into()),
            );
            None
        }
        None => {
            f.p.add_key(k, format!("become_method: a method's name, not {}", v.what()), None);
            None
        }
    }
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

/// `module_defaults` (a play's, a block's or a task's): module name → its default arguments,
/// as Ansible's mapping (or a list of them); a module by its short name or FQCN. Action groups
/// (`group/...`) and names that are no module (a typo) are refused.
pub(super) fn module_defaults(f: &mut Front, k: &Key, v: &Node) -> serde_json::Map<String, Value> {
    let maps: Vec<&Node> = match &v.kind {
        Kind::Seq(items) => items.iter().collect(),
        Kind::Scalar(Value::Null) => vec![],
        _ => vec![v],
    };
    let mut out = serde_json::Map::new();
    for m in maps {
        let Some(entries) = m.as_map() else {
            f.p.add_key(k, format!("module_defaults: a mapping of modules to arguments, not {}", m.what()), None);
            continue;
        };
        for (mk, mv) in entries {
            if mk.name.starts_with("group/") {
                f.p.add_key(
                    mk,
                    format!("module_defaults: action group '{}' is not supported yet", mk.name),
                    Some("name each module".into()),
                );
                continue;
            }
            // A collection's module copctl does not know: no task it runs can use the defaults.
            let Some(short) = modules::short_name(&mk.name) else { continue };
            if !modules::SUPPORTED.contains(&short) && !modules::NOT_YET.iter().any(|(n, _)| *n == short) {
                let close = closest(short, modules::SUPPORTED);
                let help = (!close.is_empty()).then(|| format!("did you mean {}?", close.join(", ")));
                f.p.add_key(mk, format!("module_defaults: unknown module '{}'", mk.name), help);
                continue;
            }
            match mv.to_value() {
                Value::Object(args) => {
                    let e = out.entry(short.to_string()).or_insert_with(|| Value::Object(serde_json::Map::new()));
                    if let Value::Object(have) = e {
                        have.extend(args);
                    }
                }
                Value::Null => {}
                other => {
                    f.p.add_key(mk, format!("module_defaults: {}: arguments are a mapping, not {other}", mk.name), None)
                }
            }
        }
    }
    out
}
