//! The one YAML loader (serde-saphyr: YAML 1.2, pure Rust, maintained, with source locations on
//! every error and `Spanned<T>` for our own checks; serde_norway would keep the unsafe libyaml
//! port and YAML 1.1 habits). Strict booleans: `yes`/`no` stay strings, as YAML 1.2 says, so an
//! operator who writes `enabled: yes` gets an error at that line instead of a silent guess.

pub(crate) mod node;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result, Source};

/// The most YAML nodes a file may hold (a 10 MB env.yaml has about 250,000).
const MAX_NODES: usize = 5_000_000;

fn options() -> serde_saphyr::Options {
    // The parser's default budget (250,000 nodes) stops at about 10 MB of settings; operators'
    // own files may be that large (generated host lists), runaway ones are still stopped.
    serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        budget: serde_saphyr::budget! { max_nodes: MAX_NODES, max_events: 4 * MAX_NODES },
    }
}

/// Deserializes `source`, turning a YAML or schema error into a located diagnostic.
pub fn parse<T: DeserializeOwned>(source: &Source) -> Result<T> {
    serde_saphyr::from_str_with_options::<T>(&source.text, options()).map_err(|e| located(source, &e))
}

/// Files that Ansible itself reads (inventories, group_vars/ and host_vars/): their values mean
/// what they mean to Ansible's YAML 1.1 loader, so that a site works unchanged: `yes`/`no`/
/// `on`/`off` are booleans, `0755` is octal. (Still YAML 1.2 elsewhere: `1e3` is a number, and
/// `y`/`n` are booleans here, where PyYAML keeps both as strings.)
pub fn parse_ansible<T: DeserializeOwned>(source: &Source) -> Result<T> {
    let options = serde_saphyr::options! {
        strict_booleans: false,
        legacy_octal_numbers: true,
        with_snippet: false,
        budget: serde_saphyr::budget! { max_nodes: MAX_NODES, max_events: 4 * MAX_NODES },
    };
    serde_saphyr::from_str_with_options::<T>(&source.text, options).map_err(|e| located(source, &e))
}

/// `parse_ansible` of a variables file: a `!unsafe` value in it is kept as written (read
/// through the node tree (node.rs), which knows the tag; see `text::python::literal`).
pub fn parse_ansible_vars<T: DeserializeOwned>(source: &Source) -> Result<T> {
    if !source.text.contains("!unsafe") {
        return parse_ansible(source);
    }
    let node: Option<node::Node> = parse_ansible(source)?;
    let value = node.map_or(serde_json::Value::Null, |n| n.to_value());
    // Not the shape asked for: the plain reading says where, as it would have.
    serde_json::from_value(value).or_else(|_| parse_ansible(source))
}

pub fn located(source: &Source, e: &serde_saphyr::Error) -> Error {
    let (line, col) = e.location().map(|l| (l.line() as usize, l.column() as usize)).unwrap_or((1, 1));
    let message = e.to_string();
    // serde-saphyr appends "at line X column Y"; the location is shown by our own rendering.
    let message = match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    };
    let help = yaml_hint(&message, &source.text, line);
    source.error_at(line.max(1), col.max(1), 0, message, "here", help)
}

fn yaml_hint(message: &str, text: &str, line: usize) -> Option<String> {
    let src_line = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    if src_line.contains('\t') {
        return Some("YAML does not allow tabs for indentation: use spaces".into());
    }
    if message.contains("unknown field") {
        return Some("check the spelling against the playbook format in README.md".into());
    }
    if message.contains("duplicate") {
        return Some("each key may appear once in a mapping: remove or rename one".into());
    }
    if message.contains("budget breached") {
        return Some(format!(
            "the file is larger than copctl reads ({MAX_NODES} YAML nodes, about 200 MB): split it, or remove generated content"
        ));
    }
    if message.contains("bool") {
        return Some("write true or false (YAML 1.2: yes/no/on/off are strings)".into());
    }
    None
}
