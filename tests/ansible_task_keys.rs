//! Ansible task keywords and loop forms run by copctl against ansible-playbook itself (the
//! oracle, ansible-core in the peers' venv), for rules ansible-core's integration targets do not
//! pin: tests/fixtures/ansible-task-keys/. keys.yml (`check_mode` and `diff` per task and per
//! block, `ansible_check_mode`, debug `verbosity`, assert `quiet` and its messages, `timeout`)
//! runs plain and under `--check`; loops.yml (`with_sequence`'s forms, `with_list`,
//! `with_together`, `loop_control` `extended` and `pause`, a loop's `when` per item, an empty
//! loop, `include_tasks` per item, `ping` data) runs twice. After each run the hosts' files and
//! the recap counts must be the same as Ansible's.

mod common;

use std::collections::BTreeMap;

use common::*;
use serde_json::json;

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];
type Recap = BTreeMap<String, [u64; 5]>;

fn site() -> Site {
    let site = ansible::site(1, "ansible-task-keys");
    site.lab().sh(0, "mkdir -p /opt");
    site
}

fn state(site: &Site) -> BTreeMap<String, String> {
    ansible::files(site, 1, &["/opt/keys"])
}

/// Each run of `runs` (copctl's and ansible-playbook's arguments) by both tools on their own
/// fresh host, in turn: the same files and the same recap after each.
fn same_as_ansible(runs: &[&[&str]]) {
    let (theirs, ours) = (site(), site());
    for args in runs {
        let a: Recap = ansible::ansible_recap(&theirs, args, 0, KEYS);
        let b: Recap = ansible::copctl_recap(&ours, args, 0, KEYS);
        eprintln!("{args:?}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs), state(&ours));
        assert!(!sa.is_empty(), "{args:?}: nothing tracked was written");
        assert_eq!(ansible::files_diff(&sa, &sb), "", "{args:?}: the hosts' files differ");
        assert_eq!(a, b, "{args:?}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

#[test]
fn check_mode_and_diff_per_task_end_as_ansible_leaves_them() {
    same_as_ansible(&[&["keys.yml", "--check"], &["keys.yml"], &["keys.yml", "--check", "--diff"]]);
}

#[test]
fn loop_forms_end_as_ansible_leaves_them() {
    same_as_ansible(&[&["loops.yml"], &["loops.yml"]]);
}

/// debug `verbosity`: skipped below that many `-v`, as Ansible skips it; shown at it.
#[test]
fn debug_verbosity_runs_at_v() {
    let site = site();
    site.write(
        "verbose.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: shown only at -v\n      debug: {msg: hidden, verbosity: 1}\n",
    );
    let status = |r: &Ran| {
        r.events()
            .into_iter()
            .find(|e| e["event"] == "task_end" && e["step"] == "shown only at -v")
            .map(|e| (e["status"].clone(), e["msg"].clone()))
    };
    let quiet = site.run_json(&["verbose.yml"], 0);
    assert_eq!(status(&quiet), Some((json!("skipped"), json!("Verbosity threshold not met."))));
    let loud = site.run_json(&["verbose.yml", "-v"], 0);
    assert_eq!(status(&loud), Some((json!("ok"), json!("hidden"))));
}
