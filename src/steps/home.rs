//! A module path's leading `~`: the remote user's home, as Ansible's `type='path'` arguments
//! expand it. Shared by the edit kinds, file and copy's dest (its own module so that neither
//! imports the other for it).

use std::borrow::Cow;

use super::{Outcome, StepCtx};

/// `path` with a leading `~` (alone or before `/`) replaced by the remote user's home.
pub(super) async fn expand_home(cx: &StepCtx<'_>, path: &str) -> Result<String, Outcome> {
    let rest = match path.strip_prefix('~') {
        Some(r) if r.is_empty() || r.starts_with('/') => r,
        _ => return Ok(path.to_string()),
    };
    let out = cx.sh("printf '%s' \"$HOME\"", None).await?;
    let home = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.success() || home.is_empty() {
        return Err(Outcome::failed(format!("{path}: the remote user has no home directory to expand ~ to")));
    }
    Ok(format!("{home}{rest}"))
}

/// A step's arguments with their `path` expanded: themselves when it has no `~`, else a copy
/// that `set` gives the expanded path.
pub(super) async fn with_home<'a, T: Clone>(
    cx: &StepCtx<'_>,
    args: &'a T,
    path: &str,
    set: impl FnOnce(&mut T, String),
) -> Result<Cow<'a, T>, Outcome> {
    let p = expand_home(cx, path).await?;
    if p == path {
        return Ok(Cow::Borrowed(args));
    }
    let mut owned = args.clone();
    set(&mut owned, p);
    Ok(Cow::Owned(owned))
}
