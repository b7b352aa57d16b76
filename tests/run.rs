//! `copctl run` on lab hosts: every step kind, idempotent re-runs, check and diff modes,
//! handlers, failures, serial batches, the DAG (no lock-step), interruption and secrets.

mod common;
mod lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use lab::{Lab, LabOptions};
use serde_json::Value;

/// A copy of tests/fixtures/site with the lab's inventory, run from its own directory.
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
    fn new(lab: &'a Lab) -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixture("site"), dir.path());
        std::fs::create_dir(dir.path().join("home")).unwrap();
        lab.write_inventory(&dir.path().join("inventory.ini"), "");
        lab.install_doubles(&["systemctl", "apt-get", "dpkg-query"]);
        Site { lab, dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        site_command(self.dir.path(), &self.lab.known_hosts, args)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs with `--output json` and returns the events.
    fn run_json(&self, args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
        let mut a = args.to_vec();
        a.extend(["--output", "json"]);
        let o = self.run(&a);
        let events = stdout(&o).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (o.status.code(), events, stderr(&o))
    }
}

fn recap(events: &[Value]) -> serde_json::Map<String, Value> {
    events.iter().find(|e| e["event"] == "run_end").expect("run_end event")["recap"].as_object().unwrap().clone()
}

fn total(events: &[Value], field: &str) -> u64 {
    recap(events).values().map(|r| r[field].as_u64().unwrap()).sum()
}

#[test]
fn every_step_kind_converges_and_a_rerun_changes_nothing() {
    let lab = Lab::start(10, LabOptions::default());
    let site = Site::new(&lab);
    let (code, ev, err) = site.run_json(&["run", "all-kinds"]);
    assert_eq!(code, Some(0), "{err}\n{ev:?}");
    let r = recap(&ev);
    assert_eq!(r.len(), 10);
    for (h, c) in &r {
        assert_eq!(c["failed"], 0, "{h}: {c}");
        assert!(c["changed"].as_u64().unwrap() >= 14, "{h}: {c}");
    }
    // What the hosts now have.
    let conf = std::fs::read_to_string(lab.path(3, "/opt/app/app.conf")).unwrap();
    assert!(conf.contains("# app configuration for lab-4") && conf.contains("peers = lab-1,lab-2"), "{conf}");
    assert_eq!(
        std::fs::read_to_string(lab.path(0, "/etc/copctl-block.conf")).unwrap(),
        "# BEGIN COPCTL MANAGED BLOCK\na=1\nhost=lab-1\n# END COPCTL MANAGED BLOCK\n"
    );
    assert_eq!(std::fs::read_link(lab.path(0, "/opt/app/current")).unwrap(), Path::new("/opt/app"));
    assert_eq!(std::fs::read_to_string(site.path("fetched/lab-7.txt")).unwrap(), "hello lab-7\n");
    let calls = lab.double_calls(2);
    assert!(
        calls.iter().any(|c| c == "systemctl start app") && calls.iter().any(|c| c == "systemctl enable app"),
        "{calls:?}"
    );
    assert_eq!(calls.iter().filter(|c| *c == "systemctl restart app").count(), 1, "the handler ran once: {calls:?}");
    assert!(calls.iter().any(|c| c.starts_with("apt-get install") && c.ends_with("copctl-demo-tool")), "{calls:?}");

    // Second run: nothing changes anywhere, and the handler does not fire.
    let (code, ev, err) = site.run_json(&["run", "all-kinds"]);
    assert_eq!(code, Some(0), "{err}");
    for (h, c) in recap(&ev) {
        assert_eq!(c["changed"], 0, "{h} changed on the re-run: {c}");
    }
    let changed: Vec<String> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["status"] == "changed")
        .map(|e| format!("{} {}", e["host"], e["step"]))
        .collect();
    assert!(changed.is_empty(), "{changed:?}");
    assert_eq!(lab.double_calls(2).iter().filter(|c| *c == "systemctl restart app").count(), 1);
    // The human output says so.
    let o = site.run(&["run", "all-kinds"]);
    assert!(stdout(&o).contains("ok: nothing changed"), "{}", stdout(&o));
}

#[test]
fn check_mode_reports_changes_and_changes_nothing_then_diff_shows_changes_but_not_private_files() {
    let lab = Lab::start(2, LabOptions::default());
    let site = Site::new(&lab);
    let (code, ev, err) = site.run_json(&["run", "all-kinds", "--check"]);
    assert_eq!(code, Some(0), "{err}\n{ev:?}");
    let would: Vec<String> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["host"] == "lab-1" && e["status"] == "changed")
        .map(|e| e["step"].as_str().unwrap().to_string())
        .collect();
    for s in ["app directory", "inline file", "hosts line", "managed block", "app service", "tool package"] {
        assert!(would.iter().any(|w| w == s), "check mode should report '{s}': {would:?}");
    }
    assert!(!lab.path(0, "/opt/app").exists(), "check mode changed the host");
    assert!(!lab.double_calls(0).iter().any(|c| c.starts_with("systemctl start") || c.starts_with("apt-get")));
    // A real run makes the changes check mode announced.
    let (code, ev, _) = site.run_json(&["run", "all-kinds"]);
    assert_eq!(code, Some(0));
    let made: Vec<String> = ev
        .iter()
        .filter(|e| e["event"] == "task_end" && e["host"] == "lab-1" && e["status"] == "changed")
        .map(|e| e["step"].as_str().unwrap().to_string())
        .collect();
    for w in &would {
        assert!(made.contains(w), "check mode announced '{w}', the run did not make it: {made:?}");
    }
    // Change a setting: --diff names the template's file but, as it is 0600 (it holds the admin
    // password), shows no line of it; a world-readable file's diff is shown in full.
    let env = std::fs::read_to_string(site.path("env.yaml"))
        .unwrap()
        .replace("app_port: 8080", "app_port: 9090")
        .replace("domain: cop.example.com", "domain: cop2.example.com");
    std::fs::write(site.path("env.yaml"), env).unwrap();
    let o = site.run(&["run", "all-kinds", "--diff", "--limit", "lab-1"]);
    let out = stdout(&o);
    assert!(out.contains("/opt/app/app.conf: changed; content not shown (mode 0600"), "{out}");
    assert!(!out.contains("listen = "), "{out}");
    assert!(out.contains("-127.0.0.1 app.cop.example.com") && out.contains("+127.0.0.1 app.cop2.example.com"), "{out}");
    assert!(!out.contains("s3cr3t-Adm1n-pw"), "a secret leaked into the diff: {out}");
}

#[test]
fn a_failing_host_does_not_stop_the_others_and_last_failed_retries_it() {
    let lab = Lab::start(4, LabOptions::default());
    let site = Site::new(&lab);
    let (code, ev, _) = site.run_json(&["run", "one-fails"]);
    assert_eq!(code, Some(2));
    let r = recap(&ev);
    assert_eq!(r["lab-2"]["failed"], 1);
    for h in ["lab-1", "lab-3", "lab-4"] {
        assert_eq!(r[h]["failed"], 0);
        assert_eq!(
            std::fs::read_to_string(lab.path(lab.hosts.iter().position(|x| x.name == h).unwrap(), "/var/tmp/after"))
                .unwrap(),
            "done\n"
        );
    }
    assert!(!lab.path(1, "/var/tmp/after").exists(), "the failed host's later steps must not run");
    assert_eq!(std::fs::read_to_string(site.path(".copctl/last-failed")).unwrap(), "lab-2\n");
    // The retry touches only that host.
    let (_, ev, _) = site.run_json(&["run", "one-fails", "--limit", "@.copctl/last-failed"]);
    let hosts: std::collections::BTreeSet<String> =
        ev.iter().filter(|e| e["event"] == "task_start").map(|e| e["host"].as_str().unwrap().to_string()).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["lab-2"]);
    // The run is listed.
    let o = site.run(&["runs"]);
    assert_eq!(stdout(&o).lines().count(), 2, "{}", stdout(&o));
    assert!(stdout(&o).lines().next().unwrap().contains("exit 2"), "{}", stdout(&o));
}

#[test]
fn serial_one_keeps_hosts_apart_and_max_fail_stops_the_batches() {
    let lab = Lab::start(4, LabOptions::default());
    let site = Site::new(&lab);
    let (code, ev, err) = site.run_json(&["run", "serial"]);
    assert_eq!(code, Some(0), "{err}");
    // From the run record: no two hosts inside the play at once.
    let mut spans: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for e in &ev {
        let h = e["host"].as_str().unwrap_or("").to_string();
        match e["event"].as_str() {
            Some("task_start") => {
                spans.entry(h).or_insert((u64::MAX, 0)).0 = spans
                    .get(e["host"].as_str().unwrap())
                    .map(|s| s.0)
                    .unwrap_or(u64::MAX)
                    .min(e["ts"].as_u64().unwrap());
            }
            Some("task_end") => {
                spans.entry(h).or_insert((u64::MAX, 0)).1 = e["ts"].as_u64().unwrap();
            }
            _ => {}
        }
    }
    let mut v: Vec<(u64, u64)> = spans.values().cloned().collect();
    v.sort();
    assert_eq!(v.len(), 4);
    for w in v.windows(2) {
        assert!(w[0].1 <= w[1].0, "two hosts were inside the serial play at once: {spans:?}");
    }
    // max_fail 0: the second host fails, the remaining batches do not run.
    lab.sh(1, "touch /etc/fail-here");
    let (code, ev, _) = site.run_json(&["run", "serial"]);
    assert_eq!(code, Some(2));
    let started: Vec<&str> = ev
        .iter()
        .filter(|e| e["event"] == "task_start" && e["step"] == "enter")
        .map(|e| e["host"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["lab-1", "lab-2"], "batches after the failure must not start");
}

#[test]
fn a_slow_host_does_not_hold_back_the_others() {
    let lab = Lab::start(3, LabOptions::default());
    let site = Site::new(&lab);
    let (code, ev, _) = site.run_json(&["run", "slow"]);
    assert_eq!(code, Some(0));
    let end_of = |h: &str, s: &str| {
        ev.iter().find(|e| e["event"] == "task_end" && e["host"] == h && e["step"] == s).unwrap()["ts"]
            .as_u64()
            .unwrap()
    };
    let slow_first = end_of("lab-1", "sometimes slow");
    for h in ["lab-2", "lab-3"] {
        assert!(end_of(h, "last") + 3000 < slow_first, "{h} waited for the slow host");
    }
}

#[test]
fn sigint_mid_run_exits_130_with_recap_and_no_half_written_file() {
    let lab = Lab::start(3, LabOptions::default());
    let site = Site::new(&lab);
    let child = site.cmd(&["run", "long"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Interrupt while the hosts are in the slow step.
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < Duration::from_secs(20), "the run never reached the slow step");
        if (0..3).all(|i| lab.path(i, "/var/tmp/big.txt").exists()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("RECAP") && stdout(&o).contains("interrupted"), "{}", stdout(&o));
    let lf = std::fs::read_to_string(site.path(".copctl/last-failed")).unwrap();
    assert_eq!(lf, "lab-1\nlab-2\nlab-3\n", "hosts with work left are listed for the retry");
    for i in 0..3 {
        assert_eq!(std::fs::metadata(lab.path(i, "/var/tmp/big.txt")).unwrap().len(), 2_000_000, "whole file or none");
        assert!(!lab.path(i, "/var/tmp/done.txt").exists(), "no new task starts after the interrupt");
        let tmp: Vec<_> = std::fs::read_dir(lab.path(i, "/var/tmp"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".copctl-"))
            .collect();
        assert!(tmp.is_empty());
    }
    // The next run converges.
    let (code, ev, _) = site.run_json(&["run", "long", "--limit", "@.copctl/last-failed"]);
    assert_eq!(code, Some(0));
    assert_eq!(total(&ev, "failed"), 0);
}

#[test]
fn secrets_never_leave_in_output_record_or_remote_argv() {
    let lab = Lab::start(2, LabOptions::default());
    let site = Site::new(&lab);
    // Sample every process's argv on the hosts while the run goes.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pids: Vec<i32> = (0..2).map(|i| lab.pid(i).unwrap()).collect();
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for pid in &pids {
                    let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
                    for e in std::fs::read_dir("/proc").unwrap().flatten() {
                        let p = e.path();
                        if std::fs::read_link(p.join("ns/pid")).ok() == ns
                            && let Ok(c) = std::fs::read(p.join("cmdline"))
                        {
                            seen.push(String::from_utf8_lossy(&c).replace('\0', " "));
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            seen
        })
    };
    let o = site.run(&["run", "all-kinds", "-v", "--diff"]);
    let (code2, ev, _) = site.run_json(&["run", "all-kinds"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let argv = sampler.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(code2, Some(0));
    let secret = "s3cr3t-Adm1n-pw";
    // It did reach the host, in a file of mode 0600 ...
    assert!(std::fs::read_to_string(lab.path(0, "/opt/app/app.conf")).unwrap().contains(secret));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(lab.path(0, "/opt/app/app.conf")).unwrap().permissions().mode() & 0o777, 0o600);
    // ... and nowhere else.
    assert!(!stdout(&o).contains(secret) && !stderr(&o).contains(secret));
    assert!(!ev.iter().any(|e| e.to_string().contains(secret)));
    assert!(argv.len() > 10, "the sampler saw processes");
    assert!(!argv.iter().any(|a| a.contains(secret)), "a secret was on a command line");
    for (path, text) in files_under(&site.path(".copctl")) {
        assert!(!text.contains(secret), "secret in {}", path.display());
    }
}

#[test]
fn a_limited_run_reads_the_token_outside_the_limit_and_changes_only_the_limit() {
    let lab = Lab::start(4, LabOptions::default());
    let site = Site::new(&lab);
    assert_eq!(site.run_json(&["run", "join", "--limit", "lab-1,lab-2"]).0, Some(0));
    // Only lab-4 now: lab-1 is read (the token), nothing else changes.
    let before: Vec<Vec<String>> = (0..4).map(|i| lab.double_calls(i)).collect();
    let (code, ev, err) = site.run_json(&["run", "join", "--limit", "lab-4"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(lab.path(3, "/var/tmp/join.conf")).unwrap(), "token: K10-token-of-lab-1\n");
    assert!(!lab.path(2, "/var/tmp/join.conf").exists(), "lab-3 is outside the limit");
    let touched: Vec<(String, String)> = ev
        .iter()
        .filter(|e| e["event"] == "task_end")
        .map(|e| (e["host"].as_str().unwrap().to_string(), e["step"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        touched,
        [("lab-1".to_string(), "read token".to_string()), ("lab-4".to_string(), "write join config".to_string())]
    );
    let after: Vec<Vec<String>> = (0..4).map(|i| lab.double_calls(i)).collect();
    assert_eq!(before, after);
}

#[test]
fn reboot_waits_for_a_new_boot_id_and_carries_on() {
    let mut lab = Lab::start(1, LabOptions::default());
    let site = Site::new(&lab);
    lab.install_doubles(&["reboot"]);
    let boot_before = std::fs::read_to_string(lab.path(0, "/proc/sys/kernel/random/boot_id")).unwrap();
    let mut child = site.cmd(&["run", "reboot", "--output", "json"]).stdout(Stdio::piped()).spawn().unwrap();
    // The "machine" comes back after it went down.
    let t = Instant::now();
    while !lab.is_down(0) {
        assert!(t.elapsed() < Duration::from_secs(30), "the host never rebooted");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    lab.restart(0);
    let status = child.wait().unwrap();
    let mut out = String::new();
    use std::io::Read;
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(status.code(), Some(0), "{out}");
    let after = std::fs::read_to_string(lab.path(0, "/var/tmp/after")).unwrap();
    assert_ne!(after.trim(), format!("after-{}", boot_before.trim()), "the step after the reboot ran on the new boot");
    assert!(lab.double_calls(0).iter().any(|c| c.starts_with("reboot")));
    let ev: Vec<Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(ev.iter().any(|e| e["event"] == "task_end" && e["step"] == "reboot" && e["status"] == "changed"), "{out}");
}

#[test]
fn a_full_filesystem_fails_the_step_and_keeps_the_old_file() {
    let lab = Lab::start(1, LabOptions::default());
    let site = Site::new(&lab);
    // A 1 MiB filesystem on the host's /var/tmp with the old file already in it.
    lab.sh(0, "mount -t tmpfs -o size=1m tmpfs /var/tmp && echo old > /var/tmp/big.txt");
    let (code, ev, _) = site.run_json(&["run", "long"]);
    assert_eq!(code, Some(2));
    let failed = ev.iter().find(|e| e["status"] == "failed").unwrap();
    assert_eq!(failed["step"], "big file");
    assert!(failed["msg"].as_str().unwrap().contains("No space left"), "{failed}");
    assert_eq!(lab.sh(0, "cat /var/tmp/big.txt"), "old\n", "the old file is intact");
    assert_eq!(lab.sh(0, "ls -A /var/tmp"), "big.txt\n", "no temporary file is left behind");
}
