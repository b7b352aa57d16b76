//! The planner: playbooks × hosts → a DAG of tasks (play, step, host). Pure: no I/O, no
//! connection. It owns the ordering rules (per-host step order, `needs` between plays, `serial`
//! batches, `run_once`, handlers) and the `--limit` safety boundary: a task that can change a
//! host is only planned on hosts inside the limit; a `read_only` step runs on a host outside it
//! only when an in-limit task uses what it registers.

mod check;
pub mod logins;
pub mod render;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use indexmap::IndexSet;
use petgraph::graph::{DiGraph, NodeIndex};
use regex::Regex;

use crate::error::{Error, ErrorKind, Result};
use crate::playbook::{Action, Play, Playbook, Step};
use crate::site::Site;

/// What a task does, with the index of what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// The step at this index of the play.
    Step(usize),
    /// The handler at this index of the playbook's handlers.
    Handler(usize),
    /// Marks the end of a play or a batch: everything after it waits for everything before it.
    Barrier,
}

impl TaskKind {
    pub fn is_handler(&self) -> bool {
        matches!(self, TaskKind::Handler(_))
    }
}

#[derive(Debug, Clone)]
pub struct Task {
    pub playbook: usize,
    pub play: usize,
    pub host: Option<String>,
    /// Where the task executes when it differs from `host` (`delegate_to`).
    pub runs_on: Option<String>,
    pub kind: TaskKind,
    pub read_only: bool,
    pub outside_limit: bool,
    pub run_once: bool,
    /// 1-based batch number within the play.
    pub batch: usize,
    pub label: String,
}

/// The planned DAG. Edges point from a dependency to the task that waits for it.
#[derive(Debug)]
pub struct Plan {
    pub playbooks: Vec<Playbook>,
    pub graph: DiGraph<Task, ()>,
    pub limit: Option<String>,
    /// Hosts of each play after the limit, in batches.
    pub batches: Vec<Vec<Vec<Vec<String>>>>,
    pub warnings: Vec<String>,
    /// Edges that only order two tasks (a read through `hostvars` of what another host set
    /// earlier in the same play): the later one runs after, whatever became of the earlier.
    pub order_only: HashSet<(NodeIndex, NodeIndex)>,
    /// Each play batch's magic variables (`run::play_magic`), made once: they name every host
    /// of the play, and building them for each task made a run O(hosts²).
    pub magic: std::sync::Mutex<HashMap<(usize, usize, usize), crate::template::Magic>>,
}

impl Plan {
    pub fn play(&self, t: &Task) -> &Play {
        &self.playbooks[t.playbook].plays[t.play]
    }

    pub fn step(&self, t: &Task) -> Option<&Step> {
        let pb = &self.playbooks[t.playbook];
        match t.kind {
            TaskKind::Step(i) => Some(&pb.plays[t.play].steps[i]),
            TaskKind::Handler(i) => Some(&pb.handlers[i]),
            TaskKind::Barrier => None,
        }
    }

    /// Task ids this task waits for, sorted.
    pub fn depends_on(&self, n: NodeIndex) -> Vec<usize> {
        let mut v: Vec<usize> =
            self.graph.neighbors_directed(n, petgraph::Direction::Incoming).map(|d| d.index()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Tasks that can change a host (what `--limit` guards).
    pub fn mutating_tasks(&self) -> impl Iterator<Item = &Task> {
        self.graph.node_weights().filter(|t| t.kind != TaskKind::Barrier && !t.read_only)
    }
}

static IDENT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").unwrap());

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

struct Builder<'a> {
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

/// Plans `playbooks` on the site's inventory, limited by `limit`.
pub fn plan(site: &Site, mut playbooks: Vec<Playbook>, limit: Option<&str>) -> Result<Plan> {
    let inv = &site.inventory;
    let limit_set: Option<IndexSet<String>> = match limit {
        Some(l) => {
            let hosts = inv.limit_hosts(l)?;
            if hosts.is_empty() {
                return Err(inv.no_match_error("--limit", l));
            }
            Some(hosts.into_iter().collect())
        }
        None => None,
    };
    check_needs_cycles(&playbooks)?;
    // Site conditions first: a wrong combination of settings stops the run before any host.
    for pb in &playbooks {
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
    resolve_serial_templates(site, &mut playbooks)?;
    let mut b = Builder {
        site,
        graph: DiGraph::new(),
        host_end: vec![],
        play_end: vec![],
        producers: HashMap::new(),
        fact_producers: HashMap::new(),
        order_only: HashSet::new(),
        identifiers: HashMap::new(),
    };
    let mut all_batches = Vec::new();
    let mut warnings: Vec<String> = playbooks.iter().flat_map(|p| p.warnings.iter().cloned()).collect();
    // Names each in-limit step uses, to decide which read-only steps outside the limit are needed.
    let mut used: HashSet<String> = HashSet::new();
    let mut play_hosts: Vec<Vec<(Vec<String>, Vec<String>)>> = Vec::new();
    for pb in &playbooks {
        let mut per_play = Vec::new();
        for play in &pb.plays {
            let pattern = site.render_global(pb, &play.vars, &play.hosts).map_err(|e| {
                let needs_var = crate::template::Templates::is_undefined_error(&e);
                let help =
                    needs_var.then(|| "this playbook needs that variable: pass it with -e name=value".to_string());
                let err = play.source(&pb.source).error_at(
                    play.line,
                    1,
                    0,
                    format!("play '{}': hosts: {}", play.name, crate::template::describe_error(&e)),
                    "in this play",
                    help,
                );
                if needs_var { err.with_kind(ErrorKind::NeedsVar) } else { err }
            })?;
            // Ansible reads an empty pattern as `all`: never here (think of node-remove).
            if pattern.trim().is_empty() {
                return Err(play.source(&pb.source).error_at(
                    play.line,
                    1,
                    0,
                    format!("play '{}': hosts: '{}' renders to an empty pattern", play.name, play.hosts),
                    "in this play",
                    Some("an empty pattern would select every host: set the variable (-e name=value)".into()),
                ));
            }
            // Ansible's implicit localhost: a play on `localhost` where the inventory has no such
            // host runs on the bastion (a local connection, the `all` group's variables), and
            // never under a `--limit`, which names inventory hosts only.
            let implicit = is_implicit_localhost(pattern.trim()) && !inv.hosts.contains_key(pattern.trim());
            let full = if implicit {
                vec![pattern.trim().to_string()]
            } else {
                check_pattern_names(site, pb, play, &pattern)?;
                inv.select(&pattern, None)?
            };
            if full.is_empty() {
                warnings.push(format!("{}: play '{}': hosts '{pattern}' matches no host; skipped", pb.name, play.name));
            }
            let inside: Vec<String> = match &limit_set {
                Some(_) if implicit => {
                    warnings.push(format!(
                        "{}: play '{}': hosts '{pattern}' is the bastion itself, which --limit leaves out; skipped",
                        pb.name, play.name
                    ));
                    Vec::new()
                }
                Some(l) => full.iter().filter(|h| l.contains(*h)).cloned().collect(),
                None => full.clone(),
            };
            let full = if implicit && limit_set.is_some() { Vec::new() } else { full };
            // Only reads of another host's results (through hostvars) can need a host outside
            // the limit; a host's own registered results come from its own steps.
            if !inside.is_empty() {
                for s in play.steps.iter().chain(pb.handlers.iter()) {
                    let ids = identifiers(site, s);
                    if ids.contains("hostvars") {
                        used.extend(ids);
                    }
                }
            }
            let outside: Vec<String> = full.into_iter().filter(|h| !inside.contains(h)).collect();
            per_play.push((inside, outside));
        }
        play_hosts.push(per_play);
    }
    for (pi, hosts_of_plays) in play_hosts.iter().enumerate() {
        b.host_end.push(HashMap::new());
        b.play_end.push(Vec::new());
        let mut pb_batches = Vec::new();
        for (ki, (inside, outside)) in hosts_of_plays.iter().enumerate() {
            let batches = b.add_play(&playbooks, pi, ki, inside, outside, &used)?;
            pb_batches.push(batches);
        }
        all_batches.push(pb_batches);
    }
    // What Ansible decides from its hosts' lock-step, where there is more than one host to move.
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
    if limit.is_some() && b.graph.node_weights().all(|t| t.kind == TaskKind::Barrier || t.outside_limit) {
        let l = limit.unwrap_or_default();
        let names: Vec<&str> = playbooks.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::with_help(
            format!("--limit '{l}' leaves nothing to do: no play of {} targets those hosts", names.join(", ")),
            "check the play's hosts: patterns (copctl plan without --limit shows them)",
        )
        .with_kind(ErrorKind::NothingToDo));
    }
    let planned: IndexSet<String> = b.graph.node_weights().filter_map(|t| t.host.clone()).collect();
    warnings.extend(site.inventory.var_conflicts(&planned));
    let mut plan = Plan {
        playbooks,
        graph: b.graph,
        limit: limit.map(str::to_string),
        batches: all_batches,
        warnings,
        order_only: b.order_only,
        magic: Default::default(),
    };
    check::check_load_time(site, &plan)?;
    let ungathered = check::ungathered_facts(site, &plan);
    plan.warnings.extend(ungathered);
    check::check_templates(site, &plan)?;
    Ok(plan)
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
        // The handlers the play's steps may notify, and those these handlers notify in turn
        // (an Ansible handler may notify handlers after it).
        let notified: Vec<usize> = {
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
        };
        for (bi, batch) in batches.iter().enumerate() {
            let mut cur: HashMap<&str, Vec<NodeIndex>> = HashMap::new();
            for h in batch {
                let mut deps = start.clone();
                deps.extend(prev_barrier);
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
                for &hi in &notified {
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
            if bi + 1 < batches.len() {
                let deps: Vec<NodeIndex> = batch.iter().flat_map(|h| cur[h.as_str()].clone()).collect();
                let label = format!("end of batch {} of {}", bi + 1, play.name);
                prev_barrier = Some(self.barrier(pi, ki, bi + 1, label, &deps));
            }
        }
        // Read-only steps on hosts outside the limit, only where an in-limit task uses their
        // result, together with the read-only steps before them (their waits and checks).
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
                let mut deps = start.clone();
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
        ends.extend(prev_barrier);
        if ends.is_empty() {
            ends = start;
        }
        let end = self.barrier(pi, ki, batches.len().max(1), format!("end of play {}", play.name), &ends);
        self.play_end[pi].push(end);
        Ok(batches)
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

pub use crate::inventory::is_implicit_localhost;

static SUBSCRIPTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(.+)\[[^\]]*\]$").unwrap());

/// Every plain name of a play's pattern is a group or a host of the inventory: a typo
/// (`-e target_group=worker`) would otherwise plan nothing and "succeed". Globs and `~regex`
/// may match nothing; an existing group may be empty.
fn check_pattern_names(site: &Site, pb: &Playbook, play: &Play, pattern: &str) -> Result<()> {
    let inv = &site.inventory;
    for part in crate::inventory::pattern::split(pattern) {
        let bare = part.trim_start_matches(['&', '!']);
        if bare.starts_with('~') || bare.starts_with('@') {
            continue;
        }
        let name = SUBSCRIPTED.captures(bare).map(|c| c[1].to_string()).unwrap_or_else(|| bare.to_string());
        if name.contains(['*', '?', '[']) || inv.groups.contains_key(&name) || inv.hosts.contains_key(&name) {
            continue;
        }
        let close = inv.close_names(&name);
        let help = if close.is_empty() {
            let groups: Vec<&str> = inv.groups.keys().map(String::as_str).take(12).collect();
            format!("groups in {}: {}", inv.source.name, groups.join(", "))
        } else {
            format!("did you mean: {}?", close.join(", "))
        };
        return Err(play.source(&pb.source).error_at(
            play.line,
            1,
            0,
            format!("play '{}': hosts '{pattern}': '{name}' is no group or host of {}", play.name, inv.source.name),
            "in this play",
            Some(help),
        ));
    }
    Ok(())
}

/// `serial: "{{ worker_batch }}"`: rendered with the site's variables (as `hosts:`), each must
/// give a count or a percentage.
fn resolve_serial_templates(site: &Site, playbooks: &mut [Playbook]) -> Result<()> {
    for pb in playbooks.iter_mut() {
        let mut resolved = Vec::new();
        for (ki, play) in pb.plays.iter().enumerate() {
            for (k, t) in &play.serial_templates {
                let at = |msg: String, help: Option<String>| {
                    play.source(&pb.source).error_at(
                        play.line,
                        1,
                        0,
                        format!("play '{}': serial: {msg}", play.name),
                        "in this play",
                        help,
                    )
                };
                let text = site.render_global(pb, &play.vars, t).map_err(|e| {
                    let needs_var = crate::template::Templates::is_undefined_error(&e);
                    let err = at(
                        crate::template::describe_error(&e),
                        needs_var.then(|| "this playbook needs that variable: pass it with -e name=value".into()),
                    );
                    if needs_var { err.with_kind(ErrorKind::NeedsVar) } else { err }
                })?;
                let Some(b) = crate::playbook::parse_batch(&text) else {
                    return Err(at(
                        format!("'{t}' renders to '{text}', neither a count of at least 1 nor a percentage"),
                        Some(
                            "set the variable it uses to a number of hosts (-e name=2) or a percentage (-e name=30%)"
                                .into(),
                        ),
                    ));
                };
                resolved.push((ki, *k, b));
            }
        }
        for (ki, k, b) in resolved {
            pb.plays[ki].serial[k] = b;
        }
    }
    Ok(())
}

/// `serial` batches over the play's hosts; the last size repeats.
pub fn split_batches(play: &Play, hosts: &[String]) -> Vec<Vec<String>> {
    if hosts.is_empty() {
        return vec![];
    }
    if play.serial.is_empty() {
        return vec![hosts.to_vec()];
    }
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < hosts.len() {
        let rule = play.serial[k.min(play.serial.len() - 1)];
        let n = rule.size(hosts.len()).min(hosts.len() - i);
        out.push(hosts[i..i + n].to_vec());
        i += n;
        k += 1;
    }
    out
}

/// A `needs` cycle (including the implicit "after the previous play") is an error naming it.
fn check_needs_cycles(pbs: &[Playbook]) -> Result<()> {
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

/// Hosts of the inventory that `plan` would change, for the user-facing checks.
pub fn changed_hosts(plan: &Plan) -> Vec<String> {
    let mut out: IndexSet<String> = IndexSet::new();
    for t in plan.mutating_tasks() {
        if let Some(h) = &t.host {
            out.insert(h.clone());
        }
    }
    out.into_iter().collect()
}
