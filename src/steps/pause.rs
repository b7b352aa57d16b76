//! `pause` for a time: waits `seconds` (or `minutes`; at least one second, as Ansible's action)
//! and changes nothing. Its result has the action's keys (`start`, `stop`, `delta`, `stdout`
//! "Paused for N seconds", `user_input` empty, as without a terminal). Ansible pauses once for
//! all the hosts of a batch; copctl's hosts run on their own, so each host waits the time. A
//! pause that waits for a key press (no time given) is refused when the playbook loads.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Number, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct PauseArgs {
    pub seconds: Option<Number>,
    pub minutes: Option<Number>,
    /// Shown in Ansible's output only; without a terminal nothing is read.
    pub prompt: Option<String>,
    #[serde(default)]
    pub echo: Option<bool>,
}

impl Kind for PauseArgs {
    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, _: &StepCtx<'_>, _: &Guards) -> Outcome {
        let (n, unit) = match (&self.seconds, &self.minutes) {
            (_, Some(m)) => (m.get().map(|m| m * 60), "minutes"),
            (Some(s), None) => (s.get(), "seconds"),
            (None, None) => return Outcome::failed("pause: seconds or minutes is required"),
        };
        let secs = match n {
            Ok(s) => s.max(1),
            Err(e) => return Outcome::failed(format!("pause: {e}")),
        };
        let start = chrono::Local::now();
        let t = Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let stop = chrono::Local::now();
        let took = t.elapsed().as_secs_f64();
        let shown = if unit == "minutes" { took / 60.0 } else { took };
        let stdout = format!("Paused for {:?} {unit}", (shown * 100.0).round() / 100.0);
        let mut o = Outcome::ok(stdout.clone());
        let at = |t: chrono::DateTime<chrono::Local>| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
        o.result.insert("start".into(), json!(at(start)));
        o.result.insert("stop".into(), json!(at(stop)));
        o.result.insert("delta".into(), json!(took as u64));
        o.result.insert("echo".into(), json!(self.echo.unwrap_or(true)));
        o.result.insert("rc".into(), json!(0));
        o.result.insert("stdout".into(), json!(stdout));
        o.result.insert("stderr".into(), json!(""));
        o.result.insert("user_input".into(), json!(""));
        o
    }
}
