//! A play's handlers: named uniquely across the playbook (the engine's handlers are), the roles'
//! kept once where several plays bring them, their own notifications resolved, and copied to
//! where a block flushes them. Apart from play.rs: these rules span plays.

use super::chunks::Chunk;
use super::{Front, ident};
use crate::playbook::Step;

/// The play's handlers as they run: its roles' (taken from `f`) then its own (`handlers`), one
/// of each that an earlier play has (`earlier`), each notifying the handlers after it and
/// tagged `always`.
pub(super) fn play_handlers(f: &mut Front, handlers: Vec<Step>, earlier: &[Step]) -> Vec<Step> {
    let mut all_handlers = kept_once(f, handlers, earlier);
    notifying(f, &mut all_handlers);
    // Ansible runs a notified handler whatever `--tags` selects (its tags are not read).
    let mut handlers = all_handlers;
    for h in &mut handlers {
        h.def.tags = Some(crate::playbook::OneOrMany::Many(vec!["always".into()]));
    }
    handlers
}

/// A role in several plays brings the same handlers again: kept once (where they run
/// alike; `unique_handler_names` renamed the others). Another handler of the same name is a
/// problem, as among the play's own.
fn kept_once(f: &mut Front, handlers: Vec<Step>, earlier_handlers: &[Step]) -> Vec<Step> {
    let mut all_handlers: Vec<Step> = Vec::new();
    for h in std::mem::take(&mut f.role_handlers).into_iter().chain(handlers) {
        let same = |x: &Step| {
            x.name == h.name && x.line == h.line && x.file.as_ref().map(|s| &s.name) == h.file.as_ref().map(|s| &s.name)
        };
        let taken = all_handlers.iter().chain(earlier_handlers);
        if taken.clone().any(same) {
            continue;
        }
        if taken.clone().any(|x| x.name == h.name) {
            f.p.add_at_step(
                &h,
                format!("a handler named '{}' is already defined", h.name),
                "duplicate",
                "copctl's handlers are named across the playbook: make the names unique",
            );
            continue;
        }
        all_handlers.push(h);
    }
    all_handlers
}

/// A handler notifying others (by name or topic): those after it run in the same flush, as
/// in Ansible; one before it (or itself) would need another round copctl does not make.
fn notifying(f: &mut Front, all_handlers: &mut [Step]) {
    for i in 0..all_handlers.len() {
        let Some(n) = all_handlers[i].def.notify.clone() else { continue };
        let mut names: Vec<String> = Vec::new();
        for n in n.to_vec() {
            let found: Vec<usize> = (0..all_handlers.len())
                .filter(|&j| {
                    let h = &all_handlers[j];
                    h.name == n || f.listening.iter().any(|(l, _, t)| *l == h.name && t.contains(&n))
                })
                .collect();
            let h = &all_handlers[i];
            if found.is_empty() && f.noop_handlers.contains(&n) {
                continue;
            }
            if found.is_empty() {
                f.p.add_at_step(
                    h,
                    format!("handler '{}' notifies '{n}', which is not a handler of this play", h.name),
                    "unknown handler",
                    "add it under the play's handlers: or fix the name",
                );
            } else if let Some(&j) = found.iter().find(|&&j| j <= i) {
                f.p.add_at_step(
                    h,
                    format!(
                        "handler '{}' notifies '{}', which is not after it: not supported yet",
                        h.name, all_handlers[j].name
                    ),
                    "notifies an earlier handler",
                    "order the handlers so that a handler notifies only those after it",
                );
            }
            names.extend(found.into_iter().map(|j| all_handlers[j].name.clone()));
        }
        all_handlers[i].def.notify = Some(crate::playbook::OneOrMany::Many(names));
    }
}

/// A flush inside a block: a copy of each of the play's handlers there, in their order,
/// under the flush's blocks and conditions (each runs where its handler is notified).
pub(super) fn copies_at_flushes(f: &Front, sections: &mut [Chunk], handlers: &[Step]) {
    for (_, steps, ..) in sections {
        if !steps.iter().any(|s| s.flush == Some(crate::playbook::FlushAt::Point)) {
            continue;
        }
        let mut with_copies = Vec::with_capacity(steps.len());
        for point in std::mem::take(steps) {
            if point.flush != Some(crate::playbook::FlushAt::Point) {
                with_copies.push(point);
                continue;
            }
            for h in handlers {
                let mut c = h.clone();
                c.flush = Some(crate::playbook::FlushAt::Handler(h.name.clone()));
                c.blocks = point.blocks.clone();
                c.within = point.within.clone();
                c.tag_gates = point.tag_gates.clone();
                c.def.when = crate::playbook::and_conditions(point.def.when.clone(), c.def.when.take());
                c.file = c.file.or_else(|| Some(f.p.source.clone()));
                with_copies.push(c);
            }
        }
        *steps = with_copies;
    }
}

/// Makes the names of a play's handlers unique across the playbook (the engine's handlers are
/// named across it), keeping what a notification finds as Ansible resolves it: the play's own
/// handlers first, then the roles' (the last role's first), the first of a name taking it. A
/// handler whose name another took first is renamed, found through its topics only; one whose
/// name an earlier play's handler has is renamed and still found by its written name (a topic).
pub(super) fn unique_handler_names(f: &mut Front, handlers: &mut [Step], earlier: &[Step]) {
    let mut order: Vec<(bool, usize)> = (0..handlers.len()).map(|i| (false, i)).collect();
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for i in 0..f.role_handlers.len() {
        match groups.last_mut() {
            Some(g) if ident(f, &f.role_handlers[i]).0 == ident(f, &f.role_handlers[i - 1]).0 => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    order.extend(groups.into_iter().rev().flat_map(|g| g.map(|i| (true, i))));
    let mut taken: std::collections::HashSet<String> =
        earlier.iter().chain(f.role_handlers.iter()).chain(handlers.iter()).map(|h| h.name.clone()).collect();
    let mut claimed: Vec<String> = Vec::new();
    for (role, i) in order {
        let h = if role { &f.role_handlers[i] } else { &handlers[i] };
        let (name, id) = (h.name.clone(), ident(f, h));
        let first_here = !claimed.contains(&name);
        claimed.push(name.clone());
        // The same handler of the same role, under the same variables and keywords: a role in
        // a later play with other parameters (`vars`, `when`, `environment`...) brings handlers
        // of its own, as Ansible's play-scoped handlers are.
        let same_earlier = earlier.iter().any(|x| {
            x.name == name
                && ident(f, x) == id
                && f.role_handlers_kept.iter().any(|(i, n, loaded)| *i == id && *n == name && runs_alike(loaded, h))
        });
        let clash_earlier = earlier.iter().any(|x| x.name == name);
        if same_earlier {
            // A role's handler an earlier play has too: kept once, by its name.
            if !first_here {
                let h = h.clone();
                f.p.add_at_step(
                    &h,
                    format!("handler '{name}' of a role of an earlier play is named as another handler of this play: not supported yet"),
                    "same name",
                    "rename one of the two handlers",
                );
            }
            continue;
        }
        if first_here && !clash_earlier {
            if role {
                f.role_handlers_kept.push((id, name, h.clone()));
            }
            continue;
        }
        let mut new = format!("{name} (line {})", id.1);
        let mut k = 2;
        while taken.contains(&new) {
            new = format!("{name} (line {}, {k})", id.1);
            k += 1;
        }
        taken.insert(new.clone());
        for l in f.listening.iter_mut().filter(|l| l.1 == id && l.0 == name) {
            l.0 = new.clone();
        }
        if first_here {
            f.listening.push((new.clone(), id, vec![name]));
        }
        if role { f.role_handlers[i].name = new } else { handlers[i].name = new }
    }
}

/// Whether two loads of one handler run alike: the same variables and the keywords a role gives
/// its handlers (tags aside: a notified handler runs whatever they are).
fn runs_alike(a: &Step, b: &Step) -> bool {
    let (a, b) = (&a.def, &b.def);
    a.vars == b.vars
        && a.when == b.when
        && a.environment == b.environment
        && a.r#become == b.r#become
        && a.become_user == b.become_user
        && a.become_method == b.become_method
        && a.check_mode == b.check_mode
        && a.delegate_to == b.delegate_to
}
