//! `file`: a directory, a symbolic or hard link, a touched or existing file, or nothing at a
//! path; mode (octal or symbolic), owner, times, recursively for a directory. One remote script
//! checks and (unless in check mode) applies, and says what it changed; when SFTP already shows
//! the path as wanted, no script runs at all.
//!
//! Native and Ansible semantics differ in three places, each behind an argument the Ansible
//! front-end always sets: `force` (unset: a link replaces a file in its way and may dangle, as
//! copctl always did; set: Ansible's rules), `follow` (unset: the path itself) and the times of
//! `touch` (unset: preserved, so native touch only creates; Ansible's front-end says `now`).

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, Mode, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    File,
    Directory,
    Absent,
    Link,
    Hard,
    Touch,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    pub path: String,
    pub state: Option<FileState>,
    pub src: Option<String>,
    pub mode: Option<Mode>,
    /// A symbolic mode (`u+rwx,o=rX`), applied as Ansible applies one: a clause naming nobody
    /// is for all (`+x` is `a+x`), the umask plays no part.
    pub symbolic_mode: Option<String>,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// Ansible's `force`: replace a file or empty directory in a link's way, link to a missing
    /// source. Unset: copctl's native rule (replace a file, never a directory; a link may dangle).
    pub force: Option<bool>,
    /// Ansible's `follow`: a link at the path stands for what it points at.
    pub follow: Option<bool>,
    /// Mode and owner for everything under a directory too.
    pub recurse: Option<bool>,
    /// `now`, `preserve` (the default) or a time in `modification_time_format`.
    pub modification_time: Option<String>,
    /// Python strptime format (Ansible's default `%Y%m%d%H%M.%S`).
    pub modification_time_format: Option<String>,
    pub access_time: Option<String>,
    pub access_time_format: Option<String>,
    /// Ansible's `attributes` (`chattr` flags): `+i`, `-i`, or `i`/`=i` for exactly those, set
    /// when `lsattr` shows other flags (as Ansible compares them).
    pub attributes: Option<String>,
    /// Ansible's `_diff_peek`: only say whether the file looks binary (`appears_binary`).
    pub diff_peek: Option<bool>,
    /// `src` given without `state` in an Ansible playbook: only an existing link may be meant
    /// (Ansible takes the path's own state, and `src` needs link or hard).
    pub src_without_state: Option<bool>,
}

/// A time to set: the host's clock now, or a local time (`YYYY-MM-DD HH:MM:SS`, read by the
/// host's `date` in its own time zone as Ansible's `time.mktime` does).
#[derive(Debug, Clone, PartialEq)]
enum Time {
    Now,
    At(String),
}

/// Ansible's `get_timestamp_for_time`: `preserve` is no change.
fn time_spec(value: Option<&str>, format: Option<&str>) -> Result<Option<Time>, String> {
    let format = format.unwrap_or("%Y%m%d%H%M.%S");
    match value {
        None | Some("preserve") => Ok(None),
        Some("now") => Ok(Some(Time::Now)),
        Some(v) => chrono::NaiveDateTime::parse_from_str(v, format)
            .map(|t| Some(Time::At(t.format("%Y-%m-%d %H:%M:%S").to_string())))
            .map_err(|e| format!("Error while obtaining timestamp for time {v} using format {format}: {e}")),
    }
}

/// A symbolic mode as `chmod` takes it with Ansible's meaning; `None`: not a symbolic mode.
pub fn symbolic_for_chmod(mode: &str) -> Option<String> {
    let mut out = vec![];
    for clause in mode.split(',') {
        let who_end = clause.find(['+', '-', '='])?;
        let (who, rest) = clause.split_at(who_end);
        if !who.chars().all(|c| "ugoa".contains(c))
            || !rest.chars().all(|c| "+-=rwxXstugo".contains(c))
            || rest.contains(['u', 'g', 'o']) && rest.chars().filter(|c| "+-=".contains(*c)).count() != 1
        {
            return None;
        }
        out.push(if who.is_empty() { format!("a{rest}") } else { clause.to_string() });
    }
    Some(out.join(","))
}

impl FileArgs {
    /// Only what the SFTP fast path can judge (no force, follow, times, recursion).
    /// Nothing but a state and a mode (`follow` aside: it changes nothing where the path is
    /// not a link, which SFTP's `lstat` tells; `force: false` is the default, Ansible's
    /// translation spells it out).
    fn plain(&self) -> bool {
        self.symbolic_mode.is_none()
            && self.force != Some(true)
            && self.recurse != Some(true)
            && self.modification_time.as_deref().is_none_or(|t| t == "preserve")
            && self.access_time.as_deref().is_none_or(|t| t == "preserve")
            && self.attributes.is_none()
    }
}

impl Kind for FileArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        // A leading `~` is the remote user's home, as the module's `path` type has it.
        let a = match super::home::with_home(cx, self, &self.path, |a, p| a.path = p).await {
            Ok(a) => a,
            Err(o) => return o,
        };
        let a: &Self = &a;
        let mode = match a.mode.as_ref().map(Mode::bits).transpose() {
            Ok(m) => m,
            Err(e) => return Outcome::failed(e.to_string()),
        };
        let symbolic = match a.symbolic_mode.as_deref().map(|m| (m, symbolic_for_chmod(m))) {
            None => None,
            Some((_, Some(s))) => Some(s),
            Some((m, None)) => return Outcome::failed(format!("mode '{m}' is neither octal nor a symbolic mode")),
        };
        let times = match (
            time_spec(a.modification_time.as_deref(), a.modification_time_format.as_deref()),
            time_spec(a.access_time.as_deref(), a.access_time_format.as_deref()),
        ) {
            (Ok(m), Ok(t)) => (m, t),
            (Err(e), _) | (_, Err(e)) => return Outcome::failed(e),
        };
        if a.diff_peek == Some(true) {
            return diff_peek(cx, &a.path).await;
        }
        let state = a.state.unwrap_or(if a.src.is_some() { FileState::Link } else { FileState::File });
        if let Some(o) = by_sftp(cx, a, state, mode).await {
            return o;
        }
        let s = match script(cx.check, a, state, mode, symbolic.as_deref(), &times) {
            Ok(s) => s,
            Err(e) => return Outcome::failed(e),
        };
        let out = match cx.sh(&s, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let changes = super::reported_changes(&out);
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let touched_dir = if a.state == Some(FileState::Touch) {
            matches!(super::transfer::stat(cx, &a.path, false).await, Ok(Some(st)) if st.kind == "directory")
        } else {
            false
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut o = finish(a, changes, touched_dir);
        if cx.diff {
            o.result.insert("diff".into(), ansible_diff(&a.path, state, &stdout));
        }
        o
    }
}

/// What SFTP alone settles, no script run: a path already as wanted, or a directory made where
/// its parent is. `None`: the script decides.
async fn by_sftp(cx: &StepCtx<'_>, a: &FileArgs, state: FileState, mode: Option<u32>) -> Option<Outcome> {
    // An Ansible touch (it follows links) changes the times every run: the script's.
    let touch = state == FileState::Touch && a.follow == Some(true);
    let plain = a.plain() && state != FileState::Hard && !touch && a.owner.is_none() && a.group.is_none();
    let seen = match plain {
        true => cx.conn.lstat(&a.path).await,
        false => None,
    };
    // A link to follow (Ansible's file module follows by default) is the script's.
    let seen = seen.filter(|s| {
        a.follow != Some(true) || !matches!(s, Ok(Some(i)) if i.kind == crate::transport::PathKind::Link)
    });
    if let Some(Ok(info)) = &seen
        && already_there(a, state, mode, info.as_ref())
    {
        return Some(Outcome::ok(""));
    }
    // A directory not there yet whose parent is: made over SFTP, no process on the host (a
    // first run's directories cost a script `mkdir`, `dirname` and `stat` each). Anything
    // SFTP refuses (no parent, something in the way) goes to the script, which says why.
    if state == FileState::Directory
        && matches!(seen, Some(Ok(None)))
        && !cx.check
        && !cx.diff
        && let Some(modes_set) = make_dirs(cx, &a.path, mode).await
    {
        // As the script reports it: created once, then the mode of each directory it set.
        let changes = std::iter::once("created").chain(std::iter::repeat_n("mode", modes_set));
        return Some(finish(a, changes.map(str::to_string).collect(), false));
    }
    None
}

/// The remote script that checks the path and (unless `check`) applies what differs, saying
/// what it changed. `Err`: what no script can apply.
fn script(
    check: bool,
    a: &FileArgs,
    state: FileState,
    mode: Option<u32>,
    symbolic: Option<&str>,
    times: &(Option<Time>, Option<Time>),
) -> Result<String, &'static str> {
    let p = shell_quote(&a.path);
    let follow = a.follow == Some(true);
    // `do_` runs a change (or only records it in check mode); CHANGED lines are the report.
    let mut s = format!(
        "set -e; CHECK={}; p={p}; do_() {{ echo \"CHANGED $1\"; [ $CHECK = 1 ] || eval \"$2\"; }}\n\
         fail() {{ echo \"$1\" >&2; exit 3; }}\n",
        check as u8
    );
    s.push_str(&attrs_function(mode, symbolic, a.owner.as_deref(), a.group.as_deref()));
    s.push_str(&chattr_function(a.attributes.as_deref()));
    s.push_str(&times_function(times));
    if follow && matches!(state, FileState::File | FileState::Directory | FileState::Touch) {
        s.push_str("if [ -L \"$p\" ] && [ -e \"$p\" ]; then p=$(readlink -f -- \"$p\"); fi\n");
    }
    // What Ansible's `initial_diff` records: the state found (after following), as DIFF lines.
    s.push_str(
        "note() { printf 'DIFF\\t%s\\t%s\\t%s\\n' \"$1\" \"$2\" \"$3\"; }\n\
         prev=absent; if [ -L \"$p\" ]; then prev=link; elif [ -d \"$p\" ]; then prev=directory; \
         elif [ -e \"$p\" ]; then prev=file; [ \"$(stat -c %h -- \"$p\")\" -gt 1 ] && prev=hard; fi; note state \"$prev\" ''\n",
    );
    if state == FileState::Absent {
        s.push_str(
            "if [ $prev = directory ]; then find \"$p\" -mindepth 1 -type d | while IFS= read -r d; do note dir \"$d\" ''; done; \
             find \"$p\" -mindepth 1 ! -type d | while IFS= read -r d; do note file \"$d\" ''; done; fi\n",
        );
    }
    s.push_str(&state_script(a, state)?);
    match state {
        FileState::Absent => {}
        // The link's own owner; its mode is its target's, and only when following.
        FileState::Link => {
            s.push_str("if [ -L \"$p\" ]; then LINKATTRS=1; attrs \"$p\"; LINKATTRS=0; fi\n");
            if follow && (mode.is_some() || symbolic.is_some()) {
                s.push_str("if [ -e \"$p\" ]; then p=$(readlink -f -- \"$p\"); MODEONLY=1; attrs \"$p\"; MODEONLY=0; fi\n");
            }
        }
        _ => {
            s.push_str("attrs \"$p\"; chattrs \"$p\"; settimes \"$p\"\n");
            if a.recurse == Some(true) {
                s.push_str(
                    "if [ -d \"$p\" ]; then find \"$p\" -mindepth 1 | while IFS= read -r d; do attrs \"$d\"; settimes \"$d\"; done; fi\n",
                );
            }
        }
    }
    Ok(s)
}

/// The script's part that makes the path the state wanted (or fails saying why not).
fn state_script(a: &FileArgs, state: FileState) -> Result<String, &'static str> {
    let q = shell_quote;
    let force = a.force == Some(true);
    let mut s = String::new();
    let created_dirs = "NEW=; c=$p; while [ ! -d \"$c\" ] && [ ! -L \"$c\" ]; do NEW=\"$c\n$NEW\"; c=$(dirname -- \"$c\"); done\n";
    match state {
        FileState::Absent => {
            s.push_str("if [ -e \"$p\" ] || [ -L \"$p\" ]; then do_ removed 'rm -rf -- \"$p\"'; fi\n");
        }
        FileState::Directory => {
            s.push_str(
                "if [ -L \"$p\" ] || { [ -e \"$p\" ] && [ ! -d \"$p\" ]; }; then \
                 k=file; [ -L \"$p\" ] && k=link; fail \"$p already exists as a $k\"; fi\n",
            );
            // Ansible gives every directory it creates the mode and owner, not the last only.
            s.push_str(created_dirs);
            s.push_str("[ -d \"$p\" ] || do_ created 'mkdir -p -- \"$p\"'\n");
            s.push_str("printf '%s' \"$NEW\" | while IFS= read -r d; do [ \"$d\" = \"$p\" ] || attrs \"$d\"; done\n");
        }
        FileState::Touch => {
            // A file touch made goes again when its attributes cannot be set, as Ansible
            // removes it then.
            s.push_str(
                "trap 'rc=$?; [ $rc = 0 ] || [ \"${TOUCHED:-0}\" = 0 ] || rm -f -- \"$p\"; exit $rc' EXIT\n\
                 if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then :; else [ -e \"$p\" ] || { do_ created ': > \"$p\"'; TOUCHED=$((1-CHECK)); }; fi\n",
            );
        }
        FileState::File => {
            s.push_str("if [ ! -e \"$p\" ] && [ ! -L \"$p\" ]; then fail \"file ($p) is absent, cannot continue\"; fi\n");
            // Without a state, the path's own kind is the state (Ansible's rule).
            if a.state.is_some() {
                s.push_str("if [ -d \"$p\" ]; then fail \"file ($p) is directory, cannot continue\"; fi\n");
            }
        }
        FileState::Link => s.push_str(&link_script(a, force)),
        FileState::Hard => {
            let Some(src) = &a.src else { return Err("src is required for creating new hardlinks") };
            s.push_str(&format!(
                "t={}; FORCE={}; [ -e \"$t\" ] || fail 'src does not exist'\n\
                 if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then p=\"${{p%/}}/$(basename -- \"$t\")\"; fi\n\
                 same() {{ [ \"$(stat -c %d:%i -- \"$p\")\" = \"$(stat -c %d:%i -- \"$t\")\" ]; }}\n\
                 if [ -L \"$p\" ]; then do_ linked 'ln -fT -- \"$t\" \"$p\"'\n\
                 elif [ -d \"$p\" ]; then same || fail 'Cannot link: different hard link exists at destination'\n\
                 elif [ -e \"$p\" ]; then same || {{ \
                 if [ $FORCE = 0 ]; then [ \"$(stat -c %h -- \"$p\")\" -gt 1 ] && fail 'Cannot link, different hard link exists at destination'; \
                 fail 'Cannot link, file exists at destination'; fi; do_ linked 'ln -fT -- \"$t\" \"$p\"'; }}\n\
                 else do_ linked 'ln -T -- \"$t\" \"$p\"'; fi\n",
                q(src),
                force as u8
            ));
        }
    }
    Ok(s)
}

/// The script's part that makes the path a symbolic link: to `src`, or the link already there.
fn link_script(a: &FileArgs, force: bool) -> String {
    let q = shell_quote;
    let mut s = String::new();
    match &a.src {
        Some(src) => s.push_str(&format!("t={}; FORCE={}\n", q(src), force as u8)),
        // Without src an existing link stays as it is (only its attributes are
        // set), as Ansible's ensure_symlink keeps it; nothing else can be linked.
        None => s.push_str(
            "if [ -L \"$p\" ]; then t=$(readlink -- \"$p\"); FORCE=1; \
             else fail 'src is required for creating new symlinks'; fi\n",
        ),
    }
    if a.src_without_state == Some(true) {
        s.push_str(
            "if [ $prev = hard ]; then fail \"$p is a hard link: give state: hard with src\"; \
             elif [ $prev != link ]; then fail \"src option requires state to be 'link' or 'hard'\"; fi\n",
        );
    }
    if a.force.is_none() {
        s.push_str(
            "if [ \"$(readlink \"$p\" 2>/dev/null)\" != \"$t\" ]; then \
             if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then fail \"$p is a directory\"; fi; \
             do_ linked 'ln -sfn -- \"$t\" \"$p\"'; fi\n",
        );
    } else {
        s.push_str(
            "case \"$t\" in /*) abs=$t;; *) abs=$(dirname -- \"$p\")/$t;; esac\n\
             if [ $FORCE = 0 ] && [ ! -e \"$abs\" ]; then \
             fail \"src file does not exist, use \\\"force=yes\\\" if you really want to create the link: $abs\"; fi\n\
             if [ -L \"$p\" ]; then old=$(readlink -- \"$p\"); [ \"$old\" = \"$t\" ] || { note src \"$old\" \"$t\"; do_ linked 'ln -sfnT -- \"$t\" \"$p\"'; }\n\
             elif [ -d \"$p\" ]; then \
             [ $FORCE = 1 ] || fail \"refusing to convert from directory to symlink for $p\"; \
             [ -z \"$(ls -A -- \"$p\")\" ] || fail \"the directory $p is not empty, refusing to convert it\"; \
             do_ linked 'rmdir -- \"$p\" && ln -s -- \"$t\" \"$p\"'\n\
             elif [ -e \"$p\" ]; then \
             if [ $FORCE = 0 ]; then [ \"$(stat -c %h -- \"$p\")\" -gt 1 ] && fail 'Cannot link because a hard link exists at destination'; \
             fail 'Cannot link because a file exists at destination'; fi; \
             do_ linked 'ln -sfT -- \"$t\" \"$p\"'\n\
             else do_ linked 'ln -s -- \"$t\" \"$p\"'; fi\n",
        );
    }
    s
}

/// `mkdir -p` over SFTP, each directory it makes given `mode` (as Ansible's `ensure_directory`
/// gives every directory it creates the mode): how many needed their mode set, or `None` where
/// SFTP cannot (become, an error: the script then makes what is left, and says what failed).
/// Parents are made only below one that exists, at most 64 levels.
async fn make_dirs(cx: &StepCtx<'_>, path: &str, mode: Option<u32>) -> Option<usize> {
    let mut missing = vec![path.to_string()];
    loop {
        let top = missing.last().expect("never empty");
        match cx.conn.mkdir(top, mode).await? {
            Ok(Some(set)) => {
                let mut n = set as usize;
                missing.pop();
                while let Some(p) = missing.pop() {
                    n += cx.conn.mkdir(&p, mode).await?.ok()?? as usize;
                }
                return Some(n);
            }
            Ok(None) => {
                let parent = std::path::Path::new(top.trim_end_matches('/')).parent()?.to_str()?;
                if parent.is_empty() || parent == "/" || missing.len() >= 64 {
                    return None;
                }
                missing.push(parent.to_string());
            }
            Err(_) => return None,
        }
    }
}

/// The step's outcome from the changes made: Ansible's `path`, `state` (what the path is now:
/// `touched_dir` says a touch found a directory) and, for links and touch, `dest`.
fn finish(a: &FileArgs, changes: Vec<String>, touched_dir: bool) -> Outcome {
    let mut o =
        if changes.is_empty() { Outcome::ok("") } else { Outcome::changed(format!("{}: {}", a.path, changes.join(", "))) };
    o.result.insert("path".into(), serde_json::json!(a.path));
    if let Some(asked) = a.state {
        let now = match asked {
            FileState::File => "file",
            FileState::Directory => "directory",
            FileState::Absent => "absent",
            FileState::Link => "link",
            FileState::Hard => "hard",
            FileState::Touch if touched_dir => "directory",
            FileState::Touch => "file",
        };
        o.result.insert("state".into(), serde_json::json!(now));
        if matches!(asked, FileState::Link | FileState::Hard | FileState::Touch) {
            o.result.insert("dest".into(), serde_json::json!(a.path));
        }
    }
    o
}

/// The module's `diff` result from the script's DIFF lines: path, the state found when it is
/// not the one wanted (with what a removed directory held), link target, mode and times.
fn ansible_diff(path: &str, state: FileState, stdout: &str) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let (mut before, mut after) = (Map::new(), Map::new());
    before.insert("path".into(), json!(path));
    after.insert("path".into(), json!(path));
    let want = serde_json::to_value(state).unwrap_or_default();
    let (mut dirs, mut files) = (vec![], vec![]);
    for l in stdout.lines().filter_map(|l| l.strip_prefix("DIFF\t")) {
        let mut f = l.splitn(3, '\t');
        let (k, b, a) = (f.next().unwrap_or(""), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let num = |t: &str| t.parse::<f64>().map(Value::from).unwrap_or_else(|_| json!(t));
        match k {
            "state" if json!(b) != want => {
                before.insert("state".into(), json!(b));
                after.insert("state".into(), want.clone());
            }
            "dir" => dirs.push(b.to_string()),
            "file" => files.push(b.to_string()),
            "mtime" | "atime" => {
                before.insert(k.into(), num(b));
                after.insert(k.into(), num(a));
            }
            "src" | "mode" => {
                before.insert(k.into(), json!(b));
                after.insert(k.into(), json!(a));
            }
            _ => {}
        }
    }
    if before.get("state") == Some(&json!("directory")) && state == FileState::Absent {
        before.insert("path_content".into(), json!({"directories": dirs, "files": files}));
    }
    json!({"before": before, "after": after})
}

/// `attrs PATH`: mode and owner made what the step says. A link gets its owner only (`chown
/// -h`; LINKATTRS=1), MODEONLY=1 its mode only.
fn attrs_function(mode: Option<u32>, symbolic: Option<&str>, owner: Option<&str>, group: Option<&str>) -> String {
    let mut f = String::from(
        "attrs() { q=$1; [ -e \"$q\" ] || [ -L \"$q\" ] || return 0; islink=0; [ -L \"$q\" ] && islink=1\n",
    );
    let mode_guard = "if [ \"${LINKATTRS:-0}\" = 0 ] && { [ $islink = 0 ] || [ \"${MODEONLY:-0}\" = 1 ]; }; then ";
    if let Some(m) = mode {
        f.push_str(&format!("{mode_guard}cur=$(stat -L -c %a -- \"$q\"); [ \"$cur\" = {m:o} ] || {{ note mode \"0$cur\" 0{m:o}; do_ mode 'chmod {m:o} -- \"$q\"'; }}; fi\n"));
    }
    if let Some(sym) = symbolic {
        // What chmod makes of the current mode, worked out on a scratch copy of the same kind
        // (so that X and check mode are right) before touching the path.
        f.push_str(&format!(
            "{mode_guard}cur=$(stat -L -c %a -- \"$q\"); sd=$(mktemp -d); if [ -d \"$q\" ]; then mkdir \"$sd/x\"; else : > \"$sd/x\"; fi; \
             chmod \"$cur\" \"$sd/x\"; chmod {s} \"$sd/x\"; want=$(stat -c %a \"$sd/x\"); rm -rf \"$sd\"; \
             [ \"$cur\" = \"$want\" ] || {{ note mode \"0$cur\" \"0$want\"; do_ mode 'chmod {s} -- \"$q\"'; }}; fi\n",
            s = shell_quote(sym)
        ));
    }
    if owner.is_some() || group.is_some() {
        f.push_str(&format!(
            "if [ \"${{MODEONLY:-0}}\" = 0 ]; then h=; [ $islink = 1 ] && h=-h; \
             cur=$(stat -c '%U %G' -- \"$q\" 2>/dev/null || true); o={}; g={}; \
             [ -z \"$o\" ] || [ \"${{cur% *}}\" = \"$o\" ] || [ \"$(stat -c %u -- \"$q\")\" = \"$o\" ] || do_ owner 'chown $h -- \"$o\" \"$q\"'; \
             [ -z \"$g\" ] || [ \"${{cur#* }}\" = \"$g\" ] || [ \"$(stat -c %g -- \"$q\")\" = \"$g\" ] || do_ group 'chgrp $h -- \"$g\" \"$q\"'; fi\n",
            shell_quote(owner.unwrap_or_default()),
            shell_quote(group.unwrap_or_default())
        ));
    }
    f.push_str(":\n}\n");
    f
}

/// `chattrs PATH`: Ansible's `set_attributes_if_different`: `chattr` when `lsattr -d` shows
/// other flags than those given, and always to remove one.
fn chattr_function(attributes: Option<&str>) -> String {
    let Some(attrs) = attributes else { return "chattrs() { :; }\n".into() };
    let (op, flags) = match attrs.chars().next() {
        Some(c @ ('+' | '-')) => (c, &attrs[1..]),
        _ => ('=', attrs),
    };
    if flags.is_empty() {
        return "chattrs() { :; }\n".into();
    }
    format!(
        "chattrs() {{ q=$1; [ -e \"$q\" ] || return 0; [ -L \"$q\" ] && return 0; \
         ex=$(lsattr -d -- \"$q\" 2>/dev/null | cut -d' ' -f1 | tr -d -); \
         if [ \"$ex\" != {f} ] || [ {op} = - ]; then do_ attributes 'chattr {op}'{f}' -- \"$q\"'; fi; }}\n",
        f = shell_quote(flags),
    )
}

/// Whether the file's first 8 KiB hold a NUL byte (`execute_diff_peek`); an unreadable file is
/// text.
async fn diff_peek(cx: &StepCtx<'_>, path: &str) -> Outcome {
    let script = format!(
        "p={}; n=$(head -c 8192 -- \"$p\" 2>/dev/null | wc -c); t=$(head -c 8192 -- \"$p\" 2>/dev/null | tr -d '\\000' | wc -c); \
         [ \"$n\" = \"$t\" ] && echo text || echo binary",
        shell_quote(path)
    );
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let mut o = Outcome::ok("");
    o.result.insert("path".into(), serde_json::json!(path));
    o.result.insert("appears_binary".into(), serde_json::json!(String::from_utf8_lossy(&out.stdout).trim() == "binary"));
    o
}

/// `settimes PATH`: Ansible's `update_timestamp_for_file`: `now` always changes; a given time only
/// when the file's (to the nanosecond) differs.
fn times_function(times: &(Option<Time>, Option<Time>)) -> String {
    let mut f = String::from("settimes() { q=$1; [ -e \"$q\" ] || return 0\n");
    for (t, flag, fmt, what) in [(&times.0, "-m", "%.9Y", "mtime"), (&times.1, "-a", "%.9X", "atime")] {
        match t {
            None => {}
            Some(Time::Now) => f.push_str(&format!(
                "note {what} \"$(stat -c {fmt} -- \"$q\")\" \"$(date +%s.%N)\"; do_ {what} 'touch {flag} -- \"$q\"'\n"
            )),
            Some(Time::At(local)) => f.push_str(&format!(
                "w=$(date -d {l} +%s) || fail {bad}; c=$(stat -c {fmt} -- \"$q\"); [ \"$c\" = \"$w.000000000\" ] || note {what} \"$c\" \"$w\"; [ \"$c\" = \"$w.000000000\" ] || do_ {what} \"touch {flag} -d @$w -- \\\"\\$q\\\"\"\n",
                l = shell_quote(local),
                bad = shell_quote(&format!("cannot read the time {local}")),
            )),
        }
    }
    f.push_str(":\n}\n");
    f
}

/// Whether SFTP's lstat shows the path already as the step wants it (the common re-run case),
/// so no script needs to run. Anything it cannot tell goes to the script.
fn already_there(a: &FileArgs, state: FileState, mode: Option<u32>, info: Option<&crate::transport::PathInfo>) -> bool {
    use crate::transport::PathKind;
    let mode_ok = |i: &crate::transport::PathInfo| mode.is_none_or(|m| i.mode == m);
    match (state, info) {
        (FileState::Absent, None) => true,
        (FileState::Directory, Some(i)) => i.kind == PathKind::Directory && mode_ok(i),
        (FileState::Touch | FileState::File, Some(i)) => i.kind == PathKind::File && mode_ok(i),
        (FileState::Link, Some(i)) => i.kind == PathKind::Link && i.link.as_deref() == a.src.as_deref(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes_mean_all_when_they_name_nobody() {
        assert_eq!(symbolic_for_chmod("u+rwx").as_deref(), Some("u+rwx"));
        assert_eq!(symbolic_for_chmod("o=rwXt").as_deref(), Some("o=rwXt"));
        assert_eq!(symbolic_for_chmod("+x,g-w").as_deref(), Some("a+x,g-w"));
        assert_eq!(symbolic_for_chmod("u=rw,g=u").as_deref(), Some("u=rw,g=u"));
        assert_eq!(symbolic_for_chmod("0644"), None);
        assert_eq!(symbolic_for_chmod("preserve"), None);
        assert_eq!(symbolic_for_chmod("u+q"), None);
    }

    #[test]
    fn the_diff_is_ansibles_initial_diff_with_what_changed() {
        let out = "DIFF\tstate\tdirectory\t\nDIFF\tdir\t/d/s\t\nDIFF\tfile\t/d/s/f\t\nCHANGED removed\n";
        let d = ansible_diff("/d", FileState::Absent, out);
        assert_eq!(d["before"]["state"], "directory");
        assert_eq!(d["after"]["state"], "absent");
        assert_eq!(d["before"]["path_content"], serde_json::json!({"directories": ["/d/s"], "files": ["/d/s/f"]}));
        let out = "DIFF\tstate\tlink\t\nDIFF\tsrc\t/a/f\tf\n";
        let d = ansible_diff("/a/l", FileState::Link, out);
        assert!(d["before"].get("state").is_none());
        assert_eq!((d["before"]["src"].as_str(), d["after"]["src"].as_str()), (Some("/a/f"), Some("f")));
        let d = ansible_diff("/a/f", FileState::File, "DIFF\tstate\tfile\t\nDIFF\tmtime\t1.5\t2\n");
        assert_eq!((d["after"].as_object().map(|m| m.len()), d["after"]["mtime"].as_f64()), (Some(2), Some(2.0)));
    }

    #[test]
    fn times_read_as_python_strptime_reads_them() {
        assert_eq!(time_spec(None, None), Ok(None));
        assert_eq!(time_spec(Some("preserve"), None), Ok(None));
        assert_eq!(time_spec(Some("now"), None), Ok(Some(Time::Now)));
        assert_eq!(time_spec(Some("202001011200.30"), None), Ok(Some(Time::At("2020-01-01 12:00:30".into()))));
        assert_eq!(
            time_spec(Some("2016-01-02 03:04:05"), Some("%Y-%m-%d %H:%M:%S")),
            Ok(Some(Time::At("2016-01-02 03:04:05".into())))
        );
        assert!(time_spec(Some("yesterday"), None).unwrap_err().contains("using format %Y%m%d%H%M.%S"));
    }
}
