//! `template`: a template file rendered for the host and put in place like `copy` content.

use serde::{Deserialize, Serialize};

use super::transfer::ensure_content;
use super::{Guards, Kind, Mode, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TemplateArgs {
    pub src: String,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

impl Kind for TemplateArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let text = match cx.templates.render_file(&a.src, cx.vars) {
            Ok(t) => t,
            Err(e) => return Outcome::failed(format!("template {}: {}", a.src, crate::template::describe_error(&e))),
        };
        ensure_content(cx, &a.dest, text.into_bytes(), a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref()).await
    }
}
