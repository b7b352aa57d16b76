//! What a finished task's outcome does to the run: the recap's counts, registered results and
//! facts, secrets learned, handlers notified, a failure's way to a block's rescue or always
//! part, a failed host out of the run, and the play stopped when its batch failed too much.

use std::sync::Arc;
use std::time::Duration;

use petgraph::graph::NodeIndex;
use serde_json::{Value, json};

use super::{Engine, ignored, rescue};
use crate::plan::{Task, TaskKind};
use crate::playbook::Step;
use crate::steps::{Outcome, Status};

impl Engine {
    pub(super) fn count(&mut self, host: &str, status: Status, ignored: bool, secs: f64) {
        self.count_as(host, status, ignored, false, secs)
    }

    fn count_as(&mut self, host: &str, status: Status, ignored: bool, rescued: bool, secs: f64) {
        let r = self.recap.entry(host.to_string()).or_default();
        match (status, ignored) {
            (_, true) => r.ignored += 1,
            (Status::Failed, _) if rescued => r.rescued += 1,
            (Status::Ok, _) => r.ok += 1,
            (Status::Changed, _) => r.changed += 1,
            (Status::Skipped, _) => r.skipped += 1,
            (Status::Failed, _) => r.failed += 1,
            (Status::Unreachable, _) => r.unreachable += 1,
        }
        r.seconds += secs;
    }

    /// Records a task's outcome: recap, registered results, notifications, failures.
    pub(super) fn record(&mut self, n: NodeIndex, o: &Outcome, elapsed: Duration) -> Option<String> {
        let t = self.plan.graph[n].clone();
        let host = t.host.clone().unwrap_or_default();
        let plan = self.plan.clone();
        let step = plan.step(&t);
        let pb = &plan.playbooks[t.playbook];
        let ignore = step.as_ref().is_some_and(|s| ignored(s, o.status));
        // A failure inside blocks: where the host goes next (unreachable hosts are out, as in
        // Ansible: no rescue runs for them).
        let detour = match (&step, t.kind) {
            (Some(s), TaskKind::Step(si)) if o.status == Status::Failed && !ignore && !s.blocks.is_empty() => {
                let steps = &pb.plays[t.play].steps;
                Some((rescue::counts_as_rescued(steps, si, &s.blocks), rescue::after_failure(steps, si, &s.blocks)))
            }
            _ => None,
        };
        let rescued = detour.as_ref().is_some_and(|(r, _)| *r);
        self.count_as(&host, o.status, ignore, rescued, elapsed.as_secs_f64());
        // A handler run at a flush is no longer notified: the play's end does not run it again.
        if let Some(hi) = self.flushed_handler(&t) {
            self.notified.remove(&(t.playbook, t.play, host.clone(), hi));
        }
        if let Some(id) = step.as_ref().and_then(|s| s.include)
            && o.status == Status::Skipped
        {
            self.skipped_includes.entry(host.clone()).or_default().insert(id);
        }
        if ignore {
            self.count_ignored(&host, step, o);
        }
        self.timings.push((elapsed.as_secs_f64(), format!("{host} › {} › {}", pb.plays[t.play].name, t.label)));
        if let Some(s) = &step {
            self.keep_results(&t, &host, s, o);
        }
        let failed = matches!(o.status, Status::Failed | Status::Unreachable) && !ignore;
        if !failed {
            return None;
        }
        if let Some((rescued, next)) = detour
            && self.detour(&t, &host, step, o, rescued, next)
        {
            return None;
        }
        self.host_failed(n, o.status, &t.label)
    }

    /// An ignored failure, counted again as Ansible's recap counts it.
    fn count_ignored(&mut self, host: &str, step: Option<&Step>, o: &Outcome) {
        // Ansible's recap counts an ignored failure as ok too, and as changed where the
        // module reports a change even when it fails (command and shell, without a
        // changed_when saying otherwise).
        let changed = o.status == Status::Failed
            && step.as_ref().is_some_and(|s| {
                matches!(s.action, crate::playbook::Action::Command(_) | crate::playbook::Action::Shell(_))
                    && s.def.changed_when.is_none()
                    && !o.result.contains_key("timedout")
                    && !crate::steps::ran_nothing(o)
            });
        self.count_as(host, if changed { Status::Changed } else { Status::Ok }, false, false, 0.0);
    }

    /// What a step's outcome leaves for later tasks: the secrets it revealed, its registered
    /// result and facts, the handlers it notified.
    fn keep_results(&mut self, t: &Task, host: &str, s: &Step, o: &Outcome) {
        let pb = &self.plan.playbooks[t.playbook];
        // run_once: the result stands for every host of the batch.
        let owners: Vec<String> = if t.run_once {
            self.plan.batches[t.playbook][t.play].get(t.batch - 1).cloned().unwrap_or_else(|| vec![host.to_string()])
        } else {
            vec![host.to_string()]
        };
        // Secrets learned here (a registered token, a secret fact) are masked before this
        // task's own report is printed.
        let names = &self.site.secret_names;
        let mut learned = Vec::new();
        if let Some(r) = &s.def.register
            && names.is_secret(r)
        {
            learned.extend(crate::secret::result_secrets(&o.registered()));
        }
        if let Some(f) = &o.facts {
            let facts = Value::Object(f.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
            names.collect_values(&facts, &mut learned);
            // Facts set from secrets are secret variables from now on: what reads them is
            // withheld. (Their values are not masked as text: a fact such as "true" would
            // mask every "true".)
            if !o.secret_reads.is_empty() {
                Arc::make_mut(&mut self.secret_facts).extend(f.keys().cloned());
            }
        }
        self.reporter.learn_secrets(learned);
        for h in &owners {
            // A step that registers nothing leaves the host's results as they were (copied
            // per task, they were 2.5 of the 21 MiB peak heap at 50 hosts).
            if s.def.register.is_some() || o.facts.is_some() {
                let mut m = self.registered.get(h).map(|a| (**a).clone()).unwrap_or_default();
                if let Some(r) = &s.def.register {
                    m.insert(r.clone(), o.registered());
                }
                if let Some(f) = &o.facts {
                    for (k, v) in f {
                        let v = merged_fact(m.get(k), k, v);
                        m.insert(k.clone(), v);
                    }
                }
                self.registered.insert(h.clone(), Arc::new(m));
            }
            if o.status == Status::Changed {
                for name in s.def.notify.iter().flat_map(|x| x.to_vec()) {
                    if let Some(hi) = pb.handlers.iter().position(|hd| hd.name == name) {
                        self.notified.insert((t.playbook, t.play, h.clone(), hi));
                    }
                }
            }
        }
    }

    /// A failure inside blocks: the host goes on to the rescue or always part that `next` says
    /// (true), or, where there is none, is failed by the caller (false).
    fn detour(
        &mut self,
        t: &Task,
        host: &str,
        step: Option<&Step>,
        o: &Outcome,
        rescued: bool,
        next: rescue::Next,
    ) -> bool {
        if rescued {
            // Ansible's names for what failed, for the rescue to read.
            let mut m = self.registered.get(host).map(|a| (**a).clone()).unwrap_or_default();
            let (name, kind) = step
                .as_ref()
                .map(|s| (s.name.clone(), s.module.clone().unwrap_or_else(|| s.action.kind().to_string())))
                .unwrap_or_default();
            m.insert("ansible_failed_task".into(), json!({"name": name, "action": kind}));
            m.insert("ansible_failed_result".into(), o.registered());
            self.registered.insert(host.to_string(), Arc::new(m));
        }
        match rescue::Detour::new(t.playbook, t.play, next) {
            Some(d) => {
                self.detours.insert(host.to_string(), (d, t.label.clone()));
                true
            }
            None => {
                self.detours.remove(host);
                false
            }
        }
    }

    /// After the last step of an always part that a failure is pending on: the failure goes on
    /// outwards, to another block's rescue or always part, or it fails the host (the reason).
    pub(super) fn always_done(&mut self, n: NodeIndex) -> Option<String> {
        let t = &self.plan.graph[n];
        let (TaskKind::Step(si), Some(host)) = (t.kind, t.host.clone()) else { return None };
        let (d, label) = self.detours.get(&host)?;
        let (end, outer) = d.pending.as_ref()?;
        if (d.playbook, d.play) != (t.playbook, t.play) || *end != si {
            return None;
        }
        let label = label.clone();
        let steps = &self.plan.playbooks[t.playbook].plays[t.play].steps;
        let next = rescue::after_failure(steps, si, outer);
        match rescue::Detour::new(t.playbook, t.play, next) {
            Some(d) => {
                self.detours.insert(host, (d, label));
                None
            }
            None => {
                self.detours.remove(&host);
                self.host_failed(n, Status::Failed, &label)
            }
        }
    }

    /// A host has failed at `label` (task `n` or the always part after it): it is out of the
    /// rest of the run, and its batch's failures may stop the play.
    fn host_failed(&mut self, n: NodeIndex, status: Status, label: &str) -> Option<String> {
        let t = self.plan.graph[n].clone();
        let host = t.host.clone().unwrap_or_default();
        let plan = self.plan.clone();
        let pb = &plan.playbooks[t.playbook];
        self.failed_hosts.entry(host.clone()).or_insert(status);
        let play = &pb.plays[t.play];
        let batch_hosts =
            self.plan.batches[t.playbook][t.play].get(t.batch.saturating_sub(1)).map(Vec::len).unwrap_or(1);
        let set = self.batch_failures.entry((t.playbook, t.play, t.batch)).or_default();
        set.insert(host.clone());
        let failures = set.len();
        // Ansible's rule: when every host of a batch has failed, the play stops, unless max_fail
        // says how many may fail.
        let batches = &self.plan.batches[t.playbook][t.play];
        // A play without `serial` is one batch: when it failed everywhere, the plays that need
        // it (by default the next one) do not run either.
        let all_failed =
            batches.get(t.batch.saturating_sub(1)).is_some_and(|b| !b.is_empty() && b.iter().all(|h| set.contains(h)));
        let exceeded = play.any_errors_fatal
            || match play.max_fail {
                Some(m) => {
                    let pct = match m {
                        crate::playbook::Batch::Count(c) => c as f64 * 100.0 / batch_hosts as f64,
                        crate::playbook::Batch::Percent(p) => p,
                    };
                    failures as f64 * 100.0 / batch_hosts as f64 > pct
                }
                None => all_failed,
            };
        if exceeded && !self.aborted_plays.contains_key(&(t.playbook, t.play)) {
            let why = format!(
                "play '{}' stopped: {failures} of {batch_hosts} host(s) failed{}{}",
                play.name,
                if batches.len() > 1 { format!(" in batch {}", t.batch) } else { String::new() },
                if play.any_errors_fatal {
                    " (any_errors_fatal)"
                } else if play.max_fail.is_some() {
                    " (max_fail exceeded)"
                } else if batches.len() > 1 {
                    " (every host of the batch failed)"
                } else {
                    " (every host of the play failed)"
                }
            );
            self.reporter.note(&format!("{why}; the remaining batches and the plays that need it do not run"));
            self.aborted_plays.insert((t.playbook, t.play), why);
            self.aborted_at.insert((t.playbook, t.play), (t.kind, t.batch));
        }
        Some(format!("{host} failed at '{label}'"))
    }

    /// A gate (an include's, `meta`'s) done without failing: an include skipped on the host,
    /// `clear_host_errors`, `end_host`, a play's per-host vars_files read.
    pub(super) fn gate_done(&mut self, t: &Task, s: &Step, o: &Outcome) {
        let plan = self.plan.clone();
        let host = t.host.clone().unwrap_or_default();
        if let (Some(id), Status::Skipped) = (s.include, o.status) {
            self.skipped_includes.entry(host.clone()).or_default().insert(id);
        }
        if s.module.as_deref() == Some(crate::playbook::CLEAR_HOST_ERRORS)
            && o.status != Status::Skipped
            && let Some((d, _)) = self.detours.get_mut(&host)
        {
            d.pending = None;
        }
        if s.module.as_deref() == Some(crate::playbook::END_HOST) && o.status != Status::Skipped {
            // The play's later parts (sections split for handlers) too.
            let plays = &plan.playbooks[t.playbook].plays;
            let mut p = t.play;
            loop {
                self.ended.insert((t.playbook, p, host.clone()));
                if !plays.get(p + 1).is_some_and(|x| x.continues) {
                    break;
                }
                p += 1;
            }
        }
        // A play's per-host vars_files: what the gate read is the host's.
        if let Some(f) = &o.facts {
            let mut m = self.registered.get(&host).map(|a| (**a).clone()).unwrap_or_default();
            for (k, v) in f {
                let v = merged_fact(m.get(k), k, v);
                m.insert(k.clone(), v);
            }
            self.registered.insert(host.clone(), Arc::new(m));
        }
    }
}

/// A fact as it stands once a step set it: `ansible_facts` updated key by key (a module's facts,
/// `getent_passwd`, beside the gathered ones, as Ansible's fact cache updates), anything else
/// replaced.
pub(crate) fn merged_fact(have: Option<&Value>, name: &str, new: &Value) -> Value {
    match (name, have, new) {
        ("ansible_facts", Some(Value::Object(old)), Value::Object(add)) => {
            let mut m = old.clone();
            m.extend(add.iter().map(|(k, v)| (k.clone(), v.clone())));
            Value::Object(m)
        }
        _ => new.clone(),
    }
}
