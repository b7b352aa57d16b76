//! `set_fact`: variables of the host for the rest of the run, rendered when the step runs;
//! runs nothing on the host.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Guards, Kind, Outcome, StepCtx, render_value};

/// `set_fact:` is the map of names to values itself.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(transparent)]
pub struct SetFactArgs(pub IndexMap<String, Value>);

impl std::ops::Deref for SetFactArgs {
    type Target = IndexMap<String, Value>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Kind for SetFactArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let mut out = serde_json::Map::new();
        for (k, v) in &self.0 {
            match render_value(cx.templates, v, cx.vars) {
                Ok(r) => {
                    out.insert(k.clone(), r);
                }
                Err(e) => return Outcome::failed(format!("{k}: {}", crate::template::describe_error(&e))),
            }
        }
        let mut o = Outcome::ok("");
        o.facts = Some(out);
        o
    }
}
