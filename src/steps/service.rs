//! `service`: a systemd unit started / stopped / restarted / reloaded, enabled / disabled,
//! masked / unmasked, with an optional daemon-reload (and daemon-reexec) first. One script checks each property and
//! changes only what differs (restarted and reloaded always act).

use serde::{Deserialize, Serialize};

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ServiceState {
    Started,
    Stopped,
    Restarted,
    Reloaded,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceArgs {
    /// The unit; none for a step that only reloads or re-executes systemd.
    #[serde(default)]
    pub name: String,
    pub state: Option<ServiceState>,
    pub enabled: Option<bool>,
    pub masked: Option<bool>,
    #[serde(default)]
    pub daemon_reload: bool,
    /// `systemctl daemon-reexec` first (after any daemon-reload), as Ansible's systemd module
    /// runs it: not a change by itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub daemon_reexec: bool,
}

impl Kind for ServiceArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        if a.name.is_empty() && (a.state.is_some() || a.enabled.is_some() || a.masked.is_some()) {
            return Outcome::failed("name is required to start, stop, enable or mask a unit");
        }
        let mut s = format!(
            "CHECK={}; u={}; do_() {{ echo \"CHANGED $1\"; [ $CHECK = 1 ] || eval \"$2\" || exit 1; }}\n",
            cx.check as u8,
            shell_quote(&a.name)
        );
        if a.daemon_reload {
            s.push_str("[ $CHECK = 1 ] || systemctl daemon-reload || exit 1\n");
        }
        if a.daemon_reexec {
            s.push_str("[ $CHECK = 1 ] || systemctl daemon-reexec || exit 1\n");
        }
        match a.masked {
            Some(true) => s.push_str(
                "[ \"$(systemctl is-enabled \"$u\" 2>/dev/null)\" = masked ] || do_ masked 'systemctl mask \"$u\"'\n",
            ),
            Some(false) => s.push_str(
                "[ \"$(systemctl is-enabled \"$u\" 2>/dev/null)\" != masked ] || do_ unmasked 'systemctl unmask \"$u\"'\n",
            ),
            None => {}
        }
        match a.enabled {
            Some(true) => {
                s.push_str("systemctl is-enabled -q \"$u\" 2>/dev/null || do_ enabled 'systemctl enable \"$u\"'\n")
            }
            Some(false) => {
                s.push_str("! systemctl is-enabled -q \"$u\" 2>/dev/null || do_ disabled 'systemctl disable \"$u\"'\n")
            }
            None => {}
        }
        match a.state {
            Some(ServiceState::Started) => {
                s.push_str("systemctl is-active -q \"$u\" || do_ started 'systemctl start \"$u\"'\n")
            }
            Some(ServiceState::Stopped) => {
                s.push_str("! systemctl is-active -q \"$u\" || do_ stopped 'systemctl stop \"$u\"'\n")
            }
            Some(ServiceState::Restarted) => s.push_str("do_ restarted 'systemctl restart \"$u\"'\n"),
            Some(ServiceState::Reloaded) => s.push_str("do_ reloaded 'systemctl reload \"$u\"'\n"),
            None => {}
        }
        let out = match cx.sh(&s, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let changes = super::reported_changes(&out);
        if !out.success() {
            let mut o = Outcome::failed(format!(
                "{}: {}",
                a.name,
                String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("systemctl failed")
            ))
            .with_output(&out);
            o.commands.push(s);
            return o;
        }
        let mut o = if changes.is_empty() {
            Outcome::ok("")
        } else {
            Outcome::changed(format!("{}: {}", a.name, changes.join(", ")))
        };
        o.commands.push(s);
        o
    }
}
