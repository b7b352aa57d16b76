//! The GPU procedures of an air-gapped site on the lab cluster: the GPU Operator and the NVIDIA
//! DRA driver from chart archives with their images checked in the private registry first
//! (issue 15 item 2), and the driver upgrade node by node (item 10). Doubles: helm (charts from
//! files, `template`), curl (the registry's API), kubectl (operand DaemonSet pods following the
//! operator's labels), lsmod/modprobe (a module in use), nvidia-smi, the driver runfile, reboot.

mod common;

use common::cop::run_rebooting;
use common::lab::cop_site::{self, NAMES};
use common::*;
use serde_json::Value;

fn at(name: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == name).unwrap()
}

/// RKE2 installed and the private registry configured: where the GPU procedures start from.
fn registry_ready() -> Site {
    let c = Site::cop_cluster();
    c.run_json(&["rke2-install", "rke2-private-registry"], 0);
    c
}

fn helm_calls(c: &Site) -> Vec<String> {
    c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("helm ")).collect()
}

fn registry(c: &Site) -> std::path::PathBuf {
    c.lab().root.join("cluster/registry/registry.cop.example.com:8443")
}

fn changed_by_host(ran: &Ran) -> std::collections::BTreeMap<String, u64> {
    ran.recap().iter().map(|(h, r)| (h.clone(), r["changed"].as_u64().unwrap())).collect()
}

#[test]
fn the_gpu_operator_installs_from_chart_archives_without_a_helm_repository() {
    let c = registry_ready();
    // Every node's containerd pulls nvcr.io and registry.k8s.io through the private registry.
    let reg = std::fs::read_to_string(c.lab().path(at("cop-gpu-1"), "/etc/rancher/rke2/registries.yaml")).unwrap();
    let reg: Value = serde_saphyr::from_str(&reg).unwrap();
    for upstream in ["docker.io", "nvcr.io", "registry.k8s.io"] {
        assert_eq!(reg["mirrors"][upstream]["endpoint"][0], "https://registry.cop.example.com:8443", "{reg}");
    }
    c.run_json(&["gpu-operator"], 0);
    let helm = helm_calls(&c);
    // No repository anywhere (the helm double has none: `nvidia/...` would be "repo nvidia not
    // found"); the archives copied from the bastion, each image checked before either install.
    assert!(!helm.iter().any(|l| l.contains("nvidia/") || l.starts_with("helm repo")), "{helm:?}");
    let pos = |p: &str| helm.iter().position(|l| l.starts_with(p)).unwrap_or_else(|| panic!("no `{p}` in {helm:?}"));
    assert!(
        pos("helm template copctl-image-check /var/tmp/copctl-charts/nvidia-dra-driver-gpu-25.8.0.tgz")
            < pos("helm upgrade --install gpu-operator /var/tmp/copctl-charts/gpu-operator-v25.10.0.tgz")
    );
    assert!(helm.iter().any(|l| l.starts_with(
        "helm upgrade --install dra-driver-nvidia-gpu /var/tmp/copctl-charts/nvidia-dra-driver-gpu-25.8.0.tgz"
    )));
    let curl: Vec<String> = c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("curl ")).collect();
    for image in cop_site::CHART_IMAGES {
        let url = format!(
            "https://registry.cop.example.com:8443/v2/{}",
            cop_site::registry_path(image).replacen(':', "/manifests/", 1)
        );
        assert!(curl.iter().any(|l| l.ends_with(&url)), "{url} not probed: {curl:?}");
    }
    // The registry password reached curl on its stdin, never its command line.
    assert!(!curl.iter().any(|l| l.contains("change-me")), "{curl:?}");
    // The driver's image is not needed (driver.enabled=false) and not asked for.
    assert!(!curl.iter().any(|l| l.contains("/driver/")), "{curl:?}");
    assert!(c.lab().root.join("cluster/deviceclasses/gpu.nvidia.com").exists());
    // The GPU nodes tainted as group_vars/gpu.yml says (env.yaml's gpu_node_taint), from a
    // server, and only they; the operands of both charts tolerate the taint's key.
    // The GPU nodes run at once: their calls in either order.
    let taints = |c: &Site| -> Vec<String> {
        let mut t: Vec<String> =
            c.lab().double_calls(0).into_iter().filter(|l| l.starts_with("kubectl taint")).collect();
        t.sort();
        t
    };
    assert_eq!(
        taints(&c),
        [
            "kubectl taint node cop-gpu-1 nvidia.com/gpu=present:NoSchedule --overwrite",
            "kubectl taint node cop-gpu-2 nvidia.com/gpu=present:NoSchedule --overwrite"
        ]
    );
    for (node, want) in NAMES
        .iter()
        .map(|(n, _)| (*n, if n.starts_with("cop-gpu") { "nvidia.com/gpu=present:NoSchedule\n" } else { "" }))
    {
        assert_eq!(node_file(&c, node, "taints"), want, "{node}");
    }
    let upgrade = |p: &str| helm.iter().find(|l| l.starts_with(p)).unwrap_or_else(|| panic!("no `{p}` in {helm:?}"));
    for (release, values) in [("gpu-operator", "daemonsets"), ("dra-driver-nvidia-gpu", "kubeletPlugin")] {
        let call = upgrade(&format!("helm upgrade --install {release} "));
        assert!(
            call.contains(&format!("{values}.tolerations[0].key=nvidia.com/gpu"))
                && call.contains(&format!("{values}.tolerations[0].operator=Exists")),
            "{call}"
        );
    }

    // A re-run changes nothing: the release digests (archive sha256 included) are equal, the
    // taints are there. Run by the manual's script name, as an operator following it types.
    let upgrades = helm.iter().filter(|l| l.starts_with("helm upgrade")).count();
    let ran = c.test().args(["run", "450-gpu-operator-install.sh", "--output", "json"]).status(0).run();
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    assert_eq!(helm_calls(&c).iter().filter(|l| l.starts_with("helm upgrade")).count(), upgrades);
    assert_eq!(taints(&c).len(), 2, "{:?}", taints(&c));
    // A taint of another value under the key is replaced.
    std::fs::write(c.lab().root.join("cluster/nodes/cop-gpu-1/taints"), "nvidia.com/gpu=old:NoSchedule\n").unwrap();
    let ran = c.run_json(&["gpu-operator", "--limit", "cop-gpu-1"], 0);
    assert_eq!(changed_by_host(&ran).get("cop-gpu-1"), Some(&1), "{:?}", changed_by_host(&ran));
    assert_eq!(node_file(&c, "cop-gpu-1", "taints"), "nvidia.com/gpu=present:NoSchedule\n");

    // A new archive under the same name is an upgrade of that release only.
    cop_site::write_chart(
        &c.path("charts"),
        "nvidia-dra-driver-gpu",
        "25.8.0",
        &[("extra.yaml", "kind: ConfigMap\nmetadata:\n  name: patched\n")],
    );
    c.run_json(&["gpu-operator"], 0);
    let new: Vec<String> =
        helm_calls(&c).into_iter().filter(|l| l.starts_with("helm upgrade")).skip(upgrades).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].starts_with("helm upgrade --install dra-driver-nvidia-gpu "), "{new:?}");
}

#[test]
fn an_image_missing_from_the_registry_stops_the_install_naming_it_and_nothing_is_installed() {
    let c = registry_ready();
    // The DRA driver's image was never pushed.
    let images = std::fs::read_to_string(registry(&c).join("images")).unwrap();
    std::fs::write(registry(&c).join("images"), images.replace("nvidia/k8s-dra-driver-gpu:v25.8.0\n", "")).unwrap();
    let ran = c.run_json(&["gpu-operator"], 2);
    let failed: Vec<Value> = ran.events().iter().filter(|e| e["status"] == "failed").cloned().collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let msg = failed[0]["msg"].as_str().unwrap();
    assert_eq!(failed[0]["step"], "chart images in the registry");
    assert!(
        msg.starts_with("1 of 6 image(s) the charts use cannot be pulled through the registry: nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0 (https://registry.cop.example.com:8443/v2/nvidia/k8s-dra-driver-gpu/manifests/v25.8.0: 404: not there; https://nvcr.io/v2/nvidia/k8s-dra-driver-gpu/manifests/v25.8.0: unreachable (curl: (6) Could not resolve host: nvcr.io"),
        "{msg}"
    );
    assert!(msg.ends_with("nothing was installed"), "{msg}");
    assert!(!helm_calls(&c).iter().any(|l| l.starts_with("helm upgrade")), "{:?}", helm_calls(&c));
    assert!(!c.lab().root.join("cluster/helm/gpu-operator").exists());

    // Credentials the registry refuses are said as such.
    std::fs::write(registry(&c).join("images"), images).unwrap();
    std::fs::write(registry(&c).join("auth"), "admin:another").unwrap();
    let ran = c.run_json(&["gpu-operator"], 2);
    let text = ran.stdout.clone();
    assert!(
        text.contains("6 of 6 image(s)") && text.contains("401: the registry refused registries.yaml's credentials"),
        "{text}"
    );
    assert!(!helm_calls(&c).iter().any(|l| l.starts_with("helm upgrade")));

    // Without registries.yaml's mirrors (the registry not configured), nothing comes from nvcr.io.
    std::fs::write(registry(&c).join("auth"), "admin:change-me").unwrap();
    std::fs::remove_file(c.lab().path(0, "/etc/rancher/rke2/registries.yaml")).unwrap();
    let text = c.run_json(&["gpu-operator"], 2).stdout;
    assert!(text.contains("https://nvcr.io/v2/nvidia/gpu-operator/manifests/v25.10.0: unreachable"), "{text}");
    assert!(!helm_calls(&c).iter().any(|l| l.starts_with("helm upgrade")));
}

#[test]
fn a_missing_chart_archive_is_an_error_naming_its_path_before_anything_changes() {
    let c = registry_ready();
    let path = c.path("charts/nvidia-dra-driver-gpu-25.8.0.tgz");
    std::fs::remove_file(&path).unwrap();
    let before = c.lab().double_calls(0);
    let ran = c.run_json(&["gpu-operator"], 2);
    let failed: Vec<Value> = ran.events().iter().filter(|e| e["status"] == "failed").cloned().collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["step"], "chart archives on the bastion");
    let msg = failed[0]["msg"].as_str().unwrap();
    assert!(
        msg.starts_with(&format!("chart archive missing on the bastion: {} is not a file;", path.display())),
        "{msg}"
    );
    assert!(msg.ends_with("nothing was installed"), "{msg}");
    assert_eq!(c.lab().double_calls(0), before, "the first server was not touched");
    // Without DRA the DRA driver's archive is not needed.
    c.run_json(&["gpu-operator", "-e", "gpu_dra_enabled=false"], 0);
    assert!(c.lab().root.join("cluster/helm/gpu-operator/gpu-operator").exists());
}

/// The GPU nodes with driver 580.95.05 and the operator installed, its operand pods on them, and
/// the bastion holding driver 590.44.01.
fn gpu_cluster() -> Site {
    let c = registry_ready();
    c.run_json(&["gpu-preinstall", "gpu-install", "gpu-operator"], 0);
    for node in ["cop-gpu-1", "cop-gpu-2"] {
        let pods = c.lab().root.join("cluster/pods").join(node);
        std::fs::create_dir_all(&pods).unwrap();
        for p in [
            "gpu-operator_nvidia-container-toolkit-daemonset-x1",
            "gpu-operator_nvidia-dcgm-exporter-x2",
            "gpu-operator_gpu-operator-node-feature-discovery-worker-x3",
            "nvidia-dra-driver-gpu_dra-driver-nvidia-gpu-kubelet-plugin-x4",
        ] {
            std::fs::write(pods.join(format!("{p}.ds")), "").unwrap();
        }
        std::fs::write(pods.join("app_web-1.pod"), "app=web\n").unwrap();
    }
    std::fs::write(c.path("nvidia/NVIDIA-Linux-x86_64-590.44.01.run"), cop_site::driver_runfile("590.44.01")).unwrap();
    c
}

/// `(host, step)` of every task that ran, in the order they ended.
fn steps_run(ev: &[Value]) -> Vec<(String, String)> {
    ev.iter()
        .filter(|e| e["event"] == "task_end" && e["status"] != "skipped")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string()))
        .collect()
}

fn driver_version(c: &Site, node: &str) -> String {
    std::fs::read_to_string(c.lab().path(at(node), "/var/lib/copctl-doubles/nvidia/version"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn node_file(c: &Site, node: &str, what: &str) -> String {
    std::fs::read_to_string(c.lab().root.join("cluster/nodes").join(node).join(what)).unwrap_or_default()
}

#[test]
fn the_driver_upgrade_takes_gpu_nodes_one_at_a_time_with_the_operator_labelled_off_first() {
    let mut c = gpu_cluster();
    // On cop-gpu-2 a process outside Kubernetes holds the GPU: its module cannot be unloaded.
    std::fs::write(c.lab().path(at("cop-gpu-2"), "/var/lib/copctl-doubles/modules/nvidia.users"), "1").unwrap();
    let args = ["run", "gpu-driver-upgrade", "-e", "gpu_driver_version=590.44.01", "--output", "json"];
    let (code, ev) = run_rebooting(&mut c, &args, std::time::Duration::from_millis(1000));
    assert_eq!(code, Some(0));
    let run = steps_run(&ev);
    // One node at a time, each through the whole sequence.
    let mut order: Vec<&str> = Vec::new();
    for (h, s) in &run {
        if s == "installed driver version" || s == "a driver to upgrade" || s == "decide" {
            continue;
        }
        if order.last() != Some(&h.as_str()) {
            assert!(!order.contains(&h.as_str()), "{h} came back after another node: {run:?}");
            order.push(h);
        }
    }
    assert_eq!(order, ["cop-gpu-1", "cop-gpu-2"]);
    let of = |node: &str| -> Vec<String> {
        run.iter().filter(|(h, _)| h == node).map(|(_, s)| s.clone()).skip(3).collect::<Vec<_>>()
    };
    let common = |reboot: bool| {
        let mut s = vec![
            "GPU work on the node",
            "disruption budgets",
            "cordon",
            "drain",
            "stop on a failed drain",
            "GPU Operator pods off the node",
            "GPU Operator pods gone",
            "unload the driver",
            "remove the old driver",
        ];
        if reboot {
            s.push("reboot to unload the old driver");
        }
        s.extend([
            "staging directory",
            "driver installer from the bastion",
            "install the driver",
            "the driver answers",
            "GPU Operator pods back on the node",
            "wait until Ready",
            "uncordon",
        ]);
        s
    };
    assert_eq!(of("cop-gpu-1"), common(false));
    assert_eq!(of("cop-gpu-2"), common(true));
    // On each node: the operands were gone before the module was unloaded, the new driver
    // answers, the node is back in service with its operand pods.
    for node in ["cop-gpu-1", "cop-gpu-2"] {
        let calls = c.lab().double_calls(at(node));
        let pos = |p: &str| {
            calls.iter().position(|l| l.starts_with(p)).unwrap_or_else(|| panic!("{node}: no `{p}` in {calls:?}"))
        };
        assert!(pos("modprobe -r nvidia_drm") < pos("nvidia-uninstall --silent"));
        assert!(
            pos("nvidia-uninstall --silent") < calls.iter().rposition(|l| l.starts_with("nvidia-installer")).unwrap()
        );
        assert_eq!(driver_version(&c, node), "590.44.01");
        assert_eq!(node_file(&c, node, "unschedulable").trim(), "false");
        let labels = node_file(&c, node, "labels");
        assert!(
            labels.contains("nvidia.com/gpu.deploy.operands=true")
                && labels.contains("nvidia.com/dra-kubelet-plugin=true"),
            "{labels}"
        );
        let pods = c.lab().root.join("cluster/pods").join(node);
        assert!(pods.join("gpu-operator_nvidia-dcgm-exporter-x2.ds").exists(), "the operands came back on {node}");
        assert!(!pods.join("app_web-1.pod").exists(), "{node} was drained");
    }
    assert!(c.lab().double_calls(at("cop-gpu-2")).iter().any(|l| l.starts_with("reboot")));
    assert!(!c.lab().double_calls(at("cop-gpu-1")).iter().any(|l| l.starts_with("reboot")));
    // kubectl ran on a server: the label-out before the drain's end was never after the unload.
    let k = c.lab().double_calls(0);
    let kpos = |p: &str| k.iter().position(|l| l.starts_with(p)).unwrap_or_else(|| panic!("no `{p}` on the server"));
    assert!(
        kpos("kubectl drain cop-gpu-1") < kpos("kubectl label node cop-gpu-1 nvidia.com/gpu.deploy.operands=false")
    );
    assert!(kpos("kubectl uncordon cop-gpu-1") < kpos("kubectl drain cop-gpu-2"));

    // Everything at the wanted version: a re-run changes nothing.
    let ran = c.run_json(&["gpu-driver-upgrade", "-e", "gpu_driver_version=590.44.01"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
}

#[test]
fn the_driver_upgrade_respects_the_limit() {
    let c = gpu_cluster();
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab().double_calls(i)).collect();
    let ev =
        c.run_json(&["gpu-driver-upgrade", "-e", "gpu_driver_version=590.44.01", "--limit", "cop-gpu-2"], 0).events();
    assert_eq!(driver_version(&c, "cop-gpu-2"), "590.44.01");
    assert_eq!(driver_version(&c, "cop-gpu-1"), "580.95.05");
    assert_eq!(c.lab().double_calls(at("cop-gpu-1")), before[at("cop-gpu-1")], "cop-gpu-1 was touched");
    let changed: std::collections::BTreeSet<&str> =
        ev.iter().filter(|e| e["status"] == "changed").map(|e| e["host"].as_str().unwrap()).collect();
    assert_eq!(changed.into_iter().collect::<Vec<_>>(), ["cop-gpu-2"]);
    // kubectl ran on a server for cop-gpu-2 only.
    let new: Vec<String> = c.lab().double_calls(0)[before[0].len()..].to_vec();
    assert!(new.iter().all(|l| !l.contains("cop-gpu-1")), "{new:?}");
    assert!(new.iter().any(|l| l.starts_with("kubectl drain cop-gpu-2")), "{new:?}");
}

#[test]
fn a_harbor_proxy_cache_project_per_upstream_is_a_mirror_rewrite() {
    let t = Test::new()
        .inventory("[local]\nhere ansible_connection=local\n")
        .env(
            "sub_domain: cop\ndomain: example\nTLD: com\nregistry_port: 8443\nregistry_username: admin\n\
             registry_password: pw\nregistry_ca_file: ''\nregistry_mirrors: [docker.io, nvcr.io, registry.k8s.io]\n\
             registry_mirror_projects: {nvcr.io: nvcr}\n",
        )
        .playbook(
            "r",
            "plays:\n  - name: r\n    hosts: all\n    steps:\n      - name: registries.yaml\n        \
             template: { src: rke2/registries.yaml.j2, dest: \"{{ out }}\", mode: \"0600\" }\n",
        );
    let out = t.site().path("registries.yaml");
    // The run holds the site (its directory) while the file is read.
    let _ran = t.args(["run", "r", "-e", &format!("out={}", out.display())]).run();
    let reg: Value = serde_saphyr::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        reg["mirrors"]["nvcr.io"],
        serde_json::json!({"endpoint": ["https://registry.cop.example.com:8443"], "rewrite": {"^(.*)$": "nvcr/$1"}}),
        "{reg}"
    );
    assert_eq!(
        reg["mirrors"]["registry.k8s.io"],
        serde_json::json!({"endpoint": ["https://registry.cop.example.com:8443"]}),
        "{reg}"
    );
}
