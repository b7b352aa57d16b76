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

// --- 3. rke2-uninstall ---

/// `copctl ARGS` on a terminal (util-linux `script`), `input` typed there: its exit status and
/// what the terminal showed.
fn on_terminal(c: &Site, args: &str, input: &str) -> (i32, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("script")
        .args(["-qec", &format!("{} {args}", env!("CARGO_BIN_EXE_copctl")), "/dev/null"])
        .current_dir(c.dir())
        .env("NO_COLOR", "1")
        .env("COPCTL_INVENTORY", "inventory.ini")
        .env("COPCTL_KNOWN_HOSTS", &c.lab().known_hosts)
        .env("HOME", c.path("home"))
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    // The terminal echoes what was typed, before or after the question (whichever came first).
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n").replacen(input, "", 1);
    (out.status.code().unwrap(), shown)
}

fn step_msg(ev: &[Value], step: &str) -> Value {
    ev.iter().find(|e| e["event"] == "task_end" && e["step"] == step).unwrap_or_else(|| panic!("no {step}"))["msg"]
        .clone()
}

#[test]
fn rke2_uninstall_asks_removes_agents_before_servers_keeps_the_bastions_copies_and_a_rerun_changes_nothing() {
    let c = installed();
    c.run_json(&["rke2-post-install"], 0);
    c.write(".copctl/etcd-snapshots/copctl-cop-master-1-1700000000", "snapshot");
    c.write(".copctl/etcd-snapshots/copctl-cop-master-1-1700000000.sha256", "x  copctl-cop-master-1-1700000000\n");
    let before = calls_now(&c);

    // No terminal and no --yes: refused before anything connects.
    c.test()
        .args(["run", "rke2-uninstall"])
        .status(1)
        .stdout("")
        .stderr(
            "  x rke2-uninstall needs a confirmation and there is no terminal to ask on\n  help: pass --yes to confirm on \
             the command line\n\n",
        )
        .run();
    // On a terminal, anything but the word changes nothing.
    let (status, shown) = on_terminal(&c, "run rke2-uninstall --limit cop-worker-1", "yes\n");
    assert_eq!(status, 1, "{shown}");
    assert_eq!(
        shown,
        "Uninstall RKE2 from 1 node(s): cop-worker-1?\nAgents first, then servers; RKE2 and its data (etcd, \
         /var/lib/rancher/rke2, /etc/rancher) are deleted from them. The bastion's kubeconfig and etcd snapshots \
         stay.\nType 'uninstall' to confirm: not confirmed: nothing was changed\n"
    );
    // Some servers but not all: refused before anything changes (etcd would lose its quorum).
    let ev = c.run_json(&["rke2-uninstall", "--yes", "--limit", "cop-master-1,cop-master-2,cop-worker-1"], 2).events();
    assert_eq!(
        step_msg(&ev, "every server or none"),
        "rke2-uninstall ends the cluster with its servers, and the limit holds cop-master-1, cop-master-2 but not \
         cop-master-3: uninstall every server at once, or take one node out of the running cluster with copctl node \
         remove NAME; nothing was changed"
    );
    assert_eq!(new_calls(&c, &before), vec![Vec::<String>::new(); NAMES.len()], "nothing ran on a node");

    // Agents alone (the limit): only they go; the servers stay.
    let (status, shown) = on_terminal(&c, "run rke2-uninstall --limit cop-worker-1", "uninstall\n");
    assert_eq!(status, 0, "{shown}");
    assert!(!c.lab().path(idx("cop-worker-1"), "/usr/local/bin/rke2").exists());
    assert!(c.lab().path(idx("cop-worker-2"), "/usr/local/bin/rke2").exists());
    assert!(c.lab().path(0, "/usr/local/bin/rke2").exists());

    // Everything: agents, then servers; what the bastion keeps is named.
    let ev = c.run_json(&["rke2-uninstall", "--yes"], 0).events();
    let uninstalls: Vec<(String, String)> = steps_run(&ev).into_iter().filter(|(_, s)| s == "uninstall rke2").collect();
    assert_eq!(uninstalls.len(), NAMES.len());
    let last_agent = uninstalls.iter().rposition(|(h, _)| !h.starts_with("cop-master")).unwrap();
    let first_server = uninstalls.iter().position(|(h, _)| h.starts_with("cop-master")).unwrap();
    assert!(last_agent < first_server, "{uninstalls:?}");
    let agents_done = ev
        .iter()
        .filter(|e| {
            e["event"] == "task_end"
                && e["step"] == "uninstall rke2"
                && !e["host"].as_str().unwrap().starts_with("cop-master")
        })
        .map(|e| e["ts"].as_u64().unwrap())
        .max()
        .unwrap();
    let servers_began = ev
        .iter()
        .filter(|e| {
            e["event"] == "task_start"
                && e["step"] == "uninstall rke2"
                && e["host"].as_str().unwrap().starts_with("cop-master")
        })
        .map(|e| e["ts"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(agents_done <= servers_began, "a server was uninstalled before every agent was");
    assert_eq!(
        step_msg(&ev, "kept on the bastion"),
        "left in place on the bastion: .copctl/kubeconfig (the admin kubeconfig of the uninstalled cluster); \
         .copctl/etcd-snapshots (1 etcd snapshot(s), each with its .sha256)"
    );
    for (i, (name, _)) in NAMES.iter().enumerate() {
        assert!(!c.lab().path(i, "/usr/local/bin/rke2").exists(), "{name}");
        assert!(!c.lab().path(i, "/var/lib/rancher/rke2").exists(), "{name}");
        let calls = c.lab().double_calls(i);
        assert_eq!(calls.iter().filter(|l| *l == "rke2-uninstall.sh").count(), 1, "{name}: {calls:?}");
    }
    assert!(c.path(".copctl/kubeconfig").exists() && c.path(".copctl/etcd-snapshots").exists());

    // Nothing left to remove: a re-run changes nothing.
    let ran = c.run_json(&["rke2-uninstall", "--yes"], 0);
    assert_eq!(changed(&ran), 0);
}

// --- 4. etcd: scheduled snapshots, a snapshot to the bastion, the restore ---

/// A YAML file on lab host `i`, parsed.
fn yaml_file(c: &Site, i: usize, path: &str) -> Value {
    let text = std::fs::read_to_string(c.lab().path(i, path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML ({e}):\n{text}"))
}

/// The snapshots on the bastion (not their .sha256 files), oldest first.
fn bastion_snapshots(c: &Site) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(c.path(".copctl/etcd-snapshots"))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.retain(|n| !n.ends_with(".sha256"));
    v.sort();
    v
}

fn sha256(path: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split(' ').next().unwrap().to_string()
}

const SNAPSHOTS: &str = "/var/lib/rancher/rke2/server/db/snapshots";

#[test]
fn the_servers_config_carries_the_snapshot_schedule_and_a_bad_one_is_refused() {
    let c = installed();
    let cfg = yaml_file(&c, 0, "/etc/rancher/rke2/config.yaml");
    assert_eq!(cfg["etcd-snapshot-schedule-cron"], "0 */12 * * *", "{cfg}");
    assert_eq!(cfg["etcd-snapshot-retention"], 5, "{cfg}");
    let agent = yaml_file(&c, idx("cop-worker-1"), "/etc/rancher/rke2/config.yaml");
    assert!(agent.get("etcd-snapshot-retention").is_none(), "{agent}");
    // A re-run changes nothing; another schedule reaches the servers (and restarts them, one at a time).
    assert_eq!(changed(&c.run_json(&["rke2-install"], 0)), 0);
    c.run_json(
        &["rke2-install", "-e", r#"{"etcd_snapshot_schedule": "0 */4 * * *", "etcd_snapshot_retention": 10}"#],
        0,
    );
    let cfg = yaml_file(&c, 2, "/etc/rancher/rke2/config.yaml");
    assert_eq!(
        (cfg["etcd-snapshot-schedule-cron"].as_str(), cfg["etcd-snapshot-retention"].as_u64()),
        (Some("0 */4 * * *"), Some(10))
    );
    assert!(cluster_file(&c, "restart-violations").is_empty(), "{:?}", cluster_file(&c, "restart-violations"));
    c.test()
        .args(["plan", "rke2-install", "-e", "etcd_snapshot_retention=0"])
        .status(1)
        .stdout("")
        .stderr_normalized(BAD_RETENTION)
        .run();
    c.test()
        .args(["plan", "rke2-install", "-e", r#"{"etcd_snapshot_schedule": "every 4 hours"}"#])
        .status(1)
        .stdout("")
        .stderr_normalized(BAD_SCHEDULE)
        .run();
}

const BAD_RETENTION: &str = r#"  x playbooks/rke2-install.yaml:11:1: etcd_snapshot_retention must be how many snapshots RKE2 keeps (1 or more), not '0'
    ,-[playbooks/rke2-install.yaml:11:1]
 10 |     msg: "gpu_dra_sharing_enabled (the DRAConsumableCapacity feature gate) needs Kubernetes 1.34.2 or later (the manual's DRA objects are resource.k8s.io/v1) and rke2_version is {{ rke2_version }}: set rke2_version to v1.34.2+rke2r1 or later, or gpu_dra_sharing_enabled: false"
 11 |   - that: (etcd_snapshot_retention | default('') | string) == '' or (etcd_snapshot_retention | string | regex_replace('^[1-9][0-9]*$', '')) == ''
    : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    :                                                                         `-- this requirement
 12 |     msg: "etcd_snapshot_retention must be how many snapshots RKE2 keeps (1 or more), not '{{ etcd_snapshot_retention }}'"
    `----
  help: rke2-install requires: (etcd_snapshot_retention | default('') | string) == '' or (etcd_snapshot_retention | string | regex_replace('^[1-9][0-9]*$', '')) == ''; fix the settings in env.yaml (or -e)

"#;
const BAD_SCHEDULE: &str = r#"  x playbooks/rke2-install.yaml:13:1: etcd_snapshot_schedule must be a cron spec of five fields such as "0 */12 * * *", not 'every 4 hours'
    ,-[playbooks/rke2-install.yaml:13:1]
 12 |     msg: "etcd_snapshot_retention must be how many snapshots RKE2 keeps (1 or more), not '{{ etcd_snapshot_retention }}'"
 13 |   - that: (etcd_snapshot_schedule | default('') | string) == '' or (etcd_snapshot_schedule | string | trim | regex_replace('^\\S+( +\\S+){4}$', '')) == ''
    : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    :                                                                              `-- this requirement
 14 |     msg: "etcd_snapshot_schedule must be a cron spec of five fields such as \"0 */12 * * *\", not '{{ etcd_snapshot_schedule }}'"
    `----
  help: rke2-install requires: (etcd_snapshot_schedule | default('') | string) == '' or (etcd_snapshot_schedule | string | trim | regex_replace('^\\S+( +\\S+){4}$', '')) == ''; fix the settings in env.yaml (or -e)

"#;

#[test]
fn an_etcd_snapshot_is_taken_on_one_server_and_reaches_the_bastion_with_its_checksum() {
    let c = installed();
    std::fs::write(cluster(&c, "etcd/data"), "objects: before\n").unwrap();
    // No server in the limit: no snapshot, nothing read anywhere.
    let before = calls_now(&c);
    c.test()
        .args(["run", "etcd-snapshot", "--limit", "cop-worker-1"])
        .status(1)
        .stdout("")
        .stderr(
            "  x --limit 'cop-worker-1' leaves nothing to do: no play of etcd-snapshot targets those hosts\n  help: \
             check the play's hosts: patterns (copctl plan without --limit shows them)\n\n",
        )
        .run();
    assert_eq!(new_calls(&c, &before), vec![Vec::<String>::new(); NAMES.len()]);
    assert!(bastion_snapshots(&c).is_empty());

    let start = cluster_events(&c).len();
    let ev = c.run_json(&["etcd-snapshot"], 0).events();
    let taken: Vec<_> = cluster_events(&c).into_iter().skip(start).filter(|e| e.what == "etcd-snapshot").collect();
    assert_eq!(taken.len(), 1, "one snapshot for the cluster");
    assert_eq!(taken[0].args[0], "cop-master-1");
    let name = taken[0].args[1].clone();
    assert!(name.starts_with("copctl-cop-master-1-"), "{name}");
    let steps: Vec<String> = steps_run(&ev).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        steps,
        [
            "etcd snapshot",
            "snapshot checksum on the server",
            "snapshot directory on the bastion",
            "snapshot directory's path",
            "snapshot to the bastion",
            "snapshot checksum on the bastion",
            "snapshot taken",
        ]
    );
    assert_eq!(bastion_snapshots(&c), std::slice::from_ref(&name));
    let copy = c.path(&format!(".copctl/etcd-snapshots/{name}"));
    let on_server = c.lab().path(0, &format!("{SNAPSHOTS}/{name}"));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&on_server).unwrap());
    assert!(std::fs::read_to_string(&copy).unwrap().ends_with("objects: before\n"));
    assert_eq!((mode(&copy), mode(&c.path(".copctl/etcd-snapshots"))), (0o600, 0o700));
    let sum = sha256(&copy);
    let sum_file = c.path(&format!(".copctl/etcd-snapshots/{name}.sha256"));
    assert_eq!(std::fs::read_to_string(&sum_file).unwrap(), format!("{sum}  {name}\n"));
    assert_eq!(mode(&sum_file), 0o600);
    assert_eq!(
        step_msg(&ev, "snapshot taken"),
        format!(
            "etcd snapshot {name} of cop-master-1: in {SNAPSHOTS} there, and on the bastion .copctl/etcd-snapshots/{name} \
             (0600) with its sha256 {sum} in {name}.sha256; restore it with copctl run etcd-restore -e etcd_snapshot={name}"
        )
    );

    // The limit picks the server; the other servers and every agent are left alone.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let before = calls_now(&c);
    c.run_json(&["etcd-snapshot", "--limit", "cop-master-2"], 0);
    let new = new_calls(&c, &before);
    assert_eq!(new[1].iter().filter(|l| l.starts_with("rke2 etcd-snapshot save")).count(), 1, "{:?}", new[1]);
    assert!(new.iter().enumerate().all(|(i, n)| i == 1 || n.is_empty()), "{new:?}");
    let all = bastion_snapshots(&c);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all.iter().any(|n| n.starts_with("copctl-cop-master-2-")));
    // The earlier copy is left as it was.
    assert_eq!(sha256(&copy), sum);
}

/// The cluster's keyspace stand-in (the doubles' etcd/data).
fn etcd_data(c: &Site) -> String {
    std::fs::read_to_string(cluster(c, "etcd/data")).unwrap_or_default()
}

fn etcd_members(c: &Site) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cluster(c, "etcd/members"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The paths under a lab host's directory whose names start with `prefix`.
fn entries(c: &Site, i: usize, dir: &str, prefix: &str) -> Vec<String> {
    std::fs::read_dir(c.lab().path(i, dir))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(prefix)).collect()
        })
        .unwrap_or_default()
}

#[test]
fn etcd_restore_checks_the_snapshot_then_follows_rke2s_order_and_brings_its_state_back() {
    let c = installed();
    std::fs::write(cluster(&c, "etcd/data"), "objects: before\n").unwrap();
    c.run_json(&["etcd-snapshot"], 0);
    let name = bastion_snapshots(&c).pop().unwrap();
    std::fs::write(cluster(&c, "etcd/data"), "objects: after\n").unwrap();
    // Only on the bastion now: the restore puts it back on the first server.
    std::fs::remove_file(c.lab().path(0, &format!("{SNAPSHOTS}/{name}"))).unwrap();
    let snap = format!("etcd_snapshot={name}");
    let before = calls_now(&c);

    // Refused before anything runs: no confirmation, no snapshot named, a limit short of a server.
    c.test()
        .args(["run", "etcd-restore", "-e", &snap])
        .status(1)
        .stdout("")
        .stderr(
            "  x etcd-restore needs a confirmation and there is no terminal to ask on\n  help: pass --yes to confirm on \
             the command line\n\n",
        )
        .run();
    let (status, shown) = on_terminal(&c, &format!("run etcd-restore -e {snap}"), "no\n");
    assert_eq!(status, 1, "{shown}");
    assert_eq!(
        shown,
        format!(
            "Restore etcd from the snapshot {name} on cop-master-1, cop-master-2, cop-master-3?\nEvery server is stopped \
             and the cluster goes back to the snapshot's state: what changed since it was taken is lost.\nType 'restore' \
             to confirm: not confirmed: nothing was changed\n"
        )
    );
    c.test().args(["run", "etcd-restore", "--yes"]).status(1).stdout("").stderr_normalized(NO_SNAPSHOT).run();
    let ev = c.run_json(&["etcd-restore", "--yes", "-e", &snap, "--limit", "cop-master-1,cop-master-2"], 2).events();
    assert_eq!(
        step_msg(&ev, "every server in the limit"),
        "etcd-restore stops and restores every server, and the limit holds cop-master-1, cop-master-2 but not \
         cop-master-3: run it with every server in the limit; nothing was changed"
    );
    // A snapshot that is not the one taken (its checksum differs): refused before anything stops.
    let copy = c.path(&format!(".copctl/etcd-snapshots/{name}"));
    let good = std::fs::read(&copy).unwrap();
    std::fs::write(&copy, b"etcd-snapshot tampered\n").unwrap();
    let ev = c.run_json(&["etcd-restore", "--yes", "-e", &snap], 2).events();
    let refused = ev.iter().find(|e| e["event"] == "task_end" && e["status"] == "failed").unwrap();
    let (bad, want) =
        (sha256(&copy), std::fs::read_to_string(c.path(&format!(".copctl/etcd-snapshots/{name}.sha256"))).unwrap());
    assert_eq!(
        refused["msg"],
        format!(
            "non-zero return code 1: .copctl/etcd-snapshots/{name} has sha256 {bad}, but {name}.sha256 says {}: the file is not the snapshot \
             that was taken; refusing to restore from it, nothing was changed",
            want.split(' ').next().unwrap()
        )
    );
    std::fs::write(&copy, good).unwrap();
    // No snapshot of that name anywhere.
    let ev = c.run_json(&["etcd-restore", "--yes", "-e", "etcd_snapshot=copctl-nowhere-1"], 2).events();
    assert_eq!(
        step_msg(&ev, "a snapshot to restore"),
        format!(
            "no snapshot copctl-nowhere-1 on the bastion (.copctl/etcd-snapshots) nor on cop-master-1 ({SNAPSHOTS}); \
             nothing was changed"
        )
    );
    let new = new_calls(&c, &before);
    assert!(new.iter().all(|n| n.iter().all(|l| !l.starts_with("systemctl") && !l.starts_with("rke2"))), "{new:?}");
    assert_eq!(etcd_data(&c), "objects: after\n");

    // The servers only (the limit): RKE2's order, the agents left alone.
    let start = cluster_events(&c).len();
    let joins_before = cluster_file(&c, "joins").len();
    let before = calls_now(&c);
    c.run_json(&["etcd-restore", "--yes", "-e", &snap, "--limit", "masters"], 0);
    assert_eq!(etcd_data(&c), "objects: before\n", "the snapshot's state is back");
    assert_eq!(cluster_file(&c, "restore-violations"), Vec::<String>::new());
    let ev: Vec<_> = cluster_events(&c).into_iter().skip(start).collect();
    let stops: Vec<(String, u128)> =
        ev.iter().filter(|e| e.what == "stop").map(|e| (e.args[0].clone(), e.at)).collect();
    let mut stopped: Vec<&str> = stops.iter().map(|s| s.0.as_str()).collect();
    stopped.sort();
    assert_eq!(stopped, ["cop-master-1", "cop-master-2", "cop-master-3"]);
    let reset = ev.iter().find(|e| e.what == "cluster-reset").unwrap();
    assert_eq!(reset.args, ["cop-master-1", name.as_str()]);
    assert!(stops.iter().all(|s| s.1 < reset.at), "every server stopped before the reset");
    // Then the first server, then the others one at a time (each joins only after the one before).
    let joins: Vec<(String, u128)> = cluster_file(&c, "joins")[joins_before..]
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            (w[0].to_string(), w[2].parse().unwrap())
        })
        .collect();
    assert_eq!(
        joins.iter().map(|j| j.0.as_str()).collect::<Vec<_>>(),
        ["cop-master-1", "cop-master-2", "cop-master-3"]
    );
    assert!(joins[0].1 > reset.at);
    let new = new_calls(&c, &before);
    assert!(
        new[0]
            .iter()
            .any(|l| l == &format!("rke2 server --cluster-reset --cluster-reset-restore-path={SNAPSHOTS}/{name}"))
    );
    for i in 3..NAMES.len() {
        assert_eq!(new[i], Vec::<String>::new(), "{} is outside the limit", NAMES[i].0);
    }
    // The reset moved the first server's data aside; the others' was moved aside before they joined.
    assert_eq!(entries(&c, 0, "/var/lib/rancher/rke2/server/db", "etcd-old-").len(), 1);
    for (i, (node, _)) in NAMES.iter().enumerate().take(3).skip(1) {
        assert_eq!(entries(&c, i, "/var/lib/rancher/rke2/server", "db-before-restore-").len(), 1, "{node}");
    }
    assert_eq!(etcd_members(&c).len(), 3, "every server is an etcd member again");
    assert!(!c.lab().path(0, "/var/lib/rancher/rke2/server/db/reset-flag").exists(), "a normal start removed it");
    assert_eq!(mode(&c.lab().path(0, &format!("{SNAPSHOTS}/{name}"))), 0o600);

    // The whole cluster, again: the same order, then the agents restarted; the snapshot is on the
    // server already, and a re-run restores again.
    std::fs::write(cluster(&c, "etcd/data"), "objects: later\n").unwrap();
    let joins_before = cluster_file(&c, "joins").len();
    c.run_json(&["etcd-restore", "--yes", "-e", &snap], 0);
    assert_eq!(etcd_data(&c), "objects: before\n");
    assert_eq!(cluster_file(&c, "restore-violations"), Vec::<String>::new());
    let order: Vec<String> =
        cluster_file(&c, "joins")[joins_before..].iter().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    assert_eq!(&order[..3], ["cop-master-1", "cop-master-2", "cop-master-3"]);
    let mut agents: Vec<&str> = order[3..].iter().map(String::as_str).collect();
    agents.sort();
    assert_eq!(agents, ["cop-gpu-1", "cop-gpu-2", "cop-worker-1", "cop-worker-2", "cop-worker-3"]);
    for (name, _) in NAMES {
        assert_eq!(node_state(&c, name, "ready"), "True", "{name}");
    }

    // A server that does not come back stops the restore there: the servers after it stay
    // stopped with their data in place, the agents are not restarted; a re-run finishes it.
    std::fs::write(cluster(&c, "never-ready-cop-master-2"), "").unwrap();
    let before = calls_now(&c);
    let ev = c.run_json(&["etcd-restore", "--yes", "-e", &snap, "-e", "ready_timeout=2"], 2).events();
    let failed: Vec<(String, String)> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["status"] == "failed")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(failed, [("cop-master-2".to_string(), "wait until Ready".to_string())]);
    assert!(cluster(&c, "stopped/cop-master-3").exists(), "cop-master-3 was not started");
    assert_eq!(
        entries(&c, 2, "/var/lib/rancher/rke2/server", "db-before-restore-").len(),
        2,
        "its data moved aside before"
    );
    let new = new_calls(&c, &before);
    assert!(new[2].iter().all(|l| l != "systemctl start rke2-server"), "{:?}", new[2]);
    assert!(new[3..].iter().all(Vec::is_empty), "no agent was restarted: {new:?}");
    std::fs::remove_file(cluster(&c, "never-ready-cop-master-2")).unwrap();
    c.run_json(&["etcd-restore", "--yes", "-e", &snap], 0);
    assert_eq!(etcd_data(&c), "objects: before\n");
    assert_eq!(etcd_members(&c).len(), 3);
    assert_eq!(cluster_file(&c, "restore-violations"), Vec::<String>::new());
}

const NO_SNAPSHOT: &str = r#"  x playbooks/etcd-restore.yaml:24:1: play 'every server': hosts: 'etcd_snapshot' is undefined
    ,-[playbooks/etcd-restore.yaml:24:1]
 23 |   # (validate notes it), as node-remove without -e node.
 24 |   - name: every server
    : ^^^^^^^^^^^|^^^^^^^^^^
    :            `-- in this play
 25 |     hosts: "{{ 'masters' if etcd_snapshot else 'masters' }}"
    `----
  help: this playbook needs that variable: pass it with -e name=value

"#;

// --- 5. certificates ---

/// The end of a node's certificates as the doubles keep it, as copctl prints it.
fn cert_end(c: &Site, i: usize, kind: &str) -> String {
    let at = std::fs::read_to_string(c.lab().path(i, &format!("/var/lib/rancher/rke2/{kind}/tls-expires"))).unwrap();
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{}", at.trim()), "+%Y-%m-%d %H:%M UTC"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn certificates_are_rotated_one_server_at_a_time_then_agents_restarted_with_their_ends_printed() {
    let c = Site::cop_cluster();
    // Certificates with 200 days left: a restart alone renews nothing (RKE2 renews within 120).
    std::fs::write(cluster(&c, "cert-days"), "200").unwrap();
    c.run_json(&["rke2-install"], 0);
    c.run_json(&["rke2-post-install"], 0);
    let kubeconfig = std::fs::read_to_string(c.path(".copctl/kubeconfig")).unwrap();
    let kind = |i: usize| if i < 3 { "server" } else { "agent" };
    let before: Vec<String> = (0..NAMES.len()).map(|i| cert_end(&c, i, kind(i))).collect();

    // --limit: that server alone; nothing else is touched.
    let calls = calls_now(&c);
    let ev = c.run_json(&["rke2-cert-rotate", "--limit", "cop-master-2"], 0).events();
    let new = new_calls(&c, &calls);
    assert_eq!(
        new[1],
        [
            "rke2 certificate check --output table",
            "systemctl is-active -q rke2-server",
            "systemctl stop rke2-server",
            "rke2 certificate rotate",
            "systemctl is-active -q rke2-server",
            "systemctl start rke2-server",
            "rke2 start server",
            "rke2 certificate check --output table"
        ]
    );
    assert!(
        new.iter().enumerate().all(|(i, n)| i == 1 || changes(n).iter().all(|l| l.starts_with("kubectl get"))),
        "{new:?}"
    );
    let m2 = cert_end(&c, 1, "server");
    assert_eq!(
        ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "certificates renewed").unwrap()["msg"],
        format!("cop-master-2: certificates ended {}, now {m2}", before[1])
    );
    assert!(m2 > before[1]);
    assert_eq!(cert_end(&c, 0, "server"), before[0]);

    // Everything: servers one at a time (each stopped only once the one before is back), then
    // the agents; the bastion's kubeconfig gets the admin's new certificate.
    let start = cluster_events(&c).len();
    let joins_before = cluster_file(&c, "joins").len();
    let ev = c.run_json(&["rke2-cert-rotate"], 0).events();
    assert_eq!(cluster_file(&c, "cert-violations"), Vec::<String>::new(), "a rotation while RKE2 ran");
    let stops: Vec<(String, u128)> = cluster_events(&c)
        .into_iter()
        .skip(start)
        .filter(|e| e.what == "stop")
        .map(|e| (e.args[0].clone(), e.at))
        .collect();
    let joins: Vec<(String, u128)> = cluster_file(&c, "joins")[joins_before..]
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            (w[0].to_string(), w[2].parse().unwrap())
        })
        .collect();
    assert_eq!(
        stops.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["cop-master-1", "cop-master-2", "cop-master-3"]
    );
    assert_eq!(
        joins[..3].iter().map(|j| j.0.as_str()).collect::<Vec<_>>(),
        ["cop-master-1", "cop-master-2", "cop-master-3"]
    );
    for k in 0..2 {
        assert!(joins[k].1 < stops[k + 1].1, "{} was stopped before {} was back", stops[k + 1].0, joins[k].0);
    }
    let mut agents: Vec<&str> = joins[3..].iter().map(|j| j.0.as_str()).collect();
    assert!(joins[3..].iter().all(|j| j.1 > joins[2].1), "agents after the servers");
    agents.sort();
    assert_eq!(agents, ["cop-gpu-1", "cop-gpu-2", "cop-worker-1", "cop-worker-2", "cop-worker-3"]);
    let said: Vec<String> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["step"] == "certificates renewed")
        .map(|e| e["msg"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(said.len(), NAMES.len());
    for (i, (name, _)) in NAMES.iter().enumerate() {
        let now = cert_end(&c, i, kind(i));
        let was = if i == 1 { m2.clone() } else { before[i].clone() };
        assert!(said.contains(&format!("{name}: certificates ended {was}, now {now}")), "{name}: {said:?}");
        if i < 3 {
            assert!(now >= was && now > before[i], "{name}");
        } else {
            assert_eq!(now, was, "{name}: an agent's are renewed only near their end");
        }
    }
    let renewed = std::fs::read_to_string(c.path(".copctl/kubeconfig")).unwrap();
    assert_ne!(renewed, kubeconfig);
    assert!(renewed.contains(&format!("server: https://{}:6443", c.lab().hosts[0].addr)));
}

// --- 6. time ---

#[test]
fn without_ntp_servers_the_servers_keep_the_time_every_node_follows_them_and_a_node_off_fails() {
    let c = Site::cop_cluster();
    c.run_json(&["system-setup"], 0);
    let addr = |i: usize| c.lab().hosts[i].addr.to_string();
    let conf = |i: usize| std::fs::read_to_string(c.lab().path(i, "/etc/chrony/chrony.conf")).unwrap();
    // A server follows the other servers, serves in orphan mode, and lets every node ask it.
    let m1 = conf(0);
    let mut want = format!("server {} iburst\nserver {} iburst\nlocal stratum 10 orphan\n", addr(1), addr(2));
    for i in 1..NAMES.len() {
        want.push_str(&format!("allow {}\n", addr(i)));
    }
    assert!(m1.contains(&want), "{m1}");
    // Every other node follows the servers, and serves nobody.
    let w2 = conf(idx("cop-worker-2"));
    assert!(
        w2.contains(&format!("server {} iburst\nserver {} iburst\nserver {} iburst\n", addr(0), addr(1), addr(2))),
        "{w2}"
    );
    assert!(!w2.contains("local stratum") && !w2.contains("allow"), "{w2}");
    // A re-run changes nothing.
    assert_eq!(changed(&c.run_json(&["system-setup"], 0)), 0);

    // A clock off by more than max_clock_offset fails the run, naming the node; only it is read.
    std::fs::write(c.lab().path(idx("cop-worker-2"), "/var/lib/copctl-doubles/clock-offset"), "2.5").unwrap();
    let ev = c.run_json(&["system-setup", "--limit", "cop-worker-2", "-e", "clock_sync_retries=1"], 2).events();
    assert_eq!(hosts_run(&ev).into_iter().collect::<Vec<_>>(), ["cop-worker-2"]);
    assert_eq!(
        step_msg(&ev, "clock in sync"),
        "non-zero return code 1: cop-worker-2: its clock is 2.5 s off the time it follows (chronyc tracking), more \
         than max_clock_offset 0.5 s"
    );
    std::fs::write(c.lab().path(idx("cop-worker-2"), "/var/lib/copctl-doubles/clock-offset"), "unsynchronised")
        .unwrap();
    let ev = c.run_json(&["system-setup", "--limit", "cop-worker-2", "-e", "clock_sync_retries=1"], 2).events();
    assert_eq!(
        step_msg(&ev, "clock in sync"),
        "non-zero return code 1: cop-worker-2: chrony is not synchronised to the servers (chronyc tracking: Leap \
         status Not synchronised)"
    );
    // clock_check: false (a node with no way to its time source) leaves the clock unread, and
    // the recap says the step was skipped.
    let ev = c.run_json(&["system-setup", "--limit", "cop-worker-2", "-e", "clock_check=false"], 0).events();
    let read = ev.iter().find(|e| e["event"] == "task_end" && e["step"] == "clock in sync").unwrap();
    assert_eq!((read["status"].as_str(), read["host"].as_str()), (Some("skipped"), Some("cop-worker-2")), "{read}");
    // With ntp_servers, every node follows them.
    std::fs::write(c.lab().path(idx("cop-worker-2"), "/var/lib/copctl-doubles/clock-offset"), "0.01").unwrap();
    c.run_json(&["system-setup", "-e", r#"{"ntp_servers": ["ntp1.example.com"]}"#], 0);
    for i in [0, idx("cop-worker-2")] {
        let text = conf(i);
        assert!(
            text.contains("server ntp1.example.com iburst\n")
                && !text.contains("allow")
                && !text.contains("local stratum"),
            "{text}"
        );
    }
}
