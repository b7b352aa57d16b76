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
