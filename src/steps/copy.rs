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
                let o = ensure_file(cx, &a.dest, Want::Source(source.clone()), a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref()).await;
                if o.status != super::Status::Failed {
                    return o;
                }
                // A directory for dest means the file of src's name in it, as Ansible's copy has
                // it; asked only once the put failed, so a plain copy costs nothing more.
                let Ok(Some(d)) = super::transfer::stat(cx, &a.dest, false).await else { return o };
                let name = std::path::Path::new(src).file_name().map(|n| n.to_string_lossy().into_owned());
                match name {
                    Some(n) if d.kind == "directory" => {
                        let dest = format!("{}/{n}", a.dest.trim_end_matches('/'));
                        let want = Want::Source(source);
                        ensure_file(cx, &dest, want, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref()).await
                    }
                    _ => o,
                }
            }
            _ => Outcome::failed("copy needs exactly one of src or content"),
        }
    }
}
