//! `fetch`: a remote file to the bastion (relative to the site), written there atomically.

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, Outcome, StepCtx, transport_outcome};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    pub src: String,
    pub dest: String,
}

impl Kind for FetchArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let data = match cx.conn.get(&a.src).await {
            Ok(b) => b,
            Err(e) => return transport_outcome(e),
        };
        let dest = cx.local_dir.join(&a.dest);
        if std::fs::read(&dest).is_ok_and(|old| old == data) {
            return Outcome::ok("");
        }
        if cx.check {
            return Outcome::changed(format!("would write {}", dest.display()));
        }
        if let Some(dir) = dest.parent()
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            return Outcome::failed(format!("{}: {e}", dir.display()));
        }
        let tmp = dest.with_extension("copctl-tmp");
        if let Err(e) = std::fs::write(&tmp, &data).and_then(|_| std::fs::rename(&tmp, &dest)) {
            return Outcome::failed(format!("{}: {e}", dest.display()));
        }
        Outcome::changed(format!("fetched to {}", dest.display()))
    }
}
