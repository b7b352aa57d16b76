//! `group` (Ansible's group module on Linux): a group present (with its gid) or absent, by
//! `groupadd`/`groupmod`/`groupdel`, run only when the host differs.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Flag, Guards, Kind, Number, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupArgs {
    pub name: String,
    #[serde(default)]
    pub state: Presence,
    pub gid: Option<Number>,
    pub system: Option<Flag>,
}

impl GroupArgs {
    /// The command for a host where the group's entry is `current` (`name:x:gid:members`).
    fn command(&self, current: Option<&str>) -> Result<Option<Vec<String>>, String> {
        let gid = current.and_then(|l| l.split(':').nth(2));
        let want = self.gid.as_ref().map(Number::get).transpose()?.map(|g| g.to_string());
        Ok(match (self.state, gid) {
            (Presence::Absent, None) => None,
            (Presence::Absent, Some(_)) => Some(vec!["groupdel".into(), self.name.clone()]),
            (Presence::Present, None) => {
                let mut cmd = vec!["groupadd".to_string()];
                if let Some(g) = &want {
                    cmd.extend(["-g".into(), g.clone()]);
                }
                if self.system.as_ref().is_some_and(Flag::get) {
                    cmd.push("-r".into());
                }
                cmd.push(self.name.clone());
                Some(cmd)
            }
            (Presence::Present, Some(have)) => match want {
                Some(want) if want != have => Some(vec!["groupmod".into(), "-g".into(), want, self.name.clone()]),
                _ => None,
            },
        })
    }
}

impl Kind for GroupArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let read = format!("getent group {} || true", shell_quote(&self.name));
        let out = match cx.sh(&read, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().next().filter(|l| !l.is_empty());
        let mut o = match self.command(line) {
            Err(e) => return Outcome::failed(e),
            Ok(None) => Outcome::ok(""),
            Ok(Some(cmd)) => {
                let line = cmd.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
                if cx.check {
                    Outcome::changed(format!("would run: {line}"))
                } else {
                    match cx.sh(&line, None).await {
                        Err(o) => return o,
                        Ok(r) if !r.success() => {
                            Outcome::failed(format!("{} failed: {}", cmd[0], String::from_utf8_lossy(&r.stderr).trim()))
                        }
                        Ok(_) => {
                            let mut o = Outcome::changed(line.clone());
                            o.commands.push(line);
                            o
                        }
                    }
                }
            }
        };
        o.result.insert("name".into(), json!(self.name));
        o.result.insert("state".into(), json!(if self.state == Presence::Absent { "absent" } else { "present" }));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_follows_ansibles_rules() {
        let g = |gid: Option<&str>, state: Presence| GroupArgs {
            name: "app".into(),
            state,
            gid: gid.map(|g| Number::Text(g.into())),
            system: Some(Flag::Value(true)),
        };
        let v = |s: &[&str]| Ok(Some(s.iter().map(|x| x.to_string()).collect::<Vec<_>>()));
        assert_eq!(g(Some("900"), Presence::Present).command(None), v(&["groupadd", "-g", "900", "-r", "app"]));
        assert_eq!(g(Some("900"), Presence::Present).command(Some("app:x:900:")), Ok(None));
        assert_eq!(g(Some("901"), Presence::Present).command(Some("app:x:900:")), v(&["groupmod", "-g", "901", "app"]));
        assert_eq!(g(None, Presence::Present).command(Some("app:x:900:")), Ok(None));
        assert_eq!(g(None, Presence::Absent).command(Some("app:x:900:")), v(&["groupdel", "app"]));
        assert_eq!(g(None, Presence::Absent).command(None), Ok(None));
    }
}
