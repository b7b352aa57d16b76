//! What stops a plan before any host is touched: the site's requirements of the playbooks
//! (inventory groups, `require` conditions), a `needs` cycle between plays, a step whose
//! meaning rests on Ansible's lock-step over several hosts, a `--limit` that leaves nothing.

use petgraph::graph::DiGraph;

use super::{Task, TaskKind};
use crate::error::{Error, ErrorKind, Result};
use crate::playbook::Playbook;
use crate::site::Site;

/// The inventory groups and `require` conditions each playbook states.
pub(super) fn check_site(site: &Site, playbooks: &[Playbook]) -> Result<()> {
    let inv = &site.inventory;
    for pb in playbooks {
        for (group, role, line) in &pb.requires_groups {
            if !inv.groups.contains_key(group) {
                let close = inv.close_names(group);
                let help = if close.is_empty() {
                    format!("add the group [{group}] to {}", inv.source.name)
                } else {
                    format!("did you mean: {}? name the group [{group}] in {}", close.join(", "), inv.source.name)
                };
                return Err(pb.source.error_at(
                    *line,
                    1,
                    0,
                    format!("{} needs the inventory group '{group}' ({role}): {} has none", pb.name, inv.source.name),
                    "required here",
                    Some(help),
                ));
            }
        }
        let ctx = site.templates.context(&site.layers(pb).global());
        for (r, line) in &pb.require {
            let ok = site.templates.eval(&r.that, &ctx).map_err(|e| {
                pb.source.error_at(
                    *line,
                    1,
                    0,
                    format!("require: {}", crate::template::describe_error(&e)),
                    "this condition",
                    None,
                )
            })?;
            if !ok.is_true() {
                let msg = site.templates.render_str(&r.msg, &ctx).unwrap_or_else(|_| r.msg.clone());
                return Err(pb.source.error_at(
                    *line,
                    1,
                    0,
                    msg,
                    "this requirement",
                    Some(format!("{} requires: {}; fix the settings in env.yaml (or -e)", pb.name, r.that)),
                ));
            }
        }
    }
    Ok(())
}

/// What Ansible decides from its hosts' lock-step, where there is more than one host to move.
pub(super) fn check_lockstep(playbooks: &[Playbook], all_batches: &[Vec<Vec<Vec<String>>>]) -> Result<()> {
    for (pi, pb) in playbooks.iter().enumerate() {
        for (ki, play) in pb.plays.iter().enumerate() {
            if !all_batches[pi][ki].iter().any(|b: &Vec<String>| b.len() > 1) {
                continue;
            }
            if let Some(s) = play.steps.iter().find(|s| s.lockstep.is_some()) {
                let (msg, help) = s.lockstep.clone().unwrap_or_default();
                return Err(s.source(&pb.source).error_at(s.line, s.column, 0, msg, "this task", Some(help)));
            }
        }
    }
    Ok(())
}

/// A `--limit` under which every planned task is outside the limit: nothing to do.
pub(super) fn check_limit_leaves_work(
    graph: &DiGraph<Task, ()>,
    playbooks: &[Playbook],
    limit: Option<&str>,
) -> Result<()> {
    if limit.is_some() && graph.node_weights().all(|t| t.kind == TaskKind::Barrier || t.outside_limit) {
        let l = limit.unwrap_or_default();
        let names: Vec<&str> = playbooks.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::with_help(
            format!("--limit '{l}' leaves nothing to do: no play of {} targets those hosts", names.join(", ")),
            "check the play's hosts: patterns (copctl plan without --limit shows them)",
        )
        .with_kind(ErrorKind::NothingToDo));
    }
    Ok(())
}

/// A `needs` cycle (including the implicit "after the previous play") is an error naming it.
pub(super) fn check_needs_cycles(pbs: &[Playbook]) -> Result<()> {
    for pb in pbs {
        let deps: Vec<Vec<usize>> = pb
            .plays
            .iter()
            .enumerate()
            .map(|(i, p)| match &p.needs {
                None if i > 0 => vec![i - 1],
                None => vec![],
                Some(n) => n.iter().filter_map(|x| pb.plays.iter().position(|q| &q.name == x)).collect(),
            })
            .collect();
        // Depth-first search with colours; the grey stack is the cycle when one closes.
        fn visit(i: usize, deps: &[Vec<usize>], colour: &mut [u8], stack: &mut Vec<usize>) -> Option<Vec<usize>> {
            colour[i] = 1;
            stack.push(i);
            for &d in &deps[i] {
                if colour[d] == 1 {
                    let pos = stack.iter().position(|x| *x == d).unwrap_or(0);
                    let mut cyc = stack[pos..].to_vec();
                    cyc.push(d);
                    return Some(cyc);
                }
                if colour[d] == 0
                    && let Some(c) = visit(d, deps, colour, stack)
                {
                    return Some(c);
                }
            }
            stack.pop();
            colour[i] = 2;
            None
        }
        let mut colour = vec![0u8; deps.len()];
        for i in 0..deps.len() {
            if colour[i] == 0
                && let Some(cyc) = visit(i, &deps, &mut colour, &mut Vec::new())
            {
                let names: Vec<&str> = cyc.iter().map(|&j| pb.plays[j].name.as_str()).collect();
                let play = &pb.plays[cyc[0]];
                return Err(play.source(&pb.source).error_at(
                    play.line,
                    1,
                    0,
                    format!("plays depend on each other in a cycle: {}", names.join(" → needs → ")),
                    "part of the cycle",
                    Some("remove one of these `needs` (a play without `needs` follows the previous play)".into()),
                ));
            }
        }
    }
    Ok(())
}
