//! Modules that set variables of the host: set_fact, setup and include_vars (read when the
//! playbook is loaded, with its directory walk and the candidates of a templated name).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::args::Args;
use super::{Call, Translated, Vaulted};
use crate::playbook::ansible::node::Node;
use crate::playbook::ansible::{Problems, VAULT_HELP, vars_source};

/// `set_fact`: each argument a variable of the host.
pub(super) fn set_fact(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    // The fact is set as any set_fact sets it; Ansible's default (memory) fact cache
    // keeps nothing past the run either.
    let _ = a.flag(&["cacheable"]);
    for it in std::mem::take(&mut a.items) {
        out.insert(it.name, it.value);
    }
    a.finish(&[]);
    if out.is_empty() {
        p.add(node.line, node.column, "set_fact: no variable to set".into(), "here", None);
        return None;
    }
    Translated::native("set_fact", out)
}

/// `setup`: the host's facts gathered, `gather_subset`, `filter` and `gather_timeout` as
/// written (read when the step runs, as Ansible's module reads them: steps/setup.rs).
pub(super) fn setup(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut a = Args::new(p, name, node, extra, None);
    let mut out = Map::new();
    for k in ["gather_subset", "filter", "gather_timeout"] {
        if let Some(v) = a.value(&[k]) {
            out.insert(k.into(), v);
        }
    }
    a.finish(&["gather_subset", "filter", "gather_timeout"]);
    Translated::native("setup", out)
}

/// `include_vars`: a variables file (or a directory of them) read, its variables set as facts.
pub(super) fn include_vars(p: &mut Problems, m: Call, vaulted: Vaulted<'_>) -> Option<Translated> {
    let Call { name, node, extra, dirs, .. } = m;
    // Read when the playbook is loaded and set as facts (Ansible's include_vars sits
    // just below set_fact in its precedence): the file must be named literally.
    let mut a = Args::new(p, name, node, extra, None);
    let file = a.take_raw().map(|(r, ..)| r).or_else(|| a.text(&["file", "_raw_params"]));
    let under = a.text(&["name"]);
    let dir = a.text(&["dir"]);
    let depth = a.number(&["depth"]).and_then(|d| d.as_u64()).unwrap_or(0);
    let matching = a.text(&["files_matching"]);
    let ignore = a.texts(&["ignore_files"]).unwrap_or_default();
    let extensions = a.texts(&["extensions"]).unwrap_or_else(|| ["yaml", "yml", "json"].map(String::from).to_vec());
    let ignore_unknown = a.bool_literal(&["ignore_unknown_extensions"]).unwrap_or(false);
    a.finish(&[
        "file",
        "name",
        "dir",
        "depth",
        "files_matching",
        "ignore_files",
        "extensions",
        "ignore_unknown_extensions",
    ]);
    let paths: Vec<(String, PathBuf)> = match (file, dir) {
        (Some(_), Some(_)) => {
            p.add(node.line, node.column, "include_vars: give file or dir, not both".into(), "here", None);
            return None;
        }
        (None, None) => {
            p.add(node.line, node.column, "include_vars: file or dir is required".into(), "here", None);
            return None;
        }
        (Some(file), None) if file.contains("{{") || file.contains("{%") => {
            // Decided per host when the step runs, among the files the template can give.
            let search: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            let files = templated_candidates(dirs, &file, vaulted);
            let mut args = json!({"file": file, "search": search, "files": files});
            if let Some(n) = under {
                args["name"] = json!(n);
            }
            return Some(Translated { kind: Some("include_vars"), args, fields: Map::new(), fails: None });
        }
        (Some(file), None) => {
            let candidates = if Path::new(&file).is_absolute() {
                vec![std::path::PathBuf::from(&file)]
            } else {
                dirs.iter().flat_map(|d| [d.join("vars").join(&file), d.join(&file)]).collect()
            };
            let Some(path) = candidates.iter().find(|c| c.is_file()) else {
                let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
                p.add(
                    node.line,
                    node.column,
                    format!("include_vars: {file} not found"),
                    "here",
                    Some(format!("looked in {}", tried.join(", "))),
                );
                return None;
            };
            vec![(file, path.clone())]
        }
        (None, Some(d)) => {
            let walk = DirWalk { depth, matching, ignore, extensions, ignore_unknown };
            match vars_dir_files(dirs, &d, &walk) {
                Ok(files) => files,
                Err((m, help)) => {
                    p.add(node.line, node.column, format!("include_vars: {m}"), "here", help);
                    return None;
                }
            }
        }
    };
    let read = read_vars_files(p, node, &paths, vaulted, under.as_ref())?;
    let mut out = Map::new();
    match under {
        Some(n) => {
            out.insert(n, Value::Object(read));
        }
        None => out.extend(read),
    }
    if out.is_empty() {
        return Some(Translated { kind: None, args: Value::Null, fields: Map::new(), fails: None });
    }
    Translated::native("set_fact", out)
}

/// The variables of include_vars' files, read now; the names a vault-encrypted file sets (and
/// `under`) become secret.
fn read_vars_files(
    p: &mut Problems,
    node: &Node,
    paths: &[(String, PathBuf)],
    vaulted: Vaulted<'_>,
    under: Option<&String>,
) -> Option<Map<String, Value>> {
    // Each file's variables over the earlier files' (Ansible's update, file by file).
    let mut read = Map::new();
    for (file, path) in paths {
        let source = match crate::error::read_source(path) {
            Ok(s) => s,
            Err(e) => {
                p.errors.push(e);
                return None;
            }
        };
        let (source, secret) = match vars_source(vaulted.vault, path, source) {
            Ok(s) => s,
            Err(e) => {
                let m = format!("include_vars: {file}: {e}");
                p.add(node.line, node.column, m, "here", Some(VAULT_HELP.into()));
                return None;
            }
        };
        let vars = match crate::yaml::parse_ansible_vars::<Option<Map<String, Value>>>(&source) {
            Ok(m) => m.unwrap_or_default(),
            // The decrypted text is secret: no snippet of it in the message.
            Err(_) if secret => {
                let m = format!(
                    "include_vars: {file} decrypts to no mapping of variables (its text is not shown: it is secret)"
                );
                p.add(node.line, node.column, m, "here", None);
                return None;
            }
            Err(e) => {
                p.errors.push(e);
                return None;
            }
        };
        if secret {
            vaulted.names.extend(vars.keys().cloned());
            if let Some(n) = under {
                vaulted.names.push(n.clone());
            }
        }
        read.extend(vars);
    }
    Some(read)
}

/// A message and its help.
type Refusal = (String, Option<String>);

/// What `include_vars: dir` reads of a directory (its `depth`, `files_matching`,
/// `ignore_files`, `extensions`, `ignore_unknown_extensions`).
struct DirWalk {
    depth: u64,
    matching: Option<String>,
    ignore: Vec<String>,
    extensions: Vec<String>,
    ignore_unknown: bool,
}

/// The files `include_vars: dir` reads, in Ansible's order (the walk's directories sorted by
/// path, each one's files by name): the directory under `vars/` beside the role or playbook,
/// else beside it.
fn vars_dir_files(dirs: &[PathBuf], dir: &str, w: &DirWalk) -> Result<Vec<(String, PathBuf)>, Refusal> {
    let candidates: Vec<PathBuf> = if Path::new(dir).is_absolute() {
        vec![PathBuf::from(dir)]
    } else if dir.split('/').next() == Some("vars") {
        dirs.iter().map(|d| d.join(dir)).collect()
    } else {
        dirs.iter().flat_map(|d| [d.join("vars").join(dir), d.join(dir)]).collect()
    };
    let Some(root) = candidates.iter().find(|c| c.is_dir()) else {
        let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        return Err((format!("{dir} is not a directory"), Some(format!("looked in {}", tried.join(", ")))));
    };
    let matching = match &w.matching {
        Some(m) => Some(regex::Regex::new(m).map_err(|e| (format!("files_matching {m:?}: {e}"), None))?),
        None => None,
    };
    let mut walked: Vec<(PathBuf, u64)> = vec![(root.clone(), 1)];
    let mut i = 0;
    while i < walked.len() {
        let (d, level) = walked[i].clone();
        i += 1;
        if w.depth != 0 && level >= w.depth {
            continue;
        }
        let entries = std::fs::read_dir(&d).map_err(|e| (format!("{}: {e}", d.display()), None))?;
        for e in entries.flatten() {
            if e.path().is_dir() {
                walked.push((e.path(), level + 1));
            }
        }
    }
    // Python sorts the walk by the directories' paths as text.
    let mut dirs_sorted: Vec<PathBuf> = walked.into_iter().map(|(d, _)| d).collect();
    dirs_sorted.sort_by_key(|d| d.display().to_string());
    // Each of `ignore_files` is a pattern the name ends with (`re.search(pattern + '$')`).
    let ignore = w
        .ignore
        .iter()
        .map(|x| regex::Regex::new(&format!("(?:{x})$")).map_err(|e| (format!("ignore_files {x:?}: {e}"), None)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for d in dirs_sorted {
        let mut names: Vec<String> = std::fs::read_dir(&d)
            .map_err(|e| (format!("{}: {e}", d.display()), None))?
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            if ignore.iter().any(|r| r.is_match(&name)) || matching.as_ref().is_some_and(|m| !m.is_match(&name)) {
                continue;
            }
            let ext = Path::new(&name).extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
            if !w.extensions.contains(&ext) {
                if w.ignore_unknown {
                    continue;
                }
                return Err((
                    format!("{} does not have a valid extension: {}", d.join(&name).display(), w.extensions.join(", ")),
                    Some("ignore_unknown_extensions: true skips such files".into()),
                ));
            }
            let path = d.join(&name);
            out.push((path.display().to_string(), path));
        }
    }
    Ok(out)
}

/// The variables files a templated include_vars name may give, read now: under each
/// directory's `vars/` (at any depth) and directly in it, each file whose path the template can
/// give (its `{{ ... }}` parts matching anything; under `vars/` with or without that prefix)
/// and that is a YAML or JSON mapping. Others are read if the step ever picks them.
pub(in crate::playbook::ansible) fn templated_candidates(
    dirs: &[PathBuf],
    template: &str,
    vaulted: Vaulted<'_>,
) -> Map<String, Value> {
    let parts = regex::Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}").expect("a valid pattern");
    let mut pattern = String::from("^");
    let mut last = 0;
    for m in parts.find_iter(template) {
        pattern.push_str(&regex::escape(&template[last..m.start()]));
        pattern.push_str(".*");
        last = m.end();
    }
    pattern.push_str(&regex::escape(&template[last..]));
    pattern.push('$');
    let Ok(re) = regex::Regex::new(&pattern) else { return Map::new() };
    fn walk(root: &Path, rel: &str, deep: bool, out: &mut Vec<(String, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let r = if rel.is_empty() {
                e.file_name().to_string_lossy().into_owned()
            } else {
                format!("{rel}/{}", e.file_name().to_string_lossy())
            };
            if !e.path().is_dir() {
                out.push((r, e.path()));
            } else if deep {
                walk(root, &r, deep, out);
            }
        }
    }
    let mut out = Map::new();
    for d in dirs {
        let (mut under_vars, mut beside) = (Vec::new(), Vec::new());
        walk(&d.join("vars"), "", true, &mut under_vars);
        walk(d, "", false, &mut beside);
        let named = under_vars
            .into_iter()
            .filter(|(rel, p)| {
                re.is_match(rel) || re.is_match(&format!("vars/{rel}")) || re.is_match(&p.display().to_string())
            })
            .chain(beside.into_iter().filter(|(rel, p)| re.is_match(rel) || re.is_match(&p.display().to_string())));
        for (_, path) in named {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "yml" | "yaml" | "json" | "") {
                continue;
            }
            // A vault-encrypted candidate is decrypted now (the step has no vault secrets when
            // it runs); one that cannot be read is left to fail if a host picks it.
            let Ok(source) = crate::error::read_source(&path) else { continue };
            let Ok((source, secret)) = vars_source(vaulted.vault, &path, source) else { continue };
            if let Ok(vars) = crate::yaml::parse_ansible_vars::<Option<Map<String, Value>>>(&source) {
                let vars = vars.unwrap_or_default();
                if secret {
                    vaulted.names.extend(vars.keys().cloned());
                }
                out.entry(path.display().to_string()).or_insert(Value::Object(vars));
            }
        }
    }
    out
}
