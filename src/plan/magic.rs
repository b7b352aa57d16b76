//! The play magic variables of a task (`ansible_play_hosts`, `ansible_play_batch`, ...): made
//! from the plan's batches alone, so the planner's template checks and the run's tasks share one
//! definition without the planner reaching into the run.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Plan, Task};

/// Ansible's play magic variables for a task of `t`'s play: its hosts after the limit
/// (`ansible_play_hosts_all`), those not out of the run (`ansible_play_hosts`), the same of the
/// task's batch (`ansible_play_batch`, and its old name `play_hosts`), the play's name. Made once
/// per batch while no host is out of the run (the plan keeps them), else for the task.
pub fn play_magic(plan: &Plan, t: &Task, gone: &BTreeSet<String>) -> crate::template::Magic {
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
