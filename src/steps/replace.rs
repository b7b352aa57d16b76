//! `replace` (Ansible's replace module): every match of `regexp` in a file (multi-line mode),
//! or in the part of it between `after` and `before`, replaced; written back only when the text
//! differs, after a backup and a validation when asked. Patterns are Python's `re` syntax
//! (`fancy_regex`: look-around and back-references included); the replacement's `\1`,
//! `\g<name>` and escapes mean what they mean to Python. The registered result is the module's
//! (`msg`, `rc`, `backup_file`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::edit::{check_python_template, Edit, Safeguards, open_for_edit, python_regex, python_replacement, set_mode, with_attrs_msg, write_guarded};
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReplaceArgs {
    pub path: String,
    pub regexp: String,
    #[serde(default)]
    pub replace: String,
    pub after: Option<String>,
    pub before: Option<String>,
    pub mode: Option<Mode>,
    /// Keep a copy of the file as it was (`<path>.<pid>.<time>~`), named in `backup_file`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// A command that must accept the new content (`%s`: its temporary file) first.
    pub validate: Option<String>,
}

impl Kind for ReplaceArgs {
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
            match open_for_edit(cx, &a.path, Presence::Present, false, a.mode.as_ref()).await {
                Ok(e) => e,
                Err(o) if o.msg.contains(" is a ") => return failed_rc(format!("Path {} is a directory !", a.path), 256),
                Err(_) => return failed_rc(format!("Path {} does not exist !", a.path), 257),
            };
        let (new, n) = match replaced(&text, a) {
            Ok(Replaced::Text(new, n)) => (Some(new), n),
            Ok(Replaced::Same) => (None, 0),
            Ok(Replaced::NoSection(pattern)) => {
                let msg = format!("Pattern for before/after params did not match the given file: {pattern}");
                let mut o = Outcome::ok(msg.clone());
                o.result.insert("msg".into(), json!(msg));
                o.result.insert("rc".into(), json!(0));
                return o;
            }
            Err(e) => return Outcome::failed(e),
        };
        let mut backup = String::new();
        let msg = if new.is_some() { format!("{n} replacements made") } else { String::new() };
        let mut o = match new {
            Some(new) => {
                let g = Safeguards { backup: a.backup, validate: a.validate.as_deref() };
                let old = current.as_ref().map(|c| c.0.as_str());
                match write_guarded(cx, &a.path, old, new, mode.unwrap_or(file_mode), &msg, &g).await {
                    Ok((o, b)) => {
                        backup = b;
                        o
                    }
                    Err(o) => return o,
                }
            }
            None => Outcome::ok(""),
        };
        let changed = o.status == super::Status::Changed;
        let attrs = if changed {
            false
        } else {
            match set_mode(cx, &a.path, mode, file_mode).await {
                Ok(c) => c,
                Err(o) => return o,
            }
        };
        let msg = with_attrs_msg(&msg, changed, attrs);
        if attrs {
            o = Outcome::changed(format!("{}: {msg}", a.path));
        }
        if changed {
            o.msg = format!("{}: {msg}", a.path);
        }
        o.result.insert("msg".into(), json!(msg));
        o.result.insert("rc".into(), json!(0));
        if !backup.is_empty() {
            o.result.insert("backup_file".into(), json!(backup));
        }
        o
    }
}

/// A failure as the module fails: its message and `rc`.
pub(super) fn failed_rc(msg: String, rc: u32) -> Outcome {
    let mut o = Outcome::failed(msg);
    o.result.insert("rc".into(), json!(rc));
    o
}

/// What the replacement makes of the text.
#[derive(Debug, PartialEq)]
enum Replaced {
    /// The new text and the number of replacements.
    Text(String, usize),
    /// Nothing to replace, or replacements that leave the text as it was.
    Same,
    /// `after`/`before` matched nowhere: Ansible's pattern, for its message.
    NoSection(String),
}

/// The new text as Python's `re.subn` makes it, in the section `after`/`before` delimit.
fn replaced(text: &str, a: &ReplaceArgs) -> Result<Replaced, String> {
    let after = a.after.as_deref().filter(|s| !s.is_empty());
    let before = a.before.as_deref().filter(|s| !s.is_empty());
    let pattern = match (after, before) {
        (Some(af), Some(b)) => Some(format!("{af}(?P<subsection>.*?){b}")),
        (Some(af), None) => Some(format!("{af}(?P<subsection>.*)")),
        (None, Some(b)) => Some(format!("(?P<subsection>.*){b}")),
        (None, None) => None,
    };
    let (start, end) = match &pattern {
        None => (0, text.len()),
        Some(p) => {
            let re = python_regex(&format!("(?s){p}"))?;
            match re.captures(text).map_err(|e| e.to_string())?.and_then(|c| c.name("subsection")) {
                Some(m) => (m.start(), m.end()),
                None => return Ok(Replaced::NoSection(p.clone())),
            }
        }
    };
    check_python_template(&a.replace).map_err(|e| format!("Unable to process replace due to error: {e}"))?;
    let section = &text[start..end];
    let re = python_regex(&format!("(?m){}", a.regexp))?;
    let mut n = 0;
    for m in re.find_iter(section) {
        m.map_err(|e| format!("Unable to process replace due to error: {e}"))?;
        n += 1;
    }
    if n == 0 {
        return Ok(Replaced::Same);
    }
    let new_section = re
        .try_replacen(section, 0, python_replacement(&a.replace).as_str())
        .map_err(|e| format!("Unable to process replace due to error: {e}"))?;
    if new_section == section {
        return Ok(Replaced::Same);
    }
    Ok(Replaced::Text(format!("{}{}{}", &text[..start], new_section, &text[end..]), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(regexp: &str, replace: &str, after: Option<&str>, before: Option<&str>) -> ReplaceArgs {
        ReplaceArgs {
            path: "/x".into(),
            regexp: regexp.into(),
            replace: replace.into(),
            after: after.map(str::to_string),
            before: before.map(str::to_string),
            mode: None,
            backup: false,
            validate: None,
        }
    }

    #[test]
    fn replacements_mean_what_they_mean_to_python() {
        let text = "a=1\nb=2\n[x]\na=3\n[y]\na=4\n";
        let r = replaced(text, &args(r"^a=(\d)$", r"a=\1\1", None, None)).unwrap();
        assert_eq!(r, Replaced::Text("a=11\nb=2\n[x]\na=33\n[y]\na=44\n".to_string(), 3));
        let r = replaced(text, &args(r"^a=(?P<v>\d)", r"A=\g<v>$", Some(r"\[x\]"), Some(r"\[y\]"))).unwrap();
        assert_eq!(r, Replaced::Text("a=1\nb=2\n[x]\nA=3$\n[y]\na=4\n".to_string(), 1));
        assert_eq!(replaced(text, &args("^a", "a", None, None)).unwrap(), Replaced::Same, "same text: unchanged");
        assert_eq!(
            replaced(text, &args("^a", "z", Some("nope"), None)).unwrap(),
            Replaced::NoSection("nope(?P<subsection>.*)".into()),
            "no section: unchanged, saying so"
        );
        assert_eq!(replaced("x\n", &args("x$", r"y\ty", None, None)).unwrap(), Replaced::Text("y\ty\n".to_string(), 1));
        let r = replaced(text, &args("(?<=a)=(\\d)$", r"=\1\1", None, None)).unwrap();
        assert_eq!(r, Replaced::Text("a=11\nb=2\n[x]\na=33\n[y]\na=44\n".to_string(), 3), "look-behind");
        let r = replaced("ab ab\nab ac\n", &args(r"^(\w+) \1$", "same", None, None)).unwrap();
        assert_eq!(r, Replaced::Text("same\nab ac\n".to_string(), 1), "back-reference in the pattern");
        assert!(replaced(text, &args("(", "", None, None)).unwrap_err().starts_with("bad regexp"));
    }
}
