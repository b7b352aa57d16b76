//! `validate:`, shared by the kinds that rewrite a file (line, block, replace; copy and template
//! may follow): the new content is written to a temporary file on the host, the command run
//! with `%s` replaced by that file's path, and the change refused when it fails, with Ansible's
//! messages (`lineinfile.py` `write_changes`).

use super::{Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::PutSource;

/// The command to run on `tmp`, or Ansible's refusal of a command without `%s`. The modules
/// put the path in with Python's `validate % path`: `%%` is a `%`, and one `%s` the path.
pub fn validate_command(validate: &str, tmp: &str) -> Result<String, String> {
    if !validate.contains("%s") {
        return Err(format!("validate must contain %s: {validate}"));
    }
    let mut out = String::new();
    let mut used = false;
    let mut chars = validate.char_indices();
    while let Some((_, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, '%')) => out.push('%'),
            Some((_, 's')) if !used => {
                out.push_str(tmp);
                used = true;
            }
            Some((_, 's')) => return Err(format!("validate: not enough arguments for format string: {validate}")),
            Some((i, x)) => {
                return Err(format!(
                    "validate: unsupported format character '{x}' (0x{:x}) at index {i}: {validate}",
                    x as u32
                ));
            }
            None => return Err(format!("validate: incomplete format: {validate}")),
        }
    }
    Ok(out)
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
    let out = run_on_temp(cx, validate, PutSource::Bytes(content.to_vec()), 0o600, None, None).await?;
    if out.success() {
        Ok(())
    } else {
        Err(Outcome::failed(failure_message(out.status, &String::from_utf8_lossy(&out.stderr))))
    }
}

/// copy's and template's `validate` (Ansible's copy module): the new content checked in a
/// temporary file with the file's mode and owner; a failure is the module's "failed to
/// validate" with the command's `exit_status`, `stdout` and `stderr`.
pub async fn validate_file(
    cx: &StepCtx<'_>,
    validate: &str,
    content: PutSource,
    mode: u32,
    owner: Option<&str>,
    group: Option<&str>,
) -> Result<(), Outcome> {
    let out = run_on_temp(cx, validate, content, mode, owner, group).await?;
    if out.success() {
        return Ok(());
    }
    let mut o = Outcome::failed("failed to validate").with_output(&out);
    o.result.remove("rc");
    // As run_command gives them, trailing newlines kept (command's strip_empty_ends is not here).
    o.result.insert("stdout".into(), serde_json::json!(String::from_utf8_lossy(&out.stdout)));
    o.result.insert("stderr".into(), serde_json::json!(String::from_utf8_lossy(&out.stderr)));
    o.result.insert("exit_status".into(), out.status.map(|s| serde_json::json!(s)).unwrap_or_default());
    Err(o)
}

/// Runs `validate` on `content` put in a temporary file on the host (removed after).
async fn run_on_temp(
    cx: &StepCtx<'_>,
    validate: &str,
    content: PutSource,
    mode: u32,
    owner: Option<&str>,
    group: Option<&str>,
) -> Result<crate::transport::ExecOutput, Outcome> {
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
        cx.conn.put(content, &tmp, mode).await.map_err(super::transport_outcome)?;
        if owner.is_some() || group.is_some() {
            let spec = format!("{}{}", owner.unwrap_or(""), group.map(|g| format!(":{g}")).unwrap_or_default());
            let out = cx.sh(&format!("chown {} {}", shell_quote(&spec), shell_quote(&tmp)), None).await?;
            if !out.success() {
                return Err(Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
            }
        }
        let cmd = validate_command(validate, &tmp).map_err(Outcome::failed)?;
        cx.sh(&cmd, None).await
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
        assert_eq!(validate_command("stat -c %%a %s", "/tmp/t1").unwrap(), "stat -c %a /tmp/t1");
        assert_eq!(
            validate_command("cmp %s %s", "/t").unwrap_err(),
            "validate: not enough arguments for format string: cmp %s %s"
        );
        assert_eq!(failure_message(Some(1), ""), "failed to validate: rc:1 error:");
        assert_eq!(failure_message(Some(2), "grep: x\n"), "failed to validate: rc:2 error:grep: x\n");
    }
}
