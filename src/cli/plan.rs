//! `copctl plan`, `copctl validate` and `copctl playbooks`: what a run would do, checked and
//! shown without connecting to any host.

use std::io::Write;

use super::Cli;
use super::args::{PlanArgs, PlanFormat, ValidateArgs};
use crate::error::{ErrorKind, Result};

pub fn plan(cli: &Cli, args: &PlanArgs) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let mut site = cli.site(&args.extra_vars)?;
    warn_unread_keys(&site);
    let pbs = args.playbooks.iter().map(|p| site.load_playbook(p)).collect::<Result<Vec<_>>>()?;
    let plan = crate::plan::plan(&site, pbs, args.limit.as_deref())?;
    let text = match args.output {
        PlanFormat::Text => crate::plan::render::text(&plan),
        PlanFormat::Dot => crate::plan::render::dot(&plan),
        PlanFormat::Json => serde_json::to_string_pretty(&crate::plan::render::json(&plan)).expect("JSON"),
    };
    writeln!(out, "{}", text.trim_end())?;
    Ok(0)
}

/// env.yaml keys no playbook or template reads (`crate::plan::env_keys`): a typo, probably.
pub(super) fn warn_unread_keys(site: &crate::site::Site) {
    for w in crate::plan::env_keys::unread_keys(site) {
        eprintln!("warning: {w}");
    }
}

pub fn validate(cli: &Cli, args: &ValidateArgs) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let ValidateArgs { playbooks, limit, extra_vars } = args;
    let mut site = cli.site(extra_vars)?;
    warn_unread_keys(&site);
    let names = if playbooks.is_empty() { site.playbooks.names() } else { playbooks.clone() };
    let mut tasks = 0;
    let mut warned: Vec<String> = Vec::new();
    for name in &names {
        let pb = site.load_playbook(name)?;
        // A playbook whose hosts are all outside the limit is not an error for validate.
        let plan = match crate::plan::plan(&site, vec![pb], limit.as_deref()) {
            Ok(p) => p,
            Err(e) if limit.is_some() && e.kind() == ErrorKind::NothingToDo => continue,
            // A playbook that needs -e (node-remove's `node`) is checked when it is given.
            Err(e) if playbooks.is_empty() && e.kind() == ErrorKind::NeedsVar => {
                writeln!(out, "note: {name} not planned: {e}")?;
                continue;
            }
            Err(e) => return Err(e),
        };
        crate::plan::logins::logins(&site, &plan)?;
        tasks += plan.graph.node_count();
        for w in plan.warnings {
            if !warned.contains(&w) {
                eprintln!("warning: {w}");
                warned.push(w);
            }
        }
    }
    writeln!(
        out,
        "ok: {} host(s), {} group(s), {} playbook(s), {tasks} planned task(s); nothing was run",
        site.inventory.hosts.len(),
        site.inventory.groups.len(),
        names.len()
    )?;
    Ok(0)
}

pub fn playbooks(cli: &Cli) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let site = cli.site(&[])?;
    for name in site.playbooks.names() {
        let desc = site.playbooks.load(&name).ok().and_then(|p| p.description).unwrap_or_default();
        writeln!(out, "{name:24} {desc}")?;
    }
    Ok(0)
}
