//! Filters on lists: Ansible's set filters (`unique`, `union`, `difference`, ...), `flatten`,
//! `zip` and `zip_longest`, `combinations` and `permutations`, `extract`; and Jinja2's `map`,
//! `selectattr` and `rejectattr` with Ansible 2.19's strict missing attributes.

use minijinja::value::{Kwargs, Rest, Value, ValueKind, ValueOrKwargs};
use minijinja::{Environment, Error, ErrorKind};

use super::{contains, items, python_type, unique_of};

pub(super) fn add(env: &mut Environment<'static>) {
    add_sets(env);
    add_combinations(env);
    add_attributes(env);
}

/// Ansible's set filters, which keep first occurrences in order (`unique_of`), and `flatten`.
fn add_sets(env: &mut Environment<'static>) {
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
}

/// Lists made of lists: `extract`, `zip`, `zip_longest`, `combinations`, `permutations`.
fn add_combinations(env: &mut Environment<'static>) {
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
}

/// Filters over the items' attributes.
fn add_attributes(env: &mut Environment<'static>) {
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
