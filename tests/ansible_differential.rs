//! copctl against Ansible itself (ansible-core from PyPI, the oracle): the same inventories must
//! give the same `--list` JSON, the same `--graph`, and the same hosts for every pattern, in the
//! same order.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::*;
use serde_json::Value;

/// The fixture inventories: the project's own, ansible-core's test files (`ansible-core/`), public
/// real-world ones (`public/`) and ones Ansible refuses (`refused/`). The whole corpus with
/// `COPCTL_FULL_CORPUS=1`; otherwise (CI's smoke run, for its time limit) a third of each
/// directory, a different third each day, so that every fixture keeps being compared.
fn inventories() -> Vec<std::path::PathBuf> {
    let full = std::env::var_os("COPCTL_FULL_CORPUS").is_some_and(|v| v == "1");
    let day = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86400);
    let mut v = vec![];
    for dir in ["inventory", "inventory/ansible-core", "inventory/public", "inventory/refused"] {
        let mut files: Vec<_> = std::fs::read_dir(fixture(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "ini"))
            .collect();
        files.sort();
        v.extend(
            files.into_iter().enumerate().filter(|(i, _)| full || (*i as u64 + day).is_multiple_of(3)).map(|(_, p)| p),
        );
    }
    v.sort();
    v
}

#[test]
fn inventory_list_matches_ansible_inventory() {
    let invs = inventories();
    let full = std::env::var_os("COPCTL_FULL_CORPUS").is_some_and(|v| v == "1");
    assert!(invs.len() >= if full { 30 } else { 9 }, "fixture inventories: {}", invs.len());
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = invs
            .iter()
            .map(|inv| {
                s.spawn(move || {
                    let inv_s = inv.to_str().unwrap();
                    let theirs = ansible_cmd("ansible-inventory").args(["-i", inv_s, "--list"]).output().unwrap();
                    let ours = copctl(None, &["inventory", "list", "-i", inv_s]);
                    // Where Ansible refuses an inventory, copctl must refuse it too.
                    if !theirs.status.success() {
                        return if ours.status.success() {
                            vec![format!(
                                "{inv_s}: ansible-inventory refuses it ({}), copctl reads it",
                                stderr(&theirs)
                            )]
                        } else {
                            vec![]
                        };
                    }
                    assert!(ours.status.success(), "copctl failed on {inv_s}: {}", stderr(&ours));
                    let a: Value = serde_json::from_slice(&theirs.stdout).unwrap();
                    let b: Value = serde_json::from_slice(&ours.stdout).unwrap();
                    let mut msgs = vec![];
                    if a != b {
                        msgs.push(format!(
                            "{inv_s}: --list differs\n--- ansible\n{}\n--- copctl\n{}",
                            serde_json::to_string_pretty(&a).unwrap(),
                            serde_json::to_string_pretty(&b).unwrap()
                        ));
                    }
                    let theirs = ansible_cmd("ansible-inventory").args(["-i", inv_s, "--graph"]).output().unwrap();
                    let ours = copctl(None, &["inventory", "graph", "-i", inv_s]);
                    if stdout(&theirs).trim_end() != stdout(&ours).trim_end() {
                        msgs.push(format!(
                            "{inv_s}: --graph differs\n--- ansible\n{}\n--- copctl\n{}",
                            stdout(&theirs),
                            stdout(&ours)
                        ));
                    }
                    msgs
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Patterns and limits for any inventory, built from its group and host names: each group whole,
/// subscripted (in range and past the end), as a glob and regex; a host; names that match nothing.
fn generic_cases(list: &Value) -> Vec<(String, Option<String>)> {
    let groups: Vec<String> = list.as_object().unwrap().keys().filter(|k| *k != "_meta").cloned().collect();
    let mut hosts: Vec<String> = vec![];
    for g in list.as_object().unwrap().values() {
        for h in g["hosts"].as_array().into_iter().flatten() {
            let h = h.as_str().unwrap().to_string();
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
    let mut cases: Vec<(String, Option<String>)> = [
        "all",
        "*",
        "ungrouped",
        "all:!ungrouped",
        "nosuch",
        "all,nosuch",
        "~nosuch",
        "all[0]",
        "all[-1]",
        "all[1:]",
        "all[999]",
    ]
    .iter()
    .map(|p| (p.to_string(), None))
    .collect();
    for g in groups.iter().filter(|g| *g != "all").take(8) {
        for p in [g.clone(), format!("{g}[0]"), format!("{g}[-1]"), format!("{g}[1:2]"), format!("{g}[99]")] {
            cases.push((p, None));
        }
        let head: String = g.chars().take(3).collect();
        cases.push((format!("~{head}"), None));
        cases.push((format!("all:!{g}"), None));
        cases.push(("all".into(), Some(g.clone())));
        cases.push(("all".into(), Some(format!("{g}[99]"))));
    }
    if let Some(h) = hosts.first() {
        let head: String = h.chars().take(3).collect();
        cases.push((h.clone(), None));
        cases.push((format!("{head}*"), None));
        cases.push(("all".into(), Some(h.clone())));
        cases.push(("all".into(), Some(format!("{h},nosuch"))));
        cases.push(("ungrouped".into(), Some(h.clone())));
    }
    cases.push(("all".into(), Some("nosuch".into())));
    cases.push(("all".into(), Some("~nosuch".into())));
    cases
}

/// Ansible's answers (the oracle helper) for each case, under one Python hash seed.
fn oracle(sources: &[&str], cases: &[(String, Option<String>)], seed: u32) -> Vec<Value> {
    let mut child = ansible_cmd("python")
        .arg(repo().join("tests/peers/ansible_hosts.py"))
        .args(sources)
        .env("PYTHONHASHSEED", seed.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(serde_json::to_string(&cases).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle failed on {sources:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether copctl's answer is Ansible's. Ansible refusing a pattern and copctl refusing it agree;
/// so do the oracle's empty answer for a `--limit` and copctl's error, because the `ansible` command
/// itself stops there ("... --limit leaves us with no hosts to target", exit 1).
fn agrees(want: &Value, got: &Value, limit: &Option<String>) -> bool {
    match (want, got) {
        (Value::Object(_), Value::Object(_)) => true,
        (Value::Array(w), Value::Object(_)) => w.is_empty() && limit.is_some(),
        _ => want == got,
    }
}

/// Ansible's answer and copctl's `hosts` for each case; the differences. Where groups nest more
/// than one level, Ansible walks them through a Python set, so its host order depends on the hash
/// seed (`ansible all -i 07-precedence.ini --list-hosts` gives `shared b1 a1` or `shared a1 b1`
/// from one run to the next): a case that differs under seed 0 is asked again under other seeds,
/// and copctl's answer must be one of Ansible's.
fn compare_patterns(inv_s: &str, cases: &[(String, Option<String>)]) -> Vec<String> {
    compare_patterns_of(&[inv_s], cases)
}

/// `compare_patterns` over several `-i` sources, merged in order.
fn compare_patterns_of(sources: &[&str], cases: &[(String, Option<String>)]) -> Vec<String> {
    let first = oracle(sources, cases, 0);
    let ours: Vec<Value> = cases
        .iter()
        .map(|(pattern, limit)| {
            let mut args = vec!["hosts", pattern.as_str()];
            for s in sources {
                args.extend(["-i", s]);
            }
            if let Some(l) = limit {
                args.extend(["--limit", l.as_str()]);
            }
            let out = copctl(None, &args);
            if out.status.success() {
                Value::from(stdout(&out).lines().map(str::to_string).collect::<Vec<_>>())
            } else {
                serde_json::json!({"error": stderr(&out)})
            }
        })
        .collect();
    let differing = |answers: &[Value]| -> Vec<usize> {
        (0..cases.len()).filter(|&i| !agrees(&answers[i], &ours[i], &cases[i].1)).collect()
    };
    let mut open = differing(&first);
    for seed in 1..8 {
        if open.is_empty() {
            break;
        }
        let again = oracle(sources, cases, seed);
        open.retain(|&i| !agrees(&again[i], &ours[i], &cases[i].1));
    }
    open.into_iter()
        .map(|i| {
            let (pattern, limit) = &cases[i];
            format!("{sources:?}: pattern {pattern:?} limit {limit:?}: ansible {} copctl {}", first[i], ours[i])
        })
        .collect()
}

/// Every fixture Ansible reads gives the same hosts for the generic patterns and limits.
#[test]
fn every_fixture_selects_like_ansible() {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = inventories()
            .into_iter()
            .map(|inv| {
                s.spawn(move || {
                    let inv_s = inv.to_str().unwrap();
                    let list = ansible_cmd("ansible-inventory").args(["-i", inv_s, "--list"]).output().unwrap();
                    if !list.status.success() {
                        return vec![];
                    }
                    compare_patterns(inv_s, &generic_cases(&serde_json::from_slice(&list.stdout).unwrap()))
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Ansible's implicit localhost, and patterns and limits (`spine*:rke2_servers`) over two `-i`
/// sources (an INI file, then a YAML one adding hosts to the first's group): the same hosts, in
/// the same order, as `ansible --list-hosts`.
#[test]
fn several_sources_and_the_implicit_localhost_select_like_ansible() {
    let (a, b) = (fixture("multi-source/a.ini"), fixture("multi-source/b.yml"));
    let sources = [a.to_str().unwrap(), b.to_str().unwrap()];
    let mut cases: Vec<(String, Option<String>)> = [
        ("all", Some("spine*:rke2_servers")),
        ("all", Some("rke2_servers:spine*")),
        ("spine*:rke2_servers", None),
        ("rke2_servers:spine*", None),
        ("leaf:spines", None),
        ("all", Some("leaf")),
        ("localhost", None),
        ("all:localhost", None),
        ("localhost:all", None),
        ("localhost:&all", None),
        ("all:!localhost", None),
        ("localhost[0]", None),
        ("local*", None),
        ("localhost", Some("localhost")),
        ("all", Some("localhost")),
        ("localhost", Some("rke2_servers")),
        ("all:localhost", Some("localhost,cop-worker-1")),
    ]
    .iter()
    .map(|(p, l)| (p.to_string(), l.map(str::to_string)))
    .collect();
    let list = ansible_cmd("ansible-inventory").args(["-i", sources[0], "-i", sources[1], "--list"]).output().unwrap();
    cases.extend(generic_cases(&serde_json::from_slice(&list.stdout).unwrap()));
    let failures = compare_patterns_of(&sources, &cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Both orders of the sources.
    let failures = compare_patterns_of(&[sources[1], sources[0]], &cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The other names of the controller, each asked of a new inventory: Ansible's makes one
    // implicit host, named as first asked, and answers every later name with it.
    for name in ["127.0.0.1", "::1"] {
        let failures = compare_patterns_of(&sources, &[(name.to_string(), None), (format!("{name}:all"), None)]);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// The implicit localhost's variables are Ansible's (a local connection, the controller's
/// Python, the `all` group's variables), and `--list` does not show it.
#[test]
fn the_implicit_localhost_has_ansibles_variables() {
    let inv = fixture("inventory/14-cop-example.ini");
    let inv_s = inv.to_str().unwrap();
    // The Python on PATH is the one Ansible runs on.
    let venv_bin = ansible_bin("python").parent().unwrap().to_path_buf();
    let path = format!("{}:{}", venv_bin.display(), std::env::var("PATH").unwrap_or_default());
    for name in ["localhost", "127.0.0.1"] {
        let theirs = ansible_cmd("ansible-inventory").args(["-i", inv_s, "--host", name]).output().unwrap();
        let ours = copctl_env(None, &["inventory", "host", name, "-i", inv_s], &[("PATH", &path)]);
        assert!(ours.status.success(), "{}", stderr(&ours));
        let (t, o): (Value, Value) =
            (serde_json::from_slice(&theirs.stdout).unwrap(), serde_json::from_slice(&ours.stdout).unwrap());
        assert_eq!(o, t, "{name}");
        assert_eq!(o["ansible_connection"], "local");
    }
    let ours = copctl(None, &["inventory", "list", "-i", inv_s]);
    assert!(!stdout(&ours).contains("localhost"));
}

/// The text of `ansible-inventory --list` itself, byte for byte, on the example site.
#[test]
fn inventory_list_text_is_byte_identical() {
    let inv = fixture("inventory/14-cop-example.ini");
    let inv_s = inv.to_str().unwrap();
    let theirs = ansible_cmd("ansible-inventory").args(["-i", inv_s, "--list"]).output().unwrap();
    let ours = copctl(None, &["inventory", "list", "-i", inv_s]);
    assert_eq!(stdout(&ours), stdout(&theirs));
}

const PATTERNS: &[(&str, Option<&str>)] = &[
    ("all", None),
    ("*", None),
    ("web", None),
    ("db", None),
    ("web:db", None),
    ("web,db", None),
    ("db,web", None),
    ("web:&db", None),
    ("web:!db", None),
    ("prod:!web02", None),
    ("!web", None),
    ("&web", None),
    ("web01", None),
    ("web0*", None),
    ("*.example.com", None),
    ("~web0[1-3]", None),
    ("~(db|lb)", None),
    ("~eb", None),
    ("web[0]", None),
    ("web[-1]", None),
    ("web[1:3]", None),
    ("web[2:]", None),
    ("web[0:0]", None),
    ("prod[3]", None),
    ("db:web[0]", None),
    ("gpu-?", None),
    ("gpu-[ab]", None),
    ("gpu-[!a]", None),
    ("stg-*:&staging", None),
    ("k8s:!gpu:!db", None),
    ("lb*", None),
    ("nomatch", None),
    ("web01,nomatch", None),
    ("web:db:&prod:!web03", None),
    ("ungrouped", None),
    ("top-a", None),
    ("all:!ungrouped", None),
    ("*web*", None),
    ("~.*1$", None),
    ("k8s[0:2]", None),
    (" web , db ", None),
    ("web[9]", None),
    ("prod:&gpu", None),
    ("!db:&prod", None),
    ("web[-2]", None),
    ("k8s[1:]:!web0[2-4]", None),
    ("all", Some("web")),
    ("prod", Some("!web01")),
    ("all", Some("@tests/fixtures/limit-file.txt")),
    ("k8s", Some("gpu-a,db1")),
    ("web", Some("db")),
    ("all", Some("web[0:1]:gpu")),
    ("k8s", Some("~^(web|gpu)")),
    ("all", Some("nosuch")),
    ("all", Some("~infra")),
    ("web", Some("db1")),
    ("all", Some("web01,nosuch")),
    ("all", Some("web[1:")),
    ("web[1:", None),
    ("web[9]:web01", None),
    ("all", Some("web[9]")),
    ("all", Some("web01,web[9]")),
];

#[test]
fn host_patterns_match_ansible_list_hosts() {
    assert!(PATTERNS.len() >= 40);
    let inv = fixture("patterns.ini");
    let inv_s = inv.to_str().unwrap();
    let cases: Vec<(&str, Option<String>)> = PATTERNS
        .iter()
        .map(|(p, l)| (*p, l.map(|l| l.replace("@tests/", &format!("@{}/tests/", repo().display())))))
        .collect();
    let cases: Vec<(String, Option<String>)> = cases.into_iter().map(|(p, l)| (p.to_string(), l)).collect();
    let failures = compare_patterns(inv_s, &cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The oracle helper agrees with the `ansible --list-hosts` command line itself.
#[test]
fn oracle_helper_agrees_with_ansible_cli() {
    let inv = fixture("patterns.ini");
    let inv_s = inv.to_str().unwrap();
    for (pattern, limit) in [("web:!db", None), ("k8s[1:]", Some("web")), ("web[9]", None), ("nosuch:web01", None)] {
        let mut cmd = ansible_cmd("ansible");
        cmd.args(["-i", inv_s, pattern, "--list-hosts"]);
        if let Some(l) = limit {
            cmd.args(["--limit", l]);
        }
        let cli = cmd.output().unwrap();
        let cli_hosts: Vec<String> =
            stdout(&cli).lines().skip(1).map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        let mut args = vec!["hosts", pattern, "-i", inv_s];
        if let Some(l) = limit {
            args.extend(["--limit", l]);
        }
        let ours: Vec<String> = stdout(&copctl(None, &args)).lines().map(str::to_string).collect();
        assert_eq!(ours, cli_hosts, "pattern {pattern}");
    }
}
