//! Files on hosts, for the kinds that write them (`copy`, `template`, `line`, `block`): what a
//! path is (kind and mode from SFTP where it can tell, else one script), content compared before
//! anything is written — sizes first, then the file's sha1 computed on the host, never a copy
//! of it brought back — atomic writes, and diffs. No kind of its own.
//!
//! sha1, as Ansible's copy compares files: what matters here is that no other content has the
//! digest of the one wanted (a second preimage, out of reach for SHA-1 as for SHA-256; its
//! known weakness is two chosen contents made to collide), and coreutils' `sha1sum` costs the
//! host a third of `sha256sum`'s CPU (2.8 against 9.2 ms for 1 MiB, docs/benchmarks.md).

use std::sync::Arc;

use serde_json::json;
use sha1::Digest;

use super::Mode;
use super::source::Source;
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
    /// A file's size (`None` where the script could not tell).
    pub size: Option<u64>,
    /// A file's sha1, when it was asked for (and, with `Hash::IfSize`, the size matched).
    pub sha1: Option<String>,
    pub link: Option<String>,
}

/// Whether `stat` hashes a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    No,
    /// Only a file of this size: one of another size differs anyway, and is not read.
    IfSize(u64),
}

/// Files larger than this are hashed with OpenSSL first (its SHA-1 runs at 2.4 times coreutils'
/// speed here, 1.3 against 3.1 ms per MiB, but costs ~6 ms more to start); smaller ones with
/// `sha1sum`.
const OPENSSL_FROM: u64 = 4 << 20;

/// Diffs are shown for files up to this size on both sides; a larger change is named only.
const DIFF_MAX: u64 = 1 << 20;

/// What the host's hashing tools print for `p`'s content: `sha1sum`, or OpenSSL first for large
/// files, each the other's fallback. coreutils' `sha1sum` is on every RHEL and Ubuntu node,
/// minimal images included; OpenSSL's command is not always. Reads from stdin, so no file name
/// (escaped when odd) comes back.
fn hash_command(size: u64) -> String {
    hash_of(size, "\"$p\"")
}

/// `hash_command` of the file at `file` (a shell word).
fn hash_of(size: u64, file: &str) -> String {
    let sha1sum = format!("sha1sum 2>/dev/null <{file}");
    let openssl = format!("openssl dgst -sha1 -r 2>/dev/null <{file}");
    if size >= OPENSSL_FROM { format!("{openssl} || {sha1sum}") } else { format!("{sha1sum} || {openssl}") }
}

/// A digest line's digest: 40 hex digits (sha1), or nothing.
fn parse_digest(out: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(out).ok()?;
    let d = text.split_whitespace().next()?;
    (d.len() == 40 && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| d.to_ascii_lowercase())
}

/// Files up to this size are read back over SFTP and hashed here: the host then starts no process
/// at all (a `sha1sum` costs it a fork and an exec, ~2 ms of CPU, more than moving 64 KiB), and
/// the controller holds one such buffer per comparison in flight.
const HASH_HERE_UP_TO: u64 = 64 << 10;

/// The sha1 of the file at `path` (`size` bytes): a small one read over SFTP into the hasher,
/// a larger one computed on the host by one process in the connection's long-lived shell; `None`
/// when it could not be read there (then the content counts as different, and is written).
async fn hash_on_host(cx: &StepCtx<'_>, path: &str, size: u64, mtime: Option<u64>) -> Result<Option<String>, Outcome> {
    let sftp_asked = std::env::var_os("COPCTL_REMOTE_HASH").is_some_and(|v| v == "sftp");
    if (sftp_asked || size <= HASH_HERE_UP_TO)
        && let Some(r) = cx.conn.sha1_sftp(path, size).await
    {
        match r {
            Ok(h) => return Ok(Some(h)),
            // SFTP could not read it: the shell may (its error is the one worth reporting).
            Err(e) => tracing::debug!(host = cx.host, path, error = %e, "SFTP hash failed; hashing on the host"),
        }
    }
    hash_or_recall(cx, path, size, mtime).await
}

/// Whether a file modified at `mtime` (the host's clock, SFTP's whole seconds) may be settled
/// (`transport::known_content`), judged by the bastion's clock: a file written moments ago (the
/// re-run right after a first run) is not worth the `stat` that would record it. Only decides
/// whether to try; the host's clock decides whether to record.
fn may_settle(mtime: Option<u64>) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    mtime.is_none_or(|m| m + 3 < now)
}

/// A large file's sha1 from what the bastion recorded it held, where its identity on the host is
/// still the recorded one (one `stat`, `transport::known_content`), else computed on the host,
/// its identity taken just before and recorded once settled. One script either way.
async fn hash_or_recall(
    cx: &StepCtx<'_>,
    path: &str,
    size: u64,
    mtime: Option<u64>,
) -> Result<Option<String>, Outcome> {
    let recorded = cx.pool.known.get(cx.host, path);
    if recorded.is_none() && !may_settle(mtime) {
        let out = cx.sh(&format!("p={}; {}", shell_quote(path), hash_command(size)), None).await?;
        return Ok(if out.success() { parse_digest(&out.stdout) } else { None });
    }
    if let Some((identity, sha1)) = &recorded {
        // The identity alone first: `stat` is then the script's last command, which the shell
        // execs (inside `$(...)` it costs a fork more). Another identity (the file was written
        // since) takes the script below, which identifies and hashes the file in one.
        let script =
            format!("exec 3<{}; exec stat -L -c '%d:%i:%s:%.9Y:%.9Z' /dev/fd/3 2>/dev/null", shell_quote(path));
        let out = cx.sh(&script, None).await?;
        if out.success() && out.stdout.strip_suffix(b"\n") == Some(identity.as_bytes()) {
            return Ok(Some(sha1.clone()));
        }
    }
    let script = format!(
        "p={}; {{ {}; echo \"H $h\"; }} 3<\"$p\"",
        shell_quote(path),
        identify_and_hash(size, recorded.as_ref())
    );
    let out = cx.sh(&script, None).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let digest = text.lines().find_map(|l| l.strip_prefix("H ")).and_then(|h| parse_digest(h.as_bytes()));
    if !text.lines().any(|l| l == "KNOWN") {
        remember(cx, path, recorded.is_some(), &text, digest.as_deref());
    }
    Ok(digest)
}

/// Shell that sets `h` to the sha1 of the file open on descriptor 3 (`-` where it cannot be
/// read): the `recorded` one (printing `KNOWN`) where the file's identity is still the recorded
/// one, else hashed, after printing `ID <identity> <now> <file system type>`. The identity and
/// the hash are of the open file, whatever becomes of its path meanwhile (a parent directory
/// swapped for another). `now` is the ctime of `/proc/self/`, the `stat` process's own
/// directory, made when first looked up (without the slash, the link, as old as /proc).
fn identify_and_hash(size: u64, recorded: Option<&(String, String)>) -> String {
    let hash = format!("h=$({}) || h=-; h=${{h%% *}}", hash_of(size, "/dev/fd/3"));
    // The file system's type costs a process: asked only where the times look settled (by
    // whole seconds here; `known_content::settled` decides), and only of digits.
    let measure = format!(
        "[ $# = 2 ] && case \"$1 $2\" in *[!0-9:.\\ ]*) ;; *) n=${{2##*:}}; n=$(( ${{n%.*}} - 3 )); \
         m=${{1%:*}}; m=${{m##*:}}; c=${{1##*:}}; [ \"$n\" -gt \"${{m%.*}}\" ] && [ \"$n\" -gt \"${{c%.*}}\" ] && \
         echo \"ID $1 $2 $(stat -f -c %T /dev/fd/3 2>/dev/null)\";; esac; {hash}"
    );
    let take = "set -- $(stat -L -c '%d:%i:%s:%.9Y:%.9Z' /dev/fd/3 /proc/self/ 2>/dev/null)";
    match recorded {
        Some((identity, sha1)) => format!(
            "{take}; if [ $# = 2 ] && [ \"$1\" = {} ]; then h={}; echo KNOWN; else {measure}; fi",
            shell_quote(identity),
            shell_quote(sha1)
        ),
        None => format!("{take}; {measure}"),
    }
}

/// File systems whose attributes are the file's own, kept by the kernel that serves the file:
/// not a network file system, where `stat` may answer from a cache and another machine's clock
/// sets the ctime. GNU's names (`ext2/ext3` is ext4 too) and busybox's.
const LOCAL_FILE_SYSTEMS: [&str; 14] = [
    "ext2/ext3",
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "tmpfs",
    "ramfs",
    "overlayfs",
    "overlay",
    "zfs",
    "f2fs",
    "jfs",
    "reiserfs",
];

/// Records what a hashing script's `ID identity now fstype` line and digest say the file holds,
/// once settled and on a local file system; forgets a record the file no longer matches.
fn remember(cx: &StepCtx<'_>, path: &str, had_record: bool, out: &str, digest: Option<&str>) {
    use crate::transport::known_content::settled;
    let identity = out.lines().find_map(|l| l.strip_prefix("ID ")).and_then(|l| {
        let mut f = l.splitn(3, ' ');
        Some((f.next()?, f.next()?, f.next().unwrap_or("")))
    });
    match (identity, digest) {
        (Some((identity, now, fs)), Some(sha1)) if settled(identity, now) && LOCAL_FILE_SYSTEMS.contains(&fs) => {
            cx.pool.known.set(cx.host, path, Some((identity, sha1)))
        }
        _ if had_record => cx.pool.known.set(cx.host, path, None),
        _ => {}
    }
}

/// Kind, mode and size of `path` from SFTP's `lstat` (no remote process), and for a file of the
/// wanted size its sha1 from the host; `None` where SFTP cannot answer (become, an SFTP error).
async fn stat_sftp(cx: &StepCtx<'_>, path: &str, hash: Hash) -> Option<Result<Option<Stat>, Outcome>> {
    use crate::transport::PathKind;
    let info = cx.conn.lstat(path).await?.ok()?;
    let Some(info) = info else { return Some(Ok(None)) };
    let kind = match info.kind {
        PathKind::File => "file",
        PathKind::Directory => "directory",
        PathKind::Link => "link",
        PathKind::Other => return None,
    };
    let sha1 = match hash {
        Hash::IfSize(n) if kind == "file" && info.size == n => match hash_on_host(cx, path, n, info.mtime).await {
            Ok(h) => h,
            Err(o) => return Some(Err(o)),
        },
        _ => None,
    };
    Some(Ok(Some(Stat {
        kind: kind.into(),
        mode: info.mode,
        owner: String::new(),
        group: String::new(),
        size: (kind == "file").then_some(info.size),
        sha1,
        link: info.link,
    })))
}

/// Kind and mode of `path`, with owner and group names only when `names` (for `line`, `block`).
pub async fn stat(cx: &StepCtx<'_>, path: &str, names: bool) -> Result<Option<Stat>, Outcome> {
    stat_hashing(cx, path, Hash::No, names).await
}

/// Kind, mode, size, owner and group names (only when `names`) and, as `hash` asks, the sha1
/// of `path`: from SFTP and one hashing process where they can answer, else one script.
pub async fn stat_hashing(cx: &StepCtx<'_>, path: &str, hash: Hash, names: bool) -> Result<Option<Stat>, Outcome> {
    if !names && let Some(s) = stat_sftp(cx, path, hash).await {
        return s;
    }
    // A large file's content may be known from the record (as in `hash_or_recall`).
    let recorded = match hash {
        Hash::IfSize(n) if n > HASH_HERE_UP_TO => cx.pool.known.get(cx.host, path),
        _ => None,
    };
    let (want, hashing) = match hash {
        Hash::IfSize(n) if n > HASH_HERE_UP_TO => {
            (n.to_string(), format!("{{ {}; }} 3<\"$p\"", identify_and_hash(n, recorded.as_ref())))
        }
        Hash::IfSize(n) => (n.to_string(), format!("h=$({}) || h=-; h=${{h%% *}}", hash_command(n))),
        Hash::No => ("-".to_string(), ":".to_string()),
    };
    let script = format!(
        "p={p}; if [ -L \"$p\" ]; then k=link; elif [ -d \"$p\" ]; then k=directory; elif [ -e \"$p\" ]; then k=file; \
         else echo absent; exit 0; fi; s=$(stat -c '%a %U %G %s' \"$p\") || exit 1; h=-; l=-; \
         if [ $k = file ] && [ \"${{s##* }}\" = {want} ]; then {hashing}; fi; \
         if [ $k = link ]; then l=$(readlink \"$p\"); fi; echo \"$k $s $h $l\"",
        p = shell_quote(path),
    );
    let out = cx.sh(&script, None).await?;
    if !out.success() {
        return Err(Outcome::failed(format!("cannot stat {path}: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // What `identify_and_hash` printed comes first (for a file only), then the one line.
    let mut rest = text.as_ref();
    let mut marks = String::new();
    while let Some((line, after)) = rest.split_once('\n')
        && (line == "KNOWN" || line.starts_with("ID "))
    {
        marks.push_str(line);
        marks.push('\n');
        rest = after;
    }
    let f: Vec<&str> = rest.trim().splitn(7, ' ').collect();
    if f.first() == Some(&"absent") || f.len() < 7 {
        return Ok(None);
    }
    if let Hash::IfSize(n) = hash
        && n > HASH_HERE_UP_TO
        && f[0] == "file"
        && f[4] == n.to_string()
        && !marks.lines().any(|l| l == "KNOWN")
    {
        remember(cx, path, recorded.is_some(), &marks, parse_digest(f[5].as_bytes()).as_deref());
    }
    Ok(Some(Stat {
        kind: f[0].to_string(),
        mode: u32::from_str_radix(f[1], 8).unwrap_or(0),
        owner: f[2].to_string(),
        group: f[3].to_string(),
        size: (f[0] == "file").then(|| f[4].parse().ok()).flatten(),
        sha1: parse_digest(f[5].as_bytes()),
        link: (f[6] != "-").then(|| f[6].to_string()),
    }))
}

/// What Ansible's copy and template return of the file they put in place: its `uid`, `gid`,
/// `owner`, `group` and `mode`; where the content was written its `md5sum` and the `src` it came
/// from, where nothing changed the file module's `path`. One command, after the step (a file
/// check mode did not write adds nothing).
pub async fn file_result(cx: &StepCtx<'_>, o: &mut Outcome, src: Option<&str>) {
    if !matches!(o.status, super::Status::Ok | super::Status::Changed) {
        return;
    }
    let Some(dest) = o.result.get("dest").and_then(|d| d.as_str()).map(str::to_string) else { return };
    let written = o.status == super::Status::Changed && !cx.check;
    let script = format!(
        "p={}; [ -e \"$p\" ] || exit 0; stat -L -c '%u %g %U %G %a' -- \"$p\"{}",
        shell_quote(&dest),
        if written { " && md5sum < \"$p\"" } else { "" }
    );
    let Ok(out) = cx.sh(&script, None).await else { return };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let f: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    let [uid, gid, owner, group, mode] = f[..] else { return };
    let r = &mut o.result;
    r.insert("uid".into(), uid.parse::<u64>().map_or(json!(uid), |n| json!(n)));
    r.insert("gid".into(), gid.parse::<u64>().map_or(json!(gid), |n| json!(n)));
    r.insert("owner".into(), json!(owner));
    r.insert("group".into(), json!(group));
    r.entry("mode").or_insert_with(|| json!(format!("{:04o}", u32::from_str_radix(mode, 8).unwrap_or(0))));
    if written {
        if let Some(md5) = lines.next().and_then(|l| l.split_whitespace().next()) {
            r.insert("md5sum".into(), json!(md5));
        }
        if let Some(src) = src {
            r.insert("src".into(), json!(src));
        }
    } else {
        r.insert("path".into(), json!(dest));
    }
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

/// What a file step wants at its destination.
pub enum Want {
    /// Bytes the step made (a rendered template, `content:`), small by nature.
    Bytes(Vec<u8>),
    /// A file on the bastion, read and hashed once per run (`source`); streamed to each host that
    /// needs it, never held whole per host.
    Source(Arc<Source>),
}

impl Want {
    fn len(&self) -> u64 {
        match self {
            Want::Bytes(b) => b.len() as u64,
            Want::Source(s) => s.len,
        }
    }

    /// Ansible's `checksum` of the content (sha1).
    fn sha1(&self) -> String {
        match self {
            Want::Bytes(b) => hex::encode(sha1::Sha1::digest(b)),
            Want::Source(s) => s.sha1.clone(),
        }
    }

    /// A source on the bastion only its owner may read is shown as a private file is.
    fn private_source(&self, dest: &str) -> Option<String> {
        match self {
            Want::Source(s) if s.mode & 0o044 == 0 => Some(format!(
                "{dest}: changed; content not shown (its source {} has mode {:04o}: only its owner may read it)\n",
                s.path.display(),
                s.mode & 0o7777
            )),
            _ => None,
        }
    }

    /// The content for a diff (read from disk for a source not kept in memory); `None` when too
    /// large to show.
    fn for_diff(&self) -> Result<Option<String>, String> {
        match self {
            Want::Bytes(b) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
            Want::Source(s) => match &s.bytes {
                Some(b) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
                None if s.len <= DIFF_MAX => std::fs::read(&s.path)
                    .map(|b| Some(String::from_utf8_lossy(&b).into_owned()))
                    .map_err(|e| format!("cannot read {} on the bastion: {e}", s.path.display())),
                None => Ok(None),
            },
        }
    }

    fn into_put(self) -> PutSource {
        match self {
            Want::Bytes(b) => PutSource::Bytes(b),
            Want::Source(s) => match &s.bytes {
                Some(b) => PutSource::Shared(b.clone()),
                None => PutSource::Digested { path: s.path.clone(), len: s.len, sha256: s.sha256.clone() },
            },
        }
    }
}

/// What copy and template do before they replace a file's content, as Ansible's copy module
/// does it: `backup` (the old file kept under Ansible's backup name, `backup_file` in the
/// result), then `validate` (the command run on the new content in a temporary file with the
/// file's mode and owner; its failure leaves the file as it was). Neither runs where the content
/// is the same, nor in check mode.
#[derive(Debug, Default, Clone, Copy)]
pub struct BeforeWrite<'a> {
    pub backup: bool,
    pub validate: Option<&'a str>,
}

/// Where a file `ensure_file` refused to put at `dest` goes instead, as Ansible's copy and
/// template have it: into `dest` under `src`'s name, when `dest` is a directory. `None`: it is
/// not one, and the refusal stands. Asked only once a put failed, so a plain one costs nothing.
pub async fn into_directory(cx: &StepCtx<'_>, dest: &str, src: &str) -> Option<String> {
    let name = std::path::Path::new(src).file_name()?.to_string_lossy().into_owned();
    match stat(cx, dest, false).await {
        Ok(Some(d)) if d.kind == "directory" => Some(format!("{}/{name}", dest.trim_end_matches('/'))),
        _ => None,
    }
}

/// Puts what `want` says at `dest` unless it is already there with the same mode and owner: a
/// file of another size differs without being read; one of the same size is hashed on the host.
/// `before`: what copy and template do before a new content goes in.
pub async fn ensure_file(
    cx: &StepCtx<'_>,
    dest: &str,
    want: Want,
    mode: Option<&Mode>,
    owner: Option<&str>,
    group: Option<&str>,
    before: BeforeWrite<'_>,
) -> Outcome {
    let dest = &match super::home::expand_home(cx, dest).await {
        Ok(d) => d,
        Err(o) => return o,
    };
    let mode = match mode.map(Mode::bits).transpose() {
        Ok(m) => m,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    let current = match stat_hashing(cx, dest, Hash::IfSize(want.len()), owner.is_some() || group.is_some()).await {
        Ok(s) => s,
        Err(o) => return o,
    };
    if let Some(s) = &current
        && s.kind != "file"
    {
        return Outcome::failed(format!("{dest} is a {}, not a file", s.kind));
    }
    let sha = want.sha1();
    let same_content = current.as_ref().and_then(|s| s.sha1.as_deref()) == Some(sha.as_str());
    let same_mode = mode.is_none_or(|m| current.as_ref().is_some_and(|s| s.mode == m));
    let same_owner = owner.is_none_or(|o| current.as_ref().is_some_and(|s| s.owner == o))
        && group.is_none_or(|g| current.as_ref().is_some_and(|s| s.group == g));
    let mut result = serde_json::Map::new();
    result.insert("dest".into(), json!(dest));
    result.insert("checksum".into(), json!(want.sha1()));
    result.insert("size".into(), json!(want.len()));
    result.insert("state".into(), json!("file"));
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
    if cx.diff && !same_content {
        o.diff = match private_diff(dest, final_mode)
            .or_else(|| want.private_source(dest))
            .or_else(|| secret_notice(cx, dest))
        {
            Some(notice) => Some(notice),
            None => match diff_of(cx, dest, current.as_ref(), &want).await {
                Ok(d) => Some(d),
                Err(o) => return o,
            },
        };
    }
    if cx.check {
        return o;
    }
    if !same_content {
        let put = want.into_put();
        if before.backup && current.is_some() {
            match super::backup::backup_local(cx, dest).await {
                Ok(b) => {
                    o.result.insert("backup_file".into(), json!(b));
                }
                Err(o) => return o,
            }
        }
        if let Some(v) = before.validate
            && let Err(o) = super::validate::validate_file(cx, v, put.clone(), final_mode, owner, group).await
        {
            return o;
        }
        if let Err(e) = cx.conn.put(put, dest, final_mode).await {
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

/// The unified diff of `dest` (as `current` found it) against `want`, or a line naming the
/// change when either side is over `DIFF_MAX`: the old text is read only for this (`--diff`).
async fn diff_of(cx: &StepCtx<'_>, dest: &str, current: Option<&Stat>, want: &Want) -> Result<String, Outcome> {
    let old_len = current.and_then(|s| s.size).unwrap_or(0);
    let new = want.for_diff().map_err(Outcome::failed)?;
    let (Some(new), true) = (new, old_len <= DIFF_MAX) else {
        return Ok(format!("{dest}: changed ({old_len} → {} bytes; too large to show)\n", want.len()));
    };
    let old = match current {
        Some(s) => match cx.conn.get(dest, s.size).await {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => return Err(transport_outcome(e)),
        },
        None => String::new(),
    };
    Ok(unified_diff(dest, &old, &new))
}
