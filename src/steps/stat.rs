//! `stat`: what a remote path is (Ansible's `stat` module result: `stat.exists`, `isdir`,
//! `mode`, `pw_name`, `checksum`, ...), for `register:` and later `when:`. One remote script
//! (`stat`, the access tests, `readlink` and the hash), never a change.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Flag, Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StatArgs {
    pub path: String,
    /// Follow a symlink to what it points at (Ansible's default: no).
    pub follow: Option<Flag>,
    /// Hash a regular file (Ansible's default: yes).
    pub get_checksum: Option<Flag>,
    /// sha1 (Ansible's default), sha224, sha256, sha384, sha512 or md5.
    pub checksum_algorithm: Option<String>,
    /// Report `mimetype` and `charset` as `file --mime-type --mime-encoding` says (Ansible's
    /// default: yes).
    pub get_mime: Option<Flag>,
    /// Report `attributes`, `attr_flags` and `version` as `lsattr -vd` says (Ansible's default:
    /// yes).
    pub get_attributes: Option<Flag>,
}

const ALGORITHMS: &[&str] = &["sha1", "sha224", "sha256", "sha384", "sha512", "md5"];

impl Kind for StatArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let follow = self.follow.as_ref().is_some_and(Flag::get);
        let hash = self.get_checksum.as_ref().is_none_or(Flag::get);
        let mime = self.get_mime.as_ref().is_none_or(Flag::get);
        let attrs = self.get_attributes.as_ref().is_none_or(Flag::get);
        let algo = self.checksum_algorithm.as_deref().unwrap_or("sha1");
        if !ALGORITHMS.contains(&algo) {
            return Outcome::failed(format!(
                "checksum_algorithm '{algo}' is not one of {}",
                ALGORITHMS.join(", ")
            ));
        }
        let script = format!(
            "p={p}; if [ ! -e \"$p\" ] && [ ! -L \"$p\" ]; then echo absent; exit 0; fi; \
             stat {l}-c '%f|%u|%g|%U|%G|%s|%.9X|%.9Y|%.9Z|%i|%d|%h|%b|%B|%t|%T' -- \"$p\" || exit 1; \
             a=; [ -r \"$p\" ] && a=r; [ -w \"$p\" ] && a=${{a}}w; [ -x \"$p\" ] && a=${{a}}x; echo \"|$a\"; \
             if [ -L \"$p\" ]; then readlink -- \"$p\"; readlink -f -- \"$p\"; else echo; echo; fi; \
             if {h} [ -f \"$p\" ] && {{ {f} [ ! -L \"$p\" ]; }} && [ -r \"$p\" ]; then {algo}sum < \"$p\"; else echo; fi; \
             {m}; {a}",
            p = shell_quote(&self.path),
            l = if follow { "-L " } else { "" },
            h = if hash { "" } else { "false &&" },
            f = if follow { "true ||" } else { "" },
            // As Ansible runs them: `file` on the path itself (a link reads as inode/symlink even
            // with follow), either tool missing or failing leaves its keys at Ansible's defaults.
            m = if mime { "printf 'M:'; file --mime-type --mime-encoding \"$p\" 2>/dev/null || echo" } else { ":" },
            a = if attrs { "printf 'A:'; lsattr -vd \"$p\" 2>/dev/null || echo" } else { ":" },
        );
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let mut o = Outcome::ok("");
        o.commands.push(script);
        if !out.success() {
            o = Outcome::failed(format!(
                "cannot stat {}: {}",
                self.path,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            return o;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        match parse(&self.path, &text) {
            Some(stat) => {
                o.result.insert("stat".into(), stat);
            }
            None => return Outcome::failed(format!("cannot stat {}: unexpected output '{}'", self.path, text.trim())),
        }
        o
    }
}

/// What a `stat` result looks like before the step runs (for the plan's template checks): an
/// existing link, so that every key a playbook may read is there.
pub fn placeholder() -> Value {
    let line = "a1ff|0|0|root|root|0|0|0|0|0|0|1|0|4096|0|0\n|rwx\n-\n-\n0\nM:-: text/plain; charset=us-ascii\nA:\n";
    let mut v = parse("-", line).unwrap_or_default();
    v["checksum"] = json!("");
    v
}

/// The script's output as Ansible's `stat` result.
fn parse(path: &str, text: &str) -> Option<Value> {
    let mut lines = text.lines();
    let first = lines.next()?;
    if first == "absent" {
        return Some(json!({"exists": false}));
    }
    let f: Vec<&str> = first.split('|').collect();
    if f.len() < 16 {
        return None;
    }
    let raw = u32::from_str_radix(f[0], 16).ok()?;
    let num = |i: usize| f[i].parse::<u64>().ok().map(Value::from).unwrap_or(Value::Null);
    let float = |i: usize| f[i].parse::<f64>().ok().map(Value::from).unwrap_or(Value::Null);
    let access = lines.next()?.strip_prefix('|')?;
    let target = lines.next().unwrap_or("");
    let source = lines.next().unwrap_or("");
    let checksum = lines.next().and_then(|l| l.split_whitespace().next()).map(str::to_string);
    let rest: Vec<&str> = lines.collect();
    let tagged = |tag: &str| rest.iter().find_map(|l| l.strip_prefix(tag));
    let ty = raw & 0o170000;
    let bit = |b: u32| raw & b != 0;
    let major = u64::from_str_radix(f[14], 16).unwrap_or(0);
    let minor = u64::from_str_radix(f[15], 16).unwrap_or(0);
    let mut m = Map::new();
    m.insert("exists".into(), json!(true));
    m.insert("path".into(), json!(path));
    m.insert("mode".into(), json!(format!("{:04o}", raw & 0o7777)));
    for (k, t) in [
        ("isdir", 0o040000),
        ("ischr", 0o020000),
        ("isblk", 0o060000),
        ("isreg", 0o100000),
        ("isfifo", 0o010000),
        ("islnk", 0o120000),
        ("issock", 0o140000),
    ] {
        m.insert(k.into(), json!(ty == t));
    }
    m.insert("uid".into(), num(1));
    m.insert("gid".into(), num(2));
    if f[3] != "UNKNOWN" {
        m.insert("pw_name".into(), json!(f[3]));
    }
    if f[4] != "UNKNOWN" {
        m.insert("gr_name".into(), json!(f[4]));
    }
    m.insert("size".into(), num(5));
    m.insert("atime".into(), float(6));
    m.insert("mtime".into(), float(7));
    m.insert("ctime".into(), float(8));
    m.insert("inode".into(), num(9));
    m.insert("dev".into(), num(10));
    m.insert("nlink".into(), num(11));
    m.insert("blocks".into(), num(12));
    m.insert("block_size".into(), num(13));
    m.insert("device_type".into(), json!((major << 8) | minor));
    for (k, b) in [
        ("wusr", 0o200),
        ("rusr", 0o400),
        ("xusr", 0o100),
        ("wgrp", 0o020),
        ("rgrp", 0o040),
        ("xgrp", 0o010),
        ("woth", 0o002),
        ("roth", 0o004),
        ("xoth", 0o001),
        ("isuid", 0o4000),
        ("isgid", 0o2000),
    ] {
        m.insert(k.into(), json!(bit(b)));
    }
    m.insert("readable".into(), json!(access.contains('r')));
    m.insert("writeable".into(), json!(access.contains('w')));
    m.insert("executable".into(), json!(access.contains('x')));
    if ty == 0o120000 {
        m.insert("lnk_target".into(), json!(target));
        m.insert("lnk_source".into(), json!(source));
    }
    if let Some(c) = checksum.filter(|c| !c.is_empty()) {
        m.insert("checksum".into(), json!(c));
    }
    if let Some(out) = tagged("M:") {
        // Ansible's own parse: the text after the last ':' is `type; charset=enc`.
        let parsed = out.rsplit_once(':').and_then(|(_, r)| {
            let (ty, cs) = r.split_once(';')?;
            Some((ty.trim().to_string(), cs.split_once('=')?.1.trim().to_string()))
        });
        let (ty, cs) = parsed.unwrap_or_else(|| ("unknown".into(), "unknown".into()));
        m.insert("mimetype".into(), json!(ty));
        m.insert("charset".into(), json!(cs));
    }
    if let Some(out) = tagged("A:") {
        let mut words = out.split_whitespace();
        let (version, flags) = match (words.next(), words.next()) {
            (Some(v), Some(f)) => (json!(v), f.replace('-', "")),
            _ => (Value::Null, String::new()),
        };
        let names: Vec<&str> = flags.chars().filter_map(attribute_name).collect();
        m.insert("version".into(), version);
        m.insert("attr_flags".into(), json!(flags));
        m.insert("attributes".into(), json!(names));
    }
    Some(Value::Object(m))
}

/// The name Ansible gives an `lsattr` flag (module_utils/common/file.py's FILE_ATTRIBUTES).
pub fn attribute_name(flag: char) -> Option<&'static str> {
    ATTRIBUTES.iter().find(|(f, _)| *f == flag).map(|(_, n)| *n)
}

pub const ATTRIBUTES: &[(char, &str)] = &[
    ('A', "noatime"),
    ('a', "append"),
    ('c', "compressed"),
    ('C', "nocow"),
    ('d', "nodump"),
    ('D', "dirsync"),
    ('e', "extents"),
    ('E', "encrypted"),
    ('h', "blocksize"),
    ('i', "immutable"),
    ('I', "indexed"),
    ('j', "journalled"),
    ('N', "inline"),
    ('s', "zero"),
    ('S', "synchronous"),
    ('t', "notail"),
    ('T', "blockroot"),
    ('u', "undelete"),
    ('X', "compressedraw"),
    ('Z', "compresseddirty"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_a_link_and_nothing_read_as_ansible_reports_them() {
        let file = "81a4|0|0|root|root|1302|1.5|2.25|3|1196076|65024|1|8|512|0|0\n|rw\n\n\n\
                    3f786850e387550fdab836ed7e6dc881de23001b  -\n";
        let s = parse("/etc/x", file).expect("parsed");
        assert_eq!(s["mode"], "0644");
        assert_eq!((s["isreg"].as_bool(), s["isdir"].as_bool(), s["islnk"].as_bool()), (Some(true), Some(false), Some(false)));
        assert_eq!((s["rusr"].as_bool(), s["xusr"].as_bool(), s["roth"].as_bool()), (Some(true), Some(false), Some(true)));
        assert_eq!(s["checksum"], "3f786850e387550fdab836ed7e6dc881de23001b");
        assert_eq!((s["mtime"].as_f64(), s["pw_name"].as_str(), s["executable"].as_bool()), (Some(2.25), Some("root"), Some(false)));
        assert!(s.get("lnk_target").is_none());
        let link = "a1ff|0|0|root|root|4|1|1|1|5|6|1|0|4096|0|0\n|rw\nx\n/etc/x\n";
        let s = parse("/etc/y", link).expect("parsed");
        assert_eq!((s["islnk"].as_bool(), s["lnk_target"].as_str(), s["lnk_source"].as_str()), (Some(true), Some("x"), Some("/etc/x")));
        assert!(s.get("checksum").is_none());
        assert_eq!(parse("/nope", "absent\n"), Some(json!({"exists": false})));
        let tagged = format!("{}\nM:/t/a:b.txt: text/plain; charset=us-ascii\nA:0 ----i---e--- /t/a:b.txt\n", &file[..file.len() - 1]);
        let s = parse("/t/a:b.txt", &tagged).expect("parsed");
        assert_eq!((s["mimetype"].as_str(), s["charset"].as_str()), (Some("text/plain"), Some("us-ascii")));
        assert_eq!((s["version"].as_str(), s["attr_flags"].as_str()), (Some("0"), Some("ie")));
        assert_eq!(s["attributes"], json!(["immutable", "extents"]));
        let failed = parse("/x", &format!("{}\nM:\nA:\n", &file[..file.len() - 1])).expect("parsed");
        assert_eq!((failed["mimetype"].as_str(), failed["version"].is_null()), (Some("unknown"), true));
        assert_eq!(failed["attributes"], json!([]));
    }
}
