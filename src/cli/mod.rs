//! The commands: `args` is what users type, each command has a file of its own, and `execute`
//! sends each one there in one line. What the commands share (loading the site, the SSH options
//! and connection pool from the global options, the log) is here. Exit codes follow Ansible's:
//! 0 ok, 1 bad input or usage, 2 a host failed, 4 a host unreachable.

pub mod args;
mod candidates;
mod completions;
pub use completions::answer_if_asked;
mod exec;
mod inventory;
mod node;
mod plan;
mod run;
mod ssh_copy_id;
mod vault;

pub use args::Cli;
use args::Command;

use std::sync::Arc;

use crate::error::Result;
use crate::site::{Site, SiteOptions};
use crate::transport::{HostKeyPolicy, HostSpec, KnownHosts, Pool, SshConfigFile, SshOptions};
use crate::vault::{Vault, VaultOptions};

/// Runs the command; returns the process exit code.
pub fn execute(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Inventory { what } => inventory::inventory(cli, what),
        Command::Hosts { pattern, limit } => inventory::hosts(cli, pattern, limit.as_deref()),
        Command::Plan(args) => plan::plan(cli, args),
        Command::Validate(args) => plan::validate(cli, args),
        Command::Playbooks => plan::playbooks(cli),
        Command::Run(args) => run::run(cli, args),
        Command::Runs { count, prune } => run::runs(*count, *prune),
        Command::Node { what } => node::node(cli, what),
        Command::Exec(args) => exec::exec(cli, args),
        Command::SshCopyId(args) => ssh_copy_id::ssh_copy_id(cli, args),
        Command::Completions { shell } => completions::completions(*shell),
        Command::Man => completions::man(),
        Command::Vault { what } => vault::vault(cli, what),
    }
}

impl Cli {
    fn site(&self, extra_vars: &[String]) -> Result<Site> {
        Site::load(&SiteOptions {
            inventory: self.inventory.clone(),
            env: self.env.clone(),
            extra_vars: extra_vars.to_vec(),
            playbook_dir: self.playbook_dir.clone(),
            template_dir: self.template_dir.clone(),
            vault: self.vault(),
        })
    }

    /// The vault settings: --vault-id, --vault-password-file, --ask-vault-pass, then the
    /// ANSIBLE_VAULT_* environment variables, as Ansible orders them.
    fn vault_options(&self) -> VaultOptions {
        VaultOptions {
            vault_ids: self.vault_id.clone(),
            password_files: self.vault_password_file.clone(),
            ask_vault_pass: self.ask_vault_pass,
            ..VaultOptions::default()
        }
        .with_env()
    }

    /// The vault secrets of this command, read when a vaulted input first needs them.
    fn vault(&self) -> Arc<Vault> {
        self.vault.get_or_init(|| Arc::new(Vault::new(self.vault_options(), |w| eprintln!("warning: {w}")))).clone()
    }

    fn ssh_options(&self) -> SshOptions {
        if self.host_key_checking == HostKeyPolicy::Off {
            eprintln!(
                "warning: --host-key-checking off: host keys are not verified (a key marked @revoked in known_hosts is still refused); anyone on the path can pose as a host"
            );
        }
        let mut o = SshOptions::new(KnownHosts::from_flag(self.known_hosts.clone(), self.host_key_checking));
        o.connect_timeout = std::time::Duration::from_secs(self.connect_timeout.max(1));
        o
    }

    fn pool(&self, site: &Site, hosts: &[String]) -> Result<Pool> {
        let cfg = SshConfigFile::load(self.ssh_config.as_deref());
        let defaults = self.connect_defaults()?;
        for h in hosts {
            let mut vars = defaults.clone();
            vars.extend(site.inventory.host_vars(h));
            crate::transport::check_connection_vars(h, &vars).map_err(crate::error::Error::plain)?;
        }
        let specs = hosts.iter().map(|h| HostSpec::from_inventory_with(&site.inventory, h, &cfg, &defaults)).collect();
        Ok(Pool::new(specs, self.ssh_options(), self.forks))
    }

    /// Ansible's connection flags as the lowest-precedence connection variables of every host
    /// (`-u` → `ansible_user`, ...). Passwords are read here, once: from the file given, or asked
    /// on the terminal without echo; never from the command line.
    fn connect_defaults(&self) -> Result<crate::inventory::Vars> {
        use serde_json::Value;
        let mut v = crate::inventory::Vars::new();
        if let Some(u) = &self.user {
            v.insert("ansible_user".into(), Value::from(u.as_str()));
        }
        if let Some(k) = &self.private_key {
            v.insert("ansible_ssh_private_key_file".into(), Value::from(k.display().to_string()));
        }
        if let Some(p) = password(self.ask_pass, self.connection_password_file.as_deref(), "SSH password: ")? {
            v.insert("ansible_password".into(), Value::from(p));
        }
        if self.r#become {
            v.insert("ansible_become".into(), Value::Bool(true));
        }
        if let Some(u) = &self.become_user {
            v.insert("ansible_become_user".into(), Value::from(u.as_str()));
        }
        if let Some(m) = self.become_method {
            let m = if m == crate::cli::args::BecomeMethod::Su { "su" } else { "sudo" };
            v.insert("ansible_become_method".into(), Value::from(m));
        }
        if let Some(p) = password(self.ask_become_pass, self.become_password_file.as_deref(), "BECOME password: ")? {
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
