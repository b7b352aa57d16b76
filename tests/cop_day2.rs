//! Issue 42's day-2 procedures on the lab cluster: the admin kubeconfig on the bastion, `node
//! cordon` and drains of unmanaged pods, `rke2-uninstall`, etcd snapshots and restore. Each
//! test checks the order of the calls, that `--limit` bounds the procedure, what a re-run
//! changes, and pins the messages an operator reads.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::cop::{cluster_events, cluster_file};
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

fn changed(ran: &Ran) -> u64 {
    ran.recap().values().map(|r| r["changed"].as_u64().unwrap()).sum()
}

/// The hosts tasks started on (delegated ones by the host they are for).
fn hosts_run(ev: &[Value]) -> std::collections::BTreeSet<String> {
    ev.iter().filter(|e| e["event"] == "task_start").map(|e| e["host"].as_str().unwrap().to_string()).collect()
}

/// (host, step) of the steps that ran (not skipped), in order.
fn steps_run(ev: &[Value]) -> Vec<(String, String)> {
    ev.iter()
        .filter(|e| e["event"] == "task_end" && e["status"] != "skipped")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string()))
        .collect()
}

fn calls_now(c: &Site) -> Vec<Vec<String>> {
    (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect()
}

fn new_calls(c: &Site, before: &[Vec<String>]) -> Vec<Vec<String>> {
    (0..NAMES.len()).map(|i| c.lab().double_calls(i)[before[i].len()..].to_vec()).collect()
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o7777
}

// --- 1. the admin kubeconfig on the bastion ---

#[test]
fn the_admin_kubeconfig_reaches_the_bastion_naming_the_first_server_and_a_rerun_changes_nothing() {
    let c = installed();
    let kubeconfig = c.path(".copctl/kubeconfig");
    // A limit without a server leaves the bastion's copy alone: nothing is read on a server.
    let ev = c.run_json(&["rke2-post-install", "--limit", "cop-worker-1"], 0).events();
    assert_eq!(hosts_run(&ev).into_iter().collect::<Vec<_>>(), ["cop-worker-1"]);
    assert!(!kubeconfig.exists());

    let ev = c.run_json(&["rke2-post-install"], 0).events();
    let steps = steps_run(&ev);
    let at = |step: &str| steps.iter().position(|(h, s)| h == "cop-master-1" && s == step).unwrap();
    // Once, from the first server, after the servers' own kubeconfig links.
    assert!(at("root's kubeconfig") < at("admin kubeconfig"));
    assert!(at("admin kubeconfig") < at("kubeconfig on the bastion"));
    assert_eq!(steps.iter().filter(|(_, s)| s == "kubeconfig on the bastion").count(), 1);
    let written = ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "kubeconfig on the bastion").unwrap();
    assert_eq!(written["status"], "changed");
    assert_eq!(written["runs_on"], "localhost", "{written}");
    let said = ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "kubeconfig for the operator").unwrap();
    let api = format!("https://{}:6443", c.lab().hosts[0].addr);
    assert_eq!(
        said["msg"],
        format!(".copctl/kubeconfig on the bastion names {api}: export KUBECONFIG=.copctl/kubeconfig")
    );
    assert_eq!(mode(&kubeconfig), 0o600);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let on_server = std::fs::read_to_string(c.lab().path(0, "/etc/rancher/rke2/rke2.yaml")).unwrap();
    assert!(on_server.contains("    server: https://127.0.0.1:6443\n"), "{on_server}");
    assert_eq!(text, on_server.replace("https://127.0.0.1:6443", &api));
    assert!(!text.contains("127.0.0.1"), "{text}");

    // A re-run changes nothing, on the nodes or the bastion.
    let ran = c.run_json(&["rke2-post-install"], 0);
    assert_eq!(changed(&ran), 0);

    // With a VIP in front of the servers, the kubeconfig names it (the API port).
    let ran = c.run_json(&["rke2-post-install", "-e", "rke2_server_url=https://10.0.0.100:9345"], 0);
    assert_eq!(changed(&ran), 1);
    assert_eq!(
        std::fs::read_to_string(&kubeconfig).unwrap(),
        on_server.replace("https://127.0.0.1:6443", "https://10.0.0.100:6443")
    );
    assert_eq!(mode(&kubeconfig), 0o600);

    // A loopback address would point the bastion at itself: refused, the copy left as it was.
    let before = std::fs::read_to_string(&kubeconfig).unwrap();
    let ev = c.run_json(&["rke2-post-install", "-e", "rke2_server_url=https://127.0.0.1:9345"], 2).events();
    let refused = ev.iter().find(|e| e["event"] == "task_end" && e["status"] == "failed").unwrap();
    assert_eq!(
        refused["msg"],
        "the bastion's kubeconfig would name https://127.0.0.1:6443, the bastion itself: set rke2_server_url to the \
         servers' VIP or load balancer (https://HOST:9345), or ansible_host of cop-master-1 to its address"
    );
    assert_eq!(std::fs::read_to_string(&kubeconfig).unwrap(), before);
}

// --- 2. node cordon, and drains of pods no controller manages ---

/// A pod file on `node` (`ns_name.kind`: `.pod` managed by a controller, `.bare` by none).
fn pod(c: &Site, node: &str, file: &str) {
    let dir = cluster(c, &format!("pods/{node}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), "app=web\n").unwrap();
}

fn pods_on(c: &Site, node: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cluster(c, &format!("pods/{node}")))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn node_state(c: &Site, node: &str, what: &str) -> String {
    std::fs::read_to_string(cluster(c, &format!("nodes/{node}/{what}"))).unwrap().trim().to_string()
}

/// The calls that change something (kubectl's reads left out).
fn changes(calls: &[String]) -> Vec<&str> {
    calls.iter().filter(|l| !l.starts_with("kubectl get ")).map(String::as_str).collect()
}

#[test]
fn node_cordon_cordons_only_that_node_holds_until_uncordon_and_a_rerun_changes_nothing() {
    let c = installed();
    pod(&c, "cop-worker-2", "app_web-1.pod");
    let before = calls_now(&c);
    let out = c.test().args(["node", "cordon", "cop-worker-2"]).run().stdout;
    assert!(
        out.ends_with(
            "cop-worker-2 is cordoned: no new pods are scheduled on it and its pods stay; `copctl node uncordon \
             cop-worker-2` lifts it (other procedures leave this cordon alone)\n"
        ),
        "{out}"
    );
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "true");
    assert_eq!(node_state(&c, "cop-worker-2", "annotations"), "copctl.openmaru.io/cordoned=held");
    assert_eq!(pods_on(&c, "cop-worker-2"), ["app_web-1.pod"], "cordon only: the pods stay");
    // kubectl on the first server, about cop-worker-2 only; no other host saw a call.
    let new = new_calls(&c, &before);
    assert_eq!(
        changes(&new[0]),
        [
            "kubectl cordon cop-worker-2",
            "kubectl annotate node cop-worker-2 copctl.openmaru.io/cordoned=held --overwrite"
        ]
    );
    assert!(new[1..].iter().all(Vec::is_empty), "{new:?}");

    // Again: already cordoned (held), nothing changes.
    let before = calls_now(&c);
    let ran = c.test().args(["node", "cordon", "cop-worker-2", "--output", "json"]).run();
    assert_eq!(changed(&ran), 0);
    assert!(new_calls(&c, &before).iter().all(|n| changes(n).is_empty()));

    // The cordon outlives a rolling restart of the node's group; only node uncordon lifts it.
    c.run_json(
        &["rolling-restart", "-e", "target_group=workers", "-e", "cordon_nodes=true", "--limit", "cop-worker-2"],
        0,
    );
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "true");
    let out = c.test().args(["node", "uncordon", "cop-worker-2"]).run().stdout;
    assert!(out.ends_with("cop-worker-2 is uncordoned: pods can be scheduled on it again\n"), "{out}");
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "false");

    // A name the inventory does not have.
    c.test().args(["node", "cordon", "cop-worker-9"]).status(1).stdout("").stderr_normalized(NO_SUCH_NODE).run();
}

const NO_SUCH_NODE: &str = "  x node 'cop-worker-9' matches no host in inventory.ini
  help: did you mean: cop-worker-1, cop-worker-2, cop-worker-3?; add the node to inventory.ini (and its settings to env.yaml) first: the manual's step 2

";

#[test]
fn a_pod_no_controller_manages_stops_the_drain_until_force_unmanaged_deletes_it() {
    let c = installed();
    pod(&c, "cop-worker-2", "app_web-1.pod");
    pod(&c, "cop-worker-2", "ops_debug.bare");
    let ran = c.test().args(["node", "drain", "cop-worker-2", "--output", "json"]).status(2).run();
    let failed = ran.events().into_iter().find(|e| e["event"] == "task_end" && e["status"] == "failed").unwrap();
    assert_eq!(
        failed["msg"],
        "drain of cop-worker-2 failed (drain cop-worker-2: cannot delete Pods that declare no controller (use --force \
         to override): ops/debug): cop-worker-2 uncordoned, stopping here; pods no controller manages are deleted, not \
         moved, by copctl node drain --force-unmanaged (-e drain_force_unmanaged=true)"
    );
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "false", "a failed drain leaves it schedulable");
    assert_eq!(pods_on(&c, "cop-worker-2"), ["app_web-1.pod", "ops_debug.bare"]);
    // --force (the GPU capacity override) is not kubectl's --force.
    c.test().args(["node", "drain", "cop-worker-2", "--force"]).status(2).run();
    assert_eq!(pods_on(&c, "cop-worker-2"), ["app_web-1.pod", "ops_debug.bare"]);

    let before = calls_now(&c);
    c.test().args(["node", "drain", "cop-worker-2", "--force-unmanaged"]).run();
    assert_eq!(pods_on(&c, "cop-worker-2"), Vec::<String>::new());
    let new = new_calls(&c, &before);
    assert_eq!(
        changes(&new[0]),
        [
            "kubectl cordon cop-worker-2",
            "kubectl annotate node cop-worker-2 copctl.openmaru.io/cordoned=held --overwrite",
            "kubectl drain cop-worker-2 --ignore-daemonsets --delete-emptydir-data --timeout=300s --force"
        ]
    );
    assert!(new[1..].iter().all(Vec::is_empty), "{new:?}");
}
