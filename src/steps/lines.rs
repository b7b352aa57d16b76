//! Editing text files in place: `line` (lineinfile), `block` (blockinfile with markers) and
//! `authorized_key`. The file is read once, the new text computed here (so the edit and its diff
//! are exact), and written back atomically with its mode, only when it differs.

use regex::Regex;
use serde_json::json;

use super::transfer::{private_diff, stat, unified_diff};
use super::{Outcome, StepCtx, transport_outcome};
use crate::playbook::step::{AuthorizedKeyArgs, BlockArgs, LineArgs, Mode, Presence};
use crate::template::shell_quote;
use crate::transport::PutSource;

/// Reads the file (None when absent) and its mode.
async fn read(cx: &StepCtx<'_>, path: &str) -> Result<Option<(String, u32)>, Outcome> {
    match stat(cx, path, false, false).await? {
        None => Ok(None),
        Some(s) if s.kind != "file" => Err(Outcome::failed(format!("{path} is a {}, not a file", s.kind))),
        Some(s) => {
            let b = cx.conn.get(path).await.map_err(transport_outcome)?;
            Ok(Some((String::from_utf8_lossy(&b).into_owned(), s.mode)))
        }
    }
}

async fn write_if_changed(
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
        o.diff = Some(private_diff(path, mode).unwrap_or_else(|| unified_diff(path, old.unwrap_or(""), &new)));
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
struct Edit {
    current: Option<(String, u32)>,
    mode: Option<u32>,
    text: String,
    file_mode: u32,
}

/// Reads the file to edit. `Err` is the step's outcome already: a missing file is `ok` when the
/// edit removes something, created empty with `create`, a failure otherwise.
async fn open_for_edit(
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

fn split_lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn join_lines(lines: &[String]) -> String {
    if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" }
}

fn compile(re: &str) -> Result<Regex, String> {
    Regex::new(re).map_err(|e| format!("bad regexp {re:?}: {e}"))
}

/// Where to insert: after the last line matching `after` (EOF by default, `BOF` for the start),
/// or before the last line matching `before`.
fn insert_at(lines: &[String], after: Option<&str>, before: Option<&str>) -> Result<usize, String> {
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

pub async fn line(cx: &StepCtx<'_>, a: &LineArgs) -> Outcome {
    let Edit { current, mode, text, file_mode } =
        match open_for_edit(cx, &a.path, a.state, a.create, a.mode.as_ref()).await {
            Ok(e) => e,
            Err(o) => return o,
        };
    let mut lines = split_lines(&text);
    let re = match a.regexp.as_deref().map(compile).transpose() {
        Ok(r) => r,
        Err(e) => return Outcome::failed(e),
    };
    let what;
    match a.state {
        Presence::Absent => {
            let before = lines.len();
            lines.retain(|l| match (&re, &a.line) {
                (Some(r), _) => !r.is_match(l),
                (None, Some(x)) => l != x,
                (None, None) => true,
            });
            what = format!("removed {} line(s)", before - lines.len());
        }
        Presence::Present => {
            let Some(new) = a.line.clone() else { return Outcome::failed("state: present needs line") };
            let matched = re.as_ref().and_then(|r| lines.iter().rposition(|l| r.is_match(l)));
            if let Some(i) = matched {
                lines[i] = new;
                what = "line replaced".into();
            } else if lines.contains(&new) {
                what = String::new();
            } else {
                let at = match insert_at(&lines, a.insertafter.as_deref(), a.insertbefore.as_deref()) {
                    Ok(i) => i,
                    Err(e) => return Outcome::failed(e),
                };
                lines.insert(at, new);
                what = "line added".into();
            }
        }
    }
    let new_text = join_lines(&lines);
    // Keep a file that lacked a final newline as it was when nothing else changed.
    let old = current.as_ref().map(|(t, _)| t.as_str());
    if old.is_some_and(|o| o.trim_end_matches('\n') == new_text.trim_end_matches('\n'))
        && mode.is_none_or(|m| m == file_mode)
    {
        return Outcome::ok("");
    }
    write_if_changed(cx, &a.path, old, new_text, mode.unwrap_or(file_mode), &what).await
}

pub async fn block(cx: &StepCtx<'_>, a: &BlockArgs) -> Outcome {
    let Edit { current, mode, text, file_mode } =
        match open_for_edit(cx, &a.path, a.state, a.create, a.mode.as_ref()).await {
            Ok(e) => e,
            Err(o) => return o,
        };
    let marker = a.marker.clone().unwrap_or_else(|| "# {mark} COPCTL MANAGED BLOCK".into());
    let (begin, end) = (marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END"));
    let mut lines = split_lines(&text);
    let b = lines.iter().position(|l| *l == begin);
    let e = b.and_then(|b| lines[b..].iter().position(|l| *l == end).map(|i| b + i));
    let mut body: Vec<String> = vec![begin.clone()];
    body.extend(split_lines(&a.block));
    body.push(end.clone());
    match (a.state, b, e) {
        (Presence::Absent, Some(b), Some(e)) => {
            lines.drain(b..=e);
        }
        (Presence::Absent, _, _) => return Outcome::ok(""),
        (Presence::Present, Some(b), Some(e)) => {
            lines.splice(b..=e, body);
        }
        (Presence::Present, _, _) => {
            let at = match insert_at(&lines, a.insertafter.as_deref(), a.insertbefore.as_deref()) {
                Ok(i) => i,
                Err(e) => return Outcome::failed(e),
            };
            lines.splice(at..at, body);
        }
    }
    let old = current.as_ref().map(|(t, _)| t.as_str());
    let new_text = join_lines(&lines);
    if old == Some(new_text.as_str()) && mode.is_none_or(|m| m == file_mode) {
        return Outcome::ok("");
    }
    write_if_changed(cx, &a.path, old, new_text, mode.unwrap_or(file_mode), "block updated").await
}

pub async fn authorized_key(cx: &StepCtx<'_>, a: &AuthorizedKeyArgs) -> Outcome {
    let key = a.key.trim().to_string();
    // The home directory of the user, then the same edit as `line`.
    let out = match cx.sh(&format!("getent passwd {} | cut -d: -f6", shell_quote(&a.user)), None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let home = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if home.is_empty() {
        return Outcome::failed(format!("no user named {}", a.user));
    }
    let path = format!("{home}/.ssh/authorized_keys");
    if a.state == Presence::Present && !cx.check {
        let prep = format!(
            "umask 077; mkdir -p {d} && chmod 700 {d} && chown {u}: {d} && touch {f} && chmod 600 {f} && chown {u}: {f}",
            d = shell_quote(&format!("{home}/.ssh")),
            f = shell_quote(&path),
            u = shell_quote(&a.user)
        );
        match cx.sh(&prep, None).await {
            Ok(o) if o.success() => {}
            Ok(o) => return Outcome::failed(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(o) => return o,
        }
    }
    let args = LineArgs {
        path: path.clone(),
        line: Some(key),
        regexp: None,
        state: a.state,
        insertafter: None,
        insertbefore: None,
        create: true,
        mode: Some(Mode::from("0600")),
    };
    let mut o = line(cx, &args).await;
    o.result.insert("path".into(), json!(path));
    o
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
