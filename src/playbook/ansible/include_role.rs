//! `import_role`/`include_role` (a task) → the role's steps: its arguments and keywords read,
//! its name rendered where it is known when the playbook is loaded (else each role it can name,
//! behind a gate: chosen.rs), and a loop's items, each a copy of the role. roles.rs expands the
//! role itself; include.rs sends these tasks here.

use serde_json::Value;

use super::node::{Key, Node};
use super::roles::{KNOWN_HELP, ROLE_ARGS_NOT_YET, Spec, resolved, role, search_paths};
use super::taskfile::{self, Inherit};
use super::{Front, known};
use crate::playbook::Step;
use crate::template::is_template;

/// `import_role`/`include_role` (a task) → the role's steps.
pub(super) fn include_role(f: &mut Front, node: &Node, key: &Key, value: &Node, handler: bool, out: &mut Vec<Step>) {
    let kind = key.name.rsplit('.').next().unwrap_or(&key.name).to_string();
    let before = f.p.count();
    if handler {
        f.p.add_key(key, format!("{kind} in handlers is not supported yet"), None);
        return;
    }
    let mut spec = arguments(f, key, value, &kind);
    let looped = keywords(f, node, key, &kind, &mut spec);
    if spec.name.is_empty() && f.p.count() == before {
        f.p.add_key(key, format!("{kind}: which role?"), Some(format!("write {kind}: {{name: ROLE}}")));
    }
    if f.p.count() != before {
        return;
    }
    let Some((lk, lv)) = looped else {
        let mut spec = spec;
        if kind == "include_role" && is_template(&spec.name) {
            let (l, c, _) = spec.at;
            match known::with(f, spec.vars.scope(), |f| known::text(f, &spec.name, (l, c))) {
                Some(name) => spec.name = name,
                None => return chosen_role(f, node, key, spec, out),
            }
        }
        let Some(spec) = resolved(f, &kind, spec) else { return };
        if kind == "include_role" {
            let mut spec = spec;
            let keywords = std::mem::take(&mut spec.keywords);
            let what = format!("include_role '{}'", spec.name);
            taskfile::dynamic_read(f, node, key, keywords, &what, None, out, |f, out| {
                let public = std::mem::replace(&mut f.public_roles, false);
                role(f, spec, out);
                f.public_roles = public;
            });
        } else {
            let public = std::mem::replace(&mut f.public_roles, true);
            role(f, spec, out);
            f.public_roles = public;
        }
        return;
    };
    looped_role(f, node, key, &kind, spec, (lk, lv), out);
}

/// The role and the files it reads, from the task's `import_role`/`include_role` value: a
/// mapping, or `name=ROLE handlers_from=FILE` as Ansible's k=v arguments.
fn arguments(f: &mut Front, key: &Key, value: &Node, kind: &str) -> Spec {
    let mut spec = Spec {
        name: String::new(),
        at: (key.line, key.column, key.name.len()),
        tasks_from: None,
        vars_from: None,
        defaults_from: None,
        handlers_from: None,
        keywords: Inherit::default(),
        vars: Inherit::default(),
        once: false,
    };
    match value.as_map() {
        Some(m) => {
            for (k, v) in m {
                match (k.name.as_str(), v.as_str()) {
                    ("name" | "role", Some(s)) => {
                        spec.name = s.to_string();
                        spec.at = (v.line, v.column, s.len());
                    }
                    ("tasks_from", Some(s)) => spec.tasks_from = Some(s.to_string()),
                    ("vars_from", Some(s)) => spec.vars_from = Some(s.to_string()),
                    ("defaults_from", Some(s)) => spec.defaults_from = Some(s.to_string()),
                    ("handlers_from", Some(s)) => spec.handlers_from = Some(s.to_string()),
                    ("name" | "role" | "tasks_from" | "vars_from" | "defaults_from" | "handlers_from", None) => {
                        f.p.add_key(k, format!("{kind}: {} must be text, not {}", k.name, v.what()), None)
                    }
                    (n, _) if ROLE_ARGS_NOT_YET.contains(&n) => {
                        f.p.add_key(k, format!("{kind}: {n} is not supported yet"), None)
                    }
                    (n, _) => f.p.add_key(
                        k,
                        format!("{kind}: unknown argument '{n}'"),
                        Some(format!("{kind} takes: name, tasks_from, vars_from, defaults_from, handlers_from")),
                    ),
                }
            }
        }
        // The `name=ROLE handlers_from=FILE` form, split as Ansible's k=v arguments.
        None if value.as_str().is_some_and(|t| t.contains('=')) => {
            let text = value.as_str().unwrap_or_default();
            let (kv, raw) = super::split::parse_kv(text, None);
            let here = |f: &mut Front, m: String, help: Option<String>| {
                f.p.add_len(value.line, value.column, text.len(), m, "here", help)
            };
            if !raw.trim().is_empty() {
                here(f, format!("{kind}: '{}' is not an argument (name=ROLE)", raw.trim()), None);
            }
            for (k, v) in kv {
                match k.as_str() {
                    "name" | "role" => {
                        spec.name = v;
                        spec.at = (value.line, value.column, text.len());
                    }
                    "tasks_from" => spec.tasks_from = Some(v),
                    "vars_from" => spec.vars_from = Some(v),
                    "defaults_from" => spec.defaults_from = Some(v),
                    "handlers_from" => spec.handlers_from = Some(v),
                    n if ROLE_ARGS_NOT_YET.contains(&n) => here(f, format!("{kind}: {n} is not supported yet"), None),
                    n => here(
                        f,
                        format!("{kind}: unknown argument '{n}'"),
                        Some(format!("{kind} takes: name, tasks_from, vars_from, defaults_from, handlers_from")),
                    ),
                }
            }
        }
        None => f.p.add_key(
            key,
            format!("{kind}: a mapping with the role's name, not {}", value.what()),
            Some(format!("write {kind}: {{name: ROLE}}")),
        ),
    }
    spec
}

/// The task's keywords (those of `node` but its `key`) into `spec`; its loop, where it has one.
fn keywords<'n>(f: &mut Front, node: &'n Node, key: &Key, kind: &str, spec: &mut Spec) -> Option<(&'n Key, &'n Node)> {
    let mut looped: Option<(&Key, &Node)> = None;
    for (k, v) in node.as_map().unwrap_or_default() {
        if k == key || k.name == "name" {
            continue;
        }
        match k.name.as_str() {
            "when" | "tags" | "become" => {
                spec.keywords.keyword(f, k, v);
            }
            "delegate_to" if kind == "import_role" => spec.keywords.delegate_to = super::keywords::text(f, k, v),
            // An import's keywords are each of its tasks', as Ansible's static import gives them.
            "environment" | "become_user" | "check_mode" | "notify" if kind == "import_role" => {
                spec.keywords.keyword(f, k, v);
            }
            "vars" => {
                spec.vars.keyword(f, k, v);
            }
            "loop" | "with_items" | "with_list" if kind == "include_role" && looped.is_none() => looped = Some((k, v)),
            "loop" | "with_items" | "with_list" if kind == "include_role" => {
                f.p.add_key(k, "a task loops once: one of loop or a with_ keyword".into(), None)
            }
            "loop_control" if kind == "include_role" => f.p.add_key(
                k,
                "include_role with loop_control is not supported yet".into(),
                Some("loop over the role with the loop variable `item`".into()),
            ),
            other => f.p.add_key(
                k,
                format!("'{other}' on {kind} is not supported yet"),
                Some(if kind == "import_role" {
                    "import_role takes: name, when, tags, become, become_user, check_mode, environment, notify, delegate_to, vars".to_string()
                } else {
                    "include_role takes: name, when, tags, become, vars".to_string()
                }),
            ),
        }
    }
    looped
}

/// `include_role` with a loop (`lk: lv`). A loop known when the playbook is loaded: the role
/// once per item, the item (`item`, `ansible_loop_var`) among its parameters, as Ansible's
/// include_role passes it.
fn looped_role(
    f: &mut Front,
    node: &Node,
    key: &Key,
    kind: &str,
    spec: Spec,
    (lk, lv): (&Key, &Node),
    out: &mut Vec<Step>,
) {
    let items = match super::loops::loop_items(f, lk, lv) {
        Some(Value::Array(items)) => Some(items),
        Some(Value::String(t)) => {
            let scope = spec.vars.scope();
            known::with(f, scope, |f| known::items(f, &t, (lv.line, lv.column)))
                .map(|i| if lk.name == "with_items" { super::loops::flatten_once(i) } else { i })
        }
        Some(_) => None,
        None => return,
    };
    let Some(items) = items else {
        return looped_by_host(f, node, key, kind, spec, (lk, lv), out);
    };
    if items.is_empty() {
        let mut skipped = spec.keywords.clone();
        skipped.when.push("false".into());
        taskfile::dynamic(f, node, key, skipped, out.len(), out);
        return;
    }
    for item in items {
        let mut each = spec.clone();
        each.vars.params.insert("item".into(), item);
        each.vars.params.insert("ansible_loop_var".into(), Value::from("item"));
        let Some(mut each) = resolved(f, kind, each) else { return };
        let keywords = std::mem::take(&mut each.keywords);
        let what = format!("include_role '{}'", each.name);
        taskfile::dynamic_read(f, node, key, keywords, &what, None, out, |f, out| role(f, each, out));
    }
}

/// A loop the inventory decides: the role as many times as its longest list on a host,
/// copy i where the loop has an i-th item (include.rs does the same for task files).
fn looped_by_host(
    f: &mut Front,
    node: &Node,
    key: &Key,
    kind: &str,
    spec: Spec,
    (lk, lv): (&Key, &Node),
    out: &mut Vec<Step>,
) {
    let expr = lv.as_str().and_then(super::loops::lone_expression).map(|e| match lk.name.as_str() {
        "with_items" => format!("({e}) | with_items_flatten"),
        _ => format!("({e})"),
    });
    let most = match &expr {
        Some(e) if kind == "include_role" && lk.name != "with_list" => {
            known::with(f, spec.vars.scope(), |f| known::most_items_on_hosts(f, e))
        }
        _ => None,
    };
    let (Some(expr), Some(most)) = (expr, most) else {
        f.p.add_key(
            lk,
            format!("include_role with a templated {} (a dynamic include) is not supported", lk.name),
            Some(format!("{KNOWN_HELP}, or a list the inventory gives; or put the loop on the role's tasks")),
        );
        return;
    };
    let at = (key.line, key.column);
    for index in 0..most {
        let mut each = spec.clone();
        each.vars.params.insert("item".into(), Value::from(format!("{{{{ ({expr})[{index}] }}}}")));
        each.vars.params.insert("ansible_loop_var".into(), Value::from("item"));
        let Some(mut each) = resolved(f, kind, each) else { return };
        let from = out.len();
        let keywords = std::mem::take(&mut each.keywords);
        let what = format!("include_role '{}'", each.name);
        taskfile::dynamic_read(f, node, key, keywords, &what, None, out, |f, out| role(f, each, out));
        let cond = format!("({expr}) | length > {index}");
        Inherit { when: vec![cond.clone()], ..Inherit::default() }.apply(&mut out[from..]);
        super::chosen::gate_before(f, cond, format!("include_role: item {index}, where there is one"), from, at, out);
    }
    let from = out.len();
    let mut skipped = spec.keywords.clone();
    skipped.when.push("false".into());
    taskfile::dynamic(f, node, key, skipped, from, out);
    super::chosen::gate_before(f, format!("({expr}) | length == 0"), "include_role: no items".into(), from, at, out);
}

/// `include_role` of a role named from what differs per host (a host variable the inventory
/// sets, or a fact in part of the name): each role the name can give, behind its gate
/// (chosen.rs).
fn chosen_role(f: &mut Front, node: &Node, key: &Key, mut spec: Spec, out: &mut Vec<Step>) {
    let template = spec.name.clone();
    let (l, c, n) = spec.at;
    let name = super::chosen::parse(&template).filter(|x| x.pattern.is_some() || x.lone.is_some());
    let Some(name) = name else {
        let m = format!("include_role: a templated role name ('{template}') is not supported");
        f.p.add_len(l, c, n, m, "here", Some(format!("{KNOWN_HELP}, or a variable the inventory sets")));
        return;
    };
    let (names, looked) = match (&name.lone, &name.pattern) {
        (Some(var), _) => (super::chosen::inventory_values(f, var), format!("the inventory's values of {var}")),
        (None, Some((re, depth))) => {
            let paths = search_paths(f);
            let mut found: Vec<String> = Vec::new();
            for d in &paths {
                let mut here = Vec::new();
                super::chosen::matching(d, "", *depth, re, true, &mut here);
                found.extend(here.into_iter().map(|(r, _)| r).filter(|r| !found.contains(r)).collect::<Vec<_>>());
            }
            let list = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
            (found, format!("the roles in {list}"))
        }
        (None, None) => (Vec::new(), String::new()),
    };
    if names.is_empty() {
        let m = match &name.lone {
            Some(var) => format!("include_role: the role's name is {var}, which the inventory does not set"),
            None => format!("include_role: no role matches '{template}'"),
        };
        f.p.add_len(
            l,
            c,
            n,
            m,
            "here",
            Some(format!("looked at {looked}; {KNOWN_HELP}, or a variable the inventory sets")),
        );
        return;
    }
    let keywords = std::mem::take(&mut spec.keywords);
    let read = |f: &mut Front, name: &str, out: &mut Vec<Step>| {
        let mut each = spec.clone();
        each.name = name.to_string();
        if let Some(each) = resolved(f, "include_role", each) {
            role(f, each, out);
        }
    };
    super::chosen::gated(
        f,
        node,
        key,
        keywords,
        ("include_role", &template, (l, c)),
        (&name.expr, &names, &looked),
        read,
        out,
    );
}
