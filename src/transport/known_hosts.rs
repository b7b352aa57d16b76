//! Host keys, checked against an OpenSSH known_hosts file (plain, hashed `|1|salt|hash` and
//! `[host]:port` entries). Policies: `accept-new` (record unknown keys, refuse changed ones),
//! `strict` (refuse unknown keys too) and `off` (accept anything, with a warning every run).
//! Written here rather than with russh's helper because the error must name the exact line to
//! remove, and appends must be serialised and never duplicated across a parallel run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use russh::keys::ssh_key::PublicKey;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum HostKeyPolicy {
    #[default]
    AcceptNew,
    Strict,
    Off,
}

/// What the file says about a host's key.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Known,
    Unknown,
    /// A different key of the same type is recorded at this line.
    Changed {
        line: usize,
    },
}

#[derive(Debug)]
pub struct KnownHosts {
    pub path: PathBuf,
    pub policy: HostKeyPolicy,
    write: Mutex<()>,
}

/// The name a host is recorded under: `host`, or `[host]:port` off port 22.
pub fn host_entry(host: &str, port: u16) -> String {
    if port == 22 { host.to_string() } else { format!("[{host}]:{port}") }
}

fn matches_pattern(entry: &str, name: &str) -> bool {
    if let Some(rest) = entry.strip_prefix("|1|") {
        let mut parts = rest.split('|');
        let b64 = base64::engine::general_purpose::STANDARD;
        let (Some(Ok(salt)), Some(Ok(hash))) =
            (parts.next().map(|s| b64.decode(s)), parts.next().map(|h| b64.decode(h)))
        else {
            return false;
        };
        let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(&salt) else { return false };
        mac.update(name.as_bytes());
        return mac.verify_slice(&hash).is_ok();
    }
    entry == name
}

impl KnownHosts {
    pub fn new(path: PathBuf, policy: HostKeyPolicy) -> Self {
        KnownHosts { path, policy, write: Mutex::new(()) }
    }

    /// `~/.ssh/known_hosts`.
    pub fn default_path() -> PathBuf {
        home().join(".ssh/known_hosts")
    }

    pub fn check(&self, host: &str, port: u16, key: &PublicKey) -> Verdict {
        check_file(&self.path, &host_entry(host, port), key)
    }

    /// Appends the key unless an identical entry is already there (another task of this run, or
    /// another copctl, may have just written it).
    pub fn learn(&self, host: &str, port: u16, key: &PublicKey) -> std::io::Result<()> {
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let name = host_entry(host, port);
        if check_file(&self.path, &name, key) == Verdict::Known {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let existing = std::fs::read(&self.path).unwrap_or_default();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        if !existing.is_empty() && !existing.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        let openssh = key.to_openssh().map_err(std::io::Error::other)?;
        writeln!(f, "{name} {openssh}")
    }
}

fn check_file(path: &Path, name: &str, key: &PublicKey) -> Verdict {
    let Ok(text) = std::fs::read_to_string(path) else { return Verdict::Unknown };
    let mut changed = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(hosts), Some(_alg), Some(b64)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if !hosts.split(',').any(|h| matches_pattern(h, name)) {
            continue;
        }
        let Ok(recorded) = russh::keys::parse_public_key_base64(b64) else { continue };
        if recorded.algorithm() != key.algorithm() {
            continue;
        }
        if recorded.key_data() == key.key_data() {
            return Verdict::Known;
        }
        changed.get_or_insert(i + 1);
    }
    match changed {
        Some(line) => Verdict::Changed { line },
        None => Verdict::Unknown,
    }
}

pub fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ";
    const KEY_B: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIA6rWI3G1sz07DnfFlrouTcysQlj2P+jpNSOEWD9OJ3X";

    #[test]
    fn plain_hashed_ported_and_changed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("known_hosts");
        // |1| entry for "localhost" from OpenSSH's documentation set (salt/hash computed with HMAC-SHA1).
        let salt = [7u8; 20];
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(&salt).unwrap();
        mac.update(b"hashed.example");
        let b64 = base64::engine::general_purpose::STANDARD;
        let hashed = format!("|1|{}|{}", b64.encode(salt), b64.encode(mac.finalize().into_bytes()));
        std::fs::write(
            &p,
            format!("# comment\n[h1]:2222 ssh-ed25519 {KEY_A}\nh2,10.0.0.2 ssh-ed25519 {KEY_A}\n{hashed} ssh-ed25519 {KEY_B}\n"),
        )
        .unwrap();
        let kh = KnownHosts::new(p.clone(), HostKeyPolicy::AcceptNew);
        let a = russh::keys::parse_public_key_base64(KEY_A).unwrap();
        let b = russh::keys::parse_public_key_base64(KEY_B).unwrap();
        assert_eq!(kh.check("h1", 2222, &a), Verdict::Known);
        assert_eq!(kh.check("h1", 22, &a), Verdict::Unknown);
        assert_eq!(kh.check("10.0.0.2", 22, &b), Verdict::Changed { line: 3 });
        assert_eq!(kh.check("hashed.example", 22, &b), Verdict::Known);
        kh.learn("new", 22, &a).unwrap();
        kh.learn("new", 22, &a).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("new ssh-ed25519").count(), 1, "{text}");
    }
}
