//! What `copctl inventory list|graph|host` print: the JSON of `ansible-inventory --list` (keys
//! sorted, four-space indent, `_meta.hostvars` with the merged variables, secrets masked) and its
//! `--graph`. Output, not parsing: it lives with the other renderings so that the inventory layer
//! stays below the variables (the masking of secret-named values is theirs).

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::inventory::Inventory;
use crate::secret::SecretNames;

/// `ansible-inventory --list` for the whole inventory. Secret-named variables are masked.
pub fn list_json(inv: &Inventory) -> Value {
    list_json_masked(inv, &SecretNames::default())
}

/// `list_json`, masking the site's secrets too (`secret_vars`, vault-encrypted values).
pub fn list_json_masked(inv: &Inventory, secrets: &SecretNames) -> Value {
    let hosts = inv.group_hosts("all");
    let mut out = Map::new();
    let mut seen = indexmap::IndexSet::new();
    format_group(inv, "all", &hosts, &mut seen, &mut out);
    let mut hostvars = Map::new();
    for h in &hosts {
        let vars = inv.listed_host_vars(h);
        if !vars.is_empty() {
            let mut v = Value::Object(vars.into_iter().collect());
            secrets.mask(&mut v);
            hostvars.insert(h.clone(), v);
        }
    }
    out.insert("_meta".into(), json!({ "hostvars": hostvars, "profile": "inventory_legacy" }));
    Value::Object(out)
}

fn format_group(
    inv: &Inventory,
    name: &str,
    available: &[String],
    seen: &mut indexmap::IndexSet<String>,
    out: &mut Map<String, Value>,
) {
    let g = &inv.groups[name];
    let mut entry = Map::new();
    if name != "all" {
        let hosts: Vec<&String> = g.hosts.iter().filter(|h| available.contains(h)).collect();
        if !hosts.is_empty() {
            entry.insert("hosts".into(), json!(hosts));
        }
    }
    if !g.children.is_empty() {
        entry.insert("children".into(), json!(g.children));
    }
    // Insert before the children so that a child listed twice keeps its first position.
    if !entry.is_empty() {
        out.insert(name.to_string(), Value::Object(entry));
    }
    for c in &g.children {
        if seen.insert(c.clone()) {
            format_group(inv, c, available, seen, out);
        }
    }
}

/// JSON text as Python's `json.dumps(sort_keys=True, indent=4)` lays it out.
pub fn to_ansible_json(v: &Value) -> String {
    let sorted = sort_keys(v);
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    sorted.serialize(&mut ser).expect("JSON serialisation to memory");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sort_keys(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// `ansible-inventory --graph [GROUP]`.
pub fn graph(inv: &Inventory, group: &str) -> Option<String> {
    inv.groups.get(group)?;
    let mut lines = Vec::new();
    graph_group(inv, group, 0, &mut lines);
    Some(lines.join("\n"))
}

fn graph_group(inv: &Inventory, name: &str, depth: usize, lines: &mut Vec<String>) {
    let indent = |d: usize, s: &str| if d == 0 { s.to_string() } else { format!("{}--{s}", "  |".repeat(d)) };
    lines.push(indent(depth, &format!("@{name}:")));
    let g = &inv.groups[name];
    for c in &g.children {
        graph_group(inv, c, depth + 1, lines);
    }
    if name != "all" {
        for h in &g.hosts {
            lines.push(indent(depth + 1, h));
        }
    }
}

/// `ansible-inventory --host NAME`: the host's merged variables. Unlike `--list`, Ansible prints
/// unsafe text here unmarked (its encoder marks trust under `_meta.hostvars` only).
pub fn host_json(inv: &Inventory, host: &str) -> Option<Value> {
    host_json_masked(inv, host, &SecretNames::default())
}

/// `host_json`, masking the site's secrets too (`secret_vars`, vault-encrypted values).
pub fn host_json_masked(inv: &Inventory, host: &str, secrets: &SecretNames) -> Option<Value> {
    if !inv.hosts.contains_key(host) && !crate::inventory::is_implicit_localhost(host) {
        return None;
    }
    let mut v = Value::Object(inv.host_vars(host).into_iter().collect());
    secrets.mask(&mut v);
    Some(v)
}
