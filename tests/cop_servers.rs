//! Any healthy server does the servers' work (issue 42, item 7): the join token, kubectl and
//! etcd's checks go to the first server of `masters`, in the inventory's order, that is
//! reachable and Ready — asked when the run connects, named when it is not the first — and a
//! node joins through it, so that with the first server dead a new server joins the others. On
//! the lab cluster: the rke2 double refuses a first join through a server that is down
//! (tests/doubles/README.md).

mod common;

use common::lab::cop_site::NAMES;
use common::*;

fn idx(node: &str) -> usize {
    NAMES.iter().position(|(n, _)| *n == node).unwrap()
}

/// The node's machine dies: its host goes down, and the cluster sees it NotReady.
fn dies(c: &mut Site, node: &str) {
    c.lab_mut().kill(idx(node));
    std::fs::write(c.lab().root.join(format!("cluster/nodes/{node}/ready")), "False\n").unwrap();
}

/// stderr with the lab's loopback addresses masked.
fn masked(text: &str) -> String {
    regex::Regex::new(r"127\.\d+\.\d+\.\d+").unwrap().replace_all(text, "ADDR").into_owned()
}

const NOTE: &str = "note: the cluster's work (join token, kubectl, etcd) runs on cop-master-2, the first reachable Ready \
                    server (cop-master-1: unreachable: cannot connect to ADDR:22: Connection refused (os error 111))\n";

#[test]
fn with_the_first_server_dead_a_drain_goes_through_the_next_and_says_so() {
    let mut c = Site::cop_cluster();
    c.run_json(&["rke2-install"], 0);
    dies(&mut c, "cop-master-1");
    let before = c.lab().double_calls(idx("cop-master-2")).len();
    let ran = c.test().args(["node", "drain", "cop-worker-1"]).run();
    assert_eq!(masked(&ran.stderr), NOTE);
    let calls = &c.lab().double_calls(idx("cop-master-2"))[before..];
    assert!(calls.iter().any(|l| l.starts_with("kubectl drain cop-worker-1")), "{calls:?}");
    assert_eq!(
        std::fs::read_to_string(c.lab().root.join("cluster/nodes/cop-worker-1/unschedulable")).unwrap(),
        "true\n"
    );
    // The plan cannot know which server answers: it says it picks one when the run connects.
    let plan = c.test().args(["plan", "rke2-install"]).run().stdout;
    assert!(
        plan.contains(
            "play first-server (hosts: the first reachable, Ready server of masters, picked when the run connects)"
        ),
        "{plan}"
    );
}

#[test]
fn with_the_first_server_dead_a_new_server_joins_the_others() {
    let mut c = Site::cop_cluster();
    // cop-master-3 is the replacement: not installed with the others.
    c.run_json(&["rke2-install", "--limit", "!cop-master-3"], 0);
    dies(&mut c, "cop-master-1");
    let ran = c.run_json(&["rke2-install", "--limit", "cop-master-3"], 0);
    assert_eq!(masked(&ran.stderr), NOTE);
    // It registered with cop-master-2 and got the token there; nothing ran elsewhere but reads.
    let config = std::fs::read_to_string(c.lab().path(idx("cop-master-3"), "/etc/rancher/rke2/config.yaml")).unwrap();
    let m2 = &c.lab().hosts[idx("cop-master-2")].addr;
    assert!(config.contains(&format!("server: \"https://{m2}:9345\"\n")), "{config}");
    let joins = common::cop::cluster_file(&c, "joins");
    assert!(joins.last().unwrap().starts_with("cop-master-3 server"), "{joins:?}");
    assert_eq!(std::fs::read_to_string(c.lab().root.join("cluster/nodes/cop-master-3/ready")).unwrap(), "True\n");
    // A re-run changes nothing, and the servers that ran already kept their config.
    let again = c.run_json(&["rke2-install", "--limit", "cop-master-2:cop-master-3:cop-worker-1"], 0);
    assert!(again.recap().values().all(|r| r["changed"] == 0), "{:?}", again.recap());
    let m1 = &c.lab().hosts[idx("cop-master-1")].addr;
    let config2 = std::fs::read_to_string(c.lab().path(idx("cop-master-2"), "/etc/rancher/rke2/config.yaml")).unwrap();
    assert!(config2.contains(&format!("server: \"https://{m1}:9345\"\n")), "{config2}");
}

#[test]
fn a_join_through_a_dead_server_is_what_the_double_refuses() {
    // The control: a registration address (rke2_server_url) that is the dead first server's: the
    // join goes there and RKE2 refuses it, as a dead server's address answers nothing.
    let mut c = Site::cop_cluster();
    c.run_json(&["rke2-install", "--limit", "!cop-worker-3"], 0);
    dies(&mut c, "cop-master-1");
    let m1 = c.lab().hosts[idx("cop-master-1")].addr.to_string();
    let url = format!("rke2_server_url=https://{m1}:9345");
    let ran = c.test().args(["run", "rke2-install", "--limit", "cop-worker-3", "-e", &url]).status(2).run();
    assert!(
        ran.stdout.contains(&format!(
            "failed to get CA certs: Get \\\"https://{m1}:9345/cacerts\\\": dial tcp {m1}:9345: connect: connection refused"
        )),
        "{}",
        ran.stdout
    );
}
