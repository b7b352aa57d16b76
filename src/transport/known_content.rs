//! What a host's files were last seen to hold: per host, per path, the file's identity on the
//! host (device, inode, size, mtime and ctime to the nanosecond) and the sha1 of its content, kept
//! on the bastion under `.copctl/content/<host>`. A re-run that finds a large file with the same
//! identity knows its content without reading it (one `stat` on the host instead of hashing: an
//! RKE2 image archive of 800 MiB costs seconds of a node's CPU to hash, a `stat` 1-2 ms).
//!
//! Why an identity can stand for the content (git's index and rsync's quick check rely on less):
//! any write to a file, or a rename of another file over it, sets its ctime to the host's clock,
//! and no call of a non-root process can set ctime back. What is left is the "racy" case git's
//! index handles: a write within the same clock tick as the recorded ctime would leave it
//! unchanged. So an identity is recorded only when the file's ctime and mtime are more than
//! `SETTLED_NS` (3 s) older than the host's clock at the `stat` that took it (the `/proc/self` inode the
//! `stat` process creates: its ctime is the moment of the call, on the same clock): a later write
//! then gets a ctime the record cannot have. The identity is taken before the content is hashed,
//! so a write while hashing also leaves a record that never matches again.
//!
//! A record that does not match is re-hashed and replaced; one that cannot be read or written
//! only costs the hash. Concurrent runs may overwrite each other's file: a lost record is a hash.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How much older than the host's clock a file's times must be for its identity to be recorded:
/// larger than any file system's timestamp granularity (FAT's 2 s mtime included).
const SETTLED_NS: i128 = 3_000_000_000;

/// The `stat -c` format of an identity: device, inode, size, mtime, ctime.
pub const IDENTITY_FORMAT: &str = "%d:%i:%s:%.9Y:%.9Z";

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    identity: String,
    sha1: String,
}

/// The store, one file per host, read when a host's file is first asked about.
#[derive(Debug, Default)]
pub struct KnownContent {
    dir: Option<PathBuf>,
    hosts: Mutex<HashMap<String, BTreeMap<String, Seen>>>,
}

/// A timestamp `%.9Y`/`%.9Z` prints (`1733475600.123456789`) in nanoseconds.
fn nanos(t: &str) -> Option<i128> {
    let (s, ns) = t.split_once('.').unwrap_or((t, "0"));
    let ns: String = ns.chars().chain(std::iter::repeat('0')).take(9).collect();
    Some(s.parse::<i128>().ok()? * 1_000_000_000 + ns.parse::<i128>().ok()?)
}

/// Whether an identity's mtime and ctime are settled at `now` (the ctime `stat` printed for
/// `/proc/self`, in the identity's format).
pub fn settled(identity: &str, now: &str) -> bool {
    let f: Vec<&str> = identity.split(':').collect();
    let now = now.rsplit(':').next().and_then(nanos);
    match (f.as_slice(), now) {
        ([_, _, _, m, c], Some(now)) => match (nanos(m), nanos(c)) {
            (Some(m), Some(c)) => m.max(c) + SETTLED_NS < now,
            _ => false,
        },
        _ => false,
    }
}

/// A host name as a file name: itself where it is plain, else hex.
fn file_name(host: &str) -> String {
    let plain = !host.is_empty()
        && !host.starts_with('.')
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if plain { host.to_string() } else { format!("x-{}", hex::encode(host)) }
}

impl KnownContent {
    /// Records kept in `dir` (created when the first one is written).
    pub fn at(dir: PathBuf) -> Self {
        KnownContent { dir: Some(dir), hosts: Mutex::new(HashMap::new()) }
    }

    fn path(&self, host: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(file_name(host)))
    }

    fn load(file: &Path) -> BTreeMap<String, Seen> {
        let Ok(text) = std::fs::read_to_string(file) else { return BTreeMap::new() };
        text.lines()
            .filter_map(|l| {
                let (sha1, rest) = l.split_once(' ')?;
                let (identity, path) = rest.split_once(' ')?;
                // Only what copctl writes: the file is the bastion's, but its text goes into scripts.
                let sha1_ok = sha1.len() == 40 && sha1.bytes().all(|b| b.is_ascii_hexdigit());
                let identity_ok = identity.bytes().all(|b| b.is_ascii_digit() || b == b':' || b == b'.');
                (sha1_ok && identity_ok)
                    .then(|| (path.to_string(), Seen { identity: identity.into(), sha1: sha1.into() }))
            })
            .collect()
    }

    fn with_host<T>(&self, host: &str, f: impl FnOnce(&mut BTreeMap<String, Seen>) -> T) -> Option<T> {
        let file = self.path(host)?;
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        let seen = hosts.entry(host.to_string()).or_insert_with(|| Self::load(&file));
        Some(f(seen))
    }

    /// The identity and sha1 recorded for `path` on `host`.
    pub fn get(&self, host: &str, path: &str) -> Option<(String, String)> {
        self.with_host(host, |seen| seen.get(path).map(|s| (s.identity.clone(), s.sha1.clone())))?
    }

    /// Records (or, with `None`, forgets) what `path` on `host` holds, and writes the host's file.
    pub fn set(&self, host: &str, path: &str, seen: Option<(&str, &str)>) {
        if path.contains('\n') {
            return;
        }
        let text = self.with_host(host, |records| {
            let new = seen.map(|(identity, sha1)| Seen { identity: identity.into(), sha1: sha1.into() });
            if records.get(path) == new.as_ref() {
                return None;
            }
            match new {
                Some(s) => records.insert(path.to_string(), s),
                None => records.remove(path),
            };
            Some(records.iter().map(|(p, s)| format!("{} {} {p}\n", s.sha1, s.identity)).collect::<String>())
        });
        if let (Some(Some(text)), Some(file)) = (text, self.path(host))
            && let Err(e) = write_atomically(&file, &text)
        {
            tracing::debug!(host, error = %e, "cannot record what the host's files hold");
        }
    }
}

/// Readable by its owner only, as the run records: digests of private files are no one else's.
fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let tmp = dir.join(format!(".{}.{}", std::process::id(), super::random_hex()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_is_settled_only_once_its_times_are_well_behind_the_hosts_clock() {
        let id = |m: &str, c: &str| format!("2049:131:1048576:{m}:{c}");
        let now = "24:4096:0:1733475605.000000000:1733475605.000000000";
        assert!(settled(&id("1733475600.000000000", "1733475601.999999999"), now));
        assert!(!settled(&id("1733475600.000000000", "1733475602.000000000"), now));
        assert!(!settled(&id("1733475603.5", "1733475600"), now), "a recent mtime is racy too");
        assert!(settled(&id("1733475600", "1733475600"), now), "whole seconds parse");
        assert!(!settled("2049:131:1048576:x:1733475600", now));
        assert!(!settled(&id("1733475600", "1733475600"), "garbage"));
    }

    #[test]
    fn records_survive_a_new_store_and_forgetting_removes_them() {
        let dir = std::env::temp_dir().join(format!("copctl-known-{}", super::super::random_hex()));
        let k = KnownContent::at(dir.clone());
        let sha = "a".repeat(40);
        k.set("node/1", "/opt/a file", Some(("1:2:3:4.0:5.0", &sha)));
        k.set("node/1", "/opt/b", Some(("1:9:3:4.0:5.0", &sha)));
        let again = KnownContent::at(dir.clone());
        assert_eq!(again.get("node/1", "/opt/a file"), Some(("1:2:3:4.0:5.0".into(), sha.clone())));
        assert_eq!(again.get("node-2", "/opt/a file"), None);
        again.set("node/1", "/opt/a file", None);
        assert_eq!(KnownContent::at(dir.clone()).get("node/1", "/opt/a file"), None);
        assert_eq!(KnownContent::at(dir.clone()).get("node/1", "/opt/b").map(|s| s.1), Some(sha));
        assert!(dir.join(format!("x-{}", hex::encode("node/1"))).is_file());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_record_line_copctl_would_not_write_is_ignored() {
        let dir = std::env::temp_dir().join(format!("copctl-known-{}", super::super::random_hex()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = "a".repeat(40);
        let text = format!(
            "{good} 1:2:3:4.0:5.0 /opt/good\n{}; 1:2:3:4.0:5.0 /opt/quoted\n{good} 1:2:3;x /opt/odd\n",
            "b".repeat(39)
        );
        std::fs::write(dir.join("h"), text).unwrap();
        let k = KnownContent::at(dir.clone());
        assert_eq!(k.get("h", "/opt/good"), Some(("1:2:3:4.0:5.0".into(), good)));
        assert_eq!(k.get("h", "/opt/quoted"), None);
        assert_eq!(k.get("h", "/opt/odd"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn no_directory_no_records() {
        let k = KnownContent::default();
        k.set("h", "/p", Some(("1:2:3:4:5", &"b".repeat(40))));
        assert_eq!(k.get("h", "/p"), None);
    }
}
