//! `backup: true`, shared by the kinds that rewrite a file (line, block, replace; copy and
//! template may follow): a copy of the file as it was, kept beside it under Ansible's name
//! (`basic.py` `backup_local`: `<path>.<pid>.<YYYY-MM-DD@HH:MM:SS>~`, the host's local time).
//! Only the copy; when a kind backs up and what key returns the name is the kind's.

use super::{Outcome, StepCtx};
use crate::template::shell_quote;

/// Ansible's backup name from its parts, so the rule is testable without a host.
pub fn backup_name(path: &str, pid: u32, stamp: &str) -> String {
    format!("{path}.{pid}.{stamp}~")
}

/// Copies `path` (mode, owner and times kept, as `preserved_copy` does) to its backup name and
/// returns that name. The pid is the remote shell's, standing in for the module's.
pub async fn backup_local(cx: &StepCtx<'_>, path: &str) -> Result<String, Outcome> {
    let script = format!(
        "f={f}; d=$(date +%Y-%m-%d@%H:%M:%S); cp -p -- \"$f\" \"$f.$$.$d~\" && printf '%s %s' $$ \"$d\"",
        f = shell_quote(path)
    );
    let out = cx.sh(&script, None).await?;
    let said = String::from_utf8_lossy(&out.stdout);
    match said.split_once(' ').and_then(|(pid, stamp)| Some((pid.parse().ok()?, stamp))) {
        Some((pid, stamp)) if out.success() => Ok(backup_name(path, pid, stamp)),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(Outcome::failed(format!("Could not make backup of '{path}': {}", err.trim())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_are_ansibles() {
        assert_eq!(backup_name("/etc/x.conf", 4242, "2026-12-01@06:33:22"), "/etc/x.conf.4242.2026-12-01@06:33:22~");
    }
}
