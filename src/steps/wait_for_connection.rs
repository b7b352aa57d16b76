//! `wait_for_connection` (Ansible's module of that name): waits until the host answers over SSH
//! again (after a reboot started elsewhere, or a network change), logging in afresh when the
//! connection the run holds has gone; `delay` first, `sleep` between tries, `timeout` in all.
//! Never a change; `elapsed` (seconds) registered.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Number, Outcome, StepCtx};
use crate::transport::ExecRequest;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WaitForConnectionArgs {
    pub delay: Option<Number>,
    pub sleep: Option<Number>,
    pub timeout: Option<Number>,
    pub connect_timeout: Option<Number>,
}

impl Kind for WaitForConnectionArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let get = |n: &Option<Number>, d: u64| n.as_ref().map(|n| n.get()).transpose().map(|v| v.unwrap_or(d));
        let (delay, sleep, timeout, connect) =
            match (get(&self.delay, 0), get(&self.sleep, 1), get(&self.timeout, 600), get(&self.connect_timeout, 5)) {
                (Ok(a), Ok(b), Ok(c), Ok(d)) => (a, b.max(1), c, d.max(1)),
                (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
                    return Outcome::failed(format!("wait_for_connection: {e}"));
                }
            };
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(delay)).await;
        let req = || ExecRequest { command: "true", stdin: None, timeout: Duration::from_secs(connect) };
        // Why the host did not answer this time; none when it did.
        let why = |r: Result<crate::transport::ExecOutput, crate::transport::TransportError>| match r {
            Ok(out) if out.success() => None,
            Ok(out) => Some(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            Err(e) => Some(e.to_string()),
        };
        loop {
            let mut last = why(cx.conn.exec(req()).await);
            if last.is_some() {
                last = match cx.pool.reconnect(cx.conn.spec.name.as_str()).await {
                    Ok(conn) => why(conn.exec(req()).await),
                    Err(e) => Some(e.to_string()),
                };
            }
            let Some(last) = last else { break };
            if started.elapsed() >= Duration::from_secs(timeout) {
                return Outcome::failed(format!("timed out waiting for connection: {last}"));
            }
            tokio::time::sleep(Duration::from_secs(sleep)).await;
        }
        let elapsed = started.elapsed().as_secs();
        let mut o = Outcome::ok("");
        o.result.insert("elapsed".into(), json!(elapsed));
        o
    }
}
