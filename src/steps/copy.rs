//! `copy`: a file from the bastion (streamed from disk when large) or inline `content` to a
//! host; compared by sha256 first, written atomically.

use serde::{Deserialize, Serialize};

use super::transfer::{ensure_content, ensure_large_file};
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
                let p = cx.local_dir.join(src);
                let meta = match std::fs::metadata(&p) {
                    Ok(m) => m,
                    Err(e) => return Outcome::failed(format!("cannot read {} on the bastion: {e}", p.display())),
                };
                // Small files go through the text path (diffs); large ones (artifacts, images) are
                // hashed and streamed from disk, never held in memory.
                if meta.len() <= 1 << 20 {
                    match std::fs::read(&p) {
                        Ok(b) => {
                            ensure_content(cx, &a.dest, b, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref()).await
                        }
                        Err(e) => Outcome::failed(format!("cannot read {} on the bastion: {e}", p.display())),
                    }
                } else {
                    ensure_large_file(cx, &a.dest, &p, a.mode.as_ref()).await
                }
            }
            _ => Outcome::failed("copy needs exactly one of src or content"),
        }
    }
}
