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

/// `no_log` on a task, a block (a task inside saying `no_log: false` shows) and a play: nothing
/// the hidden tasks print reaches the terminal, the JSON events or the run's log, in success or
/// failure; what they register is whole (a later task may show it); the recap is Ansible's.
#[test]
fn no_log_hides_a_tasks_output_everywhere_and_registers_it_whole() {
    let (theirs, ours) = (site(), site());
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: a secret printed
      command: echo hidden-one
      register: one
      no_log: true
      changed_when: false
    - name: a secret in a failure
      shell: echo hidden-two >&2; exit 3
      no_log: true
      ignore_errors: true
    - block:
        - name: a secret in a block
          debug: msg=hidden-three
        - name: shown in the block
          debug: msg=shown-four
          no_log: false
      no_log: true
    - name: what was registered is whole
      debug: msg="{{ one.stdout | replace('hidden', 'was') }}"
- hosts: all
  gather_facts: false
  no_log: true
  tasks:
    - name: a secret in a play that hides its tasks
      file: path=/opt/keys/hidden-five state=directory mode=0755
"#;
    for s in [&theirs, &ours] {
        s.write("no_log.yml", playbook);
    }
    let a: Recap = ansible::ansible_recap(&theirs, &["no_log.yml"], 0, KEYS);
    let b: Recap = ansible::copctl_recap(&ours, &["no_log.yml"], 0, KEYS);
    assert_eq!(a, b, "no_log.yml: recap counts [ok, changed, failed, skipped, ignored] differ");
    let human = ours.test().arg("run").arg("no_log.yml").arg("-v").status(0).run();
    let json = ours.run_json(&["no_log.yml"], 0);
    let log: String = std::fs::read_dir(ours.path(".copctl/runs"))
        .map(|d| {
            d.flatten()
                .flat_map(|e| walk_files(&e.path()))
                .map(|p| std::fs::read_to_string(p).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    assert!(log.contains("what was registered is whole"), "the run log was read: {log}");
    for (what, text) in [("terminal", human.stdout.clone()), ("JSON events", json.stdout.clone()), ("run log", log)] {
        for secret in ["hidden-one", "hidden-two", "hidden-three", "hidden-five"] {
            assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
        }
        if what != "run log" {
            assert!(text.contains("shown-four") && text.contains("was-one"), "{what} hides too much:\n{text}");
            assert!(text.contains("'no_log: true' was specified for this result"), "{what}:\n{text}");
        }
    }
}

fn walk_files(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    if p.is_dir() {
        std::fs::read_dir(p).unwrap().flatten().flat_map(|e| walk_files(&e.path())).collect()
    } else {
        vec![p.to_path_buf()]
    }
}
