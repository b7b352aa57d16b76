//! `group_vars/` and `host_vars/` beside an inventory source, as Ansible's `host_group_vars`
//! vars plugin and `DataLoader.find_vars_files` read them: for a group or host NAME, the first
//! of `NAME`, `NAME.yml`, `NAME.yaml`, `NAME.json` that exists (`YAML_FILENAME_EXTENSIONS`); a
//! directory `NAME/` gives its files in sorted order, recursively (subdirectories without an
//! extension), skipping hidden names, `~` backups and extensions other than those. Later files
//! replace earlier ones key by key (Ansible's default `hash_behaviour: replace`).
//!
//! Ansible ignores without a word what no group or host reads (`group_vars/wokers.yml`); copctl
//! says so, with the names meant.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use super::file::{extension, kind};
use super::{Inventory, Vars};
use crate::error::{Error, Result};
use crate::vault::SecretSource;

/// What Ansible tries after `NAME`, in order.
const EXTS: [&str; 3] = [".yml", ".yaml", ".json"];

/// The variables of one group or host from one directory, with the files they came from.
#[derive(Debug, Clone, Default)]
pub struct VarLayer {
    pub vars: Vars,
    /// The files read, in order, as shown (`inventory/group_vars/web/10-net.yml`).
    pub files: Vec<String>,
    /// For each variable, the file (index in `files`) that set it last.
    origin: HashMap<String, usize>,
}

impl VarLayer {
    /// The file that set `var`.
    pub fn file_of(&self, var: &str) -> &str {
        self.origin.get(var).and_then(|i| self.files.get(*i)).map(String::as_str).unwrap_or("")
    }
}

/// The `group_vars/` and `host_vars/` of one directory (an inventory source's `basedir`).
#[derive(Debug, Clone, Default)]
pub struct VarDir {
    /// The directory, as the user named it.
    pub base: PathBuf,
    pub groups: IndexMap<String, VarLayer>,
    pub hosts: IndexMap<String, VarLayer>,
    /// Variables of vault-encrypted files and inline `!vault` values: secrets.
    pub secret_vars: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Group,
    Host,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Group => "group_vars",
            Kind::Host => "host_vars",
        }
    }
    fn noun(self) -> &'static str {
        match self {
            Kind::Group => "group",
            Kind::Host => "host",
        }
    }
}

/// Reads the files of every group and host of `inv` under `base`; warns about the others.
pub fn load(base: &Path, inv: &Inventory, warnings: &mut Vec<String>, secrets: &dyn SecretSource) -> Result<VarDir> {
    let mut out = VarDir { base: base.to_path_buf(), ..VarDir::default() };
    for kind in [Kind::Group, Kind::Host] {
        let names: Vec<&String> = match kind {
            Kind::Group => inv.groups.keys().collect(),
            Kind::Host => inv.hosts.keys().collect(),
        };
        let layers = read_kind(base, kind, &names, inv, warnings, secrets, &mut out.secret_vars)?;
        match kind {
            Kind::Group => {
                for (g, l) in &layers {
                    if l.vars.contains_key("ansible_group_priority") {
                        warnings.push(format!(
                            "{} sets ansible_group_priority, which Ansible reads in inventory files only: here it is \
                             an ordinary variable, and group {g} keeps priority {}; set it in the inventory ([{g}:vars] \
                             or vars: of the group)",
                            l.file_of("ansible_group_priority"),
                            inv.groups[g].priority
                        ));
                    }
                }
                out.groups = layers;
            }
            Kind::Host => out.hosts = layers,
        }
    }
    Ok(out)
}

fn read_kind(
    base: &Path,
    kind: Kind,
    names: &[&String],
    inv: &Inventory,
    warnings: &mut Vec<String>,
    secrets: &dyn SecretSource,
    secret_vars: &mut Vec<String>,
) -> Result<IndexMap<String, VarLayer>> {
    let dir = base.join(kind.dir());
    let mut out = IndexMap::new();
    let Ok(meta) = std::fs::metadata(&dir) else { return Ok(out) };
    if !meta.is_dir() {
        warnings.push(format!("{} is not a directory: its variables are not read (as in Ansible)", dir.display()));
        return Ok(out);
    }
    let mut entries: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::plain(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    entries.sort();
    let entries: IndexSet<String> = entries.into_iter().collect();
    let mut claimed: HashMap<&str, String> = HashMap::new();
    for name in names {
        // Ansible skips names that start with a path separator ('chroot' style hosts).
        if name.is_empty() || name.starts_with('/') {
            continue;
        }
        let mut found: Option<(String, PathBuf)> = None;
        for ext in std::iter::once("").chain(EXTS) {
            let candidate = format!("{name}{ext}");
            let path = dir.join(&candidate);
            let listed = entries.contains(&candidate) || name.contains('/');
            if listed && path.exists() {
                found = Some((candidate, path));
                break;
            }
        }
        let Some((candidate, path)) = found else { continue };
        let files = if path.is_dir() { dir_files(&path, warnings) } else { vec![path] };
        claimed.insert(name.as_str(), candidate.clone());
        let mut layer = VarLayer::default();
        for f in files {
            read_file(&f, &mut layer, secrets, secret_vars)?;
        }
        out.insert(name.to_string(), layer);
    }
    let taken: IndexSet<&String> = claimed.values().collect();
    for entry in &entries {
        if taken.contains(entry) || entry.starts_with('.') || entry.ends_with('~') {
            continue;
        }
        warnings.push(unread(&dir, entry, kind, &claimed, inv));
    }
    Ok(out)
}

/// Why `dir/entry` is read for no group or host, and what was probably meant.
fn unread(dir: &Path, entry: &str, kind: Kind, claimed: &HashMap<&str, String>, inv: &Inventory) -> String {
    let shown = dir.join(entry).display().to_string();
    let ext = extension(entry);
    let stem = if EXTS.contains(&ext) { &entry[..entry.len() - ext.len()] } else { entry };
    if !ext.is_empty() && !EXTS.contains(&ext) {
        return format!(
            "{shown} is not read: Ansible reads {}/NAME, NAME.yml, NAME.yaml or NAME.json (or a directory NAME/) \
             for a {} NAME",
            kind.dir(),
            kind.noun()
        );
    }
    if let Some(read) = claimed.get(stem) {
        return format!(
            "{shown} is not read: Ansible reads the first of {stem}, {stem}.yml, {stem}.yaml, {stem}.json that exists, \
             here {}",
            dir.join(read).display()
        );
    }
    let (same, other) = match kind {
        Kind::Group => (inv.groups.keys().collect::<Vec<_>>(), inv.hosts.contains_key(stem)),
        Kind::Host => (inv.hosts.keys().collect::<Vec<_>>(), inv.groups.contains_key(stem)),
    };
    let mut msg = format!("{shown} is not read: the inventory has no {} '{stem}'", kind.noun());
    if other {
        let (is, goes) = match kind {
            Kind::Group => ("host", "host_vars"),
            Kind::Host => ("group", "group_vars"),
        };
        msg.push_str(&format!("; {stem} is a {is}, whose variables go in {goes}/"));
        return msg;
    }
    let close = crate::text::closest::closest(stem, same, 3);
    if !close.is_empty() {
        msg.push_str(&format!(" (did you mean: {}?)", close.join(", ")));
    }
    msg
}

/// `_get_dir_vars_files`: the files of a `NAME/` directory, sorted, recursively.
fn dir_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned())).collect(),
        Err(e) => {
            warnings.push(format!("{}: cannot be read: {e}", dir.display()));
            return vec![];
        }
    };
    names.sort();
    let mut out = Vec::new();
    for name in names {
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let path = dir.join(&name);
        let ext = extension(&name);
        if path.is_dir() && ext.is_empty() {
            out.extend(dir_files(&path, warnings));
        } else if path.is_file() && (ext.is_empty() || EXTS.contains(&ext)) {
            out.push(path);
        } else {
            warnings.push(format!(
                "{} is not read: in {}/ Ansible reads files named *.yml, *.yaml, *.json or without an extension, and \
                 directories without an extension",
                path.display(),
                dir.display()
            ));
        }
    }
    out
}

/// One variable file into `layer`: a mapping (or nothing: an empty file is skipped). A
/// vault-encrypted file is decrypted first, and its inline `!vault` values: their variables are
/// secrets.
fn read_file(
    path: &Path,
    layer: &mut VarLayer,
    secrets: &dyn SecretSource,
    secret_vars: &mut Vec<String>,
) -> Result<()> {
    let loaded = super::file::read(path, secrets, false)?;
    let source = &loaded.source;
    let (value, vaulted) = super::yaml::load(source, secrets).map_err(|e| loaded.guard(e))?;
    let map = match value {
        Value::Null => return Ok(()),
        Value::Object(m) => m,
        other => {
            return Err(loaded.guard(source.error_at(
                1,
                1,
                0,
                format!("a variable file is a mapping of variables (name: value), not {}", kind(&other)),
                "not a mapping",
                Some("write one `name: value` per line at the top level".into()),
            )));
        }
    };
    if loaded.encrypted {
        secret_vars.extend(map.keys().cloned());
    }
    secret_vars.extend(vaulted.into_iter().filter_map(|p| p.into_iter().next()));
    if map.is_empty() {
        return Ok(());
    }
    let index = layer.files.len();
    layer.files.push(source.name.clone());
    for (k, v) in map {
        layer.origin.insert(k.clone(), index);
        layer.vars.insert(k, v);
    }
    Ok(())
}
