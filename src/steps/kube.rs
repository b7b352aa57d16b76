//! `kube`: node operations through kubectl on a control-plane host (cordon, uncordon, drain,
//! delete, label, taint, wait_ready, gpu_drain_check, pdb_check; for a dead node drain_unreachable,
//! etcd_quorum_check, etcd_member_gone — etcd read through etcdctl in the server's etcd pod). kubectl is RKE2's
//! (/var/lib/rancher/rke2/bin) when not on PATH, with RKE2's admin kubeconfig; `helm` shares that
//! prelude.
//!
//! copctl never uncordons a node it did not cordon: its cordon records itself in the node
//! annotation `copctl.openmaru.io/cordoned=true` (so a resumed run knows too), and uncordon acts
//! only on nodes carrying it — an admin's cordon stays (kured and kubespray do the same). A cordon
//! `copctl node drain` made for maintenance is marked `held` (cordon/drain with `hold`): only an
//! uncordon with `hold` or `force` lifts it, so a rolling restart does not end a maintenance. Only
//! `uncordon` with `force` (the operator's explicit `copctl node uncordon`) lifts any cordon,
//! and warns when it was not copctl's.

mod dead_node;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Flag, Guards, Kind, Number, Outcome, Status, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum KubeAction {
    Cordon,
    Uncordon,
    Drain,
    Delete,
    Label,
    /// `taints` (`key=value:Effect`, `key:Effect`) on the node, each added where the node lacks
    /// it exactly (another value or effect under the key is replaced, as `--overwrite` does).
    Taint,
    WaitReady,
    /// Before draining a GPU node: GPU work on it (pods holding ResourceClaims), and room for it
    /// on the other GPU nodes (free devices in their resource slices).
    GpuDrainCheck,
    /// Before draining: the pods on the node that a PodDisruptionBudget allowing no disruption
    /// protects (their evictions will be refused), as warnings naming the budget and the pods.
    PdbCheck,
    /// A node that is down (NotReady, not answering): its pods evicted as `kubectl drain --force`
    /// does, and those its kubelet cannot confirm gone after `timeout` deleted at once
    /// (`--grace-period=0 --force`), so their controllers start them elsewhere.
    DrainUnreachable,
    /// Before a server leaves: refuses when the etcd members left would have no quorum (a
    /// majority of them healthy). Read-only.
    EtcdQuorumCheck,
    /// After a server's node is deleted: its etcd member is gone (RKE2's controller removes it;
    /// when it did not, `etcdctl member remove`), checked by listing the members again.
    EtcdMemberGone,
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
    /// taint: `key=value:Effect` or `key:Effect` (Effect: NoSchedule, PreferNoSchedule, NoExecute).
    #[serde(default)]
    pub taints: Vec<String>,
    pub timeout: Option<Number>,
    /// gpu_drain_check: go on although GPU work would be cut off (`--yes`).
    pub yes: Option<Flag>,
    /// gpu_drain_check: go on although no other GPU node could take the work (`--force`).
    /// uncordon: lift the cordon even when copctl did not make it (and say so).
    pub force: Option<Flag>,
    /// cordon, drain: the cordon is `copctl node drain`'s, held until `copctl node uncordon`
    /// (other procedures' uncordon leaves it); uncordon: also lift such a held cordon.
    pub hold: Option<Flag>,
    /// drain: delete the pods instead of evicting them (`kubectl drain --disable-eviction`),
    /// bypassing PodDisruptionBudgets; pdb_check: says so instead of warning of a blocked drain.
    pub disable_eviction: Option<Flag>,
    /// drain: also delete pods no controller manages (`kubectl drain --force`), which nothing
    /// starts again elsewhere. Not `force`, which is the GPU capacity override.
    pub force_unmanaged: Option<Flag>,
}

pub const PRELUDE: &str = "K=$(command -v kubectl || echo /var/lib/rancher/rke2/bin/kubectl); \
    [ -z \"$KUBECONFIG\" ] && [ -r /etc/rancher/rke2/rke2.yaml ] && export KUBECONFIG=/etc/rancher/rke2/rke2.yaml; ";
const MARK: &str = "copctl.openmaru.io/cordoned";

pub(super) fn report(out: &crate::transport::ExecOutput, what: &str) -> Outcome {
    let changes = super::reported_changes(out);
    let text = String::from_utf8_lossy(&out.stdout);
    let notes: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("NOTE ")).collect();
    let warnings: Vec<String> = text.lines().filter_map(|l| l.strip_prefix("WARN ")).map(str::to_string).collect();
    if !out.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Outcome::failed(format!("{what}: {}", err.trim().lines().last().unwrap_or("kubectl failed")))
            .with_output(out);
    }
    let mut o = if changes.is_empty() {
        Outcome::ok(notes.join("; "))
    } else {
        Outcome::changed(format!("{what}: {}", changes.join(", ")))
    };
    o.warnings = warnings;
    o.with_output(out)
}

/// A failed drain, in kubectl's last words; an eviction a PodDisruptionBudget refused is named
/// as such (kubectl only says so on its retry lines).
fn drain_failure(node: &str, out: &crate::transport::ExecOutput) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim().lines().last().unwrap_or("kubectl drain failed");
    let last = last.strip_prefix("error: ").unwrap_or(last);
    let pdb = err.contains("violate the pod's disruption budget");
    format!("drain {node}: {last}{}", if pdb { "; a PodDisruptionBudget refused the evictions" } else { "" })
}

impl Kind for KubeArgs {
    const MAY_BE_READ_ONLY: bool = true;

    fn read_only(&self) -> bool {
        matches!(
            self.action,
            KubeAction::WaitReady | KubeAction::GpuDrainCheck | KubeAction::PdbCheck | KubeAction::EtcdQuorumCheck
        )
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        if a.action == KubeAction::GpuDrainCheck {
            return gpu_drain_check(cx, a).await;
        }
        if a.action == KubeAction::PdbCheck {
            return pdb_check(cx, a).await;
        }
        match a.action {
            KubeAction::DrainUnreachable => return dead_node::drain_unreachable(cx, a).await,
            KubeAction::EtcdQuorumCheck => return dead_node::etcd_quorum_check(cx, a).await,
            KubeAction::EtcdMemberGone => return dead_node::etcd_member_gone(cx, a).await,
            _ => {}
        }
        let flag = |f: &Option<Flag>| f.as_ref().is_some_and(|f| f.get());
        let n = shell_quote(&a.node);
        let timeout = match a.timeout.as_ref().map(|n| n.get()).transpose() {
            Ok(t) => t.unwrap_or(600),
            Err(e) => return Outcome::failed(format!("kube timeout: {e}")),
        };
        let (hold, force) = (flag(&a.hold), flag(&a.force));
        let unschedulable = format!("\"$($K get node {n} -o jsonpath='{{.spec.unschedulable}}')\" = true");
        let mark = format!("m=$($K get node {n} -o jsonpath='{{.metadata.annotations.copctl\\.openmaru\\.io/cordoned}}') || exit 1; ");
        let node = a.node.replace(['"', '\'', '`', '$', '\\'], "_");
        // The mark: `true` while a procedure holds the node, `held` from `copctl node drain` until
        // `copctl node uncordon`; none on an admin's cordon.
        let cordon = if hold {
            format!(
                "if [ {unschedulable} ]; then {mark}\
                 if [ \"$m\" = true ]; then do_ held \"$K annotate node {n} {MARK}=held --overwrite\"; \
                 elif [ \"$m\" = held ]; then echo 'NOTE already cordoned (held)'; else echo 'NOTE already cordoned, not by copctl'; fi; \
                 else do_ cordoned \"$K cordon {n} && $K annotate node {n} {MARK}=held --overwrite\"; fi\n"
            )
        } else {
            format!(
                "if [ {unschedulable} ]; then echo 'NOTE already cordoned'; \
                 else do_ cordoned \"$K cordon {n} && $K annotate node {n} {MARK}=true --overwrite\"; fi\n"
            )
        };
        let lift = format!("do_ uncordoned \"$K uncordon {n} && $K annotate node {n} {MARK}-\"");
        let body = match a.action {
            KubeAction::Cordon => cordon,
            KubeAction::Uncordon if force => format!(
                "{mark}if [ \"$m\" = true ] || [ \"$m\" = held ]; then {lift}; \
                 elif [ {unschedulable} ]; then \
                 echo 'WARN {node} was cordoned by someone else, not copctl (no {MARK} annotation): uncordoning it as asked'; \
                 do_ uncordoned \"$K uncordon {n}\"; else echo 'NOTE not cordoned'; fi\n"
            ),
            KubeAction::Uncordon => format!(
                "{mark}if [ \"$m\" = true ]{}; then {lift}; \
                 elif [ \"$m\" = held ]; then echo 'NOTE left cordoned: held by copctl node drain until copctl node uncordon'; \
                 elif [ {unschedulable} ]; then echo 'NOTE left cordoned: not cordoned by copctl'; fi\n",
                if hold { " || [ \"$m\" = held ]" } else { "" }
            ),
            KubeAction::Drain => format!(
                "{cordon}do_ drained \"$K drain {n} --ignore-daemonsets --delete-emptydir-data --timeout={timeout}s{}{}\"\n",
                if flag(&a.force_unmanaged) { " --force" } else { "" },
                if flag(&a.disable_eviction) { " --disable-eviction" } else { "" }
            ),
            // The node-password secret goes too: a machine rejoining under this name (new hardware,
            // a reinstall) has a new password, which RKE2 refuses while the old secret exists.
            KubeAction::Delete => {
                let secret = shell_quote(&format!("{}.node-password.rke2", a.node));
                format!(
                    "if $K get node {n} >/dev/null 2>&1; then do_ deleted \"$K delete node {n}\"; fi\n\
                     if $K get secret {secret} -n kube-system >/dev/null 2>&1; then \
                     do_ 'node-password secret deleted' \"$K delete secret {secret} -n kube-system --ignore-not-found\"; fi\n"
                )
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
            KubeAction::Taint => match taint_script(&n, &a.taints) {
                Ok(s) => s,
                Err(e) => return Outcome::failed(e),
            },
            KubeAction::GpuDrainCheck
            | KubeAction::PdbCheck
            | KubeAction::DrainUnreachable
            | KubeAction::EtcdQuorumCheck
            | KubeAction::EtcdMemberGone => unreachable!("handled above"),
            KubeAction::WaitReady => {
                if cx.check {
                    return Outcome::skipped(format!("check mode: would wait for {} to be Ready", a.node));
                }
                format!(
                    "end=$(( $(date +%s) + {timeout} )); while :; do \
                     r=$($K get node {n} -o jsonpath='{{.status.conditions[?(@.type==\"Ready\")].status}}' 2>/dev/null); \
                     [ \"$r\" = True ] && exit 0; [ $(date +%s) -ge $end ] && {{ echo \"node {node} not Ready after {timeout}s\" >&2; exit 1; }}; sleep 2; done\n"
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
        if o.status == Status::Failed {
            if a.action == KubeAction::Drain {
                o.msg = drain_failure(&a.node, &out);
            }
            // Registered as the failure's words even where `failed_when: false` keeps the run
            // going (the drain's failure message quotes them; the engine clears the step's).
            o.result.insert("msg".into(), Value::String(o.msg.clone()));
        }
        o.commands.push(body);
        o
    }
}

/// The node's taints, one `key=value:Effect` a line, and each of `taints` missing from them
/// added. A taint with the same key and effect but another value is replaced (`--overwrite`).
fn taint_script(n: &str, taints: &[String]) -> Result<String, String> {
    let mut s = format!(
        "cur=$($K get node {n} -o jsonpath='{{range .spec.taints[*]}}{{.key}}={{.value}}:{{.effect}}{{\"\\n\"}}{{end}}') || exit 1\n"
    );
    for t in taints {
        let (kv, effect) = t.rsplit_once(':').ok_or_else(|| format!("taint {t:?}: no effect (key=value:NoSchedule)"))?;
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(format!("taint {t:?}: the effect is NoSchedule, PreferNoSchedule or NoExecute, not {effect:?}"));
        }
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        if key.is_empty() {
            return Err(format!("taint {t:?}: no key"));
        }
        s.push_str(&format!(
            "printf '%s\\n' \"$cur\" | grep -qxF {line} || do_ {t} \"$K taint node {n} {t} --overwrite\"\n",
            line = shell_quote(&format!("{key}={value}:{effect}")),
            t = shell_quote(t),
        ));
    }
    Ok(s)
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
    let part = |name: &str| section(&text, name);
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

/// The JSON document after the line `--- NAME` of a script's output (Null when absent or broken).
pub(super) fn section(text: &str, name: &str) -> Value {
    let start = text.find(&format!("--- {name}\n")).map(|i| i + name.len() + 5).unwrap_or(text.len());
    let end = text[start..].find("\n--- ").map(|i| start + i).unwrap_or(text.len());
    serde_json::from_str(&text[start..end]).unwrap_or(Value::Null)
}

/// Before a drain: the pods on the node whose evictions the API server will refuse because of a
/// PodDisruptionBudget — one allowing no disruption (`status.disruptionsAllowed` 0), or more than
/// one budget selecting the pod. Read-only, and warnings only: a budget may allow a disruption by
/// the time the drain asks (a replacement became Ready); the drain's timeout decides.
async fn pdb_check(cx: &StepCtx<'_>, a: &KubeArgs) -> Outcome {
    let script = format!(
        "{PRELUDE}set -e; echo '--- pods'; $K get pods -A --field-selector spec.nodeName={n} -o json; \
         echo '--- pdbs'; $K get pdb -A -o json",
        n = shell_quote(&a.node)
    );
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    if !out.success() {
        return Outcome::failed(format!(
            "cannot read the PodDisruptionBudgets: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let blocked = blocking_budgets(&section(&text, "pods"), &section(&text, "pdbs"));
    let delete = a.disable_eviction.as_ref().is_some_and(|f| f.get());
    let mut warnings = Vec::new();
    for b in &blocked {
        let pods = b.pods.join(", ");
        warnings.push(match (&b.why, delete) {
            (_, true) => format!(
                "{} protects {pods} on {}: disable_eviction deletes them anyway, bypassing the budget",
                b.budget, a.node
            ),
            (Why::NoDisruption, false) => format!(
                "PodDisruptionBudget {} allows no disruption (disruptionsAllowed: 0): the drain of {} cannot evict {pods} \
                 until it does",
                b.budget, a.node
            ),
            (Why::Several, false) => format!(
                "{pods} on {} is selected by more than one PodDisruptionBudget ({}): the eviction API refuses it",
                a.node, b.budget
            ),
        });
    }
    let mut o = if blocked.is_empty() {
        Outcome::ok(format!("no PodDisruptionBudget blocks the pods on {}", a.node))
    } else {
        Outcome::ok(format!("{} PodDisruptionBudget problem(s) on {}", blocked.len(), a.node))
    };
    o.result.insert(
        "blocked".into(),
        Value::Array(
            blocked.iter().map(|b| serde_json::json!({"budget": b.budget, "pods": b.pods})).collect(),
        ),
    );
    o.warnings = warnings;
    o.with_output(&out)
}

#[derive(Debug, PartialEq)]
enum Why {
    /// A budget allowing no disruption selects the pods.
    NoDisruption,
    /// The pod is selected by several budgets (`budget` lists them).
    Several,
}

/// Pods the eviction API will refuse, by budget.
#[derive(Debug, PartialEq)]
struct Blocked {
    /// `namespace/name` (for `Several`: the budgets, comma-separated).
    budget: String,
    /// `namespace/name` of the pods.
    pods: Vec<String>,
    why: Why,
}

/// What the eviction API does with the node's pods (kubernetes pkg/registry/core/pod/storage/
/// eviction.go, policy/v1): budgets of the pod's namespace whose selector matches its labels (a
/// null selector matches nothing, an empty one every pod); refused when one of them allows no
/// disruption, or when more than one does. Pods the drain leaves alone (DaemonSet pods, with
/// --ignore-daemonsets; mirror pods) and pods eviction takes without asking a budget (Pending,
/// Succeeded, Failed, already being deleted) are not counted.
fn blocking_budgets(pods: &Value, pdbs: &Value) -> Vec<Blocked> {
    let items = |v: &Value| v["items"].as_array().cloned().unwrap_or_default();
    let name = |v: &Value| {
        format!("{}/{}", v["metadata"]["namespace"].as_str().unwrap_or(""), v["metadata"]["name"].as_str().unwrap_or(""))
    };
    let budgets = items(pdbs);
    let mut by_budget: IndexMap<String, Vec<String>> = IndexMap::new();
    let mut several: Vec<Blocked> = Vec::new();
    for p in items(pods) {
        let daemon = p["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|o| o.iter().any(|r| r["kind"] == "DaemonSet" && r["controller"] == true));
        let mirror = p["metadata"]["annotations"].get("kubernetes.io/config.mirror").is_some();
        let ignored = matches!(p["status"]["phase"].as_str(), Some("Pending" | "Succeeded" | "Failed"))
            || !p["metadata"]["deletionTimestamp"].is_null();
        if daemon || mirror || ignored {
            continue;
        }
        let ns = p["metadata"]["namespace"].as_str().unwrap_or("");
        let labels = &p["metadata"]["labels"];
        let mine: Vec<&Value> = budgets
            .iter()
            .filter(|b| b["metadata"]["namespace"].as_str() == Some(ns) && selects(&b["spec"]["selector"], labels))
            .collect();
        if mine.len() > 1 {
            several.push(Blocked {
                budget: mine.iter().map(|b| name(b)).collect::<Vec<_>>().join(", "),
                pods: vec![name(&p)],
                why: Why::Several,
            });
        } else if let Some(b) = mine.first()
            && b["status"]["disruptionsAllowed"].as_i64().unwrap_or(0) <= 0
        {
            by_budget.entry(name(b)).or_default().push(name(&p));
        }
    }
    by_budget
        .into_iter()
        .map(|(budget, pods)| Blocked { budget, pods, why: Why::NoDisruption })
        .chain(several)
        .collect()
}

/// A Kubernetes label selector (`matchLabels`, `matchExpressions`) against a pod's labels, as
/// metav1.LabelSelectorAsSelector: a null selector matches nothing, an empty one everything.
fn selects(selector: &Value, labels: &Value) -> bool {
    if !selector.is_object() {
        return false;
    }
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| label(k).is_some() && label(k) == v.as_str()));
    let by_exprs = selector["matchExpressions"].as_array().is_none_or(|es| {
        es.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> =
                e["values"].as_array().map(|v| v.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            match (e["operator"].as_str(), label(key)) {
                (Some("In"), Some(v)) => values.contains(&v),
                (Some("In"), None) => false,
                (Some("NotIn"), Some(v)) => !values.contains(&v),
                (Some("NotIn"), None) => true,
                (Some("Exists"), l) => l.is_some(),
                (Some("DoesNotExist"), l) => l.is_none(),
                _ => false,
            }
        })
    });
    by_labels && by_exprs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, name: &str, labels: Value) -> Value {
        json!({"metadata": {"namespace": ns, "name": name, "labels": labels}, "status": {"phase": "Running"}})
    }

    #[test]
    fn a_taint_is_added_where_the_node_lacks_it_exactly() {
        let s = taint_script("n1", &["nvidia.com/gpu=present:NoSchedule".into(), "dedicated:NoExecute".into()]).unwrap();
        assert_eq!(
            s,
            "cur=$($K get node n1 -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect}{\"\\n\"}{end}') || exit 1\n\
             printf '%s\\n' \"$cur\" | grep -qxF nvidia.com/gpu=present:NoSchedule || \
             do_ nvidia.com/gpu=present:NoSchedule \"$K taint node n1 nvidia.com/gpu=present:NoSchedule --overwrite\"\n\
             printf '%s\\n' \"$cur\" | grep -qxF dedicated=:NoExecute || \
             do_ dedicated:NoExecute \"$K taint node n1 dedicated:NoExecute --overwrite\"\n"
        );
        for (t, e) in [
            ("nvidia.com/gpu=present", "taint \"nvidia.com/gpu=present\": no effect (key=value:NoSchedule)"),
            (
                "k=v:NoSchedul",
                "taint \"k=v:NoSchedul\": the effect is NoSchedule, PreferNoSchedule or NoExecute, not \"NoSchedul\"",
            ),
            ("=v:NoSchedule", "taint \"=v:NoSchedule\": no key"),
        ] {
            assert_eq!(taint_script("n1", &[t.to_string()]).unwrap_err(), e);
        }
    }

    fn pdb(ns: &str, name: &str, selector: Value, allowed: i64) -> Value {
        json!({"metadata": {"namespace": ns, "name": name}, "spec": {"selector": selector},
               "status": {"disruptionsAllowed": allowed}})
    }

    #[test]
    fn selectors_follow_label_selector_semantics() {
        let l = json!({"app": "web", "tier": "front"});
        assert!(selects(&json!({}), &l), "an empty selector matches every pod");
        assert!(!selects(&Value::Null, &l), "a null selector matches none");
        assert!(selects(&json!({"matchLabels": {"app": "web"}}), &l));
        assert!(!selects(&json!({"matchLabels": {"app": "db"}}), &l));
        assert!(!selects(&json!({"matchLabels": {"zone": "a"}}), &l));
        let ex = |op: &str, vals: Value| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": vals}]});
        assert!(selects(&ex("In", json!(["front", "back"])), &l));
        assert!(!selects(&ex("NotIn", json!(["front"])), &l));
        assert!(selects(&ex("Exists", Value::Null), &l));
        assert!(!selects(&ex("DoesNotExist", Value::Null), &l));
        assert!(selects(&ex("NotIn", json!(["x"])), &json!({})));
    }

    #[test]
    fn budgets_allowing_no_disruption_name_their_pods() {
        let pods = json!({"items": [
            pod("app", "web-1", json!({"app": "web"})),
            pod("app", "web-2", json!({"app": "web"})),
            pod("app", "api-1", json!({"app": "api"})),
            pod("other", "web-9", json!({"app": "web"})),
            pod("db", "pg-0", json!({"app": "pg", "role": "primary"})),
        ]});
        let pdbs = json!({"items": [
            pdb("app", "web", json!({"matchLabels": {"app": "web"}}), 0),
            pdb("app", "api", json!({"matchLabels": {"app": "api"}}), 1),
            pdb("db", "pg", json!({"matchLabels": {"app": "pg"}}), 1),
            pdb("db", "primary", json!({"matchLabels": {"role": "primary"}}), 1),
        ]});
        assert_eq!(
            blocking_budgets(&pods, &pdbs),
            [
                Blocked { budget: "app/web".into(), pods: vec!["app/web-1".into(), "app/web-2".into()], why: Why::NoDisruption },
                Blocked { budget: "db/pg, db/primary".into(), pods: vec!["db/pg-0".into()], why: Why::Several },
            ]
        );
    }

    #[test]
    fn pods_the_drain_or_the_eviction_api_do_not_hold_to_a_budget_are_left_out() {
        let mut ds = pod("app", "agent", json!({"app": "web"}));
        ds["metadata"]["ownerReferences"] = json!([{"kind": "DaemonSet", "name": "agent", "controller": true}]);
        let mut mirror = pod("app", "static", json!({"app": "web"}));
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
        let mut done = pod("app", "job", json!({"app": "web"}));
        done["status"]["phase"] = json!("Succeeded");
        let mut going = pod("app", "going", json!({"app": "web"}));
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let pods = json!({"items": [ds, mirror, done, going]});
        let pdbs = json!({"items": [pdb("app", "web", json!({}), 0)]});
        assert_eq!(blocking_budgets(&pods, &pdbs), []);
    }
}
