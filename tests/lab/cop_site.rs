//! A lab cluster under COP names (servers, workers, a GPU node) with every test double installed,
//! an inventory, an env.yaml and the RKE2 / NVIDIA artifacts on the "bastion" (a directory):
//! what the COP procedure tests and `copctl-lab demo` start from.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Lab, LabOptions};

/// The cluster's nodes and their groups.
pub const NAMES: &[(&str, &str)] = &[
    ("cop-master-1", "masters"),
    ("cop-master-2", "masters"),
    ("cop-master-3", "masters"),
    ("cop-worker-1", "workers"),
    ("cop-worker-2", "workers"),
    ("cop-worker-3", "workers"),
    ("cop-gpu-1", "gpu"),
    ("cop-gpu-2", "gpu"),
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub struct CopSite {
    pub lab: Lab,
    pub dir: PathBuf,
}

impl CopSite {
    /// Starts the cluster's hosts and writes the site into `dir`.
    pub fn start(dir: &Path) -> CopSite {
        CopSite::start_with(dir, LabOptions::default())
    }

    /// As `start`; with `opts.sudo_user` the inventory logs in as that user and becomes root
    /// through the hosts' real sudo (the password, if any, is the test's to add).
    pub fn start_with(dir: &Path, opts: LabOptions) -> CopSite {
        let login = match &opts.sudo_user {
            Some((user, _)) => format!("ansible_user={user}\nansible_become=true"),
            None => "ansible_user=root".to_string(),
        };
        let lab = Lab::start(NAMES.len(), opts);
        lab.install_doubles(&[
            "systemctl",
            "helm",
            "nvidia-smi",
            "update-initramfs",
            "apt-get",
            "dpkg-query",
            "modprobe",
            "lsmod",
            "sysctl",
            "hostnamectl",
            "kubectl",
            "kube-dra",
            "reboot",
            "lab-boot",
            "curl",
            "chronyc",
        ]);
        // The nodes' addresses, as the cluster's network knows them (the rke2 double refuses a
        // join through a server that is down).
        let addresses: String =
            NAMES.iter().enumerate().map(|(i, (n, _))| format!("{n} {}\n", lab.hosts[i].addr)).collect();
        std::fs::create_dir_all(lab.root.join("cluster")).unwrap();
        std::fs::write(lab.root.join("cluster/addresses"), addresses).unwrap();
        let mut inv = String::new();
        for group in ["masters", "workers", "gpu"] {
            inv.push_str(&format!("[{group}]\n"));
            for (i, (name, g)) in NAMES.iter().enumerate() {
                if *g == group {
                    inv.push_str(&format!("{name} ansible_host={}\n", lab.hosts[i].addr));
                }
            }
        }
        inv.push_str(&format!(
            "[masters:vars]\nrke2_type=server\n[workers:vars]\nrke2_type=agent\n[gpu:vars]\nrke2_type=agent\ngpu_node=True\n\
             [cluster:children]\nmasters\nworkers\ngpu\n[cluster:vars]\n{login}\nansible_ssh_private_key_file={}\n",
            lab.client_key.display()
        ));
        std::fs::write(dir.join("inventory.ini"), inv).unwrap();
        // RKE2 artifacts on the "bastion": the install.sh double, a tarball holding the rke2 double,
        // an images archive big enough to take the streaming path, and their sha256sum file.
        let art = dir.join("artifacts");
        std::fs::create_dir_all(art.join("tree/bin")).unwrap();
        std::fs::copy(repo().join("tests/doubles/rke2-install.sh"), art.join("install.sh")).unwrap();
        std::fs::copy(repo().join("tests/doubles/rke2"), art.join("tree/bin/rke2")).unwrap();
        let st = Command::new("tar")
            .args(["czf", "rke2.linux-amd64.tar.gz", "-C", "tree", "bin"])
            .current_dir(&art)
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::write(art.join("rke2-images.linux-amd64.tar.zst"), vec![7u8; 3 << 20]).unwrap();
        let st = Command::new("sh")
            .args(["-c", "sha256sum rke2.linux-amd64.tar.gz rke2-images.linux-amd64.tar.zst > sha256sum-amd64.txt"])
            .current_dir(&art)
            .status()
            .unwrap();
        assert!(st.success());
        // The NVIDIA driver runfile double (driver_runfile).
        let nv = dir.join("nvidia");
        std::fs::create_dir_all(&nv).unwrap();
        std::fs::write(nv.join("NVIDIA-Linux-x86_64-580.95.05.run"), driver_runfile("580.95.05")).unwrap();
        // The GPU Operator and DRA driver charts as archives (air-gapped), and the private registry
        // holding every image they render, behind registries.yaml's credentials (the curl double).
        let charts = dir.join("charts");
        write_chart(&charts, "gpu-operator", "v25.10.0", GPU_OPERATOR_TEMPLATES);
        write_chart(&charts, "nvidia-dra-driver-gpu", "25.8.0", DRA_DRIVER_TEMPLATES);
        let reg = lab.root.join("cluster/registry/registry.cop.example.com:8443");
        std::fs::create_dir_all(&reg).unwrap();
        std::fs::write(
            reg.join("images"),
            CHART_IMAGES.iter().map(|i| format!("{}\n", registry_path(i))).collect::<String>(),
        )
        .unwrap();
        std::fs::write(reg.join("auth"), "admin:change-me").unwrap();
        // The registry's CA certificate on the bastion (its content is all the doubles look at).
        let ca = dir.join("certs/registry-ca.crt");
        std::fs::create_dir_all(ca.parent().unwrap()).unwrap();
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nY29wY3RsIGxhYiByZWdpc3RyeSBDQQ==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let env = std::fs::read_to_string(repo().join("inventory/env.yaml"))
            .unwrap()
            .replace(
                "rke2_artifact_dir: /opt/openmaru-cop/artifacts/rke2",
                &format!("rke2_artifact_dir: {}", art.display()),
            )
            .replace(
                "gpu_driver_artifact_dir: /opt/openmaru-cop/artifacts/nvidia",
                &format!("gpu_driver_artifact_dir: {}", nv.display()),
            )
            .replace(
                "gpu_chart_artifact_dir: /opt/openmaru-cop/artifacts/charts",
                &format!("gpu_chart_artifact_dir: {}", charts.display()),
            )
            .replace("registry_ca_file: \"\"", &format!("registry_ca_file: {}", ca.display()));
        std::fs::write(dir.join("env.yaml"), env).unwrap();
        std::fs::create_dir(dir.join("home")).unwrap();
        CopSite { lab, dir: dir.to_path_buf() }
    }
}

/// The NVIDIA driver runfile double for `version`: records itself, refuses to run while an NVIDIA
/// module is loaded (as the real installer does: "An NVIDIA kernel module 'nvidia' appears to
/// already be loaded in your kernel"), installs and loads its version, and leaves an
/// nvidia-uninstall behind that removes it and unloads the modules unless the GPU is held.
pub fn driver_runfile(version: &str) -> String {
    format!(
        "#!/bin/sh\necho \"nvidia-installer $*\" >> /var/log/copctl-doubles.log\n\
         m=/var/lib/copctl-doubles/modules\n\
         if [ -e $m/nvidia ]; then echo \"ERROR: An NVIDIA kernel module 'nvidia' appears to already be loaded in your kernel.\" >&2; exit 1; fi\n\
         mkdir -p /var/lib/copctl-doubles/nvidia $m\n\
         echo {version} > /var/lib/copctl-doubles/nvidia/version\n\
         for k in nvidia nvidia_uvm nvidia_modeset nvidia_drm; do touch $m/$k; done\n\
         printf '#!/bin/sh\\necho \"nvidia-uninstall $*\" >> /var/log/copctl-doubles.log\\nrm -f /var/lib/copctl-doubles/nvidia/version\\n\
         modprobe -r nvidia_drm nvidia_modeset nvidia_uvm nvidia 2>/dev/null || echo \"WARNING: the NVIDIA kernel module is in use: reboot to unload it\" >&2\\n' > /usr/local/sbin/nvidia-uninstall\n\
         chmod 755 /usr/local/sbin/nvidia-uninstall\n"
    )
}

/// Every image the test charts render (the driver's is not: driver.enabled is false).
pub const CHART_IMAGES: &[&str] = &[
    "nvcr.io/nvidia/gpu-operator:v25.10.0",
    "registry.k8s.io/nfd/node-feature-discovery:v0.18.2",
    "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0",
    "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0",
    "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04",
    "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
];

/// Where a mirror keeps an image: its path without the upstream host (`nvidia/gpu-operator:v1`).
pub fn registry_path(image: &str) -> &str {
    image.split_once('/').map(|(_, p)| p).unwrap_or(image)
}

/// Templates as `helm template` renders them (no template directives in them).
const GPU_OPERATOR_TEMPLATES: &[(&str, &str)] = &[
    (
        "operator.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gpu-operator\nspec:\n  template:\n    spec:\n      \
         containers:\n        - name: gpu-operator\n          image: nvcr.io/nvidia/gpu-operator:v25.10.0\n",
    ),
    (
        "nfd.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: gpu-operator-node-feature-discovery-worker\nspec:\n  \
         template:\n    spec:\n      containers:\n        - name: worker\n          \
         image: registry.k8s.io/nfd/node-feature-discovery:v0.18.2\n",
    ),
    (
        "clusterpolicy.yaml",
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: cluster-policy\nspec:\n  driver:\n    \
         enabled: false\n    repository: nvcr.io/nvidia\n    image: driver\n    version: \"580.95.05\"\n  toolkit:\n    \
         enabled: true\n    repository: nvcr.io/nvidia/k8s\n    image: container-toolkit\n    version: v1.18.0\n  \
         validator:\n    repository: nvcr.io/nvidia/cloud-native\n    image: gpu-operator-validator\n    version: v25.10.0\n  \
         dcgmExporter:\n    enabled: true\n    repository: nvcr.io/nvidia/k8s\n    image: dcgm-exporter\n    \
         version: 4.4.1-4.6.0-ubuntu22.04\n",
    ),
];

const DRA_DRIVER_TEMPLATES: &[(&str, &str)] = &[(
    "kubeletplugin.yaml",
    "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: dra-driver-nvidia-gpu-kubelet-plugin\nspec:\n  template:\n    \
     spec:\n      containers:\n        - name: gpus\n          image: nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0\n",
)];

/// A chart archive as `helm pull` saves it: NAME-VERSION.tgz holding NAME/Chart.yaml and templates.
pub fn write_chart(dir: &Path, name: &str, version: &str, templates: &[(&str, &str)]) {
    write_chart_values(dir, name, version, templates, None);
}

/// The NVIDIA DRA driver's chart at `version` (its templates those of the lab's 25.8.0), its
/// values.yaml with the driver's sharing settings (`featureGates`, `consumableShares`, as the
/// charts that have consumable shares declare them) when `sharing`, else without them.
pub fn write_dra_chart(dir: &Path, version: &str, sharing: bool) {
    let values = if sharing {
        "nvidiaDriverRoot: /\ngpuResourcesEnabledOverride: false\nfeatureGates: {}\n\
         # memory, unlimited or a number of shares; empty: devices are not shared\nconsumableShares: \"\"\n\
         kubeletPlugin:\n  tolerations: []\n"
    } else {
        "nvidiaDriverRoot: /\ngpuResourcesEnabledOverride: false\nkubeletPlugin:\n  tolerations: []\n"
    };
    write_chart_values(dir, "nvidia-dra-driver-gpu", version, DRA_DRIVER_TEMPLATES, Some(values));
}

/// `write_chart`, with NAME/values.yaml holding `values` when given.
pub fn write_chart_values(dir: &Path, name: &str, version: &str, templates: &[(&str, &str)], values: Option<&str>) {
    let src = dir.join("src").join(name);
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(src.join("Chart.yaml"), format!("apiVersion: v2\nname: {name}\nversion: {version}\n")).unwrap();
    match values {
        Some(v) => std::fs::write(src.join("values.yaml"), v).unwrap(),
        None => {
            let _ = std::fs::remove_file(src.join("values.yaml"));
        }
    }
    for (f, text) in templates {
        std::fs::write(src.join("templates").join(f), text).unwrap();
    }
    let st = Command::new("tar")
        .arg("czf")
        .arg(dir.join(format!("{name}-{version}.tgz")))
        .args(["-C", &dir.join("src").display().to_string(), name])
        .status()
        .unwrap();
    assert!(st.success());
}
