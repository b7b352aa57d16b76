//! Which env.yaml keys the playbooks and templates read: one source for the reference page's
//! table (tests/docs.rs) and for the warning about a key no playbook or template reads (a typo
//! such as `rke2_verison` would otherwise pass silently, its default applying).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use regex::Regex;

use crate::site::Site;

/// Each playbook's name and its text with that of the step lists it imports and the templates
/// it names (a site's own playbooks and templates first, then the shipped ones).
pub fn playbook_texts(site: &Site) -> Vec<(String, String)> {
    let import = Regex::new(r"import_steps:\s*(\S+)").expect("a valid pattern");
    let template = Regex::new(r"src:\s*([A-Za-z0-9_./-]+\.j2)").expect("a valid pattern");
    let templates_of = |text: &str, out: &mut String| {
        for t in template.captures_iter(text) {
            out.push_str(&site.templates.source(&t[1]).unwrap_or_default());
        }
    };
    let mut out = Vec::new();
    for name in site.playbooks.names() {
        let Some(own) = site
            .playbooks
            .file_text(&format!("{name}.yaml"))
            .or_else(|| site.playbooks.file_text(&format!("{name}.yml")))
        else {
            continue;
        };
        let mut text = own.clone();
        for c in import.captures_iter(&own) {
            let steps = site.playbooks.file_text(&c[1]).unwrap_or_default();
            templates_of(&steps, &mut text);
            text.push_str(&steps);
        }
        templates_of(&own, &mut text);
        out.push((name, text));
    }
    out
}

/// The playbooks (of `texts`) whose text reads `key` (names it as a whole word).
pub fn readers<'a>(key: &str, texts: &'a [(String, String)]) -> Vec<&'a str> {
    texts.iter().filter(|(_, t)| words(t).contains(key)).map(|(n, _)| n.as_str()).collect()
}

/// The names (identifier-like words) of a text.
fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect()
}

/// Every file under `dir` (a site's own playbook or template directory: its roles, task files
/// and templates read variables too), at most `most` of them.
fn dir_texts(dir: &Path, out: &mut Vec<String>, most: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if out.len() >= most {
            return;
        }
        let p = e.path();
        if p.is_dir() {
            dir_texts(&p, out, most);
        } else if let Ok(t) = std::fs::read_to_string(&p) {
            out.push(t);
        }
    }
}

/// A warning for each env.yaml key that no playbook, step list or template (shipped or the
/// site's own) nor another env.yaml value reads, with the closest name they do read:
/// `FILE:LINE: 'KEY' is read by no playbook or template (did you mean: NAME?)`. Keys listed
/// in `secret_vars` are the site's own (given to a playbook by `-e` or a lookup).
pub fn unread_keys(site: &Site) -> Vec<String> {
    let Some(source) = &site.env.source else { return vec![] };
    let mut texts: Vec<String> = playbook_texts(site).into_iter().map(|(_, t)| t).collect();
    for dir in [&site.playbooks.override_dir, &site.templates.override_dir].into_iter().flatten() {
        dir_texts(dir, &mut texts, 10_000);
    }
    let values: Vec<String> = site.env.vars.values().map(|v| v.to_string()).collect();
    let known: BTreeSet<&str> = texts.iter().chain(&values).flat_map(|t| words(t)).collect();
    let unread: Vec<&String> =
        site.env.vars.keys().filter(|k| !known.contains(k.as_str()) && !site.env.secret_names.contains(*k)).collect();
    if unread.is_empty() {
        return vec![];
    }
    // Each top-level key's line, from one pass over the file (a site may hold many keys).
    let mut lines: HashMap<&str, usize> = HashMap::new();
    for (i, l) in source.text.lines().enumerate() {
        if let Some((k, _)) = l.split_once(':').filter(|(k, _)| !k.starts_with([' ', '\t', '#', '-'])) {
            lines.entry(k.trim_end()).or_insert(i + 1);
        }
    }
    let names: Vec<&str> =
        known.iter().copied().filter(|w| w.contains('_') && !w.starts_with(|c: char| c.is_ascii_digit())).collect();
    let mut out = Vec::new();
    for key in unread.iter().take(MOST_UNREAD) {
        let line = lines.get(key.as_str()).copied().unwrap_or(1);
        let close = crate::text::closest::closest(key, &names, 3);
        let mut msg = format!("{}:{line}: '{key}' is read by no playbook or template", source.name);
        if !close.is_empty() {
            msg.push_str(&format!(" (did you mean: {}?)", close.join(", ")));
        }
        out.push(msg);
    }
    if unread.len() > MOST_UNREAD {
        out.push(format!(
            "{}: {} more keys are read by no playbook or template (the first {MOST_UNREAD} are named above)",
            source.name,
            unread.len() - MOST_UNREAD
        ));
    }
    out
}

/// How many unread keys are named one by one; the rest are counted in one line.
const MOST_UNREAD: usize = 20;
