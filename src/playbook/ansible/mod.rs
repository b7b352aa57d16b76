//! The Ansible front-end: an Ansible playbook (a YAML list of plays) translated into copctl's own
//! playbook model, so that it runs on the same engine with the same plan, `--limit` boundary and
//! recap. Only what has a native equivalent with the same semantics is translated; anything else
//! (a module, keyword, argument or value) is a problem reported at its file:line:column, and the
//! whole file is read before any is reported, so that `copctl validate` lists every one at once.
//!
//! Files: node.rs the located YAML tree, split.rs Ansible's `k=v` argument lines, task.rs the task
//! keywords, modules.rs the module table, block.rs blocks, include.rs and roles.rs what brings in
//! another file, taskfile.rs reading one. `expand` (here) turns a task-list entry into its steps;
//! the parts it dispatches to call it again for what they hold, so they nest without importing
//! each other. Facts (`gather_facts`) are the native `setup` kind.

mod action;
mod block;
mod chosen;
mod include;
mod known;
pub use known::LoadTime;
mod modules;
pub(crate) mod node;
mod roles;
mod split;
mod task;
mod taskfile;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Batch, Play, Playbook, Step, StepDef, parse_percent};
use crate::error::{Error, Result, Source};
use node::{Key, Kind, Node};

/// Problems found so far, each at its place in the file being read (`source`: the playbook, or
/// the task file or role file the front-end is in, switched by `Front::within`).
pub(crate) struct Problems {
    source: Source,
    errors: Vec<Error>,
    /// `module_defaults` in force where a task is read: module → arguments, outermost first
    /// (the play's, then each enclosing block's, then the task's own).
    module_defaults: Vec<serde_json::Map<String, Value>>,
}

impl Problems {
    fn add(&mut self, line: usize, column: usize, message: String, label: &str, help: Option<String>) {
        self.errors.push(self.source.error_at(line.max(1), column.max(1), 0, message, label, help));
    }

    fn add_len(&mut self, line: usize, column: usize, len: usize, message: String, label: &str, help: Option<String>) {
        self.errors.push(self.source.error_at(line.max(1), column.max(1), len.max(1), message, label, help));
    }

    /// A problem at a step already translated, in the file it was read from (a role's or an
    /// included file, else the one being read).
    fn add_at_step(&mut self, step: &Step, message: String, label: &str, help: &str) {
        let e = step.source(&self.source).error_at(step.line, step.column, 0, message, label, Some(help.into()));
        self.errors.push(e);
    }

    /// A problem with a key, underlining it.
    fn add_key(&mut self, k: &Key, message: String, help: Option<String>) {
        self.add_len(k.line, k.column, k.name.len(), message, "here", help);
    }

    fn count(&self) -> usize {
        self.errors.len()
    }
}

/// What the translation carries along, across the files it reads.
pub(crate) struct Front {
    p: Problems,
    /// The directory of the playbook being read (an imported one's own): its `roles/` and the
    /// paths relative to the playbook are found there.
    dir: PathBuf,
    /// The directory of the playbook given, as given: files are named relative to it.
    top_dir: PathBuf,
    place: Place,
    /// The files being read, outermost first (an include of one of them is a loop).
    reading: Vec<PathBuf>,
    /// ansible.cfg's roles_path (or Ansible's default), read when a role is first looked for.
    roles_path: Option<Vec<PathBuf>>,
    /// The roles' defaults: the playbook's variables, the lowest layer.
    defaults: crate::inventory::Vars,
    /// The roles of the play so far, with their parameters: a role runs once per play. Of one
    /// of the play's `roles:`, where its steps are in theirs.
    roles_seen: Vec<(PathBuf, Value, Option<std::ops::Range<usize>>)>,
    /// Whether the play's `roles:` are being expanded.
    in_play_roles: bool,
    /// The roles being read are the play's (its `roles:`, an `import_role`): their `vars/`
    /// are the play's too (`exported_vars`), as Ansible's public roles' are.
    public_roles: bool,
    /// What the play's public roles' `vars/` files set, for every task of the play.
    exported_vars: serde_json::Map<String, Value>,
    /// The tags of the roles being expanded, outermost first.
    role_tags: Vec<Vec<String>>,
    /// The handlers of the play's roles, before the play's own (Ansible's order).
    role_handlers: Vec<Step>,
    /// Each role handler kept by its name, as its role loaded it (before its play's keywords):
    /// what a later play's load of it is compared with (`runs_alike`).
    role_handlers_kept: Vec<((String, usize), String, Step)>,
    /// Roles being read, outermost first (a dependency on one of them is a loop).
    role_chain: Vec<PathBuf>,
    /// The play's handlers that `listen` to topics: name → topics. A notify names a handler
    /// or a topic (every handler listening to it, in their order).
    /// The handler's name, who it is (`ident`), its topics.
    listening: Vec<(String, (String, usize), Vec<String>)>,
    /// A `meta: flush_handlers` in a role's or included task file was read (its tags, with
    /// those it inherits): the next step made starts a new chunk of the play. Those steps, by
    /// file and line, with the flush's tags.
    flush_pending: Option<Vec<String>>,
    flush_before: Vec<(String, usize, Vec<String>)>,
    /// The tags of the task files being included, outermost first (a flush in them inherits
    /// them).
    include_tags: Vec<Vec<String>>,
    /// The play's handlers that are `meta: noop`: notifying one does nothing.
    noop_handlers: Vec<String>,
    /// The next number for a dynamic include (`Step::include`).
    next_include: usize,
    /// Variables known when the playbook is loaded, innermost last (known.rs): the play's,
    /// an include's or a role's.
    scope: Vec<crate::inventory::Vars>,
    /// The `vars` of the `import_playbook`s being read, over each of their plays' own.
    import_vars: crate::inventory::Vars,
    /// The templates rendered from `scope`, for the plan to check (`Playbook::load_time`).
    load_time: Vec<known::LoadTime>,
    /// `Playbook::warnings`.
    warnings: Vec<String>,
    /// Ansible's filters for those, made when first needed.
    templates: Option<crate::template::Templates>,
    /// The site's inventory, where the playbook is loaded for one: what a variable can be on
    /// its hosts (an include named by a host variable, chosen.rs).
    inventory: Option<std::sync::Arc<crate::inventory::Inventory>>,
    /// The command's vault secrets (vault-encrypted `vars_files`), read when first needed.
    vault: Option<std::sync::Arc<crate::vault::Vault>>,
    /// `Playbook::secret_vars`.
    secret_vars: Vec<String>,
    /// `Playbook::plugin_dirs`.
    plugin_dirs: Vec<PathBuf>,
    /// ansible.cfg's `library` (or Ansible's default), read when a module is first looked for.
    module_path: Option<Vec<PathBuf>>,
}

/// Where the task being read sits.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// Relative includes are looked for here first: the directory of the file being read.
    task_dir: PathBuf,
    /// Copy and template sources are looked for under these (each with `files/` or
    /// `templates/` first): a role's directory, a task file's, the playbook's.
    search: Vec<PathBuf>,
    /// The role the task belongs to.
    role_dir: Option<PathBuf>,
}

impl Front {
    /// Runs `body` reading another file (`source`, at `file`) from `place`: problems are
    /// reported in that file.
    fn within<T>(&mut self, source: Source, file: PathBuf, place: Place, body: impl FnOnce(&mut Front) -> T) -> T {
        let source = std::mem::replace(&mut self.p.source, source);
        let place = std::mem::replace(&mut self.place, place);
        self.reading.push(file);
        let r = body(self);
        self.reading.pop();
        self.place = place;
        self.p.source = source;
        r
    }
}

/// Names in `candidates` close to `name`, best first.
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<(f64, &str)> =
        candidates.iter().map(|c| (strsim::jaro_winkler(name, c), *c)).filter(|(s, _)| *s > 0.8).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v.into_iter().take(3).map(|(_, c)| c).collect()
}

/// Play keywords copctl translates.
const PLAY_KEYWORDS: &[&str] = &[
    "name",
    "roles",
    "hosts",
    "vars",
    "vars_files",
    "tasks",
    "pre_tasks",
    "post_tasks",
    "handlers",
    "serial",
    "max_fail_percentage",
    "any_errors_fatal",
    "become",
    "become_user",
    "become_method",
    "gather_facts",
    "tags",
    "strategy",
    "force_handlers",
    "no_log",
    "remote_user",
    "environment",
    "connection",
    "ignore_errors",
    "ignore_unreachable",
    "check_mode",
    "diff",
    "timeout",
    "throttle",
    "gather_subset",
    "gather_timeout",
    "collections",
    "module_defaults",
];

/// Ansible play keywords not translated yet.
const PLAY_NOT_YET: &[&str] =
    &["vars_prompt", "become_flags", "order", "port", "run_once", "debugger", "fact_path", "when"];

/// Whether `text` is a YAML list (an Ansible playbook), not a mapping (a native one): its first
/// line that is not blank, a comment or a document marker starts a list entry, or a flow list
/// (a playbook written as JSON).
pub fn is_list_of_plays(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && *l != "---" && !l.starts_with("%"))
        .is_some_and(|l| l == "-" || l.starts_with("- ") || l.starts_with('['))
}

/// One entry of a task list as written (a section, a block's part, an included file) → the
/// steps it stands for, in order: a block (block.rs) and an include or role (include.rs) expand
/// to the steps they hold, anything else is one task.
pub(crate) fn expand(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let tags: Vec<String> =
        match node.as_map().and_then(|m| m.iter().find(|(k, _)| k.name == "tags")).map(|(_, v)| v.to_value()) {
            Some(Value::String(t)) => t.split(',').map(|t| t.trim().to_string()).collect(),
            Some(Value::Array(a)) => a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
    if !tags.iter().any(|t| t == "never") {
        return expand_task(f, node, handler, out);
    }
    // A task tagged `never` runs only where `--tags` names it: what copctl cannot run in it
    // is a warning, and the task fails where it is asked to run.
    let (problems, from) = (f.p.count(), out.len());
    let flushes = (f.flush_pending.clone(), f.flush_before.len());
    expand_task(f, node, handler, out);
    if f.p.count() == problems {
        return;
    }
    let errors = f.p.errors.split_off(problems);
    out.truncate(from);
    f.flush_pending = flushes.0;
    f.flush_before.truncate(flushes.1);
    for e in &errors {
        f.warnings
            .push(format!("a task tagged never holds what copctl cannot run (it fails where --tags selects it): {e}"));
    }
    let first = errors.first().map(|e| e.to_string()).unwrap_or_default();
    let name = node
        .as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.name == "name"))
        .and_then(|(_, v)| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "a task tagged never".into());
    let msg = format!("copctl cannot run this task: {first}");
    let def = json!({"name": name, "tags": tags, "ansible": true,
        "assert": {"that": ["false"], "fail_msg": format!("{{% raw %}}{msg}{{% endraw %}}")}});
    let def: StepDef = serde_json::from_value(def).expect("a valid assert step");
    match super::validate_step(&f.p.source, def, node.line, node.column, handler) {
        Ok(s) => out.push(s),
        Err(e) => f.p.errors.push(e),
    }
}

/// `expand` for any task.
fn expand_task(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let rewritten;
    let node = if node.as_map().is_some_and(|m| m.iter().any(|(k, _)| k.name == "action" || k.name == "local_action")) {
        match action::normalize(f, node) {
            Some(n) => {
                rewritten = n;
                &rewritten
            }
            None => return,
        }
    } else {
        node
    };
    if let Some(m) = node.as_map() {
        if m.iter().any(|(k, _)| k.name == "block") {
            return block::block(f, node, handler, out);
        }
        if m.iter().any(|(k, _)| include::KEYS.contains(&k.name.as_str())) {
            return include::include(f, node, handler, out);
        }
    }
    let made = task::task(f, node, handler);
    if let Some(s) = &made
        && let Some(tags) = f.flush_pending.take()
    {
        f.flush_before.push((f.p.source.name.clone(), s.line, tags));
    }
    out.extend(made);
}

/// Parses the Ansible playbook `source` (its directory `dir`) into copctl's model. Every
/// problem of the file, and of the files it brings in, is reported together.
pub fn parse(
    name: &str,
    source: Source,
    dir: &Path,
    inventory: Option<std::sync::Arc<crate::inventory::Inventory>>,
    vault: Option<std::sync::Arc<crate::vault::Vault>>,
) -> Result<Playbook> {
    let mut root: Node = crate::yaml::parse_ansible(&source)?;
    root.keep_short_words(&source.text);
    let file = std::fs::canonicalize(dir.join(Path::new(&source.name).file_name().unwrap_or_default()))
        .unwrap_or_else(|_| PathBuf::from(&source.name));
    let mut f = Front {
        p: Problems { source: source.clone(), errors: Vec::new(), module_defaults: Vec::new() },
        dir: dir.to_path_buf(),
        top_dir: dir.to_path_buf(),
        place: Place { task_dir: dir.to_path_buf(), search: vec![dir.to_path_buf()], role_dir: None },
        reading: vec![file],
        roles_path: None,
        defaults: Default::default(),
        roles_seen: Vec::new(),
        in_play_roles: false,
        public_roles: false,
        exported_vars: Default::default(),
        role_tags: Vec::new(),
        role_handlers: Vec::new(),
        role_handlers_kept: Vec::new(),
        role_chain: Vec::new(),
        listening: Vec::new(),
        flush_pending: None,
        flush_before: Vec::new(),
        include_tags: Vec::new(),
        noop_handlers: Vec::new(),
        next_include: 0,
        scope: Vec::new(),
        import_vars: Default::default(),
        load_time: Vec::new(),
        warnings: Vec::new(),
        templates: None,
        inventory,
        vault,
        secret_vars: Vec::new(),
        plugin_dirs: vec![std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())],
        module_path: None,
    };
    // Ansible's magic `playbook_dir`: the given playbook's directory, absolute.
    if let Ok(d) = std::path::absolute(dir) {
        f.defaults.insert("playbook_dir".into(), Value::String(d.display().to_string()));
    }
    let mut plays: Vec<Play> = Vec::new();
    let mut handlers: Vec<Step> = Vec::new();
    plays_of(&mut f, &root, &mut plays, &mut handlers);
    let Front { p: Problems { errors, .. }, defaults, load_time, warnings, secret_vars, plugin_dirs, .. } = f;
    match errors.len() {
        0 => {}
        1 => return Err(errors.into_iter().next().expect("one")),
        n => {
            return Err(Error::many(
                format!("{}: {n} problems: copctl cannot run this playbook as written", source.name),
                errors,
            ));
        }
    }
    Ok(Playbook {
        name: name.to_string(),
        source,
        description: None,
        vars: defaults,
        require: vec![],
        requires_groups: vec![],
        plays,
        handlers,
        load_time,
        warnings,
        secret_vars,
        plugin_dirs,
    })
}

/// The plays of a playbook file (its tree `root`), `import_playbook` entries expanded in place.
fn plays_of(f: &mut Front, root: &Node, plays: &mut Vec<Play>, handlers: &mut Vec<Step>) {
    match root.as_seq() {
        Some(items) if !items.is_empty() => {
            for item in items {
                let import = item.as_map().and_then(|m| {
                    m.iter().find(|(k, _)| {
                        matches!(
                            k.name.as_str(),
                            "import_playbook"
                                | "ansible.builtin.import_playbook"
                                | "ansible.legacy.import_playbook"
                                | "include_playbook"
                        )
                    })
                });
                if let Some((k, v)) = import {
                    import_playbook(f, item, k, v, plays, handlers);
                } else {
                    // play() puts the play's variables in scope for its tasks.
                    let depth = f.scope.len();
                    let made = play(f, item, plays, handlers);
                    f.scope.truncate(depth);
                    if let Some((ps, hs)) = made {
                        plays.extend(ps);
                        handlers.extend(hs);
                    }
                }
            }
        }
        _ => f.p.add(
            root.line,
            root.column,
            "an Ansible playbook is a list of plays".into(),
            "not a list of plays",
            Some("each play is `- hosts: PATTERN` with its tasks".into()),
        ),
    }
}

/// `import_playbook: FILE` (relative to the importing playbook): its plays in place, as
/// Ansible's playbook_include.py puts them: the entry's `vars` over each play's own, its `tags`
/// added to each play's, its `when` before each task's own (fact gathering's too).
fn import_playbook(f: &mut Front, node: &Node, key: &Key, v: &Node, plays: &mut Vec<Play>, handlers: &mut Vec<Step>) {
    let before = f.p.count();
    if key.name == "include_playbook" {
        f.p.add_key(key, "include_playbook is not Ansible's: write import_playbook".into(), None);
        return;
    }
    let mut vars = crate::inventory::Vars::new();
    let mut tags: Vec<String> = Vec::new();
    let mut when = taskfile::Inherit::default();
    for (k, val) in node.as_map().unwrap_or_default() {
        match k.name.as_str() {
            "name" => {}
            "when" => {
                when.keyword(f, k, val);
            }
            "vars" => match val.to_value() {
                Value::Object(m) => vars.extend(m),
                Value::Null => {}
                _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", val.what()), None),
            },
            "tags" => match val.to_value() {
                Value::String(s) => tags.extend(s.split(',').map(|x| x.trim().to_string())),
                Value::Array(a) if a.iter().all(Value::is_string) => {
                    tags.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)))
                }
                _ => f.p.add_key(k, "tags: a name or a list of names".into(), None),
            },
            _ if k == key => {}
            other => f.p.add_key(
                k,
                format!("'{other}' on import_playbook is not supported yet"),
                Some("import_playbook takes: name, vars, tags, when".into()),
            ),
        }
    }
    let Some(rel) = v.as_str() else {
        f.p.add(v.line, v.column, format!("import_playbook: a file name, not {}", v.what()), "here", None);
        return;
    };
    let rel = load_time_name(f, rel).unwrap_or_else(|| rel.to_string());
    let rel = rel.as_str();
    if rel.contains("{{") {
        f.p.add(
            v.line,
            v.column,
            format!("import_playbook: a templated file name ('{rel}') is not supported"),
            "here",
            None,
        );
        return;
    }
    if f.p.count() != before {
        return;
    }
    let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { f.dir.join(rel) };
    if !path.is_file() {
        f.p.add(
            v.line,
            v.column,
            format!("import_playbook: {rel} not found"),
            "this file",
            Some(format!("looked for {}", path.display())),
        );
        return;
    }
    let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if f.reading.contains(&canonical) {
        f.p.add(v.line, v.column, format!("import_playbook: {} imports itself", path.display()), "this import", None);
        return;
    }
    let source = match crate::error::read_source(&path) {
        Ok(s) => Source::new(taskfile::display_name(f, &path), s.text.as_str()),
        Err(e) => {
            f.p.add(v.line, v.column, format!("import_playbook: {e}"), "this file", None);
            return;
        }
    };
    let root: Node = match crate::yaml::parse_ansible::<Node>(&source) {
        Ok(mut n) => {
            n.keep_short_words(&source.text);
            n
        }
        Err(e) => {
            f.p.errors.push(e);
            return;
        }
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let place = Place { task_dir: dir.clone(), search: vec![dir.clone()], role_dir: None };
    if !f.plugin_dirs.contains(&dir) {
        f.plugin_dirs.push(dir.clone());
    }
    let outer_dir = std::mem::replace(&mut f.dir, dir);
    let start = plays.len();
    let hstart = handlers.len();
    let mut inner = f.import_vars.clone();
    inner.extend(vars.clone());
    let outer_vars = std::mem::replace(&mut f.import_vars, inner);
    f.within(source.clone(), canonical, place, |f| plays_of(f, &root, plays, handlers));
    f.import_vars = outer_vars;
    f.dir = outer_dir;
    for p in &mut plays[start..] {
        p.vars.extend(vars.clone());
        when.apply(&mut p.steps);
        for t in &tags {
            if !p.tags.contains(t) {
                p.tags.push(t.clone());
            }
        }
        p.file.get_or_insert_with(|| source.clone());
        for s in &mut p.steps {
            s.file.get_or_insert_with(|| source.clone());
        }
    }
    for h in &mut handlers[hstart..] {
        h.file.get_or_insert_with(|| source.clone());
    }
}

/// One play (several native plays where its handlers must run between sections) and its
/// handlers.
fn play(f: &mut Front, node: &Node, earlier: &[Play], earlier_handlers: &[Step]) -> Option<(Vec<Play>, Vec<Step>)> {
    let Some(map) = node.as_map() else {
        f.p.add(node.line, node.column, format!("a play is a mapping, not {}", node.what()), "here", None);
        return None;
    };
    let before = f.p.count();
    let get = |k: &str| map.iter().find(|(key, _)| key.name == k);
    if let Some((k, _)) = get("import_playbook").or_else(|| get("include_playbook")) {
        f.p.add_key(
            k,
            format!("{} is not supported yet", k.name),
            Some("run the playbooks one after the other: copctl run a.yml b.yml".into()),
        );
        return None;
    }
    for (k, v) in map {
        let n = k.name.as_str();
        if n == "strategy" {
            strategy(f, k, v);
            continue;
        }
        // Accepted as they are: copctl gathers its one set of facts whatever the subset asks
        // for, and finds a module by its short name or FQCN whatever the collections list.
        if matches!(n, "gather_subset" | "collections") {
            let names = match &v.kind {
                Kind::Seq(items) => items.iter().all(|i| i.as_str().is_some()),
                Kind::Scalar(Value::String(_)) => true,
                _ => false,
            };
            if !names {
                f.p.add_key(k, format!("{n}: a name or a list of names, not {}", v.what()), None);
            }
            continue;
        }
        if PLAY_KEYWORDS.contains(&n) {
            continue;
        }
        if PLAY_NOT_YET.contains(&n) {
            f.p.add_key(k, format!("play keyword '{n}' is not supported yet"), None);
        } else {
            let close = closest(n, PLAY_KEYWORDS);
            let help = if close.is_empty() {
                format!("play keywords copctl knows: {}", PLAY_KEYWORDS.join(", "))
            } else {
                format!("did you mean {}?", close.join(", "))
            };
            f.p.add_key(k, format!("unknown play keyword '{n}'"), Some(help));
        }
    }
    let hosts = match get("hosts") {
        None => {
            f.p.add(
                node.line,
                node.column,
                "a play needs hosts".into(),
                "this play",
                Some("add hosts: PATTERN".into()),
            );
            String::new()
        }
        Some((k, v)) => match &v.kind {
            Kind::Scalar(Value::String(s)) => s.clone(),
            Kind::Seq(items) if items.iter().all(|i| i.as_str().is_some()) => {
                items.iter().filter_map(Node::as_str).collect::<Vec<_>>().join(",")
            }
            _ => {
                f.p.add_key(k, format!("hosts: a pattern or a list of them, not {}", v.what()), None);
                String::new()
            }
        },
    };
    // `connection`: ssh is how copctl connects; local, only where the play is the implicit
    // localhost's (the bastion), which copctl reaches locally anyway.
    if let Some((k, v)) = get("connection") {
        let local = crate::inventory::is_implicit_localhost(hosts.trim());
        match v.as_str().map(str::trim) {
            Some("ssh" | "smart" | "ansible.builtin.ssh") => {}
            Some("local" | "ansible.builtin.local") if local => {}
            Some("local" | "ansible.builtin.local") => f.p.add_key(
                k,
                "connection: local on inventory hosts is not supported yet".into(),
                Some("copctl runs a play locally where its hosts are localhost (the bastion); set ansible_connection=local on a host in the inventory".into()),
            ),
            _ => f.p.add_key(
                k,
                format!("connection: '{}' is not supported", v.as_str().unwrap_or_default()),
                Some("copctl connects with ssh (or locally to localhost)".into()),
            ),
        }
    }
    // Ansible names an unnamed play after its hosts; the engine's play names are unique.
    let base = match get("name").map(|(_, v)| v) {
        Some(v) => v.as_str().map(str::to_string).unwrap_or_else(|| v.to_value().to_string()),
        None => hosts.clone(),
    };
    let mut vars = crate::inventory::Vars::new();
    if let Some((k, v)) = get("vars") {
        match v.to_value() {
            Value::Object(m) => vars.extend(m),
            Value::Null => {}
            _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", v.what()), None),
        }
    }
    f.p.module_defaults.clear();
    if let Some((k, v)) = get("module_defaults") {
        let d = module_defaults(f, k, v);
        f.p.module_defaults.push(d);
    }
    let mut dynamic = Vec::new();
    if let Some((_, v)) = get("vars_files") {
        dynamic = vars_files(f, v, &mut vars);
    }
    let mut known = vars.clone();
    known.extend(f.import_vars.clone());
    f.scope.push(known);
    let flag = |f: &mut Front, key: &str| -> Option<bool> {
        let (k, v) = get(key)?;
        match &v.kind {
            Kind::Scalar(Value::Bool(b)) => Some(*b),
            _ => {
                f.p.add_key(k, format!("{key}: must be a literal boolean, not {}", v.what()), None);
                None
            }
        }
    };
    let r#become = flag(f, "become");
    let any_errors_fatal = flag(f, "any_errors_fatal").unwrap_or(false);
    let gather = flag(f, "gather_facts").unwrap_or(true);
    let force_handlers = flag(f, "force_handlers");
    let no_log = flag(f, "no_log");
    let remote_user = match get("remote_user") {
        None => None,
        Some((k, v)) => match v.as_str() {
            Some(u) => match known::with(f, serde_json::Map::new(), |f| known::text(f, u, (v.line, v.column))) {
                Some(u) if !u.is_empty() => Some(u),
                _ => {
                    f.p.add_key(k, format!("remote_user: '{u}' is not known when the playbook is loaded"), Some("copctl logs in to a host once per run: name the user, or set it from the play's vars (or ansible_user in the inventory)".into()));
                    None
                }
            },
            None => {
                f.p.add_key(k, format!("remote_user: a user's name, not {}", v.what()), None);
                None
            }
        },
    };
    // Keywords every task of the play inherits where it sets none (Ansible's play → task).
    let become_user = get("become_user").and_then(|(k, v)| task::become_user(f, k, v));
    let become_method = get("become_method").and_then(|(k, v)| task::become_method(f, k, v));
    let ignore_errors = get("ignore_errors").and_then(|(k, v)| task::flag(f, k, v));
    let ignore_unreachable = get("ignore_unreachable").and_then(|(k, v)| task::flag(f, k, v));
    let check_mode = get("check_mode").and_then(|(k, v)| task::flag(f, k, v));
    let diff = get("diff").and_then(|(k, v)| task::flag(f, k, v));
    let timeout = get("timeout").and_then(|(k, v)| task::number(f, k, v));
    let throttle = get("throttle").and_then(|(k, v)| task::number(f, k, v)).map(|n| n as usize).filter(|n| *n > 0);
    let tags = match get("tags") {
        None => vec![],
        Some((k, v)) => match v.to_value() {
            Value::String(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
            Value::Array(a) if a.iter().all(Value::is_string) => {
                a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()
            }
            _ => {
                f.p.add_key(k, "tags: a name or a list of names".into(), None);
                vec![]
            }
        },
    };
    let (serial, serial_templates) = match get("serial") {
        None => (vec![], vec![]),
        Some((k, v)) => serial(f, k, v),
    };
    let max_fail = match get("max_fail_percentage") {
        None => None,
        Some((k, v)) => match v.to_value() {
            Value::Number(n) if n.as_f64().is_some_and(|x| (0.0..=100.0).contains(&x)) => {
                n.as_f64().map(Batch::Percent)
            }
            Value::String(s) if s.trim().parse::<f64>().is_ok_and(|x| (0.0..=100.0).contains(&x)) => {
                s.trim().parse().ok().map(Batch::Percent)
            }
            _ => {
                f.p.add_key(k, "max_fail_percentage: a number from 0 to 100".into(), None);
                None
            }
        },
    };
    // Roles and handlers first: tasks name the handlers, the roles' before the play's own.
    f.roles_seen.clear();
    f.role_handlers.clear();
    f.listening.clear();
    f.flush_pending = None;
    f.flush_before.clear();
    f.noop_handlers.clear();
    let mut role_steps = Vec::new();
    if let Some((k, v)) = get("roles") {
        roles::play_roles(f, k, v, &mut role_steps);
    }
    let mut handlers = Vec::new();
    if let Some((_, v)) = get("handlers") {
        for h in section(f, "handlers", v) {
            let mut produced = Vec::new();
            expand(f, h, true, &mut produced);
            handlers.extend(produced);
        }
    }
    unique_handler_names(f, &mut handlers, earlier_handlers);
    let mut facts = if gather { vec![facts_step(f, node)?] } else { Vec::new() };
    if !dynamic.is_empty() {
        facts.extend(vars_files_step(f, node, dynamic));
    }
    // Chunks of tasks after which Ansible flushes the notified handlers: each section, and the
    // parts of one that `meta: flush_handlers` separates (its key, for messages). The roles'
    // tasks come first in `tasks`, in one chunk with them, as Ansible compiles a play.
    // Each chunk with the tags of the explicit flush it starts after, if it does.
    let mut sections: Vec<Chunk> = Vec::new();
    for sec in ["pre_tasks", "tasks", "post_tasks"] {
        let items = get(sec).map(|(_, v)| section(f, sec, v)).unwrap_or_default();
        let mut steps = Vec::new();
        let mut notifies = false;
        let mut gate: Option<Vec<String>> = None;
        let mut roles_first = if sec == "tasks" { std::mem::take(&mut role_steps) } else { Vec::new() };
        for t in std::iter::once(None).chain(items.iter().map(Some)) {
            let mut produced = std::mem::take(&mut roles_first);
            if let Some(t) = t {
                match is_flush_handlers(f, t) {
                    Flush::At(tags) => {
                        flush_at(&mut sections, sec, &mut steps, &mut notifies, &mut gate, tags);
                        continue;
                    }
                    Flush::Never => continue,
                    Flush::Not => expand(f, t, false, &mut produced),
                }
            }
            for mut s in produced {
                // After a flush_handlers in a role's or included file: a new chunk.
                let name = s.file.as_ref().map_or_else(|| f.p.source.name.clone(), |x| x.name.clone());
                if let Some(i) = f.flush_before.iter().position(|(n, l, _)| *n == name && *l == s.line) {
                    let (.., tags) = f.flush_before.remove(i);
                    flush_at(&mut sections, sec, &mut steps, &mut notifies, &mut gate, tags);
                }
                // A topic becomes the handlers listening to it, in the handlers' order.
                if let Some(n) = &s.def.notify {
                    let mut names: Vec<String> = Vec::new();
                    for n in n.to_vec() {
                        let listeners = f.role_handlers.iter().chain(&handlers).filter(|h| {
                            h.name == n || f.listening.iter().any(|(l, _, t)| *l == h.name && t.contains(&n))
                        });
                        let found: Vec<String> = listeners.map(|h| h.name.clone()).collect();
                        if found.is_empty() && !f.noop_handlers.contains(&n) {
                            names.push(n);
                        }
                        for h in found {
                            if !names.contains(&h) {
                                names.push(h);
                            }
                        }
                    }
                    s.def.notify = Some(crate::playbook::OneOrMany::Many(names));
                }
                for n in s.def.notify.iter().flat_map(|n| n.to_vec()) {
                    notifies = true;
                    if !handlers.iter().chain(&f.role_handlers).any(|h| h.name == n) {
                        f.p.add_at_step(
                            &s,
                            format!("task '{}' notifies '{n}', which is not a handler of this play", s.name),
                            "unknown handler",
                            "add it under the play's handlers: or fix the name",
                        );
                    }
                }
                steps.push(s);
            }
        }
        if !steps.is_empty() {
            sections.push((sec, steps, notifies, gate));
        }
    }
    // Ansible runs the notified handlers after each of pre_tasks, tasks and post_tasks; copctl
    // at the end of a play (of each serial batch). A section that notifies and is not the last
    // is then a play of its own: the same order, as long as the play has no serial batches
    // (Ansible runs all sections batch by batch).
    let split = sections.iter().rev().skip(1).any(|(_, _, n, _)| *n);
    if split && !serial.is_empty() {
        let (sec, ..) = sections.iter().rev().skip(1).find(|(_, _, n, _)| *n).expect("a notifying section");
        if let Some((k, _)) = get(sec) {
            f.p.add_key(
                k,
                format!(
                    "handlers notified in {sec} before more tasks (another section or after meta: flush_handlers), in a play with serial batches, are not supported yet"
                ),
                Some(
                    "Ansible runs them before the next tasks of each batch: notify from the play's last tasks only"
                        .into(),
                ),
            );
        }
    }
    // A role in several plays brings the same handlers again: kept once (where they run
    // alike; `unique_handler_names` renamed the others). Another handler of the same name is a
    // problem, as among the play's own.
    let mut all_handlers: Vec<Step> = Vec::new();
    for h in std::mem::take(&mut f.role_handlers).into_iter().chain(handlers) {
        let same = |x: &Step| {
            x.name == h.name && x.line == h.line && x.file.as_ref().map(|s| &s.name) == h.file.as_ref().map(|s| &s.name)
        };
        let taken = all_handlers.iter().chain(earlier_handlers);
        if taken.clone().any(same) {
            continue;
        }
        if taken.clone().any(|x| x.name == h.name) {
            f.p.add_at_step(
                &h,
                format!("a handler named '{}' is already defined", h.name),
                "duplicate",
                "copctl's handlers are named across the playbook: make the names unique",
            );
            continue;
        }
        all_handlers.push(h);
    }
    // A handler notifying others (by name or topic): those after it run in the same flush, as
    // in Ansible; one before it (or itself) would need another round copctl does not make.
    for i in 0..all_handlers.len() {
        let Some(n) = all_handlers[i].def.notify.clone() else { continue };
        let mut names: Vec<String> = Vec::new();
        for n in n.to_vec() {
            let found: Vec<usize> = (0..all_handlers.len())
                .filter(|&j| {
                    let h = &all_handlers[j];
                    h.name == n || f.listening.iter().any(|(l, _, t)| *l == h.name && t.contains(&n))
                })
                .collect();
            let h = &all_handlers[i];
            if found.is_empty() && f.noop_handlers.contains(&n) {
                continue;
            }
            if found.is_empty() {
                f.p.add_at_step(
                    h,
                    format!("handler '{}' notifies '{n}', which is not a handler of this play", h.name),
                    "unknown handler",
                    "add it under the play's handlers: or fix the name",
                );
            } else if let Some(&j) = found.iter().find(|&&j| j <= i) {
                f.p.add_at_step(
                    h,
                    format!(
                        "handler '{}' notifies '{}', which is not after it: not supported yet",
                        h.name, all_handlers[j].name
                    ),
                    "notifies an earlier handler",
                    "order the handlers so that a handler notifies only those after it",
                );
            }
            names.extend(found.into_iter().map(|j| all_handlers[j].name.clone()));
        }
        all_handlers[i].def.notify = Some(crate::playbook::OneOrMany::Many(names));
    }
    // Ansible runs a notified handler whatever `--tags` selects (its tags are not read).
    let mut handlers = all_handlers;
    for h in &mut handlers {
        h.def.tags = Some(crate::playbook::OneOrMany::Many(vec!["always".into()]));
    }
    // The play's `environment`, under each task's own (handlers' too, as in Ansible).
    if let Some((k, v)) = get("environment") {
        let env: Vec<(String, String)> = task::vars(f, k, v)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(s) => (name, s),
                other => (name, other.to_string()),
            })
            .collect();
        let steps = sections.iter_mut().flat_map(|(_, s, ..)| s.iter_mut());
        for s in steps.chain(handlers.iter_mut().filter(|h| !earlier_handlers.iter().any(|e| e.name == h.name))) {
            for (name, value) in &env {
                s.def.environment.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    {
        let steps = sections.iter_mut().flat_map(|(_, s, ..)| s.iter_mut());
        for s in steps.chain(handlers.iter_mut().filter(|h| !earlier_handlers.iter().any(|e| e.name == h.name))) {
            if s.def.become_user.is_none() {
                s.def.become_user = become_user.clone().filter(|u| u != "root");
            }
            if s.def.become_method.is_none() {
                s.def.become_method = become_method.clone();
            }
            s.def.ignore_errors |= ignore_errors == Some(true);
            s.def.ignore_unreachable |= ignore_unreachable == Some(true);
            s.def.check_mode = s.def.check_mode.or(check_mode);
            s.def.diff = s.def.diff.or(diff);
            s.def.timeout = s.def.timeout.or(timeout);
        }
    }
    // A flush inside a block: a copy of each of the play's handlers there, in their order,
    // under the flush's blocks and conditions (each runs where its handler is notified).
    for (_, steps, ..) in &mut sections {
        if !steps.iter().any(|s| s.flush == Some(crate::playbook::FlushAt::Point)) {
            continue;
        }
        let mut with_copies = Vec::with_capacity(steps.len());
        for point in std::mem::take(steps) {
            if point.flush != Some(crate::playbook::FlushAt::Point) {
                with_copies.push(point);
                continue;
            }
            for h in &handlers {
                let mut c = h.clone();
                c.flush = Some(crate::playbook::FlushAt::Handler(h.name.clone()));
                c.blocks = point.blocks.clone();
                c.within = point.within.clone();
                c.tag_gates = point.tag_gates.clone();
                c.def.when = crate::playbook::and_conditions(point.def.when.clone(), c.def.when.take());
                c.file = c.file.or_else(|| Some(f.p.source.clone()));
                with_copies.push(c);
            }
        }
        *steps = with_copies;
    }
    // The play's `no_log`, under each task's and block's own.
    if let Some(hide) = no_log {
        let steps = sections.iter_mut().flat_map(|(_, s, ..)| s.iter_mut());
        for s in steps.chain(handlers.iter_mut().filter(|h| !earlier_handlers.iter().any(|e| e.name == h.name))) {
            s.def.no_log.get_or_insert(hide);
        }
    }
    if any_errors_fatal {
        block::refuse_with_any_errors_fatal(sections.iter_mut().flat_map(|(_, s, ..)| s.iter_mut()));
    }
    if f.p.count() != before {
        return None;
    }
    // The public roles' variables, over the play's vars and vars_files (Ansible's "role
    // exported vars"), for each of its tasks; each role's own tasks see them under its own.
    vars.extend(std::mem::take(&mut f.exported_vars));
    let template = Play {
        name: String::new(),
        hosts,
        needs: None,
        serial,
        serial_templates,
        max_fail,
        any_errors_fatal,
        throttle,
        tags,
        when: None,
        vars,
        r#become,
        steps: Vec::new(),
        line: node.line,
        file: None,
        continues: false,
        force_handlers,
        flush_tags: None,
        remote_user,
    };
    let unique = |wanted: String, taken: &[Play], mine: &[Play]| -> String {
        let mut name = wanted.clone();
        let mut k = 2;
        while taken.iter().chain(mine).any(|p| p.name == name) {
            name = format!("{wanted} ({k})");
            k += 1;
        }
        name
    };
    let mut plays: Vec<Play> = Vec::new();
    if split {
        let mut facts = facts;
        for (sec, steps, _, gate) in sections {
            // unique() numbers a second chunk of the same section.
            let wanted = if sec == "tasks" { base.clone() } else { format!("{base} ({sec})") };
            let mut p = template.clone();
            p.continues = !plays.is_empty();
            p.flush_tags = gate.filter(|_| p.continues);
            p.name = unique(wanted, earlier, &plays);
            p.steps = std::mem::take(&mut facts).into_iter().chain(steps).collect();
            plays.push(p);
        }
    } else {
        let mut p = template;
        p.name = unique(base, earlier, &plays);
        p.steps = facts.into_iter().chain(sections.into_iter().flat_map(|(_, s, ..)| s)).collect();
        plays.push(p);
    }
    Some((plays, handlers))
}

/// Who a step is: its file and line.
pub(super) fn ident(f: &Front, s: &Step) -> (String, usize) {
    (s.file.as_ref().map_or_else(|| f.p.source.name.clone(), |x| x.name.clone()), s.line)
}

/// Whether two loads of one handler run alike: the same variables and the keywords a role gives
/// its handlers (tags aside: a notified handler runs whatever they are).
fn runs_alike(a: &Step, b: &Step) -> bool {
    let (a, b) = (&a.def, &b.def);
    a.vars == b.vars
        && a.when == b.when
        && a.environment == b.environment
        && a.r#become == b.r#become
        && a.become_user == b.become_user
        && a.become_method == b.become_method
        && a.check_mode == b.check_mode
        && a.delegate_to == b.delegate_to
}

/// Makes the names of a play's handlers unique across the playbook (the engine's handlers are
/// named across it), keeping what a notification finds as Ansible resolves it: the play's own
/// handlers first, then the roles' (the last role's first), the first of a name taking it. A
/// handler whose name another took first is renamed, found through its topics only; one whose
/// name an earlier play's handler has is renamed and still found by its written name (a topic).
fn unique_handler_names(f: &mut Front, handlers: &mut [Step], earlier: &[Step]) {
    let mut order: Vec<(bool, usize)> = (0..handlers.len()).map(|i| (false, i)).collect();
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for i in 0..f.role_handlers.len() {
        match groups.last_mut() {
            Some(g) if ident(f, &f.role_handlers[i]).0 == ident(f, &f.role_handlers[i - 1]).0 => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    order.extend(groups.into_iter().rev().flat_map(|g| g.map(|i| (true, i))));
    let mut taken: std::collections::HashSet<String> =
        earlier.iter().chain(f.role_handlers.iter()).chain(handlers.iter()).map(|h| h.name.clone()).collect();
    let mut claimed: Vec<String> = Vec::new();
    for (role, i) in order {
        let h = if role { &f.role_handlers[i] } else { &handlers[i] };
        let (name, id) = (h.name.clone(), ident(f, h));
        let first_here = !claimed.contains(&name);
        claimed.push(name.clone());
        // The same handler of the same role, under the same variables and keywords: a role in
        // a later play with other parameters (`vars`, `when`, `environment`...) brings handlers
        // of its own, as Ansible's play-scoped handlers are.
        let same_earlier = earlier.iter().any(|x| {
            x.name == name
                && ident(f, x) == id
                && f.role_handlers_kept.iter().any(|(i, n, loaded)| *i == id && *n == name && runs_alike(loaded, h))
        });
        let clash_earlier = earlier.iter().any(|x| x.name == name);
        if same_earlier {
            // A role's handler an earlier play has too: kept once, by its name.
            if !first_here {
                let h = h.clone();
                f.p.add_at_step(
                    &h,
                    format!("handler '{name}' of a role of an earlier play is named as another handler of this play: not supported yet"),
                    "same name",
                    "rename one of the two handlers",
                );
            }
            continue;
        }
        if first_here && !clash_earlier {
            if role {
                f.role_handlers_kept.push((id, name, h.clone()));
            }
            continue;
        }
        let mut new = format!("{name} (line {})", id.1);
        let mut k = 2;
        while taken.contains(&new) {
            new = format!("{name} (line {}, {k})", id.1);
            k += 1;
        }
        taken.insert(new.clone());
        for l in f.listening.iter_mut().filter(|l| l.1 == id && l.0 == name) {
            l.0 = new.clone();
        }
        if first_here {
            f.listening.push((new.clone(), id, vec![name]));
        }
        if role { f.role_handlers[i].name = new } else { handlers[i].name = new }
    }
}

/// A chunk of a play's tasks: its section, its steps, whether they notify, and the tags of the
/// explicit flush it starts after.
type Chunk<'a> = (&'a str, Vec<Step>, bool, Option<Vec<String>>);

/// An explicit flush (`tags`): the chunk so far ends there, the next starts after it.
/// Consecutive flushes: either one selected flushes; one at a section's start adds nothing to
/// the flush at the section's end before it.
fn flush_at<'a>(
    sections: &mut Vec<Chunk<'a>>,
    sec: &'a str,
    steps: &mut Vec<Step>,
    notifies: &mut bool,
    gate: &mut Option<Vec<String>>,
    tags: Vec<String>,
) {
    if !steps.is_empty() {
        sections.push((sec, std::mem::take(steps), std::mem::take(notifies), gate.take()));
        *gate = Some(tags);
    } else if let Some(g) = gate {
        g.extend(tags);
    }
}

/// `strategy`: copctl runs every host through its tasks without waiting for the others
/// (Ansible's `free`), which ends in the same state as `linear` and `host_pinned` for a play
/// whose hosts do not read each other's results mid-play (README). A templated one is one of
/// those too; `debug` and a strategy plugin copctl does not have are refused.
fn strategy(f: &mut Front, k: &Key, v: &Node) {
    match v.as_str().map(str::trim) {
        Some("linear" | "free" | "host_pinned") => {}
        Some(t) if t.contains("{{") => {}
        Some(other) => f.p.add_key(
            k,
            format!("strategy '{other}' is not supported"),
            Some("copctl runs linear, free and host_pinned plays, each host through its tasks as free does".into()),
        ),
        None => f.p.add_key(k, format!("strategy: a name, not {}", v.what()), None),
    }
}

/// A file name templated with what is known when the playbook is loaded (`playbook_dir`), as
/// Ansible renders it; `None` when it needs anything else (a host's variables: refused).
pub(super) fn load_time_name(f: &Front, rel: &str) -> Option<String> {
    if !rel.contains("{{") || rel.contains("{%") {
        return None;
    }
    let dir = std::path::absolute(&f.top_dir).ok()?;
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.render_str(rel, minijinja::context! { playbook_dir => dir.display().to_string() }).ok()
}

/// A `meta: flush_handlers` task, read.
pub(super) enum Flush {
    /// Another task.
    Not,
    /// `when: false`: it flushes nothing.
    Never,
    /// A boundary, with the task's own tags (`--tags` selects it as any task).
    At(Vec<String>),
}

/// Whether a task is `meta: flush_handlers` (a boundary, not a step). Of its keywords, `tags`
/// select it and a literal `when` decides it; any other is a problem.
pub(super) fn is_flush_handlers(f: &mut Front, t: &Node) -> Flush {
    let Some(m) = t.as_map() else { return Flush::Not };
    let Some((_, v)) =
        m.iter().find(|(k, _)| matches!(k.name.as_str(), "meta" | "ansible.builtin.meta" | "ansible.legacy.meta"))
    else {
        return Flush::Not;
    };
    if v.as_str().map(str::trim) != Some("flush_handlers") {
        return Flush::Not;
    }
    let mut tags = Vec::new();
    let mut never = false;
    for (k, v) in m
        .iter()
        .filter(|(k, _)| !matches!(k.name.as_str(), "name" | "meta" | "ansible.builtin.meta" | "ansible.legacy.meta"))
    {
        match (k.name.as_str(), v.to_value()) {
            ("tags", _) => tags.extend(task::names(f, k, v, true).unwrap_or_default()),
            ("when", Value::Bool(b)) => never |= !b,
            ("when", _) => f.p.add_key(
                k,
                "meta: flush_handlers with a templated when is not supported yet".into(),
                Some("copctl flushes the handlers of every host at once: flush unconditionally, or not".into()),
            ),
            _ => f.p.add_key(
                k,
                format!("meta: flush_handlers takes no '{}'", k.name),
                Some("Ansible ignores it there; remove it".into()),
            ),
        }
    }
    if never { Flush::Never } else { Flush::At(tags) }
}

/// `vars_files`: YAML mappings beside the playbook, read when it is loaded, each overriding the
/// play's `vars` and the files before it (Ansible's precedence). An entry that is templated
/// (`vars/{{ ansible_os_family }}.yml`) or a list of candidates (the first found), and every
/// entry after it, is decided per host when the play starts (after its facts): those entries
/// are returned, each its candidates, for `vars_files_step`.
fn vars_files(f: &mut Front, v: &Node, vars: &mut crate::inventory::Vars) -> Vec<Vec<String>> {
    let items: Vec<&Node> = match &v.kind {
        Kind::Seq(s) => s.iter().collect(),
        _ => vec![v],
    };
    let mut dynamic: Vec<Vec<String>> = Vec::new();
    for item in items {
        let names: Option<Vec<String>> = match &item.kind {
            Kind::Seq(alts) => alts.iter().map(|a| a.as_str().map(str::to_string)).collect(),
            _ => item.as_str().map(|s| vec![s.to_string()]),
        };
        let Some(names) = names.filter(|n| !n.is_empty()) else {
            let m = format!("vars_files: each entry is a file name or a list of them, not {}", item.what());
            f.p.add(item.line, item.column, m, "here", None);
            continue;
        };
        if !dynamic.is_empty() || names.len() > 1 || names.iter().any(|n| n.contains("{{") || n.contains("{%")) {
            dynamic.push(names);
            continue;
        }
        let rel = names[0].as_str();
        let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { f.dir.join(rel) };
        let source = match crate::error::read_source(&path) {
            Ok(s) => s,
            Err(_) => {
                f.p.add(item.line, item.column, format!("vars_files: {} not found", path.display()), "here", None);
                continue;
            }
        };
        let (source, vaulted) = match vars_source(f.vault.as_ref(), &path, source) {
            Ok(s) => s,
            Err(e) => {
                f.p.add(item.line, item.column, format!("vars_files: {rel}: {e}"), "here", Some(VAULT_HELP.into()));
                continue;
            }
        };
        match crate::yaml::parse_ansible_vars::<Option<indexmap::IndexMap<String, Value>>>(&source) {
            Ok(m) => {
                let m = m.unwrap_or_default();
                if vaulted {
                    f.secret_vars.extend(m.keys().cloned());
                }
                vars.extend(m)
            }
            // The decrypted text is secret: no snippet of it in the message.
            Err(_) if vaulted => f.p.add(
                item.line,
                item.column,
                format!("vars_files: {rel} decrypts to no mapping of variables (its text is not shown: it is secret)"),
                "here",
                None,
            ),
            Err(e) => f.p.errors.push(e),
        }
    }
    dynamic
}

/// The step that reads a play's per-host `vars_files` entries (`vars_files`), first in the play
/// after its facts: never shown nor counted (a gate), its variables the play's, under the
/// tasks' own (see `steps::include_vars`). Every file the entries can name is read now.
fn vars_files_step(f: &mut Front, node: &Node, entries: Vec<Vec<String>>) -> Option<Step> {
    let dirs = [f.dir.clone()];
    let mut files = serde_json::Map::new();
    for name in entries.iter().flatten() {
        let vaulted = modules::Vaulted { vault: f.vault.as_ref(), names: &mut f.secret_vars };
        for (k, v) in modules::templated_candidates(&dirs, name, vaulted) {
            files.entry(k).or_insert(v);
        }
    }
    let search = vec![f.dir.display().to_string()];
    let def: StepDef = serde_json::from_value(json!({
        "name": "vars_files",
        "tags": ["always"],
        "include_vars": {"file": "", "search": search, "files": files, "vars_files": entries},
    }))
    .expect("a valid include_vars step");
    match super::validate_step(&f.p.source, def, node.line, node.column, false) {
        Ok(mut s) => {
            s.gate = true;
            Some(s)
        }
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}

/// `module_defaults` (a play's, a block's or a task's): module name → its default arguments,
/// as Ansible's mapping (or a list of them); a module by its short name or FQCN. Action groups
/// (`group/...`) and names that are no module (a typo) are refused.
pub(super) fn module_defaults(f: &mut Front, k: &Key, v: &Node) -> serde_json::Map<String, Value> {
    let maps: Vec<&Node> = match &v.kind {
        Kind::Seq(items) => items.iter().collect(),
        Kind::Scalar(Value::Null) => vec![],
        _ => vec![v],
    };
    let mut out = serde_json::Map::new();
    for m in maps {
        let Some(entries) = m.as_map() else {
            f.p.add_key(k, format!("module_defaults: a mapping of modules to arguments, not {}", m.what()), None);
            continue;
        };
        for (mk, mv) in entries {
            if mk.name.starts_with("group/") {
                f.p.add_key(
                    mk,
                    format!("module_defaults: action group '{}' is not supported yet", mk.name),
                    Some("name each module".into()),
                );
                continue;
            }
            // A collection's module copctl does not know: no task it runs can use the defaults.
            let Some(short) = modules::short_name(&mk.name) else { continue };
            if !modules::SUPPORTED.contains(&short) && !modules::NOT_YET.iter().any(|(n, _)| *n == short) {
                let close = closest(short, modules::SUPPORTED);
                let help = (!close.is_empty()).then(|| format!("did you mean {}?", close.join(", ")));
                f.p.add_key(mk, format!("module_defaults: unknown module '{}'", mk.name), help);
                continue;
            }
            match mv.to_value() {
                Value::Object(args) => {
                    let e = out.entry(short.to_string()).or_insert_with(|| Value::Object(serde_json::Map::new()));
                    if let Value::Object(have) = e {
                        have.extend(args);
                    }
                }
                Value::Null => {}
                other => {
                    f.p.add_key(mk, format!("module_defaults: {}: arguments are a mapping, not {other}", mk.name), None)
                }
            }
        }
    }
    out
}

/// The tasks of a section (`tasks:` and the like): a list, or nothing.
fn section<'n>(f: &mut Front, name: &str, v: &'n Node) -> &'n [Node] {
    match &v.kind {
        Kind::Seq(items) => items,
        Kind::Scalar(Value::Null) => &[],
        _ => {
            f.p.add(v.line, v.column, format!("{name}: a list of tasks, not {}", v.what()), "here", None);
            &[]
        }
    }
}

/// `serial`: a count, a percentage, a template, or a list of those.
fn serial(f: &mut Front, k: &Key, v: &Node) -> (Vec<Batch>, Vec<(usize, String)>) {
    let items: Vec<Value> = match v.to_value() {
        Value::Array(a) => a,
        other => vec![other],
    };
    let mut batches = Vec::new();
    let mut templates = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::Number(n) if n.as_u64().is_some_and(|x| x > 0) => {
                batches.push(Batch::Count(n.as_u64().unwrap_or(1) as usize))
            }
            Value::String(s) if s.contains("{{") => {
                templates.push((i, s));
                batches.push(Batch::Count(1));
            }
            Value::String(s) => match super::parse_batch(&s).or_else(|| parse_percent(&s).map(Batch::Percent)) {
                Some(b) => batches.push(b),
                None => f.p.add_key(k, format!("serial: '{s}' is neither a count nor a percentage"), None),
            },
            other => f.p.add_key(k, format!("serial: {other} is neither a count nor a percentage"), None),
        }
    }
    (batches, templates)
}

/// Ansible's fact gathering, first in a play that gathers facts: tagged `always`, as Ansible
/// gathers facts whatever `--tags` says.
fn facts_step(f: &mut Front, node: &Node) -> Option<Step> {
    let def: StepDef = serde_json::from_value(json!({"name": "Gathering Facts", "tags": ["always"], "setup": {}}))
        .expect("a valid setup step");
    match super::validate_step(&f.p.source, def, node.line, node.column, false) {
        Ok(s) => Some(s),
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}

/// How to give copctl the vault secrets an encrypted file needs.
pub(super) const VAULT_HELP: &str =
    "give its vault password: --vault-password-file FILE, --ask-vault-pass or --vault-id";

/// A variables file's text (`vars_files`, `include_vars`): decrypted with the command's vault
/// secrets when it is vault-encrypted (Ansible's format), which the `bool` says — its variables
/// are secrets from then on.
pub(super) fn vars_source(
    vault: Option<&std::sync::Arc<crate::vault::Vault>>,
    path: &Path,
    source: Source,
) -> Result<(Source, bool)> {
    use crate::vault::SecretSource;
    if !source.text.trim_start().starts_with("$ANSIBLE_VAULT") {
        return Ok((source, false));
    }
    let plain = match vault {
        Some(v) => v.secrets().and_then(|s| s.decrypt_file(path)).map(|p| p.unwrap_or_default())?,
        None => return Err(Error::plain(format!("{}: no vault secrets here", path.display()))),
    };
    Ok((Source::new(source.name.clone(), String::from_utf8_lossy(&plain).as_ref()), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        match parse("t", Source::new("t.yml", text), Path::new("/nonexistent"), None, None) {
            Ok(_) => vec![],
            Err(Error::Many { errors, .. }) => errors.iter().map(|e| e.to_string()).collect(),
            Err(e) => vec![e.to_string()],
        }
    }

    #[test]
    fn a_playbook_translates_to_native_steps() {
        let text = "- hosts: all\n  become: true\n  tasks:\n    - name: dir\n      file: path=/x state=directory mode=0755\n    - shell: echo hi\n      register: out\n      changed_when: false\n    - ansible.builtin.command: touch /y creates=/y\n      notify: h\n  handlers:\n    - name: h\n      service: {name: x, state: restarted}\n";
        let pb = parse("t", Source::new("t.yml", text), Path::new("/nonexistent"), None, None).unwrap();
        let play = &pb.plays[0];
        assert_eq!(play.name, "all");
        let kinds: Vec<&str> = play.steps.iter().map(|s| s.action.kind()).collect();
        assert_eq!(kinds, ["setup", "file", "shell", "command"]);
        assert_eq!(play.steps[3].def.creates.as_deref(), Some("/y"));
        assert_eq!(play.steps[3].action.source(), "touch /y");
        assert_eq!(pb.handlers[0].name, "h");
    }

    fn steps(text: &str) -> Vec<Step> {
        let pb = parse("t", Source::new("t.yml", text), Path::new("/nonexistent"), None, None).unwrap();
        pb.plays.into_iter().flat_map(|p| p.steps).collect()
    }

    #[test]
    fn arguments_mean_what_they_mean_to_ansible() {
        let s = steps(
            "- hosts: all\n  gather_facts: no\n  tasks:\n    - file: path=/x mode=0755\n    - file: {path: /y, mode: 644}\n    - command: echo \"a b\" '$HOME' chdir=/tmp\n    - fail: msg=stop\n    - apt: name=a,b state=installed\n    - fetch: src=/etc/hosts dest=/out\n    - blockinfile: path=/z block=x\n    - ping:\n",
        );
        let src: Vec<String> = s.iter().map(|s| s.action.source()).collect();
        assert_eq!(
            src,
            [
                r#"file: {"path":"/x","mode":"0755","force":false,"follow":true}"#,
                // Decimal 644, as Ansible applies it.
                r#"file: {"path":"/y","mode":"1204","force":false,"follow":true}"#,
                "echo 'a b' '$HOME'",
                r#"assert: {"that":["false"],"fail_msg":"stop"}"#,
                r#"package: {"name":["a","b"],"state":"present"}"#,
                r#"fetch: {"src":"/etc/hosts","dest":"/out/{{ inventory_hostname }}/etc/hosts"}"#,
                r##"block: {"path":"/z","block":"x","marker":"# {mark} ANSIBLE MANAGED BLOCK","state":"present","create":false}"##,
                "ping: {}",
            ]
        );
        assert_eq!(s[2].def.chdir.as_deref(), Some("/tmp"));
        assert_eq!(s[2].name, "command");
        assert!(s[7].action.inherently_read_only());
        // Only Ansible's own guard words leave a command line; stdin gets its newline.
        let s = steps("- hosts: all\n  gather_facts: no\n  tasks:\n    - command: echo cmd=x creates=/y stdin=in\n");
        assert_eq!((s[0].action.source(), s[0].def.creates.as_deref()), ("echo cmd=x".to_string(), Some("/y")));
        assert_eq!(s[0].def.stdin.as_deref(), Some("in\n"));
    }

    #[test]
    fn module_defaults_name_modules() {
        let text = "- hosts: all\n  module_defaults:\n    ansible.builtin.copyy: {mode: '0600'}\n    group/k8s: {}\n    community.docker.docker_container: {}\n  tasks: [ping:]\n";
        assert_eq!(
            problems(text),
            [
                "t.yml:3:5: module_defaults: unknown module 'ansible.builtin.copyy'",
                "t.yml:4:5: module_defaults: action group 'group/k8s' is not supported yet",
            ]
        );
    }

    #[test]
    fn assert_arguments_from_one_expression_only() {
        let text = "- hosts: all\n  tasks:\n    - assert: '{{ item }}'\n      args: {quiet: true, frobnicate: 1}\n      loop: [{that: x}]\n    - assert: 'that={{ x }} and {{ y }}'\n    - fail: '{{ a }}{{ b }}'\n";
        assert_eq!(
            problems(text),
            [
                "t.yml:4:27: assert: argument 'frobnicate' is not supported",
                "t.yml:6:15: assert: arguments from a template ('that={{ x }} and {{ y }}') are not supported",
                "t.yml:7:13: fail: arguments from a template ('{{ a }}{{ b }}') are not supported",
            ]
        );
        let ok =
            "- hosts: all\n  tasks:\n    - assert: '{{ item }}'\n      args: {quiet: true}\n      loop: [{that: x}]\n";
        let pb = parse("t", Source::new("t.yml", ok), Path::new("/nonexistent"), None, None).unwrap();
        assert_eq!(
            pb.warnings,
            [
                "t.yml:3:15: using a template for task args is unsafe in some situations (a variable's mapping may hold arguments the task never wrote)"
            ]
        );
    }

    #[test]
    fn every_problem_of_the_file_is_reported() {
        let text = "- hosts: all\n  order: sorted\n  tasks:\n    - pause: prompt=go\n    - shell: echo\n      regster: out\n    - copy: dest=/x content=y unsafe_writes=yes\n    - frobnicate: x\n";
        assert_eq!(
            problems(text),
            [
                "t.yml:2:3: play keyword 'order' is not supported yet",
                "t.yml:4:14: pause: waiting for a key press (no seconds or minutes) is not supported",
                "t.yml:6:7: unknown task keyword 'regster'",
                "t.yml:7:31: copy: argument 'unsafe_writes' is not supported",
                "t.yml:8:7: unknown module 'frobnicate'",
            ]
        );
    }
}
