//! `copctl exec PATTERN -- COMMAND`: one command on every matched host in parallel, Ansible's
//! ad-hoc output (a block per host as it finishes), a summary line, and Ansible's exit codes.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Cli;
use super::args::ExecArgs;
use crate::error::{Error, Result};
use crate::report::OutputFormat;
use crate::site::Site;
use crate::transport::{ExecRequest, Pool, TransportError};

#[derive(Debug)]
enum Outcome {
    Ok { rc: u32, stdout: String, stderr: String },
    Failed { rc: Option<u32>, stdout: String, stderr: String, why: String },
    Unreachable(String),
}

pub fn exec(cli: &Cli, args: &ExecArgs) -> Result<i32> {
    let site = cli.site(&[])?;
    let hosts = site.inventory.select(&args.pattern, args.limit.as_deref())?;
    if hosts.is_empty() {
        return Err(site.inventory.no_match_error("pattern", &args.pattern));
    }
    let pool = Arc::new(cli.pool(&site, &hosts, &Default::default())?);
    run(&site, pool, hosts, args.command.join(" "), Duration::from_secs(args.timeout), args.output)
}

/// Runs `command` on `hosts`; returns the exit code (0, 2 a command failed, 4 a host unreachable).
fn run(
    site: &Site,
    pool: Arc<Pool>,
    hosts: Vec<String>,
    command: String,
    timeout: Duration,
    format: OutputFormat,
) -> Result<i32> {
    if command.trim().is_empty() {
        return Err(Error::with_help("no command given", "copctl exec PATTERN -- COMMAND ARGS..."));
    }
    let redactor = site.redactor();
    let rt = crate::runtime()?;
    let start = Instant::now();
    let (ok, failed, unreachable) = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for h in hosts.iter().cloned() {
            let pool = pool.clone();
            let tx = tx.clone();
            let command = command.clone();
            tokio::spawn(async move {
                let t0 = Instant::now();
                let outcome = match pool.get(&h).await {
                    Err(e) => Outcome::Unreachable(e.to_string()),
                    Ok(conn) => match conn.exec(ExecRequest { command: &command, stdin: None, timeout }).await {
                        Ok(out) => {
                            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                            match out.status {
                                Some(0) => Outcome::Ok { rc: 0, stdout, stderr },
                                rc => Outcome::Failed {
                                    rc,
                                    stdout,
                                    stderr,
                                    why: out.signal.map(|s| format!("killed by {s}")).unwrap_or_default(),
                                },
                            }
                        }
                        Err(e @ TransportError::Timeout { .. }) => {
                            Outcome::Failed { rc: None, stdout: String::new(), stderr: String::new(), why: e.to_string() }
                        }
                        Err(e) if e.is_unreachable() => Outcome::Unreachable(e.to_string()),
                        Err(e) => Outcome::Failed { rc: None, stdout: String::new(), stderr: String::new(), why: e.to_string() },
                    },
                };
                let _ = tx.send((h, outcome, t0.elapsed()));
            });
        }
        drop(tx);
        let (mut ok, mut failed, mut unreachable) = (0, 0, 0);
        let mut out = std::io::stdout().lock();
        while let Some((host, outcome, took)) = rx.recv().await {
            let r = |s: &str| redactor.redact(s);
            match format {
                OutputFormat::Json => {
                    let v = match &outcome {
                        Outcome::Ok { rc, stdout, stderr } => json!({"host": host, "status": "ok", "rc": rc,
                            "stdout": r(stdout), "stderr": r(stderr), "duration_ms": took.as_millis() as u64}),
                        Outcome::Failed { rc, stdout, stderr, why } => json!({"host": host, "status": "failed", "rc": rc,
                            "stdout": r(stdout), "stderr": r(stderr), "error": r(why), "duration_ms": took.as_millis() as u64}),
                        Outcome::Unreachable(why) => json!({"host": host, "status": "unreachable", "error": r(why),
                            "duration_ms": took.as_millis() as u64}),
                    };
                    let _ = writeln!(out, "{v}");
                }
                OutputFormat::Human => {
                    let block = match &outcome {
                        Outcome::Ok { rc, stdout, stderr } => {
                            format!("{host} | CHANGED | rc={rc} >>\n{}{}", r(stdout), r(stderr))
                        }
                        Outcome::Failed { rc, stdout, stderr, why } => format!(
                            "{host} | FAILED | rc={} >>\n{}{}{}",
                            rc.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                            r(stdout),
                            r(stderr),
                            if why.is_empty() { String::new() } else { format!("{}\n", r(why)) }
                        ),
                        Outcome::Unreachable(why) => format!("{host} | UNREACHABLE! => {}\n", r(why)),
                    };
                    let _ = write!(out, "{}", block);
                    if !block.ends_with('\n') {
                        let _ = writeln!(out);
                    }
                }
            }
            match outcome {
                Outcome::Ok { .. } => ok += 1,
                Outcome::Failed { .. } => failed += 1,
                Outcome::Unreachable(_) => unreachable += 1,
            }
        }
        pool.close().await;
        (ok, failed, unreachable)
    });
    let secs = start.elapsed().as_secs_f64();
    match format {
        OutputFormat::Json => writeln!(
            std::io::stdout(),
            "{}",
            json!({"summary": {"hosts": hosts.len(), "ok": ok, "failed": failed, "unreachable": unreachable, "seconds": secs}})
        )?,
        OutputFormat::Human => writeln!(
            std::io::stdout(),
            "{} host(s): {ok} ok, {failed} failed, {unreachable} unreachable ({secs:.2}s)",
            hosts.len()
        )?,
    }
    Ok(if unreachable > 0 {
        4
    } else if failed > 0 {
        2
    } else {
        0
    })
}
