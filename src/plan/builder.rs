//! The DAG builder: each play's tasks per batch and host (steps, `run_once`, notified handlers),
//! the barriers that end batches and plays, and the edges between them (step order, `needs`,
//! reads through `hostvars`). `plan` decides first which hosts each play runs on; this lays out
//! the tasks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};

use super::hosts::{PlayHosts, split_batches};
use super::{IDENT, Task, TaskKind, is_implicit_localhost};
use crate::error::Result;
use crate::playbook::{Action, Play, Playbook, Step};
use crate::site::Site;

/// Identifiers mentioned anywhere in a step (its templates, expressions, template file).
fn identifiers(site: &Site, step: &Step) -> HashSet<String> {
    let mut text = serde_json::to_string(&step.def).unwrap_or_default() + &step.action.text();
    if let Action::Template(t) = &step.action
        && let Some(src) = site.templates.source(&t.src)
    {
        text.push_str(&src);
    }
    IDENT.find_iter(&text).map(|m| m.as_str().to_string()).collect()
}

pub(super) struct Builder<'a> {
    site: &'a Site,
    graph: DiGraph<Task, ()>,
    /// Per playbook, per host: the host's last task in that playbook so far.
    host_end: Vec<HashMap<String, NodeIndex>>,
    play_end: Vec<Vec<NodeIndex>>,
    /// Register name → tasks producing it.
    producers: HashMap<String, Vec<NodeIndex>>,
    /// Fact name → the `set_fact` tasks setting it (read through `hostvars` later in the same
    /// play only: a later play's reader does not wait for them, as plays hand facts on through
    /// their own order).
    fact_producers: HashMap<String, Vec<NodeIndex>>,
    order_only: HashSet<(NodeIndex, NodeIndex)>,
    /// Each step's identifiers (by playbook, play, step), found once: a step's text is the same
    /// for every host it is planned on.
    identifiers: HashMap<(usize, usize, usize), Arc<HashSet<String>>>,
}

impl<'a> Builder<'a> {
    pub(super) fn new(site: &'a Site) -> Self {
        Builder {
            site,
            graph: DiGraph::new(),
            host_end: vec![],
            play_end: vec![],
            producers: HashMap::new(),
            fact_producers: HashMap::new(),
            order_only: HashSet::new(),
            identifiers: HashMap::new(),
        }
    }

    /// Every play of every playbook, in order, on its hosts (`play_hosts`: per playbook, per
    /// play, the hosts inside the limit and those outside it): each play's batches.
    pub(super) fn add_playbooks(
        &mut self,
        playbooks: &[Playbook],
        play_hosts: &PlayHosts,
        used: &HashSet<String>,
    ) -> Result<Vec<Vec<Vec<Vec<String>>>>> {
        let mut all_batches = Vec::new();
        for (pi, hosts_of_plays) in play_hosts.iter().enumerate() {
            self.host_end.push(HashMap::new());
            self.play_end.push(Vec::new());
            let mut pb_batches = Vec::new();
            for (ki, (inside, outside)) in hosts_of_plays.iter().enumerate() {
                let batches = self.add_play(playbooks, pi, ki, inside, outside, used)?;
                pb_batches.push(batches);
            }
            all_batches.push(pb_batches);
        }
        Ok(all_batches)
    }

    /// The DAG and its order-only edges.
    pub(super) fn into_parts(self) -> (DiGraph<Task, ()>, HashSet<(NodeIndex, NodeIndex)>) {
        (self.graph, self.order_only)
    }
}

impl Builder<'_> {
    fn add(&mut self, t: Task, deps: &[NodeIndex]) -> NodeIndex {
        let n = self.graph.add_node(t);
        for d in deps {
            self.graph.add_edge(*d, n, ());
        }
        n
    }

    fn barrier(&mut self, pi: usize, ki: usize, batch: usize, label: String, deps: &[NodeIndex]) -> NodeIndex {
        let t = Task {
            playbook: pi,
            play: ki,
            host: None,
            runs_on: None,
            kind: TaskKind::Barrier,
            read_only: true,
            outside_limit: false,
            run_once: false,
            batch,
            label,
        };
        self.add(t, deps)
    }

    /// What every task of play `ki` waits for before it starts: the `needs` plays (by default
    /// the previous play of the playbook).
    /// A play with `serial` (a rolling change, one batch of the cluster at a time) also waits
    /// for every play of the playbooks named before it: otherwise a host still busy in an
    /// earlier playbook (a server joining) would overlap the rolling change on another.
    fn play_start_deps(&self, pbs: &[Playbook], pi: usize, ki: usize) -> Vec<NodeIndex> {
        let play = &pbs[pi].plays[ki];
        let mut deps = match &play.needs {
            None if ki > 0 => vec![self.play_end[pi][ki - 1]],
            None => vec![],
            Some(names) => names
                .iter()
                .filter_map(|n| pbs[pi].plays.iter().position(|p| &p.name == n))
                .map(|i| self.play_end[pi][i])
                .collect(),
        };
        if !play.serial.is_empty() {
            deps.extend(self.play_end[..pi].iter().flatten().copied());
        }
        deps
    }

    /// The host's end in the previous playbook: playbooks named together run in order per host.
    fn host_prev(&self, pi: usize, host: &str) -> Option<NodeIndex> {
        (0..pi).rev().find_map(|p| self.host_end[p].get(host).copied())
    }

    #[allow(clippy::too_many_arguments)]
    fn add_play(
        &mut self,
        pbs: &[Playbook],
        pi: usize,
        ki: usize,
        inside: &[String],
        outside: &[String],
        used: &HashSet<String>,
    ) -> Result<Vec<Vec<String>>> {
        let pb = &pbs[pi];
        let play = &pb.plays[ki];
        let start = self.play_start_deps(pbs, pi, ki);
        let batches = split_batches(play, inside);
        let mut ends: Vec<NodeIndex> = Vec::new();
        let mut prev_barrier: Option<NodeIndex> = None;
        let notified = notified_handlers(pb, ki);
        for (bi, batch) in batches.iter().enumerate() {
            let mut deps = start.clone();
            deps.extend(prev_barrier);
            let batch_ends = self.add_batch(pb, pi, ki, bi, batch, &deps, &notified, &mut ends)?;
            if bi + 1 < batches.len() {
                let label = format!("end of batch {} of {}", bi + 1, play.name);
                prev_barrier = Some(self.barrier(pi, ki, bi + 1, label, &batch_ends));
            }
        }
        self.add_outside(pb, pi, ki, outside, used, &start, &mut ends)?;
        ends.extend(prev_barrier);
        if ends.is_empty() {
            ends = start;
        }
        let end = self.barrier(pi, ki, batches.len().max(1), format!("end of play {}", play.name), &ends);
        self.play_end[pi].push(end);
        Ok(batches)
    }

    /// One batch of a play: its steps on each host (a `run_once` step once, on the first), then
    /// the handlers on each host. `start`: what every host of the batch waits for first. Each
    /// host's last task goes into `ends`; the batch's last tasks are returned.
    #[allow(clippy::too_many_arguments)]
    fn add_batch(
        &mut self,
        pb: &Playbook,
        pi: usize,
        ki: usize,
        bi: usize,
        batch: &[String],
        start: &[NodeIndex],
        notified: &[usize],
        ends: &mut Vec<NodeIndex>,
    ) -> Result<Vec<NodeIndex>> {
        let play = &pb.plays[ki];
        let mut cur: HashMap<&str, Vec<NodeIndex>> = HashMap::new();
        for h in batch {
            let mut deps = start.to_vec();
            deps.extend(self.host_prev(pi, h));
            cur.insert(h.as_str(), deps);
        }
        for (si, step) in play.steps.iter().enumerate() {
            if step.def.run_once {
                let first = &batch[0];
                let deps: Vec<NodeIndex> = batch.iter().flat_map(|h| cur[h.as_str()].clone()).collect();
                let n = self.step_task(pb, pi, ki, si, first, bi + 1, false, &deps)?;
                for h in batch {
                    cur.insert(h.as_str(), vec![n]);
                }
                continue;
            }
            for h in batch {
                let deps = cur[h.as_str()].clone();
                let n = self.step_task(pb, pi, ki, si, h, bi + 1, false, &deps)?;
                cur.insert(h.as_str(), vec![n]);
            }
        }
        for h in batch {
            for &hi in notified {
                let deps = cur[h.as_str()].clone();
                let handler = &pb.handlers[hi];
                let runs_on = self.delegate(pb, handler, h)?;
                let t = Task {
                    playbook: pi,
                    play: ki,
                    host: Some(h.clone()),
                    runs_on,
                    kind: TaskKind::Handler(hi),
                    read_only: handler.read_only,
                    outside_limit: false,
                    run_once: false,
                    batch: bi + 1,
                    label: format!("{} (handler)", handler.name),
                };
                let n = self.add(t, &deps);
                cur.insert(h.as_str(), vec![n]);
            }
            let end = cur[h.as_str()].clone();
            ends.extend(end.iter().copied());
            if let Some(last) = end.first() {
                self.host_end[pi].insert(h.clone(), *last);
            }
        }
        Ok(batch.iter().flat_map(|h| cur[h.as_str()].clone()).collect())
    }

    /// Read-only steps on hosts outside the limit, only where an in-limit task uses their
    /// result, together with the read-only steps before them (their waits and checks).
    #[allow(clippy::too_many_arguments)]
    fn add_outside(
        &mut self,
        pb: &Playbook,
        pi: usize,
        ki: usize,
        outside: &[String],
        used: &HashSet<String>,
        start: &[NodeIndex],
        ends: &mut Vec<NodeIndex>,
    ) -> Result<()> {
        let play = &pb.plays[ki];
        let needed: Vec<usize> = play
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.read_only && s.def.register.as_ref().is_some_and(|r| used.contains(r)))
            .map(|(i, _)| i)
            .collect();
        if !needed.is_empty() {
            for h in outside {
                // Per host: the needed steps whose `when` is not already known to be false there.
                let Some(last_needed) =
                    needed.iter().copied().filter(|si| !self.statically_false(pb, play, &play.steps[*si], h)).max()
                else {
                    continue;
                };
                let mut deps = start.to_vec();
                for (si, step) in play.steps.iter().enumerate().take(last_needed + 1) {
                    if !step.read_only || self.statically_false(pb, play, step, h) {
                        continue;
                    }
                    let n = self.step_task(pb, pi, ki, si, h, 1, true, &deps)?;
                    deps = vec![n];
                }
                ends.extend(deps);
            }
        }
        Ok(())
    }

    /// Whether a step's (or its play's) `when` is false on `host` whatever happens at run time:
    /// it reads only inventory, site and playbook variables (no registered result or fact).
    fn statically_false(&self, pb: &Playbook, play: &Play, step: &Step, host: &str) -> bool {
        let runtime_names: HashSet<String> = pb
            .all_steps()
            .flat_map(|s| {
                let mut v: Vec<String> = s.def.register.iter().cloned().collect();
                if let Action::SetFact(m) = &s.action {
                    v.extend(m.keys().cloned());
                }
                if let Action::Setup(_) = &s.action {
                    v.extend(crate::steps::setup::placeholder_vars().keys().cloned());
                }
                if let Action::IncludeVars(a) = &s.action {
                    v.extend(a.may_set().keys().cloned());
                }
                v
            })
            .collect();
        let mut own = play.vars.clone();
        own.extend(step.def.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        let ctx = self.site.context(pb, host, std::sync::Arc::new(own));
        [&play.when, &step.def.when].into_iter().flatten().any(|cond| {
            let exprs = match cond {
                crate::playbook::Condition::Bool(b) => return !b,
                crate::playbook::Condition::Expr(e) => vec![e.clone()],
                crate::playbook::Condition::All(v) => v.clone(),
            };
            exprs.iter().any(|e| {
                let lc = step.def.loop_control.as_ref();
                let loop_names = [Some(crate::playbook::LoopControl::var(lc)), lc.and_then(|l| l.index_var.as_deref())];
                let uses_runtime = IDENT
                    .find_iter(e)
                    .any(|m| runtime_names.contains(m.as_str()) || loop_names.contains(&Some(m.as_str())));
                !uses_runtime && self.site.templates.judge(e, &ctx).is_ok_and(|v| !v.is_true())
            })
        })
    }

    /// Where `step` runs for `host` (`delegate_to`, rendered for the host): `None` on the host
    /// itself.
    fn delegate(&self, pb: &Playbook, step: &crate::playbook::Step, host: &str) -> Result<Option<String>> {
        Ok(match &step.def.delegate_to {
            Some(d) => {
                let target = self.site.render_for_host(pb, host, d).map_err(|e| {
                    step.source(&pb.source).error_at(
                        step.line,
                        step.column,
                        0,
                        format!("delegate_to: {e}"),
                        "in this step",
                        None,
                    )
                })?;
                if !self.site.inventory.hosts.contains_key(&target) && !is_implicit_localhost(&target) {
                    return Err(step.source(&pb.source).error_at(
                        step.line,
                        step.column,
                        0,
                        format!("delegate_to '{target}' is not a host of the inventory"),
                        "in this step",
                        Some(format!("hosts are listed by `copctl hosts all` ({})", self.site.inventory.source.name)),
                    ));
                }
                (target != host).then_some(target)
            }
            None => None,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn step_task(
        &mut self,
        pb: &Playbook,
        pi: usize,
        ki: usize,
        si: usize,
        host: &str,
        batch: usize,
        outside_limit: bool,
        deps: &[NodeIndex],
    ) -> Result<NodeIndex> {
        let step = &pb.plays[ki].steps[si];
        let runs_on = self.delegate(pb, step, host)?;
        let mut all_deps = deps.to_vec();
        // A task that reads another host's registered result (through `hostvars`) waits for the
        // tasks that register it in another play, and does not run if they failed; within its
        // play it waits, order only, for the other hosts' earlier tasks that register or
        // `set_fact` it (Ansible's hosts, in lock-step, have run them). A result of its own
        // host needs no edge: the host's own step order already provides it.
        let site = self.site;
        let ids = self.identifiers.entry((pi, ki, si)).or_insert_with(|| Arc::new(identifiers(site, step))).clone();
        let mut order_only = Vec::new();
        if ids.contains("hostvars") {
            for name in ids.iter() {
                let registers = self.producers.get(name).into_iter().flatten().map(|p| (*p, false));
                let facts = self.fact_producers.get(name).into_iter().flatten().map(|p| (*p, true));
                for (p, fact) in registers.chain(facts) {
                    let pt = &self.graph[p];
                    let same_play = (pt.playbook, pt.play) == (pi, ki);
                    let earlier = if same_play { matches!(pt.kind, TaskKind::Step(x) if x < si) } else { !fact };
                    if pt.host.as_deref() != Some(host) && earlier {
                        all_deps.push(p);
                        if same_play {
                            order_only.push(p);
                        }
                    }
                }
            }
        }
        let t = Task {
            playbook: pi,
            play: ki,
            host: Some(host.to_string()),
            runs_on,
            kind: TaskKind::Step(si),
            read_only: step.read_only,
            outside_limit,
            run_once: step.def.run_once,
            batch,
            label: step.name.clone(),
        };
        let n = self.add(t, &all_deps);
        self.order_only.extend(order_only.into_iter().map(|p| (p, n)));
        if !self.statically_false(pb, &pb.plays[ki], step, host) {
            if let crate::playbook::Action::SetFact(a) = &step.action {
                for k in a.keys() {
                    self.fact_producers.entry(k.clone()).or_default().push(n);
                }
            }
            if let Some(r) = &step.def.register {
                self.producers.entry(r.clone()).or_default().push(n);
            }
        }
        Ok(n)
    }
}

/// Names each in-limit step uses, to decide which read-only steps outside the limit are needed.
/// Only reads of another host's results (through hostvars) can need a host outside the limit; a
/// host's own registered results come from its own steps.
pub(super) fn hostvars_readers(site: &Site, playbooks: &[Playbook], play_hosts: &PlayHosts) -> HashSet<String> {
    let mut used: HashSet<String> = HashSet::new();
    for (pb, per_play) in playbooks.iter().zip(play_hosts) {
        for (play, (inside, _)) in pb.plays.iter().zip(per_play) {
            if !inside.is_empty() {
                for s in play.steps.iter().chain(pb.handlers.iter()) {
                    let ids = identifiers(site, s);
                    if ids.contains("hostvars") {
                        used.extend(ids);
                    }
                }
            }
        }
    }
    used
}

/// The handlers the play's steps may notify, and those these handlers notify in turn (an
/// Ansible handler may notify handlers after it).
fn notified_handlers(pb: &Playbook, ki: usize) -> Vec<usize> {
    let mut names: HashSet<String> = HashSet::new();
    // After a flush `--tags` may not select, those notified before it wait for this
    // part's end: an Ansible play's parts back to the last unconditional flush.
    let mut k = ki;
    loop {
        let part = &pb.plays[k];
        names.extend(part.steps.iter().flat_map(|s| s.def.notify.iter().flat_map(|n| n.to_vec())));
        if k == 0 || !part.continues || part.flush_tags.is_none() {
            break;
        }
        k -= 1;
    }
    for h in &pb.handlers {
        if names.contains(&h.name) {
            names.extend(h.def.notify.iter().flat_map(|n| n.to_vec()));
        }
    }
    (0..pb.handlers.len()).filter(|i| names.contains(&pb.handlers[*i].name)).collect()
}
