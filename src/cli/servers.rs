//! Which RKE2 server does the cluster's work (the join token, kubectl, etcd's checks and member
//! deletes): the first server of the inventory's `masters`, in its order, that is reachable and
//! that its own kubectl sees Ready. Asked when a run connects, before it is planned, for the
//! playbooks that read `kube_servers`; `gpu status` and `gpu check` ask it too. A dead first
//! server is passed over and named, so that it can be removed and replaced through the others.

use serde_json::Value;

use crate::site::Site;
use crate::transport::{ExecRequest, Pool};

/// The variable the playbooks read: the servers in the order the cluster's work goes to them.
pub const VAR: &str = "kube_servers";

/// What asking found: the Ready servers (at most the number asked for), and each server passed
/// over before them with why.
#[derive(Debug, Default)]
pub struct Servers {
    pub ready: Vec<String>,
    pub passed_over: Vec<(String, String)>,
}

impl Servers {
    /// The servers in the order the cluster's work goes to them: the Ready one found first, then
    /// those not asked, in the inventory's order (a server the run works on — drained, restarted,
    /// removed — has its work done by the next); those passed over are left out. Empty when none
    /// answered: the playbooks then fall back to the inventory's order.
    pub fn order(&self, masters: &[String]) -> Vec<String> {
        if self.ready.is_empty() {
            return Vec::new();
        }
        let rest: Vec<String> = masters
            .iter()
            .filter(|m| !self.ready.contains(m) && !self.passed_over.iter().any(|(p, _)| p == *m))
            .cloned()
            .collect();
        self.ready.iter().cloned().chain(rest).collect()
    }

    /// The line a run prints when the first server is not the one used; None when it is.
    pub fn note(&self, masters: &[String]) -> Option<String> {
        if self.passed_over.is_empty() {
            return None;
        }
        let why: Vec<String> = self.passed_over.iter().map(|(h, w)| format!("{h}: {w}")).collect();
        Some(match self.ready.first() {
            Some(s) => format!(
                "the cluster's work (join token, kubectl, etcd) runs on {s}, the first reachable Ready server ({})",
                why.join("; ")
            ),
            None => format!(
                "no server is reachable and Ready ({}): the cluster's work is left to {}, the first server (a first install bootstraps there)",
                why.join("; "),
                masters.first().map(String::as_str).unwrap_or("none")
            ),
        })
    }
}

/// The inventory's servers (`masters`, in its order); none where it has no such group.
pub fn masters(site: &Site) -> Vec<String> {
    if site.inventory.groups.contains_key("masters") { site.inventory.group_hosts("masters") } else { Vec::new() }
}

/// Whether a playbook's text reads the servers asked for.
pub fn wanted(text: &str) -> bool {
    text.contains(VAR)
}

/// The transport's words without the host's name they start with.
fn unreachable(host: &str, e: &str) -> String {
    let e = e.strip_prefix(&format!("{host}: ")).unwrap_or(e);
    if e.starts_with("unreachable") { e.to_string() } else { format!("unreachable: {e}") }
}

/// Asks the masters in order until `most` are found Ready.
pub async fn ask(pool: &Pool, masters: &[String], most: usize) -> Servers {
    let mut s = Servers::default();
    for m in masters {
        if s.ready.len() >= most {
            break;
        }
        let conn = match pool.get(m).await {
            Ok(c) => c,
            Err(e) => {
                s.passed_over.push((m.clone(), unreachable(m, &e.to_string())));
                continue;
            }
        };
        let script = format!(
            "{}$K get node {} -o jsonpath='{{.status.conditions[?(@.type==\"Ready\")].status}}'",
            crate::steps::KUBECTL_PRELUDE,
            crate::text::quote::shell_quote(m)
        );
        let req = ExecRequest { command: &script, stdin: None, timeout: std::time::Duration::from_secs(30) };
        match conn.exec(req).await {
            Ok(o) if o.success() && String::from_utf8_lossy(&o.stdout).trim() == "True" => s.ready.push(m.clone()),
            Ok(o) if o.success() => s.passed_over.push((m.clone(), "not Ready".into())),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
                let err = err.lines().last().unwrap_or("").to_string();
                s.passed_over.push((m.clone(), format!("its kubectl does not answer ({err})")));
            }
            Err(e) => s.passed_over.push((m.clone(), unreachable(m, &e.to_string()))),
        }
    }
    s
}

/// The site's masters asked with a pool of their own (closed after), the result put where the
/// playbooks read it: the highest layer, as an extra variable nobody types.
pub fn ask_for(cli: &super::Cli, site: &mut Site) -> crate::error::Result<Servers> {
    let masters = masters(site);
    if masters.is_empty() {
        return Ok(Servers::default());
    }
    let pool = cli.pool(site, &masters, &Default::default())?;
    let rt = crate::runtime()?;
    let found = rt.block_on(async {
        let s = ask(&pool, &masters, 1).await;
        pool.close().await;
        s
    });
    site.set_extra(VAR, Value::from(found.order(&masters)));
    Ok(found)
}
