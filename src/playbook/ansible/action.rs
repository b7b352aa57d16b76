//! The old `action:` task keyword (`action: copy src=a dest=b`, or `action: {module: copy,
//! src: a}`): Ansible reads it as the module written as the task's key, so the task is
//! rewritten into that form before anything else looks at it (an include or a module alike).

use serde_json::Value;

use super::Front;
use super::node::{Key, Kind, Node};

/// The task with its `action:` made the module's key, `None` when it has none (or it is a
/// problem, reported).
pub fn normalize(f: &mut Front, node: &Node) -> Option<Node> {
    let m = node.as_map()?;
    let (at, (k, v)) = m.iter().enumerate().find(|(_, (k, _))| k.name == "action")?;
    if let Some((other, _)) = m.iter().find(|(o, _)| o.name != "action" && is_module_key(&o.name)) {
        f.p.add_key(other, format!("a task names its module once: action and '{}'", other.name), None);
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
                f.p.add_key(k, "action: which module? write module: NAME".into(), None);
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
            format!("action: a templated module ('{module}') is not supported"),
            Some("copctl reads every task when the playbook is loaded: name the module".into()),
        );
        return None;
    }
    let mut out = m.to_vec();
    out[at] = (Key { name: module, line: k.line, column: k.column }, args);
    Some(Node { line: node.line, column: node.column, kind: Kind::Map(out) })
}

/// Whether a task's key names a module rather than a keyword (a guess good enough to catch a
/// second module beside `action`: a module key Ansible would refuse the same way).
fn is_module_key(name: &str) -> bool {
    super::include::KEYS.contains(&name) || name == "block" || name == "local_action"
}
