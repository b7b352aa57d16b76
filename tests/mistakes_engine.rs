//! Operator mistakes the engine must stop on, never pass over in silence (issue 12, items 6-11):
//! template-valued play and step vars, a `--start-at` naming no step, a play pattern naming no
//! group, a serial batch that fails whole, a play whose needed play failed, and signals in every
//! phase of a run. Each test pins the whole message line and the exit code.

mod common;
use common::lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;
use common::*;
use lab::{Lab, LabOptions};
use serde_json::Value;

/// A copy of tests/fixtures/site with the lab's inventory and `playbooks` written into it.
struct Site<'a> {
    lab: &'a Lab,
    dir: tempfile::TempDir,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

impl<'a> Site<'a> {
    fn new(lab: &'a Lab, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixture("site"), dir.path());
        std::fs::create_dir(dir.path().join("home")).unwrap();
        lab.write_inventory(&dir.path().join("inventory.ini"), "");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        Site { lab, dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("copctl").unwrap();
        c.args(args)
            .args(["-i", "inventory.ini", "--known-hosts"])
            .arg(&self.lab.known_hosts)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("SSH_AUTH_SOCK");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn run_json(&self, args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
        let mut a = args.to_vec();
        a.extend(["--output", "json"]);
        let o = self.run(&a);
        let events = stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (o.status.code(), events, stderr(&o))
    }
}

/// The line of `text` that starts with `start` (after the error marker and blanks).
fn line<'t>(text: &'t str, start: &str) -> Option<&'t str> {
    text.lines().map(|l| l.trim_start().trim_start_matches("x ").trim_start()).find(|l| l.starts_with(start))
}

#[test]
fn play_and_step_vars_holding_templates_are_rendered_where_they_are_used() {
    let lab = Lab::start(2, LabOptions::default());
    let site = Site::new(
        &lab,
        &[
            (
                "playbooks/lazy.yaml",
                "description: template-valued vars (test playbook)\n\
                 plays:\n\
                 \x20 - name: lazy\n\
                 \x20   hosts: lab\n\
                 \x20   vars: { node_token: \"{{ inventory_hostname }}-x\", token_file: \"/var/tmp/{{ node_token }}.conf\" }\n\
                 \x20   steps:\n\
                 \x20     - name: token file\n\
                 \x20       vars: { greeting: \"hello {{ node_token }}\" }\n\
                 \x20       when: node_token == inventory_hostname ~ '-x'\n\
                 \x20       template: { src: token.j2, dest: \"{{ token_file }}\", mode: \"0644\" }\n",
            ),
            ("templates/token.j2", "token: {{ node_token }}\n{{ greeting }}\n"),
        ],
    );
    let (code, ev, err) = site.run_json(&["run", "lazy"]);
    assert_eq!(code, Some(0), "{err}\n{ev:?}");
    assert_eq!(
        std::fs::read_to_string(lab.path(1, "/var/tmp/lab-2-x.conf")).unwrap(),
        "token: lab-2-x\nhello lab-2-x\n"
    );
    // Variables that refer to each other: an error naming them, before any host is touched.
    std::fs::write(
        site.path("playbooks/cycle.yaml"),
        "description: a cycle (test playbook)\nplays:\n  - name: cycle\n    hosts: lab\n    vars: { a: \"{{ b }}\", b: \"x{{ a }}\" }\n    steps:\n      - name: use\n        shell: echo {{ a }}\n",
    )
    .unwrap();
    let o = site.run(&["run", "cycle"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        line(&err, "playbooks/cycle.yaml"),
        Some("playbooks/cycle.yaml:8:16: step 'use' on lab-1: variables refer to each other in a cycle: a → b → a"),
        "{err}"
    );
}

#[test]
fn start_at_naming_no_step_is_an_error_with_the_closest_names() {
    let o = copctl(None, &["run", "rke2-install", "--start-at", "instal rke2"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        line(&err, "--start-at"),
        Some("--start-at 'instal rke2' names no planned step of rke2-install"),
        "{err}"
    );
    assert_eq!(line(&err, "help:"), Some("help: did you mean: install rke2?"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
}

#[test]
fn a_play_pattern_naming_no_group_and_a_missing_required_group_are_errors() {
    let o = copctl(None, &["run", "rolling-restart", "-e", "target_group=worker"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        line(&err, "playbooks/rolling-restart.yaml"),
        Some(
            "playbooks/rolling-restart.yaml:17:1: play 'servers': hosts 'worker:&masters': 'worker' is no group or \
             host of inventory/inventory.ini"
        ),
        "{err}"
    );
    assert_eq!(line(&err, "help:"), Some("help: did you mean: workers?"), "{err}");
    // The shipped playbooks' `cluster` group, called otherwise in this inventory.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("inventory.ini"),
        "[masters]\nm1\n[workers]\nw1\n[gpu]\n[k8s_cluster:children]\nmasters\nworkers\ngpu\n",
    )
    .unwrap();
    let o = copctl(Some(dir.path()), &["-i", "inventory.ini", "run", "system-setup"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert_eq!(
        line(&err, "playbooks/system-setup.yaml"),
        Some(
            "playbooks/system-setup.yaml:3:1: system-setup needs the inventory group 'cluster' (every node of the \
             Kubernetes cluster (masters, workers and gpu)): inventory.ini has none"
        ),
        "{err}"
    );
    assert_eq!(
        line(&err, "help:"),
        Some("help: did you mean: k8s_cluster? name the group [cluster] in inventory.ini"),
        "{err}"
    );
}

#[test]
fn a_serial_batch_that_fails_on_every_host_stops_the_play() {
    let lab = Lab::start(4, LabOptions::default());
    let site = Site::new(
        &lab,
        &[(
            "playbooks/batches.yaml",
            "description: a whole batch fails (test playbook)\n\
             plays:\n\
             \x20 - name: rolling\n\
             \x20   hosts: lab\n\
             \x20   serial: 2\n\
             \x20   steps:\n\
             \x20     - name: enter\n\
             \x20       shell: touch /var/tmp/entered\n\
             \x20     - name: fails on the first two\n\
             \x20       shell: \"[ {{ inventory_hostname }} != lab-1 ] && [ {{ inventory_hostname }} != lab-2 ]\"\n",
        )],
    );
    let o = site.run(&["run", "batches"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        line(&out, "play 'rolling' stopped"),
        Some(
            "play 'rolling' stopped: 2 of 2 host(s) failed in batch 1 (every host of the batch failed); the \
             remaining batches and the plays that need it do not run"
        ),
        "{out}"
    );
    for i in 2..4 {
        assert!(!lab.path(i, "/var/tmp/entered").exists(), "batch 2 ran on lab-{}", i + 1);
    }
}

#[test]
fn a_play_whose_needed_play_failed_everywhere_does_not_run() {
    let lab = Lab::start(2, LabOptions::default());
    let site = Site::new(
        &lab,
        &[(
            "playbooks/needs.yaml",
            "description: the needed play fails (test playbook)\n\
             plays:\n\
             \x20 - name: operator\n\
             \x20   hosts: lab[0]\n\
             \x20   steps:\n\
             \x20     - name: install\n\
             \x20       shell: \"false\"\n\
             \x20 - name: label\n\
             \x20   hosts: lab[1]\n\
             \x20   needs: [operator]\n\
             \x20   steps:\n\
             \x20     - name: label the node\n\
             \x20       shell: touch /var/tmp/labelled\n\
             \x20 - name: use\n\
             \x20   hosts: lab[1]\n\
             \x20   needs: [label]\n\
             \x20   steps:\n\
             \x20     - name: use the label\n\
             \x20       shell: touch /var/tmp/used\n",
        )],
    );
    let (code, ev, err) = site.run_json(&["run", "needs"]);
    assert_eq!(code, Some(2), "{err}\n{ev:?}");
    assert!(!lab.path(1, "/var/tmp/labelled").exists(), "the play ran after the play it needs failed");
    // Nor does a play that needs the play that did not run.
    assert!(!lab.path(1, "/var/tmp/used").exists(), "a play ran after the play it needs did not run");
    let end = ev
        .iter()
        .find(|e| e["event"] == "task_end" && e["host"] == "lab-2")
        .unwrap_or_else(|| panic!("lab-2 is reported: {ev:?}"));
    assert_eq!(end["status"], "skipped", "{end}");
    assert_eq!(
        end["msg"], "not run: play 'operator' stopped: 1 of 1 host(s) failed (every host of the play failed)",
        "{end}"
    );
}

/// Waits for `child` at most `limit`; kills it and fails when it is still running then.
fn wait_within(mut child: std::process::Child, limit: std::time::Duration, what: &str) -> Output {
    let t = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what}: still running {limit:?} after the signal\n{}{}", stdout(&o), stderr(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_signal_during_retries_ends_the_run_promptly_with_the_recap() {
    let lab = Lab::start(1, LabOptions::default());
    let site = Site::new(
        &lab,
        &[(
            "playbooks/retry.yaml",
            "description: a step that retries (test playbook)\n\
             plays:\n\
             \x20 - name: wait\n\
             \x20   hosts: lab\n\
             \x20   steps:\n\
             \x20     - name: until ready\n\
             \x20       shell: touch /var/tmp/tried; false\n\
             \x20       register: r\n\
             \x20       until: r.rc == 0\n\
             \x20       retries: 100\n\
             \x20       delay: 2\n",
        )],
    );
    let child = site
        .cmd(&["run", "retry"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while !lab.path(0, "/var/tmp/tried").exists() {
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "the step never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_within(child, std::time::Duration::from_secs(5), "a retrying step");
    assert_eq!(o.status.code(), Some(143), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        line(&out, "interrupted:"),
        Some("interrupted: no new tasks start; waiting for 1 running task(s) (interrupt again to abandon them)"),
        "{out}"
    );
    assert!(out.contains("\nRECAP\n"), "{out}");
    let verdict = out.lines().last().unwrap_or("");
    assert!(verdict.starts_with("interrupted in ") && verdict.ends_with("s (exit 143)"), "{out}");
}

#[test]
fn a_signal_while_a_huge_inventory_loads_ends_the_run_promptly_with_the_recap() {
    let dir = tempfile::tempdir().unwrap();
    let mut inv = String::from("[all:vars]\nansible_connection=local\n[cluster]\n");
    for i in 0..90_000 {
        inv.push_str(&format!("node-{i:05} a={i} b=\"[1, 2, {{'k': {i}}}]\" c=True d='x y z' e=1.5\n"));
    }
    std::fs::write(dir.path().join("inventory.ini"), inv).unwrap();
    let child = Command::cargo_bin("copctl")
        .unwrap()
        .args(["-i", "inventory.ini", "run", "system-setup"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_within(child, std::time::Duration::from_secs(2), "loading a huge inventory");
    assert_eq!(o.status.code(), Some(143), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        line(&out, "interrupted while"),
        Some("interrupted while loading the inventory and playbooks: nothing was started"),
        "{out}"
    );
    assert!(out.contains("\nRECAP\n"), "{out}");
    let verdict = out.lines().last().unwrap_or("");
    assert!(verdict.starts_with("interrupted in ") && verdict.ends_with("s (exit 143)"), "{out}");
}
