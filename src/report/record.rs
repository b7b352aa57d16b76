//! The run record: `.copctl/runs/<id>/` holds `events.jsonl`, `hosts/<host>.log` (every task's
//! full output), `plan.json` and `summary.json`; `.copctl/last-failed` lists the hosts to retry
//! (`--limit @.copctl/last-failed`). Everything written here is already redacted, and still
//! only its owner may read it (directories 0700, files 0600): command output can hold what no
//! redactor knew to be secret.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::TaskEnd;
use crate::secret::Redactor;

pub struct RunRecord {
    pub dir: PathBuf,
    pub root: PathBuf,
    events: File,
    /// The hosts whose log this run has made.
    logs: HashSet<String>,
    /// Logs kept open between tasks (opening a log for every task of every host was a tenth of
    /// the controller's CPU on a re-run), up to `keep_open`; others are opened for each write.
    open: HashMap<String, File>,
    /// How many of them may stay open (`open_logs`).
    keep_open: usize,
}

/// How many host logs stay open on a run of `hosts` hosts: half the descriptors left once every
/// host holds a connection (and 256 spare), at most 4096. A connection lasts while its host has
/// tasks, so at worst all are open at once.
fn open_logs(hosts: usize) -> usize {
    (crate::descriptors::soft().saturating_sub(hosts.saturating_add(256)) / 2).min(4096)
}

impl RunRecord {
    pub fn create(root: &Path, id: &str, hosts: usize) -> std::io::Result<RunRecord> {
        let dir = root.join("runs").join(id);
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir.join("hosts"))?;
        // Records of older versions were made with the umask's modes.
        for d in [root, &root.join("runs")] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o700))?;
        }
        let events = private_file(&dir.join("events.jsonl"), false)?;
        Ok(RunRecord {
            dir,
            root: root.to_path_buf(),
            events,
            logs: HashSet::new(),
            open: HashMap::new(),
            keep_open: open_logs(hosts),
        })
    }

    pub fn event(&mut self, line: &str) {
        // One write an event (`writeln!` on a File makes two: the line, then its newline).
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        let _ = self.events.write_all(text.as_bytes());
    }

    pub fn write_json(&self, name: &str, v: &Value) {
        if let Ok(mut f) = private_file(&self.dir.join(name), false) {
            let _ = f.write_all(serde_json::to_string_pretty(v).unwrap_or_default().as_bytes());
        }
    }

    pub fn host_log(&mut self, host: &str, r: &Redactor, t: &TaskEnd) {
        let safe: String =
            host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        let path = self.dir.join("hosts").join(format!("{safe}.log"));
        // Made private the first time; appended to after that (a task at a time, every host).
        let opened = match self.open.remove(&safe) {
            Some(f) => Ok(f),
            None if self.logs.insert(safe.clone()) => private_file(&path, true),
            None => OpenOptions::new().append(true).open(&path),
        };
        let Ok(mut f) = opened else {
            return;
        };
        // One write a task: the log is appended to for every task of every host.
        let mut text = format!("=== {} › {} › {} [{:?}] {}ms\n", t.playbook, t.play, t.step, t.status, t.duration_ms);
        for c in &t.commands {
            let _ = writeln!(text, "$ {}", r.redact(c));
        }
        if !t.msg.is_empty() {
            let _ = writeln!(text, "msg: {}", t.msg);
        }
        for w in &t.warnings {
            let _ = writeln!(text, "warning: {w}");
        }
        if !t.stdout.is_empty() {
            let _ = writeln!(text, "--- stdout\n{}", r.redact(&t.stdout));
        }
        if !t.stderr.is_empty() {
            let _ = writeln!(text, "--- stderr\n{}", r.redact(&t.stderr));
        }
        if let Some(d) = &t.diff {
            let _ = writeln!(text, "--- diff\n{d}");
        }
        let _ = f.write_all(text.as_bytes());
        if self.open.len() < self.keep_open {
            self.open.insert(safe, f);
        }
    }

    /// Writes the hosts to retry; an empty file when there are none.
    pub fn last_failed(&self, hosts: &[String]) {
        let text: String = hosts.iter().map(|h| format!("{h}\n")).collect();
        let tmp = self.root.join(".last-failed.tmp");
        let written = private_file(&tmp, false).and_then(|mut f| f.write_all(text.as_bytes()));
        if written.is_ok() {
            let _ = fs::rename(&tmp, self.root.join("last-failed"));
        }
    }
}

/// A file only its owner may read or write: created 0600, or truncated (`append`: appended to).
fn private_file(path: &Path, append: bool) -> std::io::Result<File> {
    let f = OpenOptions::new().create(true).write(true).append(append).truncate(!append).mode(0o600).open(path)?;
    f.set_permissions(fs::Permissions::from_mode(0o600))?;
    Ok(f)
}

/// The run records, oldest first (their ids sort by time).
fn run_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(root.join("runs")) else { return vec![] };
    let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

/// `copctl runs --prune N`: removes all but the newest `keep` records; returns how many went.
pub fn prune_runs(root: &Path, keep: usize) -> std::io::Result<usize> {
    let dirs = run_dirs(root);
    let old = dirs.len().saturating_sub(keep);
    for d in &dirs[..old] {
        fs::remove_dir_all(d)?;
    }
    Ok(old)
}
