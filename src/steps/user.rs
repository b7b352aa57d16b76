//! `user` (Ansible's user module on Linux): an account present with the uid, primary group,
//! supplementary groups, comment, home, shell and password hash asked for, or absent. One
//! script reads the account (passwd, shadow, the groups listing it, the groups named), the
//! `useradd`/`usermod`/`userdel` line is decided here by Ansible's rules, and run only when
//! something differs.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Flag, Guards, Kind, Number, OneOrMany, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserArgs {
    pub name: String,
    #[serde(default)]
    pub state: Presence,
    pub uid: Option<Number>,
    /// The primary group.
    pub group: Option<String>,
    /// Supplementary groups (a list or comma-separated); `""` for none.
    pub groups: Option<OneOrMany<String>>,
    /// Add `groups` to the ones the account has instead of setting them.
    pub append: Option<Flag>,
    pub comment: Option<String>,
    pub home: Option<String>,
    pub shell: Option<String>,
    /// A crypted password hash (as in /etc/shadow), never a cleartext password.
    pub password: Option<String>,
    /// `always` (the default) or `on_create`.
    pub update_password: Option<String>,
    pub system: Option<Flag>,
    /// Create the home directory for a new account (default yes).
    pub create_home: Option<Flag>,
    /// With `state: absent`, remove the home directory too.
    pub remove: Option<Flag>,
    /// With `state: absent`, `userdel -f`.
    pub force: Option<Flag>,
}

/// What the host has: the passwd fields, the shadow hash, the groups listing the account, and
/// each named group's `name:gid` (None where it does not exist).
#[derive(Debug, Default, PartialEq)]
struct Current {
    passwd: Option<Vec<String>>,
    shadow: String,
    member_of: Vec<String>,
    named: Vec<(String, Option<(String, String)>)>,
}

fn parse(text: &str) -> Current {
    let mut parts = text.split("@@\n");
    let passwd = parts.next().unwrap_or("").trim();
    let passwd = (!passwd.is_empty() && passwd != "-").then(|| passwd.split(':').map(str::to_string).collect());
    let shadow = parts.next().unwrap_or("").trim().to_string();
    let member_of = parts.next().unwrap_or("").lines().map(str::to_string).filter(|l| !l.is_empty()).collect();
    let named = parts
        .next()
        .unwrap_or("")
        .lines()
        .filter_map(|l| {
            if let Some(missing) = l.strip_prefix("- ") {
                return Some((missing.to_string(), None));
            }
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 3).then(|| (f[0].to_string(), Some((f[0].to_string(), f[2].to_string()))))
        })
        .collect();
    Current { passwd, shadow, member_of, named }
}

impl UserArgs {
    fn wanted_groups(&self) -> Option<Vec<String>> {
        let g = self.groups.as_ref()?;
        let mut out: Vec<String> = Vec::new();
        for x in g.to_vec().iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
            if !out.iter().any(|o| o == x) {
                out.push(x.to_string());
            }
        }
        Some(out)
    }

    fn lookup<'c>(&self, cur: &'c Current, g: &str) -> Result<&'c (String, String), String> {
        cur.named
            .iter()
            .find(|(n, _)| n == g)
            .and_then(|(_, i)| i.as_ref())
            .ok_or_else(|| format!("Group {g} does not exist"))
    }

    /// The command that brings the account where it should be, `None` when it is there.
    fn command(&self, cur: &Current) -> Result<Option<Vec<String>>, String> {
        let on = |f: &Option<Flag>, default: bool| f.as_ref().map_or(default, Flag::get);
        let Some(pw) = &cur.passwd else {
            if self.state == Presence::Absent {
                return Ok(None);
            }
            let mut cmd = vec!["useradd".to_string()];
            if let Some(u) = &self.uid {
                cmd.extend(["-u".into(), u.get()?.to_string()]);
            }
            if let Some(g) = &self.group {
                self.lookup(cur, g)?;
                cmd.extend(["-g".into(), g.clone()]);
            } else if cur.named.iter().any(|(n, i)| *n == self.name && i.is_some()) {
                // A group named as the account exists already: useradd must not try to make it.
                cmd.push("-N".into());
            }
            if let Some(groups) = self.wanted_groups().filter(|g| !g.is_empty()) {
                for g in &groups {
                    self.lookup(cur, g)?;
                }
                cmd.extend(["-G".into(), groups.join(",")]);
            }
            for (flag, v) in [("-c", &self.comment), ("-d", &self.home), ("-s", &self.shell), ("-p", &self.password)] {
                if let Some(v) = v {
                    cmd.extend([flag.to_string(), v.clone()]);
                }
            }
            cmd.push(if on(&self.create_home, true) { "-m" } else { "-M" }.into());
            if on(&self.system, false) {
                cmd.push("-r".into());
            }
            cmd.push(self.name.clone());
            return Ok(Some(cmd));
        };
        if self.state == Presence::Absent {
            let mut cmd = vec!["userdel".to_string()];
            if on(&self.force, false) {
                cmd.push("-f".into());
            }
            if on(&self.remove, false) {
                cmd.push("-r".into());
            }
            cmd.push(self.name.clone());
            return Ok(Some(cmd));
        }
        let field = |i: usize| pw.get(i).map(String::as_str).unwrap_or("");
        let mut cmd = vec!["usermod".to_string()];
        if let Some(u) = &self.uid {
            let u = u.get()?.to_string();
            if field(2) != u {
                cmd.extend(["-u".into(), u]);
            }
        }
        if let Some(g) = &self.group {
            let (_, gid) = self.lookup(cur, g)?;
            if field(3) != gid {
                cmd.extend(["-g".into(), gid.clone()]);
            }
        }
        if let Some(groups) = self.wanted_groups() {
            let append = on(&self.append, false);
            let mut names = Vec::new();
            for g in &groups {
                names.push(self.lookup(cur, g)?.0.clone());
            }
            let differ = names.iter().any(|g| !cur.member_of.contains(g)) || cur.member_of.iter().any(|g| !names.contains(g));
            let need = if names.is_empty() {
                !cur.member_of.is_empty() && !append
            } else if append {
                names.iter().any(|g| !cur.member_of.contains(g))
            } else {
                differ
            };
            if need {
                if append {
                    cmd.push("-a".into());
                }
                cmd.extend(["-G".into(), names.join(",")]);
            }
        }
        for (flag, want, i) in [("-c", &self.comment, 4), ("-d", &self.home, 5), ("-s", &self.shell, 6)] {
            if let Some(w) = want
                && field(i) != w
            {
                cmd.extend([flag.to_string(), w.clone()]);
            }
        }
        if self.update_password.as_deref().unwrap_or("always") == "always"
            && let Some(p) = &self.password
            && cur.shadow.trim_start_matches('!') != p.trim_start_matches('!')
        {
            cmd.extend(["-p".into(), p.clone()]);
        }
        if cmd.len() == 1 {
            return Ok(None);
        }
        cmd.push(self.name.clone());
        Ok(Some(cmd))
    }
}

impl Kind for UserArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        if let Some(u) = self.update_password.as_deref()
            && u != "always"
            && u != "on_create"
        {
            return Outcome::failed(format!("update_password '{u}' is not always or on_create"));
        }
        let mut names: Vec<String> = self.group.iter().cloned().collect();
        names.extend(self.wanted_groups().unwrap_or_default());
        names.push(self.name.clone());
        let lookups: String = names
            .iter()
            .map(|g| format!("getent group {q} || echo '- '{q}; ", q = shell_quote(g)))
            .collect();
        let read = format!(
            "n={n}; getent passwd \"$n\" || echo -; echo @@; {shadow}echo @@; \
             getent group | awk -F: -v u=\"$n\" '{{k=split($4,m,\",\"); for(i=1;i<=k;i++) if(m[i]==u) {{print $1; break}}}}'; \
             echo @@; {lookups}true",
            n = shell_quote(&self.name),
            shadow = if self.password.is_some() { "getent shadow \"$n\" | cut -d: -f2; " } else { "" },
        );
        let out = match cx.sh(&read, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(format!("cannot read the account {}: {}", self.name, String::from_utf8_lossy(&out.stderr).trim()));
        }
        let cur = parse(&String::from_utf8_lossy(&out.stdout));
        let cmd = match self.command(&cur) {
            Ok(c) => c,
            Err(e) => return Outcome::failed(e),
        };
        let mut o = match cmd {
            None => Outcome::ok(""),
            Some(cmd) => {
                let line = cmd.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
                // The hash is not shown: the line is said with it withheld.
                let shown = match &self.password {
                    Some(p) => line.replace(&shell_quote(p), "********"),
                    None => line.clone(),
                };
                if cx.check {
                    let mut o = Outcome::changed(format!("would run: {shown}"));
                    o.commands.push(shown);
                    o
                } else {
                    match cx.sh(&line, None).await {
                        Err(o) => return o,
                        Ok(r) if !r.success() => {
                            let mut o = Outcome::failed(format!(
                                "{} failed: {}",
                                cmd[0],
                                String::from_utf8_lossy(&r.stderr).trim()
                            ));
                            o.commands.push(shown);
                            return o;
                        }
                        Ok(_) => {
                            let mut o = Outcome::changed(shown.clone());
                            o.commands.push(shown);
                            o
                        }
                    }
                }
            }
        };
        // Ansible makes a missing home directory of an account that exists whenever
        // create_home holds (its default), not only when it creates the account.
        if self.state == Presence::Present && self.create_home.as_ref().is_none_or(Flag::get) && !cx.check {
            let script = format!("n={}; {HOME_SCRIPT}", shell_quote(&self.name));
            match cx.sh(&script, None).await {
                Err(e) => return e,
                Ok(r) if !r.success() => {
                    return Outcome::failed(format!(
                        "cannot make the home directory of {}: {}",
                        self.name,
                        String::from_utf8_lossy(&r.stderr).trim()
                    ));
                }
                Ok(r) => {
                    if let Some(h) = super::reported_changes(&r).first() {
                        if o.status == super::Status::Ok {
                            o = Outcome::changed(format!("home directory {h} made"));
                        }
                        o.commands.push(script);
                    }
                }
            }
        }
        o.result.insert("name".into(), json!(self.name));
        o.result.insert("state".into(), json!(if self.state == Presence::Absent { "absent" } else { "present" }));
        // The account as Ansible's module returns it once present: uid, group (its gid),
        // comment, home and shell, from the passwd entry.
        if self.state == Presence::Present {
            let script = format!("getent passwd {}", shell_quote(&self.name));
            if let Ok(r) = cx.sh(&script, None).await
                && r.success()
            {
                let line = String::from_utf8_lossy(&r.stdout).trim().to_string();
                let f: Vec<&str> = line.split(':').collect();
                if f.len() >= 7 {
                    let num = |s: &str| s.parse::<u64>().map(|n| json!(n)).unwrap_or_else(|_| json!(s));
                    o.result.insert("uid".into(), num(f[2]));
                    o.result.insert("group".into(), num(f[3]));
                    o.result.insert("comment".into(), json!(f[4]));
                    o.result.insert("home".into(), json!(f[5]));
                    o.result.insert("shell".into(), json!(f[6]));
                }
            }
        }
        o
    }
}

/// The account's home directory when it is missing, made as Ansible's `create_homedir` makes
/// it: a copy of /etc/skel (else empty), its mode from login.defs' HOME_MODE or UMASK (else
/// 0755), owned by the account throughout.
const HOME_SCRIPT: &str = "e=$(getent passwd \"$n\") || exit 0; h=$(printf %s \"$e\" | cut -d: -f6); \
    u=$(printf %s \"$e\" | cut -d: -f3); g=$(printf %s \"$e\" | cut -d: -f4); \
    [ -z \"$h\" ] || [ -e \"$h\" ] && exit 0; \
    if [ -d /etc/skel ]; then mkdir -p \"$(dirname \"$h\")\" && cp -a /etc/skel \"$h\" || exit 1; else mkdir -p \"$h\" || exit 1; fi; \
    m=755; if [ -f /etc/login.defs ]; then \
    d=$(awk '$1==\"HOME_MODE\" && NF==2 && $2~/^[0-9]+$/ {print \"H \" $2; exit} $1==\"UMASK\" && NF==2 && $2~/^[0-9]+$/ {u=$2} END {if (u!=\"\") print \"U \" u}' /etc/login.defs | head -1); \
    case \"$d\" in \"H \"*) m=${d#H };; \"U \"*) m=$(printf %o $(( 0777 & ~0${d#U } ))) ;; esac; fi; \
    chmod \"$m\" \"$h\" && chown -R \"$u:$g\" \"$h\" && echo \"CHANGED $h\"";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(yaml: &str) -> UserArgs {
        serde_saphyr::from_str(yaml).expect("args")
    }

    fn current(passwd: &str, member_of: &[&str], named: &[&str]) -> Current {
        let named: String = named.iter().map(|g| format!("{g}\n")).collect();
        parse(&format!("{passwd}\n@@\n$6$old\n@@\n{}\n@@\n{named}", member_of.join("\n")))
    }

    #[test]
    fn the_command_follows_ansibles_rules() {
        let absent = current("-", &[], &["app:x:900:", "- docker"]);
        // A new account whose name is a group already: -N, as Ansible adds it.
        assert_eq!(
            args("name: app\nshell: /bin/bash").command(&absent).unwrap(),
            Some(vec!["useradd".into(), "-N".into(), "-s".into(), "/bin/bash".into(), "-m".into(), "app".into()])
        );
        assert_eq!(args("name: app\ngroups: [docker]").command(&absent).unwrap_err(), "Group docker does not exist");
        let there = current("app:x:1001:900:App:/home/app:/bin/sh", &["wheel"], &["app:x:900:", "wheel:x:10:", "docker:x:20:"]);
        assert_eq!(args("name: app\nshell: /bin/sh\ngroup: app").command(&there).unwrap(), None);
        assert_eq!(
            args("name: app\ngroups: docker").command(&there).unwrap(),
            Some(vec!["usermod".into(), "-G".into(), "docker".into(), "app".into()])
        );
        assert_eq!(
            args("name: app\ngroups: docker\nappend: true").command(&there).unwrap(),
            Some(vec!["usermod".into(), "-a".into(), "-G".into(), "docker".into(), "app".into()])
        );
        assert_eq!(args("name: app\ngroups: wheel\nappend: true").command(&there).unwrap(), None);
        assert_eq!(args("name: app\ngroups: ''\nappend: true").command(&there).unwrap(), None);
        assert_eq!(
            args("name: app\npassword: '$6$new'").command(&there).unwrap(),
            Some(vec!["usermod".into(), "-p".into(), "$6$new".into(), "app".into()])
        );
        assert_eq!(args("name: app\npassword: '$6$new'\nupdate_password: on_create").command(&there).unwrap(), None);
        assert_eq!(
            args("name: app\nstate: absent\nremove: yes").command(&there).unwrap(),
            Some(vec!["userdel".into(), "-r".into(), "app".into()])
        );
        assert_eq!(args("name: app\nstate: absent").command(&absent).unwrap(), None);
    }
}
