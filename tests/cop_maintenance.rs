//! The COP maintenance procedures of issue 15 on the lab cluster: removing a dead node (a worker,
//! a server and its etcd member, the quorum refusal, the same name joining again) and the
//! `rke2-upgrade` playbook (snapshot first, servers one at a time, agents after, never a
//! downgrade, `--limit` kept).

mod common;

use common::cop::{Event, cluster_events, cluster_file};
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
    // Unreachable is not dead: while its kubelet still reports Ready, the node is not removed.
    c.lab_mut().kill(idx("cop-worker-3"));
    let out = c.test().args(["node", "remove", "cop-worker-3", "--yes"]).status(2).run().stdout;
    assert!(
        out.contains(
            "cop-worker-3 does not answer over SSH but is Ready in the cluster (its kubelet still reports): it is not \
             dead. Check the network from here to it; copctl removes as dead only a node that is down"
        ),
        "{out}"
    );
    assert!(cluster(&c, "nodes/cop-worker-3").exists() && cluster(&c, "pods/cop-worker-3/shop_web-1.pod").exists());
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

fn version_of(c: &Site, node: &str) -> String {
    std::fs::read_to_string(cluster(c, &format!("nodes/{node}/version"))).unwrap().trim().to_string()
}

const NEW: &str = "v1.34.3+rke2r1";

#[test]
fn the_upgrade_takes_a_snapshot_then_servers_one_at_a_time_then_agents_and_a_rerun_changes_nothing() {
    let c = installed();
    std::fs::write(cluster(&c, "ready-delay-ms"), "1500").unwrap();
    let start = cluster_events(&c).len();
    let upgrade =
        ["rke2-upgrade", "-e", &format!("rke2_version={NEW}"), "-e", "worker_batch=2", "-e", "drain_nodes=true"];
    c.run_json(&upgrade, 0);
    assert_eq!(cluster_file(&c, "restart-violations"), Vec::<String>::new(), "two servers were down at once");
    let ev: Vec<Event> = cluster_events(&c).into_iter().skip(start).collect();
    // (node, type, began, ended) of every restart, in the order they began.
    let mut restarts: Vec<(String, String, u128, u128)> = vec![];
    for e in &ev {
        match e.what.as_str() {
            "restart-begin" => restarts.push((e.args[0].clone(), e.args[1].clone(), e.at, 0)),
            "restart-end" => restarts.iter_mut().find(|r| r.0 == e.args[0] && r.3 == 0).unwrap().3 = e.at,
            _ => {}
        }
    }
    assert_eq!(restarts.len(), NAMES.len(), "every node restarts once");
    let snap = ev.iter().filter(|e| e.what == "etcd-snapshot").collect::<Vec<_>>();
    assert_eq!(snap.len(), 1, "one snapshot");
    assert_eq!(snap[0].args[0], "cop-master-1");
    assert!(snap[0].args[1].starts_with("copctl-pre-upgrade-cop-master-1-"), "{:?}", snap[0].args);
    assert!(snap[0].at < restarts[0].2, "the snapshot is taken before the first restart");
    let servers: Vec<_> = restarts.iter().filter(|r| r.1 == "server").collect();
    assert_eq!(
        servers.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["cop-master-1", "cop-master-2", "cop-master-3"]
    );
    let first_agent = restarts.iter().filter(|r| r.1 == "agent").map(|r| r.2).min().unwrap();
    for (i, s) in servers.iter().enumerate() {
        let next = servers.get(i + 1).map(|n| n.2).unwrap_or(first_agent);
        assert!(s.3 > 0 && s.3 < next, "{} was still restarting when the next restart began", s.0);
        let seen = |what: &str, args: &[&str]| {
            ev.iter().any(|e| e.what == what && e.args == args && e.at > s.3 && e.at < next)
        };
        assert!(seen("ready", &[s.0.as_str(), "True"]), "{} was not seen Ready before the next restart", s.0);
        assert!(seen("etcd", &["ok"]), "etcd was not seen healthy after {} and before the next restart", s.0);
    }
    // Agents in batches of two: never more than two restarting at once.
    let agents: Vec<_> = restarts.iter().filter(|r| r.1 == "agent").collect();
    for a in &agents {
        let at_once = agents.iter().filter(|b| b.2 <= a.2 && a.2 < b.3).count();
        assert!(at_once <= 2, "{at_once} agents restarting at once");
    }
    for (name, _) in NAMES {
        assert_eq!(version_of(&c, name), NEW, "{name} runs the new release");
        let drained =
            (0..3).any(|i| c.lab().double_calls(i).iter().any(|l| l.starts_with(&format!("kubectl drain {name} "))));
        assert!(drained, "{name} was drained (-e drain_nodes=true)");
        let unschedulable = std::fs::read_to_string(cluster(&c, &format!("nodes/{name}/unschedulable"))).unwrap();
        assert_eq!(unschedulable.trim(), "false", "{name} is back in service");
    }
    // Re-run: nothing changes, no snapshot, no restart.
    let before = cluster_events(&c).len();
    let ran = c.run_json(&upgrade, 0);
    let changed: u64 = ran.recap().values().map(|r| r["changed"].as_u64().unwrap()).sum();
    assert_eq!(changed, 0);
    assert!(cluster_events(&c)[before..].iter().all(|e| e.what != "etcd-snapshot" && e.what != "restart-begin"));
}

#[test]
fn a_downgrade_is_refused_before_anything_changes() {
    let c = installed();
    let start = cluster_events(&c).len();
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    let out = c.test().args(["run", "rke2-upgrade", "-e", "rke2_version=v1.33.5+rke2r1"]).status(2).run().stdout;
    // The first node found newer stops the whole run (any_errors_fatal): the others may not be read.
    let refused = NAMES
        .iter()
        .filter(|(name, _)| {
            out.contains(&format!(
                "{name} runs RKE2 v1.34.2+rke2r1, newer than rke2_version v1.33.5+rke2r1: copctl never downgrades \
                 (an older RKE2 may not read what a newer one wrote to etcd); nothing was changed"
            ))
        })
        .count();
    assert!(refused >= 1, "{out}");
    // What happened to the cluster: nothing (the queries of node state copctl made aside).
    assert!(cluster_events(&c)[start..].iter().all(|e| e.what == "ready"), "no snapshot, no restart");
    for i in 0..NAMES.len() {
        let new = &c.lab().double_calls(i)[before[i].len()..];
        assert!(new.iter().all(|l| l.starts_with("kubectl get")), "{}: {new:?}", NAMES[i].0);
    }
    // A version that is no RKE2 release is refused when planning.
    let err = c.test().args(["plan", "rke2-upgrade", "-e", "rke2_version=1.35"]).status(1).run().stderr;
    assert!(err.contains("rke2_version must be an RKE2 release such as v1.34.2+rke2r1, not '1.35'"), "{err}");
}

#[test]
fn the_upgrade_keeps_to_its_limit() {
    let c = installed();
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    c.run_json(&["rke2-upgrade", "-e", &format!("rke2_version={NEW}"), "--limit", "cop-worker-1"], 0);
    for (i, (name, _)) in NAMES.iter().enumerate() {
        let new = &c.lab().double_calls(i)[before[i].len()..];
        if *name == "cop-worker-1" {
            assert_eq!(version_of(&c, name), NEW);
            assert!(new.iter().any(|l| l.starts_with("install.sh")), "{new:?}");
        } else {
            assert_eq!(version_of(&c, name), "v1.34.2+rke2r1", "{name} was upgraded outside the limit");
            // The servers kubectl runs on are only read (the node's version and Ready).
            assert!(new.iter().all(|l| l.starts_with("kubectl get")), "{name}: {new:?}");
        }
    }
    assert!(!cluster(&c, "snapshots").exists(), "no server in the limit: no snapshot");
}
