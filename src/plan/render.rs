//! `copctl plan` output: an indented tree (play → batch → host → steps), Graphviz dot, or JSON.
//!
//! JSON schema (one object per task, in `tasks`):
//! `{"id": 0, "playbook": "rke2-install", "play": "agents", "batch": 1, "step": "join token",
//!   "host": "cop-worker-3" | null, "runs_on": "cop-master-1" | null, "kind": "slurp" | "barrier",
//!   "handler": false, "read_only": true, "outside_limit": false, "run_once": false,
//!   "depends_on": [ids]}`

use std::fmt::Write;

use petgraph::graph::NodeIndex;
use serde_json::{Value, json};

use super::{Plan, Task, TaskKind};

fn kind(plan: &Plan, t: &Task) -> &'static str {
    match plan.step(t) {
        Some(s) => s.action.kind(),
        None => "barrier",
    }
}

pub fn json(plan: &Plan) -> Value {
    let tasks: Vec<Value> = plan
        .graph
        .node_indices()
        .map(|n| {
            let t = &plan.graph[n];
            json!({
                "id": n.index(),
                "playbook": plan.playbooks[t.playbook].name,
                "play": plan.play(t).name,
                "batch": t.batch,
                "step": t.label,
                "host": t.host,
                "runs_on": t.runs_on,
                "kind": kind(plan, t),
                "handler": t.kind.is_handler(),
                "read_only": t.read_only,
                "outside_limit": t.outside_limit,
                "run_once": t.run_once,
                "depends_on": plan.depends_on(n),
            })
        })
        .collect();
    json!({
        "playbooks": plan.playbooks.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        "limit": plan.limit,
        "warnings": plan.warnings,
        "tasks": tasks,
    })
}

pub fn dot(plan: &Plan) -> String {
    let mut out = String::from("digraph plan {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n");
    for n in plan.graph.node_indices() {
        let t = &plan.graph[n];
        let label = match &t.host {
            Some(h) => format!("{h}\\n{}: {}", plan.play(t).name, t.label),
            None => t.label.clone(),
        };
        let style = if t.kind == TaskKind::Barrier {
            ", shape=point"
        } else if t.outside_limit {
            ", style=dashed"
        } else if t.read_only {
            ", style=rounded"
        } else {
            ""
        };
        let _ = writeln!(out, "  t{} [label=\"{}\"{style}];", n.index(), label.replace('"', "\\\""));
    }
    for e in plan.graph.edge_indices() {
        let (a, b) = plan.graph.edge_endpoints(e).expect("edge has endpoints");
        let _ = writeln!(out, "  t{} -> t{};", a.index(), b.index());
    }
    out.push_str("}\n");
    out
}

pub fn text(plan: &Plan) -> String {
    let mut out = String::new();
    if let Some(l) = &plan.limit {
        let _ = writeln!(out, "limit: {l}");
    }
    let nodes: Vec<NodeIndex> = plan.graph.node_indices().collect();
    for (pi, pb) in plan.playbooks.iter().enumerate() {
        let _ = writeln!(
            out,
            "playbook {}{}",
            pb.name,
            pb.description.as_ref().map(|d| format!(" — {d}")).unwrap_or_default()
        );
        for (ki, play) in pb.plays.iter().enumerate() {
            let mut attrs = vec![format!("hosts: {}", hosts_shown(&play.hosts))];
            if !play.serial.is_empty() {
                attrs.push(format!(
                    "serial: {}",
                    play.serial
                        .iter()
                        .map(|b| match b {
                            crate::playbook::Batch::Count(n) => n.to_string(),
                            crate::playbook::Batch::Percent(p) => format!("{p}%"),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            match &play.needs {
                Some(n) if !n.is_empty() => attrs.push(format!("needs: {}", n.join(", "))),
                Some(_) => attrs.push("needs: none".into()),
                None if ki > 0 => attrs.push(format!("after: {}", pb.plays[ki - 1].name)),
                None => {}
            }
            let _ = writeln!(out, "  play {} ({})", play.name, attrs.join("; "));
            let tasks: Vec<&Task> = nodes
                .iter()
                .map(|n| &plan.graph[*n])
                .filter(|t| t.playbook == pi && t.play == ki && t.kind != TaskKind::Barrier)
                .collect();
            if tasks.is_empty() {
                let _ = writeln!(out, "    (no hosts)");
                continue;
            }
            let batches = tasks.iter().map(|t| t.batch).max().unwrap_or(1);
            for b in 1..=batches {
                let in_batch: Vec<&&Task> = tasks.iter().filter(|t| t.batch == b && !t.outside_limit).collect();
                if in_batch.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "    batch {b}/{batches}");
                let mut hosts: Vec<&str> = Vec::new();
                for t in &in_batch {
                    let h = t.host.as_deref().unwrap_or("");
                    if !hosts.contains(&h) {
                        hosts.push(h);
                    }
                }
                for h in hosts {
                    let _ = writeln!(out, "      {h}");
                    for t in in_batch.iter().filter(|t| t.host.as_deref() == Some(h)) {
                        let _ = writeln!(out, "        {}", task_line(plan, t));
                    }
                }
            }
            let outside: Vec<&&Task> = tasks.iter().filter(|t| t.outside_limit).collect();
            let mut hosts: Vec<&str> = Vec::new();
            for t in &outside {
                let h = t.host.as_deref().unwrap_or("");
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
            for h in hosts {
                let _ = writeln!(out, "    outside --limit, read-only: {h}");
                for t in outside.iter().filter(|t| t.host.as_deref() == Some(h)) {
                    let _ = writeln!(out, "        {}", task_line(plan, t));
                }
            }
        }
    }
    for w in &plan.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let steps = plan.graph.node_weights().filter(|t| t.kind != TaskKind::Barrier).count();
    let hosts = super::changed_hosts(plan);
    let _ = writeln!(
        out,
        "{steps} tasks; hosts that may change: {}",
        if hosts.is_empty() { "none".into() } else { hosts.join(", ") }
    );
    out
}

fn task_line(plan: &Plan, t: &Task) -> String {
    // Steps of Ansible blocks: indented one level per enclosing block, those of a rescue or
    // always part marked so (a rescue runs only on hosts where the block failed).
    let blocks = plan.step(t).map(|s| s.blocks.as_slice()).unwrap_or_default();
    let mut s = format!("{}- [{}] {}", "  ".repeat(blocks.len()), kind(plan, t), t.label);
    let mut flags = Vec::new();
    match blocks.last().map(|e| e.part) {
        Some(crate::playbook::Part::Rescue) => flags.push("rescue: if the block failed".to_string()),
        Some(crate::playbook::Part::Always) => flags.push("always".to_string()),
        _ => {}
    }
    if t.read_only {
        flags.push("read-only".to_string());
    }
    if t.run_once {
        flags.push("run once".to_string());
    }
    if let Some(r) = &t.runs_on {
        flags.push(format!("on {r}"));
    }
    if !flags.is_empty() {
        s.push_str(&format!("  ({})", flags.join(", ")));
    }
    s
}

/// A play's hosts as the text shows them: a pattern naming the server that does the cluster's
/// work (`kube_servers`, asked when the run connects) says so in words.
fn hosts_shown(hosts: &str) -> String {
    if !hosts.contains("kube_servers") {
        return hosts.to_string();
    }
    let what = "the first reachable, Ready server of masters, picked when the run connects";
    match hosts.split_once(":!") {
        Some((group, _)) => format!("{group} but {what}"),
        None => what.to_string(),
    }
}
