//! The COP procedures on lab hosts named like a real cluster (test doubles stand in for
//! systemd, kernel modules, sysctl and packages; every call is logged on its host).

mod common;

use common::cop::{Event, cluster_events, cluster_file, run_rebooting};
use common::lab::LabOptions;
use common::lab::cop_site::NAMES;
use common::*;
use serde_json::Value;

fn changed_by_host(ran: &Ran) -> std::collections::BTreeMap<String, u64> {
    ran.recap().iter().map(|(h, r)| (h.clone(), r["changed"].as_u64().unwrap())).collect()
}

#[test]
fn system_setup_and_dns_converge_and_rerun_changes_nothing() {
    let c = Site::cop_cluster();
    c.run_json(&["system-setup", "system-dns"], 0);
    let hosts = std::fs::read_to_string(c.lab().path(1, "/etc/hosts")).unwrap();
    for (i, (name, _)) in NAMES.iter().enumerate() {
        assert!(hosts.contains(&format!("{} {name}\n", c.lab().hosts[i].addr)), "{hosts}");
    }
    assert!(
        hosts.contains("192.0.2.100 registry.cop.example.com") && hosts.contains("# BEGIN OPENMARU COP HOSTS (copctl)"),
        "{hosts}"
    );
    let w2 = NAMES.iter().position(|(n, _)| *n == "cop-worker-2").unwrap();
    let calls = c.lab().double_calls(w2);
    for want in
        ["hostnamectl set-hostname cop-worker-2", "modprobe overlay", "modprobe br_netfilter", "sysctl --system"]
    {
        assert!(calls.iter().any(|x| x == want), "missing `{want}` in {calls:?}");
    }
    assert!(
        std::fs::read_to_string(c.lab().path(w2, "/etc/sysctl.d/90-rke2.conf"))
            .unwrap()
            .contains("net.ipv4.ip_forward = 1")
    );
    // A second run changes nothing and restarts nothing.
    let ran = c.run_json(&["system-setup", "system-dns"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    assert_eq!(c.lab().double_calls(w2).iter().filter(|x| *x == "sysctl --system").count(), 1);
}

#[test]
fn node_setup_limited_to_the_new_worker_touches_nothing_else() {
    let c = Site::cop_cluster();
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    let ev = c.run_json(&["system-setup", "system-dns", "--limit", "cop-worker-3"], 0).events();
    let touched: std::collections::BTreeSet<&str> =
        ev.iter().filter(|e| e["event"] == "task_start").map(|e| e["host"].as_str().unwrap()).collect();
    assert_eq!(touched.into_iter().collect::<Vec<_>>(), ["cop-worker-3"]);
    for i in 0..3 {
        assert_eq!(c.lab().double_calls(i), before[i], "{} was touched", NAMES[i].0);
        assert!(
            !std::fs::read_to_string(c.lab().path(i, "/etc/hosts")).unwrap_or_default().contains("OPENMARU COP HOSTS")
        );
    }
}

/// A YAML file on lab host `i`, parsed.
fn yaml_file(c: &Site, i: usize, path: &str) -> Value {
    let text = std::fs::read_to_string(c.lab().path(i, path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML ({e}):\n{text}"))
}

#[test]
fn rke2_install_joins_servers_one_at_a_time_and_a_rerun_changes_nothing() {
    let c = Site::cop_cluster();
    let ev = c.run_json(&["rke2-install"], 0).events();
    assert!(cluster_file(&c, "violations").is_empty(), "a concurrent server join was attempted");
    let joins: Vec<String> =
        cluster_file(&c, "joins").iter().map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" ")).collect();
    let servers: Vec<&String> = joins.iter().filter(|j| j.ends_with(" server")).collect();
    assert_eq!(servers, ["cop-master-1 server", "cop-master-2 server", "cop-master-3 server"]);
    assert_eq!(joins[0], "cop-master-1 server", "the first server bootstraps before anything joins");
    assert_eq!(joins.len(), NAMES.len(), "{joins:?}");
    let cfg = yaml_file(&c, 4, "/etc/rancher/rke2/config.yaml");
    assert!(cfg.get("kubelet-arg").is_none(), "no feature gate without DRA sharing: {cfg}");
    let token = std::fs::read_to_string(c.lab().root.join("cluster/token")).unwrap();
    assert_eq!(cfg["server"], format!("https://{}:9345", c.lab().hosts[0].addr), "{cfg}");
    assert_eq!(cfg["token"], token.trim(), "{cfg}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(c.lab().path(4, "/etc/rancher/rke2/config.yaml")).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The token never shows in what copctl prints or records.
    assert!(!ev.iter().any(|e| e.to_string().contains(token.trim())));
    // Re-run: nothing changes, nothing restarts, no new install.
    let calls_before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    let ran = c.run_json(&["rke2-install"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    for i in 0..NAMES.len() {
        let new: Vec<String> = c.lab().double_calls(i)[calls_before[i].len()..].to_vec();
        assert!(!new.iter().any(|l| l.contains("restart") || l.starts_with("install.sh")), "{}: {new:?}", NAMES[i].0);
    }
    // DRA device sharing turns on the DRAConsumableCapacity feature gate: kubelets everywhere,
    // and the control plane on the servers.
    c.run_json(&["rke2-install", "-e", "gpu_dra_sharing_enabled=true"], 0);
    let gate = serde_json::json!(["feature-gates=DRAConsumableCapacity=true"]);
    let server = yaml_file(&c, 0, "/etc/rancher/rke2/config.yaml");
    for arg in ["kubelet-arg", "kube-apiserver-arg", "kube-scheduler-arg", "kube-controller-manager-arg"] {
        assert_eq!(server[arg], gate, "{arg} on a server: {server}");
    }
    let agent = yaml_file(&c, 4, "/etc/rancher/rke2/config.yaml");
    assert_eq!(agent["kubelet-arg"], gate, "{agent}");
    assert!(agent.get("kube-apiserver-arg").is_none(), "{agent}");
}

#[test]
fn rke2_install_limited_to_a_new_worker_changes_only_that_worker() {
    let c = Site::cop_cluster();
    c.run_json(&["rke2-install", "--limit", "!cop-worker-3"], 0);
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    let ev = c.run_json(&["rke2-install", "--limit", "cop-worker-3"], 0).events();
    assert!(cluster_file(&c, "joins").last().unwrap().starts_with("cop-worker-3 agent"));
    let changed: std::collections::BTreeSet<&str> =
        ev.iter().filter(|e| e["status"] == "changed").map(|e| e["host"].as_str().unwrap()).collect();
    assert_eq!(changed.into_iter().collect::<Vec<_>>(), ["cop-worker-3"]);
    // The first server was only read (the token; the Ready wait); the others not even that.
    for (i, (name, _)) in NAMES.iter().enumerate().take(5) {
        let new: Vec<String> = c.lab().double_calls(i)[before[i].len()..].to_vec();
        if i == 0 {
            assert!(
                new.iter().all(|l| l.starts_with("kubectl get") || l.starts_with("systemctl is-active")),
                "{name}: {new:?}"
            );
        } else {
            assert!(new.is_empty(), "{name} was touched: {new:?}");
        }
    }
}

/// Installs RKE2 on the whole lab cluster (the state the later procedures start from).
fn installed() -> Site {
    let c = Site::cop_cluster();
    c.run_json(&["rke2-install"], 0);
    c
}

fn node_state(c: &Site, node: &str, what: &str) -> String {
    std::fs::read_to_string(c.lab().root.join("cluster/nodes").join(node).join(what))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `(host, step)` of every task that ran, in the order they ended.
fn steps_run(ev: &[Value]) -> Vec<(String, String)> {
    ev.iter()
        .filter(|e| e["event"] == "task_end" && e["status"] != "skipped")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn rolling_restart_goes_node_by_node_and_keeps_an_admin_cordon() {
    let c = installed();
    // An administrator cordoned worker-2 before the maintenance.
    std::fs::write(c.lab().root.join("cluster/nodes/cop-worker-2/unschedulable"), "true\n").unwrap();
    let args = ["rolling-restart", "-e", "target_group=workers", "-e", "cordon_nodes=true", "-e", "drain_nodes=true"];
    let run = steps_run(&c.run_json(&args, 0).events());
    // One node at a time, each through the whole sequence.
    let mut order: Vec<String> = Vec::new();
    for (h, _) in &run {
        if order.last() != Some(h) {
            assert!(!order.contains(h), "{h} came back after another node: {run:?}");
            order.push(h.clone());
        }
    }
    assert_eq!(order, ["cop-worker-1", "cop-worker-2", "cop-worker-3"]);
    let w1: Vec<&str> = run.iter().filter(|(h, _)| h == "cop-worker-1").map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        w1,
        [
            "disruption budgets",
            "cordon",
            "drain",
            "stop on a failed drain",
            "restart rke2",
            "wait until Ready",
            "uncordon"
        ]
    );
    // kubectl ran on a server, in the manual's order; worker-2 was never uncordoned by copctl.
    let k: Vec<String> = c
        .lab()
        .double_calls(0)
        .into_iter()
        .filter(|l| {
            l.starts_with("kubectl cordon") || l.starts_with("kubectl drain") || l.starts_with("kubectl uncordon")
        })
        .collect();
    assert_eq!(
        k,
        [
            "kubectl cordon cop-worker-1",
            "kubectl drain cop-worker-1 --ignore-daemonsets --delete-emptydir-data --timeout=300s",
            "kubectl uncordon cop-worker-1",
            "kubectl drain cop-worker-2 --ignore-daemonsets --delete-emptydir-data --timeout=300s",
            "kubectl cordon cop-worker-3",
            "kubectl drain cop-worker-3 --ignore-daemonsets --delete-emptydir-data --timeout=300s",
            "kubectl uncordon cop-worker-3"
        ]
    );
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "true", "an admin's cordon stays");
    assert_eq!(node_state(&c, "cop-worker-1", "unschedulable"), "false");
    // No server was restarted.
    assert!(!(0..3).any(|i| c.lab().double_calls(i).iter().any(|l| l == "systemctl restart rke2-server")));
}

#[test]
fn a_failed_drain_uncordons_that_node_and_stops_the_restart() {
    let c = installed();
    let pods = c.lab().root.join("cluster/pods/cop-worker-2");
    std::fs::create_dir_all(&pods).unwrap();
    std::fs::write(pods.join("standalone.bare"), "").unwrap();
    let ev = c.run_json(&["rolling-restart", "-e", "target_group=workers", "-e", "drain_nodes=true"], 2).events();
    let run = steps_run(&ev);
    assert!(run.iter().any(|(h, s)| h == "cop-worker-1" && s == "uncordon"));
    assert!(run.iter().any(|(h, s)| h == "cop-worker-2" && s == "uncordon after a failed drain"), "{run:?}");
    assert!(!run.iter().any(|(h, s)| h == "cop-worker-2" && s == "restart rke2"), "restarted after a failed drain");
    assert!(!run.iter().any(|(h, _)| h == "cop-worker-3"), "the restart must stop at the failure: {run:?}");
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "false", "the node is left schedulable");
    let failed = ev.iter().find(|e| e["status"] == "failed").unwrap();
    assert!(failed["msg"].as_str().unwrap().contains("drain of cop-worker-2 failed"), "{failed}");
}

#[test]
fn private_registry_restarts_servers_one_at_a_time_each_ready_and_etcd_healthy_first() {
    let c = installed();
    c.run_json(&["rke2-private-registry"], 0);
    // New registry settings: every node's registries.yaml changes. A restarted node now stays
    // NotReady for a while, as a real one does.
    c.edit("env.yaml", |env| env.replace("registry_username: admin", "registry_username: robot$cop"));
    std::fs::write(c.lab().root.join("cluster/ready-delay-ms"), "1500").unwrap();
    let start = cluster_events(&c).len();
    c.run_json(&["rke2-private-registry"], 0);
    assert_eq!(cluster_file(&c, "restart-violations"), Vec::<String>::new());
    let ev: Vec<Event> = cluster_events(&c).into_iter().skip(start).collect();
    // (node, type, restart began, restart ended), in the order they began.
    let mut restarts: Vec<(String, String, u128, u128)> = vec![];
    for e in &ev {
        match e.what.as_str() {
            "restart-begin" => restarts.push((e.args[0].clone(), e.args[1].clone(), e.at, 0)),
            "restart-end" => {
                let r = restarts.iter_mut().find(|r| r.0 == e.args[0] && r.3 == 0).expect("a restart began");
                r.3 = e.at;
            }
            _ => {}
        }
    }
    let mut restarted: Vec<&str> = restarts.iter().map(|r| r.0.as_str()).collect();
    restarted.sort();
    let mut all: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
    all.sort();
    assert_eq!(restarted, all, "every node restarts once");
    let servers: Vec<&(String, String, u128, u128)> = restarts.iter().filter(|r| r.1 == "server").collect();
    assert_eq!(
        servers.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["cop-master-1", "cop-master-2", "cop-master-3"],
        "servers first, in order"
    );
    let first_agent = restarts.iter().filter(|r| r.1 == "agent").map(|r| r.2).min().unwrap();
    for (i, s) in servers.iter().enumerate() {
        assert!(s.3 > 0, "{} restart ended", s.0);
        // Whatever restarts next (the next server, else the first agent) begins only after this
        // server ended its restart, was seen Ready, and etcd was seen healthy.
        let next = servers.get(i + 1).map(|n| n.2).unwrap_or(first_agent);
        assert!(s.3 < next, "{} was still restarting when the next restart began", s.0);
        let seen = |what: &str, args: &[&str]| {
            ev.iter().any(|e| e.what == what && e.args == args && e.at > s.3 && e.at < next)
        };
        assert!(seen("ready", &[s.0.as_str(), "True"]), "{} was not seen Ready before the next restart", s.0);
        assert!(seen("etcd", &["ok"]), "etcd was not seen healthy after {} and before the next restart", s.0);
    }
    assert!(restarts.iter().filter(|r| r.1 == "agent").all(|r| r.2 > servers[2].3), "agents after the servers");
}

#[test]
fn node_add_then_node_remove() {
    node_add_then_remove(Site::cop_cluster());
}

/// The manual's node procedures with a non-root login and passwordless sudo (the other common
/// sudoers rule; the secrets audit covers sudo with a password).
#[test]
fn node_add_then_node_remove_as_a_sudo_user() {
    let c = Site::cop_cluster_with(LabOptions { sudo_user: Some(("deploy".into(), None)), ..Default::default() });
    node_add_then_remove(c);
}

fn node_add_then_remove(c: Site) {
    c.run_json(&["system-setup", "system-dns", "rke2-install", "--limit", "!cop-worker-3"], 0);
    let others: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    c.test().args(["node", "add", "cop-worker-3"]).run();
    assert!(cluster_file(&c, "joins").last().unwrap().starts_with("cop-worker-3 agent"));
    for i in (1..NAMES.len()).filter(|i| *i != 5) {
        assert_eq!(c.lab().double_calls(i), others[i], "{} was touched by node add", NAMES[i].0);
    }
    assert!(
        std::fs::read_to_string(c.lab().path(5, "/etc/rancher/rke2/registries.yaml"))
            .unwrap()
            .contains("registry.cop.example.com:8443")
    );

    // Remove it again: the manual's order, from another server; the node is gone and RKE2 too.
    let ev = c.test().args(["node", "remove", "cop-worker-3", "--yes", "--output", "json"]).run().events();
    let steps: Vec<String> = steps_run(&ev).into_iter().map(|(_, s)| s).collect();
    assert_eq!(
        steps,
        [
            "another server to work from",
            "not the last server",
            "etcd member count stays odd",
            "disruption budgets",
            "cordon",
            "drain",
            "stop rke2",
            "delete the node",
            "uninstall rke2"
        ]
    );
    assert!(!c.lab().root.join("cluster/nodes/cop-worker-3").exists());
    let w3 = c.lab().double_calls(5);
    let tail: Vec<&String> = w3.iter().rev().take(3).collect();
    assert!(tail.iter().any(|l| *l == "rke2-uninstall.sh"), "{w3:?}");
    assert!(
        w3.iter().any(|l| l == "systemctl stop rke2-agent") && w3.iter().any(|l| l == "systemctl disable rke2-agent")
    );
    assert!(c.lab().double_calls(0).iter().any(|l| l == "kubectl delete node cop-worker-3"));
}

#[test]
fn removing_a_server_that_leaves_an_even_etcd_count_is_refused() {
    let c = installed();
    let out = c.test().args(["node", "remove", "cop-master-3", "--yes"]).status(2).run().stdout;
    assert!(out.contains("leaves 2 etcd members"), "{out}");
    assert!(c.lab().root.join("cluster/nodes/cop-master-3").exists(), "nothing was removed");
    assert!(!c.lab().double_calls(0).iter().any(|l| l.contains("cordon cop-master-3")));
}

#[test]
fn a_preinstall_stopped_before_the_initramfs_rebuild_rebuilds_it_on_the_next_run() {
    let c = Site::cop_cluster();
    let gpu = NAMES.iter().position(|(n, _)| *n == "cop-gpu-1").unwrap();
    let rebuilds = |c: &Site| c.lab().double_calls(gpu).iter().filter(|l| l.starts_with("update-initramfs")).count();
    c.run_json(&["gpu-preinstall", "--limit", "cop-gpu-1"], 0);
    assert_eq!(rebuilds(&c), 1);
    assert_eq!(
        c.lab().double_calls(gpu).iter().find(|l| l.starts_with("update-initramfs")).unwrap(),
        "update-initramfs -u -k all"
    );
    // A re-run changes nothing: the initramfs is newer than the blacklist.
    let ran = c.run_json(&["gpu-preinstall", "--limit", "cop-gpu-1"], 0);
    assert_eq!(ran.recap()["cop-gpu-1"]["changed"], 0, "{:?}", ran.recap());
    assert_eq!(rebuilds(&c), 1);
    // The run stopped after writing the blacklist, before the rebuild: the initramfs is older.
    c.lab().sh(gpu, "touch -d '2020-01-01 00:00' /boot/initrd.img-$(uname -r)");
    let ran = c.run_json(&["gpu-preinstall", "--limit", "cop-gpu-1"], 0);
    let rebuilt =
        ran.events().into_iter().find(|e| e["step"] == "initramfs without nouveau" && e["event"] == "task_end");
    assert_eq!(rebuilt.as_ref().map(|e| e["status"].clone()), Some(serde_json::json!("changed")), "{rebuilt:?}");
    assert_eq!(rebuilds(&c), 2);
    let ran = c.run_json(&["gpu-preinstall", "--limit", "cop-gpu-1"], 0);
    assert_eq!(ran.recap()["cop-gpu-1"]["changed"], 0, "{:?}", ran.recap());
}

#[test]
fn gpu_driver_and_operator_with_dra() {
    let c = installed();
    let gpu = NAMES.iter().position(|(n, _)| *n == "cop-gpu-1").unwrap();
    c.run_json(&["rke2-private-registry", "gpu-preinstall", "gpu-install", "gpu-operator"], 0);
    let calls = c.lab().double_calls(gpu);
    assert!(calls.iter().any(|l| l.starts_with("apt-get install") && l.contains("linux-headers-")), "{calls:?}");
    assert!(calls.iter().any(|l| l == "nvidia-installer --silent --dkms"), "{calls:?}");
    assert!(!calls.iter().any(|l| l.starts_with("reboot")), "nouveau was not loaded: no reboot");
    assert!(c.lab().path(gpu, "/etc/modprobe.d/blacklist-nouveau.conf").exists());
    let helm: Vec<String> = c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("helm upgrade")).collect();
    let op = helm
        .iter()
        .find(|l| l.contains("gpu-operator /var/tmp/copctl-charts/gpu-operator-v25.10.0.tgz"))
        .expect("GPU Operator installed");
    for want in [
        "driver.enabled=false",
        "toolkit.env[0].value=/run/k3s/containerd/containerd.sock",
        "devicePlugin.enabled=false",
    ] {
        assert!(op.contains(want), "{want} missing in {op}");
    }
    assert!(helm.iter().any(|l| l.contains("dra-driver-nvidia-gpu")), "{helm:?}");
    assert_eq!(
        node_state(&c, "cop-gpu-1", "labels"),
        "nvidia.com/gpu.present=true\nnvidia.com/dra-kubelet-plugin=true"
    );
    // Everything is in place: a re-run changes nothing (the driver is current, helm digests equal).
    let ran = c.run_json(&["gpu-preinstall", "gpu-install", "gpu-operator"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    // An older driver is left alone unless the upgrade is asked for; then drained and replaced.
    std::fs::write(c.lab().path(gpu, "/var/lib/copctl-doubles/nvidia/version"), "550.54.15\n").unwrap();
    let out = c.test().args(["run", "gpu-install"]).status(2).run().stdout;
    assert!(out.contains("rerun with -e gpu_driver_upgrade=true"), "{out}");
    let ev = c.run_json(&["gpu-install", "-e", "gpu_driver_upgrade=true"], 0).events();
    let steps: Vec<String> = steps_run(&ev)
        .into_iter()
        .filter(|(_, s)| !s.starts_with("installed") && !s.starts_with("not older") && s != "decide")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(
        steps,
        [
            "GPU work on the node",
            "disruption budgets",
            "cordon",
            "drain",
            "stop on a failed drain",
            "GPU Operator pods off the node",
            "GPU Operator pods gone",
            "unload the driver",
            "remove the old driver",
            "staging directory",
            "driver installer from the bastion",
            "install the driver",
            "the driver answers",
            "GPU Operator pods back on the node",
            "wait until Ready",
            "uncordon"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(c.lab().path(gpu, "/var/lib/copctl-doubles/nvidia/version")).unwrap().trim(),
        "580.95.05"
    );
    assert_eq!(node_state(&c, "cop-gpu-1", "unschedulable"), "false");
}

#[test]
fn dra_and_time_slicing_together_are_refused_before_anything_runs() {
    let c = Site::cop_cluster();
    c.test()
        .args(["run", "gpu-operator", "-e", "gpu_time_slicing_enabled=true"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x playbooks/gpu-operator.yaml:6:1: env.yaml enables both DRA (gpu_dra_enabled) and time-slicing (gpu_time_slicing_enabled): never both on the same GPUs (the operations manual)
   ,-[playbooks/gpu-operator.yaml:6:1]
 5 | require:
 6 |   - that: not ((gpu_dra_enabled | default(true) | bool) and (gpu_time_slicing_enabled | default(false) | bool))
   : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                                        `-- this requirement
 7 |     msg: "env.yaml enables both DRA (gpu_dra_enabled) and time-slicing (gpu_time_slicing_enabled): never both on the same GPUs (the operations manual)"
   `----
  help: gpu-operator requires: not ((gpu_dra_enabled | default(true) | bool) and (gpu_time_slicing_enabled | default(false) | bool)); fix the settings in env.yaml (or -e)

"#,
        )
        .run();
    assert!(!c.path(".copctl").exists(), "nothing ran");
    assert!(c.lab().double_calls(0).is_empty());
}

#[test]
fn draining_a_gpu_node_with_work_stops_unless_confirmed_or_forced() {
    let c = installed();
    let cl = c.lab().root.join("cluster");
    // cop-gpu-1 runs a training pod holding a ResourceClaim; each GPU node has one device, and
    // cop-gpu-2's is already allocated.
    std::fs::create_dir_all(cl.join("pods/cop-gpu-1")).unwrap();
    std::fs::write(cl.join("pods/cop-gpu-1/ml_train.claim"), "").unwrap();
    std::fs::create_dir_all(cl.join("resourceslices")).unwrap();
    std::fs::write(cl.join("resourceslices/cop-gpu-1"), "1").unwrap();
    std::fs::write(cl.join("resourceslices/cop-gpu-2"), "1").unwrap();
    std::fs::create_dir_all(cl.join("claims/cop-gpu-2")).unwrap();
    std::fs::write(cl.join("claims/cop-gpu-2/inference"), "").unwrap();
    let drains = |c: &Site| c.lab().double_calls(0).iter().filter(|l| l.starts_with("kubectl drain cop-gpu")).count();
    let restart = || c.test().args(["run", "rolling-restart", "-e", "target_group=gpu", "-e", "drain_nodes=true"]);

    // Nowhere to go: refused, nothing drained.
    let out = restart().args(["--output", "json"]).status(2).run().stdout;
    assert!(out.contains("holds GPU work (ml/train)") && out.contains("0 free device(s)"), "{out}");
    assert_eq!(drains(&c), 0);
    assert_eq!(node_state(&c, "cop-gpu-1", "unschedulable"), "false");

    // Room on cop-gpu-2: it stops to ask; --yes drains.
    std::fs::remove_file(cl.join("claims/cop-gpu-2/inference")).unwrap();
    let out = restart().args(["--output", "json"]).status(2).run().stdout;
    assert!(out.contains("re-run with --yes"), "{out}");
    assert_eq!(drains(&c), 0);
    restart().arg("--yes").run();
    assert_eq!(drains(&c), 2);

    // No room again: --force drains anyway.
    std::fs::create_dir_all(cl.join("pods/cop-gpu-1")).unwrap();
    std::fs::write(cl.join("pods/cop-gpu-1/ml_train.claim"), "").unwrap();
    std::fs::write(cl.join("claims/cop-gpu-2/inference"), "").unwrap();
    restart().arg("--force").run();
    assert_eq!(drains(&c), 4);
}

#[test]
fn node_add_of_a_gpu_node_follows_the_manuals_order() {
    let c = Site::cop_cluster();
    let all = [
        "system-setup",
        "system-dns",
        "gpu-preinstall",
        "gpu-install",
        "rke2-install",
        "rke2-private-registry",
        "gpu-operator",
    ];
    c.run_json(&[&all[..], &["--limit", "!cop-gpu-2"]].concat(), 0);
    let helm_before = c.lab().double_calls(0).iter().filter(|l| l.starts_with("helm upgrade")).count();
    c.test().args(["node", "add", "cop-gpu-2"]).run();
    let g = NAMES.iter().position(|(n, _)| *n == "cop-gpu-2").unwrap();
    let calls = c.lab().double_calls(g);
    let at = |what: &str| {
        calls.iter().position(|l| l.starts_with(what)).unwrap_or_else(|| panic!("no `{what}` in {calls:?}"))
    };
    // The manual's order: setup, GPU pre-install (headers), driver, RKE2.
    assert!(at("hostnamectl set-hostname cop-gpu-2") < at("modprobe overlay"));
    assert!(at("modprobe overlay") < at("apt-get install -y -q linux-headers-"));
    assert!(at("apt-get install -y -q linux-headers-") < at("nvidia-installer"));
    assert!(at("nvidia-installer") < at("install.sh INSTALL_RKE2_TYPE=agent"));
    assert!(at("install.sh") < at("rke2 start agent"));
    assert!(cluster_file(&c, "joins").last().unwrap().starts_with("cop-gpu-2 agent"));
    // The operator is the cluster's (not re-installed for a node); the node is labelled and its
    // devices are published.
    assert_eq!(c.lab().double_calls(0).iter().filter(|l| l.starts_with("helm upgrade")).count(), helm_before);
    assert_eq!(
        node_state(&c, "cop-gpu-2", "labels"),
        "nvidia.com/gpu.present=true\nnvidia.com/dra-kubelet-plugin=true"
    );
    assert!(c.lab().root.join("cluster/resourceslices/cop-gpu-2").exists());
}

#[test]
fn a_node_that_never_becomes_ready_stops_the_rolling_restart() {
    let c = installed();
    std::fs::write(c.lab().root.join("cluster/never-ready-cop-worker-1"), "").unwrap();
    let args = ["rolling-restart", "-e", "target_group=workers", "-e", "cordon_nodes=true", "-e", "ready_timeout=3"];
    let ev = c.run_json(&args, 2).events();
    let failed = ev.iter().find(|e| e["status"] == "failed").unwrap();
    assert_eq!(
        (failed["host"].as_str(), failed["step"].as_str()),
        (Some("cop-worker-1"), Some("wait until Ready")),
        "{failed}"
    );
    let run = steps_run(&ev);
    assert!(!run.iter().any(|(h, _)| h != "cop-worker-1"), "a second node was touched: {run:?}");
    let cordons: Vec<String> =
        c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("kubectl cordon")).collect();
    assert_eq!(cordons, ["kubectl cordon cop-worker-1"], "no second node cordoned");
}

#[test]
fn secrets_audit_of_a_full_cop_flow_at_vvv_finds_nothing() {
    secrets_audit(Site::cop_cluster(), false);
}

/// The same flow with a non-root login (`deploy`) that becomes root through each host's real
/// sudo with a password: every step, upload and read goes through sudo, and the become password
/// is a secret the hosts' sudo really checks.
#[test]
fn secrets_audit_of_a_full_cop_flow_as_a_sudo_user_finds_nothing() {
    let opts = LabOptions { sudo_user: Some(("deploy".into(), Some(BECOME_PW.into()))), ..Default::default() };
    secrets_audit(Site::cop_cluster_with(opts), true);
}

const BECOME_PW: &str = "B3come-Pw-93ab12";

fn secrets_audit(c: Site, sudo_login: bool) {
    // Known secret values: the registry password and an extra secret in env.yaml, a become
    // password in the inventory, and (below) the join token RKE2 makes.
    let registry_pw = "Reg1stry-Pw-5f2a9c";
    let ldap_pw = "Ldap-B1nd-7d41e0";
    let become_pw = BECOME_PW;
    c.edit("env.yaml", |env| {
        env.replace("registry_password: change-me", &format!("registry_password: {registry_pw}"))
            .replace("ldap_bind_credential: change-me-too", &format!("ldap_bind_credential: {ldap_pw}"))
    });
    c.edit("inventory.ini", |inv| inv + &format!("ansible_become=true\nansible_become_password={become_pw}\n"));

    let sampler = ArgvSampler::start(c.lab());
    let flow = ["run", "system-setup", "system-dns", "rke2-install", "rke2-private-registry"];
    let o1 = c.test().args(flow).args(["-vvv", "--diff", "--log-file", "trace.log"]).run();
    // A change of the password makes --diff show the registries.yaml change (masked).
    c.edit("env.yaml", |env| env.replace(registry_pw, &format!("{registry_pw}-2")));
    let o2 = c.test().args(["run", "rke2-private-registry", "-vvv", "--diff"]).run();
    let o3 = c.test().args(flow).args(["--output", "json", "-vvv"]).run();
    let argv = sampler.finish();
    assert!(o2.stdout.contains("registries.yaml"), "the diff run showed the change: {}", o2.stdout);
    let token = std::fs::read_to_string(c.lab().root.join("cluster/token")).unwrap().trim().to_string();
    assert!(token.len() > 20);

    // The secrets reached the hosts, in files only root can read ...
    let worker = NAMES.iter().position(|(n, _)| *n == "cop-worker-1").unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (path, secret) in
        [("/etc/rancher/rke2/config.yaml", &token), ("/etc/rancher/rke2/registries.yaml", &format!("{registry_pw}-2"))]
    {
        let p = c.lab().path(worker, path);
        assert!(std::fs::read_to_string(&p).unwrap().contains(secret.as_str()), "{path}");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "{path}");
    }
    assert_eq!(
        std::fs::metadata(c.lab().path(worker, "/etc/rancher/rke2")).unwrap().permissions().mode() & 0o777,
        0o700
    );

    if sudo_login {
        // Logged in as deploy, written as root: the files belong to root, and sudo did it.
        use std::os::unix::fs::MetadataExt;
        for path in ["/etc/rancher/rke2/config.yaml", "/etc/rancher/rke2/registries.yaml"] {
            assert_eq!(std::fs::metadata(c.lab().path(worker, path)).unwrap().uid(), 0, "{path}");
        }
        assert!(argv.iter().any(|a| a.starts_with("sudo -S -p ")), "sudo asked for its password");
    }

    // ... and nowhere else: output, trace log, JSON events, the run record, remote command lines.
    let secrets = [registry_pw, ldap_pw, become_pw, token.as_str()];
    let mut places: Vec<(String, String)> = vec![];
    for (k, o) in [("run 1", &o1), ("diff run", &o2), ("json run", &o3)] {
        places.push((format!("{k} stdout"), o.stdout.clone()));
        places.push((format!("{k} stderr"), o.stderr.clone()));
    }
    places.push(("trace.log".into(), std::fs::read_to_string(c.path("trace.log")).unwrap()));
    places.extend(files_under(&c.path(".copctl")).into_iter().map(|(p, t)| (p.display().to_string(), t)));
    assert!(argv.len() > 100, "the sampler saw the hosts' processes ({})", argv.len());
    places.push(("remote command lines".into(), argv.join("\n")));
    let mut found = vec![];
    for (place, text) in &places {
        for s in secrets {
            if text.contains(s) {
                found.push(format!("{} in {place}", &s[..6]));
            }
        }
    }
    assert!(found.is_empty(), "secrets found: {found:?}");
    assert!(places[0].1.len() > 1000 && places[6].1.contains("task finished"), "the scanned output is not empty");
    eprintln!(
        "secrets audit: {} places scanned ({} bytes, {} remote command lines), secrets found: 0",
        places.len(),
        places.iter().map(|p| p.1.len()).sum::<usize>(),
        argv.len()
    );
}

/// Sets `key` in the site's env.yaml to `value`, written as a JSON string (YAML reads it back
/// exactly, whatever it holds).
fn set_env(c: &Site, key: &str, value: &str) {
    let line = format!("{key}: {}", serde_json::to_string(value).unwrap());
    c.edit("env.yaml", |env| {
        let mut found = false;
        let mut out: Vec<String> = env
            .lines()
            .map(|l| {
                if l.starts_with(&format!("{key}:")) {
                    found = true;
                    line.clone()
                } else {
                    l.to_string()
                }
            })
            .collect();
        if !found {
            out.push(line.clone());
        }
        out.join("\n") + "\n"
    });
}

#[test]
fn registry_settings_that_break_yaml_reach_registries_yaml_exactly_and_never_the_output() {
    let c = Site::cop_cluster();
    let w1 = NAMES.iter().position(|(n, _)| *n == "cop-worker-1").unwrap();
    // (sub_domain, username, password): YAML's indicators, comments, quotes, escapes, line breaks,
    // a leading *, &, !, %, @, and text YAML would read as another type. Each password holds a
    // marker that must never show in copctl's output, in whatever encoding.
    let cases = [
        ("cop", "0123", "*Qm1x-p@ss: w0rd #not-a-comment \"dq\" 'sq' back\\slash"),
        ("c#p: x", "&anchor", "&Qm2x-first line\nsecond: line\ttab \\n"),
        ("cop\"'\\", "!tag user", "!Qm3x %TAG ! x"),
        ("cop", "null", "%Qm4x-{ flow: [1, 2] } | > ? - ~"),
        ("cop", "yes", "@Qm5x-\u{e9}\u{4e2d} trailing space "),
        ("cop", "- x", " Qm6x-leading space, and true"),
    ];
    for (i, (sub, user, pw)) in cases.iter().enumerate() {
        set_env(&c, "sub_domain", sub);
        set_env(&c, "registry_username", user);
        set_env(&c, "registry_password", pw);
        let log = format!("trace-{i}.log");
        let o = c
            .test()
            .args(["run", "rke2-private-registry", "--limit", "cop-worker-1", "-vvv", "--diff", "--log-file", &log])
            .run();
        let y = yaml_file(&c, w1, "/etc/rancher/rke2/registries.yaml");
        let reg = format!("registry.{sub}.example.com:8443");
        let endpoint = serde_json::json!([format!("https://{reg}")]);
        assert_eq!(y["mirrors"]["docker.io"]["endpoint"], endpoint, "{y}");
        assert_eq!(y["mirrors"][&reg]["endpoint"], endpoint, "{y}");
        assert_eq!(y["configs"][&reg]["auth"]["username"], *user, "{y}");
        assert_eq!(y["configs"][&reg]["auth"]["password"], *pw, "{y}");
        assert_eq!(y["configs"][&reg]["tls"]["ca_file"], "/etc/rancher/rke2/registry-ca.crt", "{y}");
        // The password in none of copctl's output, trace log or run records.
        let marker = format!("Qm{}x", i + 1);
        let mut places = vec![("stdout".to_string(), o.stdout.clone()), ("stderr".to_string(), o.stderr.clone())];
        places.push((log.clone(), std::fs::read_to_string(c.path(&log)).unwrap()));
        places.extend(files_under(&c.path(".copctl")).into_iter().map(|(p, t)| (p.display().to_string(), t)));
        for (place, text) in &places {
            assert!(!text.contains(&marker), "the password of case {i} shows in {place}");
        }
        assert!(o.stdout.contains("registries.yaml"), "{}", o.stdout);
    }
}

#[test]
fn joins_go_to_rke2_server_url_when_set_and_servers_carry_it_in_tls_san() {
    let c = Site::cop_cluster();
    set_env(&c, "rke2_server_url", "https://10.0.0.100:9345");
    c.run_json(&["rke2-install"], 0);
    assert_eq!(cluster_file(&c, "joins").len(), NAMES.len(), "every node joined");
    let addrs: Vec<Value> = (0..3).map(|i| Value::from(c.lab().hosts[i].addr.to_string())).collect();
    for (i, (name, group)) in NAMES.iter().enumerate() {
        let cfg = yaml_file(&c, i, "/etc/rancher/rke2/config.yaml");
        if i == 0 {
            assert!(cfg.get("server").is_none(), "the first server bootstraps: {cfg}");
        } else {
            assert_eq!(cfg["server"], "https://10.0.0.100:9345", "{name}: {cfg}");
        }
        if *group == "masters" {
            let want: Vec<Value> = addrs.iter().cloned().chain([Value::from("10.0.0.100")]).collect();
            assert_eq!(cfg["tls-san"], Value::Array(want), "{name}: {cfg}");
        } else {
            assert!(cfg.get("tls-san").is_none(), "{name}: {cfg}");
        }
    }
    // A registration address that is not https://HOST:PORT stops before any host is touched.
    set_env(&c, "rke2_server_url", "10.0.0.100:9345");
    c.test().args(["run", "rke2-install"]).status(1).stdout("").stderr(
        r#"  x playbooks/rke2-install.yaml:7:1: rke2_server_url must be https://HOST:PORT (e.g. https://10.0.0.100:9345), not '10.0.0.100:9345'
   ,-[playbooks/rke2-install.yaml:7:1]
 6 | require:
 7 |   - that: not (rke2_server_url | default('')) or (rke2_server_url | string | regex_replace('^https://(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]+/?$', '')) == ''
   : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                                                                 `-- this requirement
 8 |     msg: "rke2_server_url must be https://HOST:PORT (e.g. https://10.0.0.100:9345), not '{{ rke2_server_url }}'"
   `----
  help: rke2-install requires: not (rke2_server_url | default('')) or (rke2_server_url | string | regex_replace('^https://(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]+/?$', '')) == ''; fix the settings in env.yaml (or -e)

"#,
    ).run();
}

#[test]
fn the_registry_ca_reaches_every_node_before_rke2_restarts_and_a_missing_one_stops_the_plan() {
    let c = installed();
    let ca = std::fs::read(c.path("certs/registry-ca.crt")).unwrap();
    let ev = c.run_json(&["rke2-private-registry"], 0).events();
    use std::os::unix::fs::PermissionsExt;
    for (i, (name, _)) in NAMES.iter().enumerate() {
        let p = c.lab().path(i, "/etc/rancher/rke2/registry-ca.crt");
        assert_eq!(std::fs::read(&p).unwrap(), ca, "{name}");
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o644, "{name}");
        let reg = yaml_file(&c, i, "/etc/rancher/rke2/registries.yaml");
        assert_eq!(
            reg["configs"]["registry.cop.example.com:8443"]["tls"]["ca_file"],
            "/etc/rancher/rke2/registry-ca.crt"
        );
        // RKE2 ran: registries.yaml was new, so the node restarted, after its CA was in place.
        let steps: Vec<String> = steps_run(&ev).into_iter().filter(|(h, _)| h == name).map(|(_, s)| s).collect();
        let at = |s: &str| steps.iter().position(|x| x == s).unwrap_or_else(|| panic!("{name}: no `{s}` in {steps:?}"));
        assert!(
            at("registry CA") < at("registries.yaml") && at("registries.yaml") < at("restart rke2"),
            "{name}: {steps:?}"
        );
    }
    // Nothing changed: a re-run restarts nothing (the imported restart steps are all skipped).
    let ran = c.run_json(&["rke2-private-registry"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    let restarted: Vec<(String, String)> =
        steps_run(&ran.events()).into_iter().filter(|(_, s)| s == "restart rke2" || s == "wait until Ready").collect();
    assert!(restarted.is_empty(), "{restarted:?}");
    // A CA that is not on the bastion stops the run before any host is touched.
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    std::fs::remove_file(c.path("certs/registry-ca.crt")).unwrap();
    c.test().args(["run", "rke2-private-registry"]).status(1).stdout("").stderr_normalized(
        r#"  x playbooks/rke2-private-registry.yaml:9:1: registry_ca_file [SITE]/certs/registry-ca.crt is not a file on the bastion: copy the registry's CA certificate there, or set registry_ca_file: '' to skip TLS verification
    ,-[playbooks/rke2-private-registry.yaml:9:1]
  8 |     msg: "registry_ca_file must be an absolute path on the bastion (it is '{{ registry_ca_file }}')"
  9 |   - that: not (registry_ca_file | default('')) or registry_ca_file is file
    : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    :                                      `-- this requirement
 10 |     msg: "registry_ca_file {{ registry_ca_file }} is not a file on the bastion: copy the registry's CA certificate there, or set registry_ca_file: '' to skip TLS verification"
    `----
  help: rke2-private-registry requires: not (registry_ca_file | default('')) or registry_ca_file is file; fix the settings in env.yaml (or -e)

"#,
    ).run();
    c.test().args(["validate", "rke2-private-registry"]).status(1).stdout("").run();
    for i in 0..NAMES.len() {
        assert_eq!(c.lab().double_calls(i), before[i], "{} was touched", NAMES[i].0);
    }
}

/// Calls the doubles logged on each lab host since `before` (what `calls_now` returned then).
fn new_calls(c: &Site, before: &[Vec<String>]) -> Vec<Vec<String>> {
    (0..NAMES.len()).map(|i| c.lab().double_calls(i)[before[i].len()..].to_vec()).collect()
}

fn calls_now(c: &Site) -> Vec<Vec<String>> {
    (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect()
}

/// A pod on `node` with these labels, as the kubectl double reads them (tests/doubles/README.md).
fn pod(c: &Site, node: &str, ns_name: &str, labels: &str) {
    let dir = c.lab().root.join("cluster/pods").join(node);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{ns_name}.pod")), labels).unwrap();
}

/// A PodDisruptionBudget `ns_name` (`app_web`) selecting `labels`, allowing `allowed` disruptions.
fn pdb(c: &Site, ns_name: &str, labels: &str, allowed: u32) {
    let dir = c.lab().root.join("cluster/pdbs").join(ns_name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("selector"), labels).unwrap();
    std::fs::write(dir.join("disruptions-allowed"), format!("{allowed}\n")).unwrap();
}

fn pods_on(c: &Site, node: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(c.lab().root.join("cluster/pods").join(node))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn node_drain_leaves_the_node_cordoned_and_drained_and_touches_no_other_node() {
    let c = installed();
    pod(&c, "cop-worker-2", "app_web-1", "app=web\n");
    pod(&c, "cop-worker-2", "app_api-1", "app=api\n");
    pod(&c, "cop-worker-1", "app_web-2", "app=web\n");
    let before = calls_now(&c);
    let out = c.test().args(["node", "drain", "cop-worker-2"]).run().stdout;
    assert!(
        out.ends_with(
            "cop-worker-2 is drained and cordoned: do the maintenance, then `copctl node uncordon cop-worker-2` \
             (other procedures leave this cordon alone)\n"
        ),
        "{out}"
    );
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "true");
    assert_eq!(node_state(&c, "cop-worker-2", "annotations"), "copctl.openmaru.io/cordoned=held");
    assert_eq!(pods_on(&c, "cop-worker-2"), Vec::<String>::new(), "drained");
    assert_eq!(pods_on(&c, "cop-worker-1"), ["app_web-2.pod"], "another node's pods stay");
    // kubectl ran on the first server and changed only cop-worker-2; no other host, the node
    // itself included, saw a single call.
    let new = new_calls(&c, &before);
    for (i, (name, _)) in NAMES.iter().enumerate() {
        if i == 0 {
            assert!(!new[0].is_empty());
            for l in &new[0] {
                let read = l.starts_with("kubectl get ");
                assert!(read || l.contains(" cop-worker-2"), "{name}: `{l}` changes another node");
                assert!(l.starts_with("kubectl "), "{name}: {l}");
            }
            let changes: Vec<&String> = new[0].iter().filter(|l| !l.starts_with("kubectl get ")).collect();
            assert_eq!(
                changes,
                [
                    "kubectl cordon cop-worker-2",
                    "kubectl annotate node cop-worker-2 copctl.openmaru.io/cordoned=held --overwrite",
                    "kubectl drain cop-worker-2 --ignore-daemonsets --delete-emptydir-data --timeout=300s"
                ]
            );
        } else {
            assert_eq!(new[i], Vec::<String>::new(), "{name} was touched");
        }
        if *name != "cop-worker-2" {
            assert_eq!(node_state(&c, name, "unschedulable"), "false", "{name}");
        }
    }
}

#[test]
fn node_uncordon_lifts_any_cordon_and_says_when_it_was_not_copctls() {
    let c = installed();
    // copctl node drain's cordon outlives other procedures: a rolling restart leaves it.
    c.test().args(["node", "drain", "cop-worker-2"]).run();
    let args = ["rolling-restart", "-e", "target_group=workers", "-e", "cordon_nodes=true"];
    c.run_json(&args, 0);
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "true", "the rolling restart kept the held cordon");
    assert_eq!(node_state(&c, "cop-worker-1", "unschedulable"), "false");
    let before = calls_now(&c);
    let out = c.test().args(["node", "uncordon", "cop-worker-2"]).run().stdout;
    assert!(!out.contains("WARNING"), "{out}");
    assert!(out.ends_with("cop-worker-2 is uncordoned: pods can be scheduled on it again\n"), "{out}");
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "false");
    assert_eq!(node_state(&c, "cop-worker-2", "annotations"), "", "copctl's mark is gone");
    // An administrator's cordon (no copctl mark): lifted as asked, and said so.
    std::fs::write(c.lab().root.join("cluster/nodes/cop-worker-3/unschedulable"), "true\n").unwrap();
    let out = c.test().args(["node", "uncordon", "cop-worker-3"]).run().stdout;
    let warning = "WARNING: [cop-worker-3 -> cop-master-1] uncordon › uncordon: cop-worker-3 was cordoned by someone \
                   else, not copctl (no copctl.openmaru.io/cordoned annotation): uncordoning it as asked\n";
    assert!(out.contains(warning), "{out}");
    assert!(out.ends_with("cop-worker-3 is uncordoned: pods can be scheduled on it again\n"), "{out}");
    assert_eq!(node_state(&c, "cop-worker-3", "unschedulable"), "false");
    // Only kubectl on the first server, only about these two nodes.
    let new = new_calls(&c, &before);
    let changes: Vec<&String> = new[0].iter().filter(|l| !l.starts_with("kubectl get ")).collect();
    assert_eq!(
        changes,
        [
            "kubectl uncordon cop-worker-2",
            "kubectl annotate node cop-worker-2 copctl.openmaru.io/cordoned-",
            "kubectl uncordon cop-worker-3"
        ]
    );
    assert!(new[1..].iter().all(Vec::is_empty), "{new:?}");
    // Not cordoned at all: nothing to do.
    let ran = c.run_json(&["node-uncordon", "-e", "node=cop-worker-1", "--limit", "cop-worker-1"], 0);
    assert_eq!(changed_by_host(&ran)["cop-worker-1"], 0);
}

#[test]
fn a_pdb_allowing_no_disruption_is_named_the_drain_times_out_and_the_run_stops() {
    let c = installed();
    pod(&c, "cop-worker-2", "app_web-1", "app=web\ntier=front\n");
    pod(&c, "cop-worker-2", "app_api-1", "app=api\n");
    pdb(&c, "app_web", "app=web\n", 0);
    pdb(&c, "app_api", "app=api\n", 1);
    let args = ["rolling-restart", "-e", "target_group=workers", "-e", "drain_nodes=true", "-e", "drain_timeout=2"];
    let ev = c.run_json(&args, 2).events();
    let end = |host: &str, step: &str| {
        ev.iter()
            .position(|e| e["event"] == "task_end" && e["host"] == host && e["step"] == step)
            .unwrap_or_else(|| panic!("no {step} on {host}"))
    };
    // Named before the drain begins, with the budget and its pod.
    let check = &ev[end("cop-worker-2", "disruption budgets")];
    assert_eq!(
        check["warnings"],
        serde_json::json!([
            "PodDisruptionBudget app/web allows no disruption (disruptionsAllowed: 0): the drain of cop-worker-2 cannot \
             evict app/web-1 until it does"
        ]),
        "{check}"
    );
    let drain_start = ev
        .iter()
        .position(|e| e["event"] == "task_start" && e["host"] == "cop-worker-2" && e["step"] == "drain")
        .unwrap();
    assert!(end("cop-worker-2", "disruption budgets") < drain_start);
    assert!(ev[end("cop-worker-1", "disruption budgets")].get("warnings").is_none(), "nothing to say for worker-1");
    // The drain timed out: the pod the budget allows to go went, the other stayed; the node is
    // schedulable again and the run stopped there, with the whole story in one message.
    assert_eq!(pods_on(&c, "cop-worker-2"), ["app_web-1.pod"]);
    assert_eq!(node_state(&c, "cop-worker-2", "unschedulable"), "false");
    let failed: Vec<&Value> = ev.iter().filter(|e| e["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        (failed[0]["host"].as_str(), failed[0]["step"].as_str()),
        (Some("cop-worker-2"), Some("stop on a failed drain"))
    );
    assert_eq!(
        failed[0]["msg"],
        "drain of cop-worker-2 failed (drain cop-worker-2: error when evicting pods/\"web-1\" -n \"app\": global timeout \
         reached: 2s; a PodDisruptionBudget refused the evictions): cop-worker-2 uncordoned, stopping here; make room \
         for the pods (or wait for their budget), or -e drain_disable_eviction=true deletes them regardless of it"
    );
    let run = steps_run(&ev);
    assert!(run.iter().any(|(h, s)| h == "cop-worker-2" && s == "uncordon after a failed drain"), "{run:?}");
    assert!(!run.iter().any(|(h, s)| h == "cop-worker-2" && s == "restart rke2"), "{run:?}");
    assert!(!run.iter().any(|(h, _)| h == "cop-worker-3"), "the run goes no further: {run:?}");

    // Explicitly asked: the pods are deleted instead of evicted, bypassing the budget.
    let ev = c.run_json(&[&args[..], &["-e", "drain_disable_eviction=true"]].concat(), 0).events();
    assert_eq!(pods_on(&c, "cop-worker-2"), Vec::<String>::new());
    let check = &ev[ev
        .iter()
        .position(|e| e["host"] == "cop-worker-2" && e["step"] == "disruption budgets" && e["event"] == "task_end")
        .unwrap()];
    assert_eq!(
        check["warnings"],
        serde_json::json!([
            "app/web protects app/web-1 on cop-worker-2: disable_eviction deletes them anyway, bypassing the budget"
        ])
    );
    let drains: Vec<String> =
        c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("kubectl drain cop-worker-2")).collect();
    assert_eq!(
        drains,
        [
            "kubectl drain cop-worker-2 --ignore-daemonsets --delete-emptydir-data --timeout=2s",
            "kubectl drain cop-worker-2 --ignore-daemonsets --delete-emptydir-data --timeout=2s --disable-eviction"
        ]
    );
    assert!(steps_run(&ev).iter().any(|(h, s)| h == "cop-worker-3" && s == "restart rke2"));
    assert!(NAMES.iter().all(|(n, _)| node_state(&c, n, "unschedulable") == "false"));
}

#[test]
fn rolling_reboot_takes_servers_one_at_a_time_and_agents_in_batches_after_the_package_upgrade() {
    let mut c = installed();
    std::fs::write(c.lab().root.join("cluster/ready-delay-ms"), "1000").unwrap();
    let start = cluster_events(&c).len();
    let before = calls_now(&c);
    let args = [
        "run",
        "rolling-reboot",
        "-e",
        "target_group=masters:workers",
        "-e",
        "worker_batch=2",
        "-e",
        "upgrade_packages=true",
        "--output",
        "json",
    ];
    let (code, ev) = run_rebooting(&mut c, &args, std::time::Duration::from_millis(1500));
    assert_eq!(code, Some(0));
    assert_eq!(cluster_file(&c, "restart-violations"), Vec::<String>::new());
    let log: Vec<Event> = cluster_events(&c).into_iter().skip(start).collect();
    // (node, type, down, back), in the order they went down.
    let mut reboots: Vec<(String, String, u128, u128)> = vec![];
    for e in &log {
        match e.what.as_str() {
            "reboot-begin" => reboots.push((e.args[0].clone(), e.args[1].clone(), e.at, 0)),
            "reboot-end" => {
                let r = reboots.iter_mut().find(|r| r.0 == e.args[0] && r.3 == 0).expect("a reboot began");
                r.3 = e.at;
            }
            _ => {}
        }
    }
    let order: Vec<&str> = reboots.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(order.len(), 6, "each server and worker once, no GPU node: {order:?}");
    assert_eq!(order[..3], ["cop-master-1", "cop-master-2", "cop-master-3"], "servers first, in order");
    assert!(reboots.iter().all(|r| r.3 > 0), "every node came back: {reboots:?}");
    let seen = |what: &str, args: &[&str], after: u128, before: u128| {
        log.iter().any(|e| e.what == what && e.args == args && e.at > after && e.at < before)
    };
    // A server goes down only once the one before is back, Ready, and etcd is healthy.
    for i in 0..3 {
        let (s, next) = (&reboots[i], reboots[i + 1].2);
        assert!(s.3 < next, "{} was still down when the next node went down", s.0);
        assert!(seen("ready", &[s.0.as_str(), "True"], s.3, next), "{} not seen Ready before the next reboot", s.0);
        assert!(seen("etcd", &["ok"], s.3, next), "etcd not seen healthy after {} and before the next reboot", s.0);
    }
    // Workers in batches of two: worker-1 and -2 down together; worker-3 after both are back.
    let w = |n: &str| reboots.iter().find(|r| r.0 == n).unwrap();
    let (w1, w2, w3) = (w("cop-worker-1"), w("cop-worker-2"), w("cop-worker-3"));
    assert!(w1.2 < w2.3 && w2.2 < w1.3, "worker-1 and worker-2 were not down at the same time: {reboots:?}");
    for b in [w1, w2] {
        assert!(seen("ready", &[b.0.as_str(), "True"], b.3, w3.2), "{} not Ready before worker-3 went down", b.0);
    }
    // On each node: the upgrade, then the reboot; nothing on the GPU nodes; all uncordoned.
    let new = new_calls(&c, &before);
    for (i, (name, group)) in NAMES.iter().enumerate() {
        let at = |p: &str| new[i].iter().position(|l| l.starts_with(p));
        if *group == "gpu" {
            assert_eq!(at("reboot"), None, "{name}: {:?}", new[i]);
            continue;
        }
        let upgrade = at("apt-get upgrade -y -q --with-new-pkgs").unwrap_or_else(|| panic!("{name}: {:?}", new[i]));
        assert!(at("apt-get update -q").unwrap() < upgrade);
        assert!(upgrade < at("reboot").unwrap(), "{name}: {:?}", new[i]);
        assert_eq!(node_state(&c, name, "unschedulable"), "false", "{name}");
    }
    let k = |p: &str| c.lab().double_calls(1).iter().filter(|l| l.starts_with(p)).count();
    assert_eq!((k("kubectl cordon cop-master-1"), k("kubectl uncordon cop-master-1")), (1, 1), "from another server");
    assert!(ev.iter().filter(|e| e["step"] == "reboot" && e["status"] == "changed").count() == 6);
}

/// The manual's first install, as `copctl install` prints it before it starts.
const INSTALL_ORDER: &str = "install, in this order:\n  1. system-setup\n  2. system-dns\n  3. gpu-preinstall\n  \
                             4. gpu-install\n  5. rke2-install\n  6. rke2-post-install\n  7. rke2-private-registry\n  \
                             8. gpu-operator\n";

#[test]
fn install_runs_the_manuals_first_install_in_order_and_a_rerun_changes_nothing() {
    let c = Site::cop_cluster();
    let ran = c.test().args(["install", "--output", "json"]).run();
    assert!(ran.stderr.starts_with(INSTALL_ORDER), "{}", ran.stderr);
    let ev = ran.events();
    let order: Vec<&str> = INSTALL_ORDER.lines().skip(1).map(|l| l.split(". ").nth(1).unwrap()).collect();
    assert_eq!(ev[0]["playbooks"], serde_json::json!(order));
    // Each host goes through its playbooks in the install's order.
    for (name, group) in NAMES {
        let mut seen: Vec<&str> = Vec::new();
        for e in ev.iter().filter(|e| e["event"] == "task_start" && e["host"] == *name) {
            let pb = e["playbook"].as_str().unwrap();
            if seen.last() != Some(&pb) {
                assert!(!seen.contains(&pb), "{name} went back to {pb} after {seen:?}");
                seen.push(pb);
            }
        }
        let rank = |p: &&str| order.iter().position(|o| o == p).unwrap();
        assert!(seen.is_sorted_by_key(rank), "{name}: {seen:?}");
        let want: Vec<&str> = match *group {
            "gpu" => order.clone(),
            // The GPU Operator's release is the cluster's: installed from the first server.
            _ => order
                .iter()
                .copied()
                .filter(|p| !p.starts_with("gpu-") || (*p == "gpu-operator" && *name == "cop-master-1"))
                .collect(),
        };
        assert_eq!(seen, want, "{name}");
    }
    let joined: std::collections::BTreeSet<String> =
        cluster_file(&c, "joins").iter().map(|l| l.split_whitespace().next().unwrap().to_string()).collect();
    assert_eq!(joined, NAMES.iter().map(|(n, _)| n.to_string()).collect());
    // Again: nothing changes.
    let again = c.test().args(["install", "--output", "json"]).run();
    assert!(changed_by_host(&again).values().all(|n| *n == 0), "{:?}", changed_by_host(&again));
}

#[test]
fn a_failed_install_names_the_playbook_to_resume_from_and_resumes_there() {
    let c = Site::cop_cluster();
    // An images archive that no longer matches its sha256sum: rke2-install stops on the first server.
    let images = c.path("artifacts/rke2-images.linux-amd64.tar.zst");
    let good = std::fs::read(&images).unwrap();
    std::fs::write(&images, vec![8u8; 3 << 20]).unwrap();
    let ran = c.test().args(["install", "--limit", "cluster"]).status(2).run();
    assert!(
        ran.stdout.ends_with(
            "install stopped in rke2-install (failed: cop-master-1): fix the cause, then resume with \
             `copctl install --from rke2-install --limit cluster`\n"
        ),
        "{}",
        ran.stdout
    );
    std::fs::write(&images, good).unwrap();
    let ran = c.test().args(["install", "--from", "rke2-install", "--limit", "cluster", "--output", "json"]).run();
    assert_eq!(
        ran.stderr.lines().take(5).collect::<Vec<_>>(),
        [
            "install from rke2-install (--from), in this order:",
            "  1. rke2-install",
            "  2. rke2-post-install",
            "  3. rke2-private-registry",
            "  4. gpu-operator"
        ]
    );
    let ev = ran.events();
    assert_eq!(
        ev[0]["playbooks"],
        serde_json::json!(["rke2-install", "rke2-post-install", "rke2-private-registry", "gpu-operator"])
    );
    let joined: std::collections::BTreeSet<String> =
        cluster_file(&c, "joins").iter().map(|l| l.split_whitespace().next().unwrap().to_string()).collect();
    assert_eq!(joined, NAMES.iter().map(|(n, _)| n.to_string()).collect());
}
