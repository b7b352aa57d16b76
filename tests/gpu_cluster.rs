//! `copctl gpu status` and `copctl gpu check` on the lab cluster (issue 39, items 3 and 4): the
//! GPU Operator and the DRA driver installed by gpu-operator, then the cluster read and the
//! chapter's order for using a GPU proven, against the kubectl double's DRA model
//! (tests/doubles/kube-dra: slices, classes, claims, an allocator and pods).

mod common;

use common::lab::cop_site::NAMES;
use common::*;

fn at(name: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == name).unwrap()
}

const CHECK_IMAGE: &str = "nvidia/cuda:12.9.1-base-ubuntu24.04";

/// RKE2, the private registry and the GPU Operator with the DRA driver: where the GPU commands
/// are used; the check's image pushed to the registry.
fn gpu_cluster() -> Site {
    let c = Site::cop_cluster();
    c.run_json(&["rke2-install", "rke2-private-registry", "gpu-operator"], 0);
    let images = c.lab().root.join("cluster/registry/registry.cop.example.com:8443/images");
    let mut list = std::fs::read_to_string(&images).unwrap();
    list.push_str(&format!("{CHECK_IMAGE}\n"));
    std::fs::write(images, list).unwrap();
    c
}

/// kubectl on the first server, as an operator would type it there.
fn kubectl(c: &Site, args: &str, stdin: &str) -> String {
    c.lab().sh(at("cop-master-1"), &format!("kubectl {args} <<'EOF'\n{stdin}\nEOF"))
}

fn workload(ns: &str, claim: &str, pod: &str, node: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}},
{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{pod}","namespace":"{ns}"}},"spec":{{"nodeSelector":{{"kubernetes.io/hostname":"{node}"}},
 "tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],"resourceClaims":[{{"name":"gpu","resourceClaimName":"{claim}"}}],
 "containers":[{{"name":"app","image":"registry.example.com/app:1","resources":{{"claims":[{{"name":"gpu"}}]}}}}]}}}}]}}"#
    )
}

fn claim(ns: &str, name: &str, class: &str) -> String {
    format!(
        r#"{{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{{"name":"{name}","namespace":"{ns}"}},
 "spec":{{"devices":{{"requests":[{{"name":"gpu","exactly":{{"deviceClassName":"{class}","allocationMode":"ExactCount","count":1}}}}]}}}}}}"#
    )
}

fn scratch_namespaces(c: &Site) -> String {
    kubectl(c, "get namespaces -l copctl.openmaru.io/gpu-check -o name", "")
}

#[test]
fn gpu_status_shows_each_nodes_devices_the_claims_and_what_to_look_at() {
    let c = gpu_cluster();
    // Team A: a claim shared by a pod on cop-gpu-1; a claim left allocated with no consumer
    // (written as the cluster state of one: claims/<node>/<name>) on cop-gpu-2; team B: a claim
    // naming a device class that does not exist, and its pod.
    kubectl(&c, "apply -f -", &workload("team-a", "shared-gpu", "trainer", "cop-gpu-1"));
    kubectl(&c, "apply -f -", &claim("team-a", "shared-gpu", "gpu.nvidia.com"));
    std::fs::create_dir_all(c.lab().root.join("cluster/claims/cop-gpu-2")).unwrap();
    std::fs::write(c.lab().root.join("cluster/claims/cop-gpu-2/notebook"), "").unwrap();
    kubectl(&c, "apply -f -", &workload("team-b", "big-gpu", "infer", "cop-gpu-1"));
    kubectl(&c, "apply -f -", &claim("team-b", "big-gpu", "gpu.nvidia.con"));
    c.test().args(["gpu", "status"]).stdout(
        "Device classes: gpu.nvidia.com, mig.nvidia.com\n\
         \n\
         cop-gpu-1\n\
         \x20 DEVICE  MODEL        MEMORY    SHAREABLE  CAPACITY  REQUEST RANGE  MIG  ALLOCATED TO\n\
         \x20 gpu-0   NVIDIA H200  143771Mi  no         -         -              -    team-a/shared-gpu\n\
         \n\
         cop-gpu-2\n\
         \x20 DEVICE  MODEL        MEMORY    SHAREABLE  CAPACITY  REQUEST RANGE  MIG  ALLOCATED TO\n\
         \x20 gpu-0   NVIDIA H200  143771Mi  no         -         -              -    default/notebook\n\
         \n\
         Claims\n\
         \x20 CLAIM              STATE      ALLOCATION       CONSUMERS\n\
         \x20 team-a/shared-gpu  Allocated  cop-gpu-1/gpu-0  team-a/trainer\n\
         \x20 team-b/big-gpu     Pending    -                -\n\
         \x20 default/notebook   Allocated  cop-gpu-2/gpu-0  -\n\
         \n\
         \x20 team-b/big-gpu: no device matches: device class 'gpu.nvidia.con' does not exist (did you mean 'gpu.nvidia.com'?); the cluster's: gpu.nvidia.com, mig.nvidia.com\n\
         \x20 default/notebook: held without use — cleanup candidate\n\
         \n\
         2 device(s) on 2 node(s), 0 free; 2 claim(s) Allocated, 1 Pending, 1 held without use\n",
    ).run();
    let st = c.test().args(["gpu", "status", "--output", "json"]).run().json();
    assert_eq!(st["summary"]["held_without_use"], 1, "{st:#}");
    let dev = &st["nodes"][0]["devices"][0];
    assert_eq!(dev["model"], "NVIDIA H200");
    assert_eq!(dev["shareable"], false);
    assert_eq!(dev["allocated_to"][0]["claim"], "team-a/shared-gpu");
    assert_eq!(st["claims"][0]["consumers"][0], "team-a/trainer");
    // Read-only: what copctl asked of the first server's kubectl are gets, each run the server
    // asked whether it is Ready, then the one read.
    let calls: Vec<String> =
        c.lab().double_calls(at("cop-master-1")).into_iter().filter(|l| l.starts_with("kubectl")).collect();
    let last: Vec<&str> = calls.iter().rev().take(4).rev().map(String::as_str).collect();
    assert_eq!(
        last,
        [
            "kubectl get node cop-master-1 -o jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            "kubectl get deviceclasses,resourceslices,resourceclaims,pods -A -o json",
            "kubectl get node cop-master-1 -o jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            "kubectl get deviceclasses,resourceslices,resourceclaims,pods -A -o json",
        ]
    );
}

#[test]
fn gpu_check_proves_claims_on_every_gpu_node_and_leaves_nothing() {
    let c = gpu_cluster();
    let ran = c.test().args(["gpu", "check", "--timeout", "20"]).run();
    let uuid = |node: &str| -> String {
        let slices = kubectl(&c, "get resourceslices -o json", "");
        let v: serde_json::Value = serde_json::from_str(&slices).unwrap();
        v["items"].as_array().unwrap().iter().find(|s| s["spec"]["nodeName"] == node).unwrap()["spec"]["devices"][0]
            ["attributes"]["uuid"]["string"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (u1, u2) = (uuid("cop-gpu-1"), uuid("cop-gpu-2"));
    assert_eq!(
        ran.stdout,
        format!(
            "cop-gpu-1  shared claim               passed   claim Allocated (cop-gpu-1/gpu-0), check-1 and check-2 Running, both see {u1}\n\
             cop-gpu-1  claim template             passed   claim made from the template and Allocated (cop-gpu-1/gpu-0), check-1 Running, sees {u1}\n\
             cop-gpu-1  sharing across namespaces  skipped  sharing is off (gpu_dra_sharing_enabled: false)\n\
             cop-gpu-2  shared claim               passed   claim Allocated (cop-gpu-2/gpu-0), check-1 and check-2 Running, both see {u2}\n\
             cop-gpu-2  claim template             passed   claim made from the template and Allocated (cop-gpu-2/gpu-0), check-1 Running, sees {u2}\n\
             cop-gpu-2  sharing across namespaces  skipped  sharing is off (gpu_dra_sharing_enabled: false)\n\
             gpu check: 2 node(s), 2 passed, 0 failed\n"
        )
    );
    assert_eq!(scratch_namespaces(&c), "");
    assert_eq!(kubectl(&c, "get resourceclaims -A -o name", ""), "");
    // Placed by nodeSelector, never nodeName; tolerating the GPU nodes' taint; the image from
    // the private registry, checked first.
    let pods: Vec<String> = c.lab().double_calls(at("cop-master-1"));
    let curl =
        pods.iter().position(|l| l.starts_with("curl ") && l.contains("nvidia/cuda/manifests/12.9.1-base-ubuntu24.04"));
    let apply = pods.iter().position(|l| l.starts_with("kubectl apply"));
    assert!(curl.is_some() && curl < apply, "the image is checked before anything is applied: {pods:?}");
}

/// A claim holding `node`'s only device, with no consumer (cluster state of one).
fn hold(c: &Site, node: &str, name: &str) {
    std::fs::create_dir_all(c.lab().root.join(format!("cluster/claims/{node}"))).unwrap();
    std::fs::write(c.lab().root.join(format!("cluster/claims/{node}/{name}")), "").unwrap();
}

#[test]
fn gpu_check_reports_no_devices_left_in_the_chapters_terms_and_cleans_up() {
    let c = gpu_cluster();
    hold(&c, "cop-gpu-1", "notebook");
    let before = c.lab().double_calls(at("cop-master-1")).len();
    c.test()
        .args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "2"])
        .status(2)
        .stdout(
            "cop-gpu-1  shared claim               FAILED   claim copctl-gpu-check-cop-gpu-1-shared/shared stayed Pending for 2s: \
             no devices left: the 1 device(s) of class gpu.nvidia.com are allocated (cop-gpu-1/gpu-0 to default/notebook) and none \
             is shareable (sharing is off): wait for a holder to end, or free one held without use\n\
             cop-gpu-1  claim template             skipped  not run: an earlier check failed\n\
             cop-gpu-1  sharing across namespaces  skipped  not run: an earlier check failed\n\
             gpu check: 1 node(s), 0 passed, 1 failed\n",
        )
        .run();
    assert_eq!(scratch_namespaces(&c), "");
    // --limit bounds it: cop-gpu-2 was never asked for.
    let calls = c.lab().double_calls(at("cop-master-1"))[before..].join("\n");
    assert!(calls.contains("cop-gpu-1") && !calls.contains("cop-gpu-2"), "{calls}");
}

#[test]
fn gpu_check_names_a_node_short_of_cpu_and_a_missing_driver() {
    let c = gpu_cluster();
    // Room for one check pod: the claim is allocated for the first, the second waits.
    std::fs::write(c.lab().root.join("cluster/nodes/cop-gpu-1/allocatable"), "cpu=15m\n").unwrap();
    c.test()
        .args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "2"])
        .status(2)
        .stdout(
            "cop-gpu-1  shared claim               FAILED   pod copctl-gpu-check-cop-gpu-1-shared/check-2 stayed Pending for 2s: \
             the claim was allocated but the node lacks CPU or memory: 0/8 nodes are available: 1 Insufficient cpu, 7 node(s) \
             didn't match Pod's node affinity/selector. preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.\n\
             cop-gpu-1  claim template             skipped  not run: an earlier check failed\n\
             cop-gpu-1  sharing across namespaces  skipped  not run: an earlier check failed\n\
             gpu check: 1 node(s), 0 passed, 1 failed\n",
        )
        .run();
    // The DRA driver gone: no device class.
    std::fs::remove_file(c.lab().root.join("cluster/nodes/cop-gpu-1/allocatable")).unwrap();
    std::fs::remove_file(c.lab().root.join("cluster/deviceclasses/gpu.nvidia.com")).unwrap();
    c.test()
        .args(["gpu", "check", "--limit", "cop-gpu-2", "--timeout", "2"])
        .status(2)
        .stdout(
            "cop-gpu-2  shared claim               FAILED   claim copctl-gpu-check-cop-gpu-2-shared/shared stayed Pending for 2s: \
             no device matches: device class 'gpu.nvidia.com' does not exist; the cluster has no device class: the DRA driver is \
             not installed or not running\n\
             cop-gpu-2  claim template             skipped  not run: an earlier check failed\n\
             cop-gpu-2  sharing across namespaces  skipped  not run: an earlier check failed\n\
             gpu check: 1 node(s), 0 passed, 1 failed\n",
        )
        .run();
    assert_eq!(scratch_namespaces(&c), "");
}

#[test]
fn gpu_check_with_sharing_on_proves_two_namespaces_share_one_device_or_says_sharing_is_off() {
    let c = gpu_cluster();
    // The DRA driver without consumable shares: the device goes whole to the first claim.
    let ran = c
        .test()
        .args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "2", "-e", "gpu_dra_sharing_enabled=true"])
        .status(2)
        .run();
    assert!(
        ran.stdout.contains(
            "cop-gpu-1  sharing across namespaces  FAILED   sharing is off on cop-gpu-1: claim \
             copctl-gpu-check-cop-gpu-1-share-b/share stayed Pending for 2s: no devices left: the 1 device(s) of class \
             gpu.nvidia.com are allocated (cop-gpu-1/gpu-0 to copctl-gpu-check-cop-gpu-1-share-a/share) and none is shareable \
             (sharing is off): wait for a holder to end, or free one held without use\n"
        ),
        "{}",
        ran.stdout
    );
    assert_eq!(scratch_namespaces(&c), "");
    // With the driver's consumable shares (memory): both claims on the one device.
    std::fs::write(
        c.lab().root.join("cluster/helm/nvidia-dra-driver-gpu/dra-driver-nvidia-gpu.values"),
        "featureGates.ConsumableShares=true\nconsumableShares=memory\n",
    )
    .unwrap();
    let ran = c
        .test()
        .args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "5", "-e", "gpu_dra_sharing_enabled=true"])
        .run();
    let line = ran.stdout.lines().nth(2).unwrap();
    assert!(
        line.starts_with(
            "cop-gpu-1  sharing across namespaces  passed   claims in copctl-gpu-check-cop-gpu-1-share-a and \
             copctl-gpu-check-cop-gpu-1-share-b (memory 1Gi each) both on cop-gpu-1/gpu-0, both pods see GPU-"
        ),
        "{}",
        ran.stdout
    );
    assert_eq!(scratch_namespaces(&c), "");
}

#[test]
fn gpu_check_interrupted_deletes_what_it_made() {
    let c = gpu_cluster();
    hold(&c, "cop-gpu-1", "notebook");
    let running = c.test().args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "120"]).status(130).spawn();
    let started = std::time::Instant::now();
    while scratch_namespaces(&c).is_empty() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the check never made its namespace");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    unsafe { libc::kill(running.id() as i32, libc::SIGINT) };
    let ran = running.wait();
    assert_eq!(ran.stdout, "");
    assert!(
        ran.stderr.ends_with(
            "interrupted: deleting the check's namespaces\ninterrupted: nothing of the check is left on the cluster\n"
        ),
        "{}",
        ran.stderr
    );
    assert_eq!(scratch_namespaces(&c), "");
    assert_eq!(kubectl(&c, "get resourceclaims -A -o name", ""), "resourceclaim.resource.k8s.io/notebook\n");
}

#[test]
fn gpu_check_refuses_before_making_anything() {
    let c = gpu_cluster();
    c.test().args(["gpu", "check", "--limit", "cop-worker-1"]).status(1).stderr(
        "  x --limit cop-worker-1 matches no GPU node\n  help: the GPU nodes (the gpu group): cop-gpu-1, cop-gpu-2\n\n",
    ).run();
    c.test()
        .args(["gpu", "check", "-e", "gpu_check_image=nvcr.io/nvidia/cuda:0.0-missing"])
        .status(1)
        .stderr(
            "  x the check's image cannot be pulled through the registry: nvcr.io/nvidia/cuda:0.0-missing \
             (https://registry.cop.example.com:8443/v2/nvidia/cuda/manifests/0.0-missing: 404: not there; \
             https://nvcr.io/v2/nvidia/cuda/manifests/0.0-missing: unreachable (curl: (6) Could not resolve host: nvcr.io)); \
             nothing was created\n  help: push the image to the private registry, or name one there with -e \
             gpu_check_image=IMAGE (env.yaml)\n\n",
        )
        .run();
    assert!(!c.lab().double_calls(at("cop-master-1")).iter().any(|l| l.starts_with("kubectl apply")));
}

#[test]
fn gpu_check_removes_what_an_earlier_check_left() {
    let c = gpu_cluster();
    kubectl(
        &c,
        "apply -f -",
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"copctl-gpu-check-cop-gpu-1-shared","labels":{"copctl.openmaru.io/gpu-check":"cop-gpu-1"}}}"#,
    );
    let ran = c.test().args(["gpu", "check", "--limit", "cop-gpu-1", "--timeout", "5"]).run();
    assert!(
        ran.stderr.starts_with("removing what an earlier check left: copctl-gpu-check-cop-gpu-1-shared\n"),
        "{}",
        ran.stderr
    );
    assert!(ran.stdout.ends_with("gpu check: 1 node(s), 1 passed, 0 failed\n"), "{}", ran.stdout);
}

#[test]
fn gpu_status_shows_shareable_capacity_and_mig_partitions() {
    let c = gpu_cluster();
    // The driver with consumable shares (memory); cop-gpu-2's GPU split by MIG into two 3g.71gb.
    std::fs::write(
        c.lab().root.join("cluster/helm/nvidia-dra-driver-gpu/dra-driver-nvidia-gpu.values"),
        "featureGates.ConsumableShares=true\nconsumableShares=memory\n",
    )
    .unwrap();
    std::fs::write(
        c.lab().root.join("cluster/nodes/cop-gpu-2/gpus"),
        "gpu-0-mig-3g71gb-0|NVIDIA H200|71680|MIG-0a|3g.71gb|GPU-0f\ngpu-0-mig-3g71gb-1|NVIDIA H200|71680|MIG-0b|3g.71gb|GPU-0f\n",
    )
    .unwrap();
    kubectl(&c, "apply -f -", &workload("team-a", "slice", "trainer", "cop-gpu-1"));
    kubectl(
        &c,
        "apply -f -",
        r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"slice","namespace":"team-a"},
 "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":"16Gi"}}}}]}}}"#,
    );
    c.test()
        .args(["gpu", "status"])
        .stdout(
            "Device classes: gpu.nvidia.com, mig.nvidia.com\n\
             \n\
             cop-gpu-1\n\
             \x20 DEVICE  MODEL        MEMORY    SHAREABLE  CAPACITY         REQUEST RANGE         MIG  ALLOCATED TO\n\
             \x20 gpu-0   NVIDIA H200  143771Mi  yes        memory 143771Mi  memory 1Mi..143771Mi  -    team-a/slice (memory 16Gi); memory 127387Mi left\n\
             \n\
             cop-gpu-2\n\
             \x20 DEVICE              MODEL        MEMORY   SHAREABLE  CAPACITY        REQUEST RANGE        MIG      ALLOCATED TO\n\
             \x20 gpu-0-mig-3g71gb-0  NVIDIA H200  71680Mi  yes        memory 71680Mi  memory 1Mi..71680Mi  3g.71gb  free\n\
             \x20 gpu-0-mig-3g71gb-1  NVIDIA H200  71680Mi  yes        memory 71680Mi  memory 1Mi..71680Mi  3g.71gb  free\n\
             \n\
             Claims\n\
             \x20 CLAIM         STATE      ALLOCATION       CONSUMERS\n\
             \x20 team-a/slice  Allocated  cop-gpu-1/gpu-0  team-a/trainer\n\
             \n\
             3 device(s) on 2 node(s), 2 free; 1 claim(s) Allocated, 0 Pending, 0 held without use\n",
        )
        .run();
    let st = c.test().args(["gpu", "status", "--output", "json"]).run().json();
    let mig = &st["nodes"][1]["devices"][0];
    assert_eq!((mig["partitioned"].as_bool(), mig["mig_profile"].as_str()), (Some(true), Some("3g.71gb")), "{mig:#}");
    assert_eq!(st["nodes"][0]["devices"][0]["remaining"]["memory"], "127387Mi");
}

#[test]
fn gpu_status_works_through_the_next_server_when_the_first_is_dead_and_is_exit_4_with_none() {
    let mut c = gpu_cluster();
    c.lab_mut().kill(at("cop-master-1"));
    std::fs::write(c.lab().root.join("cluster/nodes/cop-master-1/ready"), "False\n").unwrap();
    let addr = regex::Regex::new(r"127\.\d+\.\d+\.\d+").unwrap();
    let ran = c.test().args(["gpu", "status"]).run();
    assert!(ran.stdout.starts_with("Device classes: gpu.nvidia.com, mig.nvidia.com\n"), "{}", ran.stdout);
    assert_eq!(
        addr.replace_all(&ran.stderr, "ADDR"),
        "note: the cluster's work (join token, kubectl, etcd) runs on cop-master-2, the first reachable Ready server \
         (cop-master-1: unreachable: cannot connect to ADDR:22: Connection refused (os error 111))\n"
    );
    assert!(
        c.lab()
            .double_calls(at("cop-master-2"))
            .iter()
            .any(|l| l.starts_with("kubectl get deviceclasses,resourceslices"))
    );
    c.lab_mut().kill(at("cop-master-2"));
    c.lab_mut().kill(at("cop-master-3"));
    let ran = c.test().args(["gpu", "status"]).status(4).run();
    assert_eq!(
        addr.replace_all(&ran.stderr, "ADDR"),
        "  x no server is reachable and Ready, so no kubectl can read the cluster (cop-master-1: unreachable: cannot \
         connect to ADDR:22: Connection refused (os error 111); cop-master-2: unreachable: cannot connect to ADDR:22: \
         Connection refused (os error 111); cop-master-3: unreachable: cannot connect to ADDR:22: Connection refused (os \
         error 111))\n  help: check the servers (systemctl status rke2-server on each)\n\n"
    );
}

/// A pod of `ns` using claim `claim`, with `extra` merged into its spec (JSON members).
fn pod_with(ns: &str, name: &str, claim: &str, extra: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}"}},"spec":{{{extra}
 "resourceClaims":[{{"name":"gpu","resourceClaimName":"{claim}"}}],
 "containers":[{{"name":"app","image":"registry.example.com/app:1","resources":{{"claims":[{{"name":"gpu"}}]}}}}]}}}}"#
    )
}

#[test]
fn gpu_status_gives_each_pending_claim_and_waiting_pod_its_cause() {
    let c = gpu_cluster();
    let tol = r#""tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],"#;
    kubectl(&c, "apply -f -", r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"lab"}}"#);
    // `all`: every device of the class (allocationMode All) — both GPU nodes' one device each;
    // scheduled on cop-gpu-1, it takes cop-gpu-1's device.
    kubectl(
        &c,
        "apply -f -",
        r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"all","namespace":"lab"},
 "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"All"}}]}}}"#,
    );
    kubectl(
        &c,
        "apply -f -",
        &pod_with("lab", "whole", "all", &format!(r#"{tol}"nodeSelector":{{"kubernetes.io/hostname":"cop-gpu-1"}},"#)),
    );
    // A second claim for cop-gpu-1: its device is taken and not shareable.
    kubectl(&c, "apply -f -", &claim("lab", "second", "gpu.nvidia.com"));
    kubectl(
        &c,
        "apply -f -",
        &pod_with(
            "lab",
            "late",
            "second",
            &format!(r#"{tol}"nodeSelector":{{"kubernetes.io/hostname":"cop-gpu-1"}},"#),
        ),
    );
    // No toleration for the GPU nodes' taint.
    kubectl(&c, "apply -f -", &claim("lab", "untolerated", "gpu.nvidia.com"));
    kubectl(&c, "apply -f -", &pod_with("lab", "plain", "untolerated", ""));
    // Pinned to a node by name.
    kubectl(&c, "apply -f -", &claim("lab", "pinned", "gpu.nvidia.com"));
    kubectl(&c, "apply -f -", &pod_with("lab", "pinned", "pinned", &format!(r#"{tol}"nodeName":"cop-gpu-2","#)));
    let st = c.test().args(["gpu", "status", "--output", "json"]).run().json();
    let flag = |name: &str| -> String {
        st["claims"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["flag"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(st["claims"][0]["allocated"].as_array().unwrap().len(), 1, "{st:#}");
    assert_eq!(flag("all"), "");
    assert_eq!(
        flag("second"),
        "no devices left: the 1 device(s) of class gpu.nvidia.com are allocated (cop-gpu-1/gpu-0 to lab/all) and none is \
         shareable (sharing is off): wait for a holder to end, or free one held without use"
    );
    assert_eq!(
        flag("untolerated"),
        "the pod does not tolerate the GPU nodes' taint (add a toleration for its key): 0/8 nodes are available: 2 node(s) \
         had untolerated taint {nvidia.com/gpu: present}, 6 cannot allocate all claims. preemption: 0/8 nodes are available: 8 \
         Preemption is not helpful for scheduling."
    );
    assert_eq!(
        flag("pinned"),
        "the pod names its node (spec.nodeName): DRA needs the scheduler to allocate the device, so it never is; use a \
         nodeSelector instead"
    );
    let pods: Vec<String> =
        st["pods"].as_array().unwrap().iter().map(|p| format!("{}: {}", p["pod"], p["cause"])).collect();
    assert_eq!(
        pods,
        [
            "\"lab/pinned\": \"the pod names its node (spec.nodeName): DRA needs the scheduler to allocate the device, so it never is; use a nodeSelector instead\""
        ]
    );
    // The old way beside a claim: no node has nvidia.com/gpu under DRA. With the claim already
    // allocated (shared with `whole`), the pod is what waits.
    kubectl(
        &c,
        "apply -f -",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"old","namespace":"lab"},"spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],
 "resourceClaims":[{"name":"gpu","resourceClaimName":"all"}],
 "containers":[{"name":"app","image":"registry.example.com/app:1","resources":{"claims":[{"name":"gpu"}],"limits":{"nvidia.com/gpu":"1"}}}]}}"#,
    );
    let st = c.test().args(["gpu", "status", "--output", "json"]).run().json();
    let old = st["pods"].as_array().unwrap().iter().find(|p| p["pod"] == "lab/old").expect("lab/old is flagged");
    assert_eq!(
        old["cause"],
        "the claim was allocated but the pod waits: the pod still asks for nvidia.com/gpu in its limits (the old way): under \
         DRA no node has it; remove the limit and keep the claim: 0/8 nodes are available: 1 Insufficient nvidia.com/gpu, 7 \
         cannot allocate all claims. preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."
    );
}
