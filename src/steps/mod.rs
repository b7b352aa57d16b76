//! Step kinds, one module each, all of the same shape: check what the host has, compute the
//! difference, apply it unless in check mode, and report ok / changed / skipped / failed with the
//! reason. A step gets its arguments already rendered for its host.

mod command;
mod file;
mod kube;
mod lines;
mod logic;
mod package;
mod service;
mod transfer;
mod wait;

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::playbook::Action;
use crate::template::Templates;
use crate::transport::{ExecOutput, ExecRequest, HostConnection, Pool, TransportError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Changed,
    Skipped,
    Failed,
    Unreachable,
}

/// What a step did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub msg: String,
    /// What `register:` stores (stdout, stderr, rc, content, ... plus changed/failed/skipped/msg).
    pub result: Map<String, Value>,
    /// Unified diff of a file change (for `--diff`).
    pub diff: Option<String>,
    /// `set_fact` variables.
    pub facts: Option<Map<String, Value>>,
    /// The remote command(s) run, for `-v` and the run log.
    pub commands: Vec<String>,
}

impl Outcome {
    pub fn new(status: Status, msg: impl Into<String>) -> Self {
        Outcome { status, msg: msg.into(), result: Map::new(), diff: None, facts: None, commands: vec![] }
    }

    pub fn ok(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Ok, msg)
    }

    pub fn changed(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Changed, msg)
    }

    pub fn failed(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Failed, msg)
    }

    pub fn skipped(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Skipped, msg)
    }

    pub fn with_output(mut self, out: &ExecOutput) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        self.result.insert("rc".into(), out.status.map(|s| json!(s)).unwrap_or(Value::Null));
        self.result.insert("stdout_lines".into(), json!(stdout.lines().collect::<Vec<_>>()));
        self.result.insert("stderr_lines".into(), json!(stderr.lines().collect::<Vec<_>>()));
        self.result.insert("stdout".into(), json!(stdout.trim_end_matches('\n')));
        self.result.insert("stderr".into(), json!(stderr.trim_end_matches('\n')));
        self
    }

    /// The registered value: the result plus the status flags every result has.
    pub fn registered(&self) -> Value {
        let mut m = self.result.clone();
        m.insert("changed".into(), json!(self.status == Status::Changed));
        m.insert("failed".into(), json!(matches!(self.status, Status::Failed | Status::Unreachable)));
        m.insert("skipped".into(), json!(self.status == Status::Skipped));
        m.entry("msg").or_insert(json!(self.msg));
        for k in ["stdout", "stderr"] {
            m.entry(k).or_insert(json!(""));
        }
        m.entry("rc").or_insert(json!(0));
        Value::Object(m)
    }
}

/// What a step needs from the engine.
pub struct StepCtx<'a> {
    pub host: &'a str,
    pub conn: &'a HostConnection,
    pub pool: &'a Pool,
    pub templates: &'a Templates,
    pub vars: &'a minijinja::Value,
    pub check: bool,
    pub diff: bool,
    pub timeout: Duration,
    /// Where relative local paths (copy src, fetch dest) are resolved.
    pub local_dir: &'a Path,
}

impl StepCtx<'_> {
    /// Runs a script on the host; transport errors become failed or unreachable outcomes.
    pub async fn sh(&self, script: &str, stdin: Option<&[u8]>) -> Result<ExecOutput, Outcome> {
        self.conn.exec(ExecRequest { command: script, stdin, timeout: self.timeout }).await.map_err(transport_outcome)
    }
}

/// What a check-and-apply script reported: its `CHANGED what` lines.
pub fn reported_changes(out: &ExecOutput) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("CHANGED "))
        .map(str::to_string)
        .collect()
}

pub fn transport_outcome(e: TransportError) -> Outcome {
    if e.is_unreachable() { Outcome::new(Status::Unreachable, e.to_string()) } else { Outcome::failed(e.to_string()) }
}

/// Renders every string inside an argument value for the host.
pub fn render_value(t: &Templates, v: &Value, ctx: &minijinja::Value) -> Result<Value, minijinja::Error> {
    Ok(match v {
        Value::String(s) => Value::String(t.render_str(s, ctx)?),
        Value::Array(a) => Value::Array(a.iter().map(|x| render_value(t, x, ctx)).collect::<Result<_, _>>()?),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Ok::<_, minijinja::Error>((k.clone(), render_value(t, x, ctx)?)))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// Renders a typed argument struct through its JSON form.
pub fn render_args<T: serde::Serialize + serde::de::DeserializeOwned>(
    t: &Templates,
    args: &T,
    ctx: &minijinja::Value,
) -> Result<T, String> {
    let v = serde_json::to_value(args).map_err(|e| e.to_string())?;
    let r = render_value(t, &v, ctx).map_err(|e| crate::template::describe_error(&e))?;
    serde_json::from_value(r).map_err(|e| format!("after rendering: {e}"))
}

/// Runs one step's action on the host.
pub async fn run_action(cx: &StepCtx<'_>, action: &Action, guards: &command::Guards) -> Outcome {
    macro_rules! args {
        ($a:expr) => {
            match render_args(cx.templates, $a, cx.vars) {
                Ok(a) => a,
                Err(e) => return Outcome::failed(e),
            }
        };
    }
    match action {
        Action::Command(a) => command::command(cx, &args!(a), guards).await,
        Action::Shell(a) => command::shell(cx, &args!(a), guards).await,
        Action::Copy(a) => transfer::copy(cx, &args!(a)).await,
        Action::Template(a) => transfer::template(cx, &args!(a)).await,
        Action::File(a) => file::file(cx, &args!(a)).await,
        Action::Line(a) => lines::line(cx, &args!(a)).await,
        Action::Block(a) => lines::block(cx, &args!(a)).await,
        Action::Service(a) => service::service(cx, &args!(a)).await,
        Action::Package(a) => package::package(cx, &args!(a)).await,
        Action::Slurp(a) => transfer::slurp(cx, &args!(a)).await,
        Action::Fetch(a) => transfer::fetch(cx, &args!(a)).await,
        Action::WaitFor(a) => wait::wait_for(cx, &args!(a)).await,
        Action::Reboot(a) => wait::reboot(cx, &args!(a)).await,
        Action::AuthorizedKey(a) => lines::authorized_key(cx, &args!(a)).await,
        Action::Kube(a) => kube::kube(cx, &args!(a)).await,
        Action::Helm(a) => kube::helm(cx, &args!(a)).await,
        Action::Assert(a) => logic::assert(cx, a),
        Action::Debug(a) => logic::debug(cx, a),
        Action::SetFact(a) => logic::set_fact(cx, a),
    }
}

pub use command::Guards;
