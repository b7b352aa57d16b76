//! `copctl inventory list|graph|host` and `copctl hosts`: the inventory as ansible-inventory and
//! `ansible --list-hosts` show it. No host is contacted.

use std::io::Write;

use super::Cli;
use super::args::InventoryCmd;
use crate::error::{Error, Result};
use crate::report::inventory as output;

pub fn inventory(cli: &Cli, what: &InventoryCmd) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let site = cli.site(&[])?;
    let inv = &site.inventory;
    let text = match what {
        InventoryCmd::List => output::to_ansible_json(&output::list_json_masked(inv, &site.secret_names)),
        InventoryCmd::Graph { group } => output::graph(inv, group).ok_or_else(|| {
            Error::with_help(format!("no group named '{group}'"), "`copctl inventory graph` shows all groups")
        })?,
        InventoryCmd::Host { name } => {
            let v = output::host_json_masked(inv, name, &site.secret_names)
                .ok_or_else(|| inv.no_match_error("host", name))?;
            output::to_ansible_json(&v)
        }
    };
    writeln!(out, "{text}")?;
    Ok(0)
}

pub fn hosts(cli: &Cli, pattern: &str, limit: Option<&str>) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let site = cli.site(&[])?;
    let hosts = site.inventory.list_hosts(pattern, limit)?;
    if hosts.is_empty() {
        eprintln!("warning: no hosts matched '{pattern}'");
    }
    for h in hosts {
        writeln!(out, "{h}")?;
    }
    Ok(0)
}
