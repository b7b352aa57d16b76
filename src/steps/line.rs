//! `line` (Ansible's lineinfile): one line present (replacing the last line matching `regexp`,
//! else inserted after/before a match) or absent.

use serde::{Deserialize, Serialize};

use super::edit::{Edit, compile, insert_at, join_lines, open_for_edit, split_lines, write_if_changed};
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LineArgs {
    pub path: String,
    pub line: Option<String>,
    pub regexp: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
}

impl Kind for LineArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
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
}
