//! The command line: clap definitions and the commands that need no host (inventory, hosts,
//! plan, validate). Exit codes follow Ansible's: 0 ok, 1 bad input or usage, 2 a host failed,
//! 4 a host unreachable.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::error::{Error, Result};
use crate::inventory::output;
use crate::plan;
use crate::site::{Site, SiteOptions};

#[derive(Debug, Parser)]
#[command(name = "copctl", version, about = "Install and operate OPENMARU COP clusters (RKE2, Harbor, GPU Operator)")]
pub struct Cli {
    /// Ansible INI inventory.
    #[arg(short = 'i', long, global = true, default_value = "inventory/inventory.ini", env = "COPCTL_INVENTORY")]
    pub inventory: PathBuf,
    /// Site settings (default: env.yaml beside the inventory, if present).
    #[arg(long, global = true, env = "COPCTL_ENV")]
    pub env: Option<PathBuf>,
    /// Playbooks overriding the built-in ones (default: playbooks/ beside the inventory).
    #[arg(long, global = true)]
    pub playbook_dir: Option<PathBuf>,
    /// Templates overriding the built-in ones (default: templates/ beside the inventory).
    #[arg(long, global = true)]
    pub template_dir: Option<PathBuf>,
    /// More output (-v, -vv, -vvv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the inventory (same JSON as ansible-inventory).
    Inventory {
        #[command(subcommand)]
        what: InventoryCmd,
    },
    /// Print the hosts a pattern matches, one per line, in Ansible's order.
    Hosts {
        pattern: String,
        #[arg(short, long)]
        limit: Option<String>,
    },
    /// Show the task graph a run would execute, without connecting to any host.
    Plan {
        #[arg(required = true)]
        playbooks: Vec<String>,
        #[arg(short, long)]
        limit: Option<String>,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Check the inventory, env.yaml, playbooks and templates; run nothing.
    Validate {
        /// Playbooks to check (default: all).
        playbooks: Vec<String>,
        #[arg(short, long)]
        limit: Option<String>,
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
    },
    /// List the playbooks available (built-in and overrides).
    Playbooks,
}

#[derive(Debug, Subcommand)]
pub enum InventoryCmd {
    /// All groups and hosts with their variables (`ansible-inventory --list`).
    List,
    /// The group tree (`ansible-inventory --graph`).
    Graph {
        #[arg(default_value = "all")]
        group: String,
    },
    /// One host's variables (`ansible-inventory --host`).
    Host { name: String },
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum Format {
    Text,
    Dot,
    Json,
}

impl Cli {
    fn site(&self, extra_vars: &[String]) -> Result<Site> {
        Site::load(&SiteOptions {
            inventory: self.inventory.clone(),
            env: self.env.clone(),
            extra_vars: extra_vars.to_vec(),
            playbook_dir: self.playbook_dir.clone(),
            template_dir: self.template_dir.clone(),
        })
    }
}

/// Runs the command; returns the process exit code.
pub fn run(cli: Cli) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::Inventory { what } => {
            let site = cli.site(&[])?;
            let inv = &site.inventory;
            let text = match what {
                InventoryCmd::List => output::to_ansible_json(&output::list_json(inv)),
                InventoryCmd::Graph { group } => output::graph(inv, group).ok_or_else(|| {
                    Error::with_help(format!("no group named '{group}'"), "`copctl inventory graph` shows all groups")
                })?,
                InventoryCmd::Host { name } => {
                    let v = output::host_json(inv, name).ok_or_else(|| inv.no_match_error("host", name))?;
                    output::to_ansible_json(&v)
                }
            };
            writeln!(out, "{text}")?;
        }
        Command::Hosts { pattern, limit } => {
            let site = cli.site(&[])?;
            let hosts = site.inventory.select(pattern, limit.as_deref())?;
            if hosts.is_empty() {
                eprintln!("warning: no hosts matched '{pattern}'");
            }
            for h in hosts {
                writeln!(out, "{h}")?;
            }
        }
        Command::Plan { playbooks, limit, extra_vars, format } => {
            let site = cli.site(extra_vars)?;
            let pbs = playbooks.iter().map(|p| site.load_playbook(p)).collect::<Result<Vec<_>>>()?;
            let plan = plan::plan(&site, pbs, limit.as_deref())?;
            let text = match format {
                Format::Text => plan::render::text(&plan),
                Format::Dot => plan::render::dot(&plan),
                Format::Json => serde_json::to_string_pretty(&plan::render::json(&plan)).expect("JSON"),
            };
            writeln!(out, "{}", text.trim_end())?;
        }
        Command::Validate { playbooks, limit, extra_vars } => {
            let site = cli.site(extra_vars)?;
            let names = if playbooks.is_empty() { site.playbooks.names() } else { playbooks.clone() };
            let mut tasks = 0;
            for name in &names {
                let pb = site.load_playbook(name)?;
                // A playbook whose hosts are all outside the limit is not an error for validate.
                let plan = match plan::plan(&site, vec![pb], limit.as_deref()) {
                    Ok(p) => p,
                    Err(e) if limit.is_some() && e.to_string().contains("leaves nothing to do") => continue,
                    Err(e) => return Err(e),
                };
                tasks += plan.graph.node_count();
            }
            writeln!(
                out,
                "ok: {} host(s), {} group(s), {} playbook(s), {tasks} planned task(s); nothing was run",
                site.inventory.hosts.len(),
                site.inventory.groups.len(),
                names.len()
            )?;
        }
        Command::Playbooks => {
            let site = cli.site(&[])?;
            for name in site.playbooks.names() {
                let desc = site.load_playbook(&name).ok().and_then(|p| p.description).unwrap_or_default();
                writeln!(out, "{name:24} {desc}")?;
            }
        }
    }
    Ok(0)
}
