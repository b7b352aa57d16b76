//! `copy` sources on the bastion, each read and hashed once per run however many hosts and
//! steps use it: a process-wide cache keyed by path and the file's identity (device, inode,
//! size, modification and change times), so a file replaced or edited between uses is read
//! again. An entry holds the sha256 and size, and the bytes only of a small file (≤ `KEEP`,
//! shared through an `Arc`); a larger one is streamed from disk to each host in chunks when it
//! must be written. Memory: O(distinct sources × 64 KiB), not O(hosts × file).

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use sha2::{Digest, Sha256};

/// Sources up to this size are kept in memory (once): they travel inside a script
/// (`transport::ssh::upload`'s inline path) and their diffs need the text.
pub const KEEP: u64 = 64 << 10;

/// Reads of a source are in chunks of this size (the hash needs no more).
const CHUNK: usize = 256 << 10;

/// A file on the bastion as read once.
#[derive(Debug)]
pub struct Source {
    pub path: PathBuf,
    pub len: u64,
    /// Its permission bits on the bastion (a source only its owner may read is not shown).
    pub mode: u32,
    pub sha256: String,
    /// What Ansible calls the file's checksum (copy's and stat's `checksum`).
    pub sha1: String,
    /// The content, when the file is at most `KEEP` bytes.
    pub bytes: Option<Arc<[u8]>>,
}

/// What says a file is still the one read: equal identities, equal content (barring a writer
/// that restores both times, which no tool does by accident).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    fn of(m: &std::fs::Metadata) -> Identity {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<(Identity, Arc<Source>)>>>;

/// One slot per path: the first user of a path reads it while the others wait for its result.
static CACHE: LazyLock<Mutex<HashMap<PathBuf, Slot>>> = LazyLock::new(Default::default);

/// The source at `path`, read and hashed unless the cache holds it with the same identity.
pub async fn source(path: &Path) -> Result<Arc<Source>, String> {
    let slot = CACHE.lock().unwrap_or_else(|e| e.into_inner()).entry(path.to_path_buf()).or_default().clone();
    let mut slot = slot.lock().await;
    let now = std::fs::metadata(path).map_err(|e| format!("cannot read {} on the bastion: {e}", path.display()))?;
    if !now.is_file() {
        return Err(format!("cannot read {} on the bastion: not a regular file", path.display()));
    }
    if let Some((id, s)) = slot.as_ref()
        && *id == Identity::of(&now)
    {
        return Ok(s.clone());
    }
    let p = path.to_path_buf();
    let (id, s) = tokio::task::spawn_blocking(move || read(&p))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot read {} on the bastion: {e}", path.display()))?;
    let s = Arc::new(s);
    *slot = Some((id, s.clone()));
    Ok(s)
}

/// Reads and hashes the file once; an identity that changed while it was read means a writer
/// was at work: read again (a few times), so the digest is of one version of the file.
fn read(path: &Path) -> std::io::Result<(Identity, Source)> {
    use std::io::Read;
    for _ in 0..5 {
        let mut f = std::fs::File::open(path)?;
        let before = Identity::of(&f.metadata()?);
        let mut h = Sha256::new();
        let mut h1 = sha1::Sha1::new();
        let mut kept = (before.len <= KEEP).then(|| Vec::with_capacity(before.len as usize));
        let mut buf = vec![0u8; CHUNK.min(before.len as usize + 1)];
        let mut len = 0u64;
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            h1.update(&buf[..n]);
            len += n as u64;
            if let Some(k) = kept.as_mut() {
                if len > KEEP {
                    kept = None;
                } else {
                    k.extend_from_slice(&buf[..n]);
                }
            }
        }
        let after = Identity::of(&f.metadata()?);
        if before == after && len == after.len {
            let source = Source {
                path: path.to_path_buf(),
                len,
                mode: f.metadata()?.permissions().mode(),
                sha256: hex::encode(h.finalize()),
                sha1: hex::encode(h1.finalize()),
                bytes: kept.map(Arc::from),
            };
            return Ok((after, source));
        }
    }
    Err(std::io::Error::other("it kept changing while it was read"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_once_then_again_when_changed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        std::fs::write(&p, b"one").unwrap();
        let a = source(&p).await.unwrap();
        let b = source(&p).await.unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the second use is the cached read");
        assert_eq!(a.bytes.as_deref(), Some(&b"one"[..]));
        assert_eq!(a.sha256, hex::encode(Sha256::digest(b"one")));
        // Same size, new content (past the clock's tick, which stamps the change time).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&p, b"two").unwrap();
        let c = source(&p).await.unwrap();
        assert_eq!(c.sha256, hex::encode(Sha256::digest(b"two")));
    }

    #[tokio::test]
    async fn large_files_keep_no_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        let data = vec![7u8; (KEEP + 1) as usize];
        std::fs::write(&p, &data).unwrap();
        let s = source(&p).await.unwrap();
        assert!(s.bytes.is_none());
        assert_eq!(s.len, KEEP + 1);
        assert_eq!(s.sha256, hex::encode(Sha256::digest(&data)));
    }
}
