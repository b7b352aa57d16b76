//! ansible.cfg and the `ANSIBLE_*` variables, for the settings copctl shares with Ansible: the
//! file is found where Ansible's `find_ini_config_file` finds it, read as Python's configparser
//! reads it for Ansible, each value typed and its relative paths resolved as Ansible's config
//! manager does, and every setting keeps where it came from (`file:line` or `env: NAME`). Which
//! setting wins over flags and inventory variables is for the commands (cli/) to apply; this
//! module only reads. A key copctl does not use is listed with its line, never an error.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result, Source};

/// How a setting's text is typed (Ansible's `ensure_type` names).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Path,
    PathList,
    /// Paths separated by `:` (Ansible's `pathspec`).
    PathSpec,
    Int,
    Bool,
    List,
}

/// One setting copctl uses: Ansible's config name, its ini entries and its variables (when
/// several are set, the last of each list wins, as in Ansible's config manager).
struct Def {
    name: &'static str,
    kind: Kind,
    ini: &'static [(&'static str, &'static str)],
    env: &'static [&'static str],
    /// What it does in copctl, for `copctl config`.
    meaning: &'static str,
}

const DEFS: &[Def] = &[
    Def {
        name: "DEFAULT_HOST_LIST",
        kind: Kind::PathList,
        ini: &[("defaults", "inventory")],
        env: &["ANSIBLE_INVENTORY"],
        meaning: "the inventory sources when no -i is given",
    },
    Def {
        name: "DEFAULT_REMOTE_USER",
        kind: Kind::Str,
        ini: &[("defaults", "remote_user")],
        env: &["ANSIBLE_REMOTE_USER"],
        meaning: "login user where the inventory sets no ansible_user (as -u)",
    },
    Def {
        name: "DEFAULT_REMOTE_PORT",
        kind: Kind::Int,
        ini: &[("defaults", "remote_port")],
        env: &["ANSIBLE_REMOTE_PORT"],
        meaning: "SSH port where the inventory sets no ansible_port",
    },
    Def {
        name: "DEFAULT_PRIVATE_KEY_FILE",
        kind: Kind::Path,
        ini: &[("defaults", "private_key_file")],
        env: &["ANSIBLE_PRIVATE_KEY_FILE"],
        meaning: "key where the inventory sets no ansible_ssh_private_key_file (as --private-key)",
    },
    Def {
        name: "DEFAULT_ASK_PASS",
        kind: Kind::Bool,
        ini: &[("defaults", "ask_pass")],
        env: &["ANSIBLE_ASK_PASS"],
        meaning: "ask for the SSH password (as -k)",
    },
    Def {
        name: "CONNECTION_PASSWORD_FILE",
        kind: Kind::Path,
        ini: &[("defaults", "connection_password_file")],
        env: &["ANSIBLE_CONNECTION_PASSWORD_FILE"],
        meaning: "SSH password file (as --connection-password-file)",
    },
    Def {
        name: "DEFAULT_FORKS",
        kind: Kind::Int,
        ini: &[("defaults", "forks")],
        env: &["ANSIBLE_FORKS"],
        meaning: "hosts worked on at once (as -f)",
    },
    Def {
        name: "HOST_KEY_CHECKING",
        kind: Kind::Bool,
        ini: &[("defaults", "host_key_checking"), ("ssh_connection", "host_key_checking")],
        env: &["ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_SSH_HOST_KEY_CHECKING"],
        meaning: "False: --host-key-checking off; True: copctl's accept-new",
    },
    Def {
        name: "DEFAULT_TIMEOUT",
        kind: Kind::Int,
        ini: &[("defaults", "timeout")],
        env: &["ANSIBLE_TIMEOUT"],
        meaning: "seconds to reach a host (as -T)",
    },
    Def {
        name: "SSH_COMMON_ARGS",
        kind: Kind::Str,
        ini: &[("ssh_connection", "ssh_common_args")],
        env: &["ANSIBLE_SSH_COMMON_ARGS"],
        meaning: "ProxyJump / -J where the inventory sets no ansible_ssh_common_args",
    },
    Def {
        name: "SSH_EXTRA_ARGS",
        kind: Kind::Str,
        ini: &[("ssh_connection", "ssh_extra_args")],
        env: &["ANSIBLE_SSH_EXTRA_ARGS"],
        meaning: "ProxyJump / -J where the inventory sets no ansible_ssh_extra_args",
    },
    Def {
        name: "DEFAULT_VAULT_PASSWORD_FILE",
        kind: Kind::Path,
        ini: &[("defaults", "vault_password_file")],
        env: &["ANSIBLE_VAULT_PASSWORD_FILE"],
        meaning: "vault password file or script, after --vault-password-file",
    },
    Def {
        name: "DEFAULT_VAULT_IDENTITY_LIST",
        kind: Kind::List,
        ini: &[("defaults", "vault_identity_list")],
        env: &["ANSIBLE_VAULT_IDENTITY_LIST"],
        meaning: "vault ids tried before --vault-id",
    },
    Def {
        name: "DEFAULT_VAULT_IDENTITY",
        kind: Kind::Str,
        ini: &[("defaults", "vault_identity")],
        env: &["ANSIBLE_VAULT_IDENTITY"],
        meaning: "the label of a vault password given without one",
    },
    Def {
        name: "DEFAULT_VAULT_ID_MATCH",
        kind: Kind::Bool,
        ini: &[("defaults", "vault_id_match")],
        env: &["ANSIBLE_VAULT_ID_MATCH"],
        meaning: "only the vault id named in a file may decrypt it",
    },
    Def {
        name: "DEFAULT_ASK_VAULT_PASS",
        kind: Kind::Bool,
        ini: &[("defaults", "ask_vault_pass")],
        env: &["ANSIBLE_ASK_VAULT_PASS"],
        meaning: "ask for the vault password (as -J)",
    },
    Def {
        name: "DEFAULT_BECOME",
        kind: Kind::Bool,
        ini: &[("privilege_escalation", "become")],
        env: &["ANSIBLE_BECOME"],
        meaning: "become where the inventory sets no ansible_become (as -b)",
    },
    Def {
        name: "DEFAULT_BECOME_METHOD",
        kind: Kind::Str,
        ini: &[("privilege_escalation", "become_method")],
        env: &["ANSIBLE_BECOME_METHOD"],
        meaning: "how to become: sudo, the one method copctl has",
    },
    Def {
        name: "DEFAULT_BECOME_USER",
        kind: Kind::Str,
        ini: &[("privilege_escalation", "become_user")],
        env: &["ANSIBLE_BECOME_USER"],
        meaning: "the user to become where the inventory sets none (as --become-user)",
    },
    Def {
        name: "BECOME_PASSWORD_FILE",
        kind: Kind::Path,
        ini: &[("defaults", "become_password_file")],
        env: &["ANSIBLE_BECOME_PASSWORD_FILE"],
        meaning: "become password file (as --become-password-file)",
    },
    Def {
        name: "DEFAULT_BECOME_ASK_PASS",
        kind: Kind::Bool,
        ini: &[("privilege_escalation", "become_ask_pass")],
        env: &["ANSIBLE_BECOME_ASK_PASS"],
        meaning: "ask for the become password (as -K)",
    },
    Def {
        name: "DEFAULT_ROLES_PATH",
        kind: Kind::PathSpec,
        ini: &[("defaults", "roles_path")],
        env: &["ANSIBLE_ROLES_PATH"],
        meaning: "where an Ansible playbook's roles are looked for, after roles/ beside it",
    },
    Def {
        name: "DEFAULT_FILTER_PLUGIN_PATH",
        kind: Kind::PathSpec,
        ini: &[("defaults", "filter_plugins")],
        env: &["ANSIBLE_FILTER_PLUGINS"],
        meaning: "directories of the site's Python filter plugins, after filter_plugins/ beside the playbook and in its roles",
    },
    Def {
        name: "DEFAULT_TEST_PLUGIN_PATH",
        kind: Kind::PathSpec,
        ini: &[("defaults", "test_plugins")],
        env: &["ANSIBLE_TEST_PLUGINS"],
        meaning: "directories of the site's Python test plugins, after test_plugins/ beside the playbook and in its roles",
    },
    Def {
        name: "DEFAULT_LOOKUP_PLUGIN_PATH",
        kind: Kind::PathSpec,
        ini: &[("defaults", "lookup_plugins")],
        env: &["ANSIBLE_LOOKUP_PLUGINS"],
        meaning: "directories of the site's Python lookup plugins, after lookup_plugins/ beside the playbook and in its roles",
    },
    Def {
        name: "DEFAULT_MODULE_PATH",
        kind: Kind::PathSpec,
        ini: &[("defaults", "library")],
        env: &["ANSIBLE_LIBRARY"],
        meaning: "directories of the site's own Ansible modules, after library/ beside the playbook and in its roles",
    },
    Def {
        name: "DEFAULT_MANAGED_STR",
        kind: Kind::Str,
        ini: &[("defaults", "ansible_managed")],
        env: &[],
        meaning: "the ansible_managed text of Ansible playbooks' templates ({file}, {host}, {uid}, strftime at the file's time)",
    },
    Def {
        name: "DEFAULT_LOG_PATH",
        kind: Kind::Path,
        ini: &[("defaults", "log_path")],
        env: &["ANSIBLE_LOG_PATH"],
        meaning: "the log of run, install and node commands where --log-file is not given (copctl's debug log)",
    },
];

/// Keys Ansible knows that copctl leaves alone on purpose, with why (listed under `-v`).
const NOT_MAPPED: &[(&str, &str, &str)] = &[
    (
        "ssh_connection",
        "ssh_args",
        "copctl speaks SSH itself (no ssh processes, no ControlMaster); put options in ~/.ssh/config",
    ),
    ("ssh_connection", "pipelining", "moot: copctl sends no modules, every step already runs without temporary files"),
    ("defaults", "pipelining", "moot: copctl sends no modules, every step already runs without temporary files"),
    ("connection", "pipelining", "moot: copctl sends no modules, every step already runs without temporary files"),
    ("ssh_connection", "control_path", "copctl keeps one SSH connection per host itself (no ControlMaster)"),
    ("ssh_connection", "control_path_dir", "copctl keeps one SSH connection per host itself (no ControlMaster)"),
    ("ssh_connection", "retries", "copctl retries refused, reset or timed-out connections 3 times within the timeout"),
    ("connection", "retries", "copctl retries refused, reset or timed-out connections 3 times within the timeout"),
    ("ssh_connection", "timeout", "Ansible's [defaults] timeout decides (it overrides this one), as in copctl"),
    ("ssh_connection", "transfer_method", "copctl writes files over its own channel with a sha256 check"),
    ("ssh_connection", "scp_if_ssh", "copctl writes files over its own channel with a sha256 check"),
    ("ssh_connection", "sftp_batch_mode", "copctl runs no sftp or scp programs"),
    ("ssh_connection", "ssh_executable", "copctl runs no ssh program"),
    ("ssh_connection", "sftp_executable", "copctl runs no sftp or scp programs"),
    ("ssh_connection", "scp_executable", "copctl runs no sftp or scp programs"),
    ("ssh_connection", "scp_extra_args", "copctl runs no sftp or scp programs"),
    ("ssh_connection", "sftp_extra_args", "copctl runs no sftp or scp programs"),
    ("ssh_connection", "usetty", "copctl runs scripts without a terminal"),
    ("defaults", "transport", "copctl connects with SSH (ansible_connection=local per host is honoured)"),
    ("defaults", "gathering", "copctl gathers no facts"),
    ("defaults", "interpreter_python", "copctl needs no Python on the hosts"),
];

/// Unused keys that change what Ansible reads or where it connects: said always, not only
/// under `-v`, since the run would differ from Ansible's.
const NOT_APPLIED: &[(&str, &str, &str)] = &[
    (
        "defaults",
        "inventory_ignore_extensions",
        "a directory source skips Ansible's default extensions only, so it may read files this setting would skip",
    ),
    (
        "inventory",
        "ignore_extensions",
        "a directory source skips Ansible's default extensions only, so it may read files this setting would skip",
    ),
    (
        "inventory",
        "ignore_patterns",
        "a directory source skips no file by pattern, so it may read files this setting would skip",
    ),
];

/// A setting's value, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Path(PathBuf),
    Paths(Vec<PathBuf>),
    Int(u64),
    Bool(bool),
    List(Vec<String>),
}

impl std::fmt::Display for Value {
    /// As `ansible-config dump` prints it (Python's `str`: `True`, `['a', 'b']`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |items: Vec<String>| {
            format!("[{}]", items.iter().map(|s| crate::text::python::py_repr(s)).collect::<Vec<_>>().join(", "))
        };
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Path(p) => write!(f, "{}", p.display()),
            Value::Paths(ps) => f.write_str(&list(ps.iter().map(|p| p.display().to_string()).collect())),
            Value::Int(n) => write!(f, "{n}"),
            Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Value::List(l) => f.write_str(&list(l.clone())),
        }
    }
}

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    File { path: PathBuf, line: usize },
    Env(&'static str),
}

impl std::fmt::Display for Origin {
    /// `ansible-config dump`'s origin, with the line added: `/site/ansible.cfg:4`, `env: NAME`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env(name) => write!(f, "env: {name}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Setting {
    pub name: &'static str,
    pub value: Value,
    pub origin: Origin,
    pub meaning: &'static str,
}

/// A key of the file copctl does not use.
#[derive(Debug, Clone, PartialEq)]
pub struct Unused {
    pub section: String,
    pub key: String,
    pub line: usize,
    /// Why, where copctl leaves an Ansible setting alone on purpose.
    pub why: Option<&'static str>,
}

/// The Ansible settings of one command: the file found (if any), the settings copctl uses with
/// their origins (the environment over the file), the keys it does not use, and warnings.
#[derive(Debug, Clone, Default)]
pub struct AnsibleCfg {
    pub file: Option<PathBuf>,
    pub settings: Vec<Setting>,
    pub unused: Vec<Unused>,
    pub warnings: Vec<String>,
}

/// What the search and the values depend on, so that tests need not change the process.
pub struct Env<'a> {
    pub var: &'a dyn Fn(&str) -> Option<String>,
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
}

/// The settings copctl reads, `(name, what it does in copctl)`, in Ansible's names.
pub fn known() -> impl Iterator<Item = (&'static str, &'static str)> {
    DEFS.iter().map(|d| (d.name, d.meaning))
}

impl AnsibleCfg {
    /// The settings of this process: its environment, working directory and home.
    pub fn load() -> Result<AnsibleCfg> {
        let var = |k: &str| std::env::var(k).ok();
        let env = Env {
            var: &var,
            cwd: std::env::current_dir().unwrap_or_default(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        };
        AnsibleCfg::load_with(&env)
    }

    pub fn load_with(env: &Env) -> Result<AnsibleCfg> {
        let mut cfg = AnsibleCfg::default();
        let (file, warning) = find(env);
        cfg.warnings.extend(warning);
        let entries = match &file {
            Some(f) => {
                let src = crate::error::read_source(f)?;
                let entries = parse_ini(&src)?;
                for e in &entries {
                    if !DEFS.iter().any(|d| d.ini.contains(&(e.section.as_str(), e.key.as_str()))) {
                        let why =
                            NOT_MAPPED.iter().find(|(s, k, _)| *s == e.section && *k == e.key).map(|(_, _, w)| *w);
                        let at = format!("{}:{}: [{}] {}", f.display(), e.line, e.section, e.key);
                        if let Some((_, _, what)) = NOT_APPLIED.iter().find(|(s, k, _)| *s == e.section && *k == e.key)
                        {
                            cfg.warnings.push(format!("{at} is not applied by copctl: {what}"));
                        }
                        let jump = ["ProxyJump", "ProxyCommand", "-J"].iter().any(|w| e.value.contains(w));
                        if e.section == "ssh_connection" && e.key == "ssh_args" && jump {
                            cfg.warnings.push(format!(
                                "{at} names a jump host and is not applied by copctl: set ProxyJump in ~/.ssh/config, \
                                 or [ssh_connection] ssh_common_args = -o ProxyJump=HOST"
                            ));
                        }
                        if let Some(typo) = misspelt(&e.section, &e.key, why.is_some()) {
                            cfg.warnings.push(format!("{at} is not a setting copctl reads ({typo})"));
                        }
                        cfg.unused.push(Unused { section: e.section.clone(), key: e.key.clone(), line: e.line, why });
                    }
                }
                Some((f.clone(), src, entries))
            }
            None => None,
        };
        for def in DEFS {
            let from_env = def
                .env
                .iter()
                .filter_map(|name| (env.var)(name).filter(|v| !v.is_empty()).map(|v| (*name, v)))
                .next_back();
            if let Some((name, text)) = from_env {
                let value = typed(def, &text, &env.cwd, env)
                    .map_err(|why| Error::with_help(format!("{name}={text}: {why}"), help(def)))?;
                cfg.settings.push(Setting { name: def.name, value, origin: Origin::Env(name), meaning: def.meaning });
                continue;
            }
            let Some((path, src, entries)) = &entries else { continue };
            let Some(e) = entries.iter().rev().find(|e| def.ini.contains(&(e.section.as_str(), e.key.as_str()))) else {
                continue;
            };
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let value = typed(def, &e.value, &base, env).map_err(|why| {
                src.error_at(
                    e.line,
                    1,
                    0,
                    format!("[{}] {} = {}: {why}", e.section, e.key, e.value),
                    "this setting",
                    Some(help(def).to_string()),
                )
            })?;
            if def.name == "DEFAULT_MANAGED_STR" {
                cfg.warnings.push(format!(
                    "{}:{}: [defaults] ansible_managed is deprecated by Ansible (removed in ansible-core 2.23): \
                     set the ansible_managed variable, or use any variable of your own in templates",
                    path.display(),
                    e.line
                ));
            }
            cfg.settings.push(Setting {
                name: def.name,
                value,
                origin: Origin::File { path: path.clone(), line: e.line },
                meaning: def.meaning,
            });
        }
        cfg.file = file;
        Ok(cfg)
    }

    pub fn get(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.name == name)
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    pub fn path(&self, name: &str) -> Option<&Path> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::Path(p)) => Some(p),
            _ => None,
        }
    }

    pub fn paths(&self, name: &str) -> Option<&[PathBuf]> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::Paths(p)) => Some(p),
            _ => None,
        }
    }

    pub fn int(&self, name: &str) -> Option<u64> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    pub fn list(&self, name: &str) -> Option<&[String]> {
        match self.get(name).map(|s| &s.value) {
            Some(Value::List(l)) => Some(l),
            _ => None,
        }
    }

    /// One line per key copctl does not use: `FILE:LINE: [section] key is not used by copctl: why`.
    pub fn unused_lines(&self) -> Vec<String> {
        let file = self.file.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
        self.unused
            .iter()
            .map(|u| {
                let why = u.why.map(|w| format!(": {w}")).unwrap_or_default();
                format!("{file}:{}: [{}] {} is not used by copctl{why}", u.line, u.section, u.key)
            })
            .collect()
    }
}

/// `did you mean: KEY?` for an unused key of `section` close to one copctl or Ansible knows
/// there (`forsk` → `forks`): a typo the run would otherwise ignore in silence.
fn misspelt(section: &str, key: &str, known: bool) -> Option<String> {
    let listed = NOT_MAPPED.iter().chain(NOT_APPLIED).map(|(s, k, _)| (*s, *k));
    let mut names: Vec<&str> = DEFS
        .iter()
        .flat_map(|d| d.ini.iter().copied())
        .chain(listed)
        .filter(|(s, _)| *s == section)
        .map(|(_, k)| k)
        .collect();
    if known || names.contains(&key) {
        return None;
    }
    names.dedup();
    let close = crate::text::closest::closest(key, &names, 3);
    (!close.is_empty()).then(|| format!("did you mean: {}?", close.join(", ")))
}

fn help(def: &Def) -> &'static str {
    match def.kind {
        Kind::Int => "write a whole number, e.g. 20",
        Kind::Bool => "write True or False (or yes/no, on/off, 1/0, y/n, t/f, as Ansible reads them)",
        _ => "fix the value",
    }
}

/// Ansible's `find_ini_config_file`: `ANSIBLE_CONFIG` (a directory means its ansible.cfg),
/// `./ansible.cfg` unless the working directory is world-writable (then Ansible's warning, unless
/// `ANSIBLE_CONFIG` named that file), `~/.ansible.cfg`, `/etc/ansible/ansible.cfg`: the first
/// readable one.
pub fn find(env: &Env) -> (Option<PathBuf>, Option<String>) {
    use std::os::unix::fs::PermissionsExt;
    let mut candidates = Vec::new();
    let from_env = (env.var)("ANSIBLE_CONFIG").map(|v| {
        let p = unfrack(&v, &env.cwd, env);
        if p.is_dir() { p.join("ansible.cfg") } else { p }
    });
    candidates.extend(from_env.clone());
    let cwd_cfg = env.cwd.join("ansible.cfg");
    let mut world_writable = false;
    match std::fs::metadata(&env.cwd) {
        Ok(m) if m.permissions().mode() & 0o002 != 0 => world_writable = cwd_cfg.exists(),
        Ok(_) => candidates.push(cwd_cfg),
        Err(_) => {}
    }
    if let Some(home) = &env.home {
        candidates.push(home.join(".ansible.cfg"));
    }
    candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
    let found = candidates.into_iter().find(|p| std::fs::File::open(p).is_ok() && p.exists());
    let warning = (world_writable && found != from_env).then(|| {
        format!(
            "Ansible is being run in a world writable directory ({}), ignoring it as an ansible.cfg source. \
             For more information see https://docs.ansible.com/ansible/devel/reference_appendices/config.html#cfg-in-world-writable-dir",
            env.cwd.display()
        )
    });
    (found, warning)
}

/// Ansible's `unfrackpath(follow=False)`: `{{CWD}}`, `$VAR`/`${VAR}` and `~` expanded, made
/// absolute against `base`, `.`/`..` folded without resolving links.
fn unfrack(text: &str, base: &Path, env: &Env) -> PathBuf {
    let text = text.replace("{{CWD}}", &env.cwd.display().to_string());
    let text = expand_vars(&text, env);
    let text = match text.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match &env.home {
            Some(h) => format!("{}{rest}", h.display()),
            None => text.clone(),
        },
        _ => text,
    };
    let joined = base.join(&text);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Python's `os.path.expandvars`: `$NAME` and `${NAME}` of set variables; others stay as written.
fn expand_vars(text: &str, env: &Env) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], end)
        };
        match (!name.is_empty()).then(|| (env.var)(name)).flatten() {
            Some(v) => {
                out.push_str(&v);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Ansible's `unquote`: one pair of matching outer quotes removed.
fn unquote(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() > 1 && b[0] == b[b.len() - 1] && matches!(b[0], b'"' | b'\'') && b[b.len() - 2] != b'\\' {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// The value of `text` as Ansible's `ensure_type` makes it; paths relative to `base` (the
/// file's directory, or the working directory for a variable). Booleans are stricter than
/// Ansible's (which takes anything unknown as False): an unknown word is an error.
fn typed(def: &Def, text: &str, base: &Path, env: &Env) -> std::result::Result<Value, String> {
    let text = text.trim();
    Ok(match def.kind {
        Kind::Str => Value::Str(unquote(text).to_string()),
        Kind::Path => Value::Path(unfrack(text, base, env)),
        Kind::PathList => Value::Paths(text.split(',').map(|p| unfrack(p.trim(), base, env)).collect()),
        Kind::PathSpec => Value::Paths(
            text.split(':').filter(|p| !p.trim().is_empty()).map(|p| unfrack(p.trim(), base, env)).collect(),
        ),
        Kind::List => Value::List(text.split(',').map(|x| unquote(x.trim()).to_string()).collect()),
        Kind::Int => {
            let n = text.parse::<u64>().ok().or_else(|| {
                text.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15).map(|f| f as u64)
            });
            match n {
                Some(n) => Value::Int(n),
                None => return Err("not a whole number".into()),
            }
        }
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" | "1.0" => Value::Bool(true),
            "n" | "no" | "off" | "0" | "false" | "f" | "0.0" => Value::Bool(false),
            _ => return Err("not a boolean".into()),
        },
    })
}

/// One `key = value` of the file, its key lower-cased as configparser does.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub section: String,
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// Python's `configparser.ConfigParser(inline_comment_prefixes=(';',))` as Ansible builds it:
/// `[section]` headers, `key = value` or `key: value` (keys lower-cased), whole-line `#` and
/// `;` comments, `;` after a space ends a value, indented lines continue the value above; a
/// key before any section, a line of neither kind and a repeated section or key (strict mode)
/// are errors. Keys of `[DEFAULT]` stand in every section that lacks them; no interpolation
/// (Ansible reads values raw).
pub fn parse_ini(src: &Source) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut sections: Vec<String> = Vec::new();
    let mut section: Option<String> = None;
    let mut open: Option<(usize, usize)> = None; // (entry index, indent) of a value that may continue
    for (i, raw) in src.text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        let cut = raw
            .char_indices()
            .find(|(j, c)| *c == ';' && *j > 0 && raw[..*j].ends_with(char::is_whitespace))
            .map_or(raw.len(), |(j, _)| j);
        let value = raw[..cut].trim();
        if value.is_empty() {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        if let Some((idx, level)) = open
            && indent > level
        {
            let e: &mut Entry = &mut entries[idx];
            e.value = if e.value.is_empty() { value.to_string() } else { format!("{}\n{value}", e.value) };
            continue;
        }
        if value.starts_with('[')
            && let Some(end) = value.rfind(']')
            && end > 1
        {
            let name = value[1..end].to_string();
            if sections.contains(&name) {
                return Err(src.error_at(
                    line,
                    indent + 1,
                    0,
                    format!("section '{name}' already exists"),
                    "repeated section",
                    Some("configparser (and so Ansible) refuses a repeated section: merge the two".into()),
                ));
            }
            sections.push(name.clone());
            section = Some(name);
            open = None;
            continue;
        }
        let Some(d) = value.find(['=', ':']) else {
            return Err(src.error_at(
                line,
                indent + 1,
                0,
                "expected `key = value` or a `[section]` header",
                "not a setting",
                Some(
                    "Ansible refuses this file too (configparser's parsing error); comment the line out with #".into(),
                ),
            ));
        };
        let key = value[..d].trim().to_lowercase();
        let Some(sect) = &section else {
            return Err(src.error_at(
                line,
                indent + 1,
                0,
                "a setting before any [section] header",
                "no section",
                Some("start the file with a section, e.g. [defaults]".into()),
            ));
        };
        if key.is_empty() {
            return Err(src.error_at(
                line,
                indent + 1,
                0,
                "expected `key = value` or a `[section]` header",
                "no key",
                Some("Ansible refuses this file too (configparser's parsing error)".into()),
            ));
        }
        if entries.iter().any(|e| e.section == *sect && e.key == key) {
            return Err(src.error_at(
                line,
                indent + 1,
                0,
                format!("option '{key}' in section '{sect}' already exists"),
                "repeated key",
                Some("configparser (and so Ansible) refuses a repeated key in a section: keep one".into()),
            ));
        }
        entries.push(Entry { section: sect.clone(), key, value: value[d + 1..].trim().to_string(), line });
        open = Some((entries.len() - 1, indent));
    }
    let defaults: Vec<Entry> = entries.iter().filter(|e| e.section == "DEFAULT").cloned().collect();
    for s in sections.iter().filter(|s| *s != "DEFAULT") {
        for d in &defaults {
            if !entries.iter().any(|e| e.section == *s && e.key == d.key) {
                entries.push(Entry { section: s.clone(), ..d.clone() });
            }
        }
    }
    entries.retain(|e| e.section != "DEFAULT");
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, String, String, usize)> {
        parse_ini(&Source::new("ansible.cfg", text))
            .unwrap()
            .into_iter()
            .map(|e| (e.section, e.key, e.value, e.line))
            .collect()
    }

    fn err(text: &str) -> String {
        parse_ini(&Source::new("ansible.cfg", text)).unwrap_err().to_string()
    }

    #[test]
    fn configparser_syntax() {
        let got = entries(
            "# comment\n[defaults]\nInventory = a, b ; a comment\nremote_user: deploy\n  ; indented comment\n\
             vault_identity_list = a@x,\n   b@y\nkey=v;not a comment\n[privilege_escalation]\nbecome=yes\n",
        );
        let want = [
            ("defaults", "inventory", "a, b", 3),
            ("defaults", "remote_user", "deploy", 4),
            ("defaults", "vault_identity_list", "a@x,\nb@y", 6),
            ("defaults", "key", "v;not a comment", 8),
            ("privilege_escalation", "become", "yes", 10),
        ];
        assert_eq!(got, want.map(|(s, k, v, l)| (s.to_string(), k.to_string(), v.to_string(), l)));
    }

    #[test]
    fn configparser_errors_name_the_line() {
        assert_eq!(
            err("[defaults]\nforks = 5\ngarbage\n"),
            "ansible.cfg:3:1: expected `key = value` or a `[section]` header"
        );
        assert_eq!(err("forks = 5\n"), "ansible.cfg:1:1: a setting before any [section] header");
        assert_eq!(err("[a]\nx=1\n[a]\n"), "ansible.cfg:3:1: section 'a' already exists");
        assert_eq!(err("[a]\nx=1\nX=2\n"), "ansible.cfg:3:1: option 'x' in section 'a' already exists");
    }

    #[test]
    fn paths_and_values_as_ansible_types_them() {
        let var = |k: &str| match k {
            "SITE" => Some("/srv/site".to_string()),
            _ => None,
        };
        let env = Env { var: &var, cwd: "/work".into(), home: Some("/home/op".into()) };
        let def = |n: &str| DEFS.iter().find(|d| d.name == n).unwrap();
        let base = Path::new("/etc/cop");
        assert_eq!(
            typed(def("DEFAULT_HOST_LIST"), "inv/hosts, ../b, ~/x, $SITE/y, {{CWD}}/z", base, &env).unwrap(),
            Value::Paths(vec![
                "/etc/cop/inv/hosts".into(),
                "/etc/b".into(),
                "/home/op/x".into(),
                "/srv/site/y".into(),
                "/work/z".into()
            ])
        );
        assert_eq!(typed(def("DEFAULT_FORKS"), "20", base, &env).unwrap(), Value::Int(20));
        assert_eq!(typed(def("DEFAULT_FORKS"), "abc", base, &env).unwrap_err(), "not a whole number");
        assert_eq!(typed(def("DEFAULT_BECOME"), "Yes", base, &env).unwrap(), Value::Bool(true));
        assert_eq!(typed(def("DEFAULT_BECOME"), "maybe", base, &env).unwrap_err(), "not a boolean");
        assert_eq!(typed(def("DEFAULT_REMOTE_USER"), "'deploy'", base, &env).unwrap(), Value::Str("deploy".into()));
        assert_eq!(
            typed(def("DEFAULT_VAULT_IDENTITY_LIST"), "a@x, 'b@y'", base, &env).unwrap().to_string(),
            "['a@x', 'b@y']"
        );
    }
}
