//! `copctl ssh-copy-id`: puts the bastion's public key into a host's root (or --user)
//! `~/.ssh/authorized_keys`, replacing run-sshkeycopy.sh. If key authentication already works it
//! says so and changes nothing; otherwise it logs in once with a password (asked on the terminal,
//! or `COPCTL_SSH_PASSWORD` for automation — never an argument), appends the key only if absent,
//! fixes modes 700/600, and records the host key (accept-new).

use std::io::Write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Cli;
use super::args::SshCopyIdArgs;
use crate::error::{Error, Result};
use crate::secret::Secret;
use crate::transport::spec::Endpoint;
use crate::transport::{HostSpec, SshConfigFile, SshConnection, SshOptions, StdinSource, TransportError};

pub fn ssh_copy_id(cli: &Cli, args: &SshCopyIdArgs) -> Result<i32> {
    let SshCopyIdArgs { target, port, key, all } = args;
    let user = &cli.user;
    let pubkey = public_key_file(key.as_deref())?;
    let pubkey_text =
        std::fs::read_to_string(&pubkey).map_err(|e| Error::plain(format!("cannot read {}: {e}", pubkey.display())))?;
    let opts = cli.ssh_options();
    let cfg = SshConfigFile::load(cli.ssh_config.as_deref());
    // An inventory host keeps its address, port and user unless overridden; an address is used as is.
    let has_inventory = cli.inventory_sources().iter().all(|p| p.exists() || crate::inventory::is_host_list(p));
    let site = if has_inventory { Some(cli.site(&[])?) } else { None };
    let spec_of = |name: &str| -> HostSpec {
        let (address, p, u) = match site.as_ref().filter(|s| s.inventory.hosts.contains_key(name)) {
            Some(s) => {
                let spec = HostSpec::from_inventory(&s.inventory, name, &cfg);
                (spec.endpoint.address, spec.endpoint.port, spec.endpoint.user)
            }
            None => (name.to_string(), 22, "root".to_string()),
        };
        spec_for(name, &address, port.unwrap_or(p), user.as_deref().unwrap_or(&u), &pubkey)
    };
    let targets: Vec<String> = if *all {
        let s = site.as_ref().ok_or_else(|| Error::plain("--all needs an inventory (-i)"))?;
        s.inventory
            .hosts
            .keys()
            .filter(|n| {
                !matches!(s.inventory.host_vars(n).get("ansible_connection").and_then(|v| v.as_str()), Some("local"))
            })
            .cloned()
            .collect()
    } else {
        vec![
            target
                .as_deref()
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
                writeln!(
                    std::io::stdout(),
                    "{t}: key authentication already works for {}; nothing changed",
                    spec.target()
                )?;
            }
            Ok(Copied::Installed) => {
                writeln!(
                    std::io::stdout(),
                    "{t}: installed {} for {}; key authentication works",
                    pubkey.display(),
                    spec.target()
                )?;
            }
            Err(e) => {
                failed += 1;
                eprintln!("{t}: {e}");
            }
        }
    }
    Ok(if failed > 0 { 2 } else { 0 })
}

/// The public key to install: `--key FILE.pub`, else the first of ~/.ssh/id_{ed25519,ecdsa,rsa}.pub.
pub fn public_key_file(key: Option<&Path>) -> Result<PathBuf> {
    if let Some(k) = key {
        return Ok(k.to_path_buf());
    }
    let home = crate::transport::known_hosts::home();
    ["id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub"]
        .iter()
        .map(|n| home.join(".ssh").join(n))
        .find(|p| p.exists())
        .ok_or_else(|| {
            Error::with_help(
                "no public key found in ~/.ssh (id_ed25519.pub, id_ecdsa.pub, id_rsa.pub)",
                "create one with `ssh-keygen -t ed25519`, or pass --key FILE.pub",
            )
        })
}

pub enum Copied {
    AlreadyWorked,
    Installed,
}

/// The spec to log in with: the private key beside FILE.pub, no password.
pub fn spec_for(name: &str, address: &str, port: u16, user: &str, pubkey: &Path) -> HostSpec {
    let private = pubkey.with_extension("");
    HostSpec {
        name: name.to_string(),
        kind: crate::transport::ConnectionKind::Ssh,
        endpoint: Endpoint {
            name: name.to_string(),
            address: address.to_string(),
            port,
            user: user.to_string(),
            key_files: vec![private],
            known_hosts: Default::default(),
        },
        jumps: vec![],
        r#become: None,
        become_settings: crate::transport::spec::Become { user: "root".into(), password: None, su: false },
        become_fixed: false,
        method_fixed: false,
        password: None,
    }
}

/// Installs the key on one host. `password` is asked for only when key auth fails.
pub async fn copy_id(
    spec: &HostSpec,
    opts: &SshOptions,
    pubkey_text: &str,
    password: &dyn Fn() -> Result<Secret>,
) -> Result<Copied> {
    let as_error = |e: TransportError| Error::plain(e.to_string());
    match SshConnection::connect(spec, opts, None).await {
        Ok(c) => {
            c.close().await;
            return Ok(Copied::AlreadyWorked);
        }
        Err(TransportError::AuthFailed { .. }) => {}
        Err(e) => return Err(as_error(e)),
    }
    let pw = password()?;
    let conn = SshConnection::connect(spec, opts, Some(&pw)).await.map_err(|e| match e {
        TransportError::AuthFailed { host, user, address, .. } => Error::with_help(
            format!("{host}: password login as {user}@{address} failed"),
            "check the password, and that sshd allows PasswordAuthentication for this user",
        ),
        e => as_error(e),
    })?;
    // The key arrives on stdin: no argv of any remote process ever holds it.
    let script = "umask 077; read -r key || exit 1; mkdir -p ~/.ssh && chmod 700 ~/.ssh && touch ~/.ssh/authorized_keys \
                  && chmod 600 ~/.ssh/authorized_keys && { grep -qxF \"$key\" ~/.ssh/authorized_keys || \
                  { [ -z \"$(tail -c1 ~/.ssh/authorized_keys)\" ] || echo >> ~/.ssh/authorized_keys; \
                  printf '%s\\n' \"$key\" >> ~/.ssh/authorized_keys; }; }";
    let line = format!("{}\n", pubkey_text.trim());
    let out =
        conn.exec(script, StdinSource::Bytes(line.as_bytes()), Duration::from_secs(60)).await.map_err(as_error)?;
    conn.close().await;
    if !out.success() {
        return Err(Error::plain(format!(
            "{}: could not update authorized_keys: {}",
            spec.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // Prove it: key authentication must work now.
    let c = SshConnection::connect(spec, opts, None).await.map_err(as_error)?;
    c.close().await;
    Ok(Copied::Installed)
}

/// Asks for the password once (terminal or COPCTL_SSH_PASSWORD) and remembers it.
pub fn password_source(prompt: String) -> impl Fn() -> Result<Secret> {
    let cache: Arc<std::sync::Mutex<Option<Secret>>> = Arc::default();
    move || {
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = c.as_ref() {
            return Ok(p.clone());
        }
        let p = match std::env::var("COPCTL_SSH_PASSWORD") {
            Ok(p) => Secret::new(p),
            Err(_) => Secret::new(rpassword::prompt_password(&prompt).map_err(|e| {
                Error::with_help(
                    format!("a password is needed and there is no terminal to ask on: {e}"),
                    "set COPCTL_SSH_PASSWORD for unattended runs",
                )
            })?),
        };
        *c = Some(p.clone());
        Ok(p)
    }
}
