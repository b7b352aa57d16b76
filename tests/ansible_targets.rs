//! Issue 17, done-means 2: ansible-core's own integration targets
//! (`test/integration/targets/<name>` of the sdist of the peers' ansible-core, which
//! scripts/peers-setup.sh unpacks into .peers/ansible-core-src/) run by copctl on a lab host,
//! each beside the same run by ansible-playbook on a second lab host (the oracle: its recap is
//! what every task passing looks like there).
//!
//! A target runs as ansible-test runs it: its role (tasks/main.yml with its meta dependencies)
//! in a play on the host, or, for a target driven by runme.sh, the playbooks runme.sh runs.
//! ansible-test's own setup roles (prepare_tests, setup_remote_tmp_dir with its per-OS
//! includes and handlers) run as they are, from the same targets directory.
//!
//! `COPCTL_ANSIBLE_TARGETS=1` runs every target below (or `=lineinfile,replace` those) and
//! writes the per-target report to target/ansible-targets.md (docs/ansible-targets.md holds the
//! last full one); otherwise (CI's smoke run, for its time limit) the `SMOKE` targets only,
//! under copctl only (`COPCTL_ANSIBLE_TARGETS_ORACLE=0` leaves the oracle out of a chosen run). Each target listed as passing must pass: nothing refused, no task failed,
//! and (when Ansible runs it too) the same recap as Ansible's.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use common::*;

/// A target and the playbooks of its that run (none: the target's role).
struct Target {
    name: &'static str,
    /// Each a playbook of the target and its arguments, as runme.sh runs it.
    playbooks: &'static [&'static str],
    /// The playbooks' inventory: the hosts named here are lab hosts (none: one lab host in the
    /// group `testhost`).
    inventory: &'static str,
    /// Every task passes under copctl (asserted).
    passes: bool,
    /// Run as ansible-test runs it on its controller: `testhost` is a local connection and
    /// `OUTPUT_DIR` is set (the target reads back on the controller, with the file lookup, what
    /// it wrote on the host). The controller runs inside a lab host, which is the test host.
    local: bool,
}

const fn role(name: &'static str, passes: bool) -> Target {
    Target { name, playbooks: &[], inventory: "", passes, local: false }
}

/// A target run by ansible-test's local controller (`Target::local`): `playbooks` as its
/// runme.sh runs them (`site.yml`: the target's role), each with the ansible.cfg its runme.sh
/// gives (a playbook written `NAME.yml@CFG`).
const fn local(name: &'static str, playbooks: &'static [&'static str], passes: bool) -> Target {
    Target { name, playbooks, inventory: "", passes, local: true }
}

/// A runme.sh target: its `playbooks` run in the target's directory against `inventory`.
const fn plays(
    name: &'static str,
    playbooks: &'static [&'static str],
    inventory: &'static str,
    passes: bool,
) -> Target {
    Target { name, playbooks, inventory, passes, local: false }
}

/// ansible-test's inventory for targets on one host, and `localhost` for plays that name it.
const TESTHOST: &str = "testhost\nlocalhost\n";

const TARGETS: &[Target] = &[
    role("assert", true),
    role("blockinfile", true),
    role("lineinfile", true),
    role("replace", true),
    role("file", true),
    local(
        "template",
        &[
            "site.yml",
            "ansible_managed.yml@ansible_managed.cfg",
            "ansible_managed.yml@ansible_managed_templated.cfg",
            "custom_template.yml",
            "corner_cases.yml",
            "filter_plugins.yml",
            "unused_vars_include.yml",
            "undefined_var_info.yml",
            "72615.yml",
            "6653.yml",
            "72262.yml",
            "template_overrides.yml",
            "lazy_eval.yml",
            "undefined_in_import.yml",
        ],
        true,
    ),
    local("template", &["unsafe.yml"], false),
    role("loops", true),
    role("stat", true),
    role("copy", false),
    role("command_shell", true),
    plays(
        "blocks",
        &[
            "main.yml",
            "block_fail.yml",
            "block_rescue_vars.yml",
            "block_in_rescue.yml",
            "issue29047.yml",
            "43191.yml",
            "43191-2.yml",
            "79711.yml",
            "always_no_rescue_rc.yml",
            "always_failure_no_rescue_rc.yml",
            "always_failure_with_rescue_rc.yml",
            "finalized_task.yml",
            "inherit_notify.yml",
        ],
        TESTHOST,
        true,
    ),
    plays(
        "handlers",
        &[
            "test_handlers.yml --tags scenario1",
            "from_handlers.yml --tags scenario1",
            "test_listening_handlers.yml",
            "test_handlers_listen.yml",
            "test_multiple_handlers_with_recursive_notification.yml",
            "test_handlers_meta.yml",
            "46447.yml",
            "52561.yml",
            "54991.yml",
            "order.yml",
            "test_skip_flush.yml",
            "test_flush_in_rescue_always.yml",
            "test_flush_handlers_rescue_always.yml",
            "test_fqcn_meta_flush_handlers.yml",
            "79776.yml",
        ],
        "[testgroup]\nA\nB\nC\nD\nE\n[others]\ntesthost\nlocalhost\n",
        true,
    ),
    plays(
        "include_import",
        &[
            "tasks/test_include_tasks.yml",
            "tasks/test_import_tasks.yml",
            "tasks/test_include_tasks_tags.yml --tags tasks1,canary1,validate",
            "test_nested_tasks.yml",
            "test_grandparent_inheritance.yml",
            "test_include_loop.yml",
            "role/test_import_role.yml",
            "role/test_include_role.yml",
            "playbook/test_import_playbook.yml",
        ],
        "[local]\ntesthost host_var_role_name=role3\ntesthost2 host_var_role_name=role2\n[others]\nlocalhost\n",
        true,
    ),
];

/// More of ansible-core's targets on includes, imports and loops, beyond those issue 17 names.
const MORE: &[Target] = &[
    role("include_import_tasks_nested", true),
    role("include_with_templating", true),
    role("loop-until", true),
    plays("includes", &["inherit_notify.yml"], TESTHOST, true),
    plays(
        "includes",
        &[
            "test_includes.yml",
            "includes_loop_rescue.yml --extra-vars strategy=linear",
            "includes_loop_rescue.yml --extra-vars strategy=free",
        ],
        TESTHOST,
        false,
    ),
    plays("import_tasks", &["inherit_notify.yml"], TESTHOST, true),
    plays("import-role-tasks", &["import.yml"], TESTHOST, true),
    plays("loop_control", &["label.yml", "extended.yml", "break_when.yml"], TESTHOST, true),
    plays("include_vars", &["test_as_playbook.yml", "test_as_role.yml"], TESTHOST, false),
];

/// The targets CI runs.
const SMOKE: &[&str] = &[
    "replace",
    "stat",
    "command_shell",
    "template",
    "assert",
    "include_import",
    "loop_control",
    "loop-until",
    "include_with_templating",
    "import_tasks",
    "import-role-tasks",
];

const KEYS: [&str; 6] = ["ok", "changed", "failed", "skipped", "ignored", "rescued"];

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
    recap: [u64; 6],
    /// The first failure nothing ignored: task and message.
    failure: Option<String>,
}

fn site(t: &Target, dir: &std::path::Path) -> Site {
    // The inventory's host names (the first word of each line outside a `:vars` section), each
    // one a lab host: the lab's `lab-N` renamed.
    let mut names: Vec<&str> = Vec::new();
    let mut in_vars = false;
    for l in t.inventory.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if l.starts_with('[') {
            in_vars = l.ends_with(":vars]");
        } else if let Some(h) = l.split_whitespace().next().filter(|h| !in_vars && !names.contains(h)) {
            names.push(h);
        }
    }
    // A local target's controller runs inside the lab host, which must see the Python the
    // peers' venv links to (its own /root is empty), and, at the paths this machine names them,
    // copctl, the peers (venv, targets) and the targets' roles: the host's /tmp is its own, so a
    // clone under /tmp would otherwise be out of its sight (as the targets' roles_path is).
    let mut opts = common::lab::LabOptions::default();
    if t.local {
        let python = std::fs::canonicalize(ansible_bin("python3")).ok();
        let prefix = python.as_deref().and_then(|p| p.ancestors().nth(2)).map(std::path::Path::to_path_buf);
        let venv = ansible_bin("python3").parent().and_then(|b| b.parent()).map(std::path::Path::to_path_buf);
        let copctl = std::path::Path::new(env!("CARGO_BIN_EXE_copctl")).parent().map(std::path::Path::to_path_buf);
        let mut see: Vec<PathBuf> = [prefix, venv, copctl, Some(repo().join(".peers")), Some(dir.to_path_buf())]
            .into_iter()
            .flatten()
            .collect();
        // Parents first, each path once: a bind over a parent's bind would hide it.
        see.sort();
        for d in see {
            if !opts.see.iter().any(|s| d.starts_with(s)) {
                opts.see.push(d);
            }
        }
    }
    let site = ansible::site_with(names.len().max(1), "", opts);
    // A runme.sh target's own roles/ first, as its runme.sh sets ANSIBLE_ROLES_PATH=./roles.
    let own = if t.playbooks.is_empty() { String::new() } else { format!("{}/roles:", site.dir().display()) };
    site.edit("ansible.cfg", |c| {
        c.replacen("[defaults]\n", &format!("[defaults]\nroles_path = {own}{}\n", dir.display()), 1)
    });
    if t.local {
        site.write(
            "inventory.ini",
            "[testhost]\ntesthost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
        );
    } else if names.is_empty() {
        let host = &site.lab().hosts[0].name;
        // As ansible-test's inventory names it (targets run `{{ ansible_python_interpreter }}`).
        site.edit("inventory.ini", |c| {
            format!("{c}\n[testhost]\n{host} ansible_python_interpreter=/usr/bin/python3\n")
        });
    } else {
        site.edit("inventory.ini", |c| {
            let mut c = c;
            for (i, n) in names.iter().enumerate() {
                c = c.replace(&format!("\n{} ", site.lab().hosts[i].name), &format!("\n{n} "));
            }
            let groups = if t.inventory.starts_with('[') { "" } else { "[targets]\n" };
            format!("{c}\n{groups}{}\n", t.inventory)
        });
    }
    if !t.playbooks.is_empty() {
        copy_dir(&dir.join(t.name), site.dir());
    }
    if t.playbooks.is_empty() || t.local {
        site.write("site.yml", format!("- hosts: all\n  gather_facts: true\n  roles:\n    - {}\n", t.name));
    }
    if t.local {
        // The site where the controller inside the lab host sees it: the same path there.
        let inner = site.lab().path(0, &site.dir().display().to_string());
        copy_dir(site.dir(), &inner);
        std::fs::create_dir_all(inner.join("output")).unwrap();
    }
    site
}

/// `c` as run for target `t`: for a local target, inside the lab host (its mount, UTS and PID
/// namespaces and root), in the same directory and environment, with ansible-test's
/// OUTPUT_DIR; as it is otherwise.
fn for_target(t: &Target, site: &Site, mut c: std::process::Command) -> std::process::Command {
    if !t.local {
        return c;
    }
    c.env("OUTPUT_DIR", site.path("output"));
    let pid = site.lab().pid(0).expect("the lab host is up").to_string();
    let mut n = std::process::Command::new("nsenter");
    n.args(["-t", &pid, "-m", "-u", "-p", "-r", "-w", "--", "env"]);
    if let Some(d) = c.get_current_dir() {
        n.arg(format!("--chdir={}", d.display()));
    }
    let envs: Vec<_> = c.get_envs().collect();
    for (k, _) in envs.iter().filter(|(_, v)| v.is_none()) {
        n.arg(format!("--unset={}", k.to_string_lossy()));
    }
    for (k, v) in envs.iter().filter_map(|(k, v)| Some((k, (*v)?))) {
        n.arg(format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
    }
    n.arg(c.get_program()).args(c.get_args());
    n
}

/// A playbook's name and the ansible.cfg it runs with (`NAME.yml@CFG`: the target's CFG).
fn with_cfg(pb: &str) -> (&str, Option<&str>) {
    match pb.split_once('@') {
        Some((p, cfg)) => (p, Some(cfg)),
        None => (pb, None),
    }
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

/// Each playbook to run and its arguments.
fn playbooks(t: &Target) -> Vec<Vec<&'static str>> {
    if t.playbooks.is_empty() {
        vec![vec!["site.yml"]]
    } else {
        t.playbooks.iter().map(|p| p.split_whitespace().collect()).collect()
    }
}

/// copctl's outcome of each of the target's playbooks, run one after the other on one site.
fn copctl_outcome(t: &Target, dir: &std::path::Path) -> Vec<Outcome> {
    let site = site(t, dir);
    let mut all = Vec::new();
    for pb in playbooks(t) {
        all.push(Outcome::default());
        let out = all.last_mut().expect("pushed");
        let (name, cfg) = with_cfg(pb[0]);
        let command = |args: &[&str]| {
            let mut c = site.command(args);
            if let Some(cfg) = cfg {
                c.env("ANSIBLE_CONFIG", site.path(cfg));
            }
            for_target(t, &site, c)
        };
        let v = command(&["validate", name]).output().unwrap();
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
        let args: Vec<&str> =
            ["run", name].into_iter().chain(pb[1..].iter().copied()).chain(["--output", "json"]).collect();
        let ran = command(&args).output().unwrap();
        // Kept beside ansible-playbook's log of the same playbook, to compare them.
        let log = repo().join(format!("target/ansible-targets-{}-{}.copctl.log", t.name, pb[0].replace('/', "_")));
        let _ = std::fs::write(log, [ran.stdout.as_slice(), ran.stderr.as_slice()].concat());
        let events: Vec<serde_json::Value> =
            stdout(&ran).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        // The recap in Ansible's terms (its `ok` counts changed tasks too), summed over hosts.
        if let Some(recap) = events.iter().find(|e| e["event"] == "run_end").and_then(|e| e["recap"].as_object()) {
            for r in recap.values() {
                let n = |k: &str| r[k].as_u64().unwrap_or(0);
                for (i, k) in KEYS.iter().enumerate() {
                    out.recap[i] += if *k == "ok" { n("ok") + n("changed") } else { n(k) };
                }
            }
        }
        // A failure nothing ignored (a rescued one too: the events do not say which).
        if out.recap[2] > 0 {
            out.failure = events
                .iter()
                .find(|e| e["event"] == "task_end" && e["status"] == "failed" && e["ignored"] != true)
                .map(|e| format!("{}: {}", e["step"].as_str().unwrap_or("?"), e["msg"].as_str().unwrap_or("").trim()));
        }
        if !ran.status.success() && out.failure.is_none() {
            out.failure = Some(format!("exit {:?}: {}", ran.status.code(), stderr(&ran).trim()));
        }
    }
    all
}

/// ansible-playbook's outcome of each of the target's playbooks, as copctl_outcome.
fn ansible_outcome(t: &Target, dir: &std::path::Path) -> Vec<Outcome> {
    let site = site(t, dir);
    let mut all = Vec::new();
    for pb in playbooks(t) {
        all.push(Outcome::default());
        let out = all.last_mut().expect("pushed");
        let (name, cfg) = with_cfg(pb[0]);
        let mut c = ansible_cmd("ansible-playbook");
        c.args(["-i", "inventory.ini", name])
            .args(&pb[1..])
            .current_dir(site.dir())
            .env("ANSIBLE_CONFIG", site.path(cfg.unwrap_or("ansible.cfg")))
            .env("HOME", site.path("home"));
        let o = for_target(t, &site, c).output().unwrap();
        let text = stdout(&o);
        // Ansible's whole output beside the report, to see which of its tasks failed.
        let log = repo().join(format!("target/ansible-targets-{}-{}.log", t.name, pb[0].replace('/', "_")));
        let _ = std::fs::write(log, format!("{text}{}", stderr(&o)));
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
    all
}

fn report_line(name: &str, ours: &Outcome, theirs: &Outcome) -> String {
    let r = |o: &Outcome| {
        format!(
            "ok={} changed={} failed={} skipped={} ignored={} rescued={}",
            o.recap[0], o.recap[1], o.recap[2], o.recap[3], o.recap[4], o.recap[5]
        )
    };
    let verdict = if !ours.refused.is_empty() {
        format!("refused by validate: {} problems, first: {}", ours.refused.len(), ours.refused[0])
    } else if ours.recap != theirs.recap {
        match &ours.failure {
            Some(f) => format!("differs; first failure: {f}"),
            None => "every task passed; the recap differs from Ansible's".to_string(),
        }
    } else if ours.recap[2] > 0 {
        // runme.sh targets fail on purpose ("EXPECTED FAILURE"), and a target may fail where
        // the lab lacks a tool for both tools alike: the same recap is the pass.
        "all pass (the same tasks fail under both)".to_string()
    } else {
        "all pass".to_string()
    };
    format!("| {} | {} | {} | {} |", name, r(ours), r(theirs), verdict.replace('|', "\\|").replace('\n', " "))
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
    for t in TARGETS.iter().chain(MORE).filter(|t| selected(t)) {
        let ours = copctl_outcome(t, &dir);
        // The smoke run leaves the oracle out (its time): every task passing is the check there.
        let oracle = full && std::env::var_os("COPCTL_ANSIBLE_TARGETS_ORACLE").is_none_or(|v| v != "0");
        let theirs: Vec<Outcome> = if oracle {
            ansible_outcome(t, &dir)
        } else {
            ours.iter().map(|o| Outcome { recap: o.recap, ..Outcome::default() }).collect()
        };
        for ((ours, theirs), pb) in ours.iter().zip(&theirs).zip(playbooks(t)) {
            let name = if t.playbooks.is_empty() { t.name.to_string() } else { format!("{}/{}", t.name, pb.join(" ")) };
            let line = report_line(&name, ours, theirs);
            eprintln!("{line}");
            writeln!(table, "{line}").unwrap();
            if !ours.refused.is_empty() {
                writeln!(details, "\n### {name}: what `copctl validate` refuses\n").unwrap();
                for p in &ours.refused {
                    writeln!(details, "- {p}").unwrap();
                }
            }
            let passed = ours.refused.is_empty() && ours.recap == theirs.recap && (oracle || ours.failure.is_none());
            // Without the oracle only the smoke targets (which fail nothing) can be judged: a
            // target's failed task may be Ansible's too (lineinfile's setfacl on the lab).
            if t.passes && (oracle || SMOKE.contains(&t.name)) && !passed {
                broken.insert(name, line);
            }
        }
    }
    if full {
        let version = dir.ancestors().nth(3).and_then(|p| p.file_name()).map(|v| v.to_string_lossy().into_owned());
        let head = format!(
            "# ansible-core's integration targets under copctl\n\n\
             Written by `COPCTL_ANSIBLE_TARGETS={chosen} scripts/test.sh --test ansible_targets -- --nocapture` \
             (tests/ansible_targets.rs) from ansible-core {}'s `test/integration/targets`. Each target \
             (its role, or each playbook its runme.sh runs) ran under copctl and under ansible-playbook \
             on fresh lab hosts; the counts are each tool's recap summed over the hosts (`ok` counts \
             changed tasks too, as Ansible's does). A target passes when copctl refuses nothing and \
             its recap is Ansible's: every assert of the target held, and where a runme.sh \
             playbook fails on purpose it failed the same tasks. What copctl refuses is listed \
             after the table, each at its file:line in the target.\n\n",
            version.unwrap_or_default()
        );
        let out = repo().join("target/ansible-targets.md");
        std::fs::write(&out, format!("{head}{table}{details}")).unwrap();
        eprintln!("report: {}", out.display());
    }
    assert!(broken.is_empty(), "targets that passed no longer do:\n{broken:#?}");
}
