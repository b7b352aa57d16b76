//! The readers of a module's arguments: each taken by name as the kind it must be, its problem
//! reported where it is written, and every argument left untaken refused by `finish`. Shared by
//! every module family.

use serde_json::{Map, Value, json};

use crate::playbook::ansible::node::{Kind, Node};
use crate::playbook::ansible::split::parse_kv;
use crate::playbook::ansible::{Problems, closest};

/// One argument: its value and where it is written.
pub(super) struct Arg {
    pub(super) name: String,
    pub(super) value: Value,
    pub(super) line: usize,
    pub(super) column: usize,
}

/// A module's arguments, taken one by one; what is left at the end is unsupported.
pub(super) struct Args<'p> {
    module: String,
    pub(super) items: Vec<Arg>,
    /// Words of a free-form line that are no `k=v` (the command itself for command and shell).
    pub(super) raw: Option<(String, usize, usize)>,
    pub(super) p: &'p mut Problems,
    pub(super) at: (usize, usize),
}

impl<'p> Args<'p> {
    /// Arguments as a mapping, a free-form line, or both (`args:` beside a line). `raw_keys`:
    /// for command and shell, the only `k=v` words a line may carry.
    pub(super) fn new(
        p: &'p mut Problems,
        module: &str,
        node: &Node,
        extra: Option<&Node>,
        raw_keys: Option<&[&str]>,
    ) -> Self {
        let mut a = Args { module: module.to_string(), items: vec![], raw: None, p, at: (node.line, node.column) };
        for n in [Some(node), extra].into_iter().flatten() {
            match &n.kind {
                Kind::Map(m) => {
                    for (k, v) in m {
                        a.items.push(Arg { name: k.name.clone(), value: v.to_value(), line: k.line, column: k.column });
                    }
                }
                Kind::Scalar(Value::Null) => {}
                Kind::Scalar(Value::String(s)) => {
                    let (kv, raw) = parse_kv(s, raw_keys);
                    // Each `k=` where it is written, when the line is the node's own line.
                    let line_text = p_source_line(a.p, n.line);
                    for (k, v) in kv {
                        let column = line_text
                            .as_deref()
                            .and_then(|t| {
                                t.char_indices()
                                    .skip(n.column.saturating_sub(1))
                                    .find(|(i, _)| t[*i..].starts_with(&format!("{k}=")))
                            })
                            .map(|(i, _)| line_text.as_deref().unwrap_or_default()[..i].chars().count() + 1)
                            .unwrap_or(n.column);
                        a.items.push(Arg { name: k, value: Value::String(v), line: n.line, column });
                    }
                    if !raw.is_empty() {
                        a.raw = Some((raw, n.line, n.column));
                    }
                }
                Kind::Scalar(v) => a.raw = Some((v.to_string(), n.line, n.column)),
                Kind::Seq(_) => a.p.add(
                    n.line,
                    n.column,
                    format!("{module}: arguments are a mapping or a `k=v` line, not a list"),
                    "a list",
                    None,
                ),
            }
        }
        // `module_defaults` for the arguments the task does not give, the innermost first.
        let mut defaults = Vec::new();
        for layer in a.p.module_defaults.iter().rev() {
            if let Some(Value::Object(d)) = layer.get(module) {
                for (k, v) in d {
                    if !a.items.iter().any(|i| i.name == *k) && !defaults.iter().any(|i: &Arg| i.name == *k) {
                        defaults.push(Arg { name: k.clone(), value: v.clone(), line: a.at.0, column: a.at.1 });
                    }
                }
            }
        }
        a.items.extend(defaults);
        a
    }

    pub(super) fn take(&mut self, names: &[&str]) -> Option<Arg> {
        let i = self.items.iter().position(|a| names.contains(&a.name.as_str()))?;
        Some(self.items.remove(i))
    }

    pub(super) fn bad(&mut self, a: &Arg, msg: String, help: Option<String>) {
        self.p.add_len(a.line, a.column, a.name.len(), msg, "this argument", help);
    }

    /// Text (numbers and booleans as written: `owner: 0`).
    pub(super) fn text(&mut self, names: &[&str]) -> Option<String> {
        let a = self.take(names)?;
        match &a.value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null => None,
            other => {
                let m = format!("{}: {} must be text, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A list of texts, as Ansible's `type='list'` reads one: a YAML list, or one text split at
    /// commas.
    pub(super) fn texts(&mut self, names: &[&str]) -> Option<Vec<String>> {
        let a = self.take(names)?;
        match &a.value {
            Value::String(s) => Some(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()),
            Value::Array(l) if l.iter().all(|x| x.is_string()) => {
                Some(l.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            }
            other => {
                let m = format!("{}: {} must be a list of texts, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A boolean as Ansible reads one (`yes`, `no`, `true`, `1`, ...), or a template left to
    /// render.
    pub(super) fn flag(&mut self, names: &[&str]) -> Option<Value> {
        let a = self.take(names)?;
        match &a.value {
            Value::Bool(b) => Some(json!(b)),
            Value::String(s) if s.contains("{{") => Some(json!(s)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "yes" | "true" | "on" | "1" | "y" | "t" => Some(json!(true)),
                "no" | "false" | "off" | "0" | "n" | "f" => Some(json!(false)),
                _ => {
                    let m = format!("{}: {} must be a boolean, not '{s}'", self.module, a.name);
                    self.bad(&a, m, None);
                    None
                }
            },
            Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => Some(json!(n.as_u64() == Some(1))),
            other => {
                let m = format!("{}: {} must be a boolean, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A literal boolean (where the native argument cannot be a template).
    pub(super) fn bool_literal(&mut self, names: &[&str]) -> Option<bool> {
        let at =
            self.items.iter().find(|a| names.contains(&a.name.as_str())).map(|a| (a.line, a.column, a.name.clone()));
        match self.flag(names)? {
            Value::Bool(b) => Some(b),
            _ => {
                let (l, c, n) = at.unwrap_or_default();
                self.p.add_len(
                    l,
                    c,
                    n.len(),
                    format!("{}: {n} must be a literal boolean here (a template is not supported yet)", self.module),
                    "this argument",
                    None,
                );
                None
            }
        }
    }

    /// A number, or a template rendering to one.
    pub(super) fn number(&mut self, names: &[&str]) -> Option<Value> {
        let a = self.take(names)?;
        match &a.value {
            Value::Number(n) if n.as_u64().is_some() => Some(a.value.clone()),
            Value::String(s) if s.contains("{{") => Some(json!(s)),
            Value::String(s) if s.trim().parse::<u64>().is_ok() => Some(json!(s.trim().parse::<u64>().ok())),
            other => {
                let m = format!("{}: {} must be a whole number, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// `mode:` as octal text. A YAML number is what Ansible reads it as: `0644` (YAML 1.1
    /// octal) is 0644, `644` is decimal 644 (octal 1204), as Ansible applies it.
    pub(super) fn mode(&mut self) -> Option<String> {
        self.mode_of("mode")
    }

    /// A mode argument by its name, read as `mode` is.
    pub(super) fn mode_of(&mut self, name: &str) -> Option<String> {
        let a = self.take(&[name])?;
        match &a.value {
            Value::Number(n) if n.as_u64().is_some() => Some(format!("{:o}", n.as_u64().unwrap_or_default())),
            Value::String(s) => Some(s.clone()),
            other => {
                let m = format!("{}: {name} must be octal text, not {}", self.module, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A value given as written.
    pub(super) fn value(&mut self, names: &[&str]) -> Option<Value> {
        self.take(names).map(|a| a.value)
    }

    /// One of `allowed` (Ansible's value → the native one); anything else is a problem.
    /// `state: present | absent`, the state most modules take.
    pub(super) fn presence(&mut self) -> Option<String> {
        self.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent")
    }

    pub(super) fn choice(&mut self, names: &[&str], allowed: &[(&str, &str)], help: &str) -> Option<String> {
        let a = self.take(names)?;
        let text = match &a.value {
            Value::String(s) => s.clone(),
            Value::Null => return None,
            other => other.to_string(),
        };
        if let Some((_, native)) = allowed.iter().find(|(x, _)| *x == text) {
            return Some(native.to_string());
        }
        let m = format!("{}: {} '{text}' is not supported", self.module, a.name);
        self.bad(&a, m, Some(help.to_string()));
        None
    }

    /// Refuses an argument unless it has Ansible's default value (`backup: no`).
    pub(super) fn default_only(&mut self, name: &str, default: Value, why: &str) {
        let Some(a) = self.take(&[name]) else { return };
        let same = match (&a.value, &default) {
            (Value::String(s), Value::Bool(b)) => {
                matches!(s.to_ascii_lowercase().as_str(), "yes" | "true" | "1") == *b
                    && matches!(s.to_ascii_lowercase().as_str(), "yes" | "true" | "1" | "no" | "false" | "0")
            }
            (v, d) => v == d,
        };
        if !same {
            let m = format!("{}: {} other than {default} is not supported", self.module, a.name);
            self.bad(&a, m, Some(why.to_string()));
        }
    }

    /// A required argument that is missing.
    pub(super) fn missing(&mut self, what: &str) {
        let (l, c) = self.at;
        self.p.add(l, c, format!("{}: {what} is required", self.module), "in these arguments", None);
    }

    /// The free-form words, taken (command and shell only).
    pub(super) fn take_raw(&mut self) -> Option<(String, usize, usize)> {
        self.raw.take()
    }

    /// Every argument not taken is unsupported: one problem each, naming what the module takes.
    pub(super) fn finish(mut self, takes: &[&str]) {
        if let Some((raw, l, c)) = self.raw.take() {
            self.p.add(
                l,
                c,
                format!("{}: free-form text '{raw}' is not an argument", self.module),
                "not k=v",
                Some(format!("{} takes: {}", self.module, takes.join(", "))),
            );
        }
        for a in std::mem::take(&mut self.items) {
            let close = closest(&a.name, takes);
            let help = if close.is_empty() {
                format!("{} takes: {}", self.module, takes.join(", "))
            } else {
                format!("did you mean {}? {} takes: {}", close.join(", "), self.module, takes.join(", "))
            };
            let m = format!("{}: argument '{}' is not supported", self.module, a.name);
            self.bad(&a, m, Some(help));
        }
    }
}

/// The text of `line` of the file (1-based).
fn p_source_line(p: &Problems, line: usize) -> Option<String> {
    p.source.text.lines().nth(line.checked_sub(1)?).map(str::to_string)
}

pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Null => "empty",
    }
}

/// Sets `key` in `m` when `v` is given.
pub(super) fn put(m: &mut Map<String, Value>, key: &str, v: Option<impl Into<Value>>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}
