//! The run: executes the planned DAG. A task starts the moment its dependencies are done (no
//! lock-step across hosts), at most `--forks` at once (and a play's or a step's `throttle`). A failed task
//! takes its host out of the rest of the run and blocks the tasks of other hosts that wait for
//! it; unrelated hosts go on. `max_fail` / `any_errors_fatal` abort a play per batch. Ctrl-C stops
//! new tasks (running ones finish; a second Ctrl-C abandons them), and the recap and last-failed
//! are written all the same.

mod rescue;
mod task;

pub use task::play_magic;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use petgraph::Direction;
use petgraph::graph::NodeIndex;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::error::Result;
use crate::plan::{Plan, Task, TaskKind};
use crate::report::{HostRecap, OutputFormat, Reporter, TaskEnd, record::RunRecord};
use crate::site::{HostResults, Site};
use crate::steps::{Outcome, Status};
use crate::transport::Pool;

/// One run, resolved once from what the user typed (`copctl run`, or a node procedure): the
/// playbooks, the limit, the extra variables, and how to run and report them. The command loads
/// and plans from the first three; the engine reads the rest.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub playbooks: Vec<String>,
    pub limit: Option<String>,
    /// `-e` values, with what `--yes`/`--force` and a procedure add already in.
    pub extra_vars: Vec<String>,
    pub check: bool,
    pub diff: bool,
    pub forks: usize,
    pub tags: Vec<String>,
    pub skip_tags: Vec<String>,
    pub start_at: Option<String>,
    pub force_handlers: bool,
    pub output: OutputFormat,
    pub verbose: u8,
    /// `.copctl` (runs/ and last-failed).
    pub record_root: PathBuf,
    /// Where relative local paths of steps (copy src, fetch dest) are resolved.
    pub local_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Waiting,
    Running,
    /// Finished (any outcome), or passed over.
    Done,
}

/// Why a task did not run.
#[derive(Debug, Clone, PartialEq)]
enum Block {
    /// Silently: its host is out of the run or its play aborted (the reason still blocks the
    /// tasks of other hosts that need it), or tags / start-at / no notification leave it out.
    Quiet(Option<String>),
    /// Reported as skipped, with the reason.
    Reported(String),
}

pub struct Engine {
    site: Arc<Site>,
    plan: Arc<Plan>,
    pool: Arc<Pool>,
    opts: RunRequest,
    state: Vec<State>,
    waiting_on: Vec<usize>,
    /// A task that must not run (a dependency failed on another host, or a play was aborted).
    blocked: HashMap<NodeIndex, String>,
    failed_hosts: HashMap<String, Status>,
    /// (playbook, play, host): a `meta: end_host` ended the play there.
    ended: std::collections::HashSet<(usize, usize, String)>,
    /// Registered results and facts per host.
    registered: HostResults,
    notified: HashSet<(usize, usize, String, usize)>,
    aborted_plays: HashMap<(usize, usize), String>,
    /// The task (its kind and batch) whose failures stopped a play: it still runs on the
    /// batch's other hosts, as Ansible's lock-step hosts all run it before the play stops.
    aborted_at: HashMap<(usize, usize), (TaskKind, usize)>,
    batch_failures: HashMap<(usize, usize, usize), HashSet<String>>,
    running_per_play: HashMap<(usize, usize), usize>,
    /// Hosts running each throttled step now.
    running_per_step: HashMap<(usize, usize, TaskKind), usize>,
    recap: BTreeMap<String, HostRecap>,
    timings: Vec<(f64, String)>,
    started_tag: bool,
    reporter: Reporter,
    /// Tasks not yet finished per host connected to: at 0 the host's connection is closed, so a
    /// run over a thousand hosts holds only the connections still in use.
    tasks_left: HashMap<String, usize>,
    /// Set on the first interrupt: a step waiting to retry (`until`) stops waiting.
    stop: tokio::sync::watch::Sender<bool>,
    /// Facts set from secrets (`set_fact` of a template that read one): secret variables for
    /// the rest of the run.
    secret_facts: Arc<BTreeSet<String>>,
    /// Hosts on their way to a block's rescue or always part after a failure (rescue.rs), with
    /// what failed.
    detours: HashMap<String, (rescue::Detour, String)>,
    /// Per host, the blocks whose rescue it has entered: the only rescue steps it runs.
    rescuing: HashMap<String, HashSet<usize>>,
    /// Per host, the dynamic includes skipped there (`Step::include`): their tasks are passed
    /// over unseen.
    skipped_includes: HashMap<String, HashSet<usize>>,
}

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
    pub fn new(site: Arc<Site>, plan: Arc<Plan>, pool: Arc<Pool>, opts: RunRequest, reporter: Reporter) -> Self {
        let n = plan.graph.node_count();
        let waiting_on =
            plan.graph.node_indices().map(|i| plan.graph.neighbors_directed(i, Direction::Incoming).count()).collect();
        let mut recap = BTreeMap::new();
        let mut tasks_left: HashMap<String, usize> = HashMap::new();
        for t in plan.graph.node_weights() {
            if let Some(h) = &t.host {
                recap.entry(h.clone()).or_insert_with(HostRecap::default);
            }
            if let Some(h) = t.runs_on.as_ref().or(t.host.as_ref()) {
                *tasks_left.entry(h.clone()).or_default() += 1;
            }
        }
        Engine {
            site,
            plan,
            pool,
            opts,
            state: vec![State::Waiting; n],
            waiting_on,
            blocked: HashMap::new(),
            failed_hosts: HashMap::new(),
            ended: Default::default(),
            registered: HostResults::default(),
            notified: HashSet::new(),
            aborted_plays: HashMap::new(),
            aborted_at: HashMap::new(),
            batch_failures: HashMap::new(),
            running_per_play: HashMap::new(),
            running_per_step: HashMap::new(),
            recap,
            timings: Vec::new(),
            started_tag: false,
            reporter,
            tasks_left,
            stop: tokio::sync::watch::channel(false).0,
            secret_facts: Arc::default(),
            detours: HashMap::new(),
            rescuing: HashMap::new(),
            skipped_includes: HashMap::new(),
        }
    }

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

    fn why_not(&mut self, n: NodeIndex) -> Option<Block> {
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
    fn flushed_handler(&self, t: &Task) -> Option<usize> {
        let Some(crate::playbook::FlushAt::Handler(name)) = self.plan.step(t).and_then(|s| s.flush.as_ref()) else {
            return None;
        };
        self.plan.playbooks[t.playbook].handlers.iter().position(|h| h.name == *name)
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

    fn count(&mut self, host: &str, status: Status, ignored: bool, secs: f64) {
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
    fn record(&mut self, n: NodeIndex, o: &Outcome, elapsed: Duration) -> Option<String> {
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
            self.count_as(&host, if changed { Status::Changed } else { Status::Ok }, false, false, 0.0);
        }
        self.timings.push((elapsed.as_secs_f64(), format!("{host} › {} › {}", pb.plays[t.play].name, t.label)));
        // run_once: the result stands for every host of the batch.
        let owners: Vec<String> = if t.run_once {
            self.plan.batches[t.playbook][t.play].get(t.batch - 1).cloned().unwrap_or_else(|| vec![host.clone()])
        } else {
            vec![host.clone()]
        };
        if let Some(s) = &step {
            // Secrets learned here (a registered token, a secret fact) are masked before this
            // task's own report is printed.
            let names = &self.site.secret_names;
            let mut learned = Vec::new();
            if let Some(r) = &s.def.register
                && names.is_secret(r)
            {
                learned.extend(crate::vars::secret::result_secrets(&o.registered()));
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
        let failed = matches!(o.status, Status::Failed | Status::Unreachable) && !ignore;
        if !failed {
            return None;
        }
        if let Some((rescued, next)) = detour {
            if rescued {
                // Ansible's names for what failed, for the rescue to read.
                let mut m = self.registered.get(&host).map(|a| (**a).clone()).unwrap_or_default();
                let (name, kind) = step
                    .as_ref()
                    .map(|s| (s.name.clone(), s.module.clone().unwrap_or_else(|| s.action.kind().to_string())))
                    .unwrap_or_default();
                m.insert("ansible_failed_task".into(), json!({"name": name, "action": kind}));
                m.insert("ansible_failed_result".into(), o.registered());
                self.registered.insert(host.clone(), Arc::new(m));
            }
            match rescue::Detour::new(t.playbook, t.play, next) {
                Some(d) => {
                    self.detours.insert(host.clone(), (d, t.label.clone()));
                    return None;
                }
                None => {
                    self.detours.remove(&host);
                }
            }
        }
        self.host_failed(n, o.status, &t.label)
    }

    /// After the last step of an always part that a failure is pending on: the failure goes on
    /// outwards, to another block's rescue or always part, or it fails the host (the reason).
    fn always_done(&mut self, n: NodeIndex) -> Option<String> {
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

    fn task_end_report(&self, n: NodeIndex, o: &Outcome, elapsed: Duration) -> TaskEnd {
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

    /// Runs the DAG to the end (or to an interruption); returns the exit code.
    pub async fn run(mut self, id: String) -> i32 {
        let started = Instant::now();
        let plan = self.plan.clone();
        let names: Vec<String> = plan.playbooks.iter().map(|p| p.name.clone()).collect();
        let tasks = plan.graph.node_weights().filter(|t| t.kind != TaskKind::Barrier).count();
        self.reporter.run_start(&id, &names, plan.limit.as_deref(), self.opts.check, tasks, self.recap.len());
        let mut ready: VecDeque<NodeIndex> =
            plan.graph.node_indices().filter(|n| self.waiting_on[n.index()] == 0).collect();
        let mut running: JoinSet<(NodeIndex, Outcome, Duration)> = JoinSet::new();
        let mut signals = Signals::new();
        let mut interrupted: Option<i32> = early_signal();
        if interrupted.is_some() {
            self.reporter.note("interrupted before the run began: nothing was started");
        }
        loop {
            let mut deferred = VecDeque::new();
            while interrupted.is_none() && running.len() < self.opts.forks.max(1) {
                let Some(n) = ready.pop_front() else { break };
                let t = plan.graph[n].clone();
                match self.why_not(n) {
                    Some(Block::Quiet(reason)) => {
                        self.finish(n, reason, &mut ready);
                        continue;
                    }
                    Some(Block::Reported(reason)) => {
                        if t.kind != TaskKind::Barrier {
                            let o = Outcome::skipped(format!("not run: {reason}"));
                            self.count(t.host.as_deref().unwrap_or(""), Status::Skipped, false, 0.0);
                            let end = self.task_end_report(n, &o, Duration::ZERO);
                            self.reporter.task_end(end);
                        }
                        self.finish(n, Some(reason), &mut ready);
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
                    self.finish(n, reason, &mut ready);
                    continue;
                };
                let key = (t.playbook, t.play);
                if let Some(limit) = plan.play(&t).throttle
                    && self.running_per_play.get(&key).copied().unwrap_or(0) >= limit
                {
                    deferred.push_back(n);
                    continue;
                }
                let step_key = (t.playbook, t.play, t.kind);
                // 0 is no throttle, as in Ansible.
                let throttle = step.def.throttle.filter(|l| *l > 0);
                if let Some(limit) = throttle
                    && self.running_per_step.get(&step_key).copied().unwrap_or(0) >= limit
                {
                    deferred.push_back(n);
                    continue;
                }
                if throttle.is_some() {
                    *self.running_per_step.entry(step_key).or_default() += 1;
                }
                *self.running_per_play.entry(key).or_default() += 1;
                self.state[n.index()] = State::Running;
                if !step.gate {
                    self.reporter.task_start(
                        n.index(),
                        t.host.as_deref().unwrap_or(""),
                        t.runs_on.as_deref(),
                        &plan.playbooks[t.playbook].name,
                        &plan.play(&t).name,
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
            ready.extend(deferred);
            if running.is_empty() {
                if interrupted.is_some() || ready.is_empty() {
                    break;
                }
                continue;
            }
            tokio::select! {
                done = running.join_next() => {
                    let Some(Ok((n, o, elapsed))) = done else { continue };
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
                        self.finish(n, None, &mut ready);
                        continue;
                    }
                    let reason = self.record(n, &o, elapsed);
                    let end = self.task_end_report(n, &o, elapsed);
                    self.reporter.task_end(end);
                    self.finish(n, reason, &mut ready);
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

/// A SIGINT or SIGTERM that came before the run's own handling was set up (while the site was
/// loaded and planned): remembered, and the run then starts nothing.
static EARLY_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn remember_signal(sig: libc::c_int) {
    EARLY_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Called first thing (main) and again when a run begins (before the site is loaded): an
/// interrupt from then on ends the run with its recap and last-failed, never kills copctl
/// half-way through its start; commands that run nothing go back to the default
/// (`default_signals`) once their arguments are read.
pub fn catch_early_signals() {
    let handler = remember_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler is async-signal-safe (one store to an atomic) and a plain `extern "C"`
    // function that lives as long as the process; libc::signal has no other precondition.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// For a command that runs nothing: an interrupt that came while copctl started ends it now,
/// as it would have without the early handling, and from here on interrupts end it at once.
pub fn default_signals() {
    if let Some(code) = early_signal() {
        std::process::exit(code);
    }
    // SAFETY: restoring the default disposition has no precondition.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Loads the site and plans the run (`load`) while watching for SIGINT / SIGTERM: loading a
/// huge inventory can take a while, and an interrupt then ends copctl at once with its (empty)
/// recap rather than being remembered until the load is over.
pub fn load_interruptibly<T: Send>(
    output: OutputFormat,
    verbose: u8,
    load: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    let started = Instant::now();
    std::thread::scope(|s| {
        let loading = s.spawn(load);
        loop {
            if loading.is_finished() {
                return loading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
            let code = match EARLY_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
                libc::SIGINT => 130,
                libc::SIGTERM => 143,
                _ => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            };
            let mut reporter = Reporter::new(output, verbose, false, crate::vars::secret::Redactor::new(Vec::new()), 0);
            reporter.note("interrupted while loading the inventory and playbooks: nothing was started");
            reporter.run_end(&BTreeMap::new(), &[], code, true, started.elapsed());
            // The loading thread is left behind: exiting here is the point.
            std::process::exit(code);
        }
    })
}

fn early_signal() -> Option<i32> {
    match EARLY_SIGNAL.swap(0, std::sync::atomic::Ordering::SeqCst) {
        libc::SIGINT => Some(130),
        libc::SIGTERM => Some(143),
        _ => None,
    }
}

/// SIGINT / SIGTERM as exit codes 130 / 143.
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

struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Signals { int: signal(SignalKind::interrupt()).ok(), term: signal(SignalKind::terminate()).ok() }
    }

    async fn next(&mut self) -> i32 {
        let int = async {
            match &mut self.int {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let term = async {
            match &mut self.term {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int => 130,
            _ = term => 143,
        }
    }
}

/// `--start-at NAME` must name a planned step: a name that matches none would pass over every
/// task, and the run would "succeed" having done nothing.
fn check_start_at(plan: &Plan, name: &str) -> Result<()> {
    let mut names: Vec<&str> = Vec::new();
    for t in plan.graph.node_weights().filter(|t| matches!(t.kind, TaskKind::Step(_))) {
        if let Some(s) = plan.step(t)
            && !names.contains(&s.name.as_str())
        {
            names.push(&s.name);
        }
    }
    if names.contains(&name) {
        return Ok(());
    }
    let mut close: Vec<(f64, &str)> =
        names.iter().map(|n| (strsim::jaro_winkler(name, n), *n)).filter(|(s, _)| *s > 0.75).collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    let help = if close.is_empty() {
        format!("the planned steps are: {}", names.join(", "))
    } else {
        format!("did you mean: {}?", close.iter().take(5).map(|c| c.1).collect::<Vec<_>>().join(", "))
    };
    let pbs: Vec<&str> = plan.playbooks.iter().map(|p| p.name.as_str()).collect();
    Err(crate::error::Error::with_help(
        format!("--start-at '{name}' names no planned step of {}", pbs.join(", ")),
        help,
    ))
}

/// `copctl run`: plan, connect lazily, execute, report. Returns the exit code.
pub fn run(site: Site, plan: Plan, pool: Pool, opts: RunRequest) -> Result<i32> {
    if let Some(name) = &opts.start_at {
        check_start_at(&plan, name)?;
    }
    let mut site = site;
    for pb in &plan.playbooks {
        site.add_secret_names(pb.secret_vars.clone());
    }
    let redactor = site.redactor_with(&plan.playbooks);
    let site = Arc::new(site);
    let plan = Arc::new(plan);
    let total = plan.graph.node_weights().filter(|t| t.kind != TaskKind::Barrier).count() as u64;
    let mut reporter = Reporter::new(opts.output, opts.verbose, opts.diff, redactor.clone(), total);
    let id = chrono::Local::now().format("%Y%m%d-%H%M%S-%3f").to_string();
    let hosts: std::collections::HashSet<&String> = plan.graph.node_weights().filter_map(|t| t.host.as_ref()).collect();
    match RunRecord::create(&opts.record_root, &id, hosts.len()) {
        Ok(r) => {
            let plan_json = crate::plan::render::json(&plan);
            r.write_json("plan.json", &plan_json);
            reporter.record = Some(r);
        }
        Err(e) => eprintln!("warning: cannot write the run record under {}: {e}", opts.record_root.display()),
    }
    let rt = crate::runtime()?;
    let engine = Engine::new(site, plan, Arc::new(pool), opts, reporter);
    Ok(rt.block_on(engine.run(id)))
}

/// Whether a step's failure (`ignore_errors`) or unreachable host (`ignore_unreachable`) is
/// ignored: the host goes on, the recap counts it ok and ignored.
fn ignored(s: &crate::playbook::Step, status: Status) -> bool {
    (s.def.ignore_errors && status == Status::Failed) || (s.def.ignore_unreachable && status == Status::Unreachable)
}
