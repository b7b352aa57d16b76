//! `hostname` (Ansible's hostname module): the host's name now and across boots, set the way the
//! module sets it. Where systemd runs (`systemctl` there and /run/systemd/system), through
//! `hostnamectl` (the static and pretty name, then the transient one); on a Debian-family host
//! without systemd, the `hostname` command and /etc/hostname. `use: systemd` (or `debian`, which
//! the module maps to the same) picks hostnamectl whatever runs. The new name becomes the facts
//! `ansible_hostname` and `ansible_nodename`, as the module returns them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Guards, Kind, Outcome, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostnameArgs {
    pub name: String,
    /// The module's `use`: `systemd` or `debian` (hostnamectl); unset, chosen from the host.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Strategy {
    Systemd,
    File,
}

impl Kind for HostnameArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let name = self.name.as_str();
        let strategy = match self.use_.as_deref() {
            Some("systemd" | "debian") => Strategy::Systemd,
            Some(other) => return Outcome::failed(format!("use: '{other}' is not supported (copctl has systemd and debian)")),
            None => match strategy(cx).await {
                Ok(s) => s,
                Err(o) => return o,
            },
        };
        if strategy == Strategy::Systemd && name.len() > 64 {
            return Outcome::failed("name cannot be longer than 64 characters on systemd servers, try a shorter name");
        }
        let read = async |cmd: &str| -> Result<String, Outcome> {
            let out = cx.sh(cmd, None).await?;
            if !out.success() {
                return Err(Outcome::failed(format!(
                    "Command failed rc={}, out={}, err={}",
                    out.status.unwrap_or(255),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )));
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let (current_cmd, permanent_cmd) = match strategy {
            Strategy::Systemd => ("hostnamectl --transient status", "hostnamectl --static status"),
            Strategy::File => ("hostname", "if [ -f /etc/hostname ]; then cat /etc/hostname; fi"),
        };
        let current = match read(current_cmd).await {
            Ok(c) => c,
            Err(o) => return o,
        };
        let permanent = match read(permanent_cmd).await {
            Ok(p) => p,
            Err(o) => return o,
        };
        let q = shell_quote(name);
        let set_permanent = match strategy {
            Strategy::Systemd => format!("hostnamectl --pretty --static set-hostname {q}"),
            Strategy::File => format!("printf '%s\\n' {q} > /etc/hostname"),
        };
        let set_current = match strategy {
            Strategy::Systemd => format!("hostnamectl --transient set-hostname {q}"),
            Strategy::File => format!("hostname {q}"),
        };
        // The module's order: systemd's static name before the transient one (NetworkManager
        // complains otherwise), the file strategy's current name first.
        let mut steps = vec![(current != name, set_current), (permanent != name, set_permanent)];
        if strategy == Strategy::Systemd {
            steps.reverse();
        }
        let changed = steps.iter().any(|(differs, _)| *differs);
        let mut commands = Vec::new();
        if !cx.check {
            for (differs, cmd) in &steps {
                if !differs {
                    continue;
                }
                if let Err(o) = read(cmd).await {
                    return o;
                }
                commands.push(cmd.clone());
            }
        }
        let before = if name != current { &current } else { &permanent };
        let mut o = if changed { Outcome::changed(format!("hostname {before} -> {name}")) } else { Outcome::ok("") };
        if changed && cx.diff {
            o.diff = Some(format!("--- before\n+++ after\n-hostname = {before}\n+hostname = {name}\n"));
        }
        let facts = Map::from_iter([
            ("ansible_hostname".to_string(), json!(name.split('.').next().unwrap_or(name))),
            ("ansible_nodename".to_string(), json!(name)),
        ]);
        o.result.insert("name".into(), json!(name));
        o.result.insert("ansible_facts".into(), Value::Object(facts.clone()));
        o.facts = Some(facts);
        o.commands = commands;
        o
    }
}

/// How the module would set the name on this host: hostnamectl where systemd runs, else the file
/// strategy of the Debian family; any other host is refused, naming its OS.
async fn strategy(cx: &StepCtx<'_>) -> Result<Strategy, Outcome> {
    let probe = "if command -v systemctl >/dev/null 2>&1 && { [ -e /run/systemd/system/ ] || [ -e /dev/.run/systemd/ ] \
                 || [ -e /dev/.systemd/ ]; }; then echo systemd; fi; . /etc/os-release 2>/dev/null; echo \"${ID:-unknown}\"";
    let out = cx.sh(probe, None).await?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.lines().any(|l| l == "systemd") {
        return Ok(Strategy::Systemd);
    }
    let id = text.lines().last().unwrap_or("unknown").trim().to_string();
    match id.as_str() {
        "debian" | "ubuntu" | "kylin" => Ok(Strategy::File),
        other => Err(Outcome::failed(format!(
            "hostname: without systemd, copctl sets the name only on Debian-family hosts (this one is '{other}')"
        ))),
    }
}
