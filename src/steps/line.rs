//! `line` (Ansible's lineinfile): one line present (replacing the last line matching `regexp` or
//! containing `search_string`, else inserted after/before a match) or absent, by the rules of
//! `lineinfile.py`'s `present` and `absent`, byte for byte: lines keep their own endings, a
//! missing final newline is added only where a line is added after it. The registered result
//! is the module's (`msg`, `backup`, `found`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::edit::{
    Edit, Safeguards, lines_with_ends, module_diff, open_for_edit, python_expand, python_regex, search_line, set_mode,
    with_attrs_msg, write_guarded,
};
use super::replace::failed_rc;
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx, Status};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LineArgs {
    pub path: String,
    pub line: Option<String>,
    pub regexp: Option<String>,
    /// A literal text the line contains (in place of `regexp`).
    pub search_string: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
    /// `line` is a template of the match's groups (`\1`, `\g<name>`); no match, no change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backrefs: bool,
    /// The first match of `regexp`/`search_string`/`insertafter`/`insertbefore` counts, not the last.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub firstmatch: bool,
    /// Keep a copy of the file as it was (`<path>.<pid>.<time>~`), named in `backup`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// A command that must accept the new content (`%s`: its temporary file) first.
    pub validate: Option<String>,
}

/// What the edit made of the file's lines.
#[derive(Debug, PartialEq)]
struct Edited {
    lines: Vec<String>,
    msg: String,
    /// Lines removed (state absent).
    found: Option<usize>,
}

impl Kind for LineArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = match super::home::with_home(cx, self, &self.path, |a, p| a.path = p).await {
            Ok(a) => a,
            Err(o) => return o,
        };
        let a: &Self = &a;
        if let Err(e) = a.check_rules() {
            return Outcome::failed(e);
        }
        let Edit { current, mode, text, file_mode } =
            match open_for_edit(cx, &a.path, a.state, a.create, a.mode.as_ref()).await {
                Ok(e) => e,
                Err(o) if o.status == Status::Ok => {
                    let mut o = Outcome::ok("file not present");
                    o.result.insert("msg".into(), json!("file not present"));
                    return o;
                }
                Err(o) if o.msg.contains(" is a ") => {
                    return failed_rc(format!("Path {} is a directory !", a.path), 256);
                }
                Err(_) => return failed_rc(format!("Destination {} does not exist !", a.path), 257),
            };
        let lines = lines_with_ends(&text);
        let edited = match a.state {
            Presence::Present => a.present(lines),
            Presence::Absent => a.absent(lines),
        };
        let Edited { lines, msg, found } = match edited {
            Ok(e) => e,
            Err(e) => return Outcome::failed(e),
        };
        let new_text = lines.concat();
        let old = current.as_ref().map(|(t, _)| t.as_str());
        let content_changed = old != Some(new_text.as_str());
        let g = Safeguards { backup: a.backup, validate: a.validate.as_deref() };
        let (mut o, backup) = if content_changed {
            match write_guarded(cx, &a.path, old, new_text.clone(), mode.unwrap_or(file_mode), &msg, &g).await {
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
        let msg = with_attrs_msg(&msg, content_changed, attrs);
        if attrs {
            o = Outcome::changed("");
        }
        let modes = attrs.then(|| (file_mode, mode.unwrap_or(file_mode)));
        o.result.insert("diff".into(), module_diff(cx, &a.path, old, &new_text, modes));
        if o.status == Status::Changed {
            o.msg = format!("{}: {msg}", a.path);
        }
        o.result.insert("msg".into(), json!(msg));
        o.result.insert("backup".into(), json!(backup));
        if let Some(n) = found {
            o.result.insert("found".into(), json!(n));
        }
        if let Some(w) = a.empty_pattern_warning() {
            o.result.insert("warnings".into(), json!([w]));
            o.warnings.push(w);
        }
        o
    }
}

impl LineArgs {
    /// The module's own refusals of argument combinations.
    fn check_rules(&self) -> Result<(), String> {
        match self.state {
            Presence::Present if self.backrefs && self.regexp.is_none() => {
                Err("regexp is required with backrefs=true".into())
            }
            Presence::Present if self.line.is_none() => Err("line is required with state=present".into()),
            Presence::Absent if self.line.is_none() && self.regexp.is_none() && self.search_string.is_none() => {
                Err("one of line, search_string, or regexp is required with state=absent".into())
            }
            _ => Ok(()),
        }
    }

    /// The module's warning for an empty `regexp` or `search_string` (it matches every line).
    fn empty_pattern_warning(&self) -> Option<String> {
        let (name, extra) = match (self.regexp.as_deref(), self.search_string.as_deref()) {
            (Some(""), _) => (
                "regular expression",
                " If this is desired, use '^' to match every line in the file and avoid this warning.",
            ),
            (_, Some("")) => ("search string", ""),
            _ => return None,
        };
        Some(format!(
            "The {name} is an empty string, which will match every line in the file. This may have unintended \
             consequences, such as replacing the last line in the file rather than appending.{extra}"
        ))
    }

    /// `lineinfile.py` `present`.
    fn present(&self, mut lines: Vec<String>) -> Result<Edited, String> {
        let line = self.line.clone().unwrap_or_default();
        let (insertafter, insertbefore) = match (self.insertafter.as_deref(), self.insertbefore.as_deref()) {
            (None, None) => (Some("EOF"), None),
            other => other,
        };
        let re = self.regexp.as_deref().map(python_regex).transpose()?;
        let ins = match (insertafter, insertbefore) {
            (Some(a), _) if a != "BOF" && a != "EOF" => Some(python_regex(a)?),
            (_, Some(b)) if b != "BOF" => Some(python_regex(b)?),
            _ => None,
        };
        // Python's truthiness: an empty insertafter/insertbefore is as good as none.
        let after = insertafter.is_some_and(|s| !s.is_empty());
        let before = insertbefore.is_some_and(|s| !s.is_empty());
        let (mut found, mut at) = (None::<usize>, None::<usize>);
        let mut matched = false;
        let mut exact = false;
        if let Some(re) = &re {
            for (i, l) in lines.iter().enumerate() {
                if search_line(re, l)?.is_some() {
                    found = Some(i);
                    matched = true;
                    if self.firstmatch {
                        break;
                    }
                }
            }
        }
        if let Some(s) = &self.search_string {
            for (i, l) in lines.iter().enumerate() {
                if l.contains(s.as_str()) {
                    found = Some(i);
                    matched = true;
                    if self.firstmatch {
                        break;
                    }
                }
            }
        }
        if !matched {
            for (i, l) in lines.iter().enumerate() {
                if line == l.trim_end_matches(['\r', '\n']) {
                    found = Some(i);
                    exact = true;
                } else if let Some(ins) = &ins
                    && search_line(ins, l)?.is_some()
                {
                    if after {
                        at = Some(i + 1);
                        if self.firstmatch {
                            break;
                        }
                    }
                    if before {
                        at = Some(i);
                        if self.firstmatch {
                            break;
                        }
                    }
                }
            }
        }
        let _ = exact;
        let added = |lines: &mut Vec<String>, i: usize| lines.insert(i, format!("{line}\n"));
        let bare = |l: &str| l.trim_end_matches(['\r', '\n']).to_string();
        let mut msg = "";
        if let Some(i) = found {
            let mut new_line = match (&re, self.backrefs && matched) {
                (Some(re), true) => match search_line(re, &lines[i])? {
                    Some(c) => python_expand(&line, &c),
                    None => line.clone(),
                },
                _ => line.clone(),
            };
            if !new_line.ends_with('\n') {
                new_line.push('\n');
            }
            if lines[i] != new_line {
                lines[i] = new_line;
                msg = "line replaced";
            }
        } else if self.backrefs {
            // No match: backrefs leave the file as it is.
        } else if insertbefore == Some("BOF") || insertafter == Some("BOF") {
            added(&mut lines, 0);
            msg = "line added";
        } else if insertafter == Some("EOF") || at.is_none() {
            if lines.last().is_some_and(|l| !l.ends_with(['\n', '\r'])) {
                lines.push("\n".into());
            }
            let n = lines.len();
            added(&mut lines, n);
            msg = "line added";
        } else if let (true, Some(i)) = (after, at) {
            if lines.len() == i {
                if bare(&lines[i - 1]) != line {
                    added(&mut lines, i);
                    msg = "line added";
                }
            } else if bare(&lines[i]) != line {
                added(&mut lines, i);
                msg = "line added";
            }
        } else if let Some(i) = at {
            added(&mut lines, i);
            msg = "line added";
        }
        Ok(Edited { lines, msg: msg.into(), found: None })
    }

    /// `lineinfile.py` `absent`.
    fn absent(&self, lines: Vec<String>) -> Result<Edited, String> {
        let re = self.regexp.as_deref().map(python_regex).transpose()?;
        let line = self.line.clone().unwrap_or_default();
        let mut kept = Vec::with_capacity(lines.len());
        let mut found = 0;
        for l in lines {
            let hit = match (&re, &self.search_string) {
                (Some(re), _) => search_line(re, &l)?.is_some(),
                (None, Some(s)) => l.contains(s.as_str()),
                (None, None) => line == l.trim_end_matches(['\r', '\n']),
            };
            if hit {
                found += 1;
            } else {
                kept.push(l);
            }
        }
        let msg = if found > 0 { format!("{found} line(s) removed") } else { String::new() };
        Ok(Edited { lines: kept, msg, found: Some(found) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: Option<&str>) -> LineArgs {
        LineArgs {
            path: "/x".into(),
            line: line.map(str::to_string),
            regexp: None,
            search_string: None,
            state: Presence::Present,
            insertafter: None,
            insertbefore: None,
            create: false,
            mode: None,
            backrefs: false,
            firstmatch: false,
            backup: false,
            validate: None,
        }
    }

    fn lines(t: &str) -> Vec<String> {
        lines_with_ends(t)
    }

    fn present(a: &LineArgs, t: &str) -> (String, String) {
        let e = a.present(lines(t)).unwrap();
        (e.lines.concat(), e.msg)
    }

    #[test]
    fn present_is_lineinfiles() {
        let mut a = args(Some("new"));
        assert_eq!(present(&a, "a\nb"), ("a\nb\nnew\n".into(), "line added".into()), "a final newline is added first");
        assert_eq!(present(&a, "new\na\n"), ("new\na\n".into(), "".into()), "present anywhere: unchanged");
        a.regexp = Some("^x=".into());
        assert_eq!(present(&a, "x=1\nx=2\n"), ("x=1\nnew\n".into(), "line replaced".into()), "the last match");
        a.firstmatch = true;
        assert_eq!(present(&a, "x=1\nx=2\n"), ("new\nx=2\n".into(), "line replaced".into()), "firstmatch");
        let mut a = args(Some("new"));
        a.insertafter = Some("^s".into());
        assert_eq!(present(&a, "s1\nt\ns2\nu\n"), ("s1\nt\ns2\nnew\nu\n".into(), "line added".into()));
        a.firstmatch = true;
        assert_eq!(present(&a, "s1\nt\ns2\nu\n"), ("s1\nnew\nt\ns2\nu\n".into(), "line added".into()));
        let mut a = args(Some("new"));
        a.insertbefore = Some("^s".into());
        assert_eq!(present(&a, "s1\nt\ns2\n"), ("s1\nt\nnew\ns2\n".into(), "line added".into()));
        a.insertbefore = Some("BOF".into());
        assert_eq!(present(&a, "s1\n"), ("new\ns1\n".into(), "line added".into()));
        let mut a = args(Some("new"));
        a.search_string = Some("[x]".into());
        assert_eq!(present(&a, "a[x]b\nc\n"), ("new\nc\n".into(), "line replaced".into()), "a literal text");
    }

    #[test]
    fn backrefs_expand_the_match_or_change_nothing() {
        let mut a = args(Some(r"\1 = \g<v>!"));
        a.regexp = Some(r"^(?P<k>\w+) (?P<v>\d+) \1$".into());
        a.backrefs = true;
        assert_eq!(present(&a, "a 1 a\nb\n"), ("a = 1!\nb\n".into(), "line replaced".into()));
        assert_eq!(present(&a, "a 1 b\n"), ("a 1 b\n".into(), "".into()), "no match: no line added");
        a.regexp = None;
        assert_eq!(a.check_rules().unwrap_err(), "regexp is required with backrefs=true");
    }

    #[test]
    fn absent_counts_what_it_removes() {
        let mut a = args(Some("b"));
        a.state = Presence::Absent;
        let e = a.absent(lines("a\nb\nb\r\nc")).unwrap();
        assert_eq!((e.lines.concat(), e.msg, e.found), ("a\nc".into(), "2 line(s) removed".into(), Some(2)));
        a.search_string = Some("a".into());
        assert_eq!(a.absent(lines("a\nba\nc\n")).unwrap().lines.concat(), "c\n");
        a.line = None;
        a.search_string = None;
        assert!(a.check_rules().unwrap_err().starts_with("one of line, search_string, or regexp"));
    }
}
