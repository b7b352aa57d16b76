//! `find`: the files under directories that match patterns, age, size, mode and content, as
//! Ansible's find module reports them (`files` with each one's stat, `matched`, `examined`,
//! `msg`, `skipped_paths`). Never a change.
//!
//! One remote `find -printf` lists every entry with its lstat; the walk itself is Python's
//! os.walk, rebuilt here from that listing: a directory's files, then its directories (a link
//! to a directory among them, not walked into), then each directory in turn, hidden ones
//! walked too. Content (`contains`) and checksums are a second round trip, for the entries the
//! other filters kept. The module's quirks stay: `limit` stops the path it is reached in, and
//! `examined` counts the entries of every directory walked, one level below `depth` too.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Flag, Guards, Kind, Number, OneOrMany, Outcome, StepCtx};
use crate::template::{normpath, shell_quote};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// Directories to look in (a list, or text split at commas, as Ansible's list type).
    pub paths: OneOrMany<String>,
    /// Names (globs, or regexes with `use_regex`) to keep; all when none.
    pub patterns: Option<OneOrMany<String>>,
    pub excludes: Option<OneOrMany<String>>,
    /// A regex a line must match from its start (the whole file with `read_whole_file`).
    pub contains: Option<String>,
    pub read_whole_file: Option<Flag>,
    /// file (the default), directory, link or any.
    pub file_type: Option<String>,
    /// `-?N[smhdw]`: at least (negative: at most) that old.
    pub age: Option<String>,
    /// mtime (the default), atime or ctime.
    pub age_stamp: Option<String>,
    /// `-?N[bkmgt]`: at least (negative: at most) that big.
    pub size: Option<String>,
    pub recurse: Option<Flag>,
    pub hidden: Option<Flag>,
    pub get_checksum: Option<Flag>,
    pub checksum_algorithm: Option<String>,
    pub use_regex: Option<Flag>,
    pub depth: Option<Number>,
    /// Octal permission bits; all of them (`exact_mode`, the default) or any.
    pub mode: Option<String>,
    pub exact_mode: Option<Flag>,
    pub limit: Option<Number>,
}

const ALGORITHMS: &[&str] = &["md5", "sha1", "sha224", "sha256", "sha384", "sha512"];

/// One entry as `find -printf` gave it.
#[derive(Debug, Clone)]
struct Entry {
    parent: String,
    name: String,
    /// lstat's type letter, and the type of what a link points to (`d`: a directory).
    kind: char,
    target_kind: char,
    mode: u32,
    uid: u64,
    gid: u64,
    user: String,
    group: String,
    size: u64,
    inode: u64,
    dev: u64,
    nlink: u64,
    atime: f64,
    mtime: f64,
    ctime: f64,
}

/// The fields `-printf` writes for each entry, NUL-separated.
const FORMAT: &str = r"F\0%h\0%f\0%y\0%Y\0%m\0%U\0%G\0%u\0%g\0%s\0%i\0%D\0%n\0%A@\0%T@\0%C@\0";

impl Kind for FindArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = match Resolved::from(self) {
            Ok(a) => a,
            Err(e) => return Outcome::failed(e),
        };
        let mut script = String::from("LC_ALL=C; export LC_ALL; printf 'N\\0%s\\0' \"$(date +%s.%N)\"\n");
        for p in &a.paths {
            // Ansible's path type: `~` is the login's home on the host.
            let quoted = match p.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("\"$HOME\"{}", shell_quote(rest)),
                _ => shell_quote(p),
            };
            let max = match (a.recurse, a.depth) {
                (false, _) => "-maxdepth 1 ".to_string(),
                (true, Some(d)) => format!("-maxdepth {} ", d + 1),
                (true, None) => String::new(),
            };
            script.push_str(&format!(
                "p={quoted}; if [ -d \"$p\" ]; then printf 'P\\0'; find \"$p\" -mindepth 1 {max}-printf '{FORMAT}'; else printf 'X\\0'; fi\n"
            ));
        }
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let mut o = Outcome::ok("");
        o.commands.push(script);
        let listing = parse(&out.stdout);
        let denied = denied_paths(&String::from_utf8_lossy(&out.stderr));
        let Some(listing) = listing else {
            return Outcome::failed(format!("find: unexpected output from find: {}", String::from_utf8_lossy(&out.stderr).trim()));
        };
        // The second round trip: content and checksums of the regular files the other filters keep.
        let mut walked = walk(&a, &listing, &HashMap::new(), &HashMap::new());
        let want_content = a.contains.is_some() && a.file_type == "file";
        if want_content || a.get_checksum {
            let files: Vec<String> = walked.candidates.iter().filter(|c| c.1).map(|c| c.0.clone()).collect();
            let (contents, sums) = match self.second_look(cx, &a, &files, want_content).await {
                Ok(x) => x,
                Err(o) => return o,
            };
            o.commands.extend(contents.1.clone());
            walked = walk(&a, &listing, &contents.0, &sums);
        }
        let mut skipped: Map<String, Value> = Map::new();
        for (p, e) in denied {
            skipped.insert(p.clone(), json!(format!("[Errno 13] Permission denied: '{p}'")));
            let _ = e;
        }
        for p in &walked.not_dirs {
            skipped.insert(p.clone(), json!(format!("'{p}' is not a directory")));
        }
        let msg = if !walked.not_dirs.is_empty() {
            "Not all paths examined, check warnings for details"
        } else if walked.limited {
            "Limit of matches reached"
        } else {
            "All paths examined"
        };
        o.result.insert("files".into(), Value::Array(walked.files.clone()));
        o.result.insert("matched".into(), json!(walked.files.len()));
        o.result.insert("examined".into(), json!(walked.looked));
        o.result.insert("msg".into(), json!(msg));
        o.result.insert("skipped_paths".into(), Value::Object(skipped));
        o
    }
}

type Contents = (HashMap<String, bool>, Vec<String>);

impl FindArgs {
    /// Whether each file's content matches, and each one's checksum, in one script.
    async fn second_look(
        &self,
        cx: &StepCtx<'_>,
        a: &Resolved,
        files: &[String],
        content: bool,
    ) -> Result<(Contents, HashMap<String, String>), Outcome> {
        if files.is_empty() {
            return Ok(((HashMap::new(), vec![]), HashMap::new()));
        }
        let list: Vec<String> = files.iter().map(|f| shell_quote(f)).collect();
        let grep = match (&a.contains, a.whole_file) {
            // Python's re.match on each line (anchored at its start), or re.search over the file.
            (Some(c), false) => format!("grep -qP -- {} \"$f\" 2>/dev/null", shell_quote(&format!("^(?:{c})"))),
            (Some(c), true) => format!("grep -qzP -- {} \"$f\" 2>/dev/null", shell_quote(c)),
            (None, _) => "false".into(),
        };
        let mut script = String::from("LC_ALL=C; export LC_ALL\n");
        script.push_str(&format!("for f in {}; do\n", list.join(" ")));
        if content {
            script.push_str(&format!("  if {grep}; then printf 'C\\0%s\\0' \"$f\"; fi\n"));
        }
        if a.get_checksum {
            script.push_str(&format!(
                "  s=$({algo}sum < \"$f\" 2>/dev/null) && printf 'S\\0%s\\0%s\\0' \"$f\" \"${{s%% *}}\"\n",
                algo = a.algorithm
            ));
        }
        script.push_str("done\n");
        let out = cx.sh(&script, None).await?;
        let mut matched = HashMap::new();
        let mut sums = HashMap::new();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut it = text.split('\0');
        while let Some(tag) = it.next() {
            match tag {
                "C" => {
                    matched.insert(it.next().unwrap_or_default().to_string(), true);
                }
                "S" => {
                    let f = it.next().unwrap_or_default().to_string();
                    sums.insert(f, it.next().unwrap_or_default().to_string());
                }
                _ => {}
            }
        }
        Ok(((matched, vec![script]), sums))
    }
}

/// The arguments, checked and in their final types.
struct Resolved {
    paths: Vec<String>,
    patterns: Vec<regex::Regex>,
    excludes: Vec<regex::Regex>,
    contains: Option<String>,
    whole_file: bool,
    file_type: String,
    age: Option<f64>,
    age_stamp: String,
    size: Option<i64>,
    recurse: bool,
    hidden: bool,
    get_checksum: bool,
    algorithm: String,
    depth: Option<u64>,
    mode: Option<(u32, bool)>,
    limit: Option<usize>,
}

/// Ansible's list type: a text is split at commas.
fn list(v: &Option<OneOrMany<String>>) -> Vec<String> {
    match v {
        None => vec![],
        Some(OneOrMany::One(s)) => s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
        Some(OneOrMany::Many(v)) => v.clone(),
    }
}

impl Resolved {
    fn from(a: &FindArgs) -> Result<Self, String> {
        let flag = |f: &Option<Flag>, d: bool| f.as_ref().map_or(d, Flag::get);
        let use_regex = flag(&a.use_regex, false);
        let compile = |p: &str| -> Result<regex::Regex, String> {
            if use_regex {
                regex::Regex::new(&format!("^(?:{p})")).map_err(|e| format!("find: pattern {p:?}: {e}"))
            } else {
                crate::text::fnmatch::fnmatch_regex(p).map_err(|e| format!("find: pattern {p:?}: {e}"))
            }
        };
        let mut patterns = list(&a.patterns);
        if patterns.is_empty() {
            patterns.push(if use_regex { ".*".into() } else { "*".into() });
        }
        let file_type = a.file_type.clone().unwrap_or_else(|| "file".into());
        if !["any", "directory", "file", "link"].contains(&file_type.as_str()) {
            return Err(format!("value of file_type must be one of: any, directory, file, link, got: {file_type}"));
        }
        let age_stamp = a.age_stamp.clone().unwrap_or_else(|| "mtime".into());
        if !["atime", "ctime", "mtime"].contains(&age_stamp.as_str()) {
            return Err(format!("value of age_stamp must be one of: atime, ctime, mtime, got: {age_stamp}"));
        }
        let algorithm = a.checksum_algorithm.clone().unwrap_or_else(|| "sha1".into());
        if !ALGORITHMS.contains(&algorithm.as_str()) {
            return Err(format!("value of checksum_algorithm must be one of: {}, got: {algorithm}", ALGORITHMS.join(", ")));
        }
        let unit = |text: &str, units: &[(char, i64)], what: &str| -> Result<i64, String> {
            let t = text.trim().to_lowercase();
            let re = regex::Regex::new(r"^(-?\d+)([a-z])?$").expect("a valid pattern");
            let c = re.captures(&t).ok_or_else(|| format!("failed to process {what}"))?;
            let n: i64 = c[1].parse().map_err(|_| format!("failed to process {what}"))?;
            let mul = match c.get(2) {
                None => 1,
                Some(u) => units
                    .iter()
                    .find(|(k, _)| u.as_str().starts_with(*k))
                    .map(|(_, m)| *m)
                    .ok_or_else(|| format!("failed to process {what}"))?,
            };
            Ok(n * mul)
        };
        let age = match &a.age {
            None => None,
            Some(t) => Some(unit(t, &[('s', 1), ('m', 60), ('h', 3600), ('d', 86400), ('w', 604800)], "age")? as f64),
        };
        let size = match &a.size {
            None => None,
            Some(t) => Some(unit(t, &[('b', 1), ('k', 1 << 10), ('m', 1 << 20), ('g', 1 << 30), ('t', 1 << 40)], "size")?),
        };
        let mode = match &a.mode {
            None => None,
            Some(m) if m.is_empty() => None,
            Some(m) => Some((
                u32::from_str_radix(m.trim(), 8)
                    .map_err(|_| format!("find: mode '{m}': a symbolic mode is not supported yet (write it in octal)"))?
                    & 0o7777,
                flag(&a.exact_mode, true),
            )),
        };
        let number = |n: &Option<Number>, what: &str| -> Result<Option<u64>, String> {
            n.as_ref().map(|n| n.get().map_err(|e| format!("find: {what}: {e}"))).transpose()
        };
        let limit = number(&a.limit, "limit")?;
        if limit == Some(0) {
            return Err("limit cannot be 0 (use None for unlimited)".into());
        }
        Ok(Resolved {
            paths: list(&Some(a.paths.clone())),
            patterns: patterns.iter().map(|p| compile(p)).collect::<Result<_, _>>()?,
            excludes: list(&a.excludes).iter().map(|p| compile(p)).collect::<Result<_, _>>()?,
            contains: a.contains.clone(),
            whole_file: flag(&a.read_whole_file, false),
            file_type,
            age,
            age_stamp,
            size,
            recurse: flag(&a.recurse, false),
            hidden: flag(&a.hidden, false),
            get_checksum: flag(&a.get_checksum, false),
            algorithm,
            // Python's `if params['depth']`: 0 is no limit.
            depth: number(&a.depth, "depth")?.filter(|d| *d > 0),
            mode,
            limit: limit.map(|l| l as usize),
        })
    }
}

/// The listing: the host's clock, and for each path its entries (none: not a directory).
struct Listing {
    now: f64,
    paths: Vec<Option<Vec<Entry>>>,
}

fn parse(out: &[u8]) -> Option<Listing> {
    let text = String::from_utf8_lossy(out);
    let mut it = text.split('\0').peekable();
    if it.next()? != "N" {
        return None;
    }
    let now = it.next()?.parse().unwrap_or(0.0);
    let mut paths = Vec::new();
    while let Some(tag) = it.next() {
        match tag {
            "P" => paths.push(Some(Vec::new())),
            "X" => paths.push(None),
            "F" => {
                let f: Vec<&str> = (0..16).map(|_| it.next().unwrap_or_default()).collect();
                let num = |i: usize| f[i].parse::<u64>().unwrap_or(0);
                let e = Entry {
                    parent: f[0].to_string(),
                    name: f[1].to_string(),
                    kind: f[2].chars().next().unwrap_or('f'),
                    target_kind: f[3].chars().next().unwrap_or('f'),
                    mode: u32::from_str_radix(f[4], 8).unwrap_or(0),
                    uid: num(5),
                    gid: num(6),
                    // find writes the number where there is no name; Python's module leaves it empty.
                    user: if f[7] == f[5] { String::new() } else { f[7].to_string() },
                    group: if f[8] == f[6] { String::new() } else { f[8].to_string() },
                    size: num(9),
                    inode: num(10),
                    dev: num(11),
                    nlink: num(12),
                    atime: seconds(f[13]),
                    mtime: seconds(f[14]),
                    ctime: seconds(f[15]),
                };
                paths.last_mut()?.as_mut()?.push(e);
            }
            "" => {}
            _ => return None,
        }
    }
    Some(Listing { now, paths })
}

/// `find`'s `%T@` as Python's st_mtime: seconds plus nanoseconds times 1e-9, as CPython adds them.
fn seconds(t: &str) -> f64 {
    let (s, frac) = t.split_once('.').unwrap_or((t, ""));
    let ns: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
    s.parse::<i64>().unwrap_or(0) as f64 + ns.parse::<i64>().unwrap_or(0) as f64 * 1e-9
}

/// `find: 'path': Permission denied` lines: the directories the walk could not read.
fn denied_paths(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("find: '"))
        .filter_map(|l| l.rsplit_once("': "))
        .filter(|(_, why)| *why == "Permission denied")
        .map(|(p, why)| (p.to_string(), why.to_string()))
        .collect()
}

struct Walked {
    files: Vec<Value>,
    looked: usize,
    limited: bool,
    not_dirs: Vec<String>,
    /// Regular files every filter but content keeps (path, content still to check).
    candidates: Vec<(String, bool)>,
}

/// The module's loop over os.walk, on the listing; `contents` and `sums` from the second look.
fn walk(a: &Resolved, l: &Listing, contents: &HashMap<String, bool>, sums: &HashMap<String, String>) -> Walked {
    let mut w = Walked { files: vec![], looked: 0, limited: false, not_dirs: vec![], candidates: vec![] };
    let checked = !contents.is_empty() || !sums.is_empty();
    for (npath, entries) in a.paths.iter().zip(&l.paths) {
        let Some(entries) = entries else {
            w.not_dirs.push(npath.clone());
            continue;
        };
        let mut children: HashMap<String, Vec<&Entry>> = HashMap::new();
        for e in entries {
            children.entry(normpath(&e.parent)).or_default().push(e);
        }
        let wpath = format!("{}/", npath.trim_end_matches('/'));
        let mut roots = vec![normpath(npath)];
        'walk: while let Some(root) = roots.pop() {
            let here = children.get(&root).cloned().unwrap_or_default();
            // os.walk: files (what is not a directory, a link to one aside), then directories.
            let (dirs, files): (Vec<&Entry>, Vec<&Entry>) = here.iter().partition(|e| e.target_kind == 'd');
            w.looked += here.len();
            let mut descend: Vec<String> = dirs.iter().filter(|e| e.kind == 'd').map(|e| normpath(&format!("{root}/{}", e.name))).collect();
            for e in files.iter().chain(dirs.iter()) {
                let fsname = normpath(&format!("{root}/{}", e.name));
                if let Some(max) = a.depth {
                    let depth = fsname.matches('/').count() as i64 - wpath.matches('/').count() as i64 + 1;
                    if depth > max as i64 {
                        descend.clear();
                        continue;
                    }
                }
                if e.name.starts_with('.') && !a.hidden {
                    continue;
                }
                if let Some(r) = matches(a, l.now, e, &fsname, contents, sums, checked, &mut w.candidates) {
                    w.files.push(r);
                }
                if Some(w.files.len()) == a.limit {
                    w.limited = true;
                    break;
                }
            }
            if !a.recurse || Some(w.files.len()) == a.limit {
                break 'walk;
            }
            // Topdown: the directories in their order, each one's own walk before the next.
            roots.extend(descend.into_iter().rev());
        }
    }
    w
}

#[allow(clippy::too_many_arguments)]
fn matches(
    a: &Resolved,
    now: f64,
    e: &Entry,
    fsname: &str,
    contents: &HashMap<String, bool>,
    sums: &HashMap<String, String>,
    checked: bool,
    candidates: &mut Vec<(String, bool)>,
) -> Option<Value> {
    let named = a.patterns.iter().any(|p| p.is_match(&e.name)) && !a.excludes.iter().any(|x| x.is_match(&e.name));
    let stamp = match a.age_stamp.as_str() {
        "atime" => e.atime,
        "ctime" => e.ctime,
        _ => e.mtime,
    };
    let aged = a.age.is_none_or(|age| if age >= 0.0 { now - stamp >= age } else { now - stamp <= -age });
    let sized = a.size.is_none_or(|s| if s >= 0 { e.size as i64 >= s } else { e.size as i64 <= -s });
    let moded = a.mode.is_none_or(|(m, exact)| if exact { e.mode & 0o7777 == m } else { e.mode & m != 0 });
    let regular = e.kind == 'f';
    let keep = named
        && aged
        && moded
        && match a.file_type.as_str() {
            "any" => !regular || sized,
            "directory" => e.kind == 'd',
            "link" => e.kind == 'l',
            _ => regular && sized,
        };
    if !keep {
        return None;
    }
    if regular && (a.file_type == "file" || a.file_type == "any") {
        let content = a.file_type == "file" && a.contains.is_some();
        if !checked {
            candidates.push((fsname.to_string(), true));
        }
        if content && !contents.get(fsname).copied().unwrap_or(false) {
            return None;
        }
    }
    let mut r = statinfo(e, fsname);
    if regular && a.get_checksum && a.file_type != "directory" && a.file_type != "link" {
        r.insert("checksum".into(), json!(sums.get(fsname).cloned().unwrap_or_default()));
    }
    Some(Value::Object(r))
}

/// The module's statinfo of an entry.
fn statinfo(e: &Entry, fsname: &str) -> Map<String, Value> {
    let m = e.mode;
    let bit = |b: u32| json!(m & b != 0);
    let mut r = Map::new();
    r.insert("path".into(), json!(fsname));
    r.insert("mode".into(), json!(format!("{:04o}", m & 0o7777)));
    for (k, t) in [("isdir", 'd'), ("ischr", 'c'), ("isblk", 'b'), ("isreg", 'f'), ("isfifo", 'p'), ("islnk", 'l'), ("issock", 's')] {
        r.insert(k.into(), json!(e.kind == t));
    }
    r.insert("uid".into(), json!(e.uid));
    r.insert("gid".into(), json!(e.gid));
    r.insert("size".into(), json!(e.size));
    r.insert("inode".into(), json!(e.inode));
    r.insert("dev".into(), json!(e.dev));
    r.insert("nlink".into(), json!(e.nlink));
    r.insert("atime".into(), json!(e.atime));
    r.insert("mtime".into(), json!(e.mtime));
    r.insert("ctime".into(), json!(e.ctime));
    r.insert("gr_name".into(), json!(e.group));
    r.insert("pw_name".into(), json!(e.user));
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
        r.insert(k.into(), bit(b));
    }
    r
}

/// What a `find` result looks like before the step runs (the plan's template checks).
pub fn placeholder() -> Value {
    let e = Entry {
        parent: "/".into(),
        name: "x".into(),
        kind: 'f',
        target_kind: 'f',
        mode: 0o644,
        uid: 0,
        gid: 0,
        user: "root".into(),
        group: "root".into(),
        size: 0,
        inode: 0,
        dev: 0,
        nlink: 1,
        atime: 0.0,
        mtime: 0.0,
        ctime: 0.0,
    };
    let mut f = statinfo(&e, "/x");
    f.insert("checksum".into(), json!(""));
    json!({"files": [f], "matched": 1, "examined": 1, "msg": "", "skipped_paths": {}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(parent: &str, name: &str, kind: char, target: char) -> String {
        format!("F\0{parent}\0{name}\0{kind}\0{target}\0644\00\00\0root\0root\05\01\02\01\01700000000.5000000000\01700000000.0000000000\01700000000.0000000000\0")
    }

    fn found(args: serde_json::Value, listing: &str) -> (Vec<String>, usize, bool) {
        let a: FindArgs = serde_json::from_value(args).unwrap();
        let r = Resolved::from(&a).unwrap();
        let l = parse(listing.as_bytes()).unwrap();
        let w = walk(&r, &l, &HashMap::new(), &HashMap::new());
        (w.files.iter().map(|f| f["path"].as_str().unwrap().to_string()).collect(), w.looked, w.limited)
    }

    #[test]
    fn the_walk_is_pythons_os_walk() {
        // A directory listed before its sibling file, a link to a directory, a hidden directory.
        let listing = format!(
            "N\01700000100.0\0P\0{}{}{}{}{}{}",
            entry("/d", "sub", 'd', 'd'),
            entry("/d/sub", "deep.conf", 'f', 'f'),
            entry("/d", "a.conf", 'f', 'f'),
            entry("/d", "link", 'l', 'd'),
            entry("/d", ".hid", 'd', 'd'),
            entry("/d/.hid", "h.conf", 'f', 'f'),
        );
        let flat = found(json!({"paths": "/d", "patterns": "*.conf"}), &listing);
        assert_eq!(flat, (vec!["/d/a.conf".to_string()], 4, false));
        let deep = found(json!({"paths": ["/d/"], "patterns": ["*.conf"], "recurse": true}), &listing);
        assert_eq!(deep.0, ["/d/a.conf", "/d/sub/deep.conf", "/d/.hid/h.conf"]);
        assert_eq!(deep.1, 6);
        let any = found(json!({"paths": "/d", "file_type": "any", "recurse": true, "depth": 1}), &listing);
        assert_eq!(any.0, ["/d/a.conf", "/d/sub", "/d/link"]);
        let limited = found(json!({"paths": "/d", "recurse": true, "limit": 1, "patterns": "*.conf"}), &listing);
        assert_eq!(limited, (vec!["/d/a.conf".to_string()], 4, true));
        let old = found(json!({"paths": "/d", "age": "1m", "recurse": true}), &listing);
        assert_eq!(old.0, ["/d/a.conf", "/d/sub/deep.conf", "/d/.hid/h.conf"]);
        let young = found(json!({"paths": "/d", "age": "-1m"}), &listing);
        assert!(young.0.is_empty());
    }

    #[test]
    fn arguments_are_refused_as_the_module_refuses_them() {
        let err = |v: serde_json::Value| Resolved::from(&serde_json::from_value::<FindArgs>(v).unwrap()).err().unwrap();
        assert_eq!(err(json!({"paths": "/d", "age": "3y"})), "failed to process age");
        assert_eq!(err(json!({"paths": "/d", "file_type": "dir"})), "value of file_type must be one of: any, directory, file, link, got: dir");
        assert_eq!(err(json!({"paths": "/d", "limit": 0})), "limit cannot be 0 (use None for unlimited)");
        assert_eq!(
            err(json!({"paths": "/d", "mode": "u+x"})),
            "find: mode 'u+x': a symbolic mode is not supported yet (write it in octal)"
        );
    }
}
