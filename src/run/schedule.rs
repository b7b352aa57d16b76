//! Scheduling: the run's loop. A task starts the moment what it waits for is done, at most
//! `--forks` at once and within its play's and its step's `throttle`; a finished task releases
//! the tasks waiting for it (a host's next task first). Interrupts stop new tasks.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use petgraph::Direction;
use petgraph::graph::NodeIndex;
use tokio::task::JoinSet;

use super::signals::{Signals, early_signal};
use super::{Block, Engine, State, task};
use crate::plan::{Task, TaskKind};
use crate::playbook::Step;
use crate::steps::{Outcome, Status};

/// The tasks running now, each giving back its node, outcome and time taken.
type Running = JoinSet<(NodeIndex, Outcome, Duration)>;

impl Engine {
    /// Runs the DAG to the end (or to an interruption); returns the exit code.
    pub async fn run(mut self, id: String) -> i32 {
        let started = Instant::now();
        let plan = self.plan.clone();
        let names: Vec<String> = plan.playbooks.iter().map(|p| p.name.clone()).collect();
        let tasks = plan.graph.node_weights().filter(|t| t.kind != TaskKind::Barrier).count();
        self.reporter.run_start(&id, &names, plan.limit.as_deref(), self.opts.check, tasks, self.recap.len());
        let mut ready: VecDeque<NodeIndex> =
            plan.graph.node_indices().filter(|n| self.waiting_on[n.index()] == 0).collect();
        let mut running: Running = JoinSet::new();
        let mut signals = Signals::new();
        let mut interrupted: Option<i32> = early_signal();
        if interrupted.is_some() {
            self.reporter.note("interrupted before the run began: nothing was started");
        }
        loop {
            if interrupted.is_none() {
                self.start_ready(&mut ready, &mut running);
            }
            if running.is_empty() {
                if interrupted.is_some() || ready.is_empty() {
                    break;
                }
                continue;
            }
            tokio::select! {
                done = running.join_next() => {
                    let Some(Ok((n, o, elapsed))) = done else { continue };
                    self.task_done(n, o, elapsed, &mut ready);
                }
                sig = signals.next() => {
                    if interrupted.is_some() {
                        self.reporter.note("second interrupt: abandoning the running tasks (files are written atomically: none is half-written)");
                        running.abort_all();
                        while running.join_next().await.is_some() {}
                        break;
                    }
                    interrupted = Some(sig);
                    let _ = self.stop.send(true);
                    self.reporter.note(&format!(
                        "interrupted: no new tasks start; waiting for {} running task(s) (interrupt again to abandon them)",
                        running.len()
                    ));
                }
            }
        }
        self.pool.close().await;
        self.run_end(&names, interrupted, started)
    }

    /// Starts ready tasks while `--forks` allows, passing over those that do not run; those a
    /// `throttle` holds back wait in `ready` for the next round.
    fn start_ready(&mut self, ready: &mut VecDeque<NodeIndex>, running: &mut Running) {
        let plan = self.plan.clone();
        let mut deferred = VecDeque::new();
        while running.len() < self.opts.forks.max(1) {
            let Some(n) = ready.pop_front() else { break };
            let t = plan.graph[n].clone();
            match self.why_not(n) {
                Some(Block::Quiet(reason)) => {
                    self.finish(n, reason, ready);
                    continue;
                }
                Some(Block::Reported(reason)) => {
                    self.report_not_run(n, &reason);
                    self.finish(n, Some(reason), ready);
                    continue;
                }
                None => {}
            }
            let Some(step) = plan.step(&t) else {
                // A barrier: done once what it waits for is.
                let reason = self
                    .aborted_plays
                    .get(&(t.playbook, t.play))
                    .cloned()
                    .filter(|_| t.label.starts_with("end of play"));
                self.finish(n, reason, ready);
                continue;
            };
            if !self.take_slot(&t, step) {
                deferred.push_back(n);
                continue;
            }
            self.spawn(n, &t, step, running);
        }
        ready.extend(deferred);
    }

    /// Whether the play's and the step's `throttle` let the task start now; if so, it counts
    /// as running in both.
    fn take_slot(&mut self, t: &Task, step: &Step) -> bool {
        let key = (t.playbook, t.play);
        if let Some(limit) = self.plan.play(t).throttle
            && self.running_per_play.get(&key).copied().unwrap_or(0) >= limit
        {
            return false;
        }
        let step_key = (t.playbook, t.play, t.kind);
        // 0 is no throttle, as in Ansible.
        let throttle = step.def.throttle.filter(|l| *l > 0);
        if let Some(limit) = throttle
            && self.running_per_step.get(&step_key).copied().unwrap_or(0) >= limit
        {
            return false;
        }
        if throttle.is_some() {
            *self.running_per_step.entry(step_key).or_default() += 1;
        }
        *self.running_per_play.entry(key).or_default() += 1;
        true
    }

    /// Starts task `n` (its step `step`) on the runtime.
    fn spawn(&mut self, n: NodeIndex, t: &Task, step: &Step, running: &mut Running) {
        let plan = self.plan.clone();
        self.state[n.index()] = State::Running;
        if !step.gate {
            self.reporter.task_start(
                n.index(),
                t.host.as_deref().unwrap_or(""),
                t.runs_on.as_deref(),
                &plan.playbooks[t.playbook].name,
                &plan.play(t).name,
                &t.label,
                step.action.kind(),
            );
        }
        let job = task::Job {
            site: self.site.clone(),
            plan: self.plan.clone(),
            pool: self.pool.clone(),
            node: n,
            step: step.clone(),
            registered: self.registered.clone(),
            check: self.opts.check,
            diff: self.opts.diff,
            verbose: self.opts.verbose,
            local_dir: self.opts.local_dir.clone(),
            stop: self.stop.subscribe(),
            secret_facts: self.secret_facts.clone(),
            gone: Arc::new(self.failed_hosts.keys().cloned().collect()),
            run_tags: self.opts.tags.clone(),
            skip_tags: self.opts.skip_tags.clone(),
            data: None,
        };
        running.spawn(async move {
            let t0 = Instant::now();
            let o = job.execute().await;
            (n, o, t0.elapsed())
        });
    }

    /// A running task has finished: its outcome recorded and reported, what waits for it
    /// released.
    fn task_done(&mut self, n: NodeIndex, o: Outcome, elapsed: Duration, ready: &mut VecDeque<NodeIndex>) {
        let plan = self.plan.clone();
        let t = plan.graph[n].clone();
        if let Some(c) = self.running_per_play.get_mut(&(t.playbook, t.play)) {
            *c -= 1;
        }
        if let Some(c) = self.running_per_step.get_mut(&(t.playbook, t.play, t.kind)) {
            *c -= 1;
        }
        tracing::debug!(
            host = t.host.as_deref().unwrap_or(""),
            task = %t.label,
            status = ?o.status,
            ms = elapsed.as_millis() as u64,
            "task finished"
        );
        if let Some(s) = plan.step(&t).filter(|s| s.gate && o.status != Status::Failed) {
            self.gate_done(&t, s, &o);
            self.finish(n, None, ready);
            return;
        }
        let reason = self.record(n, &o, elapsed);
        let end = self.task_end_report(n, &o, elapsed);
        self.reporter.task_end(end);
        self.finish(n, reason, ready);
    }

    /// Marks a task finished and releases what waits for it. `reason` says why the task failed
    /// or did not run: then the tasks of other hosts that wait for it directly (they need its
    /// result) cannot run either; a blocked task blocks everything after it; an aborted play's end
    /// blocks every play that needs it.
    fn finish(&mut self, n: NodeIndex, reason: Option<String>, ready: &mut VecDeque<NodeIndex>) {
        self.state[n.index()] = State::Done;
        let t = self.plan.graph[n].clone();
        let reason = reason.or_else(|| self.always_done(n));
        if let Some(h) = t.runs_on.as_ref().or(t.host.as_ref())
            && let Some(left) = self.tasks_left.get_mut(h)
        {
            *left -= 1;
            if *left == 0 {
                self.pool.spawn_release(h);
            }
        }
        let was_blocked = self.blocked.contains_key(&n);
        let deps: Vec<NodeIndex> = self.plan.graph.neighbors_directed(n, Direction::Outgoing).collect();
        for d in deps {
            if let Some(r) = &reason {
                let dt = &self.plan.graph[d];
                let propagate = if t.kind == TaskKind::Barrier {
                    true
                } else {
                    dt.kind != TaskKind::Barrier && (dt.host != t.host || was_blocked)
                };
                // The next part of the same Ansible play stops as its first part did, unseen.
                let continues = t.kind == TaskKind::Barrier
                    && (dt.playbook, dt.play) == (t.playbook, t.play + 1)
                    && self.plan.play(dt).continues;
                if propagate && !continues && !self.plan.order_only.contains(&(n, d)) {
                    self.blocked.entry(d).or_insert_with(|| r.clone());
                }
                // A play kept from starting by a play it needs stops as that one did, so the
                // plays that need it in turn do not run either.
                if t.kind == TaskKind::Barrier && (dt.playbook, dt.play) != (t.playbook, t.play) {
                    self.aborted_plays.entry((dt.playbook, dt.play)).or_insert_with(|| r.clone());
                }
            }
            self.waiting_on[d.index()] -= 1;
            if self.waiting_on[d.index()] == 0 {
                // A host's next task goes first: hosts run through their steps while connected,
                // rather than every host opening a connection and holding it for the whole run.
                if t.kind != TaskKind::Barrier && self.plan.graph[d].host == t.host {
                    ready.push_front(d);
                } else {
                    ready.push_back(d);
                }
            }
        }
    }
}
