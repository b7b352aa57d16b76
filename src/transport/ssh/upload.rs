//! The upload protocol, both halves: the command carries the length; stdin carries the bytes,
//! hashed as they are sent, then their sha256 line; the host writes exactly that many bytes to a
//! temporary file beside the destination, hashes it, compares, sets mode and owner, renames. Small
//! text skips all of it and travels inside a script. Knows nothing of channels' bookkeeping: the
//! connection runs what this module prepares.

use russh::client::Msg;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::transport::{ExecOutput, PutSource, TransportError, random_hex};

/// UTF-8 uploads up to this size without NUL bytes travel inside a script (`small_put_script`).
const SMALL_PUT: usize = 64 << 10;

/// How an upload travels.
pub(super) enum Upload {
    /// Small text inside a script for one of the connection's shells: no session, no temp-file
    /// tools, no remote hashing (the channel's MAC already guards the bytes).
    Inline { script: String, digest: String },
    /// `put_script`, reading `reader` on stdin (sent with `send_hashed`).
    Stream { script: String, reader: Box<dyn AsyncRead + Unpin + Send> },
}

/// Chooses how `source` travels to `dest` on `host` and writes the script for it.
pub(super) async fn prepare(
    host: &str,
    source: PutSource,
    dest: &str,
    mode: u32,
    owner: Option<&str>,
) -> Result<Upload, TransportError> {
    if let PutSource::Bytes(b) = &source
        && b.len() <= SMALL_PUT
        && !b.contains(&0)
        && let Ok(text) = std::str::from_utf8(b)
    {
        let digest = hex::encode(Sha256::digest(b));
        tracing::debug!(host, dest, bytes = b.len(), mode = format!("{mode:o}"), "upload (inline)");
        return Ok(Upload::Inline { script: small_put_script(dest, text, mode, owner), digest });
    }
    let (len, reader): (u64, Box<dyn AsyncRead + Unpin + Send>) = match source {
        PutSource::Bytes(b) => (b.len() as u64, Box::new(std::io::Cursor::new(b))),
        PutSource::File(p) => {
            let f = tokio::fs::File::open(&p)
                .await
                .map_err(|e| TransportError::Local { reason: format!("{}: {e}", p.display()) })?;
            let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
            (len, Box::new(f))
        }
    };
    tracing::debug!(host, dest, bytes = len, mode = format!("{mode:o}"), "upload");
    Ok(Upload::Stream { script: put_script(dest, len, mode, owner), reader })
}

/// The script's verdict: the file is in place, or why not.
pub(super) fn written(host: &str, dest: &str, out: &ExecOutput) -> Result<(), TransportError> {
    if out.status != Some(0) {
        return Err(TransportError::Remote {
            host: host.to_string(),
            reason: format!("writing {dest} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok(())
}

/// The local half: sends `r` on `ch`, then its sha256 line; returns the digest. `lost` names a
/// channel failure.
pub(super) async fn send_hashed(
    ch: &russh::Channel<Msg>,
    mut r: Box<dyn AsyncRead + Unpin + Send>,
    lost: impl Fn(russh::Error) -> TransportError,
) -> Result<String, TransportError> {
    // Big chunks: russh splits them into maximum-size packets itself, where `data(reader)` would
    // send 8 KiB at a time. The hash is computed on a blocking thread beside the sending, not in
    // its path.
    let (tx, rx) = std::sync::mpsc::channel::<bytes::Bytes>();
    let hasher = tokio::task::spawn_blocking(move || {
        let mut h = Sha256::new();
        for b in rx {
            h.update(&b);
        }
        hex::encode(h.finalize())
    });
    loop {
        let mut buf = vec![0u8; 1 << 20];
        let n = read_full(&mut r, &mut buf).await.map_err(|e| TransportError::Local { reason: e.to_string() })?;
        if n == 0 {
            break;
        }
        buf.truncate(n);
        let chunk = bytes::Bytes::from(buf);
        let _ = tx.send(chunk.clone());
        ch.data_bytes(chunk).await.map_err(&lost)?;
    }
    drop(tx);
    let hex = hasher.await.map_err(|e| TransportError::Local { reason: e.to_string() })?;
    ch.data_bytes(format!("{hex}\n").into_bytes()).await.map_err(&lost)?;
    Ok(hex)
}

/// Reads until `buf` is full or the stream ends.
async fn read_full(r: &mut (dyn AsyncRead + Unpin + Send), buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let k = r.read(&mut buf[n..]).await?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

fn parent_dir(dest: &str) -> String {
    match dest.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => dest[..i].to_string(),
        None => ".".to_string(),
    }
}

/// Writes `content` (no NUL bytes) atomically: a new temp file beside `dest` (noclobber, a random
/// name), mode and owner set, renamed into place; the temp file is removed if any of it fails.
pub fn small_put_script(dest: &str, content: &str, mode: u32, owner: Option<&str>) -> String {
    let q = crate::template::shell_quote;
    let chown = owner.map(|o| format!(" && chown {} \"$t\"", q(o))).unwrap_or_default();
    format!(
        "umask 077; set -C; t={dir}/.copctl-{rand}; \
         if printf %s {content} > \"$t\" && chmod {mode:o} \"$t\"{chown} && mv -f \"$t\" {dest}; then exit 0; fi; \
         rm -f \"$t\"; exit 92",
        dir = q(&parent_dir(dest)),
        rand = random_hex(),
        content = q(content),
        dest = q(dest),
    )
}

/// The remote half of the protocol: exactly `len` bytes into a temp file (GNU dd with count_bytes
/// reads no further, in 1 MiB blocks where head would copy 8 KiB at a time), then hashed from the
/// page cache (OpenSSL's SHA-256 where present: three times sha256sum's speed), compared with the
/// sha256 line that follows the data; on a match, mode, owner, rename.
pub fn put_script(dest: &str, len: u64, mode: u32, owner: Option<&str>) -> String {
    let q = crate::template::shell_quote;
    let dir = parent_dir(dest);
    let chown = owner.map(|o| format!(" && chown {} \"$t\"", q(o))).unwrap_or_default();
    format!(
        "umask 077; t=$(mktemp {dir}/.copctl-XXXXXXXX) || exit 90; trap 'rm -f \"$t\"' EXIT; \
         dd bs=1M count={len} iflag=count_bytes,fullblock status=none of=\"$t\" || exit 92; \
         got=$(openssl dgst -sha256 -r \"$t\" 2>/dev/null || sha256sum \"$t\") || exit 92; got=${{got%% *}}; read -r want; \
         if [ \"$got\" != \"$want\" ]; then echo \"copctl: checksum mismatch writing {dest_msg}\" >&2; exit 91; fi; \
         chmod {mode:o} \"$t\"{chown} && mv -f \"$t\" {dest} && trap - EXIT",
        dir = q(&dir),
        dest = q(dest),
        dest_msg = dest.replace(['"', '$', '`', '\\'], "_"),
    )
}
