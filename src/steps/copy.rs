//! `copy`: a file from the bastion (read and hashed once per run, streamed to each host that
//! needs it) or inline `content` to a host; compared first (size, then sha256 on the host),
//! written atomically.

use serde::{Deserialize, Serialize};

use super::transfer::{Want, ensure_content, ensure_file};
use super::{Guards, Kind, Mode, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CopyArgs {
    pub src: Option<String>,
    pub content: Option<String>,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

impl Kind for CopyArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        match (&a.content, &a.src) {
            (Some(c), None) => {
                ensure_content(
                    cx,
                    &a.dest,
                    c.clone().into_bytes(),
                    a.mode.as_ref(),
                    a.owner.as_deref(),
                    a.group.as_deref(),
                )
                .await
            }
            (None, Some(src)) => {
                let source = match super::source::source(&cx.local_dir.join(src)).await {
                    Ok(s) => s,
                    Err(e) => return Outcome::failed(e),
                };
                let want = Want::Source(source);
                ensure_file(cx, &a.dest, want, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref()).await
            }
            _ => Outcome::failed("copy needs exactly one of src or content"),
        }
    }
}
