//! `slurp`: a remote file into a variable (`content`, `content_b64`), read over SFTP.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, StepCtx, transport_outcome};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurpArgs {
    pub path: String,
}

impl Kind for SlurpArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        match cx.conn.get(&a.path).await {
            Ok(b) => {
                use base64::Engine;
                let mut o = Outcome::ok("");
                o.result.insert("content".into(), json!(String::from_utf8_lossy(&b)));
                o.result.insert("content_b64".into(), json!(base64::engine::general_purpose::STANDARD.encode(&b)));
                o.result.insert("source".into(), json!(a.path));
                o
            }
            Err(e) => transport_outcome(e),
        }
    }
}
