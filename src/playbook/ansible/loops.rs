//! Loops: `loop` and the `with_*` keywords as the native `loop` (a list known when the
//! playbook is loaded, or a template giving one when the loop runs), and `loop_control`. Tasks,
//! includes and roles loop alike, so they all read their loops here.

use serde_json::{Map, Value, json};

use super::Front;
use super::keywords::flag;
use super::node::{Key, Node};

/// `with_items`: `loop` over the list flattened one level, as Ansible does: a literal list when
/// the playbook is loaded, a templated one when the loop runs.
fn with_items(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                match i {
                    Value::Array(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            Some(Value::Array(out))
        }
        // One expression: flattened when the loop runs.
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | with_items_flatten }}}}")))
        }
        _ => {
            f.p.add_key(
                k,
                "with_items: a list, or one {{ expression }} giving a list".into(),
                Some("write loop: instead".into()),
            );
            None
        }
    }
}

/// A task's own `vars:` as written (what a templated `loop_var` may name).
pub(super) fn own_vars(map: &[(Key, Node)]) -> Map<String, Value> {
    map.iter().find(|(k, _)| k.name == "vars").and_then(|(_, v)| v.to_value().as_object().cloned()).unwrap_or_default()
}

/// The loop keywords a task (or an include) takes.
pub(super) const LOOPS: &[&str] = &[
    "loop",
    "with_items",
    "with_dict",
    "with_list",
    "with_sequence",
    "with_together",
    "with_nested",
    "with_subelements",
    "with_first_found",
];

/// One of `LOOPS` as the native `loop`: a list, or a template giving one when the loop runs.
pub(super) fn loop_items(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match k.name.as_str() {
        "with_items" => with_items(f, k, v),
        "with_dict" => with_dict(f, k, v),
        "with_list" => with_list(f, k, v),
        "with_sequence" => with_sequence(f, k, v),
        "with_together" => with_together(f, k, v),
        "with_nested" => with_nested(f, k, v),
        "with_subelements" => with_subelements(f, k, v),
        "with_first_found" => with_first_found(f, k, v),
        "with_fileglob" => with_fileglob(f, k, v),
        "with_indexed_items" => with_lookup(f, k, v, "indexed_items"),
        "with_inventory_hostnames" => with_lookup(f, k, v, "inventory_hostnames"),
        "with_lines" => with_lookup(f, k, v, "lines"),
        "with_random_choice" => with_lookup(f, k, v, "random_choice"),
        _ => Some(v.to_value()),
    }
}

/// `loop_control`: `loop_var`, `index_var`, `label`, `pause` and `extended` as Ansible has
/// them; a `loop_var` templated from one of the task's own `vars` (`vars`) is that value.
pub(super) fn loop_control(f: &mut Front, k: &Key, v: &Node, vars: &Map<String, Value>) -> Option<Value> {
    let Some(m) = v.as_map() else {
        f.p.add_key(k, format!("loop_control: must be a mapping, not {}", v.what()), None);
        return None;
    };
    let mut out = Map::new();
    for (ck, cv) in m {
        match ck.name.as_str() {
            n @ ("loop_var" | "index_var" | "label") => match cv.to_value() {
                Value::String(s) if n == "loop_var" && s.contains("{{") => {
                    match lone_expression(&s).and_then(|e| vars.get(e)).and_then(Value::as_str) {
                        Some(name) if !name.contains("{{") => {
                            out.insert(n.into(), Value::from(name));
                        }
                        _ => f.p.add_key(
                            ck,
                            "loop_control: a loop_var templated from other than the task's own vars is not supported yet"
                                .into(),
                            None,
                        ),
                    }
                }
                Value::String(s) => {
                    out.insert(n.into(), Value::String(s));
                }
                other => f.p.add_key(ck, format!("loop_control: {n} must be text, not {other}"), None),
            },
            "pause" => match cv.to_value() {
                Value::Number(x) if x.as_f64().is_some_and(|p| p >= 0.0) => {
                    out.insert("pause".into(), Value::Number(x));
                }
                other => f.p.add_key(ck, format!("loop_control: pause is a number of seconds, not {other}"), None),
            },
            "extended" => {
                if let Some(b) = flag(f, ck, cv) {
                    out.insert("extended".into(), Value::Bool(b));
                }
            }
            "extended_allitems" => {
                if let Some(b) = flag(f, ck, cv) {
                    out.insert("extended_allitems".into(), Value::Bool(b));
                }
            }
            "break_when" => match cv.to_value() {
                Value::String(c) => {
                    out.insert("break_when".into(), json!([c]));
                }
                Value::Bool(b) => {
                    out.insert("break_when".into(), json!([if b { "True" } else { "False" }]));
                }
                Value::Array(cs) if cs.iter().all(Value::is_string) => {
                    out.insert("break_when".into(), Value::Array(cs));
                }
                other => f.p.add_key(
                    ck,
                    format!("loop_control: break_when is a condition or a list of them, not {other}"),
                    None,
                ),
            },
            other => f.p.add_key(
                ck,
                format!("loop_control: {other} is not supported yet"),
                Some(
                    "loop_control takes: loop_var, index_var, label, pause, extended, extended_allitems, break_when"
                        .into(),
                ),
            ),
        }
    }
    Some(Value::Object(out))
}

/// `with_dict`: `loop` over the mapping's `{key, value}` items, as Ansible's dict lookup gives
/// them: a literal mapping when the playbook is loaded, a templated one when the loop runs.
fn with_dict(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        Value::Object(m) => {
            Some(Value::Array(m.into_iter().map(|(key, value)| json!({"key": key, "value": value})).collect()))
        }
        Value::String(s)
            if s.trim().starts_with("{{") && s.trim().ends_with("}}") && s.trim().matches("{{").count() == 1 =>
        {
            let expr = s.trim().trim_start_matches("{{").trim_end_matches("}}").trim();
            Some(Value::String(format!("{{{{ ({expr}) | with_dict_items }}}}")))
        }
        _ => {
            f.p.add_key(k, "with_dict: a mapping, or one {{ expression }} giving a mapping".into(), None);
            None
        }
    }
}

/// One `{{ expression }}` and nothing else: its expression.
pub(super) fn lone_expression(s: &str) -> Option<&str> {
    let t = s.trim();
    (t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1)
        .then(|| t.trim_start_matches("{{").trim_end_matches("}}").trim())
}

/// `with_list`: `loop` as it is, unflattened (Ansible's list lookup).
fn with_list(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    match v.to_value() {
        a @ Value::Array(_) => Some(a),
        Value::String(ref s) if let Some(expr) = lone_expression(s) => {
            Some(Value::String(format!("{{{{ ({expr}) | with_list_terms }}}}")))
        }
        _ => {
            f.p.add_key(k, "with_list: a list, or one {{ expression }} giving a list".into(), None);
            None
        }
    }
}

/// `with_together`: the lists zipped item by item, a shorter list's missing items null (Ansible's
/// together lookup, `zip_longest`), from literal lists or `{{ expressions }}` each giving one.
fn with_together(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let Value::Array(lists) = v.to_value() else {
        f.p.add_key(k, "with_together: a list of lists".into(), None);
        return None;
    };
    if lists.is_empty() {
        f.p.add_key(k, "with_together: requires at least one element in each list".into(), None);
        return None;
    }
    if let Some(literal) = lists.iter().map(|l| l.as_array().cloned()).collect::<Option<Vec<_>>>() {
        let n = literal.iter().map(Vec::len).max().unwrap_or(0);
        return Some(Value::Array(
            (0..n)
                .map(|i| Value::Array(literal.iter().map(|l| l.get(i).cloned().unwrap_or(Value::Null)).collect()))
                .collect(),
        ));
    }
    let mut exprs = Vec::new();
    for l in &lists {
        match l {
            Value::Array(_) => exprs.push(l.to_string()),
            Value::String(s) => match lone_expression(s) {
                Some(e) => exprs.push(format!("({e})")),
                None => exprs.push(Value::String(s.clone()).to_string()),
            },
            other => {
                f.p.add_key(k, format!("with_together: each entry is a list, not {other}"), None);
                return None;
            }
        }
    }
    Some(Value::String(format!("{{{{ [{}] | with_together }}}}", exprs.join(", "))))
}

/// `with_nested`: every combination of the lists, the first outermost (Ansible's nested
/// lookup), computed when the loop runs; a term may be a list or a template giving one.
fn with_nested(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) if !a.is_empty() => a,
        Value::String(ref s) if let Some(e) = lone_expression(s) => {
            return Some(Value::String(format!("{{{{ ({e}) | with_nested }}}}")));
        }
        _ => {
            f.p.add_key(k, "with_nested requires at least one element in the nested list".into(), None);
            return None;
        }
    };
    let mut exprs = Vec::new();
    for t in &terms {
        match template_expr(t) {
            Some(e) => exprs.push(e),
            None => {
                f.p.add_key(k, format!("with_nested: a {{% %}} block in a term ({t}) is not supported yet"), None);
                return None;
            }
        }
    }
    Some(Value::String(format!("{{{{ [{}] | with_nested }}}}", exprs.join(", "))))
}

/// `with_subelements`: `[LIST, KEY]` or `[LIST, KEY, {skip_missing: BOOL}]`, each element of the
/// list (a template, or written out) with each item of its KEY list, as Ansible's subelements
/// lookup pairs them when the loop runs (the `subelements` filter with the lookup's rules).
fn with_subelements(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let help = || Some("with_subelements: [LIST, KEY] or [LIST, KEY, {skip_missing: true}]".to_string());
    let Value::Array(terms) = v.to_value() else {
        f.p.add_key(k, "subelements lookup expects a list of two or three items".into(), help());
        return None;
    };
    let (list, key, flags) = match terms.as_slice() {
        [l, Value::String(key)] => (l, key, None),
        [l, Value::String(key), Value::Object(flags)] => (l, key, Some(flags)),
        _ => {
            f.p.add_key(k, "subelements lookup expects a list of two or three items, first a dict or a list, second a string pointing to the subkey".into(), help());
            return None;
        }
    };
    let skip = match flags.map(|m| m.iter().collect::<Vec<_>>()).as_deref() {
        None | Some([]) => false,
        Some([(name, Value::Bool(b))]) if *name == "skip_missing" => *b,
        _ => {
            f.p.add_key(k, "the optional third item must be a dict with flags ['skip_missing']".into(), help());
            return None;
        }
    };
    if key.contains("{{") || key.contains("{%") {
        f.p.add_key(k, "with_subelements: a templated key is not supported yet".into(), help());
        return None;
    }
    let Some(e) = template_expr(list) else {
        f.p.add_key(k, "with_subelements: a {% %} block in the list is not supported yet".into(), None);
        return None;
    };
    Some(Value::String(format!(
        "{{{{ {e} | subelements({}, skip_missing={}, lookup=true) }}}}",
        json!(key),
        if skip { "true" } else { "false" }
    )))
}

/// `with_first_found`: a loop over the first file of the terms that exists on the bastion (none,
/// with `skip`), found as Ansible's first_found lookup finds it; the module's name picks the
/// subdirectory looked in first (`__SUBDIR__` until it is known: `first_found_subdir`).
fn with_first_found(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let term = v.to_value();
    match template_expr(&term) {
        Some(e) => Some(Value::String(format!("{{{{ query('first_found', {e}, _subdir='__SUBDIR__') }}}}"))),
        None => {
            f.p.add_key(k, "with_first_found: a {% %} block inside a term is not supported yet".into(), None);
            None
        }
    }
}

/// `with_fileglob`: a loop over the files the patterns match on the bastion (Ansible's fileglob
/// lookup: `files/` and the search path), found when the loop runs.
fn with_fileglob(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) => a,
        other => vec![other],
    };
    match terms.iter().map(template_expr).collect::<Option<Vec<_>>>() {
        Some(e) => Some(Value::String(format!("{{{{ query('fileglob', {}) }}}}", e.join(", ")))),
        None => {
            f.p.add_key(k, "with_fileglob: a {% %} block inside a pattern is not supported yet".into(), None);
            None
        }
    }
}

/// `with_<lookup>`: the lookup's list over the terms (a list, or one term), when the loop runs.
fn with_lookup(f: &mut Front, k: &Key, v: &Node, lookup: &str) -> Option<Value> {
    let terms = match v.to_value() {
        Value::Array(a) => a,
        Value::String(s) if lone_expression(&s).is_some() => {
            let e = lone_expression(&s).unwrap_or_default().to_string();
            return Some(Value::String(format!("{{{{ query('{lookup}', ({e})) }}}}")));
        }
        other => vec![other],
    };
    match terms.iter().map(template_expr).collect::<Option<Vec<_>>>() {
        Some(e) => Some(Value::String(format!("{{{{ query('{lookup}', {}) }}}}", e.join(", ")))),
        None => {
            f.p.add_key(k, format!("{}: a {{% %}} block inside a term is not supported yet", k.name), None);
            None
        }
    }
}

/// The subdirectory Ansible's `with_first_found` looks in for a module: `templates` for a
/// template module, `vars` for include_vars, else `files`.
pub(super) fn first_found_subdir(module_key: &str) -> &'static str {
    ["template", "var", "file"].into_iter().find(|s| module_key.contains(s)).map_or("files", |s| match s {
        "template" => "templates",
        "var" => "vars",
        _ => "files",
    })
}

/// A value as a Jinja expression giving it, its texts' `{{ expressions }}` evaluated in place
/// (`"{{ os }}.yml"` is `(os) ~ ".yml"`); none for a `{% %}` block.
fn template_expr(v: &Value) -> Option<String> {
    Some(match v {
        Value::String(s) if s.contains("{%") => return None,
        Value::String(s) if let Some(e) = lone_expression(s) => format!("({e})"),
        Value::String(s) if s.contains("{{") => {
            let parts = regex::Regex::new(r"(?s)\{\{(.*?)\}\}").expect("a valid pattern");
            let mut out = Vec::new();
            let mut last = 0;
            for c in parts.captures_iter(s) {
                let m = c.get(0).expect("the match");
                if m.start() > last {
                    out.push(json!(&s[last..m.start()]).to_string());
                }
                out.push(format!("(({}) | string)", c[1].trim()));
                last = m.end();
            }
            if last < s.len() {
                out.push(json!(&s[last..]).to_string());
            }
            format!("({})", out.join(" ~ "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(template_expr).collect::<Option<Vec<_>>>()?.join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| Some(format!("{}: {}", json!(k), template_expr(v)?)))
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
        other => jinja_literal(other)?,
    })
}

/// A value without templates as a Jinja literal (`none`, `true`, numbers, quoted texts); none
/// when a text in it holds a template.
fn jinja_literal(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => "none".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.contains("{{") || s.contains("{%") => return None,
        Value::String(s) => json!(s).to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(jinja_literal).collect::<Option<Vec<_>>>()?.join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| Some(format!("{}: {}", json!(k), jinja_literal(v)?)))
                .collect::<Option<Vec<_>>>()?
                .join(", ")
        ),
    })
}

/// `with_sequence`: Ansible's sequence lookup, `start=1 end=3 stride=1 format=%d` or
/// `count=3` (as `k=v` text or a mapping), computed when the playbook is loaded; a templated
/// one (`end={{ n }}`) is the lookup, run when the loop does.
fn with_sequence(f: &mut Front, k: &Key, v: &Node) -> Option<Value> {
    let spec = match v.to_value() {
        Value::String(s) if s.contains("{{") || s.contains("{%") => return with_lookup(f, k, v, "sequence"),
        Value::String(s) => s,
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().map(String::from).unwrap_or(v.to_string())))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Number(n) => format!("end={n}"),
        other => {
            f.p.add_key(k, format!("with_sequence: a `start= end=` or `count=` text, not {other}"), None);
            return None;
        }
    };
    match crate::template::sequence::sequence(&spec) {
        Ok(items) => Some(Value::Array(items.into_iter().map(Value::String).collect())),
        Err(e) => {
            f.p.add_key(k, format!("with_sequence: {e}"), None);
            None
        }
    }
}

/// `with_items`' items: each list among them spread into the others, as Ansible flattens them.
pub(super) fn flatten_once(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().flat_map(|x| if let Value::Array(a) = x { a } else { vec![x] }).collect()
}
