//! How to reach a host: the connection parameters Ansible users set in the inventory
//! (`ansible_host`, `ansible_port`, `ansible_user`, `ansible_ssh_private_key_file`,
//! `ansible_connection`, `ansible_become*`, `ansible_ssh_common_args` with ProxyJump), completed
//! from the user's `~/.ssh/config` (HostName, User, Port, IdentityFile, ProxyJump, and for host keys
//! UserKnownHostsFile, GlobalKnownHostsFile, HashKnownHosts).

use std::path::{Path, PathBuf};

use serde_json::Value;
use ssh2_config::{ParseRule, SshConfig};

use super::known_hosts::HostKeyFiles;
use crate::inventory::{Inventory, Vars};
use crate::secret::Secret;

#[derive(Debug, Clone, PartialEq)]
pub enum ConnectionKind {
    Ssh,
    Local,
}

#[derive(Debug, Clone)]
pub struct Become {
    pub user: String,
    pub password: Option<Secret>,
    /// `ansible_become_method`: `su` when it says so, else sudo.
    pub su: bool,
}

/// One SSH hop (a jump host or the target itself).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The name the host is known by (inventory name or ssh_config alias).
    pub name: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    pub key_files: Vec<PathBuf>,
    /// known_hosts files and hashing from ssh_config.
    pub known_hosts: HostKeyFiles,
}

#[derive(Debug, Clone)]
pub struct HostSpec {
    pub name: String,
    pub kind: ConnectionKind,
    pub endpoint: Endpoint,
    /// Jump hosts, outermost first.
    pub jumps: Vec<Endpoint>,
    pub r#become: Option<Become>,
    /// How the host becomes another user when a task or play says `become: true` (its
    /// `ansible_become_user`, password and method), whether or not it becomes by default.
    pub become_settings: Become,
    /// The inventory sets `ansible_become` for the host: a play's or task's `become` keyword
    /// does not change it (Ansible's variables win over keywords).
    pub become_fixed: bool,
    /// The inventory sets `ansible_become_method` for the host: a `become_method` keyword does
    /// not change it.
    pub method_fixed: bool,
    /// Login password (only `ssh-copy-id` and `ansible_password` use one).
    pub password: Option<Secret>,
}

/// The user's ssh_config, read once per run.
#[derive(Debug, Default)]
pub struct SshConfigFile {
    config: Option<SshConfig>,
}

impl SshConfigFile {
    pub fn load(path: Option<&Path>) -> Self {
        let path = path.map(Path::to_path_buf).unwrap_or_else(|| super::known_hosts::home().join(".ssh/config"));
        let Ok(f) = std::fs::File::open(&path) else { return SshConfigFile::default() };
        let mut r = std::io::BufReader::new(f);
        // ssh2-config does not interpret the known_hosts keywords; it keeps them as "unsupported".
        let rules = ParseRule::ALLOW_UNKNOWN_FIELDS | ParseRule::ALLOW_UNSUPPORTED_FIELDS;
        let config = SshConfig::default().parse(&mut r, rules).ok();
        SshConfigFile { config }
    }

    fn query(&self, host: &str) -> Option<ssh2_config::HostParams> {
        self.config.as_ref().map(|c| c.query(host))
    }
}

/// UserKnownHostsFile, GlobalKnownHostsFile and HashKnownHosts, the first value found winning
/// (ssh_config's rule), from the params of each name the host goes by, in order.
fn host_key_files(params: &[&Option<ssh2_config::HostParams>]) -> HostKeyFiles {
    let field = |name: &str| params.iter().find_map(|p| p.as_ref()?.unsupported_fields.get(name).cloned());
    let files = |args: Vec<String>| {
        if args.len() == 1 && args[0].eq_ignore_ascii_case("none") {
            Vec::new()
        } else {
            args.iter().map(|a| expand_home(a)).collect()
        }
    };
    HostKeyFiles {
        user: field("userknownhostsfile").map(files),
        global: field("globalknownhostsfile").map(files),
        hash: field("hashknownhosts").and_then(|a| a.first().map(|v| v.eq_ignore_ascii_case("yes"))),
    }
}

fn var_str(vars: &Vars, key: &str) -> Option<String> {
    match vars.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn var_bool(vars: &Vars, key: &str) -> bool {
    match vars.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.to_ascii_lowercase().as_str(), "true" | "yes" | "1" | "on"),
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        _ => false,
    }
}

fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/").or_else(|| p.strip_prefix("%d/")) {
        Some(rest) => super::known_hosts::home().join(rest),
        None => PathBuf::from(p),
    }
}

/// `[user@]host[:port]`, as in ProxyJump.
fn parse_jump(s: &str, default_user: &str, cfg: &SshConfigFile) -> Endpoint {
    let (user, rest) = match s.rsplit_once('@') {
        Some((u, r)) => (Some(u.to_string()), r),
        None => (None, s),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_string(), p.parse::<u16>().ok()),
        _ => (rest.to_string(), None),
    };
    let params = cfg.query(&host);
    let address = params.as_ref().and_then(|p| p.host_name.clone()).unwrap_or_else(|| host.clone());
    Endpoint {
        name: host.clone(),
        address,
        port: port.or_else(|| params.as_ref().and_then(|p| p.port)).unwrap_or(22),
        user: user.or_else(|| params.as_ref().and_then(|p| p.user.clone())).unwrap_or_else(|| default_user.to_string()),
        known_hosts: host_key_files(&[&params]),
        key_files: params.and_then(|p| p.identity_file).unwrap_or_default(),
    }
}

/// ProxyJump from `ansible_ssh_common_args` / `ansible_ssh_extra_args` (`-o ProxyJump=a,b` or
/// `-J a,b`).
fn proxy_jump_arg(args: &str) -> Option<String> {
    let words = shlex::split(args)?;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "-J" {
            return it.next().cloned();
        }
        if let Some(v) = w.strip_prefix("-J") {
            return Some(v.to_string());
        }
        let opt = if w == "-o" { it.next().map(String::as_str) } else { w.strip_prefix("-o") };
        if let Some(o) = opt {
            let o = o.trim();
            if let Some((k, v)) = o.split_once(['=', ' '])
                && k.eq_ignore_ascii_case("ProxyJump")
            {
                return Some(v.trim().to_string());
            }
        }
    }
    None
}

/// Connection variables that would otherwise be read as something else than was written: a
/// become method or connection plugin copctl does not have, a port that is not one. Ansible
/// would do what they say; copctl must refuse them rather than log in or become another way.
pub fn check_connection_vars(name: &str, vars: &Vars) -> Result<(), String> {
    if let Some(m) = var_str(vars, "ansible_become_method") {
        if !matches!(m.as_str(), "sudo" | "su" | "ansible.builtin.sudo" | "ansible.builtin.su") {
            return Err(format!(
                "{name}: ansible_become_method={m} is not supported: copctl becomes with sudo or su (set ansible_become_method, or log in as the user to become)"
            ));
        }
        if m.ends_with("su")
            && matches!(var_str(vars, "ansible_connection").as_deref(), Some("local" | "ansible.builtin.local"))
        {
            return Err(format!(
                "{name}: ansible_become_method=su with ansible_connection=local is not supported: use sudo"
            ));
        }
    }
    if let Some(c) = var_str(vars, "ansible_connection")
        && !matches!(
            c.as_str(),
            "ssh" | "smart" | "paramiko" | "local" | "ansible.builtin.ssh" | "ansible.builtin.local"
        )
    {
        return Err(format!("{name}: ansible_connection={c} is not supported: copctl connects with ssh or local"));
    }
    if let Some(p) = var_str(vars, "ansible_port").or_else(|| var_str(vars, "ansible_ssh_port"))
        && !p.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return Err(format!("{name}: ansible_port={p} is not a port number (1-65535)"));
    }
    Ok(())
}

impl HostSpec {
    /// The spec of an inventory host from its merged variables.
    pub fn from_vars(name: &str, vars: &Vars, cfg: &SshConfigFile) -> HostSpec {
        let params = cfg.query(var_str(vars, "ansible_host").as_deref().unwrap_or(name));
        let alias_params = cfg.query(name);
        let pick = |f: &dyn Fn(&ssh2_config::HostParams) -> Option<String>| {
            params.as_ref().and_then(f).or_else(|| alias_params.as_ref().and_then(f))
        };
        let address = var_str(vars, "ansible_host")
            .or_else(|| pick(&|p| p.host_name.clone()))
            .unwrap_or_else(|| name.to_string());
        let port = var_str(vars, "ansible_port")
            .and_then(|p| p.parse().ok())
            .or_else(|| params.as_ref().and_then(|p| p.port).or(alias_params.as_ref().and_then(|p| p.port)))
            .unwrap_or(22);
        let user = var_str(vars, "ansible_user")
            .or_else(|| var_str(vars, "ansible_ssh_user"))
            .or_else(|| pick(&|p| p.user.clone()))
            .unwrap_or_else(|| std::env::var("USER").unwrap_or_else(|_| "root".into()));
        let mut key_files: Vec<PathBuf> = Vec::new();
        if let Some(k) =
            var_str(vars, "ansible_ssh_private_key_file").or_else(|| var_str(vars, "ansible_private_key_file"))
        {
            key_files.push(expand_home(&k));
        }
        for p in [&params, &alias_params].into_iter().flatten() {
            for k in p.identity_file.clone().unwrap_or_default() {
                if !key_files.contains(&k) {
                    key_files.push(k);
                }
            }
        }
        let jump_text = var_str(vars, "ansible_ssh_common_args")
            .and_then(|a| proxy_jump_arg(&a))
            .or_else(|| var_str(vars, "ansible_ssh_extra_args").and_then(|a| proxy_jump_arg(&a)))
            .or_else(|| {
                [&params, &alias_params].into_iter().flatten().find_map(|p| p.proxy_jump.clone().map(|v| v.join(",")))
            });
        let jumps = jump_text
            .filter(|j| !j.eq_ignore_ascii_case("none"))
            .map(|j| j.split(',').map(|s| parse_jump(s.trim(), &user, cfg)).collect())
            .unwrap_or_default();
        let kind = match var_str(vars, "ansible_connection").as_deref() {
            Some("local" | "ansible.builtin.local") => ConnectionKind::Local,
            _ => ConnectionKind::Ssh,
        };
        let become_settings = Become {
            user: var_str(vars, "ansible_become_user").unwrap_or_else(|| "root".into()),
            password: var_str(vars, "ansible_become_password")
                .or_else(|| var_str(vars, "ansible_become_pass"))
                .map(Secret::new),
            su: var_str(vars, "ansible_become_method").is_some_and(|m| m == "su" || m == "ansible.builtin.su"),
        };
        let r#become = var_bool(vars, "ansible_become").then(|| become_settings.clone());
        let password = var_str(vars, "ansible_password").or_else(|| var_str(vars, "ansible_ssh_pass")).map(Secret::new);
        HostSpec {
            name: name.to_string(),
            kind,
            endpoint: Endpoint {
                name: name.to_string(),
                address,
                port,
                user,
                key_files,
                known_hosts: host_key_files(&[&params, &alias_params]),
            },
            jumps,
            r#become,
            become_settings,
            become_fixed: false,
            method_fixed: false,
            password,
        }
    }

    pub fn from_inventory(inv: &Inventory, name: &str, cfg: &SshConfigFile) -> HostSpec {
        HostSpec::from_vars(name, &inv.host_vars(name), cfg)
    }

    /// As `from_inventory`, with the command line's connection options (`-u`, `--private-key`,
    /// `-b`, the passwords) under the host's variables: an inventory's `ansible_user` wins over
    /// `-u`, as in Ansible, and `-u` over ssh_config.
    pub fn from_inventory_with(inv: &Inventory, name: &str, cfg: &SshConfigFile, defaults: &Vars) -> HostSpec {
        let mut vars = defaults.clone();
        let own = inv.host_vars(name);
        let fixed = own.contains_key("ansible_become");
        let method_fixed = own.contains_key("ansible_become_method");
        vars.extend(own);
        HostSpec { become_fixed: fixed, method_fixed, ..HostSpec::from_vars(name, &vars, cfg) }
    }

    /// `user@address:port`, for messages.
    pub fn target(&self) -> String {
        format!("{}@{}:{}", self.endpoint.user, self.endpoint.address, self.endpoint.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_ansible_connection_variables() {
        let mut v = Vars::new();
        v.insert("ansible_host".into(), json!("10.1.1.5"));
        v.insert("ansible_port".into(), json!(2222));
        v.insert("ansible_user".into(), json!("cop"));
        v.insert("ansible_ssh_private_key_file".into(), json!("/keys/id"));
        v.insert(
            "ansible_ssh_common_args".into(),
            json!("-o StrictHostKeyChecking=no -o ProxyJump=admin@bastion:2200"),
        );
        v.insert("ansible_become".into(), json!(true));
        v.insert("ansible_become_password".into(), json!("pw"));
        let s = HostSpec::from_vars("n1", &v, &SshConfigFile::default());
        assert_eq!(s.endpoint.address, "10.1.1.5");
        assert_eq!(s.endpoint.port, 2222);
        assert_eq!(s.endpoint.user, "cop");
        assert_eq!(s.endpoint.key_files, [PathBuf::from("/keys/id")]);
        assert_eq!(s.jumps.len(), 1);
        assert_eq!(
            (s.jumps[0].user.as_str(), s.jumps[0].address.as_str(), s.jumps[0].port),
            ("admin", "bastion", 2200)
        );
        let b = s.r#become.unwrap();
        assert_eq!(b.user, "root");
        assert_eq!(format!("{:?}", b.password), "Some(********)");
        assert_eq!(proxy_jump_arg("-J j1,j2").as_deref(), Some("j1,j2"));
    }
}
