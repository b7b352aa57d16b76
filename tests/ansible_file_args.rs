//! The file and template modules' Ansible arguments that ansible-core's own targets leave
//! unpinned (tests/fixtures/ansible-file-args/), run by copctl and by ansible-playbook (the
//! oracle) on fresh lab hosts, twice each: the hosts' files (kinds, modes, owners, contents,
//! link targets) and the recap counts must be the same after each run.

mod common;

use common::*;

const TRACKED: &[&str] = &["/opt/fa", "/opt/ta"];

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

fn same_as_ansible(playbook: &str) {
    let (theirs, ours) = (ansible::site(1, "ansible-file-args"), ansible::site(1, "ansible-file-args"));
    for run in ["first run", "re-run"] {
        let a = ansible::ansible_recap(&theirs, &[playbook], 0, KEYS);
        let b = ansible::copctl_recap(&ours, &[playbook], 0, KEYS);
        eprintln!("{playbook} {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (ansible::files(&theirs, 1, TRACKED), ansible::files(&ours, 1, TRACKED));
        assert!(!sa.is_empty(), "{playbook}: nothing tracked was written");
        assert_eq!(ansible::files_diff(&sa, &sb), "", "{playbook} {run}: the hosts' files differ");
        assert_eq!(a, b, "{playbook} {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

#[test]
fn file_arguments_end_as_ansible_leaves_them() {
    same_as_ansible("file-args.yml");
}

#[test]
fn template_arguments_end_as_ansible_leaves_them() {
    same_as_ansible("template-args.yml");
}

#[test]
fn more_modules_end_as_ansible_leaves_them() {
    same_as_ansible("more-modules.yml");
}
