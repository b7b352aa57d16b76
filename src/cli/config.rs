//! `copctl config`: each Ansible setting copctl applies, its effective value and where it came
//! from (a flag, `file:line` of ansible.cfg, `env: ANSIBLE_X`, or copctl's default), printed as
//! `ansible-config dump` prints them; then the keys of the file copctl does not use. The values
//! are settings, not secrets (passwords are never settings: they are asked or read from files).

use std::io::Write;

use super::Cli;
use crate::ansible_cfg::known;
use crate::error::Result;

pub fn config(cli: &Cli, only_changed: bool) -> Result<i32> {
    let cfg = cli.cfg();
    let mut out = std::io::stdout().lock();
    // Sorted by name as ansible-config sorts them, CONFIG_FILE among them.
    let mut lines: Vec<(&str, String)> = Vec::new();
    if let Some(f) = &cfg.file {
        lines.push(("CONFIG_FILE", format!("CONFIG_FILE() = {}", f.display())));
    }
    for (name, meaning) in known() {
        let (origin, value) = match (flag(cli, name), cfg.get(name)) {
            (Some((f, v)), _) => (format!("flag: {f}"), v),
            (None, Some(s)) => (s.origin.to_string(), s.value.to_string()),
            (None, None) if only_changed => continue,
            (None, None) => match default(cli, name) {
                Some(v) => ("default".to_string(), v),
                None => continue,
            },
        };
        if only_changed {
            lines.push((name, format!("{name}({origin}) = {value}")));
        } else {
            lines.push((name, format!("{name}({origin}) = {value}    # {meaning}")));
        }
    }
    lines.sort();
    for (_, line) in lines {
        writeln!(out, "{line}")?;
    }
    let unused = cfg.unused_lines();
    if !unused.is_empty() {
        writeln!(out, "\nnot used by copctl:")?;
        for line in unused {
            writeln!(out, "{line}")?;
        }
    }
    Ok(0)
}

/// The flag that sets `name` on this command line, and its value.
fn flag(cli: &Cli, name: &str) -> Option<(&'static str, String)> {
    let yes = |b: bool| b.then(|| "True".to_string());
    match name {
        "DEFAULT_HOST_LIST" if !cli.inventory.is_empty() => Some((
            "-i/--inventory",
            format!("[{}]", cli.inventory.iter().map(|p| format!("'{}'", p.display())).collect::<Vec<_>>().join(", ")),
        )),
        "DEFAULT_REMOTE_USER" => cli.user.clone().map(|u| ("-u/--user", u)),
        "DEFAULT_PRIVATE_KEY_FILE" => cli.private_key.as_ref().map(|k| ("--private-key", k.display().to_string())),
        "DEFAULT_ASK_PASS" => yes(cli.ask_pass).map(|v| ("-k/--ask-pass", v)),
        "CONNECTION_PASSWORD_FILE" => {
            cli.connection_password_file.as_ref().map(|f| ("--connection-password-file", f.display().to_string()))
        }
        "DEFAULT_FORKS" => cli.forks.map(|n| ("-f/--forks", n.to_string())),
        "HOST_KEY_CHECKING" => cli.host_key_checking.map(|p| {
            let v = if p == crate::transport::HostKeyPolicy::Off { "False" } else { "True" };
            ("--host-key-checking", v.to_string())
        }),
        "DEFAULT_TIMEOUT" => cli.connect_timeout.map(|t| ("-T/--connect-timeout", t.to_string())),
        "DEFAULT_ASK_VAULT_PASS" => yes(cli.ask_vault_pass).map(|v| ("-J/--ask-vault-pass", v)),
        "DEFAULT_BECOME" => yes(cli.r#become).map(|v| ("-b/--become", v)),
        "DEFAULT_BECOME_METHOD" => cli.become_method.map(|_| ("--become-method", "sudo".to_string())),
        "DEFAULT_BECOME_USER" => cli.become_user.clone().map(|u| ("--become-user", u)),
        "BECOME_PASSWORD_FILE" => {
            cli.become_password_file.as_ref().map(|f| ("--become-password-file", f.display().to_string()))
        }
        "DEFAULT_BECOME_ASK_PASS" => yes(cli.ask_become_pass).map(|v| ("-K/--ask-become-pass", v)),
        _ => None,
    }
}

/// copctl's value where nothing sets `name` (None: unset, the inventory or ssh_config decides).
fn default(cli: &Cli, name: &str) -> Option<String> {
    Some(match name {
        "DEFAULT_HOST_LIST" => format!("['{}']", super::DEFAULT_INVENTORY),
        "DEFAULT_FORKS" => cli.forks().to_string(),
        "DEFAULT_TIMEOUT" => cli.connect_timeout().to_string(),
        "HOST_KEY_CHECKING" => "True".into(),
        "DEFAULT_ASK_PASS"
        | "DEFAULT_ASK_VAULT_PASS"
        | "DEFAULT_BECOME"
        | "DEFAULT_BECOME_ASK_PASS"
        | "DEFAULT_VAULT_ID_MATCH" => "False".into(),
        "DEFAULT_BECOME_METHOD" => "sudo".into(),
        "DEFAULT_BECOME_USER" => "root".into(),
        "DEFAULT_VAULT_IDENTITY" => "default".into(),
        "DEFAULT_VAULT_IDENTITY_LIST" => "[]".into(),
        _ => return None,
    })
}
