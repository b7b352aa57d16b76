//! The run record: `.copctl/runs/<id>/` holds `events.jsonl`, `hosts/<host>.log` (every task's
//! full output), `plan.json` and `summary.json`; `.copctl/last-failed` lists the hosts to retry
//! (`--limit @.copctl/last-failed`). Everything written here is already redacted.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::TaskEnd;
use crate::vars::secret::Redactor;

pub struct RunRecord {
    pub dir: PathBuf,
    pub root: PathBuf,
    events: File,
}

impl RunRecord {
    pub fn create(root: &Path, id: &str) -> std::io::Result<RunRecord> {
        let dir = root.join("runs").join(id);
        fs::create_dir_all(dir.join("hosts"))?;
        let events = File::create(dir.join("events.jsonl"))?;
        Ok(RunRecord { dir, root: root.to_path_buf(), events })
    }

    pub fn event(&mut self, line: &str) {
        let _ = writeln!(self.events, "{line}");
    }

    pub fn write_json(&self, name: &str, v: &Value) {
        let _ = fs::write(self.dir.join(name), serde_json::to_string_pretty(v).unwrap_or_default());
    }

    pub fn host_log(&mut self, host: &str, r: &Redactor, t: &TaskEnd) {
        let safe: String =
            host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        let Ok(mut f) =
            OpenOptions::new().create(true).append(true).open(self.dir.join("hosts").join(format!("{safe}.log")))
        else {
            return;
        };
        let _ = writeln!(f, "=== {} › {} › {} [{:?}] {}ms", t.playbook, t.play, t.step, t.status, t.duration_ms);
        for c in &t.commands {
            let _ = writeln!(f, "$ {}", r.redact(c));
        }
        if !t.msg.is_empty() {
            let _ = writeln!(f, "msg: {}", t.msg);
        }
        if !t.stdout.is_empty() {
            let _ = writeln!(f, "--- stdout\n{}", r.redact(&t.stdout));
        }
        if !t.stderr.is_empty() {
            let _ = writeln!(f, "--- stderr\n{}", r.redact(&t.stderr));
        }
        if let Some(d) = &t.diff {
            let _ = writeln!(f, "--- diff\n{d}");
        }
    }

    /// Writes the hosts to retry; an empty file when there are none.
    pub fn last_failed(&self, hosts: &[String]) {
        let text: String = hosts.iter().map(|h| format!("{h}\n")).collect();
        let tmp = self.root.join(".last-failed.tmp");
        if fs::write(&tmp, text).is_ok() {
            let _ = fs::rename(&tmp, self.root.join("last-failed"));
        }
    }
}

/// `copctl runs`: the recent runs, newest first.
pub fn list_runs(root: &Path, n: usize) -> Vec<Value> {
    let Ok(rd) = fs::read_dir(root.join("runs")) else { return vec![] };
    let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.reverse();
    dirs.into_iter()
        .take(n)
        .map(|d| {
            let id = d.file_name().and_then(|s| s.to_str()).unwrap_or("").to_string();
            match fs::read_to_string(d.join("summary.json")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()) {
                Some(mut v) => {
                    v["id"] = json!(id);
                    v
                }
                None => json!({"id": id, "result": "incomplete (no summary: the run was killed)"}),
            }
        })
        .collect()
}
