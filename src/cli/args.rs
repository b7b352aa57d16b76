//! What users type: the clap definitions of every command and option, and nothing else. The
//! commands (one file each beside this one) resolve these raw arguments into what they run.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::engine::ArgValueCompleter;

use super::completions::{host_candidates, playbook_candidates};

use crate::report::OutputFormat;
use crate::transport::HostKeyPolicy;

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
    /// Seconds to reach a host: TCP connect, SSH handshake and login, retries of refused or timed-out
    /// connections included (a host still unreachable after that is reported unreachable).
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
        /// Host pattern: groups, hosts, globs, ~regex, `&` and `!`, subscripts (Ansible's syntax).
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        pattern: String,
        /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
        #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
        limit: Option<String>,
    },
    /// Show the task graph a run would execute, without connecting to any host.
    Plan(PlanArgs),
    /// Run playbooks on the hosts (the plan, executed over SSH).
    Run(RunArgs),
    /// The manual's node procedures, end to end.
    Node {
        #[command(subcommand)]
        what: NodeCmd,
    },
    /// List recent runs (.copctl/runs) with their result.
    Runs {
        /// How many of the newest runs to list.
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
        /// Remove every run record but the newest N.
        #[arg(long, value_name = "N")]
        prune: Option<usize>,
    },
    /// Check the inventory, env.yaml, playbooks and templates; run nothing.
    Validate(ValidateArgs),
    /// List the playbooks available (built-in and overrides).
    Playbooks,
    /// Run one command on every matched host in parallel (like `ansible PATTERN -m shell -a`).
    Exec(ExecArgs),
    /// Install this machine's public key on a host (replaces run-sshkeycopy.sh).
    SshCopyId(SshCopyIdArgs),
    /// Print the shell completion script: `source <(copctl completions bash)` (playbook, host and
    /// group names are completed from the site: the default inventory or COPCTL_INVENTORY).
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff): `copctl man | man -l -`.
    Man,
}

/// `copctl completions`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Playbook names (built-in or in playbooks/ beside the inventory) or paths, run in order.
    #[arg(required = true, add = ArgValueCompleter::new(playbook_candidates))]
    pub playbooks: Vec<String>,
    /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// text for people, dot for Graphviz, json for tools.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Playbook names (built-in or in playbooks/ beside the inventory) or paths, run in order.
    #[arg(required = true, add = ArgValueCompleter::new(playbook_candidates))]
    pub playbooks: Vec<String>,
    /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// Report what would change; change nothing.
    #[arg(short = 'C', long)]
    pub check: bool,
    /// Show the text differences of the files that change (secrets masked).
    #[arg(short = 'D', long)]
    pub diff: bool,
    /// Only tasks with one of these tags (comma-separated; `always` tasks run too).
    #[arg(short, long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Leave out tasks with one of these tags (comma-separated; wins over --tags).
    #[arg(long, value_delimiter = ',')]
    pub skip_tags: Vec<String>,
    /// Skip the tasks before the first step with this name.
    #[arg(long)]
    pub start_at: Option<String>,
    /// Run notified handlers on hosts that failed later in the play.
    #[arg(long)]
    pub force_handlers: bool,
    /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
    /// Also write the log (tracing, debug level) to this file.
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Confirm what a playbook stops to ask about (e.g. draining a GPU node with work on it).
    #[arg(long)]
    pub yes: bool,
    /// Go on where a playbook refuses (e.g. no other GPU node could take the work).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Playbooks to check (default: all).
    pub playbooks: Vec<String>,
    /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Host pattern: groups, hosts, globs, ~regex, `&` and `!`, subscripts (Ansible's syntax).
    #[arg(add = ArgValueCompleter::new(host_candidates))]
    pub pattern: String,
    /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Seconds before the command is abandoned on a host.
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
    /// The command (after `--`), run by the remote login shell.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SshCopyIdArgs {
    /// Inventory host name, or an address.
    pub target: Option<String>,
    /// Login user to install the key for (default: the inventory's ansible_user, else root).
    #[arg(long)]
    pub user: Option<String>,
    /// SSH port (default: the inventory's ansible_port, else 22).
    #[arg(long)]
    pub port: Option<u16>,
    /// Public key to install (default: ~/.ssh/id_ed25519.pub, id_ecdsa.pub or id_rsa.pub).
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Every inventory host that key authentication cannot reach yet.
    #[arg(long, conflicts_with = "target")]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum NodeCmd {
    /// Add a node already listed in the inventory: key (if needed), system-setup, system-dns,
    /// rke2-install, rke2-post-install, rke2-private-registry — all limited to the node (plus
    /// read-only steps on the servers). Re-run it to resume after a failure.
    Add {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Remove a node: cordon, drain, stop RKE2, delete it from another server, uninstall.
    Remove {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
        /// Remove even the last server, leave an even etcd member count, or go on after a failed drain.
        #[arg(long)]
        force: bool,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Cordon and drain a node for maintenance (the manual's graceful shutdown, steps 1-2, with
    /// the GPU node checks; PodDisruptionBudgets that would block it are named first). kubectl
    /// runs on another server; the node stays cordoned until `copctl node uncordon NAME`.
    Drain {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Drain although GPU work in progress on the node would be cut off.
        #[arg(long)]
        yes: bool,
        /// Drain although the other GPU nodes have no room for the node's GPU work.
        #[arg(long)]
        force: bool,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (drain_timeout=SECONDS;
        /// drain_disable_eviction=true deletes pods instead of evicting them, bypassing their
        /// PodDisruptionBudgets).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Make a node schedulable again after maintenance (the manual's graceful shutdown, step 3):
    /// any cordon is lifted, as asked; one copctl did not make is named.
    Uncordon {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
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
        /// The group to start from.
        #[arg(default_value = "all", add = ArgValueCompleter::new(host_candidates))]
        group: String,
    },
    /// One host's variables (`ansible-inventory --host`).
    Host {
        /// The host's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
    },
}

/// `copctl plan --format`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum PlanFormat {
    Text,
    Dot,
    Json,
}
