//! `copctl plan`: the task graph of the example site, its `--limit` boundary, batches and
//! ordering, read from the documented JSON.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::*;
use serde_json::Value;

/// The tasks of `copctl plan ARGS --format json` in the repository's site.
/// `-e registry_ca_file=FILE`: the repository's env.yaml names no CA (its bastion has no
/// registry); a real site's does, and rke2-private-registry requires the file to be there.
fn bastion_ca() -> (tempfile::NamedTempFile, String) {
    let f = tempfile::NamedTempFile::new().unwrap();
    let arg = format!("registry_ca_file={}", f.path().display());
    (f, arg)
}

fn plan_json(args: &[&str]) -> Vec<Value> {
    let (_ca, ca_arg) = bastion_ca();
    let ran = Test::repo().arg("plan").args(args).args(["--format", "json", "-e", &ca_arg]).run();
    ran.json()["tasks"].as_array().unwrap().clone()
}

/// Every task a task waits for, directly or not.
fn ancestors(tasks: &[Value], id: u64) -> BTreeSet<u64> {
    let by_id: HashMap<u64, &Value> = tasks.iter().map(|t| (t["id"].as_u64().unwrap(), t)).collect();
    let mut out = BTreeSet::new();
    let mut todo = vec![id];
    while let Some(i) = todo.pop() {
        for d in by_id[&i]["depends_on"].as_array().unwrap() {
            let d = d.as_u64().unwrap();
            if out.insert(d) {
                todo.push(d);
            }
        }
    }
    out
}

fn steps<'a>(tasks: &'a [Value], play: &str, host: &str) -> Vec<&'a Value> {
    tasks.iter().filter(|t| t["play"] == play && t["host"] == host).collect()
}

#[test]
fn limit_to_one_worker_changes_only_that_worker() {
    let tasks = plan_json(&["rke2-install", "--limit", "cop-worker-3"]);
    let mutating_hosts: BTreeSet<&str> = tasks
        .iter()
        .filter(|t| t["kind"] != "barrier" && t["read_only"] == false)
        .map(|t| t["host"].as_str().unwrap())
        .collect();
    assert_eq!(mutating_hosts, BTreeSet::from(["cop-worker-3"]));
    // The join token is read by the worker's own step on the first server, read-only; no task
    // of another host is planned.
    let token = steps(&tasks, "agents", "cop-worker-3")
        .into_iter()
        .find(|t| t["step"] == "the cluster's join token")
        .expect("token read planned");
    assert_eq!(token["runs_on"], "cop-master-1");
    assert_eq!(token["read_only"], true);
    assert!(tasks.iter().all(|t| t["outside_limit"] != true), "nothing outside the limit is needed");
    // The worker's config comes after the token read.
    let config = steps(&tasks, "agents", "cop-worker-3").into_iter().find(|t| t["kind"] == "template").unwrap();
    assert!(ancestors(&tasks, config["id"].as_u64().unwrap()).contains(&token["id"].as_u64().unwrap()));
    // No other server and no other agent is touched.
    assert!(tasks.iter().all(|t| t["host"].is_null() || t["host"] == "cop-worker-3"));
}

#[test]
fn servers_join_one_at_a_time_and_agents_need_only_the_first_server() {
    let tasks = plan_json(&["rke2-install"]);
    let batch_of = |host: &str| steps(&tasks, "other-servers", host)[0]["batch"].as_u64().unwrap();
    assert_eq!((batch_of("cop-master-2"), batch_of("cop-master-3")), (1, 2));
    // master-3's first step waits for everything master-2 does.
    let m3_first = steps(&tasks, "other-servers", "cop-master-3")[0]["id"].as_u64().unwrap();
    let anc = ancestors(&tasks, m3_first);
    for t in steps(&tasks, "other-servers", "cop-master-2") {
        assert!(anc.contains(&t["id"].as_u64().unwrap()), "master-3 starts before master-2's {}", t["step"]);
    }
    // Other servers start after the first server finished.
    let first_server: BTreeSet<u64> =
        steps(&tasks, "first-server", "cop-master-1").iter().map(|t| t["id"].as_u64().unwrap()).collect();
    let m2_first = steps(&tasks, "other-servers", "cop-master-2")[0]["id"].as_u64().unwrap();
    assert!(first_server.is_subset(&ancestors(&tasks, m2_first)));
    // Agents: all in one batch (≤ 50), after the first server, never waiting for the others.
    let other_servers: BTreeSet<u64> = tasks
        .iter()
        .filter(|t| t["play"] == "other-servers" && t["kind"] != "barrier")
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    for host in ["cop-worker-1", "cop-worker-2", "cop-worker-3", "cop-gpu-1", "cop-gpu-2"] {
        let agent = steps(&tasks, "agents", host);
        assert_eq!(agent[0]["batch"], 1);
        let anc = ancestors(&tasks, agent.last().unwrap()["id"].as_u64().unwrap());
        assert!(first_server.is_subset(&anc), "{host} does not wait for the first server");
        assert!(anc.is_disjoint(&other_servers), "{host} waits for another server");
    }
}

#[test]
fn handlers_follow_their_hosts_steps() {
    let tasks = plan_json(&["rke2-install", "--limit", "cop-gpu-1"]);
    let gpu = steps(&tasks, "agents", "cop-gpu-1");
    let last = gpu.last().unwrap();
    assert_eq!(last["handler"], true);
    assert_eq!(last["step"], "restart rke2 (handler)");
    let anc = ancestors(&tasks, last["id"].as_u64().unwrap());
    assert!(gpu[..gpu.len() - 1].iter().all(|t| anc.contains(&t["id"].as_u64().unwrap())));
}

#[test]
fn plan_text_and_dot_render() {
    // The limit's boundary: what is read outside it, and the one host that may change.
    Test::repo()
        .args(["plan", "rke2-install", "--limit", "cop-worker-3"])
        .stderr("")
        .stdout(
            r#"limit: cop-worker-3
playbook rke2-install — Install RKE2 air-gapped and join the nodes (first server, then servers one at a time, then agents in batches of 50)
  play first-server (hosts: the first reachable, Ready server of masters, picked when the run connects)
    (no hosts)
  play other-servers (hosts: masters but the first reachable, Ready server of masters, picked when the run connects; serial: 1; needs: first-server)
    (no hosts)
  play agents (hosts: workers:gpu; serial: 50; needs: first-server)
    batch 1/1
      cop-worker-3
        - [shell] operating system  (read-only)
        - [set_fact] operating system facts  (read-only)
        - [shell] rke2 running before this run  (read-only)
        - [file] staging directory
        - [copy] artifacts from the bastion
        - [shell] artifact checksums
        - [assert] SELinux packages named  (read-only)
        - [copy] SELinux rpms from the bastion
        - [package] SELinux policy for RKE2
        - [shell] never downgrade  (read-only)
        - [file] config directory
        - [shell] the server this node joined through  (read-only)
        - [slurp] the cluster's join token  (read-only, on cop-master-1)
        - [template] rke2 config
        - [shell] install rke2
        - [service] start rke2
        - [wait_for] wait for the join token  (read-only)
        - [kube] wait until Ready  (read-only, on cop-master-1)
        - [service] restart rke2 (handler)
19 tasks; hosts that may change: cop-worker-3
"#,
        )
        .run();
    let dot = Test::repo().args(["plan", "rke2-install", "--format", "dot"]).stderr("").run().stdout;
    assert!(dot.starts_with("digraph plan {") && dot.contains("->"), "{dot}");
}

#[test]
fn serial_batches_percent_and_list_with_run_once() {
    let hosts: String = (1..=10).map(|i| format!("n{i:02}\n")).collect();
    let v = Test::new()
        .inventory(&format!("[nodes]\n{hosts}"))
        .playbook(
            "roll",
            "plays:\n  - name: roll\n    hosts: nodes\n    serial: [1, \"30%\"]\n    steps:\n      - name: announce\n        debug: { msg: hi }\n        run_once: true\n      - name: work\n        command: [true]\n",
        )
        .args(["plan", "roll", "--format", "json"])
        .run()
        .json();
    let tasks = v["tasks"].as_array().unwrap();
    let mut batches: Vec<Vec<&str>> = vec![];
    for t in tasks.iter().filter(|t| t["step"] == "work") {
        let b = t["batch"].as_u64().unwrap() as usize;
        if batches.len() < b {
            batches.resize(b, vec![]);
        }
        batches[b - 1].push(t["host"].as_str().unwrap());
    }
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 3, 3, 3]);
    // run_once: one announce task per batch, on the batch's first host.
    let announce: Vec<&str> =
        tasks.iter().filter(|t| t["step"] == "announce").map(|t| t["host"].as_str().unwrap()).collect();
    assert_eq!(announce, ["n01", "n02", "n05", "n08"]);
}

#[test]
fn a_serial_template_takes_its_size_from_the_variables() {
    let hosts: String = (1..=5).map(|i| format!("n{i}\n")).collect();
    let t = || {
        Test::new().inventory(&format!("[nodes]\n{hosts}")).playbook(
            "roll",
            "vars: { batch: 1 }\nplays:\n  - name: roll\n    hosts: nodes\n    serial: \"{{ batch }}\"\n    steps:\n      - name: work\n        command: [true]\n",
        )
    };
    let sizes = |v: Value| {
        let mut n: Vec<usize> = vec![];
        for task in v["tasks"].as_array().unwrap().iter().filter(|t| t["step"] == "work") {
            let b = task["batch"].as_u64().unwrap() as usize;
            n.resize(n.len().max(b), 0);
            n[b - 1] += 1;
        }
        n
    };
    assert_eq!(sizes(t().args(["plan", "roll", "--format", "json"]).run().json()), [1, 1, 1, 1, 1]);
    assert_eq!(sizes(t().args(["plan", "roll", "--format", "json", "-e", "batch=2"]).run().json()), [2, 2, 1]);
    assert_eq!(sizes(t().args(["plan", "roll", "--format", "json", "-e", "batch=40%"]).run().json()), [2, 2, 1]);
    t().args(["plan", "roll", "-e", "batch=none"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x playbooks/roll.yaml:3:1: play 'roll': serial: '{{ batch }}' renders to 'none', neither a count of at least 1 nor a percentage
   ,-[playbooks/roll.yaml:3:1]
 2 | plays:
 3 |   - name: roll
   : ^^^^^^^|^^^^^^
   :        `-- in this play
 4 |     hosts: nodes
   `----
  help: set the variable it uses to a number of hosts (-e name=2) or a percentage (-e name=30%)

"#,
        )
        .run();
}

#[test]
fn limit_from_a_file_like_last_failed() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("last-failed");
    std::fs::write(&f, "cop-worker-2\ncop-gpu-1\n").unwrap();
    let limit = format!("@{}", f.display());
    let tasks = plan_json(&["rke2-install", "--limit", &limit]);
    let hosts: BTreeSet<&str> = tasks
        .iter()
        .filter(|t| t["read_only"] == false && t["kind"] != "barrier")
        .map(|t| t["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, BTreeSet::from(["cop-gpu-1", "cop-worker-2"]));
}

#[test]
fn validate_checks_every_shipped_playbook() {
    // A playbook that needs -e (node-drain's, node-remove's, node-uncordon's node, etcd-restore's
    // snapshot) says so instead of failing the check.
    let (_ca, ca_arg) = bastion_ca();
    Test::repo()
        .args(["validate", "-e", &ca_arg])
        .stderr("")
        .stdout(
            r#"note: etcd-restore not planned: playbooks/etcd-restore.yaml:24:1: play 'every server': hosts: 'etcd_snapshot' is undefined
note: node-cordon not planned: playbooks/node-cordon.yaml:9:1: play 'cordon': hosts: 'node' is undefined
note: node-drain not planned: playbooks/node-drain.yaml:15:1: play 'drain': hosts: 'node' is undefined
note: node-remove not planned: playbooks/node-remove.yaml:16:1: play 'remove': hosts: 'node' is undefined
note: node-uncordon not planned: playbooks/node-uncordon.yaml:8:1: play 'uncordon': hosts: 'node' is undefined
ok: 9 host(s), 7 group(s), 20 playbook(s), 1152 planned task(s); nothing was run
"#,
        )
        .run();
}

#[test]
fn secrets_print_masked() {
    Test::repo().args(["inventory", "host", "cop-worker-3"]).run();
    let site = Site::new();
    site.write("inventory.ini", "[n]\nh1 registry_password=s3cr3t-pw api_token=tok-123 user=admin\n");
    site.test()
        .args(["inventory", "host", "h1"])
        .stderr("")
        .stdout(
            r#"{
    "api_token": "********",
    "registry_password": "********",
    "user": "admin"
}
"#,
        )
        .run();
    site.test()
        .args(["inventory", "list"])
        .stderr("")
        .stdout(
            r#"{
    "_meta": {
        "hostvars": {
            "h1": {
                "api_token": "********",
                "registry_password": "********",
                "user": "admin"
            }
        },
        "profile": "inventory_legacy"
    },
    "all": {
        "children": [
            "ungrouped",
            "n"
        ]
    },
    "n": {
        "hosts": [
            "h1"
        ]
    }
}
"#,
        )
        .run();
}

#[test]
fn a_rolling_play_waits_for_every_play_of_the_playbooks_before_it() {
    // rke2-install lets agents go on while servers still join one by one; the registry playbook
    // that follows restarts servers one at a time: its first restart must not overlap a join.
    let tasks = plan_json(&["rke2-install", "rke2-private-registry"]);
    let last_join = tasks
        .iter()
        .filter(|t| t["play"] == "other-servers" && t["host"] == "cop-master-3")
        .map(|t| t["id"].as_u64().unwrap())
        .max()
        .unwrap();
    let first_registry = tasks
        .iter()
        .filter(|t| t["playbook"] == "rke2-private-registry" && t["host"] == "cop-master-1")
        .map(|t| t["id"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(
        ancestors(&tasks, first_registry).contains(&last_join),
        "the registry's rolling restart could start while cop-master-3 still joins"
    );
}
