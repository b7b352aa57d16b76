//! The commands: `args` is what users type, each command has a file of its own, and `execute`
//! sends each one there in one line. What the commands share (loading the site, the SSH options
//! and connection pool from the global options, the log) is here. Exit codes follow Ansible's:
//! 0 ok, 1 bad input or usage, 2 a host failed, 4 a host unreachable.

pub mod args;
mod candidates;
mod completions;
mod config;
mod confirm;
mod examples;
pub use completions::answer_if_asked;
mod exec;
mod gpu;
mod install;
mod inventory;
mod leading;
mod man;
mod node;
mod plan;
mod run;
mod runs;
mod servers;
mod ssh_copy_id;
mod vault;

pub use args::Cli;
use args::Command;

use std::path::PathBuf;
use std::sync::Arc;

use crate::ansible_cfg::AnsibleCfg;
use crate::error::Result;
use crate::site::{Site, SiteOptions};
use crate::transport::{HostKeyPolicy, HostSpec, KnownHosts, Pool, SshConfigFile, SshOptions};
use crate::vault::{Vault, VaultOptions};

/// Runs the command; returns the process exit code.
pub fn execute(cli: &Cli) -> Result<i32> {
    if !matches!(
        cli.command,
        Command::Completions { .. } | Command::Man { .. } | Command::Gpu { what: args::GpuCmd::Lint(_) }
    ) {
        cli.load_ansible_cfg()?;
    }
    match &cli.command {
        Command::Inventory { what } => inventory::inventory(cli, what),
        Command::Hosts { pattern, limit } => inventory::hosts(cli, pattern, limit.as_deref()),
        Command::Plan(args) => plan::plan(cli, args),
        Command::Validate(args) => plan::validate(cli, args),
        Command::Playbooks => plan::playbooks(cli),
        Command::Run(args) => run::run(cli, args),
        Command::Install(args) => install::install(cli, args),
        Command::Runs { what, count, prune } => runs::runs(what.as_ref(), *count, *prune),
        Command::Node { what } => node::node(cli, what),
        Command::Gpu { what } => gpu::gpu(cli, what),
        Command::Exec(args) => exec::exec(cli, args),
        Command::SshCopyId(args) => ssh_copy_id::ssh_copy_id(cli, args),
        Command::Completions { shell } => completions::completions(*shell),
        Command::Man { command, dir } => man::man(command, dir.as_deref()),
        Command::Vault { what } => vault::vault(cli, what),
        Command::Config { only_changed } => config::config(cli, *only_changed),
    }
}

/// copctl's defaults where neither a flag nor Ansible's settings say.
const DEFAULT_INVENTORY: &str = "inventory/inventory.ini";
const DEFAULT_FORKS: usize = 64;
const DEFAULT_TIMEOUT: u64 = 10;

impl Cli {
    /// Reads ansible.cfg and the ANSIBLE_* variables once, before the command: Ansible's warnings
    /// are printed then, and under -v every key of the file copctl does not use.
    fn load_ansible_cfg(&self) -> Result<()> {
        if self.ansible_cfg.get().is_some() {
            return Ok(());
        }
        let cfg = AnsibleCfg::load()?;
        for w in &cfg.warnings {
            eprintln!("warning: {w}");
        }
        if self.verbose > 0 {
            for line in cfg.unused_lines() {
                eprintln!("note: {line}");
            }
        }
        let _ = self.ansible_cfg.set(cfg);
        Ok(())
    }

    /// Ansible's settings (flags win over them: each accessor below applies that order).
    fn cfg(&self) -> &AnsibleCfg {
        self.ansible_cfg.get_or_init(AnsibleCfg::default)
    }

    /// `-i` (or COPCTL_INVENTORY), else ansible.cfg's `inventory` (ANSIBLE_INVENTORY), else the
    /// example site's layout.
    fn inventory_sources(&self) -> Vec<PathBuf> {
        if !self.inventory.is_empty() {
            return self.inventory.clone();
        }
        self.cfg().paths("DEFAULT_HOST_LIST").map_or_else(|| vec![PathBuf::from(DEFAULT_INVENTORY)], <[_]>::to_vec)
    }

    fn forks(&self) -> usize {
        self.forks.or_else(|| self.cfg().int("DEFAULT_FORKS").map(|n| n as usize)).unwrap_or(DEFAULT_FORKS)
    }

    fn connect_timeout(&self) -> u64 {
        self.connect_timeout.or_else(|| self.cfg().int("DEFAULT_TIMEOUT")).unwrap_or(DEFAULT_TIMEOUT)
    }

    /// `--host-key-checking`, else Ansible's host_key_checking (False is off; True is copctl's
    /// accept-new: Ansible's True asks on a terminal for an unknown key), else accept-new.
    fn host_key_policy(&self) -> (HostKeyPolicy, String) {
        if let Some(p) = self.host_key_checking {
            return (p, "--host-key-checking off".into());
        }
        match self.cfg().get("HOST_KEY_CHECKING") {
            Some(s) if s.value == crate::ansible_cfg::Value::Bool(false) => {
                (HostKeyPolicy::Off, format!("host_key_checking = False ({})", s.origin))
            }
            _ => (HostKeyPolicy::AcceptNew, String::new()),
        }
    }

    fn site(&self, extra_vars: &[String]) -> Result<Site> {
        Site::load(&SiteOptions {
            inventory: self.inventory_sources(),
            env: self.env.clone(),
            extra_vars: extra_vars.to_vec(),
            playbook_dir: self.playbook_dir.clone(),
            template_dir: self.template_dir.clone(),
            vault: self.vault(),
            ansible_managed: self.cfg().str("DEFAULT_MANAGED_STR").map(str::to_string),
            plugin_paths: self.plugin_paths(),
        })
    }

    /// ansible.cfg's plugin paths for a site's Python filters, tests and lookups, else
    /// Ansible's defaults (`~/.ansible/plugins/KIND`, `/usr/share/ansible/plugins/KIND`).
    fn plugin_paths(&self) -> crate::template::python::PluginDirs {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let paths = |setting: &str, kind: &str| {
            self.cfg().paths(setting).map(<[PathBuf]>::to_vec).unwrap_or_else(|| {
                home.iter()
                    .map(|h| h.join(".ansible/plugins").join(kind))
                    .chain([PathBuf::from("/usr/share/ansible/plugins").join(kind)])
                    .collect()
            })
        };
        crate::template::python::PluginDirs {
            filter: paths("DEFAULT_FILTER_PLUGIN_PATH", "filter"),
            test: paths("DEFAULT_TEST_PLUGIN_PATH", "test"),
            lookup: paths("DEFAULT_LOOKUP_PLUGIN_PATH", "lookup"),
        }
    }

    /// The vault settings: --vault-id, --vault-password-file, --ask-vault-pass, then the
    /// ANSIBLE_VAULT_* environment variables, as Ansible orders them.
    fn vault_options(&self) -> VaultOptions {
        VaultOptions {
            vault_ids: self.vault_id.clone(),
            password_files: self.vault_password_file.clone(),
            ask_vault_pass: self.ask_vault_pass || self.cfg().bool("DEFAULT_ASK_VAULT_PASS") == Some(true),
            ..VaultOptions::default()
        }
        .with_config(self.cfg())
    }

    /// The vault secrets of this command, read when a vaulted input first needs them.
    fn vault(&self) -> Arc<Vault> {
        self.vault.get_or_init(|| Arc::new(Vault::new(self.vault_options(), |w| eprintln!("warning: {w}")))).clone()
    }

    fn ssh_options(&self) -> SshOptions {
        let (policy, why) = self.host_key_policy();
        if policy == HostKeyPolicy::Off {
            eprintln!(
                "warning: {why}: host keys are not verified (a key marked @revoked in known_hosts is still refused); anyone on the path can pose as a host"
            );
        }
        let mut o = SshOptions::new(KnownHosts::from_flag(self.known_hosts.clone(), policy));
        o.connect_timeout = std::time::Duration::from_secs(self.connect_timeout().max(1));
        o
    }

    /// The connections to `hosts`; `logins`: the user a play's `remote_user` logs in as on a
    /// host, over `-u` and ansible.cfg (the inventory's `ansible_user` over it).
    fn pool(&self, site: &Site, hosts: &[String], logins: &std::collections::HashMap<String, String>) -> Result<Pool> {
        let cfg = SshConfigFile::load(self.ssh_config.as_deref());
        let base = self.connect_defaults()?;
        let defaults_of = |h: &str| {
            let mut d = base.clone();
            if let Some(u) = logins.get(h) {
                d.insert("ansible_user".into(), serde_json::Value::from(u.as_str()));
            }
            d
        };
        for h in hosts.iter().filter(|h| site.inventory.hosts.contains_key(*h)) {
            let mut vars = defaults_of(h);
            vars.extend(site.inventory.host_vars(h));
            crate::transport::check_connection_vars(h, &vars).map_err(crate::error::Error::plain)?;
        }
        let specs = hosts
            .iter()
            .map(|h| {
                let defaults = defaults_of(h);
                if !site.inventory.hosts.contains_key(h) && crate::plan::is_implicit_localhost(h) {
                    let mut vars = defaults.clone();
                    vars.insert("ansible_connection".into(), serde_json::Value::from("local"));
                    HostSpec::from_vars(h, &vars, &cfg)
                } else {
                    HostSpec::from_inventory_with(&site.inventory, h, &cfg, &defaults)
                }
            })
            .collect();
        Ok(Pool::new(specs, self.ssh_options(), self.forks()))
    }

    /// Ansible's connection flags, else its settings (ansible.cfg, ANSIBLE_*), as the
    /// lowest-precedence connection variables of every host (`-u` → `ansible_user`, ...): an
    /// inventory's variables win over both, as in Ansible. Passwords are read here, once: from
    /// the file given, or asked on the terminal without echo; never from the command line.
    fn connect_defaults(&self) -> Result<crate::inventory::Vars> {
        use serde_json::Value;
        let cfg = self.cfg();
        let mut v = crate::inventory::Vars::new();
        if let Some(u) = self.user.as_deref().or(cfg.str("DEFAULT_REMOTE_USER")) {
            v.insert("ansible_user".into(), Value::from(u));
        }
        if let Some(p) = cfg.int("DEFAULT_REMOTE_PORT") {
            v.insert("ansible_port".into(), Value::from(p));
        }
        if let Some(k) = self.private_key.as_deref().or(cfg.path("DEFAULT_PRIVATE_KEY_FILE")) {
            v.insert("ansible_ssh_private_key_file".into(), Value::from(k.display().to_string()));
        }
        for (setting, var) in
            [("SSH_COMMON_ARGS", "ansible_ssh_common_args"), ("SSH_EXTRA_ARGS", "ansible_ssh_extra_args")]
        {
            if let Some(a) = cfg.str(setting) {
                v.insert(var.into(), Value::from(a));
            }
        }
        let ask_pass = self.ask_pass || cfg.bool("DEFAULT_ASK_PASS") == Some(true);
        let pass_file = self.connection_password_file.as_deref().or(cfg.path("CONNECTION_PASSWORD_FILE"));
        if let Some(p) = password(ask_pass, pass_file, "SSH password: ")? {
            v.insert("ansible_password".into(), Value::from(p));
        }
        if self.r#become || cfg.bool("DEFAULT_BECOME") == Some(true) {
            v.insert("ansible_become".into(), Value::Bool(true));
        }
        match self.become_method {
            Some(m) => {
                let m = if m == crate::cli::args::BecomeMethod::Su { "su" } else { "sudo" };
                v.insert("ansible_become_method".into(), Value::from(m));
            }
            None => {
                if let Some(s) = cfg.get("DEFAULT_BECOME_METHOD") {
                    let m = match &s.value {
                        crate::ansible_cfg::Value::Str(m) if m == "sudo" || m == "su" => m.clone(),
                        other => {
                            return Err(crate::error::Error::with_help(
                                format!("{}: become_method = {other}: copctl becomes with sudo or su", s.origin),
                                "set become_method = sudo or su (or leave it out), or give --become-method",
                            ));
                        }
                    };
                    v.insert("ansible_become_method".into(), Value::from(m));
                }
            }
        }
        if let Some(u) = self.become_user.as_deref().or(cfg.str("DEFAULT_BECOME_USER")) {
            v.insert("ansible_become_user".into(), Value::from(u));
        }
        let ask_become = self.ask_become_pass || cfg.bool("DEFAULT_BECOME_ASK_PASS") == Some(true);
        let become_file = self.become_password_file.as_deref().or(cfg.path("BECOME_PASSWORD_FILE"));
        if let Some(p) = password(ask_become, become_file, "BECOME password: ")? {
            v.insert("ansible_become_password".into(), Value::from(p));
        }
        Ok(v)
    }
}

/// A password from `file` (its first line), or asked on the terminal when `ask` is set.
fn password(ask: bool, file: Option<&std::path::Path>, prompt: &str) -> Result<Option<String>> {
    if let Some(f) = file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| crate::error::Error::plain(format!("cannot read the password file {}: {e}", f.display())))?;
        return Ok(Some(text.lines().next().unwrap_or("").to_string()));
    }
    if !ask {
        return Ok(None);
    }
    rpassword::prompt_password(prompt).map(Some).map_err(|e| {
        crate::error::Error::with_help(
            format!("a password was asked for (-k/-K) and there is no terminal to ask on: {e}"),
            "give it in a file instead: --connection-password-file / --become-password-file",
        )
    })
}

impl Cli {
    /// `-v` on stderr, and the debug log: `--log-file`, else ansible.cfg's `log_path`
    /// (ANSIBLE_LOG_PATH), as ansible-playbook logs there.
    fn init_tracing(&self, log_file: Option<&std::path::Path>) {
        init_tracing(self.verbose, log_file.or(self.cfg().path("DEFAULT_LOG_PATH")));
    }
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
