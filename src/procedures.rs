//! The manual's node procedures as sequences of playbooks: which shipped playbooks, with which
//! variables, in which order, make up `node add`, `node remove`, `node drain` and `node
//! cordon|uncordon`. Domain knowledge, kept out of the command line (which only asks, confirms and
//! prints) so that every front end gets the same sequence; not in `playbook/`, because the
//! sequence depends on the site (the node's groups, the playbooks the site has) and the playbook
//! model knows nothing of an inventory. Also which playbooks destroy what no re-run brings back,
//! and what the operator is asked before they run.

use crate::site::Site;

/// A procedure resolved for one node: the playbooks to run, limited to the node, the variables
/// they need (added after the operator's `-e`), and notes on what the procedure leaves out.
#[derive(Debug, Clone, PartialEq)]
pub struct Procedure {
    pub playbooks: Vec<String>,
    pub extra_vars: Vec<String>,
    pub notes: Vec<String>,
}

/// Adding a node listed in the inventory: system setup and DNS, the NVIDIA driver on a GPU node
/// (where the site has those playbooks), RKE2 and its registry settings, then the GPU Operator's
/// part for that node.
pub fn node_add(site: &Site, name: &str) -> Procedure {
    let gpu = site.inventory.host_groups(name).contains("gpu");
    let mut playbooks: Vec<String> = vec!["system-setup".into(), "system-dns".into()];
    let mut notes = Vec::new();
    let available = site.playbooks.names();
    if gpu {
        for p in ["gpu-preinstall", "gpu-install"] {
            if available.iter().any(|a| a == p) {
                playbooks.push(p.into());
            } else {
                notes.push(format!(
                    "{name} is a GPU node, but there is no {p} playbook yet: install the driver by hand"
                ));
            }
        }
    }
    playbooks.extend(["rke2-install", "rke2-post-install", "rke2-private-registry"].map(String::from));
    if gpu && available.iter().any(|a| a == "gpu-operator") {
        playbooks.push("gpu-operator".into());
    }
    Procedure { playbooks, extra_vars: Vec::new(), notes }
}

/// Removing a node: `node-remove` with the node named. The operator's confirmation of the
/// removal covers the playbook's GPU work check too; `force` goes on where the playbook refuses
/// (the last server, an even etcd member count, a failed drain) — never where etcd would lose
/// its quorum. `unreachable`: the node is dead (the manual's hardware replacement), so nothing
/// runs on it and its pods are removed from the cluster's side.
pub fn node_remove(name: &str, force: bool, unreachable: bool) -> Procedure {
    let mut extra_vars = vec![format!("node={name}"), "{\"yes\": true}".to_string()];
    if force {
        extra_vars.push("{\"force\": true}".into());
    }
    if unreachable {
        extra_vars.push("{\"node_unreachable\": true}".into());
    }
    Procedure { playbooks: vec!["node-remove".to_string()], extra_vars, notes: Vec::new() }
}

/// How a drain treats what is on the node: `yes` / `force` answer the GPU work check as for the
/// rolling restart; `force_unmanaged` deletes pods no controller manages (kubectl's `--force`),
/// which otherwise stop the drain.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DrainOptions {
    pub yes: bool,
    pub force: bool,
    pub force_unmanaged: bool,
}

/// The manual's "Graceful Shutdown of a Worker Node", steps 1 and 2: `node-drain` with the node
/// named.
pub fn node_drain(name: &str, o: DrainOptions) -> Procedure {
    let mut extra_vars = vec![format!("node={name}")];
    if o.yes {
        extra_vars.push("{\"yes\": true}".into());
    }
    if o.force {
        extra_vars.push("{\"force\": true}".into());
    }
    if o.force_unmanaged {
        extra_vars.push("{\"drain_force_unmanaged\": true}".into());
    }
    Procedure { playbooks: vec!["node-drain".to_string()], extra_vars, notes: Vec::new() }
}

/// The manual's "Rebalancing load": `node-cordon` with the node named; the cordon is held as
/// node-drain's is, until `node uncordon`.
pub fn node_cordon(name: &str) -> Procedure {
    Procedure {
        playbooks: vec!["node-cordon".to_string()],
        extra_vars: vec![format!("node={name}")],
        notes: Vec::new(),
    }
}

/// Step 3 of the same procedure: `node-uncordon` with the node named.
pub fn node_uncordon(name: &str) -> Procedure {
    Procedure {
        playbooks: vec!["node-uncordon".to_string()],
        extra_vars: vec![format!("node={name}")],
        notes: Vec::new(),
    }
}

/// What the operator is asked before a playbook that destroys what no re-run brings back, and
/// the word they type to confirm it.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    pub question: String,
    pub word: &'static str,
}

/// The host pattern whose hosts (within the limit) a destructive playbook works on, if `playbook`
/// is one: what the question names.
pub fn destructive_hosts(playbook: &str) -> Option<&'static str> {
    match playbook {
        "rke2-uninstall" => Some("masters:workers:gpu"),
        "etcd-restore" => Some("masters"),
        _ => None,
    }
}

/// The question for `playbook` on `nodes` (`snapshot`: etcd-restore's `-e etcd_snapshot`).
pub fn confirmation(playbook: &str, nodes: &[String], snapshot: Option<&str>) -> Option<Confirmation> {
    let list = nodes.join(", ");
    match playbook {
        "rke2-uninstall" => Some(Confirmation {
            question: format!(
                "Uninstall RKE2 from {} node(s): {list}?\nAgents first, then servers; RKE2 and its data (etcd, \
                 /var/lib/rancher/rke2, /etc/rancher) are deleted from them. The bastion's kubeconfig and etcd \
                 snapshots stay.",
                nodes.len()
            ),
            word: "uninstall",
        }),
        "etcd-restore" => Some(Confirmation {
            question: format!(
                "Restore etcd from the snapshot {} on {list}?\nEvery server is stopped and the cluster goes back to \
                 the snapshot's state: what changed since it was taken is lost.",
                snapshot.unwrap_or("(none given: -e etcd_snapshot=NAME)")
            ),
            word: "restore",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_remove_names_the_node_and_confirms() {
        let p = node_remove("cop-worker-3", true, false);
        assert_eq!(p.playbooks, ["node-remove"]);
        assert_eq!(p.extra_vars, ["node=cop-worker-3", "{\"yes\": true}", "{\"force\": true}"]);
        assert_eq!(node_remove("w", false, false).extra_vars.len(), 2);
        assert_eq!(node_remove("w", false, true).extra_vars[2], "{\"node_unreachable\": true}");
    }

    #[test]
    fn node_drain_and_uncordon_name_the_node() {
        let p = node_drain("cop-gpu-1", DrainOptions { yes: true, ..DrainOptions::default() });
        assert_eq!(p.playbooks, ["node-drain"]);
        assert_eq!(p.extra_vars, ["node=cop-gpu-1", "{\"yes\": true}"]);
        let p = node_drain("w", DrainOptions { force_unmanaged: true, ..DrainOptions::default() });
        assert_eq!(p.extra_vars, ["node=w", "{\"drain_force_unmanaged\": true}"]);
        assert_eq!(node_uncordon("cop-worker-2").extra_vars, ["node=cop-worker-2"]);
        assert_eq!(node_cordon("cop-worker-2").playbooks, ["node-cordon"]);
    }

    #[test]
    fn destructive_playbooks_name_what_they_destroy() {
        let nodes = ["w1".to_string(), "m1".to_string()];
        let c = confirmation("rke2-uninstall", &nodes, None).unwrap();
        assert_eq!(c.word, "uninstall");
        assert!(c.question.starts_with("Uninstall RKE2 from 2 node(s): w1, m1?\n"), "{}", c.question);
        let c = confirmation("etcd-restore", &nodes[1..], Some("s1")).unwrap();
        assert!(c.question.starts_with("Restore etcd from the snapshot s1 on m1?\n"), "{}", c.question);
        assert_eq!(confirmation("rke2-install", &nodes, None), None);
        assert_eq!(destructive_hosts("rke2-install"), None);
    }
}
