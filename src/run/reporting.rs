//! The run's reporting hooks: each finished or passed-over task as the reporter's `TaskEnd`
//! (`no_log` hiding what the step said), and the run's end: the recap, the slowest tasks, the
//! hosts to retry (last-failed), summary.json and the exit code.

use std::time::Duration;

use petgraph::graph::NodeIndex;
use serde_json::{Value, json};

use super::{Engine, State, ignored};
use crate::plan::TaskKind;
use crate::report::{HostRecap, TaskEnd};
use crate::steps::{Outcome, Status};

impl Engine {
    pub(super) fn task_end_report(&self, n: NodeIndex, o: &Outcome, elapsed: Duration) -> TaskEnd {
        let t = &self.plan.graph[n];
        let step = self.plan.step(t);
        if step.is_some_and(|s| s.def.no_log == Some(true)) {
            // Ansible's words, in place of everything the step said.
            let mut hidden = Outcome::ok(
                "the output has been hidden due to the fact that 'no_log: true' was specified for this result",
            );
            hidden.status = o.status;
            let mut end = self.task_end_report_of(n, &hidden, elapsed);
            end.rc = o.result.get("rc").and_then(Value::as_i64);
            end.ignored = step.is_some_and(|s| ignored(s, o.status));
            return end;
        }
        self.task_end_report_of(n, o, elapsed)
    }

    fn task_end_report_of(&self, n: NodeIndex, o: &Outcome, elapsed: Duration) -> TaskEnd {
        let t = &self.plan.graph[n];
        let step = self.plan.step(t);
        TaskEnd {
            task: n.index(),
            host: t.host.clone().unwrap_or_default(),
            runs_on: t.runs_on.clone(),
            playbook: self.plan.playbooks[t.playbook].name.clone(),
            play: self.plan.play(t).name.clone(),
            step: t.label.clone(),
            kind: step.map(|s| s.action.kind().to_string()).unwrap_or_default(),
            status: o.status,
            msg: o.msg.clone(),
            duration_ms: elapsed.as_millis() as u64,
            rc: o.result.get("rc").and_then(Value::as_i64),
            ignored: step.is_some_and(|s| ignored(s, o.status)),
            diff: o.diff.clone(),
            show_diff: step.and_then(|s| s.def.diff),
            stdout: o.result.get("stdout").and_then(Value::as_str).unwrap_or("").to_string(),
            stderr: o.result.get("stderr").and_then(Value::as_str).unwrap_or("").to_string(),
            commands: o.commands.clone(),
            warnings: o
                .warnings
                .iter()
                .cloned()
                .chain(
                    o.deprecations.iter().map(|d| {
                        format!("deprecated (to be removed from ansible-core version 2.23, copctl runs it): {d}")
                    }),
                )
                .collect(),
        }
    }

    /// A task that does not run, reported as skipped with the reason (a barrier is not
    /// reported).
    pub(super) fn report_not_run(&mut self, n: NodeIndex, reason: &str) {
        let t = &self.plan.graph[n];
        if t.kind != TaskKind::Barrier {
            let o = Outcome::skipped(format!("not run: {reason}"));
            let host = t.host.clone();
            self.count(host.as_deref().unwrap_or(""), Status::Skipped, false, 0.0);
            let end = self.task_end_report(n, &o, Duration::ZERO);
            self.reporter.task_end(end);
        }
    }

    /// The run's end: the recap and the hosts to retry reported, the run record's last-failed and
    /// summary.json written. `interrupted`: the signal's exit code. Returns the exit code.
    pub(super) fn run_end(&mut self, names: &[String], interrupted: Option<i32>, started: std::time::Instant) -> i32 {
        let plan = self.plan.clone();
        // Hosts to retry: failed, unreachable, and (after an interruption) those with work left.
        let mut retry: Vec<String> = self.failed_hosts.keys().cloned().collect();
        if interrupted.is_some() {
            for t in plan.graph.node_indices().filter(|n| self.state[n.index()] != State::Done).map(|n| &plan.graph[n])
            {
                if let Some(h) = &t.host
                    && !t.outside_limit
                    && !retry.contains(h)
                {
                    retry.push(h.clone());
                }
            }
        }
        retry.sort();
        let any_unreachable = self.failed_hosts.values().any(|s| *s == Status::Unreachable);
        let exit = match interrupted {
            Some(code) => code,
            None if any_unreachable => 4,
            None if !self.failed_hosts.is_empty() => 2,
            None => 0,
        };
        let mut slowest = self.timings.clone();
        slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
        slowest.truncate(5);
        let elapsed = started.elapsed();
        self.reporter.run_end(&self.recap, &slowest, exit, interrupted.is_some(), elapsed);
        if let Some(r) = &self.reporter.record {
            r.last_failed(&retry);
            let totals = self.recap.values().fold(HostRecap::default(), |mut a, r| {
                a.ok += r.ok;
                a.changed += r.changed;
                a.failed += r.failed;
                a.skipped += r.skipped;
                a.unreachable += r.unreachable;
                a.rescued += r.rescued;
                a
            });
            r.write_json(
                "summary.json",
                &json!({"playbooks": names, "limit": plan.limit, "check": self.opts.check, "exit_code": exit,
                        "interrupted": interrupted.is_some(), "seconds": elapsed.as_secs_f64(), "hosts": self.recap.len(),
                        "totals": totals, "retry": retry}),
            );
        }
        exit
    }
}
