//! Ansible's own filters and tests that playbooks use most, beside Jinja's (which minijinja
//! has): each does what Ansible's does (ansible/plugins/filter/core.py, mathstuff.py,
//! plugins/test/core.py), so that a site's templates render the same under copctl. A filter
//! that is not here is an "unknown filter" error where it is used, never a guess.
//! The families with more than a few filters have their files: `encode`, `mappings`, `lists`,
//! `re` (regular expressions), `loops` (the front-end's with_ loops), `version`.

mod encode;
mod lists;
mod loops;
mod mappings;
mod re;
pub(super) mod version;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use crate::text::quote::shell_quote;

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

/// A registered result's flag (`x is changed`): Ansible's tests fail on a value that is not a
/// result.
fn result_flag(v: &Value, key: &str, test: &str) -> Result<bool, Error> {
    if v.kind() != ValueKind::Map {
        return Err(bad(format!("the '{test}' test expects a registered result (a mapping), not {}", v.kind())));
    }
    let x = v.get_attr(key)?;
    Ok(!x.is_undefined() && x.is_true())
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

pub fn add(env: &mut Environment<'static>) {
    add_numbers(env);
    add_text(env);
    add_tests(env);
    encode::add(env);
    mappings::add(env);
    lists::add(env);
    re::add(env);
    loops::add(env);
    version::add(env);
}

/// Jinja2's `int` and `float` as Ansible has them.
fn add_numbers(env: &mut Environment<'static>) {
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
}

/// Filters on text and single values.
fn add_text(env: &mut Environment<'static>) {
    // POSIX shell quoting exactly as Ansible's `quote` (Python's shlex.quote) does it, so a
    // site's shell lines render the same under copctl and Ansible.
    env.add_filter("quote", |v: Value| -> String {
        let s = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        shell_quote(&s)
    });
    // Ansible's `bool`: the words yes/on/true/1 and no/off/false/0 in any case, the integers
    // 1 and 0; anything else is false but what equals 1 (Ansible warns it is deprecated).
    env.add_filter("bool", |v: Value| -> bool {
        if let Some(s) = v.as_str() {
            return matches!(s.to_lowercase().as_str(), "yes" | "on" | "true" | "1");
        }
        match v.kind() {
            minijinja::value::ValueKind::Bool => v.is_true(),
            minijinja::value::ValueKind::Number => f64::try_from(v).is_ok_and(|n| n == 1.0),
            _ => false,
        }
    });
    env.add_filter("basename", |s: String| -> String { s.rsplit('/').next().unwrap_or("").to_string() });
    // Python's os.path.expanduser on the bastion, as Ansible's filter runs it: `~` and `~/...`
    // are $HOME; `~user` and anything else stay as written.
    env.add_filter("expanduser", |s: String| -> String { expanduser(&s, std::env::var("HOME").ok().as_deref()) });
    env.add_filter("dirname", |s: String| -> String {
        match s.rfind('/') {
            Some(0) => "/".into(),
            Some(i) => s[..i].to_string(),
            None => String::new(),
        }
    });
    // Ansible's `ternary(true_val, false_val, none_val)`: the third for a null value.
    env.add_filter("ternary", |v: Value, a: Value, b: Value, none: Option<Value>| -> Value {
        match none {
            Some(n) if v.is_none() => n,
            _ if v.is_true() => a,
            _ => b,
        }
    });
    env.add_filter("mandatory", |v: Value| -> Result<Value, minijinja::Error> {
        if v.is_undefined() {
            Err(minijinja::Error::new(ErrorKind::UndefinedError, "mandatory variable is not defined"))
        } else {
            Ok(v)
        }
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
    env.add_filter("type_debug", |v: Value| -> &'static str { python_type(&v) });
}

/// Tests on registered results, lists and values.
fn add_tests(env: &mut Environment<'static>) {
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
    // Ansible's `path is file`: a regular file on the bastion (plan-time checks of settings).
    env.add_test("file", |p: String| -> bool { std::path::Path::new(&p).is_file() });
    // Ansible's `list is any` / `list is all`.
    env.add_test("any", |v: Value| -> Result<bool, minijinja::Error> { Ok(v.try_iter()?.any(|x| x.is_true())) });
    env.add_test("all", |v: Value| -> Result<bool, minijinja::Error> { Ok(v.try_iter()?.all(|x| x.is_true())) });
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

/// Python's `os.path.expanduser` of `s` on the bastion, whose `$HOME` is `home`.
fn expanduser(s: &str, home: Option<&str>) -> String {
    match (s.strip_prefix('~'), home) {
        (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
            let out = format!("{}{rest}", h.trim_end_matches('/'));
            if out.is_empty() { "/".into() } else { out }
        }
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use minijinja::Value;
    use minijinja::context;

    use super::expanduser;
    use crate::template::{NoHosts, Templates, host_context, to_value};

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

    #[test]
    fn expanduser_is_pythons() {
        assert_eq!(expanduser("~/x", Some("/root")), "/root/x");
        assert_eq!(expanduser("~", Some("/home/a/")), "/home/a");
        assert_eq!(expanduser("~", Some("/")), "/");
        assert_eq!(expanduser("~bob/x", Some("/root")), "~bob/x");
        assert_eq!(expanduser("/tmp/~", Some("/root")), "/tmp/~");
        assert_eq!(expanduser("~/x", None), "~/x");
    }

    #[test]
    fn bool_is_ansibles() {
        let t = Templates::new(None);
        let ctx = Value::from(());
        // What ansible-core 2.19 renders: only its words and 1 are true.
        let text = "{{ 3 | bool }} {{ 'Y' | bool }} {{ 1 | bool }} {{ 1.0 | bool }} {{ 'On' | bool }} {{ none | bool }} {{ ' yes' | bool }}";
        assert_eq!(t.render_str(text, &ctx).unwrap(), "False False True True True False False");
    }

    #[test]
    fn strict_undefined_and_filters() {
        let t = Templates::new(None);
        let mut vars = crate::inventory::Vars::new();
        vars.insert("pw".into(), serde_json::json!("it's"));
        let ctx = host_context(&t, "h1", vars.clone(), to_value(serde_json::json!({})), &[], Arc::new(NoHosts));
        assert_eq!(t.render_str("{{ pw | quote }}", &ctx).unwrap(), "'it'\"'\"'s'");
        assert_eq!(t.render_str("{{ inventory_hostname }}", &ctx).unwrap(), "h1");
        let e = t.render_str("{{ nope }}", &ctx).unwrap_err();
        assert!(Templates::is_undefined_error(&e));
        assert_eq!(t.render_str("{{ 'abc' | b64encode }}", &ctx).unwrap(), "YWJj");
        assert!(t.eval("'true' | bool", &ctx).unwrap().is_true());
    }

    #[test]
    fn urlencode_writes_what_minijinja_and_jinja2_write() {
        let t = Templates::new(None);
        let ctx = t.context(&crate::inventory::Vars::new());
        assert_eq!(
            t.render_str("{{ 'a b/c?d=é&x_y-z.' | urlencode }}", &ctx).unwrap(),
            "a%20b/c%3Fd%3D%C3%A9%26x_y-z."
        );
        assert_eq!(t.render_str("{{ {'k 1': 'v/2', 'n': none} | urlencode }}", &ctx).unwrap(), "k%201=v/2");
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
