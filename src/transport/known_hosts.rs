//! Host keys, checked as OpenSSH's `ssh` checks them (hostfile.c, sshconnect.c): the user's files
//! then the global ones, lines parsed with the ssh-key crate (markers, patterns, `|1|` hashes),
//! host patterns matched with OpenSSH's rules (`*`, `?`, `!` negation, `[host]:port`),
//! `@revoked` keys refused in every mode, host certificates accepted when a `@cert-authority` key
//! signed them. Policies: `accept-new` (record unknown keys, refuse changed ones), `strict`
//! (refuse unknown keys too) and `off` (accept anything but a revoked key, with a warning every
//! run). Not here: which files a host uses (ssh_config, read in spec.rs) and the handshake itself.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use russh::keys::ssh_key::certificate::CertType;
use russh::keys::ssh_key::known_hosts::{Entry, HostPatterns, Marker};
use russh::keys::ssh_key::{Algorithm, Certificate, HashAlg};
use russh::keys::{PublicKey, PublicKeyOrCertificate};

use super::TransportError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum HostKeyPolicy {
    #[default]
    AcceptNew,
    Strict,
    Off,
}

/// The known_hosts settings ssh_config gives one host; `None` keeps the run's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostKeyFiles {
    /// `UserKnownHostsFile` (`none`: no file at all).
    pub user: Option<Vec<PathBuf>>,
    /// `GlobalKnownHostsFile`.
    pub global: Option<Vec<PathBuf>>,
    /// `HashKnownHosts`.
    pub hash: Option<bool>,
}

/// A line of a known_hosts file.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// What the files say about a host's plain key.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Known,
    Unknown,
    /// Other keys are recorded for the host; OpenSSH names the last of them, and so does this.
    Changed(Location),
    /// The key (or the authority that signed its certificate) is marked `@revoked` there.
    Revoked(Location),
}

/// Why a host key was refused; becomes the host's error.
#[derive(Debug, Clone, PartialEq)]
pub enum HostKeyProblem {
    Revoked {
        at: Location,
        fingerprint: String,
    },
    Changed {
        at: Location,
        fingerprint: String,
        entry: String,
    },
    Unknown {
        file: PathBuf,
        fingerprint: String,
    },
    /// accept-new could not append the key.
    NotRecorded {
        file: PathBuf,
        fingerprint: String,
        reason: String,
    },
}

impl HostKeyProblem {
    pub fn into_error(self, host: &str) -> TransportError {
        let host = host.to_string();
        match self {
            HostKeyProblem::Revoked { at, fingerprint } => {
                TransportError::HostKeyRevoked { host, file: at.file, line: at.line, fingerprint }
            }
            HostKeyProblem::Changed { at, fingerprint, entry } => {
                TransportError::HostKeyChanged { host, file: at.file, line: at.line, fingerprint, entry }
            }
            HostKeyProblem::Unknown { file, fingerprint } => TransportError::HostKeyUnknown { host, file, fingerprint },
            HostKeyProblem::NotRecorded { file, fingerprint, reason } => TransportError::Unreachable {
                reason: format!("cannot record its host key {fingerprint} in {}: {reason}", file.display()),
                host,
                transient: false,
            },
        }
    }
}

#[derive(Debug)]
pub struct KnownHosts {
    /// Where new keys are written unless ssh_config names another user file: `--known-hosts`,
    /// else `~/.ssh/known_hosts`.
    pub path: PathBuf,
    pub policy: HostKeyPolicy,
    /// User files read by default (`path`, and `~/.ssh/known_hosts2` when `path` is the default).
    user: Vec<PathBuf>,
    /// `--known-hosts` was given: it wins over ssh_config's UserKnownHostsFile, as `ssh -o` does.
    explicit: bool,
    /// Global files read after the user's (`/etc/ssh/ssh_known_hosts`, `ssh_known_hosts2`).
    pub global: Vec<PathBuf>,
    write: Mutex<()>,
}

/// The name a host is recorded under: `host`, or `[host]:port` off port 22.
pub fn host_entry(host: &str, port: u16) -> String {
    if port == 22 { host.to_string() } else { format!("[{host}]:{port}") }
}

/// OpenSSH's `match_pattern`: `*` matches any run of characters, `?` any one; the whole name.
fn glob(name: &[u8], pattern: &[u8]) -> bool {
    let (mut n, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == name[n]) {
            n += 1;
            p += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// OpenSSH's `match_hostname` over a comma-separated list: a matching `!pattern` excludes the
/// name whatever else matches; patterns are compared in lower case.
fn patterns_match(name: &str, patterns: &[String]) -> bool {
    let mut positive = false;
    for p in patterns {
        let (negated, p) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p.as_str()),
        };
        if glob(name.as_bytes(), p.to_ascii_lowercase().as_bytes()) {
            if negated {
                return false;
            }
            positive = true;
        }
    }
    positive
}

fn names_host(patterns: &HostPatterns, name: &str) -> bool {
    match patterns {
        HostPatterns::Patterns(p) => patterns_match(name, p),
        // OpenSSH refuses salts of any other length (hostfile.c extract_salt).
        HostPatterns::HashedName { salt, hash } if salt.len() == 20 => {
            let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(salt) else { return false };
            mac.update(name.as_bytes());
            mac.verify_slice(hash).is_ok()
        }
        HostPatterns::HashedName { .. } => false,
    }
}

/// A line naming the host.
#[derive(Debug, Clone)]
struct Line {
    at: Location,
    marker: Option<Marker>,
    key: PublicKey,
}

/// A line of a known_hosts file, parsed.
#[derive(Debug, Clone)]
struct Parsed {
    line: usize,
    marker: Option<Marker>,
    patterns: HostPatterns,
    key: PublicKey,
}

/// A file's text and its parsed lines, as last read.
#[derive(Default)]
struct ParsedFile {
    text: String,
    lines: Arc<Vec<Parsed>>,
}

/// Every known_hosts file read in this process, parsed once: a login looks its host up two or
/// three times, and parsing a line (its key's base64 and encoding) for every lookup made each
/// login cost O(lines): at 1000 hosts that was most of the bastion's CPU. The file is read for
/// every lookup all the same and its text compared with the one parsed, so an edit is always
/// seen; text appended (accept-new, another copctl) is parsed alone.
static PARSED: Mutex<Option<HashMap<PathBuf, ParsedFile>>> = Mutex::new(None);

fn parse_lines(text: &str, first_line: usize, file: &Path, out: &mut Vec<Parsed>) {
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start_matches([' ', '\t']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // ssh-key splits fields on single spaces; OpenSSH allows any run of blanks.
        let fields: Vec<&str> = line.split([' ', '\t']).filter(|f| !f.is_empty()).collect();
        let Ok(entry) = fields.join(" ").parse::<Entry>() else {
            tracing::debug!(
                "{}:{}: not a known_hosts entry OpenSSH would read; skipped",
                file.display(),
                first_line + i
            );
            continue;
        };
        out.push(Parsed {
            line: first_line + i,
            marker: entry.marker().copied(),
            patterns: entry.host_patterns().clone(),
            key: entry.public_key().clone(),
        });
    }
}

/// `file`'s parsed lines, from the cache while its text is the one parsed.
fn parsed(file: &Path) -> Arc<Vec<Parsed>> {
    let Ok(text) = std::fs::read_to_string(file) else { return Arc::default() };
    let mut cache = PARSED.lock().unwrap_or_else(|e| e.into_inner());
    let entry = cache.get_or_insert_with(HashMap::new).entry(file.to_path_buf()).or_default();
    if entry.text == text {
        return entry.lines.clone();
    }
    // Whole lines appended to the parsed text are parsed alone; any other change, all again.
    if !entry.text.is_empty() && entry.text.ends_with('\n') && text.starts_with(&entry.text) {
        let first_line = entry.text.matches('\n').count() + 1;
        parse_lines(&text[entry.text.len()..], first_line, file, Arc::make_mut(&mut entry.lines));
    } else {
        let mut lines = Vec::new();
        parse_lines(&text, 1, file, &mut lines);
        entry.lines = Arc::new(lines);
    }
    entry.text = text;
    entry.lines.clone()
}

/// The lines of `file` that name `name`, in order. Comments, blank lines and lines OpenSSH could
/// not read either (unknown marker, bad hash, unreadable key) are skipped, as `ssh` skips them.
fn lines_naming(file: &Path, name: &str) -> Vec<Line> {
    parsed(file)
        .iter()
        .filter(|p| names_host(&p.patterns, name))
        .map(|p| Line { at: Location { file: file.to_path_buf(), line: p.line }, marker: p.marker, key: p.key.clone() })
        .collect()
}

/// The line numbers of `file` that name `name`, as `ssh-keygen -F NAME -f FILE` lists them.
pub fn find(file: &Path, name: &str) -> Vec<usize> {
    lines_naming(file, &name.to_ascii_lowercase()).into_iter().map(|l| l.at.line).collect()
}

fn same_key(a: &PublicKey, b: &PublicKey) -> bool {
    a.key_data() == b.key_data()
}

/// OpenSSH's `check_hostkeys_by_key_or_type` for a plain key: the first equal key makes it known;
/// otherwise any other plain key recorded for the host (of any type) makes it changed.
fn plain_verdict(lines: &[Line], key: &PublicKey) -> Verdict {
    if let Some(r) = lines.iter().find(|l| l.marker == Some(Marker::Revoked) && same_key(&l.key, key)) {
        return Verdict::Revoked(r.at.clone());
    }
    let mut verdict = Verdict::Unknown;
    for l in lines.iter().filter(|l| l.marker.is_none()) {
        if same_key(&l.key, key) {
            return Verdict::Known;
        }
        verdict = Verdict::Changed(l.at.clone());
    }
    verdict
}

/// Why a certificate from a trusted authority still does not vouch for the host
/// (sshkey_cert_check_host); `None` when it does.
fn certificate_flaw(cert: &Certificate, ca: &PublicKey, hostname: &str) -> Option<&'static str> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    if cert.validate_at(now, [&ca.fingerprint(HashAlg::Sha256)]).is_err() {
        return Some("bad signature or outside its validity period");
    }
    if cert.cert_type() != CertType::Host {
        return Some("not a host certificate");
    }
    if !cert.valid_principals().is_empty() && !cert.valid_principals().iter().any(|p| p == hostname) {
        return Some("the host's name is not a listed principal");
    }
    if !cert.critical_options().is_empty() {
        return Some("unsupported critical options");
    }
    None
}

impl KnownHosts {
    /// Checks against `path` (`--known-hosts`, or a test's file) and the global files.
    pub fn new(path: PathBuf, policy: HostKeyPolicy) -> Self {
        KnownHosts {
            user: vec![path.clone()],
            path,
            policy,
            explicit: true,
            global: vec!["/etc/ssh/ssh_known_hosts".into(), "/etc/ssh/ssh_known_hosts2".into()],
            write: Mutex::new(()),
        }
    }

    /// `--known-hosts FILE` when given, else OpenSSH's defaults (which ssh_config may replace).
    pub fn from_flag(path: Option<PathBuf>, policy: HostKeyPolicy) -> Self {
        match path {
            Some(p) => KnownHosts::new(p, policy),
            None => {
                let mut kh = KnownHosts::new(Self::default_path(), policy);
                kh.user.push(home().join(".ssh/known_hosts2"));
                kh.explicit = false;
                kh
            }
        }
    }

    /// `~/.ssh/known_hosts`.
    pub fn default_path() -> PathBuf {
        home().join(".ssh/known_hosts")
    }

    /// The files read for a host (user files first; the first of them is written to), and
    /// whether new entries are hashed.
    pub fn files_for(&self, files: &HostKeyFiles) -> (Vec<PathBuf>, Vec<PathBuf>, bool) {
        let user = match (&files.user, self.explicit) {
            (Some(u), false) => u.clone(),
            _ => self.user.clone(),
        };
        let global = files.global.clone().unwrap_or_else(|| self.global.clone());
        (user, global, files.hash.unwrap_or(false))
    }

    fn lines(&self, files: &HostKeyFiles, name: &str) -> Vec<Line> {
        let (user, global, _) = self.files_for(files);
        user.iter().chain(&global).flat_map(|f| lines_naming(f, name)).collect()
    }

    /// What the files (the run's defaults) say about a plain key.
    pub fn check(&self, host: &str, port: u16, key: &PublicKey) -> Verdict {
        self.check_plain(host, port, &HostKeyFiles::default(), key)
    }

    fn check_plain(&self, host: &str, port: u16, files: &HostKeyFiles, key: &PublicKey) -> Verdict {
        let host = host.to_ascii_lowercase();
        let verdict = plain_verdict(&self.lines(files, &host_entry(&host, port)), key);
        if verdict != Verdict::Unknown || port == 22 {
            return verdict;
        }
        // ssh accepts a key recorded under the bare name for another port (sshconnect.c: "checking
        // without port identifier"); a key revoked there is refused too.
        match plain_verdict(&self.lines(files, &host), key) {
            v @ (Verdict::Known | Verdict::Revoked(_)) => v,
            _ => Verdict::Unknown,
        }
    }

    /// Host key algorithms for the handshake, as ssh orders them (sshconnect2.c
    /// order_hostkeyalgs): certificates first when an authority is recorded for the host, then
    /// the types of keys already recorded, then the rest — so a host with several keys presents
    /// the one on record instead of looking changed.
    pub fn algorithms(
        &self,
        host: &str,
        port: u16,
        files: &HostKeyFiles,
        preferred: &[Algorithm],
    ) -> (Vec<Algorithm>, Vec<Algorithm>) {
        let lines = self.lines(files, &host_entry(&host.to_ascii_lowercase(), port));
        let recorded = |a: &Algorithm| {
            lines.iter().any(|l| {
                l.marker.is_none()
                    && (l.key.algorithm() == *a || (matches!(a, Algorithm::Rsa { .. }) && l.key.algorithm().is_rsa()))
            })
        };
        let (mut first, last): (Vec<Algorithm>, Vec<Algorithm>) = preferred.iter().cloned().partition(recorded);
        first.extend(last);
        let certificates =
            if lines.iter().any(|l| l.marker == Some(Marker::CertAuthority)) { preferred.to_vec() } else { Vec::new() };
        (certificates, first)
    }

    /// Decides on the key or certificate a host presented; records an unknown key (accept-new).
    pub fn verify(
        &self,
        host: &str,
        port: u16,
        files: &HostKeyFiles,
        offered: &PublicKeyOrCertificate,
    ) -> Result<(), HostKeyProblem> {
        let key = offered.public_key();
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let hostname = host.to_ascii_lowercase();
        if let PublicKeyOrCertificate::Certificate(cert) = offered {
            let lines = self.lines(files, &host_entry(&hostname, port));
            let ca = PublicKey::new(cert.signature_key().clone(), "");
            if let Some(r) = lines
                .iter()
                .find(|l| l.marker == Some(Marker::Revoked) && (same_key(&l.key, &key) || same_key(&l.key, &ca)))
            {
                return Err(HostKeyProblem::Revoked { at: r.at.clone(), fingerprint });
            }
            if let Some(l) = lines.iter().find(|l| l.marker == Some(Marker::CertAuthority) && same_key(&l.key, &ca)) {
                match certificate_flaw(cert, &l.key, &hostname) {
                    None => return Ok(()),
                    Some(why) => {
                        tracing::warn!("{host}: host certificate not accepted ({why}); checking its plain key")
                    }
                }
            }
            // As ssh does, a certificate no recorded authority vouches for is checked as its plain key.
        }
        let (user, _, hash) = self.files_for(files);
        let verdict = self.check_plain(host, port, files, &key);
        match verdict {
            Verdict::Known => Ok(()),
            Verdict::Revoked(at) => Err(HostKeyProblem::Revoked { at, fingerprint }),
            _ if self.policy == HostKeyPolicy::Off => Ok(()),
            Verdict::Changed(at) => {
                Err(HostKeyProblem::Changed { at, fingerprint, entry: host_entry(&hostname, port) })
            }
            Verdict::Unknown => match (self.policy, user.first()) {
                (HostKeyPolicy::AcceptNew, Some(file)) => {
                    self.learn_into(file, host, port, files, &key, hash).map_err(|e| HostKeyProblem::NotRecorded {
                        file: file.clone(),
                        fingerprint,
                        reason: e.to_string(),
                    })
                }
                (_, file) => Err(HostKeyProblem::Unknown {
                    file: file.cloned().unwrap_or_else(|| PathBuf::from("none")),
                    fingerprint,
                }),
            },
        }
    }

    /// Appends the key to the default user file unless it is already known there.
    pub fn learn(&self, host: &str, port: u16, key: &PublicKey) -> std::io::Result<()> {
        self.learn_into(&self.path.clone(), host, port, &HostKeyFiles::default(), key, false)
    }

    /// Appends the key unless an identical entry is already there (another task of this run, or
    /// another copctl, may have just written it); hashed (`|1|salt|hash`) when `hash`.
    fn learn_into(
        &self,
        file: &Path,
        host: &str,
        port: u16,
        files: &HostKeyFiles,
        key: &PublicKey,
        hash: bool,
    ) -> std::io::Result<()> {
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let name = host_entry(&host.to_ascii_lowercase(), port);
        if self.check_plain(host, port, files, key) == Verdict::Known {
            return Ok(());
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let existing = std::fs::read(file).unwrap_or_default();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
        if !existing.is_empty() && !existing.ends_with(b"\n") {
            f.write_all(b"\n")?;
        }
        let recorded = if hash { hashed_name(&name)? } else { name };
        let openssh = PublicKey::new(key.key_data().clone(), "").to_openssh().map_err(std::io::Error::other)?;
        writeln!(f, "{recorded} {openssh}")
    }
}

/// `|1|salt|hash` as `ssh-keygen -H` and `HashKnownHosts yes` write it: HMAC-SHA1 of the name
/// under a fresh 20-byte salt.
fn hashed_name(name: &str) -> std::io::Result<String> {
    let mut salt = [0u8; 20];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut salt)?;
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(&salt).map_err(std::io::Error::other)?;
    mac.update(name.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(format!("|1|{}|{}", b64.encode(salt), b64.encode(mac.finalize().into_bytes())))
}

pub fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ";
    const KEY_B: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIA6rWI3G1sz07DnfFlrouTcysQlj2P+jpNSOEWD9OJ3X";

    fn key(b64: &str) -> PublicKey {
        russh::keys::parse_public_key_base64(b64).unwrap()
    }

    #[test]
    fn plain_hashed_ported_and_changed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("known_hosts");
        let hashed = hashed_name("hashed.example").unwrap();
        std::fs::write(
            &p,
            format!("# comment\n[h1]:2222 ssh-ed25519 {KEY_A}\nh2,10.0.0.2 ssh-ed25519 {KEY_A}\n{hashed} ssh-ed25519 {KEY_B}\n"),
        )
        .unwrap();
        let kh = KnownHosts::new(p.clone(), HostKeyPolicy::AcceptNew);
        let (a, b) = (key(KEY_A), key(KEY_B));
        assert_eq!(kh.check("h1", 2222, &a), Verdict::Known);
        assert_eq!(kh.check("h1", 22, &a), Verdict::Unknown);
        assert_eq!(kh.check("10.0.0.2", 22, &b), Verdict::Changed(Location { file: p.clone(), line: 3 }));
        assert_eq!(kh.check("hashed.example", 22, &b), Verdict::Known);
        assert_eq!(kh.check("HASHED.example", 22, &b), Verdict::Known, "names are compared in lower case");
        // Another port falls back to the bare name, as ssh does.
        assert_eq!(kh.check("h2", 2200, &a), Verdict::Known);
        kh.learn("new", 22, &a).unwrap();
        kh.learn("new", 22, &a).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("new ssh-ed25519").count(), 1, "{text}");
    }

    #[test]
    fn a_file_edited_during_the_run_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("known_hosts");
        let kh = KnownHosts::new(p.clone(), HostKeyPolicy::Strict);
        let (a, b) = (key(KEY_A), key(KEY_B));
        std::fs::write(&p, format!("h1 ssh-ed25519 {KEY_A}\n")).unwrap();
        assert_eq!(kh.check("h1", 22, &a), Verdict::Known);
        // The same length, another key: the parse of the old text must not answer.
        std::fs::write(&p, format!("h1 ssh-ed25519 {KEY_B}\n")).unwrap();
        assert_eq!(kh.check("h1", 22, &a), Verdict::Changed(Location { file: p.clone(), line: 1 }));
        // Lines appended are found, at their own line numbers.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(f, "# h2 below\n\nh2 ssh-ed25519 {KEY_A}\n@revoked h3 ssh-ed25519 {KEY_B}").unwrap();
        assert_eq!(kh.check("h2", 22, &a), Verdict::Known);
        assert_eq!(kh.check("h3", 22, &b), Verdict::Revoked(Location { file: p.clone(), line: 5 }));
        assert_eq!(find(&p, "h2"), [4]);
        // A line taken out: gone, and the lines after it renumbered.
        std::fs::write(&p, format!("h2 ssh-ed25519 {KEY_A}\n")).unwrap();
        assert_eq!(kh.check("h1", 22, &b), Verdict::Unknown);
        assert_eq!(find(&p, "h2"), [1]);
        std::fs::remove_file(&p).unwrap();
        assert_eq!(kh.check("h2", 22, &a), Verdict::Unknown);
    }

    #[test]
    fn globs_and_negation_follow_match_pattern_list() {
        let p = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
        assert!(patterns_match("web1.example.com", &p("*.example.com")));
        assert!(!patterns_match("example.com", &p("*.example.com")));
        assert!(patterns_match("web1", &p("web?")));
        assert!(!patterns_match("web10", &p("web?")));
        assert!(!patterns_match("bad.example.com", &p("*.example.com,!bad.example.com")));
        assert!(!patterns_match("bad.example.com", &p("!bad.example.com")), "a negation alone matches nothing");
        assert!(patterns_match("a.example.com", &p("A.EXAMPLE.com")));
        assert!(patterns_match("[h]:2222", &p("[h]:*")));
        assert!(patterns_match("[h]:2222", &p("*")));
        assert!(glob(b"abcabd", b"*abd") && glob(b"", b"*") && !glob(b"a", b""));
    }
}
