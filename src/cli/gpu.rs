//! `copctl gpu lint | status | check`. lint: the manifests read, checked offline (no site, no
//! cluster) and reported; exit 1 when any finding is an error. status and check: kubectl on the
//! first server (`masters[0]`), the site's settings read from env.yaml with the gpu-operator
//! playbook's defaults.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::json;

use super::Cli;
use super::args::{GpuCheckArgs, GpuCmd, GpuLintArgs, GpuStatusArgs};
use crate::error::{Error, Result};
use crate::gpu::check::{self, Kube, Settings, Verdict};
use crate::gpu::{lint, status};
use crate::report::OutputFormat;
use crate::site::Site;
use crate::steps::{Guards, Kind, StepCtx};
use crate::transport::{HostConnection, Pool};

pub fn gpu(cli: &Cli, what: &GpuCmd) -> Result<i32> {
    match what {
        GpuCmd::Lint(args) => lint_cmd(args),
        GpuCmd::Status(args) => status_cmd(cli, args),
        GpuCmd::Check(args) => check_cmd(cli, args),
    }
}

fn lint_cmd(args: &GpuLintArgs) -> Result<i32> {
    let inputs = lint::read_inputs(&args.paths)?;
    let report = lint::lint(&inputs, &args.device_classes);
    let text = match args.output {
        OutputFormat::Human => lint::human(&report),
        OutputFormat::Json => serde_json::to_string_pretty(&report).expect("JSON") + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(if report.errors > 0 { 1 } else { 0 })
}

/// The server kubectl runs on: the first reachable, Ready one of the inventory's masters.
async fn kube_server(pool: &Pool, masters: &[String]) -> Result<(String, HostConnection)> {
    if masters.is_empty() {
        return Err(Error::with_help(
            "the inventory has no host in the masters group: copctl reads the cluster with a server's kubectl",
            "list the RKE2 servers under [masters] in the inventory",
        ));
    }
    let found = super::servers::ask(pool, masters, 1).await;
    if let Some(note) = found.note(masters).filter(|_| !found.ready.is_empty()) {
        eprintln!("note: {note}");
    }
    match found.ready.first() {
        Some(s) => Ok((s.clone(), connect(pool, s).await?)),
        None => {
            let why: Vec<String> = found.passed_over.iter().map(|(h, w)| format!("{h}: {w}")).collect();
            let unreachable = found.passed_over.iter().all(|(_, w)| w.starts_with("unreachable"));
            let e = Error::with_help(
                format!("no server is reachable and Ready, so no kubectl can read the cluster ({})", why.join("; ")),
                "check the servers (systemctl status rke2-server on each)",
            );
            Err(if unreachable { e.with_kind(crate::error::ErrorKind::Unreachable) } else { e })
        }
    }
}

const KUBECTL_TIMEOUT: Duration = Duration::from_secs(180);

/// Connects to the first server; an unreachable one is the error.
async fn connect(pool: &Pool, host: &str) -> Result<HostConnection> {
    pool.get(host).await.map_err(|e| {
        Error::plain(format!("cannot reach the first server, where kubectl runs: {e}"))
            .with_kind(crate::error::ErrorKind::Unreachable)
    })
}

fn status_cmd(cli: &Cli, args: &GpuStatusArgs) -> Result<i32> {
    let site = cli.site(&[])?;
    let masters = super::servers::masters(&site);
    let pool = cli.pool(&site, &masters, &Default::default())?;
    let rt = crate::runtime()?;
    let snap = rt.block_on(async {
        let (first, conn) = kube_server(&pool, &masters).await?;
        let k = Kube { conn: &conn, timeout: KUBECTL_TIMEOUT };
        let snap = k
            .snapshot()
            .await
            .map_err(|e| Error::plain(format!("cannot read the cluster's GPU objects on {first}: {e}")));
        pool.close().await;
        snap
    })?;
    let st = status::status(&snap);
    let text = match args.output {
        OutputFormat::Human => status::human(&st),
        OutputFormat::Json => serde_json::to_string_pretty(&st).expect("JSON") + "\n",
    };
    std::io::stdout().lock().write_all(site.redactor().redact(&text).as_bytes())?;
    Ok(0)
}

/// What the check takes from the site: env.yaml (and -e) over the gpu-operator playbook's
/// defaults, rendered in the first server's context.
fn settings(site: &mut Site, first: &str, timeout: u64) -> Result<(Settings, minijinja::Value)> {
    let pb = site.load_playbook("gpu-operator")?;
    let ctx = site.context(&pb, first, Arc::new(IndexMap::new()));
    let eval = |expr: &str| {
        site.templates
            .render_str(expr, &ctx)
            .map_err(|e| Error::plain(format!("cannot read {expr} from env.yaml: {e}")))
    };
    let yes = |t: String| t.eq_ignore_ascii_case("true");
    if !yes(eval("{{ gpu_dra_enabled | default(true) | bool }}")?) {
        return Err(Error::with_help(
            "gpu check proves DRA claims, and gpu_dra_enabled is false in env.yaml (the cluster shares GPUs by time-slicing)",
            "the time-slicing install verifies each node's allocatable nvidia.com/gpu itself (gpu-operator)",
        ));
    }
    let image = eval("{{ gpu_check_image | default('nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04') }}")?;
    let sharing = yes(eval("{{ gpu_dra_sharing_enabled | default(false) | bool }}")?);
    let memory = eval("{{ gpu_check_memory | default('1Gi') }}")?;
    let taint = eval("{{ gpu_node_taint | default('nvidia.com/gpu=present:NoSchedule') }}")?;
    let key = taint.split(['=', ':']).next().unwrap_or("").trim().to_string();
    Ok((
        Settings {
            image,
            sharing,
            share_request: ("memory".into(), memory),
            taint_key: (!key.is_empty()).then_some(key),
            class: "gpu.nvidia.com".into(),
            timeout: Duration::from_secs(timeout),
            poll: Duration::from_secs(1),
        },
        ctx,
    ))
}

fn check_cmd(cli: &Cli, args: &GpuCheckArgs) -> Result<i32> {
    let mut site = cli.site(&args.extra_vars)?;
    let masters = super::servers::masters(&site);
    let Some(first) = masters.first().cloned() else {
        return Err(Error::with_help(
            "the inventory has no host in the masters group: copctl reads the cluster with a server's kubectl",
            "list the RKE2 servers under [masters] in the inventory",
        ));
    };
    let nodes = site.inventory.select("gpu", args.limit.as_deref()).unwrap_or_default();
    if nodes.is_empty() {
        let all =
            if site.inventory.groups.contains_key("gpu") { site.inventory.group_hosts("gpu") } else { Vec::new() };
        return Err(match &args.limit {
            // A limit naming nothing at all says so itself, with the closest names.
            Some(l) if site.inventory.select("all", Some(l)).is_err() => {
                site.inventory.select("all", Some(l)).unwrap_err()
            }
            Some(l) => Error::with_help(
                format!("--limit {l} matches no GPU node"),
                if all.is_empty() {
                    "the inventory's gpu group is empty".to_string()
                } else {
                    format!("the GPU nodes (the gpu group): {}", all.join(", "))
                },
            ),
            None => Error::with_help(
                "the inventory's gpu group is empty: no GPU node to check",
                "list the GPU nodes under [gpu]",
            ),
        });
    }
    let (settings, ctx) = settings(&mut site, &first, args.timeout)?;
    let pool = cli.pool(&site, &masters, &Default::default())?;
    let local_dir = crate::inventory::site_dir(&cli.inventory_sources());
    let human = args.output == OutputFormat::Human;
    let say = |m: &str| {
        if human {
            eprintln!("{m}");
        }
    };
    let rt = crate::runtime()?;
    let (first, results, interrupted, cleanup) = rt.block_on(async {
        let (first, conn) = kube_server(&pool, &masters).await?;
        let k = Kube { conn: &conn, timeout: KUBECTL_TIMEOUT };
        let work = async {
            // The image first, where containerd will pull it from: nothing is made without it.
            let image_check = crate::steps::ImageCheckArgs { charts: vec![], images: vec![settings.image.clone()], registries: None };
            let cx = StepCtx {
                host: &first,
                conn: &conn,
                pool: &pool,
                templates: &site.templates,
                vars: &ctx,
                check: false,
                diff: false,
                timeout: KUBECTL_TIMEOUT,
                local_dir: &local_dir,
            };
            let o = image_check.apply(&cx, &Guards::default()).await;
            if matches!(o.status, crate::steps::Status::Failed | crate::steps::Status::Unreachable) {
                // The probe's own words (each endpoint tried and what it answered), without its
                // advice for a chart install.
                let tried = o
                    .msg
                    .split_once(" through the registry: ")
                    .map(|(_, t)| t.split("; push them to the registry").next().unwrap_or(t).to_string())
                    .unwrap_or_else(|| o.msg.clone());
                return Err(Error::with_help(
                    format!("the check's image cannot be pulled through the registry: {tried}; nothing was created"),
                    "push the image to the private registry, or name one there with -e gpu_check_image=IMAGE (env.yaml)",
                ));
            }
            match k.leftovers().await {
                Ok(left) if !left.is_empty() => {
                    say(&format!("removing what an earlier check left: {}", left.join(", ")));
                    k.cleanup().await.map_err(|e| Error::plain(format!("cannot delete {}: {e}", left.join(", "))))?;
                }
                Ok(_) => {}
                Err(e) => return Err(Error::plain(format!("cannot read the cluster on {first}: {e}"))),
            }
            let mut results = Vec::new();
            for n in &nodes {
                results.extend(check::node(&k, &settings, n, &say).await);
            }
            Ok(results)
        };
        let (results, interrupted) = tokio::select! {
            r = work => (r, false),
            _ = tokio::signal::ctrl_c() => (Ok(Vec::new()), true),
        };
        if interrupted {
            say("interrupted: deleting the check's namespaces");
        }
        let cleanup = k.cleanup().await;
        pool.close().await;
        Ok::<_, Error>((first, results, interrupted, cleanup))
    })?;
    let results = results?;
    let redactor = site.redactor();
    let failed = results.iter().filter(|r| r.verdict == Verdict::Failed).count();
    let mut out = String::new();
    match args.output {
        OutputFormat::Json => {
            let v = json!({
                "first_server": first,
                "image": settings.image,
                "sharing": settings.sharing,
                "results": results,
                "passed": results.iter().filter(|r| r.verdict == Verdict::Passed).count(),
                "failed": failed,
                "interrupted": interrupted,
                "cleaned_up": cleanup.is_ok(),
            });
            out = serde_json::to_string_pretty(&v).expect("JSON") + "\n";
        }
        OutputFormat::Human => {
            let w = check::CHECKS.iter().map(|c| c.len()).max().unwrap_or(0);
            let nw = nodes.iter().map(String::len).max().unwrap_or(0);
            for r in &results {
                let v = match r.verdict {
                    Verdict::Passed => "passed",
                    Verdict::Failed => "FAILED",
                    Verdict::Skipped => "skipped",
                };
                out.push_str(&format!("{:<nw$}  {:<w$}  {v:<7}  {}\n", r.node, r.check, r.detail));
            }
            if !interrupted {
                let bad: std::collections::BTreeSet<&str> =
                    results.iter().filter(|r| r.verdict == Verdict::Failed).map(|r| r.node.as_str()).collect();
                out.push_str(&format!(
                    "gpu check: {} node(s), {} passed, {} failed\n",
                    nodes.len(),
                    nodes.len() - bad.len(),
                    bad.len()
                ));
            }
        }
    }
    std::io::stdout().lock().write_all(redactor.redact(&out).as_bytes())?;
    if let Err(e) = &cleanup {
        eprintln!("error: the check's namespaces (label {}) could not be deleted: {e}", check::LABEL);
        eprintln!("help: delete them with `kubectl delete namespace -l {}` on {first}", check::LABEL);
    } else if interrupted {
        eprintln!("interrupted: nothing of the check is left on the cluster");
    }
    Ok(if interrupted {
        130
    } else if failed > 0 || cleanup.is_err() {
        2
    } else {
        0
    })
}
