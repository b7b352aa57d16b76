//! `sysctl` (Ansible's `ansible.posix.sysctl`): a kernel parameter kept in a sysctl file and,
//! when asked, in the running kernel. As the module does it: the file is rewritten whole (every
//! `k = v` line normalised to `k=v`, a key's later duplicates dropped, lines stripped), only when
//! the key's value there differs; `reload` (the default) runs `sysctl -p FILE` after a change,
//! and counts a kernel value that differs from a correct file as a change; `sysctl_set` sets the
//! kernel's value with `sysctl -w`. The kernel's value is what `sysctl -e -n KEY` prints.

use serde::{Deserialize, Serialize};

use super::edit::{Safeguards, open_for_edit, write_guarded};
use super::{Flag, Guards, Kind, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SysctlArgs {
    pub name: String,
    /// Required when present; a boolean is `1`/`0`, as are yes/no/on/off/true/false.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
    #[serde(default)]
    pub state: Presence,
    #[serde(default = "yes")]
    pub reload: Flag,
    #[serde(default = "no")]
    pub sysctl_set: Flag,
    #[serde(default = "no")]
    pub ignoreerrors: Flag,
    #[serde(default = "default_file")]
    pub sysctl_file: String,
}

fn yes() -> Flag {
    Flag::Value(true)
}

fn no() -> Flag {
    Flag::Value(false)
}

fn default_file() -> String {
    "/etc/sysctl.conf".into()
}

impl Kind for SysctlArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let name = self.name.trim();
        let present = self.state == Presence::Present;
        let value = match (&self.value, present) {
            (Some(v), _) => parse_value(v),
            (None, true) => return Outcome::failed("value cannot be None"),
            (None, false) => String::new(),
        };
        if name.is_empty() {
            return Outcome::failed("name cannot be blank");
        }
        if present && value.is_empty() {
            return Outcome::failed("value cannot be blank");
        }
        let proc_value = match cx.sh(&format!("LC_ALL=C sysctl -e -n {}", shell_quote(name)), None).await {
            Ok(out) if out.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
            Ok(_) => None,
            Err(o) => return o,
        };
        let file = &self.sysctl_file;
        let edit = match open_for_edit(cx, file, Presence::Present, true, None).await {
            Ok(e) => e,
            Err(o) => return o,
        };
        let (in_file, fixed) = fix_lines(&edit.text, name, present.then_some(value.as_str()));
        let kernel_differs = !same_words(proc_value.as_deref(), &value);
        let (mut changed, write) = match (in_file.as_deref(), present) {
            (None, true) => (true, true),
            (None, false) => (false, false),
            (Some(v), false) => (!v.is_empty(), !v.is_empty()),
            (Some(v), true) if v != value => (true, true),
            (Some(_), true) => (self.reload.get() && kernel_differs, false),
        };
        let mut set_proc = false;
        if self.sysctl_set.get() && present && kernel_differs {
            changed = true;
            set_proc = proc_value.is_some();
        }
        let mut o = if changed { Outcome::changed(format!("{name}={value}")) } else { Outcome::ok("") };
        if cx.check {
            return o;
        }
        if set_proc {
            let e = if self.ignoreerrors.get() { "-e " } else { "" };
            let cmd = format!("LC_ALL=C sysctl {e}-w {}", shell_quote(&format!("{name}={value}")));
            if let Err(msg) = run_sysctl(cx, &cmd).await {
                return Outcome::failed(format!("setting {name} failed: {msg}"));
            }
        }
        if write {
            let g = Safeguards::default();
            let old = edit.current.as_ref().map(|c| c.0.as_str());
            match write_guarded(cx, file, old, fixed, edit.file_mode, &format!("{name}={value}"), &g).await {
                Ok((w, _)) => {
                    if w.diff.is_some() {
                        o.diff = w.diff;
                    }
                }
                Err(o) => return o,
            }
        }
        if changed && self.reload.get() {
            let e = if self.ignoreerrors.get() { "-e " } else { "" };
            if let Err(msg) = run_sysctl(cx, &format!("LC_ALL=C sysctl {e}-p {}", shell_quote(file))).await {
                return Outcome::failed(format!("Failed to reload sysctl: {msg}"));
            }
        }
        o
    }
}

/// Runs a sysctl command; `Err` is its stdout and stderr when it failed, or when its stderr
/// says it could not set a key although it exited 0 (as the module checks).
async fn run_sysctl(cx: &StepCtx<'_>, cmd: &str) -> Result<(), String> {
    let out = cx.sh(cmd, None).await.map_err(|o| o.msg)?;
    let err = String::from_utf8_lossy(&out.stderr);
    let failed_key = regex::Regex::new(r#"(?m)^sysctl: setting key "[^"]+": (Invalid argument|Read-only file system)$"#)
        .expect("a valid pattern");
    if !out.success() || failed_key.is_match(&err) {
        return Err(format!("{}{err}", String::from_utf8_lossy(&out.stdout)));
    }
    Ok(())
}

/// The module's value: booleans (and their words) as `1`/`0`, text stripped.
fn parse_value(v: &serde_json::Value) -> String {
    const TRUE: &[&str] = &["y", "yes", "on", "1", "true", "t"];
    const FALSE: &[&str] = &["n", "no", "off", "0", "false", "f"];
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::Bool(b) => if *b { "1" } else { "0" }.into(),
        serde_json::Value::String(s) if TRUE.contains(&s.to_lowercase().as_str()) => "1".into(),
        serde_json::Value::String(s) if FALSE.contains(&s.to_lowercase().as_str()) => "0".into(),
        serde_json::Value::String(s) => s.trim().into(),
        other => other.to_string(),
    }
}

/// Whether the kernel's value has the same words as the wanted one (none read: no).
fn same_words(kernel: Option<&str>, want: &str) -> bool {
    kernel.is_some_and(|k| k.split_whitespace().eq(want.split_whitespace()))
}

/// The key's value in the file (its last `k = v` line's, as the module reads them) and the
/// file as the module rewrites it: each line stripped, `k = v` lines as `k=v` with only a key's
/// first line kept, the key's line set to `value` (dropped for none), or appended.
fn fix_lines(text: &str, name: &str, value: Option<&str>) -> (Option<String>, String) {
    let is_setting = |l: &str| !(l.is_empty() || l.starts_with('#') || l.starts_with(';') || !l.contains('='));
    let mut current = None;
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim();
        if !is_setting(line) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let (k, v) = line.split_once('=').expect("a line with =");
        let (k, v) = (k.trim(), v.trim());
        if k == name {
            current = Some(v.to_string());
        }
        if seen.iter().any(|s| s == k) {
            continue;
        }
        seen.push(k.to_string());
        match (k == name, value) {
            (true, Some(want)) => out.push_str(&format!("{k}={want}\n")),
            (true, None) => {}
            (false, _) => out.push_str(&format!("{k}={v}\n")),
        }
    }
    if let Some(want) = value
        && !seen.iter().any(|s| s == name)
    {
        out.push_str(&format!("{name}={want}\n"));
    }
    (current, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_rewritten_as_the_module_rewrites_it() {
        let text = "# kernel\n  net.ipv4.ip_forward = 0\nvm.swappiness= 10 \nnet.ipv4.ip_forward=1\n; old\nnoequals\n";
        let (cur, new) = fix_lines(text, "net.ipv4.ip_forward", Some("1"));
        assert_eq!(cur.as_deref(), Some("1"), "the last line of a key is its value");
        assert_eq!(new, "# kernel\nnet.ipv4.ip_forward=1\nvm.swappiness=10\n; old\nnoequals\n");
        let (cur, new) = fix_lines(text, "vm.swappiness", None);
        assert_eq!(cur.as_deref(), Some("10"));
        assert_eq!(new, "# kernel\nnet.ipv4.ip_forward=0\n; old\nnoequals\n", "absent: the key's line goes");
        let (cur, new) = fix_lines("", "vm.max_map_count", Some("262144"));
        assert_eq!((cur, new.as_str()), (None, "vm.max_map_count=262144\n"));
    }

    #[test]
    fn values_are_the_modules_words() {
        assert_eq!(parse_value(&serde_json::json!(true)), "1");
        assert_eq!(parse_value(&serde_json::json!("Off")), "0");
        assert_eq!(parse_value(&serde_json::json!(" 4096 ")), "4096");
        assert_eq!(parse_value(&serde_json::json!(65536)), "65536");
        assert!(same_words(Some("4096\t87380  6291456\n"), "4096 87380 6291456"));
        assert!(!same_words(Some("\n"), "1"));
        assert!(!same_words(None, "1"));
    }
}
