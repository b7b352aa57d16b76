//! The `kube` actions that take a dead node out of the cluster (`copctl node remove` of a node
//! that does not answer): `drain_unreachable` (its pods removed as `kubectl drain --force` would,
//! those its kubelet cannot confirm gone deleted after the timeout), `etcd_quorum_check` (a
//! server leaves only when the etcd members left keep a quorum) and `etcd_member_gone` (its etcd
//! member removed, checked). etcd is read with etcdctl in the etcd pod of the server the step
//! runs on, with RKE2's client certificates; the quorum arithmetic is pure and tested here.

use serde_json::Value;

use super::{KubeArgs, PRELUDE, section};
use crate::steps::{Outcome, StepCtx};
use crate::template::shell_quote;

/// etcdctl in the etcd pod of the server this runs on (RKE2 names the pod `etcd-<node-name>`,
/// and that name is config.yaml's `node-name`, else the host name), as RKE2's docs use it.
const ETCDCTL: &str = "me=$(sed -n 's/^node-name: *//p' /etc/rancher/rke2/config.yaml 2>/dev/null | tr -d '\"'); \
    [ -n \"$me\" ] || me=$(hostname); \
    E=\"$K exec -n kube-system etcd-$me -- etcdctl --cacert=/var/lib/rancher/rke2/server/tls/etcd/server-ca.crt \
    --cert=/var/lib/rancher/rke2/server/tls/etcd/server-client.crt --key=/var/lib/rancher/rke2/server/tls/etcd/server-client.key\"; ";

/// One etcd member, with the node it belongs to and whether its endpoint answered.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Member {
    pub id: u64,
    pub name: String,
    pub healthy: bool,
}

impl Member {
    /// The node a member belongs to: RKE2 names members `<node>-<8 hex digits>`.
    pub fn node(&self) -> &str {
        match self.name.rsplit_once('-') {
            Some((n, h)) if h.len() == 8 && h.chars().all(|c| c.is_ascii_hexdigit()) => n,
            _ => &self.name,
        }
    }
}

/// The members of `etcdctl member list -w json`, healthy as `endpoint health --cluster -w json`
/// found their client URLs.
pub(super) fn members(list: &Value, health: &Value) -> Vec<Member> {
    let healthy_endpoints: Vec<&str> = health
        .as_array()
        .map(|a| a.iter().filter(|e| e["health"] == true).filter_map(|e| e["endpoint"].as_str()).collect())
        .unwrap_or_default();
    list["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| Member {
            id: m["ID"].as_u64().unwrap_or(0),
            name: m["name"].as_str().unwrap_or("").to_string(),
            healthy: m["clientURLs"]
                .as_array()
                .is_some_and(|u| u.iter().filter_map(Value::as_str).any(|u| healthy_endpoints.contains(&u))),
        })
        .collect()
}

/// Whether `node` may leave etcd: its removal is a write, which needs a healthy majority of the
/// members now, and the members left need a healthy majority of their own to go on. `Ok` says
/// what the removal leaves; `Err` is the refusal, with what to do instead.
pub(super) fn quorum_verdict(node: &str, members: &[Member]) -> Result<String, String> {
    let Some(mine) = members.iter().find(|m| m.node() == node) else {
        return Ok(format!("{node} is no etcd member"));
    };
    let names = |healthy: bool| {
        members.iter().filter(|m| m.healthy == healthy).map(Member::node).collect::<Vec<_>>().join(", ")
    };
    let (total, healthy) = (members.len(), members.iter().filter(|m| m.healthy).count());
    let (left, left_healthy) = (total - 1, healthy - usize::from(mine.healthy));
    let need = left / 2 + 1;
    if left == 0 || left_healthy >= need {
        return Ok(format!(
            "etcd keeps its quorum without {node}: {left_healthy} of {left} member(s) healthy, {need} needed"
        ));
    }
    let down: Vec<&str> = members.iter().filter(|m| !m.healthy && m.node() != node).map(Member::node).collect();
    let unhealthy = names(false);
    Err(format!(
        "removing {node} would leave etcd without quorum: of its {total} members {healthy} are healthy ({}){}; \
         without {node}, {left_healthy} of {left} would be healthy and a quorum needs {need}. {}",
        names(true),
        if unhealthy.is_empty() { String::new() } else { format!(" and {unhealthy} not") },
        if down.is_empty() {
            "Add a server first".to_string()
        } else {
            let d = down.join(", ");
            format!("Bring {d} back first, or if it is dead for good remove it first (copctl node remove {})", down[0])
        }
    ))
}

/// Reads the members and their health on the server the step runs on.
async fn read_members(cx: &StepCtx<'_>) -> Result<Vec<Member>, Outcome> {
    let script = format!(
        "{PRELUDE}{ETCDCTL}echo '--- list'; $E member list -w json || exit 1; echo '--- health'; \
         $E endpoint health --cluster -w json; true"
    );
    let out = cx.sh(&script, None).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.trim().lines().last().unwrap_or("etcdctl failed");
        let why = if err.contains("deadline exceeded") {
            "etcd answers no member list: it has no quorum (a majority of its members down). \
             Bring the other servers back, or restore etcd from a snapshot (rke2 server --cluster-reset)"
                .to_string()
        } else {
            format!("cannot read the etcd members: {last}")
        };
        return Err(Outcome::failed(why).with_output(&out));
    }
    Ok(members(&section(&text, "list"), &section(&text, "health")))
}

pub(super) async fn etcd_quorum_check(cx: &StepCtx<'_>, a: &KubeArgs) -> Outcome {
    let members = match read_members(cx).await {
        Ok(m) => m,
        Err(o) => return o,
    };
    match quorum_verdict(&a.node, &members) {
        Ok(msg) => Outcome::ok(msg),
        Err(msg) => Outcome::failed(msg),
    }
}

pub(super) async fn etcd_member_gone(cx: &StepCtx<'_>, a: &KubeArgs) -> Outcome {
    let members = match read_members(cx).await {
        Ok(m) => m,
        Err(o) => return o,
    };
    let Some(m) = members.iter().find(|m| m.node() == a.node) else {
        return Outcome::ok(format!("{} is no etcd member (checked)", a.node));
    };
    if cx.check {
        return Outcome::changed(format!("would remove etcd member {} ({:x})", m.name, m.id));
    }
    let script = format!("{PRELUDE}{ETCDCTL}$E member remove {:x}", m.id);
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    if !out.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Outcome::failed(format!(
            "etcdctl member remove {:x} ({}): {}",
            m.id,
            m.name,
            err.trim().lines().last().unwrap_or("failed")
        ))
        .with_output(&out);
    }
    match read_members(cx).await {
        Ok(after) if after.iter().any(|x| x.id == m.id) => {
            Outcome::failed(format!("etcd member {} ({:x}) is still listed after its removal", m.name, m.id))
        }
        Ok(_) => Outcome::changed(format!("etcd member {} ({:x}) removed (checked)", m.name, m.id)).with_output(&out),
        Err(o) => o,
    }
}

pub(super) async fn drain_unreachable(cx: &StepCtx<'_>, a: &KubeArgs) -> Outcome {
    let timeout = match a.timeout.as_ref().map(|n| n.get()).transpose() {
        Ok(t) => t.unwrap_or(300),
        Err(e) => return Outcome::failed(format!("kube timeout: {e}")),
    };
    let n = shell_quote(&a.node);
    if cx.check {
        return Outcome::changed(format!(
            "would drain {} with --force, deleting what is left after {timeout}s",
            a.node
        ));
    }
    // kubectl's own wait ends in an error when the pods outlive the timeout: expected here.
    let script = format!(
        "{PRELUDE}$K get node {n} >/dev/null 2>&1 || {{ echo '--- gone'; exit 0; }}; \
         $K drain {n} --ignore-daemonsets --delete-emptydir-data --force --timeout={timeout}s >&2; \
         echo '--- pods'; $K get pods -A --field-selector spec.nodeName={n} -o json"
    );
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("--- gone") {
        return Outcome::ok(format!("{} is no node of the cluster any more", a.node)).with_output(&out);
    }
    if !out.success() {
        return Outcome::failed(format!("cannot list the pods on {}", a.node)).with_output(&out);
    }
    let left: Vec<(String, String)> = section(&text, "pods")["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|p| {
            !p["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|r| r["kind"] == "DaemonSet" && r["controller"] == true))
        })
        .map(|p| {
            (
                p["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    if left.is_empty() {
        return Outcome::changed(format!("{} drained (--force)", a.node)).with_output(&out);
    }
    let mut del = String::from(PRELUDE);
    for (ns, name) in &left {
        del.push_str(&format!(
            "$K delete pod {} -n {} --force --grace-period=0 || exit 1\n",
            shell_quote(name),
            shell_quote(ns)
        ));
    }
    let out2 = match cx.sh(&del, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let names: Vec<String> = left.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
    if !out2.success() {
        return Outcome::failed(format!("cannot delete the pods left on {}: {}", a.node, names.join(", ")))
            .with_output(&out2);
    }
    Outcome::changed(format!(
        "{} is down: drained with --force; {} pod(s) still there after {timeout}s (no kubelet to confirm their end) \
         deleted with --grace-period=0: {}",
        a.node,
        left.len(),
        names.join(", ")
    ))
    .with_output(&out2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, healthy: bool) -> Member {
        Member { id: 1, name: name.into(), healthy }
    }

    #[test]
    fn members_belong_to_nodes_by_rke2s_names() {
        assert_eq!(m("cop-master-1-0a1b2c3d", true).node(), "cop-master-1");
        assert_eq!(m("cop-master-1", true).node(), "cop-master-1");
        assert_eq!(m("cop-master-1-zz", true).node(), "cop-master-1-zz");
    }

    #[test]
    fn quorum_is_a_majority_of_the_members_left() {
        let three = |h2, h3| vec![m("a-00000001", true), m("b-00000002", h2), m("c-00000003", h3)];
        assert!(quorum_verdict("c", &three(true, false)).is_ok(), "a dead member leaves 2 of 2 healthy");
        assert!(quorum_verdict("c", &three(true, true)).is_ok());
        assert_eq!(
            quorum_verdict("c", &three(false, true)).unwrap_err(),
            "removing c would leave etcd without quorum: of its 3 members 2 are healthy (a, c) and b not; \
             without c, 1 of 2 would be healthy and a quorum needs 2. Bring b back first, or if it is dead for \
             good remove it first (copctl node remove b)"
        );
        assert!(quorum_verdict("x", &three(false, false)).is_ok(), "not a member");
        assert!(quorum_verdict("a", &[m("a-00000001", true)]).is_ok(), "the last member: nothing left to lose");
    }

    #[test]
    fn health_comes_from_the_client_urls() {
        let list = serde_json::json!({"members": [
            {"ID": 11, "name": "a-00000001", "clientURLs": ["https://10.0.0.1:2379"]},
            {"ID": 12, "name": "b-00000002", "clientURLs": ["https://10.0.0.2:2379"]}]});
        let health = serde_json::json!([{"endpoint": "https://10.0.0.1:2379", "health": true},
            {"endpoint": "https://10.0.0.2:2379", "health": false, "error": "context deadline exceeded"}]);
        let ms = members(&list, &health);
        assert_eq!(ms.iter().map(|m| (m.id, m.healthy)).collect::<Vec<_>>(), [(11, true), (12, false)]);
    }
}
