//! The Ansible INI inventory dialect, line by line, as `ansible.plugins.inventory.ini` reads it:
//! bare host lines with `key=value` pairs and ranges, `[g]`, `[g:vars]`, `[g:children]` (which
//! may name groups declared later). Every error names the file and line and what was expected.

use std::sync::{Arc, LazyLock};

use indexmap::IndexMap;
use regex::Regex;
use serde_json::Value;

use super::{Group, Host, Inventory, address, pyliteral, range, shlex};
use crate::error::{Error, Result, Source};

static SECTION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$").unwrap());
static GROUP_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^([^:\]\s]+)\s*(?:#.*)?$").unwrap());

#[derive(Clone, Copy, PartialEq)]
enum State {
    Hosts,
    Vars,
    Children,
}

/// A reference to a group not declared (yet): `[g:vars]` or a child in `[p:children]`.
struct Pending {
    line: usize,
    state: State,
    parents: Vec<String>,
}

pub fn parse(source: Source) -> Result<Inventory> {
    let mut inv = Inventory::empty(source.clone());
    parse_into(&mut inv, &source)?;
    inv.reconcile();
    Ok(inv)
}

/// Reads one INI file into `inv`, which may hold earlier sources already (as Ansible reads
/// several `-i`): a group they declared counts as declared here. The caller reconciles.
pub fn parse_into(inv: &mut Inventory, source: &Source) -> Result<()> {
    let text = source.text.clone();
    let file: Arc<str> = source.name.as_str().into();
    let mut pending: IndexMap<String, Pending> = IndexMap::new();
    let mut group = "ungrouped".to_string();
    let mut state = State::Hosts;
    let err = |line: usize, col: usize, msg: String, label: &str, help: &str| -> Error {
        source.error_at(line, col, 0, msg, label, Some(help.to_string()))
    };
    if text.starts_with("$ANSIBLE_VAULT;") {
        return Err(err(
            1,
            1,
            "this inventory is vault-encrypted text: it must be decrypted before it is parsed".into(),
            "Ansible Vault header",
            "load it from its file with the vault password (copctl -i FILE --vault-password-file PWFILE), or decrypt it first (copctl vault decrypt FILE)",
        ));
    }
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let col = raw.len() - raw.trim_start().len() + 1;
        if let Some(m) = SECTION.captures(line) {
            let name = m[1].to_string();
            state = match m.get(2).map(|t| t.as_str()) {
                None | Some("hosts") => State::Hosts,
                Some("vars") => State::Vars,
                Some("children") => State::Children,
                Some(other) => {
                    return Err(err(
                        lineno,
                        col,
                        format!("Section [{name}:{other}] has unknown type: {other}"),
                        "unknown section type",
                        "a section is [group], [group:vars] or [group:children]",
                    ));
                }
            };
            if !inv.groups.contains_key(&name) {
                // [g] and [g:children] declare a group; [g:vars] alone does not (checked at the end).
                if state == State::Vars && !pending.contains_key(&name) {
                    pending.insert(name.clone(), Pending { line: lineno, state, parents: vec![] });
                }
                inv.groups.insert(name.clone(), Group::new(&name, &file, lineno));
            }
            if state != State::Vars
                && let Some(p) = pending.get(&name)
            {
                match p.state {
                    State::Children => add_pending_children(inv, &name, &mut pending)
                        .map_err(|m| err(lineno, col, m, "creates a loop", "remove one of the :children entries"))?,
                    _ => {
                        pending.shift_remove(&name);
                    }
                }
            }
            group = name;
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return Err(err(
                lineno,
                col,
                format!("Invalid section entry: '{line}'"),
                "not a valid section header",
                "section headers are [group], [group:vars] or [group:children], with no spaces",
            ));
        }
        match state {
            State::Hosts => host_line(inv, source, &group, line, lineno, col)?,
            State::Vars => {
                let Some((k, v)) = line.split_once('=') else {
                    return Err(err(
                        lineno,
                        col,
                        format!("Expected key=value, got: {line}"),
                        "not a key=value line",
                        &format!("lines in [{group}:vars] set one variable each: name=value"),
                    ));
                };
                set_group_var(inv, &group, k.trim(), pyliteral::parse_value(v.trim()));
            }
            State::Children => {
                let Some(m) = GROUP_NAME.captures(line) else {
                    return Err(err(
                        lineno,
                        col,
                        format!("Expected group name, got: {line}"),
                        "not a group name",
                        &format!("lines in [{group}:children] name one group each"),
                    ));
                };
                let child = m[1].to_string();
                if inv.groups.contains_key(&child) {
                    add_child_checked(inv, &group, &child)
                        .map_err(|m| err(lineno, col, m, "creates a loop", "remove this line"))?;
                } else {
                    pending
                        .entry(child)
                        .or_insert(Pending { line: lineno, state: State::Children, parents: vec![] })
                        .parents
                        .push(group.clone());
                }
            }
        }
    }
    if let Some((name, p)) = pending.into_iter().next() {
        let line = p.line;
        let (msg, help) = match p.state {
            State::Vars => (
                format!("Section [{name}:vars] not valid for undefined group '{name}'"),
                format!("declare the group with a [{name}] or [{name}:children] section, or fix the name"),
            ),
            _ => (
                format!(
                    "Section [{}:children] includes undefined group '{name}'",
                    p.parents.last().map(String::as_str).unwrap_or("?")
                ),
                format!("declare [{name}] (it may come later in the file), or fix the name"),
            ),
        };
        return Err(source.error_at(line, 1, 0, msg, "undefined group", Some(help)));
    }
    Ok(())
}

fn add_pending_children(
    inv: &mut Inventory,
    group: &str,
    pending: &mut IndexMap<String, Pending>,
) -> std::result::Result<(), String> {
    let parents = pending.get(group).map(|p| p.parents.clone()).unwrap_or_default();
    for parent in parents {
        add_child_checked(inv, &parent, group)?;
        if pending.get(&parent).is_some_and(|p| p.state == State::Children) {
            add_pending_children(inv, &parent, pending)?;
        }
    }
    pending.shift_remove(group);
    Ok(())
}

pub(super) fn add_child_checked(inv: &mut Inventory, parent: &str, child: &str) -> std::result::Result<(), String> {
    if parent == child || inv.ancestors(parent).contains(child) {
        return Err(format!("Adding group '{child}' as child to '{parent}' creates a recursive dependency loop"));
    }
    inv.add_child(parent, child);
    Ok(())
}

pub(super) fn set_group_var(inv: &mut Inventory, group: &str, key: &str, value: Value) {
    let g = &mut inv.groups[group];
    if key == "ansible_group_priority" {
        // Ansible turns this variable into the group's priority instead of storing it.
        if let Some(p) = value.as_i64().or_else(|| value.as_str().and_then(|s| s.parse().ok())) {
            g.priority = p;
            return;
        }
    }
    g.vars.insert(key.to_string(), value);
}

fn host_line(inv: &mut Inventory, source: &Source, group: &str, line: &str, lineno: usize, col: usize) -> Result<()> {
    let tokens = shlex::split(line).map_err(|e| {
        source.error_at(
            lineno,
            col,
            0,
            format!("Error parsing host definition '{line}': {e}"),
            "unbalanced quote",
            Some("close the quote, or escape it with a backslash".into()),
        )
    })?;
    let Some(first) = tokens.first() else { return Ok(()) };
    let (pattern, port) = match address::parse_address(first) {
        Some((h, p)) => (h, p),
        None => (first.clone(), None),
    };
    if first.trim().ends_with(':') && port.is_none() {
        return Err(source.error_at(
            lineno,
            col,
            first.len(),
            format!("Invalid host pattern '{first}': ending in ':' is not allowed"),
            "':' is reserved for a port",
            Some("write host:PORT with a numeric port, or drop the ':'".into()),
        ));
    }
    let names = if range::has_range(&pattern) {
        let room = super::MAX_HOSTS - inv.hosts.len();
        range::expand_at_most(&pattern, room).map_err(|m| {
            source.error_at(
                lineno,
                col,
                first.len(),
                format!("bad host range: {m}"),
                "this range",
                Some("ranges are [01:20] (zero-padded: equal widths), [a:f], or [1:10:2]".into()),
            )
        })?
    } else {
        vec![pattern]
    };
    let mut vars = Vec::new();
    for t in &tokens[1..] {
        let Some((k, v)) = t.split_once('=') else {
            let at = line.find(t.as_str()).map(|i| col + i).unwrap_or(col);
            return Err(source.error_at(
                lineno,
                at,
                t.len(),
                format!("Expected key=value host variable assignment, got: {t}"),
                "expected key=value",
                Some("host variables are written name=value after the host name; quote values with spaces".into()),
            ));
        };
        vars.push((k.to_string(), pyliteral::parse_value(v)));
    }
    if inv.hosts.len() >= super::MAX_HOSTS && !names.iter().all(|n| inv.hosts.contains_key(n)) {
        return Err(source.error_at(
            lineno,
            col,
            first.len(),
            format!("the inventory holds more than {} hosts", super::MAX_HOSTS),
            "one host too many",
            Some(format!("copctl reads at most {} hosts per inventory", super::MAX_HOSTS)),
        ));
    }
    for name in names {
        if name.trim() == "---" {
            return Err(source.error_at(
                lineno,
                col,
                3,
                "Invalid host pattern '---': this looks like a YAML file",
                "YAML document marker",
                Some(
                    "this file is read as INI (as Ansible reads a .ini file): name a YAML inventory .yml or .yaml"
                        .into(),
                ),
            ));
        }
        let host = inv.hosts.entry(name.clone()).or_insert_with(|| {
            let mut vars = super::Vars::new();
            // As in Ansible, the port applies only where the host is first defined.
            if let Some(p) = port {
                vars.insert("ansible_port".into(), Value::from(p));
            }
            Host { name: name.clone(), vars, groups: vec![], line: lineno }
        });
        for (k, v) in &vars {
            host.vars.insert(k.clone(), v.clone());
        }
        // The host's own group list says whether the group has it: a search of the group's
        // hosts would make a 100,000-host range quadratic.
        if !host.groups.iter().any(|g| g == group) {
            host.groups.push(group.to_string());
            inv.groups[group].hosts.push(name);
        }
    }
    Ok(())
}
