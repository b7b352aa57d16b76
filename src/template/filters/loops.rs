//! The filters by which the Ansible front-end runs `with_*` loops over templated values
//! (`with_together`, `with_nested`, `with_items`, `with_list`, `with_dict`), each as Ansible's
//! lookup of that name gives its items; and the `subelements` filter and lookup.

use minijinja::value::Value;
use minijinja::{Environment, ErrorKind};

pub(super) fn add(env: &mut Environment<'static>) {
    // Ansible's `with_together` over templated lists: the lists zipped item by item, a shorter
    // list's missing items none (its together lookup). Used by the Ansible front-end's loops.
    env.add_filter("with_together", |v: Value| -> Result<Value, minijinja::Error> {
        let lists: Vec<Vec<Value>> =
            v.try_iter()?.map(|l| l.try_iter().map(Iterator::collect)).collect::<Result<_, _>>()?;
        let n = lists.iter().map(Vec::len).max().unwrap_or(0);
        Ok(Value::from(
            (0..n)
                .map(|i| {
                    Value::from(lists.iter().map(|l| l.get(i).cloned().unwrap_or(Value::from(()))).collect::<Vec<_>>())
                })
                .collect::<Vec<_>>(),
        ))
    });
    // Ansible's `with_nested` over templated lists: every combination, first list outermost,
    // each flattened one level (its nested lookup; a text term is one item).
    env.add_filter("with_nested", |v: Value| -> Result<Value, minijinja::Error> {
        use minijinja::value::ValueKind;
        let flat1 = |x: Value| -> Result<Vec<Value>, minijinja::Error> {
            let mut out = Vec::new();
            for t in x.try_iter()? {
                if t.kind() == ValueKind::Seq { out.extend(t.try_iter()?) } else { out.push(t) }
            }
            Ok(out)
        };
        let lists: Vec<Vec<Value>> = v
            .try_iter()?
            .map(|l| if l.as_str().is_some() { Ok(vec![l]) } else { l.try_iter().map(Iterator::collect) })
            .collect::<Result<_, _>>()?;
        let Some((first, rest)) = lists.split_first() else {
            return Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                "with_nested requires at least one element in the nested list",
            ));
        };
        let mut result = first.clone();
        for next in rest {
            let mut combined = Vec::new();
            for x in &result {
                for y in next {
                    combined.push(Value::from(flat1(Value::from(vec![x.clone(), y.clone()]))?));
                }
            }
            result = combined;
        }
        // Python iterates a text term character by character here, as Ansible's lookup does.
        Ok(Value::from(result.into_iter().map(|x| flat1(x).map(Value::from)).collect::<Result<Vec<_>, _>>()?))
    });
    // Ansible's `subelements` filter: each element (of a list, or a mapping's values) with each
    // item of the list its dotted key names, as pairs; and the `with_subelements` lookup's
    // form of it (`lookup: true`), which skips elements marked `skipped` and checks each step
    // of the key as the lookup does.
    env.add_filter(
        "subelements",
        |obj: Value,
         key: Value,
         skip_missing: Option<Value>,
         kwargs: minijinja::value::Kwargs|
         -> Result<Value, minijinja::Error> {
            let skip_missing = match kwargs.get::<Option<Value>>("skip_missing")?.or(skip_missing) {
                Some(v) => v.is_true(),
                None => false,
            };
            let lookup = kwargs.get::<Option<bool>>("lookup")?.unwrap_or(false);
            kwargs.assert_all_used()?;
            subelements(obj, key, skip_missing, lookup)
        },
    );
    // Ansible's `with_items` over a templated list: the list flattened one level (a text is one
    // item), as its `items` lookup does. Used by the Ansible front-end's loops.
    env.add_filter("with_items_flatten", |v: Value| -> Result<Value, minijinja::Error> {
        use minijinja::value::ValueKind;
        // Not a list: one term, as Ansible gives a with_ lookup (a text, a mapping).
        if !matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) {
            return Ok(Value::from(vec![v]));
        }
        let mut out = Vec::new();
        for item in v.try_iter()? {
            if item.kind() == ValueKind::Seq {
                out.extend(item.try_iter()?);
            } else {
                out.push(item);
            }
        }
        Ok(Value::from(out))
    });
    // Ansible's `with_list` over a templated value: a list as it is, anything else its one item
    // (its task executor makes a lone term a list).
    env.add_filter("with_list_terms", |v: Value| -> Value {
        use minijinja::value::ValueKind;
        if matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) { v } else { Value::from(vec![v]) }
    });
    env.add_filter("with_dict_items", with_dict_items);
}

/// Ansible's `with_dict` over a templated value: each term (a mapping, or each of a list's)
/// as its `{key, value}` items, and Ansible's error for a term that is not a mapping.
fn with_dict_items(v: Value) -> Result<Value, minijinja::Error> {
    use minijinja::value::ValueKind;
    let terms: Vec<Value> = match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => v.try_iter()?.collect(),
        _ => vec![v],
    };
    let mut out = Vec::new();
    for term in terms {
        if term.kind() != ValueKind::Map {
            let class = match term.kind() {
                ValueKind::Number if term.is_integer() => "int",
                ValueKind::Number => "float",
                ValueKind::String => "str",
                ValueKind::Bool => "bool",
                ValueKind::None | ValueKind::Undefined => "NoneType",
                _ => "list",
            };
            let shown = match term.kind() {
                ValueKind::Bool => {
                    if term.is_true() {
                        "True".to_string()
                    } else {
                        "False".to_string()
                    }
                }
                ValueKind::None | ValueKind::Undefined => "None".to_string(),
                _ => term.to_string(),
            };
            return Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "The lookup plugin 'dict' failed: the 'dict' lookup plugin expects a dictionary, \
                     got '{shown}' of type <class '{class}'>)"
                ),
            ));
        }
        for key in term.try_iter()? {
            let value = term.get_item(&key)?;
            out.push(Value::from(std::collections::BTreeMap::from([("key", key), ("value", value)])));
        }
    }
    Ok(Value::from(out))
}

/// Ansible's `subelements` filter (`lookup`: its `with_subelements` lookup's rules).
fn subelements(obj: Value, key: Value, skip_missing: bool, lookup: bool) -> Result<Value, minijinja::Error> {
    use minijinja::value::ValueKind;
    let err = |m: String| minijinja::Error::new(ErrorKind::InvalidOperation, m);
    let py = |v: &Value| v.to_string();
    let elements: Vec<Value> = match obj.kind() {
        ValueKind::Map => {
            if lookup && obj.get_attr("skipped").is_ok_and(|s| !s.is_undefined() && !s.is_none() && s.is_true()) {
                return Ok(Value::from(Vec::<Value>::new()));
            }
            obj.try_iter()?.map(|k| obj.get_item(&k)).collect::<Result<_, _>>()?
        }
        ValueKind::Seq => obj.try_iter()?.collect(),
        _ if lookup => return Err(err("subelements lookup expects a list of two or three items, first a dict or a list, second a string pointing to the subkey".into())),
        _ => return Err(err("obj must be a list of dicts or a nested dict".into())),
    };
    let path: Vec<String> = match (key.as_str(), key.kind()) {
        (Some(s), _) => s.split('.').map(str::to_string).collect(),
        (None, ValueKind::Seq) if !lookup => key.try_iter()?.map(|k| k.to_string()).collect(),
        _ => return Err(err("subelements must be a list or a string".into())),
    };
    let mut out = Vec::new();
    for element in elements {
        if element.kind() != ValueKind::Map {
            if lookup {
                return Err(err(format!("subelements lookup expects a dictionary, got '{}'", py(&element))));
            }
        } else if lookup && element.get_attr("skipped").is_ok_and(|s| !s.is_undefined() && s.is_true()) {
            continue;
        }
        let mut values = element.clone();
        let mut found = true;
        for (i, k) in path.iter().enumerate() {
            let has = values.kind() == ValueKind::Map && values.get_attr(k).is_ok_and(|v| !v.is_undefined());
            if !has {
                if skip_missing {
                    found = false;
                    break;
                }
                return Err(err(format!("could not find '{k}' key in iterated item {}", py(&values))));
            }
            values = values.get_attr(k)?;
            if lookup && i + 1 < path.len() && values.kind() != ValueKind::Map {
                return Err(err(format!("the key {k} should point to a dictionary, got '{}'", py(&values))));
            }
        }
        if !found {
            continue;
        }
        if values.kind() != ValueKind::Seq {
            let last = path.last().cloned().unwrap_or_default();
            return Err(err(format!("the key {last} should point to a list, got {}", py(&values))));
        }
        let first = element.clone();
        for v in values.try_iter()? {
            out.push(Value::from(vec![first.clone(), v]));
        }
    }
    Ok(Value::from(out))
}
