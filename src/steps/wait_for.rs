//! `wait_for`: a port, a path or a command, polled on the host in one remote loop until it is
//! there or the timeout passes.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Number, Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::ExecRequest;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WaitForArgs {
    /// A port number, or a template giving one.
    pub port: Option<Number>,
    pub host: Option<String>,
    pub path: Option<String>,
    /// With `path`: a Python regular expression the file's text must match (Ansible's
    /// `search_regex`, searched line by line with grep's Perl syntax, else its extended one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_regex: Option<String>,
    pub command: Option<String>,
    /// Seconds before giving up.
    pub timeout: Option<Number>,
    /// Seconds between attempts.
    pub interval: Option<Number>,
    /// Seconds before the first attempt, within the timeout (Ansible's `delay`).
    pub delay: Option<Number>,
}

impl Kind for WaitForArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let num = |n: &Option<Number>| n.as_ref().map(|n| n.get()).transpose();
        let (timeout, interval, delay) = match (num(&a.timeout), num(&a.interval), num(&a.delay)) {
            (Ok(t), Ok(i), Ok(d)) => (t.unwrap_or(300), i.unwrap_or(1).max(1), d.unwrap_or(0)),
            (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => return Outcome::failed(format!("wait_for: {e}")),
        };
        let (check, what) = match (&a.port, &a.path, &a.command) {
            (Some(port), None, None) => {
                let port = match port.get().map(u16::try_from) {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) => return Outcome::failed("wait_for: port: out of range (0 to 65535)"),
                    Err(e) => return Outcome::failed(format!("wait_for: port: {e}")),
                };
                let host = a.host.clone().unwrap_or_else(|| "127.0.0.1".into());
                (
                    format!(
                        "(exec 3<>/dev/tcp/{host}/{port}) 2>/dev/null || nc -z {h} {port} 2>/dev/null",
                        h = shell_quote(&host)
                    ),
                    format!("port {host}:{port}"),
                )
            }
            (None, Some(path), None) => match &a.search_regex {
                None => (format!("[ -e {} ]", shell_quote(path)), format!("path {path}")),
                Some(re) => {
                    let (re, p) = (shell_quote(re), shell_quote(path));
                    (
                        format!("grep -qP -- {re} {p} 2>/dev/null || grep -qE -- {re} {p} 2>/dev/null"),
                        format!("{} in path {path}", a.search_regex.as_deref().unwrap_or_default()),
                    )
                }
            },
            (None, None, Some(cmd)) => (format!("( {cmd} ) >/dev/null 2>&1"), format!("command `{cmd}`")),
            _ => return Outcome::failed("wait_for needs exactly one of port, path or command"),
        };
        if a.search_regex.is_some() && a.path.is_none() {
            return Outcome::failed("wait_for: search_regex is supported with path only");
        }
        if cx.check {
            return Outcome::skipped(format!("check mode: would wait for {what}"));
        }
        // bash for /dev/tcp where the login shell lacks it.
        let script = format!(
            "end=$(( $(date +%s) + {timeout} )); sleep {delay}; while :; do if bash -c {c} 2>/dev/null || sh -c {c}; then exit 0; fi; \
             [ $(date +%s) -ge $end ] && exit 1; sleep {interval}; done",
            c = shell_quote(&check)
        );
        let started = Instant::now();
        let req = ExecRequest { command: &script, stdin: None, timeout: Duration::from_secs(timeout + 30) };
        match cx.conn.exec(req).await {
            Ok(out) if out.success() => {
                let mut o = Outcome::ok("");
                o.result.insert("elapsed".into(), json!(started.elapsed().as_secs()));
                o
            }
            Ok(_) => Outcome::failed(format!("timed out after {timeout}s waiting for {what}")),
            Err(e) => super::transport_outcome(e),
        }
    }
}
