//! Inventory sources as Ansible's `InventoryManager` reads them: each `-i` in order into one
//! inventory, reconciled once at the end. A value with a comma that is no existing path is a
//! host list (`h1,h2,`, the `host_list` plugin); a directory is every inventory file in it,
//! sorted, recursively, less what Ansible ignores there; a file is YAML (the `yaml` plugin, for
//! `.yml`, `.yaml`, `.json` and names without extension that hold a YAML mapping) or else INI.
//! Then the `group_vars/` and `host_vars/` beside each source (`var_files`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use regex::Regex;
use serde_json::Value;

use super::file::{extension, kind, read};
use super::{Inventory, MAX_HOSTS, address, ini, range, var_files};
use crate::error::{Error, Result, Source};
use crate::vault::SecretSource;

/// What Ansible skips in an inventory directory: hidden names, the variable directories, and
/// `INVENTORY_IGNORE_EXTS` (`REJECT_EXTS` + `.orig`, `.cfg`, `.retry`); `INVENTORY_IGNORE_PATTERNS`
/// is empty by default.
static IGNORED: LazyLock<Regex> = LazyLock::new(|| {
    let exts = [".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry"];
    let mut alts = vec![r"^\.".to_string(), "^host_vars$".into(), "^group_vars$".into(), "^vars_plugins$".into()];
    alts.extend(exts.iter().map(|e| format!("{}$", regex::escape(e))));
    Regex::new(&alts.join("|")).unwrap()
});

/// The extensions Ansible's `yaml` inventory plugin tries (and files without one).
const YAML_EXTS: [&str; 3] = [".yaml", ".yml", ".json"];

/// `-i 'h1,h2,'`: a value with a comma that names no existing path (Ansible's `host_list`).
pub fn is_host_list(source: &Path) -> bool {
    source.to_str().is_some_and(|s| s.contains(',')) && !source.exists()
}

/// The site directory: where env.yaml, playbooks/ and templates/ are looked for. Ansible's
/// `basedir` of the first source that is a path: a directory itself, a file's directory; the
/// current directory (an empty path: names stay relative, `playbooks/x.yaml`) for host lists
/// only.
pub fn site_dir(sources: &[PathBuf]) -> PathBuf {
    match sources.iter().find(|s| !is_host_list(s)) {
        Some(s) if s.is_dir() => s.clone(),
        Some(s) => s.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::new(),
    }
}

pub fn load(sources: &[PathBuf], site_files: &[PathBuf], secrets: &dyn SecretSource) -> Result<Inventory> {
    let name = sources.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let mut inv = Inventory::empty(Source::new(name, ""));
    let skip: Vec<PathBuf> = site_files.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut bases: Vec<PathBuf> = Vec::new();
    let mut warnings = Vec::new();
    for s in sources {
        if is_host_list(s) {
            host_list(&mut inv, &s.to_string_lossy())?;
            continue;
        }
        let meta = std::fs::metadata(s).map_err(|e| {
            Error::with_help(
                format!("cannot read {}: {e}", s.display()),
                "check the path, or pass another one with -i (a file, a directory, or a host list such as 'h1,h2,')",
            )
        })?;
        if meta.is_dir() {
            parse_dir(&mut inv, s, &skip, &mut warnings, secrets)?;
            bases.push(s.clone());
        } else {
            let source = parse_file(&mut inv, s, secrets)?;
            if sources.len() == 1 {
                // One file: the inventory is that file (messages name it, as before).
                inv.source = source;
            }
            bases.push(s.parent().map(Path::to_path_buf).unwrap_or_default());
        }
    }
    inv.reconcile();
    // The same directory twice (`-i inv/a.ini -i inv/b.ini`) is read once, and applied at each
    // place, as Ansible's cache does.
    let mut dirs: Vec<(PathBuf, Arc<var_files::VarDir>)> = Vec::new();
    let mut var_dirs = Vec::new();
    for base in bases {
        let key = base.canonicalize().unwrap_or_else(|_| base.clone());
        let dir = match dirs.iter().find(|(k, _)| *k == key) {
            Some((_, d)) => d.clone(),
            None => {
                let d = Arc::new(var_files::load(&base, &inv, &mut warnings, secrets)?);
                inv.secret_vars.extend(d.secret_vars.iter().cloned());
                dirs.push((key, d.clone()));
                d
            }
        };
        var_dirs.push(dir);
    }
    inv.var_dirs = var_dirs;
    inv.warnings.extend(warnings);
    Ok(inv)
}

/// Ansible's `host_list` plugin: comma-separated names, each with an optional `:port`, added to
/// `ungrouped` unless already known.
fn host_list(inv: &mut Inventory, list: &str) -> Result<()> {
    for h in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        // `parse_address(h, allow_ranges=False)`: a range is no address, so the text stays whole.
        let (host, port) = match address::parse_address(h) {
            Some((host, port)) if !range::has_range(&host) => (host, port),
            _ => (h.to_string(), None),
        };
        if !inv.hosts.contains_key(&host) {
            if inv.hosts.len() >= MAX_HOSTS {
                return Err(Error::plain(format!(
                    "the inventory holds more than {MAX_HOSTS} hosts (host list at {h})"
                )));
            }
            inv.add_host(&host, "ungrouped", port, 0);
        }
    }
    Ok(())
}

/// Every inventory file under `dir`, in sorted order, recursively, as `parse_source` walks it.
/// Subdirectories' own group_vars/ and host_vars/ are not read (Ansible reads them beside the
/// sources given with -i only): said in a warning.
fn parse_dir(
    inv: &mut Inventory,
    dir: &Path,
    skip: &[PathBuf],
    warnings: &mut Vec<String>,
    secrets: &dyn SecretSource,
) -> Result<()> {
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
        .map_err(|e| Error::plain(format!("cannot read the inventory directory {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    for name in names {
        let path = dir.join(&name);
        let text = name.to_string_lossy();
        if IGNORED.is_match(&text) {
            continue;
        }
        if path.canonicalize().is_ok_and(|c| skip.contains(&c)) {
            continue;
        }
        if path.is_dir() {
            for sub in ["group_vars", "host_vars"] {
                if path.join(sub).exists() {
                    warnings.push(format!(
                        "{} is not read: Ansible reads {sub}/ beside the inventory sources given with -i only \
                         (here {}); give -i {} to read it",
                        path.join(sub).display(),
                        dir.display(),
                        path.display()
                    ));
                }
            }
            parse_dir(inv, &path, skip, warnings, secrets)?;
        } else {
            parse_file(inv, &path, secrets)?;
        }
    }
    Ok(())
}

/// One inventory file: YAML where Ansible's `yaml` plugin takes it, else INI. Returns the file.
/// A vault-encrypted file is decrypted first (its variables are then all secrets); its parse
/// errors name lines without quoting them.
fn parse_file(inv: &mut Inventory, path: &Path, secrets: &dyn SecretSource) -> Result<Source> {
    let loaded = read(path, secrets, true)?;
    inv.vaulted |= loaded.encrypted;
    parse_text(inv, path, &loaded.source, secrets).map_err(|e| loaded.guard(e))?;
    Ok(loaded.source)
}

fn parse_text(inv: &mut Inventory, path: &Path, source: &Source, secrets: &dyn SecretSource) -> Result<()> {
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = extension(&file_name);
    if is_script(path, source) {
        return Err(source.error_at(
            1,
            1,
            0,
            "this inventory is an executable script (a dynamic inventory); copctl does not run inventory scripts",
            "interpreter line",
            Some(format!(
                "save what it prints as a file copctl reads: `{} --list` gives JSON; write its groups as a YAML or INI inventory",
                path.display()
            )),
        ));
    }
    if ext == ".toml" {
        return Err(Error::with_help(
            format!("{}: copctl does not read TOML inventories", path.display()),
            "write it as an INI or YAML inventory (ansible-inventory -i FILE --list --yaml prints it as YAML)",
        ));
    }
    let mut yaml_error = None;
    if ext.is_empty() || YAML_EXTS.contains(&ext) {
        match super::yaml::load(source, secrets) {
            Ok((Value::Object(map), vaulted)) if !map.is_empty() => {
                super::yaml::parse_into(inv, source, map)?;
                inv.secret_vars.extend(vaulted.iter().filter_map(|p| super::yaml::var_of(p)));
                return Ok(());
            }
            // Empty, or no mapping: Ansible's yaml plugin declines and the INI plugin reads it.
            Ok((other, _)) => {
                if YAML_EXTS.contains(&ext) && !other.is_null() {
                    yaml_error = Some(source.error_at(
                        1,
                        1,
                        0,
                        format!(
                            "a YAML inventory is a mapping of groups (all:, children:, hosts:), not {}",
                            kind(&other)
                        ),
                        "here",
                        Some("see README.md (Inventory) for the format".into()),
                    ));
                }
            }
            Err(e) => yaml_error = Some(e),
        }
    }
    match ini::parse_into(inv, source) {
        Ok(()) => Ok(()),
        // A .yml file that is no INI either: its YAML error is the one that helps. A file
        // without extension that starts as YAML likewise.
        Err(ini_error) => match yaml_error {
            Some(e) if YAML_EXTS.contains(&ext) || looks_like_yaml(&source.text) => Err(e),
            _ => Err(ini_error),
        },
    }
}

fn is_script(path: &Path, source: &Source) -> bool {
    use std::os::unix::fs::PermissionsExt;
    source.text.starts_with("#!") && std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// The first line that is no comment: a document marker or a `key:` line.
fn looks_like_yaml(text: &str) -> bool {
    text.lines()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .is_some_and(|l| l == "---" || (!l.starts_with('[') && (l.ends_with(':') || l.contains(": "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_as_python_splits_them() {
        assert_eq!(extension("a.yml"), ".yml");
        assert_eq!(extension("a.b.yaml"), ".yaml");
        assert_eq!(extension("hosts"), "");
        assert_eq!(extension(".hidden"), "");
        assert_eq!(extension("..x"), "");
        assert_eq!(extension("a."), ".");
    }

    #[test]
    fn ignored_names_in_an_inventory_directory() {
        for n in [".git", "group_vars", "host_vars", "vars_plugins", "x.md", "x.txt", "x~", "x.bak", "a.cfg", "a.retry"]
        {
            assert!(IGNORED.is_match(n), "{n}");
        }
        for n in ["hosts", "a.ini", "b.yml", "group_vars2", "x.mdx"] {
            assert!(!IGNORED.is_match(n), "{n}");
        }
    }
}
