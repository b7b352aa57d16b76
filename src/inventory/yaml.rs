//! The YAML inventory format, as `ansible.plugins.inventory.yaml` reads it: top-level keys are
//! groups; a group has `hosts:` (host patterns, ranges allowed, each with its variables),
//! `vars:` and `children:` (groups, recursively); a string stands for a one-entry mapping.
//! Where Ansible skips a key with a warning, copctl warns too, naming the line.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::file::kind;
use super::{Group, Inventory, MAX_HOSTS, address, ini, range};
use crate::error::{Error, Result, Source};
use crate::vault::SecretSource;

struct Reader<'a> {
    source: &'a Source,
    file: Arc<str>,
    lines: Vec<&'a str>,
    /// Where the next key is looked for (0-based line): keys are met in document order (the
    /// mapping keeps it, the walk is depth first), so each search goes on from the last one
    /// and the whole file is scanned once.
    cursor: std::cell::Cell<usize>,
}

pub fn parse_into(inv: &mut Inventory, source: &Source, data: Map<String, Value>) -> Result<()> {
    if data.get("plugin").is_some_and(truthy) {
        return Err(source.error_at(
            line_of(&source.text, "plugin", 1),
            1,
            0,
            "this is an inventory plugin configuration (plugin:), not a YAML inventory; copctl does not run inventory plugins",
            "plugin configuration",
            Some(
                "save what the plugin gives as a YAML inventory: ansible-inventory -i FILE --list --yaml > hosts.yml".into(),
            ),
        ));
    }
    let r =
        Reader { source, file: source.name.as_str().into(), lines: source.text.lines().collect(), cursor: 0.into() };
    for (name, value) in &data {
        let line = r.at(name);
        r.group(inv, name, value, line)?;
    }
    Ok(())
}

/// Python's truth of a value (`data.get('plugin')`).
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// The line of `key:` at or after `from` (1-based): where a key of the parsed mapping is, for
/// messages. The first line that starts (after indentation) with the key, quoted or not.
fn line_of(text: &str, key: &str, from: usize) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    locate(&lines, key, from).0
}

/// `line_of` with the key's column, in the file's lines.
fn locate(lines: &[&str], key: &str, from: usize) -> (usize, usize) {
    let forms = [format!("{key}:"), format!("\"{key}\":"), format!("'{key}':"), format!("- {key}")];
    let start = from.saturating_sub(1).min(lines.len());
    lines[start..]
        .iter()
        .enumerate()
        .find(|(_, l)| {
            let t = l.trim_start();
            forms.iter().any(|f| t.starts_with(f.as_str())) || t == key
        })
        .map(|(i, l)| (start + i + 1, l.len() - l.trim_start().len() + 1))
        .unwrap_or((from, 1))
}

impl Reader<'_> {
    /// The line of the next key met (1-based), searched from the last one on.
    fn at(&self, key: &str) -> usize {
        let from = self.cursor.get() + 1;
        let (line, _) = locate(&self.lines, key, from);
        self.cursor.set(line - 1);
        line
    }

    fn warn(&self, inv: &mut Inventory, line: usize, msg: String) {
        inv.warnings.push(format!("{}:{line}: {msg}", self.source.name));
    }

    /// An error at the line of `key` (at or after `line`), underlining from the key on.
    fn error(&self, key: &str, line: usize, msg: String, help: &str) -> Error {
        let (line, col) = locate(&self.lines, key, line);
        self.source.error_at(line, col, 0, msg, "here", Some(help.to_string()))
    }

    /// `_parse_group`: returns the group's name, or `None` where the value is no group
    /// definition (Ansible warns and goes on).
    fn group(&self, inv: &mut Inventory, name: &str, data: &Value, line: usize) -> Result<Option<String>> {
        let map = match data {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                self.warn(
                    inv,
                    line,
                    format!(
                        "'{name}' is skipped: it is {}, not a group definition (hosts:, vars:, children:)",
                        kind(other)
                    ),
                );
                return Ok(None);
            }
        };
        if name.is_empty() {
            return Err(self.error(name, line, "a group name is empty".into(), "name the group"));
        }
        if !inv.groups.contains_key(name) {
            inv.groups.insert(name.to_string(), Group::new(name, &self.file, line));
        }
        let Some(map) = map else { return Ok(Some(name.to_string())) };
        // A string stands for a mapping of one key with no value (`hosts: web1`).
        let section = |key: &str| -> Result<Option<Map<String, Value>>> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(Map::from_iter([(s.clone(), Value::Null)]))),
                Some(Value::Object(m)) => Ok(Some(m.clone())),
                Some(other) => Err(self.error(
                    key,
                    line,
                    format!(
                        "Invalid \"{key}\" entry for \"{name}\" group, requires a dictionary, found {} instead",
                        kind(other)
                    ),
                    &format!("write {key}: as a mapping, one entry per line (`name:` with no value is fine)"),
                )),
            }
        };
        let (vars, children, hosts) = (section("vars")?, section("children")?, section("hosts")?);
        for (key, value) in map {
            let at = self.at(key);
            match value {
                Value::Null => continue,
                Value::Object(_) | Value::String(_) if ["vars", "children", "hosts"].contains(&key.as_str()) => {}
                Value::Object(_) => {
                    self.warn(
                        inv,
                        at,
                        format!(
                            "key '{key}' in group '{name}' is skipped: a group has only vars:, children: and hosts: (as in Ansible)"
                        ),
                    );
                    continue;
                }
                other => {
                    self.warn(
                        inv,
                        at,
                        format!(
                            "key '{key}' in group '{name}' is skipped: it is {}, not a mapping (as in Ansible)",
                            kind(other)
                        ),
                    );
                    continue;
                }
            }
            match key.as_str() {
                "vars" => {
                    for (k, v) in vars.iter().flatten() {
                        self.group_var(inv, name, k, v, at)?;
                    }
                }
                "children" => {
                    for (child, cdata) in children.iter().flatten() {
                        let cline = self.at(child);
                        let Some(child) = self.group(inv, child, cdata, cline)? else {
                            // Ansible adds the name as a child anyway: a host of that name joins
                            // the group, anything else is an error.
                            if inv.hosts.contains_key(child) {
                                inv.add_host(child, name, None, cline);
                                continue;
                            }
                            return Err(self.error(
                                child,
                                cline,
                                format!("{child} is not a known host nor group"),
                                "a child is a group: write it as `name:` with a mapping or nothing after it",
                            ));
                        };
                        ini::add_child_checked(inv, name, &child)
                            .map_err(|m| self.error(&child, cline, m, "remove the child entry that closes the loop"))?;
                    }
                }
                "hosts" => {
                    for (pattern, hvars) in hosts.iter().flatten() {
                        let hline = self.at(pattern);
                        self.hosts(inv, name, pattern, hvars, hline)?;
                    }
                }
                _ => unreachable!("only the sections reach here"),
            }
        }
        Ok(Some(name.to_string()))
    }

    fn group_var(&self, inv: &mut Inventory, group: &str, key: &str, value: &Value, line: usize) -> Result<()> {
        if key == "ansible_group_priority" {
            // Ansible's `int(value)`: a number or a numeric string, else the file fails.
            let p = match value {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                Value::Bool(b) => Some(i64::from(*b)),
                _ => None,
            };
            let Some(p) = p else {
                return Err(self.error(
                    key,
                    line,
                    format!("ansible_group_priority of group '{group}' must be an integer, not {}", kind(value)),
                    "e.g. ansible_group_priority: 10 (higher wins among groups of equal depth)",
                ));
            };
            inv.groups[group].priority = p;
            return Ok(());
        }
        inv.groups[group].vars.insert(key.to_string(), value.clone());
        Ok(())
    }

    /// One `hosts:` entry: a host pattern (`web[01:10]`, `host:port`) and its variables.
    fn hosts(&self, inv: &mut Inventory, group: &str, pattern: &str, vars: &Value, line: usize) -> Result<()> {
        let vars = match vars {
            Value::Null => Map::new(),
            Value::Object(m) => m.clone(),
            other => {
                return Err(self.error(
                    pattern,
                    line,
                    format!(
                        "host '{pattern}' in group '{group}': its variables must be a mapping, not {}",
                        kind(other)
                    ),
                    "write `host:` with nothing after it, or with `name: value` lines below it",
                ));
            }
        };
        let (name, port) = match address::parse_address(pattern) {
            Some((h, p)) => (h, p),
            None => (pattern.to_string(), None),
        };
        let names = if range::has_range(&name) {
            let room = MAX_HOSTS - inv.hosts.len();
            range::expand_at_most(&name, room).map_err(|m| {
                self.error(
                    pattern,
                    line,
                    format!("bad host range: {m}"),
                    "ranges are [01:20] (zero-padded: equal widths), [a:f], or [1:10:2]",
                )
            })?
        } else {
            vec![name]
        };
        if inv.hosts.len() >= MAX_HOSTS && !names.iter().all(|n| inv.hosts.contains_key(n)) {
            return Err(self.error(
                pattern,
                line,
                format!("the inventory holds more than {MAX_HOSTS} hosts"),
                &format!("copctl reads at most {MAX_HOSTS} hosts per inventory"),
            ));
        }
        for n in names {
            inv.add_host(&n, group, port, line);
            let host = &mut inv.hosts[&n];
            for (k, v) in &vars {
                host.vars.insert(k.clone(), v.clone());
            }
        }
        Ok(())
    }
}

/// A YAML file Ansible reads (an inventory, a group_vars/ or host_vars/ file) as a JSON value,
/// with Ansible's tags: `!unsafe` text is kept as Ansible marks it (`{"__ansible_unsafe": ..}`,
/// never templated), and inline `!vault` values are decrypted with `secrets` (asked for only
/// when one is met; an undecryptable value is an error at its tag). Also returns where each
/// decrypted value was, as its path of keys: their variables are secrets.
pub(super) fn load(source: &Source, secrets: &dyn SecretSource) -> Result<(Value, Vec<Vec<String>>)> {
    let value = crate::yaml::parse_ansible::<Node>(source)?.0;
    if !source.text.contains("!vault") {
        return Ok((value, vec![]));
    }
    let mut found = vec![];
    let value = decrypt(value, source, secrets, &mut vec![], &mut found)?;
    Ok((value, found))
}

/// The variable a decrypted value of a YAML inventory belongs to, from its path of keys: the key
/// under a `vars:`, or under a host of `hosts:`.
pub(super) fn var_of(path: &[String]) -> Option<String> {
    let at = |key: &str, skip: usize| path.iter().rposition(|k| k == key).and_then(|i| path.get(i + skip)).cloned();
    at("vars", 1).or_else(|| at("hosts", 2))
}

/// What a `!vault` value is until it is decrypted: its text and where its tag is.
const VAULT_TEXT: &str = "\u{1}vault";
const VAULT_LINE: &str = "\u{1}line";
const VAULT_COLUMN: &str = "\u{1}column";

fn decrypt(
    value: Value,
    source: &Source,
    secrets: &dyn SecretSource,
    path: &mut Vec<String>,
    found: &mut Vec<Vec<String>>,
) -> Result<Value> {
    Ok(match value {
        Value::Object(m) if m.contains_key(VAULT_TEXT) => {
            let at = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(1) as usize;
            let (line, column) = tag_position(source, at(VAULT_LINE), at(VAULT_COLUMN));
            let Some(text) = m.get(VAULT_TEXT).and_then(Value::as_str) else {
                return Err(source.error_at(
                    line,
                    column,
                    0,
                    "the '!vault' tag requires a string value",
                    "not a string",
                    Some("put the output of `ansible-vault encrypt_string` here: `!vault |` and the indented $ANSIBLE_VAULT lines".into()),
                ));
            };
            let plain = secrets.secrets()?.decrypt(text.as_bytes()).map_err(|e| e.at(source, line, column))?;
            let plain = String::from_utf8(plain.to_vec())
                .map_err(|_| source.error_at(line, column, 0, "the decrypted value is not UTF-8 text", "here", None))?;
            found.push(path.clone());
            Value::String(plain)
        }
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                path.push(k.clone());
                let v = decrypt(v, source, secrets, path, found)?;
                path.pop();
                out.insert(k, v);
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for (i, v) in a.into_iter().enumerate() {
                path.push(i.to_string());
                out.push(decrypt(v, source, secrets, path, found)?);
                path.pop();
            }
            Value::Array(out)
        }
        other => other,
    })
}

/// Where the `!vault` tag itself is: the parser places a `|` block at its first content line, an
/// operator looks for the `key: !vault |` line above it.
fn tag_position(source: &Source, line: usize, column: usize) -> (usize, usize) {
    let lines: Vec<&str> = source.text.lines().collect();
    let find = |l: usize, upto: Option<usize>| -> Option<usize> {
        let text = lines.get(l.checked_sub(1)?)?;
        let text: String = match upto {
            Some(c) => text.chars().take(c.saturating_sub(1)).collect(),
            None => text.to_string(),
        };
        let byte = text.rfind("!vault")?;
        Some(text[..byte].chars().count() + 1)
    };
    if let Some(c) = find(line, Some(column)) {
        return (line, c);
    }
    match find(line.saturating_sub(1), None) {
        Some(c) => (line - 1, c),
        None => (line, column),
    }
}

struct Node(Value);

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<serde_saphyr::Tagged<Plain>>::deserialize(d)?;
        let serde_saphyr::Tagged(Plain(v), tag) = spanned.value;
        match tag.as_deref() {
            Some("!unsafe") => {
                let text = match v {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                Ok(Node(Value::Object(Map::from_iter([("__ansible_unsafe".to_string(), Value::String(text))]))))
            }
            Some("!vault" | "!vault-encrypted") => Ok(Node(Value::Object(Map::from_iter([
                (VAULT_TEXT.to_string(), v),
                (VAULT_LINE.to_string(), Value::from(spanned.referenced.line())),
                (VAULT_COLUMN.to_string(), Value::from(spanned.referenced.column())),
            ])))),
            _ => Ok(Node(v)),
        }
    }
}

/// A YAML node without its tag, its children tagged again.
struct Plain(Value);

impl<'de> serde::Deserialize<'de> for Plain {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(PlainVisitor).map(Plain)
    }
}

struct PlainVisitor;

impl<'de> serde::de::Visitor<'de> for PlainVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        serde::Deserialize::deserialize(d).map(|n: Node| n.0)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Node(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((k, Node(v))) = map.next_entry::<String, Node>()? {
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}
