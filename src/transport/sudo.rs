//! Become with sudo or su, with nothing on a command line but fixed text: sudo (or su) runs a
//! small reader (`sh -c READER`) whose stdin carries, in order, the password line (when there is
//! one), a random tag line, the script's length and the script, then the script's own stdin (an
//! upload's bytes). The script and every secret in it travel inside the SSH channel, never in a
//! process's argv where `ps` on the host would show them. The reader first prints a ready line:
//! su reads its password with one `read()` of whatever is waiting (PAM without a terminal), so
//! for su nothing follows the password until that line says su is done with stdin; and a
//! long-lived shell opened as the become user knows from it that the login succeeded.
//! Refusals (a password needed, a wrong one, `requiretty`, not in sudoers) become errors that
//! say what to do; a wrong password never hangs: stdin ends, sudo gives up; su tries once.

use crate::template::shell_quote;
use crate::transport::{ExecOutput, HostSpec, TransportError, random_hex};

/// How one host becomes its become user (sudo, or su).
#[derive(Debug, Clone)]
pub struct Sudo {
    su: bool,
    command: String,
    password: Option<String>,
    tag: String,
    prompt: String,
    login: String,
    user: String,
}

/// What runs one script as the become user: the command line, the bytes sent first, whether to
/// wait for the ready line before the rest, and the rest (the script's own stdin follows it).
#[derive(Debug)]
pub struct Wrapped {
    pub command: String,
    pub first: Vec<u8>,
    /// The ready line to wait for (su), or to take out of stdout only (sudo).
    pub ready: String,
    pub wait: bool,
    pub rest: Vec<u8>,
}

impl Wrapped {
    /// The output without the reader's ready line.
    pub fn strip_ready(&self, mut out: ExecOutput) -> ExecOutput {
        let line = format!("{}\n", self.ready);
        if out.stdout.starts_with(line.as_bytes()) {
            out.stdout.drain(..line.len());
        }
        out
    }

    /// Everything to send at once, for a connection that cannot wait for the ready line.
    pub fn all_input(&self) -> Vec<u8> {
        [&self.first[..], &self.rest[..]].concat()
    }
}

impl Sudo {
    /// `None` when the host does not become, or becomes the user it logs in as.
    pub fn for_spec(spec: &HostSpec) -> Option<Sudo> {
        let b = spec.r#become.as_ref()?;
        if b.user == spec.endpoint.user {
            return None;
        }
        let tag = format!("copctl-become-{}", random_hex());
        let prompt = format!("[{tag}] sudo password: ");
        // The reader says it runs, skips what is left of a password line (nothing, or the whole
        // line when sudo did not ask), reads exactly the script, and runs it with the rest of stdin.
        let reader = format!(
            "printf '%s\\n' {tag}-ready; while IFS= read -r l; do [ \"$l\" = {tag} ] && break; done; IFS= read -r n; s=$(head -c \"$n\"); eval \"$s\""
        );
        let command = if b.su {
            // su runs the target user's shell with -c; C messages, so its refusals can be read.
            format!(
                "LC_ALL=C su {} -c {}",
                shell_quote(&b.user),
                shell_quote(&format!("/bin/sh -c {}", shell_quote(&reader)))
            )
        } else {
            let auth = match &b.password {
                Some(_) => format!("-S -p {}", shell_quote(&prompt)),
                None => "-n".to_string(),
            };
            format!("sudo {auth} -H -u {} -- /bin/sh -c {}", shell_quote(&b.user), shell_quote(&reader))
        };
        Some(Sudo {
            su: b.su,
            command,
            password: b.password.as_ref().map(|p| p.expose().to_string()),
            tag,
            prompt,
            login: spec.endpoint.user.clone(),
            user: b.user.clone(),
        })
    }

    /// Who a shell opened through this runs as (a connection keeps shells per user).
    pub fn key(&self) -> String {
        format!("{}:{}", if self.su { "su" } else { "sudo" }, self.user)
    }

    /// The command line and the input that run `script` as the become user; the script's own
    /// stdin, if any, follows `rest`.
    pub fn wrap(&self, script: &str) -> Wrapped {
        let mut first = Vec::new();
        if let Some(p) = &self.password {
            first.extend_from_slice(p.as_bytes());
            first.push(b'\n');
        }
        let mut rest = Vec::with_capacity(script.len() + 64);
        rest.extend_from_slice(format!("{}\n{}\n", self.tag, script.len()).as_bytes());
        rest.extend_from_slice(script.as_bytes());
        let ready = format!("{}-ready", self.tag);
        if self.su {
            Wrapped { command: self.command.clone(), first, ready, wait: true, rest }
        } else {
            first.extend_from_slice(&rest);
            Wrapped { command: self.command.clone(), first, ready, wait: false, rest: Vec::new() }
        }
    }

    /// Whether su, waiting for the ready line, is asking for a password no one will give.
    pub fn su_asks(&self, stderr: &[u8]) -> bool {
        self.su && self.password.is_none() && String::from_utf8_lossy(stderr).contains("assword:")
    }

    /// The refusal when su asks for a password and none was given.
    pub fn needs_password(&self, host: &str) -> TransportError {
        let (login, user) = (&self.login, &self.user);
        TransportError::Remote {
            host: host.to_string(),
            reason: format!(
                "su: {login} needs the password of {user} to become {user}: give it with -K/--ask-become-pass, \
                 --become-password-file or ansible_become_password"
            ),
        }
    }

    /// sudo's or su's own refusal as an error saying what to do; otherwise the output with the
    /// password prompt taken out of stderr.
    pub fn check(&self, host: &str, out: ExecOutput) -> Result<ExecOutput, TransportError> {
        if self.su {
            return self.check_su(host, out);
        }
        let mut out = out;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let asked = stderr.contains(&self.prompt);
        if asked {
            out.stderr = stderr.replace(&self.prompt, "").into_bytes();
        }
        if out.status == Some(0) {
            return Ok(out);
        }
        let (login, user) = (&self.login, &self.user);
        let reason = if stderr.contains("sudo: a password is required") {
            format!(
                "sudo: {login} needs a password to become {user}: give it with -K/--ask-become-pass, \
                 --become-password-file or ansible_become_password"
            )
        } else if asked && (stderr.contains("incorrect password attempt") || stderr.contains("Sorry, try again")) {
            format!(
                "sudo refused the become password of {login} (to become {user}): check -K or ansible_become_password"
            )
        } else if stderr.contains("you must have a tty") {
            format!(
                "sudo on this host requires a terminal (requiretty) and copctl runs without one: allow \
                 `Defaults:{login} !requiretty` in sudoers"
            )
        } else if stderr.contains("is not in the sudoers file") || stderr.contains("is not allowed to execute") {
            format!("{login} may not become {user} with sudo on this host (sudoers)")
        } else if stderr.starts_with("sudo: ") && stderr.contains("command not found") {
            "sudo is not installed on this host: become needs it".to_string()
        } else {
            return Ok(out);
        };
        Err(TransportError::Remote { host: host.to_string(), reason })
    }

    fn check_su(&self, host: &str, mut out: ExecOutput) -> Result<ExecOutput, TransportError> {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if let Some(rest) = stderr.strip_prefix("Password: ") {
            out.stderr = rest.as_bytes().to_vec();
        }
        let ready = format!("{}-ready\n", self.tag);
        if out.stdout.starts_with(ready.as_bytes()) {
            return Ok(out);
        }
        // su never ran the reader: its own refusal.
        let (login, user) = (&self.login, &self.user);
        let reason = if stderr.contains("Authentication failure") {
            if self.password.is_some() {
                format!("su refused the become password of {user} (for {login}): check -K or ansible_become_password")
            } else {
                return Err(self.needs_password(host));
            }
        } else if stderr.contains("does not exist") || stderr.contains("Unknown id") {
            format!("su: the become user {user} does not exist on this host")
        } else if stderr.contains("must be run from a terminal") {
            "su on this host reads its password only from a terminal and copctl runs without one: use sudo".into()
        } else if out.status == Some(127) {
            "su is not installed on this host: become needs it".into()
        } else {
            format!("su failed: {}", stderr.trim())
        };
        Err(TransportError::Remote { host: host.to_string(), reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::SshConfigFile;
    use serde_json::json;

    fn spec(password: Option<&str>) -> HostSpec {
        let mut vars = crate::inventory::Vars::new();
        vars.insert("ansible_user".into(), json!("deploy"));
        vars.insert("ansible_become".into(), json!(true));
        if let Some(p) = password {
            vars.insert("ansible_become_password".into(), json!(p));
        }
        HostSpec::from_vars("h1", &vars, &SshConfigFile::default())
    }

    #[test]
    fn neither_the_script_nor_the_password_is_on_the_command_line() {
        let sudo = Sudo::for_spec(&spec(Some("pw'1"))).unwrap();
        let w = sudo.wrap("echo s3cret");
        let cmd = &w.command;
        assert!(!cmd.contains("s3cret") && !cmd.contains("pw'1"), "{cmd}");
        assert!(cmd.starts_with("sudo -S -p '[copctl-become-"), "{cmd}");
        assert!(!w.wait && w.rest.is_empty());
        assert_eq!(String::from_utf8(w.all_input()).unwrap(), format!("pw'1\n{}\n11\necho s3cret", sudo.tag));
        let no_pw = Sudo::for_spec(&spec(None)).unwrap();
        assert!(no_pw.wrap("true").command.starts_with("sudo -n -H -u root -- /bin/sh -c "));
    }

    #[test]
    fn su_gets_its_password_alone_and_the_script_after_the_ready_line() {
        let mut s = spec(Some("root-pw"));
        s.r#become.as_mut().unwrap().su = true;
        let su = Sudo::for_spec(&s).unwrap();
        let w = su.wrap("echo s3cret");
        assert!(w.command.starts_with("LC_ALL=C su root -c '/bin/sh -c "), "{}", w.command);
        assert!(!w.command.contains("s3cret") && !w.command.contains("root-pw"));
        assert_eq!((w.first.as_slice(), w.wait), (&b"root-pw\n"[..], true));
        assert_eq!(String::from_utf8(w.rest.clone()).unwrap(), format!("{}\n11\necho s3cret", su.tag));
        let out = ExecOutput {
            stdout: format!("{}-ready\nhi\n", su.tag).into_bytes(),
            status: Some(0),
            ..Default::default()
        };
        assert_eq!(w.strip_ready(su.check("h1", out).unwrap()).stdout, b"hi\n");
    }

    #[test]
    fn becoming_the_login_user_is_no_become() {
        let mut s = spec(None);
        s.endpoint.user = "root".into();
        assert!(Sudo::for_spec(&s).is_none());
    }
}
