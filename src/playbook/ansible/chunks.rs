//! A play's tasks in chunks: Ansible runs the notified handlers after each of pre_tasks, tasks
//! and post_tasks, and at each `meta: flush_handlers`; copctl at the end of a play, so a chunk
//! that notifies before more tasks becomes a play of its own (play.rs). Here: the sections read
//! into chunks, each task's notifications resolved to the play's handlers.

use serde_json::Value;

use super::node::{Key, Kind, Node};
use super::{Front, expand, keywords};
use crate::playbook::Step;

/// The chunks of a play's sections (`map`: the play's keywords), the roles' steps (`role_steps`)
/// first in `tasks`; each task's notifications resolved among `handlers` (the play's own) and
/// the roles'.
pub(super) fn sections(
    f: &mut Front,
    map: &[(Key, Node)],
    mut role_steps: Vec<Step>,
    handlers: &[Step],
) -> Vec<Chunk<'static>> {
    // Chunks of tasks after which Ansible flushes the notified handlers: each section, and the
    // parts of one that `meta: flush_handlers` separates (its key, for messages). The roles'
    // tasks come first in `tasks`, in one chunk with them, as Ansible compiles a play.
    // Each chunk with the tags of the explicit flush it starts after, if it does.
    let mut sections: Vec<Chunk> = Vec::new();
    for sec in ["pre_tasks", "tasks", "post_tasks"] {
        let items = map.iter().find(|(key, _)| key.name == sec).map(|(_, v)| section(f, sec, v)).unwrap_or_default();
        let mut steps = Vec::new();
        let mut notifies = false;
        let mut gate: Option<Vec<String>> = None;
        let mut roles_first = if sec == "tasks" { std::mem::take(&mut role_steps) } else { Vec::new() };
        for t in std::iter::once(None).chain(items.iter().map(Some)) {
            let mut produced = std::mem::take(&mut roles_first);
            if let Some(t) = t {
                match is_flush_handlers(f, t) {
                    Flush::At(tags) => {
                        flush_at(&mut sections, sec, &mut steps, &mut notifies, &mut gate, tags);
                        continue;
                    }
                    Flush::Never => continue,
                    Flush::Not => expand(f, t, false, &mut produced),
                }
            }
            for mut s in produced {
                // After a flush_handlers in a role's or included file: a new chunk.
                let name = s.file.as_ref().map_or_else(|| f.p.source.name.clone(), |x| x.name.clone());
                if let Some(i) = f.flush_before.iter().position(|(n, l, _)| *n == name && *l == s.line) {
                    let (.., tags) = f.flush_before.remove(i);
                    flush_at(&mut sections, sec, &mut steps, &mut notifies, &mut gate, tags);
                }
                notified(f, &mut s, handlers, &mut notifies);
                steps.push(s);
            }
        }
        if !steps.is_empty() {
            sections.push((sec, steps, notifies, gate));
        }
    }
    sections
}

/// A task's `notify` as the handlers it runs (the play's own, `handlers`, and its roles'), and
/// whether it notifies any (`notifies`); a name that is no handler of the play is a problem.
fn notified(f: &mut Front, s: &mut Step, handlers: &[Step], notifies: &mut bool) {
    // A topic becomes the handlers listening to it, in the handlers' order.
    if let Some(n) = &s.def.notify {
        let mut names: Vec<String> = Vec::new();
        for n in n.to_vec() {
            let listeners = f
                .role_handlers
                .iter()
                .chain(handlers)
                .filter(|h| h.name == n || f.listening.iter().any(|(l, _, t)| *l == h.name && t.contains(&n)));
            let found: Vec<String> = listeners.map(|h| h.name.clone()).collect();
            if found.is_empty() && !f.noop_handlers.contains(&n) {
                names.push(n);
            }
            for h in found {
                if !names.contains(&h) {
                    names.push(h);
                }
            }
        }
        s.def.notify = Some(crate::playbook::OneOrMany::Many(names));
    }
    for n in s.def.notify.iter().flat_map(|n| n.to_vec()) {
        *notifies = true;
        if !handlers.iter().chain(&f.role_handlers).any(|h| h.name == n) {
            f.p.add_at_step(
                s,
                format!("task '{}' notifies '{n}', which is not a handler of this play", s.name),
                "unknown handler",
                "add it under the play's handlers: or fix the name",
            );
        }
    }
}

/// Whether the play splits into a play per chunk: a chunk that notifies and is not the last.
/// Ansible runs the notified handlers after each of pre_tasks, tasks and post_tasks; copctl
/// at the end of a play (of each serial batch). A section that notifies and is not the last
/// is then a play of its own: the same order, as long as the play has no serial batches
/// (Ansible runs all sections batch by batch).
pub(super) fn split(f: &mut Front, map: &[(Key, Node)], sections: &[Chunk], serial: bool) -> bool {
    let split = sections.iter().rev().skip(1).any(|(_, _, n, _)| *n);
    if split && serial {
        let (sec, ..) = sections.iter().rev().skip(1).find(|(_, _, n, _)| *n).expect("a notifying section");
        if let Some((k, _)) = map.iter().find(|(key, _)| key.name == *sec) {
            f.p.add_key(
                k,
                format!(
                    "handlers notified in {sec} before more tasks (another section or after meta: flush_handlers), in a play with serial batches, are not supported yet"
                ),
                Some(
                    "Ansible runs them before the next tasks of each batch: notify from the play's last tasks only"
                        .into(),
                ),
            );
        }
    }
    split
}

/// The tasks of a section (`tasks:` and the like): a list, or nothing.
pub(super) fn section<'n>(f: &mut Front, name: &str, v: &'n Node) -> &'n [Node] {
    match &v.kind {
        Kind::Seq(items) => items,
        Kind::Scalar(Value::Null) => &[],
        _ => {
            f.p.add(v.line, v.column, format!("{name}: a list of tasks, not {}", v.what()), "here", None);
            &[]
        }
    }
}

/// A chunk of a play's tasks: its section, its steps, whether they notify, and the tags of the
/// explicit flush it starts after.
pub(super) type Chunk<'a> = (&'a str, Vec<Step>, bool, Option<Vec<String>>);

/// An explicit flush (`tags`): the chunk so far ends there, the next starts after it.
/// Consecutive flushes: either one selected flushes; one at a section's start adds nothing to
/// the flush at the section's end before it.
fn flush_at<'a>(
    sections: &mut Vec<Chunk<'a>>,
    sec: &'a str,
    steps: &mut Vec<Step>,
    notifies: &mut bool,
    gate: &mut Option<Vec<String>>,
    tags: Vec<String>,
) {
    if !steps.is_empty() {
        sections.push((sec, std::mem::take(steps), std::mem::take(notifies), gate.take()));
        *gate = Some(tags);
    } else if let Some(g) = gate {
        g.extend(tags);
    }
}

/// A `meta: flush_handlers` task, read.
pub(super) enum Flush {
    /// Another task.
    Not,
    /// `when: false`: it flushes nothing.
    Never,
    /// A boundary, with the task's own tags (`--tags` selects it as any task).
    At(Vec<String>),
}

/// Whether a task is `meta: flush_handlers` (a boundary, not a step). Of its keywords, `tags`
/// select it and a literal `when` decides it; any other is a problem.
pub(super) fn is_flush_handlers(f: &mut Front, t: &Node) -> Flush {
    let Some(m) = t.as_map() else { return Flush::Not };
    let Some((_, v)) =
        m.iter().find(|(k, _)| matches!(k.name.as_str(), "meta" | "ansible.builtin.meta" | "ansible.legacy.meta"))
    else {
        return Flush::Not;
    };
    if v.as_str().map(str::trim) != Some("flush_handlers") {
        return Flush::Not;
    }
    let mut tags = Vec::new();
    let mut never = false;
    for (k, v) in m
        .iter()
        .filter(|(k, _)| !matches!(k.name.as_str(), "name" | "meta" | "ansible.builtin.meta" | "ansible.legacy.meta"))
    {
        match (k.name.as_str(), v.to_value()) {
            ("tags", _) => tags.extend(keywords::names(f, k, v, true).unwrap_or_default()),
            ("when", Value::Bool(b)) => never |= !b,
            ("when", _) => f.p.add_key(
                k,
                "meta: flush_handlers with a templated when is not supported yet".into(),
                Some("copctl flushes the handlers of every host at once: flush unconditionally, or not".into()),
            ),
            _ => f.p.add_key(
                k,
                format!("meta: flush_handlers takes no '{}'", k.name),
                Some("Ansible ignores it there; remove it".into()),
            ),
        }
    }
    if never { Flush::Never } else { Flush::At(tags) }
}
