//! Issue 17, done-means 2: ansible-core's own integration targets
//! (`test/integration/targets/<name>` of the sdist of the peers' ansible-core, which
//! scripts/peers-setup.sh unpacks into .peers/ansible-core-src/) run by copctl on a lab host,
//! each beside the same run by ansible-playbook on a second lab host (the oracle: its recap is
//! what every task passing looks like there).
//!
//! A target runs as ansible-test runs it: its role (tasks/main.yml with its meta dependencies)
//! in a play on the host, or, for a target driven by runme.sh, the playbooks runme.sh runs.
//! Two of ansible-test's setup roles are replaced (tests/fixtures/ansible-targets/roles/):
//! prepare_tests, which has nothing to do on a lab host, and setup_remote_tmp_dir, which makes
//! the same directory with mktemp instead of the tempfile module.
//!
//! `COPCTL_ANSIBLE_TARGETS=1` runs every target below (or `=lineinfile,replace` those) and
//! writes the per-target report to target/ansible-targets.md (docs/ansible-targets.md holds the
//! last full one); otherwise (CI's smoke run, for its time limit) the `SMOKE` targets only,
//! under copctl only. Each target listed as passing must pass: nothing refused, no task failed,
//! and (when Ansible runs it too) the same recap as Ansible's.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use common::*;

/// A target and the playbooks of its that run (none: the target's role).
struct Target {
    name: &'static str,
    playbooks: &'static [&'static str],
    /// Every task passes under copctl (asserted).
    passes: bool,
}

const fn role(name: &'static str, passes: bool) -> Target {
    Target { name, playbooks: &[], passes }
}

const TARGETS: &[Target] = &[
    role("assert", false),
    role("blockinfile", false),
    role("lineinfile", false),
    role("replace", false),
    role("file", false),
    role("template", false),
    role("loops", false),
    role("stat", true),
    role("copy", false),
    role("command_shell", false),
];

/// The targets CI runs.
const SMOKE: &[&str] = &["replace"];

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

fn targets_dir() -> PathBuf {
    let src = repo().join(".peers/ansible-core-src");
    let ver = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/peers-setup.sh unpacks it)", src.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("test/integration/targets").is_dir())
        .unwrap_or_else(|| panic!("no ansible-core sdist under {} (scripts/peers-setup.sh)", src.display()));
    ver.join("test/integration/targets")
}

/// What one tool did with one target.
#[derive(Default)]
struct Outcome {
    /// `copctl validate`'s problems, one per line (copctl only).
    refused: Vec<String>,
    recap: [u64; 5],
    /// The first failure nothing ignored: task and message.
    failure: Option<String>,
}

fn site(t: &Target, dir: &std::path::Path) -> Site {
    let site = ansible::site(1, "ansible-targets");
    site.edit("ansible.cfg", |c| {
        c.replacen("[defaults]\n", &format!("[defaults]\nroles_path = {}\n", dir.display()), 1)
    });
    let host = &site.lab().hosts[0].name;
    site.edit("inventory.ini", |c| format!("{c}\n[testhost]\n{host}\n"));
    if t.playbooks.is_empty() {
        site.write("site.yml", format!("- hosts: all\n  gather_facts: true\n  roles:\n    - {}\n", t.name));
    } else {
        copy_dir(&dir.join(t.name), site.dir());
    }
    site
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn playbooks(t: &Target) -> Vec<&'static str> {
    if t.playbooks.is_empty() { vec!["site.yml"] } else { t.playbooks.to_vec() }
}

fn copctl_outcome(t: &Target, dir: &std::path::Path) -> Outcome {
    let site = site(t, dir);
    let mut out = Outcome::default();
    for pb in playbooks(t) {
        let v = site.command(["validate", pb]).output().unwrap();
        if !v.status.success() {
            // One line per problem: "file:line:col: message", the file under the targets' dir.
            let prefix = format!("{}/", dir.display());
            let text = stderr(&v);
            let problems: Vec<String> = text
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("x "))
                .filter(|l| !l.contains("problems: copctl cannot run"))
                .map(|l| l.replace(&prefix, ""))
                .collect();
            out.refused.extend(if problems.is_empty() { vec![text] } else { problems });
            continue;
        }
        let ran = site.command(["run", pb, "--output", "json"]).output().unwrap();
        for line in stdout(&ran).lines() {
            let Ok(ev) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if ev["event"] == "task_end" {
                let status = ev["status"].as_str().unwrap_or("");
                let ignored = ev["ignored"].as_bool().unwrap_or(false);
                match (status, ignored) {
                    ("ok", _) => out.recap[0] += 1,
                    ("changed", _) => {
                        out.recap[0] += 1;
                        out.recap[1] += 1
                    }
                    ("skipped", _) => out.recap[3] += 1,
                    ("failed", true) => {
                        out.recap[0] += 1;
                        out.recap[4] += 1
                    }
                    _ => {
                        out.recap[2] += 1;
                        out.failure.get_or_insert_with(|| {
                            format!(
                                "{}: {}",
                                ev["step"].as_str().unwrap_or("?"),
                                ev["msg"].as_str().unwrap_or("").trim()
                            )
                        });
                    }
                }
            }
        }
        if !ran.status.success() && out.failure.is_none() {
            out.failure = Some(format!("exit {:?}: {}", ran.status.code(), stderr(&ran).trim()));
        }
    }
    out
}

fn ansible_outcome(t: &Target, dir: &std::path::Path) -> Outcome {
    let site = site(t, dir);
    let mut out = Outcome::default();
    for pb in playbooks(t) {
        let o = ansible_cmd("ansible-playbook")
            .args(["-i", "inventory.ini", pb])
            .current_dir(site.dir())
            .env("ANSIBLE_CONFIG", site.path("ansible.cfg"))
            .env("HOME", site.path("home"))
            .output()
            .unwrap();
        let text = stdout(&o);
        for line in text.lines().skip_while(|l| !l.starts_with("PLAY RECAP")).skip(1) {
            let Some((_, counts)) = line.split_once(" : ") else { continue };
            for (i, k) in KEYS.iter().enumerate() {
                let n: u64 = counts
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{k}=")))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                out.recap[i] += n;
            }
        }
        if !o.status.success() {
            let fatal = text.lines().find(|l| l.starts_with("fatal:")).unwrap_or("").to_string();
            out.failure.get_or_insert(format!("exit {:?}: {fatal}", o.status.code()));
        }
    }
    out
}

fn report_line(t: &Target, ours: &Outcome, theirs: &Outcome) -> String {
    let r = |o: &Outcome| {
        format!(
            "ok={} changed={} failed={} skipped={} ignored={}",
            o.recap[0], o.recap[1], o.recap[2], o.recap[3], o.recap[4]
        )
    };
    let verdict = if !ours.refused.is_empty() {
        format!("refused by validate: {} problems, first: {}", ours.refused.len(), ours.refused[0])
    } else if let Some(f) = &ours.failure {
        format!("stopped at {f}")
    } else if ours.recap != theirs.recap {
        "every task passed; the recap differs from Ansible's".to_string()
    } else {
        "all pass".to_string()
    };
    format!("| {} | {} | {} | {} |", t.name, r(ours), r(theirs), verdict.replace('|', "\\|").replace('\n', " "))
}

#[test]
fn ansible_core_integration_targets_run_under_copctl() {
    // "1" or "all": every target; a comma-separated list: those; unset: CI's smoke run.
    let chosen = std::env::var("COPCTL_ANSIBLE_TARGETS").unwrap_or_default();
    let full = !chosen.is_empty();
    let selected = |t: &Target| match chosen.as_str() {
        "" => SMOKE.contains(&t.name),
        "1" | "all" => true,
        list => list.split(',').any(|n| n.trim() == t.name),
    };
    let dir = targets_dir();
    let mut table = String::from("| target | copctl | ansible-playbook | result |\n|---|---|---|---|\n");
    let mut details = String::new();
    let mut broken = BTreeMap::new();
    for t in TARGETS.iter().filter(|t| selected(t)) {
        let ours = copctl_outcome(t, &dir);
        // The smoke run leaves the oracle out (its time): every task passing is the check there.
        let theirs = if full { ansible_outcome(t, &dir) } else { Outcome { recap: ours.recap, ..Outcome::default() } };
        let line = report_line(t, &ours, &theirs);
        eprintln!("{line}");
        writeln!(table, "{line}").unwrap();
        if !ours.refused.is_empty() {
            writeln!(details, "\n### {}: what `copctl validate` refuses\n", t.name).unwrap();
            for p in &ours.refused {
                writeln!(details, "- {p}").unwrap();
            }
        }
        let passed = ours.refused.is_empty() && ours.failure.is_none() && ours.recap == theirs.recap;
        if t.passes && !passed {
            broken.insert(t.name, line);
        }
    }
    if full {
        let out = repo().join("target/ansible-targets.md");
        std::fs::write(&out, format!("{table}{details}")).unwrap();
        eprintln!("report: {}", out.display());
    }
    assert!(broken.is_empty(), "targets that passed no longer do:\n{broken:#?}");
}
