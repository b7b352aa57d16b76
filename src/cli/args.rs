//! What users type: the clap definitions of every command and option, and nothing else. The
//! commands (one file each beside this one) resolve these raw arguments into what they run.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::engine::ArgValueCompleter;

use super::candidates::{host_candidates, playbook_candidates};
use super::examples;

use crate::report::OutputFormat;
use crate::transport::HostKeyPolicy;

/// The option groups of `--help` and the man pages.
const SITE: &str = "Site";
const CONNECTION: &str = "Connection";
const BECOME: &str = "Privilege escalation";
const VAULT: &str = "Vault";
const GENERAL: &str = "General";
const LEADING: &str = "Command options (also before the command)";

#[derive(Debug, Parser)]
#[command(
    name = "copctl",
    version,
    about = "Install and operate OPENMARU COP clusters (RKE2, Harbor, GPU Operator)",
    after_help = examples::help("copctl")
)]
pub struct Cli {
    /// Inventory source: an INI or YAML file, a directory of them, or a host list 'h1,h2,' (a
    /// comma in the value); repeat -i to merge several, in order (as Ansible does). The
    /// group_vars/ and host_vars/ beside each source are read.
    /// Default: ansible.cfg's `inventory` (ANSIBLE_INVENTORY), else inventory/inventory.ini.
    #[arg(
        short = 'i',
        long,
        global = true, help_heading = SITE,
        env = "COPCTL_INVENTORY",
        action = clap::ArgAction::Append,
        value_name = "SOURCE"
    )]
    pub inventory: Vec<PathBuf>,
    /// Site settings (default: env.yaml beside the inventory, if present).
    #[arg(long, global = true, help_heading = SITE, env = "COPCTL_ENV")]
    pub env: Option<PathBuf>,
    /// Playbooks overriding the built-in ones (default: playbooks/ beside the inventory).
    #[arg(long, global = true, help_heading = SITE)]
    pub playbook_dir: Option<PathBuf>,
    /// Templates overriding the built-in ones (default: templates/ beside the inventory).
    #[arg(long, global = true, help_heading = SITE)]
    pub template_dir: Option<PathBuf>,
    /// Hosts worked on at once (default: ansible.cfg's forks, else 64).
    #[arg(short = 'f', long, global = true, help_heading = GENERAL)]
    pub forks: Option<usize>,
    /// known_hosts file to check host keys against (default: ~/.ssh/known_hosts).
    #[arg(long, global = true, help_heading = CONNECTION, env = "COPCTL_KNOWN_HOSTS")]
    pub known_hosts: Option<PathBuf>,
    /// accept-new records unknown host keys and refuses changed ones; strict refuses both
    /// (default: off where ansible.cfg says host_key_checking = False, else accept-new).
    #[arg(long, global = true, help_heading = CONNECTION, value_enum)]
    pub host_key_checking: Option<HostKeyPolicy>,
    /// Seconds to reach a host: TCP connect, SSH handshake and login, retries of refused or timed-out
    /// connections included (a host still unreachable after that is reported unreachable).
    /// Default: ansible.cfg's timeout, else 10.
    #[arg(short = 'T', long, global = true, help_heading = CONNECTION)]
    pub connect_timeout: Option<u64>,
    /// ssh_config file (default: ~/.ssh/config).
    #[arg(long, global = true, help_heading = CONNECTION)]
    pub ssh_config: Option<PathBuf>,
    /// Login user where the inventory sets none (an inventory's ansible_user wins, as in Ansible).
    #[arg(short = 'u', long, global = true, help_heading = CONNECTION)]
    pub user: Option<String>,
    /// Private key where the inventory sets none (ansible_ssh_private_key_file wins).
    #[arg(long, visible_alias = "key-file", global = true, help_heading = CONNECTION, value_name = "FILE")]
    pub private_key: Option<PathBuf>,
    /// Ask once for the SSH password (no echo), for hosts that take password logins.
    #[arg(short = 'k', long, global = true, help_heading = CONNECTION)]
    pub ask_pass: bool,
    /// Read the SSH password from this file (its first line).
    #[arg(long, global = true, help_heading = CONNECTION, value_name = "FILE")]
    pub connection_password_file: Option<PathBuf>,
    /// Become root (or --become-user) with sudo where the inventory does not say (ansible_become wins).
    #[arg(short = 'b', long = "become", global = true, help_heading = BECOME)]
    pub r#become: bool,
    /// The user to become (default root; ansible_become_user wins).
    #[arg(long, global = true, help_heading = BECOME)]
    pub become_user: Option<String>,
    /// How to become: sudo (default) or su (ansible_become_method wins).
    #[arg(long, global = true, help_heading = BECOME, value_enum)]
    pub become_method: Option<BecomeMethod>,
    /// Ask once for the become (sudo or su) password (no echo).
    #[arg(short = 'K', long, global = true, help_heading = BECOME)]
    pub ask_become_pass: bool,
    /// Read the become (sudo or su) password from this file (its first line).
    #[arg(long, global = true, help_heading = BECOME, value_name = "FILE")]
    pub become_password_file: Option<PathBuf>,
    /// More output (-v, -vv, -vvv).
    #[arg(short, long, global = true, help_heading = GENERAL, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Vault password file, or an executable script that prints the password, as Ansible reads
    /// them (repeatable; after these, ANSIBLE_VAULT_PASSWORD_FILE). Read only when a
    /// vault-encrypted file or `!vault` value is met.
    #[arg(long = "vault-password-file", visible_alias = "vault-pass-file", global = true, help_heading = VAULT, value_name = "FILE")]
    pub vault_password_file: Vec<PathBuf>,
    /// Ask for the vault password on the terminal, when a vault-encrypted file or value is met.
    #[arg(short = 'J', long = "ask-vault-pass", visible_alias = "ask-vault-password", global = true, help_heading = VAULT)]
    pub ask_vault_pass: bool,
    /// A vault identity: LABEL@SOURCE, where SOURCE is a password file, an executable script (a
    /// `*-client` script is asked with `--vault-id LABEL`) or `prompt` (repeatable; after
    /// ANSIBLE_VAULT_IDENTITY_LIST). Tried before --vault-password-file.
    #[arg(long = "vault-id", global = true, help_heading = VAULT, value_name = "[LABEL@]SOURCE")]
    pub vault_id: Vec<String>,
    /// The options several commands take, given before the command (`copctl -e x=1 run ...`):
    /// `Cli::take_leading` hands them to the command, or refuses them where it takes none.
    #[command(flatten)]
    pub leading: Leading,
    #[command(subcommand)]
    pub command: Command,
    /// The vault secrets, read once, when first needed.
    #[arg(skip)]
    pub vault: std::sync::OnceLock<std::sync::Arc<crate::vault::Vault>>,
    /// ansible.cfg and the ANSIBLE_* variables, read once before the command runs.
    #[arg(skip)]
    pub ansible_cfg: std::sync::OnceLock<crate::ansible_cfg::AnsibleCfg>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the inventory (same JSON as ansible-inventory).
    #[command(after_help = examples::help("copctl inventory"))]
    Inventory {
        #[command(subcommand)]
        what: InventoryCmd,
    },
    /// Print the hosts a pattern matches, one per line, in Ansible's order.
    #[command(after_help = examples::help("copctl hosts"))]
    Hosts {
        /// Host pattern: groups, hosts, globs, ~regex, `&` and `!`, subscripts (Ansible's syntax).
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        pattern: String,
        /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
        #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
        limit: Option<String>,
    },
    /// Show the task graph a run would execute, without connecting to any host.
    #[command(after_help = examples::help("copctl plan"))]
    Plan(PlanArgs),
    /// Run playbooks on the hosts (the plan, executed over SSH).
    #[command(after_help = examples::help("copctl run"))]
    Run(RunArgs),
    /// The manual's node procedures, end to end.
    #[command(after_help = examples::help("copctl node"))]
    Node {
        #[command(subcommand)]
        what: NodeCmd,
    },
    /// GPU sharing as the manual's chapter "Devices (GPU Sharing)" describes it.
    #[command(after_help = examples::help("copctl gpu"))]
    Gpu {
        #[command(subcommand)]
        what: GpuCmd,
    },
    /// The manual's first install, in order, on the whole site (or --limit): see the list below.
    #[command(after_help = crate::procedures::install_help() + "\n\n" + &examples::help("copctl install"))]
    Install(InstallArgs),
    /// List recent runs (.copctl/runs): start, duration, result, playbooks and limit; `runs show`
    /// for what one did.
    #[command(args_conflicts_with_subcommands = true, after_help = examples::help("copctl runs"))]
    Runs {
        #[command(subcommand)]
        what: Option<RunsCmd>,
        /// How many of the newest runs to list.
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
        /// Remove every run record but the newest N.
        #[arg(long, value_name = "N")]
        prune: Option<usize>,
    },
    /// Check the inventory, env.yaml, playbooks and templates; run nothing.
    #[command(after_help = examples::help("copctl validate"))]
    Validate(ValidateArgs),
    /// List the playbooks available (built-in and overrides).
    #[command(after_help = examples::help("copctl playbooks"))]
    Playbooks,
    /// Run one command on every matched host in parallel (like `ansible PATTERN -m shell -a`).
    #[command(after_help = examples::help("copctl exec"))]
    Exec(ExecArgs),
    /// Install this machine's public key on a host (replaces run-sshkeycopy.sh).
    #[command(after_help = examples::help("copctl ssh-copy-id"))]
    SshCopyId(SshCopyIdArgs),
    /// Print the shell completion script: `source <(copctl completions bash)` (playbook, host and
    /// group names are completed from the site: the default inventory or COPCTL_INVENTORY).
    #[command(after_help = examples::help("copctl completions"))]
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print a man page (roff): copctl's, or one command's (`copctl man node add | man -l -`);
    /// with --dir, every command's page as a file there.
    #[command(after_help = examples::help("copctl man"))]
    Man {
        /// The command whose page to print (none: copctl's own page).
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
        /// Write every command's page into this directory (copctl.1, copctl-run.1, ...).
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        dir: Option<PathBuf>,
    },
    /// Each effective Ansible setting (ansible.cfg, ANSIBLE_* variables, flags) and where it came
    /// from, as `ansible-config dump` prints them; the ansible.cfg keys copctl does not use.
    #[command(after_help = examples::help("copctl config"))]
    Config {
        /// Only the settings that are not copctl's defaults (`ansible-config dump --only-changed`).
        #[arg(long)]
        only_changed: bool,
    },
    /// Encrypt, decrypt and view vault files, and encrypt strings for YAML, as ansible-vault does
    /// (same formats, either tool reads what the other writes).
    #[command(after_help = examples::help("copctl vault"))]
    Vault {
        #[command(subcommand)]
        what: VaultCmd,
    },
}

/// `--become-method`: Ansible's names for the two methods copctl has.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum BecomeMethod {
    Sudo,
    Su,
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

#[derive(Debug, Subcommand)]
pub enum VaultCmd {
    /// Encrypt files in place (atomically, keeping their mode), or FILE to --output; `-` or no
    /// file: stdin to stdout.
    #[command(after_help = examples::help("copctl vault encrypt"))]
    Encrypt {
        /// Files to encrypt (`-` or none: stdin).
        #[arg(value_name = "FILE")]
        files: Vec<String>,
        /// Write here instead of in place (`-`: stdout); one input file only.
        #[arg(long, value_name = "FILE")]
        output: Option<String>,
        /// The vault id to encrypt with (needed when several vault ids are given).
        #[arg(long, value_name = "LABEL", env = "ANSIBLE_VAULT_ENCRYPT_IDENTITY")]
        encrypt_vault_id: Option<String>,
    },
    /// Decrypt files in place (atomically, keeping their mode), or FILE to --output; `-` or no
    /// file: stdin to stdout.
    #[command(after_help = examples::help("copctl vault decrypt"))]
    Decrypt {
        /// Files to decrypt (`-` or none: stdin).
        #[arg(value_name = "FILE")]
        files: Vec<String>,
        /// Write here instead of in place (`-`: stdout); one input file only.
        #[arg(long, value_name = "FILE")]
        output: Option<String>,
    },
    /// Print the decrypted content of vault files.
    #[command(after_help = examples::help("copctl vault view"))]
    View {
        /// Files to show decrypted.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<String>,
    },
    /// Encrypt strings as `!vault |` YAML values to paste into env.yaml (stdin when no string,
    /// `-`, or --stdin-name is given).
    #[command(
        name = "encrypt_string",
        visible_alias = "encrypt-string",
        after_help = examples::help("copctl vault encrypt_string")
    )]
    EncryptString {
        /// The strings to encrypt (none, or `-`: stdin).
        #[arg(value_name = "STRING")]
        strings: Vec<String>,
        /// The variable name of each string, in order (repeatable): prints `NAME: !vault |`.
        #[arg(short = 'n', long = "name", value_name = "NAME")]
        names: Vec<String>,
        /// The variable name of the string read from stdin.
        #[arg(long, value_name = "NAME")]
        stdin_name: Option<String>,
        /// Write the YAML here instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<String>,
        /// The vault id to encrypt with (needed when several vault ids are given).
        #[arg(long, value_name = "LABEL", env = "ANSIBLE_VAULT_ENCRYPT_IDENTITY")]
        encrypt_vault_id: Option<String>,
    },
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
    /// text for people, dot for Graphviz, json for tools (`--format` is the same).
    #[arg(long, visible_alias = "format", value_enum, default_value_t = PlanFormat::Text)]
    pub output: PlanFormat,
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
    #[arg(long, visible_alias = "start-at-task")]
    pub start_at: Option<String>,
    /// Print the hosts each play would run on, and run nothing (ansible-playbook --list-hosts).
    #[arg(long)]
    pub list_hosts: bool,
    /// Print the plan, and run nothing (ansible-playbook --list-tasks).
    #[arg(long)]
    pub list_tasks: bool,
    /// Check the playbooks as `copctl validate` does, and run nothing.
    #[arg(long)]
    pub syntax_check: bool,
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

/// `copctl runs show`.
#[derive(Debug, Subcommand)]
pub enum RunsCmd {
    /// What a run did, per host and task: failures first with their messages and output, then
    /// changes with their diffs (recorded under --diff), then every host's tasks.
    #[command(after_help = examples::help("copctl runs show"))]
    Show {
        /// The run's id, or its beginning (default: the last run).
        id: Option<String>,
        /// Only this host's tasks.
        #[arg(long, add = ArgValueCompleter::new(host_candidates))]
        host: Option<String>,
        /// Only the failed (and unreachable) tasks.
        #[arg(long)]
        failed: bool,
        /// human: sections for people; json: one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// One self-contained HTML file of a run (no network needed to open it): header, recap,
    /// failed tasks first, a timeline per host, changes with their diffs folded, the slowest
    /// tasks. Written readable by its owner only, as the run record is.
    #[command(after_help = examples::help("copctl runs report"))]
    Report {
        /// The run's id, or its beginning (default: the last run).
        id: Option<String>,
        /// The file to write.
        #[arg(short = 'o', long = "out", value_name = "FILE.html", required = true)]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Only these hosts (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Start at this playbook of the install (the one that failed) and run the rest in order.
    #[arg(long, value_name = "PLAYBOOK")]
    pub from: Option<String>,
    /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// Report what would change; change nothing.
    #[arg(short = 'C', long)]
    pub check: bool,
    /// Show the text differences of the files that change (secrets masked).
    #[arg(short = 'D', long)]
    pub diff: bool,
    /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
    /// Confirm what a playbook stops to ask about.
    #[arg(long)]
    pub yes: bool,
    /// Go on where a playbook refuses.
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
    #[command(after_help = examples::help("copctl node add"))]
    Add {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Report what would change; change nothing.
        #[arg(short = 'C', long)]
        check: bool,
        /// Show the text differences of the files that change (secrets masked).
        #[arg(short = 'D', long)]
        diff: bool,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (highest precedence).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Remove a node: cordon, drain, stop RKE2, delete it from another server, uninstall.
    #[command(after_help = examples::help("copctl node remove"))]
    Remove {
        /// The node's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
        /// Report what would change; change nothing.
        #[arg(short = 'C', long)]
        check: bool,
        /// Show the text differences of the files that change (secrets masked).
        #[arg(short = 'D', long)]
        diff: bool,
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
    #[command(after_help = examples::help("copctl node drain"))]
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
        /// Delete the pods no controller manages (kubectl drain's --force): nothing starts them
        /// again elsewhere. Without it such a pod stops the drain.
        #[arg(long)]
        force_unmanaged: bool,
        /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (drain_timeout=SECONDS;
        /// drain_disable_eviction=true deletes pods instead of evicting them, bypassing their
        /// PodDisruptionBudgets).
        #[arg(short = 'e', long = "extra-vars")]
        extra_vars: Vec<String>,
        /// human: progress and a recap; json: one JSON event per line (schema in src/report/mod.rs).
        #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
        output: OutputFormat,
    },
    /// Cordon a node and nothing more (the manual's "Rebalancing load"): no new pods go to it,
    /// its pods stay. kubectl runs on another server; the cordon stays until `copctl node
    /// uncordon NAME` (other procedures leave it).
    #[command(after_help = examples::help("copctl node cordon"))]
    Cordon {
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
    /// Make a node schedulable again after maintenance (the manual's graceful shutdown, step 3):
    /// any cordon is lifted, as asked; one copctl did not make is named.
    #[command(after_help = examples::help("copctl node uncordon"))]
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
pub enum GpuCmd {
    /// Check workload manifests against the chapter's "Common Mistakes" and YAML rules, offline
    /// (no cluster): `FILE:LINE: error|warning: ...` and a `help:` line each; exit 1 on an error.
    #[command(after_help = examples::help("copctl gpu lint"))]
    Lint(GpuLintArgs),
    /// What the cluster's GPUs are doing, read-only, from the first server: device classes, each
    /// node's devices and what is allocated from them, claims with their consumers; claims held
    /// without use and Pending claims flagged with the likely cause.
    #[command(after_help = examples::help("copctl gpu status"))]
    Status(GpuStatusArgs),
    /// The chapter's "order for using a GPU", on each GPU node (or --limit): a claim shared by two
    /// pods, a claim template, and with sharing on two claims in two namespaces on one device, in
    /// scratch namespaces deleted on every way out.
    #[command(after_help = examples::help("copctl gpu check"))]
    Check(GpuCheckArgs),
}

#[derive(Debug, Args)]
pub struct GpuStatusArgs {
    /// human: tables; json: one JSON document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

#[derive(Debug, Args)]
pub struct GpuCheckArgs {
    /// Only these GPU nodes (Ansible's --limit): a pattern, a comma list, or @file.
    #[arg(short, long, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Extra variables: k=v, a JSON/YAML mapping, or @file.yaml (gpu_check_image=...).
    #[arg(short = 'e', long = "extra-vars")]
    pub extra_vars: Vec<String>,
    /// Seconds each claim and pod has to turn Allocated and Running.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub timeout: u64,
    /// human: a line per check; json: one JSON document.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

#[derive(Debug, Args)]
pub struct GpuLintArgs {
    /// Manifest files, directories (their *.yaml and *.yml, recursively), or - for standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A device class the cluster has besides gpu.nvidia.com (repeatable; `kubectl get
    /// deviceclasses` lists them).
    #[arg(long = "device-class", value_name = "NAME")]
    pub device_classes: Vec<String>,
    /// human: as compilers print; json: one JSON document with every finding.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub enum InventoryCmd {
    /// All groups and hosts with their variables (`ansible-inventory --list`).
    #[command(after_help = examples::help("copctl inventory list"))]
    List,
    /// The group tree (`ansible-inventory --graph`).
    #[command(after_help = examples::help("copctl inventory graph"))]
    Graph {
        /// The group to start from.
        #[arg(default_value = "all", add = ArgValueCompleter::new(host_candidates))]
        group: String,
    },
    /// One host's variables (`ansible-inventory --host`).
    #[command(after_help = examples::help("copctl inventory host"))]
    Host {
        /// The host's inventory name.
        #[arg(add = ArgValueCompleter::new(host_candidates))]
        name: String,
    },
}

/// `copctl plan --output`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum PlanFormat {
    Text,
    Dot,
    Json,
}

/// The options several commands take, accepted before the command too (`copctl -e x=1 run ...`,
/// `copctl --limit w1 plan ...`), as Ansible's are wherever they are typed.
#[derive(Debug, Args, Default)]
pub struct Leading {
    /// Extra variables, as the command's own -e (before the command's, so the command's win).
    #[arg(short = 'e', long = "extra-vars", value_name = "VARS", help_heading = LEADING)]
    pub extra_vars: Vec<String>,
    /// Only these hosts, as the command's own --limit.
    #[arg(short = 'l', long, value_name = "PATTERN", help_heading = LEADING, add = ArgValueCompleter::new(host_candidates))]
    pub limit: Option<String>,
    /// Check mode, as the command's own --check.
    #[arg(short = 'C', long, help_heading = LEADING)]
    pub check: bool,
    /// Show differences, as the command's own --diff.
    #[arg(short = 'D', long, help_heading = LEADING)]
    pub diff: bool,
    /// The output format, as the command's own --output (`--format` is the same).
    #[arg(long, visible_alias = "format", value_name = "FORMAT", help_heading = LEADING)]
    pub output: Option<String>,
    /// Confirm, as the command's own --yes.
    #[arg(long, help_heading = LEADING)]
    pub yes: bool,
    /// Go on where a playbook refuses, as the command's own --force.
    #[arg(long, help_heading = LEADING)]
    pub force: bool,
}
