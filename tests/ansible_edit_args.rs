//! lineinfile, blockinfile and replace arguments (validate, backup, firstmatch, search_string,
//! backrefs, marker_begin/end, a mode-only change, look-ahead, a missing section) and copy into
//! a directory, run by copctl against ansible-playbook itself on fresh lab hosts
//! (tests/fixtures/ansible-edit-args/): the rules ansible-core's own targets leave out or check
//! only through a checksum. After each run the hosts' files and the recap counts must be the
//! same; the playbook's own asserts pin the returned values (messages, backup names, counts).

mod common;

use common::*;

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

#[test]
fn edit_arguments_end_as_ansible_leaves_them() {
    let playbook = "edit-args.yml";
    let (theirs, ours) = (ansible::site(1, "ansible-edit-args"), ansible::site(1, "ansible-edit-args"));
    let v = ours.command(["validate", playbook]).output().unwrap();
    assert!(v.status.success(), "copctl validate {playbook}:\n{}", stderr(&v));
    for run in ["first run", "re-run"] {
        let a = ansible::ansible_recap(&theirs, &[playbook], 0, KEYS);
        let b = ansible::copctl_recap(&ours, &[playbook], 0, KEYS);
        eprintln!("{playbook} {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (ansible::files(&theirs, 1, &["/opt/edit"]), ansible::files(&ours, 1, &["/opt/edit"]));
        assert!(sa.keys().any(|k| k.ends_with("/opt/edit/site.conf")), "{playbook}: copy into a directory: {sa:?}");
        assert_eq!(ansible::files_diff(&sa, &sb), "", "{playbook} {run}: the hosts' files differ");
        assert_eq!(a, b, "{playbook} {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}
