//! `block` (Ansible's blockinfile): lines between BEGIN/END markers, replaced as a whole,
//! inserted after/before a match (a `(?m)` pattern searched in the whole text), or removed, by
//! the rules of `blockinfile.py`, byte for byte. The registered result is the module's (`msg`,
//! `backup_file`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::edit::{Edit, Safeguards, open_for_edit, python_regex, module_diff, set_mode, with_attrs_msg, write_guarded};
use super::replace::failed_rc;
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx, Status};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BlockArgs {
    pub path: String,
    #[serde(default)]
    pub block: String,
    /// `{mark}` becomes `marker_begin` / `marker_end`.
    pub marker: Option<String>,
    pub marker_begin: Option<String>,
    pub marker_end: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
    /// A blank line after the block, unless one is there or the block ends the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append_newline: bool,
    /// A blank line before the block, unless one is there or the block starts the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepend_newline: bool,
    /// Keep a copy of the file as it was (`<path>.<pid>.<time>~`), named in `backup_file`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// A command that must accept the new content (`%s`: its temporary file) first.
    pub validate: Option<String>,
}

impl Kind for BlockArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = match super::home::with_home(cx, self, &self.path, |a, p| a.path = p).await {
            Ok(a) => a,
            Err(o) => return o,
        };
        let a: &Self = &a;
        let Edit { current, mode, text, file_mode } =
            match open_for_edit(cx, &a.path, a.state, a.create, a.mode.as_ref()).await {
                Ok(e) => e,
                Err(o) if o.status == Status::Ok => {
                    let msg = format!("File {} not present", a.path);
                    let mut o = Outcome::ok(msg.clone());
                    o.result.insert("msg".into(), json!(msg));
                    return o;
                }
                Err(o) if o.msg.contains(" is a ") => {
                    return failed_rc(format!("Path {} is a directory !", a.path), 256);
                }
                Err(_) => return failed_rc(format!("Path {} does not exist !", a.path), 257),
            };
        let old = current.as_ref().map(|(t, _)| t.as_str());
        let (new_text, msg) = match a.edited(old.map(|_| text.as_str())) {
            Ok(r) => r,
            Err(e) => return Outcome::failed(e),
        };
        let content_changed = old != Some(new_text.as_str());
        let g = Safeguards { backup: a.backup, validate: a.validate.as_deref() };
        let (mut o, backup) = if content_changed {
            match write_guarded(cx, &a.path, old, new_text.clone(), mode.unwrap_or(file_mode), msg, &g).await {
                Ok(r) => r,
                Err(o) => return o,
            }
        } else {
            (Outcome::ok(""), String::new())
        };
        let attrs = match (content_changed, old) {
            (false, Some(_)) => match set_mode(cx, &a.path, mode, file_mode).await {
                Ok(c) => c,
                Err(o) => return o,
            },
            _ => false,
        };
        let msg = with_attrs_msg(msg, content_changed, attrs);
        if attrs {
            o = Outcome::changed("");
        }
        let modes = attrs.then(|| (file_mode, mode.unwrap_or(file_mode)));
        o.result.insert("diff".into(), module_diff(cx, &a.path, old, &new_text, modes));
        if o.status == Status::Changed {
            o.msg = format!("{}: {msg}", a.path);
        }
        o.result.insert("msg".into(), json!(msg));
        if !backup.is_empty() {
            o.result.insert("backup_file".into(), json!(backup));
        }
        o
    }
}

/// Python's `bytes.splitlines(True)`: lines end at `\n`, `\r\n` or `\r`, each kept.
fn split_keep_ends(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        if c == '\n' || (c == '\r' && chars.peek() != Some(&'\n')) {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a Python pattern sets MULTILINE with its leading inline flags (`(?m)`, `(?ms)`).
fn multiline(pattern: &str) -> bool {
    pattern.strip_prefix("(?").and_then(|r| r.split_once(')')).is_some_and(|(flags, _)| {
        flags.chars().all(|c| c.is_ascii_alphabetic()) && flags.contains('m')
    })
}

impl BlockArgs {
    /// The new text and Ansible's message for it; `original` is `None` for no file yet.
    fn edited(&self, original: Option<&str>) -> Result<(String, &'static str), String> {
        let present = self.state == Presence::Present;
        let mut lines = original.map(split_keep_ends).unwrap_or_default();
        let (insertafter, insertbefore) = match (self.insertafter.as_deref(), self.insertbefore.as_deref()) {
            (None, None) => (Some("EOF"), None),
            other => other,
        };
        let insertre = match (insertafter, insertbefore) {
            (Some(a), _) if a != "EOF" => Some(a),
            (None, Some(b)) if b != "BOF" => Some(b),
            _ => None,
        };
        // Native playbooks mark their blocks as copctl's; the Ansible front-end always gives Ansible's marker.
        let marker = self.marker.as_deref().unwrap_or("# {mark} COPCTL MANAGED BLOCK");
        let marker0 = format!("{}\n", marker.replace("{mark}", self.marker_begin.as_deref().unwrap_or("BEGIN")));
        let marker1 = format!("{}\n", marker.replace("{mark}", self.marker_end.as_deref().unwrap_or("END")));
        let mut blocklines = vec![];
        if present && !self.block.is_empty() {
            let mut block = self.block.clone();
            if !block.ends_with('\n') {
                block.push('\n');
            }
            blocklines.push(marker0.clone());
            blocklines.extend(split_keep_ends(&block));
            blocklines.push(marker1.clone());
        }
        let (mut n0, mut n1) = (None, None);
        for (i, l) in lines.iter().enumerate() {
            if *l == marker0 {
                n0 = Some(i);
            }
            if *l == marker1 {
                n1 = Some(i);
            }
        }
        let mut n0 = match (n0, n1) {
            (Some(b), Some(e)) if b < e => {
                lines.drain(b..=e);
                b
            }
            (Some(b), Some(e)) => {
                lines.drain(e..=b);
                e
            }
            _ => match insertre {
                Some(p) => {
                    let re = python_regex(p)?;
                    let mut at = None;
                    if multiline(p) {
                        let text = original.unwrap_or_default();
                        if let Some(m) = re.find(text).map_err(|e| format!("regexp: {e}"))? {
                            let upto = if insertafter.is_some() { m.end() } else { m.start() };
                            at = Some(text[..upto].matches('\n').count());
                        }
                    } else {
                        for (i, l) in lines.iter().enumerate() {
                            if re.is_match(l).map_err(|e| format!("regexp: {e}"))? {
                                at = Some(i);
                            }
                        }
                    }
                    match at {
                        None => lines.len(),
                        Some(i) if insertafter.is_some() => i + 1,
                        Some(i) => i,
                    }
                }
                None if insertbefore.is_some() => 0,
                None => lines.len(),
            },
        };
        if n0 > 0 && !lines[n0 - 1].ends_with('\n') {
            lines[n0 - 1].push('\n');
        }
        if self.prepend_newline && present && n0 != 0 && lines[n0 - 1] != "\n" {
            lines.insert(n0, "\n".into());
            n0 += 1;
        }
        let count = blocklines.len();
        lines.splice(n0..n0, blocklines);
        if self.append_newline && present {
            let after = n0 + count;
            if after < lines.len() && lines[after] != "\n" {
                lines.insert(after, "\n".into());
            }
        }
        let result = lines.concat();
        let msg = match original {
            Some(o) if o == result => "",
            None => "File created",
            _ if count == 0 => "Block removed",
            _ => "Block inserted",
        };
        Ok((result, msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(block: &str) -> BlockArgs {
        serde_json::from_value(json!({"path": "/x", "block": block, "marker": "# {mark} M"})).unwrap()
    }

    #[test]
    fn blocks_are_blockinfiles() {
        let a = args("x\ny");
        assert_eq!(a.edited(None).unwrap(), ("# BEGIN M\nx\ny\n# END M\n".into(), "File created"));
        let t = "a\n# BEGIN M\nold\n# END M\nb";
        assert_eq!(a.edited(Some(t)).unwrap(), ("a\n# BEGIN M\nx\ny\n# END M\nb".into(), "Block inserted"));
        assert_eq!(a.edited(Some("a")).unwrap(), ("a\n# BEGIN M\nx\ny\n# END M\n".into(), "Block inserted"));
        let done = "# BEGIN M\nx\ny\n# END M\n";
        assert_eq!(a.edited(Some(done)).unwrap(), (done.into(), ""));
        let mut gone = args("");
        gone.state = Presence::Absent;
        assert_eq!(gone.edited(Some(t)).unwrap(), ("a\nb".into(), "Block removed"));
    }

    #[test]
    fn insertions_and_blank_lines() {
        let mut a = args("x");
        a.insertbefore = Some("^b".into());
        a.prepend_newline = true;
        a.append_newline = true;
        assert_eq!(a.edited(Some("a\nb\n")).unwrap().0, "a\n\n# BEGIN M\nx\n# END M\n\nb\n");
        a.insertbefore = Some("BOF".into());
        assert_eq!(a.edited(Some("a\n")).unwrap().0, "# BEGIN M\nx\n# END M\n\na\n", "nothing to prepend to");
        let mut a = args("x");
        a.insertafter = Some(r"(?m)^s =\n.*t$".into());
        assert_eq!(a.edited(Some("s =\n  t\nu\n")).unwrap().0, "s =\n  t\n# BEGIN M\nx\n# END M\nu\n");
        a.insertafter = Some(r"^s =\n.*t$".into());
        assert_eq!(a.edited(Some("s =\n  t\nu\n")).unwrap().0, "s =\n  t\nu\n# BEGIN M\nx\n# END M\n", "line by line");
        assert_eq!(split_keep_ends("a\r\nb\rc\nd"), ["a\r\n", "b\r", "c\n", "d"]);
    }
}
