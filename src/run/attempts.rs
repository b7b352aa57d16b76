//! One step's attempts on its connection: its guards rendered (noting the secrets those shown
//! in messages read), `become` and `environment` for the step, then the action once or until
//! `until` holds (`retries`, `delay`), each result judged by `failed_when` and `changed_when`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::task::{Job, Scope, holds};
use crate::playbook::{Condition, Step};
use crate::steps::{Guards, Outcome, Status, StepCtx, run_action};
use crate::template::{Templates, take_secret_reads, tracking_secrets};

/// A step's guards, with what rendering those shown in messages read of secrets.
struct Guarded {
    guards: Guards,
    /// The secrets the guards shown in messages (and the loop's items) were rendered from.
    reads: BTreeSet<String>,
    /// Guards rendered from secrets, as (rendered, source).
    secrets: Vec<(String, String)>,
}

impl Job {
    /// The step once, or until `until` holds (`retries`, `delay`), with changed_when/failed_when.
    /// `loop_reads`: the secrets the loop's items were rendered from.
    pub(super) async fn attempts(
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
        let Guarded { guards, reads: guard_reads, secrets: guard_secrets } =
            match guards(templates, step, &ctx, loop_reads) {
                Ok(g) => g,
                Err(e) => return Outcome::failed_before_running(e),
            };
        // Command and shell export their environment themselves (under their guards); any
        // other module's remote commands get it from the connection, as a module's process would.
        let kind = step.action.kind();
        let env: &[(String, String)] = if kind == "command" || kind == "shell" { &[] } else { &guards.environment };
        // The task's `become`, else its play's; where neither says, the host's own rule.
        let r#become = step.def.r#become.or(self.plan.play(&self.plan.graph[self.node]).r#become);
        let become_user = match render(templates, &step.def.become_user, &ctx) {
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
        let (retries, delay) = match retry_rules(templates, step, &ctx) {
            Ok(rules) => rules,
            Err(e) => return Outcome::failed(e),
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
            let done = match self.judge(step, &mut o, own, &data, &result_name) {
                Ok(done) => done,
                Err(e) => return Outcome::failed(e),
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

    /// The context an attempt's result is judged in: the task's variables with the result
    /// bound to its register name (data, never rendered again).
    fn result_context(
        &self,
        own: &IndexMap<String, Value>,
        data: &Option<crate::vars::DataNames>,
        result_name: &str,
        o: &Outcome,
    ) -> minijinja::Value {
        let mut with_result = own.clone();
        with_result.insert(result_name.to_string(), o.registered());
        let mut judged = data.as_deref().cloned().unwrap_or_default();
        judged.insert(result_name.to_string());
        self.context_data(Arc::new(with_result), Some(Arc::new(judged)))
    }

    /// Judges an attempt's result: `failed_when` and `changed_when` set its status; whether
    /// `until` holds (true without one). `Err`: the task's failure when a condition cannot be
    /// judged.
    fn judge(
        &self,
        step: &Step,
        o: &mut Outcome,
        own: &IndexMap<String, Value>,
        data: &Option<crate::vars::DataNames>,
        result_name: &str,
    ) -> Result<bool, String> {
        let templates = &self.site.templates;
        // The result, bound to its register name, decides changed_when/failed_when/until.
        let rctx = self.result_context(own, data, result_name, o);
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
                    o.status = if crate::steps::ran_nothing(o) || (step.def.ansible && !ran) {
                        Status::Ok
                    } else {
                        Status::Changed
                    };
                    o.msg.clear();
                }
                Ok(false) => {}
                Err(e) => return Err(format!("failed_when: {e}")),
            }
        }
        if let Some(c) = &step.def.changed_when
            && o.status != Status::Failed
            && o.status != Status::Skipped
        {
            match holds(templates, c, &rctx) {
                Ok(true) => o.status = Status::Changed,
                Ok(false) => o.status = Status::Ok,
                Err(e) => return Err(format!("changed_when: {e}")),
            }
        }
        // `until` sees the result as failed_when and changed_when left it (Ansible judges
        // those first: `until: r is successful` with `failed_when: true` retries).
        Ok(match &step.def.until {
            None => true,
            Some(u) => {
                let judged_ctx = if step.def.failed_when.is_some() || step.def.changed_when.is_some() {
                    self.result_context(own, data, result_name, o)
                } else {
                    rctx
                };
                match holds(templates, &Condition::Expr(u.clone()), &judged_ctx) {
                    Ok(v) => v,
                    Err(e) => return Err(format!("until: {e}")),
                }
            }
        })
    }
}

/// An optional argument rendered for the host.
fn render(templates: &Templates, s: &Option<String>, ctx: &minijinja::Value) -> Result<Option<String>, String> {
    s.as_ref().map(|x| templates.render_str(x, ctx).map_err(|e| crate::template::describe_error(&e))).transpose()
}

/// The step's guards rendered for the host, in the order the step gives them.
fn guards(
    templates: &Templates,
    step: &Step,
    ctx: &minijinja::Value,
    loop_reads: &BTreeSet<String>,
) -> Result<Guarded, String> {
    // Guards that messages may show (`creates`, ...) count with the step's arguments;
    // `stdin` and `environment` are never shown, and `when` decides without being shown.
    let mut guard_reads = loop_reads.clone();
    let mut guard_secrets: Vec<(String, String)> = Vec::new();
    let mut shown = |s: &Option<String>| -> Result<Option<String>, String> {
        let Some(x) = s else { return Ok(None) };
        let (r, reads) = tracking_secrets(ctx, || templates.render_str(x, ctx));
        let r = r.map_err(|e| crate::template::describe_error(&e))?;
        if !reads.is_empty() && r != *x {
            guard_secrets.push((r.clone(), x.clone()));
        }
        guard_reads.extend(reads);
        Ok(Some(r))
    };
    let render = |s: &Option<String>| render(templates, s, ctx);
    let guards = Guards {
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
                Ok((k.clone(), templates.render_str(v, ctx).map_err(|e| crate::template::describe_error(&e))?))
            })
            .collect::<Result<_, String>>()?,
    };
    Ok(Guarded { guards, reads: guard_reads, secrets: guard_secrets })
}

/// `retries` and `delay`: `retries: "{{ n }}"` is rendered for the host when the task runs,
/// as Ansible's are.
fn retry_rules(templates: &Templates, step: &Step, ctx: &minijinja::Value) -> Result<(u64, Duration), String> {
    let number = |n: &Option<crate::steps::Number>, default: u64, name: &str| -> Result<u64, String> {
        match n {
            None => Ok(default),
            Some(crate::steps::Number::Value(v)) => Ok(*v),
            Some(crate::steps::Number::Text(t)) => {
                let r = templates.render_str(t, ctx).map_err(|e| crate::template::describe_error(&e))?;
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
                templates.render_str(t, ctx).map_err(|e| crate::template::describe_error(&e))?
            }
        };
        match text.trim().parse::<f64>().ok().and_then(|d| Duration::try_from_secs_f64(d).ok()) {
            Some(d) => Ok(d),
            None => Err(format!("delay: '{text}' is not a number of seconds")),
        }
    };
    match (
        number(&step.def.retries, if step.def.until.is_some() { 3 } else { 0 }, "retries"),
        seconds(&step.def.delay, 5),
    ) {
        (Ok(r), Ok(d)) => Ok((r, d)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}
