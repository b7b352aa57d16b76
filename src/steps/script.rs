//! `script` (Ansible's script module): a script from the bastion run on the host. It is put in a
//! private temporary file, run through the login shell (`executable` first when given, the
//! arguments as written, so `$VAR` and quotes mean what they mean to Ansible), and removed;
//! `creates`/`removes`/`chdir` are the step's guards, as for `command` (a guard that decides
//! skips it, as Ansible reports it). Changed whenever it runs,
//! `rc`/`stdout`/`stderr` registered; in check mode it is skipped unless a guard decides.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::PutSource;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptArgs {
    /// The script on the bastion (found beside the playbook when it was loaded).
    pub src: String,
    /// Its arguments, as shell words.
    #[serde(default)]
    pub args: String,
    /// What runs it (`/bin/bash`, `python3`); else the script itself (its `#!` line).
    pub executable: Option<String>,
}

impl Kind for ScriptArgs {
    async fn apply(&self, cx: &StepCtx<'_>, g: &Guards) -> Outcome {
        // A guard that decides skips the script, as Ansible's script action reports it (where
        // `command` reports ok).
        match super::command::guard(cx, g).await {
            Err(o) => return o,
            Ok(Some(o)) => {
                let mut s = Outcome::skipped(o.msg.replace("skipped: ", "skipped, since "));
                s.result.insert("msg".into(), serde_json::json!(s.msg));
                return s;
            }
            Ok(None) => {}
        }
        let local = cx.local_dir.join(&self.src);
        let shown = format!("{} {}", self.src, self.args);
        if cx.check {
            let mut o = Outcome::skipped("check mode: the script would run (no guard can tell its outcome)");
            o.commands.push(shown);
            return o;
        }
        let bytes = match std::fs::read(&local) {
            Ok(b) => b,
            Err(e) => return Outcome::failed(format!("Could not find or access '{}' on the bastion: {e}", self.src)),
        };
        let name = local.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "script".into());
        let remote = format!("/tmp/.copctl-script-{}-{}-{name}", std::process::id(), crate::transport::random_hex());
        if let Err(e) = cx.conn.put(PutSource::Bytes(bytes), &remote, 0o700).await {
            return super::transport_outcome(e);
        }
        let runner = self.executable.as_deref().map(|e| format!("{e} ")).unwrap_or_default();
        let line = format!("{runner}{} {}; rc=$?; rm -f {0}; exit $rc", shell_quote(&remote), self.args);
        let mut unguarded = g.clone();
        (unguarded.creates, unguarded.removes, unguarded.unless) = (None, None, None);
        let mut o = super::command::run_line(cx, line, &unguarded).await;
        o.commands = vec![shown];
        o
    }
}
