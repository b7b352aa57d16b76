//! A playbook file's plays, in order, and `import_playbook`: the imported file's plays in place
//! of the entry, as Ansible's playbook_include.py puts them. Apart from play.rs, which reads one
//! play, because an import reads a whole file again (its own directory, its own plays).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::node::{Key, Node};
use super::{Front, Place, load_time_name, play, taskfile};
use crate::error::Source;
use crate::playbook::{Play, Step};

/// The plays of a playbook file (its tree `root`), `import_playbook` entries expanded in place.
pub(super) fn plays_of(f: &mut Front, root: &Node, plays: &mut Vec<Play>, handlers: &mut Vec<Step>) {
    match root.as_seq() {
        Some(items) if !items.is_empty() => {
            for item in items {
                let import = item.as_map().and_then(|m| {
                    m.iter().find(|(k, _)| {
                        matches!(
                            k.name.as_str(),
                            "import_playbook"
                                | "ansible.builtin.import_playbook"
                                | "ansible.legacy.import_playbook"
                                | "include_playbook"
                        )
                    })
                });
                if let Some((k, v)) = import {
                    import_playbook(f, item, k, v, plays, handlers);
                } else {
                    // play() puts the play's variables in scope for its tasks.
                    let depth = f.scope.len();
                    let made = play::play(f, item, plays, handlers);
                    f.scope.truncate(depth);
                    if let Some((ps, hs)) = made {
                        plays.extend(ps);
                        handlers.extend(hs);
                    }
                }
            }
        }
        _ => f.p.add(
            root.line,
            root.column,
            "an Ansible playbook is a list of plays".into(),
            "not a list of plays",
            Some("each play is `- hosts: PATTERN` with its tasks".into()),
        ),
    }
}

/// `import_playbook: FILE` (relative to the importing playbook): its plays in place, as
/// Ansible's playbook_include.py puts them: the entry's `vars` over each play's own, its `tags`
/// added to each play's, its `when` before each task's own (fact gathering's too).
fn import_playbook(f: &mut Front, node: &Node, key: &Key, v: &Node, plays: &mut Vec<Play>, handlers: &mut Vec<Step>) {
    let before = f.p.count();
    if key.name == "include_playbook" {
        f.p.add_key(key, "include_playbook is not Ansible's: write import_playbook".into(), None);
        return;
    }
    let mut vars = crate::inventory::Vars::new();
    let mut tags: Vec<String> = Vec::new();
    let mut when = taskfile::Inherit::default();
    for (k, val) in node.as_map().unwrap_or_default() {
        match k.name.as_str() {
            "name" => {}
            "when" => {
                when.keyword(f, k, val);
            }
            "vars" => match val.to_value() {
                Value::Object(m) => vars.extend(m),
                Value::Null => {}
                _ => f.p.add_key(k, format!("vars: must be a mapping, not {}", val.what()), None),
            },
            "tags" => match val.to_value() {
                Value::String(s) => tags.extend(s.split(',').map(|x| x.trim().to_string())),
                Value::Array(a) if a.iter().all(Value::is_string) => {
                    tags.extend(a.iter().filter_map(|x| x.as_str().map(str::to_string)))
                }
                _ => f.p.add_key(k, "tags: a name or a list of names".into(), None),
            },
            _ if k == key => {}
            other => f.p.add_key(
                k,
                format!("'{other}' on import_playbook is not supported yet"),
                Some("import_playbook takes: name, vars, tags, when".into()),
            ),
        }
    }
    let Some(rel) = v.as_str() else {
        f.p.add(v.line, v.column, format!("import_playbook: a file name, not {}", v.what()), "here", None);
        return;
    };
    let rel = load_time_name(f, rel).unwrap_or_else(|| rel.to_string());
    let rel = rel.as_str();
    if rel.contains("{{") {
        f.p.add(
            v.line,
            v.column,
            format!("import_playbook: a templated file name ('{rel}') is not supported"),
            "here",
            None,
        );
        return;
    }
    if f.p.count() != before {
        return;
    }
    let path = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { f.dir.join(rel) };
    if !path.is_file() {
        f.p.add(
            v.line,
            v.column,
            format!("import_playbook: {rel} not found"),
            "this file",
            Some(format!("looked for {}", path.display())),
        );
        return;
    }
    let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if f.reading.contains(&canonical) {
        f.p.add(v.line, v.column, format!("import_playbook: {} imports itself", path.display()), "this import", None);
        return;
    }
    let source = match crate::error::read_source(&path) {
        Ok(s) => Source::new(taskfile::display_name(f, &path), s.text.as_str()),
        Err(e) => {
            f.p.add(v.line, v.column, format!("import_playbook: {e}"), "this file", None);
            return;
        }
    };
    let root: Node = match crate::yaml::parse_ansible::<Node>(&source) {
        Ok(mut n) => {
            n.keep_short_words(&source.text);
            n
        }
        Err(e) => {
            f.p.errors.push(e);
            return;
        }
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let place = Place { task_dir: dir.clone(), search: vec![dir.clone()], role_dir: None };
    if !f.plugin_dirs.contains(&dir) {
        f.plugin_dirs.push(dir.clone());
    }
    let outer_dir = std::mem::replace(&mut f.dir, dir);
    let start = plays.len();
    let hstart = handlers.len();
    let mut inner = f.import_vars.clone();
    inner.extend(vars.clone());
    let outer_vars = std::mem::replace(&mut f.import_vars, inner);
    f.within(source.clone(), canonical, place, |f| plays_of(f, &root, plays, handlers));
    f.import_vars = outer_vars;
    f.dir = outer_dir;
    for p in &mut plays[start..] {
        p.vars.extend(vars.clone());
        when.apply(&mut p.steps);
        for t in &tags {
            if !p.tags.contains(t) {
                p.tags.push(t.clone());
            }
        }
        p.file.get_or_insert_with(|| source.clone());
        for s in &mut p.steps {
            s.file.get_or_insert_with(|| source.clone());
        }
    }
    for h in &mut handlers[hstart..] {
        h.file.get_or_insert_with(|| source.clone());
    }
}
