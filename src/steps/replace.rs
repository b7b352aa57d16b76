//! `replace` (Ansible's replace module): every match of `regexp` in a file (multi-line mode),
//! or in the part of it between `after` and `before`, replaced; written back only when the text
//! differs. Patterns are Python's `re` syntax where it agrees with Rust's `regex` (no
//! look-around or back-references: such a pattern fails with the compiler's message); the
//! replacement's `\1`, `\g<name>` and escapes mean what they mean to Python.

use serde::{Deserialize, Serialize};

use super::edit::{Edit, compile, open_for_edit, write_if_changed};
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
}

impl Kind for ReplaceArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let Edit { current, mode, text, file_mode } =
            match open_for_edit(cx, &a.path, Presence::Present, false, a.mode.as_ref()).await {
                Ok(e) => e,
                Err(_) => return Outcome::failed(format!("Path {} does not exist !", a.path)),
            };
        match replaced(&text, a) {
            Ok(Some((new, n))) => {
                let mut o =
                    write_if_changed(cx, &a.path, current.as_ref().map(|c| c.0.as_str()), new, mode.unwrap_or(file_mode), "replaced").await;
                if o.status == super::Status::Changed {
                    o.msg = format!("{n} replacements made");
                }
                o
            }
            Ok(None) => match mode {
                // Nothing replaced; only the mode may still differ.
                Some(m) if m != file_mode => {
                    let old = current.as_ref().map(|c| c.0.clone());
                    write_if_changed(cx, &a.path, None, old.unwrap_or_default(), m, "mode changed").await
                }
                _ => Outcome::ok(""),
            },
            Err(e) => Outcome::failed(e),
        }
    }
}

/// The new text and the number of replacements, `None` when nothing changes.
fn replaced(text: &str, a: &ReplaceArgs) -> Result<Option<(String, usize)>, String> {
    let section_pattern = match (&a.after, &a.before) {
        (Some(af), Some(b)) => Some(format!("(?s){}(?P<subsection>.*?){}", python_re(af), python_re(b))),
        (Some(af), None) => Some(format!("(?s){}(?P<subsection>.*)", python_re(af))),
        (None, Some(b)) => Some(format!("(?s)(?P<subsection>.*){}", python_re(b))),
        (None, None) => None,
    };
    let (start, end) = match section_pattern {
        None => (0, text.len()),
        Some(p) => {
            let re = compile(&p)?;
            match re.captures(text).and_then(|c| c.name("subsection")) {
                Some(m) => (m.start(), m.end()),
                None => return Ok(None),
            }
        }
    };
    let section = &text[start..end];
    let re = compile(&format!("(?m){}", python_re(&a.regexp)))?;
    let n = re.find_iter(section).count();
    if n == 0 {
        return Ok(None);
    }
    let new_section = re.replace_all(section, python_replacement(&a.replace).as_str());
    if new_section == section {
        return Ok(None);
    }
    Ok(Some((format!("{}{}{}", &text[..start], new_section, &text[end..]), n)))
}

/// Python's `\Z` (end of text) in Rust's spelling; the rest of the common syntax is shared.
fn python_re(re: &str) -> String {
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

/// A Python replacement template (`\1`, `\g<1>`, `\g<name>`, `\n`, `\\`) in `regex`'s syntax.
fn python_replacement(rep: &str) -> String {
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
        }
    }

    #[test]
    fn replacements_mean_what_they_mean_to_python() {
        let text = "a=1\nb=2\n[x]\na=3\n[y]\na=4\n";
        let r = replaced(text, &args(r"^a=(\d)$", r"a=\1\1", None, None)).unwrap();
        assert_eq!(r, Some(("a=11\nb=2\n[x]\na=33\n[y]\na=44\n".to_string(), 3)));
        let r = replaced(text, &args(r"^a=(?P<v>\d)", r"A=\g<v>$", Some(r"\[x\]"), Some(r"\[y\]"))).unwrap();
        assert_eq!(r, Some(("a=1\nb=2\n[x]\nA=3$\n[y]\na=4\n".to_string(), 1)));
        assert_eq!(replaced(text, &args("^a", "a", None, None)).unwrap(), None, "same text: unchanged");
        assert_eq!(replaced(text, &args("^a", "z", Some("nope"), None)).unwrap(), None, "no section: unchanged");
        assert_eq!(replaced("x\n", &args("x$", r"y\ty", None, None)).unwrap(), Some(("y\ty\n".to_string(), 1)));
        assert!(replaced(text, &args("(?<=a)=", "", None, None)).unwrap_err().starts_with("bad regexp"));
    }
}
