//! One play → native plays and their handlers: the play's keywords read (hosts, connection,
//! vars, become, serial...), its roles, handlers and task sections expanded, what every task
//! inherits from the play applied, and the play split into one native play per chunk where its
//! handlers must run between sections (chunks.rs).

use serde_json::{Value, json};

use super::chunks::{self, Chunk, section};
use super::handlers::{copies_at_flushes, play_handlers, unique_handler_names};
use super::node::{Key, Kind, Node};
use super::vars_files::{vars_files, vars_files_step};
use super::{Front, block, closest, expand, keywords, known, roles};
use crate::playbook::{Batch, Play, Step, StepDef, parse_percent};

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

/// One play (several native plays where its handlers must run between sections) and its
/// handlers.
pub(super) fn play(
    f: &mut Front,
    node: &Node,
    earlier: &[Play],
    earlier_handlers: &[Step],
) -> Option<(Vec<Play>, Vec<Step>)> {
    let Some(map) = node.as_map() else {
        f.p.add(node.line, node.column, format!("a play is a mapping, not {}", node.what()), "here", None);
        return None;
    };
    let before = f.p.count();
    let get = |k: &str| keyword(map, k);
    if let Some((k, _)) = get("import_playbook").or_else(|| get("include_playbook")) {
        f.p.add_key(
            k,
            format!("{} is not supported yet", k.name),
            Some("run the playbooks one after the other: copctl run a.yml b.yml".into()),
        );
        return None;
    }
    check_keywords(f, map);
    let hosts = hosts(f, node, map);
    connection(f, map, &hosts);
    // Ansible names an unnamed play after its hosts; the engine's play names are unique.
    let base = match get("name").map(|(_, v)| v) {
        Some(v) => v.as_str().map(str::to_string).unwrap_or_else(|| v.to_value().to_string()),
        None => hosts.clone(),
    };
    let mut vars = play_vars(f, map);
    f.p.module_defaults.clear();
    if let Some((k, v)) = get("module_defaults") {
        let d = keywords::module_defaults(f, k, v);
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
    let remote_user = remote_user(f, map);
    let inherited = Inherited::read(f, map);
    let throttle = get("throttle").and_then(|(k, v)| keywords::number(f, k, v)).map(|n| n as usize).filter(|n| *n > 0);
    let tags = tags(f, map);
    let (serial, serial_templates) = match get("serial") {
        None => (vec![], vec![]),
        Some((k, v)) => serial(f, k, v),
    };
    let max_fail = max_fail(f, map);
    let (role_steps, handlers) = roles_and_handlers(f, map, earlier_handlers);
    let mut facts = if gather { vec![facts_step(f, node)?] } else { Vec::new() };
    if !dynamic.is_empty() {
        facts.extend(vars_files_step(f, node, dynamic));
    }
    let mut sections = chunks::sections(f, map, role_steps, &handlers);
    let split = chunks::split(f, map, &sections, !serial.is_empty());
    let mut handlers = play_handlers(f, handlers, earlier_handlers);
    let own = |h: &Step| !earlier_handlers.iter().any(|e| e.name == h.name);
    environment(f, map, &mut sections, &mut handlers, own);
    inherited.apply(&mut sections, &mut handlers, own);
    copies_at_flushes(f, &mut sections, &handlers);
    // The play's `no_log`, under each task's and block's own.
    if let Some(hide) = no_log {
        for s in steps_and_own_handlers(&mut sections, &mut handlers, own) {
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
    Some((into_plays(template, base, split, facts, sections, earlier), handlers))
}

/// The play's keyword `name`, where it is written.
fn keyword<'n>(map: &'n [(Key, Node)], name: &str) -> Option<&'n (Key, Node)> {
    map.iter().find(|(key, _)| key.name == name)
}

/// Each key of the play a play keyword copctl translates (or accepts as it is), else a problem.
fn check_keywords(f: &mut Front, map: &[(Key, Node)]) {
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
}

/// `hosts`: a pattern, or a list of them (joined with commas).
fn hosts(f: &mut Front, node: &Node, map: &[(Key, Node)]) -> String {
    match keyword(map, "hosts") {
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
    }
}

/// `connection`: ssh is how copctl connects; local, only where the play is the implicit
/// localhost's (the bastion), which copctl reaches locally anyway.
fn connection(f: &mut Front, map: &[(Key, Node)], hosts: &str) {
    if let Some((k, v)) = keyword(map, "connection") {
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
}

/// The play's `vars`: a mapping, or nothing.
fn play_vars(f: &mut Front, map: &[(Key, Node)]) -> crate::inventory::Vars {
    let mut vars = crate::inventory::Vars::new();
    if let Some((k, v)) = keyword(map, "vars") {
        match v.to_value() {
            Value::Object(m) => vars.extend(m),
            Value::Null => {}
            _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", v.what()), None),
        }
    }
    vars
}

/// `remote_user`: a user's name, known when the playbook is loaded.
fn remote_user(f: &mut Front, map: &[(Key, Node)]) -> Option<String> {
    match keyword(map, "remote_user") {
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
    }
}

/// Keywords every task of the play inherits where it sets none (Ansible's play → task).
struct Inherited {
    become_user: Option<String>,
    become_method: Option<String>,
    ignore_errors: Option<bool>,
    ignore_unreachable: Option<bool>,
    check_mode: Option<bool>,
    diff: Option<bool>,
    timeout: Option<u64>,
}

impl Inherited {
    fn read(f: &mut Front, map: &[(Key, Node)]) -> Inherited {
        let get = |k: &str| keyword(map, k);
        let become_user = get("become_user").and_then(|(k, v)| keywords::become_user(f, k, v));
        let become_method = get("become_method").and_then(|(k, v)| keywords::become_method(f, k, v));
        let ignore_errors = get("ignore_errors").and_then(|(k, v)| keywords::flag(f, k, v));
        let ignore_unreachable = get("ignore_unreachable").and_then(|(k, v)| keywords::flag(f, k, v));
        let check_mode = get("check_mode").and_then(|(k, v)| keywords::flag(f, k, v));
        let diff = get("diff").and_then(|(k, v)| keywords::flag(f, k, v));
        let timeout = get("timeout").and_then(|(k, v)| keywords::number(f, k, v));
        Inherited { become_user, become_method, ignore_errors, ignore_unreachable, check_mode, diff, timeout }
    }

    /// On each task of the play and each of its own handlers (`own`), where it sets none.
    fn apply(&self, sections: &mut [Chunk], handlers: &mut [Step], own: impl Fn(&Step) -> bool) {
        for s in steps_and_own_handlers(sections, handlers, own) {
            if s.def.become_user.is_none() {
                s.def.become_user = self.become_user.clone().filter(|u| u != "root");
            }
            if s.def.become_method.is_none() {
                s.def.become_method = self.become_method.clone();
            }
            s.def.ignore_errors |= self.ignore_errors == Some(true);
            s.def.ignore_unreachable |= self.ignore_unreachable == Some(true);
            s.def.check_mode = s.def.check_mode.or(self.check_mode);
            s.def.diff = s.def.diff.or(self.diff);
            s.def.timeout = s.def.timeout.or(self.timeout);
        }
    }
}

/// The steps of every chunk, then the handlers that `own` says are the play's own (not the
/// same as an earlier play's): what the play's keywords apply to.
fn steps_and_own_handlers<'s>(
    sections: &'s mut [Chunk],
    handlers: &'s mut [Step],
    own: impl Fn(&Step) -> bool + 's,
) -> impl Iterator<Item = &'s mut Step> {
    let steps = sections.iter_mut().flat_map(|(_, s, ..)| s.iter_mut());
    steps.chain(handlers.iter_mut().filter(move |h| own(h)))
}

/// The play's `environment`, under each task's own (handlers' too, as in Ansible).
fn environment(
    f: &mut Front,
    map: &[(Key, Node)],
    sections: &mut [Chunk],
    handlers: &mut [Step],
    own: impl Fn(&Step) -> bool,
) {
    if let Some((k, v)) = keyword(map, "environment") {
        let env: Vec<(String, String)> = keywords::vars(f, k, v)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(s) => (name, s),
                other => (name, other.to_string()),
            })
            .collect();
        for s in steps_and_own_handlers(sections, handlers, own) {
            for (name, value) in &env {
                s.def.environment.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
    }
}

/// `tags`: a name, names split by commas, or a list of names.
fn tags(f: &mut Front, map: &[(Key, Node)]) -> Vec<String> {
    match keyword(map, "tags") {
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
    }
}

/// `max_fail_percentage`: a number from 0 to 100.
fn max_fail(f: &mut Front, map: &[(Key, Node)]) -> Option<Batch> {
    match keyword(map, "max_fail_percentage") {
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
    }
}

/// The play's roles' steps and its own handlers, read before its tasks: tasks name the
/// handlers, the roles' before the play's own.
fn roles_and_handlers(f: &mut Front, map: &[(Key, Node)], earlier_handlers: &[Step]) -> (Vec<Step>, Vec<Step>) {
    // Roles and handlers first: tasks name the handlers, the roles' before the play's own.
    f.roles_seen.clear();
    f.role_handlers.clear();
    f.listening.clear();
    f.flush_pending = None;
    f.flush_before.clear();
    f.noop_handlers.clear();
    let mut role_steps = Vec::new();
    if let Some((k, v)) = keyword(map, "roles") {
        roles::play_roles(f, k, v, &mut role_steps);
    }
    let mut handlers = Vec::new();
    if let Some((_, v)) = keyword(map, "handlers") {
        for h in section(f, "handlers", v) {
            let mut produced = Vec::new();
            expand(f, h, true, &mut produced);
            handlers.extend(produced);
        }
    }
    unique_handler_names(f, &mut handlers, earlier_handlers);
    (role_steps, handlers)
}

/// The native plays of one play (`template`, named after `base`): one, or one per chunk where
/// its handlers run between them (`split`), the facts first; named uniquely among `earlier`.
fn into_plays(
    template: Play,
    base: String,
    split: bool,
    facts: Vec<Step>,
    sections: Vec<Chunk>,
    earlier: &[Play],
) -> Vec<Play> {
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
    plays
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
            Value::String(s) => {
                match crate::playbook::parse_batch(&s).or_else(|| parse_percent(&s).map(Batch::Percent)) {
                    Some(b) => batches.push(b),
                    None => f.p.add_key(k, format!("serial: '{s}' is neither a count nor a percentage"), None),
                }
            }
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
    match crate::playbook::validate_step(&f.p.source, def, node.line, node.column, false) {
        Ok(s) => Some(s),
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}
