//! Reading another file of tasks, for includes (include.rs) and roles (roles.rs): where it is
//! looked for, the keywords its tasks inherit from what brought them in, the file's tasks
//! expanded in place (through `super::expand`, so files nest), and the step a dynamic include
//! leaves in the recap.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::node::{Key, Kind, Node};
use super::{Front, Place};
use crate::error::Source;
use crate::playbook::{Condition, OneOrMany, Step};

/// Keywords of an include (or a role) that every task it brings in inherits.
#[derive(Default, Clone)]
pub struct Inherit {
    pub when: Vec<String>,
    pub tags: Vec<String>,
    pub r#become: Option<bool>,
    /// `check_mode`, for each task that sets none (as Ansible's tasks inherit it from their
    /// parent include or import).
    pub check_mode: Option<bool>,
    pub become_user: Option<String>,
    /// An import's `delegate_to`, for each task that sets none.
    pub delegate_to: Option<String>,
    /// Under each task's own `environment`.
    pub environment: Vec<(String, String)>,
    /// Below each task's own `vars`.
    pub vars: Map<String, Value>,
    /// Above each task's own `vars` (a role's parameters).
    pub params: Map<String, Value>,
    /// The handlers each task that names none notifies (an import's `notify`, an include's
    /// `apply: {notify: ...}`), as a block's `notify` is.
    pub notify: Option<Vec<String>>,
}

impl Inherit {
    /// Reads `when`, `tags`, `become`, `become_user`, `check_mode`, `environment`, `notify` and
    /// `vars` of an include or role entry; `None` when the key is none of them.
    pub fn keyword(&mut self, f: &mut Front, k: &Key, v: &Node) -> Option<()> {
        match k.name.as_str() {
            "when" => match v.to_value() {
                Value::String(s) => self.when.push(s),
                Value::Bool(b) => self.when.push(b.to_string()),
                Value::Array(a) if a.iter().all(|x| x.is_string() || x.is_boolean()) => {
                    self.when.extend(a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)))
                }
                _ => f.p.add_key(
                    k,
                    format!("when: a condition is an expression or a list of them, not {}", v.what()),
                    None,
                ),
            },
            "tags" => match v.to_value() {
                Value::String(s) => {
                    self.tags.extend(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()))
                }
                Value::Array(a) if a.iter().all(Value::is_string) => {
                    self.tags.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)))
                }
                _ => f.p.add_key(k, "tags: a name or a list of names".into(), None),
            },
            "become" => match v.to_value() {
                Value::Bool(b) => self.r#become = Some(b),
                _ => f.p.add_key(k, format!("become: must be a literal boolean, not {}", v.what()), None),
            },
            "check_mode" => self.check_mode = super::keywords::flag(f, k, v),
            "become_user" => self.become_user = super::keywords::become_user(f, k, v),
            "environment" => {
                for (name, value) in super::keywords::vars(f, k, v).unwrap_or_default() {
                    let t = match value {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.environment.push((name, t));
                }
            }
            "notify" => self.notify = super::keywords::names(f, k, v, false),
            "vars" => match v.to_value() {
                Value::Object(m) => self.vars.extend(m),
                Value::Null => {}
                _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", v.what()), None),
            },
            _ => return None,
        }
        Some(())
    }

    /// The variables these keywords set, as the included tasks see them (parameters over vars):
    /// for templates rendered when the playbook is loaded (known.rs).
    pub fn scope(&self) -> Map<String, Value> {
        let mut m = self.vars.clone();
        m.extend(self.params.clone());
        m
    }

    /// Applies these keywords to `steps` (brought in from elsewhere): the conditions before each
    /// step's own, as Ansible evaluates an import's `when` first.
    pub fn apply(&self, steps: &mut [Step]) {
        for s in steps {
            if !self.when.is_empty() {
                let own = match s.def.when.take() {
                    None => vec![],
                    Some(Condition::Bool(b)) => vec![b.to_string()],
                    Some(Condition::Expr(e)) => vec![e],
                    Some(Condition::All(v)) => v,
                };
                s.def.when = Some(Condition::All(self.when.iter().cloned().chain(own).collect()));
            }
            if !self.tags.is_empty() {
                let mut tags = self.tags.clone();
                for t in s.def.tags.take().map(|t| t.to_vec()).unwrap_or_default() {
                    if !tags.contains(&t) {
                        tags.push(t);
                    }
                }
                s.def.tags = Some(OneOrMany::Many(tags));
                for g in &mut s.tag_gates {
                    g.extend(self.tags.iter().filter(|t| !g.contains(t)).cloned().collect::<Vec<_>>());
                }
            }
            if s.def.r#become.is_none() {
                s.def.r#become = self.r#become;
            }
            if s.def.check_mode.is_none() {
                s.def.check_mode = self.check_mode;
            }
            if s.def.become_user.is_none() {
                s.def.become_user = self.become_user.clone();
            }
            if s.def.delegate_to.is_none() {
                s.def.delegate_to = self.delegate_to.clone();
            }
            if s.def.notify.is_none()
                && let Some(n) = &self.notify
            {
                s.def.notify = Some(OneOrMany::Many(n.clone()));
            }
            for (k, v) in &self.environment {
                s.def.environment.entry(k.clone()).or_insert_with(|| v.clone());
            }
            if !self.vars.is_empty() || !self.params.is_empty() {
                let mut vars: indexmap::IndexMap<String, Value> = self.vars.clone().into_iter().collect();
                vars.extend(std::mem::take(&mut s.def.vars));
                vars.extend(self.params.clone());
                s.def.vars = vars;
            }
        }
    }
}

/// What is left of a dynamic include (`include_tasks`, `include_role`) once its tasks are read
/// when the playbook is loaded (`out[start..]`): Ansible counts the include itself in the
/// recap (ok, or skipped by its `when`), so a step that does nothing stands for it, before
/// them; its tags are its own only (the included tasks answer `--tags` by theirs, as in
/// Ansible); its `when` is each included task's too, where Ansible decides it once, and where
/// it is skipped its tasks are passed over unseen (`Step::within`), as Ansible never reads them.
pub fn dynamic(f: &mut Front, node: &Node, key: &Key, inherit: Inherit, start: usize, out: &mut Vec<Step>) {
    dynamic_with(f, node, key, inherit, start, out, serde_json::json!({"assert": {"that": ["true"]}}))
}

/// `dynamic` whose step fails (with `fail_msg`) where `that` does not hold.
#[allow(clippy::too_many_arguments)]
pub fn dynamic_checked(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    start: usize,
    out: &mut Vec<Step>,
    that: String,
    fail_msg: String,
) {
    dynamic_with(
        f,
        node,
        key,
        inherit,
        start,
        out,
        serde_json::json!({"assert": {"that": [that], "fail_msg": fail_msg}}),
    )
}

/// `dynamic` with the include's step definition `def` (an assert).
fn dynamic_with(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    start: usize,
    out: &mut Vec<Step>,
    mut def: Value,
) {
    let name = node
        .as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.name == "name"))
        .and_then(|(_, v)| v.as_str())
        .unwrap_or(&key.name);
    def["name"] = Value::from(name);
    if !inherit.tags.is_empty() {
        def["tags"] = Value::from(inherit.tags.clone());
    }
    if !inherit.when.is_empty() {
        def["when"] = Value::from(inherit.when.clone());
    }
    let def = serde_json::from_value(def).expect("a valid assert step");
    let id = f.next_include;
    f.next_include += 1;
    match crate::playbook::validate_step(&f.p.source, def, node.line, node.column, false) {
        // An include in an included file gets that file when its steps do (tasks_file).
        Ok(mut s) => {
            s.include = Some(id);
            out.insert(start, s)
        }
        Err(e) => {
            f.p.errors.push(e);
            return;
        }
    }
    for s in &mut out[start + 1..] {
        s.tag_gates.push(inherit.tags.clone());
        s.within.push(id);
    }
    Inherit { tags: Vec::new(), ..inherit }.apply(&mut out[start + 1..]);
}

/// A dynamic include's file (or role), `what` (`include_tasks inc.yml`, `include_role 'r'`),
/// read by `read` into `out`, then the include's own step (`dynamic`). Ansible reads such a
/// file only when the run reaches the include, so what copctl cannot run in it (a module or an
/// argument it lacks: a Windows branch of a role) does not refuse the playbook: each problem is
/// a warning naming the include and its `when`, the file's steps are dropped, and the include's
/// step fails, with the same words, on each host the run brings to it. Imports stay strict:
/// they are read with their includer, as in Ansible.
#[allow(clippy::too_many_arguments)]
pub fn dynamic_read(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    what: &str,
    handler: Option<&str>,
    out: &mut Vec<Step>,
    read: impl FnOnce(&mut Front, &mut Vec<Step>),
) {
    let start = out.len();
    let (problems, kept) = (f.p.count(), Kept::of(f));
    read(f, out);
    if f.p.count() == problems {
        return dynamic(f, node, key, inherit, start, out);
    }
    let errors = f.p.errors.split_off(problems);
    out.truncate(start);
    kept.restore(f);
    let here = format!("{}:{}:{}", f.p.source.name, key.line, key.column);
    let guard = match inherit.when.as_slice() {
        [] => "no when".to_string(),
        [one] => format!("when: {one}"),
        many => format!("when: {}", many.iter().map(|w| format!("({w})")).collect::<Vec<_>>().join(" and ")),
    };
    let by = match handler {
        Some(name) => format!("handler '{name}' ({guard}, when notified): {what}"),
        None => format!("{what} ({guard})"),
    };
    let said = |e: &crate::error::Error| {
        format!(
            "{here}: {by}, read when the run reaches it, holds what copctl cannot run: {e} (a host that reaches it fails there)"
        )
    };
    for e in &errors {
        let w = said(e);
        if !f.warnings.contains(&w) {
            f.warnings.push(w);
        }
    }
    let mut msg = said(&errors[0]);
    if errors.len() > 1 {
        msg.push_str(&format!(" (and {} more problems: see the warnings)", errors.len() - 1));
    }
    let msg = format!("{{% raw %}}{msg}{{% endraw %}}");
    dynamic_checked(f, node, key, inherit, start, out, "false".into(), msg);
}

/// What reading a file adds to the front-end's state beyond its steps (handlers, topics,
/// flushes, roles seen): put back where the file's steps are dropped.
struct Kept {
    flush_pending: Option<Vec<String>>,
    lens: [usize; 7],
}

impl Kept {
    fn of(f: &Front) -> Kept {
        Kept {
            flush_pending: f.flush_pending.clone(),
            lens: [
                f.flush_before.len(),
                f.role_handlers.len(),
                f.role_handlers_kept.len(),
                f.listening.len(),
                f.roles_seen.len(),
                f.noop_handlers.len(),
                f.load_time.len(),
            ],
        }
    }

    fn restore(self, f: &mut Front) {
        let [a, b, c, d, e, g, h] = self.lens;
        f.flush_pending = self.flush_pending;
        f.flush_before.truncate(a);
        f.role_handlers.truncate(b);
        f.role_handlers_kept.truncate(c);
        f.listening.truncate(d);
        f.roles_seen.truncate(e);
        f.noop_handlers.truncate(g);
        f.load_time.truncate(h);
    }
}

/// Where a relative task file is looked for: beside the file including it (in a role, its
/// `tasks/`), then in the playbook's directory, as Ansible resolves a nested include.
pub fn candidates(f: &Front, rel: &str) -> Vec<PathBuf> {
    if Path::new(rel).is_absolute() {
        return vec![PathBuf::from(rel)];
    }
    let mut v = vec![f.place.task_dir.join(rel)];
    if let Some(role) = &f.place.role_dir {
        v.push(role.join("tasks").join(rel));
    }
    v.push(f.dir.join(rel));
    v.dedup();
    v
}

/// Reads the task file `path` (included at `at` of the current file by `what`) and expands its
/// tasks into `out`, problems reported in that file, from `place`.
pub fn tasks_file(
    f: &mut Front,
    path: &Path,
    at: (usize, usize),
    what: &str,
    place: Place,
    handler: bool,
    out: &mut Vec<Step>,
) {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if f.reading.contains(&canonical) {
        let chain = f.reading.iter().map(|p| display_name(f, p)).collect::<Vec<_>>().join(" → ");
        f.p.add(
            at.0,
            at.1,
            format!("{what}: {} includes itself", display_name(f, path)),
            "this include",
            Some(format!("the files being read: {chain}")),
        );
        return;
    }
    let source = match crate::error::read_source(path) {
        Ok(s) => s,
        Err(e) => {
            f.p.add(at.0, at.1, format!("{what}: {e}"), "this file", None);
            return;
        }
    };
    let source = Source::new(display_name(f, path), source.text.as_str());
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
    let start = out.len();
    f.within(source.clone(), canonical, place, |f| match &root.kind {
        Kind::Seq(items) => {
            for t in items {
                // Ansible flushes the handlers there: before the next step (mod.rs splits the
                // play at it).
                match (handler, super::chunks::is_flush_handlers(f, t)) {
                    (false, super::chunks::Flush::At(own)) => {
                        let inherited = f.role_tags.iter().chain(&f.include_tags).flatten();
                        let tags: Vec<String> = inherited.chain(&own).cloned().collect();
                        // Consecutive flushes: either one selected flushes.
                        f.flush_pending.get_or_insert_default().extend(tags);
                        continue;
                    }
                    (false, super::chunks::Flush::Never) => continue,
                    _ => {}
                }
                super::expand(f, t, handler, out);
            }
        }
        Kind::Scalar(Value::Null) => {}
        _ => f.p.add(root.line, root.column, "a task file is a list of tasks".into(), "not a list", None),
    });
    for s in &mut out[start..] {
        s.file.get_or_insert_with(|| source.clone());
    }
}

/// A file's name in messages: relative to the playbook's directory when it is under it.
pub fn display_name(f: &Front, path: &Path) -> String {
    let base = std::path::absolute(&f.top_dir).unwrap_or_else(|_| f.top_dir.clone());
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match abs.strip_prefix(&base) {
        Ok(rel) if f.top_dir != Path::new(".") => f.top_dir.join(rel).display().to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A path in a message: absolute, so that it says where it was looked for whatever the
/// working directory.
pub fn shown(p: &Path) -> String {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()).display().to_string()
}
