//! Existing Ansible sites, unchanged, against ansible-core itself (the oracle): group_vars/ and
//! host_vars/ files and directories beside the inventory, the precedence of every layer, YAML
//! inventories, inventory directories mixing INI and YAML, several `-i` and `h1,h2,` host lists.
//! For each site copctl must print what `ansible-inventory --list`, `--graph` and `--host H` (for
//! every host) print, and select what `ansible PATTERN --list-hosts` selects.
//!
//! The sites are tests/fixtures/sites/*; each case runs both tools in the site's directory with
//! the same `-i` values, so paths in messages are the site's own.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use common::*;
use serde_json::Value;

/// (site directory, `-i` values).
const CASES: &[(&str, &[&str])] = &[
    ("01-cop", &["inventory.ini"]),
    ("02-precedence", &["hosts.ini"]),
    ("03-directory", &["inventory"]),
    ("03-directory", &["inventory/"]),
    ("04-yaml", &["hosts.yml"]),
    ("05-multi", &["a/hosts.ini", "b/hosts.yml"]),
    ("05-multi", &["b/hosts.yml", "a/hosts.ini"]),
    ("05-multi", &["a/hosts.ini", "b/hosts.yml", "x1,web1:2022,x2"]),
    ("05-multi", &["h9,", "b"]),
    ("05-multi", &["a", "b"]),
    ("04-yaml", &["h1, h2:2222 ,web[1:2],[::1]:22,10.0.0.[1:2],"]),
];

fn site(name: &str) -> std::path::PathBuf {
    fixture("sites").join(name)
}

fn with_sources<'a>(args: &[&'a str], sources: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    for s in sources {
        v.extend(["-i", s]);
    }
    v
}

fn ansible_inventory(dir: &Path, sources: &[&str], args: &[&str]) -> Output {
    ansible_cmd("ansible-inventory").args(with_sources(args, sources)).current_dir(dir).output().unwrap()
}

fn json(o: &Output, what: &str) -> Value {
    assert!(o.status.success(), "{what} failed: {}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {}", stdout(o)))
}

/// `{"__ansible_unsafe": "text"}` as `text`, everywhere in `v`.
fn unmarked(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.len() == 1 && m.get("__ansible_unsafe").is_some_and(Value::is_string) => {
            m["__ansible_unsafe"].clone()
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), unmarked(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// Every difference between copctl and ansible-inventory for one case.
fn compare_inventory(name: &str, sources: &[&str]) -> Vec<String> {
    let dir = site(name);
    let case = format!("{name} -i {}", sources.join(" -i "));
    let mut msgs = vec![];
    let theirs = json(&ansible_inventory(&dir, sources, &["--list"]), &format!("{case}: ansible-inventory --list"));
    let ours = json(&copctl(Some(&dir), &with_sources(&["inventory", "list"], sources)), &format!("{case}: copctl"));
    if theirs != ours {
        msgs.push(format!(
            "{case}: --list differs\n--- ansible\n{}\n--- copctl\n{}",
            serde_json::to_string_pretty(&theirs).unwrap(),
            serde_json::to_string_pretty(&ours).unwrap()
        ));
    }
    let graph_theirs = stdout(&ansible_inventory(&dir, sources, &["--graph"]));
    let graph_ours = stdout(&copctl(Some(&dir), &with_sources(&["inventory", "graph"], sources)));
    if graph_theirs.trim_end() != graph_ours.trim_end() {
        msgs.push(format!("{case}: --graph differs\n--- ansible\n{graph_theirs}\n--- copctl\n{graph_ours}"));
    }
    let hosts: Vec<String> = {
        let mut v: Vec<String> = vec![];
        for g in theirs.as_object().unwrap().values() {
            for h in g["hosts"].as_array().into_iter().flatten() {
                let h = h.as_str().unwrap().to_string();
                if !v.contains(&h) {
                    v.push(h);
                }
            }
        }
        v
    };
    assert!(!hosts.is_empty(), "{case}: no hosts");
    // `--host H` prints what `--list` gives as `_meta.hostvars[H]` (both are ansible-inventory's
    // `_get_host_variables`; `--list` leaves out hosts without variables), less the marks of
    // unsafe text (its encoder marks them under `_meta.hostvars` only): asked of Ansible for the
    // first host, taken from `--list` for the others.
    let listed = |h: &str| unmarked(theirs["_meta"]["hostvars"].get(h).unwrap_or(&serde_json::json!({})));
    let first = json(
        &ansible_inventory(&dir, sources, &["--host", &hosts[0]]),
        &format!("{case}: ansible-inventory --host {}", hosts[0]),
    );
    assert_eq!(first, listed(&hosts[0]), "{case}: --host and --list");
    for h in &hosts {
        let a = listed(h);
        let b =
            json(&copctl(Some(&dir), &with_sources(&["inventory", "host", h], sources)), &format!("{case}: host {h}"));
        if a != b {
            msgs.push(format!("{case}: --host {h} differs\n--- ansible\n{a:#}\n--- copctl\n{b:#}"));
        }
    }
    msgs.extend(compare_hosts(&dir, &case, sources, &theirs));
    msgs
}

/// `copctl hosts` against Ansible's InventoryManager (tests/peers/ansible_hosts.py, which
/// tests/ansible_differential.rs checks against `ansible --list-hosts`), for `all`, every group,
/// a subscript and an exclusion.
fn compare_hosts(dir: &Path, case: &str, sources: &[&str], list: &Value) -> Vec<String> {
    let mut patterns: Vec<String> = vec!["all".into(), "ungrouped".into(), "all[0]".into(), "all[-1]".into()];
    for g in list.as_object().unwrap().keys().filter(|k| *k != "_meta" && *k != "all") {
        patterns.push(g.clone());
        patterns.push(format!("all:!{g}"));
    }
    let cases: Vec<(String, Option<String>)> = patterns.iter().map(|p| (p.clone(), None)).collect();
    let mut child = ansible_cmd("python")
        .arg(repo().join("tests/peers/ansible_hosts.py"))
        .args(sources)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(serde_json::to_string(&cases).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{case}: the oracle failed");
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut msgs = vec![];
    for (p, want) in patterns.iter().zip(theirs) {
        let o = copctl(Some(dir), &with_sources(&["hosts", p], sources));
        let got = Value::from(stdout(&o).lines().map(str::to_string).collect::<Vec<_>>());
        if o.status.success() && got != want {
            msgs.push(format!("{case}: hosts {p}: ansible {want} copctl {got}"));
        } else if !o.status.success() {
            msgs.push(format!("{case}: hosts {p}: copctl failed: {}", stderr(&o)));
        }
    }
    msgs
}

#[test]
fn sites_read_as_ansible_reads_them() {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> =
            CASES.iter().map(|(name, sources)| s.spawn(move || compare_inventory(name, sources))).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The issue's example: the address comes from host_vars/, the user from group_vars/all.yml.
/// What no group or host reads is named in a warning (Ansible says nothing).
#[test]
fn host_vars_give_the_address_and_unread_files_are_named() {
    let dir = site("01-cop");
    let o = copctl(Some(&dir), &["inventory", "host", "cop-worker-3", "-i", "inventory.ini"]);
    assert_eq!(
        stdout(&o),
        r#"{
    "ansible_host": "10.0.0.5",
    "ansible_user": "cop",
    "cni": "cilium",
    "gpu_driver": "535",
    "node_role": "gpu-worker",
    "ntp_servers": [
        "0.pool.ntp.org",
        "1.pool.ntp.org"
    ],
    "registry": {
        "host": "harbor.example.com",
        "port": 443
    },
    "rke2_version": "v1.30.4+rke2r1"
}
"#
    );
    assert_eq!(
        stderr(&o),
        "warning: group_vars/workers/30-notes.txt is not read: in group_vars/workers/ Ansible reads files named \
         *.yml, *.yaml, *.json or without an extension, and directories without an extension\n\
         warning: group_vars/README.md is not read: Ansible reads group_vars/NAME, NAME.yml, NAME.yaml or NAME.json \
         (or a directory NAME/) for a group NAME\n\
         warning: group_vars/wokers.yml is not read: the inventory has no group 'wokers' (did you mean: workers?)\n\
         warning: group_vars/workers.yml is not read: Ansible reads the first of workers, workers.yml, workers.yaml, \
         workers.json that exists, here group_vars/workers\n"
    );
    assert!(o.status.success());
}

/// Where the site's own precedence cases land (the differential test checks them against
/// Ansible; this says what they are, for a reader).
#[test]
fn precedence_cases_resolve_as_documented() {
    let dir = site("02-precedence");
    let host = |h: &str| -> Value {
        serde_json::from_slice(&copctl(Some(&dir), &["inventory", "host", h, "-i", "hosts.ini"]).stdout).unwrap()
    };
    let h1 = host("h1");
    // inventory host line < host_vars/ file
    assert_eq!(h1["shared"], "host_file");
    // the inventory host line beats group_vars/child
    assert_eq!(h1["host_ini"], "h1_line");
    // files of a group directory merge in name order, recursively, key by key (no deep merge)
    assert_eq!(h1["depth_file"], "child_second");
    assert_eq!(h1["merge"], serde_json::json!({"from": "second"}));
    assert_eq!(h1["nested_dir"], "read");
    // the inventory's child group vars lose to group_vars/all: every group_vars file is above
    // every inventory group var
    assert_eq!(h1["ini_child_vs_file_all"], "all_file");
    assert_eq!(h1["depth_ini"], "child");
    // ansible_group_priority 10 (inventory) beats lo's 100 in group_vars/ (an ordinary variable)
    assert_eq!(h1["prio"], "hi");
    assert_eq!(h1["ansible_group_priority"], 100);
    // YAML 1.1 as Ansible reads it
    assert_eq!(
        (&h1["enabled"], &h1["disabled"], &h1["mode"]),
        (&Value::Bool(true), &Value::Bool(false), &Value::from(420))
    );
    let h2 = host("h2");
    assert_eq!((&h2["shared"], &h2["all_vs_group_file"]), (&Value::from("parent_file"), &Value::from("parent_file")));
    // equal depth and priority: the later name wins
    assert_eq!(host("h3")["tie"], "zzz");
}

/// Vault-encrypted group_vars/ files and inline `!vault` values in host_vars/, made by
/// ansible-vault itself: copctl reads them with the same password as ansible-inventory does,
/// and masks what was encrypted (Ansible prints it; copctl never prints a secret).
#[test]
fn vaulted_variable_files_are_read_with_the_password_and_masked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |rel: &str, text: &str| {
        std::fs::create_dir_all(d.join(rel).parent().unwrap()).unwrap();
        std::fs::write(d.join(rel), text).unwrap();
    };
    write("pw", "correct horse\n");
    write("inventory.ini", "[web]\nw1\nw2\n");
    write("group_vars/all/main.yml", "ntp: pool.ntp.org\n");
    write("group_vars/all/vault.yml", "db_password: s3cret\nregistry_user: admin\n");
    let vault = |args: &[&str]| {
        let o = ansible_cmd("ansible-vault")
            .args(args)
            .args(["--vault-password-file", "pw"])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "ansible-vault {args:?}: {}", stderr(&o));
        stdout(&o)
    };
    vault(&["encrypt", "group_vars/all/vault.yml"]);
    let token = vault(&["encrypt_string", "--name", "api_token", "tok-xyz"]);
    write("host_vars/w1.yml", &format!("ansible_host: 10.0.0.5\n{token}\n"));
    let theirs = json(
        &ansible_cmd("ansible-inventory")
            .args(["-i", "inventory.ini", "--host", "w1", "--vault-password-file", "pw"])
            .current_dir(d)
            .output()
            .unwrap(),
        "ansible-inventory --host w1",
    );
    let ours = copctl(Some(d), &["inventory", "host", "w1", "-i", "inventory.ini", "--vault-password-file", "pw"]);
    assert_eq!(stderr(&ours), "");
    assert_eq!(
        stdout(&ours),
        "{\n    \"ansible_host\": \"10.0.0.5\",\n    \"api_token\": \"********\",\n    \"db_password\": \"********\",\n    \
         \"ntp\": \"pool.ntp.org\",\n    \"registry_user\": \"********\"\n}\n"
    );
    let ours: Value = serde_json::from_slice(&ours.stdout).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&ours), keys(&theirs));
    assert_eq!((&theirs["db_password"], &theirs["ntp"]), (&Value::from("s3cret"), &ours["ntp"]));
    // Without the password, the encrypted file is an error at its header, saying how to give it.
    let o = copctl(Some(d), &["inventory", "host", "w1", "-i", "inventory.ini"]);
    assert_eq!(
        stderr(&o),
        "  x group_vars/all/vault.yml:1:1: Attempting to decrypt but no vault secrets found: group_vars/all/vault.yml \
         is vault-encrypted\n   ,-[group_vars/all/vault.yml:1:1]\n 1 | $ANSIBLE_VAULT;1.1;AES256\n   : \
         ^^^^^^^^^^^^|^^^^^^^^^^^^\n   :             `-- vault-encrypted\n   `----\n  help: give the vault password: \
         pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set \
         ANSIBLE_VAULT_PASSWORD_FILE)\n\n"
    );
}
