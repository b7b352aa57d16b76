//! Plan-time template checks: every string of every planned task is rendered with its host's
//! variables (registered results stand in as empty results), so an undefined variable is an
//! error at its file and line before any connection opens. What a registered result holds is
//! known only when it runs: a lookup inside one (`r.stdout_lines[0]`, `r.checksum`) is not
//! judged here; an undefined name still is.

use std::collections::HashSet;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::{Plan, TaskKind};
use crate::error::{Error, Result, Source};
use crate::playbook::{Action, Condition, Playbook, Step};
use crate::site::Site;
use crate::template::{Templates, describe_error};

/// What a registered result looks like before it exists.
fn placeholder_result() -> Value {
    json!({"stdout": "", "stderr": "", "rc": 0, "content": "", "changed": false, "failed": false,
           "skipped": false, "stdout_lines": [], "stderr_lines": [], "msg": ""})
}

fn placeholders(t: &Templates, pb: &Playbook) -> IndexMap<String, Value> {
    let mut out = IndexMap::new();
    for s in pb.all_steps() {
        if let Some(r) = &s.def.register {
            let mut v = placeholder_result();
            match &s.action {
                Action::Stat(_) => v["stat"] = crate::steps::stat::placeholder(),
                Action::Find(_) => {
                    if let (Value::Object(m), Value::Object(f)) = (&mut v, crate::steps::find::placeholder()) {
                        m.extend(f);
                    }
                }
                Action::Slurp(_) => v["encoding"] = json!("base64"),
                Action::Ping(_) => v["ping"] = json!("pong"),
                Action::Setup(_) => {
                    v["ansible_facts"] = crate::steps::setup::placeholder_vars()["ansible_facts"].clone()
                }
                Action::Tempfile(_) => v["path"] = json!(""),
                Action::User(_) => {
                    for k in ["home", "shell", "comment"] {
                        v[k] = json!("");
                    }
                }
                Action::Assert(_) => {
                    v["assertion"] = json!("");
                    v["evaluated_to"] = json!(false);
                }
                Action::File(_) => {
                    v["path"] = json!("");
                    v["dest"] = json!("");
                    v["state"] = json!("");
                    v["appears_binary"] = json!(false);
                }
                Action::Template(_) => {
                    for k in ["dest", "checksum", "mode", "backup_file"] {
                        v[k] = json!("");
                    }
                }
                _ => {}
            }
            if s.def.loop_over.is_some() {
                // A loop registers each item's result under `results`.
                let lc = s.def.loop_control.as_ref();
                let var = crate::playbook::LoopControl::var(lc);
                // One result per item of a literal list, one standing for all otherwise.
                let items = match &s.def.loop_over {
                    Some(Value::Array(a)) if !a.is_empty() => a.clone(),
                    _ => vec![json!("")],
                };
                let results: Vec<Value> = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let mut one = v.clone();
                        one[var] = item;
                        one["ansible_loop_var"] = json!(var);
                        if let Some(iv) = lc.and_then(|l| l.index_var.as_deref()) {
                            one[iv] = json!(i);
                        }
                        one
                    })
                    .collect();
                v["results"] = json!(results);
            }
            out.insert(r.clone(), v);
        }
        if let Action::SetFact(m) = &s.action {
            for (k, v) in m.iter() {
                // A fact from one expression that needs no host variable has the type it gives
                // (`{{ x | default([]) + [1] }}` a list); any other text stands in as "".
                let typed = v
                    .as_str()
                    .filter(|s| s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.matches("{{").count() == 1)
                    .and_then(|s| t.eval(s, &crate::template::to_value(&out)).ok())
                    .and_then(|r| serde_json::to_value(&r).ok());
                out.insert(k.clone(), typed.unwrap_or_else(|| if v.is_string() { json!("") } else { v.clone() }));
            }
        }
        if let Action::Setup(_) = &s.action {
            out.extend(crate::steps::setup::placeholder_vars());
        }
        if let Action::Getent(g) = &s.action
            && !g.database.contains("{{")
        {
            out.entry(format!("getent_{}", g.database)).or_insert(json!({}));
        }
        if let Action::IncludeVars(a) = &s.action {
            for (k, v) in a.may_set() {
                out.entry(k).or_insert(v);
            }
        }
        // What a block's rescue reads about the failure it caught.
        if s.blocks.iter().any(|e| e.part == crate::playbook::Part::Rescue) {
            out.insert("ansible_failed_task".into(), json!({"name": "", "action": ""}));
            out.insert("ansible_failed_result".into(), placeholder_result());
        }
    }
    out
}

/// The placeholders with each set_fact value that is one `{{ expression }}` evaluated as far as
/// the plan can: such a fact keeps its expression's type (a number, a list), so a template doing
/// arithmetic on it checks as it will run; one that needs results of the run stays text.
fn typed_facts(site: &Site, pb: &Playbook, host: &str, base: &IndexMap<String, Value>) -> IndexMap<String, Value> {
    let mut out = base.clone();
    let steps = pb.plays.iter().flat_map(|p| p.steps.iter().map(move |s| (Some(&p.vars), s)));
    for (play_vars, s) in steps.chain(pb.handlers.iter().map(|s| (None, s))) {
        let Action::SetFact(m) = &s.action else { continue };
        // The play's and the step's own variables, as the run gives them, under the facts.
        let with_vars = |facts: &IndexMap<String, Value>| {
            let mut v: IndexMap<String, Value> =
                play_vars.into_iter().flatten().map(|(k, x)| (k.clone(), x.clone())).collect();
            v.extend(s.def.vars.iter().map(|(k, x)| (k.clone(), x.clone())));
            v.extend(facts.iter().map(|(k, x)| (k.clone(), x.clone())));
            v
        };
        // Over a loop the plan can evaluate, once per item (a fact that accumulates gets all of
        // them).
        let var = crate::playbook::LoopControl::var(s.def.loop_control.as_ref());
        let items: Vec<Option<Value>> = match &s.def.loop_over {
            Some(Value::Array(a)) => a.iter().cloned().map(Some).collect(),
            Some(Value::String(l)) => {
                let ctx = site.context(pb, host, Arc::new(with_vars(&out)));
                match site.templates.eval(l, &ctx).ok().and_then(|v| serde_json::to_value(&v).ok()) {
                    Some(Value::Array(a)) if !a.is_empty() => a.into_iter().take(MAX_CHECKED_ITEMS).map(Some).collect(),
                    _ => vec![None],
                }
            }
            _ => vec![None],
        };
        for item in items {
            let mut ctx_vars = with_vars(&out);
            if let Some(i) = item {
                ctx_vars.insert(var.to_string(), i);
            }
            // A fact still standing in as text reads as what it is before this step first sets
            // it (`names | default([]) + [item]`): undefined here, or what lower layers give.
            for k in m.keys() {
                if ctx_vars.get(k) == Some(&json!("")) && base.get(k) == Some(&json!("")) {
                    ctx_vars.shift_remove(k);
                }
            }
            let ctx = site.context(pb, host, Arc::new(ctx_vars));
            for (k, v) in m.iter() {
                let Some(expr) = v.as_str().and_then(crate::template::yaml_single_expression) else { continue };
                if let Ok(r) = site.templates.eval(&expr, &ctx)
                    && !r.is_undefined()
                    && let Ok(j) = serde_json::to_value(&r)
                {
                    out.insert(k.clone(), j);
                }
            }
        }
    }
    out
}

/// The most items of a known loop list checked one by one (the rest are like them).
const MAX_CHECKED_ITEMS: usize = 64;

/// The conditions of a `when` that read no placeholder of the plan (a registered result, a fact
/// gathered or set as the run goes): what the plan can decide now.
fn known_conditions(when: Option<&Condition>, placeholders: &IndexMap<String, Value>) -> Option<Condition> {
    let known = |e: &String| !super::IDENT.find_iter(e).any(|w| placeholders.contains_key(w.as_str()));
    match when? {
        Condition::Bool(b) => Some(Condition::Bool(*b)),
        Condition::Expr(e) => known(e).then(|| Condition::Expr(e.clone())),
        Condition::All(v) => {
            let k: Vec<String> = v.iter().filter(|e| known(e)).cloned().collect();
            (!k.is_empty()).then_some(Condition::All(k))
        }
    }
}

/// Whether a step's `when` is false for this item, as far as the plan can tell.
fn ruled_out(t: &Templates, when: Option<&Condition>, ctx: &minijinja::Value) -> bool {
    let exprs = match when {
        Some(Condition::Bool(b)) => return !b,
        Some(Condition::Expr(e)) => vec![e.clone()],
        Some(Condition::All(v)) => v.clone(),
        None => return false,
    };
    exprs.iter().any(|e| t.judge(e, ctx).is_ok_and(|v| !v.is_true()))
}

pub fn check_templates(site: &Site, plan: &Plan) -> Result<()> {
    crate::template::planning(|| check_all(site, plan))
}

fn check_all(site: &Site, plan: &Plan) -> Result<()> {
    let mut seen: HashSet<(usize, usize, TaskKind, String)> = HashSet::new();
    let regs: Vec<Arc<IndexMap<String, Value>>> =
        plan.playbooks.iter().map(|pb| Arc::new(placeholders(&site.templates, pb))).collect();
    let mut typed: std::collections::HashMap<(usize, String), Arc<IndexMap<String, Value>>> = Default::default();
    let registered: Vec<HashSet<String>> =
        plan.playbooks.iter().map(|pb| pb.all_steps().filter_map(|s| s.def.register.clone()).collect()).collect();
    // Names whose values only the run makes: registered results, set_fact's facts, gathered facts.
    let made: Vec<HashSet<String>> = plan
        .playbooks
        .iter()
        .zip(&registered)
        .map(|(pb, r)| {
            let facts = pb.all_steps().filter_map(|s| match &s.action {
                Action::SetFact(m) => Some(m.keys().cloned().collect::<Vec<_>>()),
                Action::Getent(g) => Some(vec![format!("getent_{}", g.database)]),
                _ => None,
            });
            let gathered = crate::steps::setup::placeholder_vars().into_iter().map(|(k, _)| k);
            r.iter().cloned().chain(facts.flatten()).chain(gathered).collect()
        })
        .collect();
    let bastion_writes: Vec<bool> = (0..plan.playbooks.len()).map(|i| writes_on_bastion(site, plan, i)).collect();
    for t in plan.graph.node_weights() {
        if t.kind == TaskKind::Barrier {
            continue;
        }
        let Some(host) = &t.host else { continue };
        if !seen.insert((t.playbook, t.play, t.kind, host.clone())) {
            continue;
        }
        let pb = &plan.playbooks[t.playbook];
        let Some(step) = plan.step(t) else { continue };
        let base = typed
            .entry((t.playbook, host.clone()))
            .or_insert_with(|| Arc::new(typed_facts(site, pb, host, &regs[t.playbook])))
            .clone();
        let mut reg = (*base).clone();
        reg.extend(plan.play(t).vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        reg.extend(step.def.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        // What the engine sets for each task (run/task.rs).
        let magic = super::play_magic(plan, t, &Default::default());
        reg.entry("ansible_check_mode".into()).or_insert(json!(false));
        reg.entry("ansible_diff_mode".into()).or_insert(json!(false));
        reg.entry("ansible_run_tags".into()).or_insert(json!(["all"]));
        reg.entry("ansible_skip_tags".into()).or_insert(json!([]));
        let Some(l) = &step.def.loop_over else {
            let ctx = site.context_magic(pb, host, Arc::new(reg), &magic);
            // A step its `when` rules out with what is known before the run (`x is defined` of a
            // variable nothing defines) is not checked: it will be skipped, as in Ansible.
            let known_when = known_conditions(step.def.when.as_ref(), &regs[t.playbook]);
            if ruled_out(&site.templates, known_when.as_ref(), &ctx) {
                continue;
            }
            let known = Known { made: &made[t.playbook], bastion_writes: bastion_writes[t.playbook] };
            check_step(site, pb, step, host, &ctx, known)?;
            continue;
        };
        // A list the plan can evaluate is checked item by item (each with its own loop
        // variables, skipping an item its `when` rules out, as the run will); one that needs
        // results of the run gets one text placeholder.
        let known = match l {
            // A registered result's items are the run's, whatever its stand-in holds.
            Value::String(s) if super::IDENT.find_iter(s).any(|w| registered[t.playbook].contains(w.as_str())) => None,
            Value::String(s) => {
                let ctx = site.context_magic(pb, host, Arc::new(reg.clone()), &magic);
                site.templates
                    .eval(s, &ctx)
                    .ok()
                    .and_then(|v| serde_json::to_value(&v).ok())
                    .and_then(|v| v.as_array().cloned())
            }
            other => other.as_array().cloned(),
        }
        .filter(|a| !a.is_empty());
        let all = known.clone().unwrap_or_else(|| vec![json!(""), json!("")]);
        let count = if known.is_some() { all.len().min(MAX_CHECKED_ITEMS) } else { 1 };
        let lc = step.def.loop_control.as_ref();
        let var = crate::playbook::LoopControl::var(lc);
        // Items only the run knows (a registered result's `results`) are looked into as a
        // registered result is: what they hold is not known yet.
        let made_here = if known.is_none() {
            let mut m = made[t.playbook].clone();
            m.insert(var.to_string());
            std::borrow::Cow::Owned(m)
        } else {
            std::borrow::Cow::Borrowed(&made[t.playbook])
        };
        for (i, item) in all.iter().take(count).enumerate() {
            let mut reg = reg.clone();
            reg.insert(var.into(), item.clone());
            reg.insert("ansible_loop_var".into(), json!(var));
            if let Some(iv) = lc.and_then(|l| l.index_var.as_deref()) {
                reg.insert(iv.into(), json!(i));
                reg.insert("ansible_index_var".into(), json!(iv));
            }
            if lc.is_some_and(|l| l.extended) {
                reg.insert(
                    "ansible_loop".into(),
                    crate::playbook::step::extended_loop(
                        &all,
                        i,
                        lc.is_none_or(|l| l.extended_allitems != Some(false)),
                    ),
                );
            }
            let ctx = site.context_magic(pb, host, Arc::new(reg), &magic);
            if count > 1 && ruled_out(&site.templates, step.def.when.as_ref(), &ctx) {
                continue;
            }
            check_step(
                site,
                pb,
                step,
                host,
                &ctx,
                Known { made: &made_here, bastion_writes: bastion_writes[t.playbook] },
            )?;
        }
    }
    Ok(())
}

/// Whether an error is an undefined lookup inside a value only the run makes (`r.x[0]`,
/// `ansible_env.HOME` are undefined), or a test given such a lookup (`r.results.1 is changed`)
/// in `text`.
fn inside_registered(e: &minijinja::Error, text: &str, registered: &HashSet<String>) -> bool {
    let d = describe_error(e);
    // A method called on such a lookup (`r.stdout_lines[0].split()`) names it at the end.
    let named =
        d.strip_suffix(" is undefined)").and_then(|r| r.rsplit_once(" ('")).and_then(|(_, p)| p.strip_suffix('\''));
    if !Templates::is_undefined_error(e) && named.is_none() {
        return d.contains("expects a registered result")
            && d.contains("not undefined")
            && registered.iter().any(|r| text.contains(&format!("{r}.")) || text.contains(&format!("{r}[")));
    }
    let Some(path) =
        named.or_else(|| d.strip_prefix('\'').and_then(|r| r.rsplit_once("' is undefined")).map(|(p, _)| p))
    else {
        return false;
    };
    let root = path.split(['.', '[']).next().unwrap_or(path);
    root.len() < path.len() && registered.contains(root)
}

/// What the plan cannot know of a step's variables.
#[derive(Clone, Copy)]
struct Known<'a> {
    /// Registered results (and a loop variable over the run's items), every set_fact fact and
    /// the gathered facts: values only the run makes.
    made: &'a HashSet<String>,
    /// The playbook writes files on the bastion (a fetch, a delegated task, a host with a local
    /// connection): a file a lookup reads there may be one of them, made before its task runs.
    bastion_writes: bool,
}

/// Whether `e` names a test, filter or function that does not exist.
fn unknown_name(e: &minijinja::Error) -> bool {
    use minijinja::ErrorKind::{UnknownFilter, UnknownFunction, UnknownTest};
    matches!(e.kind(), UnknownFilter | UnknownFunction | UnknownTest)
}

/// Whether a run of playbook `index` of `plan` may write files on the bastion: it fetches,
/// delegates a task to the bastion (or to a host named by a template), or runs on a host with
/// a local connection.
fn writes_on_bastion(site: &Site, plan: &Plan, index: usize) -> bool {
    let pb = &plan.playbooks[index];
    let local = |h: &str| {
        (crate::inventory::is_implicit_localhost(h) && !site.inventory.hosts.contains_key(h))
            || site
                .inventory
                .host_vars(h)
                .get("ansible_connection")
                .and_then(|v| v.as_str())
                .is_some_and(|c| matches!(c, "local" | "ansible.builtin.local"))
    };
    let delegated_here = |d: &str| crate::template::is_template(d) || local(d);
    pb.all_steps()
        .any(|s| matches!(s.action, Action::Fetch(_)) || s.def.delegate_to.as_deref().is_some_and(delegated_here))
        || plan.graph.node_weights().filter(|t| t.playbook == index).filter_map(|t| t.host.as_deref()).any(local)
}

/// Whether an error of `text` may come of a value only the run makes (`r.stdout.split()[0]`,
/// `r.stdout | from_json`, a fact accumulated over items), the stand-in being empty: `text`
/// reads such a value and every variable it reads is defined. Not judged before the run then,
/// as Ansible does not; a name defined nowhere still is.
fn from_run_values(t: &Templates, text: &str, expr: bool, ctx: &minijinja::Value, made: &HashSet<String>) -> bool {
    if !super::IDENT.find_iter(text).any(|w| made.contains(w.as_str())) {
        return false;
    }
    let Some(names) = t.names_read(text, expr) else { return false };
    names.iter().all(|n| t.eval(&format!("{n} is defined"), ctx).is_ok_and(|v| v.is_true()))
}

/// A variable `text` reads that is not defined (a name Jinja's own scope does not make).
fn undefined_read(t: &Templates, text: &str, expr: bool, ctx: &minijinja::Value) -> Option<String> {
    let names = t.names_read(text, expr)?;
    names.into_iter().find(|n| !t.eval(&format!("{n} is defined"), ctx).is_ok_and(|v| v.is_true()))
}

/// Whether an Ansible step is in the `block` part of a block that has a `rescue`.
fn rescued(pb: &Playbook, step: &Step) -> bool {
    use crate::playbook::Part;
    step.blocks.iter().filter(|b| b.part == Part::Block).any(|b| {
        pb.plays.iter().flat_map(|p| &p.steps).any(|s| s.blocks.iter().any(|o| o.id == b.id && o.part == Part::Rescue))
    })
}

fn check_step(site: &Site, pb: &Playbook, step: &Step, host: &str, ctx: &minijinja::Value, known: Known) -> Result<()> {
    let t = &site.templates;
    let fail = |text: &str, e: minijinja::Error| -> Error { inline_error(pb, step, host, text, &e) };
    let judged = |text: &str, expr: bool, r: std::result::Result<(), minijinja::Error>| -> Result<()> {
        match r {
            // A test, filter or function no one has is the text's, whatever values it reads.
            Err(e) if unknown_name(&e) => Err(fail(text, e)),
            Err(e) if known.bastion_writes && Templates::reads_missing_file(&e) => Ok(()),
            // A site's lookup plugin runs when its task runs; the rest of the text is judged.
            Err(e) if Templates::left_to_run(&e) => match undefined_read(t, text, expr, ctx) {
                Some(name) => Err(fail(
                    text,
                    minijinja::Error::new(minijinja::ErrorKind::UndefinedError, format!("'{name}' is undefined")),
                )),
                None => Ok(()),
            },
            Err(e) if !inside_registered(&e, text, known.made) && !from_run_values(t, text, expr, ctx, known.made) => {
                Err(fail(text, e))
            }
            _ => Ok(()),
        }
    };
    let judge = |text: &str, r| judged(text, true, r);
    // An Ansible task that may fail (ignore_errors, failed_when, a rescue) fails when it runs on
    // what Ansible finds only then (an undefined variable, an untrusted condition), as
    // Ansible's does, and the play goes on: not a problem of the playbook to refuse.
    let tolerant = step.def.ansible && (step.def.ignore_errors || step.def.failed_when.is_some() || rescued(pb, step));
    for cond in [&step.def.when, &step.def.changed_when, &step.def.failed_when].into_iter().flatten() {
        let exprs = match cond {
            Condition::Bool(_) => vec![],
            Condition::Expr(e) => vec![e.clone()],
            Condition::All(v) => v.clone(),
        };
        for e in exprs {
            match t.judge(&e, ctx) {
                Err(err) if tolerant && Templates::fails_when_run(&err) => {}
                r => judge(&e, r.map(drop))?,
            }
        }
    }
    for e in step.def.until.iter() {
        judge(e, t.judge(e, ctx).map(drop))?;
    }
    // Every other string of the step (arguments, guards) may hold a template.
    let mut def = step.def.clone();
    def.when = None;
    def.changed_when = None;
    def.failed_when = None;
    def.until = None;
    def.vars = IndexMap::new();
    def.loop_over = None;
    let mut strings = Vec::new();
    collect_strings(&serde_json::to_value(&def).unwrap_or(Value::Null), &mut strings);
    let action_json: Value = serde_json::from_str(&step.action.text()).unwrap_or(Value::Null);
    match &step.action {
        Action::Assert(a) => {
            for e in a.that.to_vec() {
                match t.judge(&e, ctx) {
                    Err(err) if tolerant && Templates::fails_when_run(&err) => {}
                    r => judge(&e, r.map(drop))?,
                }
            }
        }
        Action::Debug(d) => {
            if let Some(v) = &d.var {
                judge(v, t.eval(v, ctx).map(drop))?;
            }
            if let Some(m) = &d.msg {
                collect_strings(m, &mut strings);
            }
        }
        // Only the name is rendered before the step runs: the variables of the file it picks are
        // rendered when they are set, and a file no host picks may read what no host has.
        Action::IncludeVars(a) => strings.push(a.file.clone()),
        _ => collect_strings(&action_json, &mut strings),
    }
    for s in &strings {
        match t.render_str(s, ctx) {
            Err(e) if tolerant && Templates::fails_when_run(&e) => {}
            r => judged(s, false, r.map(drop))?,
        }
    }
    if let Action::Template(a) = &step.action {
        let src = t.render_str(&a.src, ctx).map_err(|e| fail(&a.src, e))?;
        // An Ansible task's file named by a variable may be one an earlier task makes (a
        // template written on the bastion): Ansible looks for it when the task runs, and so
        // does the run (the task fails there if it is still missing).
        let made_later =
            step.def.ansible && crate::template::is_template(&a.src) && std::path::Path::new(&src).is_absolute();
        let text = match t.source(&src) {
            None if made_later => return Ok(()),
            text => text,
        };
        let Some(text) = text else {
            return Err(step.source(&pb.source).error_at(
                step.line,
                step.column,
                0,
                format!("template '{src}' not found"),
                "in this step",
                Some("templates are looked up in the site's templates/ directory, then the built-in ones".into()),
            ));
        };
        let full = std::path::absolute(&src).unwrap_or_else(|_| std::path::PathBuf::from(&src));
        let path = a.template_path.as_deref().unwrap_or(&src);
        let (ctx, rendered) = match crate::steps::template::with_template_vars(t, ctx, path, &full, &a.dest) {
            Ok(with) => {
                let r = t.render_file(&src, &with);
                (with, r)
            }
            Err(e) => (ctx.clone(), Err(e)),
        };
        match rendered {
            // A block's rescue is there for what its tasks fail at (a template that cannot
            // render, on purpose): the run fails the task as Ansible does, and the rescue runs.
            Err(_) if tolerant && rescued(pb, step) => {}
            Err(e)
                if !inside_registered(&e, &text, known.made) && !from_run_values(t, &text, false, &ctx, known.made) =>
            {
                return Err(template_file_error(&src, &text, host, &e));
            }
            _ => {}
        }
    }
    Ok(())
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Facts Ansible's setup gathers on Linux that copctl's (steps/setup.rs) does not; an
/// interface's own fact (`ansible_eth0`) is not gathered either.
pub const NOT_GATHERED: &[&str] = &[
    "all_ipv6_addresses",
    "apparmor",
    "bios_date",
    "bios_vendor",
    "bios_version",
    "board_asset_tag",
    "board_name",
    "board_serial",
    "board_vendor",
    "board_version",
    "chassis_asset_tag",
    "chassis_serial",
    "chassis_vendor",
    "chassis_version",
    "cmdline",
    "default_ipv6",
    "device_links",
    "devices",
    "distribution_file_parsed",
    "distribution_file_path",
    "distribution_file_variety",
    "fibre_channel_wwn",
    "fips",
    "flags",
    "form_factor",
    "hostnqn",
    "interfaces",
    "is_chroot",
    "iscsi_iqn",
    "local",
    "locally_reachable_ips",
    "lsb",
    "lvm",
    "mounts",
    "proc_cmdline",
    "product_name",
    "product_serial",
    "product_uuid",
    "product_version",
    "ssh_host_key_ecdsa_public",
    "ssh_host_key_ecdsa_public_keytype",
    "ssh_host_key_ed25519_public",
    "ssh_host_key_ed25519_public_keytype",
    "ssh_host_key_rsa_public",
    "ssh_host_key_rsa_public_keytype",
    "system_capabilities",
    "system_capabilities_enforced",
    "system_vendor",
    "userspace_architecture",
    "userspace_bits",
];

/// The facts of `NOT_GATHERED` that `text` reads (`ansible_X`, `ansible_facts.X`,
/// `ansible_facts['X']`).
fn ungathered_in(text: &str) -> Vec<&'static str> {
    static FACT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"\bansible_facts\s*(?:\.\s*(\w+)|\[\s*['"](\w+)['"]\s*\])|\bansible_(\w+)"#)
            .expect("a valid pattern")
    });
    let mut out = Vec::new();
    for c in FACT.captures_iter(text) {
        let name = c.get(1).or(c.get(2)).or(c.get(3)).map_or("", |m| m.as_str());
        if let Some(f) = NOT_GATHERED.iter().find(|f| **f == name)
            && !out.contains(f)
        {
            out.push(*f);
        }
    }
    out
}

/// A warning for each fact Ansible gathers and copctl does not that an Ansible playbook's step
/// reads (in its arguments, conditions or template file): where a playbook guards it (`is
/// defined`, `default`), the run would quietly take the other branch.
pub fn ungathered_facts(site: &Site, plan: &Plan) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for pb in &plan.playbooks {
        for step in pb.all_steps().filter(|s| s.def.ansible) {
            let mut text = serde_json::to_string(&step.def).unwrap_or_default();
            text.push_str(&step.action.text());
            if let Action::Template(a) = &step.action
                && let Some(src) = site.templates.source(&a.src)
            {
                text.push_str(&src);
            }
            for fact in ungathered_in(&text) {
                let file = step.source(&pb.source).name.clone();
                if seen.insert((file.clone(), fact)) {
                    out.push(format!(
                        "{file}:{}: step '{}' reads the fact 'ansible_{fact}', which Ansible gathers and copctl does not: \
                         it is undefined there (`is defined` is false, `default` applies)",
                        step.line, step.name
                    ));
                }
            }
        }
    }
    out
}

fn help_for(e: &minijinja::Error) -> Option<String> {
    let text = describe_error(e);
    if let Some(f) = ungathered_in(&text).first() {
        return Some(format!("'ansible_{f}' is a fact Ansible gathers and copctl does not (README: Facts)"));
    }
    Templates::is_undefined_error(e).then(|| {
        "define it in inventory/env.yaml, the inventory, the playbook's vars or with -e name=value \
         (or guard it with `is defined`)"
            .to_string()
    })
}

/// An error in a string of a playbook step: point at the line of the step holding the text.
fn inline_error(pb: &Playbook, step: &Step, host: &str, text: &str, e: &minijinja::Error) -> Error {
    let first = text.lines().next().unwrap_or(text).trim();
    let source = step.source(&pb.source);
    let (line, col) = source
        .text
        .lines()
        .enumerate()
        .skip(step.line.saturating_sub(1))
        .find_map(|(i, l)| l.find(first).map(|c| (i + 1, c + 1)))
        .unwrap_or((step.line, step.column));
    source.error_at(
        line,
        col,
        first.len(),
        format!("step '{}' on {host}: {}", step.name, describe_error(e)),
        "in this template",
        help_for(e),
    )
}

fn template_file_error(name: &str, text: &str, host: &str, e: &minijinja::Error) -> Error {
    let shown = if std::path::Path::new(name).is_absolute() { name.to_string() } else { format!("templates/{name}") };
    let src = Source::new(shown, text);
    // The `#jinja2:` line is taken off before rendering: minijinja counts the lines after it
    // (an error in that line itself has no line number).
    let header = usize::from(text.starts_with("#jinja2:"));
    let line = e.line().map_or(1, |l| l + header);
    src.error_at(line, 1, 0, format!("template for {host}: {}", describe_error(e)), "here", help_for(e))
}

/// Templates an Ansible playbook rendered when it was loaded (a role's name from the play's
/// vars, `Playbook::load_time`): refused where the run could give them another value, an
/// `-e` of a variable they read, or a `set_fact`/`register` of one before them.
pub fn check_load_time(site: &Site, plan: &Plan) -> Result<()> {
    let mut errors = Vec::new();
    for pb in &plan.playbooks {
        let mut set: HashSet<String> = HashSet::new();
        for s in pb.all_steps() {
            set.extend(s.def.register.clone());
            if let Action::SetFact(m) = &s.action {
                set.extend(m.keys().cloned());
            }
            if let Action::IncludeVars(a) = &s.action {
                set.extend(a.may_set().keys().cloned());
            }
        }
        for lt in &pb.load_time {
            let why = if let Some(v) = lt.vars.iter().find(|v| site.extra.contains_key(*v)) {
                format!("-e {v} would change it")
            } else if let Some(v) = lt.vars.iter().find(|v| set.contains(v.as_str())) {
                format!("the playbook sets {v} (set_fact or register) as it runs")
            } else {
                continue;
            };
            errors.push(lt.source.error_at(
                lt.line.max(1),
                lt.column.max(1),
                0,
                format!("'{}' was rendered from the play's variables when the playbook was loaded, but {why}", lt.text),
                "here",
                Some("copctl expands roles and task files when it loads the playbook: name them there".into()),
            ));
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        n => Err(Error::many(format!("{n} templates rendered when the playbook was loaded would differ"), errors)),
    }
}
