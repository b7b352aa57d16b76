//! Filters on mappings: `combine` (Ansible's `merge_hash`, with its `recursive` and
//! `list_merge`), `dict2items`, `items2dict`, and Jinja2's `dict()` as Ansible's templates call it.

use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use super::{bad, items, json_of};

pub(super) fn add(env: &mut Environment<'static>) {
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
        Ok(crate::template::to_value(serde_json::Value::Object(out)))
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
        Ok(crate::template::to_value(list))
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
        Ok(crate::template::to_value(serde_json::Value::Object(out)))
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
