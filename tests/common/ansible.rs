//! The Ansible differential harness shared by tests/ansible_playbooks.rs, ansible_roles.rs and
//! ansible_blocks.rs: a lab site with an ansible.cfg for ansible-playbook (the lab's key and
//! known_hosts, python3 on the hosts), each tool's recap in Ansible's terms (`ok` counting
//! changed tasks too), and the hosts' files compared path by path.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{Site, ansible_cmd, stderr, stdout};

/// A site on `n` fresh lab hosts with the fixture directory `fixture` and an ansible.cfg (the
/// collections scripts/peers-setup.sh extracts: ansible.posix, community.general).
pub fn site(n: usize, fixture: &str) -> Site {
    site_with(n, fixture, super::lab::LabOptions::default())
}

/// `site` on a lab started with `opts` (no fixture copied where `fixture` is empty).
pub fn site_with(n: usize, fixture: &str, opts: super::lab::LabOptions) -> Site {
    let site = Site::hosts_with(n, opts);
    if !fixture.is_empty() {
        site.fixture(fixture);
    }
    let d = site.dir().display().to_string();
    site.write(
        "ansible.cfg",
        format!(
            "[defaults]\ninterpreter_python = /usr/bin/python3\nretry_files_enabled = False\n\
             host_key_checking = True\nlocal_tmp = {d}/home/.ansible/tmp\nforks = 10\n\
             collections_path = {col}\n\
             [ssh_connection]\npipelining = True\n\
             ssh_args = -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes\n\
             control_path_dir = {d}/cp\n",
            kh = site.lab().known_hosts.display(),
            col = Path::new(env!("CARGO_MANIFEST_DIR")).join(".peers/collections").display()
        ),
    );
    site
}

/// ansible-playbook with `args` (the playbook first), which must exit with `status`: its PLAY
/// RECAP as host → the counters named in `keys`.
pub fn ansible_recap<const N: usize>(
    site: &Site,
    args: &[&str],
    status: i32,
    keys: [&str; N],
) -> BTreeMap<String, [u64; N]> {
    let out = ansible_cmd("ansible-playbook")
        .args(["-i", "inventory.ini"])
        .args(args)
        .current_dir(site.dir())
        .env("ANSIBLE_CONFIG", site.path("ansible.cfg"))
        .env("HOME", site.path("home"))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(status), "ansible-playbook {}:\n{text}\n{}", args[0], stderr(&out));
    let mut recap = BTreeMap::new();
    for line in text.lines().skip_while(|l| !l.starts_with("PLAY RECAP")).skip(1) {
        let Some((host, counts)) = line.split_once(" : ") else { continue };
        let get = |k: &str| -> u64 {
            counts
                .split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{k} in {line}"))
        };
        recap.insert(host.trim().to_string(), keys.map(get));
    }
    assert!(!recap.is_empty(), "no recap in:\n{text}");
    recap
}

/// copctl's recap of `copctl run ARGS --output json` (exit `status`) in the same terms: its
/// `ok` plus `changed` is Ansible's `ok`.
pub fn copctl_recap<const N: usize>(
    site: &Site,
    args: &[&str],
    status: i32,
    keys: [&str; N],
) -> BTreeMap<String, [u64; N]> {
    let ran = site.run_json(args, status);
    ran.recap()
        .iter()
        .map(|(h, r)| {
            let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
            (h.clone(), keys.map(|k| if k == "ok" { n("ok") + n("changed") } else { n(k) }))
        })
        .collect()
}

/// Every path under `tracked` on the first `n` hosts: kind, mode, owner, group and content (or
/// a link's target).
pub fn files(site: &Site, n: usize, tracked: &[&str]) -> BTreeMap<String, String> {
    fn walk(root: &Path, shown: &str, out: &mut BTreeMap<String, String>) {
        let Ok(md) = std::fs::symlink_metadata(root) else { return };
        let perm = format!("{:o} {}:{}", md.mode() & 0o7777, md.uid(), md.gid());
        if md.file_type().is_symlink() {
            out.insert(shown.into(), format!("link -> {}", std::fs::read_link(root).unwrap().display()));
        } else if md.is_dir() {
            out.insert(shown.into(), format!("dir {perm}"));
            let mut entries: Vec<_> = std::fs::read_dir(root).unwrap().flatten().map(|e| e.file_name()).collect();
            entries.sort();
            for e in entries {
                walk(&root.join(&e), &format!("{shown}/{}", e.to_string_lossy()), out);
            }
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(root).unwrap()).into_owned();
            out.insert(shown.into(), format!("file {perm}\n{text}"));
        }
    }
    let mut out = BTreeMap::new();
    for i in 0..n {
        let host = &site.lab().hosts[i].name;
        for p in tracked {
            walk(&site.lab().path(i, p), &format!("{host}:{p}"), &mut out);
        }
    }
    out
}

/// Where two hosts' file sets differ, path by path ("" when they are the same).
pub fn files_diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> String {
    let mut d = String::new();
    for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
        if a.get(k) != b.get(k) {
            d.push_str(&format!("{k}:\n  ansible: {:?}\n  copctl:  {:?}\n", a.get(k), b.get(k)));
        }
    }
    d
}
