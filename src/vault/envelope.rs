//! The vault text format, byte for byte as ansible-core reads and writes it
//! (`parse_vaulttext_envelope`, `format_vaulttext_envelope`, `parse_vaulttext` in
//! `ansible/parsing/vault/__init__.py`): the `$ANSIBLE_VAULT;1.1;AES256[;label]` header, then
//! the hexlified `hex(salt)\nhex(hmac)\nhex(ciphertext)` in 80-column lines. No cryptography here.

use super::VaultError;

pub const HEADER: &[u8] = b"$ANSIBLE_VAULT";

/// The vault id Ansible gives a 1.1 envelope and a secret without a label (`C.DEFAULT_VAULT_IDENTITY`).
pub const DEFAULT_ID: &str = "default";

/// Ansible's `is_encrypted`: pure ASCII and starts with the header.
pub fn is_vaulted(data: &[u8]) -> bool {
    data.is_ascii() && data.starts_with(HEADER)
}

/// What the envelope says, with the 80-column body joined back into one hex string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub version: String,
    pub cipher: String,
    /// The header's label (1.2), or `None` for 1.1, where Ansible uses the default identity.
    pub vault_id: Option<String>,
    pub body: Vec<u8>,
}

/// Python's `bytes.splitlines()`: `\n`, `\r\n` and `\r` end a line, no empty last line.
fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\n' => {
                out.push(&data[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&data[start..i]);
                if data.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < data.len() {
        out.push(&data[start..]);
    }
    out
}

/// Python's `bytes.strip()`: ASCII whitespace at both ends.
pub fn strip(b: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &b[start..end]
}

pub fn parse(data: &[u8]) -> Result<Envelope, VaultError> {
    let lines = split_lines(data);
    let header = lines.first().map(|l| strip(l)).unwrap_or_default();
    let parts: Vec<&[u8]> = header.split(|c| *c == b';').collect();
    if parts.len() < 3 {
        return Err(VaultError::Format(format!(
            "Vault envelope format error: the header `{}` has fewer than 3 `;`-separated fields",
            String::from_utf8_lossy(header)
        )));
    }
    let text = |b: &[u8]| String::from_utf8_lossy(strip(b)).into_owned();
    Ok(Envelope {
        version: text(parts[1]),
        cipher: text(parts[2]),
        vault_id: parts.get(3).map(|p| text(p)),
        body: lines[1..].concat(),
    })
}

/// The three fields of the body: salt and ciphertext as bytes, the HMAC as the digest bytes.
#[derive(Debug)]
pub struct Vaulttext {
    pub salt: Vec<u8>,
    pub hmac: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

fn unhexlify(b: &[u8], what: &str) -> Result<Vec<u8>, VaultError> {
    hex::decode(b).map_err(|e| VaultError::Format(format!("Vault format unhexlify error: {what}: {e}")))
}

pub fn parse_vaulttext(body: &[u8]) -> Result<Vaulttext, VaultError> {
    let inner = unhexlify(body, "the envelope body")?;
    let mut fields = inner.splitn(3, |c| *c == b'\n');
    let (Some(salt), Some(hmac), Some(ciphertext)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(VaultError::Format(
            "Vault vaulttext format error: expected salt, HMAC and ciphertext on three lines".into(),
        ));
    };
    Ok(Vaulttext {
        salt: unhexlify(salt, "the salt")?,
        hmac: unhexlify(hmac, "the HMAC")?,
        ciphertext: unhexlify(ciphertext, "the ciphertext")?,
    })
}

/// The inner `hex(salt)\nhex(hmac)\nhex(ciphertext)`, hexlified again ("unnecessary but getting rid
/// of it is a backwards incompatible vault format change", says Ansible).
pub fn format_vaulttext(salt: &[u8], hmac: &[u8], ciphertext: &[u8]) -> String {
    let inner = [hex::encode(salt), hex::encode(hmac), hex::encode(ciphertext)].join("\n");
    hex::encode(inner)
}

/// Header plus 80-column lines, newline-terminated. A label other than the default makes it 1.2.
pub fn format(body: &str, vault_id: Option<&str>) -> String {
    let header = match vault_id {
        Some(id) if !id.is_empty() && id != DEFAULT_ID => format!("$ANSIBLE_VAULT;1.2;AES256;{id}"),
        _ => "$ANSIBLE_VAULT;1.1;AES256".to_string(),
    };
    let mut out = String::with_capacity(body.len() + body.len() / 80 + header.len() + 2);
    out.push_str(&header);
    out.push('\n');
    for chunk in body.as_bytes().chunks(80) {
        // The body is hex, so every chunk is ASCII.
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_splitlines_and_strip() {
        assert_eq!(split_lines(b"a\nb\r\nc\rd\n"), vec![&b"a"[..], b"b", b"c", b"d"]);
        assert_eq!(split_lines(b"a\n\nb"), vec![&b"a"[..], b"", b"b"]);
        assert_eq!(strip(b" \t\x0bab c\r\n"), b"ab c");
        assert_eq!(strip(b"  "), b"");
    }

    #[test]
    fn header_fields() {
        let e = parse(b"$ANSIBLE_VAULT;1.2;AES256;lab \n6162\n6364\n").unwrap();
        assert_eq!((e.version.as_str(), e.cipher.as_str(), e.vault_id.as_deref()), ("1.2", "AES256", Some("lab")));
        assert_eq!(e.body, b"61626364");
        assert_eq!(parse(b"$ANSIBLE_VAULT;1.1;AES256\r\nab\r\n").unwrap().vault_id, None);
        assert!(matches!(parse(b"$ANSIBLE_VAULT;1.1\nab"), Err(VaultError::Format(_))));
    }

    #[test]
    fn eighty_columns_and_version() {
        let body = "a".repeat(170);
        let text = format(&body, Some("default"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "$ANSIBLE_VAULT;1.1;AES256");
        assert_eq!(lines[1..].iter().map(|l| l.len()).collect::<Vec<_>>(), vec![80, 80, 10]);
        assert!(text.ends_with("aaa\n"));
        assert!(format("ab", Some("lab")).starts_with("$ANSIBLE_VAULT;1.2;AES256;lab\n"));
        assert!(format("ab", None).starts_with("$ANSIBLE_VAULT;1.1;AES256\n"));
    }
}
