//! `kube`: node operations through kubectl on a control-plane host (cordon, uncordon, drain,
//! delete, label, wait_ready, gpu_drain_check). kubectl is RKE2's (/var/lib/rancher/rke2/bin)
//! when not on PATH, with RKE2's admin kubeconfig; `helm` shares that prelude.
//!
//! copctl never uncordons a node it did not cordon: its cordon records itself in the node
//! annotation `copctl.openmaru.io/cordoned=true` (so a resumed run knows too), and uncordon acts
//! only on nodes carrying it — an admin's cordon stays (kured and kubespray do the same).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::{Flag, Guards, Kind, Number, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum KubeAction {
    Cordon,
    Uncordon,
    Drain,
    Delete,
    Label,
    WaitReady,
    /// Before draining a GPU node: GPU work on it (pods holding ResourceClaims), and room for it
    /// on the other GPU nodes (free devices in their resource slices).
    GpuDrainCheck,
}

/// Node operations through kubectl on a control-plane host. `uncordon` only undoes a cordon
/// copctl made itself (an admin's cordon stays).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubeArgs {
    pub action: KubeAction,
    pub node: String,
    #[serde(default)]
    pub labels: IndexMap<String, String>,
    pub timeout: Option<Number>,
    /// gpu_drain_check: go on although GPU work would be cut off (`--yes`).
    pub yes: Option<Flag>,
    /// gpu_drain_check: go on although no other GPU node could take the work (`--force`).
    pub force: Option<Flag>,
}

pub(super) const PRELUDE: &str = "K=$(command -v kubectl || echo /var/lib/rancher/rke2/bin/kubectl); \
    [ -z \"$KUBECONFIG\" ] && [ -r /etc/rancher/rke2/rke2.yaml ] && export KUBECONFIG=/etc/rancher/rke2/rke2.yaml; ";
const MARK: &str = "copctl.openmaru.io/cordoned";

pub(super) fn report(out: &crate::transport::ExecOutput, what: &str) -> Outcome {
    let changes = super::reported_changes(out);
    let text = String::from_utf8_lossy(&out.stdout);
    let notes: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("NOTE ")).collect();
    if !out.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Outcome::failed(format!("{what}: {}", err.trim().lines().last().unwrap_or("kubectl failed")))
            .with_output(out);
    }
    let o = if changes.is_empty() {
        Outcome::ok(notes.join("; "))
    } else {
        Outcome::changed(format!("{what}: {}", changes.join(", ")))
    };
    o.with_output(out)
}

impl Kind for KubeArgs {
    const MAY_BE_READ_ONLY: bool = true;

    fn read_only(&self) -> bool {
        matches!(self.action, KubeAction::WaitReady | KubeAction::GpuDrainCheck)
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        if a.action == KubeAction::GpuDrainCheck {
            return gpu_drain_check(cx, a).await;
        }
        let n = shell_quote(&a.node);
        let timeout = match a.timeout.as_ref().map(|n| n.get()).transpose() {
            Ok(t) => t.unwrap_or(600),
            Err(e) => return Outcome::failed(format!("kube timeout: {e}")),
        };
        let cordon = format!(
            "if [ \"$($K get node {n} -o jsonpath='{{.spec.unschedulable}}')\" = true ]; then echo 'NOTE already cordoned'; \
             else do_ cordoned \"$K cordon {n} && $K annotate node {n} {MARK}=true --overwrite\"; fi\n"
        );
        let body = match a.action {
            KubeAction::Cordon => cordon,
            KubeAction::Uncordon => format!(
                "m=$($K get node {n} -o jsonpath='{{.metadata.annotations.copctl\\.openmaru\\.io/cordoned}}') || exit 1; \
                 if [ \"$m\" = true ]; then do_ uncordoned \"$K uncordon {n} && $K annotate node {n} {MARK}-\"; \
                 elif [ \"$($K get node {n} -o jsonpath='{{.spec.unschedulable}}')\" = true ]; then echo 'NOTE left cordoned: not cordoned by copctl'; fi\n"
            ),
            KubeAction::Drain => format!(
                "{cordon}do_ drained \"$K drain {n} --ignore-daemonsets --delete-emptydir-data --timeout={timeout}s\"\n"
            ),
            KubeAction::Delete => {
                format!("if $K get node {n} >/dev/null 2>&1; then do_ deleted \"$K delete node {n}\"; fi\n")
            }
            KubeAction::Label => {
                let mut s = format!("cur=$($K get node {n} -o jsonpath='{{.metadata.labels}}') || exit 1\n");
                for (k, v) in &a.labels {
                    let pair = format!("\"{k}\":\"{v}\"");
                    s.push_str(&format!(
                        "case \"$cur\" in *{p}*) ;; *) do_ {kv} \"$K label node {n} {kv} --overwrite\";; esac\n",
                        p = shell_quote(&pair),
                        kv = shell_quote(&format!("{k}={v}"))
                    ));
                }
                s
            }
            KubeAction::GpuDrainCheck => unreachable!("handled above"),
            KubeAction::WaitReady => {
                if cx.check {
                    return Outcome::skipped(format!("check mode: would wait for {} to be Ready", a.node));
                }
                format!(
                    "end=$(( $(date +%s) + {timeout} )); while :; do \
                     r=$($K get node {n} -o jsonpath='{{.status.conditions[?(@.type==\"Ready\")].status}}' 2>/dev/null); \
                     [ \"$r\" = True ] && exit 0; [ $(date +%s) -ge $end ] && {{ echo \"node {node} not Ready after {timeout}s\" >&2; exit 1; }}; sleep 2; done\n",
                    node = a.node.replace(['"', '\'', '`', '$', '\\'], "_")
                )
            }
        };
        let script = format!(
            "{PRELUDE}CHECK={}; do_() {{ echo \"CHANGED $1\"; [ $CHECK = 1 ] || eval \"$2\" || exit 1; }}\n{body}",
            cx.check as u8
        );
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let what = format!("{:?} {}", a.action, a.node).to_lowercase();
        let mut o = report(&out, &what);
        o.commands.push(body);
        o
    }
}

/// The manual's "Maintenance on GPU Nodes": before a GPU node is drained, the pods on it holding
/// ResourceClaims (GPU work in progress), and the free devices on the other GPU nodes (devices in
/// their resource slices not allocated to a claim). Stops when work would be cut off (unless
/// `yes`), and refuses when no other node could take it (unless `force`).
async fn gpu_drain_check(cx: &StepCtx<'_>, a: &KubeArgs) -> Outcome {
    let script = format!(
        "{PRELUDE}set -e; echo '--- pods'; $K get pods -A --field-selector spec.nodeName={n} -o json; \
         echo '--- slices'; $K get resourceslices -o json; echo '--- claims'; $K get resourceclaims -A -o json",
        n = shell_quote(&a.node)
    );
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    if !out.success() {
        return Outcome::failed(format!("cannot read the GPU state: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let part = |name: &str| -> serde_json::Value {
        let start = text.find(&format!("--- {name}\n")).map(|i| i + name.len() + 5).unwrap_or(text.len());
        let end = text[start..].find("\n--- ").map(|i| start + i).unwrap_or(text.len());
        serde_json::from_str(&text[start..end]).unwrap_or(serde_json::Value::Null)
    };
    let (pods, slices, claims) = (part("pods"), part("slices"), part("claims"));
    let items = |v: &serde_json::Value| v["items"].as_array().cloned().unwrap_or_default();
    let busy: Vec<String> = items(&pods)
        .iter()
        .filter(|p| p["spec"]["resourceClaims"].as_array().is_some_and(|c| !c.is_empty()))
        .map(|p| {
            format!(
                "{}/{}",
                p["metadata"]["namespace"].as_str().unwrap_or(""),
                p["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    if busy.is_empty() {
        return Outcome::ok(format!("no GPU work on {}", a.node));
    }
    // Devices on the other nodes, minus those allocated to claims.
    let mut total = 0usize;
    for s in items(&slices) {
        if s["spec"]["nodeName"].as_str().is_some_and(|n| n != a.node) {
            total += s["spec"]["devices"].as_array().map(Vec::len).unwrap_or(0);
        }
    }
    let mut used = 0usize;
    for c in items(&claims) {
        for r in c["status"]["allocation"]["devices"]["results"].as_array().cloned().unwrap_or_default() {
            let on_other = r["pool"].as_str().is_some_and(|p| p != a.node);
            if on_other {
                used += 1;
            }
        }
    }
    let free = total.saturating_sub(used);
    let (yes, force) = (a.yes.as_ref().is_some_and(|f| f.get()), a.force.as_ref().is_some_and(|f| f.get()));
    let work = busy.join(", ");
    if free < busy.len() {
        if force {
            return Outcome::ok(format!(
                "--force: draining {} cuts off GPU work ({work}) with only {free} free device(s) elsewhere",
                a.node
            ));
        }
        return Outcome::failed(format!(
            "{} holds GPU work ({work}) and the other GPU nodes have {free} free device(s) for {} pod(s): \
             draining would leave it Pending. Free capacity first, or use --force",
            a.node,
            busy.len()
        ));
    }
    if !yes {
        return Outcome::failed(format!(
            "{} holds GPU work in progress ({work}); the other GPU nodes have {free} free device(s) to take it. \
             Training or inference cut off may have to start over: re-run with --yes to drain it",
            a.node
        ));
    }
    Outcome::ok(format!("--yes: draining {} moves {work} ({free} free device(s) elsewhere)", a.node))
}
