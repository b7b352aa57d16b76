//! Roles: a play's `roles:` and `import_role`/`include_role`, expanded when the playbook is
//! loaded into the steps they stand for. A role is found as Ansible finds it (`roles/` beside
//! the playbook, ansible.cfg's roles_path, the name as a path); its `meta/main.yml` dependencies
//! run before it, once per play; its defaults become the playbook's (lowest) variables, its
//! vars and parameters each task's own; its handlers join the play's. A task's
//! `import_role`/`include_role` is read in include_role.rs, which expands the role here.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::node::{Key, Kind, Node};
use super::taskfile::{self, Inherit};
use super::{Front, Place, known};
use crate::error::Source;
use crate::playbook::Step;
use crate::template::is_template;

/// A role as a play, a dependency or a task names it.
#[derive(Clone)]
pub(super) struct Spec {
    pub(super) name: String,
    /// Where it is named (line, column, length), in the current file.
    pub(super) at: (usize, usize, usize),
    pub(super) tasks_from: Option<String>,
    /// `vars_from`, `defaults_from`, `handlers_from`: a role's other files than main.yml.
    pub(super) vars_from: Option<String>,
    pub(super) defaults_from: Option<String>,
    pub(super) handlers_from: Option<String>,
    /// `when`, `tags`, `become`: for every task of the role and of its dependencies.
    pub(super) keywords: Inherit,
    /// Variables and parameters for the role's own tasks and handlers.
    pub(super) vars: Inherit,
    /// A play's roles and dependencies run once per play (unless `allow_duplicates`).
    pub(super) once: bool,
}

/// What a template in a role's name or `tasks_from` may read.
pub(super) const KNOWN_HELP: &str = "copctl expands roles when the playbook is loaded: only the play's vars, the task's vars and a loop's item are known then";

/// Arguments of `import_role`/`include_role` copctl does not take yet.
pub(super) const ROLE_ARGS_NOT_YET: &[&str] = &["apply", "public", "allow_duplicates", "rolespec_validate"];

/// A play's `roles:` → their steps, in order, into `out`.
pub fn play_roles(f: &mut Front, k: &Key, v: &Node, out: &mut Vec<Step>) {
    let items = match &v.kind {
        Kind::Seq(items) => items.as_slice(),
        Kind::Scalar(Value::Null) => &[],
        _ => {
            f.p.add_key(k, format!("roles: a list of roles, not {}", v.what()), None);
            return;
        }
    };
    f.in_play_roles = true;
    let public = std::mem::replace(&mut f.public_roles, true);
    for item in items {
        if let Some(spec) = entry(f, item) {
            role(f, spec, out);
        }
    }
    f.public_roles = public;
    f.in_play_roles = false;
}

/// One entry of `roles:` or of `dependencies:`: a name, or a mapping with `role` (or `name`),
/// the keywords every task inherits, and parameters (the other keys, and `vars`).
fn entry(f: &mut Front, item: &Node) -> Option<Spec> {
    let mut spec = Spec {
        name: String::new(),
        at: (item.line, item.column, 0),
        tasks_from: None,
        vars_from: None,
        defaults_from: None,
        handlers_from: None,
        keywords: Inherit::default(),
        vars: Inherit::default(),
        once: true,
    };
    match &item.kind {
        Kind::Scalar(Value::String(s)) => {
            spec.name = s.clone();
            spec.at.2 = s.len();
        }
        Kind::Map(m) => {
            let before = f.p.count();
            for (k, v) in m {
                match k.name.as_str() {
                    "role" | "name" => match v.as_str() {
                        Some(s) => {
                            spec.name = s.to_string();
                            spec.at = (v.line, v.column, s.len());
                        }
                        None => f.p.add_key(k, format!("{}: a role's name, not {}", k.name, v.what()), None),
                    },
                    "vars" => match v.to_value() {
                        Value::Object(o) => spec.vars.params.extend(o),
                        Value::Null => {}
                        _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", v.what()), None),
                    },
                    "when" | "tags" | "become" | "become_user" | "environment" | "check_mode" => {
                        spec.keywords.keyword(f, k, v);
                    }
                    "delegate_to" | "ignore_errors" | "no_log" | "any_errors_fatal" | "run_once" | "diff"
                    | "collections" | "module_defaults" => {
                        f.p.add_key(k, format!("'{}' on a role is not supported yet", k.name), None)
                    }
                    // Anything else is a role parameter, as in Ansible.
                    _ => {
                        spec.vars.params.insert(k.name.clone(), v.to_value());
                    }
                }
            }
            if spec.name.is_empty() && f.p.count() == before {
                f.p.add(item.line, item.column, "which role? write role: NAME".into(), "this entry", None);
            }
            if f.p.count() != before {
                return None;
            }
        }
        _ => {
            f.p.add(
                item.line,
                item.column,
                format!("a role is a name or a mapping, not {}", item.what()),
                "here",
                None,
            );
            return None;
        }
    }
    if is_template(&spec.name) {
        let (l, c, n) = spec.at;
        let scope = spec.vars.scope();
        match known::with(f, scope, |f| known::text(f, &spec.name, (l, c))) {
            Some(name) => spec.name = name,
            None => {
                f.p.add_len(
                    l,
                    c,
                    n,
                    format!("a templated role name ('{}') is not supported", spec.name),
                    "here",
                    Some(KNOWN_HELP.into()),
                );
                return None;
            }
        }
    }
    (!spec.name.is_empty()).then_some(spec)
}

/// `spec` with its name and `tasks_from` rendered where they are templates of what is known
/// when the playbook is loaded (known.rs); `None` (reported) where they read anything else.
pub(super) fn resolved(f: &mut Front, kind: &str, mut spec: Spec) -> Option<Spec> {
    let (l, c, n) = spec.at;
    let scope = spec.vars.scope();
    if is_template(&spec.name) {
        match known::with(f, scope.clone(), |f| known::text(f, &spec.name, (l, c))) {
            Some(name) => spec.name = name,
            None => {
                let m = format!("{kind}: a templated role name ('{}') is not supported", spec.name);
                f.p.add_len(l, c, n, m, "here", Some(KNOWN_HELP.into()));
                return None;
            }
        }
    }
    if let Some(from) = spec.tasks_from.clone().filter(|t| is_template(t)) {
        match known::with(f, scope, |f| known::text(f, &from, (l, c))) {
            Some(t) => spec.tasks_from = Some(t),
            None => {
                let m = format!("{kind}: a templated tasks_from ('{from}') is not supported");
                f.p.add_len(l, c, n, m, "here", Some(KNOWN_HELP.into()));
                return None;
            }
        }
    }
    Some(spec)
}

/// Ansible's default roles_path, where ansible.cfg sets none.
fn default_roles_path() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    vec![home.join(".ansible/roles"), PathBuf::from("/usr/share/ansible/roles"), PathBuf::from("/etc/ansible/roles")]
}

/// Where the role `name` is looked for, in Ansible's order: `roles/` beside the playbook,
/// roles_path, the depending role's directory, the playbook's directory.
pub(super) fn search_paths(f: &mut Front) -> Vec<PathBuf> {
    if f.roles_path.is_none() {
        let configured = crate::ansible_cfg::AnsibleCfg::load()
            .ok()
            .and_then(|c| c.paths("DEFAULT_ROLES_PATH").map(<[PathBuf]>::to_vec));
        f.roles_path = Some(configured.unwrap_or_else(default_roles_path));
    }
    let mut v = vec![f.dir.join("roles")];
    v.extend(f.roles_path.clone().unwrap_or_default());
    if let Some(r) = &f.place.role_dir {
        v.push(r.clone());
    }
    v.push(f.dir.clone());
    v.dedup();
    v
}

/// The role's directory, or a problem at `spec.at` naming where it was looked for and the
/// roles found there with a close name.
fn find(f: &mut Front, spec: &Spec) -> Option<PathBuf> {
    let mut paths = search_paths(f);
    // A collection's role, `NAMESPACE.COLLECTION.ROLE`: in the collections beside the playbook
    // or in Ansible's default collections paths.
    let parts: Vec<&str> = spec.name.split('.').collect();
    if parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        let roots = [
            f.dir.join("collections"),
            home.join(".ansible/collections"),
            PathBuf::from("/usr/share/ansible/collections"),
        ];
        let dirs: Vec<PathBuf> =
            roots.iter().map(|r| r.join("ansible_collections").join(parts[0]).join(parts[1]).join("roles")).collect();
        if let Some(found) = dirs.iter().map(|d| d.join(parts[2])).find(|p| p.is_dir()) {
            return Some(found);
        }
        paths = dirs;
    }
    if let Some(found) = paths.iter().map(|p| p.join(&spec.name)).find(|p| p.is_dir()) {
        return Some(found);
    }
    if Path::new(&spec.name).is_dir() {
        return Some(PathBuf::from(&spec.name));
    }
    let mut names: Vec<String> = paths
        .iter()
        .filter_map(|p| std::fs::read_dir(p).ok())
        .flat_map(|rd| rd.flatten())
        .filter(|e| e.path().join("tasks").is_dir() || e.path().join("meta").is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
    let close = super::closest(&spec.name, &candidates);
    let looked = paths.iter().map(|p| taskfile::shown(p)).collect::<Vec<_>>().join(", ");
    let help = if close.is_empty() {
        format!("looked in {looked}")
    } else {
        format!("looked in {looked}; did you mean {}?", close.join(", "))
    };
    let (l, c, n) = spec.at;
    f.p.add_len(l, c, n, format!("role '{}' not found", spec.name), "this role", Some(help));
    None
}

/// The first of `dir/main.yml`, `main.yaml`, `main` (or of `name`, `name.yml`, `name.yaml`).
fn main_file(dir: &Path, name: &str) -> Option<PathBuf> {
    [name.to_string(), format!("{name}.yml"), format!("{name}.yaml")].iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// Reads a role's YAML file (a file name as messages show it, the tree).
fn read(f: &mut Front, path: &Path) -> Option<(Source, Node)> {
    let text = match crate::error::read_source(path) {
        Ok(s) => s,
        Err(e) => {
            f.p.errors.push(e);
            return None;
        }
    };
    let source = Source::new(taskfile::display_name(f, path), text.text.as_str());
    match crate::yaml::parse_ansible::<Node>(&source) {
        Ok(mut n) => {
            n.keep_short_words(&source.text);
            Some((source, n))
        }
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}

/// A role's file of `dir` (its `tasks/`, `vars/`...): `main`, or the one a `*_from` names,
/// which must exist.
fn role_file(f: &mut Front, spec: &Spec, dir: &Path, from: Option<&String>, what: &str) -> Option<PathBuf> {
    let Some(from) = from else { return main_file(dir, "main") };
    let found = main_file(dir, from);
    if found.is_none() {
        let (l, c, n) = spec.at;
        f.p.add_len(
            l,
            c,
            n,
            format!("role '{}': {what} '{from}' not found", spec.name),
            "this role",
            Some(format!("looked for {}/{from}, {from}.yml and {from}.yaml", taskfile::shown(dir))),
        );
    }
    found
}

/// A role's variables file (`defaults/main.yml`, `vars/main.yml`, or a `*_from`): a mapping,
/// or nothing.
fn vars_file(f: &mut Front, spec: &Spec, dir: &Path, from: Option<&String>, what: &str) -> Map<String, Value> {
    let Some(path) = role_file(f, spec, dir, from, what) else { return Map::new() };
    let Some((source, node)) = read(f, &path) else { return Map::new() };
    match node.to_value() {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => {
            f.p.errors.push(source.error_at(
                node.line.max(1),
                node.column.max(1),
                0,
                format!("{}: role variables are a mapping, not {}", source.name, node.what()),
                "here",
                None,
            ));
            Map::new()
        }
    }
}

/// Expands the role `spec` names (its dependencies first) into `out`.
pub(super) fn role(f: &mut Front, spec: Spec, out: &mut Vec<Step>) {
    let Some(dir) = find(f, &spec) else { return };
    let canonical = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    let (l, c, n) = spec.at;
    if f.role_chain.contains(&canonical) {
        let chain = f.role_chain.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" → ");
        f.p.add_len(
            l,
            c,
            n,
            format!("role '{}' depends on itself", spec.name),
            "this role",
            Some(format!("the roles being read: {chain}")),
        );
        return;
    }
    // meta/main.yml: dependencies and allow_duplicates.
    let meta = main_file(&dir.join("meta"), "main").and_then(|p| read(f, &p).map(|r| (p, r)));
    let allow_duplicates = meta
        .as_ref()
        .and_then(|(_, (_, n))| n.as_map())
        .and_then(|m| m.iter().find(|(k, _)| k.name == "allow_duplicates"))
        .is_some_and(|(_, v)| matches!(v.to_value(), Value::Bool(true)));
    let params = Value::Object(spec.vars.params.clone());
    let mut seen_at = None;
    if spec.once && !allow_duplicates {
        if let Some((.., first)) = f.roles_seen.iter().find(|(p, v, _)| *p == canonical && *v == params) {
            // Ansible runs the role where it is first selected: by `--tags`, that may be here,
            // so this place's tags are the first one's too.
            let tags: Vec<String> = f.role_tags.iter().flatten().chain(&spec.keywords.tags).cloned().collect();
            if let (Some(range), true, false) = (first.clone(), f.in_play_roles, tags.is_empty()) {
                Inherit { tags, ..Inherit::default() }.apply(&mut out[range]);
            }
            return;
        }
        seen_at = Some(f.roles_seen.len());
        f.roles_seen.push((canonical.clone(), params, None));
    }
    if !f.plugin_dirs.contains(&canonical) {
        f.plugin_dirs.push(canonical.clone());
    }
    f.role_chain.push(canonical.clone());
    f.role_tags.push(spec.keywords.tags.clone());
    let start = out.len();
    let handlers_start = f.role_handlers.len();
    let role_place =
        Place { task_dir: dir.join("tasks"), search: vec![dir.clone(), f.dir.clone()], role_dir: Some(dir.clone()) };
    if let Some(meta) = meta {
        dependencies(f, meta, Place { task_dir: dir.join("meta"), ..role_place.clone() }, out);
    }
    let defaults = vars_file(f, &spec, &dir.join("defaults"), spec.defaults_from.as_ref(), "defaults_from");
    f.defaults.extend(defaults);
    // The role's own variables: its vars/main.yml over role_name and role_path, under each
    // task's own vars; its parameters over them.
    let mut own = spec.vars.clone();
    own.vars = Map::new();
    own.vars.insert("role_name".into(), Value::String(spec.name.rsplit('/').next().unwrap_or(&spec.name).into()));
    own.vars.insert(
        "role_path".into(),
        Value::String(std::path::absolute(&dir).unwrap_or_else(|_| dir.clone()).display().to_string()),
    );
    let role_vars = vars_file(f, &spec, &dir.join("vars"), spec.vars_from.as_ref(), "vars_from");
    if f.public_roles {
        f.exported_vars.extend(role_vars.clone());
    }
    own.vars.extend(role_vars);
    own.vars.extend(spec.vars.vars.clone());
    if let Some(path) = role_file(f, &spec, &dir.join("handlers"), spec.handlers_from.as_ref(), "handlers_from") {
        handlers(f, &spec, &path, role_place.clone(), &own);
    }
    let tasks_start = out.len();
    let tasks_dir = dir.join("tasks");
    if let Some(path) = role_file(f, &spec, &tasks_dir, spec.tasks_from.as_ref(), "tasks_from") {
        known::with(f, own.scope(), |f| {
            taskfile::tasks_file(f, &path, (l, c), &format!("role '{}'", spec.name), role_place, false, out)
        });
    }
    own.apply(&mut out[tasks_start..]);
    spec.keywords.apply(&mut out[start..]);
    // The role's keywords hold for its handlers, and its dependencies', as for their tasks
    // (Ansible's handler blocks belong to the role): its condition, become, check mode,
    // environment and an import_role's delegate_to. Not its tags (a notified handler runs
    // whatever --tags says) nor an import's notify.
    let mut keywords = spec.keywords.clone();
    keywords.tags.clear();
    keywords.notify = None;
    keywords.apply(&mut f.role_handlers[handlers_start..]);
    f.role_tags.pop();
    f.role_chain.pop();
    if let (Some(i), true) = (seen_at, f.in_play_roles) {
        f.roles_seen[i].2 = Some(start..out.len());
    }
}

/// A role's `meta/main.yml` dependencies (read from `place`), each expanded before the role.
fn dependencies(f: &mut Front, (path, (source, node)): (PathBuf, (Source, Node)), place: Place, out: &mut Vec<Step>) {
    let deps = node.as_map().and_then(|m| m.iter().find(|(k, _)| k.name == "dependencies")).map(|(_, v)| v);
    let file = std::fs::canonicalize(&path).unwrap_or(path);
    f.within(source.clone(), file, place, |f| match deps.map(|d| &d.kind) {
        None | Some(Kind::Scalar(Value::Null)) => {}
        Some(Kind::Seq(items)) => {
            for item in items {
                if let Some(dep) = entry(f, item) {
                    role(f, dep, out);
                }
            }
        }
        Some(_) => {
            let d = deps.expect("some");
            f.p.add(d.line, d.column, "dependencies: a list of roles".into(), "here", None);
        }
    });
}

/// The role's handlers file (`path`, read from `place`), under the role's own variables
/// (`own`), into the play's role handlers.
fn handlers(f: &mut Front, spec: &Spec, path: &Path, place: Place, own: &Inherit) {
    let (l, c, _) = spec.at;
    let mut hs = Vec::new();
    taskfile::tasks_file(f, path, (l, c), &format!("role '{}'", spec.name), place, true, &mut hs);
    own.apply(&mut hs);
    // Ansible finds a role's handler also as `ROLE : NAME`, and its topics as `ROLE : TOPIC`
    // (ROLE the role's name, or a collection's role by its FQCN).
    let fqcn = spec.name.rsplit('/').next().unwrap_or(&spec.name).to_string();
    let short = fqcn.rsplit('.').next().unwrap_or(&fqcn).to_string();
    let mut prefixes = vec![short];
    if !prefixes.contains(&fqcn) {
        prefixes.push(fqcn);
    }
    for h in &hs {
        let id = super::ident(f, h);
        let own: Vec<String> = f
            .listening
            .iter()
            .filter(|(n, i, _)| *n == h.name && *i == id)
            .flat_map(|(.., t)| t.clone())
            .chain([h.name.clone()])
            .collect();
        let topics = prefixes.iter().flat_map(|p| own.iter().map(move |t| format!("{p} : {t}"))).collect();
        f.listening.push((h.name.clone(), id, topics));
    }
    f.role_handlers.extend(hs);
}

#[cfg(test)]
mod tests {
    use crate::error::{Error, Source};
    use crate::playbook::{Condition, Playbook};

    /// The playbook `site.yml` of a directory holding `files`.
    fn load(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<Playbook, Vec<String>>) {
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let p = dir.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join("site.yml")).unwrap();
        let r =
            super::super::parse("site", Source::new("site.yml", text), dir.path(), None, None).map_err(|e| match e {
                Error::Many { errors, .. } => errors.iter().map(|e| e.to_string()).collect(),
                e => vec![e.to_string()],
            });
        (dir, r)
    }

    fn names(pb: &Playbook) -> Vec<String> {
        pb.plays.iter().flat_map(|p| &p.steps).map(|s| s.name.clone()).collect()
    }

    #[test]
    fn a_dependency_runs_once_per_play_before_the_role() {
        let (_d, pb) = load(&[
            (
                "site.yml",
                "- hosts: all\n  gather_facts: false\n  roles: [a, b, a]\n- hosts: all\n  gather_facts: false\n  roles: [b]\n",
            ),
            ("roles/a/tasks/main.yml", "- name: a\n  ping:\n"),
            ("roles/b/meta/main.yml", "dependencies: [a, {role: a, x: 1}]\n"),
            ("roles/b/tasks/main.yml", "- name: b\n  ping:\n"),
        ]);
        // Parameters that differ make another run of the role; a new play starts afresh.
        assert_eq!(names(&pb.unwrap()), ["a", "a", "b", "a", "a", "b"]);
    }

    #[test]
    fn a_roles_defaults_are_the_playbooks_vars_and_its_vars_each_tasks() {
        let (dir, pb) = load(&[
            (
                "site.yml",
                "- hosts: all\n  gather_facts: false\n  roles:\n    - role: r\n      p: 1\n      when: ok_a\n",
            ),
            ("roles/r/defaults/main.yml", "d: 1\n"),
            ("roles/r/vars/main.yml", "v: 1\np: 0\n"),
            ("roles/r/tasks/main.yml", "- name: t\n  ping:\n  when: ok_b\n  vars: {v: 2, p: 2}\n"),
        ]);
        let pb = pb.unwrap();
        assert_eq!(pb.vars.get("d"), Some(&serde_json::json!(1)));
        let s = &pb.plays[0].steps[0];
        assert_eq!(s.def.vars.get("v"), Some(&serde_json::json!(2)), "the task's own vars over the role's");
        assert_eq!(s.def.vars.get("p"), Some(&serde_json::json!(1)), "role parameters over the task's vars");
        assert_eq!(s.def.vars.get("role_name"), Some(&serde_json::json!("r")));
        assert_eq!(s.def.when, Some(Condition::All(vec!["ok_a".into(), "ok_b".into()])));
        assert_eq!(
            s.file.as_ref().map(|f| f.name.as_str()),
            Some(format!("{}/roles/r/tasks/main.yml", dir.path().display()).as_str())
        );
    }

    #[test]
    fn a_file_that_includes_itself_and_a_role_that_depends_on_itself_are_refused() {
        let (dir, pb) = load(&[
            ("site.yml", "- hosts: all\n  gather_facts: false\n  roles: [r]\n  tasks:\n    - import_tasks: t.yml\n"),
            ("t.yml", "- import_tasks: t.yml\n"),
            ("roles/r/meta/main.yml", "dependencies: [r]\n"),
        ]);
        let errors = pb.unwrap_err();
        let d = dir.path().display();
        assert_eq!(
            errors,
            [
                format!("{d}/roles/r/meta/main.yml:1:16: role 'r' depends on itself"),
                format!("{d}/t.yml:1:17: import_tasks: {d}/t.yml includes itself"),
            ]
        );
    }
}
