//! `validate:`, shared by the kinds that rewrite a file (line, block, replace; copy and template
//! may follow): the new content is written to a temporary file on the host, the command run
//! with `%s` replaced by that file's path, and the change refused when it fails, with Ansible's
//! messages (`lineinfile.py` `write_changes`).

use super::{Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::PutSource;

/// The command to run on `tmp`, or Ansible's refusal of a command without `%s`.
pub fn validate_command(validate: &str, tmp: &str) -> Result<String, String> {
    if !validate.contains("%s") {
        return Err(format!("validate must contain %s: {validate}"));
    }
    Ok(validate.replace("%s", tmp))
}

/// Ansible's message for a validation that failed (its `err` is the whole stderr).
pub fn failure_message(rc: Option<u32>, stderr: &str) -> String {
    let rc = rc.map(|r| r.to_string()).unwrap_or_else(|| "None".into());
    format!("failed to validate: rc:{rc} error:{stderr}")
}

/// Checks `content` with `validate`; `Err` is the step's failed outcome. The command runs in the
/// host's shell (Ansible splits it into words and runs it without one: the same for commands
/// without shell syntax).
pub async fn validate(cx: &StepCtx<'_>, validate: &str, content: &[u8]) -> Result<(), Outcome> {
    validate_command(validate, "").map_err(Outcome::failed)?;
    let made = cx.sh("mktemp", None).await?;
    let tmp = String::from_utf8_lossy(&made.stdout).trim().to_string();
    if !made.success() || tmp.is_empty() {
        return Err(Outcome::failed(format!(
            "validate: could not make a temporary file: {}",
            String::from_utf8_lossy(&made.stderr).trim()
        )));
    }
    let checked = async {
        cx.conn.put(PutSource::Bytes(content.to_vec()), &tmp, 0o600).await.map_err(super::transport_outcome)?;
        let cmd = validate_command(validate, &tmp).map_err(Outcome::failed)?;
        let out = cx.sh(&cmd, None).await?;
        if out.success() {
            Ok(())
        } else {
            Err(Outcome::failed(failure_message(out.status, &String::from_utf8_lossy(&out.stderr))))
        }
    }
    .await;
    let _ = cx.sh(&format!("rm -f -- {}", shell_quote(&tmp)), None).await;
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_rules_are_ansibles() {
        assert_eq!(validate_command("visudo -cf %s", "/tmp/t1").unwrap(), "visudo -cf /tmp/t1");
        assert_eq!(validate_command("grep", "/tmp/t1").unwrap_err(), "validate must contain %s: grep");
        assert_eq!(failure_message(Some(1), ""), "failed to validate: rc:1 error:");
        assert_eq!(failure_message(Some(2), "grep: x\n"), "failed to validate: rc:2 error:grep: x\n");
    }
}
