//! Public Ansible roles run unchanged by copctl against ansible-playbook itself: the roles come
//! from the `ansible` package on PyPI (scripts/peers-setup.sh extracts them into
//! .peers/collections; they are not part of this repository), are copied into a site as a site
//! would vendor them, and run by both tools twice on fresh lab hosts with the test doubles (the
//! kernel's sysctl values, systemd's units, the package manager). After each run the hosts'
//! files and what the doubles recorded are the same, and so are the per-host recap counts.
//!
//! community.mongodb's `mongodb_linux` (GPL-3.0, © the community.mongodb authors): a node
//! preparation role — OS-specific variables picked with include_vars and a first_found lookup,
//! set_fact, a block guarded by virtualization facts, sysctl, package (present and latest),
//! a systemd override file, service, copy of a unit from a ternary, systemd daemon_reexec,
//! stat, pam_limits over with_nested, sysctl over a loop.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

/// What the role changes on a host: compared path by path.
const TRACKED: &[&str] = &[
    "/etc/sysctl.conf",
    "/etc/security/limits.conf",
    "/etc/systemd/system/manage-transparent-huge-pages.service",
    "/lib/systemd/system/systemd-timesyncd.service.d",
    "/var/lib/copctl-doubles/sysctl",
    "/var/lib/copctl-doubles/systemd",
    "/var/lib/copctl-doubles/dpkg",
];

/// A site holding the public role `collection/roles/role` and a playbook applying it.
fn site(collection: &str, role: &str) -> Site {
    let site = ansible::site(2, "ansible-public-roles");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(".peers/collections/ansible_collections").join(collection);
    let from = src.join("roles").join(role);
    assert!(from.is_dir(), "{} is missing: run scripts/peers-setup.sh", from.display());
    copy_tree(&from, &site.path(&format!("roles/{role}")));
    site.lab().install_doubles(&["sysctl", "systemctl", "apt-get", "dpkg-query"]);
    // Booted by systemd, as the role's nodes are (Ansible's facts look for /run/systemd/system).
    // Ansible's service module runs /usr/bin/systemctl by that path (it looks in /usr/bin before
    // PATH): the double takes its place in the host's own root. An air-gapped node has no
    // package lists: `latest` is then what is installed for both tools (python-apt's cache and
    // apt-cache read the same), whatever the test machine's own lists offer.
    for i in 0..2 {
        site.lab().sh(
            i,
            "mkdir -p /run/systemd/system && cp /usr/local/sbin/systemctl /usr/bin/systemctl \
             && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin",
        );
    }
    site
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn mongodb_linux_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site("community/mongodb", "mongodb_linux"), site("community/mongodb", "mongodb_linux"));
    for run in ["first run", "re-run"] {
        let a: BTreeMap<String, [u64; 5]> = ansible::ansible_recap(&theirs, &["mongodb-linux.yml"], 0, KEYS);
        let b = ansible::copctl_recap(&ours, &["mongodb-linux.yml"], 0, KEYS);
        eprintln!("mongodb_linux {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (ansible::files(&theirs, 2, TRACKED), ansible::files(&ours, 2, TRACKED));
        assert!(sb.contains_key("lab-1:/etc/security/limits.conf"), "the role ran: {sb:?}");
        assert_eq!(ansible::files_diff(&sa, &sb), "", "mongodb_linux {run}: the hosts' files differ");
        assert_eq!(a, b, "mongodb_linux {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}
