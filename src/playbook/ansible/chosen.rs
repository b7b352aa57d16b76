//! `include_tasks` of a file named from what differs per host (`"setup-{{ ansible_os_family
//! }}.yml"`, a host variable, a registered result): copctl reads every task when the playbook is
//! loaded, so it reads each file the name can give (the files beside the includer whose names
//! match the name's literal parts) and puts a gate before each file's tasks that lets them in
//! only on the hosts whose rendered name is that file. The gates are never counted, so the recap
//! is Ansible's: the include itself (ok, or failed where the name gives none of those files),
//! then the picked file's tasks.
//!
//! A file the name can give but that copctl cannot run (an unsupported module, say) is not a
//! reason to refuse the playbook (a role's `setup-Archlinux.yml` on a site without Arch): its
//! gate fails, with the problem, on any host that picks it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::node::{Key, Node};
use super::taskfile::{Inherit, dynamic_checked, shown, tasks_file};
use super::{Front, Place, known};
use crate::playbook::Step;

/// At most so many files (or roles) are read for one such include: a name that gives more is
/// too loose to guess from.
const MOST: usize = 64;

/// A name template read for what it can give: the Jinja expression that renders it
/// (`'setup-' ~ (ansible_os_family) ~ '.yml'`), the pattern of the names it can give with the
/// number of `/` in them (`None` where it has no literal text), and the variable it is made of
/// where it is one (`{{ role_for_host }}`). `None` where it has a `{% %}` part.
pub(super) struct Name {
    pub expr: String,
    pub pattern: Option<(regex::Regex, usize)>,
    pub lone: Option<String>,
}

pub(super) fn parse(template: &str) -> Option<Name> {
    if template.contains("{%") {
        return None;
    }
    let parts = regex::Regex::new(r"(?s)\{\{(.*?)\}\}").expect("a valid pattern");
    let (mut expr, mut pattern, mut literal) = (Vec::new(), String::from("^"), String::new());
    let mut last = 0;
    let mut lit = |text: &str, expr: &mut Vec<String>, pattern: &mut String| {
        if !text.is_empty() {
            expr.push(quoted(text));
            pattern.push_str(&regex::escape(text));
            literal.push_str(text);
        }
    };
    let mut inner = Vec::new();
    for c in parts.captures_iter(template) {
        let m = c.get(0).expect("the whole match");
        lit(&template[last..m.start()], &mut expr, &mut pattern);
        expr.push(format!("({})", c[1].trim()));
        inner.push(c[1].trim().to_string());
        pattern.push_str("[^/]*");
        last = m.end();
    }
    lit(&template[last..], &mut expr, &mut pattern);
    pattern.push('$');
    let ident = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let lone = match (inner.as_slice(), literal.trim().is_empty()) {
        ([one], true) if ident(one) => Some(one.clone()),
        _ => None,
    };
    let pattern = if literal.trim_matches(|c| c == '.' || c == '/' || c == ' ').is_empty() {
        None
    } else {
        regex::Regex::new(&pattern).ok().map(|re| (re, literal.matches('/').count()))
    };
    Some(Name { expr: expr.join(" ~ "), pattern, lone })
}

/// The files (or directories, `dirs`) under `root` exactly `depth` directories down whose
/// path (relative to `root`) `re` matches, by name.
pub(super) fn matching(
    root: &Path,
    rel: &str,
    depth: usize,
    re: &regex::Regex,
    dirs: bool,
    out: &mut Vec<(String, PathBuf)>,
) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let is_dir = e.path().is_dir();
        if depth == 0 && is_dir == dirs && re.is_match(&r) {
            out.push((r, e.path()));
        } else if depth > 0 && is_dir {
            matching(root, &r, depth - 1, re, dirs, out);
        }
    }
}

/// The values the inventory gives `var` on its hosts (text only), sorted.
pub(super) fn inventory_values(f: &Front, var: &str) -> Vec<String> {
    let Some(inv) = &f.inventory else { return Vec::new() };
    let mut v: Vec<String> = inv
        .hosts
        .keys()
        .filter_map(|h| inv.host_vars(h).get(var).and_then(Value::as_str).map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// A gate (`Step::gate`) before `out[from..]`, written at `at`: those steps run on a host only
/// where `when` holds there; the gate itself is neither shown nor counted.
pub(super) fn gate_before(
    f: &mut Front,
    when: String,
    name: String,
    from: usize,
    at: (usize, usize),
    out: &mut Vec<Step>,
) {
    let def = json!({"name": name, "when": [when], "assert": {"that": ["true"]}});
    gate_with(f, def, from, at, out)
}

/// `gate_before` with the gate's own step definition (an assert: one that fails stops the
/// hosts that reach it).
fn gate_with(f: &mut Front, def: Value, from: usize, at: (usize, usize), out: &mut Vec<Step>) {
    let def = serde_json::from_value(def).expect("a valid assert step");
    match crate::playbook::validate_step(&f.p.source, def, at.0, at.1, false) {
        Ok(mut g) => {
            let id = f.next_include;
            f.next_include += 1;
            g.gate = true;
            g.include = Some(id);
            for s in &mut out[from..] {
                s.within.push(id);
            }
            out.insert(from, g);
        }
        Err(e) => f.p.errors.push(e),
    }
}

/// A Jinja string literal.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// An include whose name (`template`, at `at` of the current file) gives one of `names`
/// depending on the host: `read` expands each name's tasks, each behind its gate (a name whose
/// tasks copctl cannot run: a gate that fails there, and a warning), then the include's own
/// step at `start`, failing where the name gives none of them.
#[allow(clippy::too_many_arguments)]
pub(super) fn gated(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    (what, template, at): (&str, &str, (usize, usize)),
    (expr, names, looked): (&str, &[String], &str),
    mut read: impl FnMut(&mut Front, &str, &mut Vec<Step>),
    out: &mut Vec<Step>,
) {
    let (line, column) = at;
    let start = out.len();
    for name in names {
        let (problems, from) = (f.p.count(), out.len());
        let flushes = (f.flush_pending.clone(), f.flush_before.len());
        read(f, name, out);
        let when = format!("({expr}) == {}", quoted(name));
        let mut def =
            json!({"name": format!("{what}: {name}, where picked"), "when": [when], "assert": {"that": ["true"]}});
        if f.p.count() != problems {
            // What it holds that copctl cannot run stops the hosts that pick it, there.
            let errors = f.p.errors.split_off(problems);
            let first = errors.first().map(|e| e.to_string()).unwrap_or_default();
            let here = format!("{}:{line}:{column}", f.p.source.name);
            for e in &errors {
                f.warnings.push(format!(
                    "{here}: {what} '{template}' may pick {name}, which copctl cannot run (a host that picks it fails there): {e}"
                ));
            }
            out.truncate(from);
            f.flush_pending = flushes.0;
            f.flush_before.truncate(flushes.1);
            let msg = format!("{what}: {name} (picked by '{template}') cannot run under copctl: {first}");
            def["assert"] = json!({"that": ["false"], "fail_msg": format!("{{% raw %}}{msg}{{% endraw %}}")});
        }
        gate_with(f, def, from, (line, column), out);
    }
    let listed = names.join(", ");
    let that = format!("({expr}) in [{}]", names.iter().map(|n| quoted(n)).collect::<Vec<_>>().join(", "));
    let msg = format!(
        "{what}: {{{{ {expr} }}}} is none of those {{% raw %}}'{template}'{{% endraw %}} could name when the playbook was loaded: {listed} ({looked})"
    );
    dynamic_checked(f, node, key, inherit, start, out, that, msg);
}

/// `include_tasks: <template>` whose template the playbook's variables do not tell: the
/// files it can give (named by part of the template, or the inventory's values of the one
/// variable it is), each behind its gate.
pub fn include(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    (rel, line, column): (&str, usize, usize),
    out: &mut Vec<Step>,
) {
    let help = "copctl reads the files such a name can give when the playbook is loaded: write part of the name literally ('setup-{{ ansible_os_family }}.yml'), set the variable in the inventory, or name the file";
    if let Some(terms) = first_found_terms(&inherit, rel) {
        return first_found(f, node, key, inherit, (rel, line, column), &terms, out);
    }
    let Some(name) = parse(rel).filter(|n| n.pattern.is_some() || n.lone.is_some()) else {
        f.p.add(
            line,
            column,
            format!("include_tasks: a file name wholly from a template ('{rel}') is not supported"),
            "here",
            Some(help.into()),
        );
        return;
    };
    let mut dirs = vec![f.place.task_dir.clone()];
    if let Some(role) = &f.place.role_dir {
        dirs.push(role.join("tasks"));
    }
    dirs.push(f.dir.clone());
    dirs.dedup();
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for d in &dirs {
        let mut here = Vec::new();
        match (&name.pattern, &name.lone) {
            (Some((re, depth)), _) => matching(d, "", *depth, re, false, &mut here),
            (None, Some(var)) => {
                here = inventory_values(f, var)
                    .into_iter()
                    .map(|v| (v.clone(), d.join(&v)))
                    .filter(|(_, p)| p.is_file())
                    .collect();
            }
            (None, None) => {}
        }
        for (r, p) in here {
            if !found.iter().any(|(x, _)| *x == r) {
                found.push((r, p));
            }
        }
    }
    let looked = format!("looked in {}", dirs.iter().map(|d| shown(d)).collect::<Vec<_>>().join(", "));
    if found.is_empty() {
        let why = match &name.lone {
            Some(var) if name.pattern.is_none() => match inventory_values(f, var) {
                v if v.is_empty() => format!("the file's name is {var}, which the inventory does not set"),
                v => format!("no file is named as the inventory's values of {var} ({})", v.join(", ")),
            },
            _ => format!("no file matches '{rel}'"),
        };
        f.p.add(line, column, format!("include_tasks: {why}"), "this file", Some(format!("{looked}; {help}")));
        return;
    }
    if found.len() > MOST {
        f.p.add(
            line,
            column,
            format!("include_tasks: '{rel}' matches {} files, more than {MOST}", found.len()),
            "this file",
            Some("copctl reads each file such a name can give: write more of the name literally".into()),
        );
        return;
    }
    let names: Vec<String> = found.iter().map(|(r, _)| r.clone()).collect();
    let read = reader(&found, inherit.tags.clone(), inherit.scope(), (line, column));
    gated(f, node, key, inherit, ("include_tasks", rel, (line, column)), (&name.expr, &names, &looked), read, out);
}

/// The terms of `include_tasks: "{{ lookup('first_found', NAME) }}"` where NAME is a list of
/// names of the include's own `vars` (each a name or a name template): Ansible's first of
/// them that is a file.
fn first_found_terms(inherit: &Inherit, rel: &str) -> Option<Vec<String>> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r#"^\s*\{\{\s*lookup\(\s*['"](?:ansible\.builtin\.)?first_found['"]\s*,\s*([A-Za-z_]\w*)\s*\)\s*\}\}\s*$"#,
        )
        .expect("a valid pattern")
    });
    let var = RE.captures(rel)?.get(1)?.as_str().to_string();
    match inherit.scope().get(&var)? {
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_string) => {
            Some(a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
        }
        Value::String(t) => Some(vec![t.clone()]),
        _ => None,
    }
}

/// `include_tasks` of the first of `terms` that is a file (the first_found lookup over the
/// include's own list): the files each term can give (a name as written, a template's by its
/// literal parts), each behind its gate; on a host, the first term whose name there is one of
/// them picks it, as Ansible's lookup does.
fn first_found(
    f: &mut Front,
    node: &Node,
    key: &Key,
    inherit: Inherit,
    (rel, line, column): (&str, usize, usize),
    terms: &[String],
    out: &mut Vec<Step>,
) {
    let mut dirs = vec![f.place.task_dir.clone()];
    if let Some(role) = &f.place.role_dir {
        dirs.push(role.join("tasks"));
    }
    dirs.push(f.dir.clone());
    dirs.dedup();
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut exprs: Vec<String> = Vec::new();
    for term in terms {
        let Some(name) = parse(term) else {
            f.p.add(
                line,
                column,
                format!("include_tasks: first_found term '{term}' has a {{% %}} part, which is not supported"),
                "here",
                None,
            );
            return;
        };
        // A template is matched beside the includer (in a role, its tasks/) only, never
        // against the file being read.
        let near = if f.place.role_dir.is_some() { &dirs[..dirs.len() - 1] } else { &dirs[..] };
        for d in if term.contains("{{") { near } else { &dirs[..] } {
            let mut here = Vec::new();
            match &name.pattern {
                _ if !term.contains("{{") && d.join(term).is_file() => here.push((term.clone(), d.join(term))),
                _ if !term.contains("{{") => {}
                Some((re, depth)) => matching(d, "", *depth, re, false, &mut here),
                None => {}
            }
            for (r, p) in here {
                let reading = std::fs::canonicalize(&p).is_ok_and(|c| f.reading.contains(&c));
                if !reading && !found.iter().any(|(x, _)| *x == r) {
                    found.push((r, p));
                }
            }
        }
        exprs.push(name.expr);
    }
    let looked = format!("looked in {}", dirs.iter().map(|d| shown(d)).collect::<Vec<_>>().join(", "));
    if found.is_empty() || found.len() > MOST {
        f.p.add(
            line,
            column,
            format!("include_tasks: no file matches the first_found terms of '{rel}' ({})", terms.join(", ")),
            "this file",
            Some(looked),
        );
        return;
    }
    let names: Vec<String> = found.iter().map(|(r, _)| r.clone()).collect();
    let listed = format!("[{}]", names.iter().map(|n| quoted(n)).collect::<Vec<_>>().join(", "));
    // The first term whose name is one of the files, as an expression the host evaluates.
    let expr =
        exprs.iter().rev().fold("''".to_string(), |rest, e| format!("(({e}) if (({e}) in {listed}) else ({rest}))"));
    let read = reader(&found, inherit.tags.clone(), inherit.scope(), (line, column));
    gated(f, node, key, inherit, ("include_tasks", rel, (line, column)), (&expr, &names, &looked), read, out);
}

/// Reads the file a name picked as the include's tasks: its own directory searched first, the
/// include's tags and variables over them (both kinds of picked include read files so).
fn reader(
    found: &[(String, PathBuf)],
    tags: Vec<String>,
    scope: serde_json::Map<String, serde_json::Value>,
    at: (usize, usize),
) -> impl Fn(&mut Front, &str, &mut Vec<Step>) + '_ {
    move |f: &mut Front, name: &str, out: &mut Vec<Step>| {
        let Some((_, path)) = found.iter().find(|(r, _)| r == name) else { return };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let search: Vec<_> = std::iter::once(dir.clone()).chain(f.place.search.iter().cloned()).collect();
        let place = Place { task_dir: dir, search, role_dir: f.place.role_dir.clone() };
        f.include_tags.push(tags.clone());
        known::with(f, scope.clone(), |f| tasks_file(f, path, at, "include_tasks", place, false, out));
        f.include_tags.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::{first_found_terms, parse};

    #[test]
    fn a_first_found_include_names_its_terms() {
        let mut inherit = super::Inherit::default();
        inherit.vars.insert("files".into(), serde_json::json!(["{{ ansible_os_family | lower }}.yml", "default.yml"]));
        let terms = first_found_terms(&inherit, "{{ lookup('first_found', files)}}").unwrap();
        assert_eq!(terms, ["{{ ansible_os_family | lower }}.yml", "default.yml"]);
        assert!(first_found_terms(&inherit, "{{ lookup('first_found', other) }}").is_none());
        assert!(first_found_terms(&inherit, "{{ files }}").is_none());
    }

    #[test]
    fn a_name_becomes_an_expression_and_a_pattern() {
        let n = parse("setup-{{ ansible_os_family | lower }}.yml").unwrap();
        assert_eq!(n.expr, "'setup-' ~ (ansible_os_family | lower) ~ '.yml'");
        let (re, depth) = n.pattern.unwrap();
        assert!(re.is_match("setup-debian.yml"));
        assert!(!re.is_match("setup-debian.yaml"));
        assert!(!re.is_match("os/setup-debian.yml"));
        assert_eq!((depth, n.lone), (0, None));
        let n = parse("os/{{ x }}/it's.yml").unwrap();
        assert_eq!(n.expr, r"'os/' ~ (x) ~ '/it\'s.yml'");
        let (re, depth) = n.pattern.unwrap();
        assert!(re.is_match("os/a/it's.yml"));
        assert_eq!(depth, 2);
        let n = parse("{{ file }}").unwrap();
        assert_eq!((n.expr.as_str(), n.pattern.is_none(), n.lone.as_deref()), ("(file)", true, Some("file")));
        let n = parse("{{ dir }}/{{ file }}").unwrap();
        assert!(n.pattern.is_none() && n.lone.is_none());
        assert!(parse("{% if x %}a.yml{% endif %}").is_none());
    }
}
