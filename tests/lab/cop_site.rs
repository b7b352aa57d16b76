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
            "reboot",
            "lab-boot",
        ]);
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
        // The NVIDIA driver runfile double: records itself, "loads" its version, and leaves an
        // nvidia-uninstall behind, as the real installer does.
        let nv = dir.join("nvidia");
        std::fs::create_dir_all(&nv).unwrap();
        std::fs::write(
            nv.join("NVIDIA-Linux-x86_64-580.95.05.run"),
            "#!/bin/sh\necho \"nvidia-installer $*\" >> /var/log/copctl-doubles.log\nmkdir -p /var/lib/copctl-doubles/nvidia\n\
             echo 580.95.05 > /var/lib/copctl-doubles/nvidia/version\n\
             printf '#!/bin/sh\\necho \"nvidia-uninstall $*\" >> /var/log/copctl-doubles.log\\nrm -f /var/lib/copctl-doubles/nvidia/version\\n' > /usr/local/sbin/nvidia-uninstall\n\
             chmod 755 /usr/local/sbin/nvidia-uninstall\n",
        )
        .unwrap();
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
                "registry_ca_file: /etc/openmaru-cop/certs/registry-ca.crt",
                &format!("registry_ca_file: {}", ca.display()),
            );
        std::fs::write(dir.join("env.yaml"), env).unwrap();
        std::fs::create_dir(dir.join("home")).unwrap();
        CopSite { lab, dir: dir.to_path_buf() }
    }
}
