//! Who copctl logs in as on each host where an Ansible play says (`remote_user`): one login per
//! host per run, so the plays that share a host must agree.

use std::collections::HashMap;

use super::Plan;
use crate::error::Result;
use crate::site::Site;

/// The user each host logs in as where its plays say (Ansible's `remote_user` play keyword).
/// copctl logs in to a host once per run: plays that share a host must agree, unless the
/// inventory's `ansible_user` (which wins over the keyword) decides for it.
pub fn logins(site: &Site, plan: &Plan) -> Result<HashMap<String, String>> {
    // Most runs name no remote_user: nothing to decide, and no host's variables to merge.
    if !plan.playbooks.iter().flat_map(|p| &p.plays).any(|p| p.remote_user.is_some()) {
        return Ok(HashMap::new());
    }
    let mut seen: HashMap<String, (Option<String>, usize, usize)> = HashMap::new();
    // Whether the inventory sets the host's ansible_user, merged once per host.
    let mut own_user: HashMap<&str, bool> = HashMap::new();
    for t in plan.graph.node_weights() {
        let Some(h) = t.host.as_ref().filter(|_| t.runs_on.is_none()) else { continue };
        let set = *own_user.entry(h.as_str()).or_insert_with(|| {
            site.inventory.hosts.contains_key(h) && site.inventory.host_vars(h).contains_key("ansible_user")
        });
        if set {
            continue;
        }
        let user = plan.play(t).remote_user.clone();
        match seen.get(h) {
            None => {
                seen.insert(h.clone(), (user, t.playbook, t.play));
            }
            Some((u, pb, p)) if *u != user => {
                let (first, this) = (&plan.playbooks[*pb].plays[*p], plan.play(t));
                let pb = &plan.playbooks[t.playbook];
                let said = |u: &Option<String>| {
                    u.as_ref().map_or("no remote_user".to_string(), |u| format!("remote_user {u}"))
                };
                return Err(this.source(&pb.source).error_at(
                    this.line,
                    1,
                    0,
                    format!(
                        "host {h} is in play '{}' with {} and in play '{}' with {}: copctl logs in to a host once per run",
                        first.name,
                        said(u),
                        this.name,
                        said(&this.remote_user)
                    ),
                    "this play",
                    Some(format!("give the plays that share {h} the same remote_user, or set ansible_user for it in the inventory")),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(seen.into_iter().filter_map(|(h, (u, ..))| u.map(|u| (h, u))).collect())
}
