//! The COP maintenance procedures of issue 15 on the lab cluster: removing a dead node (a worker,
//! a server and its etcd member, the quorum refusal, the same name joining again) and the
//! `rke2-upgrade` playbook (snapshot first, servers one at a time, agents after, never a
//! downgrade, `--limit` kept).

mod common;

use common::lab::cop_site::NAMES;
use common::*;
use serde_json::Value;

fn idx(node: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == node).unwrap()
}

/// Installs RKE2 on the whole lab cluster.
fn installed() -> Site {
    let c = Site::cop_cluster();
    c.run_json(&["rke2-install"], 0);
    c
}

fn cluster(c: &Site, rel: &str) -> std::path::PathBuf {
    c.lab().root.join("cluster").join(rel)
}

/// Lines of a file of the shared cluster state.
fn cluster_file(c: &Site, name: &str) -> Vec<String> {
    std::fs::read_to_string(cluster(c, name)).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// The node's machine dies: its host goes down, and the cluster sees it NotReady (what the node
/// controller reports once its kubelet stops posting status).
fn dies(c: &mut Site, node: &str) {
    c.lab_mut().kill(idx(node));
    std::fs::write(cluster(c, &format!("nodes/{node}/ready")), "False\n").unwrap();
}

/// The etcd members, by name (`<node>-<8 hex>`).
fn etcd_members(c: &Site) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cluster(c, "etcd/members"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The steps that ran (not skipped), in order.
fn steps_run(ev: &[Value]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["event"] == "task_end" && e["status"] != "skipped")
        .map(|e| e["step"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_dead_worker_is_removed_from_the_clusters_side_and_its_name_joins_again() {
    let mut c = installed();
    std::fs::create_dir_all(cluster(&c, "pods/cop-worker-3")).unwrap();
    std::fs::write(cluster(&c, "pods/cop-worker-3/shop_web-1.pod"), "app=web\n").unwrap();
    assert!(cluster(&c, "secrets/kube-system/cop-worker-3.node-password.rke2").exists());
    dies(&mut c, "cop-worker-3");
    let ran =
        c.test().args(["node", "remove", "cop-worker-3", "--yes", "-e", "drain_timeout=2", "--output", "json"]).run();
    let said: Vec<&str> = ran.stderr.lines().filter(|l| l.contains("unreachable")).collect();
    assert_eq!(said.len(), 1, "{}", ran.stderr);
    assert!(
        said[0].starts_with("cop-worker-3 is unreachable (")
            && said[0].ends_with(
                "): removing it as a dead node: nothing runs on it (RKE2 is not stopped or uninstalled there), its pods are \
                 drained with --force and those still there after 2s (-e drain_timeout=SECONDS) are deleted, then the node \
                 is deleted from the cluster"
            ),
        "{}",
        said[0]
    );
    let ev = ran.events();
    assert_eq!(
        steps_run(&ev),
        [
            "another server to work from",
            "not the last server",
            "the node is down",
            "etcd member count stays odd",
            "drain the dead node",
            "delete the node"
        ]
    );
    let drained = ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "drain the dead node").unwrap();
    assert_eq!(
        drained["msg"],
        "cop-worker-3 is down: drained with --force; 1 pod(s) still there after 2s (no kubelet to confirm their end) \
         deleted with --grace-period=0: shop/web-1"
    );
    assert!(ev.iter().all(|e| e["status"] != "unreachable"), "nothing connected to the dead node");
    assert!(!cluster(&c, "nodes/cop-worker-3").exists());
    assert!(!cluster(&c, "pods/cop-worker-3/shop_web-1.pod").exists());
    assert!(!cluster(&c, "secrets/kube-system/cop-worker-3.node-password.rke2").exists());
    let m1 = c.lab().double_calls(0);
    assert!(
        m1.iter().any(|l| l.starts_with("kubectl drain cop-worker-3 ")
            && l.contains("--force")
            && l.ends_with("--timeout=2s"))
    );
    assert!(m1.iter().any(|l| l == "kubectl delete pod web-1 -n shop --force --grace-period=0"), "{m1:?}");

    // New hardware under the old name: a fresh disk (a new node password), same address.
    let w3 = idx("cop-worker-3");
    c.lab_mut().restart(w3);
    c.lab().sh(
        w3,
        "rm -rf /etc/rancher /var/lib/rancher /usr/local/bin/rke2 /usr/local/bin/rke2-uninstall.sh \
         /var/lib/copctl-doubles/systemd/rke2-agent.*",
    );
    c.test().args(["node", "add", "cop-worker-3"]).run();
    assert!(cluster_file(&c, "joins").last().unwrap().starts_with("cop-worker-3 agent"));
    assert_eq!(std::fs::read_to_string(cluster(&c, "nodes/cop-worker-3/ready")).unwrap().trim(), "True");
}

#[test]
fn a_dead_server_is_removed_and_its_etcd_member_is_gone() {
    let mut c = installed();
    assert_eq!(etcd_members(&c).len(), 3);
    // RKE2's etcd controller does not get to the member: copctl removes it itself.
    std::fs::write(cluster(&c, "etcd-keep-member"), "").unwrap();
    dies(&mut c, "cop-master-3");
    let ev = c
        .test()
        .args(["node", "remove", "cop-master-3", "--yes", "-e", "drain_timeout=2", "--output", "json"])
        .run()
        .events();
    let steps = steps_run(&ev);
    assert!(steps.iter().any(|s| s == "etcd keeps its quorum"), "{steps:?}");
    let gone = ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "etcd member gone").unwrap();
    assert_eq!(gone["status"], "changed", "{gone}");
    assert!(gone["msg"].as_str().unwrap().starts_with("etcd member cop-master-3-"), "{gone}");
    let members = etcd_members(&c);
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(members.iter().all(|m| !m.starts_with("cop-master-3-")), "{members:?}");
    assert!(!cluster(&c, "nodes/cop-master-3").exists());
    assert!(c.lab().double_calls(0).iter().any(|l| l.contains("etcdctl") && l.contains("member remove")));
}

#[test]
fn removing_a_server_that_would_cost_etcd_its_quorum_is_refused_even_with_force() {
    let mut c = installed();
    dies(&mut c, "cop-master-2");
    let out = c.test().args(["node", "remove", "cop-master-3", "--yes", "--force"]).status(2).run().stdout;
    assert!(
        out.contains(
            "removing cop-master-3 would leave etcd without quorum: of its 3 members 2 are healthy (cop-master-1, \
             cop-master-3) and cop-master-2 not; without cop-master-3, 1 of 2 would be healthy and a quorum needs 2. \
             Bring cop-master-2 back first, or if it is dead for good remove it first (copctl node remove cop-master-2)"
        ),
        "{out}"
    );
    assert!(cluster(&c, "nodes/cop-master-3").exists(), "nothing was removed");
    assert_eq!(etcd_members(&c).len(), 3);
    assert!(!c.lab().double_calls(0).iter().any(|l| l.contains("cordon cop-master-3")));
    assert!(!c.lab().double_calls(idx("cop-master-3")).iter().any(|l| l.contains("stop rke2")));
}
