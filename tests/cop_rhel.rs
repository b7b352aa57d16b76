//! The COP install procedure on RHEL-family and Ubuntu nodes: a lab cluster whose hosts say
//! Rocky 9 (one says Ubuntu 24.04), with the family's doubles (dnf/rpm, firewall-cmd,
//! getenforce, ufw; tests/lab/os.rs). What each family must end with: packages through dnf or
//! apt, chrony's own file and unit, the host firewall's rules for RKE2, the SELinux packages and
//! `selinux: true`, NetworkManager's settings; and a re-run that changes nothing.

mod common;

use common::lab::cop_site::NAMES;
use common::*;
use serde_json::Value;

const UBUNTU: usize = 5; // cop-worker-3
const SELINUX_RPMS: [&str; 2] = ["container-selinux-2.229.0-1.el9.noarch.rpm", "rke2-selinux-0.20-1.el9.noarch.rpm"];

fn idx(name: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == name).unwrap()
}

/// The COP cluster on Rocky 9.4 but cop-worker-3 on Ubuntu 24.04, with the site's settings for
/// them: the SELinux rpms on the bastion, firewalls kept open, resolvers and NTP servers.
fn rocky_cluster() -> Site {
    let c = Site::cop_cluster();
    for i in 0..NAMES.len() {
        if i == UBUNTU {
            c.lab().set_os(i, "ubuntu", "24.04");
        } else {
            c.lab().set_os(i, "rocky", "9.4");
        }
    }
    for rpm in SELINUX_RPMS {
        c.write(&format!("artifacts/{rpm}"), format!("rpm file {rpm}\n"));
    }
    // An administrator turned ufw on (Ubuntu installs it inactive); a cloud image left
    // nm-cloud-setup on.
    c.lab().sh(UBUNTU, "/usr/local/sbin/ufw enable >/dev/null");
    c.lab().sh(
        idx("cop-worker-1"),
        "/usr/local/sbin/systemctl enable nm-cloud-setup.timer && /usr/local/sbin/systemctl start nm-cloud-setup.timer",
    );
    c.edit("env.yaml", |t| {
        t.replace("dns_servers: []", "dns_servers: [10.0.0.53, 10.0.0.54]")
            .replace("ntp_servers: []", "ntp_servers: [ntp1.example.com]")
            .replace("rke2_selinux_rpms: []", &format!("rke2_selinux_rpms: [{}]", SELINUX_RPMS.join(", ")))
            + "host_firewall: open\n"
    });
    c
}

fn read(c: &Site, i: usize, path: &str) -> String {
    std::fs::read_to_string(c.lab().path(i, path)).unwrap_or_else(|e| panic!("{} {path}: {e}", NAMES[i].0))
}

fn exists(c: &Site, i: usize, path: &str) -> bool {
    c.lab().path(i, path).exists()
}

/// What the doubles hold in `/var/lib/copctl-doubles/DIR` on host `i`: file name → text.
fn doubles_state(c: &Site, i: usize, dir: &str) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(c.lab().path(i, &format!("/var/lib/copctl-doubles/{dir}")))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
        .collect()
}

fn yaml_file(c: &Site, i: usize, path: &str) -> Value {
    serde_saphyr::from_str(&read(c, i, path)).unwrap()
}

fn changed_by_host(ran: &Ran) -> std::collections::BTreeMap<String, u64> {
    ran.recap().iter().map(|(h, r)| (h.clone(), r["changed"].as_u64().unwrap())).collect()
}

const INSTALL: [&str; 4] = ["system-setup", "system-dns", "gpu-preinstall", "rke2-install"];

#[test]
fn install_on_rocky_and_ubuntu_ends_in_each_familys_state_and_a_rerun_changes_nothing() {
    let c = rocky_cluster();
    let ev = c.run_json(&INSTALL, 0).events();
    // The operating system is read once per host for the four playbooks.
    for (name, _) in NAMES {
        let reads = ev
            .iter()
            .filter(|e| e["event"] == "task_end" && e["host"] == *name && e["step"] == "operating system")
            .filter(|e| e["status"] != "skipped")
            .count();
        assert_eq!(reads, 1, "{name}");
    }

    let node_ports = ["10250/tcp", "8472/udp", "9099/tcp", "30000-32767/tcp", "80/tcp", "443/tcp"];
    let server_ports = ["9345/tcp", "6443/tcp", "2379-2381/tcp"];
    for (i, (name, group)) in NAMES.iter().enumerate() {
        let calls = c.lab().double_calls(i);
        let cfg = yaml_file(&c, i, "/etc/rancher/rke2/config.yaml");
        if i == UBUNTU {
            // apt, chrony's Debian file and unit, ufw's rules, resolved; no SELinux.
            assert!(calls.iter().any(|l| l == "apt-get install -y -q chrony"), "{name}: {calls:?}");
            assert!(!calls.iter().any(|l| l.starts_with("dnf") || l.starts_with("firewall-cmd")), "{name}: {calls:?}");
            assert!(read(&c, i, "/etc/chrony/chrony.conf").contains("server ntp1.example.com iburst\n"));
            assert!(!exists(&c, i, "/etc/chrony.conf"), "{name}");
            let units = doubles_state(&c, i, "systemd");
            assert!(units.contains_key("chrony.enabled") && units.contains_key("chrony.active"), "{name}: {units:?}");
            let rules = read(&c, i, "/var/lib/copctl-doubles/ufw/rules");
            let want: Vec<String> = node_ports
                .iter()
                .map(|p| format!("{} Anywhere", p.replace('-', ":")))
                .chain(["Anywhere 10.42.0.0/16".into(), "Anywhere 10.43.0.0/16".into()])
                .collect();
            assert_eq!(rules.lines().collect::<Vec<_>>(), want, "{name}");
            assert!(
                read(&c, i, "/etc/systemd/resolved.conf.d/openmaru-cop.conf").contains("DNS=10.0.0.53 10.0.0.54\n")
            );
            assert!(!exists(&c, i, "/etc/NetworkManager/conf.d/90-openmaru-cop-dns.conf"), "{name}");
            assert!(cfg.get("selinux").is_none(), "{name}: {cfg}");
            continue;
        }
        // dnf (never apt), the SELinux packages from the bastion's rpm files, air-gapped.
        assert!(!calls.iter().any(|l| l.starts_with("apt-get") || l.starts_with("ufw")), "{name}: {calls:?}");
        assert!(calls.iter().any(|l| l == "dnf install -y chrony"), "{name}: {calls:?}");
        let rpms: Vec<String> = SELINUX_RPMS.iter().map(|r| format!("/var/tmp/copctl-rke2/{r}")).collect();
        assert!(
            calls.iter().any(|l| *l == format!("dnf install -y --disablerepo=* {}", rpms.join(" "))),
            "{name}: {calls:?}"
        );
        let db = doubles_state(&c, i, "rpm");
        assert_eq!(db["container-selinux"], "container-selinux-2.229.0-1.el9.noarch\n", "{name}");
        assert_eq!(db["rke2-selinux"], "rke2-selinux-0.20-1.el9.noarch\n", "{name}");
        assert_eq!(cfg["selinux"], Value::Bool(true), "{name}: {cfg}");
        // chrony as RHEL has it: /etc/chrony.conf, chronyd.
        assert!(read(&c, i, "/etc/chrony.conf").contains("server ntp1.example.com iburst\n"), "{name}");
        assert!(!exists(&c, i, "/etc/chrony/chrony.conf"), "{name}");
        let units = doubles_state(&c, i, "systemd");
        assert!(units.contains_key("chronyd.enabled") && units.contains_key("chronyd.active"), "{name}: {units:?}");
        assert!(!units.contains_key("chrony.enabled"), "{name}: {units:?}");
        // firewalld kept running, RKE2's ports (a server's too on servers) and the cluster's
        // networks trusted, permanently and loaded.
        assert!(units.contains_key("firewalld.active"), "{name}: {units:?}");
        let mut want: Vec<String> = Vec::new();
        if *group == "masters" {
            want.extend(server_ports.iter().map(|p| format!("port {p}")));
        }
        want.extend(node_ports.iter().map(|p| format!("port {p}")));
        assert_eq!(read(&c, i, "/var/lib/copctl-doubles/firewalld/permanent/public").lines().collect::<Vec<_>>(), want);
        assert_eq!(
            read(&c, i, "/var/lib/copctl-doubles/firewalld/permanent/trusted").lines().collect::<Vec<_>>(),
            ["source 10.42.0.0/16", "source 10.43.0.0/16"]
        );
        assert_eq!(
            read(&c, i, "/var/lib/copctl-doubles/firewalld/runtime/public"),
            read(&c, i, "/var/lib/copctl-doubles/firewalld/permanent/public"),
            "{name}: the permanent rules were not loaded"
        );
        // NetworkManager: CNI interfaces unmanaged, the cluster's resolvers (no systemd-resolved).
        assert!(read(&c, i, "/etc/NetworkManager/conf.d/rke2-canal.conf").contains("interface-name:cali*"));
        assert_eq!(
            read(&c, i, "/etc/NetworkManager/conf.d/90-openmaru-cop-dns.conf"),
            "[global-dns]\nsearches=cop.example.com\n\n[global-dns-domain-*]\nservers=10.0.0.53,10.0.0.54\n"
        );
        assert!(!exists(&c, i, "/etc/systemd/resolved.conf.d/openmaru-cop.conf"), "{name}");
        assert!(calls.iter().any(|l| l == "systemctl reload NetworkManager"), "{name}: {calls:?}");
        if *group == "gpu" {
            assert!(calls.iter().any(|l| l == "dracut -f --regenerate-all"), "{name}: {calls:?}");
            assert!(calls.iter().any(|l| l.starts_with("dnf install -y kernel-devel-")), "{name}: {calls:?}");
        }
    }
    // nm-cloud-setup was turned off where it was on.
    let units = doubles_state(&c, idx("cop-worker-1"), "systemd");
    assert!(
        !units.contains_key("nm-cloud-setup.timer.enabled") && !units.contains_key("nm-cloud-setup.timer.active"),
        "{units:?}"
    );

    // Re-run: nothing changes, nothing is installed, reloaded or restarted again.
    let before: Vec<usize> = (0..NAMES.len()).map(|i| c.lab().double_calls(i).len()).collect();
    let ran = c.run_json(&INSTALL, 0);
    assert!(changed_by_host(&ran).values().all(|n| *n == 0), "{:?}", changed_by_host(&ran));
    for (i, (name, _)) in NAMES.iter().enumerate() {
        let new: Vec<String> = c.lab().double_calls(i)[before[i]..].to_vec();
        assert!(
            !new.iter().any(|l| l.starts_with("dnf install")
                || l.starts_with("apt-get install")
                || l.contains("--reload")
                || l.contains("--add-")
                || l.contains("restart")
                || l.contains("reload")
                || l.starts_with("install.sh")),
            "{name}: {new:?}"
        );
    }
}

#[test]
fn firewalld_is_stopped_by_default_and_selinux_needs_its_rpms() {
    let c = Site::cop_cluster();
    let w1 = idx("cop-worker-1");
    c.lab().set_os(w1, "rocky", "8.10");
    // The site's default: the host firewall stopped (RKE2's advice), no rpm files named.
    c.run_json(&["system-setup", "--limit", "cop-worker-1"], 0);
    let units = doubles_state(&c, w1, "systemd");
    assert!(!units.contains_key("firewalld.active") && !units.contains_key("firewalld.enabled"), "{units:?}");
    // The cluster installs; the Rocky node stops before RKE2 is touched, saying what to add.
    let ev = c.run_json(&["rke2-install"], 2).events();
    let failed: Vec<(&str, &str)> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["status"] == "failed")
        .map(|e| (e["step"].as_str().unwrap(), e["msg"].as_str().unwrap()))
        .collect();
    assert_eq!(
        failed,
        [(
            "SELinux packages named",
            "SELinux is enforcing on cop-worker-1 (rocky 8.10): RKE2 needs the container-selinux and rke2-selinux \
             rpms; put them in rke2_artifact_dir and list their file names in env.yaml's rke2_selinux_rpms"
        )]
    );
    // SELinux off: nothing to install, no `selinux: true`.
    c.lab().sh(w1, "echo Disabled > /var/lib/copctl-doubles/selinux");
    c.run_json(&["rke2-install", "--limit", "cop-worker-1"], 0);
    let cfg = yaml_file(&c, w1, "/etc/rancher/rke2/config.yaml");
    assert!(cfg.get("selinux").is_none(), "{cfg}");
    assert!(!doubles_state(&c, w1, "rpm").contains_key("rke2-selinux"));
    assert!(std::fs::read_to_string(c.lab().root.join("cluster/joins")).unwrap().contains("cop-worker-1 agent"));
}

#[test]
fn an_operating_system_copctl_does_not_set_up_stops_its_host_naming_it() {
    let c = Site::cop_cluster();
    c.lab().set_os(idx("cop-worker-1"), "arch", "");
    c.lab().set_os(idx("cop-worker-2"), "ubuntu", "20.04");
    c.lab().set_os(idx("cop-worker-3"), "rocky", "7.9");
    let ev = c.run_json(&["system-setup", "--limit", "workers"], 2).events();
    let mut failed: Vec<(String, String)> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["status"] == "failed")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["msg"].as_str().unwrap().to_string()))
        .collect();
    failed.sort();
    let why = "in /etc/os-release is not supported: copctl sets up Rocky/RHEL 8 and 9 (and AlmaLinux, CentOS Stream, \
               Oracle Linux), Ubuntu 22.04 and 24.04, and Debian 11 or later";
    let want: Vec<(String, String)> = [
        ("cop-worker-1", "ID=arch"),
        ("cop-worker-2", "ID=ubuntu ID_LIKE=\"debian\" VERSION_ID=20.04"),
        ("cop-worker-3", "ID=rocky ID_LIKE=\"rhel centos fedora\" VERSION_ID=7.9"),
    ]
    .iter()
    .map(|(h, what)| (h.to_string(), format!("non-zero return code 1: {h}: {what} {why}")))
    .collect();
    assert_eq!(failed, want);
    // Nothing else ran on them.
    for w in ["cop-worker-1", "cop-worker-2", "cop-worker-3"] {
        let ran: Vec<&str> = ev
            .iter()
            .filter(|e| e["event"] == "task_end" && e["host"] == w && e["status"] != "skipped")
            .map(|e| e["step"].as_str().unwrap())
            .collect();
        assert_eq!(ran, ["operating system"], "{w}");
    }
}
