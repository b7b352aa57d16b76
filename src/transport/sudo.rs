//! Become with sudo, with nothing on a command line but fixed text: sudo runs a small reader
//! (`sh -c READER`) whose stdin carries, in order, the sudo password line (when there is one), a
//! random tag line, the script's length and the script, then the script's own stdin (an upload's
//! bytes). The script and every secret in it travel inside the SSH channel, never in a process's
//! argv where `ps` on the host would show them. sudo's refusals (a password needed, a wrong one,
//! `requiretty`, not in sudoers) become errors that say what to do; a wrong password never hangs:
//! stdin ends, sudo gives up.

use crate::template::shell_quote;
use crate::transport::{ExecOutput, HostSpec, TransportError, random_hex};

/// How one host becomes its become user.
#[derive(Debug, Clone)]
pub struct Sudo {
    command: String,
    password: Option<String>,
    tag: String,
    prompt: String,
    login: String,
    user: String,
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
        // The reader skips what sudo left of its password line (nothing, or the whole line when
        // sudo did not ask), reads exactly the script, and runs it with the rest of stdin.
        let reader = format!(
            "while IFS= read -r l; do [ \"$l\" = {tag} ] && break; done; IFS= read -r n; s=$(head -c \"$n\"); eval \"$s\""
        );
        let auth = match &b.password {
            Some(_) => format!("-S -p {}", shell_quote(&prompt)),
            None => "-n".to_string(),
        };
        Some(Sudo {
            command: format!("sudo {auth} -H -u {} -- /bin/sh -c {}", shell_quote(&b.user), shell_quote(&reader)),
            password: b.password.as_ref().map(|p| p.expose().to_string()),
            tag,
            prompt,
            login: spec.endpoint.user.clone(),
            user: b.user.clone(),
        })
    }

    /// The command line and the start of stdin that run `script` as the become user; the
    /// script's own stdin, if any, follows.
    pub fn wrap(&self, script: &str) -> (String, Vec<u8>) {
        let mut input = Vec::with_capacity(script.len() + 96);
        if let Some(p) = &self.password {
            input.extend_from_slice(p.as_bytes());
            input.push(b'\n');
        }
        input.extend_from_slice(format!("{}\n{}\n", self.tag, script.len()).as_bytes());
        input.extend_from_slice(script.as_bytes());
        (self.command.clone(), input)
    }

    /// sudo's own refusal as an error saying what to do; otherwise the output with sudo's
    /// prompt taken out of stderr.
    pub fn check(&self, host: &str, mut out: ExecOutput) -> Result<ExecOutput, TransportError> {
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
        let (cmd, input) = sudo.wrap("echo s3cret");
        assert!(!cmd.contains("s3cret") && !cmd.contains("pw'1"), "{cmd}");
        assert!(cmd.starts_with("sudo -S -p '[copctl-become-"), "{cmd}");
        let text = String::from_utf8(input).unwrap();
        assert_eq!(text, format!("pw'1\n{}\n11\necho s3cret", sudo.tag));
        let no_pw = Sudo::for_spec(&spec(None)).unwrap();
        assert!(no_pw.wrap("true").0.starts_with("sudo -n -H -u root -- /bin/sh -c "));
    }

    #[test]
    fn becoming_the_login_user_is_no_become() {
        let mut s = spec(None);
        s.endpoint.user = "root".into();
        assert!(Sudo::for_spec(&s).is_none());
    }
}
