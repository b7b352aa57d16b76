//! A play's `vars_files`: the files read when the playbook is loaded, and the gate step that
//! reads the per-host ones (templated names, lists of candidates) when the play starts.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::node::{Kind, Node};
use super::{Front, VAULT_HELP, modules, vars_source};
use crate::playbook::{Step, StepDef};

/// `vars_files`: YAML mappings beside the playbook, read when it is loaded, each overriding the
/// play's `vars` and the files before it (Ansible's precedence). An entry that is templated
/// (`vars/{{ ansible_os_family }}.yml`) or a list of candidates (the first found), and every
/// entry after it, is decided per host when the play starts (after its facts): those entries
/// are returned, each its candidates, for `vars_files_step`.
pub(super) fn vars_files(f: &mut Front, v: &Node, vars: &mut crate::inventory::Vars) -> Vec<Vec<String>> {
    let items: Vec<&Node> = match &v.kind {
        Kind::Seq(s) => s.iter().collect(),
        _ => vec![v],
    };
    let mut dynamic: Vec<Vec<String>> = Vec::new();
    for item in items {
        let names: Option<Vec<String>> = match &item.kind {
            Kind::Seq(alts) => alts.iter().map(|a| a.as_str().map(str::to_string)).collect(),
            _ => item.as_str().map(|s| vec![s.to_string()]),
        };
        let Some(names) = names.filter(|n| !n.is_empty()) else {
            let m = format!("vars_files: each entry is a file name or a list of them, not {}", item.what());
            f.p.add(item.line, item.column, m, "here", None);
            continue;
        };
        if !dynamic.is_empty() || names.len() > 1 || names.iter().any(|n| n.contains("{{") || n.contains("{%")) {
            dynamic.push(names);
            continue;
        }
        let rel = names[0].as_str();
        let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { f.dir.join(rel) };
        let source = match crate::error::read_source(&path) {
            Ok(s) => s,
            Err(_) => {
                f.p.add(item.line, item.column, format!("vars_files: {} not found", path.display()), "here", None);
                continue;
            }
        };
        let (source, vaulted) = match vars_source(f.vault.as_ref(), &path, source) {
            Ok(s) => s,
            Err(e) => {
                f.p.add(item.line, item.column, format!("vars_files: {rel}: {e}"), "here", Some(VAULT_HELP.into()));
                continue;
            }
        };
        match crate::yaml::parse_ansible_vars::<Option<indexmap::IndexMap<String, Value>>>(&source) {
            Ok(m) => {
                let m = m.unwrap_or_default();
                if vaulted {
                    f.secret_vars.extend(m.keys().cloned());
                }
                vars.extend(m)
            }
            // The decrypted text is secret: no snippet of it in the message.
            Err(_) if vaulted => f.p.add(
                item.line,
                item.column,
                format!("vars_files: {rel} decrypts to no mapping of variables (its text is not shown: it is secret)"),
                "here",
                None,
            ),
            Err(e) => f.p.errors.push(e),
        }
    }
    dynamic
}

/// The step that reads a play's per-host `vars_files` entries (`vars_files`), first in the play
/// after its facts: never shown nor counted (a gate), its variables the play's, under the
/// tasks' own (see `steps::include_vars`). Every file the entries can name is read now.
pub(super) fn vars_files_step(f: &mut Front, node: &Node, entries: Vec<Vec<String>>) -> Option<Step> {
    let dirs = [f.dir.clone()];
    let mut files = serde_json::Map::new();
    for name in entries.iter().flatten() {
        let vaulted = modules::Vaulted { vault: f.vault.as_ref(), names: &mut f.secret_vars };
        for (k, v) in modules::templated_candidates(&dirs, name, vaulted) {
            files.entry(k).or_insert(v);
        }
    }
    let search = vec![f.dir.display().to_string()];
    let def: StepDef = serde_json::from_value(json!({
        "name": "vars_files",
        "tags": ["always"],
        "include_vars": {"file": "", "search": search, "files": files, "vars_files": entries},
    }))
    .expect("a valid include_vars step");
    match crate::playbook::validate_step(&f.p.source, def, node.line, node.column, false) {
        Ok(mut s) => {
            s.gate = true;
            Some(s)
        }
        Err(e) => {
            f.p.errors.push(e);
            None
        }
    }
}
