//! Ansible's `to_yaml` and `to_nice_yaml`: PyYAML's `yaml.dump` as Ansible calls it (keys
//! sorted, unicode as is, 80-column folding), reproduced byte for byte for the data templates
//! hold (mappings, lists, text, numbers, booleans, null), because a site renders
//! configuration files (RKE2's config.yaml) with it and a different layout would be a change on
//! every run. The scalar rules are PyYAML's `analyze_scalar` / `choose_scalar_style` and its
//! plain, single- and double-quoted writers.

use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

const WIDTH: usize = 80;

/// `to_yaml` (`flow: None`: collections of scalars in flow style) or `to_nice_yaml` (`flow:
/// Some(false)`, indent 4).
#[cfg(test)]
pub fn dump(v: &Value, indent: usize, flow: Option<bool>) -> String {
    dump_with(v, indent, flow, None, true)
}

/// `dump` with the dumper's `width` (folding column: PyYAML takes it only above twice the
/// indent, else keeps 80), the mappings' keys sorted (PyYAML's `sort_keys`, on by default) or
/// as they are.
pub fn dump_with(v: &Value, indent: usize, flow: Option<bool>, width: Option<usize>, sort_keys: bool) -> String {
    let best_indent = indent.clamp(2, 9);
    let mut e = Emitter {
        width: width.filter(|&w| w > best_indent * 2).unwrap_or(WIDTH),
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
        best_indent,
        flow,
        sort_keys,
    };
    e.node(v, 0, Context::Root);
    if !e.out.ends_with('\n') {
        e.line_break();
    }
    e.out
}

#[derive(Clone, Copy, PartialEq)]
enum Context {
    Root,
    /// A value of a block mapping (after `key:`).
    MappingValue,
    /// An item of a block sequence (after `-`).
    SequenceItem,
    Flow,
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    best_indent: usize,
    flow: Option<bool>,
    width: usize,
    sort_keys: bool,
}

impl Emitter {
    fn write(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn line_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            let pad = " ".repeat(indent - self.column);
            self.out.push_str(&pad);
            self.column = indent;
        }
    }

    /// An indicator (`-`, `:`, `[`, ...), with a space before it unless one is there.
    fn indicator(&mut self, s: &str, need_whitespace: bool, whitespace: bool, indention: bool) {
        if !self.whitespace && need_whitespace {
            self.write(" ");
        }
        self.write(s);
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
    }

    /// Whether a collection is written in flow style (`[1, 2]`): always when empty; with
    /// `to_yaml`'s default, when it holds scalars only; with `default_flow_style=True`, always.
    fn flow_style(&self, v: &Value) -> bool {
        if self.flow == Some(true) {
            return matches!(v, Value::Array(_) | Value::Object(_));
        }
        match v {
            Value::Array(a) => a.is_empty() || (self.flow.is_none() && a.iter().all(is_plain_node)),
            Value::Object(m) => m.is_empty() || (self.flow.is_none() && m.values().all(is_plain_node)),
            _ => false,
        }
    }

    fn node(&mut self, v: &Value, indent: usize, ctx: Context) {
        match v {
            Value::Array(_) | Value::Object(_) if ctx == Context::Flow || self.flow_style(v) => {
                self.flow_node(v, indent)
            }
            Value::Array(a) => {
                // A sequence that is a mapping's value is not indented (PyYAML's indentless).
                let indent = match ctx {
                    Context::Root => 0,
                    Context::MappingValue if !self.indention => indent,
                    _ => indent + self.best_indent,
                };
                for item in a {
                    self.write_indent(indent);
                    self.indicator("-", true, false, true);
                    self.node(item, indent, Context::SequenceItem);
                }
            }
            Value::Object(m) => {
                let indent = if ctx == Context::Root { 0 } else { indent + self.best_indent };
                let mut keys: Vec<&String> = m.keys().collect();
                if self.sort_keys {
                    keys.sort();
                }
                for k in keys {
                    self.write_indent(indent);
                    self.scalar(k, indent, true, false);
                    self.indicator(":", false, false, false);
                    self.node(&m[k.as_str()], indent, Context::MappingValue);
                }
            }
            scalar => self.scalar_value(scalar, indent + self.best_indent, false),
        }
    }

    /// A collection in flow style; `indent` is its parent's, its own is one step in (PyYAML's
    /// increase_indent(flow=True)), which is where a folded scalar inside it continues.
    fn flow_node(&mut self, v: &Value, indent: usize) {
        let inner = indent + self.best_indent;
        match v {
            Value::Array(a) => {
                self.indicator("[", true, true, false);
                for (i, item) in a.iter().enumerate() {
                    if i > 0 {
                        self.indicator(",", false, false, false);
                    }
                    self.flow_item(item, inner);
                }
                self.indicator("]", false, false, false);
            }
            Value::Object(m) => {
                self.indicator("{", true, true, false);
                let mut keys: Vec<&String> = m.keys().collect();
                if self.sort_keys {
                    keys.sort();
                }
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        self.indicator(",", false, false, false);
                    }
                    self.scalar(k, inner + self.best_indent, true, true);
                    self.indicator(":", false, false, false);
                    self.flow_item(&m[k.as_str()], inner);
                }
                self.indicator("}", false, false, false);
            }
            other => self.scalar_value(other, inner, true),
        }
    }

    fn flow_item(&mut self, v: &Value, indent: usize) {
        match v {
            Value::Array(_) | Value::Object(_) => self.flow_node(v, indent),
            s => self.scalar_value(s, indent + self.best_indent, true),
        }
    }

    fn scalar_value(&mut self, v: &Value, indent: usize, flow: bool) {
        let text = match v {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), ..) => i.to_string(),
                (_, Some(u), _) => u.to_string(),
                (.., Some(f)) => python_float(f),
                _ => n.to_string(),
            },
            Value::String(s) => return self.scalar(s, indent, false, flow),
            Value::Array(_) => "[]".into(),
            Value::Object(_) => "{}".into(),
        };
        self.indicator(&text, true, false, false);
    }

    /// Text, in the style PyYAML chooses for it.
    fn scalar(&mut self, s: &str, indent: usize, simple_key: bool, flow: bool) {
        let a = analyze(s);
        let implicit = resolves_to_text(s);
        let plain = implicit
            && !(simple_key && (a.empty || a.multiline))
            && if flow { a.allow_flow_plain } else { a.allow_block_plain };
        if plain {
            self.plain(s, indent, !simple_key);
        } else if a.allow_single_quoted && !(simple_key && a.multiline) {
            self.single_quoted(s, indent, !simple_key);
        } else {
            self.double_quoted(s);
        }
    }

    fn plain(&mut self, text: &str, indent: usize, split: bool) {
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut start, mut end) = (false, 0, 0);
        while end <= chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > self.width && split {
                        self.write_indent(indent);
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        let data: String = chars[start..end].iter().collect();
                        self.write(&data);
                    }
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ') {
                let data: String = chars[start..end].iter().collect();
                self.write(&data);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
            }
            end += 1;
        }
    }

    fn single_quoted(&mut self, text: &str, indent: usize, split: bool) {
        self.indicator("'", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut breaks, mut start, mut end) = (false, false, 0, 0);
        while end <= chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > self.width && split && start != 0 && end != chars.len() {
                        self.write_indent(indent);
                    } else {
                        let data: String = chars[start..end].iter().collect();
                        self.write(&data);
                    }
                    start = end;
                }
            } else if breaks {
                if ch != Some('\n') {
                    if chars[start] == '\n' {
                        self.line_break();
                    }
                    for _ in start..end {
                        self.line_break();
                    }
                    self.write_indent(indent);
                    start = end;
                }
            } else if (ch.is_none() || matches!(ch, Some(' ' | '\n' | '\''))) && start < end {
                let data: String = chars[start..end].iter().collect();
                self.write(&data);
                start = end;
            }
            if ch == Some('\'') {
                self.write("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = c == '\n';
            }
            end += 1;
        }
        self.indicator("'", false, false, false);
    }

    fn double_quoted(&mut self, text: &str) {
        self.indicator("\"", true, false, false);
        let mut s = String::new();
        for c in text.chars() {
            match c {
                '\0' => s.push_str("\\0"),
                '\x07' => s.push_str("\\a"),
                '\x08' => s.push_str("\\b"),
                '\t' => s.push_str("\\t"),
                '\n' => s.push_str("\\n"),
                '\x0b' => s.push_str("\\v"),
                '\x0c' => s.push_str("\\f"),
                '\r' => s.push_str("\\r"),
                '\x1b' => s.push_str("\\e"),
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                '\u{85}' => s.push_str("\\N"),
                '\u{a0}' => s.push_str("\\_"),
                '\u{2028}' => s.push_str("\\L"),
                '\u{2029}' => s.push_str("\\P"),
                c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                    s.push_str(&format!("\\x{:02X}", c as u32))
                }
                '\u{feff}' => s.push_str("\\uFEFF"),
                c => s.push(c),
            }
        }
        self.write(&s);
        self.indicator("\"", false, false, false);
    }
}

/// A node PyYAML would write with no style of its own: a scalar (text is quoted later, by the
/// emitter, which does not count).
fn is_plain_node(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// Python's `repr` of a float, as PyYAML's represent_float writes it.
/// Python's `repr` of a finite float: the shortest digits, in exponent form (`1e+20`,
/// `1.5e-05`) outside 1e-4..1e16, else with a `.0` when whole.
pub fn python_float_repr(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match e.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', e),
        };
        return format!("{m}e{sign}{digits:0>2}");
    }
    let s = format!("{f}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

/// A float as PyYAML's represent_float writes it: `.inf`, `.nan`, else `repr` with a `.0`
/// before an exponent that lacks one (`1.0e+20`).
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    let r = python_float_repr(f);
    match r.split_once('e') {
        Some((m, e)) if !m.contains('.') => format!("{m}.0e{e}"),
        _ => r,
    }
}

struct Analysis {
    empty: bool,
    multiline: bool,
    allow_flow_plain: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
}

fn is_ws(c: Option<char>) -> bool {
    matches!(c, None | Some('\0' | ' ' | '\t' | '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'))
}

/// Whether `ch` (the first character where `first`) is an indicator that rules out a plain
/// scalar in flow and in block style, as PyYAML's `analyze_scalar` finds them.
fn indicators(first: bool, ch: char, preceded_by_ws: bool, followed_by_ws: bool) -> (bool, bool) {
    let (mut flow_ind, mut block_ind) = (false, false);
    if first {
        if "#,[]{}&*!|>'\"%@`".contains(ch) {
            flow_ind = true;
            block_ind = true;
        }
        if ch == '?' || ch == ':' {
            flow_ind = true;
            if followed_by_ws {
                block_ind = true;
            }
        }
        if ch == '-' && followed_by_ws {
            flow_ind = true;
            block_ind = true;
        }
    } else {
        if ",?[]{}".contains(ch) {
            flow_ind = true;
        }
        if ch == ':' {
            flow_ind = true;
            if followed_by_ws {
                block_ind = true;
            }
        }
        if ch == '#' && preceded_by_ws {
            flow_ind = true;
            block_ind = true;
        }
    }
    (flow_ind, block_ind)
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_flow_plain: false,
            allow_block_plain: true,
            allow_single_quoted: true,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let (mut block_ind, mut flow_ind) = (false, false);
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) = (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let mut preceded_by_ws = true;
    let mut followed_by_ws = chars.len() == 1 || is_ws(chars.get(1).copied());
    let (mut prev_space, mut prev_break) = (false, false);
    for (i, &ch) in chars.iter().enumerate() {
        let (flow, block) = indicators(i == 0, ch, preceded_by_ws, followed_by_ws);
        flow_ind |= flow;
        block_ind |= block;
        let is_break = matches!(ch, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}');
        if is_break {
            line_breaks = true;
        }
        if !(ch == '\n' || (' '..='~').contains(&ch)) {
            let unicode = (ch == '\u{85}'
                || ('\u{a0}'..='\u{d7ff}').contains(&ch)
                || ('\u{e000}'..='\u{fffd}').contains(&ch)
                || ('\u{10000}'..'\u{10ffff}').contains(&ch))
                && ch != '\u{feff}';
            if !unicode {
                special = true;
            }
        }
        if ch == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == chars.len() - 1 {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break {
            if i == 0 {
                leading_break = true;
            }
            if i == chars.len() - 1 {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = is_ws(Some(ch));
        followed_by_ws = i + 2 >= chars.len() || is_ws(chars.get(i + 2).copied());
    }
    let (mut flow_plain, mut block_plain, mut single) = (true, true, true);
    if leading_space || leading_break || trailing_space || trailing_break {
        flow_plain = false;
        block_plain = false;
    }
    if break_space {
        flow_plain = false;
        block_plain = false;
        single = false;
    }
    if space_break || special {
        flow_plain = false;
        block_plain = false;
        single = false;
    }
    if line_breaks {
        flow_plain = false;
        block_plain = false;
    }
    if flow_ind {
        flow_plain = false;
    }
    if block_ind {
        block_plain = false;
    }
    Analysis {
        empty: false,
        multiline: line_breaks,
        allow_flow_plain: flow_plain,
        allow_block_plain: block_plain,
        allow_single_quoted: single,
    }
}

/// Whether PyYAML reads `s` written plain back as text (not a bool, number, null, date...):
/// its implicit resolvers.
fn resolves_to_text(s: &str) -> bool {
    static OTHER: LazyLock<Vec<Regex>> = LazyLock::new(|| {
        [
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            r"^(?:<<)$",
            r"^(?:~|null|Null|NULL|)$",
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
            r"^(?:=)$",
        ]
        .iter()
        .map(|r| Regex::new(r).expect("static regex"))
        .collect()
    });
    !OTHER.iter().any(|r| r.is_match(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each expected text is what ansible-core's to_nice_yaml / to_yaml (PyYAML 6) gives for the
    /// same value.
    #[test]
    fn the_layout_is_pyyamls() {
        let v = json!({"a": [1, 2], "b": {"c": "x", "d": [{"e": 1, "f": "g"}]}, "z": null, "t": true, "s": "yes",
            "n": "0755", "e": "", "sp": " lead", "col": "a: b", "hash": "a #b", "dash": "- x", "dash2": "-x",
            "q": "it's", "multi": "line1\nline2\n", "long": "word ".repeat(30), "uni": "\u{d55c}\u{ae00}", "f": 1.5, "i": 10,
            "emptyl": [], "emptyd": {}, "url": "http://x:80/y", "star": "*x", "pct": "%x", "ver": "1.27",
            "date": "2001-01-01", "colon": "a:b", "tilde": "~"});
        let nice = "a:\n- 1\n- 2\nb:\n    c: x\n    d:\n    -   e: 1\n        f: g\ncol: 'a: b'\ncolon: a:b\ndash: '- x'\ndash2: -x\ndate: '2001-01-01'\ne: ''\nemptyd: {}\nemptyl: []\nf: 1.5\nhash: 'a #b'\ni: 10\nlong: 'word word word word word word word word word word word word word word word\n    word word word word word word word word word word word word word word word '\nmulti: 'line1\n\n    line2\n\n    '\nn: '0755'\npct: '%x'\nq: it's\ns: 'yes'\nsp: ' lead'\nstar: '*x'\nt: true\ntilde: '~'\nuni: \u{d55c}\u{ae00}\nurl: http://x:80/y\nver: '1.27'\nz: null\n";
        assert_eq!(dump(&v, 4, Some(false)), nice);
        let terse = "a: [1, 2]\nb:\n  c: x\n  d:\n  - {e: 1, f: g}\ncol: 'a: b'\ncolon: a:b\ndash: '- x'\ndash2: -x\ndate: '2001-01-01'\ne: ''\nemptyd: {}\nemptyl: []\nf: 1.5\nhash: 'a #b'\ni: 10\nlong: 'word word word word word word word word word word word word word word word\n  word word word word word word word word word word word word word word word '\nmulti: 'line1\n\n  line2\n\n  '\nn: '0755'\npct: '%x'\nq: it's\ns: 'yes'\nsp: ' lead'\nstar: '*x'\nt: true\ntilde: '~'\nuni: \u{d55c}\u{ae00}\nurl: http://x:80/y\nver: '1.27'\nz: null\n";
        assert_eq!(dump(&v, 2, None), terse);
        let list = json!([{"a": 1, "b": [1, {"c": 2}]}, "x"]);
        assert_eq!(dump(&list, 4, Some(false)), "-   a: 1\n    b:\n    - 1\n    -   c: 2\n- x\n");
        assert_eq!(dump(&list, 2, Some(false)), "- a: 1\n  b:\n  - 1\n  - c: 2\n- x\n");
        assert_eq!(dump(&json!("abc"), 2, Some(false)), "abc\n");
        let long = format!("{} {}", "x".repeat(100), "y".repeat(10));
        assert_eq!(dump(&json!({"k": long}), 2, Some(false)), format!("k: {}\n  yyyyyyyyyy\n", "x".repeat(100)));
        // A width PyYAML takes (above twice the indent) and one it does not.
        let words = json!({"k": "word ".repeat(20).trim_end()});
        assert_eq!(
            dump_with(&words, 2, Some(false), Some(1000), true),
            format!("k: {}\n", "word ".repeat(20).trim_end())
        );
        assert_eq!(dump_with(&words, 2, Some(false), Some(4), true), dump(&words, 2, Some(false)));
        assert_eq!(
            dump(&json!({"k": "tab\there", "c": "bell\u{7}"}), 2, Some(false)),
            "c: \"bell\\a\"\nk: \"tab\\there\"\n"
        );
        assert_eq!(dump(&json!({"k": 1e20, "l": 0.1, "m": 3.0}), 2, Some(false)), "k: 1.0e+20\nl: 0.1\nm: 3.0\n");
    }
}
