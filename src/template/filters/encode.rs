//! Filters that write values as text and read them back: JSON (Python's `json.dumps` as
//! Ansible calls it), YAML (`yaml_dump`), base64, percent-encoding and digests.

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error};

use super::{bad, json_of};

pub(super) fn add(env: &mut Environment<'static>) {
    env.add_filter("to_json", |v: Value, kw: Kwargs| -> Result<String, Error> {
        let sort: Option<bool> = kw.get("sort_keys")?;
        let indent: Option<usize> = kw.get("indent")?;
        kw.assert_all_used()?;
        Ok(python_json(&json_of(&crate::template::clock::iso_datetimes(v))?, indent, sort.unwrap_or(false)))
    });
    env.add_filter("to_nice_json", |v: Value, kw: Kwargs| -> Result<String, Error> {
        let sort: Option<bool> = kw.get("sort_keys")?;
        let indent: Option<usize> = kw.get("indent")?;
        kw.assert_all_used()?;
        Ok(python_json(
            &json_of(&crate::template::clock::iso_datetimes(v))?,
            Some(indent.unwrap_or(4)),
            sort.unwrap_or(true),
        ))
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
        Ok(crate::template::to_value(v))
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
            Ok(crate::template::yaml_dump::dump_with(
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
        Ok(crate::template::to_value(v))
    });
    env.add_filter("hash", |s: String, algo: Option<String>| -> Result<String, Error> {
        hash(s.as_bytes(), algo.as_deref().unwrap_or("sha1"))
    });
    env.add_filter("checksum", |s: String| -> Result<String, Error> { hash(s.as_bytes(), "sha1") });
    env.add_filter("b64encode", |s: String| -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
    });
    // Jinja2's (and minijinja's) `urlencode`: a string percent-encoded but for `/ . - _`; a
    // mapping as `k=v&...`.
    env.add_filter("urlencode", |v: Value| -> Result<String, minijinja::Error> {
        use crate::secret::urlencode;
        let text = |x: &Value| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string());
        if v.is_undefined() || v.is_none() {
            return Ok(String::new());
        }
        if v.kind() != minijinja::value::ValueKind::Map {
            return Ok(urlencode(&text(&v)));
        }
        let mut pairs = Vec::new();
        for k in v.try_iter()? {
            let x = v.get_item(&k)?;
            if !(x.is_none() || x.is_undefined()) {
                pairs.push(format!("{}={}", urlencode(&text(&k)), urlencode(&text(&x))));
            }
        }
        Ok(pairs.join("&"))
    });
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
                Some(f) if n.is_f64() => out.push_str(&crate::template::yaml_dump::python_float_repr(f)),
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

fn hash(data: &[u8], algo: &str) -> Result<String, Error> {
    use sha2::Digest;
    Ok(match algo {
        "md5" => hex::encode(md5::Md5::digest(data)),
        "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "sha224" => hex::encode(sha2::Sha224::digest(data)),
        "sha256" => hex::encode(sha2::Sha256::digest(data)),
        "sha384" => hex::encode(sha2::Sha384::digest(data)),
        "sha512" => hex::encode(sha2::Sha512::digest(data)),
        other => {
            return Err(bad(format!("hash: '{other}' is not supported (md5, sha1, sha224, sha256, sha384, sha512)")));
        }
    })
}
