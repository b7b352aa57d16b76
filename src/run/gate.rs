//! Whether a ready task runs: tags and `--start-at`, a host out of the run or on its way to a
//! rescue, an aborted play, a play ended for the host (`meta: end_host`), a handler not notified.
//! A task that does not run is passed over quietly or reported as skipped (`Block`).

use petgraph::graph::NodeIndex;

use super::{Block, Engine, rescue};
use crate::plan::{Plan, Task, TaskKind};
use crate::steps::Status;

/// Tags a task carries: its step's and its play's.
fn task_tags(plan: &Plan, n: NodeIndex) -> Vec<String> {
    let t = &plan.graph[n];
    let mut v = plan.play(t).tags.clone();
    if let Some(s) = plan.step(t) {
        v.extend(s.def.tags.iter().flat_map(|x| x.to_vec()));
    }
    v
}

impl Engine {
    /// Whether tags / `--start-at` leave the task out.
    fn filtered(&mut self, n: NodeIndex) -> bool {
        let t = &self.plan.graph[n];
        // A gate runs wherever its include does: the include's tags and `--start-at-task`
        // decided already, and the steps it lets in are filtered by their own.
        if t.kind == TaskKind::Barrier || self.plan.step(t).is_some_and(|s| s.gate) {
            return false;
        }
        let tags = task_tags(&self.plan, n);
        let has = |x: &str| tags.iter().any(|t| t == x);
        if let Some(start) = &self.opts.start_at
            && !self.started_tag
        {
            if t.label == *start || self.plan.step(t).is_some_and(|s| s.name == *start) {
                self.started_tag = true;
            } else if !has("always") {
                // Steps tagged `always` (the OS facts) still run, as Ansible still gathers facts
                // at a play's start whatever task it starts at: a resumed run needs them.
                return true;
            }
        }
        if !self.selected(&tags) {
            return true;
        }
        // An Ansible include's tasks run only where `--tags` selects the include too.
        let play_tags = &self.plan.play(t).tags;
        self.plan.step(t).is_some_and(|s| {
            s.tag_gates.iter().any(|g| !self.selected(&g.iter().chain(play_tags).cloned().collect::<Vec<_>>()))
        })
    }

    /// Whether `--tags`/`--skip-tags` select a task with these tags.
    fn selected(&self, tags: &[String]) -> bool {
        let has = |x: &str| tags.iter().any(|t| t == x);
        if self.opts.skip_tags.iter().any(|s| has(s)) {
            return false;
        }
        if has("never") && !self.opts.tags.iter().any(|s| s == "never" || has(s)) {
            return false;
        }
        self.opts.tags.is_empty() || has("always") || self.opts.tags.iter().any(|s| s == "all" || has(s))
    }

    pub(super) fn why_not(&mut self, n: NodeIndex) -> Option<Block> {
        let t = self.plan.graph[n].clone();
        // A host on its way to a rescue or always part passes over the steps before it, unseen
        // and uncounted (as Ansible does); reaching a rescue, it is no longer failing.
        if let (TaskKind::Step(si), Some(h)) = (t.kind, &t.host)
            && let Some((d, _)) = self.detours.get(h)
            && (d.playbook, d.play) == (t.playbook, t.play)
        {
            if si < d.to {
                return Some(Block::Quiet(None));
            }
            if let Some(id) = d.rescue {
                self.rescuing.entry(h.clone()).or_default().insert(id);
            }
            if d.pending.is_none() {
                self.detours.remove(h);
            }
        }
        if let (Some(s), Some(h)) = (self.plan.step(&t), &t.host)
            && !rescue::runs(s, self.rescuing.get(h))
        {
            return Some(Block::Quiet(None));
        }
        if let (Some(s), Some(h)) = (self.plan.step(&t), &t.host)
            && let Some(skipped) = self.skipped_includes.get(h)
            && s.within.iter().any(|i| skipped.contains(i))
        {
            return Some(Block::Quiet(None));
        }
        if let Some(reason) = self.blocked.get(&n) {
            return Some(Block::Reported(reason.clone()));
        }
        if t.kind == TaskKind::Barrier {
            return None;
        }
        if let Some(why) = self.aborted_plays.get(&(t.playbook, t.play))
            && self.aborted_at.get(&(t.playbook, t.play)) != Some(&(t.kind, t.batch))
        {
            return Some(Block::Quiet(Some(why.clone())));
        }
        let host = t.host.clone().unwrap_or_default();
        if self.ended.contains(&(t.playbook, t.play, host.clone())) {
            return Some(Block::Quiet(None));
        }
        if let Some(st) = self.failed_hosts.get(&host) {
            // Handlers still run on failed hosts with --force-handlers (not on unreachable ones).
            let force = self.plan.play(&t).force_handlers.unwrap_or(self.opts.force_handlers);
            if !(t.kind.is_handler() && force && *st == Status::Failed) {
                return Some(Block::Quiet(Some(format!("{host} failed earlier"))));
            }
        }
        // A flush that `--tags` does not select: the handlers wait for the next part's end.
        if let TaskKind::Handler(hi) = t.kind
            && let Some(next) = self.plan.playbooks[t.playbook].plays.get(t.play + 1)
            && next.continues
            && let Some(gate) = &next.flush_tags
        {
            let tags: Vec<String> = next.tags.iter().chain(gate).cloned().collect();
            if !self.selected(&tags) && self.notified.remove(&(t.playbook, t.play, host.clone(), hi)) {
                self.notified.insert((t.playbook, t.play + 1, host.clone(), hi));
            }
        }
        if let TaskKind::Handler(hi) = t.kind
            && !self.notified.contains(&(t.playbook, t.play, host.clone(), hi))
        {
            return Some(Block::Quiet(None));
        }
        // A handler's copy at a flush inside a block: only where that handler is notified.
        if let Some(hi) = self.flushed_handler(&t)
            && !self.notified.contains(&(t.playbook, t.play, host.clone(), hi))
        {
            return Some(Block::Quiet(None));
        }
        if self.filtered(n) {
            return Some(Block::Quiet(None));
        }
        None
    }

    /// The handler (its index in the playbook's) a step is the copy of, at a flush inside a
    /// block.
    pub(super) fn flushed_handler(&self, t: &Task) -> Option<usize> {
        let Some(crate::playbook::FlushAt::Handler(name)) = self.plan.step(t).and_then(|s| s.flush.as_ref()) else {
            return None;
        };
        self.plan.playbooks[t.playbook].handlers.iter().position(|h| h.name == *name)
    }
}
