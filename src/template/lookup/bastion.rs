//! The lookups that read the bastion itself: its environment (`env`), the output of commands
//! run there (`pipe`, `lines`) and the passwords kept in its files (`password`).

use std::path::PathBuf;

use minijinja::ErrorKind;
use minijinja::value::{Kwargs, Value};

use super::{PLANNING, fail, text, texts};
use crate::template::password;

/// Ansible's env lookup: an unset variable is an error here, not Ansible's silent empty string,
/// unless a default is given (the `default` option, or a second term).
pub(super) fn env(kind: &str, terms: &[Value], kw: &Kwargs) -> Result<Vec<Value>, minijinja::Error> {
    let names = texts(kind, terms)?;
    // Ansible's `default=` option; an unset variable without one is an error here.
    let default: Option<String> = kw.get("default")?;
    Ok(match names.as_slice() {
        [name] => vec![Value::from(match (std::env::var(name), default) {
            (Ok(v), _) => v,
            (Err(_), Some(d)) => d,
            (Err(_), None) => {
                return Err(fail(format!("lookup('env', '{name}'): the environment variable {name} is not set")));
            }
        })],
        [name, default] => vec![Value::from(std::env::var(name).unwrap_or_else(|_| default.clone()))],
        _ => return Err(fail("lookup('env', ...) takes one argument (and a default)".into())),
    })
}

/// Ansible's password lookup, each term a file of the playbook's directory (`password`).
pub(super) fn passwords(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let base = state.lookup("playbook_dir").and_then(|v| v.as_str().map(PathBuf::from));
    let planning = PLANNING.with(|p| p.get());
    let mut out = Vec::new();
    for t in terms {
        out.push(Value::from(password::password_lookup(&text(kind, t)?, kw, base.as_deref(), planning)?));
    }
    Ok(out)
}

/// Ansible's lines lookup: the lines of each command's output (pipe's, split).
pub(super) fn lines(state: &minijinja::State, kind: &str, terms: &[Value]) -> Result<Vec<Value>, minijinja::Error> {
    let cmds = texts(kind, terms)?;
    let mut out = Vec::new();
    for (cmd, o) in cmds.iter().zip(pipe_lookup(state, &cmds).map_err(|e| {
        let msg = e.detail().unwrap_or_default().replace("lookup_plugin.pipe(", "lookup_plugin.lines(");
        fail(msg)
    })?) {
        let _ = cmd;
        out.extend(o.as_str().unwrap_or_default().lines().map(Value::from));
    }
    Ok(out)
}

/// Ansible's pipe lookup: each term a shell command run on the bastion in the playbook's
/// directory, its output with trailing white space stripped; a command that fails is Ansible's
/// error.
pub(super) fn pipe_lookup(state: &minijinja::State, terms: &[String]) -> Result<Vec<Value>, minijinja::Error> {
    let mut out = Vec::new();
    for cmd in terms {
        if PLANNING.with(|p| p.get()) {
            out.push(Value::from(""));
            continue;
        }
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg(cmd).stdin(std::process::Stdio::null());
        if let Some(dir) =
            state.lookup("playbook_dir").and_then(|v| v.as_str().map(PathBuf::from)).filter(|d| d.is_dir())
        {
            c.current_dir(dir);
        }
        let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
        let o = c.output().map_err(|e| fail(format!("lookup('pipe', '{cmd}'): {e}")))?;
        if !o.status.success() {
            return Err(fail(format!("lookup_plugin.pipe({cmd}) returned {}", o.status.code().unwrap_or(-1))));
        }
        out.push(Value::from(String::from_utf8_lossy(&o.stdout).trim_end()));
    }
    Ok(out)
}
