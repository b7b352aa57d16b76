//! The command line: clap definitions and the commands that need no host (inventory, hosts,
//! plan, validate). Exit codes follow Ansible's: 0 ok, 1 bad input or usage, 2 a host failed,
//! 4 a host unreachable.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::adhoc::OutputFormat;
use crate::error::{Error, Result};
use crate::inventory::output;
use crate::plan;
use crate::site::{Site, SiteOptions};
use crate::transport::{HostKeyPolicy, HostSpec, KnownHosts, Pool, SshConfigFile, SshOptions};

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
    /// Hosts worked on at once.
    #[arg(short = 'f', long, global = true, default_value_t = 64)]
    pub forks: usize,
    /// known_hosts file to check host keys against (default: ~/.ssh/known_hosts).
    #[arg(long, global = true, env = "COPCTL_KNOWN_HOSTS")]
    pub known_hosts: Option<PathBuf>,
    /// accept-new records unknown host keys and refuses changed ones; strict refuses both.
    #[arg(long, global = true, value_enum, default_value_t = HostKeyPolicy::AcceptNew)]
    pub host_key_checking: HostKeyPolicy,
    /// Seconds to wait for a host's SSH connection.
    #[arg(long, global = true, default_value_t = 10)]
    pub connect_timeout: u64,
    /// ssh_config file (default: ~/.ssh/config).
    #[arg(long, global = true)]
    pub ssh_config: Option<PathBuf>,
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
    /// Run playbooks on the hosts (the plan, executed over SSH).
    Run {
        #[arg(required = true)]
        playbooks: Vec<String>,
        #[arg(short, long)]
        limit: Option<String>,
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// Report what would change; change nothing.
        #[arg(short = 'C', long)]
        check: bool,
        /// Show the text differences of the files that change (secrets masked).
        #[arg(short = 'D', long)]
        diff: bool,
        /// Only tasks with one of these tags (comma-separated; `always` tasks run too).
        #[arg(short, long, value_delimiter = ',')]
        tags: Vec<String>,
        #[arg(long, value_delimiter = ',')]
        skip_tags: Vec<String>,
        /// Skip the tasks before the first step with this name.
        #[arg(long)]
        start_at: Option<String>,
        /// Run notified handlers on hosts that failed later in the play.
        #[arg(long)]
        force_handlers: bool,
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
        /// Also write the log (tracing, debug level) to this file.
        #[arg(long)]
        log_file: Option<PathBuf>,
        /// Confirm what a playbook stops to ask about (e.g. draining a GPU node with work on it).
        #[arg(long)]
        yes: bool,
        /// Go on where a playbook refuses (e.g. no other GPU node could take the work).
        #[arg(long)]
        force: bool,
    },
    /// The manual's node procedures, end to end.
    Node {
        #[command(subcommand)]
        what: NodeCmd,
    },
    /// List recent runs (.copctl/runs) with their result.
    Runs {
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
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
    /// Run one command on every matched host in parallel (like `ansible PATTERN -m shell -a`).
    Exec {
        pattern: String,
        #[arg(short, long)]
        limit: Option<String>,
        /// Seconds before the command is abandoned on a host.
        #[arg(long, default_value_t = 1800)]
        timeout: u64,
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
        /// The command (after `--`), run by the remote login shell.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Install this machine's public key on a host (replaces run-sshkeycopy.sh).
    SshCopyId {
        /// Inventory host name, or an address.
        target: Option<String>,
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        port: Option<u16>,
        /// Public key to install (default: ~/.ssh/id_ed25519.pub, id_ecdsa.pub or id_rsa.pub).
        #[arg(long)]
        key: Option<PathBuf>,
        /// Every inventory host that key authentication cannot reach yet.
        #[arg(long, conflicts_with = "target")]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum NodeCmd {
    /// Add a node already listed in the inventory: key (if needed), system-setup, system-dns,
    /// rke2-install, rke2-post-install, rke2-private-registry — all limited to the node (plus
    /// read-only steps on the servers). Re-run it to resume after a failure.
    Add {
        name: String,
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Remove a node: cordon, drain, stop RKE2, delete it from another server, uninstall.
    Remove {
        name: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// Remove even the last server, leave an even etcd member count, or go on after a failed drain.
        #[arg(long)]
        force: bool,
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
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

impl Cli {
    fn ssh_options(&self) -> SshOptions {
        let path = self.known_hosts.clone().unwrap_or_else(KnownHosts::default_path);
        if self.host_key_checking == HostKeyPolicy::Off {
            eprintln!(
                "warning: --host-key-checking off: host keys are not verified; anyone on the path can pose as a host"
            );
        }
        let mut o = SshOptions::new(KnownHosts::new(path, self.host_key_checking));
        o.connect_timeout = std::time::Duration::from_secs(self.connect_timeout.max(1));
        o
    }

    fn pool(&self, site: &Site, hosts: &[String]) -> Pool {
        let cfg = SshConfigFile::load(self.ssh_config.as_deref());
        let specs = hosts.iter().map(|h| HostSpec::from_inventory(&site.inventory, h, &cfg)).collect();
        Pool::new(specs, self.ssh_options(), self.forks)
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
            let mut warned: Vec<String> = Vec::new();
            for name in &names {
                let pb = site.load_playbook(name)?;
                // A playbook whose hosts are all outside the limit is not an error for validate.
                let plan = match plan::plan(&site, vec![pb], limit.as_deref()) {
                    Ok(p) => p,
                    Err(e) if limit.is_some() && e.to_string().contains("leaves nothing to do") => continue,
                    // A playbook that needs -e (node-remove's `node`) is checked when it is given.
                    Err(e)
                        if playbooks.is_empty()
                            && e.to_string().contains(": hosts: ")
                            && e.to_string().contains("undefined") =>
                    {
                        writeln!(out, "note: {name} not planned: {e}")?;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
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
        }
        Command::Exec { pattern, limit, timeout, output, command } => {
            let site = cli.site(&[])?;
            let hosts = site.inventory.select(pattern, limit.as_deref())?;
            if hosts.is_empty() {
                return Err(site.inventory.no_match_error("pattern", pattern));
            }
            let pool = std::sync::Arc::new(cli.pool(&site, &hosts));
            drop(out);
            return crate::adhoc::exec(
                &site,
                pool,
                hosts,
                command.join(" "),
                std::time::Duration::from_secs(*timeout),
                *output,
            );
        }
        Command::SshCopyId { target, user, port, key, all } => {
            drop(out);
            return ssh_copy_id(&cli, target.as_deref(), user.as_deref(), *port, key.as_deref(), *all);
        }
        Command::Run {
            playbooks,
            limit,
            extra_vars,
            check,
            diff,
            tags,
            skip_tags,
            start_at,
            force_handlers,
            output,
            log_file,
            yes,
            force,
        } => {
            init_tracing(cli.verbose, log_file.as_deref());
            let mut extra_vars = extra_vars.clone();
            if *yes {
                extra_vars.push("{\"yes\": true}".into());
            }
            if *force {
                extra_vars.push("{\"force\": true}".into());
            }
            let extra_vars = &extra_vars;
            let opts = RunArgs {
                check: *check,
                diff: *diff,
                tags: tags.clone(),
                skip_tags: skip_tags.clone(),
                start_at: start_at.clone(),
                force_handlers: *force_handlers,
                output: *output,
            };
            drop(out);
            return run_playbooks(&cli, playbooks, limit.as_deref(), extra_vars, opts);
        }
        Command::Node { what } => {
            drop(out);
            init_tracing(cli.verbose, None);
            return node(&cli, what);
        }
        Command::Runs { count } => {
            let runs = crate::report::record::list_runs(std::path::Path::new(".copctl"), *count);
            if runs.is_empty() {
                writeln!(out, "no runs recorded in .copctl/runs")?;
            }
            for r in runs {
                let t = &r["totals"];
                writeln!(
                    out,
                    "{}  exit {}  {}{}  hosts {}  ok {} changed {} failed {} unreachable {}{}",
                    r["id"].as_str().unwrap_or(""),
                    r["exit_code"],
                    r["playbooks"]
                        .as_array()
                        .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" "))
                        .unwrap_or_default(),
                    r["limit"].as_str().map(|l| format!(" --limit {l}")).unwrap_or_default(),
                    r["hosts"],
                    t["ok"],
                    t["changed"],
                    t["failed"],
                    t["unreachable"],
                    if r["interrupted"] == true { "  (interrupted)" } else { "" }
                )?;
            }
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

fn ssh_copy_id(
    cli: &Cli,
    target: Option<&str>,
    user: Option<&str>,
    port: Option<u16>,
    key: Option<&std::path::Path>,
    all: bool,
) -> Result<i32> {
    use crate::keycopy::{Copied, copy_id, password_source, public_key_file, spec_for};
    let pubkey = public_key_file(key)?;
    let pubkey_text =
        std::fs::read_to_string(&pubkey).map_err(|e| Error::plain(format!("cannot read {}: {e}", pubkey.display())))?;
    let opts = cli.ssh_options();
    let cfg = SshConfigFile::load(cli.ssh_config.as_deref());
    // An inventory host keeps its address, port and user unless overridden; an address is used as is.
    let site = if cli.inventory.exists() { Some(cli.site(&[])?) } else { None };
    let spec_of = |name: &str| -> HostSpec {
        let (address, p, u) = match site.as_ref().filter(|s| s.inventory.hosts.contains_key(name)) {
            Some(s) => {
                let spec = HostSpec::from_inventory(&s.inventory, name, &cfg);
                (spec.endpoint.address, spec.endpoint.port, spec.endpoint.user)
            }
            None => (name.to_string(), 22, "root".to_string()),
        };
        spec_for(name, &address, port.unwrap_or(p), user.unwrap_or(&u), &pubkey)
    };
    let targets: Vec<String> = if all {
        let s = site.as_ref().ok_or_else(|| Error::plain("--all needs an inventory (-i)"))?;
        s.inventory
            .hosts
            .iter()
            .filter(|(_, h)| !matches!(h.vars.get("ansible_connection").and_then(|v| v.as_str()), Some("local")))
            .map(|(n, _)| n.clone())
            .collect()
    } else {
        vec![
            target
                .ok_or_else(|| {
                    Error::with_help("name a host or an address", "copctl ssh-copy-id cop-worker-3, or --all")
                })?
                .to_string(),
        ]
    };
    let password = password_source("SSH password: ".to_string());
    let rt = crate::runtime()?;
    let mut failed = 0;
    for t in &targets {
        let spec = spec_of(t);
        match rt.block_on(copy_id(&spec, &opts, &pubkey_text, &password)) {
            Ok(Copied::AlreadyWorked) => {
                println!("{t}: key authentication already works for {}; nothing changed", spec.target())
            }
            Ok(Copied::Installed) => {
                println!("{t}: installed {} for {}; key authentication works", pubkey.display(), spec.target())
            }
            Err(e) => {
                failed += 1;
                eprintln!("{t}: {e}");
            }
        }
    }
    Ok(if failed > 0 { 2 } else { 0 })
}

/// `-v`: info, `-vv`: debug, `-vvv`: trace, on stderr; `--log-file` adds a debug log.
fn init_tracing(verbose: u8, log_file: Option<&std::path::Path>) {
    use tracing_subscriber::prelude::*;
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(tracing_subscriber::EnvFilter::new(format!("copctl={level}")));
    let file = log_file.and_then(|p| std::fs::File::create(p).ok()).map(|f| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::sync::Mutex::new(f))
            .with_ansi(false)
            .with_filter(tracing_subscriber::EnvFilter::new("copctl=debug"))
    });
    let _ = tracing_subscriber::registry().with(stderr).with(file).try_init();
}

/// What `run` takes besides playbooks, limit and extra vars.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    pub check: bool,
    pub diff: bool,
    pub tags: Vec<String>,
    pub skip_tags: Vec<String>,
    pub start_at: Option<String>,
    pub force_handlers: bool,
    pub output: OutputFormat,
}

fn run_playbooks(
    cli: &Cli,
    playbooks: &[String],
    limit: Option<&str>,
    extra_vars: &[String],
    a: RunArgs,
) -> Result<i32> {
    crate::run::catch_early_signals();
    let (site, plan) = crate::run::load_interruptibly(a.output, cli.verbose, || {
        let site = cli.site(extra_vars)?;
        let pbs = playbooks.iter().map(|p| site.load_playbook(p)).collect::<Result<Vec<_>>>()?;
        let plan = plan::plan(&site, pbs, limit)?;
        Ok((site, plan))
    })?;
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    let mut hosts: Vec<String> = Vec::new();
    for t in plan.graph.node_weights() {
        for h in t.host.iter().chain(t.runs_on.iter()) {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
    }
    let pool = cli.pool(&site, &hosts);
    let opts = crate::run::RunOptions {
        check: a.check,
        diff: a.diff,
        forks: cli.forks,
        tags: a.tags,
        skip_tags: a.skip_tags,
        start_at: a.start_at,
        force_handlers: a.force_handlers,
        output: a.output,
        verbose: cli.verbose,
        record_root: PathBuf::from(".copctl"),
        local_dir: cli.inventory.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
    };
    crate::run::run(site, plan, pool, opts)
}

/// `copctl node add|remove NAME`.
fn node(cli: &Cli, what: &NodeCmd) -> Result<i32> {
    let site = cli.site(&[])?;
    let name = match what {
        NodeCmd::Add { name, .. } | NodeCmd::Remove { name, .. } => name,
    };
    if !site.inventory.hosts.contains_key(name) {
        return Err(site.inventory.no_match_error("node", name).with_extra_help(
            "add the node to inventory.ini (and its settings to env.yaml) first: the manual's step 2",
        ));
    }
    match what {
        NodeCmd::Add { name, extra_vars, output } => {
            // Step 3 of the manual: the bastion's key on the node, asked for only when key
            // authentication does not work yet.
            let cfg = SshConfigFile::load(cli.ssh_config.as_deref());
            let spec = HostSpec::from_inventory(&site.inventory, name, &cfg);
            if spec.kind == crate::transport::ConnectionKind::Ssh {
                let opts = cli.ssh_options();
                let rt = crate::runtime()?;
                match rt.block_on(crate::transport::SshConnection::connect(&spec, &opts, None)) {
                    Ok(c) => rt.block_on(c.close()),
                    Err(crate::transport::TransportError::AuthFailed { .. }) => {
                        let pubkey = crate::keycopy::public_key_file(None)?;
                        let text = std::fs::read_to_string(&pubkey)
                            .map_err(|e| Error::plain(format!("cannot read {}: {e}", pubkey.display())))?;
                        let pw = crate::keycopy::password_source(format!("SSH password for {}: ", spec.target()));
                        rt.block_on(crate::keycopy::copy_id(&spec, &opts, &text, &pw))?;
                        println!("{name}: installed {} for {}", pubkey.display(), spec.target());
                    }
                    Err(e) => return Err(Error::plain(e.to_string())),
                }
            }
            let gpu = site.inventory.host_groups(name).contains("gpu");
            let mut playbooks: Vec<String> = vec!["system-setup".into(), "system-dns".into()];
            let available = site.playbooks.names();
            if gpu {
                for p in ["gpu-preinstall", "gpu-install"] {
                    if available.iter().any(|a| a == p) {
                        playbooks.push(p.into());
                    } else {
                        eprintln!(
                            "note: {name} is a GPU node, but there is no {p} playbook yet: install the driver by hand"
                        );
                    }
                }
            }
            playbooks.extend(["rke2-install", "rke2-post-install", "rke2-private-registry"].map(String::from));
            if gpu && available.iter().any(|a| a == "gpu-operator") {
                playbooks.push("gpu-operator".into());
            }
            let args = RunArgs { output: *output, ..Default::default() };
            run_playbooks(cli, &playbooks, Some(name), extra_vars, args)
        }
        NodeCmd::Remove { name, yes, force, extra_vars, output } => {
            if !yes {
                use std::io::IsTerminal;
                if !std::io::stdin().is_terminal() {
                    return Err(Error::with_help(
                        format!("removing {name} needs a confirmation and there is no terminal to ask on"),
                        "pass --yes to confirm on the command line",
                    ));
                }
                eprint!(
                    "Remove {name} from the cluster? It is cordoned, drained, deleted from the cluster and RKE2 is uninstalled.\nType the node name to confirm: "
                );
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if answer.trim() != name {
                    eprintln!("not confirmed: nothing was changed");
                    return Ok(1);
                }
            }
            let mut ev = extra_vars.clone();
            ev.push(format!("node={name}"));
            // The confirmation covers the GPU work check too.
            ev.push("{\"yes\": true}".into());
            if *force {
                ev.push("{\"force\": true}".into());
            }
            let args = RunArgs { output: *output, ..Default::default() };
            run_playbooks(cli, &["node-remove".to_string()], Some(name), &ev, args)
        }
    }
}
