//! The lookups whose results come from their terms and the task's variables alone: the with_
//! loops' (`dict`, `items`, `together`, `nested`, `indexed_items`), `random_choice`,
//! `inventory_hostnames`, `vars` and `sequence`.

use minijinja::ErrorKind;
use minijinja::value::{Kwargs, Value};

use super::{fail, text, texts};
use crate::template::context::HostVars;
use crate::template::sequence;
use crate::template::source::unqualified;

/// The with_ loops' lookups (`dict`, `items`, `together`, `nested`), by the filters the
/// front-end's loops use.
pub(super) fn with_loop(state: &minijinja::State, kind: &str, terms: &[Value]) -> Result<Vec<Value>, minijinja::Error> {
    let filter = match kind {
        "dict" => "with_dict_items",
        "items" => "with_items_flatten",
        "together" => "with_together",
        _ => "with_nested",
    };
    let source = format!("terms | {filter}");
    let source = unqualified(&source);
    let expr = state.env().compile_expression(&source)?;
    let v = expr.eval(minijinja::context! { terms => Value::from(terms.to_vec()) })?;
    Ok(v.try_iter()?.collect())
}

/// [index, item] of each item, the terms flattened one level (Ansible's indexed_items).
pub(super) fn indexed_items(terms: &[Value]) -> Vec<Value> {
    let mut items = Vec::new();
    for t in terms {
        match t.try_iter() {
            Ok(i) if t.as_str().is_none() && t.kind() == minijinja::value::ValueKind::Seq => items.extend(i),
            _ => items.push(t.clone()),
        }
    }
    items.into_iter().enumerate().map(|(i, v)| Value::from(vec![Value::from(i), v])).collect()
}

/// One of the terms, at random (Ansible's random_choice).
pub(super) fn random_choice(terms: &[Value]) -> Vec<Value> {
    use std::hash::{BuildHasher, Hasher};
    if terms.is_empty() {
        vec![]
    } else {
        let r = std::collections::hash_map::RandomState::new().build_hasher().finish();
        vec![terms[(r % terms.len() as u64) as usize].clone()]
    }
}

/// The inventory's hosts that the terms' host patterns select (Ansible's inventory_hostnames).
pub(super) fn inventory_hostnames(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
) -> Result<Vec<Value>, minijinja::Error> {
    let patterns = texts(kind, terms)?;
    let hostvars = state.lookup("hostvars");
    Ok(match hostvars.as_ref().and_then(|h| h.downcast_object_ref::<HostVars>()) {
        Some(h) => h.lookup.pattern_hosts(&patterns).into_iter().map(Value::from).collect(),
        None => return Err(fail("lookup('inventory_hostnames', ...): no inventory here".into())),
    })
}

/// Ansible's vars lookup: each term a variable's name.
pub(super) fn vars(state: &minijinja::State, terms: &[Value], kw: &Kwargs) -> Result<Vec<Value>, minijinja::Error> {
    // A variable by name (its value as the context holds it), or `default`.
    let default: Option<Value> = kw.get("default")?;
    let mut out = Vec::new();
    for term in terms {
        let name = term.as_str().ok_or_else(|| fail(format!("Variable name must be 'str' not {term}.")))?;
        match state.lookup(name).filter(|v| !v.is_undefined()) {
            Some(v) => out.push(v),
            None => match &default {
                Some(d) => out.push(d.clone()),
                None => {
                    return Err(minijinja::Error::new(
                        ErrorKind::UndefinedError,
                        format!("No variable named '{name}' was found."),
                    ));
                }
            },
        }
    }
    Ok(out)
}

/// Ansible's sequence lookup: the items of each term (`sequence`).
pub(super) fn sequences(kind: &str, terms: &[Value]) -> Result<Vec<Value>, minijinja::Error> {
    let mut out = Vec::new();
    for term in terms {
        let items = sequence::sequence(&text(kind, term)?).map_err(fail)?;
        out.extend(items.into_iter().map(Value::from));
    }
    Ok(out)
}
