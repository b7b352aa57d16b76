//! `slurp`: a remote file into a variable (`content`, `content_b64`), read over SFTP. With
//! `encoding: base64`, `content` is base64 as in Ansible's slurp (and `encoding` says so).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, StepCtx, transport_outcome};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurpArgs {
    pub path: String,
    /// `text` (the default) or `base64`: what `content` holds.
    pub encoding: Option<String>,
}

impl Kind for SlurpArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let b64 = match a.encoding.as_deref() {
            None | Some("text") => false,
            Some("base64") => true,
            Some(other) => return Outcome::failed(format!("encoding '{other}' is not text or base64")),
        };
        match cx.conn.get(&a.path, None).await {
            Ok(b) => {
                use base64::Engine;
                let mut o = Outcome::ok("");
                let encoded = base64::engine::general_purpose::STANDARD.encode(&b);
                if b64 {
                    o.result.insert("content".into(), json!(encoded));
                    o.result.insert("encoding".into(), json!("base64"));
                } else {
                    o.result.insert("content".into(), json!(String::from_utf8_lossy(&b)));
                }
                o.result.insert("content_b64".into(), json!(encoded));
                o.result.insert("source".into(), json!(a.path));
                o
            }
            Err(e) => transport_outcome(e),
        }
    }
}
