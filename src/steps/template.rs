//! `template`: a template file rendered for the host and put in place like `copy` content; with
//! Ansible's template arguments: its own Jinja settings (`syntax`), `output_encoding`, a dest
//! that is a directory, `follow`, `backup`, `validate` and the source's mode (`mode: preserve`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::transfer::{BeforeWrite, Want, ensure_file};
use super::{Guards, Kind, Mode, Outcome, StepCtx};
use crate::template::{Syntax, shell_quote};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TemplateArgs {
    pub src: String,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// trim_blocks, lstrip_blocks, delimiters, newline_sequence (Ansible's defaults when absent).
    pub syntax: Option<Syntax>,
    /// The file's encoding (Ansible's default: utf-8).
    pub output_encoding: Option<String>,
    /// A dest that is a link: write the file it points at, keeping the link.
    pub follow: Option<bool>,
    /// Copy the file as it was beside it before changing it (`backup_file` in the result).
    pub backup: Option<bool>,
    /// The mode of the template file itself (Ansible's `mode: preserve`).
    pub preserve_mode: Option<bool>,
    /// A command (`%s`: the rendered file, in a temporary file) that must succeed first.
    pub validate: Option<String>,
    /// The file's owner, group and ids in the result, as Ansible's module returns them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub file_result: bool,
    /// The source as an Ansible task named it, before it was looked for (`template_path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_path: Option<String>,
}

fn template_vars(cx: &StepCtx<'_>, a: &TemplateArgs) -> Result<minijinja::Value, minijinja::Error> {
    let full = std::path::absolute(cx.local_dir.join(&a.src)).unwrap_or_else(|_| cx.local_dir.join(&a.src));
    with_template_vars(cx.templates, cx.vars, a.template_path.as_deref().unwrap_or(&a.src), &full, &a.dest)
}

/// The host's variables with those Ansible's template module adds for the file it renders
/// over them (`Templates::template_file_vars`: `ansible_managed`, `template_host`,
/// `template_path` as the task named the file, `template_fullpath`, `template_uid`,
/// `template_destpath`). Not the run date or the file's time as datetimes, which would make the
/// file differ on every run.
pub fn with_template_vars(
    t: &crate::template::Templates,
    vars: &minijinja::Value,
    path: &str,
    full: &std::path::Path,
    dest: &str,
) -> Result<minijinja::Value, minijinja::Error> {
    Ok(minijinja::context! { ..t.template_file_vars(vars, path, full, Some(dest))?, ..vars.clone() })
}

impl Kind for TemplateArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let syntax = a.syntax.clone().unwrap_or_default();
        let text = match template_vars(cx, a).and_then(|v| cx.templates.render_file_with(&a.src, &v, &syntax)) {
            Ok(t) => t,
            Err(e) => return Outcome::failed(format!("template {}: {}", a.src, crate::template::describe_error(&e))),
        };
        let bytes = match encode(&text, a.output_encoding.as_deref().unwrap_or("")) {
            Ok(b) => b,
            Err(e) => return Outcome::failed(e),
        };
        let mode = if a.preserve_mode == Some(true) {
            match source_mode(&cx.local_dir.join(&a.src)) {
                Ok(m) => Some(Mode::from(format!("{m:04o}").as_str())),
                Err(e) => return Outcome::failed(e),
            }
        } else {
            a.mode.clone()
        };
        let sha1 = hex_sha1(&bytes);
        let before = BeforeWrite { backup: a.backup == Some(true), validate: a.validate.as_deref() };
        let (owner, group) = (a.owner.as_deref(), a.group.as_deref());
        let mut o = if a.follow == Some(true) {
            let dest = match where_to(cx, a).await {
                Ok(d) => d,
                Err(o) => return o,
            };
            ensure_file(cx, &dest, Want::Bytes(bytes), mode.as_ref(), owner, group, before).await
        } else {
            // As copy does: `dest` itself first, whose check sees what is there (a plain
            // template costs the host one `lstat`, not two), then a directory's file.
            let o = ensure_file(cx, &a.dest, Want::Bytes(bytes.clone()), mode.as_ref(), owner, group, before).await;
            let inside = match o.status {
                super::Status::Failed => super::transfer::into_directory(cx, &a.dest, &a.src).await,
                _ => None,
            };
            match inside {
                Some(dest) => ensure_file(cx, &dest, Want::Bytes(bytes), mode.as_ref(), owner, group, before).await,
                None => o,
            }
        };
        // Ansible's `checksum` is the file's sha1 (what `stat` reports by default).
        o.result.insert("checksum".into(), json!(sha1));
        if let Some(m) = mode.as_ref().and_then(|m| m.bits().ok()) {
            o.result.insert("mode".into(), json!(format!("{m:04o}")));
        }
        if a.file_result {
            let src = std::path::absolute(cx.local_dir.join(&a.src)).unwrap_or_else(|_| cx.local_dir.join(&a.src));
            super::transfer::file_result(cx, &mut o, Some(&src.display().to_string())).await;
        }
        o
    }
}

/// The text as bytes in `encoding` (Python's codec names; empty: utf-8). A character the
/// encoding cannot hold fails, as Python's strict encoding does.
fn encode(text: &str, encoding: &str) -> Result<Vec<u8>, String> {
    let name = encoding.trim().to_ascii_lowercase().replace('_', "-");
    match name.as_str() {
        "" | "utf-8" | "utf8" => return Ok(text.as_bytes().to_vec()),
        "utf-16-le" | "utf-16le" => return Ok(text.encode_utf16().flat_map(u16::to_le_bytes).collect()),
        "utf-16-be" | "utf-16be" => return Ok(text.encode_utf16().flat_map(u16::to_be_bytes).collect()),
        // Python's utf-16 writes a byte-order mark, then the machine's order (little-endian).
        "utf-16" | "utf16" => {
            return Ok([0xff, 0xfe].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect());
        }
        _ => {}
    }
    let Some(enc) = encoding_rs::Encoding::for_label(name.as_bytes()).filter(|e| e.output_encoding() == *e) else {
        return Err(format!("output_encoding '{encoding}' is not an encoding copctl can write"));
    };
    let (bytes, _, unmappable) = enc.encode(text);
    if unmappable {
        return Err(format!("output_encoding '{encoding}': the rendered text has characters {encoding} cannot encode"));
    }
    Ok(bytes.into_owned())
}

fn source_mode(path: &std::path::Path) -> Result<u32, String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .map_err(|e| format!("mode: preserve: cannot read {}: {e}", path.display()))
}

fn hex_sha1(bytes: &[u8]) -> String {
    use sha1::Digest;
    hex::encode(sha1::Sha1::digest(bytes))
}

/// Where a template with `follow` goes, as Ansible's copy decides: into a directory under the
/// template's own name, and through a link to what it points at.
async fn where_to(cx: &StepCtx<'_>, a: &TemplateArgs) -> Result<String, Outcome> {
    use crate::transport::PathKind;
    let name = std::path::Path::new(&a.src).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if let Some(Ok(info)) = cx.conn.lstat(&a.dest).await {
        match info.map(|i| i.kind) {
            Some(PathKind::Directory) => return Ok(format!("{}/{name}", a.dest.trim_end_matches('/'))),
            Some(PathKind::Link) => {}
            _ => return Ok(a.dest.clone()),
        }
    }
    let script = format!(
        "d={d}; if [ -d \"$d\" ]; then d=\"${{d%/}}/\"{n}; fi; \
         if [ -L \"$d\" ]; then d=$(readlink -f -- \"$d\"); fi; printf '%s' \"$d\"",
        d = shell_quote(&a.dest),
        n = shell_quote(&name),
    );
    let out = cx.sh(&script, None).await?;
    if !out.success() {
        return Err(Outcome::failed(format!("{}: {}", a.dest, String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_encodings_are_pythons() {
        assert_eq!(encode("é€", "").unwrap(), "é€".as_bytes());
        assert_eq!(encode("é€", "windows-1252").unwrap(), vec![0xe9, 0x80]);
        assert_eq!(encode("a", "utf-16").unwrap(), vec![0xff, 0xfe, b'a', 0]);
        assert!(encode("€", "iso-8859-15").is_ok());
        assert!(encode("ā", "windows-1252").unwrap_err().contains("cannot encode"));
        assert!(encode("a", "klingon").unwrap_err().contains("not an encoding"));
    }

    #[test]
    fn checksum_is_sha1_as_ansible_reports_it() {
        assert_eq!(hex_sha1(b"hello world"), "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed");
    }
}
