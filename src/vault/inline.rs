//! Inline `!vault` values in YAML (Ansible's `construct_yaml_vault`: the tag on any string scalar,
//! usually a `|` block) and the `!vault |` block that `ansible-vault encrypt_string` prints.
//!
//! The tag is read through serde-saphyr's `Tagged<T>` (it keeps each node's tag) and `Spanned<T>`
//! (its line), walking the document once, instead of rewriting the text before parsing: a text
//! pre-pass would have to re-implement YAML's block, flow and quoted scalar rules, and anchors,
//! aliases and merge keys (`<<: *vaulted`) would escape it. Files without the word `!vault` take
//! the plain loader, so the slower walk costs nothing on ordinary files.

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::{Spanned, Tagged};
use zeroize::Zeroizing;

use super::{SecretSource, VaultError};
use crate::error::{Result, Source};

/// A YAML document with its inline vault values decrypted.
#[derive(Debug)]
pub struct VaultedVars {
    pub value: Value,
    /// One entry per decrypted value, in document order: every one is a secret.
    pub secrets: Vec<InlineSecret>,
}

/// Where an inline value was, and what it decrypted to.
pub struct InlineSecret {
    /// The top-level key (the variable name) holding it.
    pub name: String,
    /// The full path, `db.users[0].password` style.
    pub path: String,
    pub line: usize,
    /// The label of the secret that decrypted it.
    pub vault_id: String,
    pub plaintext: Zeroizing<String>,
}

impl std::fmt::Debug for InlineSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineSecret")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("line", &self.line)
            .field("vault_id", &self.vault_id)
            .field("plaintext", &crate::secret::MASK)
            .finish()
    }
}

/// Parses YAML variables, decrypting `!vault` values with `secrets` (asked for only when a
/// `!vault` value is met); an undecryptable value is an error at its line. Ansible decrypts lazily (only values a play uses); copctl decrypts when the
/// file is read, so a wrong password is reported before any host is touched.
pub fn parse_vars(source: &Source, secrets: &dyn SecretSource) -> Result<VaultedVars> {
    if !source.text.contains("!vault") && !source.text.contains("!unsafe") {
        return Ok(VaultedVars { value: crate::yaml::parse(source)?, secrets: vec![] });
    }
    let root: Node = crate::yaml::parse(source)?;
    let mut found = vec![];
    let value = resolve(root, source, secrets, &mut String::new(), &mut found)?;
    Ok(VaultedVars { value, secrets: found })
}

/// The YAML `ansible-vault encrypt_string` prints for one value (`format_ciphertext_yaml`): the
/// `!vault |` header, with `name: ` before it when named, then the envelope indented 10 columns.
/// No newline at the end (ansible-vault adds one when it prints).
pub fn encrypt_string_block(vault_text: &str, name: Option<&str>) -> String {
    let mut lines = vec![match name {
        Some(n) => format!("{n}: !vault |"),
        None => "!vault |".to_string(),
    }];
    lines.extend(vault_text.lines().map(|l| format!("{:10}{l}", "")));
    lines.join("\n")
}

struct Node {
    tag: Option<String>,
    line: usize,
    column: usize,
    kind: Kind,
}

enum Kind {
    Scalar(Value),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Node, D::Error> {
        let spanned = Spanned::<Tagged<Kind>>::deserialize(d)?;
        let Tagged(kind, tag) = spanned.value;
        Ok(Node { tag, line: spanned.referenced.line() as usize, column: spanned.referenced.column() as usize, kind })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Kind, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

/// serde_json's `Value` visitor, with children kept as `Node`s so their tags survive.
struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Number(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Number::from_f64(v).map_or(Value::Null, Value::Number)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Kind, D::Error> {
        Kind::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Kind, A::Error> {
        let mut out = Vec::new();
        while let Some(n) = seq.next_element::<Node>()? {
            out.push(n);
        }
        Ok(Kind::Seq(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Kind, A::Error> {
        let mut out: Vec<(String, Node)> = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value::<Node>()?;
            // A later duplicate replaces the earlier one, as in a `serde_json::Map`.
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        }
        Ok(Kind::Map(out))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<Kind, E> {
        Ok(Kind::Scalar(Value::Array(v.iter().map(|b| Value::Number((*b).into())).collect())))
    }
}

fn is_vault_tag(tag: &str) -> bool {
    matches!(tag, "!vault" | "!vault-encrypted")
}

/// Where the `!vault` tag itself is. The parser places a `|` block scalar at its first content
/// line; an operator looks for the `key: !vault |` line above it. An alias keeps its own place.
fn tag_position(source: &Source, line: usize, column: usize) -> (usize, usize) {
    let lines: Vec<&str> = source.text.lines().collect();
    let find = |l: usize, upto: Option<usize>| -> Option<usize> {
        let text = lines.get(l.checked_sub(1)?)?;
        let text: String = match upto {
            Some(c) => text.chars().take(c.saturating_sub(1)).collect(),
            None => text.to_string(),
        };
        let byte = text.rfind("!vault")?;
        Some(text[..byte].chars().count() + 1)
    };
    if let Some(c) = find(line, Some(column)) {
        return (line, c);
    }
    match find(line.saturating_sub(1), None) {
        Some(c) => (line - 1, c),
        None => (line, column),
    }
}

fn resolve(
    node: Node,
    source: &Source,
    secrets: &dyn SecretSource,
    path: &mut String,
    found: &mut Vec<InlineSecret>,
) -> Result<Value> {
    if let Some(tag) = node.tag.as_deref().filter(|t| is_vault_tag(t)) {
        let (line, column) = tag_position(source, node.line, node.column);
        let Kind::Scalar(Value::String(text)) = node.kind else {
            return Err(source.error_at(
                line,
                column,
                0,
                format!("the '{tag}' tag requires a string value"),
                "not a string",
                Some("put the output of `ansible-vault encrypt_string` here: `!vault |` and the indented $ANSIBLE_VAULT lines".into()),
            ));
        };
        let (plain, vault_id) =
            secrets.secrets()?.decrypt_and_get_vault_id(text.as_bytes()).map_err(|e| e.at(source, line, column))?;
        let plain = String::from_utf8(plain.to_vec()).map_err(|_| VaultError::NotUtf8.at(source, line, column))?;
        let name = path.split(['.', '[']).next().unwrap_or_default().to_string();
        found.push(InlineSecret { name, path: path.clone(), line, vault_id, plaintext: Zeroizing::new(plain.clone()) });
        return Ok(Value::String(plain));
    }
    let unsafe_tag = node.tag.as_deref() == Some("!unsafe");
    Ok(match node.kind {
        Kind::Scalar(Value::String(t)) if unsafe_tag => {
            Value::String(crate::text::python::literal(&t).map_err(|m| {
                source.error_at(
                    node.line,
                    node.column,
                    0,
                    m,
                    "here",
                    Some("write it without !unsafe, its template syntax inside {% raw %}".into()),
                )
            })?)
        }
        Kind::Scalar(v) => v,
        Kind::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                out.push(resolve(item, source, secrets, path, found)?);
                path.truncate(len);
            }
            Value::Array(out)
        }
        Kind::Map(entries) => {
            let mut out = Map::new();
            for (k, v) in entries {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&k);
                let v = resolve(v, source, secrets, path, found)?;
                path.truncate(len);
                out.insert(k, v);
            }
            Value::Object(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{VaultSecret, VaultSecrets, encrypt};
    use super::*;

    fn secrets() -> VaultSecrets {
        VaultSecrets::new(vec![("default".into(), VaultSecret::new(b"pw".to_vec()))])
    }

    fn indented(text: &str, n: usize) -> String {
        text.lines().map(|l| format!("{:n$}{l}\n", "")).collect()
    }

    #[test]
    fn decrypts_inline_values_anywhere() {
        let v1 = encrypt(b"s3cret", &VaultSecret::new(b"pw".to_vec()), None).unwrap();
        let v2 = encrypt("ünï \"q\"\nline2\n".as_bytes(), &VaultSecret::new(b"pw".to_vec()), Some("lab")).unwrap();
        let quoted = v1.replace('\n', "\\n");
        let text = format!(
            "user: admin\nport: 8443\nenabled: true\ndb_password: !vault |\n{}nested:\n  list:\n    - plain\n    - !vault |\n{}    - !vault \"{quoted}\"\nalias: &a !vault |\n{}again: *a\n",
            indented(&v1, 10),
            indented(&v2, 8),
            indented(&v1, 4),
        );
        let src = Source::new("group_vars/all.yml", text);
        let got = parse_vars(&src, &secrets()).unwrap();
        assert_eq!(
            got.value,
            serde_json::json!({"user": "admin", "port": 8443, "enabled": true, "db_password": "s3cret",
                "nested": {"list": ["plain", "ünï \"q\"\nline2\n", "s3cret"]}, "alias": "s3cret", "again": "s3cret"})
        );
        let where_: Vec<(&str, &str, usize, &str)> =
            got.secrets.iter().map(|s| (s.name.as_str(), s.path.as_str(), s.line, s.vault_id.as_str())).collect();
        assert_eq!(
            where_,
            vec![
                ("db_password", "db_password", 4, "default"),
                ("nested", "nested.list[1]", 14, "default"),
                ("nested", "nested.list[2]", 21, "default"),
                ("alias", "alias", 22, "default"),
                ("again", "again", 29, "default"),
            ]
        );
        // Same values as the plain loader for a file without vault values.
        let plain = Source::new("x.yml", "a: 1\nb: [x, 2.5, null]\n");
        assert_eq!(parse_vars(&plain, &secrets()).unwrap().value, serde_json::json!({"a": 1, "b": ["x", 2.5, null]}));
    }

    #[test]
    fn located_errors() {
        let v = encrypt(b"x", &VaultSecret::new(b"other".to_vec()), None).unwrap();
        let src = Source::new("host_vars/web1.yml", format!("a: 1\npw: !vault |\n{}", indented(&v, 2)));
        let err = parse_vars(&src, &secrets()).unwrap_err();
        assert_eq!(err.location(), Some(("host_vars/web1.yml".into(), 2)));
        assert_eq!(
            err.to_string(),
            "host_vars/web1.yml:2:5: Decryption failed (no vault secrets were found that could decrypt) on the !vault value at host_vars/web1.yml:2"
        );
        let src = Source::new("v.yml", "pw: !vault [1, 2]\n");
        assert_eq!(
            parse_vars(&src, &secrets()).unwrap_err().to_string(),
            "v.yml:1:5: the '!vault' tag requires a string value"
        );
        let src = Source::new("v.yml", "pw: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  3031zz\n");
        assert!(
            parse_vars(&src, &secrets())
                .unwrap_err()
                .to_string()
                .starts_with("v.yml:1:5: Vault format unhexlify error")
        );
    }

    #[test]
    fn encrypt_string_layout() {
        let block = encrypt_string_block("$ANSIBLE_VAULT;1.1;AES256\n6162\n6364\n", Some("pw"));
        assert_eq!(block, "pw: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n          6162\n          6364");
        assert!(encrypt_string_block("$ANSIBLE_VAULT;1.1;AES256\n", None).starts_with("!vault |\n"));
    }
}
