//! One Ansible task (or handler) → one native step: its keywords mapped to the step's common
//! fields, its module to the step's kind (modules.rs). A keyword copctl does not have is a
//! problem at its key; so is a key that is neither a keyword nor a module.

use serde_json::{Map, Value, json};

use super::keywords::{become_method, become_user, condition, flag, module_defaults, names, number, text, vars};
use super::loops::{first_found_subdir, loop_control, loop_items, own_vars};
use super::modules::{self, NOT_YET, SUPPORTED};
use super::node::{Key, Node};
use super::{Front, closest};
use crate::playbook::{Step, StepDef};

/// Task keywords copctl translates.
pub const KEYWORDS: &[&str] = &[
    "name",
    "when",
    "register",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "ignore_unreachable",
    "notify",
    "loop",
    "with_items",
    "with_dict",
    "with_list",
    "with_sequence",
    "with_together",
    "with_nested",
    "with_subelements",
    "with_first_found",
    "with_fileglob",
    "with_indexed_items",
    "with_inventory_hostnames",
    "with_lines",
    "with_random_choice",
    "loop_control",
    "check_mode",
    "diff",
    "timeout",
    "throttle",
    "module_defaults",
    "no_log",
    "async",
    "poll",
    "tags",
    "become",
    "become_user",
    "become_method",
    "until",
    "retries",
    "delay",
    "run_once",
    "delegate_to",
    "vars",
    "environment",
    "args",
    "listen",
];

/// Ansible task keywords copctl does not translate yet, with why where it is worth saying.
pub(super) const KEYWORDS_NOT_YET: &[(&str, &str)] = &[
    ("delegate_facts", ""),
    ("any_errors_fatal", "set it on the play"),
    ("debugger", ""),
    ("collections", ""),
    ("connection", ""),
    ("remote_user", ""),
    ("port", ""),
    ("become_flags", ""),
    ("become_exe", ""),
];

/// Structure copctl does not have yet: blocks and includes.
const STRUCTURE_NOT_YET: &[&str] = &[
    "block",
    "rescue",
    "always",
    "include_tasks",
    "import_tasks",
    "include_role",
    "import_role",
    "include",
    "import_playbook",
    "include_playbook",
    "roles",
];

/// Ansible's `ansible_search_path` for the task being read (its `Task.get_search_path`, the
/// playbook's directory last): the roles being read, innermost first, the directory of the
/// task's file, then the playbook's. Where lookups look for files, as Ansible's do.
fn search_path(f: &Front) -> Value {
    let real = |p: &std::path::Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
    };
    let mut out: Vec<std::path::PathBuf> = f.role_chain.iter().rev().cloned().collect();
    for dir in [f.reading.last().and_then(|file| file.parent()).map(real), std::path::absolute(&f.dir).ok()]
        .into_iter()
        .flatten()
    {
        if !out.contains(&dir) {
            out.push(dir);
        }
    }
    Value::Array(out.into_iter().map(|p| Value::String(p.display().to_string())).collect())
}

/// What a task's keys are.
enum Role<'a> {
    Keyword,
    Module(&'a str),
    Unknown,
}

/// The step kind of a site's own module (`library/NAME.py`).
const LIBRARY: &str = "python_module";

/// A site's own module `name`, as Ansible finds it: `library/NAME.py` (or `library/NAME`, a
/// Python script) beside the playbook, an imported playbook or a role of the play, the role
/// being read first, then in ansible.cfg's `library` paths (Ansible's default:
/// `~/.ansible/plugins/modules`, `/usr/share/ansible/plugins/modules`).
fn library_module(f: &mut Front, name: &str) -> Option<std::path::PathBuf> {
    if name.is_empty() || name.contains('/') || name.contains('.') {
        return None;
    }
    if f.module_path.is_none() {
        let configured = crate::ansible_cfg::AnsibleCfg::load()
            .ok()
            .and_then(|c| c.paths("DEFAULT_MODULE_PATH").map(<[std::path::PathBuf]>::to_vec));
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        f.module_path = Some(configured.unwrap_or_else(|| {
            home.iter()
                .map(|h| h.join(".ansible/plugins/modules"))
                .chain([std::path::PathBuf::from("/usr/share/ansible/plugins/modules")])
                .collect()
        }));
    }
    let mut dirs: Vec<std::path::PathBuf> = f.place.role_dir.iter().map(|r| r.join("library")).collect();
    dirs.extend(f.plugin_dirs.iter().map(|d| d.join("library")));
    dirs.extend(f.module_path.clone().unwrap_or_default());
    dirs.iter().find_map(|d| {
        let py = d.join(format!("{name}.py"));
        if py.is_file() {
            return Some(py);
        }
        let bare = d.join(name);
        let head = std::fs::read(&bare).ok()?;
        let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
        (first.starts_with(b"#!") && String::from_utf8_lossy(first).contains("python")).then_some(bare)
    })
}

/// Translates one task (a handler when `handler`). `None` when it has problems (reported) or
/// does nothing (`meta: noop`).
pub fn task(f: &mut Front, node: &Node, handler: bool) -> Option<Step> {
    let Some(map) = node.as_map() else {
        f.p.add(node.line, node.column, format!("a task is a mapping, not {}", node.what()), "here", None);
        return None;
    };
    let before = f.p.count();
    let mut r = Read::default();
    for (k, v) in map {
        let Some(role) = role_of(f, k, v, &mut r.module) else { continue };
        match role {
            Role::Unknown => r.unknown.push(k),
            Role::Module(s) => {
                if let Some((other, ..)) = r.module {
                    f.p.add_key(
                        k,
                        format!("this task has two modules: '{}' and '{}'", other.name, k.name),
                        Some("a task runs one module: split it in two".into()),
                    );
                } else {
                    r.module = Some((k, v, s));
                }
            }
            Role::Keyword => r.keyword(f, k, v, map, handler),
        }
    }
    unknown_keys(f, &r.unknown, r.module.is_none());
    r.timing(f);
    let Some((mk, mv, short)) = r.module else {
        if r.unknown.is_empty() && f.p.count() == before {
            f.p.add(node.line, node.column, "this task has no module".into(), "no module", Some(modules_help()));
        }
        return None;
    };
    if short.is_empty() {
        return None;
    }
    let mut def = r.def;
    if let Some(Value::String(l)) = def.get_mut("loop")
        && l.contains("_subdir='__SUBDIR__'")
    {
        *l = l.replace("__SUBDIR__", first_found_subdir(&mk.name));
    }
    let mut t = module(f, mk, mv, short, r.args, r.own_defaults)?;
    let Some(mut kind) = t.kind else {
        // A `meta: noop` handler may still be notified: it does nothing, as Ansible's shows
        // no result for it.
        if handler && let Some(n) = def.get("name").and_then(Value::as_str) {
            f.noop_handlers.push(n.to_string());
        }
        return None;
    };
    if let Some((msg, problem)) = t.fails.take() {
        // Ansible fails such a task on each host when it runs: one that says it may fail (its
        // own ignore_errors or failed_when) fails there with Ansible's message; any other
        // would only ever fail, so it is refused now.
        if def.get("ignore_errors") == Some(&Value::Bool(true)) || def.contains_key("failed_when") {
            kind = "assert";
            t.args = json!({"that": ["false"], "fail_msg": msg});
        } else {
            f.p.add(mv.line, mv.column, problem, "in these arguments", None);
        }
    }
    for (k, v) in t.fields {
        def.entry(k).or_insert(v);
    }
    // Ansible sets it for every task, over the task's own vars (its task executor's job vars).
    if let Some(vars) = def.entry("vars").or_insert_with(|| json!({})).as_object_mut() {
        vars.insert("ansible_search_path".into(), search_path(f));
    }
    // A task whose `when` is literally false never runs: Ansible skips it before resolving
    // where it would have run, so its `delegate_to` names no host to check.
    if def.get("when") == Some(&Value::Bool(false)) {
        def.remove("delegate_to");
    }
    // Ansible's copy and template return the file's owner, group, ids (and md5sum where it
    // changed): one more command a host, paid only where a task keeps its result.
    if matches!(kind, "copy" | "template")
        && def.contains_key("register")
        && let Some(args) = t.args.as_object_mut()
    {
        args.insert("file_result".into(), Value::Bool(true));
    }
    // A site's module logs its arguments on the host unless told the task is no_log.
    if kind == LIBRARY
        && def.get("no_log") == Some(&Value::Bool(true))
        && let Some(args) = t.args.as_object_mut()
    {
        args.insert("no_log".into(), Value::Bool(true));
    }
    def.insert(kind.to_string(), t.args);
    def.insert("ansible".into(), Value::Bool(true));
    // Ansible shows an unnamed task by its module, as written.
    if !handler {
        def.entry("name").or_insert_with(|| json!(mk.name));
    }
    // An unnamed handler is notified through its topics only; copctl's handlers have names.
    if let Some(topics) = &r.listen {
        def.entry("name")
            .or_insert_with(|| json!(format!("{} (listen: {}, line {})", mk.name, topics.join(", "), node.line)));
    }
    if f.p.count() != before {
        return None;
    }
    let def: StepDef = match serde_json::from_value(Value::Object(def)) {
        Ok(d) => d,
        Err(e) => {
            f.p.add(mk.line, mk.column, format!("{}: {e}", mk.name), "in this task", None);
            return None;
        }
    };
    step(f, node, def, mv, short, handler, r.listen)
}

/// What a task's keys say, read one by one: its module, the keys that are neither keyword nor
/// module, the step definition so far, and the keywords read with others (`timing`) or later.
#[derive(Default)]
struct Read<'n> {
    module: Option<(&'n Key, &'n Node, &'n str)>,
    unknown: Vec<&'n Key>,
    def: Map<String, Value>,
    args: Option<&'n Node>,
    own_defaults: Option<Map<String, Value>>,
    until_at: Option<&'n Key>,
    retries_at: Option<&'n Key>,
    async_at: Option<(&'n Key, u64)>,
    poll_at: Option<(&'n Key, u64)>,
    listen: Option<Vec<String>>,
}

/// Which a task's key `k` is: a keyword, a module (`module` takes one that is refused, so that
/// the task is not also said to have none), or unknown; `None` where it is a problem (reported).
fn role_of<'n>(
    f: &mut Front,
    k: &'n Key,
    v: &'n Node,
    module: &mut Option<(&'n Key, &'n Node, &'n str)>,
) -> Option<Role<'n>> {
    let role = if KEYWORDS.contains(&k.name.as_str()) {
        Role::Keyword
    } else if let Some((_, why)) = KEYWORDS_NOT_YET.iter().find(|(n, _)| *n == k.name) {
        f.p.add_key(
            k,
            format!("task keyword '{}' is not supported yet", k.name),
            (!why.is_empty()).then(|| why.to_string()),
        );
        return None;
    } else if k.name == "rescue" || k.name == "always" {
        f.p.add_key(
            k,
            format!("{} without block", k.name),
            Some("rescue and always are parts of a block: put the tasks they guard under block:".into()),
        );
        return None;
    } else if STRUCTURE_NOT_YET.contains(&k.name.as_str()) {
        f.p.add_key(k, format!("{} not supported yet", structure_name(&k.name)), None);
        return None;
    } else {
        match modules::short_name(&k.name) {
            // A site's own module of that name comes first, as Ansible's library paths do
            // (for a bare name or `ansible.legacy.`; `ansible.builtin.copy` is Ansible's).
            Some(s)
                if (!k.name.contains('.') || k.name.starts_with("ansible.legacy."))
                    && library_module(f, s).is_some() =>
            {
                Role::Module(LIBRARY)
            }
            Some(s) if SUPPORTED.contains(&s) => Role::Module(s),
            Some(s) if NOT_YET.iter().any(|(n, _)| *n == s) => {
                let why = NOT_YET.iter().find(|(n, _)| *n == s).map(|(_, w)| *w).unwrap_or("");
                let help = if why.is_empty() { modules_help() } else { format!("{why}; {}", modules_help()) };
                f.p.add_key(k, format!("module '{}' is not supported yet", k.name), Some(help));
                *module = module.or(Some((k, v, "")));
                return None;
            }
            None => {
                f.p.add_key(
                    k,
                    format!(
                        "module '{}' is not supported: copctl runs ansible.builtin modules and, of the \
                         collections', ansible.posix's authorized_key, mount and sysctl and community.general's \
                         modprobe and pam_limits",
                        k.name
                    ),
                    Some(modules_help()),
                );
                *module = module.or(Some((k, v, "")));
                return None;
            }
            Some(_) => Role::Unknown,
        }
    };
    Some(role)
}

impl<'n> Read<'n> {
    /// One of the task's keywords (`KEYWORDS`) into the step definition, or kept for later.
    fn keyword(&mut self, f: &mut Front, k: &'n Key, v: &'n Node, map: &[(Key, Node)], handler: bool) {
        let n = k.name.as_str();
        let value = match n {
            "until" => {
                self.until_at = Some(k);
                match condition(f, k, v) {
                    Some(Value::Array(a)) => Some(Value::from(
                        a.iter()
                            .map(|e| format!("({})", e.as_str().unwrap_or_default()))
                            .collect::<Vec<_>>()
                            .join(" and "),
                    )),
                    Some(Value::Bool(b)) => Some(Value::from(b.to_string())),
                    other => other,
                }
            }
            "retries" | "delay" if v.as_str().is_some_and(crate::template::is_template) => {
                if k.name == "retries" {
                    self.retries_at = Some(k);
                }
                v.as_str().map(Value::from)
            }
            "retries" => {
                self.retries_at = Some(k);
                number(f, k, v).map(Value::from)
            }
            "async" => {
                self.async_at = number(f, k, v).map(|n| (k, n));
                None
            }
            "poll" => {
                self.poll_at = number(f, k, v).map(|n| (k, n));
                None
            }
            "args" => {
                self.args = Some(v);
                None
            }
            "module_defaults" => {
                self.own_defaults = Some(module_defaults(f, k, v));
                None
            }
            "listen" => {
                if handler {
                    self.listen = names(f, k, v, false);
                } else {
                    f.p.add_key(
                        k,
                        "listen on a task: it is a handler's keyword".into(),
                        Some("put the task under the play's handlers:, or notify by name".into()),
                    );
                }
                None
            }
            _ => keyword_value(f, k, v, map),
        };
        if let Some(value) = value {
            let key = if n == "loop" || n.starts_with("with_") { "loop" } else { n };
            if self.def.contains_key(key) {
                f.p.add_key(k, "a task loops once: one of loop or a with_ keyword".into(), None);
            }
            self.def.insert(key.to_string(), value);
        }
    }

    /// `async` with a poll: Ansible waits for the task, polling, and fails it past the async
    /// time; that is the task run with that timeout. Without polling (`poll: 0`), the task goes
    /// on in the background for an `async_status` to read: copctl has no background jobs. And
    /// `retries` needs `until`.
    fn timing(&mut self, f: &mut Front) {
        match (self.async_at, self.poll_at) {
            (Some((k, _)), Some((_, 0))) => f.p.add_key(
                k,
                "async with poll: 0 (a background job for async_status) is not supported yet".into(),
                Some("give poll a number of seconds: copctl then runs the task with async as its timeout".into()),
            ),
            (Some((_, secs)), _) => {
                let t = self.def.get("timeout").and_then(Value::as_u64).map_or(secs, |t| t.min(secs));
                self.def.insert("timeout".into(), Value::from(t));
            }
            (None, Some((k, _))) => {
                f.p.add_key(k, "poll without async".into(), Some("poll is how often an async task is checked".into()))
            }
            (None, None) => {}
        }
        if let (Some(r), None) = (self.retries_at, self.until_at) {
            f.p.add_key(
                r,
                "retries without until is not supported yet".into(),
                Some("add until: the condition to wait for".into()),
            );
        }
    }
}

/// The value of a keyword read on its own (not `Read::keyword`'s).
fn keyword_value(f: &mut Front, k: &Key, v: &Node, map: &[(Key, Node)]) -> Option<Value> {
    match k.name.as_str() {
        "name" => text(f, k, v).map(Value::from),
        "when" | "changed_when" | "failed_when" => condition(f, k, v),
        "register" | "delegate_to" => text(f, k, v).map(Value::from),
        "ignore_errors" | "ignore_unreachable" | "become" | "run_once" | "check_mode" | "diff" | "no_log" => {
            flag(f, k, v).map(Value::from)
        }
        // A handler's is checked when the play's handlers are known (chunks.rs).
        "notify" => names(f, k, v, false).map(Value::from),
        "tags" => names(f, k, v, true).map(Value::from),
        "loop"
        | "with_items"
        | "with_dict"
        | "with_list"
        | "with_sequence"
        | "with_together"
        | "with_nested"
        | "with_subelements"
        | "with_first_found"
        | "with_fileglob"
        | "with_indexed_items"
        | "with_inventory_hostnames"
        | "with_lines"
        | "with_random_choice" => loop_items(f, k, v),
        "loop_control" => loop_control(f, k, v, &own_vars(map)),
        "become_user" => become_user(f, k, v).map(Value::from),
        "become_method" => become_method(f, k, v).map(Value::from),
        // Ansible's delay is a float (seconds, `0.5`).
        "delay" => match v.to_value() {
            Value::Number(n) if n.as_f64().is_some_and(|d| d >= 0.0) && n.as_u64().is_none() => {
                Some(Value::from(n.to_string()))
            }
            _ => number(f, k, v).map(Value::from),
        },
        "timeout" | "throttle" => number(f, k, v).map(Value::from),
        "vars" => vars(f, k, v).map(Value::Object),
        "environment" => vars(f, k, v).map(|m| {
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| {
                        let t = match v {
                            Value::String(s) => s,
                            other => other.to_string(),
                        };
                        (k, Value::String(t))
                    })
                    .collect(),
            )
        }),
        _ => None,
    }
}

/// A key that is neither keyword nor module: a module when the task has none (`no_module`) and
/// it is the only such key, else a misspelt keyword.
fn unknown_keys(f: &mut Front, unknown: &[&Key], no_module: bool) {
    for k in unknown {
        if no_module && unknown.len() == 1 {
            let close = closest(&k.name, SUPPORTED);
            let help = if close.is_empty() {
                modules_help()
            } else {
                format!("did you mean {}? {}", close.join(", "), modules_help())
            };
            f.p.add_key(k, format!("unknown module '{}'", k.name), Some(help));
        } else {
            let close = closest(&k.name, KEYWORDS);
            let help = if close.is_empty() {
                format!("task keywords copctl knows: {}", KEYWORDS.join(", "))
            } else {
                format!("did you mean {}?", close.join(", "))
            };
            f.p.add_key(k, format!("unknown task keyword '{}'", k.name), Some(help));
        }
    }
}

/// The task's module (`mk: mv`, `short` its name, `args` the task's `args`) translated, under
/// the `module_defaults` in force and the task's own (`own_defaults`).
fn module(
    f: &mut Front,
    mk: &Key,
    mv: &Node,
    short: &str,
    args: Option<&Node>,
    own_defaults: Option<Map<String, Value>>,
) -> Option<modules::Translated> {
    let library =
        if short == LIBRARY { modules::short_name(&mk.name).and_then(|s| library_module(f, s)) } else { None };
    let vaulted = modules::Vaulted { vault: f.vault.as_ref(), names: &mut f.secret_vars };
    let pushed = own_defaults.is_some();
    f.p.module_defaults.extend(own_defaults);
    let t = match library {
        Some(path) => modules::library(&mut f.p, &mk.name, &path, mv, args),
        None => modules::translate(&mut f.p, short, mv, args, &f.place.search, vaulted),
    };
    if let Some(t) = &t
        && t.args.get("args_from").is_some()
    {
        // Ansible's own warning: a mapping from data can carry arguments the author never wrote.
        f.warnings.push(format!(
            "{}:{}:{}: using a template for task args is unsafe in some situations (a variable's \
             mapping may hold arguments the task never wrote)",
            f.p.source.name, mv.line, mv.column
        ));
    }
    if pushed {
        f.p.module_defaults.pop();
    }
    t
}

/// The step of a task's definition `def` (its module's value `mv`, named `short`): `fail` and
/// `meta` tasks marked as such, a handler's topics (`listen`) noted.
fn step(
    f: &mut Front,
    node: &Node,
    def: StepDef,
    mv: &Node,
    short: &str,
    handler: bool,
    listen: Option<Vec<String>>,
) -> Option<Step> {
    match crate::playbook::validate_step(&f.p.source, def, node.line, node.column, handler) {
        Ok(mut s) => {
            if short == "fail" {
                s.module = Some("fail".into());
            }
            // Not counted, as Ansible's meta tasks are not; the engine clears the host's pending
            // failure there (run/mod.rs).
            if short == "meta" {
                s.module = Some(match mv.as_str().map(str::trim) {
                    Some("end_host") => crate::playbook::END_HOST.into(),
                    // Unconditional, every host ends the play where it reaches it, as
                    // Ansible's all do at once; with a `when`, Ansible ends it for the
                    // others too, wherever they are: copctl's hosts do not wait for each
                    // other at a task.
                    Some("end_play") if s.def.when.is_some() => {
                        f.p.add(
                            node.line,
                            node.column,
                            "meta: end_play with a when is not supported yet".into(),
                            "here",
                            Some("copctl's hosts do not wait for each other at a task: use meta: end_host with the when, which ends the play for the host it holds on".into()),
                        );
                        return None;
                    }
                    Some("end_play") => crate::playbook::END_HOST.into(),
                    _ => crate::playbook::CLEAR_HOST_ERRORS.into(),
                });
                s.gate = true;
            }
            if let Some(topics) = listen {
                f.listening.push((s.name.clone(), (f.p.source.name.clone(), s.line), topics));
            }
            Some(s)
        }
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}

fn structure_name(key: &str) -> String {
    match key {
        "block" | "rescue" | "always" => format!("{key} (block/rescue/always) is"),
        "roles" => "roles are".into(),
        other => format!("{other} is"),
    }
}

pub fn modules_help() -> String {
    format!("copctl runs these Ansible modules: {}", SUPPORTED.join(", "))
}
