//! The planner: playbooks × hosts → a DAG of tasks (play, step, host). Pure: no I/O, no
//! connection. It owns the ordering rules (per-host step order, `needs` between plays, `serial`
//! batches, `run_once`, handlers) and the `--limit` safety boundary: a task that can change a
//! host is only planned on hosts inside the limit; a `read_only` step runs on a host outside it
//! only when an in-limit task uses what it registers.

mod builder;
mod check;
pub mod env_keys;
mod hosts;
pub mod logins;
mod magic;
mod refusals;
pub mod render;

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use indexmap::IndexSet;
use petgraph::graph::{DiGraph, NodeIndex};
use regex::Regex;

use crate::error::Result;
use crate::playbook::{Play, Playbook, Step};
use crate::site::Site;

pub use hosts::split_batches;
pub use magic::play_magic;

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
    /// Each play batch's magic variables (`play_magic`), made once: they name every host
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

/// Plans `playbooks` on the site's inventory, limited by `limit`.
pub fn plan(site: &Site, mut playbooks: Vec<Playbook>, limit: Option<&str>) -> Result<Plan> {
    let limit_set = hosts::limit_hosts(&site.inventory, limit)?;
    refusals::check_needs_cycles(&playbooks)?;
    // Site conditions first: a wrong combination of settings stops the run before any host.
    refusals::check_site(site, &playbooks)?;
    hosts::resolve_serial_templates(site, &mut playbooks)?;
    let mut warnings: Vec<String> = playbooks.iter().flat_map(|p| p.warnings.iter().cloned()).collect();
    let play_hosts = hosts::play_hosts(site, &playbooks, limit_set.as_ref(), &mut warnings)?;
    let used = builder::hostvars_readers(site, &playbooks, &play_hosts);
    let mut b = builder::Builder::new(site);
    let all_batches = b.add_playbooks(&playbooks, &play_hosts, &used)?;
    refusals::check_lockstep(&playbooks, &all_batches)?;
    let (graph, order_only) = b.into_parts();
    refusals::check_limit_leaves_work(&graph, &playbooks, limit)?;
    let planned: IndexSet<String> = graph.node_weights().filter_map(|t| t.host.clone()).collect();
    warnings.extend(site.inventory.var_conflicts(&planned));
    let mut plan = Plan {
        playbooks,
        graph,
        limit: limit.map(str::to_string),
        batches: all_batches,
        warnings,
        order_only,
        magic: Default::default(),
    };
    check::check_load_time(site, &plan)?;
    let ungathered = check::ungathered_facts(site, &plan);
    plan.warnings.extend(ungathered);
    check::check_templates(site, &plan)?;
    Ok(plan)
}

pub use crate::inventory::is_implicit_localhost;

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
