//! `file`: a directory, a link, a touched or existing file, or nothing at a path; mode and owner.
//! One remote script checks and (unless in check mode) applies, and says what it changed; when
//! SFTP already shows the path as wanted, no script runs at all.

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
    Touch,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    pub path: String,
    pub state: Option<FileState>,
    pub src: Option<String>,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

impl Kind for FileArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let q = shell_quote;
        let mode = match a.mode.as_ref().map(Mode::bits).transpose() {
            Ok(m) => m,
            Err(e) => return Outcome::failed(e.to_string()),
        };
        let state = a.state.unwrap_or(if a.src.is_some() { FileState::Link } else { FileState::File });
        if a.owner.is_none() && a.group.is_none() && already_there(cx, a, state, mode).await {
            return Outcome::ok("");
        }
        let p = q(&a.path);
        // `do` runs a change (or only records it in check mode); CHANGED lines are the report.
        let mut s = format!(
            "set -e; CHECK={}; p={p}; do_() {{ echo \"CHANGED $1\"; [ $CHECK = 1 ] || eval \"$2\"; }}\n",
            cx.check as u8
        );
        match state {
            FileState::Absent => {
                s.push_str("if [ -e \"$p\" ] || [ -L \"$p\" ]; then do_ removed 'rm -rf -- \"$p\"'; fi\n");
            }
            FileState::Directory => {
                s.push_str("if [ -L \"$p\" ] || { [ -e \"$p\" ] && [ ! -d \"$p\" ]; }; then echo \"$p exists and is not a directory\" >&2; exit 3; fi\n");
                s.push_str("[ -d \"$p\" ] || do_ created 'mkdir -p -- \"$p\"'\n");
            }
            FileState::Touch => {
                s.push_str("[ -e \"$p\" ] || do_ created ': > \"$p\"'\n");
            }
            FileState::File => {
                s.push_str(
                    "if [ ! -e \"$p\" ]; then echo \"$p does not exist (use state: touch to create it)\" >&2; exit 3; fi\n",
                );
            }
            FileState::Link => {
                let Some(src) = &a.src else { return Outcome::failed("state: link needs src (the link's target)") };
                s.push_str(&format!(
                    "t={}; if [ \"$(readlink \"$p\" 2>/dev/null)\" != \"$t\" ]; then \
                     if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then echo \"$p is a directory\" >&2; exit 3; fi; \
                     do_ linked 'ln -sfn -- \"$t\" \"$p\"'; fi\n",
                    q(src)
                ));
            }
        }
        if state != FileState::Absent && state != FileState::Link {
            if let Some(m) = mode {
                s.push_str(&format!(
                    "if [ -e \"$p\" ]; then [ \"$(stat -c %a \"$p\")\" = {m:o} ] || do_ mode 'chmod {m:o} \"$p\"'; else do_ mode :; fi\n"
                ));
            }
            if a.owner.is_some() || a.group.is_some() {
                let (o, g) = (a.owner.clone().unwrap_or_default(), a.group.clone().unwrap_or_default());
                s.push_str(&format!(
                    "cur=$(stat -c '%U %G' \"$p\" 2>/dev/null || true); o={}; g={}; \
                     [ -z \"$o\" ] || [ \"${{cur% *}}\" = \"$o\" ] || do_ owner 'chown \"$o\" \"$p\"'; \
                     [ -z \"$g\" ] || [ \"${{cur#* }}\" = \"$g\" ] || do_ group 'chgrp \"$g\" \"$p\"'\n",
                    q(&o),
                    q(&g)
                ));
            }
        }
        let out = match cx.sh(&s, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let changes = super::reported_changes(&out);
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        if changes.is_empty() { Outcome::ok("") } else { Outcome::changed(format!("{}: {}", a.path, changes.join(", "))) }
    }
}

/// Whether SFTP's lstat shows the path already as the step wants it (the common re-run case),
/// so no script needs to run. Anything it cannot tell goes to the script.
async fn already_there(cx: &StepCtx<'_>, a: &FileArgs, state: FileState, mode: Option<u32>) -> bool {
    use crate::transport::PathKind;
    let Some(Ok(info)) = cx.conn.lstat(&a.path).await else { return false };
    let mode_ok = |i: &crate::transport::PathInfo| mode.is_none_or(|m| i.mode == m);
    match (state, info) {
        (FileState::Absent, None) => true,
        (FileState::Directory, Some(i)) => i.kind == PathKind::Directory && mode_ok(&i),
        (FileState::Touch | FileState::File, Some(i)) => i.kind != PathKind::Link && mode_ok(&i),
        (FileState::Link, Some(i)) => i.kind == PathKind::Link && i.link.as_deref() == a.src.as_deref(),
        _ => false,
    }
}
