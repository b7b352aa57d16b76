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
        let data = match cx.conn.get(&a.src, None).await {
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
        // A name of its own per write: hosts fetch at once, maybe into one directory.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dest.with_file_name(format!(".{name}.copctl-{}-{n}", std::process::id()));
        if let Err(e) = std::fs::write(&tmp, &data).and_then(|_| std::fs::rename(&tmp, &dest)) {
            let _ = std::fs::remove_file(&tmp);
            return Outcome::failed(format!("{}: {e}", dest.display()));
        }
        Outcome::changed(format!("fetched to {}", dest.display()))
    }
}
