//! `copctl runs` and `copctl runs show`: past runs listed with their start, duration, result,
//! playbooks and limit, and one run shown per host and task, failures first, from the records
//! real runs wrote (two hosts on a local connection: the run needs no lab).

mod common;

use common::*;

const INVENTORY: &str = "[lab]\nh1 ansible_connection=local\nh2 ansible_connection=local\n";

/// A file written on each host (changed, with its diff under --diff), a check, and a failure on h2.
const PLAYBOOK: &str = r#"plays:
  - name: p
    hosts: lab
    steps:
      - name: write a file
        copy: { content: "hello {{ inventory_hostname }}\n", dest: "{{ out }}/{{ inventory_hostname }}.txt" }
      - name: check
        command: "true"
        changed_when: false
      - name: fails on h2
        shell: "echo boom >&2; exit 3"
        when: inventory_hostname == 'h2'
"#;

/// A site with two runs recorded: the playbook on both hosts with --diff (h2 fails), then on h1
/// alone in check mode.
fn site_with_runs() -> Site {
    let site = Site::new();
    site.write("inventory.ini", INVENTORY).write("playbooks/demo.yaml", PLAYBOOK);
    let out = format!("out={}", site.path("out").display());
    std::fs::create_dir_all(site.path("out")).unwrap();
    site.test().args(["run", "demo", "--diff", "-e", &out]).status(2).run();
    site.test().args(["run", "demo", "--limit", "h1", "--check", "-e", &out]).run();
    site
}

#[test]
fn runs_lists_each_run_with_its_start_duration_result_playbooks_and_limit() {
    let site = site_with_runs();
    site.test()
        .arg("runs")
        .stdout_normalized(
            "[RUN]  [DATE] [T]  ok, nothing changed (exit 0)  demo --limit h1 --check  1 host(s): ok 1 changed 0 failed 0 unreachable 0\n\
             [RUN]  [DATE] [T]  failed (exit 2)  demo  2 host(s): ok 2 changed 2 failed 1 unreachable 0\n",
        )
        .run();
}

/// The run's id: the older of the two (`copctl runs` lists the newest first).
fn first_run(site: &Site) -> String {
    let runs = site.test().arg("runs").run().stdout;
    runs.lines().last().unwrap().split_whitespace().next().unwrap().to_string()
}

#[test]
fn runs_show_puts_failures_first_then_changes_with_their_diffs_then_each_hosts_tasks() {
    let site = site_with_runs();
    let id = first_run(&site);
    site.test()
        .args(["runs", "show", &id])
        .stdout_normalized(
            r#"run [RUN]: demo
started [DATE], took [T]: failed (exit 2)
2 host(s): ok 2, changed 2, failed 1, unreachable 0, skipped 1, ignored 0

FAILED (1)
  h2: demo › p › fails on h2 ([T])
    msg: non-zero return code 3: boom
    $ echo boom >&2; exit 3
    stderr: boom

CHANGED (2)
  h1: demo › p › write a file ([T])
    --- [SITE]/out/h1.txt (before)
    +++ [SITE]/out/h1.txt (after)
    @@ -0,0 +1 @@
    +hello h1
  h2: demo › p › write a file ([T])
    --- [SITE]/out/h2.txt (before)
    +++ [SITE]/out/h2.txt (after)
    @@ -0,0 +1 @@
    +hello h2

HOSTS
  h1: ok 1, changed 1, failed 0, unreachable 0, skipped 1 ([T])
    changed          demo › p › write a file ([T])
    ok               demo › p › check ([T])
    skipped          demo › p › fails on h2 ([T])
  h2: ok 1, changed 1, failed 1, unreachable 0, skipped 0 ([T])
    changed          demo › p › write a file ([T])
    ok               demo › p › check ([T])
    failed           demo › p › fails on h2 ([T])
"#,
        )
        .run();
}

#[test]
fn runs_show_defaults_to_the_last_run_and_filters_by_host_and_failure() {
    let site = site_with_runs();
    site.test()
        .args(["runs", "show"])
        .stdout_normalized(
            r#"run [RUN]: demo --limit h1 --check
started [DATE], took [T]: ok, nothing changed (exit 0)
1 host(s): ok 1, changed 0, failed 0, unreachable 0, skipped 2, ignored 0

HOSTS
  h1: ok 1, changed 0, failed 0, unreachable 0, skipped 2 ([T])
    ok               demo › p › write a file ([T])
    skipped          demo › p › check ([T])
    skipped          demo › p › fails on h2 ([T])
"#,
        )
        .run();
    let id = first_run(&site);
    site.test()
        .args(["runs", "show", &id, "--failed"])
        .stdout_normalized(
            r#"run [RUN]: demo
started [DATE], took [T]: failed (exit 2)
2 host(s): ok 2, changed 2, failed 1, unreachable 0, skipped 1, ignored 0

FAILED (1)
  h2: demo › p › fails on h2 ([T])
    msg: non-zero return code 3: boom
    $ echo boom >&2; exit 3
    stderr: boom

HOSTS
  h2: ok 1, changed 1, failed 1, unreachable 0, skipped 0 ([T])
    failed           demo › p › fails on h2 ([T])
"#,
        )
        .run();
    // A run named by the beginning of its id.
    site.test()
        .args(["runs", "show", &id[..18], "--host", "h1"])
        .stdout_normalized(
            r#"run [RUN]: demo
started [DATE], took [T]: failed (exit 2)
1 host(s): ok 1, changed 1, failed 0, unreachable 0, skipped 1, ignored 0

CHANGED (1)
  h1: demo › p › write a file ([T])
    --- [SITE]/out/h1.txt (before)
    +++ [SITE]/out/h1.txt (after)
    @@ -0,0 +1 @@
    +hello h1

HOSTS
  h1: ok 1, changed 1, failed 0, unreachable 0, skipped 1 ([T])
    changed          demo › p › write a file ([T])
    ok               demo › p › check ([T])
    skipped          demo › p › fails on h2 ([T])
"#,
        )
        .run();
}

#[test]
fn runs_show_as_json_has_each_hosts_tasks_with_their_output() {
    let site = site_with_runs();
    let id = first_run(&site);
    let ran = site.test().args(["runs", "show", &id, "--host", "h2", "--output", "json"]).run();
    let v = ran.json();
    assert_eq!(
        (v["id"].as_str(), v["exit_code"].as_i64(), v["result"].as_str()),
        (Some(id.as_str()), Some(2), Some("failed (exit 2)"))
    );
    assert_eq!(v["playbooks"], serde_json::json!(["demo"]));
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0]["host"], "h2");
    assert_eq!(hosts[0]["recap"]["failed"], 1);
    let tasks = hosts[0]["tasks"].as_array().unwrap();
    let steps: Vec<(&str, &str)> =
        tasks.iter().map(|t| (t["step"].as_str().unwrap(), t["status"].as_str().unwrap())).collect();
    assert_eq!(steps, [("write a file", "changed"), ("check", "ok"), ("fails on h2", "failed")]);
    assert_eq!(tasks[2]["stderr"], "boom\n");
    assert_eq!(tasks[2]["msg"], "non-zero return code 3: boom");
    assert!(tasks[0]["diff"].as_str().unwrap().ends_with("+hello h2\n"), "{}", tasks[0]["diff"]);
}

#[test]
fn runs_show_names_what_it_cannot_find() {
    let site = Site::new();
    site.write("inventory.ini", INVENTORY);
    site.test()
        .args(["runs", "show"])
        .status(1)
        .stderr("  x no runs recorded in .copctl/runs\n  help: copctl runs lists the recorded runs\n\n")
        .run();
    site.test().arg("runs").stdout("no runs recorded in .copctl/runs\n").run();
    let site = site_with_runs();
    site.test()
        .args(["runs", "show", "19990101"])
        .status(1)
        .stderr("  x no run '19990101' in .copctl/runs\n  help: copctl runs lists the recorded runs\n\n")
        .run();
    site.test()
        .args(["runs", "show", "2"])
        .status(1)
        .stderr_normalized("  x '2' begins 2 run ids: [RUN], [RUN]\n  help: copctl runs lists the recorded runs\n\n")
        .run();
    site.test()
        .args(["runs", "show", "--host", "h3"])
        .status(1)
        .stderr_normalized("  x --host 'h3': run [RUN] did nothing on such a host\n  help: its hosts: h1\n\n")
        .run();
    let id = first_run(&site);
    site.test()
        .args(["runs", "show", &id, "--host", "h22"])
        .status(1)
        .stderr_normalized("  x --host 'h22': run [RUN] did nothing on such a host\n  help: did you mean: h2?\n\n")
        .run();
}

/// `runs report`: one HTML file, private as the record, that loads nothing from anywhere;
/// opened in headless Chromium (Debian's package; CI installs it), it runs its script without a
/// console message and shows a timeline row for every host.
#[test]
fn runs_report_is_one_html_file_that_a_browser_opens_offline_showing_every_host() {
    use std::os::unix::fs::PermissionsExt;
    let site = site_with_runs();
    let id = first_run(&site);
    site.test()
        .args(["runs", "report", &id, "-o", "report.html"])
        .stdout_normalized("wrote report.html (run [RUN], 2 host(s))\n")
        .run();
    let path = site.path("report.html");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let html = site.read("report.html");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<style>") && html.contains("<script>"));
    for outside in ["http:", "https:", "src=", "<link", "@import", "url("] {
        assert!(!html.contains(outside), "the report must load nothing: it has {outside}");
    }
    assert!(html.contains("non-zero return code 3: boom") && html.contains("<details><summary>diff</summary>"));

    let Some(chromium) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| std::process::Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
    else {
        assert!(std::env::var_os("CI").is_none(), "CI installs chromium (.ci/run) for this test");
        eprintln!("skipped: no chromium here (apt-get install chromium) to open the report in");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", path.display()))
        .output()
        .unwrap();
    let (dom, log) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(dom.contains("data-hosts=\"2\""), "the script did not run to its end:\n{dom}");
    for h in ["h1", "h2"] {
        assert!(dom.contains(&format!("<div class=\"row\" data-host=\"{h}\">")), "no timeline row for {h}");
    }
}
