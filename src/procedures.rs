//! The manual's node procedures as sequences of playbooks: which shipped playbooks, with which
//! variables, in which order, make up `node add`, `node remove`, `node drain` and `node
//! cordon|uncordon`. Domain knowledge, kept out of the command line (which only asks, confirms and
//! prints) so that every front end gets the same sequence; not in `playbook/`, because the
//! sequence depends on the site (the node's groups, the playbooks the site has) and the playbook
//! model knows nothing of an inventory. Also which playbooks destroy what no re-run brings back,
//! and what the operator is asked before they run.

use crate::error::{Error, Result};
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

/// The manual's first install, in order: each playbook, and whether only GPU nodes need it.
/// `copctl install` runs it; its `--help` and what it prints before it starts list it.
pub const FIRST_INSTALL: &[(&str, bool)] = &[
    ("system-setup", false),
    ("system-dns", false),
    ("gpu-preinstall", true),
    ("gpu-install", true),
    ("rke2-install", false),
    ("rke2-post-install", false),
    ("rke2-private-registry", false),
    ("gpu-operator", true),
];

/// `copctl install --help`'s list: the order, and what the install leaves out.
pub fn install_help() -> String {
    let mut s = String::from(
        "The install runs, in this order (as one run; a host goes on to the next playbook when it is done):\n",
    );
    for (i, (p, gpu)) in FIRST_INSTALL.iter().enumerate() {
        s.push_str(&format!(
            "  {}. {p}{}\n",
            i + 1,
            if *gpu { "  (GPU nodes; left out when the gpu group has no host)" } else { "" }
        ));
    }
    s.push_str("\nA failed run says which playbook to resume from: copctl install --from PLAYBOOK.");
    s
}

/// The first install on the whole site: every playbook of `FIRST_INSTALL`, the GPU ones only
/// where the inventory's `gpu` group has hosts (the GPU Operator is cluster-wide: a site
/// without GPU nodes has no chart to install), from `from` on (a resumed install).
pub fn install(site: &Site, from: Option<&str>) -> Result<Procedure> {
    let gpu = site.inventory.groups.contains_key("gpu") && !site.inventory.group_hosts("gpu").is_empty();
    let all: Vec<&str> = FIRST_INSTALL.iter().filter(|(_, g)| gpu || !g).map(|(p, _)| *p).collect();
    let mut notes = Vec::new();
    if !gpu {
        notes.push(
            "the inventory's gpu group has no host: gpu-preinstall, gpu-install and gpu-operator are left out".into(),
        );
    }
    let start = match from {
        None => 0,
        Some(f) => all.iter().position(|p| *p == f).ok_or_else(|| {
            let mut help = format!("the install runs {}", all.join(", "));
            let mut close: Vec<(f64, &str)> =
                all.iter().map(|p| (strsim::jaro_winkler(f, p), *p)).filter(|(s, _)| *s > 0.8).collect();
            close.sort_by(|a, b| b.0.total_cmp(&a.0));
            let close: Vec<&str> = close.into_iter().map(|(_, p)| p).collect();
            if !close.is_empty() {
                help = format!("did you mean: {}? {help}", close.join(", "));
            }
            let why = if FIRST_INSTALL.iter().any(|(p, _)| *p == f) {
                "is left out of this install (the inventory's gpu group has no host)"
            } else {
                "is no playbook of the install"
            };
            Error::with_help(format!("--from '{f}' {why}"), help)
        })?,
    };
    Ok(Procedure { playbooks: all[start..].iter().map(|p| p.to_string()).collect(), extra_vars: Vec::new(), notes })
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
