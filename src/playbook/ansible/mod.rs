//! The Ansible front-end: an Ansible playbook (a YAML list of plays) translated into copctl's own
//! playbook model, so that it runs on the same engine with the same plan, `--limit` boundary and
//! recap. Only what has a native equivalent with the same semantics is translated; anything else
//! (a module, keyword, argument or value) is a problem reported at its file:line:column, and the
//! whole file is read before any is reported, so that `copctl validate` lists every one at once.
//!
//! Files: node (yaml/node.rs) the located YAML tree, split.rs Ansible's `k=v` argument lines,
//! import_playbook.rs a playbook file's plays, play.rs one play, chunks.rs its task sections,
//! handlers.rs its handlers, vars_files.rs its `vars_files`, task.rs one task, keywords.rs the
//! keywords' values, loops.rs loops, modules.rs the module table, block.rs blocks, include.rs,
//! include_role.rs and roles.rs what brings in another file, taskfile.rs reading one.
//! `expand` (here) turns a task-list entry into its steps; the parts it dispatches to call it
//! again for what they hold, so they nest without importing each other. Facts (`gather_facts`)
//! are the native `setup` kind.

mod action;
mod block;
mod chosen;
mod chunks;
mod handlers;
mod import_playbook;
mod include;
mod include_role;
mod keywords;
mod known;
pub use known::LoadTime;
mod loops;
mod modules;
pub(crate) use crate::yaml::node;
mod play;
mod roles;
mod split;
mod task;
mod taskfile;
mod vars_files;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Play, Playbook, Step, StepDef};
use crate::error::{Error, Result, Source};
use node::{Key, Node};

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

/// Names in `candidates` close to `name`, best first (at most 3).
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    crate::text::closest::closest(name, candidates.iter().copied(), 3)
}

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
    import_playbook::plays_of(&mut f, &root, &mut plays, &mut handlers);
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

/// Who a step is: its file and line.
pub(super) fn ident(f: &Front, s: &Step) -> (String, usize) {
    (s.file.as_ref().map_or_else(|| f.p.source.name.clone(), |x| x.name.clone()), s.line)
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
