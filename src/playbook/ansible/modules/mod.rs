//! The module table: each Ansible module copctl runs, mapped to the native kind whose semantics
//! match (arguments, `changed` rule, registered result), with its arguments translated one by
//! one. An argument or value without a native equivalent is a problem reported where it is
//! written, never dropped; so is a module that is not in the table.
//!
//! One file per module family (jetporch's layout); this one holds the table, the dispatcher
//! and what every family shares (`Translated`, `Call`).

mod accounts;
mod args;
mod commands;
mod control;
mod edit;
mod facts;
mod files;
mod packages;
mod services;
mod sources;
mod system;
mod transfer;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use self::args::Args;
use super::Problems;
use super::node::Node;

pub(super) use self::facts::templated_candidates;

/// Modules copctl runs (short names; `ansible.builtin.X` and `ansible.legacy.X` too).
pub const SUPPORTED: &[&str] = &[
    "apt",
    "assert",
    "authorized_key",
    "blockinfile",
    "command",
    "copy",
    "debug",
    "dnf",
    "fail",
    "fetch",
    "file",
    "find",
    "get_url",
    "getent",
    "group",
    "hostname",
    "include_vars",
    "lineinfile",
    "meta",
    "modprobe",
    "mount",
    "package",
    "pam_limits",
    "pause",
    "ping",
    "raw",
    "reboot",
    "replace",
    "script",
    "service",
    "set_fact",
    "setup",
    "shell",
    "slurp",
    "stat",
    "sysctl",
    "systemd",
    "systemd_service",
    "template",
    "tempfile",
    "unarchive",
    "user",
    "wait_for",
    "wait_for_connection",
    "yum",
];

/// Ansible modules copctl knows of but does not run yet, with why where it is not obvious.
pub const NOT_YET: &[(&str, &str)] = &[
    ("uri", ""),
    ("git", ""),
    ("pip", ""),
    ("cron", ""),
    ("add_host", ""),
    ("group_by", ""),
    ("apt_key", ""),
    ("apt_repository", ""),
    ("yum_repository", ""),
    ("rpm_key", ""),
    ("known_hosts", ""),
    ("service_facts", ""),
    ("package_facts", ""),
    ("archive", ""),
    ("assemble", ""),
    ("debconf", ""),
    ("async_status", ""),
    ("iptables", ""),
    ("selinux", ""),
    ("seboolean", ""),
    ("firewalld", ""),
    ("ufw", ""),
    ("timezone", ""),
];

/// What a task's module becomes: a native kind with its arguments, and step fields the module's
/// arguments set (`chdir`, `creates`, ...). `None` kind: the task does nothing (`meta: noop`).
pub struct Translated {
    pub kind: Option<&'static str>,
    pub args: Value,
    pub fields: Map<String, Value>,
    /// A problem Ansible's module reports when the task runs (a required argument missing):
    /// this message, and the plan-time problem for a task that does not tolerate failing.
    pub fails: Option<(String, String)>,
}

impl Translated {
    /// The native kind `kind` with its arguments: no step fields, nothing failing when it runs.
    fn native(kind: &'static str, args: Map<String, Value>) -> Option<Self> {
        Some(Translated { kind: Some(kind), args: Value::Object(args), fields: Map::new(), fails: None })
    }
}

/// A site's own module (`library/NAME.py` at `path`): its arguments as the task gives them
/// (a mapping, `k=v` words, `args:`), templates kept for the run; words that are not `k=v` are
/// its `_raw_params`, as Ansible gives them.
pub fn library(p: &mut Problems, name: &str, path: &Path, node: &Node, extra: Option<&Node>) -> Option<Translated> {
    let a = Args::new(p, name, node, extra, None);
    let mut args = Map::new();
    for item in &a.items {
        args.insert(item.name.clone(), item.value.clone());
    }
    if let Some((raw, ..)) = &a.raw {
        args.insert("_raw_params".into(), json!(raw));
    }
    let short = short_name(name).unwrap_or(name);
    Some(Translated {
        kind: Some("python_module"),
        args: json!({"module": short, "path": std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string(), "args": args}),
        fields: Map::new(),
        fails: None,
    })
}

/// The short name of a module key (`ansible.builtin.copy` → `copy`), if it is one copctl may
/// know; `None` for another collection's module.
pub fn short_name(key: &str) -> Option<&str> {
    if let Some(s) = key.strip_prefix("ansible.builtin.").or_else(|| key.strip_prefix("ansible.legacy.")) {
        return Some(s);
    }
    // Modules ansible-core routes to collections (its runtime.yml): copctl runs them itself.
    match key {
        "ansible.posix.authorized_key" => return Some("authorized_key"),
        "ansible.posix.sysctl" => return Some("sysctl"),
        "ansible.posix.mount" => return Some("mount"),
        "community.general.modprobe" => return Some("modprobe"),
        "community.general.pam_limits" => return Some("pam_limits"),
        _ => {}
    }
    if key.contains('.') { None } else { Some(key) }
}

/// The command's vault secrets, for an `include_vars` file that is vault-encrypted, and the
/// names such files set (secret variables from then on).
pub struct Vaulted<'a> {
    pub vault: Option<&'a std::sync::Arc<crate::vault::Vault>>,
    pub names: &'a mut Vec<String>,
}

/// A task's module as the family translating it reads it: its short name, its arguments (and
/// `args:`), and where its sources are found (the playbook's directory last).
#[derive(Clone, Copy)]
struct Call<'a> {
    name: &'a str,
    node: &'a Node,
    extra: Option<&'a Node>,
    dirs: &'a [PathBuf],
}

impl Call<'_> {
    /// The playbook's directory (`.` when none is known).
    fn dir(&self) -> &Path {
        self.dirs.last().map(PathBuf::as_path).unwrap_or(Path::new("."))
    }
}

/// Translates the module `name` (a short name of `SUPPORTED`) with its arguments `node` (and
/// `args:`); `dirs`: where copy and template sources are found, the playbook's directory last.
pub fn translate(
    p: &mut Problems,
    name: &str,
    node: &Node,
    extra: Option<&Node>,
    dirs: &[PathBuf],
    vaulted: Vaulted<'_>,
) -> Option<Translated> {
    let m = Call { name, node, extra, dirs };
    match name {
        "command" | "shell" => commands::command(p, m),
        "script" => commands::script(p, m),
        "raw" => commands::raw(p, m),
        "copy" | "template" => transfer::copy(p, m),
        "fetch" => transfer::fetch(p, m),
        "unarchive" => transfer::unarchive(p, m),
        "get_url" => transfer::get_url(p, m),
        "file" => files::file(p, m),
        "stat" => files::stat(p, m),
        "find" => files::find(p, m),
        "slurp" => files::slurp(p, m),
        "tempfile" => files::tempfile(p, m),
        "lineinfile" | "blockinfile" => edit::line_or_block(p, m),
        "replace" => edit::replace(p, m),
        "package" | "apt" | "dnf" | "yum" => packages::package(p, m),
        "service" | "systemd" | "systemd_service" => services::service(p, m),
        "sysctl" => system::sysctl(p, m),
        "modprobe" => system::modprobe(p, m),
        "hostname" => system::hostname(p, m),
        "mount" => system::mount(p, m),
        "pam_limits" => system::pam_limits(p, m),
        "reboot" => system::reboot(p, m),
        "user" => accounts::user(p, m),
        "group" => accounts::group(p, m),
        "authorized_key" => accounts::authorized_key(p, m),
        "getent" => accounts::getent(p, m),
        "set_fact" => facts::set_fact(p, m),
        "setup" => facts::setup(p, m),
        "include_vars" => facts::include_vars(p, m, vaulted),
        "debug" => control::debug(p, m),
        "assert" | "fail" => control::assert(p, m),
        "meta" => control::meta(p, m),
        "pause" => control::pause(p, m),
        "ping" => control::ping(p, m),
        "wait_for" => control::wait_for(p, m),
        "wait_for_connection" => control::wait_for_connection(p, m),
        _ => unreachable!("not in SUPPORTED: {name}"),
    }
}
