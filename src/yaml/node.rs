//! The Ansible playbook as a YAML tree that keeps every node's line and column (and every
//! mapping key's), so that anything the front-end refuses is reported where it is written.
//! Read with Ansible's YAML 1.1 habits (`yes`/`no` booleans, `0755` octal), as ansible-playbook
//! reads the same file. Here, in the YAML layer, because the loader's `parse_ansible_vars`
//! reads a variables file through it (the tree knows Ansible's `!unsafe` tag); the playbook
//! front-end re-exports it as `playbook::ansible::node`.

use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// A YAML node with where it is written (1-based; 0 where the parser could not tell).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub column: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Scalar(Value),
    Seq(Vec<Node>),
    /// Keys in the order written, each with its own location.
    Map(Vec<(Key, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub line: usize,
    pub column: usize,
}

impl Node {
    /// The value under `key` of a mapping, with the key's line.
    pub fn entry(&self, key: &str) -> Option<(&Key, &Node)> {
        match &self.kind {
            Kind::Map(m) => m.iter().find(|(k, _)| k.name == key).map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The line of `key` in this mapping, else this node's own.
    pub fn key_line(&self, key: &str) -> usize {
        self.entry(key).map_or(self.line, |(k, _)| k.line)
    }

    /// A path of keys from here (`["spec", "template", "spec"]`).
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |n, k| n.get(k))
    }

    /// A scalar as text (`count: 2` and `count: "2"` alike), none for an empty one.
    pub fn text(&self) -> Option<String> {
        match &self.kind {
            Kind::Scalar(Value::String(s)) => Some(s.clone()),
            Kind::Scalar(Value::Null) => None,
            Kind::Scalar(v) => Some(v.to_string()),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match &self.kind {
            Kind::Scalar(Value::Number(n)) => n.as_u64(),
            _ => None,
        }
    }

    /// A list's items; nothing for anything else (an empty value included).
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Seq(s) => s,
            _ => &[],
        }
    }

    /// A mapping's keys and values; nothing for anything else.
    pub fn entries(&self) -> &[(Key, Node)] {
        match &self.kind {
            Kind::Map(m) => m,
            _ => &[],
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.kind {
            Kind::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The value without locations.
    pub fn to_value(&self) -> Value {
        match &self.kind {
            Kind::Scalar(v) => v.clone(),
            Kind::Seq(s) => Value::Array(s.iter().map(Node::to_value).collect()),
            Kind::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.name.clone(), v.to_value())).collect()),
        }
    }

    /// PyYAML keeps a plain `y`, `Y`, `n` or `N` as text (its booleans are yes/no, true/false,
    /// on/off); the YAML reader made them booleans. Put back from the text where they are
    /// written.
    pub fn keep_short_words(&mut self, text: &str) {
        // The word written at (line, column), when it is one of those.
        let short = |line: usize, column: usize| -> Option<String> {
            let word: String = text
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or("")
                .chars()
                .skip(column.saturating_sub(1))
                .take_while(|c| !c.is_whitespace() && !",]}#:".contains(*c))
                .collect();
            matches!(word.as_str(), "y" | "Y" | "n" | "N").then_some(word)
        };
        match &mut self.kind {
            Kind::Scalar(Value::Bool(_)) => {
                if let Some(word) = short(self.line, self.column) {
                    self.kind = Kind::Scalar(Value::String(word));
                }
            }
            Kind::Scalar(_) => {}
            Kind::Seq(items) => items.iter_mut().for_each(|n| n.keep_short_words(text)),
            // A key too (`n: 1` sets the variable `n`).
            Kind::Map(m) => m.iter_mut().for_each(|(k, n)| {
                if matches!(k.name.as_str(), "true" | "false")
                    && let Some(word) = short(k.line, k.column)
                {
                    k.name = word;
                }
                n.keep_short_words(text)
            }),
        }
    }

    /// What kind of YAML value this is, for messages.
    pub fn what(&self) -> &'static str {
        match &self.kind {
            Kind::Scalar(Value::String(_)) => "a string",
            Kind::Scalar(Value::Bool(_)) => "a boolean",
            Kind::Scalar(Value::Number(_)) => "a number",
            Kind::Scalar(Value::Null) => "empty",
            Kind::Scalar(_) => "a value",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }
}

/// Ansible's `!unsafe`: every text under the tag is kept as written, never templated (a
/// Prometheus rule's `{{ $labels.instance }}`).
fn unsafe_text(kind: &mut Kind) -> Result<(), String> {
    match kind {
        Kind::Scalar(Value::String(t)) => *t = crate::text::python::literal(t)?,
        Kind::Scalar(_) => {}
        Kind::Seq(items) => items.iter_mut().try_for_each(|n| unsafe_text(&mut n.kind))?,
        Kind::Map(m) => m.iter_mut().try_for_each(|(_, n)| unsafe_text(&mut n.kind))?,
    }
    Ok(())
}

/// A node deserialized with its location: `Spanned` around the inner kind.
struct Inner(Kind);

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<serde_saphyr::Tagged<Inner>>::deserialize(d)?;
        let serde_saphyr::Tagged(Inner(mut kind), tag) = s.value;
        if tag.as_deref() == Some("!unsafe") {
            unsafe_text(&mut kind).map_err(serde::de::Error::custom)?;
        }
        Ok(Node { line: s.referenced.line() as usize, column: s.referenced.column() as usize, kind })
    }
}

impl<'de> Deserialize<'de> for Inner {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Inner;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::from(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::String(v.to_string()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::String(v))))
            }
            fn visit_unit<E>(self) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::Null)))
            }
            fn visit_none<E>(self) -> Result<Inner, E> {
                Ok(Inner(Kind::Scalar(Value::Null)))
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Inner, D::Error> {
                Inner::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Inner, A::Error> {
                let mut v = Vec::new();
                while let Some(n) = seq.next_element::<Node>()? {
                    v.push(n);
                }
                Ok(Inner(Kind::Seq(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Inner, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = map.next_key::<Spanned<KeyText>>()? {
                    let value = map.next_value::<Node>()?;
                    v.push((
                        Key {
                            name: k.value.0,
                            line: k.referenced.line() as usize,
                            column: k.referenced.column() as usize,
                        },
                        value,
                    ));
                }
                Ok(Inner(Kind::Map(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A mapping key as text (`1:` or `true:` keys are Ansible's too, as their text).
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(KeyText(match v {
            Value::String(s) => s,
            other => other.to_string(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_and_key_keeps_its_location() {
        let src = crate::error::Source::new("x.yml", "- hosts: all\n  tasks:\n    - shell: echo\n      mode: 0755\n");
        let n: Node = crate::yaml::parse_ansible(&src).unwrap();
        let play = &n.as_seq().unwrap()[0];
        assert_eq!((play.line, play.column), (1, 3));
        let (k, tasks) = &play.as_map().unwrap()[1];
        assert_eq!((k.name.as_str(), k.line, k.column), ("tasks", 2, 3));
        let task = &tasks.as_seq().unwrap()[0];
        let (k, v) = &task.as_map().unwrap()[1];
        assert_eq!((k.name.as_str(), k.line, k.column, v.to_value()), ("mode", 4, 7, Value::from(0o755)));
    }

    #[test]
    fn y_and_n_stay_text_as_in_pyyaml() {
        let src = crate::error::Source::new("x.yml", "a: [x, y, n, yes]\nb: Y\nc: {k: N}\nd: 'y'\n");
        let mut n: Node = crate::yaml::parse_ansible(&src).unwrap();
        n.keep_short_words(&src.text);
        assert_eq!(n.to_value(), serde_json::json!({"a": ["x", "y", "n", true], "b": "Y", "c": {"k": "N"}, "d": "y"}));
    }
}
