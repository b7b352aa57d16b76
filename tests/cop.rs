//! The COP procedures on lab hosts named like a real cluster (test doubles stand in for
//! systemd, kernel modules, sysctl and packages; every call is logged on its host).

mod common;
mod lab;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::*;
use lab::{Lab, LabOptions};
use serde_json::Value;

const NAMES: &[(&str, &str)] = &[
    ("cop-master-1", "masters"),
    ("cop-worker-1", "workers"),
    ("cop-worker-2", "workers"),
    ("cop-worker-3", "workers"),
];

struct Cluster {
    lab: Lab,
    dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let lab = Lab::start(NAMES.len(), LabOptions::default());
        lab.install_doubles(&["systemctl", "apt-get", "dpkg-query", "modprobe", "lsmod", "sysctl", "hostnamectl"]);
        let dir = tempfile::tempdir().unwrap();
        let mut inv = String::new();
        for group in ["masters", "workers"] {
            inv.push_str(&format!("[{group}]\n"));
            for (i, (name, g)) in NAMES.iter().enumerate() {
                if *g == group {
                    inv.push_str(&format!("{name} ansible_host={}\n", lab.hosts[i].addr));
                }
            }
        }
        inv.push_str(&format!(
            "[cluster:children]\nmasters\nworkers\n[cluster:vars]\nansible_user=root\nansible_ssh_private_key_file={}\n",
            lab.client_key.display()
        ));
        std::fs::write(dir.path().join("inventory.ini"), inv).unwrap();
        std::fs::copy(repo().join("inventory/env.yaml"), dir.path().join("env.yaml")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Cluster { lab, dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn copctl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_copctl"))
            .args(args)
            .args(["-i", "inventory.ini", "--known-hosts"])
            .arg(self.lab.known_hosts.to_str().unwrap())
            .current_dir(self.dir.path())
            .env("HOME", self.path("home"))
            .env("NO_COLOR", "1")
            .env_remove("SSH_AUTH_SOCK")
            .output()
            .unwrap()
    }

    fn run_json(&self, args: &[&str]) -> (Option<i32>, Vec<Value>) {
        let mut a = vec!["run"];
        a.extend(args);
        a.extend(["--output", "json"]);
        let o = self.copctl(&a);
        (o.status.code(), stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
    }
}

fn changed_by_host(ev: &[Value]) -> std::collections::BTreeMap<String, u64> {
    ev.iter().find(|e| e["event"] == "run_end").unwrap()["recap"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(h, r)| (h.clone(), r["changed"].as_u64().unwrap()))
        .collect()
}

#[test]
fn system_setup_and_dns_converge_and_rerun_changes_nothing() {
    let c = Cluster::start();
    let (code, ev) = c.run_json(&["system-setup", "system-dns"]);
    assert_eq!(code, Some(0), "{ev:?}");
    let hosts = std::fs::read_to_string(c.lab.path(1, "/etc/hosts")).unwrap();
    for (i, (name, _)) in NAMES.iter().enumerate() {
        assert!(hosts.contains(&format!("{} {name}\n", c.lab.hosts[i].addr)), "{hosts}");
    }
    assert!(
        hosts.contains("192.0.2.100 registry.cop.example.com") && hosts.contains("# BEGIN OPENMARU COP HOSTS (copctl)"),
        "{hosts}"
    );
    let calls = c.lab.double_calls(2);
    for want in
        ["hostnamectl set-hostname cop-worker-2", "modprobe overlay", "modprobe br_netfilter", "sysctl --system"]
    {
        assert!(calls.iter().any(|x| x == want), "missing `{want}` in {calls:?}");
    }
    assert!(
        std::fs::read_to_string(c.lab.path(2, "/etc/sysctl.d/90-rke2.conf"))
            .unwrap()
            .contains("net.ipv4.ip_forward = 1")
    );
    // A second run changes nothing and restarts nothing.
    let (code, ev) = c.run_json(&["system-setup", "system-dns"]);
    assert_eq!(code, Some(0));
    assert!(changed_by_host(&ev).values().all(|n| *n == 0), "{:?}", changed_by_host(&ev));
    assert_eq!(c.lab.double_calls(2).iter().filter(|x| *x == "sysctl --system").count(), 1);
}

#[test]
fn node_setup_limited_to_the_new_worker_touches_nothing_else() {
    let c = Cluster::start();
    let before: Vec<Vec<String>> = (0..NAMES.len()).map(|i| c.lab.double_calls(i)).collect();
    let (code, ev) = c.run_json(&["system-setup", "system-dns", "--limit", "cop-worker-3"]);
    assert_eq!(code, Some(0));
    let touched: std::collections::BTreeSet<&str> =
        ev.iter().filter(|e| e["event"] == "task_start").map(|e| e["host"].as_str().unwrap()).collect();
    assert_eq!(touched.into_iter().collect::<Vec<_>>(), ["cop-worker-3"]);
    for i in 0..3 {
        assert_eq!(c.lab.double_calls(i), before[i], "{} was touched", NAMES[i].0);
        assert!(
            !std::fs::read_to_string(c.lab.path(i, "/etc/hosts")).unwrap_or_default().contains("OPENMARU COP HOSTS")
        );
    }
}
