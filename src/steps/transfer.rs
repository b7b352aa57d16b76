//! Files on hosts, for the kinds that write them (`copy`, `template`, `line`, `block`): what a
//! path is (from SFTP where it can tell), content compared by sha256 before anything is written,
//! atomic writes, and diffs. No kind of its own.

use serde_json::json;
use sha2::{Digest, Sha256};

use super::Mode;
use super::{Outcome, StepCtx, transport_outcome};
use crate::template::shell_quote;
use crate::transport::PutSource;

/// What a path is on the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    pub kind: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    pub sha256: Option<String>,
    pub link: Option<String>,
}

/// Files up to this size are hashed here after an SFTP read, not by a process on the host.
const HASH_HERE: u64 = 1 << 20;

/// Kind, mode and (for files) the sha256 of `path` from SFTP, with no remote process; `None`
/// where SFTP cannot answer (become, a large file, owner names wanted, an SFTP error).
async fn stat_sftp(cx: &StepCtx<'_>, path: &str, hash: bool) -> Option<Option<Stat>> {
    use crate::transport::PathKind;
    let info = cx.conn.lstat(path).await?.ok()?;
    let Some(info) = info else { return Some(None) };
    let kind = match info.kind {
        PathKind::File => "file",
        PathKind::Directory => "directory",
        PathKind::Link => "link",
        PathKind::Other => return None,
    };
    let sha256 = if kind == "file" && hash {
        if info.size > HASH_HERE {
            return None;
        }
        Some(hex::encode(Sha256::digest(cx.conn.get(path).await.ok()?)))
    } else {
        None
    };
    Some(Some(Stat {
        kind: kind.into(),
        mode: info.mode,
        owner: String::new(),
        group: String::new(),
        sha256,
        link: info.link,
    }))
}

/// Kind, mode, owner and group names (only when `names`) and (for files) the sha256 of `path`:
/// from SFTP where it can answer, else one script.
pub async fn stat(cx: &StepCtx<'_>, path: &str, hash: bool, names: bool) -> Result<Option<Stat>, Outcome> {
    if !names && let Some(s) = stat_sftp(cx, path, hash).await {
        return Ok(s);
    }
    let script = format!(
        "p={p}; if [ -L \"$p\" ]; then k=link; elif [ -d \"$p\" ]; then k=directory; elif [ -e \"$p\" ]; then k=file; \
         else echo absent; exit 0; fi; s=$(stat -c '%a %U %G' \"$p\") || exit 1; h=-; l=-; \
         if [ $k = file ] && [ {hash} = 1 ]; then h=$(openssl dgst -sha256 -r \"$p\" 2>/dev/null || sha256sum \"$p\"); h=${{h%% *}}; fi; \
         if [ $k = link ]; then l=$(readlink \"$p\"); fi; echo \"$k $s $h $l\"",
        p = shell_quote(path),
        hash = if hash { 1 } else { 0 }
    );
    let out = cx.sh(&script, None).await?;
    if !out.success() {
        return Err(Outcome::failed(format!("cannot stat {path}: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = text.trim().splitn(6, ' ').collect();
    if f.first() == Some(&"absent") || f.len() < 6 {
        return Ok(None);
    }
    Ok(Some(Stat {
        kind: f[0].to_string(),
        mode: u32::from_str_radix(f[1], 8).unwrap_or(0),
        owner: f[2].to_string(),
        group: f[3].to_string(),
        sha256: (f[4] != "-").then(|| f[4].to_string()),
        link: (f[5] != "-").then(|| f[5].to_string()),
    }))
}

/// For a file only its owner may read (no group or other read bit, like 0600 files holding
/// tokens and passwords), the diff is a notice: its old lines could hold a secret copctl has
/// never seen as a value (a password since changed), which no masking would catch.
pub fn private_diff(path: &str, mode: u32) -> Option<String> {
    (mode & 0o044 == 0)
        .then(|| format!("{path}: changed; content not shown (mode {mode:04o}: only its owner may read it)\n"))
}

/// For content rendered from a template that reads secret variables, the diff is a notice
/// naming them: any line of it may hold a secret in a form no masking knows.
pub fn secret_notice(cx: &StepCtx<'_>, path: &str) -> Option<String> {
    let reads = cx.secret_reads();
    (!reads.is_empty()).then(|| super::secret_diff(path, &reads))
}

pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{path} (before)"), &format!("{path} (after)"))
        .to_string()
}

/// Puts `content` at `dest` unless it is already there with the same mode and owner.
pub async fn ensure_content(
    cx: &StepCtx<'_>,
    dest: &str,
    content: Vec<u8>,
    mode: Option<&Mode>,
    owner: Option<&str>,
    group: Option<&str>,
) -> Outcome {
    let mode = match mode.map(Mode::bits).transpose() {
        Ok(m) => m,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    let current = match stat(cx, dest, true, owner.is_some() || group.is_some()).await {
        Ok(s) => s,
        Err(o) => return o,
    };
    if let Some(s) = &current
        && s.kind != "file"
    {
        return Outcome::failed(format!("{dest} is a {}, not a file", s.kind));
    }
    let want = hex::encode(Sha256::digest(&content));
    let same_content = current.as_ref().and_then(|s| s.sha256.as_deref()) == Some(want.as_str());
    let same_mode = mode.is_none_or(|m| current.as_ref().is_some_and(|s| s.mode == m));
    let same_owner = owner.is_none_or(|o| current.as_ref().is_some_and(|s| s.owner == o))
        && group.is_none_or(|g| current.as_ref().is_some_and(|s| s.group == g));
    let mut result = serde_json::Map::new();
    result.insert("dest".into(), json!(dest));
    result.insert("checksum".into(), json!(want));
    if same_content && same_mode && same_owner {
        let mut o = Outcome::ok("");
        o.result = result;
        return o;
    }
    let mut o = Outcome::changed(if current.is_none() {
        format!("created {dest}")
    } else if !same_content {
        format!("updated {dest}")
    } else {
        format!("fixed mode/owner of {dest}")
    });
    o.result = result;
    let final_mode = mode.or(current.as_ref().map(|s| s.mode)).unwrap_or(0o644);
    if cx.diff
        && !same_content
        && let Some(notice) = private_diff(dest, final_mode).or_else(|| secret_notice(cx, dest))
    {
        o.diff = Some(notice);
    } else if cx.diff && !same_content {
        let old = match &current {
            Some(s) if s.sha256.is_some() => match cx.conn.get(dest).await {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => return transport_outcome(e),
            },
            _ => String::new(),
        };
        o.diff = Some(unified_diff(dest, &old, &String::from_utf8_lossy(&content)));
    }
    if cx.check {
        return o;
    }
    if !same_content {
        if let Err(e) = cx.conn.put(PutSource::Bytes(content), dest, final_mode).await {
            return transport_outcome(e);
        }
    } else if !same_mode {
        let out = match cx.sh(&format!("chmod {final_mode:o} {}", shell_quote(dest)), None).await {
            Ok(x) => x,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
    }
    if owner.is_some() || group.is_some() {
        let spec = format!("{}{}", owner.unwrap_or(""), group.map(|g| format!(":{g}")).unwrap_or_default());
        match cx.sh(&format!("chown {} {}", shell_quote(&spec), shell_quote(dest)), None).await {
            Ok(out) if out.success() => {}
            Ok(out) => return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            Err(o) => return o,
        }
    }
    o
}

pub(super) async fn ensure_large_file(
    cx: &StepCtx<'_>,
    dest: &str,
    local: &std::path::Path,
    mode: Option<&Mode>,
) -> Outcome {
    let mode = match mode.map(Mode::bits).transpose() {
        Ok(m) => m,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    let path = local.to_path_buf();
    let want = match tokio::task::spawn_blocking(move || -> std::io::Result<String> {
        use std::io::Read;
        let mut f = std::fs::File::open(&path)?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        Ok(hex::encode(h.finalize()))
    })
    .await
    {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => return Outcome::failed(format!("{}: {e}", local.display())),
        Err(e) => return Outcome::failed(e.to_string()),
    };
    let current = match stat(cx, dest, true, false).await {
        Ok(s) => s,
        Err(o) => return o,
    };
    let same = current
        .as_ref()
        .is_some_and(|s| s.sha256.as_deref() == Some(want.as_str()) && mode.is_none_or(|m| s.mode == m));
    let mut o = if same { Outcome::ok("") } else { Outcome::changed(format!("copied {} to {dest}", local.display())) };
    o.result.insert("checksum".into(), json!(want));
    if same || cx.check {
        return o;
    }
    let m = mode.or(current.as_ref().map(|s| s.mode)).unwrap_or(0o644);
    if let Err(e) = cx.conn.put(PutSource::File(local.to_path_buf()), dest, m).await {
        return transport_outcome(e);
    }
    o
}
