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
    // Only asked whether it is Ready (the server doing the cluster's work is found when the run
    // connects); nothing else.
    let after = c.lab().double_calls(0);
    assert_eq!(
        after[before.len()..],
        ["kubectl get node cop-master-1 -o jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"],
        "the first server was not touched"
    );
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

/// Sets env.yaml's `key:` line to `key: value` (the lab's env.yaml is the example site's).
fn set_env(c: &Site, key: &str, value: &str) {
    c.edit("env.yaml", |t| {
        let line =
            t.lines().find(|l| l.starts_with(&format!("{key}:"))).unwrap_or_else(|| panic!("no {key} in env.yaml"));
        t.replacen(line, &format!("{key}: {value}"), 1)
    });
}

/// The failed tasks of a run: (host, step, message).
fn failures(ran: &Ran) -> Vec<(String, String, String)> {
    ran.events()
        .iter()
        .filter(|e| e["status"] == "failed")
        .map(|e| {
            (
                e["host"].as_str().unwrap_or_default().to_string(),
                e["step"].as_str().unwrap_or_default().to_string(),
                e["msg"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// (host, status) of each run of `step`, sorted.
fn step_status(ran: &Ran, step: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ran
        .events()
        .iter()
        .filter(|e| e["event"] == "task_end" && e["step"] == step)
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["status"].as_str().unwrap().to_string()))
        .collect();
    v.sort();
    v
}

/// The last `helm upgrade --install RELEASE` the first server ran.
fn last_upgrade(c: &Site, release: &str) -> String {
    let p = format!("helm upgrade --install {release} ");
    helm_calls(c).into_iter().rev().find(|l| l.starts_with(&p)).unwrap_or_else(|| panic!("no `{p}`"))
}

fn cluster(c: &Site, rel: &str) -> String {
    std::fs::read_to_string(c.lab().root.join("cluster").join(rel)).unwrap_or_default()
}

/// `kubectl ARGS` as the first server answers it (the doubles' cluster state).
fn kubectl(c: &Site, args: &str) -> String {
    c.lab().sh(0, &format!("kubectl {args}"))
}

/// The devices of `node`'s resource slices, as kubectl lists them.
fn slice_devices(c: &Site, node: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(&kubectl(c, "get resourceslices -o json")).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["spec"]["nodeName"] == node)
        .flat_map(|s| s["spec"]["devices"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn dra_sharing_is_installed_from_the_chart_and_every_gpu_node_in_the_limit_publishes_shareable_devices() {
    let c = Site::cop_cluster();
    set_env(&c, "gpu_dra_sharing_enabled", "true");
    set_env(&c, "gpu_dra_driver_version", "\"25.12.0\"");
    cop_site::write_dra_chart(&c.path("charts"), "25.12.0", true);
    // Two models: cop-gpu-2 holds two H100s.
    c.write("host_vars/cop-gpu-1.yml", "gpu_model: NVIDIA H200\n");
    c.write("host_vars/cop-gpu-2.yml", "gpu_model: \"NVIDIA H100 80GB HBM3\"\n");
    c.run_json(&["rke2-install", "rke2-private-registry"], 0);
    std::fs::write(
        c.lab().root.join("cluster/nodes/cop-gpu-2/gpus"),
        "gpu-0|NVIDIA H100 80GB HBM3|81559|GPU-5b1c0d2e-0000-4000-8000-000000000001|\n\
         gpu-1|NVIDIA H100 80GB HBM3|81559|GPU-5b1c0d2e-0000-4000-8000-000000000002|\n",
    )
    .unwrap();
    let ran = c.run_json(&["gpu-operator"], 0);
    // The driver's sharing settings, read from the chart before anything was installed, passed
    // to its install (and the image check) only; the operator's values are without them.
    let dra = last_upgrade(&c, "dra-driver-nvidia-gpu");
    assert!(
        dra.starts_with(
            "helm upgrade --install dra-driver-nvidia-gpu /var/tmp/copctl-charts/nvidia-dra-driver-gpu-25.12.0.tgz "
        ) && dra.contains(" --set featureGates.ConsumableShares=true --set consumableShares=memory "),
        "{dra}"
    );
    assert!(!last_upgrade(&c, "gpu-operator").contains("ConsumableShares"));
    let helm = helm_calls(&c);
    let tpl = helm.iter().find(|l| l.contains("helm template copctl-image-check") && l.contains("25.12.0")).unwrap();
    assert!(tpl.contains("--set featureGates.ConsumableShares=true --set consumableShares=memory"), "{tpl}");
    assert_eq!(step_status(&ran, "the DRA driver chart shares devices"), [("cop-master-1".into(), "ok".into())]);
    // Every device of both nodes shareable, with its memory as capacity.
    for (node, n) in [("cop-gpu-1", 1), ("cop-gpu-2", 2)] {
        let devs = slice_devices(&c, node);
        assert_eq!(devs.len(), n, "{devs:?}");
        for d in devs {
            assert_eq!(d["allowMultipleAllocations"], true, "{d}");
            assert!(d["capacity"]["memory"]["requestPolicy"].is_object(), "{d}");
        }
    }
    assert_eq!(
        step_status(&ran, "the node's devices are shareable"),
        [("cop-gpu-1".into(), "ok".into()), ("cop-gpu-2".into(), "ok".into())]
    );
    // A device class per model, beside gpu.nvidia.com, selecting that model.
    let classes: Value = serde_json::from_str(&kubectl(&c, "get deviceclasses -o json")).unwrap();
    let mut names: Vec<&str> =
        classes["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["gpu.nvidia.com", "mig.nvidia.com", "nvidia-h100-80gb-hbm3", "nvidia-h200"]);
    let h200 = classes["items"].as_array().unwrap().iter().find(|o| o["metadata"]["name"] == "nvidia-h200").unwrap();
    assert_eq!(h200["metadata"]["labels"]["app.kubernetes.io/managed-by"], "copctl");
    assert_eq!(
        h200["spec"]["selectors"],
        serde_json::json!([{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"}}])
    );
    assert_eq!(
        step_status(&ran, "the node's GPU model device class"),
        [("cop-gpu-1".into(), "changed".into()), ("cop-gpu-2".into(), "changed".into())]
    );

    // A re-run changes nothing: the classes are unchanged, the releases up to date.
    let ran = c.run_json(&["gpu-operator"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    assert_eq!(
        step_status(&ran, "the node's GPU model device class"),
        [("cop-gpu-1".into(), "ok".into()), ("cop-gpu-2".into(), "ok".into())]
    );

    // The driver running without its sharing values: the check names the node and what its
    // slice says; --limit cop-gpu-1 checks cop-gpu-1 only.
    let values = c.lab().root.join("cluster/helm/nvidia-dra-driver-gpu/dra-driver-nvidia-gpu.values");
    let v = std::fs::read_to_string(&values).unwrap();
    std::fs::write(&values, v.replace("featureGates.ConsumableShares=true\n", "")).unwrap();
    let before = c.lab().double_calls(0).len();
    let ran =
        c.run_json(&["gpu-operator", "--limit", "cop-gpu-1", "-e", "gpu_wait_retries=1", "-e", "gpu_wait_delay=0"], 2);
    assert_eq!(
        failures(&ran),
        [(
            "cop-gpu-1".to_string(),
            "the node's devices are shareable".to_string(),
            "cop-gpu-1's resource slice publishes gpu-0 without allowMultipleAllocations (not shareable): the DRA driver runs \
             without consumable shares; its release needs featureGates.ConsumableShares=true and consumableShares (helm get \
             values dra-driver-nvidia-gpu -n nvidia-dra-driver-gpu), and the node's kubelet the DRAConsumableCapacity feature \
             gate (rke2-install with gpu_dra_sharing_enabled: true)"
                .to_string()
        )]
    );
    let new = &c.lab().double_calls(0)[before..];
    assert!(!new.iter().any(|l| l.contains("cop-gpu-2")), "{new:?}");
    assert!(step_status(&ran, "shareable devices in the node's resource slices").iter().all(|(h, _)| h == "cop-gpu-1"));
}

#[test]
fn dra_sharing_with_a_driver_chart_lacking_consumable_shares_stops_before_anything_is_installed() {
    let c = Site::cop_cluster();
    set_env(&c, "gpu_dra_sharing_enabled", "true");
    c.run_json(&["rke2-install", "rke2-private-registry"], 0);
    // The lab's 25.8.0 chart has no consumableShares; neither has this one's values.yaml.
    for archive in [None, Some("25.9.0")] {
        let mut args = vec!["gpu-operator"];
        if let Some(v) = archive {
            cop_site::write_dra_chart(&c.path("charts"), v, false);
            args.extend(["-e", "gpu_dra_driver_version=25.9.0"]);
        }
        let version = archive.unwrap_or("25.8.0");
        let ran = c.run_json(&args, 2);
        assert_eq!(
            failures(&ran),
            [(
                "cop-master-1".to_string(),
                "the DRA driver chart shares devices".to_string(),
                format!(
                    "DRA sharing (gpu_dra_sharing_enabled) needs the DRA driver chart's consumableShares setting, and \
                     nvidia-dra-driver-gpu {version} ({}) has no consumableShares in its values.yaml: set \
                     gpu_dra_driver_version to a chart version that has it, or gpu_dra_sharing_enabled: false; nothing was installed",
                    c.path(&format!("charts/nvidia-dra-driver-gpu-{version}.tgz")).display()
                )
            )]
        );
        // Neither the image check nor an install ran.
        assert!(!helm_calls(&c).iter().any(|l| l.starts_with("helm template") || l.starts_with("helm upgrade")));
        assert!(!c.lab().root.join("cluster/helm").exists());
    }
}

#[test]
fn time_slicing_configures_the_device_plugin_and_each_gpu_node_advertises_devices_times_replicas() {
    let c = Site::cop_cluster();
    set_env(&c, "gpu_dra_enabled", "false");
    set_env(&c, "gpu_time_slicing_enabled", "true");
    set_env(&c, "gpu_time_slicing_replicas", "3");
    c.run_json(&["rke2-install", "rke2-private-registry"], 0);
    // cop-gpu-2 holds two GPUs, cop-gpu-1 one.
    std::fs::write(
        c.lab().root.join("cluster/nodes/cop-gpu-2/gpus"),
        "gpu-0|NVIDIA H200|143771|GPU-0c1d2e3f-0000-4000-8000-000000000001|\n\
         gpu-1|NVIDIA H200|143771|GPU-0c1d2e3f-0000-4000-8000-000000000002|\n",
    )
    .unwrap();
    let ran = c.run_json(&["gpu-operator"], 0);
    // The operator chart's own device plugin config: a config map with one configuration, the
    // default of every node, sharing nvidia.com/gpu 3 ways.
    let values = cluster(&c, "helm/gpu-operator/gpu-operator.values");
    assert!(
        values.contains(
            "devicePlugin.enabled=true\n" //
        ) && values.contains(
            "devicePlugin.config.create=true\ndevicePlugin.config.name=time-slicing-config\ndevicePlugin.config.default=any\n\
             devicePlugin.config.data.any=version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 3\n"
        ),
        "{values}"
    );
    assert!(!values.contains("mig."), "{values}");
    assert!(!c.lab().root.join("cluster/helm/nvidia-dra-driver-gpu").exists());
    for (node, want) in [("cop-gpu-1", "3"), ("cop-gpu-2", "6")] {
        assert_eq!(
            kubectl(&c, &format!("get node {node} -o jsonpath='{{.status.allocatable.nvidia\\.com/gpu}}'")),
            want
        );
    }
    assert_eq!(
        step_status(&ran, "every GPU time-sliced"),
        [("cop-gpu-1".into(), "ok".into()), ("cop-gpu-2".into(), "ok".into())]
    );
    // A re-run changes nothing.
    let ran = c.run_json(&["gpu-operator"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));

    // The device plugin without the config: each GPU once. Under --limit, only that node.
    let f = c.lab().root.join("cluster/helm/gpu-operator/gpu-operator.values");
    std::fs::write(&f, values.replace("devicePlugin.config.create=true\n", "")).unwrap();
    let before = c.lab().double_calls(0).len();
    let ran =
        c.run_json(&["gpu-operator", "--limit", "cop-gpu-2", "-e", "gpu_wait_retries=1", "-e", "gpu_wait_delay=0"], 2);
    assert_eq!(
        failures(&ran),
        [(
            "cop-gpu-2".to_string(),
            "every GPU time-sliced".to_string(),
            "cop-gpu-2 has 2 nvidia.com/gpu allocatable, expected 6 (2 GPU(s) in its nvidia.com/gpu.count label x \
             gpu_time_slicing_replicas 3): the device plugin runs without the time-slicing configuration (devicePlugin.config \
             in the gpu-operator release, its config map time-slicing-config in gpu-operator)"
                .to_string()
        )]
    );
    let new = &c.lab().double_calls(0)[before..];
    assert!(!new.iter().any(|l| l.contains("cop-gpu-1")), "{new:?}");
}

#[test]
fn gpu_sharing_settings_are_checked_before_anything_runs() {
    let c = Site::cop_cluster();
    let plan = |args: &[&str]| {
        let mut a = vec!["plan", "gpu-operator"];
        a.extend(args);
        let ran = c.test().args(a).status(1).run();
        ran.stderr.lines().next().unwrap_or_default().to_string()
    };
    assert_eq!(
        plan(&[
            "-e",
            "gpu_dra_enabled=false",
            "-e",
            "gpu_time_slicing_enabled=true",
            "-e",
            "gpu_time_slicing_replicas=1"
        ]),
        "  x playbooks/gpu-operator.yaml:14:1: gpu_time_slicing_replicas must be how many pods share each GPU, 2 or more \
         (1 is a GPU not shared), not '1'"
    );
    assert_eq!(
        plan(&["-e", "gpu_dra_consumable_shares=half"]),
        "  x playbooks/gpu-operator.yaml:12:1: gpu_dra_consumable_shares must be memory (claims request a device's memory), \
         unlimited (any number of claims) or how many claims may share a device (1 or more), not 'half'"
    );
    assert_eq!(
        plan(&["-e", "gpu_mig_strategy=all"]),
        "  x playbooks/gpu-operator.yaml:16:1: gpu_mig_strategy must be none, single (every GPU of a node partitioned alike, \
         its MIG devices advertised as nvidia.com/gpu) or mixed (each MIG profile its own resource), not 'all'"
    );
    assert_eq!(
        plan(&["-e", "gpu_dra_enabled=false", "-e", "gpu_dra_sharing_enabled=true"]),
        "  x playbooks/gpu-operator.yaml:10:1: env.yaml enables DRA sharing (gpu_dra_sharing_enabled) with DRA off \
         (gpu_dra_enabled: false): sharing is the DRA driver's; set gpu_dra_enabled: true, or gpu_dra_sharing_enabled: false"
    );
}

#[test]
fn mig_partitions_the_gpu_nodes_that_name_a_configuration_and_a_failed_one_is_named() {
    let c = Site::cop_cluster();
    set_env(&c, "gpu_mig_strategy", "single");
    c.write("host_vars/cop-gpu-1.yml", "gpu_mig_config: all-1g.10gb\n");
    c.run_json(&["rke2-install", "rke2-private-registry"], 0);
    let ran = c.run_json(&["gpu-operator"], 0);
    let op = last_upgrade(&c, "gpu-operator");
    assert!(op.contains(" --set mig.strategy=single --set migManager.enabled=true"), "{op}");
    // cop-gpu-1 labelled and partitioned: its slice publishes seven MIG devices of one GPU.
    let labels = node_file(&c, "cop-gpu-1", "labels");
    assert!(
        labels.contains("nvidia.com/mig.config=all-1g.10gb\n")
            && labels.contains("nvidia.com/mig.config.state=success\n"),
        "{labels}"
    );
    let devs = slice_devices(&c, "cop-gpu-1");
    assert_eq!(devs.len(), 7, "{devs:?}");
    assert!(
        devs.iter()
            .all(|d| d["attributes"]["type"]["string"] == "mig" && d["attributes"]["profile"]["string"] == "1g.10gb")
    );
    // cop-gpu-2 names no configuration: left whole, never labelled.
    assert!(!node_file(&c, "cop-gpu-2", "labels").contains("mig.config"));
    assert_eq!(slice_devices(&c, "cop-gpu-2").len(), 1);
    assert_eq!(
        step_status(&ran, "the node's GPUs partitioned"),
        [("cop-gpu-1".into(), "ok".into()), ("cop-gpu-2".into(), "skipped".into())]
    );
    let ran = c.run_json(&["gpu-operator"], 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));

    // A configuration the MIG manager does not know: the run stops naming the node and the state;
    // --limit cop-gpu-2 leaves cop-gpu-1 alone.
    c.write("host_vars/cop-gpu-2.yml", "gpu_mig_config: all-9g.99gb\n");
    let before = c.lab().double_calls(0).len();
    let ran =
        c.run_json(&["gpu-operator", "--limit", "cop-gpu-2", "-e", "gpu_wait_retries=1", "-e", "gpu_wait_delay=0"], 2);
    assert_eq!(
        failures(&ran),
        [(
            "cop-gpu-2".to_string(),
            "the node's GPUs partitioned".to_string(),
            "cop-gpu-2's MIG manager did not apply nvidia.com/mig.config=all-9g.99gb: nvidia.com/mig.config.state is failed; \
             gpu_mig_config must name a configuration of the MIG manager's config map (all-disabled, all-1g.10gb, all-2g.20gb, \
             all-3g.40gb, all-7g.80gb, ...) that the node's GPUs support; the nvidia-mig-manager pod's log in gpu-operator says why"
                .to_string()
        )]
    );
    let new = &c.lab().double_calls(0)[before..];
    assert!(!new.iter().any(|l| l.contains("cop-gpu-1")), "{new:?}");
    assert!(
        new.iter().any(|l| l == "kubectl label node cop-gpu-2 nvidia.com/mig.config=all-9g.99gb --overwrite"),
        "{new:?}"
    );
}
