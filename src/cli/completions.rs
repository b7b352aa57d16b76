//! `copctl completions SHELL` and `copctl man`: shell completion and the man page, both made from
//! the clap definitions in args.rs. Completion is clap_complete's environment-driven kind: the
//! shell calls copctl back (`COPCTL_COMPLETE=bash copctl -- ...`), so playbook names, hosts and
//! groups are the site's own, read when the user presses TAB.

use std::ffi::OsStr;
use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};

use super::args::{Cli, Shell};
use crate::error::Result;

/// The variable that turns a copctl call into a completion request.
pub const COMPLETE_VAR: &str = "COPCTL_COMPLETE";

/// Answers a completion request, if this process is one (then it exits).
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command).var(COMPLETE_VAR).complete();
}

/// The script a shell sources to complete copctl (e.g. `source <(copctl completions bash)`).
pub fn completions(shell: Shell) -> Result<i32> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
        Shell::Elvish => &Elvish,
        Shell::Powershell => &Powershell,
    };
    let mut out = std::io::stdout().lock();
    completer.write_registration(COMPLETE_VAR, "copctl", "copctl", "copctl", &mut out)?;
    out.flush()?;
    Ok(0)
}

/// The man page (roff), generated from the same definitions as `--help`.
pub fn man() -> Result<i32> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    Ok(0)
}

/// The inventory a completion reads: `COPCTL_INVENTORY` or the default (the line being completed
/// is not parsed yet, so an `-i` on it is not seen).
fn inventory_path() -> PathBuf {
    std::env::var_os("COPCTL_INVENTORY").map(PathBuf::from).unwrap_or_else(|| "inventory/inventory.ini".into())
}

/// Playbook names: the built-in ones and those in playbooks/ beside the inventory.
pub fn playbook_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let inv = inventory_path();
    // As the site finds them: playbooks/ in the inventory's directory.
    let dir = Some(inv.parent().unwrap_or(std::path::Path::new(".")).join("playbooks")).filter(|d| d.is_dir());
    let source = crate::playbook::PlaybookSource { override_dir: dir };
    let current = current.to_string_lossy();
    source.names().into_iter().filter(|n| n.starts_with(current.as_ref())).map(CompletionCandidate::new).collect()
}

/// Group and host names of the inventory, for patterns and `--limit`; nothing when it cannot be
/// read (completion never prints an error into the user's prompt).
pub fn host_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let Ok(inv) = crate::inventory::Inventory::load(&inventory_path()) else { return Vec::new() };
    let current = current.to_string_lossy();
    // The last entry of a list (`web,db`) is the one being typed.
    let (head, last) = match current.rfind([',', ':']) {
        Some(i) => current.split_at(i + 1),
        None => ("", current.as_ref()),
    };
    let (prefix, last) = match last.strip_prefix(['!', '&']) {
        Some(rest) => (&last[..1], rest),
        None => ("", last),
    };
    inv.groups
        .keys()
        .chain(inv.hosts.keys())
        .filter(|n| n.starts_with(last))
        .map(|n| CompletionCandidate::new(format!("{head}{prefix}{n}")))
        .collect()
}
