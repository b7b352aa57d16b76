//! `reboot`: reboots the host, then waits for a new boot id and SSH back. As Ansible's reboot
//! module: `pre_reboot_delay` (whole minutes, as `shutdown -r +N` takes them), then after the
//! host is back `post_reboot_delay` seconds and `test_command` until it succeeds, all within
//! the timeout.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::ExecRequest;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RebootArgs {
    pub timeout: Option<u64>,
    pub msg: Option<String>,
    /// Seconds before the reboot; Linux's shutdown takes whole minutes, so it is floored.
    pub pre_reboot_delay: Option<u64>,
    /// Seconds to wait once the host is back, before `test_command`.
    pub post_reboot_delay: Option<u64>,
    /// Run on the rebooted host until it succeeds (Ansible's default: `whoami`).
    pub test_command: Option<String>,
}

impl Kind for RebootArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        if cx.check {
            return Outcome::changed("check mode: would reboot");
        }
        let before = match boot_id(cx).await {
            Ok(b) => b,
            Err(o) => return o,
        };
        let msg = a.msg.clone().unwrap_or_else(|| "Reboot initiated by copctl".into());
        // Detached, so the SSH command returns before the connection goes away.
        let pre = a.pre_reboot_delay.unwrap_or(0) / 60 * 60;
        let cmd = format!("nohup sh -c 'sleep {}; reboot' >/dev/null 2>&1 & echo {}", 1 + pre, shell_quote(&msg));
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
                        if let Some(d) = a.post_reboot_delay.filter(|d| *d > 0) {
                            tokio::time::sleep(Duration::from_secs(d)).await;
                        }
                        let test = a.test_command.as_deref().unwrap_or("whoami");
                        loop {
                            let req = ExecRequest { command: test, stdin: None, timeout: Duration::from_secs(60) };
                            if conn.exec(req).await.is_ok_and(|o| o.success()) {
                                break;
                            }
                            if started.elapsed() > limit {
                                return Outcome::failed(format!(
                                    "the host came back but its test command `{test}` did not succeed within {}s",
                                    limit.as_secs()
                                ));
                            }
                            tokio::time::sleep(Duration::from_secs(2)).await;
                        }
                        let mut o = Outcome::changed(format!("rebooted in {}s", started.elapsed().as_secs()));
                        o.result.insert("elapsed".into(), json!(started.elapsed().as_secs()));
                        o.result.insert("rebooted".into(), json!(true));
                        return o;
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

async fn boot_id(cx: &StepCtx<'_>) -> Result<String, Outcome> {
    let out = cx.sh("cat /proc/sys/kernel/random/boot_id", None).await?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
