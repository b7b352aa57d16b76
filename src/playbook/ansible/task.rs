//! One Ansible task (or handler) → one native step: its keywords mapped to the step's common
//! fields, its module to the step's kind (modules.rs). A keyword copctl does not have is a
//! problem at its key; so is a key that is neither a keyword nor a module.

use serde_json::{Map, Value, json};

use super::modules::{self, NOT_YET, SUPPORTED};
use super::node::{Key, Kind, Node};
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

/// A task's condition (`when`, `changed_when`, `failed_when`) as the native one: a boolean, an
/// expression or a list of them.
pub(super) fn condition(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match &v.kind {
        Kind::Scalar(Value::Bool(b)) => Some(json!(b)),
        Kind::Scalar(Value::String(s)) => Some(json!(s)),
        Kind::Scalar(Value::Number(n)) => Some(json!(n.to_string())),
        Kind::Seq(items) => {
            let mut out = Vec::new();
            for i in items {
                match &i.kind {
                    Kind::Scalar(Value::String(s)) => out.push(s.clone()),
                    Kind::Scalar(Value::Bool(b)) => out.push(b.to_string()),
                    _ => {
                        f.p.add(i.line, i.column, format!("{}: each condition is an expression", k.name), "here", None);
                        return None;
                    }
                }
            }
            Some(json!(out))
        }
        _ => {
            f.p.add_key(
                k,
                format!("{}: a condition is an expression or a list of them, not {}", k.name, v.what()),
                None,
            );
            None
        }
    }
}

pub(super) fn flag(f: &mut Front, k: &Key, v: &Node) -> Option<bool> {
    match &v.kind {
        Kind::Scalar(Value::Bool(b)) => Some(*b),
        Kind::Scalar(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" | "1" => Some(true),
            "no" | "false" | "off" | "0" => Some(false),
            _ => {
                f.p.add_key(k, format!("{}: a literal boolean is supported here, not '{s}'", k.name), None);
                None
            }
        },
        _ => {
            f.p.add_key(k, format!("{}: must be a boolean, not {}", k.name, v.what()), None);
            None
        }
    }
}

pub(super) fn text(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    match &v.kind {
        Kind::Scalar(Value::String(s)) => Some(s.clone()),
        Kind::Scalar(Value::Number(n)) => Some(n.to_string()),
        _ => {
            f.p.add_key(k, format!("{}: must be text, not {}", k.name, v.what()), None);
            None
        }
    }
}

pub(super) fn number(f: &mut Front, k: &Key, v: &Node) -> Option<u64> {
    match &v.kind {
        Kind::Scalar(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Kind::Scalar(Value::String(s)) if s.trim().parse::<u64>().is_ok() => s.trim().parse().ok(),
        _ => {
            f.p.add_key(k, format!("{}: a literal whole number is supported here, not {}", k.name, v.what()), None);
            None
        }
    }
}

/// Names, from text (`a,b` splits as Ansible's tags do) or a list.
pub(super) fn names(f: &mut Front, k: &Key, v: &Node, split_commas: bool) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let items: Vec<&Node> = match &v.kind {
        Kind::Seq(s) => s.iter().collect(),
        _ => vec![v],
    };
    for i in items {
        match &i.kind {
            Kind::Scalar(Value::String(s)) if split_commas => {
                out.extend(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()))
            }
            Kind::Scalar(Value::String(s)) => out.push(s.clone()),
            Kind::Scalar(Value::Number(n)) => out.push(n.to_string()),
            _ => {
                f.p.add(i.line, i.column, format!("{}: each entry is a name, not {}", k.name, i.what()), "here", None);
                return None;
            }
        }
    }
    Some(out)
}

/// `become_user`: a user named literally (the step's connection is chosen before templates
/// render for it).
/// `become_user`: a name, or a template rendered for each host when the task runs.
pub(super) fn become_user(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    text(f, k, v)
}

/// `become_method`: `sudo` or `su` (by their FQCNs too), the two copctl becomes with.
pub(super) fn become_method(f: &mut Front, k: &Key, v: &Node) -> Option<String> {
    match v.as_str().map(str::trim) {
        Some("sudo" | "ansible.builtin.sudo") => Some("sudo".into()),
        Some("su" | "ansible.builtin.su") => Some("su".into()),
        Some(other) => {
            f.p.add_key(
                k,
                format!("become_method: '{other}' is not supported"),
                Some("copctl becomes with sudo or su".into()),
            );
            None
        }
        None => {
            f.p.add_key(k, format!("become_method: a method's name, not {}", v.what()), None);
            None
        }
    }
}

/// A mapping of variables.
pub(super) fn vars(f: &mut Front, k: &Key, v: &Node) -> Option<Map<String, Value>> {
    match (&v.kind, v.to_value()) {
        (Kind::Map(_), Value::Object(m)) => Some(m),
        (Kind::Scalar(Value::Null), _) => Some(Map::new()),
        _ => {
            f.p.add_key(k, format!("{}: must be a mapping, not {}", k.name, v.what()), None);
            None
        }
    }
}

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

/// Translates one task (a handler when `handler`). `None` when it has problems (reported) or
/// does nothing (`meta: noop`).
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

pub fn task(f: &mut Front, node: &Node, handler: bool) -> Option<Step> {
    let Some(map) = node.as_map() else {
        f.p.add(node.line, node.column, format!("a task is a mapping, not {}", node.what()), "here", None);
        return None;
    };
    let before = f.p.count();
    let mut module: Option<(&Key, &Node, &str)> = None;
    let mut unknown: Vec<&Key> = Vec::new();
    let mut def = Map::new();
    let mut args: Option<&Node> = None;
    let mut own_defaults = None;
    let mut until_at: Option<&Key> = None;
    let mut retries_at: Option<&Key> = None;
    let mut async_at: Option<(&Key, u64)> = None;
    let mut poll_at: Option<(&Key, u64)> = None;
    let mut listen: Option<Vec<String>> = None;
    for (k, v) in map {
        let role = if KEYWORDS.contains(&k.name.as_str()) {
            Role::Keyword
        } else if let Some((_, why)) = KEYWORDS_NOT_YET.iter().find(|(n, _)| *n == k.name) {
            f.p.add_key(
                k,
                format!("task keyword '{}' is not supported yet", k.name),
                (!why.is_empty()).then(|| why.to_string()),
            );
            continue;
        } else if k.name == "rescue" || k.name == "always" {
            f.p.add_key(
                k,
                format!("{} without block", k.name),
                Some("rescue and always are parts of a block: put the tasks they guard under block:".into()),
            );
            continue;
        } else if STRUCTURE_NOT_YET.contains(&k.name.as_str()) {
            f.p.add_key(k, format!("{} not supported yet", structure_name(&k.name)), None);
            continue;
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
                    module = module.or(Some((k, v, "")));
                    continue;
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
                    module = module.or(Some((k, v, "")));
                    continue;
                }
                Some(_) => Role::Unknown,
            }
        };
        match role {
            Role::Unknown => unknown.push(k),
            Role::Module(s) => {
                if let Some((other, ..)) = module {
                    f.p.add_key(
                        k,
                        format!("this task has two modules: '{}' and '{}'", other.name, k.name),
                        Some("a task runs one module: split it in two".into()),
                    );
                } else {
                    module = Some((k, v, s));
                }
            }
            Role::Keyword => {
                let n = k.name.as_str();
                let value = match n {
                    "name" => text(f, k, v).map(Value::from),
                    "when" | "changed_when" | "failed_when" => condition(f, k, v),
                    "register" | "delegate_to" => text(f, k, v).map(Value::from),
                    "ignore_errors" | "ignore_unreachable" | "become" | "run_once" | "check_mode" | "diff"
                    | "no_log" => flag(f, k, v).map(Value::from),
                    // A handler's is checked when the play's handlers are known (mod.rs).
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
                    "until" => {
                        until_at = Some(k);
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
                            retries_at = Some(k);
                        }
                        v.as_str().map(Value::from)
                    }
                    "retries" => {
                        retries_at = Some(k);
                        number(f, k, v).map(Value::from)
                    }
                    // Ansible's delay is a float (seconds, `0.5`).
                    "delay" => match v.to_value() {
                        Value::Number(n) if n.as_f64().is_some_and(|d| d >= 0.0) && n.as_u64().is_none() => {
                            Some(Value::from(n.to_string()))
                        }
                        _ => number(f, k, v).map(Value::from),
                    },
                    "timeout" | "throttle" => number(f, k, v).map(Value::from),
                    "async" => {
                        async_at = number(f, k, v).map(|n| (k, n));
                        None
                    }
                    "poll" => {
                        poll_at = number(f, k, v).map(|n| (k, n));
                        None
                    }
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
                    "args" => {
                        args = Some(v);
                        None
                    }
                    "module_defaults" => {
                        own_defaults = Some(super::module_defaults(f, k, v));
                        None
                    }
                    "listen" => {
                        if handler {
                            listen = names(f, k, v, false);
                        } else {
                            f.p.add_key(
                                k,
                                "listen on a task: it is a handler's keyword".into(),
                                Some("put the task under the play's handlers:, or notify by name".into()),
                            );
                        }
                        None
                    }
                    _ => None,
                };
                if let Some(value) = value {
                    let key = if n == "loop" || n.starts_with("with_") { "loop" } else { n };
                    if def.contains_key(key) {
                        f.p.add_key(k, "a task loops once: one of loop or a with_ keyword".into(), None);
                    }
                    def.insert(key.to_string(), value);
                }
            }
        }
    }
    // A key that is neither: a module when the task has none, else a misspelt keyword.
    for k in &unknown {
        if module.is_none() && unknown.len() == 1 {
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
    // `async` with a poll: Ansible waits for the task, polling, and fails it past the async
    // time; that is the task run with that timeout. Without polling (`poll: 0`), the task goes
    // on in the background for an `async_status` to read: copctl has no background jobs.
    match (async_at, poll_at) {
        (Some((k, _)), Some((_, 0))) => f.p.add_key(
            k,
            "async with poll: 0 (a background job for async_status) is not supported yet".into(),
            Some("give poll a number of seconds: copctl then runs the task with async as its timeout".into()),
        ),
        (Some((_, secs)), _) => {
            let t = def.get("timeout").and_then(Value::as_u64).map_or(secs, |t| t.min(secs));
            def.insert("timeout".into(), Value::from(t));
        }
        (None, Some((k, _))) => {
            f.p.add_key(k, "poll without async".into(), Some("poll is how often an async task is checked".into()))
        }
        (None, None) => {}
    }
    if let (Some(r), None) = (retries_at, until_at) {
        f.p.add_key(
            r,
            "retries without until is not supported yet".into(),
            Some("add until: the condition to wait for".into()),
        );
    }
    let Some((mk, mv, short)) = module else {
        if unknown.is_empty() && f.p.count() == before {
            f.p.add(node.line, node.column, "this task has no module".into(), "no module", Some(modules_help()));
        }
        return None;
    };
    if short.is_empty() {
        return None;
    }
    if let Some(Value::String(l)) = def.get_mut("loop")
        && l.contains("_subdir='__SUBDIR__'")
    {
        *l = l.replace("__SUBDIR__", first_found_subdir(&mk.name));
    }
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
    let mut t = t?;
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
    if let Some(topics) = &listen {
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

/// `with_items`: `loop` over the list flattened one level, as Ansible does: a literal list when
/// the playbook is loaded, a templated one when the loop runs.
fn with_items(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                match i {
                    Value::Array(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            Some(Value::Array(out))
        }
        // One expression: flattened when the loop runs.
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | with_items_flatten }}}}")))
        }
        _ => {
            f.p.add_key(
                k,
                "with_items: a list, or one {{ expression }} giving a list".into(),
                Some("write loop: instead".into()),
            );
            None
        }
    }
}

/// A task's own `vars:` as written (what a templated `loop_var` may name).
pub(super) fn own_vars(map: &[(Key, Node)]) -> Map<String, Value> {
    map.iter().find(|(k, _)| k.name == "vars").and_then(|(_, v)| v.to_value().as_object().cloned()).unwrap_or_default()
}

/// The loop keywords a task (or an include) takes.
pub(super) const LOOPS: &[&str] = &[
    "loop",
    "with_items",
    "with_dict",
    "with_list",
    "with_sequence",
    "with_together",
    "with_nested",
    "with_subelements",
    "with_first_found",
];

/// One of `LOOPS` as the native `loop`: a list, or a template giving one when the loop runs.
pub(super) fn loop_items(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match k.name.as_str() {
        "with_items" => with_items(f, k, v),
        "with_dict" => with_dict(f, k, v),
        "with_list" => with_list(f, k, v),
        "with_sequence" => with_sequence(f, k, v),
        "with_together" => with_together(f, k, v),
        "with_nested" => with_nested(f, k, v),
        "with_subelements" => with_subelements(f, k, v),
        "with_first_found" => with_first_found(f, k, v),
        "with_fileglob" => with_fileglob(f, k, v),
        "with_indexed_items" => with_lookup(f, k, v, "indexed_items"),
        "with_inventory_hostnames" => with_lookup(f, k, v, "inventory_hostnames"),
        "with_lines" => with_lookup(f, k, v, "lines"),
        "with_random_choice" => with_lookup(f, k, v, "random_choice"),
        _ => Some(v.to_value()),
    }
}

/// `loop_control`: `loop_var`, `index_var`, `label`, `pause` and `extended` as Ansible has
/// them; a `loop_var` templated from one of the task's own `vars` (`vars`) is that value.
pub(super) fn loop_control(f: &mut Front, k: &Key, v: &Node, vars: &Map<String, Value>) -> Option<Value> {
    let Some(m) = v.as_map() else {
        f.p.add_key(k, format!("loop_control: must be a mapping, not {}", v.what()), None);
        return None;
    };
    let mut out = Map::new();
    for (ck, cv) in m {
        match ck.name.as_str() {
            n @ ("loop_var" | "index_var" | "label") => match cv.to_value() {
                Value::String(s) if n == "loop_var" && s.contains("{{") => {
                    match lone_expression(&s).and_then(|e| vars.get(e)).and_then(Value::as_str) {
                        Some(name) if !name.contains("{{") => {
                            out.insert(n.into(), Value::from(name));
                        }
                        _ => f.p.add_key(
                            ck,
                            "loop_control: a loop_var templated from other than the task's own vars is not supported yet"
                                .into(),
                            None,
                        ),
                    }
                }
                Value::String(s) => {
                    out.insert(n.into(), Value::String(s));
                }
                other => f.p.add_key(ck, format!("loop_control: {n} must be text, not {other}"), None),
            },
            "pause" => match cv.to_value() {
                Value::Number(x) if x.as_f64().is_some_and(|p| p >= 0.0) => {
                    out.insert("pause".into(), Value::Number(x));
                }
                other => f.p.add_key(ck, format!("loop_control: pause is a number of seconds, not {other}"), None),
            },
            "extended" => {
                if let Some(b) = flag(f, ck, cv) {
                    out.insert("extended".into(), Value::Bool(b));
                }
            }
            "extended_allitems" => {
                if let Some(b) = flag(f, ck, cv) {
                    out.insert("extended_allitems".into(), Value::Bool(b));
                }
            }
            "break_when" => match cv.to_value() {
                Value::String(c) => {
                    out.insert("break_when".into(), json!([c]));
                }
                Value::Bool(b) => {
                    out.insert("break_when".into(), json!([if b { "True" } else { "False" }]));
                }
                Value::Array(cs) if cs.iter().all(Value::is_string) => {
                    out.insert("break_when".into(), Value::Array(cs));
                }
                other => f.p.add_key(
                    ck,
                    format!("loop_control: break_when is a condition or a list of them, not {other}"),
                    None,
                ),
            },
            other => f.p.add_key(
                ck,
                format!("loop_control: {other} is not supported yet"),
                Some(
                    "loop_control takes: loop_var, index_var, label, pause, extended, extended_allitems, break_when"
                        .into(),
                ),
            ),
        }
    }
    Some(Value::Object(out))
}

/// `with_dict`: `loop` over the mapping's `{key, value}` items, as Ansible's dict lookup gives
/// them: a literal mapping when the playbook is loaded, a templated one when the loop runs.
fn with_dict(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Object(m) => {
            Some(Value::Array(m.into_iter().map(|(key, value)| json!({"key": key, "value": value})).collect()))
        }
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | with_dict_items }}}}")))
        }
        _ => {
            f.p.add_key(k, "with_dict: a mapping, or one {{ expression }} giving a mapping".into(), None);
            None
        }
    }
}

/// One `{{ expression }}` and nothing else: its expression.
pub(super) fn lone_expression(s: &str) -> Option<&str> {
    let t = s.trim();
    (t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1)
        .then(|| t.trim_start_matches("{{").trim_end_matches("}}").trim())
}

/// `with_list`: `loop` as it is, unflattened (Ansible's list lookup).
fn with_list(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        a @ Value::Array(_) => Some(a),
        Value::String(ref s) if let Some(expr) = lone_expression(s) => {
            Some(Value::String(format!("{{{{ ({expr}) | with_list_terms }}}}")))
        }
        _ => {
            f.p.add_key(k, "with_list: a list, or one {{ expression }} giving a list".into(), None);
            None
        }
    }
}

/// `with_together`: the lists zipped item by item, a shorter list's missing items null (Ansible's
/// together lookup, `zip_longest`), from literal lists or `{{ expressions }}` each giving one.
fn with_together(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let Value::Array(lists) = v.to_value() else {
        f.p.add_key(k, "with_together: a list of lists".into(), None);
        return None;
    };
    if lists.is_empty() {
        f.p.add_key(k, "with_together: requires at least one element in each list".into(), None);
        return None;
    }
    if let Some(literal) = lists.iter().map(|l| l.as_array().cloned()).collect::<Option<Vec<_>>>() {
        let n = literal.iter().map(Vec::len).max().unwrap_or(0);
        return Some(Value::Array(
            (0..n)
                .map(|i| Value::Array(literal.iter().map(|l| l.get(i).cloned().unwrap_or(Value::Null)).collect()))
                .collect(),
        ));
    }
    let mut exprs = Vec::new();
    for l in &lists {
        match l {
            Value::Array(_) => exprs.push(l.to_string()),
            Value::String(s) => match lone_expression(s) {
                Some(e) => exprs.push(format!("({e})")),
                None => exprs.push(Value::String(s.clone()).to_string()),
            },
            other => {
                f.p.add_key(k, format!("with_together: each entry is a list, not {other}"), None);
                return None;
            }
        }
    }
    Some(Value::String(format!("{{{{ [{}] | with_together }}}}", exprs.join(", "))))
}

/// `with_nested`: every combination of the lists, the first outermost (Ansible's nested
/// lookup), computed when the loop runs; a term may be a list or a template giving one.
fn with_nested(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) if !a.is_empty() => a,
        Value::String(ref s) if let Some(e) = lone_expression(s) => {
            return Some(Value::String(format!("{{{{ ({e}) | with_nested }}}}")));
        }
        _ => {
            f.p.add_key(k, "with_nested requires at least one element in the nested list".into(), None);
            return None;
        }
    };
    let mut exprs = Vec::new();
    for t in &terms {
        match template_expr(t) {
            Some(e) => exprs.push(e),
            None => {
                f.p.add_key(k, format!("with_nested: a {{% %}} block in a term ({t}) is not supported yet"), None);
                return None;
            }
        }
    }
    Some(Value::String(format!("{{{{ [{}] | with_nested }}}}", exprs.join(", "))))
}

/// `with_subelements`: `[LIST, KEY]` or `[LIST, KEY, {skip_missing: BOOL}]`, each element of the
/// list (a template, or written out) with each item of its KEY list, as Ansible's subelements
/// lookup pairs them when the loop runs (the `subelements` filter with the lookup's rules).
fn with_subelements(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let help = || Some("with_subelements: [LIST, KEY] or [LIST, KEY, {skip_missing: true}]".to_string());
    let Value::Array(terms) = v.to_value() else {
        f.p.add_key(k, "subelements lookup expects a list of two or three items".into(), help());
        return None;
    };
    let (list, key, flags) = match terms.as_slice() {
        [l, Value::String(key)] => (l, key, None),
        [l, Value::String(key), Value::Object(flags)] => (l, key, Some(flags)),
        _ => {
            f.p.add_key(k, "subelements lookup expects a list of two or three items, first a dict or a list, second a string pointing to the subkey".into(), help());
            return None;
        }
    };
    let skip = match flags.map(|m| m.iter().collect::<Vec<_>>()).as_deref() {
        None | Some([]) => false,
        Some([(name, Value::Bool(b))]) if *name == "skip_missing" => *b,
        _ => {
            f.p.add_key(k, "the optional third item must be a dict with flags ['skip_missing']".into(), help());
            return None;
        }
    };
    if key.contains("{{") || key.contains("{%") {
        f.p.add_key(k, "with_subelements: a templated key is not supported yet".into(), help());
        return None;
    }
    let Some(e) = template_expr(list) else {
        f.p.add_key(k, "with_subelements: a {% %} block in the list is not supported yet".into(), None);
        return None;
    };
    Some(Value::String(format!(
        "{{{{ {e} | subelements({}, skip_missing={}, lookup=true) }}}}",
        json!(key),
        if skip { "true" } else { "false" }
    )))
}

/// `with_first_found`: a loop over the first file of the terms that exists on the bastion (none,
/// with `skip`), found as Ansible's first_found lookup finds it; the module's name picks the
/// subdirectory looked in first (`__SUBDIR__` until it is known: `first_found_subdir`).
fn with_first_found(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let term = v.to_value();
    match template_expr(&term) {
        Some(e) => Some(Value::String(format!("{{{{ query('first_found', {e}, _subdir='__SUBDIR__') }}}}"))),
        None => {
            f.p.add_key(k, "with_first_found: a {% %} block inside a term is not supported yet".into(), None);
            None
        }
    }
}

/// `with_fileglob`: a loop over the files the patterns match on the bastion (Ansible's fileglob
/// lookup: `files/` and the search path), found when the loop runs.
fn with_fileglob(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) => a,
        other => vec![other],
    };
    match terms.iter().map(template_expr).collect::<Option<Vec<_>>>() {
        Some(e) => Some(Value::String(format!("{{{{ query('fileglob', {}) }}}}", e.join(", ")))),
        None => {
            f.p.add_key(k, "with_fileglob: a {% %} block inside a pattern is not supported yet".into(), None);
            None
        }
    }
}

/// `with_<lookup>`: the lookup's list over the terms (a list, or one term), when the loop runs.
fn with_lookup(f: &mut Front, k: &Key, v: &Node, lookup: &str) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) => a,
        Value::String(s) if lone_expression(&s).is_some() => {
            let e = lone_expression(&s).unwrap_or_default().to_string();
            return Some(Value::String(format!("{{{{ query('{lookup}', ({e})) }}}}")));
        }
        other => vec![other],
    };
    match terms.iter().map(template_expr).collect::<Option<Vec<_>>>() {
        Some(e) => Some(Value::String(format!("{{{{ query('{lookup}', {}) }}}}", e.join(", ")))),
        None => {
            f.p.add_key(k, format!("{}: a {{% %}} block inside a term is not supported yet", k.name), None);
            None
        }
    }
}

/// The subdirectory Ansible's `with_first_found` looks in for a module: `templates` for a
/// template module, `vars` for include_vars, else `files`.
pub(super) fn first_found_subdir(module_key: &str) -> &'static str {
    ["template", "var", "file"].into_iter().find(|s| module_key.contains(s)).map_or("files", |s| match s {
        "template" => "templates",
        "var" => "vars",
        _ => "files",
    })
}

/// A value as a Jinja expression giving it, its texts' `{{ expressions }}` evaluated in place
/// (`"{{ os }}.yml"` is `(os) ~ ".yml"`); none for a `{% %}` block.
fn template_expr(v: &Value) -> Option<String> {
    Some(match v {
        Value::String(s) if s.contains("{%") => return None,
        Value::String(s) if let Some(e) = lone_expression(s) => format!("({e})"),
        Value::String(s) if s.contains("{{") => {
            let parts = regex::Regex::new(r"(?s)\{\{(.*?)\}\}").expect("a valid pattern");
            let mut out = Vec::new();
            let mut last = 0;
            for c in parts.captures_iter(s) {
                let m = c.get(0).expect("the match");
                if m.start() > last {
                    out.push(json!(&s[last..m.start()]).to_string());
                }
                out.push(format!("(({}) | string)", c[1].trim()));
                last = m.end();
            }
            if last < s.len() {
                out.push(json!(&s[last..]).to_string());
            }
            format!("({})", out.join(" ~ "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(template_expr).collect::<Option<Vec<_>>>()?.join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| Some(format!("{}: {}", json!(k), template_expr(v)?)))
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
        other => jinja_literal(other)?,
    })
}

/// A value without templates as a Jinja literal (`none`, `true`, numbers, quoted texts); none
/// when a text in it holds a template.
fn jinja_literal(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => "none".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.contains("{{") || s.contains("{%") => return None,
        Value::String(s) => json!(s).to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(jinja_literal).collect::<Option<Vec<_>>>()?.join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| Some(format!("{}: {}", json!(k), jinja_literal(v)?)))
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
    })
}

/// `with_sequence`: Ansible's sequence lookup, `start=1 end=3 stride=1 format=%d` or
/// `count=3` (as `k=v` text or a mapping), computed when the playbook is loaded; a templated
/// one (`end={{ n }}`) is the lookup, run when the loop does.
fn with_sequence(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let spec = match v.to_value() {
        Value::String(s) if s.contains("{{") || s.contains("{%") => return with_lookup(f, k, v, "sequence"),
        Value::String(s) => s,
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().map(String::from).unwrap_or(v.to_string())))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Number(n) => format!("end={n}"),
        other => {
            f.p.add_key(k, format!("with_sequence: a `start= end=` or `count=` text, not {other}"), None);
            return None;
        }
    };
    match crate::template::sequence::sequence(&spec) {
        Ok(items) => Some(Value::Array(items.into_iter().map(Value::String).collect())),
        Err(e) => {
            f.p.add_key(k, format!("with_sequence: {e}"), None);
            None
        }
    }
}

pub fn modules_help() -> String {
    format!("copctl runs these Ansible modules: {}", SUPPORTED.join(", "))
}
