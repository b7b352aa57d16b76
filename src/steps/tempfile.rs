//! `tempfile`: a new file (mode 0600) or directory (0700) with a random name, as Python's
//! mkstemp/mkdtemp make them for Ansible's module: `prefix` (default `ansible.`) and `suffix`
//! around eight random characters, in `path` or else $TMPDIR or /tmp. Always changed; the path
//! is returned. Ansible's module does not support check mode, so it is skipped there.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct TempfileArgs {
    /// `file` (default) or `directory`.
    pub state: Option<String>,
    pub path: Option<String>,
    pub prefix: Option<String>,
    pub suffix: Option<String>,
}

impl Kind for TempfileArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let prefix = self.prefix.as_deref().unwrap_or("ansible.");
        let suffix = self.suffix.as_deref().unwrap_or("");
        for (what, v) in [("prefix", prefix), ("suffix", suffix)] {
            if v.contains('/') {
                return Outcome::failed(format!("{what} must be a valid file name component, got '{v}'"));
            }
        }
        let dir = match self.state.as_deref().unwrap_or("file") {
            "file" => false,
            "directory" => true,
            other => return Outcome::failed(format!("value of state must be one of: file, directory, got: {other}")),
        };
        if cx.check {
            return Outcome::skipped("Check mode is not supported for this module");
        }
        let parent = match &self.path {
            Some(p) => match super::home::expand_home(cx, p).await {
                Ok(p) => shell_quote(&p),
                Err(o) => return o,
            },
            None => "\"${TMPDIR:-/tmp}\"".to_string(),
        };
        // Python's names (eight of a-z, 0-9 and _), made exclusively as mkstemp (0600, noclobber)
        // and mkdtemp (0700) make them; a name taken is drawn again.
        let make = if dir { "mkdir -m 700 -- \"$p\" 2>/dev/null" } else { "( umask 077; set -C; : > \"$p\" ) 2>/dev/null" };
        let script = format!(
            "d={parent}; [ -d \"$d\" ] || {{ echo \"[Errno 2] No such file or directory: '$d'\" >&2; exit 1; }}; \
             i=0; while [ $i -lt 100 ]; do i=$((i+1)); \
             n=$(LC_ALL=C tr -dc 'a-z0-9_' </dev/urandom | head -c 8); p=\"${{d%/}}/\"{}\"$n\"{}; \
             if {make}; then printf '%s\\n' \"$p\"; exit 0; fi; done; \
             echo \"No usable temporary file name found\" >&2; exit 1",
            shell_quote(prefix),
            shell_quote(suffix)
        );
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let path = String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_string();
        let mut o = Outcome::changed(format!("made {path}"));
        o.result.insert("path".into(), json!(path));
        o
    }
}
