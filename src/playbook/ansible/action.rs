//! The old `action:` task keyword (`action: copy src=a dest=b`, or `action: {module: copy,
//! src: a}`): Ansible reads it as the module written as the task's key, so the task is
//! rewritten into that form before anything else looks at it (an include or a module alike).
//! `local_action:` is the same with `delegate_to: localhost`.

use serde_json::Value;

use super::Front;
use super::node::{Key, Kind, Node};

/// The task with its `action:` made the module's key, `None` when it has none (or it is a
/// problem, reported).
pub fn normalize(f: &mut Front, node: &Node) -> Option<Node> {
    let m = node.as_map()?;
    let (at, (k, v)) = m.iter().enumerate().find(|(_, (k, _))| k.name == "action" || k.name == "local_action")?;
    let local = k.name == "local_action";
    if let Some((other, _)) = m.iter().find(|(o, _)| o.name != k.name && is_module_key(&o.name)) {
        f.p.add_key(other, format!("a task names its module once: {} and '{}'", k.name, other.name), None);
        return None;
    }
    if local && let Some((d, _)) = m.iter().find(|(o, _)| o.name == "delegate_to") {
        f.p.add_key(d, "local_action runs on the controller: delegate_to is not for it".into(), None);
        return None;
    }
    let (module, args) = match &v.kind {
        Kind::Scalar(Value::String(s)) => {
            let s = s.trim_start();
            let (name, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
            let rest = rest.trim();
            let args = if rest.is_empty() { Value::Null } else { Value::String(rest.to_string()) };
            (name.to_string(), Node { line: v.line, column: v.column + name.len() + 1, kind: Kind::Scalar(args) })
        }
        Kind::Map(items) => {
            let Some((_, name)) = items.iter().find(|(k, _)| k.name == "module") else {
                f.p.add_key(k, format!("{}: which module? write module: NAME", k.name), None);
                return None;
            };
            let Some(name) = name.as_str() else {
                f.p.add_key(k, format!("action: module is a module's name, not {}", name.what()), None);
                return None;
            };
            let rest: Vec<_> = items.iter().filter(|(k, _)| k.name != "module").cloned().collect();
            (name.to_string(), Node { line: v.line, column: v.column, kind: Kind::Map(rest) })
        }
        _ => {
            f.p.add_key(k, format!("action: a module with its arguments, not {}", v.what()), None);
            return None;
        }
    };
    if module.is_empty() || module.contains("{{") || module.contains("{%") {
        f.p.add_key(
            k,
            format!("{}: a templated module ('{module}') is not supported", k.name),
            Some("copctl reads every task when the playbook is loaded: name the module".into()),
        );
        return None;
    }
    let mut out = m.to_vec();
    out[at] = (Key { name: module, line: k.line, column: k.column }, args);
    if local {
        let localhost = Node { line: k.line, column: k.column, kind: Kind::Scalar(Value::String("localhost".into())) };
        out.push((Key { name: "delegate_to".into(), line: k.line, column: k.column }, localhost));
    }
    Some(Node { line: node.line, column: node.column, kind: Kind::Map(out) })
}

/// Whether a task's key names a module rather than a keyword (a guess good enough to catch a
/// second module beside `action`: a module key Ansible would refuse the same way).
fn is_module_key(name: &str) -> bool {
    super::include::KEYS.contains(&name) || name == "block" || name == "local_action"
}
