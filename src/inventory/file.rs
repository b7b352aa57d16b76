//! One file of an inventory source or a variable directory: read (decrypted when
//! vault-encrypted, its size bounded first), its extension as Ansible splits it, and the kind of a
//! parsed value for messages. Shared by `source`, `var_files` and `yaml`, which need nothing else
//! of each other for it.

use std::path::Path;

use serde_json::Value;

use super::{MAX_HOSTS, MAX_INVENTORY_BYTES};
use crate::error::{Error, Result};
use crate::vault::SecretSource;

/// Python's `os.path.splitext(name)[1]`: the last `.suffix`, none for a leading-dot-only name.
pub(super) fn extension(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) if !name[..i].chars().all(|c| c == '.') => &name[i..],
        _ => "",
    }
}

/// A file of the inventory (`inventory`), or a variable file, decrypted when vault-encrypted;
/// its size checked before it is read.
pub(super) fn read(path: &Path, secrets: &dyn SecretSource, inventory: bool) -> Result<crate::vault::LoadedSource> {
    if let Ok(meta) = std::fs::metadata(path)
        && meta.len() > MAX_INVENTORY_BYTES
    {
        let size = meta.len();
        return Err(if inventory {
            Error::with_help(
                format!(
                    "{}: the inventory is {size} bytes; copctl reads inventories of at most {MAX_INVENTORY_BYTES} bytes",
                    path.display()
                ),
                format!("an inventory holds at most {MAX_HOSTS} hosts; is this the right file?"),
            )
        } else {
            Error::plain(format!(
                "{}: the file is {size} bytes; copctl reads variable files of at most {MAX_INVENTORY_BYTES} bytes",
                path.display()
            ))
        });
    }
    crate::vault::read_source(path, secrets)
}

/// What a parsed value is, for messages ("a list", "a mapping").
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
