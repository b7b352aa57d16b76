//! `ping`: one round trip to the host that changes nothing, returning `ping: <data>` (`pong`
//! unless given); `data: crash` fails as Ansible's module raises there, on purpose.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PingArgs {
    pub data: Option<String>,
}

impl Kind for PingArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        if let Err(o) = cx.sh("true", None).await {
            return o;
        }
        let data = self.data.as_deref().unwrap_or("pong");
        if data == "crash" {
            // Ansible's words for the exception its module raises.
            let mut o = Outcome::failed("Task failed: Module failed: boom");
            o.result.insert("exception".into(), json!("(traceback unavailable)"));
            return o;
        }
        let mut o = Outcome::ok("");
        o.result.insert("ping".into(), json!(data));
        o
    }
}
