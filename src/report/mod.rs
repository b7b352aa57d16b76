//! What the user sees of a run: events rendered for a terminal (indicatif: a line per active host
//! and an overall bar), as plain lines (not a terminal), or as JSON lines (`--output json`); the
//! recap table at the end; and the run record on disk. Every text that leaves the process passes
//! through the run's `Redactor` first.
//!
//! JSON lines schema (`--output json`, also `.copctl/runs/<id>/events.jsonl`), one object per line
//! with `"event"`:
//! - `run_start`: `schema` (EVENTS_SCHEMA), `id`, `playbooks`, `limit`, `check`, `tasks`, `hosts`
//! - `task_start`: `task`, `host`, `runs_on`, `playbook`, `play`, `step`, `kind`, `ts`
//! - `task_end`: the same plus `status` (ok|changed|skipped|failed|unreachable), `msg`,
//!   `duration_ms`, `rc`, `ignored`, and with `--diff` `diff`
//! - `run_end`: `exit_code`, `interrupted`, `duration_ms`, `recap` (per host: ok, changed, failed,
//!   skipped, unreachable, ignored, rescued, seconds)

pub mod history;
pub mod html;
pub mod inventory;
pub mod record;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};

use crate::secret::Redactor;
use crate::steps::Status;

/// The version of the JSON events' schema, in every run's first event (`run_start`): raised when
/// a field changes its meaning or goes away (docs/src/reference/json-events.md); new fields and
/// events may come without it.
pub const EVENTS_SCHEMA: u32 = 1;

/// How a command prints what happens: for a person (a terminal or plain lines) or as JSON lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum OutputFormat {
    #[default]
    Human,
    Json,
}

/// Per-host counts for the recap.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostRecap {
    pub ok: u32,
    pub changed: u32,
    pub failed: u32,
    pub skipped: u32,
    pub unreachable: u32,
    pub ignored: u32,
    /// Failures a block's `rescue` caught (Ansible's `rescued`): not counted as failed.
    pub rescued: u32,
    pub seconds: f64,
}

/// One finished task, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct TaskEnd {
    pub task: usize,
    pub host: String,
    pub runs_on: Option<String>,
    pub playbook: String,
    pub play: String,
    pub step: String,
    pub kind: String,
    pub status: Status,
    pub msg: String,
    pub duration_ms: u64,
    pub rc: Option<i64>,
    pub ignored: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The step's own `diff:`, over the run's `--diff`.
    #[serde(skip)]
    pub show_diff: Option<bool>,
    /// Shown whatever the status (and on a terminal even when nothing else is).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub stdout: String,
    #[serde(skip)]
    pub stderr: String,
    #[serde(skip)]
    pub commands: Vec<String>,
}

pub struct Reporter {
    format: OutputFormat,
    verbose: u8,
    diff: bool,
    redactor: Redactor,
    tty: Option<(MultiProgress, ProgressBar)>,
    active: BTreeMap<usize, ProgressBar>,
    pub record: Option<record::RunRecord>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Reporter {
    /// Masks these values too from now on (secrets the run has just learned).
    pub fn learn_secrets(&mut self, values: Vec<String>) {
        if !values.is_empty() {
            self.redactor.learn(values);
        }
    }

    pub fn new(format: OutputFormat, verbose: u8, diff: bool, redactor: Redactor, total: u64) -> Self {
        let tty = (format == OutputFormat::Human
            && std::io::stderr().is_terminal()
            && std::env::var_os("COPCTL_NO_PROGRESS").is_none())
        .then(|| {
            let mp = MultiProgress::new();
            let bar = mp.add(ProgressBar::new(total));
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} tasks {msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            (mp, bar)
        });
        Reporter { format, verbose, diff, redactor, tty, active: BTreeMap::new(), record: None }
    }

    pub fn redact(&self, s: &str) -> String {
        self.redactor.redact(s)
    }

    /// A line for the user (not in JSON mode), above the progress display when there is one.
    fn say(&self, line: &str) {
        match &self.tty {
            Some((mp, _)) => {
                let _ = mp.println(line);
            }
            None => {
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "{line}");
            }
        }
    }

    fn emit(&mut self, v: Value) {
        let text = self.redact(&v.to_string());
        if let Some(r) = &mut self.record {
            r.event(&text);
        }
        if self.format == OutputFormat::Json {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{text}");
        }
    }

    pub fn run_start(
        &mut self,
        id: &str,
        playbooks: &[String],
        limit: Option<&str>,
        check: bool,
        tasks: usize,
        hosts: usize,
    ) {
        self.emit(json!({"event": "run_start", "schema": EVENTS_SCHEMA, "id": id, "playbooks": playbooks,
                         "limit": limit, "check": check, "tasks": tasks, "hosts": hosts, "ts": now_ms()}));
        if self.format == OutputFormat::Human {
            let mode = if check { " (check mode: nothing is changed)" } else { "" };
            self.say(&format!(
                "copctl run {}{}: {tasks} tasks on {hosts} host(s){mode}",
                playbooks.join(" "),
                limit.map(|l| format!(" --limit {l}")).unwrap_or_default()
            ));
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn task_start(
        &mut self,
        task: usize,
        host: &str,
        runs_on: Option<&str>,
        playbook: &str,
        play: &str,
        step: &str,
        kind: &str,
    ) {
        self.emit(json!({"event": "task_start", "task": task, "host": host, "runs_on": runs_on, "playbook": playbook,
                         "play": play, "step": step, "kind": kind, "ts": now_ms()}));
        if let Some((mp, _)) = &self.tty {
            let pb = mp.insert_from_back(1, ProgressBar::new_spinner());
            pb.set_style(
                ProgressStyle::with_template("  {spinner} {prefix:20} {msg} ({elapsed})").expect("static template"),
            );
            pb.set_prefix(host.to_string());
            pb.set_message(format!("{play} › {step}"));
            pb.enable_steady_tick(Duration::from_millis(120));
            self.active.insert(task, pb);
        }
    }

    pub fn task_end(&mut self, mut t: TaskEnd) {
        t.msg = self.redact(&t.msg);
        t.warnings = t.warnings.iter().map(|w| self.redact(w)).collect();
        t.diff = if t.show_diff.unwrap_or(self.diff) { t.diff.map(|d| self.redact(&d)) } else { None };
        let mut v = serde_json::to_value(&t).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("event".into(), json!("task_end"));
            m.insert("ts".into(), json!(now_ms()));
        }
        self.emit(v);
        if let Some(r) = &mut self.record {
            r.host_log(&t.host, &self.redactor, &t);
        }
        if let Some(pb) = self.active.remove(&t.task) {
            pb.finish_and_clear();
        }
        if let Some((_, bar)) = &self.tty {
            bar.inc(1);
        }
        if self.format != OutputFormat::Human {
            return;
        }
        for w in &t.warnings {
            let on = t.runs_on.as_ref().map(|r| format!(" -> {r}")).unwrap_or_default();
            self.say(&format!("WARNING: [{}{on}] {} › {}: {w}", t.host, t.play, t.step));
        }
        // On a terminal only what needs attention is printed as it happens; elsewhere every event.
        let show = self.tty.is_none()
            || matches!(t.status, Status::Failed | Status::Unreachable)
            || self.verbose > 0
            || t.diff.is_some();
        if !show {
            return;
        }
        let label = match (t.status, t.ignored) {
            (Status::Failed, true) => "failed (ignored)",
            (Status::Ok, _) => "ok",
            (Status::Changed, _) => "changed",
            (Status::Skipped, _) => "skipping",
            (Status::Failed, _) => "FAILED",
            (Status::Unreachable, _) => "UNREACHABLE",
        };
        let on = t.runs_on.as_ref().map(|r| format!(" -> {r}")).unwrap_or_default();
        let msg = if t.msg.is_empty() { String::new() } else { format!(" — {}", t.msg) };
        self.say(&format!(
            "{label}: [{}{on}] {} › {} ({:.2}s){msg}",
            t.host,
            t.play,
            t.step,
            t.duration_ms as f64 / 1000.0
        ));
        if matches!(t.status, Status::Failed | Status::Unreachable) || self.verbose > 0 {
            if self.verbose > 0 || t.status == Status::Failed {
                for c in &t.commands {
                    self.say(&format!("    $ {}", self.redact(c.lines().next().unwrap_or(""))));
                }
            }
            let tail: Vec<&str> = t.stderr.lines().rev().take(if self.verbose > 0 { 50 } else { 5 }).collect();
            for l in tail.into_iter().rev() {
                self.say(&format!("    stderr: {}", self.redact(l)));
            }
            if self.verbose > 0 {
                for l in t.stdout.lines().take(50) {
                    self.say(&format!("    stdout: {}", self.redact(l)));
                }
            }
        }
        if let Some(d) = &t.diff {
            for l in d.lines() {
                self.say(&format!("    {l}"));
            }
        }
    }

    pub fn note(&mut self, text: &str) {
        if self.format == OutputFormat::Human {
            self.say(&self.redact(text));
        }
    }

    pub fn run_end(
        &mut self,
        recap: &BTreeMap<String, HostRecap>,
        slowest: &[(f64, String)],
        exit_code: i32,
        interrupted: bool,
        elapsed: Duration,
    ) {
        if let Some((mp, bar)) = self.tty.take() {
            bar.finish_and_clear();
            let _ = mp.clear();
        }
        self.emit(json!({"event": "run_end", "exit_code": exit_code, "interrupted": interrupted,
                         "duration_ms": elapsed.as_millis() as u64, "recap": recap, "ts": now_ms()}));
        if self.format != OutputFormat::Human {
            return;
        }
        let w = recap.keys().map(String::len).max().unwrap_or(4).max(4);
        let mut out = String::from("\nRECAP\n");
        // The rescued column shows only in runs where a rescue caught a failure (Ansible
        // playbooks' blocks): other recaps read as they always have.
        let rescued = recap.values().any(|r| r.rescued > 0);
        out.push_str(&format!(
            "{:w$}  {:>5} {:>8} {:>7} {:>8} {:>12} {:>8}{} {:>8}\n",
            "host",
            "ok",
            "changed",
            "failed",
            "skipped",
            "unreachable",
            "ignored",
            if rescued { format!(" {:>8}", "rescued") } else { String::new() },
            "time"
        ));
        for (h, r) in recap {
            out.push_str(&format!(
                "{h:w$}  {:>5} {:>8} {:>7} {:>8} {:>12} {:>8}{} {:>7.1}s\n",
                r.ok,
                r.changed,
                r.failed,
                r.skipped,
                r.unreachable,
                r.ignored,
                if rescued { format!(" {:>8}", r.rescued) } else { String::new() },
                r.seconds
            ));
        }
        if !slowest.is_empty() {
            out.push_str("\nslowest steps:\n");
            for (s, what) in slowest {
                out.push_str(&format!("  {s:>7.2}s  {what}\n"));
            }
        }
        let changed: u32 = recap.values().map(|r| r.changed).sum();
        let verdict = if interrupted {
            "interrupted".to_string()
        } else if exit_code == 0 {
            if changed == 0 { "ok: nothing changed".into() } else { format!("ok: {changed} change(s)") }
        } else {
            "failed".into()
        };
        out.push_str(&format!("\n{verdict} in {:.1}s (exit {exit_code})", elapsed.as_secs_f64()));
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{out}");
    }
}
