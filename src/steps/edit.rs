//! Editing text files in place, for `line`, `block`, `replace` and `authorized_key`: the file is
//! read once, the new text computed by the kind (so the edit and its diff are exact), and written
//! back atomically with its mode, only when it differs, after its backup and validation when
//! asked. Also the Python regular expressions the Ansible modules' arguments are. No kind of its
//! own.

use serde_json::{Value, json};

use super::backup::backup_local;
use super::transfer::{private_diff, secret_notice, stat, unified_diff};
use super::validate::validate;
use super::{Mode, Presence};
use super::{Outcome, StepCtx, transport_outcome};
use crate::template::shell_quote;
use crate::transport::PutSource;

/// Reads the file (None when absent) and its mode.
async fn read(cx: &StepCtx<'_>, path: &str) -> Result<Option<(String, u32)>, Outcome> {
    match stat(cx, path, false).await? {
        None => Ok(None),
        // Anything but a directory reads as the modules read it (/dev/null is empty text).
        Some(s) if s.kind == "directory" => Err(Outcome::failed(format!("{path} is a {}, not a file", s.kind))),
        Some(s) => {
            let b = cx.conn.get(path, s.size).await.map_err(transport_outcome)?;
            Ok(Some((String::from_utf8_lossy(&b).into_owned(), s.mode)))
        }
    }
}

/// What guards a rewrite, as Ansible's edit modules offer: a backup of the file as it was, and
/// a command that must accept the new content first.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Safeguards<'a> {
    pub backup: bool,
    pub validate: Option<&'a str>,
}

/// Writes `new` when it differs from `old` (`None`: no file yet; its directory is made, as
/// Ansible's modules make it), backing up and validating first as `g` asks. Returns the outcome
/// and the backup's name ("" for none); `Err` is a failed outcome (backup, validation, write).
pub(super) async fn write_guarded(
    cx: &StepCtx<'_>,
    path: &str,
    old: Option<&str>,
    new: String,
    mode: u32,
    what: &str,
    g: &Safeguards<'_>,
) -> Result<(Outcome, String), Outcome> {
    if old == Some(new.as_str()) {
        return Ok((Outcome::ok(""), String::new()));
    }
    let mut o = Outcome::changed(format!("{path}: {what}"));
    if cx.diff {
        o.diff = Some(
            private_diff(path, mode)
                .or_else(|| secret_notice(cx, path))
                .unwrap_or_else(|| unified_diff(path, old.unwrap_or(""), &new)),
        );
    }
    if cx.check {
        return Ok((o, String::new()));
    }
    let backup = if g.backup && old.is_some() { backup_local(cx, path).await? } else { String::new() };
    if let Some(v) = g.validate {
        validate(cx, v, new.as_bytes()).await?;
    }
    if old.is_none()
        && let Some((dir, _)) = path.rsplit_once('/')
        && !dir.is_empty()
    {
        let out = cx.sh(&format!("mkdir -p -- {}", shell_quote(dir)), None).await?;
        if !out.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(Outcome::failed(format!("Error creating {dir} ({})", err.trim())));
        }
    }
    if let Err(e) = cx.conn.put(PutSource::Bytes(new.into_bytes()), path, mode).await {
        return Err(transport_outcome(e));
    }
    Ok((o, backup))
}

/// Sets the mode of a file whose content stays as it is (Ansible's `check_file_attrs`), unless
/// it has it already; returns whether it changed (or would, in check mode).
pub(super) async fn set_mode(cx: &StepCtx<'_>, path: &str, want: Option<u32>, have: u32) -> Result<bool, Outcome> {
    let Some(m) = want.filter(|m| *m != have) else { return Ok(false) };
    if !cx.check {
        let out = cx.sh(&format!("chmod {m:o} -- {}", shell_quote(path)), None).await?;
        if !out.success() {
            return Err(Outcome::failed(format!("chmod {path}: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
    }
    Ok(true)
}

/// Ansible's message once the file's attributes are set too (`check_file_attrs`).
pub(super) fn with_attrs_msg(msg: &str, content_changed: bool, attrs_changed: bool) -> String {
    match (content_changed, attrs_changed) {
        (_, false) => msg.to_string(),
        (true, true) => format!("{msg} and ownership, perms or SE linux context changed"),
        (false, true) => format!("{msg}ownership, perms or SE linux context changed"),
    }
}

/// The `diff` the edit modules return (and `register:` keeps, diff mode or not): the content's
/// before and after (filled in diff mode only), then the attributes' (the mode, when it changed).
/// In check mode on a file not there yet, the content's alone, as Ansible returns it then.
pub(super) fn module_diff(
    cx: &StepCtx<'_>,
    path: &str,
    before: Option<&str>,
    after: &str,
    modes: Option<(u32, u32)>,
) -> Value {
    let (b, a) = if cx.diff { (before.unwrap_or(""), after) } else { ("", "") };
    let content = json!({"before": b, "after": a,
        "before_header": format!("{path} (content)"), "after_header": format!("{path} (content)")});
    if cx.check && before.is_none() {
        return content;
    }
    let mut attrs = json!({"before_header": format!("{path} (file attributes)"),
        "after_header": format!("{path} (file attributes)")});
    if let Some((was, is)) = modes {
        attrs["before"] = json!({"mode": format!("0{was:03o}")});
        attrs["after"] = json!({"mode": format!("0{is:03o}")});
    }
    json!([content, attrs])
}

/// A text file about to be edited: what is there now, and the mode to write it with.
pub(super) struct Edit {
    pub current: Option<(String, u32)>,
    pub mode: Option<u32>,
    pub text: String,
    pub file_mode: u32,
}

/// Reads the file to edit. `Err` is the step's outcome already: a missing file is `ok` when the
/// edit removes something, created empty with `create`, a failure otherwise.
pub(super) async fn open_for_edit(
    cx: &StepCtx<'_>,
    path: &str,
    state: Presence,
    create: bool,
    mode: Option<&Mode>,
) -> Result<Edit, Outcome> {
    let current = read(cx, path).await?;
    let mode = mode.map(Mode::bits).transpose().map_err(|e| Outcome::failed(e.to_string()))?;
    let (text, file_mode) = match &current {
        Some((t, m)) => (t.clone(), *m),
        None if state == Presence::Absent => return Err(Outcome::ok("")),
        None if create => (String::new(), 0o644),
        None => return Err(Outcome::failed(format!("{path} does not exist (set create: true to create it)"))),
    };
    Ok(Edit { current, mode, text, file_mode })
}

/// Lines as Python's `readlines` makes them: each with its `\n`, the last one perhaps without.
pub(super) fn lines_with_ends(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// A Python `re` pattern, compiled with look-around and back-references (`fancy_regex`); `\Z`
/// (end of text) is spelled `\z` there.
pub(super) fn python_regex(re: &str) -> Result<fancy_regex::Regex, String> {
    fancy_regex::Regex::new(&python_re(re)).map_err(|e| format!("bad regexp {re:?}: {e}"))
}

/// Whether Python's `pattern.search(line)` finds a match in a line read with its `\n`: Python's
/// `$` matches before a final newline, `fancy_regex`'s only at the end, so the search is on the
/// line without it.
pub(super) fn search_line<'t>(
    re: &fancy_regex::Regex,
    line: &'t str,
) -> Result<Option<fancy_regex::Captures<'t, str>>, String> {
    let bare = line.strip_suffix('\n').unwrap_or(line);
    re.captures(bare).map_err(|e| format!("regexp: {e}"))
}

/// Python's `match.expand(template)`: `\1`, `\g<1>`, `\g<name>`, `\n`, `\t`, `\\`.
pub(super) fn python_expand(template: &str, caps: &fancy_regex::Captures<'_, str>) -> String {
    fancy_regex::Expander::default().expansion(&python_replacement(template), caps)
}

/// Python's `\Z` (end of text) in Rust's spelling; the rest of the common syntax is shared.
pub(super) fn python_re(re: &str) -> String {
    let mut out = String::with_capacity(re.len());
    let mut chars = re.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Python's refusal of a replacement template (`sre_parse.parse_template`): an escaped ASCII
/// letter it gives no meaning to.
pub(super) fn check_python_template(rep: &str) -> Result<(), String> {
    let mut chars = rep.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            continue;
        }
        match chars.next() {
            Some((_, e)) if e.is_ascii_alphabetic() && !"abfnrtvg".contains(e) => {
                return Err(format!("bad escape \\{e} at position {i}"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A Python replacement template (`\1`, `\g<1>`, `\g<name>`, `\n`, `\\`) in `regex`'s syntax.
pub(super) fn python_replacement(rep: &str) -> String {
    let mut out = String::with_capacity(rep.len());
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => {
                    let mut num = d.to_string();
                    if let Some(&e) = chars.peek()
                        && e.is_ascii_digit()
                    {
                        num.push(e);
                        chars.next();
                    }
                    out.push_str(&format!("${{{num}}}"));
                }
                Some('g') if chars.peek() == Some(&'<') => {
                    chars.next();
                    let name: String = chars.by_ref().take_while(|&x| x != '>').collect();
                    out.push_str(&format!("${{{name}}}"));
                }
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('a') => out.push('\x07'),
                Some('b') => out.push('\x08'),
                Some('f') => out.push('\x0c'),
                Some('v') => out.push('\x0b'),
                Some('\\') => out.push('\\'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            other => out.push(other),
        }
    }
    out
}
