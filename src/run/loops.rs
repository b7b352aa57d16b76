//! A task's loop: the variables each item adds (`loop_control`'s names, `ansible_loop`), which
//! items `when` lets run (the task's `when` without a loop too), the items run one after
//! another (a `pause` between them, facts an item sets seen by the next), each item's registered
//! result and label, `break_when`, and the results gathered as Ansible's.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::outcome::merged_fact;
use super::task::{Job, Scope, all_hold, holds, when_false};
use crate::playbook::{Condition, LoopControl, Step};
use crate::steps::{Outcome, Status};
use crate::template::Templates;

/// A loop's `loop_control` as a task reads it.
struct LoopVars<'a> {
    lc: Option<&'a LoopControl>,
    /// The item's name (`item` unless `loop_var` says).
    var: &'a str,
    index_var: Option<&'a str>,
    extended: bool,
    allitems: bool,
}

impl<'a> LoopVars<'a> {
    fn new(step: &'a Step) -> Self {
        let lc = step.def.loop_control.as_ref();
        LoopVars {
            lc,
            var: LoopControl::var(lc),
            index_var: lc.and_then(|l| l.index_var.as_deref()),
            extended: lc.is_some_and(|l| l.extended),
            allitems: lc.is_none_or(|l| l.extended_allitems != Some(false)),
        }
    }

    /// The task's variables for item `index` of `all`, with the facts earlier items set.
    fn item_vars(
        &self,
        own: &IndexMap<String, Value>,
        all: &[Value],
        index: usize,
        learned: &serde_json::Map<String, Value>,
    ) -> IndexMap<String, Value> {
        let (var, index_var, extended, allitems) = (self.var, self.index_var, self.extended, self.allitems);
        let mut o2 = own.clone();
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
    }
}

impl Job {
    /// `when` (the play's and the step's) judged once for the task, or for each item of its
    /// loop with the item's variables: which items run (none for a task without a loop).
    /// `Break`: the task's outcome already (skipped, or a `when` that could not be judged).
    pub(super) fn which_run(
        &self,
        step: &Step,
        whens: &[&Condition],
        items: Option<&[Value]>,
        own: &IndexMap<String, Value>,
        ctx: &minijinja::Value,
    ) -> ControlFlow<Outcome, Vec<bool>> {
        let templates = &self.site.templates;
        let lv = LoopVars::new(step);
        let var = lv.var;
        let mut runs: Vec<bool> = Vec::new();
        match items {
            None => match all_hold(templates, whens, ctx) {
                Ok(true) => {}
                Ok(false) => return ControlFlow::Break(when_false()),
                Err(e) => return ControlFlow::Break(Outcome::failed_before_running(e)),
            },
            Some([]) => {
                let mut o = Outcome::skipped("No items in the list");
                o.result.insert("skipped_reason".into(), json!("No items in the list"));
                o.result.insert("results".into(), json!([]));
                return ControlFlow::Break(o);
            }
            Some(all) => {
                for index in 0..all.len() {
                    let item = Arc::new(lv.item_vars(own, all, index, &Default::default()));
                    match all_hold(templates, whens, &self.context_data(item, self.data_with([var, "ansible_loop"]))) {
                        Ok(b) => runs.push(b),
                        Err(e) => return ControlFlow::Break(Outcome::failed_before_running(e)),
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
                    return ControlFlow::Break(o);
                }
            }
        }
        ControlFlow::Continue(runs)
    }

    /// Each item in turn (those `runs` says), as Ansible's loop: one outcome with every item's
    /// result.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_loop(
        &self,
        step: &Step,
        conn: &crate::transport::HostConnection,
        own: &IndexMap<String, Value>,
        items: &[Value],
        runs: &[bool],
        timeout: Duration,
        loop_reads: &BTreeSet<String>,
    ) -> Outcome {
        let lv = &LoopVars::new(step);
        let var = lv.var;
        let mut results = Vec::new();
        let mut status = Status::Ok;
        let mut msgs = Vec::new();
        let mut diffs = Vec::new();
        let pause = lv.lc.and_then(|l| l.pause).filter(|p| *p > 0.0);
        // Facts an item sets are the next items' variables (Ansible updates the
        // task's variables after each item) and the task's facts at the end.
        let mut learned = serde_json::Map::new();
        for (index, item) in items.iter().enumerate() {
            if index > 0
                && let Some(p) = pause
            {
                tokio::time::sleep(Duration::from_secs_f64(p)).await;
            }
            let o2 = lv.item_vars(own, items, index, &learned);
            let o = if runs[index] {
                // The item was rendered when the loop was: it is data, as are the
                // facts earlier items set.
                let made = learned.keys().map(String::as_str).chain([var, "ansible_loop"]);
                let data = self.data_with(made);
                let c2 = self.context_data(Arc::new(o2.clone()), data.clone());
                self.attempts(step, conn, &o2, Scope { ctx: c2, data }, timeout, loop_reads).await
            } else {
                let mut o = Outcome::skipped("Conditional result was False");
                o.result.insert("false_condition".into(), json!(true));
                o
            };
            if let Some(f) = &o.facts {
                for (k, v) in f {
                    let v = merged_fact(learned.get(k), k, v);
                    learned.insert(k.clone(), v);
                }
            }
            let mut o = o;
            let r = self.item_result(step, lv, &mut o, &o2, item, index);
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
            if let Some(conds) = lv.lc.and_then(|l| l.break_when.as_ref()) {
                match self.breaks(step, var, conds, &o2, &learned, results.last()) {
                    Ok(false) => {}
                    Ok(true) => break,
                    Err(e) => {
                        status = Status::Failed;
                        msgs.push(format!("break_when: {e}"));
                        break;
                    }
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

    /// What an item registers: its result with the loop's variables. `o2`: the item's
    /// variables.
    fn item_result(
        &self,
        step: &Step,
        lv: &LoopVars<'_>,
        o: &mut Outcome,
        o2: &IndexMap<String, Value>,
        item: &Value,
        index: usize,
    ) -> Value {
        let templates = &self.site.templates;
        let var = lv.var;
        let mut r = o.registered();
        r[var] = item.clone();
        r["ansible_loop_var"] = json!(var);
        // Ansible templates an item's label with the registered variable being
        // that item's result, and fails the item when it does not render.
        if let (Some(reg), Some(label)) = (&step.def.register, lv.lc.and_then(|l| l.label.as_ref())) {
            let mut o3 = o2.clone();
            o3.insert(reg.clone(), r.clone());
            let c3 = self.context_data(Arc::new(o3), self.data_with([reg.as_str(), var, "ansible_loop"]));
            if let Err(e) = templates.render_str(label, &c3) {
                let msg = format!("Failed to template loop_control.label: {}", python_error(templates, &e, &c3));
                o.status = Status::Failed;
                o.msg = msg.clone();
                r["failed"] = json!(true);
                r["msg"] = json!(msg);
            }
        }
        r["ansible_loop_var"] = json!(var);
        if let Some(iv) = lv.index_var {
            r[iv] = json!(index);
            r["ansible_index_var"] = json!(iv);
        }
        if lv.extended {
            r["ansible_loop"] = o2["ansible_loop"].clone();
        }
        r
    }

    /// `break_when`, judged with the item's variables, what it set and its
    /// result under the register name, as Ansible's task variables have them: whether the loop
    /// ends after this item (`Err`: a condition that could not be judged, which ends it too).
    fn breaks(
        &self,
        step: &Step,
        var: &str,
        conds: &[String],
        o2: &IndexMap<String, Value>,
        learned: &serde_json::Map<String, Value>,
        last: Option<&Value>,
    ) -> Result<bool, String> {
        let templates = &self.site.templates;
        let mut o4 = o2.clone();
        o4.extend(learned.iter().map(|(k, v)| (k.clone(), v.clone())));
        let reg = step.def.register.as_deref().unwrap_or(var);
        if let Some(r) = last
            && step.def.register.is_some()
        {
            o4.insert(reg.to_string(), r.clone());
        }
        let c4 = self.context_data(Arc::new(o4), self.data_with([var, "ansible_loop", reg]));
        for c in conds {
            if holds(templates, &Condition::Expr(c.clone()), &c4)? {
                return Ok(true);
            }
        }
        Ok(false)
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
