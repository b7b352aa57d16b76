//! `copctl gpu check`: the chapter's "order for using a GPU" run for the operator on each GPU
//! node, from the first server's kubectl, in scratch namespaces (`copctl-gpu-check-...`, labelled
//! `copctl.openmaru.io/gpu-check`):
//! 1. shared claim: a ResourceClaim used by two pods (`resourceClaimName`): the claim turns
//!    Allocated, both pods Running, and both see the same device (`nvidia-smi -L` in each);
//! 2. claim template: a ResourceClaimTemplate used by one pod: its claim Allocated, the pod
//!    Running and seeing a device;
//! 3. with sharing on: a claim requesting capacity in each of two namespaces: both land on one
//!    device.
//!
//! Pods are placed with a nodeSelector (never nodeName: DRA needs the scheduler) and tolerate the
//! GPU nodes' taint. A check that does not pass says why in the chapter's terms (from
//! `status::pending_cause`). What it made is deleted after each check and, whatever happens
//! (failure, timeout, Ctrl-C), once more by label on the way out — that is the caller's
//! `cleanup`.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::cluster::Snapshot;
use super::smi;
use super::status::pending_cause;
use crate::text::quote::shell_quote;
use crate::transport::{ExecRequest, HostConnection};

pub const LABEL: &str = "copctl.openmaru.io/gpu-check";
use crate::steps::KUBECTL_PRELUDE as PRELUDE;

/// What the check needs from the site (env.yaml and the gpu-operator playbook's defaults).
#[derive(Debug, Clone)]
pub struct Settings {
    pub image: String,
    /// gpu_dra_sharing_enabled: the third check runs.
    pub sharing: bool,
    /// What each sharing claim requests (`memory: 1Gi`).
    pub share_request: (String, String),
    /// The key of the GPU nodes' taint, tolerated by the pods.
    pub taint_key: Option<String>,
    pub class: String,
    pub timeout: Duration,
    pub poll: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Passed,
    Failed,
    Skipped,
}

#[derive(Debug, Clone, Serialize)]
pub struct Result1 {
    pub node: String,
    pub check: &'static str,
    pub verdict: Verdict,
    pub detail: String,
}

/// kubectl on the first server.
pub struct Kube<'a> {
    pub conn: &'a HostConnection,
    pub timeout: Duration,
}

impl Kube<'_> {
    /// Runs `script` after the kubectl prelude; its stdout, or what it said on failure.
    pub async fn sh(&self, script: &str, stdin: Option<&[u8]>) -> Result<String, String> {
        let command = format!("{PRELUDE}{script}");
        let out = self
            .conn
            .exec(ExecRequest { command: &command, stdin, timeout: self.timeout })
            .await
            .map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.success() {
            Ok(stdout)
        } else {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            Err(if err.is_empty() { stdout.trim().to_string() } else { err })
        }
    }

    async fn json(&self, script: &str) -> Result<Value, String> {
        let out = self.sh(script, None).await?;
        serde_json::from_str(&out).map_err(|e| format!("kubectl printed no JSON ({e}): {}", out.trim()))
    }

    /// Everything `gpu status` reads, in one List.
    pub async fn snapshot(&self) -> Result<Snapshot, String> {
        Ok(Snapshot::from_list(&self.json("$K get deviceclasses,resourceslices,resourceclaims,pods -A -o json").await?))
    }

    async fn apply(&self, objects: Vec<Value>) -> Result<(), String> {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string();
        self.sh("$K apply -f -", Some(list.as_bytes())).await.map(|_| ())
    }

    async fn delete_namespace(&self, ns: &str) -> Result<(), String> {
        self.sh(&format!("$K delete namespace {} --ignore-not-found --wait=true --timeout=120s", shell_quote(ns)), None)
            .await
            .map(|_| ())
    }

    /// The scratch namespaces an earlier check left (killed before it could delete them).
    pub async fn leftovers(&self) -> Result<Vec<String>, String> {
        let out = self.sh(&format!("$K get namespaces -l {LABEL} -o name"), None).await?;
        Ok(out.lines().filter_map(|l| l.trim().strip_prefix("namespace/")).map(str::to_string).collect())
    }

    /// Every scratch namespace deleted (by label): the way out of every check.
    pub async fn cleanup(&self) -> Result<(), String> {
        self.sh(&format!("$K delete namespace -l {LABEL} --ignore-not-found --wait=true --timeout=120s"), None)
            .await
            .map(|_| ())
    }
}

/// A scratch namespace's name: a DNS label of at most 63 characters.
fn namespace(node: &str, what: &str) -> String {
    let slug: String =
        node.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let room = 63 - "copctl-gpu-check--".len() - what.len();
    let slug: String = slug.chars().take(room).collect();
    format!("copctl-gpu-check-{}-{what}", slug.trim_matches('-'))
}

fn ns_object(ns: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns,
        "labels": {LABEL: node, "app.kubernetes.io/managed-by": "copctl"}}})
}

fn request(s: &Settings, capacity: bool) -> Value {
    let mut ex = json!({"deviceClassName": s.class, "allocationMode": "ExactCount", "count": 1});
    if capacity {
        ex["capacity"] = json!({"requests": {s.share_request.0.clone(): s.share_request.1.clone()}});
    }
    json!({"devices": {"requests": [{"name": "gpu", "exactly": ex}]}})
}

fn claim(ns: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

fn pod(s: &Settings, ns: &str, name: &str, node: &str, source: (&str, &str)) -> Value {
    let mut spec = json!({
        "nodeSelector": {"kubernetes.io/hostname": node},
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "resourceClaims": [{"name": "gpu", source.0: source.1}],
        "containers": [{"name": "check", "image": s.image, "command": ["sleep", "3600"],
            "resources": {"claims": [{"name": "gpu"}], "requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}}],
    });
    if let Some(k) = &s.taint_key {
        spec["tolerations"] = json!([{"key": k, "operator": "Exists"}]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
        "labels": {"app.kubernetes.io/managed-by": "copctl"}}, "spec": spec})
}

/// Waits until in each namespace every claim is Allocated and every pod Running; or says, in the
/// chapter's terms, what did not get there.
async fn settled(k: &Kube<'_>, s: &Settings, namespaces: &[String], pods: usize) -> Result<Snapshot, String> {
    let started = Instant::now();
    loop {
        let mut snap = Snapshot::default();
        for ns in namespaces {
            let part = Snapshot::from_list(
                &k.json(&format!("$K get resourceclaims,pods -n {} -o json", shell_quote(ns))).await?,
            );
            snap.claims.extend(part.claims);
            snap.pods.extend(part.pods);
        }
        let ready = snap.pods.len() == pods
            && snap.pods.iter().all(|p| p.phase == "Running")
            && !snap.claims.is_empty()
            && snap.claims.iter().all(|c| !c.allocated.is_empty());
        if ready {
            return Ok(snap);
        }
        if started.elapsed() >= s.timeout {
            return Err(diagnose(k, namespaces, s.timeout).await);
        }
        tokio::time::sleep(s.poll).await;
    }
}

/// Why the scratch objects did not settle: the first Pending claim's cause, else the first
/// waiting pod's.
async fn diagnose(k: &Kube<'_>, namespaces: &[String], timeout: Duration) -> String {
    let snap = match k.snapshot().await {
        Ok(s) => s,
        Err(e) => return format!("not settled after {}s, and the cluster could not be read: {e}", timeout.as_secs()),
    };
    let ours = |ns: &str| namespaces.iter().any(|n| n == ns);
    if let Some(c) = snap.claims.iter().find(|c| ours(&c.namespace) && c.allocated.is_empty()) {
        return format!("claim {} stayed Pending for {}s: {}", c.key(), timeout.as_secs(), pending_cause(&snap, c));
    }
    if let Some(p) = snap.pods.iter().find(|p| ours(&p.namespace) && p.phase != "Running") {
        let why = p.unschedulable.clone().unwrap_or_else(|| "not started (image pull or container start)".into());
        let cause = if why.contains("Insufficient cpu") || why.contains("Insufficient memory") {
            format!("the claim was allocated but the node lacks CPU or memory: {why}")
        } else {
            why
        };
        return format!("pod {}/{} stayed {} for {}s: {cause}", p.namespace, p.name, p.phase, timeout.as_secs());
    }
    format!("not settled after {}s", timeout.as_secs())
}

/// The device UUIDs a check pod sees.
async fn sees(k: &Kube<'_>, ns: &str, pod: &str) -> Result<Vec<String>, String> {
    let out = k
        .sh(&format!("$K exec -n {} {} -c check -- nvidia-smi -L", shell_quote(ns), shell_quote(pod)), None)
        .await
        .map_err(|e| format!("nvidia-smi -L in {ns}/{pod} failed: {e}"))?;
    let listed = smi::list(&out).map_err(|e| format!("{ns}/{pod}: {e}"))?;
    if listed.is_empty() {
        return Err(format!("{ns}/{pod} sees no device (nvidia-smi -L lists none)"));
    }
    Ok(listed.into_iter().map(|l| l.uuid).collect())
}

fn placement(snap: &Snapshot) -> String {
    let mut at: Vec<String> =
        snap.claims.iter().flat_map(|c| &c.allocated).map(|a| format!("{}/{}", a.node, a.device)).collect();
    at.dedup();
    at.join(", ")
}

async fn shared_claim(k: &Kube<'_>, s: &Settings, node: &str) -> Result<String, String> {
    let ns = namespace(node, "shared");
    k.apply(vec![
        ns_object(&ns, node),
        claim(&ns, "shared", request(s, false)),
        pod(s, &ns, "check-1", node, ("resourceClaimName", "shared")),
        pod(s, &ns, "check-2", node, ("resourceClaimName", "shared")),
    ])
    .await?;
    let snap = settled(k, s, std::slice::from_ref(&ns), 2).await?;
    let c = &snap.claims[0];
    if c.consumers.len() != 2 {
        return Err(format!("claim {} lists {} consumer(s), not the 2 pods", c.key(), c.consumers.len()));
    }
    let (a, b) = (sees(k, &ns, "check-1").await?, sees(k, &ns, "check-2").await?);
    if a != b {
        return Err(format!(
            "the two pods sharing claim {} see different devices: {} and {}",
            c.key(),
            a.join(","),
            b.join(",")
        ));
    }
    Ok(format!("claim Allocated ({}), check-1 and check-2 Running, both see {}", placement(&snap), a.join(",")))
}

async fn claim_template(k: &Kube<'_>, s: &Settings, node: &str) -> Result<String, String> {
    let ns = namespace(node, "template");
    k.apply(vec![
        ns_object(&ns, node),
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "own", "namespace": ns}, "spec": {"spec": request(s, false)}}),
        pod(s, &ns, "check-1", node, ("resourceClaimTemplateName", "own")),
    ])
    .await?;
    let snap = settled(k, s, std::slice::from_ref(&ns), 1).await?;
    let seen = sees(k, &ns, "check-1").await?;
    Ok(format!(
        "claim made from the template and Allocated ({}), check-1 Running, sees {}",
        placement(&snap),
        seen.join(",")
    ))
}

async fn across_namespaces(k: &Kube<'_>, s: &Settings, node: &str) -> Result<String, String> {
    let nss = [namespace(node, "share-a"), namespace(node, "share-b")];
    let mut objects = Vec::new();
    for ns in &nss {
        objects.push(ns_object(ns, node));
        objects.push(claim(ns, "share", request(s, true)));
        objects.push(pod(s, ns, "check-1", node, ("resourceClaimName", "share")));
    }
    k.apply(objects).await?;
    let snap = settled(k, s, &nss, 2)
        .await
        .map_err(|e| if e.contains("none is shareable") { format!("sharing is off on {node}: {e}") } else { e })?;
    let devices: Vec<(String, String)> =
        snap.claims.iter().flat_map(|c| &c.allocated).map(|a| (a.node.clone(), a.device.clone())).collect();
    if devices.windows(2).any(|w| w[0] != w[1]) {
        let at: Vec<String> = devices.iter().map(|(n, d)| format!("{n}/{d}")).collect();
        return Err(format!(
            "sharing is off on {node}: the two claims requesting {} {} got different devices ({}); \
             the node's devices are not shareable (gpu status shows SHAREABLE no)",
            s.share_request.0,
            s.share_request.1,
            at.join(", ")
        ));
    }
    let (a, b) = (sees(k, &nss[0], "check-1").await?, sees(k, &nss[1], "check-1").await?);
    if a != b {
        return Err(format!(
            "the pods of the two namespaces see different devices: {} and {}",
            a.join(","),
            b.join(",")
        ));
    }
    Ok(format!(
        "claims in {} and {} ({} {} each) both on {}, both pods see {}",
        nss[0],
        nss[1],
        s.share_request.0,
        s.share_request.1,
        placement(&snap),
        a.join(",")
    ))
}

pub const CHECKS: [&str; 3] = ["shared claim", "claim template", "sharing across namespaces"];

/// The three checks on one node, each's namespaces deleted after it; a check after a failed one
/// is not run (it would wait on the same cause).
pub async fn node(k: &Kube<'_>, s: &Settings, node: &str, progress: &(dyn Fn(&str) + Sync)) -> Vec<Result1> {
    let mut out = Vec::new();
    let mut failed = false;
    for (i, name) in CHECKS.iter().enumerate() {
        let r = |verdict, detail: String| Result1 { node: node.to_string(), check: name, verdict, detail };
        if failed {
            out.push(r(Verdict::Skipped, "not run: an earlier check failed".into()));
            continue;
        }
        if i == 2 && !s.sharing {
            out.push(r(Verdict::Skipped, "sharing is off (gpu_dra_sharing_enabled: false)".into()));
            continue;
        }
        progress(&format!("{node}: {name}..."));
        let res = match i {
            0 => shared_claim(k, s, node).await,
            1 => claim_template(k, s, node).await,
            _ => across_namespaces(k, s, node).await,
        };
        let names: Vec<String> = match i {
            0 => vec![namespace(node, "shared")],
            1 => vec![namespace(node, "template")],
            _ => vec![namespace(node, "share-a"), namespace(node, "share-b")],
        };
        let mut res = res;
        for ns in &names {
            if let Err(e) = k.delete_namespace(ns).await {
                res = res.and(Err(format!("{ns} could not be deleted: {e}")));
            }
        }
        match res {
            Ok(d) => out.push(r(Verdict::Passed, d)),
            Err(e) => {
                failed = true;
                out.push(r(Verdict::Failed, e));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_namespaces_are_dns_labels() {
        assert_eq!(namespace("cop-gpu-1", "shared"), "copctl-gpu-check-cop-gpu-1-shared");
        let long = namespace(&"Node_".repeat(20), "share-a");
        assert!(long.len() <= 63 && long.ends_with("-share-a") && !long.contains('_'), "{long}");
    }
}
