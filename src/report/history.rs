//! Run records read back: what `copctl runs`, `runs show` and the install's resume hint know of
//! a past run, from the files `record` wrote under `.copctl/runs/<id>/` (its events, summary,
//! plan and host logs). Apart from the writer: a record is read long after the run, by another
//! copctl, and must be read as it is (a run that was killed has no summary and no `run_end`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One recorded task's end, with what the host's log holds for it.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    /// The task's id in the plan (`plan.json`).
    pub task: u64,
    pub host: String,
    pub runs_on: Option<String>,
    pub playbook: String,
    pub play: String,
    pub step: String,
    pub kind: String,
    /// ok, changed, skipped, failed or unreachable.
    pub status: String,
    pub ignored: bool,
    pub msg: String,
    pub duration_ms: u64,
    pub rc: Option<i64>,
    pub diff: Option<String>,
    pub warnings: Vec<String>,
    /// When it started and ended (ms since the epoch), where the events say.
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    /// From the host's log: the commands, and the output's text.
    pub commands: Vec<String>,
    pub stdout: String,
    pub stderr: String,
}

impl TaskRecord {
    /// A failure that counts (not one `ignore_errors` let pass).
    pub fn failed(&self) -> bool {
        (self.status == "failed" || self.status == "unreachable") && !self.ignored
    }

    /// `playbook › play › step`.
    pub fn path(&self) -> String {
        format!("{} › {} › {}", self.playbook, self.play, self.step)
    }
}

/// A run as its record has it.
#[derive(Debug, Clone, Default)]
pub struct RunView {
    pub id: String,
    pub playbooks: Vec<String>,
    pub limit: Option<String>,
    pub check: bool,
    /// `None`: the run did not end (killed), or its record has no summary.
    pub exit_code: Option<i64>,
    pub interrupted: bool,
    pub started_ms: Option<u64>,
    pub seconds: Option<f64>,
    /// Per host: the recap's counts (`run_end`), in host order.
    pub recap: BTreeMap<String, Value>,
    /// Every task that ended, in the order they ended.
    pub tasks: Vec<TaskRecord>,
    /// The plan's tasks (`plan.json`), for what never ended.
    pub planned: Vec<Value>,
}

impl RunView {
    /// ok, ok (nothing changed), failed, interrupted or incomplete, with the exit code.
    pub fn result(&self) -> String {
        match self.exit_code {
            None => "incomplete (no summary: the run was killed)".into(),
            Some(c) if self.interrupted => format!("interrupted (exit {c})"),
            Some(0) if self.recap.values().all(|r| r["changed"] == 0) => "ok, nothing changed (exit 0)".into(),
            Some(0) => "ok (exit 0)".into(),
            Some(4) => "unreachable (exit 4)".into(),
            Some(c) => format!("failed (exit {c})"),
        }
    }

    /// The command line it ran, as far as the record says.
    pub fn what(&self) -> String {
        let mut s = self.playbooks.join(" ");
        if let Some(l) = &self.limit {
            s.push_str(&format!(" --limit {l}"));
        }
        if self.check {
            s.push_str(" --check");
        }
        s
    }

    /// The hosts of the run, in recap order, then any host with tasks but no recap line.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.recap.keys().cloned().collect();
        for t in &self.tasks {
            if !hosts.contains(&t.host) {
                hosts.push(t.host.clone());
            }
        }
        hosts
    }
}

/// The record directories' ids, oldest first (they sort by time).
pub fn ids(root: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(root.join("runs")) else { return vec![] };
    let mut ids: Vec<String> =
        rd.flatten().filter(|e| e.path().is_dir()).filter_map(|e| e.file_name().to_str().map(str::to_string)).collect();
    ids.sort();
    ids
}

/// The id a user named: the whole id, or the one id it begins; `None`: the newest run.
pub fn resolve(root: &Path, wanted: Option<&str>) -> Result<String, String> {
    let ids = ids(root);
    let Some(w) = wanted else {
        return ids.last().cloned().ok_or_else(|| format!("no runs recorded in {}", root.join("runs").display()));
    };
    if ids.iter().any(|i| i == w) {
        return Ok(w.to_string());
    }
    let matching: Vec<&String> = ids.iter().filter(|i| i.starts_with(w)).collect();
    match matching[..] {
        [one] => Ok(one.clone()),
        [] => Err(format!("no run '{w}' in {}", root.join("runs").display())),
        _ => Err(format!(
            "'{w}' begins {} run ids: {}",
            matching.len(),
            matching.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

fn read_json(p: &Path) -> Option<Value> {
    fs::read_to_string(p).ok().and_then(|t| serde_json::from_str(&t).ok())
}

/// Reads the record of run `id`; `with_logs`: also each task's commands and output from the
/// host logs.
pub fn load(root: &Path, id: &str, with_logs: bool) -> RunView {
    let dir = root.join("runs").join(id);
    let mut v = RunView { id: id.to_string(), ..RunView::default() };
    let mut starts: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for line in fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default().lines() {
        let Ok(e) = serde_json::from_str::<Value>(line) else { continue };
        let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
        match e["event"].as_str() {
            Some("run_start") => {
                v.playbooks = e["playbooks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(String::from))
                    .collect();
                v.limit = e["limit"].as_str().map(String::from);
                v.check = e["check"] == true;
                v.started_ms = e["ts"].as_u64();
            }
            Some("task_start") => {
                if let (Some(task), Some(ts)) = (e["task"].as_u64(), e["ts"].as_u64()) {
                    starts.insert((s("host"), task), ts);
                }
            }
            Some("task_end") => {
                let host = s("host");
                let start_ms = e["task"].as_u64().and_then(|t| starts.get(&(host.clone(), t)).copied());
                v.tasks.push(TaskRecord {
                    task: e["task"].as_u64().unwrap_or(u64::MAX),
                    host,
                    runs_on: e["runs_on"].as_str().map(String::from),
                    playbook: s("playbook"),
                    play: s("play"),
                    step: s("step"),
                    kind: s("kind"),
                    status: s("status"),
                    ignored: e["ignored"] == true,
                    msg: s("msg"),
                    duration_ms: e["duration_ms"].as_u64().unwrap_or(0),
                    rc: e["rc"].as_i64(),
                    diff: e["diff"].as_str().map(String::from),
                    warnings: e["warnings"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|w| w.as_str().map(String::from))
                        .collect(),
                    start_ms,
                    end_ms: e["ts"].as_u64(),
                    commands: Vec::new(),
                    stdout: String::new(),
                    stderr: String::new(),
                });
            }
            Some("run_end") => {
                v.exit_code = e["exit_code"].as_i64();
                v.interrupted = e["interrupted"] == true;
                v.seconds = e["duration_ms"].as_u64().map(|ms| ms as f64 / 1000.0);
                if let Some(r) = e["recap"].as_object() {
                    v.recap = r.iter().map(|(h, c)| (h.clone(), c.clone())).collect();
                }
            }
            _ => {}
        }
    }
    // The summary says the same as run_end, and more reliably where events were cut short.
    if let Some(s) = read_json(&dir.join("summary.json")) {
        if v.playbooks.is_empty() {
            v.playbooks =
                s["playbooks"].as_array().into_iter().flatten().filter_map(|p| p.as_str().map(String::from)).collect();
            v.limit = s["limit"].as_str().map(String::from);
            v.check = s["check"] == true;
        }
        v.exit_code = v.exit_code.or(s["exit_code"].as_i64());
        v.interrupted |= s["interrupted"] == true;
        v.seconds = v.seconds.or(s["seconds"].as_f64());
    }
    if v.started_ms.is_none() {
        v.started_ms = started_from_id(id);
    }
    v.planned = read_json(&dir.join("plan.json")).and_then(|p| p["tasks"].as_array().cloned()).unwrap_or_default();
    if with_logs {
        attach_logs(&dir, &mut v.tasks);
    }
    v
}

/// A run id is its local start time (`%Y%m%d-%H%M%S-%3f`).
fn started_from_id(id: &str) -> Option<u64> {
    use chrono::TimeZone;
    let t = chrono::NaiveDateTime::parse_from_str(id, "%Y%m%d-%H%M%S-%3f").ok()?;
    chrono::Local.from_local_datetime(&t).earliest().map(|d| d.timestamp_millis() as u64)
}

/// The file name of a host's log, as `record` makes it.
pub fn log_name(host: &str) -> String {
    let safe: String =
        host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    format!("{safe}.log")
}

/// Each host's log holds one block per task it ended, in the same order as the events: the
/// k-th `task_end` of a host is the k-th block of its log.
fn attach_logs(dir: &Path, tasks: &mut [TaskRecord]) {
    let mut logs: BTreeMap<String, std::vec::IntoIter<LogBlock>> = BTreeMap::new();
    for t in tasks.iter_mut() {
        let blocks = logs
            .entry(t.host.clone())
            .or_insert_with(|| parse_log(&dir.join("hosts").join(log_name(&t.host))).into_iter());
        if let Some(b) = blocks.next() {
            t.commands = b.commands;
            t.stdout = b.stdout;
            t.stderr = b.stderr;
        }
    }
}

#[derive(Default)]
struct LogBlock {
    commands: Vec<String>,
    stdout: String,
    stderr: String,
}

/// A host log's blocks: `=== playbook › play › step [Status] Nms`, then `$ command` lines,
/// `msg:` and `warning:` lines, and `--- stdout`, `--- stderr`, `--- diff` sections.
fn parse_log(path: &PathBuf) -> Vec<LogBlock> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let header =
        regex::Regex::new(r"^=== .* \[(Ok|Changed|Skipped|Failed|Unreachable)\] \d+ms$").expect("static regex");
    let mut blocks: Vec<LogBlock> = Vec::new();
    let mut section = "";
    for line in text.lines() {
        if header.is_match(line) {
            blocks.push(LogBlock::default());
            section = "head";
            continue;
        }
        let Some(b) = blocks.last_mut() else { continue };
        match line {
            "--- stdout" => section = "stdout",
            "--- stderr" => section = "stderr",
            "--- diff" => section = "diff",
            _ => match section {
                "head" => {
                    if let Some(c) = line.strip_prefix("$ ") {
                        b.commands.push(c.to_string());
                    }
                }
                "stdout" => {
                    b.stdout.push_str(line);
                    b.stdout.push('\n');
                }
                "stderr" => {
                    b.stderr.push_str(line);
                    b.stderr.push('\n');
                }
                _ => {}
            },
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_log_splits_into_its_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.log");
        fs::write(
            &p,
            "=== pb › p › a [Ok] 3ms\n$ true\n=== pb › p › b [Failed] 10ms\n$ false\nmsg: exit 1\n--- stdout\nout\n--- stderr\nerr 1\nerr 2\n",
        )
        .unwrap();
        let b = parse_log(&p);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].commands, ["true"]);
        assert_eq!(
            (b[1].commands.as_slice(), b[1].stdout.as_str(), b[1].stderr.as_str()),
            (&["false".to_string()][..], "out\n", "err 1\nerr 2\n")
        );
    }

    #[test]
    fn a_run_id_names_its_start() {
        assert!(started_from_id("20261207-041500-123").is_some());
        assert_eq!(started_from_id("latest"), None);
    }
}
