//! The run: executes the planned DAG. A task starts the moment its dependencies are done (no
//! lock-step across hosts), at most `--forks` at once (and a play's or a step's `throttle`). A failed task
//! takes its host out of the rest of the run and blocks the tasks of other hosts that wait for
//! it; unrelated hosts go on. `max_fail` / `any_errors_fatal` abort a play per batch. Ctrl-C stops
//! new tasks (running ones finish; a second Ctrl-C abandons them), and the recap and last-failed
//! are written all the same.
//!
//! Here: the request and the engine's state. schedule.rs runs the loop, gate.rs decides whether a
//! ready task runs, task.rs (with loops.rs, attempts.rs) executes one, outcome.rs records what it
//! did, reporting.rs reports it and the run's end, signals.rs handles interrupts.

mod attempts;
mod gate;
mod loops;
mod outcome;
mod reporting;
mod rescue;
mod schedule;
mod signals;
mod task;

pub use signals::{catch_early_signals, default_signals, load_interruptibly};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use petgraph::Direction;
use petgraph::graph::NodeIndex;

use crate::error::Result;
use crate::plan::{Plan, TaskKind};
use crate::report::{HostRecap, OutputFormat, Reporter, record::RunRecord};
use crate::site::{HostResults, Site};
use crate::steps::Status;
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
    let close = crate::text::closest::closest(name, names.iter().copied(), 5);
    let help = if close.is_empty() {
        format!("the planned steps are: {}", names.join(", "))
    } else {
        format!("did you mean: {}?", close.join(", "))
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
