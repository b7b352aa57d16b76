//! One task on one host: its variables (play vars, step vars, registered results, the loop item),
//! `when`, the connection (to the `delegate_to` host when there is one), the loop, `until` with
//! `retries`/`delay`, `changed_when`/`failed_when`, and the step's timeout around all of it.
//! What the step's rendering read of secrets (its arguments, guards shown in messages, loop
//! items; not its conditions) decides what of its outcome is withheld (`Outcome::withhold`).

use crate::steps::include_vars::VARS_FILES;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use petgraph::graph::NodeIndex;
use serde_json::{Value, json};

use crate::plan::Plan;
use crate::playbook::{Condition, Step};
use crate::site::{Registered, Site};
use crate::steps::{Guards, Outcome, Status, StepCtx, run_action, transport_outcome};
use crate::template::{Templates, take_secret_reads, tracking_secrets};

pub struct Job {
    pub site: Arc<Site>,
    pub plan: Arc<Plan>,
    pub pool: Arc<crate::transport::Pool>,
    pub node: NodeIndex,
    /// What the task runs (a step, or a handler).
    pub step: Step,
    pub registered: crate::site::HostResults,
    pub check: bool,
    pub diff: bool,
    /// The run's `-v` count (a `debug` with a higher `verbosity` is skipped).
    pub verbose: u8,
    pub local_dir: PathBuf,
    /// Becomes true when the run is interrupted.
    pub stop: tokio::sync::watch::Receiver<bool>,
    /// Facts set from secrets earlier in the run: secret variables from then on.
    pub secret_facts: Arc<BTreeSet<String>>,
    /// The hosts out of the run when the task starts (failed or unreachable): not in
    /// `ansible_play_hosts` and `ansible_play_batch`.
    pub gone: Arc<BTreeSet<String>>,
    /// `--tags` and `--skip-tags` as given (Ansible's `ansible_run_tags`, `ansible_skip_tags`).
    pub run_tags: Vec<String>,
    pub skip_tags: Vec<String>,
    /// The names among the task's variables that are data (registered results, facts): read
    /// as they are, never rendered again (`Layers::for_task_layers`). Set when the task starts.
    pub data: Option<crate::vars::DataNames>,
}

/// Ansible's play magic variables for a task of `t`'s play: its hosts after the limit
/// (`ansible_play_hosts_all`), those not out of the run (`ansible_play_hosts`), the same of the
/// task's batch (`ansible_play_batch`, and its old name `play_hosts`), the play's name. Made once
/// per batch while no host is out of the run (the plan keeps them), else for the task.
pub fn play_magic(plan: &Plan, t: &crate::plan::Task, gone: &BTreeSet<String>) -> crate::template::Magic {
    let make = || {
        let batches = &plan.batches[t.playbook][t.play];
        let all: Vec<&String> = batches.iter().flatten().collect();
        let batch: Vec<&String> =
            batches.get(t.batch.saturating_sub(1)).into_iter().flatten().filter(|h| !gone.contains(*h)).collect();
        let active: Vec<&String> = all.iter().copied().filter(|h| !gone.contains(*h)).collect();
        let v = |x: &Vec<&String>| crate::template::to_value(x);
        Arc::new(vec![
            ("ansible_play_hosts", v(&active)),
            ("ansible_play_batch", v(&batch)),
            ("play_hosts", v(&batch)),
            ("ansible_play_hosts_all", v(&all)),
            ("ansible_play_name", crate::template::to_value(&plan.play(t).name)),
        ])
    };
    if !gone.is_empty() {
        return make();
    }
    let mut cache = plan.magic.lock().unwrap_or_else(|e| e.into_inner());
    cache.entry((t.playbook, t.play, t.batch)).or_insert_with(make).clone()
}

/// What an attempt renders with: the context, and which of its names are data.
struct Scope {
    ctx: minijinja::Value,
    data: Option<crate::vars::DataNames>,
}

/// Evaluates a condition; all expressions of a list must hold.
fn holds(t: &Templates, c: &Condition, ctx: &minijinja::Value) -> Result<bool, String> {
    let exprs = match c {
        Condition::Bool(b) => return Ok(*b),
        Condition::Expr(e) => vec![e.clone()],
        Condition::All(v) => v.clone(),
    };
    for e in exprs {
        let v = t.judge(&e, ctx).map_err(|err| format!("{e}: {}", crate::template::describe_error(&err)))?;
        if !v.is_true() {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Job {
    /// `context` of variables already shared (the task's own, read by every rendering).
    fn context_of(&self, own: Arc<IndexMap<String, Value>>) -> minijinja::Value {
        self.context_data(own, self.data.clone())
    }

    /// The task's data names with `add` (a result being judged, a loop's item, facts an item set).
    fn data_with<'a>(&self, add: impl IntoIterator<Item = &'a str>) -> Option<crate::vars::DataNames> {
        let mut d = self.data.as_deref().cloned().unwrap_or_default();
        d.extend(add.into_iter().map(str::to_string));
        Some(Arc::new(d))
    }

    fn context_data(
        &self,
        own: Arc<IndexMap<String, Value>>,
        data: Option<crate::vars::DataNames>,
    ) -> minijinja::Value {
        let t = &self.plan.graph[self.node];
        let pb = &self.plan.playbooks[t.playbook];
        let host = t.host.as_deref().unwrap_or("");
        let magic = play_magic(&self.plan, t, &self.gone);
        let ctx = self.site.context_with_magic(
            pb,
            host,
            own,
            data,
            Registered::PerHost(self.registered.clone()),
            Some(&magic),
        );
        crate::template::treat_as_secret(&ctx, self.secret_facts.iter());
        ctx
    }

    pub async fn execute(self) -> Outcome {
        let ansible = self.step.def.ansible;
        let body = async move {
            let mut o = self.execute_step().await;
            let templated = crate::template::TEMPLATED_CONDITIONALS.with(|n| n.get());
            if ansible && templated > 0 {
                o.deprecations.push(
                    "Conditionals should not be surrounded by templating delimiters such as {{ }} or {% %}.".into(),
                );
            }
            o
        };
        let body = crate::template::RENDERED_TEXT.scope(Default::default(), body);
        let body = crate::template::ANSIBLE_TASK.scope(ansible, body);
        crate::template::TEMPLATED_CONDITIONALS.scope(std::cell::Cell::new(0), body).await
    }

    async fn execute_step(mut self) -> Outcome {
        let t = self.plan.graph[self.node].clone();
        let step = self.step.clone();
        // The step's own `check_mode:`/`diff:` win over the run's, as Ansible's task keywords do;
        // `ansible_check_mode`/`ansible_diff_mode` say the run's, as Ansible's do.
        let (run_check, run_diff) = (self.check, self.diff);
        self.check = step.def.check_mode.unwrap_or(self.check);
        self.diff = step.def.diff.unwrap_or(self.diff);
        // Borrowed, not cloned: a play holds all its steps, and this runs once per task.
        let plan = self.plan.clone();
        let play = plan.play(&t);
        let host = t.host.clone().unwrap_or_default();
        let limit = Duration::from_secs(step.def.timeout.unwrap_or(1800));
        // Ansible's `timeout:` bounds the whole task; the step's own commands get a little more,
        // so that this is what fires. Otherwise the step's commands time out first, saying so.
        let (outer, timeout) = match step.def.timeout {
            Some(_) if step.def.ansible => (limit, limit + Duration::from_secs(5)),
            _ => (limit + Duration::from_secs(5), limit),
        };
        let mut own: IndexMap<String, Value> = play.vars.clone();
        let registered = self.registered.get(&host);
        // A play's per-host vars_files sit over its vars, under the task's (Ansible's order).
        if let Some(Value::Object(vf)) = registered.and_then(|r| r.get(VARS_FILES)) {
            own.extend(vf.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        own.extend(step.def.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(r) = registered {
            own.extend(r.iter().filter(|(k, _)| *k != VARS_FILES).map(|(k, v)| (k.clone(), v.clone())));
            self.data = Some(Arc::new(r.keys().filter(|k| *k != VARS_FILES).cloned().collect()));
        }
        // Ansible's variables of the host a task is delegated to, by its name.
        if let Some(d) = t.runs_on.as_deref() {
            own.insert("ansible_delegated_vars".into(), json!({ d: format!("{{{{ hostvars[{}] }}}}", json!(d)) }));
        }
        own.entry("ansible_check_mode".into()).or_insert(json!(run_check));
        own.entry("ansible_diff_mode".into()).or_insert(json!(run_diff));
        let run_tags = if self.run_tags.is_empty() { vec!["all".to_string()] } else { self.run_tags.clone() };
        own.entry("ansible_run_tags".into()).or_insert(json!(run_tags));
        own.entry("ansible_skip_tags".into()).or_insert(json!(self.skip_tags));
        let own = Arc::new(own);
        let ctx = self.context_of(own.clone());
        let templates = &self.site.templates;
        let whens: Vec<&Condition> = [&play.when, &step.def.when].into_iter().flatten().collect();
        let when_holds = |c: &minijinja::Value| -> Result<bool, String> {
            for cond in &whens {
                if !holds(templates, cond, c).map_err(|e| format!("when: {e}"))? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        // Items from secrets make every iteration's text secret. As Ansible does, a loop whose
        // items do not render fails only when the task's `when` holds without them.
        let (items, loop_reads) = match &step.def.loop_over {
            None => (None, BTreeSet::new()),
            Some(v) => match tracking_secrets(&ctx, || loop_items(templates, v, &ctx)) {
                (Ok(items), reads) => (Some(items), reads),
                (Err(e), _) => {
                    return match when_holds(&ctx) {
                        Ok(false) => when_false(),
                        Ok(true) => Outcome::failed_before_running(format!("loop: {e}")),
                        Err(e) => Outcome::failed_before_running(e),
                    };
                }
            },
        };
        // A loop's `when` is each item's, with the item's variables.
        let lc = step.def.loop_control.as_ref();
        let var = crate::playbook::LoopControl::var(lc);
        let index_var = lc.and_then(|l| l.index_var.as_deref());
        let extended = lc.is_some_and(|l| l.extended);
        let allitems = lc.is_none_or(|l| l.extended_allitems != Some(false));
        let item_vars = |all: &[Value], index: usize, learned: &serde_json::Map<String, Value>| {
            let mut o2 = (*own).clone();
            o2.extend(learned.iter().map(|(k, v)| (k.clone(), v.clone())));
            o2.insert(var.into(), all[index].clone());
            o2.insert("ansible_loop_var".into(), json!(var));
            if let Some(iv) = index_var {
                o2.insert(iv.into(), json!(index));
                o2.insert("ansible_index_var".into(), json!(iv));
            }
            if extended {
                o2.insert("ansible_loop".into(), crate::playbook::step::extended_loop(all, index, allitems));
            }
            o2
        };
        let mut runs: Vec<bool> = Vec::new();
        match &items {
            None => match when_holds(&ctx) {
                Ok(true) => {}
                Ok(false) => return when_false(),
                Err(e) => return Outcome::failed_before_running(e),
            },
            Some(all) if all.is_empty() => {
                let mut o = Outcome::skipped("No items in the list");
                o.result.insert("skipped_reason".into(), json!("No items in the list"));
                o.result.insert("results".into(), json!([]));
                return o;
            }
            Some(all) => {
                for index in 0..all.len() {
                    let item = Arc::new(item_vars(all, index, &Default::default()));
                    match when_holds(&self.context_data(item, self.data_with([var, "ansible_loop"]))) {
                        Ok(b) => runs.push(b),
                        Err(e) => return Outcome::failed_before_running(e),
                    }
                }
                if !runs.contains(&true) {
                    let results: Vec<Value> = all
                        .iter()
                        .map(|item| {
                            json!({"changed": false, "skipped": true, "false_condition": true,
                                   "skip_reason": "Conditional result was False", var: item,
                                   "ansible_loop_var": var})
                        })
                        .collect();
                    let mut o = Outcome::skipped("All items skipped");
                    o.result.insert("results".into(), json!(results));
                    return o;
                }
            }
        }
        if let crate::steps::Action::Debug(d) = &step.action
            && d.verbosity.unwrap_or(0) > self.verbose
        {
            let mut o = Outcome::skipped("Verbosity threshold not met.");
            o.result.insert("skipped_reason".into(), json!("Verbosity threshold not met."));
            return o;
        }
        let target = t.runs_on.clone().unwrap_or_else(|| host.clone());
        let conn = match self.pool.get(&target).await {
            Ok(c) => c,
            Err(e) => return transport_outcome(e),
        };
        let work = async {
            match items {
                None => {
                    self.attempts(
                        &step,
                        &conn,
                        &own,
                        Scope { ctx: ctx.clone(), data: self.data.clone() },
                        timeout,
                        &loop_reads,
                    )
                    .await
                }
                Some(items) => {
                    let mut results = Vec::new();
                    let mut status = Status::Ok;
                    let mut msgs = Vec::new();
                    let mut diffs = Vec::new();
                    let pause = lc.and_then(|l| l.pause).filter(|p| *p > 0.0);
                    // Facts an item sets are the next items' variables (Ansible updates the
                    // task's variables after each item) and the task's facts at the end.
                    let mut learned = serde_json::Map::new();
                    for (index, item) in items.iter().enumerate() {
                        if index > 0
                            && let Some(p) = pause
                        {
                            tokio::time::sleep(Duration::from_secs_f64(p)).await;
                        }
                        let o2 = item_vars(&items, index, &learned);
                        let o = if runs[index] {
                            // The item was rendered when the loop was: it is data, as are the
                            // facts earlier items set.
                            let made = learned.keys().map(String::as_str).chain([var, "ansible_loop"]);
                            let data = self.data_with(made);
                            let c2 = self.context_data(Arc::new(o2.clone()), data.clone());
                            self.attempts(&step, &conn, &o2, Scope { ctx: c2, data }, timeout, &loop_reads).await
                        } else {
                            let mut o = Outcome::skipped("Conditional result was False");
                            o.result.insert("false_condition".into(), json!(true));
                            o
                        };
                        if let Some(f) = &o.facts {
                            for (k, v) in f {
                                let v = super::merged_fact(learned.get(k), k, v);
                                learned.insert(k.clone(), v);
                            }
                        }
                        let mut o = o;
                        let mut r = o.registered();
                        r[var] = item.clone();
                        r["ansible_loop_var"] = json!(var);
                        // Ansible templates an item's label with the registered variable being
                        // that item's result, and fails the item when it does not render.
                        if let (Some(reg), Some(label)) = (&step.def.register, lc.and_then(|l| l.label.as_ref())) {
                            let mut o3 = o2.clone();
                            o3.insert(reg.clone(), r.clone());
                            let c3 =
                                self.context_data(Arc::new(o3), self.data_with([reg.as_str(), var, "ansible_loop"]));
                            if let Err(e) = templates.render_str(label, &c3) {
                                let msg = format!(
                                    "Failed to template loop_control.label: {}",
                                    python_error(templates, &e, &c3)
                                );
                                o.status = Status::Failed;
                                o.msg = msg.clone();
                                r["failed"] = json!(true);
                                r["msg"] = json!(msg);
                            }
                        }
                        r["ansible_loop_var"] = json!(var);
                        if let Some(iv) = index_var {
                            r[iv] = json!(index);
                            r["ansible_index_var"] = json!(iv);
                        }
                        if extended {
                            r["ansible_loop"] = o2["ansible_loop"].clone();
                        }
                        results.push(r);
                        status = match (status, o.status) {
                            (_, Status::Unreachable) | (Status::Unreachable, _) => Status::Unreachable,
                            (_, Status::Failed) | (Status::Failed, _) => Status::Failed,
                            (_, Status::Changed) | (Status::Changed, _) => Status::Changed,
                            (s, _) => s,
                        };
                        if !o.msg.is_empty() {
                            msgs.push(o.msg.clone());
                        }
                        diffs.extend(o.diff.clone());
                        // Ansible runs every item, whichever failed; an unreachable host ends it.
                        if o.status == Status::Unreachable {
                            break;
                        }
                        // `break_when`, judged with the item's variables, what it set and its
                        // result under the register name, as Ansible's task variables have them.
                        if let Some(conds) = lc.and_then(|l| l.break_when.as_ref()) {
                            let mut o4 = o2.clone();
                            o4.extend(learned.iter().map(|(k, v)| (k.clone(), v.clone())));
                            let reg = step.def.register.as_deref().unwrap_or(var);
                            if let Some(r) = results.last()
                                && step.def.register.is_some()
                            {
                                o4.insert(reg.to_string(), r.clone());
                            }
                            let c4 = self.context_data(Arc::new(o4), self.data_with([var, "ansible_loop", reg]));
                            let mut stop = false;
                            for c in conds {
                                match holds(templates, &Condition::Expr(c.clone()), &c4) {
                                    Ok(true) => stop = true,
                                    Ok(false) => {}
                                    Err(e) => {
                                        status = Status::Failed;
                                        msgs.push(format!("break_when: {e}"));
                                        stop = true;
                                    }
                                }
                                if stop {
                                    break;
                                }
                            }
                            if stop {
                                break;
                            }
                        }
                    }
                    let mut o = Outcome::new(status, msgs.join("; "));
                    o.result.insert("results".into(), json!(results));
                    if !learned.is_empty() {
                        o.facts = Some(learned);
                    }
                    if !diffs.is_empty() {
                        o.diff = Some(diffs.join(""));
                    }
                    o
                }
            }
        };
        match tokio::time::timeout(outer, work).await {
            Ok(o) => o,
            // Ansible's words (its task `timeout:`), with its `timedout` result.
            Err(_) => {
                let mut o = Outcome::failed(format!("Task failed: Timed out after {} second(s).", limit.as_secs()));
                o.result.insert("timedout".into(), json!({"period": limit.as_secs()}));
                o
            }
        }
    }

    /// The step once, or until `until` holds (`retries`, `delay`), with changed_when/failed_when.
    /// `loop_reads`: the secrets the loop's items were rendered from.
    async fn attempts(
        &self,
        step: &Step,
        conn: &crate::transport::HostConnection,
        own: &IndexMap<String, Value>,
        scope: Scope,
        timeout: Duration,
        loop_reads: &BTreeSet<String>,
    ) -> Outcome {
        let Scope { ctx, data } = scope;
        let templates = &self.site.templates;
        // Guards that messages may show (`creates`, ...) count with the step's arguments;
        // `stdin` and `environment` are never shown, and `when` decides without being shown.
        let mut guard_reads = loop_reads.clone();
        let mut guard_secrets: Vec<(String, String)> = Vec::new();
        let mut shown = |s: &Option<String>| -> Result<Option<String>, String> {
            let Some(x) = s else { return Ok(None) };
            let (r, reads) = tracking_secrets(&ctx, || templates.render_str(x, &ctx));
            let r = r.map_err(|e| crate::template::describe_error(&e))?;
            if !reads.is_empty() && r != *x {
                guard_secrets.push((r.clone(), x.clone()));
            }
            guard_reads.extend(reads);
            Ok(Some(r))
        };
        let render = |s: &Option<String>| -> Result<Option<String>, String> {
            s.as_ref()
                .map(|x| templates.render_str(x, &ctx).map_err(|e| crate::template::describe_error(&e)))
                .transpose()
        };
        let guards = match (|| -> Result<Guards, String> {
            Ok(Guards {
                creates: shown(&step.def.creates)?,
                removes: shown(&step.def.removes)?,
                unless: shown(&step.def.unless)?,
                chdir: shown(&step.def.chdir)?,
                executable: render(&step.def.executable)?,
                expand_vars: step.def.expand_argument_vars,
                keep_empty_ends: step.def.strip_empty_ends == Some(false),
                stdin: render(&step.def.stdin)?,
                environment: step
                    .def
                    .environment
                    .iter()
                    .map(|(k, v)| {
                        Ok((k.clone(), templates.render_str(v, &ctx).map_err(|e| crate::template::describe_error(&e))?))
                    })
                    .collect::<Result<_, String>>()?,
            })
        })() {
            Ok(g) => g,
            Err(e) => return Outcome::failed_before_running(e),
        };
        // Command and shell export their environment themselves (under their guards); any
        // other module's remote commands get it from the connection, as a module's process would.
        let kind = step.action.kind();
        let env: &[(String, String)] = if kind == "command" || kind == "shell" { &[] } else { &guards.environment };
        // The task's `become`, else its play's; where neither says, the host's own rule.
        let r#become = step.def.r#become.or(self.plan.play(&self.plan.graph[self.node]).r#become);
        let become_user = match render(&step.def.become_user) {
            Ok(u) => u,
            Err(e) => return Outcome::failed(format!("become_user: {e}")),
        };
        let become_user = become_user.as_deref();
        let step_conn;
        let become_method = step.def.become_method.as_deref();
        let conn = if r#become.is_some() || become_user.is_some() || become_method.is_some() || !env.is_empty() {
            step_conn = conn.for_step(r#become, become_user, become_method, env);
            &step_conn
        } else {
            conn
        };
        let result_name = step.def.register.clone().unwrap_or_else(|| "result".into());
        // `retries: "{{ n }}"`: rendered for the host when the task runs, as Ansible's are.
        let number = |n: &Option<crate::steps::Number>, default: u64, name: &str| -> Result<u64, String> {
            match n {
                None => Ok(default),
                Some(crate::steps::Number::Value(v)) => Ok(*v),
                Some(crate::steps::Number::Text(t)) => {
                    let r = templates.render_str(t, &ctx).map_err(|e| crate::template::describe_error(&e))?;
                    r.trim().parse().map_err(|_| format!("{name}: '{r}' is not a whole number"))
                }
            }
        };
        // Seconds, a fraction too, as Ansible's float.
        let seconds = |n: &Option<crate::steps::Number>, default: u64| -> Result<Duration, String> {
            let text = match n {
                None => return Ok(Duration::from_secs(default)),
                Some(crate::steps::Number::Value(v)) => return Ok(Duration::from_secs(*v)),
                Some(crate::steps::Number::Text(t)) => {
                    templates.render_str(t, &ctx).map_err(|e| crate::template::describe_error(&e))?
                }
            };
            match text.trim().parse::<f64>().ok().and_then(|d| Duration::try_from_secs_f64(d).ok()) {
                Some(d) => Ok(d),
                None => Err(format!("delay: '{text}' is not a number of seconds")),
            }
        };
        let (retries, delay) = match (
            number(&step.def.retries, if step.def.until.is_some() { 3 } else { 0 }, "retries"),
            seconds(&step.def.delay, 5),
        ) {
            (Ok(r), Ok(d)) => (r, d),
            (Err(e), _) | (_, Err(e)) => return Outcome::failed(e),
        };
        let mut attempt = 0;
        loop {
            let cx = StepCtx {
                host: &conn.spec.name,
                conn,
                pool: &self.pool,
                templates,
                vars: &ctx,
                check: self.check,
                diff: self.diff,
                timeout,
                local_dir: &self.local_dir,
            };
            // What the step renders from here on is its own: what it reads of secrets decides
            // what of its outcome is withheld.
            take_secret_reads(&ctx);
            let mut o = run_action(&cx, &step.action, &guards).await;
            let mut reads = take_secret_reads(&ctx);
            reads.extend(guard_reads.iter().cloned());
            o.rendered_secrets.extend(guard_secrets.iter().cloned());
            o.withhold(&step.action, &reads);
            if o.status == Status::Unreachable {
                return o;
            }
            // In check mode a read-only step may look for what only a real run would have made
            // (a file not written, a result not registered): that is not a failure of the host.
            if self.check && o.status == Status::Failed && step.action.inherently_read_only() && !step.def.ansible {
                o.status = Status::Skipped;
                o.msg = format!("check mode: {}", o.msg);
                return o;
            }
            // Ansible makes `attempts` a retried task's before its changed_when/failed_when.
            if step.def.until.is_some() {
                o.result.insert("attempts".into(), json!(attempt + 1));
            }
            // The result, bound to its register name, decides changed_when/failed_when/until.
            let mut with_result = (*own).clone();
            with_result.insert(result_name.clone(), o.registered());
            let mut judged = data.as_deref().cloned().unwrap_or_default();
            judged.insert(result_name.clone());
            let rctx = self.context_data(Arc::new(with_result), Some(Arc::new(judged)));
            if let Some(c) = &step.def.failed_when {
                match holds(templates, c, &rctx) {
                    Ok(true) => {
                        o.status = Status::Failed;
                        if o.msg.is_empty() {
                            o.msg = "failed_when condition is true".into();
                        }
                    }
                    Ok(false) if o.status == Status::Failed => {
                        // Not a failure by the step's own rule: the rc stays in the result, and
                        // what ran counts as a change (a command that ran nothing does not). An
                        // Ansible module other than a command keeps its result's `changed`, which
                        // a failed one does not set (an assert, a copy that could not write).
                        let ran = matches!(step.action.kind(), "command" | "shell" | "script");
                        o.status = if crate::steps::ran_nothing(&o) || (step.def.ansible && !ran) {
                            Status::Ok
                        } else {
                            Status::Changed
                        };
                        o.msg.clear();
                    }
                    Ok(false) => {}
                    Err(e) => return Outcome::failed(format!("failed_when: {e}")),
                }
            }
            if let Some(c) = &step.def.changed_when
                && o.status != Status::Failed
                && o.status != Status::Skipped
            {
                match holds(templates, c, &rctx) {
                    Ok(true) => o.status = Status::Changed,
                    Ok(false) => o.status = Status::Ok,
                    Err(e) => return Outcome::failed(format!("changed_when: {e}")),
                }
            }
            // `until` sees the result as failed_when and changed_when left it (Ansible judges
            // those first: `until: r is successful` with `failed_when: true` retries).
            let done = match &step.def.until {
                None => true,
                Some(u) => {
                    let judged_ctx = if step.def.failed_when.is_some() || step.def.changed_when.is_some() {
                        let mut with_result = (*own).clone();
                        with_result.insert(result_name.clone(), o.registered());
                        let mut judged = data.as_deref().cloned().unwrap_or_default();
                        judged.insert(result_name.clone());
                        self.context_data(Arc::new(with_result), Some(Arc::new(judged)))
                    } else {
                        rctx
                    };
                    match holds(templates, &Condition::Expr(u.clone()), &judged_ctx) {
                        Ok(v) => v,
                        Err(e) => return Outcome::failed(format!("until: {e}")),
                    }
                }
            };
            if done || self.check {
                o.result.insert("attempts".into(), json!(attempt + 1));
                return o;
            }
            // Retries run out: failed, unless the task's own failed_when decides (Ansible's
            // result is then judged by `failed_when_result`).
            // Ansible then reports `retries` attempts, though it made one more.
            if attempt >= retries && step.def.failed_when.is_some() {
                o.result.insert("attempts".into(), json!(retries));
                return o;
            }
            if attempt >= retries {
                o.result.insert("attempts".into(), json!(retries));
                o.status = Status::Failed;
                o.msg = format!(
                    "`until` still false after {} attempt(s){}",
                    attempt + 1,
                    if o.msg.is_empty() { String::new() } else { format!(": {}", o.msg) }
                );
                return o;
            }
            attempt += 1;
            // An interrupt ends the wait: the run stops promptly, not after every retry.
            let mut stop = self.stop.clone();
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                Ok(_) = stop.wait_for(|s| *s) => {
                    o.status = Status::Failed;
                    o.msg = format!("interrupted while waiting to retry (`until` false after {attempt} attempt(s))");
                    return o;
                }
            }
        }
    }
}

/// A template error in Python's words where Jinja's differ: an attribute a mapping lacks is
/// "object of type 'dict' has no attribute 'x'".
fn python_error(t: &Templates, e: &minijinja::Error, ctx: &minijinja::Value) -> String {
    let d = crate::template::describe_error(e);
    let attr = d
        .strip_prefix('\'')
        .and_then(|x| x.strip_suffix("' is undefined"))
        .and_then(|x| x.rsplit_once('.'))
        .filter(|(base, _)| t.eval(base, ctx).is_ok_and(|v| v.kind() == minijinja::value::ValueKind::Map));
    match attr {
        Some((_, name)) => format!("object of type 'dict' has no attribute '{name}'"),
        None => d,
    }
}

/// A loop's items: a list (each item rendered), or a template that yields one.
fn loop_items(t: &Templates, v: &Value, ctx: &minijinja::Value) -> Result<Vec<Value>, String> {
    match v {
        // An item that is one `{{ expression }}` keeps the expression's type (a list stays a
        // list), as Ansible's templating of a loop's items does.
        Value::Array(a) => a
            .iter()
            .map(|x| match x.as_str().and_then(crate::template::yaml_single_expression) {
                Some(expr) => t
                    .eval(&expr, ctx)
                    .map_err(|e| crate::template::describe_error(&e))
                    .and_then(|r| serde_json::to_value(&r).map_err(|e| e.to_string()))
                    .map(|j| crate::template::json_with_dropped_newline(x.as_str().unwrap_or(""), j)),
                None => {
                    let out = crate::steps::render_value(t, x, ctx).map_err(|e| crate::template::describe_error(&e))?;
                    crate::template::note_rendered_text(x, &out);
                    Ok(out)
                }
            })
            .collect(),
        Value::String(s) => {
            let r = t.eval(s, ctx).map_err(|e| crate::template::describe_error(&e))?;
            let j: Value = serde_json::to_value(&r).map_err(|e| e.to_string())?;
            match j {
                Value::Array(a) => Ok(a),
                other => Err(format!("expected a list, got {other}")),
            }
        }
        other => Err(format!("expected a list, got {other}")),
    }
}

/// A task its `when` skips, with the reason Ansible registers (`skip_reason`).
fn when_false() -> Outcome {
    let mut o = Outcome::skipped("conditional result was False");
    o.result.insert("skip_reason".into(), json!("Conditional result was False"));
    o
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn extended_loop_is_ansibles_ansible_loop() {
        let all = [json!("a"), json!("b"), json!("c")];
        let first = crate::playbook::step::extended_loop(&all, 0, true);
        assert_eq!(
            first,
            json!({"allitems": ["a", "b", "c"], "index": 1, "index0": 0, "first": true, "last": false,
                   "length": 3, "revindex": 3, "revindex0": 2, "nextitem": "b"})
        );
        let last = crate::playbook::step::extended_loop(&all, 2, true);
        assert_eq!((last["last"].clone(), last["previtem"].clone()), (json!(true), json!("b")));
        assert!(last.get("nextitem").is_none());
    }
}
