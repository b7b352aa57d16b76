//! `copctl gpu lint` (issue 39 item 5) on the fixtures under tests/fixtures/gpu-lint/: every row
//! of the chapter's "Common Mistakes" and every YAML rule it states, each finding at the real
//! line of the key it is about, every message pinned whole; a clean manifest of each kind passes
//! with exit 0. Offline: no site, no cluster.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::*;

const MISTAKES: &str = "tests/fixtures/gpu-lint/mistakes";

/// `copctl gpu lint` on mistakes/FILES in the repository: exit `status`, stdout `lines`.
fn lint(files: &[&str], status: i32, lines: &[&str]) {
    let args: Vec<String> = files.iter().map(|f| format!("{MISTAKES}/{f}")).collect();
    Test::repo().args(["gpu", "lint"]).args(&args).status(status).stderr("").stdout(&(lines.join("\n") + "\n")).run();
}

/// The chapter's own examples and a clean manifest of each kind (Pod, Deployment, StatefulSet,
/// DaemonSet, ReplicaSet, Job, CronJob, ResourceClaim, ResourceClaimTemplate, DeviceClass, a List,
/// objects the lint does not know), in a directory read recursively (*.yaml and *.yml).
#[test]
fn clean_manifests_of_every_kind_pass() {
    Test::repo()
        .args(["gpu", "lint", "tests/fixtures/gpu-lint/clean"])
        .stderr("")
        .stdout("gpu lint: no problems (13 objects in 7 files)\n")
        .run();
    // Each file on its own too (a claim or template another file defines is not needed).
    for f in [
        "shared-gpu.yaml",
        "dedicated-gpu.yaml",
        "pod.yaml",
        "statefulset.yml",
        "batch/jobs.yaml",
        "daemonset-and-replicaset.yaml",
        "list.yaml",
    ] {
        let ran = Test::repo().args(["gpu", "lint", &format!("tests/fixtures/gpu-lint/clean/{f}")]).stderr("").run();
        assert!(ran.stdout.starts_with("gpu lint: no problems ("), "{f}: {}", ran.stdout);
    }
}

/// `-` reads the manifests from standard input, named `<stdin>`.
#[test]
fn standard_input() {
    let text = std::fs::read_to_string(repo().join(MISTAKES).join("node-name.yaml")).unwrap();
    let mut child = Site::repo()
        .command(["gpu", "lint", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "<stdin>:7: error: Pod pinned: nodeName pins the pod to 'cop-gpu-1' and the pod has claims: a pinned pod skips \
         the scheduler, which allocates the devices, so its claims are never allocated\n  \
         help: send it to the node with nodeSelector: {kubernetes.io/hostname: cop-gpu-1} instead of nodeName\n\
         gpu lint: 1 error, 0 warnings (1 object in 1 file)\n"
    );
}

/// `--device-class` names the cluster's other classes; a DeviceClass among the manifests exists too.
#[test]
fn device_classes_named_on_the_command_line_exist() {
    Test::repo()
        .args(["gpu", "lint", &format!("{MISTAKES}/device-class.yaml"), "--device-class", "a100-80gb.example.com"])
        .args(["--device-class", "a100-40gb.example.com"])
        .status(1)
        .stderr("")
        .stdout(
            "tests/fixtures/gpu-lint/mistakes/device-class.yaml:11: error: ResourceClaim typo: request 'gpu' names the \
             device class 'gpu.nvida.com', which does not exist: the claim stays Pending\n  \
             help: did you mean 'gpu.nvidia.com'? (known: gpu.nvidia.com, a100-80gb.example.com, a100-40gb.example.com; \
             name the cluster's other classes with --device-class NAME)\n\
             tests/fixtures/gpu-lint/mistakes/device-class.yaml:22: error: ResourceClaimTemplate old-name: request 'gpu' \
             names the device class 'nvidia.com/gpu', which does not exist: the claim stays Pending\n  \
             help: nvidia.com/gpu is the old way's resource name, not a device class: write gpu.nvidia.com (known: \
             gpu.nvidia.com, a100-80gb.example.com, a100-40gb.example.com)\n\
             gpu lint: 2 errors, 0 warnings (3 objects in 1 file)\n",
        )
        .run();
}

/// Several files: findings in the order given, each file's by line; `--output json` holds the
/// same findings with their rule.
#[test]
fn several_files_in_order_and_json() {
    lint(
        &["node-name.yaml", "namespaces.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/node-name.yaml:7: error: Pod pinned: nodeName pins the pod to 'cop-gpu-1' and the pod has claims: a pinned pod skips the scheduler, which allocates the devices, so its claims are never allocated",
            "  help: send it to the node with nodeSelector: {kubernetes.io/hostname: cop-gpu-1} instead of nodeName",
            "tests/fixtures/gpu-lint/mistakes/namespaces.yaml:21: error: Pod borrower: the ResourceClaim 'team-gpu' is in namespace team-a and the pod in team-b: claims are namespace-scoped, and a pod uses only those of its own namespace",
            "  help: create the ResourceClaim in team-b too; pods of two namespaces share one device only where the driver shares devices (ask operations staff)",
            "gpu lint: 2 errors, 0 warnings (3 objects in 2 files)",
        ],
    );
    let ran = Test::repo()
        .args(["gpu", "lint", "--output", "json", &format!("{MISTAKES}/old-way.yaml")])
        .status(1)
        .stderr("")
        .run();
    assert_eq!(
        ran.json(),
        serde_json::json!({
            "findings": [
                {
                    "file": "tests/fixtures/gpu-lint/mistakes/old-way.yaml",
                    "line": 24,
                    "severity": "error",
                    "rule": "old-gpu-limit",
                    "message": "Deployment both: container 'app' asks for nvidia.com/gpu in its limits beside the pod's claims: the GPU is requested twice, the old way and through DRA",
                    "help": "remove limits.nvidia.com/gpu (the claim requests the GPU); leave the CPU and memory limits as they are"
                },
                {
                    "file": "tests/fixtures/gpu-lint/mistakes/old-way.yaml",
                    "line": 42,
                    "severity": "warning",
                    "rule": "old-gpu-limit",
                    "message": "Deployment old-only: container 'app' asks for nvidia.com/gpu in its requests, the old way: under DRA the device plugin is off and no node offers nvidia.com/gpu",
                    "help": "request the GPU with a claim: spec.resourceClaims in the pod and resources.claims in the container (the chapter's method 1 or 2)"
                }
            ],
            "errors": 1,
            "warnings": 1,
            "objects": 2,
            "files": 1
        })
    );
    // Clean: exit 0 and no findings.
    let ran = Test::repo()
        .args(["gpu", "lint", "--output", "json", "tests/fixtures/gpu-lint/clean/pod.yaml"])
        .stderr("")
        .run();
    assert_eq!(ran.json(), serde_json::json!({"findings": [], "errors": 0, "warnings": 0, "objects": 1, "files": 1}));
}

/// A path that cannot be read is a usage error (exit 1), before anything is checked.
#[test]
fn an_unreadable_path_is_an_error() {
    Test::repo()
        .args(["gpu", "lint", "tests/fixtures/gpu-lint/nosuch.yaml"])
        .status(1)
        .stdout("")
        .stderr(
            "  x cannot read tests/fixtures/gpu-lint/nosuch.yaml: No such file or directory (os error 2)\n  help: give \
             manifest files, directories of them, or - for standard input\n\n",
        )
        .run();
}

/// "The second pod onward is Pending": a template under several replicas (warning: legal, and the
/// devices they need named).
#[test]
fn the_second_pod_onward_is_pending_a_template_where_one_claim_was_meant() {
    lint(
        &["template-shared.yaml"],
        0,
        &[
            "tests/fixtures/gpu-lint/mistakes/template-shared.yaml:32: warning: Deployment my-gpu-app: 3 replicas, each pod with a claim of its own from the template 'dedicated-gpu': 3 devices are needed, and the pods beyond the free devices stay Pending",
            "  help: to share one device among the pods, create a ResourceClaim and point at it with resourceClaimName (the chapter's method 1); keep the template where each pod needs a device of its own",
            "tests/fixtures/gpu-lint/mistakes/template-shared.yaml:52: warning: Job sweep: parallelism 4, each pod with a claim of its own from the template 'two-gpus': 8 devices are needed, and the pods beyond the free devices stay Pending",
            "  help: to share one device among the pods, create a ResourceClaim and point at it with resourceClaimName (the chapter's method 1); keep the template where each pod needs a device of its own",
            "gpu lint: 0 errors, 2 warnings (3 objects in 1 file)",
        ],
    );
}

/// "The GPU is not visible in the container" (the pod's claim used by no container) and "Pod
/// creation is rejected" (no spec.resourceClaims, or the names differ: said once, with the closest).
#[test]
fn the_gpu_not_visible_and_pod_creation_rejected_claims_in_one_place_or_names_differing() {
    lint(
        &["claims-in-one-place.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/claims-in-one-place.yaml:8: error: Pod no-container-claim: the pod's claim 'gpu' is used by no container: the device is allocated and held, and no container sees the GPU",
            "  help: add it to the container that needs the GPU: resources: {claims: [{name: gpu}]} (the chapter: it has to be written in two places)",
            "tests/fixtures/gpu-lint/mistakes/claims-in-one-place.yaml:24: error: Pod no-pod-claim: container 'app' uses the claim 'gpu', and the pod has no spec.resourceClaims: Kubernetes rejects the pod",
            "  help: list it in the pod's spec.resourceClaims too: - name: gpu with resourceClaimName: or resourceClaimTemplateName: (the chapter: it has to be written in two places)",
            "tests/fixtures/gpu-lint/mistakes/claims-in-one-place.yaml:39: error: Pod names-differ: container 'app' uses the claim 'gpus', which is not in the pod's spec.resourceClaims ('gpu'): Kubernetes rejects the pod",
            "  help: did you mean 'gpu'? the name must be the same in both places",
            "gpu lint: 3 errors, 0 warnings (3 objects in 1 file)",
        ],
    );
}

/// "The claim stays Pending": a device class that does not exist, with the closest known name.
#[test]
fn the_claim_stays_pending_a_device_class_that_does_not_exist_with_the_closest_name() {
    lint(
        &["device-class.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/device-class.yaml:11: error: ResourceClaim typo: request 'gpu' names the device class 'gpu.nvida.com', which does not exist: the claim stays Pending",
            "  help: did you mean 'gpu.nvidia.com'? (known: gpu.nvidia.com; name the cluster's other classes with --device-class NAME)",
            "tests/fixtures/gpu-lint/mistakes/device-class.yaml:22: error: ResourceClaimTemplate old-name: request 'gpu' names the device class 'nvidia.com/gpu', which does not exist: the claim stays Pending",
            "  help: nvidia.com/gpu is the old way's resource name, not a device class: write gpu.nvidia.com (known: gpu.nvidia.com)",
            "tests/fixtures/gpu-lint/mistakes/device-class.yaml:33: error: ResourceClaim site-class: request 'gpu' names the device class 'a100-80gb.example.com', which does not exist: the claim stays Pending",
            "  help: use a name from Devices > Device Classes (known: gpu.nvidia.com; name the cluster's other classes with --device-class NAME)",
            "gpu lint: 3 errors, 0 warnings (3 objects in 1 file)",
        ],
    );
}

/// "It takes twice as many devices": nvidia.com/gpu beside a claim; alone, a warning (the device
/// plugin is off under DRA).
#[test]
fn twice_as_many_devices_the_old_limit_beside_a_claim_and_the_old_way_alone() {
    lint(
        &["old-way.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/old-way.yaml:24: error: Deployment both: container 'app' asks for nvidia.com/gpu in its limits beside the pod's claims: the GPU is requested twice, the old way and through DRA",
            "  help: remove limits.nvidia.com/gpu (the claim requests the GPU); leave the CPU and memory limits as they are",
            "tests/fixtures/gpu-lint/mistakes/old-way.yaml:42: warning: Deployment old-only: container 'app' asks for nvidia.com/gpu in its requests, the old way: under DRA the device plugin is off and no node offers nvidia.com/gpu",
            "  help: request the GPU with a claim: spec.resourceClaims in the pod and resources.claims in the container (the chapter's method 1 or 2)",
            "gpu lint: 1 error, 1 warning (2 objects in 1 file)",
        ],
    );
}

/// "Sharing with pods in another namespace does not work": claims are namespace-scoped.
#[test]
fn claims_are_namespace_scoped() {
    lint(
        &["namespaces.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/namespaces.yaml:21: error: Pod borrower: the ResourceClaim 'team-gpu' is in namespace team-a and the pod in team-b: claims are namespace-scoped, and a pod uses only those of its own namespace",
            "  help: create the ResourceClaim in team-b too; pods of two namespaces share one device only where the driver shares devices (ask operations staff)",
            "gpu lint: 1 error, 0 warnings (2 objects in 1 file)",
        ],
    );
}

/// "You cannot pin a node directly": nodeName beside claims.
#[test]
fn no_node_name_beside_claims() {
    lint(
        &["node-name.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/node-name.yaml:7: error: Pod pinned: nodeName pins the pod to 'cop-gpu-1' and the pod has claims: a pinned pod skips the scheduler, which allocates the devices, so its claims are never allocated",
            "  help: send it to the node with nodeSelector: {kubernetes.io/hostname: cop-gpu-1} instead of nodeName",
            "gpu lint: 1 error, 0 warnings (1 object in 1 file)",
        ],
    );
}

/// "spec appearing twice is correct" in a template, and only there.
#[test]
fn spec_twice_in_a_template_and_once_in_a_claim() {
    lint(
        &["spec-twice.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/spec-twice.yaml:7: error: ResourceClaimTemplate spec-once: devices is directly under spec; a template's claim goes under spec.spec",
            "  help: write spec twice: the outer spec is the template's, the inner one that of the claims it stamps out (spec: {spec: {devices: ...}})",
            "tests/fixtures/gpu-lint/mistakes/spec-twice.yaml:17: error: ResourceClaim spec-twice: spec.spec is a ResourceClaimTemplate's layout; a ResourceClaim has spec once",
            "  help: move devices up under the claim's spec (spec: {devices: ...}), or make it kind: ResourceClaimTemplate",
            "gpu lint: 2 errors, 0 warnings (2 objects in 1 file)",
        ],
    );
}

/// Each spec.resourceClaims entry: a name, once, exactly one of resourceClaimName and
/// resourceClaimTemplateName (and not the `source:` Kubernetes 1.31 removed).
#[test]
fn each_pod_claim_entry_one_name_once_and_one_of_claim_or_template() {
    lint(
        &["pod-claim-entries.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/pod-claim-entries.yaml:11: error: Pod entries: claim 'both' gives both resourceClaimName and resourceClaimTemplateName; Kubernetes rejects the pod",
            "  help: keep resourceClaimName to share the claim 'shared-gpu' with other pods, or resourceClaimTemplateName for a claim of the pod's own",
            "tests/fixtures/gpu-lint/mistakes/pod-claim-entries.yaml:12: error: Pod entries: claim 'neither' gives neither resourceClaimName nor resourceClaimTemplateName; Kubernetes rejects the pod",
            "  help: resourceClaimName: CLAIM shares a claim created beforehand; resourceClaimTemplateName: TEMPLATE gives each pod a claim of its own",
            "tests/fixtures/gpu-lint/mistakes/pod-claim-entries.yaml:14: error: Pod entries: claim 'old' is written under source:, which Kubernetes 1.31 removed; it rejects the pod",
            "  help: write resourceClaimName: or resourceClaimTemplateName: directly in the entry, without source:",
            "tests/fixtures/gpu-lint/mistakes/pod-claim-entries.yaml:16: error: Pod entries: the claim name 'both' is listed twice in spec.resourceClaims; Kubernetes rejects the pod",
            "  help: give each entry a name of its own",
            "tests/fixtures/gpu-lint/mistakes/pod-claim-entries.yaml:18: error: Pod entries: an entry of spec.resourceClaims has no name; Kubernetes rejects the pod",
            "  help: give it the name the containers' resources.claims use: - name: gpu",
            "gpu lint: 5 errors, 0 warnings (1 object in 1 file)",
        ],
    );
}

/// The API version the cluster serves (resource.k8s.io/v1), and v1's request layout (`exactly:`).
#[test]
fn the_api_version_the_cluster_serves_and_v1s_request_layout() {
    lint(
        &["api-versions.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:2: error: ResourceClaim beta1: resource.k8s.io/v1beta1 is a beta version of the DRA API: Kubernetes 1.34 serves resource.k8s.io/v1, and a beta version only where the API server's runtime-config turns it on",
            "  help: write apiVersion: resource.k8s.io/v1, and move each request's deviceClassName, allocationMode and count under exactly: (v1's layout)",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:12: error: ResourceClaimTemplate beta2: resource.k8s.io/v1beta2 is a beta version of the DRA API: Kubernetes 1.34 serves resource.k8s.io/v1, and a beta version only where the API server's runtime-config turns it on",
            "  help: write apiVersion: resource.k8s.io/v1 (the layout is v1beta2's)",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:23: error: DeviceClass alpha.example.com: resource.k8s.io/v1alpha3 is not an API version of DeviceClass: the cluster serves resource.k8s.io/v1",
            "  help: write apiVersion: resource.k8s.io/v1, as the manual's examples do",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:36: error: ResourceClaim v1-requests: request 'flat' has deviceClassName directly, as resource.k8s.io/v1beta1 had it; in resource.k8s.io/v1 it goes under exactly:",
            "  help: write exactly: {deviceClassName: ..., allocationMode: ExactCount, count: 1} in the request (the chapter's layout)",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:37: error: ResourceClaim v1-requests: request 'empty' names no device class: exactly: is missing",
            "  help: write exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1} in the request",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:41: error: ResourceClaim v1-requests: request 'mode' has allocationMode 'Exact', which is neither ExactCount nor All",
            "  help: write ExactCount (as many devices as count) or All (every device matching the conditions)",
            "tests/fixtures/gpu-lint/mistakes/api-versions.yaml:42: error: ResourceClaim v1-requests: request 'mode' has count 0; Kubernetes rejects the claim",
            "  help: write count: 1 or more",
            "gpu lint: 7 errors, 0 warnings (4 objects in 1 file)",
        ],
    );
}

/// What a pod's claim points at among the manifests: the other kind, a near miss, a DaemonSet
/// sharing one claim on every node (warnings: the right object may exist in the cluster).
#[test]
fn what_a_pods_claim_points_at_among_the_manifests() {
    lint(
        &["references.yaml"],
        0,
        &[
            "tests/fixtures/gpu-lint/mistakes/references.yaml:33: warning: Pod wrong-kind: resourceClaimName names a ResourceClaim, and 'per-pod' is a ResourceClaimTemplate",
            "  help: write resourceClaimTemplateName: per-pod, or create a ResourceClaim 'per-pod'",
            "tests/fixtures/gpu-lint/mistakes/references.yaml:35: warning: Pod wrong-kind: resourceClaimTemplateName names a ResourceClaimTemplate, and 'shared-gpu' is a ResourceClaim",
            "  help: write resourceClaimName: shared-gpu, or create a ResourceClaimTemplate 'shared-gpu'",
            "tests/fixtures/gpu-lint/mistakes/references.yaml:37: warning: Pod wrong-kind: no ResourceClaim 'shared-gpus' among the manifests, and 'shared-gpu' is: the pod stays Pending until a ResourceClaim 'shared-gpus' exists",
            "  help: did you mean 'shared-gpu'?",
            "tests/fixtures/gpu-lint/mistakes/references.yaml:58: warning: DaemonSet everywhere: a DaemonSet runs a pod on every node it selects, and the claim 'shared-gpu' is a device on one node: the pods on the other nodes stay Pending",
            "  help: give each pod a claim of its own on its node: resourceClaimTemplateName",
            "gpu lint: 0 errors, 4 warnings (4 objects in 1 file)",
        ],
    );
}

/// YAML kubectl cannot read either.
#[test]
fn yaml_kubectl_cannot_read_is_an_error_at_its_line() {
    lint(
        &["broken.yaml"],
        1,
        &[
            "tests/fixtures/gpu-lint/mistakes/broken.yaml:6: error: not valid YAML: unclosed bracket '['",
            "  help: fix the YAML: kubectl cannot read the file either",
            "gpu lint: 1 error, 0 warnings (0 objects in 1 file)",
        ],
    );
}
