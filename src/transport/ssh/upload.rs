//! The upload protocol, both halves: the command carries the length; stdin carries the bytes in
//! chunks (hashed as they are sent, unless their digest is known already), then their sha256
//! line; the host writes exactly that many bytes to a temporary file beside the destination,
//! hashes it, compares, sets mode and owner, renames. Small
//! text skips all of it and travels inside a script. Knows nothing of channels' bookkeeping: the
//! connection runs what this module prepares.

use russh::client::Msg;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::transport::{ExecOutput, PutSource, TransportError, random_hex};

/// UTF-8 uploads up to this size without NUL bytes travel inside a script (`small_put_script`).
pub(super) const SMALL_PUT: usize = 64 << 10;

/// Streamed uploads in flight at once, over all hosts. An SSH channel's window (2 MiB from
/// OpenSSH) takes a whole ordinary file at once, so without a bound every host's copy would sit in
/// the controller's buffers together: 50 hosts taking a 1 MiB file held ~50 MiB (68.5 -> 53.4 MiB
/// first-run peak with 8, 36.6 -> 34.5 with 4, docs/benchmarks.md). Each stream runs at the speed
/// of one core's encryption, so two keep a fast link busy while the other hosts run their other
/// steps, and what uploads hold is bounded by 2 × (the file or the window, whichever is smaller,
/// + a chunk).
const STREAMS_AT_ONCE: usize = 2;
static STREAMS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(STREAMS_AT_ONCE);

/// A place among the streamed uploads in flight, held until the host has the file.
pub(super) async fn stream_slot() -> tokio::sync::SemaphorePermit<'static> {
    STREAMS.acquire().await.expect("the upload semaphore is never closed")
}

/// How an upload travels.
pub(super) enum Upload {
    /// Small text inside a script for one of the connection's shells: no session, no temp-file
    /// tools, no remote hashing (the channel's MAC already guards the bytes).
    Inline { script: String, digest: String },
    /// `put_script`, reading the stream on stdin (sent with `send_hashed`).
    Stream { script: String, stream: Stream },
}

/// An upload's bytes: `len` of them from `reader`, and their sha256 when known beforehand.
pub struct Stream {
    pub reader: Box<dyn AsyncRead + Unpin + Send>,
    pub len: u64,
    pub known: Option<String>,
}

/// Chunks sent at once: what an upload holds in memory (with what russh has queued), so the
/// controller's memory for uploads is O(uploads at once × chunk). Large files get 1 MiB chunks,
/// which more than doubled the throughput of 8 KiB ones (docs/benchmarks.md); ordinary ones
/// 256 KiB, where many hosts take the same file at once.
fn chunk_size(len: u64) -> usize {
    if len > 16 << 20 { 1 << 20 } else { (256 << 10).min(len.max(1) as usize) }
}

/// Chooses how `source` travels to `dest` on `host` and writes the script for it: small text
/// inside a script only where `inline` (where SFTP cannot write it).
pub(super) async fn prepare(
    host: &str,
    source: PutSource,
    dest: &str,
    mode: u32,
    owner: Option<&str>,
    inline: bool,
) -> Result<Upload, TransportError> {
    let in_memory = match &source {
        PutSource::Bytes(b) => Some(&b[..]),
        PutSource::Shared(b) => Some(&b[..]),
        _ => None,
    };
    if inline
        && let Some(b) = in_memory
        && b.len() <= SMALL_PUT
        && !b.contains(&0)
        && let Ok(text) = std::str::from_utf8(b)
    {
        let digest = hex::encode(Sha256::digest(b));
        tracing::debug!(host, dest, bytes = b.len(), mode = format!("{mode:o}"), "upload (inline)");
        return Ok(Upload::Inline { script: small_put_script(dest, text, mode, owner), digest });
    }
    let open = |p: &std::path::Path| {
        let p = p.to_path_buf();
        async move {
            tokio::fs::File::open(&p)
                .await
                .map_err(|e| TransportError::Local { reason: format!("{}: {e}", p.display()) })
        }
    };
    let stream = match source {
        PutSource::Bytes(b) => Stream { len: b.len() as u64, reader: Box::new(std::io::Cursor::new(b)), known: None },
        PutSource::Shared(b) => Stream { len: b.len() as u64, reader: Box::new(std::io::Cursor::new(b)), known: None },
        PutSource::File(p) => {
            let f = open(&p).await?;
            let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
            Stream { len, reader: Box::new(f), known: None }
        }
        // Exactly `len` bytes: a file that grew since it was hashed sends what was hashed, and
        // the host's check of the digest catches any other change.
        PutSource::Digested { path, len, sha256 } => {
            Stream { len, reader: Box::new(open(&path).await?.take(len)), known: Some(sha256) }
        }
    };
    tracing::debug!(host, dest, bytes = stream.len, mode = format!("{mode:o}"), "upload");
    Ok(Upload::Stream { script: put_script(dest, stream.len, mode, owner), stream })
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

/// A temporary file's name beside `dest`: hidden, random, never an existing file's.
pub(super) fn temp_beside(dest: &str) -> String {
    let dir = parent_dir(dest);
    let sep = if dir.ends_with('/') { "" } else { "/" };
    format!("{dir}{sep}.copctl-{}", random_hex())
}

/// The SFTP half, for a login user's own files: the stream written into `tmp` (created new,
/// mode 0600 until done) over SFTP — no remote process for the bytes and no remote hash, as
/// SFTP acknowledges every write and the channel's MAC guards every byte, where the script way
/// costs the host `mktemp`, `dd`, a hash, `chmod` (five processes, ~16 ms of CPU for a 1 MiB
/// file) — then its mode set. Returns the stream's sha256; the caller renames `tmp` into place
/// (SFTP's rename will not replace a file) or removes it.
pub(super) async fn write_sftp(
    sftp: &russh_sftp::client::SftpSession,
    tmp: &str,
    dest: &str,
    mode: u32,
    stream: Stream,
) -> Result<String, TransportError> {
    use russh_sftp::protocol::{FileAttributes, OpenFlags};
    use tokio::io::AsyncWriteExt;
    let failed = |e: &dyn std::fmt::Display| TransportError::Remote {
        host: String::new(),
        reason: format!("writing {dest} failed: {e}"),
    };
    let Stream { mut reader, len, known } = stream;
    let attrs = FileAttributes { permissions: Some(0o600), ..FileAttributes::empty() };
    let flags = OpenFlags::CREATE | OpenFlags::EXCLUDE | OpenFlags::WRITE;
    let mut f = sftp
        .open_with_flags_and_attributes(tmp, flags, attrs)
        .await
        .map_err(|e| failed(&format_args!("cannot create a file in {}: {e}", parent_dir(dest))))?;
    let mut hasher = known.is_none().then(Sha256::new);
    // SFTP writes are 32 KiB each, 16 in flight: reading more at a time would only hold more.
    let mut buf = vec![0u8; chunk_size(len).min(64 << 10)];
    let mut sent = 0u64;
    loop {
        let n = read_full(&mut reader, &mut buf).await.map_err(|e| TransportError::Local { reason: e.to_string() })?;
        if n == 0 {
            break;
        }
        if let Some(h) = hasher.as_mut() {
            h.update(&buf[..n]);
        }
        f.write_all(&buf[..n]).await.map_err(|e| failed(&e))?;
        sent += n as u64;
    }
    // Drains the writes' acknowledgements and closes the handle (no fsync: the script way's
    // `mv` made no such promise either).
    f.shutdown().await.map_err(|e| failed(&e))?;
    if sent != len {
        return Err(TransportError::Local {
            reason: format!("the file changed while it was sent ({sent} of {len} bytes)"),
        });
    }
    let attrs = FileAttributes { permissions: Some(mode & 0o7777), ..FileAttributes::empty() };
    sftp.set_metadata(tmp, attrs).await.map_err(|e| failed(&format_args!("setting mode {mode:o}: {e}")))?;
    Ok(match (known, hasher) {
        (Some(k), _) => k,
        (None, Some(h)) => hex::encode(h.finalize()),
        (None, None) => unreachable!("a stream without a known digest is hashed"),
    })
}

/// The local half: sends the stream on `ch` in chunks, then its sha256 line; returns the digest.
/// `lost` names a channel failure.
pub(super) async fn send_hashed(
    ch: &russh::Channel<Msg>,
    stream: Stream,
    lost: impl Fn(russh::Error) -> TransportError,
) -> Result<String, TransportError> {
    let Stream { mut reader, len, known } = stream;
    // Big chunks: russh splits them into maximum-size packets itself, where `data(reader)` would
    // send 8 KiB at a time. A digest not known yet is computed on a blocking thread beside the
    // sending, not in its path.
    enum Digest {
        Known(String),
        Hashing(std::sync::mpsc::Sender<bytes::Bytes>, tokio::task::JoinHandle<String>),
    }
    let digest = match known {
        Some(k) => Digest::Known(k),
        None => {
            let (tx, rx) = std::sync::mpsc::channel::<bytes::Bytes>();
            Digest::Hashing(
                tx,
                tokio::task::spawn_blocking(move || {
                    let mut h = Sha256::new();
                    for b in rx {
                        h.update(&b);
                    }
                    hex::encode(h.finalize())
                }),
            )
        }
    };
    let chunk = chunk_size(len);
    let mut sent = 0u64;
    loop {
        let mut buf = vec![0u8; chunk];
        let n = read_full(&mut reader, &mut buf).await.map_err(|e| TransportError::Local { reason: e.to_string() })?;
        if n == 0 {
            break;
        }
        buf.truncate(n);
        sent += n as u64;
        let chunk = bytes::Bytes::from(buf);
        if let Digest::Hashing(tx, _) = &digest {
            let _ = tx.send(chunk.clone());
        }
        ch.data_bytes(chunk).await.map_err(&lost)?;
    }
    if sent != len {
        // The host's `dd` waits for `len` bytes: end here rather than send a digest it would
        // take for data.
        return Err(TransportError::Local {
            reason: format!("the file changed while it was sent ({sent} of {len} bytes)"),
        });
    }
    let hex = match digest {
        Digest::Known(k) => k,
        Digest::Hashing(tx, h) => {
            drop(tx);
            h.await.map_err(|e| TransportError::Local { reason: e.to_string() })?
        }
    };
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
/// A mode without execute or special bits is given by the umask the file is created under, which
/// spares the host a `chmod` process for most files.
pub fn small_put_script(dest: &str, content: &str, mode: u32, owner: Option<&str>) -> String {
    let q = crate::template::shell_quote;
    let chown = owner.map(|o| format!(" && chown {} \"$t\"", q(o))).unwrap_or_default();
    let (umask, chmod) =
        if mode & !0o666 == 0 { (!mode & 0o777, String::new()) } else { (0o077, format!(" && chmod {mode:o} \"$t\"")) };
    format!(
        "umask {umask:03o}; set -C; t={dir}/.copctl-{rand}; \
         if printf %s {content} > \"$t\"{chmod}{chown} && mv -f \"$t\" {dest}; then exit 0; fi; \
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
