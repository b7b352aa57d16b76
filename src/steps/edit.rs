//! Editing text files in place, for `line`, `block` and `authorized_key`: the file is read once,
//! the new text computed here (so the edit and its diff are exact), and written back atomically
//! with its mode, only when it differs. No kind of its own.

use regex::Regex;

use super::transfer::{private_diff, secret_notice, stat, unified_diff};
use super::{Mode, Presence};
use super::{Outcome, StepCtx, transport_outcome};
use crate::transport::PutSource;

/// Reads the file (None when absent) and its mode.
async fn read(cx: &StepCtx<'_>, path: &str) -> Result<Option<(String, u32)>, Outcome> {
    match stat(cx, path, false).await? {
        None => Ok(None),
        Some(s) if s.kind != "file" => Err(Outcome::failed(format!("{path} is a {}, not a file", s.kind))),
        Some(s) => {
            let b = cx.conn.get(path).await.map_err(transport_outcome)?;
            Ok(Some((String::from_utf8_lossy(&b).into_owned(), s.mode)))
        }
    }
}

pub(super) async fn write_if_changed(
    cx: &StepCtx<'_>,
    path: &str,
    old: Option<&str>,
    new: String,
    mode: u32,
    what: &str,
) -> Outcome {
    if old == Some(new.as_str()) {
        return Outcome::ok("");
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
        return o;
    }
    if let Err(e) = cx.conn.put(PutSource::Bytes(new.into_bytes()), path, mode).await {
        return transport_outcome(e);
    }
    o
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

pub(super) fn split_lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

pub(super) fn join_lines(lines: &[String]) -> String {
    if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" }
}

pub(super) fn compile(re: &str) -> Result<Regex, String> {
    Regex::new(re).map_err(|e| format!("bad regexp {re:?}: {e}"))
}

/// Where to insert: after the last line matching `after` (EOF by default, `BOF` for the start),
/// or before the last line matching `before`.
pub(super) fn insert_at(lines: &[String], after: Option<&str>, before: Option<&str>) -> Result<usize, String> {
    if let Some(b) = before {
        if b == "BOF" {
            return Ok(0);
        }
        let re = compile(b)?;
        return Ok(lines.iter().rposition(|l| re.is_match(l)).unwrap_or(lines.len()));
    }
    match after {
        None | Some("EOF") => Ok(lines.len()),
        Some(a) => {
            let re = compile(a)?;
            Ok(lines.iter().rposition(|l| re.is_match(l)).map(|i| i + 1).unwrap_or(lines.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_positions() {
        let l: Vec<String> = ["a", "x=1", "b", "x=2", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(insert_at(&l, None, None).unwrap(), 5);
        assert_eq!(insert_at(&l, Some("^x="), None).unwrap(), 4);
        assert_eq!(insert_at(&l, None, Some("^x=")).unwrap(), 3);
        assert_eq!(insert_at(&l, None, Some("BOF")).unwrap(), 0);
        assert_eq!(insert_at(&l, Some("^nomatch"), None).unwrap(), 5);
    }
}
