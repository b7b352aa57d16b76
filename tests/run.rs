//! `copctl run` on lab hosts: every step kind, idempotent re-runs, check and diff modes,
//! handlers, failures, serial batches, the DAG (no lock-step), interruption and secrets.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// tests/fixtures/site on `n` lab hosts, with the doubles its playbooks call.
fn site(n: usize) -> Site {
    let s = Site::hosts(n);
    s.fixture("site").lab().install_doubles(&["systemctl", "apt-get", "dpkg-query"]);
    s
}

fn total(ran: &Ran, field: &str) -> u64 {
    ran.recap().values().map(|r| r[field].as_u64().unwrap()).sum()
}

#[test]
fn every_step_kind_converges_and_a_rerun_changes_nothing() {
    let site = site(10);
    let lab = site.lab();
    let r = site.run_json(&["all-kinds"], 0).recap();
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
    let ran = site.run_json(&["all-kinds"], 0);
    let ev = ran.events();
    for (h, c) in ran.recap() {
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
    let out = site.test().args(["run", "all-kinds"]).run().stdout;
    assert!(out.contains("ok: nothing changed"), "{out}");
}

#[test]
fn check_mode_reports_changes_and_changes_nothing_then_diff_shows_changes_but_not_private_files() {
    let site = site(2);
    let lab = site.lab();
    let ev = site.run_json(&["all-kinds", "--check"], 0).events();
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
    let ev = site.run_json(&["all-kinds"], 0).events();
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
    site.edit("env.yaml", |env| {
        env.replace("app_port: 8080", "app_port: 9090").replace("domain: cop.example.com", "domain: cop2.example.com")
    });
    let out = site.test().args(["run", "all-kinds", "--diff", "--limit", "lab-1"]).run().stdout;
    assert!(out.contains("/opt/app/app.conf: changed; content not shown (mode 0600"), "{out}");
    assert!(!out.contains("listen = "), "{out}");
    assert!(out.contains("-127.0.0.1 app.cop.example.com") && out.contains("+127.0.0.1 app.cop2.example.com"), "{out}");
    assert!(!out.contains("s3cr3t-Adm1n-pw"), "a secret leaked into the diff: {out}");
}

#[test]
fn a_failing_host_does_not_stop_the_others_and_last_failed_retries_it() {
    let site = site(4);
    let lab = site.lab();
    let r = site.run_json(&["one-fails"], 2).recap();
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
    assert_eq!(site.read(".copctl/last-failed"), "lab-2\n");
    // The retry touches only that host (and it fails again).
    let ev = site.run_json(&["one-fails", "--limit", "@.copctl/last-failed"], 2).events();
    let hosts: std::collections::BTreeSet<String> =
        ev.iter().filter(|e| e["event"] == "task_start").map(|e| e["host"].as_str().unwrap().to_string()).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["lab-2"]);
    // The run is listed.
    let runs = site.test().arg("runs").run().stdout;
    assert_eq!(runs.lines().count(), 2, "{runs}");
    assert!(runs.lines().next().unwrap().contains("exit 2"), "{runs}");
    // Only the operator may read the record: command output can hold what no redactor knew.
    assert_private(&site.path(".copctl"));
    // Pruning keeps the newest records.
    let newest = runs.lines().next().unwrap().split_whitespace().next().unwrap().to_string();
    site.test()
        .args(["runs", "--prune", "1"])
        .stdout("removed 1 run record(s) from .copctl/runs; kept the newest 1 at most\n")
        .run();
    let runs = site.test().arg("runs").run().stdout;
    assert_eq!(runs.lines().map(|l| l.split_whitespace().next().unwrap()).collect::<Vec<_>>(), [newest]);
}

/// Every directory under `dir` is 0700 and every file 0600.
fn assert_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir), 0o700, "{}", dir.display());
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            assert_private(&p);
        } else {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
    }
}

#[test]
fn serial_one_keeps_hosts_apart_and_max_fail_stops_the_batches() {
    let site = site(4);
    let lab = site.lab();
    let ev = site.run_json(&["serial"], 0).events();
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
    let ev = site.run_json(&["serial"], 2).events();
    let started: Vec<&str> = ev
        .iter()
        .filter(|e| e["event"] == "task_start" && e["step"] == "enter")
        .map(|e| e["host"].as_str().unwrap())
        .collect();
    assert_eq!(started, ["lab-1", "lab-2"], "batches after the failure must not start");
}

#[test]
fn a_slow_host_does_not_hold_back_the_others() {
    let site = site(3);
    let ev = site.run_json(&["slow"], 0).events();
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
    let site = site(3);
    let lab = site.lab();
    let running = site.test().args(["run", "long"]).status(130).spawn();
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
    unsafe { libc::kill(running.id() as i32, libc::SIGINT) };
    let out = running.wait().stdout;
    assert!(out.contains("RECAP") && out.contains("interrupted"), "{out}");
    assert_eq!(
        site.read(".copctl/last-failed"),
        "lab-1\nlab-2\nlab-3\n",
        "hosts with work left are listed for the retry"
    );
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
    let ran = site.run_json(&["long", "--limit", "@.copctl/last-failed"], 0);
    assert_eq!(total(&ran, "failed"), 0);
}

#[test]
fn secrets_never_leave_in_output_record_or_remote_argv() {
    let site = site(2);
    let lab = site.lab();
    // Sample every process's argv on the hosts while the run goes.
    let sampler = ArgvSampler::start(lab);
    let o = site.test().args(["run", "all-kinds", "-v", "--diff"]).run();
    let ev = site.run_json(&["all-kinds"], 0).events();
    let argv = sampler.finish();
    let secret = "s3cr3t-Adm1n-pw";
    // It did reach the host, in a file of mode 0600 ...
    assert!(std::fs::read_to_string(lab.path(0, "/opt/app/app.conf")).unwrap().contains(secret));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(lab.path(0, "/opt/app/app.conf")).unwrap().permissions().mode() & 0o777, 0o600);
    // ... and nowhere else.
    assert!(!o.stdout.contains(secret) && !o.stderr.contains(secret));
    assert!(!ev.iter().any(|e| e.to_string().contains(secret)));
    assert!(argv.len() > 10, "the sampler saw processes");
    assert!(!argv.iter().any(|a| a.contains(secret)), "a secret was on a command line");
    for (path, text) in files_under(&site.path(".copctl")) {
        assert!(!text.contains(secret), "secret in {}", path.display());
    }
}

/// A secret with a quote, a space, `$`, a backslash and non-ASCII letters.
const ODD_SECRET: &str = "Vk'7 $Qz\\9ÄßpL-w";

/// A site whose playbook `secret-forms` uses `admin_password` (ODD_SECRET) through every usual
/// filter, in shell steps, a template file, inline content, a line and debug messages; also
/// through another variable, `hostvars` and a fact. Shell steps use builtins only (`:`,
/// `printf`), so no secret is on a command line unless copctl put it there.
fn secret_forms_site(n: usize) -> Site {
    let site = site(n);
    site.edit("env.yaml", |env| {
        env + "admin_password: \"Vk'7 $Qz\\\\9ÄßpL-w\"\napp_login: \"admin:{{ admin_password }}\"\nforms_rev: 1\n"
    });
    site.write(
        "templates/secret-forms.conf.j2",
        "# secret forms, revision {{ forms_rev }}\n\
         json = {{ admin_password | to_json }}\n\
         tojson = {{ admin_password | tojson }}\n\
         b64 = {{ admin_password | b64encode }}\n\
         url = {{ admin_password | urlencode }}\n\
         re = {{ admin_password | regex_replace('[0-9]', '#') }}\n\
         upper = {{ admin_password | upper }}\n\
         slice = {{ admin_password[1:] }}\n\
         login = {{ app_login }}\n",
    );
    site.write(
        "playbooks/secret-forms.yaml",
        r#"description: a secret through every filter, in every step that shows text
plays:
  - name: forms
    hosts: lab
    steps:
      - name: quoted
        shell: ": {{ admin_password | quote }}"
      - name: json
        shell: ": {{ admin_password | to_json | quote }} {{ admin_password | tojson | quote }}"
      - name: base64
        shell: ": {{ admin_password | b64encode }}"
      - name: urlencoded
        shell: ": {{ admin_password | urlencode | quote }}"
      - name: replaced
        shell: ": {{ admin_password | regex_replace('[0-9]', '#') | quote }}"
      - name: upper
        shell: ": {{ admin_password | upper | quote }}"
      - name: sliced
        shell: ": {{ admin_password[1:] | quote }}"
      - name: joined
        shell: ": {{ ('admin:' ~ admin_password) | quote }}"
      - name: through a variable
        shell: ": {{ app_login | b64encode }}"
      - name: through hostvars
        shell: ": {{ hostvars[inventory_hostname]['admin_password'] | lower | quote }}"
      - name: derive
        set_fact: { pw_b64: "{{ admin_password | b64encode }}" }
      - name: through a fact
        shell: ": {{ pw_b64[2:] }} {{ pw_b64 }}"
      - name: count
        shell: "printf '%s' {{ admin_password | quote }} | wc -c"
        register: counted
      - name: no secret
        shell: ": revision {{ forms_rev }}"
      - name: config
        template: { src: secret-forms.conf.j2, dest: /var/tmp/secret-forms.conf, mode: "0644" }
      - name: inline
        copy: { content: "{{ 'pw=' ~ (admin_password | tojson) }} {{ forms_rev }}\n", dest: /var/tmp/secret-inline, mode: "0644" }
      - name: a line
        line: { path: /var/tmp/secret-line, line: "{{ admin_password | upper }} rev {{ forms_rev }}", regexp: " rev ", create: true }
      - name: say it
        debug: { msg: "{{ admin_password | b64encode }} {{ admin_password[1:] }}" }
      - name: show it
        debug: { var: "admin_password | urlencode" }
"#,
    );
    site
}

/// Every form of ODD_SECRET the playbook makes, and each of its 6-character substrings.
fn odd_secret_forms() -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let s = ODD_SECRET;
    let url: String = s
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/.-_".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut forms = vec![
        s.to_string(),
        s.replace('\'', "'\"'\"'"),
        s.replace('\\', "\\\\"),
        s.replace('\\', "\\\\").replace('\'', "\\u0027"),
        STANDARD.encode(s),
        URL_SAFE_NO_PAD.encode(s),
        STANDARD.encode(format!("admin:{s}")),
        url,
        s.replace(['7', '9'], "#"),
        s.to_uppercase(),
        s.to_lowercase(),
    ];
    let chars: Vec<char> = s.chars().collect();
    forms.extend(chars.windows(6).map(|w| w.iter().collect::<String>()));
    forms
}

#[test]
fn a_secret_through_any_filter_never_leaves_in_output_record_log_or_remote_argv() {
    let site = secret_forms_site(2);
    let lab = site.lab();
    let sampler = ArgvSampler::start(lab);
    let o1 = site.test().args(["run", "secret-forms", "-vvv", "--diff", "--log-file", "trace.log"]).run();
    // A second run that changes the files again, with events as JSON.
    site.edit("env.yaml", |env| env.replace("forms_rev: 1", "forms_rev: 2"));
    let o2 = site.test().args(["run", "secret-forms", "-vvv", "--diff", "--output", "json"]).run();
    let argv = sampler.finish();
    // The secret did reach the hosts, in each form.
    let conf = std::fs::read_to_string(lab.path(0, "/var/tmp/secret-forms.conf")).unwrap();
    assert!(conf.contains(&format!("slice = {}", &ODD_SECRET[1..])) && conf.contains("revision 2"), "{conf}");
    let ev = o2.events();
    assert!(ev.iter().filter(|e| e["event"] == "task_end" && e["status"] == "changed").count() >= 28, "{}", o2.stdout);
    // ... and nowhere else.
    let mut places: Vec<(String, String)> = vec![];
    for (k, o) in [("run 1", &o1), ("json run", &o2)] {
        places.push((format!("{k} stdout"), o.stdout.clone()));
        places.push((format!("{k} stderr"), o.stderr.clone()));
    }
    places.push(("trace.log".into(), site.read("trace.log")));
    places.extend(files_under(&site.path(".copctl")).into_iter().map(|(p, t)| (p.display().to_string(), t)));
    assert!(argv.len() > 10, "the sampler saw the hosts' processes");
    places.push(("remote command lines".into(), argv.join("\n")));
    let mut found = vec![];
    for (place, text) in &places {
        for form in odd_secret_forms() {
            if text.contains(&form) {
                found.push(format!("{form:?} in {place}"));
            }
        }
    }
    assert!(found.is_empty(), "secret forms found: {found:#?}");
    assert!(places[1].1.contains("TRACE") || places[1].1.contains("DEBUG"), "-vvv traced: {}", places[1].1);
}

#[test]
fn text_rendered_from_a_secret_is_shown_as_its_template_source() {
    let site = secret_forms_site(1);
    let o = site.test().args(["run", "secret-forms", "-v", "--diff"]).run().stdout;
    let note = "# rendered text withheld: it reads secret variables: admin_password";
    // Commands as written in the playbook, saying why; through another variable too.
    for cmd in [
        ": {{ admin_password | quote }}",
        ": {{ admin_password | to_json | quote }} {{ admin_password | tojson | quote }}",
        ": {{ admin_password[1:] | quote }}",
        ": {{ app_login | b64encode }}",
        ": {{ hostvars[inventory_hostname]['admin_password'] | lower | quote }}",
    ] {
        assert!(o.contains(&format!("    $ {cmd}    {note}\n")), "{cmd}:\n{o}");
    }
    assert!(
        o.contains(": {{ pw_b64[2:] }} {{ pw_b64 }}    # rendered text withheld: it reads secret variables: pw_b64\n"),
        "a fact set from a secret is one: {o}"
    );
    // A command that reads no secret is shown as it ran; a secret-dependent command's output
    // is shown (masked where it holds a secret).
    assert!(o.contains("    $ : revision 1\n"), "{o}");
    assert!(o.contains(&format!("    stdout: {}\n", ODD_SECRET.len())), "{o}");
    // File diffs and messages.
    for file in ["/var/tmp/secret-forms.conf", "/var/tmp/secret-inline", "/var/tmp/secret-line"] {
        assert!(
            o.contains(&format!("    {file}: changed; content not shown (reads secret variables: admin_password)\n")),
            "{file}: {o}"
        );
    }
    assert!(
        o.contains(&format!("— {{{{ admin_password | b64encode }}}} {{{{ admin_password[1:] }}}}    {note}\n")),
        "{o}"
    );
    assert!(o.contains(&format!("— admin_password | urlencode    {note}\n")), "{o}");
    // The run record says the same.
    let log = files_under(&site.path(".copctl/runs"))
        .into_iter()
        .find(|(p, _)| p.ends_with("hosts/lab-1.log"))
        .map(|(_, t)| t)
        .unwrap();
    assert!(log.contains(&format!("$ : {{{{ admin_password | quote }}}}    {note}\n")), "{log}");
    assert!(log.contains("$ : revision 1\n"), "{log}");
    assert!(
        log.contains("/var/tmp/secret-forms.conf: changed; content not shown (reads secret variables: admin_password)"),
        "{log}"
    );
}

/// Values computed from secrets (issue 43's corpus): each is rendered into a command that
/// prints it back, a message, a file's content, a failing command's stderr and a fact; each
/// must be masked in every output, whole and in the forms copctl writes (quoted, base64).
const DERIVED_FORMS: &[(&str, &str)] = &[
    ("concatenated then encoded", "('pre:' ~ api_token ~ ':post') | b64encode"),
    ("regex_replace", "registry_password | regex_replace('[0-9]', '#')"),
    ("a slice", "signing_key[:12]"),
    ("replace", "api_token | replace('-', '')"),
    ("reversed", "api_token | reverse"),
    ("a method's part", "api_token.split('-')[1]"),
    ("a regex_search", "signing_key | regex_search('Ly[a-zA-Z]+')"),
];

fn derived_values() -> Vec<String> {
    use base64::Engine;
    let (token, pw, key) = ("tok-abc123-Zq9x", "Reg1stry-Pw-77", "sk_live_51HqLyjWDarjtT1zdp7dc");
    vec![
        base64::engine::general_purpose::STANDARD.encode(format!("pre:{token}:post")),
        pw.replace(|c: char| c.is_ascii_digit(), "#"),
        key[..12].to_string(),
        token.replace('-', ""),
        token.chars().rev().collect(),
        "abc123".to_string(),
        "LyjWDarjtT".to_string(),
        key[key.len() - 9..].to_string(),
    ]
}

fn derived_forms_site() -> Site {
    let site = site(1);
    site.edit("env.yaml", |env| {
        env + "api_token: tok-abc123-Zq9x\nregistry_password: Reg1stry-Pw-77\nsigning_key: sk_live_51HqLyjWDarjtT1zdp7dc\n\
               secret_vars: [signing_key]\nderived_rev: 1\n"
    });
    let mut steps = String::new();
    for (i, (what, form)) in DERIVED_FORMS.iter().enumerate() {
        steps += &format!(
            "      - name: echo {what}\n        shell: \"echo {{{{ {form} }}}}\"\n        register: echoed{i}\n\
             \x20     - name: show what {what} printed\n        debug: {{ var: echoed{i}.stdout }}\n"
        );
    }
    let all: Vec<String> = DERIVED_FORMS.iter().map(|(_, f)| format!("{{{{ {f} }}}}")).collect();
    let all = all.join(" ");
    site.write(
        "playbooks/derived-forms.yaml",
        format!(
            r#"description: values computed from secrets, printed back by the host
plays:
  - name: derived
    hosts: lab
    steps:
{steps}      - name: say them
        debug: {{ msg: "{all}" }}
      - name: write them
        copy: {{ content: "{all} rev {{{{ derived_rev }}}}\n", dest: /var/tmp/derived-forms, mode: "0600" }}
      - name: fail with one
        shell: "echo {{{{ registry_password | regex_replace('[0-9]', '#') }}}} >&2; exit 3"
        ignore_errors: true
      - name: "named after {{{{ signing_key[:12] }}}}"
        debug: {{ msg: named }}
      - name: derive a fact
        set_fact: {{ key_tail: "{{{{ signing_key[-9:] }}}}" }}
      - name: echo the fact
        shell: "echo {{{{ key_tail }}}}; echo {{{{ key_tail | b64encode }}}}"
"#
        ),
    );
    site
}

#[test]
fn values_computed_from_secrets_never_leave_in_output_record_or_log() {
    use base64::Engine;
    let site = derived_forms_site();
    let lab = site.lab();
    let o1 = site.test().args(["run", "derived-forms", "-v", "--diff", "--log-file", "trace.log"]).run();
    site.edit("env.yaml", |env| env.replace("derived_rev: 1", "derived_rev: 2"));
    let o2 = site.test().args(["run", "derived-forms", "-vv", "--diff", "--output", "json"]).run();
    // The host got the real values ...
    let written = std::fs::read_to_string(lab.path(0, "/var/tmp/derived-forms")).unwrap();
    let values = derived_values();
    for v in &values[..DERIVED_FORMS.len()] {
        assert!(written.contains(v.as_str()), "{v} in {written}");
    }
    assert!(o1.stdout.contains("echo the fact") && o2.stdout.contains("\"task_end\""), "{}", o1.stdout);
    // ... and nothing else did, in any of the forms copctl writes.
    let mut places: Vec<(String, String)> = vec![];
    for (k, o) in [("run", &o1), ("json run", &o2)] {
        places.push((format!("{k} stdout"), o.stdout.clone()));
        places.push((format!("{k} stderr"), o.stderr.clone()));
    }
    places.push(("trace.log".into(), site.read("trace.log")));
    places.extend(files_under(&site.path(".copctl")).into_iter().map(|(p, t)| (p.display().to_string(), t)));
    let mut found = vec![];
    for (place, text) in &places {
        for v in &values {
            for form in [v.clone(), base64::engine::general_purpose::STANDARD.encode(v), format!("\"{v}\"")] {
                if text.contains(&form) {
                    found.push(format!("{form:?} (of {v:?}) in {place}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "derived secrets found: {found:#?}");
    // What was masked is still said to be there.
    assert!(o1.stdout.contains("stdout: ********"), "{}", o1.stdout);
}

#[test]
fn a_limited_run_reads_the_token_outside_the_limit_and_changes_only_the_limit() {
    let site = site(4);
    let lab = site.lab();
    site.run_json(&["join", "--limit", "lab-1,lab-2"], 0);
    // Only lab-4 now: lab-1 is read (the token), nothing else changes.
    let before: Vec<Vec<String>> = (0..4).map(|i| lab.double_calls(i)).collect();
    let ev = site.run_json(&["join", "--limit", "lab-4"], 0).events();
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

/// `copctl ARGS` while the lab plays the machine: lab-1, once its reboot took it down, comes back
/// (a bare command, not a Test: the host is restarted, `&mut` lab, while copctl runs). The
/// exit status and stdout.
fn run_through_a_reboot(site: &mut Site, args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = site.command(args).stdout(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    while !site.lab_mut().is_down(0) {
        assert!(t.elapsed() < Duration::from_secs(30), "the host never rebooted");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    site.lab_mut().restart(0);
    let status = child.wait().unwrap();
    let mut out = String::new();
    use std::io::Read;
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    (status, out)
}

#[test]
fn reboot_waits_for_a_new_boot_id_and_carries_on() {
    let mut site = site(1);
    site.lab().install_doubles(&["reboot"]);
    let boot_before = std::fs::read_to_string(site.lab().path(0, "/proc/sys/kernel/random/boot_id")).unwrap();
    let (status, out) = run_through_a_reboot(&mut site, &["run", "reboot", "--output", "json"]);
    assert_eq!(status.code(), Some(0), "{out}");
    let lab = site.lab();
    let after = std::fs::read_to_string(lab.path(0, "/var/tmp/after")).unwrap();
    assert_ne!(after.trim(), format!("after-{}", boot_before.trim()), "the step after the reboot ran on the new boot");
    assert!(lab.double_calls(0).iter().any(|c| c.starts_with("reboot")));
    let ev: Vec<Value> = out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(ev.iter().any(|e| e["event"] == "task_end" && e["step"] == "reboot" && e["status"] == "changed"), "{out}");
}

/// Ansible's reboot with `post_reboot_delay` and `test_command`: the command runs on the
/// rebooted host, after the delay, before the task ends; what follows runs on the new boot.
#[test]
fn an_ansible_reboot_runs_its_test_command_on_the_new_boot() {
    let mut site = site(1);
    site.lab().install_doubles(&["reboot"]);
    site.write(
        "reboot.yml",
        "- hosts: lab\n  gather_facts: false\n  tasks:\n    - reboot:\n        reboot_timeout: 60\n        post_reboot_delay: 1\n        test_command: cat /proc/sys/kernel/random/boot_id > /var/tmp/tested\n      register: r\n    - copy: {dest: /var/tmp/after, content: \"{{ r.rebooted }} {{ r.elapsed >= 1 }}\\n\"}\n",
    );
    let boot_before = std::fs::read_to_string(site.lab().path(0, "/proc/sys/kernel/random/boot_id")).unwrap();
    let (status, out) = run_through_a_reboot(&mut site, &["run", "reboot.yml"]);
    assert_eq!(status.code(), Some(0), "{out}");
    let tested = std::fs::read_to_string(site.lab().path(0, "/var/tmp/tested")).unwrap();
    assert!(!tested.trim().is_empty() && tested != boot_before, "the test command ran on the new boot");
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/var/tmp/after")).unwrap(), "True True\n");
}

#[test]
fn a_full_filesystem_fails_the_step_and_keeps_the_old_file() {
    let site = site(1);
    let lab = site.lab();
    // A 1 MiB filesystem on the host's /var/tmp with the old file already in it.
    lab.sh(0, "mount -t tmpfs -o size=1m tmpfs /var/tmp && echo old > /var/tmp/big.txt");
    let ev = site.run_json(&["long"], 2).events();
    let failed = ev.iter().find(|e| e["status"] == "failed").unwrap();
    assert_eq!(failed["step"], "big file");
    assert!(failed["msg"].as_str().unwrap().contains("No space left"), "{failed}");
    assert_eq!(lab.sh(0, "cat /var/tmp/big.txt"), "old\n", "the old file is intact");
    assert_eq!(lab.sh(0, "ls -A /var/tmp"), "big.txt\n", "no temporary file is left behind");
}

/// `--start-at` skips the steps before the one named, except those tagged `always` (facts a
/// later step reads, as Ansible still gathers facts whatever task it starts at).
#[test]
fn start_at_skips_the_earlier_steps_but_not_those_tagged_always() {
    let site = site(1);
    site.write(
        "playbooks/resume.yaml",
        "description: resume (test playbook)\nplays:\n  - name: p\n    hosts: lab\n    steps:\n\
         \x20     - { name: facts, shell: \"echo facts >> /var/tmp/order\", tags: [always] }\n\
         \x20     - { name: first, shell: \"echo first >> /var/tmp/order\" }\n\
         \x20     - { name: second, shell: \"echo second >> /var/tmp/order\" }\n",
    );
    site.test().args(["run", "resume", "--start-at", "second"]).run();
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/var/tmp/order")).unwrap(), "facts\nsecond\n");
}

#[test]
fn unless_skips_the_command_when_its_own_succeeds_and_says_nothing_of_its_output() {
    // A guard with no command in it (blank, a comment) does not skip: the command runs.
    let site = Site::hosts(1);
    let lab = site.lab();
    lab.sh(0, "mkdir -p /opt/u && echo configured > /opt/u/state");
    site.write(
        "playbooks/unless.yaml",
        r#"description: unless guards
plays:
  - name: u
    hosts: lab
    steps:
      - name: holds
        shell: echo ran >> /opt/u/holds
        unless: grep -q configured /opt/u/state
      - name: does not hold
        shell: echo ran >> /opt/u/fails
        unless: grep -q missing /opt/u/state
      - name: exits
        shell: echo ran >> /opt/u/exits
        unless: "true; exit 3"
      - name: in chdir
        shell: echo ran >> /opt/u/relative
        unless: test -f state && echo noisy-out && echo noisy-err >&2
        chdir: /opt/u
      - name: nothing to test
        shell: echo ran >> /opt/u/blank
        unless: " # a comment, no command"
      - name: no such chdir
        shell: echo ran >> /opt/u/nowhere
        unless: "true"
        chdir: /opt/u/none
        ignore_errors: true
"#,
    );
    let ran = site.run_json(&["unless"], 0);
    let ends: Vec<(String, String, String)> = ran
        .events()
        .iter()
        .filter(|e| e["event"] == "task_end")
        .map(|e| (e["step"].as_str().unwrap().into(), e["status"].as_str().unwrap().into(), e["msg"].to_string()))
        .collect();
    let skipped = "\"skipped: the unless command succeeded\"".to_string();
    assert_eq!(
        ends,
        [
            ("holds".into(), "ok".into(), skipped.clone()),
            ("does not hold".into(), "changed".into(), "\"\"".into()),
            ("exits".into(), "changed".into(), "\"\"".into()),
            ("in chdir".into(), "ok".into(), skipped),
            ("nothing to test".into(), "changed".into(), "\"\"".into()),
            ("no such chdir".into(), "failed".into(), "\"Unable to change directory before execution.\"".into()),
        ]
    );
    for (file, ran_there) in
        [("holds", false), ("fails", true), ("exits", true), ("relative", false), ("blank", true), ("nowhere", false)]
    {
        assert_eq!(lab.path(0, &format!("/opt/u/{file}")).exists(), ran_there, "{file}");
    }
    assert!(!ran.stdout.contains("noisy"), "the guard's output is nobody's: {}", ran.stdout);
}
