//! A path's mode, owner and group made what a step asks (Ansible's
//! `set_fs_attributes_if_different`): each compared first and changed only where it differs (in
//! check mode only reported). No kind of its own.

use super::{Outcome, StepCtx};
use crate::template::shell_quote;

/// Whether anything differed (and, outside check mode, was changed).
pub async fn file_attrs(
    cx: &StepCtx<'_>,
    path: &str,
    mode: Option<u32>,
    owner: Option<&str>,
    group: Option<&str>,
) -> Result<bool, Outcome> {
    if mode.is_none() && owner.is_none() && group.is_none() {
        return Ok(false);
    }
    let q = shell_quote(path);
    let act = |cmd: String| if cx.check { "echo CHANGED".to_string() } else { format!("{cmd} && echo CHANGED") };
    let mut s = String::new();
    if let Some(m) = mode {
        s.push_str(&format!(
            "[ \"$(stat -c %a {q})\" = {m:o} ] || {{ {}; }} || exit 1\n",
            act(format!("chmod {m:o} {q}"))
        ));
    }
    if let Some(u) = owner {
        let u = shell_quote(u);
        s.push_str(&format!(
            "[ \"$(stat -c %U {q})\" = {u} ] || [ \"$(stat -c %u {q})\" = {u} ] || {{ {}; }} || exit 1\n",
            act(format!("chown {u} {q}"))
        ));
    }
    if let Some(g) = group {
        let g = shell_quote(g);
        s.push_str(&format!(
            "[ \"$(stat -c %G {q})\" = {g} ] || [ \"$(stat -c %g {q})\" = {g} ] || {{ {}; }} || exit 1\n",
            act(format!("chgrp {g} {q}"))
        ));
    }
    let out = cx.sh(&s, None).await?;
    if !out.success() {
        return Err(Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()).with_output(&out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().any(|l| l == "CHANGED"))
}
