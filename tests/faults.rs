//! Faults on real sshd hosts, as operators meet them: a host killed in the middle of a step, sshd
//! refusing connections (MaxStartups), copctl interrupted again and again at random moments, and a
//! load of 200 hosts with one connection everybody delegates to. Each test fails if the behaviour
//! regresses; docs/reliability.md lists them with their figures.

mod common;
use common::lab;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use lab::{Lab, LabOptions};
use serde_json::Value;

/// A site directory with the lab's inventory (group `lab`) and playbooks of the test's own.
struct Site {
    known_hosts: PathBuf,
    dir: tempfile::TempDir,
}

impl Site {
    fn new(lab: &Lab, playbooks: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("playbooks")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        for (name, text) in playbooks {
            std::fs::write(dir.path().join("playbooks").join(format!("{name}.yaml")), text).unwrap();
        }
        lab.write_inventory(&dir.path().join("inventory.ini"), "");
        Site { known_hosts: lab.known_hosts.clone(), dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = site_command(self.dir.path(), &self.known_hosts, args);
        c.env("COPCTL_NO_PROGRESS", "1");
        c
    }

    fn run_json(&self, args: &[&str]) -> (Option<i32>, Vec<Value>, Output) {
        let o = self.cmd(args).args(["--output", "json"]).output().unwrap();
        let events = stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (o.status.code(), events, o)
    }
}

fn recap(events: &[Value]) -> serde_json::Map<String, Value> {
    events.iter().find(|e| e["event"] == "run_end").expect("run_end event")["recap"].as_object().unwrap().clone()
}

/// Files named like copctl's temporary upload files under `dir` on host `i`.
fn temp_files(lab: &Lab, i: usize, dir: &str) -> Vec<String> {
    std::fs::read_dir(lab.path(i, dir))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".copctl-"))
                .collect()
        })
        .unwrap_or_default()
}

const WORK: &str = r#"
description: Files written around a step that runs a while (fault tests)
plays:
  - name: work
    hosts: lab
    steps:
      - name: before
        copy: { content: "before {{ round | default(0) }}\n", dest: /var/tmp/before.txt }
      - name: slow
        shell: sleep {{ pause | default(2) }}
      - name: after
        copy: { content: "after {{ round | default(0) }}\n", dest: /var/tmp/after.txt }
"#;

#[test]
fn a_host_killed_mid_step_is_unreachable_the_others_finish_and_a_rerun_completes_it() {
    let mut lab = Lab::start(4, LabOptions::default());
    let site = Site::new(&lab, &[("work", WORK)]);
    let child = site.cmd(&["run", "work", "--output", "json"]).stdout(Stdio::piped()).spawn().unwrap();
    assert!(lab.wait_for_process(2, "sleep", Duration::from_secs(20)), "lab-3 never reached the slow step");
    lab.kill(2);
    let o = child.wait_with_output().unwrap();
    let events: Vec<Value> = stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(o.status.code(), Some(4), "unreachable hosts make exit 4: {}", stdout(&o));
    let r = recap(&events);
    for (h, want_unreachable) in [("lab-1", 0), ("lab-2", 0), ("lab-3", 1), ("lab-4", 0)] {
        assert_eq!(r[h]["unreachable"], want_unreachable, "{h}: {}", r[h]);
        assert_eq!(r[h]["failed"], 0, "{h}: {}", r[h]);
    }
    // The others ran every step: before, slow and after (2 of them change files).
    for h in ["lab-1", "lab-2", "lab-4"] {
        assert_eq!(r[h]["changed"], 3, "{h}: {}", r[h]);
    }
    for i in [0, 1, 3] {
        assert_eq!(std::fs::read_to_string(lab.path(i, "/var/tmp/after.txt")).unwrap(), "after 0\n");
    }
    assert_eq!(std::fs::read_to_string(site.path(".copctl/last-failed")).unwrap(), "lab-3\n");
    // The host comes back: the retry finishes it and touches nobody else.
    lab.restart(2);
    let (code, ev, o) = site.run_json(&["run", "work", "--limit", "@.copctl/last-failed"]);
    assert_eq!(code, Some(0), "{}", stderr(&o));
    let r = recap(&ev);
    assert_eq!(r.keys().collect::<Vec<_>>(), vec!["lab-3"]);
    assert_eq!(std::fs::read_to_string(lab.path(2, "/var/tmp/after.txt")).unwrap(), "after 0\n");
}

const INTERRUPTED: &str = r#"
description: Writes several files, big and small, between short pauses (interruption test)
plays:
  - name: work
    hosts: lab
    steps:
      - name: directory
        file: { path: /var/tmp/intr, state: directory, mode: "0755" }
      - name: big
        copy: { content: "{{ ('round ' ~ round ~ ' ') * 150000 }}", dest: /var/tmp/intr/big.txt }
      - name: pause
        shell: sleep 0.5
      - name: small
        copy: { content: "round {{ round }}\n", dest: /var/tmp/intr/small.txt, mode: "0640" }
      - name: line
        line: { path: /var/tmp/intr/lines.txt, line: "round={{ round }}", regexp: '^round=', create: true }
      - name: pause again
        shell: sleep 0.5
      - name: last
        copy: { content: "done {{ round }}\n", dest: /var/tmp/intr/done.txt }
"#;

#[test]
fn sigint_and_sigterm_twenty_times_at_random_moments_never_half_apply() {
    let lab = Lab::start(3, LabOptions::default());
    let site = Site::new(&lab, &[("intr", INTERRUPTED)]);
    let seed = std::env::var("COPCTL_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_c0c7u64);
    let mut rng = Rng(seed);
    let mut interrupted = 0;
    for round in 1..=20 {
        let (sig, code) = if round % 2 == 0 { (libc::SIGTERM, 143) } else { (libc::SIGINT, 130) };
        let delay = Duration::from_millis(150 + rng.next() % 750);
        let extra = format!("round={round}");
        let child =
            site.cmd(&["run", "intr", "-e", &extra]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        std::thread::sleep(delay);
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        let ctx = format!("round {round} (seed {seed:#x}), signal {sig} after {delay:?}");
        assert_eq!(o.status.code(), Some(code), "{ctx}: {}{}", stdout(&o), stderr(&o));
        interrupted += 1;
        assert!(stdout(&o).contains("RECAP"), "{ctx}: no recap: {}", stdout(&o));
        // A signal that lands before the plan is made (a loaded machine) ends the run with nothing
        // started; the last run's last-failed stays as it was, so the retry is the whole run.
        let before_start =
            stdout(&o).contains("interrupted while loading the inventory and playbooks: nothing was started");
        let lf = std::fs::read_to_string(site.path(".copctl/last-failed")).unwrap_or_default();
        assert!(before_start || !lf.trim().is_empty(), "{ctx}: last-failed not written");
        // Every file is whole: this round's or an earlier round's, never a part of one.
        for i in 0..3 {
            if let Ok(big) = std::fs::read_to_string(lab.path(i, "/var/tmp/intr/big.txt")) {
                let r: usize = big.split(' ').nth(1).unwrap().parse().unwrap();
                assert_eq!(big, format!("round {r} ").repeat(150000), "{ctx}: big.txt on lab-{} is torn", i + 1);
            }
            for f in ["small.txt", "done.txt"] {
                if let Ok(t) = std::fs::read_to_string(lab.path(i, &format!("/var/tmp/intr/{f}"))) {
                    assert!(t.ends_with('\n') && t.lines().count() == 1, "{ctx}: {f} on lab-{} is torn: {t:?}", i + 1);
                }
            }
            assert_eq!(temp_files(&lab, i, "/var/tmp/intr"), Vec::<String>::new(), "{ctx}: temp files left");
        }
        // The retry of what was left converges.
        let retry: &[&str] = if before_start { &[] } else { &["--limit", "@.copctl/last-failed"] };
        let (code, ev, o) = site.run_json(&[&["run", "intr", "-e", &extra][..], retry].concat());
        assert_eq!(code, Some(0), "{ctx}: the retry failed: {}", stderr(&o));
        assert!(recap(&ev).values().all(|r| r["failed"] == 0 && r["unreachable"] == 0));
        for i in 0..3 {
            assert_eq!(
                std::fs::read_to_string(lab.path(i, "/var/tmp/intr/done.txt")).unwrap(),
                format!("done {round}\n"),
                "{ctx}: lab-{} not converged",
                i + 1
            );
        }
    }
    assert_eq!(interrupted, 20);
}

#[test]
fn sshd_refusing_connections_maxstartups_on_100_hosts_is_retried_and_no_task_runs_twice() {
    // One unauthenticated connection at a time per host, and the test holds that one.
    let opts = LabOptions { sshd_config: Some("MaxStartups 1\nLogLevel VERBOSE\n".into()), ..Default::default() };
    let lab = Lab::start(100, opts);
    let site = Site::new(
        &lab,
        &[(
            "mark",
            r#"
description: Each step appends its name to a log on the host (MaxStartups test)
plays:
  - name: mark
    hosts: lab
    steps:
      - { name: one, shell: "echo one >> /var/tmp/ran.log" }
      - { name: two, shell: "echo two >> /var/tmp/ran.log" }
      - { name: three, shell: "echo three >> /var/tmp/ran.log" }
"#,
        )],
    );
    let squatters: Vec<std::net::TcpStream> =
        lab.hosts.iter().map(|h| std::net::TcpStream::connect((h.addr, 22)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let child = site.cmd(&["run", "mark", "-f", "100", "--output", "json"]).stdout(Stdio::piped()).spawn().unwrap();
    // copctl's first attempts are refused; the slots free up a second later.
    std::thread::sleep(Duration::from_secs(1));
    drop(squatters);
    let o = child.wait_with_output().unwrap();
    let events: Vec<Value> = stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(recap(&events).values().all(|r| r["ok"].as_u64().unwrap() + r["changed"].as_u64().unwrap() == 3));
    let mut refused = 0;
    for (i, h) in lab.hosts.iter().enumerate() {
        let log = std::fs::read_to_string(h.dir.join("sshd.log")).unwrap();
        let drops = log.matches("past MaxStartups").count();
        assert!(drops >= 1, "{}: sshd never refused copctl, so nothing was retried:\n{log}", h.name);
        refused += drops;
        let ran = std::fs::read_to_string(lab.path(i, "/var/tmp/ran.log")).unwrap();
        assert_eq!(ran, "one\ntwo\nthree\n", "{}: every step exactly once", h.name);
    }
    eprintln!("connections refused by sshd and retried: {refused} on 100 hosts");
}

/// Peak RSS (MiB) and CPU seconds of a finished child, from wait4.
fn wait_measured(child: std::process::Child) -> (i32, f64, f64) {
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut ru) }, pid);
    std::mem::forget(child);
    (libc::WEXITSTATUS(status), ru.ru_maxrss as f64 / 1024.0, lab::rusage_seconds(&ru))
}

fn load_playbook() -> String {
    let mut s = String::from(
        "description: 20 steps on every host, one of them delegated to lab-1 by all (load test)\nplays:\n  - name: load\n    hosts: lab\n    steps:\n",
    );
    for k in 1..=6 {
        s.push_str(&format!(
            "      - {{ name: file {k}, copy: {{ content: \"{k} {{{{ inventory_hostname }}}}\\n\", dest: /var/tmp/load-{k}.txt }} }}\n"
        ));
    }
    for k in 1..=6 {
        s.push_str(&format!(
            "      - {{ name: command {k}, command: [cat, /var/tmp/load-{k}.txt], changed_when: false }}\n"
        ));
    }
    s.push_str(
        "      - { name: directory, file: { path: /var/tmp/load.d, state: directory, mode: \"0750\" } }\n\
         \x20     - { name: line, line: { path: /var/tmp/load.d/conf, line: \"host={{ inventory_hostname }}\", create: true } }\n\
         \x20     - { name: block, block: { path: /var/tmp/load.d/block, block: \"a=1\\nb=2\", create: true } }\n\
         \x20     - name: on the shared host\n        shell: echo {{ inventory_hostname }} >> /var/tmp/delegated.log\n        delegate_to: lab-1\n\
         \x20     - { name: read back, slurp: { path: /var/tmp/load-1.txt }, register: back }\n\
         \x20     - { name: check, assert: { that: [\"back.content == '1 ' ~ inventory_hostname ~ '\\n'\"] } }\n\
         \x20     - { name: touch, file: { path: /var/tmp/load.d/ready, state: touch } }\n\
         \x20     - { name: done, copy: { content: \"done\\n\", dest: /var/tmp/load-done.txt } }\n",
    );
    s
}

#[test]
fn two_hundred_hosts_twenty_steps_at_most_eight_channels_per_connection() {
    // sshd itself refuses a ninth session on a connection: copctl must never ask for one, even on
    // lab-1, where every host's delegated step runs at once.
    let opts = LabOptions { sshd_config: Some("MaxSessions 8\n".into()), ..Default::default() };
    let t = Instant::now();
    let lab = Lab::start(200, opts);
    let up = t.elapsed();
    let pb = load_playbook();
    assert_eq!(pb.matches("      - ").count(), 20);
    let site = Site::new(&lab, &[("load", &pb)]);
    let t = Instant::now();
    let child = site
        .cmd(&["run", "load", "--output", "json"])
        .stdout(std::fs::File::create(site.path("events.jsonl")).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, rss, cpu) = wait_measured(child);
    let wall = t.elapsed();
    let events: Vec<Value> = std::fs::read_to_string(site.path("events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(code, 0, "{:?}", events.iter().filter(|e| e["status"] == "failed").take(3).collect::<Vec<_>>());
    let r = recap(&events);
    assert_eq!(r.len(), 200);
    assert!(r.values().all(|x| x["failed"] == 0 && x["unreachable"] == 0));
    let delegated = std::fs::read_to_string(lab.path(0, "/var/tmp/delegated.log")).unwrap();
    let mut names: Vec<&str> = delegated.lines().collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 200, "each host's delegated step ran once on lab-1");
    assert_eq!(delegated.lines().count(), 200);
    for i in [0, 99, 199] {
        assert_eq!(std::fs::read_to_string(lab.path(i, "/var/tmp/load-done.txt")).unwrap(), "done\n");
    }
    assert!(rss < 150.0, "controller peak RSS {rss:.1} MiB");
    eprintln!(
        "load: 200 hosts up in {:.1}s; 20 steps on each in {:.1}s; controller peak RSS {rss:.1} MiB, {cpu:.2} CPU s",
        up.as_secs_f64(),
        wall.as_secs_f64()
    );
}
