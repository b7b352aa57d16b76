//! `authorized_key`: a public key present in (or absent from) a user's
//! `~/.ssh/authorized_keys`, the directory and file made with owner-only modes; the edit is
//! `line`'s.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::line::LineArgs;
use super::{Guards, Kind, Mode, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthorizedKeyArgs {
    pub user: String,
    pub key: String,
    #[serde(default)]
    pub state: Presence,
}

impl Kind for AuthorizedKeyArgs {
    async fn apply(&self, cx: &StepCtx<'_>, g: &Guards) -> Outcome {
        let a = self;
        let key = a.key.trim().to_string();
        // The home directory of the user, then the same edit as `line`.
        let out = match cx.sh(&format!("getent passwd {} | cut -d: -f6", shell_quote(&a.user)), None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let home = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if home.is_empty() {
            return Outcome::failed(format!("no user named {}", a.user));
        }
        let path = format!("{home}/.ssh/authorized_keys");
        if a.state == Presence::Present && !cx.check {
            let prep = format!(
                "umask 077; mkdir -p {d} && chmod 700 {d} && chown {u}: {d} && touch {f} && chmod 600 {f} && chown {u}: {f}",
                d = shell_quote(&format!("{home}/.ssh")),
                f = shell_quote(&path),
                u = shell_quote(&a.user)
            );
            match cx.sh(&prep, None).await {
                Ok(o) if o.success() => {}
                Ok(o) => return Outcome::failed(String::from_utf8_lossy(&o.stderr).trim().to_string()),
                Err(o) => return o,
            }
        }
        let args = LineArgs {
            path: path.clone(),
            line: Some(key),
            regexp: None,
            state: a.state,
            insertafter: None,
            insertbefore: None,
            create: true,
            mode: Some(Mode::from("0600")),
            search_string: None,
            backrefs: false,
            firstmatch: false,
            backup: false,
            validate: None,
        };
        let mut o = args.apply(cx, g).await;
        o.result.insert("path".into(), json!(path));
        o
    }
}
