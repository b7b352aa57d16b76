//! One task on one host: its variables (play vars, step vars, registered results, the loop item),
//! `when`, the connection (to the `delegate_to` host when there is one), the loop, `until` with
//! `retries`/`delay`, `changed_when`/`failed_when`, and the step's timeout around all of it.
//! What the step's rendering read of secrets (its arguments, guards shown in messages, loop
//! items; not its conditions) decides what of its outcome is withheld (`Outcome::withhold`).
//! The loop (and `when` judged for each item) is in loops.rs, the attempts of one step (and
//! what judges them) in attempts.rs.

use crate::steps::include_vars::VARS_FILES;
use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use petgraph::graph::NodeIndex;
use serde_json::{Value, json};

use crate::plan::{Plan, play_magic};
use crate::playbook::{Condition, Play, Step};
use crate::site::{Registered, Site};
use crate::steps::{Outcome, transport_outcome};
use crate::template::{Templates, tracking_secrets};

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

/// What an attempt renders with: the context, and which of its names are data.
pub(super) struct Scope {
    pub(super) ctx: minijinja::Value,
    pub(super) data: Option<crate::vars::DataNames>,
}

/// Evaluates a condition; all expressions of a list must hold.
pub(super) fn holds(t: &Templates, c: &Condition, ctx: &minijinja::Value) -> Result<bool, String> {
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
    pub(super) fn data_with<'a>(&self, add: impl IntoIterator<Item = &'a str>) -> Option<crate::vars::DataNames> {
        let mut d = self.data.as_deref().cloned().unwrap_or_default();
        d.extend(add.into_iter().map(str::to_string));
        Some(Arc::new(d))
    }

    pub(super) fn context_data(
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
        let own = Arc::new(self.task_vars(&t, play, &step, &host, (run_check, run_diff)));
        let ctx = self.context_of(own.clone());
        let templates = &self.site.templates;
        let whens: Vec<&Condition> = [&play.when, &step.def.when].into_iter().flatten().collect();
        // Items from secrets make every iteration's text secret. As Ansible does, a loop whose
        // items do not render fails only when the task's `when` holds without them.
        let (items, loop_reads) = match &step.def.loop_over {
            None => (None, BTreeSet::new()),
            Some(v) => match tracking_secrets(&ctx, || loop_items(templates, v, &ctx)) {
                (Ok(items), reads) => (Some(items), reads),
                (Err(e), _) => {
                    return match all_hold(templates, &whens, &ctx) {
                        Ok(false) => when_false(),
                        Ok(true) => Outcome::failed_before_running(format!("loop: {e}")),
                        Err(e) => Outcome::failed_before_running(e),
                    };
                }
            },
        };
        // A loop's `when` is each item's, with the item's variables.
        let runs = match self.which_run(&step, &whens, items.as_deref(), &own, &ctx) {
            ControlFlow::Continue(runs) => runs,
            ControlFlow::Break(o) => return o,
        };
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
                Some(items) => self.run_loop(&step, &conn, &own, &items, &runs, timeout, &loop_reads).await,
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

    /// The task's own variables: its play's, the play's per-host vars_files, the step's, the
    /// host's registered results and facts (which become the task's data names), and the magic
    /// variables the engine sets. `run`: the run's check and diff modes.
    fn task_vars(
        &mut self,
        t: &crate::plan::Task,
        play: &Play,
        step: &Step,
        host: &str,
        run: (bool, bool),
    ) -> IndexMap<String, Value> {
        let (run_check, run_diff) = run;
        let mut own: IndexMap<String, Value> = play.vars.clone();
        let registered = self.registered.get(host);
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
        own
    }
}

/// Whether every `when` holds (the play's, the step's).
pub(super) fn all_hold(t: &Templates, whens: &[&Condition], c: &minijinja::Value) -> Result<bool, String> {
    for cond in whens {
        if !holds(t, cond, c).map_err(|e| format!("when: {e}"))? {
            return Ok(false);
        }
    }
    Ok(true)
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
pub(super) fn when_false() -> Outcome {
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
