//! Typing of inventory values the way Ansible does it: `ast.literal_eval` on the text, and the raw
//! string when that fails. Only the literal subset of Python is needed: numbers, strings (with
//! prefixes, escapes, implicit concatenation), True/False/None, lists, tuples, sets and dicts.

use serde_json::{Map, Number, Value};

/// The key Ansible's JSON gives a value not to be templated: `{"__ansible_unsafe": "text"}`.
pub const UNSAFE: &str = "__ansible_unsafe";

/// A value with every unsafe marker replaced by its text: what playbooks and templates see.
pub fn strip_unsafe(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.len() == 1 && m.get(UNSAFE).is_some_and(Value::is_string) => m[UNSAFE].clone(),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), strip_unsafe(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(strip_unsafe).collect()),
        other => other.clone(),
    }
}

/// A value with every unsafe marker replaced by its text kept from templating
/// (`text::python::literal`); one that cannot be kept so stays its text.
pub fn literal_unsafe(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.len() == 1 && m.get(UNSAFE).is_some_and(Value::is_string) => {
            let text = m[UNSAFE].as_str().unwrap_or_default();
            Value::String(crate::text::python::literal(text).unwrap_or_else(|_| text.to_string()))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), literal_unsafe(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(literal_unsafe).collect()),
        other => other.clone(),
    }
}

/// Ansible's `_parse_value`: the typed value, or the text itself.
pub fn parse_value(text: &str) -> Value {
    match literal_eval(text) {
        Some(v) => v,
        None => Value::String(text.to_string()),
    }
}

/// `ast.literal_eval` for one line; `None` where Python would raise.
pub fn literal_eval(text: &str) -> Option<Value> {
    let mut p = Parser { s: text.as_bytes(), src: text, i: 0 };
    let v = p.expr()?;
    p.skip_ws();
    if p.i < p.s.len() && p.s[p.i] == b'#' {
        p.i = p.s.len();
    }
    (p.i == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\x0c') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Option<Value> {
        self.skip_ws();
        match self.peek()? {
            b'-' | b'+' => {
                let neg = self.peek() == Some(b'-');
                self.i += 1;
                self.skip_ws();
                match self.expr()? {
                    Value::Number(n) if neg => negate(&n),
                    Value::Number(n) => Some(Value::Number(n)),
                    _ => None,
                }
            }
            b'[' => {
                self.i += 1;
                Some(Value::Array(self.items(b']')?))
            }
            b'(' => {
                self.i += 1;
                let start = self.i;
                // `(x)` is x; `(x,)` and `()` are tuples, which Ansible turns into lists.
                if self.eat(b')') {
                    return Some(Value::Array(vec![]));
                }
                let first = self.expr()?;
                if self.eat(b')') {
                    return Some(first);
                }
                self.i = start;
                Some(Value::Array(self.items(b')')?))
            }
            b'{' => {
                self.i += 1;
                self.brace()
            }
            b'.' if self.s[self.i..].starts_with(b"...") => {
                self.i += 3;
                Some(Value::String("...".into())) // Ellipsis, which Ansible writes as text
            }
            b'0'..=b'9' | b'.' => self.number(),
            _ => self.word_or_string(),
        }
    }

    /// Comma-separated expressions up to `close`, a trailing comma allowed.
    fn items(&mut self, close: u8) -> Option<Vec<Value>> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Some(out);
            }
            out.push(self.expr()?);
            if self.eat(b',') {
                continue;
            }
            return self.eat(close).then_some(out);
        }
    }

    fn brace(&mut self) -> Option<Value> {
        if self.eat(b'}') {
            return Some(Value::Object(Map::new()));
        }
        let first = self.expr()?;
        if self.eat(b':') {
            let mut map = Map::new();
            let v = self.expr()?;
            map.insert(key_string(&first)?, v);
            loop {
                if self.eat(b'}') {
                    return Some(Value::Object(map));
                }
                if !self.eat(b',') {
                    return None;
                }
                if self.eat(b'}') {
                    return Some(Value::Object(map));
                }
                let k = self.expr()?;
                if !self.eat(b':') {
                    return None;
                }
                let v = self.expr()?;
                map.insert(key_string(&k)?, v);
            }
        }
        // A set: Ansible turns it into a list (order as written, duplicates dropped).
        let mut out = vec![first];
        loop {
            if self.eat(b'}') {
                break;
            }
            if !self.eat(b',') {
                return None;
            }
            if self.eat(b'}') {
                break;
            }
            let v = self.expr()?;
            if !out.contains(&v) {
                out.push(v);
            }
        }
        Some(Value::Array(out))
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'_' | b'.'))
        {
            // An exponent sign belongs to the number: 1e-3.
            if matches!(self.s[self.i], b'e' | b'E')
                && !self.src[start..self.i].starts_with("0x")
                && !self.src[start..self.i].starts_with("0X")
                && matches!(self.s.get(self.i + 1), Some(b'+' | b'-'))
            {
                self.i += 1;
            }
            self.i += 1;
        }
        parse_number(&self.src[start..self.i])
    }

    fn word_or_string(&mut self) -> Option<Value> {
        let mut out: Option<String> = None;
        // Bytes and text literals cannot be concatenated (Python's SyntaxError).
        let mut bytes: Option<bool> = None;
        loop {
            self.skip_ws();
            let start = self.i;
            while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_') {
                self.i += 1;
            }
            let word = &self.src[start..self.i];
            match self.peek() {
                Some(q @ (b'\'' | b'"')) if is_string_prefix(word) => {
                    let lower = word.to_ascii_lowercase();
                    let is_bytes = lower.contains('b');
                    if *bytes.get_or_insert(is_bytes) != is_bytes {
                        return None;
                    }
                    let body_start = self.i;
                    let s = self.string(q, lower.contains('r'))?;
                    if is_bytes && !self.src[body_start..self.i].is_ascii() {
                        return None; // "bytes can only contain ASCII literal characters"
                    }
                    out.get_or_insert_with(String::new).push_str(&s);
                }
                _ => {
                    if let Some(text) = out {
                        self.i = start;
                        // Ansible decodes bytes to text and marks it unsafe (never templated);
                        // this is how its JSON writes such a value.
                        return Some(if bytes == Some(true) {
                            let mut m = Map::new();
                            m.insert(UNSAFE.into(), Value::String(text));
                            Value::Object(m)
                        } else {
                            Value::String(text)
                        });
                    }
                    return match word {
                        "True" => Some(Value::Bool(true)),
                        "False" => Some(Value::Bool(false)),
                        "None" => Some(Value::Null),
                        // The one call literal_eval accepts: the empty set, which Ansible makes a list.
                        "set" if self.eat(b'(') && self.eat(b')') => Some(Value::Array(vec![])),
                        "" if self.src[self.i..].starts_with("...") => {
                            self.i += 3;
                            Some(Value::String("...".into()))
                        }
                        _ => None,
                    };
                }
            }
        }
    }

    fn string(&mut self, q: u8, raw: bool) -> Option<String> {
        let triple = self.s[self.i..].starts_with(&[q, q, q]);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.src[self.i..].chars().next()?;
            if c as u32 == q as u32 {
                if !triple {
                    self.i += 1;
                    return Some(out);
                }
                if self.s[self.i..].starts_with(&[q, q, q]) {
                    self.i += 3;
                    return Some(out);
                }
            }
            self.i += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let n = self.src[self.i..].chars().next()?;
            self.i += n.len_utf8();
            if raw {
                out.push('\\');
                out.push(n);
                continue;
            }
            match n {
                '\n' => {}
                '\\' | '\'' | '"' => out.push(n),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut v = n.to_digit(8)?;
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + (d - b'0') as u32;
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(char::from_u32(v)?);
                }
                'x' | 'u' | 'U' => {
                    let len = match n {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex = self.src.get(self.i..self.i + len)?;
                    let v = u32::from_str_radix(hex, 16).ok()?;
                    self.i += len;
                    out.push(char::from_u32(v)?);
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

fn is_string_prefix(w: &str) -> bool {
    // f-strings are not literals: literal_eval rejects them.
    matches!(w.to_ascii_lowercase().as_str(), "" | "r" | "u" | "b" | "br" | "rb")
}

fn negate(n: &Number) -> Option<Value> {
    if let Some(i) = n.as_i64() {
        return Some(Value::Number(Number::from(i.checked_neg()?)));
    }
    if let Some(u) = n.as_u64() {
        return i64::try_from(u).ok().map(|i| Value::Number(Number::from(-i)));
    }
    Number::from_f64(-n.as_f64()?).map(Value::Number)
}

/// A Python number literal: underscores only between digits, no leading zeros on decimals.
fn parse_number(t: &str) -> Option<Value> {
    let digits_ok = |body: &str, radix: u32| {
        !body.is_empty()
            && !body.starts_with('_')
            && !body.ends_with('_')
            && !body.contains("__")
            && body.chars().all(|c| c == '_' || c.is_digit(radix))
    };
    let int = |body: &str, radix: u32| -> Option<Value> {
        if !digits_ok(body, radix) {
            return None;
        }
        let clean: String = body.chars().filter(|c| *c != '_').collect();
        // Python ints are unbounded; past u64 the value is kept as a float-free string.
        u64::from_str_radix(&clean, radix).ok().map(|v| Value::Number(Number::from(v)))
    };
    let lower = t.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("0x") {
        return int(rest.strip_prefix('_').unwrap_or(rest), 16);
    }
    if let Some(rest) = lower.strip_prefix("0o") {
        return int(rest.strip_prefix('_').unwrap_or(rest), 8);
    }
    if let Some(rest) = lower.strip_prefix("0b") {
        return int(rest.strip_prefix('_').unwrap_or(rest), 2);
    }
    if let Some(imag) = lower.strip_suffix('j') {
        // An imaginary literal: Ansible keeps the complex number as its text, `str(1j)`.
        let f = match parse_number(imag).or_else(|| parse_number(imag.trim_start_matches(['0', '_'])))? {
            Value::Number(n) => n.as_f64()?,
            _ => return None,
        };
        let text = if f.fract() == 0.0 && f.abs() < 1e16 { format!("{}j", f as i64) } else { format!("{f}j") };
        return Some(Value::String(text));
    }
    if !lower.contains(['.', 'e']) {
        if !digits_ok(&lower, 10) {
            return None;
        }
        let clean: String = lower.chars().filter(|c| *c != '_').collect();
        if clean.len() > 1 && clean.starts_with('0') && clean.chars().any(|c| c != '0') {
            return None; // "leading zeros in decimal integer literals are not permitted"
        }
        return int(&lower, 10);
    }
    // Float: digits [. digits] [e [+-] digits], each digit run with the underscore rule.
    let (mant, exp) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower.as_str(), None),
    };
    let (ip, fp) = match mant.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mant, ""),
    };
    if ip.is_empty() && fp.is_empty() {
        return None;
    }
    if (!ip.is_empty() && !digits_ok(ip, 10)) || (!fp.is_empty() && !digits_ok(fp, 10)) {
        return None;
    }
    if let Some(e) = exp {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if !digits_ok(e, 10) {
            return None;
        }
    }
    let clean: String = lower.chars().filter(|c| *c != '_').collect();
    let f: f64 = clean.parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// Python's json.dumps turns non-string dict keys into strings this way.
fn key_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_value;
    use serde_json::json;

    #[test]
    fn types_values_like_ansible() {
        let cases = [
            ("1", json!(1)),
            ("-3", json!(-3)),
            ("1.5", json!(1.5)),
            ("1e3", json!(1000.0)),
            ("0x1f", json!(31)),
            ("1_000", json!(1000)),
            ("010", json!("010")),
            ("00", json!(0)),
            ("True", json!(true)),
            ("false", json!("false")),
            ("None", json!(null)),
            ("yes", json!("yes")),
            ("'it''s'", json!("its")),
            ("\"a\\tb\"", json!("a\tb")),
            ("[1, 'a' 'b', (2,3), {4,5}]", json!([1, "ab", [2, 3], [4, 5]])),
            ("{'k': 1, 2: None}", json!({"k": 1, "2": null})),
            ("(1)", json!(1)),
            ("1 # note", json!(1)),
            ("foo # note", json!("foo # note")),
            ("1j", json!("1j")),
            ("{k:1}", json!("{k:1}")),
            ("f'x'", json!("f'x'")),
            ("b'zz'", json!({"__ansible_unsafe": "zz"})),
            ("b'a' B\"b\"", json!({"__ansible_unsafe": "ab"})),
            ("b'a' 'b'", json!("b'a' 'b'")),
            ("set()", json!([])),
            ("[1, set()]", json!([1, []])),
            ("set([1])", json!("set([1])")),
            ("frozenset()", json!("frozenset()")),
            ("[..., 1j, 1.5j, 01j]", json!(["...", "1j", "1.5j", "1j"])),
            ("1.2.3.4", json!("1.2.3.4")),
            ("", json!("")),
        ];
        for (text, want) in cases {
            assert_eq!(parse_value(text), want, "value {text:?}");
        }
    }
}
