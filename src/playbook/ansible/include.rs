//! Tasks from other files: `import_tasks`/`include_tasks` expand to the file's tasks in place,
//! when the playbook is loaded (static, as Ansible's import is), with the include's keywords
//! (`when`, `tags`, `become`, `vars`) applied to each; `import_role`/`include_role` go to
//! roles.rs. What only a dynamic include can do (a loop, a templated file name) is refused.

use std::path::Path;

use serde_json::Value;

use super::node::{Kind, Node};
use super::taskfile::{Inherit, candidates, dynamic, shown, tasks_file};
use super::{Front, Place, roles};
use crate::playbook::Step;

/// The keys that make a task an include.
pub const KEYS: &[&str] = &[
    "include_tasks",
    "import_tasks",
    "include_role",
    "import_role",
    "include",
    "ansible.builtin.include_tasks",
    "ansible.builtin.import_tasks",
    "ansible.builtin.include_role",
    "ansible.builtin.import_role",
    "ansible.builtin.include",
    "ansible.legacy.include_tasks",
    "ansible.legacy.import_tasks",
    "ansible.legacy.include_role",
    "ansible.legacy.import_role",
];

/// The short name of an include key (`import_tasks` for `ansible.builtin.import_tasks`).
fn short(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// One include entry → the steps of the file (or role) it names.
pub fn include(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let Some(map) = node.as_map() else { return };
    let Some((key, value)) = map.iter().find(|(k, _)| KEYS.contains(&k.name.as_str())) else { return };
    let kind = short(&key.name);
    if kind == "include" {
        f.p.add_key(key, "include was removed from Ansible (2.16): write import_tasks (or include_tasks)".into(), None);
        return;
    }
    if kind.ends_with("_role") {
        return roles::include_role(f, node, key, value, handler, out);
    }
    let before = f.p.count();
    let mut inherit = Inherit::default();
    let mut file: Option<(String, usize, usize)> = None;
    let mut take_file = |f: &mut Front, n: &Node| match &n.kind {
        Kind::Scalar(Value::String(s)) => file = Some((s.clone(), n.line, n.column)),
        _ => f.p.add(n.line, n.column, format!("{kind}: a file name, not {}", n.what()), "here", None),
    };
    match &value.kind {
        Kind::Map(m) => {
            for (k, v) in m {
                match k.name.as_str() {
                    "file" => take_file(f, v),
                    "apply" => f.p.add_key(k, format!("{kind}: apply is not supported yet"), None),
                    _ => f.p.add_key(
                        k,
                        format!("{kind}: unknown argument '{}'", k.name),
                        Some(format!("{kind} takes: file")),
                    ),
                }
            }
        }
        _ => take_file(f, value),
    }
    for (k, v) in map {
        if k == key || k.name == "name" || inherit.keyword(f, k, v).is_some() {
            continue;
        }
        match k.name.as_str() {
            "args" => match v.as_map() {
                Some(m) => {
                    for (ak, av) in m {
                        if ak.name == "file" {
                            take_file(f, av)
                        } else {
                            f.p.add_key(ak, format!("{kind}: unknown argument '{}'", ak.name), None)
                        }
                    }
                }
                None => f.p.add_key(k, "args: must be a mapping".into(), None),
            },
            "loop" | "with_items" | "loop_control" if kind == "include_tasks" => f.p.add_key(
                k,
                format!("include_tasks with {} (a dynamic include) is not supported", k.name),
                Some("copctl reads every task when the playbook is loaded: put the loop on the included tasks".into()),
            ),
            other => f.p.add_key(
                k,
                format!("'{other}' on {kind} is not supported yet"),
                Some(format!("{kind} takes: name, when, tags, become, vars")),
            ),
        }
    }
    let Some((rel, line, column)) = file else {
        if f.p.count() == before {
            f.p.add_key(key, format!("{kind}: which file?"), Some(format!("write {kind}: FILE.yml")));
        }
        return;
    };
    let rel = super::load_time_name(f, &rel).unwrap_or(rel);
    if rel.contains("{{") || rel.contains("{%") {
        f.p.add(
            line,
            column,
            format!("{kind}: a templated file name ('{rel}') is not supported"),
            "here",
            Some("copctl reads every task when the playbook is loaded: name the file".into()),
        );
        return;
    }
    if f.p.count() != before {
        return;
    }
    let tried = candidates(f, &rel);
    let Some(path) = tried.iter().find(|p| p.is_file()).cloned() else {
        let list = tried.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ");
        f.p.add(line, column, format!("{kind}: {rel} not found"), "this file", Some(format!("looked for {list}")));
        return;
    };
    if handler && kind == "include_tasks" {
        f.p.add_key(key, "include_tasks in handlers is not supported yet".into(), Some("write import_tasks".into()));
        return;
    }
    let start = out.len();
    // The file's own includes are looked for beside it; its sources where the includer's are.
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let search = std::iter::once(dir.clone()).chain(f.place.search.iter().cloned()).collect();
    let place = Place { task_dir: dir, search, role_dir: f.place.role_dir.clone() };
    tasks_file(f, &path, (line, column), kind, place, handler, out);
    if kind == "include_tasks" {
        dynamic(f, node, key, inherit, start, out);
    } else {
        inherit.apply(&mut out[start..]);
    }
}
