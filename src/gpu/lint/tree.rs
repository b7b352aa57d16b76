//! Manifests as a YAML tree that keeps the line of every node and every mapping key, so that a
//! finding points at the key a user wrote. Its own small tree, not the Ansible front-end's: a
//! manifest is read as kubectl reads it (YAML 1.1 booleans, no `!unsafe`, several documents).

use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// A YAML node and the line it is written on (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Scalar(Value),
    Seq(Vec<Node>),
    /// Keys in the order written, each with its line.
    Map(Vec<(Key, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub name: String,
    pub line: usize,
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

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(Value::String(s)) => Some(s),
            _ => None,
        }
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
}

/// The documents of a multi-document YAML text, empty ones left out; a YAML error as its line
/// and message.
pub fn documents(text: &str) -> Result<Vec<Node>, (usize, String)> {
    let options = serde_saphyr::options! {
        strict_booleans: false,
        with_snippet: false,
    };
    serde_saphyr::from_multiple_with_options::<Node>(text, options).map_err(|e| {
        let line = e.location().map_or(1, |l| l.line() as usize).max(1);
        let message = e.to_string();
        // serde-saphyr appends "at line X column Y": the line is said on its own.
        let message = message.find(" at line ").map_or(message.clone(), |i| message[..i].to_string());
        (line, message)
    })
}

/// A node deserialized with its location: `Spanned` around the inner kind.
struct Inner(Kind);

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Spanned::<Inner>::deserialize(d)?;
        Ok(Node { line: s.referenced.line() as usize, kind: s.value.0 })
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
                    v.push((Key { name: k.value.0, line: k.referenced.line() as usize }, value));
                }
                Ok(Inner(Kind::Map(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A mapping key as text (`1:` or `true:` keys as written).
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
    fn keys_and_values_keep_their_lines_across_documents() {
        let docs = documents("a: 1\n---\n# c\nkind: Pod\nspec:\n  items:\n    - name: x\n---\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].key_line("a"), 1);
        assert_eq!(docs[1].key_line("kind"), 4);
        let item = &docs[1].at(&["spec", "items"]).unwrap().items()[0];
        assert_eq!(item.key_line("name"), 7);
        assert_eq!(item.get("name").unwrap().as_str(), Some("x"));
        // A YAML error at the line of what is unclosed.
        assert_eq!(documents("a: 1\nb: [\n").unwrap_err().0, 2);
    }
}
