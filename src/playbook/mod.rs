//! Playbooks: the YAML model (plays, steps, handlers), loaded from the binary's embedded
//! `playbooks/` or from a site's override directory, and validated before anything runs.
//! Layering: above `steps` (a step's action is one of its kinds, with that kind's arguments),
//! below `plan` and `run`; it never imports either.

pub mod ansible;
mod manual_scripts;
pub mod step;

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::error::{Error, Result, Source};
use crate::inventory::Vars;
pub use step::{Action, Condition, LoopControl, OneOrMany, StepDef};

static EMBEDDED: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/playbooks");

/// `serial:` entries: a host count or a percentage of the play's hosts (either may be a template,
/// `"{{ worker_batch }}"`, resolved when planning).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SerialItem {
    Count(u64),
    Percent(String),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SerialDef {
    One(SerialItem),
    Many(Vec<SerialItem>),
}

/// A batch size rule, resolved against the number of hosts when planning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Batch {
    Count(usize),
    Percent(f64),
}

impl Batch {
    /// Hosts in a batch of this rule for a play of `total` hosts (at least one).
    pub fn size(self, total: usize) -> usize {
        match self {
            Batch::Count(n) => n.max(1),
            Batch::Percent(p) => (((total as f64) * p / 100.0) as usize).max(1),
        }
    }
}

/// A condition on the site that must hold before anything runs (checked at plan time).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Require {
    pub that: String,
    pub msg: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlaybookDef {
    description: Option<String>,
    #[serde(default)]
    vars: IndexMap<String, Value>,
    #[serde(default)]
    require: Vec<Spanned<Require>>,
    #[serde(default)]
    requires_groups: IndexMap<String, Spanned<String>>,
    plays: Vec<Spanned<PlayDef>>,
    #[serde(default)]
    handlers: Vec<Spanned<StepDef>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlayDef {
    name: String,
    hosts: String,
    needs: Option<Vec<String>>,
    serial: Option<SerialDef>,
    max_fail: Option<SerialItem>,
    #[serde(default)]
    any_errors_fatal: bool,
    throttle: Option<usize>,
    tags: Option<OneOrMany<String>>,
    when: Option<Condition>,
    #[serde(default)]
    vars: IndexMap<String, Value>,
    r#become: Option<bool>,
    steps: Vec<Spanned<StepDef>>,
}

/// A validated step: its common fields and its one action.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub def: StepDef,
    pub action: Action,
    pub read_only: bool,
    pub line: usize,
    pub column: usize,
    /// The Ansible blocks that enclose the step, outermost first (empty for native steps): the
    /// engine runs a block's `rescue` and `always` parts from them.
    pub blocks: Vec<Enclosing>,
    /// The file the step is written in when not the playbook's own (an Ansible task file or
    /// role): `line` and `column` are in it.
    pub file: Option<Source>,
    /// The tags of each Ansible `include_tasks`/`include_role` that brings the step in (with
    /// what they inherit): `--tags`/`--skip-tags` must select each of them as well as the step,
    /// as Ansible filters an include before it reads the included tasks.
    pub tag_gates: Vec<Vec<String>>,
    /// The Ansible dynamic include (`include_tasks`, `include_role`) this step stands for in
    /// the recap, numbered once per playbook load.
    pub include: Option<usize>,
    /// The dynamic includes that bring the step in: where one of them was skipped on a host,
    /// the step is passed over there unseen and uncounted, as Ansible never reads the file.
    pub within: Vec<usize>,
    /// A step that only decides whether the steps `within` it run on a host (which of the
    /// files an `include_tasks` named from a host's variables picks): never reported or
    /// counted unless it fails, as Ansible reads only the file it picks.
    pub gate: bool,
    /// An Ansible `meta: flush_handlers` inside a block: where it stands, the front-end puts a
    /// copy of each of the play's handlers (`Handler`: its name), which runs on a host only
    /// where that handler is notified and then is no longer (so a failing handler is the
    /// block's to rescue, as in Ansible).
    pub flush: Option<FlushAt>,
    /// Where what Ansible does depends on its hosts moving in lock-step (`any_errors_fatal`, or
    /// a `run_once` step, in a block with rescue or always): the problem and its help. With one
    /// host there is no lock-step to copy; the plan refuses it where a batch has more.
    pub lockstep: Option<(String, String)>,
    /// The Ansible module the step was written as where copctl runs it as another kind
    /// (`fail` as an assert): `ansible_failed_task.action` says it.
    pub module: Option<String>,
}

impl Step {
    /// The file `line` and `column` point into: this step's own, else the playbook's.
    pub fn source<'a>(&'a self, playbook: &'a Source) -> &'a Source {
        self.file.as_ref().unwrap_or(playbook)
    }
}

/// `Step::module` of an Ansible `meta: clear_host_errors`: where a host's failure is pending in
/// an always part, it is no longer: the host goes on after the block.
pub const CLEAR_HOST_ERRORS: &str = "meta: clear_host_errors";

/// `Step::module` of an Ansible `meta: end_host` (and an unconditional `meta: end_play`): the
/// host runs nothing more of the play, its notified handlers included, and is not failed.
pub const END_HOST: &str = "meta: end_host";

/// A `meta: flush_handlers` inside a block (`Step::flush`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushAt {
    /// Where it is written, until the play's handlers are known.
    Point,
    /// A copy of the handler of this name, run there where it is notified.
    Handler(String),
}

/// Which part of an Ansible block holds a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Block,
    Rescue,
    Always,
}

/// One block enclosing a step: the block (numbered once per playbook load) and the part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enclosing {
    pub id: usize,
    pub part: Part,
}

#[derive(Debug, Clone)]
pub struct Play {
    pub name: String,
    pub hosts: String,
    /// Plays that must finish before this one starts. `None`: the previous play of the playbook.
    pub needs: Option<Vec<String>>,
    pub serial: Vec<Batch>,
    /// `serial` entries written as templates (index into `serial`, text): the planner renders
    /// them with the site's variables and puts the batch rule in their place.
    pub serial_templates: Vec<(usize, String)>,
    /// Failed hosts allowed per batch, as a percentage (must be exceeded to abort).
    pub max_fail: Option<Batch>,
    pub any_errors_fatal: bool,
    pub throttle: Option<usize>,
    pub tags: Vec<String>,
    pub when: Option<Condition>,
    pub vars: Vars,
    pub r#become: Option<bool>,
    pub steps: Vec<Step>,
    pub line: usize,
    /// The file the play is written in when not the playbook's own (an Ansible playbook
    /// brought in by import_playbook): `line` is in it.
    pub file: Option<Source>,
    /// The rest of the play before it (an Ansible play split where its handlers run): when that
    /// one stops, this one stops with it without a word, as one Ansible play would.
    pub continues: bool,
    /// Ansible's `force_handlers` play keyword: over `--force-handlers` when set.
    pub force_handlers: Option<bool>,
    /// This part of a play starts after an explicit `meta: flush_handlers`: the handlers
    /// notified before it run there only where `--tags` selects these tags (the flush's own,
    /// with its role's); elsewhere they wait for the next flush.
    pub flush_tags: Option<Vec<String>>,
    /// Ansible's `remote_user` play keyword: the login on the play's hosts that set no
    /// `ansible_user` (over `-u` and ansible.cfg, as Ansible ranks keywords).
    pub remote_user: Option<String>,
}

impl Play {
    /// The file `line` points into: this play's own, else the playbook's.
    pub fn source<'a>(&'a self, playbook: &'a Source) -> &'a Source {
        self.file.as_ref().unwrap_or(playbook)
    }
}

#[derive(Debug, Clone)]
pub struct Playbook {
    /// The name it is run by (`rke2-install`).
    pub name: String,
    pub source: Source,
    pub description: Option<String>,
    pub vars: Vars,
    /// Site conditions, with their line.
    pub require: Vec<(Require, usize)>,
    /// Inventory groups the playbook is written for (`requires_groups: {cluster: "role"}`):
    /// group, its role, line. A missing one is an error, never a play that matches no host.
    pub requires_groups: Vec<(String, String, usize)>,
    pub plays: Vec<Play>,
    pub handlers: Vec<Step>,
    /// Templates of an Ansible playbook rendered when it was loaded (a role's name from the
    /// play's vars): the plan refuses a run that could give them another value.
    pub load_time: Vec<ansible::LoadTime>,
    /// What loading found that only matters on some hosts (a file an include may pick that
    /// copctl cannot run): `validate` and `plan` print it.
    pub warnings: Vec<String>,
    /// Variables read from vault-encrypted files (an Ansible play's `vars_files`): secrets.
    pub secret_vars: Vec<String>,
    /// Where an Ansible playbook's own Python plugins may be (`filter_plugins/`,
    /// `test_plugins/`, `lookup_plugins/` in each): its directory, an imported playbook's, each
    /// role's.
    pub plugin_dirs: Vec<PathBuf>,
}

/// Where playbooks come from: an override directory first, then the embedded ones.
#[derive(Debug, Clone, Default)]
pub struct PlaybookSource {
    pub override_dir: Option<PathBuf>,
    /// The site's inventory: an Ansible playbook's include named by a host variable reads the
    /// files its hosts' values name.
    pub inventory: Option<std::sync::Arc<crate::inventory::Inventory>>,
    /// The command's vault secrets, for an Ansible playbook's vault-encrypted `vars_files`.
    pub vault: Option<std::sync::Arc<crate::vault::Vault>>,
}

impl PlaybookSource {
    /// Names of all playbooks available (embedded and overrides), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = EMBEDDED.files().filter_map(|f| yaml_stem(f.path())).collect();
        if let Some(dir) = &self.override_dir
            && let Ok(rd) = std::fs::read_dir(dir)
        {
            names.extend(rd.flatten().filter_map(|e| yaml_stem(&e.path())));
        }
        names.sort();
        names.dedup();
        names
    }

    /// The text of `rel` under the playbook directory (a playbook or a step list): the override
    /// directory's file, else the embedded one.
    pub fn file_text(&self, rel: &str) -> Option<String> {
        if let Some(dir) = &self.override_dir
            && let Ok(text) = std::fs::read_to_string(dir.join(rel))
        {
            return Some(text);
        }
        EMBEDDED.get_file(rel).and_then(|f| f.contents_utf8()).map(str::to_string)
    }

    /// Loads `name` (a playbook name, or a path to a YAML file).
    pub fn load(&self, name: &str) -> Result<Playbook> {
        // The manual's numbered scripts name built-in playbooks, never files to read.
        if let Some(b) = manual_scripts::playbook(name) {
            eprintln!("note: '{name}' is the manual's script for the built-in playbook '{b}': running '{b}'");
            return self.load(b);
        }
        let as_path = Path::new(name);
        // An Ansible playbook may be written as JSON (a YAML flow list), as Ansible reads it.
        let json = name.ends_with(".json");
        if name.contains('/') || name.ends_with(".yaml") || name.ends_with(".yml") || json {
            let stem = yaml_stem(as_path)
                .or_else(|| json.then(|| as_path.file_stem().map(|s| s.to_string_lossy().into_owned())).flatten())
                .unwrap_or_else(|| name.to_string());
            let builtin = self.manual_alias(&stem);
            if as_path.is_file() {
                let source = crate::error::read_source(as_path)?;
                let ansible_like = ansible::is_list_of_plays(&source.text);
                let dir = as_path.parent().map(Path::to_path_buf).unwrap_or_default();
                if ansible_like {
                    // An Ansible playbook (a list of plays): run as the operator gave it, through
                    // the front-end; one the manual names has a built-in version, said once.
                    if let Some(b) = &builtin {
                        eprintln!(
                            "note: {name} is an Ansible playbook, run as written; copctl's own version of it is the built-in playbook '{b}': copctl run {b}"
                        );
                    }
                    let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
                    return ansible::parse(&stem, source, &dir, self.inventory.clone(), self.vault.clone());
                }
                return Playbook::parse_with(&stem, source, &|p| self.step_list(Some(&dir), p));
            }
            return match builtin {
                Some(b) => {
                    if b == stem {
                        eprintln!("note: no file {name} here: running the built-in playbook '{b}'");
                    } else {
                        eprintln!(
                            "note: no file {name} here; it is the manual's name of the built-in playbook '{b}': running '{b}'"
                        );
                    }
                    self.load(&b)
                }
                None => Err(Error::with_help(
                    format!("no playbook file {name}"),
                    format!("give the path of a copctl playbook, or a built-in name: {}", self.names().join(", ")),
                )),
            };
        }
        if let Some(dir) = &self.override_dir {
            for ext in ["yaml", "yml"] {
                let p = dir.join(format!("{name}.{ext}"));
                if p.is_file() {
                    let source = crate::error::read_source(&p)?;
                    // A site's Ansible playbook kept among its copctl ones runs by its name too.
                    if ansible::is_list_of_plays(&source.text) {
                        return ansible::parse(name, source, dir, self.inventory.clone(), self.vault.clone());
                    }
                    return Playbook::parse_with(name, source, &|p| self.step_list(None, p));
                }
            }
        }
        for ext in ["yaml", "yml"] {
            if let Some(f) = EMBEDDED.get_file(format!("{name}.{ext}")) {
                let text = f.contents_utf8().expect("embedded playbooks are UTF-8");
                let source = Source::new(format!("playbooks/{name}.{ext}"), text);
                return Playbook::parse_with(name, source, &|p| self.step_list(None, p));
            }
        }
        if let Some(b) = self.manual_alias(name) {
            eprintln!("note: '{name}' is the manual's name of the built-in playbook '{b}': running '{b}'");
            return self.load(&b);
        }
        let names = self.names();
        let close = crate::text::closest::closest(name, &names, 5);
        let help = if close.is_empty() {
            format!("available playbooks: {}", names.join(", "))
        } else {
            format!("did you mean {}?", close.join(", "))
        };
        Err(Error::with_help(format!("no playbook named '{name}'"), help))
    }

    /// The built-in playbook the operators' manual calls `stem`: its playbooks are named
    /// `openmaru-cop-<name>.yaml`, and its rolling restart `rke2-rolling-restart`.
    fn manual_alias(&self, stem: &str) -> Option<String> {
        let names = self.names();
        let short = stem.strip_prefix("openmaru-cop-").unwrap_or(stem);
        [short, short.strip_prefix("rke2-").unwrap_or(short)]
            .into_iter()
            .find(|n| names.iter().any(|b| b == n))
            .map(str::to_string)
    }
}

impl PlaybookSource {
    /// A step list named by `import_steps:` (a path relative to the playbooks directory): next to
    /// a playbook loaded by path, in the override directory, then the embedded ones.
    fn step_list(&self, beside: Option<&Path>, rel: &str) -> Result<Option<Source>> {
        for dir in [beside, self.override_dir.as_deref()].into_iter().flatten() {
            let p = dir.join(rel);
            if p.is_file() {
                return crate::error::read_source(&p).map(Some);
            }
        }
        Ok(embedded_step_list(rel))
    }
}

fn embedded_step_list(rel: &str) -> Option<Source> {
    let f = EMBEDDED.get_file(rel)?;
    Some(Source::new(format!("playbooks/{rel}"), f.contents_utf8().expect("embedded playbooks are UTF-8")))
}

fn yaml_stem(p: &Path) -> Option<String> {
    let ext = p.extension()?.to_str()?;
    if ext != "yaml" && ext != "yml" {
        return None;
    }
    Some(p.file_stem()?.to_str()?.to_string())
}

fn parse_percent(s: &str) -> Option<f64> {
    let n: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (n > 0.0 && n <= 100.0).then_some(n)
}

/// Finds the step list an `import_steps:` names.
type StepLists<'a> = &'a dyn Fn(&str) -> Result<Option<Source>>;

impl Playbook {
    /// Parses a playbook whose `import_steps:` come from the embedded step lists.
    pub fn parse(name: &str, source: Source) -> Result<Playbook> {
        Playbook::parse_with(name, source, &|p| Ok(embedded_step_list(p)))
    }

    pub fn parse_with(name: &str, source: Source, step_lists: StepLists) -> Result<Playbook> {
        let def: PlaybookDef = crate::yaml::parse(&source)?;
        let at = |loc: &serde_saphyr::Location| (loc.line() as usize, loc.column() as usize);
        let mut handlers = Vec::new();
        for h in def.handlers {
            let (line, col) = at(&h.referenced);
            if h.value.import_steps.is_some() {
                let help = "import the steps into a play; a handler is one step".to_string();
                return Err(source.error_at(line, col, 0, "a handler cannot import steps", "in handlers", Some(help)));
            }
            handlers.push(validate_step(&source, h.value, line, col, true)?);
        }
        let mut plays: Vec<Play> = Vec::new();
        for p in def.plays {
            let (line, col) = at(&p.referenced);
            let d = p.value;
            if plays.iter().any(|x| x.name == d.name) {
                return Err(source.error_at(
                    line,
                    col,
                    0,
                    format!("two plays are named '{}'", d.name),
                    "duplicate",
                    Some("play names are what `needs:` refers to: make them unique".into()),
                ));
            }
            let items = match d.serial {
                None => vec![],
                Some(SerialDef::One(i)) => vec![i],
                Some(SerialDef::Many(v)) => v,
            };
            let mut serial = Vec::new();
            let mut serial_templates = Vec::new();
            for (k, i) in items.iter().enumerate() {
                match i {
                    SerialItem::Percent(t) if t.contains("{{") => {
                        serial_templates.push((k, t.clone()));
                        serial.push(Batch::Count(1));
                    }
                    _ => serial.push(batch(&source, line, col, i, "serial")?),
                }
            }
            let max_fail = d.max_fail.as_ref().map(|i| batch(&source, line, col, i, "max_fail")).transpose()?;
            let mut steps = Vec::new();
            for s in d.steps {
                let (sl, sc) = at(&s.referenced);
                if s.value.import_steps.is_some() {
                    steps.extend(import_steps(&source, s.value, sl, sc, step_lists)?);
                } else {
                    steps.push(validate_step(&source, s.value, sl, sc, false)?);
                }
            }
            plays.push(Play {
                name: d.name,
                hosts: d.hosts,
                needs: d.needs,
                serial,
                serial_templates,
                max_fail,
                any_errors_fatal: d.any_errors_fatal,
                throttle: d.throttle,
                tags: d.tags.map(|t| t.to_vec()).unwrap_or_default(),
                when: d.when,
                vars: d.vars.into_iter().collect(),
                r#become: d.r#become,
                steps,
                line,
                file: None,
                continues: false,
                force_handlers: None,
                flush_tags: None,
                remote_user: None,
            });
        }
        let pb = Playbook {
            name: name.to_string(),
            source,
            description: def.description,
            vars: def.vars.into_iter().collect(),
            require: def.require.into_iter().map(|r| (r.value, r.referenced.line() as usize)).collect(),
            requires_groups: def
                .requires_groups
                .into_iter()
                .map(|(g, r)| (g, r.value, r.referenced.line() as usize))
                .collect(),
            plays,
            handlers,
            load_time: Vec::new(),
            warnings: Vec::new(),
            secret_vars: Vec::new(),
            plugin_dirs: Vec::new(),
        };
        pb.check_references()?;
        Ok(pb)
    }

    /// `needs` names plays of this playbook; `notify` names handlers.
    fn check_references(&self) -> Result<()> {
        for play in &self.plays {
            for n in play.needs.iter().flatten() {
                if !self.plays.iter().any(|p| &p.name == n) {
                    let names: Vec<&str> = self.plays.iter().map(|p| p.name.as_str()).collect();
                    return Err(self.source.error_at(
                        play.line,
                        1,
                        0,
                        format!("play '{}' needs '{n}', which is not a play of {}", play.name, self.name),
                        "unknown play",
                        Some(format!("plays here: {}", names.join(", "))),
                    ));
                }
            }
            for step in &play.steps {
                for n in step.def.notify.iter().flat_map(|n| n.to_vec()) {
                    if !self.handlers.iter().any(|h| h.name == n) {
                        return Err(self.source.error_at(
                            step.line,
                            step.column,
                            0,
                            format!("step '{}' notifies '{n}', which is not a handler", step.name),
                            "unknown handler",
                            Some("add it under `handlers:` or fix the name".into()),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// All steps and handlers, for checks that look at every one.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.plays.iter().flat_map(|p| p.steps.iter()).chain(self.handlers.iter())
    }
}

/// A `serial` entry as rendered from its template (`"2"`, `"30%"`); None when it is neither.
pub fn parse_batch(text: &str) -> Option<Batch> {
    match text.trim().parse::<u64>() {
        Ok(n) if n > 0 => Some(Batch::Count(n as usize)),
        Ok(_) => None,
        Err(_) => parse_percent(text).map(Batch::Percent),
    }
}

fn batch(source: &Source, line: usize, col: usize, item: &SerialItem, field: &str) -> Result<Batch> {
    match item {
        SerialItem::Count(n) => Ok(Batch::Count(*n as usize)),
        SerialItem::Percent(s) => parse_percent(s).map(Batch::Percent).ok_or_else(|| {
            source.error_at(
                line,
                col,
                0,
                format!("{field}: '{s}' is neither a count nor a percentage"),
                "in this play",
                Some(format!("write {field}: 1, {field}: \"30%\" or a list of those")),
            )
        }),
    }
}

/// `- import_steps: FILE` (with an optional `when:`): the steps of FILE, a YAML list of steps,
/// in its place, each also under that `when` (Ansible's `import_tasks`). Errors in the file are
/// located in it; the imported steps are located at the import (where plan-time errors point).
fn import_steps(source: &Source, def: StepDef, line: usize, col: usize, step_lists: StepLists) -> Result<Vec<Step>> {
    let rel = def.import_steps.clone().unwrap_or_default();
    let when = def.when.clone();
    if (StepDef { import_steps: None, when: None, ..def }) != StepDef::default() {
        return Err(source.error_at(
            line,
            col,
            0,
            format!("import_steps: {rel} takes no other field than `when`"),
            "in this import",
            Some("set the other fields on the imported steps themselves".into()),
        ));
    }
    let Some(list) = step_lists(&rel)? else {
        return Err(source.error_at(
            line,
            col,
            0,
            format!("step list '{rel}' not found"),
            "imported here",
            Some("step lists are looked up in the site's playbooks/ directory, then the built-in ones".into()),
        ));
    };
    let defs: Vec<Spanned<StepDef>> = crate::yaml::parse(&list)?;
    let mut steps = Vec::new();
    for s in defs {
        let (il, ic) = (s.referenced.line() as usize, s.referenced.column() as usize);
        if s.value.import_steps.is_some() {
            return Err(list.error_at(
                il,
                ic,
                0,
                "a step list cannot import another",
                "nested import",
                Some("import both lists from the playbook".into()),
            ));
        }
        let mut step = validate_step(&list, s.value, il, ic, false)?;
        step.def.when = and_conditions(when.clone(), step.def.when.take());
        (step.line, step.column) = (line, col);
        steps.push(step);
    }
    Ok(steps)
}

/// Both conditions: the import's first.
pub(crate) fn and_conditions(outer: Option<Condition>, inner: Option<Condition>) -> Option<Condition> {
    let exprs = |c: Condition| match c {
        Condition::Bool(true) => Ok(vec![]),
        Condition::Bool(false) => Err(()),
        Condition::Expr(e) => Ok(vec![e]),
        Condition::All(v) => Ok(v),
    };
    let (Some(o), Some(i)) = (outer.clone(), inner.clone()) else { return outer.or(inner) };
    match (exprs(o), exprs(i)) {
        (Ok(mut a), Ok(b)) => {
            a.extend(b);
            Some(Condition::All(a))
        }
        _ => Some(Condition::Bool(false)),
    }
}

fn validate_step(source: &Source, mut def: StepDef, line: usize, col: usize, handler: bool) -> Result<Step> {
    let action = def.take_action().map_err(|found| {
        let (msg, label) = if found.is_empty() {
            ("this step has no action".to_string(), "no action")
        } else {
            (format!("this step has {} actions: {}", found.len(), found.join(", ")), "one action per step")
        };
        source.error_at(
            line,
            col,
            0,
            msg,
            label,
            Some(format!("a step has exactly one of: {}", step::KINDS.join(", "))),
        )
    })?;
    let name = match &def.name {
        Some(n) => n.clone(),
        None if handler => {
            return Err(source.error_at(
                line,
                col,
                0,
                "a handler needs a name",
                "unnamed handler",
                Some("steps notify handlers by name: add `name:`".into()),
            ));
        }
        None => action.kind().to_string(),
    };
    let read_only = def.read_only.unwrap_or_else(|| action.inherently_read_only());
    if def.read_only == Some(true) && !action.inherently_read_only() && !action.may_be_read_only() {
        return Err(source.error_at(line, col, 0, format!("a {} step cannot be read_only", action.kind()), "changes the host", Some(
            "only command, shell and kube steps can be declared read_only (and slurp, fetch, wait_for, assert, debug, set_fact are already)".into(),
        )));
    }
    // A literal mode that is not octal is refused here, before any host is touched; a templated
    // one is checked once rendered, when the step runs.
    if let Some(m) = action.mode()
        && !m.is_template()
        && let Err(e) = m.bits()
    {
        return Err(source.error_at(
            line,
            col,
            0,
            e.to_string(),
            "in this step",
            Some(
                "write the mode as octal digits, e.g. mode: \"0644\" (symbolic modes like u=rw are not supported)"
                    .into(),
            ),
        ));
    }
    Ok(Step {
        name,
        def,
        action,
        read_only,
        line,
        column: col,
        blocks: Vec::new(),
        file: None,
        tag_gates: Vec::new(),
        include: None,
        within: Vec::new(),
        gate: false,
        flush: None,
        lockstep: None,
        module: None,
    })
}
