//! `block` (Ansible's blockinfile): lines between BEGIN/END markers, replaced as a whole,
//! inserted after/before a match, or removed.

use serde::{Deserialize, Serialize};

use super::edit::{Edit, insert_at, join_lines, open_for_edit, split_lines, write_if_changed};
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BlockArgs {
    pub path: String,
    #[serde(default)]
    pub block: String,
    /// `{mark}` becomes BEGIN / END.
    pub marker: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
}

impl Kind for BlockArgs {
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
}
