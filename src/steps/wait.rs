//! Waiting: `wait_for` (a port, a path or a command, polled on the host in one remote loop) and
//! `reboot` (reboots, then waits for a new boot id and SSH back).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Outcome, StepCtx};
use crate::playbook::step::{RebootArgs, WaitForArgs};
use crate::template::shell_quote;
use crate::transport::ExecRequest;

pub async fn wait_for(cx: &StepCtx<'_>, a: &WaitForArgs) -> Outcome {
    let (timeout, interval) =
        match (a.timeout.as_ref().map(|n| n.get()).transpose(), a.interval.as_ref().map(|n| n.get()).transpose()) {
            (Ok(t), Ok(i)) => (t.unwrap_or(300), i.unwrap_or(1).max(1)),
            (Err(e), _) | (_, Err(e)) => return Outcome::failed(format!("wait_for: {e}")),
        };
    let (check, what) = match (&a.port, &a.path, &a.command) {
        (Some(port), None, None) => {
            let host = a.host.clone().unwrap_or_else(|| "127.0.0.1".into());
            (
                format!(
                    "(exec 3<>/dev/tcp/{host}/{port}) 2>/dev/null || nc -z {h} {port} 2>/dev/null",
                    h = shell_quote(&host)
                ),
                format!("port {host}:{port}"),
            )
        }
        (None, Some(path), None) => (format!("[ -e {} ]", shell_quote(path)), format!("path {path}")),
        (None, None, Some(cmd)) => (format!("( {cmd} ) >/dev/null 2>&1"), format!("command `{cmd}`")),
        _ => return Outcome::failed("wait_for needs exactly one of port, path or command"),
    };
    if cx.check {
        return Outcome::skipped(format!("check mode: would wait for {what}"));
    }
    // bash for /dev/tcp where the login shell lacks it.
    let script = format!(
        "end=$(( $(date +%s) + {timeout} )); while :; do if bash -c {c} 2>/dev/null || sh -c {c}; then exit 0; fi; \
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

async fn boot_id(cx: &StepCtx<'_>) -> Result<String, Outcome> {
    let out = cx.sh("cat /proc/sys/kernel/random/boot_id", None).await?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub async fn reboot(cx: &StepCtx<'_>, a: &RebootArgs) -> Outcome {
    if cx.check {
        return Outcome::changed("check mode: would reboot");
    }
    let before = match boot_id(cx).await {
        Ok(b) => b,
        Err(o) => return o,
    };
    let msg = a.msg.clone().unwrap_or_else(|| "Reboot initiated by copctl".into());
    // Detached, so the SSH command returns before the connection goes away.
    let cmd = format!("nohup sh -c 'sleep 1; reboot' >/dev/null 2>&1 & echo {}", shell_quote(&msg));
    if let Err(o) = cx.sh(&cmd, None).await {
        return o;
    }
    let limit = Duration::from_secs(a.timeout.unwrap_or(600));
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    loop {
        if started.elapsed() > limit {
            return Outcome::failed(format!(
                "the host did not come back with a new boot id within {}s",
                limit.as_secs()
            ));
        }
        if let Ok(conn) = cx.pool.reconnect(cx.conn.spec.name.as_str()).await {
            let req = ExecRequest {
                command: "cat /proc/sys/kernel/random/boot_id",
                stdin: None,
                timeout: Duration::from_secs(10),
            };
            if let Ok(out) = conn.exec(req).await {
                let now = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if out.success() && !now.is_empty() && now != before {
                    let mut o = Outcome::changed(format!("rebooted in {}s", started.elapsed().as_secs()));
                    o.result.insert("elapsed".into(), json!(started.elapsed().as_secs()));
                    return o;
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
