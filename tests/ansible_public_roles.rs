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
//!
//! From the same collection (GPL-3.0, © the community.mongodb authors): `mongodb_mongod` (a
//! server's package, data directory, config file and keyfile, a systemd drop-in, service,
//! logrotate) and `mongodb_repository` (apt_key and apt_repository, which copctl lacks). The
//! `ansible` package carries no time-sync or hardening role.

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

/// Both tools apply `playbook` twice, each to its own fresh site from `make`: after each run the
/// `tracked` paths and the recap counts are the same; `ran` is a path the role must have written.
fn same_as_ansible(make: impl Fn() -> Site, playbook: &str, tracked: &[&str], ran: &str) {
    let (theirs, ours) = (make(), make());
    for run in ["first run", "re-run"] {
        let a: BTreeMap<String, [u64; 5]> = ansible::ansible_recap(&theirs, &[playbook], 0, KEYS);
        let b = ansible::copctl_recap(&ours, &[playbook], 0, KEYS);
        eprintln!("{playbook} {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (ansible::files(&theirs, 2, tracked), ansible::files(&ours, 2, tracked));
        assert!(sb.contains_key(&format!("lab-1:{ran}")), "the role ran: {sb:?}");
        assert_eq!(ansible::files_diff(&sa, &sb), "", "{playbook} {run}: the hosts' files differ");
        assert_eq!(a, b, "{playbook} {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

#[test]
fn mongodb_linux_ends_as_ansible_leaves_it() {
    same_as_ansible(
        || site("community/mongodb", "mongodb_linux"),
        "mongodb-linux.yml",
        TRACKED,
        "/etc/security/limits.conf",
    );
}

/// What `mongodb_mongod` changes on a host.
/// community.mongodb's `mongodb_repository` adds MongoDB's apt (or yum) repository with
/// `apt_key` and `apt_repository` (`rpm_key`, `yum_repository`), which copctl does not have. The
/// role reaches them through `include_tasks: "{{ ansible_facts.os_family }}.yml"`, a dynamic
/// include: before anything runs, copctl names each file:line and the module it lacks, for each
/// file the include may pick, and a host that picks one fails there.
#[test]
fn mongodb_repository_names_the_modules_copctl_lacks_before_it_runs() {
    let site = site("community/mongodb", "mongodb_repository");
    let out = site.command(["run", "mongodb-repository.yml"]).output().unwrap();
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let inc = "warning: roles/mongodb_repository/tasks/main.yml:4:18: include_tasks \
               '{{ ansible_facts.os_family }}.yml' may pick";
    let cannot = "which copctl cannot run (a host that picks it fails there)";
    for (file, line, module) in [
        ("Debian", "16:3", "apt_key"),
        ("Debian", "29:3", "apt_repository"),
        ("RedHat", "4:3", "rpm_key"),
        ("RedHat", "17:3", "yum_repository"),
    ] {
        let want = format!(
            "{inc} {file}.yml, {cannot}: roles/mongodb_repository/tasks/{file}.yml:{line}: module '{module}' is not supported yet\n"
        );
        assert!(err.contains(&want), "copctl run does not say\n{want}in\n{err}");
    }
    eprintln!("{err}");
}
