//! Tasks from other files: `import_tasks`/`include_tasks` expand to the file's tasks in place,
//! when the playbook is loaded (static, as Ansible's import is), with the include's keywords
//! (`when`, `tags`, `become`, `vars`) applied to each; `import_role`/`include_role` go to
//! roles.rs. An `include_tasks` looping over items known when the playbook is loaded (a literal
//! list, `with_sequence`) reads its file once per item, the loop's variables set on that copy's
//! tasks; what only a dynamic include can do (a templated loop or file name) is refused.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::loops::flatten_once;
use super::node::{Key, Kind, Node};
use super::taskfile::{Inherit, candidates, display_name, dynamic, dynamic_read, shown, tasks_file};
use super::{Front, Place, include_role, known};
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

/// One include entry → the steps of the file (or role) it names; an `include_tasks`'s `apply`
/// keywords on each of the file's tasks (not on the include itself, as Ansible applies them).
pub fn include(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let start = out.len();
    let Some(map) = node.as_map() else { return };
    let Some((key, value)) = map.iter().find(|(k, _)| KEYS.contains(&k.name.as_str())) else { return };
    let args = map.iter().find(|(k, _)| k.name == "args").and_then(|(_, v)| v.as_map()).unwrap_or_default();
    let apply = value.as_map().unwrap_or_default().iter().chain(args).find(|(k, _)| k.name == "apply");
    let applied = match apply {
        Some((k, v)) if short(&key.name) == "include_tasks" => {
            let mut applied = Inherit::default();
            match v.as_map() {
                Some(m) => {
                    for (ak, av) in m {
                        if applied.keyword(f, ak, av).is_none() {
                            f.p.add_key(
                                ak,
                                format!("apply: '{}' is not supported yet", ak.name),
                                Some(
                                    "apply takes: when, tags, become, become_user, check_mode, environment, notify, vars"
                                        .into(),
                                ),
                            );
                        }
                    }
                }
                None => f.p.add_key(k, format!("apply: a mapping of task keywords, not {}", v.what()), None),
            }
            Some(applied)
        }
        Some((k, _)) => {
            f.p.add_key(k, format!("{}: apply is not supported yet", short(&key.name)), None);
            return;
        }
        None => None,
    };
    include_inner(f, node, handler, out);
    let Some(applied) = applied else { return };
    // The include's own steps (one per item of a loop) are those no step of it includes.
    let ids: Vec<usize> = out[start..].iter().filter_map(|s| s.include).collect();
    let tags = applied.tags.clone();
    let keywords = Inherit { tags: Vec::new(), ..applied };
    for s in out[start..].iter_mut().filter(|s| s.include.is_none() || s.within.iter().any(|w| ids.contains(w))) {
        keywords.apply(std::slice::from_mut(s));
        if !tags.is_empty() {
            let mut all = s.def.tags.take().map(|t| t.to_vec()).unwrap_or_default();
            all.extend(tags.iter().filter(|t| !all.contains(t)).cloned().collect::<Vec<_>>());
            s.def.tags = Some(crate::playbook::OneOrMany::Many(all));
        }
    }
}

/// An `import_tasks`/`include_tasks` entry (or an `import_role`/`include_role`, to roles.rs) →
/// the steps of the file it names.
fn include_inner(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let Some(map) = node.as_map() else { return };
    let Some((key, value)) = map.iter().find(|(k, _)| KEYS.contains(&k.name.as_str())) else { return };
    let kind = short(&key.name);
    if kind == "include" {
        f.p.add_key(key, "include was removed from Ansible (2.16): write import_tasks (or include_tasks)".into(), None);
        return;
    }
    if kind.ends_with("_role") {
        return include_role::include_role(f, node, key, value, handler, out);
    }
    let before = f.p.count();
    let mut e = Entry::read(f, map, key, value, kind);
    let (skipped_whole, by_host) = e.templated_loop(f, handler);
    let Entry { inherit, file, looped, register, control, .. } = e;
    if let (Some((k, _)), false) = (register, skipped_whole) {
        f.p.add_key(
            k,
            "'register' on include_tasks is not supported yet".into(),
            Some("only where a literal `when: false` skips the include".into()),
        );
    }
    if skipped_whole {
        if f.p.count() != before {
            return;
        }
        return skipped_include(f, node, key, inherit, register, out);
    }
    let Some((rel, line, column)) = file else {
        if f.p.count() == before {
            f.p.add_key(key, format!("{kind}: which file?"), Some(format!("write {kind}: FILE.yml")));
        }
        return;
    };
    let rel = known::with(f, inherit.vars.clone(), |f| known::text(f, &rel, (line, column))).unwrap_or(rel);
    if kind == "include_tasks" && !handler && looped.is_none() && rel.contains("{{") && f.p.count() == before {
        return super::chosen::include(f, node, key, inherit, (&rel, line, column), out);
    }
    let loop_control_unread = control.is_none() && map.iter().any(|(k, _)| k.name == "loop_control");
    // A file named by the loop's item (`include_tasks: "{{ item }}"` over a list known now):
    // each item's file, included for that item.
    if (rel.contains("{{") || rel.contains("{%"))
        && kind == "include_tasks"
        && !handler
        && by_host.is_none()
        && f.p.count() == before
        && let Some((lk, Value::Array(items))) = &looped
    {
        let Some(files) = files_by_item(f, kind, &inherit, control.as_ref(), items, (&rel, line, column)) else {
            return;
        };
        if loop_control_unread {
            return;
        }
        let (lk, items) = (*lk, items.clone());
        return looped_include(f, node, key, (lk, &items), control.as_ref(), inherit, (&files, line, column), out);
    }
    let Some(path) = file_path(f, kind, (&rel, line, column), before) else { return };
    if handler && kind == "include_tasks" && looped.is_some() {
        f.p.add_key(key, "include_tasks with a loop in handlers is not supported yet".into(), None);
        return;
    }
    // The file's own includes are looked for beside it; its sources where the includer's are.
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let search: Vec<_> = std::iter::once(dir.clone()).chain(f.place.search.iter().cloned()).collect();
    let place = Place { task_dir: dir, search, role_dir: f.place.role_dir.clone() };
    if let Some((lk, expr, most)) = by_host {
        if loop_control_unread {
            return;
        }
        return looped_by_host(
            f,
            node,
            key,
            (lk, &expr, most),
            control.as_ref(),
            inherit,
            (&path, line, column),
            place,
            out,
        );
    }
    if let Some((lk, Value::Array(items))) = looped {
        if loop_control_unread {
            return;
        }
        let files = vec![(path, place); items.len()];
        return looped_include(f, node, key, (lk, &items), control.as_ref(), inherit, (&files, line, column), out);
    }
    if let Some(c) = map.iter().find(|(k, _)| k.name == "loop_control").map(|(k, _)| k) {
        f.p.add_key(c, "loop_control without a loop".into(), None);
        return;
    }
    if handler && kind == "include_tasks" {
        return handler_include(f, node, key, inherit, (&path, line, column), place, out);
    }
    if kind == "include_tasks" {
        let (tags, scope) = (inherit.tags.clone(), inherit.scope());
        let what = format!("include_tasks {}", display_name(f, &path));
        return dynamic_read(f, node, key, inherit, &what, None, out, |f, out| {
            f.include_tags.push(tags);
            known::with(f, scope, |f| tasks_file(f, &path, (line, column), kind, place, handler, out));
            f.include_tags.pop();
        });
    }
    let start = out.len();
    f.include_tags.push(inherit.tags.clone());
    known::with(f, inherit.scope(), |f| tasks_file(f, &path, (line, column), kind, place, handler, out));
    f.include_tags.pop();
    inherit.apply(&mut out[start..]);
}

/// An `import_tasks`/`include_tasks` entry as read: the keywords its tasks inherit, the file
/// it names (where), its loop (literal items, or templated), `register` and `loop_control`.
struct Entry<'n> {
    kind: &'n str,
    inherit: Inherit,
    file: Option<(String, usize, usize)>,
    looped: Option<(&'n Key, Value)>,
    templated_loop: Option<(&'n Key, &'n Node)>,
    register: Option<(&'n Key, &'n Node)>,
    control: Option<Value>,
}

impl<'n> Entry<'n> {
    /// The entry's keys (`map`; `key: value` the include itself, `kind` its short name).
    fn read(f: &mut Front, map: &'n [(Key, Node)], key: &'n Key, value: &'n Node, kind: &'n str) -> Entry<'n> {
        let mut e = Entry {
            kind,
            inherit: Inherit::default(),
            file: None,
            looped: None,
            templated_loop: None,
            register: None,
            control: None,
        };
        match &value.kind {
            Kind::Map(m) => {
                for (k, v) in m {
                    match k.name.as_str() {
                        "file" => e.take_file(f, v),
                        "apply" => {}
                        _ => f.p.add_key(
                            k,
                            format!("{kind}: unknown argument '{}'", k.name),
                            Some(format!("{kind} takes: file")),
                        ),
                    }
                }
            }
            _ => e.take_file(f, value),
        }
        for (k, v) in map {
            // Ansible applies an include's own keywords to the include, which never changes
            // anything: its `notify` would notify nothing.
            if k.name == "notify" && kind == "include_tasks" {
                f.p.add_key(
                    k,
                    "notify on include_tasks notifies nothing (the include itself never changes)".into(),
                    Some(
                        "to notify from the included tasks, write apply: {notify: HANDLER}, or use import_tasks".into(),
                    ),
                );
                continue;
            }
            if k == key || k.name == "name" || e.inherit.keyword(f, k, v).is_some() {
                continue;
            }
            e.keyword(f, map, k, v);
        }
        e
    }

    /// The include's file, named by `n`.
    fn take_file(&mut self, f: &mut Front, n: &Node) {
        match &n.kind {
            Kind::Scalar(Value::String(s)) => self.file = Some((s.clone(), n.line, n.column)),
            _ => f.p.add(n.line, n.column, format!("{}: a file name, not {}", self.kind, n.what()), "here", None),
        }
    }

    /// One of the entry's keys that is not a keyword its tasks inherit.
    fn keyword(&mut self, f: &mut Front, map: &'n [(Key, Node)], k: &'n Key, v: &'n Node) {
        let kind = self.kind;
        match k.name.as_str() {
            "delegate_to" if kind == "import_tasks" => self.inherit.delegate_to = super::keywords::text(f, k, v),
            "args" => match v.as_map() {
                Some(m) => {
                    for (ak, av) in m {
                        if ak.name == "file" {
                            self.take_file(f, av)
                        } else if ak.name == "apply" {
                        } else {
                            f.p.add_key(ak, format!("{kind}: unknown argument '{}'", ak.name), None)
                        }
                    }
                }
                None => f.p.add_key(k, "args: must be a mapping".into(), None),
            },
            n if kind == "include_tasks" && super::loops::LOOPS.contains(&n) => {
                match super::loops::loop_items(f, k, v) {
                    Some(Value::Array(items)) if self.looped.is_none() => self.looped = Some((k, Value::Array(items))),
                    Some(_) if self.looped.is_some() => {
                        f.p.add_key(k, "a task loops once: one of loop or a with_ keyword".into(), None)
                    }
                    Some(_) => self.templated_loop = Some((k, v)),
                    None => {}
                }
            }
            "register" if kind == "include_tasks" => self.register = Some((k, v)),
            "loop_control" if kind == "include_tasks" => {
                self.control = super::loops::loop_control(f, k, v, &super::loops::own_vars(map));
            }
            other => f.p.add_key(
                k,
                format!("'{other}' on {kind} is not supported yet"),
                Some(format!(
                    "{kind} takes: name, when, tags, become, become_user, check_mode, environment, notify, vars"
                )),
            ),
        }
    }

    /// A templated loop: its items when the playbook's variables tell them now; one that reads
    /// anything else runs never where the include's `when` is a literal false (Ansible then
    /// skips the include without its loop: the `bool`); anything else is a dynamic include.
    /// A loop the inventory decides (its group_vars, host_vars): its most items on any host.
    fn templated_loop(&mut self, f: &mut Front, handler: bool) -> (bool, Option<(&'n Key, String, usize)>) {
        let mut skipped_whole = false;
        let mut by_host: Option<(&Key, String, usize)> = None;
        if let Some((k, v)) = self.templated_loop {
            let scope: Map<String, Value> = self.inherit.vars.clone();
            let known =
                v.as_str().and_then(|t| known::with(f, scope.clone(), |f| known::items(f, t, (v.line, v.column))));
            let expr = v.as_str().and_then(super::loops::lone_expression).map(|e| match k.name.as_str() {
                "with_items" => format!("({e}) | with_items_flatten"),
                _ => format!("({e})"),
            });
            let most = match (&known, &expr) {
                (None, Some(e)) if !handler && matches!(k.name.as_str(), "loop" | "with_items") => {
                    known::with(f, scope, |f| known::most_items_on_hosts(f, e))
                }
                _ => None,
            };
            match known {
                Some(items) if self.looped.is_none() => {
                    let items = if k.name == "with_items" { flatten_once(items) } else { items };
                    self.looped = Some((k, Value::Array(items)));
                }
                Some(_) => f.p.add_key(k, "a task loops once: one of loop or a with_ keyword".into(), None),
                None if self.inherit.when.iter().any(|w| w.trim() == "false") => skipped_whole = true,
                None if self.looped.is_none() && most.is_some() => {
                    by_host = Some((k, expr.unwrap_or_default(), most.unwrap_or_default()));
                }
                None => f.p.add_key(
                    k,
                    format!("include_tasks with a templated {} (a dynamic include) is not supported", k.name),
                    Some("copctl reads every task when the playbook is loaded: loop over a list written there or in the play's vars, or put the loop on the included tasks".into()),
                ),
            }
        }
        (skipped_whole, by_host)
    }
}

/// The file an include names (`rel`, at `line`, `column`), found as Ansible finds it; `None`
/// where the name is templated or the file is not found (reported), or where the entry had
/// problems already (more than `before`).
fn file_path(f: &mut Front, kind: &str, (rel, line, column): (&str, usize, usize), before: usize) -> Option<PathBuf> {
    if rel.contains("{{") || rel.contains("{%") {
        f.p.add(
            line,
            column,
            format!("{kind}: a templated file name ('{rel}') is not supported"),
            "here",
            Some("copctl reads every task when the playbook is loaded: name the file".into()),
        );
        return None;
    }
    if f.p.count() != before {
        return None;
    }
    let tried = candidates(f, rel);
    let Some(path) = tried.iter().find(|p| p.is_file()).cloned() else {
        let list = tried.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ");
        f.p.add(line, column, format!("{kind}: {rel} not found"), "this file", Some(format!("looked for {list}")));
        return None;
    };
    Some(path)
}

/// The file of each of the loop's `items` (the file name `rel` templated from the item, at
/// `line`, `column`) and where its tasks are read from; `None` where one is not found or the
/// name reads what is known only when the play runs (reported).
fn files_by_item(
    f: &mut Front,
    kind: &str,
    inherit: &Inherit,
    control: Option<&Value>,
    items: &[Value],
    (rel, line, column): (&str, usize, usize),
) -> Option<Vec<(PathBuf, Place)>> {
    let text = |k: &str| control.and_then(|c| c.get(k)).and_then(Value::as_str).map(str::to_string);
    let var = text("loop_var").unwrap_or_else(|| "item".into());
    let mut files = Vec::new();
    for item in items {
        let mut vars = inherit.vars.clone();
        vars.insert(var.clone(), item.clone());
        let name = known::with(f, vars, |f| known::text(f, rel, (line, column)));
        let Some(name) = name.filter(|n| !n.contains("{{") && !n.contains("{%")) else {
            f.p.add(
                line,
                column,
                format!("{kind}: the file name '{rel}' reads what is known only when the play runs"),
                "here",
                Some("copctl reads every task when the playbook is loaded: name the files in the loop's items".into()),
            );
            return None;
        };
        let tried = candidates(f, &name);
        let Some(path) = tried.iter().find(|p| p.is_file()).cloned() else {
            let list = tried.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ");
            f.p.add(line, column, format!("{kind}: {name} not found"), "this file", Some(format!("looked for {list}")));
            return None;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let search: Vec<_> = std::iter::once(dir.clone()).chain(f.place.search.iter().cloned()).collect();
        files.push((path, Place { task_dir: dir, search, role_dir: f.place.role_dir.clone() }));
    }
    Some(files)
}

/// An include whose literal `when: false` skips it, loop and all: the step standing for it,
/// which keeps its `register` (Ansible registers the skip).
fn skipped_include(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    register: Option<(&Key, &Node)>,
    out: &mut Vec<Step>,
) {
    let start = out.len();
    dynamic(f, node, key, inherit, start, out);
    if let (Some(s), Some((k, v))) = (out.get_mut(start), register) {
        match v.as_str() {
            Some(name) => s.def.register = Some(name.to_string()),
            None => f.p.add_key(k, format!("register: a variable's name, not {}", v.what()), None),
        }
    }
}

/// A handler that includes tasks: the include (named as the handler) and the file's tasks,
/// which the handler's name finds as a topic, in order.
fn handler_include(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    (path, line, column): (&Path, usize, usize),
    place: Place,
    out: &mut Vec<Step>,
) {
    let start = out.len();
    let (tags, scope) = (inherit.tags.clone(), inherit.scope());
    let what = format!("include_tasks {}", display_name(f, path));
    let name = node.as_map().and_then(|m| m.iter().find(|(k, _)| k.name == "name")).and_then(|(_, v)| v.as_str());
    let name = name.unwrap_or(&key.name).to_string();
    dynamic_read(f, node, key, inherit, &what, Some(&name), out, |f, out| {
        f.include_tags.push(tags);
        let flushes = f.flush_before.len();
        known::with(f, scope, |f| tasks_file(f, path, (line, column), "include_tasks", place, false, out));
        if f.flush_pending.take().is_some() || f.flush_before.len() != flushes {
            f.flush_before.truncate(flushes);
            f.p.add_key(key, "meta: flush_handlers in a handler's included tasks: Ansible refuses it".into(), None);
        }
        f.include_tags.pop();
    });
    let Some(handler_name) = out.get(start).map(|s| s.name.clone()) else { return };
    for s in &mut out[start + 1..] {
        s.name = format!("{handler_name} › {}", s.name);
        s.def.name = Some(s.name.clone());
    }
    for s in &out[start + 1..] {
        let id = super::ident(f, s);
        f.listening.push((s.name.clone(), id, vec![handler_name.clone()]));
    }
}

/// `include_tasks` over literal items: per item, the step standing for the include (ok, or
/// skipped by its `when`, as Ansible counts each item's include) and the file's tasks, with the
/// loop's variables (the item, `index_var`, `ansible_loop_var`, `ansible_loop`) above their own
/// as Ansible's include parameters are. No item: the include is skipped, as Ansible's is.
#[allow(clippy::too_many_arguments)]
fn looped_include(
    f: &mut Front,
    node: &Node,
    key: &Key,
    (lk, items): (&Key, &[Value]),
    control: Option<&Value>,
    inherit: Inherit,
    (files, line, column): (&[(PathBuf, Place)], usize, usize),
    out: &mut Vec<Step>,
) {
    if items.is_empty() {
        let start = out.len();
        let mut skipped = inherit.clone();
        skipped.when.push("false".into());
        dynamic(f, node, key, skipped, start, out);
        return;
    }
    let text = |k: &str| control.and_then(|c| c.get(k)).and_then(Value::as_str).map(str::to_string);
    let var = text("loop_var").unwrap_or_else(|| "item".into());
    let index_var = text("index_var");
    let extended = control.and_then(|c| c.get("extended")).and_then(Value::as_bool).unwrap_or(false);
    if control.and_then(|c| c.get("pause")).is_some() {
        f.p.add_key(lk, "include_tasks: loop_control pause is not supported".into(), None);
        return;
    }
    for (index, item) in items.iter().enumerate() {
        let mut vars = Map::new();
        vars.insert(var.clone(), item.clone());
        vars.insert("ansible_loop_var".into(), json!(var));
        if let Some(iv) = &index_var {
            vars.insert(iv.clone(), json!(index));
            vars.insert("ansible_index_var".into(), json!(iv));
        }
        if extended {
            let n = items.len();
            let mut l = Map::new();
            l.insert("allitems".into(), json!(items));
            l.insert("index".into(), json!(index + 1));
            l.insert("index0".into(), json!(index));
            l.insert("first".into(), json!(index == 0));
            l.insert("last".into(), json!(index + 1 == n));
            l.insert("length".into(), json!(n));
            l.insert("revindex".into(), json!(n - index));
            l.insert("revindex0".into(), json!(n - index - 1));
            if index > 0 {
                l.insert("previtem".into(), items[index - 1].clone());
            }
            if index + 1 < n {
                l.insert("nextitem".into(), items[index + 1].clone());
            }
            vars.insert("ansible_loop".into(), Value::Object(l));
        }
        let mut each = inherit.clone();
        each.params.extend(vars.clone());
        let start = out.len();
        let (path, place) = &files[index];
        let (tags, scope) = (inherit.tags.clone(), each.scope());
        let what = format!("include_tasks {}", display_name(f, path));
        dynamic_read(f, node, key, each, &what, None, out, |f, out| {
            f.include_tags.push(tags);
            known::with(f, scope, |f| tasks_file(f, path, (line, column), "include_tasks", place.clone(), false, out));
            f.include_tags.pop();
        });
        if let Some(s) = out.get_mut(start) {
            s.def.vars.extend(vars);
        }
    }
}

/// `include_tasks` over a loop the inventory decides (`expr`, at most `most` items on a host):
/// the file read `most` times, copy `i` behind a gate that lets it in where the loop has more
/// than `i` items, with `item` the loop's `i`th when it runs; where the loop is empty, the
/// include is skipped once, as Ansible's is. Gates are neither shown nor counted (chosen.rs).
#[allow(clippy::too_many_arguments)]
fn looped_by_host(
    f: &mut Front,
    node: &Node,
    key: &Key,
    (lk, expr, most): (&Key, &str, usize),
    control: Option<&Value>,
    inherit: Inherit,
    (path, line, column): (&Path, usize, usize),
    place: Place,
    out: &mut Vec<Step>,
) {
    let text = |k: &str| control.and_then(|c| c.get(k)).and_then(Value::as_str).map(str::to_string);
    let var = text("loop_var").unwrap_or_else(|| "item".into());
    let index_var = text("index_var");
    if control.is_some_and(|c| c.get("extended").is_some() || c.get("pause").is_some()) {
        f.p.add_key(
            lk,
            "include_tasks: loop_control extended or pause over a loop the inventory decides is not supported yet"
                .into(),
            None,
        );
        return;
    }
    let gate = |f: &mut Front, when: String, name: String, from: usize, out: &mut Vec<Step>| {
        super::chosen::gate_before(f, when, name, from, (line, column), out)
    };
    for index in 0..most {
        let mut vars = Map::new();
        vars.insert(var.clone(), json!(format!("{{{{ ({expr})[{index}] }}}}")));
        vars.insert("ansible_loop_var".into(), json!(var));
        if let Some(iv) = &index_var {
            vars.insert(iv.clone(), json!(index));
            vars.insert("ansible_index_var".into(), json!(iv));
        }
        let mut each = inherit.clone();
        each.params.extend(vars.clone());
        let from = out.len();
        let tags = inherit.tags.clone();
        let what = format!("include_tasks {}", display_name(f, path));
        dynamic_read(f, node, key, each, &what, None, out, |f, out| {
            f.include_tags.push(tags);
            tasks_file(f, path, (line, column), "include_tasks", place.clone(), false, out);
            f.include_tags.pop();
        });
        if let Some(s) = out.get_mut(from) {
            s.def.vars.extend(vars);
        }
        // The gate's condition on each step too: never read when it runs (the gate passes the
        // steps over first), but the plan then checks them only on hosts with such an item.
        let cond = format!("({expr}) | length > {index}");
        Inherit { when: vec![cond.clone()], ..Inherit::default() }.apply(&mut out[from..]);
        gate(f, cond, format!("include_tasks: item {index}, where there is one"), from, out);
    }
    // An empty loop: the include skipped once.
    let from = out.len();
    let mut skipped = inherit.clone();
    skipped.when.push("false".into());
    dynamic(f, node, key, skipped, from, out);
    gate(f, format!("({expr}) | length == 0"), "include_tasks: no items".into(), from, out);
}
