//! Ansible's own filters and tests that playbooks use most, beside Jinja's (which minijinja
//! has): each does what Ansible's does (ansible/plugins/filter/core.py, mathstuff.py,
//! plugins/test/core.py), so that a site's templates render the same under copctl. A filter
//! that is not here is an "unknown filter" error where it is used, never a guess.

use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs};
use minijinja::{Environment, Error, ErrorKind, Value};

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

fn json_of(v: &Value) -> Result<serde_json::Value, Error> {
    serde_json::to_value(v).map_err(|e| bad(e.to_string()))
}

fn items(v: &Value) -> Result<Vec<Value>, Error> {
    Ok(v.try_iter()?.collect())
}

/// Python's `x in list` for template values (by value, as `==`).
fn contains(list: &[Value], x: &Value) -> bool {
    list.iter().any(|y| y == x)
}

/// Ansible's `unique`: first occurrences, in order.
fn unique_of(list: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for x in list {
        if !contains(&out, &x) {
            out.push(x);
        }
    }
    out
}

/// Compiled patterns of the regex filters, kept for the run: a playbook's `require:` or a loop
/// applies the same few patterns for every host and item, and compiling one costs more than
/// most renderings (the peers benchmark compiled ~10 per host). Bounded: a run rendering more
/// distinct patterns than this starts over.
type Compiled = std::collections::HashMap<(String, bool, bool), regex::Regex>;
static COMPILED: std::sync::LazyLock<std::sync::Mutex<Compiled>> = std::sync::LazyLock::new(Default::default);
const COMPILED_MAX: usize = 256;

fn regex(pattern: &str, kw: &Kwargs) -> Result<regex::Regex, Error> {
    let ignorecase: Option<bool> = kw.get("ignorecase")?;
    let multiline: Option<bool> = kw.get("multiline")?;
    let key = (pattern.to_string(), ignorecase.unwrap_or(false), multiline.unwrap_or(false));
    if let Some(re) = COMPILED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(re.clone());
    }
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(key.1)
        .multi_line(key.2)
        .build()
        .map_err(|e| bad(format!("bad regular expression {pattern:?}: {e}")))?;
    let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= COMPILED_MAX {
        cache.clear();
    }
    cache.insert(key, re.clone());
    Ok(re)
}

/// A replacement in Python's `re.sub` syntax as the regex crate's: `\1` and `\g<name>` are
/// groups, `\n`/`\t` and `\\` their characters, `$` itself (a group in the regex crate's).
fn python_replacement(rep: &str) -> String {
    let mut out = String::with_capacity(rep.len() + 8);
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut n = String::new();
                    while n.len() < 2 && chars.peek().is_some_and(char::is_ascii_digit) {
                        n.push(chars.next().unwrap_or('0'));
                    }
                    out.push_str(&format!("${{{n}}}"));
                }
                Some('g') => {
                    let rest: String = chars.clone().collect();
                    match rest.strip_prefix("g<").and_then(|r| r.split_once('>')) {
                        Some((name, _)) => {
                            out.push_str(&format!("${{{name}}}"));
                            for _ in 0..name.chars().count() + 3 {
                                chars.next();
                            }
                        }
                        None => out.push('\\'),
                    }
                }
                Some(e @ ('n' | 't' | 'r' | '\\' | 'a' | 'f' | 'v')) => {
                    chars.next();
                    out.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'a' => '\x07',
                        'f' => '\x0c',
                        'v' => '\x0b',
                        _ => '\\',
                    });
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// `combine`: later mappings win; `recursive=true` merges nested mappings too.
/// How `combine` merges two lists under one key (Ansible's `list_merge`).
#[derive(Clone, Copy, PartialEq)]
enum ListMerge {
    Replace,
    Keep,
    Append,
    Prepend,
    AppendRp,
    PrependRp,
}

/// Ansible's `merge_hash`: mappings merged when `deep`, lists as `lists` says (at every level),
/// anything else replaced.
fn merge(
    into: &mut serde_json::Map<String, serde_json::Value>,
    from: serde_json::Map<String, serde_json::Value>,
    deep: bool,
    lists: ListMerge,
) {
    use serde_json::Value as J;
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(J::Object(a)), J::Object(b)) if deep => merge(a, b, deep, lists),
            (Some(J::Array(a)), J::Array(b)) if lists != ListMerge::Replace => {
                let old = std::mem::take(a);
                let rest = || old.iter().filter(|x| !b.contains(x)).cloned();
                *a = match lists {
                    ListMerge::Keep => old.clone(),
                    ListMerge::Append => old.iter().chain(&b).cloned().collect(),
                    ListMerge::Prepend => b.iter().chain(&old).cloned().collect(),
                    ListMerge::AppendRp => rest().chain(b.iter().cloned()).collect(),
                    ListMerge::PrependRp => b.iter().cloned().chain(rest()).collect(),
                    ListMerge::Replace => b.clone(),
                };
            }
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn flatten_into(out: &mut Vec<Value>, v: Value, levels: Option<i64>, skip_nulls: bool) -> Result<(), Error> {
    for x in v.try_iter()? {
        if skip_nulls && (x.is_none() || x.is_undefined()) {
            continue;
        }
        if x.kind() == ValueKind::Seq && levels.is_none_or(|l| l > 0) {
            flatten_into(out, x, levels.map(|l| l - 1), skip_nulls)?;
        } else {
            out.push(x);
        }
    }
    Ok(())
}

/// A registered result's flag (`x is changed`): Ansible's tests fail on a value that is not a
/// result.
fn result_flag(v: &Value, key: &str, test: &str) -> Result<bool, Error> {
    if v.kind() != ValueKind::Map {
        return Err(bad(format!("the '{test}' test expects a registered result (a mapping), not {}", v.kind())));
    }
    let x = v.get_attr(key)?;
    Ok(!x.is_undefined() && x.is_true())
}

/// Python's `json.dumps` as Ansible calls it: `", "` and `": "` between items (`","` with an
/// indent), non-ASCII escaped, keys in their order unless `sort`.
pub fn python_json(v: &serde_json::Value, indent: Option<usize>, sort: bool) -> String {
    fn string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut buf = [0u16; 2];
                    for u in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    fn go(v: &serde_json::Value, indent: Option<usize>, sort: bool, level: usize, out: &mut String) {
        let newline = |out: &mut String, level: usize| {
            if let Some(n) = indent {
                out.push('\n');
                out.push_str(&" ".repeat(n * level));
            }
        };
        let sep = if indent.is_some() { "," } else { ", " };
        match v {
            serde_json::Value::Null => out.push_str("null"),
            serde_json::Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            serde_json::Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() => out.push_str(&super::yaml_dump::python_float_repr(f)),
                _ => out.push_str(&n.to_string()),
            },
            serde_json::Value::String(s) => string(s, out),
            serde_json::Value::Array(a) if a.is_empty() => out.push_str("[]"),
            serde_json::Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    newline(out, level + 1);
                    go(x, indent, sort, level + 1, out);
                }
                newline(out, level);
                out.push(']');
            }
            serde_json::Value::Object(m) if m.is_empty() => out.push_str("{}"),
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                if sort {
                    keys.sort();
                }
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    newline(out, level + 1);
                    string(k, out);
                    out.push_str(": ");
                    go(&m[k.as_str()], indent, sort, level + 1, out);
                }
                newline(out, level);
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    go(v, indent, sort, 0, &mut out);
    out
}

/// Python's float() of a text: blanks around it, `_` between digits, `inf`/`nan` in any case.
fn python_float(text: &str) -> Option<f64> {
    let t = text.trim();
    let b = t.as_bytes();
    let digit = |i: Option<&u8>| i.is_some_and(u8::is_ascii_digit);
    let spaced = (0..b.len()).all(|i| b[i] != b'_' || (i > 0 && digit(b.get(i - 1)) && digit(b.get(i + 1))));
    if t.is_empty() || !spaced {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}

/// Python's name of a value's type (`type_debug`, messages).
fn python_type(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::Bool => "bool",
        ValueKind::Number if v.as_i64().is_some() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        ValueKind::None | ValueKind::Undefined => "NoneType",
        _ => "object",
    }
}

/// An error where an item of `value` lacks the (dotted) attribute `path`, in Python's words
/// for the first part missing.
fn attribute_everywhere(value: &Value, path: &str) -> Result<(), Error> {
    if value.is_undefined() || value.is_none() {
        return Ok(());
    }
    for item in value.try_iter()? {
        let mut at = item;
        for part in path.split('.') {
            let next = match part.parse::<i64>() {
                Ok(i) if at.kind() == ValueKind::Seq => at.get_item(&Value::from(i)).unwrap_or_default(),
                _ => at.get_attr(part).unwrap_or_default(),
            };
            if next.is_undefined() {
                return Err(Error::new(
                    ErrorKind::UndefinedError,
                    format!("object of type '{}' has no attribute '{part}'", python_type(&at)),
                ));
            }
            at = next;
        }
    }
    Ok(())
}

pub fn add(env: &mut Environment<'static>) {
    // Jinja2's `int`, as Ansible has it: what does not read as a number is `default` (0), not
    // an error (`'' | int` is 0); a float text is truncated; `base` for text.
    env.add_filter("int", |v: Value, default: Option<Value>, base: Option<u32>, kw: Kwargs| -> Result<Value, Error> {
        let default = default.or(kw.get::<Option<Value>>("default")?).unwrap_or(Value::from(0));
        let base: u32 = base.or(kw.get::<Option<u32>>("base")?).unwrap_or(10);
        kw.assert_all_used()?;
        let parsed = match v.kind() {
            ValueKind::Bool => Some(i64::from(v.is_true())),
            ValueKind::Number => v.as_i64().or_else(|| f64::try_from(v.clone()).ok().map(|f| f.trunc() as i64)),
            ValueKind::String => {
                let t = v.as_str().unwrap_or_default().trim().replace('_', "");
                let digits = match base {
                    16 => t.trim_start_matches("0x").trim_start_matches("0X").to_string(),
                    8 => t.trim_start_matches("0o").trim_start_matches("0O").to_string(),
                    2 => t.trim_start_matches("0b").trim_start_matches("0B").to_string(),
                    _ => t.clone(),
                };
                i64::from_str_radix(&digits, base)
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f.trunc() as i64))
            }
            _ => None,
        };
        Ok(parsed.map(Value::from).unwrap_or(default))
    });
    // Jinja2's `float`: Python's float() of the value, `default` (0.0) where that raises (an
    // empty or non-numeric text, a command's output not yet known): never an error.
    env.add_filter("float", |v: Value, default: Option<Value>, kw: Kwargs| -> Result<Value, Error> {
        let default = default.or(kw.get::<Option<Value>>("default")?).unwrap_or(Value::from(0.0));
        kw.assert_all_used()?;
        let parsed = match v.kind() {
            ValueKind::Bool => Some(if v.is_true() { 1.0 } else { 0.0 }),
            ValueKind::Number => f64::try_from(v.clone()).ok(),
            ValueKind::String => python_float(v.as_str().unwrap_or_default()),
            _ => None,
        };
        Ok(parsed.map(Value::from).unwrap_or(default))
    });
    env.add_filter("to_json", |v: Value, kw: Kwargs| -> Result<String, Error> {
        let sort: Option<bool> = kw.get("sort_keys")?;
        let indent: Option<usize> = kw.get("indent")?;
        kw.assert_all_used()?;
        Ok(python_json(&json_of(&super::clock::iso_datetimes(v))?, indent, sort.unwrap_or(false)))
    });
    env.add_filter("to_nice_json", |v: Value, kw: Kwargs| -> Result<String, Error> {
        let sort: Option<bool> = kw.get("sort_keys")?;
        let indent: Option<usize> = kw.get("indent")?;
        kw.assert_all_used()?;
        Ok(python_json(&json_of(&super::clock::iso_datetimes(v))?, Some(indent.unwrap_or(4)), sort.unwrap_or(true)))
    });
    env.add_filter("b64decode", |s: String| -> Result<String, Error> {
        use base64::Engine;
        let b = base64::engine::general_purpose::STANDARD
            .decode(s.trim().as_bytes())
            .map_err(|e| bad(format!("b64decode: {e}")))?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    });
    env.add_filter("from_json", |s: String| -> Result<Value, Error> {
        let v: serde_json::Value = serde_json::from_str(&s).map_err(|e| bad(format!("from_json: {e}")))?;
        Ok(super::to_value(v))
    });
    for (name, default_indent, flow) in [("to_yaml", 2, None), ("to_nice_yaml", 4, Some(false))] {
        env.add_filter(name, move |v: Value, kw: Kwargs| -> Result<String, Error> {
            let indent: Option<usize> = kw.get("indent")?;
            let width: Option<usize> = kw.get("width")?;
            let sort_keys: Option<bool> = kw.get("sort_keys")?;
            // PyYAML's default_flow_style: None (flow for collections of scalars), False, True.
            let flow = match kw.get::<Option<Value>>("default_flow_style")? {
                None => flow,
                Some(f) if f.is_none() => None,
                Some(f) => Some(f.is_true()),
            };
            kw.assert_all_used()?;
            Ok(super::yaml_dump::dump_with(
                &json_of(&v)?,
                indent.unwrap_or(default_indent),
                flow,
                width,
                sort_keys.unwrap_or(true),
            ))
        });
    }
    env.add_filter("from_yaml", |s: String| -> Result<Value, Error> {
        let v: serde_json::Value = serde_saphyr::from_str(&s).map_err(|e| bad(format!("from_yaml: {e}")))?;
        Ok(super::to_value(v))
    });
    env.add_filter("hash", |s: String, algo: Option<String>| -> Result<String, Error> {
        hash(s.as_bytes(), algo.as_deref().unwrap_or("sha1"))
    });
    env.add_filter("checksum", |s: String| -> Result<String, Error> { hash(s.as_bytes(), "sha1") });
    env.add_filter("combine", |first: Value, rest: Rest<Value>, kw: Kwargs| -> Result<Value, Error> {
        let deep: Option<bool> = kw.get("recursive")?;
        let list_merge: Option<String> = kw.get("list_merge")?;
        kw.assert_all_used()?;
        let lists = match list_merge.as_deref().unwrap_or("replace") {
            "replace" => ListMerge::Replace,
            "keep" => ListMerge::Keep,
            "append" => ListMerge::Append,
            "prepend" => ListMerge::Prepend,
            "append_rp" => ListMerge::AppendRp,
            "prepend_rp" => ListMerge::PrependRp,
            other => {
                return Err(bad(format!(
                    "merge_hash: 'list_merge' accepts only 'replace', 'keep', 'append', 'prepend', 'append_rp' or 'prepend_rp', not '{other}'"
                )));
            }
        };
        let mut out = serde_json::Map::new();
        // combine also takes lists of mappings (`[a, b] | combine`).
        let mut all = vec![first];
        all.extend(rest.0);
        let mut flat = Vec::new();
        for v in all {
            match json_of(&v)? {
                serde_json::Value::Array(a) => flat.extend(a),
                other => flat.push(other),
            }
        }
        for v in flat {
            match v {
                serde_json::Value::Object(m) => merge(&mut out, m, deep.unwrap_or(false), lists),
                other => return Err(bad(format!("combine: expects mappings, got {other}"))),
            }
        }
        Ok(super::to_value(serde_json::Value::Object(out)))
    });
    env.add_filter("dict2items", |v: Value, kw: Kwargs| -> Result<Value, Error> {
        let key: Option<String> = kw.get("key_name")?;
        let value: Option<String> = kw.get("value_name")?;
        kw.assert_all_used()?;
        let (key, value) = (key.unwrap_or_else(|| "key".into()), value.unwrap_or_else(|| "value".into()));
        let serde_json::Value::Object(m) = json_of(&v)? else {
            return Err(bad("dict2items requires a dictionary"));
        };
        let list: Vec<serde_json::Value> = m
            .into_iter()
            .map(|(k, v)| {
                serde_json::Value::Object([(key.clone(), k.into()), (value.clone(), v)].into_iter().collect())
            })
            .collect();
        Ok(super::to_value(list))
    });
    env.add_filter("items2dict", |v: Value, kw: Kwargs| -> Result<Value, Error> {
        let key: Option<String> = kw.get("key_name")?;
        let value: Option<String> = kw.get("value_name")?;
        kw.assert_all_used()?;
        let (key, value) = (key.unwrap_or_else(|| "key".into()), value.unwrap_or_else(|| "value".into()));
        let mut out = serde_json::Map::new();
        for item in items(&v)? {
            let k = item.get_attr(&key)?;
            let x = item.get_attr(&value)?;
            if k.is_undefined() || x.is_undefined() {
                return Err(bad(format!("items2dict: each item needs '{key}' and '{value}'")));
            }
            let k = k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string());
            out.insert(k, json_of(&x)?);
        }
        Ok(super::to_value(serde_json::Value::Object(out)))
    });
    env.add_filter("unique", |v: Value| -> Result<Value, Error> { Ok(Value::from(unique_of(items(&v)?))) });
    env.add_filter("difference", |a: Value, b: Value| -> Result<Value, Error> {
        let b = items(&b)?;
        Ok(Value::from(unique_of(items(&a)?.into_iter().filter(|x| !contains(&b, x)).collect())))
    });
    env.add_filter("intersect", |a: Value, b: Value| -> Result<Value, Error> {
        let b = items(&b)?;
        Ok(Value::from(unique_of(items(&a)?.into_iter().filter(|x| contains(&b, x)).collect())))
    });
    env.add_filter("union", |a: Value, b: Value| -> Result<Value, Error> {
        let mut all = items(&a)?;
        all.extend(items(&b)?);
        Ok(Value::from(unique_of(all)))
    });
    env.add_filter("symmetric_difference", |a: Value, b: Value| -> Result<Value, Error> {
        let (a, b) = (items(&a)?, items(&b)?);
        let mut out: Vec<Value> = a.iter().filter(|x| !contains(&b, x)).cloned().collect();
        out.extend(b.iter().filter(|x| !contains(&a, x)).cloned());
        Ok(Value::from(unique_of(out)))
    });
    env.add_filter("flatten", |v: Value, levels: Option<i64>, kw: Kwargs| -> Result<Value, Error> {
        let skip: Option<bool> = kw.get("skip_nulls")?;
        let levels = match kw.get::<Option<i64>>("levels")? {
            Some(l) => Some(l),
            None => levels,
        };
        kw.assert_all_used()?;
        let mut out = Vec::new();
        flatten_into(&mut out, v, levels, skip.unwrap_or(true))?;
        Ok(Value::from(out))
    });
    env.add_filter(
        "regex_search",
        |s: String, pattern: String, groups: Rest<String>, kw: Kwargs| -> Result<Value, Error> {
            let re = regex(&pattern, &kw)?;
            kw.assert_all_used()?;
            let Some(c) = re.captures(&s) else { return Ok(Value::from(())) };
            if groups.0.is_empty() {
                return Ok(Value::from(c.get(0).map(|m| m.as_str()).unwrap_or("")));
            }
            // `'\\1'` or `'\\g<name>'`: those groups, as a list.
            let mut out = Vec::new();
            for g in &groups.0 {
                let m = if let Some(n) = g.strip_prefix('\\').and_then(|n| n.parse::<usize>().ok()) {
                    c.get(n)
                } else if let Some(name) = g.strip_prefix("\\g<").and_then(|n| n.strip_suffix('>')) {
                    c.name(name)
                } else {
                    return Err(bad(format!("regex_search: unknown group {g:?} (write '\\\\1' or '\\\\g<name>')")));
                };
                out.push(Value::from(m.map(|m| m.as_str()).unwrap_or("")));
            }
            Ok(Value::from(out))
        },
    );
    // Python's re.subn as Ansible's `regex_replace` calls it: `count` (0: all),
    // `mandatory_count` (an error unless that many were replaced), the replacement in Python's
    // syntax.
    env.add_filter(
        "regex_replace",
        |s: String, pattern: String, rep: Option<String>, kw: Kwargs| -> Result<String, Error> {
            let re = regex(&pattern, &kw)?;
            let count: usize = kw.get::<Option<usize>>("count")?.unwrap_or(0);
            let mandatory: usize = kw.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
            kw.assert_all_used()?;
            let rep = python_replacement(rep.as_deref().unwrap_or(""));
            let found = re.find_iter(&s).count();
            let made = if count == 0 { found } else { found.min(count) };
            if mandatory != 0 && made != mandatory {
                return Err(bad(format!(
                    "regex_replace: {made} replacements made, mandatory_count is {mandatory} (pattern {pattern:?})"
                )));
            }
            Ok(re.replacen(&s, count, rep.as_str()).into_owned())
        },
    );
    env.add_filter("regex_findall", |s: String, pattern: String, kw: Kwargs| -> Result<Value, Error> {
        let re = regex(&pattern, &kw)?;
        kw.assert_all_used()?;
        // Python's findall: the whole match, the one group, or a tuple of the groups.
        let out: Vec<Value> = re
            .captures_iter(&s)
            .map(|c| match c.len() {
                1 => Value::from(c.get(0).map(|m| m.as_str()).unwrap_or("")),
                2 => Value::from(c.get(1).map(|m| m.as_str()).unwrap_or("")),
                _ => Value::from(
                    (1..c.len()).map(|i| Value::from(c.get(i).map(|m| m.as_str()).unwrap_or(""))).collect::<Vec<_>>(),
                ),
            })
            .collect();
        Ok(Value::from(out))
    });
    // Python's re.escape (its set of characters, a space among them), or with
    // `re_type='posix_basic'` Ansible's escape of `[].^$*\\`.
    env.add_filter("regex_escape", |s: String, re_type: Option<String>, kw: Kwargs| -> Result<String, Error> {
        let re_type = re_type.or(kw.get("re_type")?).unwrap_or_else(|| "python".into());
        kw.assert_all_used()?;
        let special: &str = match re_type.as_str() {
            "python" => "()[]{}?*+-|^$\\.&~# \t\n\r\u{b}\u{c}",
            "posix_basic" => "[].^$*\\",
            "posix_extended" => return Err(bad("Regex type (posix_extended) not yet implemented")),
            other => return Err(bad(format!("Invalid regex type ({other})"))),
        };
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if special.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        Ok(out)
    });
    // Jinja2's forceescape: HTML-escaped whatever the value is.
    env.add_filter("forceescape", |v: Value| -> String {
        let s = v.to_string();
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&#34;"),
                '\'' => out.push_str("&#39;"),
                c => out.push(c),
            }
        }
        out
    });
    env.add_filter("splitext", |s: String| -> Value {
        let base = s.rsplit('/').next().unwrap_or("");
        match base.rfind('.') {
            Some(i) if i > 0 && !base[..i].chars().all(|c| c == '.') => {
                let cut = s.len() - (base.len() - i);
                Value::from(vec![Value::from(&s[..cut]), Value::from(&s[cut..])])
            }
            _ => Value::from(vec![Value::from(s.as_str()), Value::from("")]),
        }
    });
    // `groups['x'] | map('extract', hostvars, 'ansible_host')`.
    // Its third argument, `morekeys`, is one key or a list of them (Ansible's `extract`).
    env.add_filter("extract", |key: Value, container: Value, more: Option<Value>| -> Result<Value, Error> {
        let mut keys = vec![key];
        match more {
            Some(m) if m.kind() == ValueKind::Seq => keys.extend(m.try_iter()?),
            Some(m) => keys.push(m),
            None => {}
        }
        let mut v = container;
        for k in keys {
            v = v.get_item(&k)?;
        }
        Ok(v)
    });
    env.add_filter("zip", |a: Value, rest: Rest<Value>| -> Result<Value, Error> {
        let mut lists = vec![items(&a)?];
        for r in rest.0 {
            lists.push(items(&r)?);
        }
        let n = lists.iter().map(Vec::len).min().unwrap_or(0);
        Ok(Value::from(
            (0..n).map(|i| Value::from(lists.iter().map(|l| l[i].clone()).collect::<Vec<_>>())).collect::<Vec<_>>(),
        ))
    });
    // itertools.zip_longest as Ansible's filter takes it (`fillvalue=` the only keyword).
    env.add_filter("zip_longest", |a: Value, rest: Rest<Value>, kw: Kwargs| -> Result<Value, Error> {
        let fill: Value = kw.get::<Option<Value>>("fillvalue")?.unwrap_or(Value::from(()));
        kw.assert_all_used()?;
        let mut lists = vec![items(&a)?];
        for r in rest.0 {
            lists.push(items(&r)?);
        }
        let n = lists.iter().map(Vec::len).max().unwrap_or(0);
        Ok(Value::from(
            (0..n)
                .map(|i| {
                    Value::from(lists.iter().map(|l| l.get(i).cloned().unwrap_or(fill.clone())).collect::<Vec<_>>())
                })
                .collect::<Vec<_>>(),
        ))
    });
    // itertools.combinations and permutations, in their order.
    env.add_filter("combinations", |v: Value, r: usize| -> Result<Value, Error> {
        let pool = items(&v)?;
        let mut out = Vec::new();
        let mut idx: Vec<usize> = (0..r).collect();
        if r <= pool.len() {
            loop {
                out.push(Value::from(idx.iter().map(|&i| pool[i].clone()).collect::<Vec<_>>()));
                let Some(i) = (0..r).rev().find(|&i| idx[i] != i + pool.len() - r) else { break };
                idx[i] += 1;
                for j in i + 1..r {
                    idx[j] = idx[j - 1] + 1;
                }
            }
        }
        Ok(Value::from(out))
    });
    env.add_filter("permutations", |v: Value, r: Option<usize>| -> Result<Value, Error> {
        let pool = items(&v)?;
        let r = r.unwrap_or(pool.len());
        let mut out = Vec::new();
        fn walk(pool: &[Value], r: usize, used: &mut Vec<bool>, cur: &mut Vec<Value>, out: &mut Vec<Value>) {
            if cur.len() == r {
                out.push(Value::from(cur.clone()));
                return;
            }
            for i in 0..pool.len() {
                if !used[i] {
                    used[i] = true;
                    cur.push(pool[i].clone());
                    walk(pool, r, used, cur, out);
                    cur.pop();
                    used[i] = false;
                }
            }
        }
        if r <= pool.len() {
            walk(&pool, r, &mut vec![false; pool.len()], &mut Vec::new(), &mut out);
        }
        Ok(Value::from(out))
    });
    // Python's `dict()` as Jinja2 has it: a mapping, or a list of key-value pairs
    // (`dict(keys | zip(values))`), updated by the keyword arguments.
    env.add_function("dict", |value: Option<Value>, kw: Kwargs| -> Result<Value, Error> {
        let mut out = indexmap::IndexMap::<Value, Value>::new();
        match value {
            None => {}
            Some(v) if v.is_undefined() => {
                return Err(Error::new(ErrorKind::UndefinedError, "dict() of an undefined value"));
            }
            Some(v) if v.kind() == ValueKind::Map => {
                for k in v.try_iter()? {
                    let x = v.get_item(&k)?;
                    out.insert(k, x);
                }
            }
            Some(v) => {
                for pair in v.try_iter()? {
                    let kv: Vec<Value> =
                        pair.try_iter().map_err(|_| bad(format!("dict(): {pair} is not a key-value pair")))?.collect();
                    let [k, x] = <[Value; 2]>::try_from(kv)
                        .map_err(|_| bad(format!("dict(): {pair} is not a key-value pair")))?;
                    out.insert(k, x);
                }
            }
        }
        for k in kw.args() {
            out.insert(Value::from(k), kw.get::<Value>(k)?);
        }
        Ok(Value::from_object(out))
    });
    env.add_filter("type_debug", |v: Value| -> &'static str { python_type(&v) });

    // Ansible 2.19's undefined is strict: an item without the attribute is an error (Python's
    // words), where minijinja gives an undefined (the word "undefined" in a file, a falsy test).
    // map's `default=` and selectattr's defined/undefined tests are what handle a missing one.
    env.add_filter("map", |state: &mut minijinja::State, value: Value, args: Rest<ValueOrKwargs>| {
        let vals: Vec<Value> = args.0.iter().map(|a| (**a).clone()).collect();
        let (_, kw): (&[Value], Kwargs) = minijinja::value::from_args(&vals)?;
        if !kw.has("default")
            && let Ok(attr) = kw.peek::<String>("attribute")
        {
            attribute_everywhere(&value, &attr)?;
        }
        minijinja::filters::map(state, value, args)
    });
    for reject in [false, true] {
        let f = move |state: &mut minijinja::State,
                      value: Value,
                      attr: String,
                      test: Option<String>,
                      args: Rest<ValueOrKwargs>|
              -> Result<Vec<Value>, Error> {
            if !matches!(test.as_deref(), Some("defined" | "undefined")) {
                attribute_everywhere(&value, &attr)?;
            }
            let (attr, test) = (std::borrow::Cow::Owned(attr), test.map(std::borrow::Cow::Owned));
            if reject {
                minijinja::filters::rejectattr(state, value, attr, test, args)
            } else {
                minijinja::filters::selectattr(state, value, attr, test, args)
            }
        };
        env.add_filter(if reject { "rejectattr" } else { "selectattr" }, f);
    }

    // Tests on strings: Python's re.match (anchored at the start), re.search.
    // Ansible's pattern defaults to '' (`x is regex` is true).
    env.add_test("match", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        let pattern = pattern.unwrap_or_default();
        let re = regex(&format!("^(?:{pattern})"), &kw)?;
        Ok(re.is_match(&s))
    });
    env.add_test("search", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        Ok(regex(&pattern.unwrap_or_default(), &kw)?.is_match(&s))
    });
    env.add_test("regex", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        let pattern = pattern.unwrap_or_default();
        let kind: Option<String> = kw.get("match_type")?;
        match kind.as_deref().unwrap_or("search") {
            "match" => Ok(regex(&format!("^(?:{pattern})"), &kw)?.is_match(&s)),
            "search" => Ok(regex(&pattern, &kw)?.is_match(&s)),
            other => Err(bad(format!("regex: match_type '{other}' is not supported"))),
        }
    });
    // Tests on registered results.
    for (name, key) in [("changed", "changed"), ("change", "changed"), ("skipped", "skipped"), ("skip", "skipped")] {
        env.add_test(name, move |v: Value| result_flag(&v, key, name));
    }
    for name in ["failed", "failure"] {
        env.add_test(name, move |v: Value| result_flag(&v, "failed", name));
    }
    for name in ["succeeded", "success", "successful"] {
        env.add_test(name, move |v: Value| Ok(!result_flag(&v, "failed", name)?));
    }
    env.add_test("subset", |a: Value, b: Value| -> Result<bool, Error> {
        let b = items(&b)?;
        Ok(items(&a)?.iter().all(|x| contains(&b, x)))
    });
    env.add_test("superset", |a: Value, b: Value| -> Result<bool, Error> {
        let a = items(&a)?;
        Ok(items(&b)?.iter().all(|x| contains(&a, x)))
    });
    // Python's `x in a`: a substring of a text, a key of a mapping, an item of a list.
    env.add_test("contains", |a: Value, x: Value| -> Result<bool, Error> {
        match (a.as_str(), x.as_str()) {
            (Some(text), Some(part)) => Ok(text.contains(part)),
            _ if a.kind() == minijinja::value::ValueKind::Map => Ok(a.try_iter()?.any(|k| k == x)),
            _ => Ok(contains(&items(&a)?, &x)),
        }
    });
    env.add_test("abs", |p: String| -> bool { p.starts_with('/') });
    // Python's truth of the value (Ansible's `truthy`/`falsy`, convert_bool left false).
    env.add_test("truthy", |v: Value| -> bool { v.is_true() });
    env.add_test("falsy", |v: Value| -> bool { !v.is_true() });
}

/// Python's methods in templates: pycompat's, plus the list methods it lacks that Ansible's
/// templates call (`xs.index(x)`, `xs.count(x)`).
pub fn python_method(
    state: &mut minijinja::State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    use minijinja::value::ValueKind;
    if value.kind() == ValueKind::Seq
        && let ("index" | "count", [x]) = (method, args)
    {
        let items = items(value)?;
        return match method {
            "index" => match items.iter().position(|i| i == x) {
                Some(p) => Ok(Value::from(p)),
                None => Err(bad(format!("{x} is not in list"))),
            },
            _ => Ok(Value::from(items.iter().filter(|i| *i == x).count())),
        };
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

fn hash(data: &[u8], algo: &str) -> Result<String, Error> {
    use sha2::Digest;
    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
    Ok(match algo {
        "md5" => hex(&md5::Md5::digest(data)),
        "sha1" => hex(&sha1::Sha1::digest(data)),
        "sha224" => hex(&sha2::Sha224::digest(data)),
        "sha256" => hex(&sha2::Sha256::digest(data)),
        "sha384" => hex(&sha2::Sha384::digest(data)),
        "sha512" => hex(&sha2::Sha512::digest(data)),
        other => {
            return Err(bad(format!("hash: '{other}' is not supported (md5, sha1, sha224, sha256, sha384, sha512)")));
        }
    })
}

#[cfg(test)]
mod tests {
    use minijinja::context;

    fn render(t: &str) -> String {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_unknown_method_callback(super::python_method);
        super::add(&mut env);
        env.render_str(
            t,
            context! { hv => context! { a => context! { ip => "10.0.0.1" }, b => context! { ip => "10.0.0.2" } }, xs => vec!["a", "b", "a"] },
        )
        .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn list_index_and_count_are_pythons() {
        assert_eq!(
            render("{{ xs.index('a') }} {{ xs.index('b') }} {{ xs.count('a') }} {{ 'a:b'.split(':') }}"),
            "0 1 2 ['a', 'b']"
        );
        assert!(render("{{ xs.index('z') }}").contains("is not in list"), "{}", render("{{ xs.index('z') }}"));
    }

    #[test]
    fn int_is_jinja2s() {
        for (t, want) in [
            ("{{ '' | int }}", "0"),
            ("{{ 'x' | int(7) }}", "7"),
            ("{{ 'x' | int(default=3) }}", "3"),
            ("{{ ' 42 ' | int }}", "42"),
            ("{{ '3.9' | int }}", "3"),
            ("{{ 2.7 | int }}", "2"),
            ("{{ true | int }}", "1"),
            ("{{ 'ff' | int(base=16) }}", "255"),
            ("{{ '0x1f' | int(base=16) }}", "31"),
        ] {
            assert_eq!(render(t), want, "{t}");
        }
    }

    #[test]
    fn a_missing_attribute_is_an_error_as_in_ansible_2_19() {
        let l = "{% set l = [{'a': 1, 'b': true}, {'a': 2}] %}";
        for t in [
            "{{ l | map(attribute='b') | list }}",
            "{{ l | selectattr('b') | list }}",
            "{{ l | rejectattr('b', 'false') | list }}",
        ] {
            assert!(
                render(&format!("{l}{t}")).contains("object of type 'dict' has no attribute 'b'"),
                "{t}: {}",
                render(&format!("{l}{t}"))
            );
        }
        for (t, want) in [
            ("{{ l | map(attribute='b', default=false) | list }}", "[True, False]"),
            ("{{ l | selectattr('b', 'defined') | map(attribute='a') | list }}", "[1]"),
            ("{{ l | rejectattr('b', 'undefined') | map(attribute='a') | list }}", "[1]"),
            ("{{ l | map(attribute='a') | list }}", "[1, 2]"),
            ("{{ [{'x': {'y': 3}}] | map(attribute='x.y') | list }}", "[3]"),
        ] {
            assert_eq!(render(&format!("{l}{t}")), want, "{t}");
        }
        assert!(
            render("{{ [{'x': {}}] | map(attribute='x.y') | list }}")
                .contains("object of type 'dict' has no attribute 'y'")
        );
        assert!(
            render("{{ ['s'] | map(attribute='name') | list }}")
                .contains("object of type 'str' has no attribute 'name'")
        );
    }

    #[test]
    fn float_is_jinja2s() {
        for (t, want) in [
            ("{{ '' | float }}", "0.0"),
            ("{{ 'abc' | float }}", "0.0"),
            ("{{ 'abc' | float(2.5) }}", "2.5"),
            ("{{ 'abc' | float(default=1) }}", "1"),
            ("{{ ' 1.5 ' | float }}", "1.5"),
            ("{{ '1_000' | float }}", "1000.0"),
            ("{{ '1__0' | float }}", "0.0"),
            ("{{ '_1' | float }}", "0.0"),
            ("{{ '2' | float }}", "2.0"),
            ("{{ 3 | float }}", "3.0"),
            ("{{ true | float }}", "1.0"),
            ("{{ none | float }}", "0.0"),
            ("{{ ('1.5' | float) > 1.0 }}", "True"),
        ] {
            assert_eq!(render(t), want, "{t}");
        }
    }

    #[test]
    fn filters_give_what_ansible_gives() {
        let cases = [
            ("{{ 'aGVsbG8=' | b64decode }}", "hello"),
            ("{{ ('{\"a\": [1, 2]}' | from_json).a[1] }}", "2"),
            ("{{ ('a: {b: 3}' | from_yaml).a.b }}", "3"),
            ("{{ 'abc' | hash('sha1') }}", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            ("{{ 'abc' | hash('sha256') }}", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "{{ ({'a': 1, 'b': {'x': 1}} | combine({'b': {'y': 2}}, {'c': 3})) | tojson }}",
                r#"{"a": 1, "b": {"y": 2}, "c": 3}"#,
            ),
            (
                "{{ ({'b': {'x': 1}} | combine({'b': {'y': 2}}, recursive=true)) | tojson }}",
                r#"{"b": {"x": 1, "y": 2}}"#,
            ),
            ("{{ {'a': 1, 'b': 2} | dict2items | tojson }}", r#"[{"key": "a", "value": 1}, {"key": "b", "value": 2}]"#),
            ("{{ [{'k': 'x', 'v': 1}] | items2dict(key_name='k', value_name='v') | tojson }}", r#"{"x": 1}"#),
            ("{{ [3, 1, 3, 2, 1] | unique | tojson }}", "[3, 1, 2]"),
            ("{{ [1, 2, 3, 2] | difference([2]) | tojson }}", "[1, 3]"),
            ("{{ [1, 2] | union([2, 3]) | tojson }}", "[1, 2, 3]"),
            ("{{ [1, 2, 3] | intersect([3, 2, 9]) | tojson }}", "[2, 3]"),
            ("{{ [1, [2, [3, none]]] | flatten | tojson }}", "[1, 2, 3]"),
            ("{{ [1, [2, [3]]] | flatten(levels=1) | tojson }}", "[1, 2, [3]]"),
            ("{{ 'v1.27.3+rke2r1' | regex_search('[0-9]+\\\\.[0-9]+') }}", "1.27"),
            ("{{ 'v1.27.3' | regex_search('v(\\\\d+)\\\\.(\\\\d+)', '\\\\2') | tojson }}", r#"["27"]"#),
            ("{{ 'no digits' | regex_search('\\\\d') is none }}", "True"),
            ("{{ 'a=1 b=2' | regex_findall('(\\\\w)=(\\\\d)') | tojson }}", r#"[["a", "1"], ["b", "2"]]"#),
            ("{{ '/etc/app.conf' | splitext | tojson }}", r#"["/etc/app", ".conf"]"#),
            ("{{ ['a', 'b'] | map('extract', hv, 'ip') | join(',') }}", "10.0.0.1,10.0.0.2"),
            ("{{ [1, 2] | zip(['a', 'b']) | tojson }}", r#"[[1, "a"], [2, "b"]]"#),
            (
                "{{ 'a:b'.split(':')[1] }} {{ ' x '.strip() }} {{ '/x'.startswith('/') }} {{ {'k': 1}.items() | list | tojson }}",
                r#"b x True [["k", 1]]"#,
            ),
            (
                "{{ {'b': [1, 'é'], 'a': {'c': none, 'd': 1.5}} | to_json }}",
                r#"{"b": [1, "\u00e9"], "a": {"c": null, "d": 1.5}}"#,
            ),
            ("{{ {'b': [1], 'a': {}} | to_nice_json }}", "{\n    \"a\": {},\n    \"b\": [\n        1\n    ]\n}"),
            ("{{ 5 | type_debug }} {{ 'x' | type_debug }} {{ {} | type_debug }}", "int str dict"),
            (
                "{{ 'rke2-server' is match('rke2') }} {{ 'x-rke2' is match('rke2') }} {{ 'x-rke2' is search('rke2') }}",
                "True False True",
            ),
            (
                "{{ {'changed': true, 'failed': false} is changed }} {{ {'failed': false} is succeeded }} {{ {'failed': true} is failed }}",
                "True True True",
            ),
            ("{{ [1, 2] is subset([1, 2, 3]) }} {{ [1, 2, 3] is superset([4]) }}", "True False"),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(t, want)| render(t) != *want)
            .map(|(t, want)| format!("{t}\n  want {want}\n  got  {}", render(t)))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert_eq!(
            render("{{ 'x' is changed }}"),
            "error: invalid operation: the 'changed' test expects a registered result (a mapping), not string (in <string>:1)"
        );
        assert_eq!(
            render("{{ 'x' | hash('md4') }}"),
            "error: invalid operation: hash: 'md4' is not supported (md5, sha1, sha224, sha256, sha384, sha512) (in <string>:1)"
        );
    }
}
#[cfg(test)]
mod lazy {
    /// A variable holding templates is rendered when read; a mapping stays a mapping through
    /// the filters (it once came out as a list of pairs).
    #[test]
    fn a_templated_mapping_keeps_its_shape() {
        let t = crate::template::Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("c".into(), serde_json::json!({"token": "{{ 'x' }}", "n": [1, 2]}));
        let ctx = t.context(&vars);
        let r = |e: &str| t.render_str(e, &ctx).unwrap_or_else(|e| format!("error: {e}"));
        assert_eq!(r("{{ c | to_json }}"), r#"{"token": "x", "n": [1, 2]}"#);
        assert_eq!(r("{{ c | combine({'a': 1}) | to_json }}"), r#"{"token": "x", "n": [1, 2], "a": 1}"#);
        assert_eq!(r("{{ c | to_nice_yaml }}"), "n:\n- 1\n- 2\ntoken: x\n");
        assert_eq!(r("{{ c | dict2items | map(attribute='key') | join(',') }}"), "token,n");
    }
}
