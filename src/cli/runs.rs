//! `copctl runs`, `runs show` and `runs report`: the recorded runs listed (start, duration,
//! result, playbooks, limit), one run shown per host and task, failures first, or written as
//! one HTML file — what a change ticket needs attached, read from `.copctl/runs/`
//! (`report::history`).

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::args::RunsCmd;
use crate::error::{Error, Result};
use crate::report::OutputFormat;
use crate::report::history::{self, RunView, TaskRecord};

const ROOT: &str = ".copctl";

pub fn runs(what: Option<&RunsCmd>, count: usize, prune: Option<usize>) -> Result<i32> {
    let root = Path::new(ROOT);
    match what {
        Some(RunsCmd::Show { id, host, failed, output }) => {
            show(root, id.as_deref(), host.as_deref(), *failed, *output)
        }
        Some(RunsCmd::Report { id, out }) => report(root, id.as_deref(), out),
        None => list(root, count, prune),
    }
}

/// `copctl runs`: the last `count` runs, newest first, one line each.
fn list(root: &Path, count: usize, prune: Option<usize>) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    if let Some(keep) = prune {
        let removed = crate::report::record::prune_runs(root, keep)
            .map_err(|e| Error::plain(format!("cannot prune .copctl/runs: {e}")))?;
        writeln!(out, "removed {removed} run record(s) from .copctl/runs; kept the newest {keep} at most")?;
        return Ok(0);
    }
    let ids = history::ids(root);
    if ids.is_empty() {
        writeln!(out, "no runs recorded in .copctl/runs")?;
    }
    for id in ids.iter().rev().take(count) {
        let r = history::load(root, id, false);
        let t = totals(&r, None);
        writeln!(
            out,
            "{id}  {}  {}  {}  {}  {} host(s): ok {} changed {} failed {} unreachable {}",
            started(&r),
            r.seconds.map(|s| format!("{s:>7.1}s")).unwrap_or_else(|| format!("{:>8}", "-")),
            r.result(),
            r.what(),
            r.hosts().len(),
            t["ok"],
            t["changed"],
            t["failed"],
            t["unreachable"],
        )?;
    }
    Ok(0)
}

/// The run's start in local time, to the second.
fn started(r: &RunView) -> String {
    r.started_ms
        .and_then(|ms| chrono::DateTime::from_timestamp_millis(ms as i64))
        .map(|d| d.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| "-".into())
}

/// The recap's counts summed over the hosts (`host`: that host's), from `run_end`; for a run
/// that never ended, counted from its tasks.
fn totals(r: &RunView, host: Option<&str>) -> Value {
    let keys = ["ok", "changed", "failed", "skipped", "unreachable", "ignored"];
    let mut sum = serde_json::Map::new();
    for k in keys {
        let n: u64 = if r.recap.is_empty() {
            r.tasks.iter().filter(|t| host.is_none_or(|h| t.host == h) && t.status == k).count() as u64
        } else {
            r.recap.iter().filter(|(h, _)| host.is_none_or(|w| *h == w)).map(|(_, c)| c[k].as_u64().unwrap_or(0)).sum()
        };
        sum.insert(k.into(), json!(n));
    }
    Value::Object(sum)
}

/// `copctl runs show [ID]`.
fn show(root: &Path, id: Option<&str>, host: Option<&str>, failed: bool, output: OutputFormat) -> Result<i32> {
    let id = history::resolve(root, id).map_err(|e| Error::with_help(e, "copctl runs lists the recorded runs"))?;
    let r = history::load(root, &id, true);
    if let Some(h) = host
        && !r.hosts().iter().any(|x| x == h)
    {
        let close: Vec<String> = r.hosts().into_iter().filter(|x| strsim::jaro_winkler(h, x) > 0.8).collect();
        let help = if close.is_empty() {
            format!("its hosts: {}", r.hosts().join(", "))
        } else {
            format!("did you mean: {}?", close.join(", "))
        };
        return Err(Error::with_help(format!("--host '{h}': run {id} did nothing on such a host"), help));
    }
    let keep = |t: &&TaskRecord| host.is_none_or(|h| t.host == h) && (!failed || t.failed());
    let tasks: Vec<&TaskRecord> = r.tasks.iter().filter(keep).collect();
    let hosts: Vec<String> = r.hosts().into_iter().filter(|h| tasks.iter().any(|t| &t.host == h)).collect();
    let text = match output {
        OutputFormat::Json => serde_json::to_string_pretty(&as_json(&r, &hosts, &tasks)).unwrap_or_default(),
        OutputFormat::Human => as_text(&r, host, failed, &hosts, &tasks),
    };
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(0)
}

fn secs(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

fn status_label(t: &TaskRecord) -> &str {
    if t.ignored { "failed (ignored)" } else { &t.status }
}

/// Sections for people: the run, its failures (message, commands, the output's end), its
/// changes (diffs), then each host's tasks.
fn as_text(r: &RunView, host: Option<&str>, failed: bool, hosts: &[String], tasks: &[&TaskRecord]) -> String {
    let mut s = format!("run {}: {}\n", r.id, r.what());
    s.push_str(&format!(
        "started {}, took {}: {}\n",
        started(r),
        r.seconds.map(|x| format!("{x:.1}s")).unwrap_or_else(|| "-".into()),
        r.result()
    ));
    let t = totals(r, host);
    let n = host.map_or(r.hosts().len(), |_| 1);
    s.push_str(&format!(
        "{n} host(s): ok {}, changed {}, failed {}, unreachable {}, skipped {}, ignored {}\n",
        t["ok"], t["changed"], t["failed"], t["unreachable"], t["skipped"], t["ignored"]
    ));
    // By host (the recap's order), each host's in the order they ran: hosts end tasks in any order.
    let by_host = |keep: fn(&TaskRecord) -> bool| {
        let mut v: Vec<&TaskRecord> = tasks.iter().copied().filter(|t| keep(t)).collect();
        v.sort_by_key(|t| hosts.iter().position(|h| *h == t.host));
        v
    };
    let failures = by_host(TaskRecord::failed);
    if !failures.is_empty() {
        s.push_str(&format!("\nFAILED ({})\n", failures.len()));
        for t in failures {
            s.push_str(&format!("  {}: {} ({})\n", t.host, t.path(), secs(t.duration_ms)));
            if t.status == "unreachable" {
                s.push_str("    unreachable\n");
            }
            if !t.msg.is_empty() {
                s.push_str(&format!("    msg: {}\n", t.msg));
            }
            for c in &t.commands {
                s.push_str(&format!("    $ {}\n", c.lines().next().unwrap_or("")));
            }
            let tail: Vec<&str> = t.stderr.lines().rev().take(10).collect();
            for l in tail.into_iter().rev() {
                s.push_str(&format!("    stderr: {l}\n"));
            }
        }
    } else if failed {
        s.push_str("\nno failed task\n");
    }
    let changes = by_host(|t| t.status == "changed");
    if !changes.is_empty() {
        s.push_str(&format!("\nCHANGED ({})\n", changes.len()));
        for t in changes {
            s.push_str(&format!("  {}: {} ({})\n", t.host, t.path(), secs(t.duration_ms)));
            for l in t.diff.iter().flat_map(|d| d.lines()) {
                s.push_str(&format!("    {l}\n"));
            }
        }
        if !r.tasks.iter().any(|t| t.diff.is_some()) {
            s.push_str("  (no diffs recorded: a run with --diff keeps them)\n");
        }
    }
    if !hosts.is_empty() {
        s.push_str("\nHOSTS\n");
    }
    for h in hosts {
        let c = totals(r, Some(h));
        let time =
            r.recap.get(h).and_then(|c| c["seconds"].as_f64()).map(|x| format!(" ({x:.1}s)")).unwrap_or_default();
        s.push_str(&format!(
            "  {h}: ok {}, changed {}, failed {}, unreachable {}, skipped {}{time}\n",
            c["ok"], c["changed"], c["failed"], c["unreachable"], c["skipped"]
        ));
        for t in tasks.iter().filter(|t| &t.host == h) {
            let on = t.runs_on.as_ref().map(|o| format!(" -> {o}")).unwrap_or_default();
            s.push_str(&format!("    {:<16} {}{on} ({})\n", status_label(t), t.path(), secs(t.duration_ms)));
        }
    }
    s.trim_end().to_string()
}

/// One JSON document: the run, and each host's tasks (those the filters keep) in run order.
fn as_json(r: &RunView, hosts: &[String], tasks: &[&TaskRecord]) -> Value {
    let task = |t: &TaskRecord| {
        json!({"task": t.task, "playbook": t.playbook, "play": t.play, "step": t.step, "kind": t.kind,
               "runs_on": t.runs_on, "status": t.status, "ignored": t.ignored, "msg": t.msg,
               "duration_ms": t.duration_ms, "rc": t.rc, "diff": t.diff, "warnings": t.warnings,
               "commands": t.commands, "stdout": t.stdout, "stderr": t.stderr})
    };
    json!({
        "id": r.id,
        "started": r.started_ms.and_then(|ms| chrono::DateTime::from_timestamp_millis(ms as i64))
            .map(|d| d.with_timezone(&chrono::Local).to_rfc3339()),
        "seconds": r.seconds,
        "playbooks": r.playbooks,
        "limit": r.limit,
        "check": r.check,
        "exit_code": r.exit_code,
        "interrupted": r.interrupted,
        "result": r.result(),
        "hosts": hosts.iter().map(|h| json!({
            "host": h,
            "recap": r.recap.get(h).cloned().unwrap_or_else(|| totals(r, Some(h))),
            "tasks": tasks.iter().filter(|t| &t.host == h).map(|t| task(t)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `copctl runs report [ID] -o FILE.html`: the file is private (0600), as the record it comes
/// from: command output can hold what no redactor knew to be secret.
fn report(root: &Path, id: Option<&str>, out: &Path) -> Result<i32> {
    use std::os::unix::fs::OpenOptionsExt;
    let id = history::resolve(root, id).map_err(|e| Error::with_help(e, "copctl runs lists the recorded runs"))?;
    let r = history::load(root, &id, true);
    let page = crate::report::html::render(&r, &started(&r));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(out)
        .map_err(|e| Error::plain(format!("cannot write {}: {e}", out.display())))?;
    f.write_all(page.as_bytes()).map_err(|e| Error::plain(format!("cannot write {}: {e}", out.display())))?;
    writeln!(std::io::stdout().lock(), "wrote {} (run {id}, {} host(s))", out.display(), r.hosts().len())?;
    Ok(0)
}
