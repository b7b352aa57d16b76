//! `shell`: a line run by the host's POSIX `sh` (or the `executable` given, as `EXECUTABLE -c
//! LINE`), under the same guards as `command`.

use serde::{Deserialize, Serialize};

use super::command::run_line;
use crate::template::shell_quote;
use super::{Guards, Kind, Outcome, StepCtx};

/// `shell:` is the line itself.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(transparent)]
pub struct ShellArgs(pub String);

impl Kind for ShellArgs {
    const MAY_BE_READ_ONLY: bool = true;

    async fn apply(&self, cx: &StepCtx<'_>, g: &Guards) -> Outcome {
        let mut o = match &g.executable {
            Some(e) => run_line(cx, format!("{} -c {}", shell_quote(e), shell_quote(&self.0)), g).await,
            None => run_line(cx, self.0.clone(), g).await,
        };
        // The module's `cmd`: the command line as given (an Ansible playbook's free-form text as
        // its argument splitting recombined it, see `split::parse_kv`).
        o.result.insert("cmd".into(), serde_json::json!(self.0));
        o
    }
}

