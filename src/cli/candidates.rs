//! What TAB offers for an argument (clap_complete's `ArgValueCompleter`s in args.rs): the site's
//! playbook names, and its inventory's groups and hosts. Read when TAB is pressed; nothing here
//! knows the command line's own definitions.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap_complete::engine::CompletionCandidate;

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
    let source = crate::playbook::PlaybookSource { override_dir: dir, inventory: None, vault: None };
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
