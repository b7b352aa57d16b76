//! `copy`: a file from the bastion (read and hashed once per run, streamed to each host that
//! needs it) or inline `content` to a host; compared first (size, then sha1 on the host),
//! written atomically. A directory as `src` is copied whole, as Ansible's copy does it: the
//! directory itself into `dest` (`src/` ending in a slash: what it holds), each file as one
//! copy, the missing directories made (with `owner`/`group` when given). A `dest` ending in `/`
//! is a directory (made when missing) to put the file in. `remote_src`: the source is a file on
//! the host, copied there when its content differs (as Ansible's copy does it), compared and
//! copied in one remote command.

use serde::{Deserialize, Serialize};

use super::transfer::{BeforeWrite, Want, ensure_file};
use super::{Guards, Kind, Mode, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CopyArgs {
    pub src: Option<String>,
    pub content: Option<String>,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// `force: false`: a file already at `dest` is left as it is, whatever its content.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub force: bool,
    /// `src` is a path on the host, not on the bastion.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote_src: bool,
    /// The old file kept (Ansible's backup name) before a new content replaces it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    /// A command (`%s`: the new content's temporary file) that must succeed before it goes in.
    pub validate: Option<String>,
    /// The mode of the directories the copy makes (a directory's copy, a `dest` ending in `/`).
    pub directory_mode: Option<Mode>,
    /// A link at `dest` is followed: the file it points at gets the content, the link stays.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow: bool,
    /// The file's owner, group and ids in the result, as Ansible's module returns them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub file_result: bool,
}

impl CopyArgs {
    fn before(&self) -> BeforeWrite<'_> {
        BeforeWrite { backup: self.backup, validate: self.validate.as_deref() }
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Kind for CopyArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let mut o = self.put(cx).await;
        // A directory's copy returns what Ansible's does for a tree, not one file's attributes.
        if self.file_result && !self.src.as_ref().is_some_and(|s| cx.local_dir.join(s).is_dir()) {
            let src = self.src.as_ref().filter(|_| !self.remote_src).map(|s| cx.local_dir.join(s));
            let src = src.map(|s| std::path::absolute(&s).unwrap_or(s).display().to_string());
            super::transfer::file_result(cx, &mut o, src.as_deref().or(self.src.as_deref())).await;
        }
        o
    }
}

impl CopyArgs {
    async fn put(&self, cx: &StepCtx<'_>) -> Outcome {
        let followed;
        let a = if self.follow && !self.remote_src && !self.dest.ends_with('/') {
            match follow_link(cx, &self.dest).await {
                Ok(d) => {
                    followed = CopyArgs { dest: d, ..self.clone() };
                    &followed
                }
                Err(o) => return o,
            }
        } else {
            self
        };
        if a.remote_src {
            if a.backup || a.validate.is_some() {
                return Outcome::failed("copy: backup and validate with remote_src are not supported yet");
            }
            return remote_copy(cx, a).await;
        }
        if a.dest.ends_with('/')
            && let Some(src) = a.src.as_ref().filter(|s| !cx.local_dir.join(s).is_dir())
        {
            return into_dir(cx, a, src).await;
        }
        if !a.force {
            match super::transfer::stat(cx, &a.dest, false).await {
                Ok(Some(d)) if d.kind != "directory" => return Outcome::ok(""),
                Ok(_) => {}
                Err(o) => return o,
            }
        }
        match (&a.content, &a.src) {
            (Some(c), None) => {
                let want = Want::Bytes(c.clone().into_bytes());
                ensure_file(cx, &a.dest, want, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref(), a.before())
                    .await
            }
            (None, Some(src)) if cx.local_dir.join(src).is_dir() => copy_dir(cx, a, src).await,
            (None, Some(src)) => {
                let source = match super::source::source(&cx.local_dir.join(src)).await {
                    Ok(s) => s,
                    Err(e) => return Outcome::failed(e),
                };
                let want = Want::Source(source.clone());
                let (mode, owner, group) = (a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref());
                let o = ensure_file(cx, &a.dest, want, mode, owner, group, a.before()).await;
                if o.status != super::Status::Failed {
                    return o;
                }
                match super::transfer::into_directory(cx, &a.dest, src).await {
                    Some(dest) => ensure_file(cx, &dest, Want::Source(source), mode, owner, group, a.before()).await,
                    None => o,
                }
            }
            _ => Outcome::failed("copy needs exactly one of src or content"),
        }
    }
}

/// Where a link at `dest` points, in the end (`dest` itself where it is no link).
async fn follow_link(cx: &StepCtx<'_>, dest: &str) -> Result<String, Outcome> {
    let dest = super::home::expand_home(cx, dest).await?;
    let script = format!(
        "d={}; if [ -L \"$d\" ]; then readlink -f -- \"$d\"; else printf '%s' \"$d\"; fi",
        crate::template::shell_quote(&dest)
    );
    let out = cx.sh(&script, None).await?;
    if !out.success() {
        return Err(Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_string())
}

/// `mkdir -p "$t"`, then the `directory_mode` asked for on what it made.
fn make_dir(a: &CopyArgs) -> Result<String, String> {
    match a.directory_mode.as_ref().map(Mode::bits).transpose() {
        Ok(Some(m)) => Ok(format!("mkdir -p \"$t\" && chmod {m:o} \"$t\"")),
        Ok(None) => Ok("mkdir -p \"$t\"".to_string()),
        Err(e) => Err(format!("directory_mode: {e}")),
    }
}

/// The files and directories under `dir`, relative to it, sorted (directories before what they
/// hold).
fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<(String, bool)>) -> Result<(), String> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join(rel))
        .map_err(|e| format!("cannot read {} on the bastion: {e}", dir.join(rel).display()))?
        .flatten()
        .collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let r = if rel.is_empty() {
            e.file_name().to_string_lossy().into_owned()
        } else {
            format!("{rel}/{}", e.file_name().to_string_lossy())
        };
        let is_dir = e.path().is_dir();
        out.push((r.clone(), is_dir));
        if is_dir {
            walk(dir, &r, out)?;
        }
    }
    Ok(())
}

async fn copy_dir(cx: &StepCtx<'_>, a: &CopyArgs, src: &str) -> Outcome {
    use crate::template::shell_quote;
    let local = cx.local_dir.join(src);
    let dest = a.dest.trim_end_matches('/');
    let base = match (src.ends_with('/'), local.file_name()) {
        (false, Some(n)) => format!("{dest}/{}", n.to_string_lossy()),
        _ => dest.to_string(),
    };
    let base = match super::home::expand_home(cx, &base).await {
        Ok(b) => b,
        Err(o) => return o,
    };
    let mut entries = vec![(String::new(), true)];
    if let Err(e) = walk(&local, "", &mut entries) {
        return Outcome::failed(e);
    }
    let own = match (a.owner.as_deref(), a.group.as_deref()) {
        (None, None) => String::new(),
        (o, g) => format!(
            " && chown {}{} \"$t\"",
            o.map(shell_quote).unwrap_or_default(),
            g.map(|g| format!(":{}", shell_quote(g))).unwrap_or_default()
        ),
    };
    let mut changed = Vec::new();
    for (rel, is_dir) in entries {
        let target = if rel.is_empty() { base.clone() } else { format!("{base}/{rel}") };
        if is_dir {
            let make = match make_dir(a) {
                _ if cx.check => "true".to_string(),
                Ok(m) => format!("{m}{own}"),
                Err(e) => return Outcome::failed(e),
            };
            let script = format!(
                "t={}; if [ -d \"$t\" ]; then exit 0; fi; if [ -e \"$t\" ]; then echo \"$t exists and is not a directory\" >&2; exit 1; fi; {make} && echo CHANGED",
                shell_quote(&target)
            );
            let out = match cx.sh(&script, None).await {
                Ok(o) => o,
                Err(o) => return o,
            };
            if !out.success() {
                return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
            }
            if String::from_utf8_lossy(&out.stdout).contains("CHANGED") {
                changed.push(target);
            }
            continue;
        }
        let source = match super::source::source(&local.join(&rel)).await {
            Ok(s) => s,
            Err(e) => return Outcome::failed(e),
        };
        let want = Want::Source(source);
        let o = ensure_file(cx, &target, want, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref(), a.before())
            .await;
        match o.status {
            super::Status::Failed | super::Status::Unreachable => return o,
            super::Status::Changed => changed.push(target),
            _ => {}
        }
    }
    let mut o = if changed.is_empty() {
        Outcome::ok(format!("{base} is up to date"))
    } else {
        Outcome::changed(format!("copied {}", changed.join(", ")))
    };
    o.result.insert("dest".into(), serde_json::json!(format!("{dest}/")));
    o.result.insert("src".into(), serde_json::json!(local.display().to_string()));
    o
}

/// A file into the directory `dest` (ending in `/`), made first when missing.
async fn into_dir(cx: &StepCtx<'_>, a: &CopyArgs, src: &str) -> Outcome {
    use crate::template::shell_quote;
    let Some(name) = std::path::Path::new(src).file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Outcome::failed(format!("src '{src}' names no file"));
    };
    let dir = a.dest.trim_end_matches('/').to_string();
    let make = match make_dir(a) {
        _ if cx.check => "true".to_string(),
        Ok(m) => m,
        Err(e) => return Outcome::failed(e),
    };
    let script = format!("t={}; [ -d \"$t\" ] && exit 0; {make} && echo MADE", shell_quote(&dir));
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    if !out.success() {
        return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()).with_output(&out);
    }
    let made = String::from_utf8_lossy(&out.stdout).contains("MADE");
    if made && cx.check {
        // Ansible's check mode stops there: nothing in a directory that is not there yet.
        return Outcome::changed(format!("dest directory {dir} would be created"));
    }
    let dest = format!("{dir}/{name}");
    if !a.force && !made {
        match super::transfer::stat(cx, &dest, false).await {
            Ok(Some(d)) if d.kind != "directory" => return Outcome::ok(""),
            Ok(_) => {}
            Err(o) => return o,
        }
    }
    let source = match super::source::source(&cx.local_dir.join(src)).await {
        Ok(s) => s,
        Err(e) => return Outcome::failed(e),
    };
    let want = Want::Source(source);
    let mut o =
        ensure_file(cx, &dest, want, a.mode.as_ref(), a.owner.as_deref(), a.group.as_deref(), a.before()).await;
    if made && o.status == super::Status::Ok {
        o.status = super::Status::Changed;
    }
    o
}

/// `remote_src`: the host copies its own file, in one command: compared by content (a link at
/// `dest` is replaced), copied through a temporary file beside `dest` with the source's mode and
/// times (a new file: the umask's mode, as Ansible's atomic move leaves it), then
/// `mode`/`owner`/`group` as asked.
async fn remote_copy(cx: &StepCtx<'_>, a: &CopyArgs) -> Outcome {
    use crate::template::shell_quote;
    let Some(src) = &a.src else { return Outcome::failed("copy: remote_src needs src") };
    let (src, dest) = match (super::home::expand_home(cx, src).await, super::home::expand_home(cx, &a.dest).await) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(o), _) | (_, Err(o)) => return o,
    };
    let act = |cmd: &str| if cx.check { "true".to_string() } else { cmd.to_string() };
    let script = format!(
        r#"src={src}; dest={dest}
[ -e "$src" ] || {{ echo "Source $src not found" >&2; exit 1; }}
[ -d "$src" ] && {{ echo "copy: remote_src of a directory ($src) is not supported yet" >&2; exit 1; }}
[ -f "$src" ] || {{ echo "Cannot copy invalid source '$src': not a file" >&2; exit 1; }}
case "$dest" in */) if [ ! -d "$dest" ]; then {mkdir} || exit 1; echo MADE; {stop} fi ;; esac
[ -d "$dest" ] && dest="${{dest%/}}/$(basename "$src")"
echo "DEST $dest"
new=1
if [ -e "$dest" ] || [ -L "$dest" ]; then
  new=0
  {force}
  [ ! -L "$dest" ] && [ -f "$dest" ] && cmp -s "$src" "$dest" && exit 0
else
  d=$(dirname "$dest"); [ -d "$d" ] || {{ echo "Destination directory $d does not exist" >&2; exit 1; }}
fi
{copy} || exit 1
echo CHANGED
"#,
        src = shell_quote(&src),
        dest = shell_quote(&dest),
        mkdir = act("mkdir -p \"$dest\""),
        stop = if cx.check { "echo CHANGED; exit 0;" } else { "" },
        force = if a.force { "" } else { "echo EXISTS; exit 0" },
        copy = act(
            "t=$(mktemp \"$(dirname \"$dest\")/.copctl.XXXXXX\") && { cat \"$src\" > \"$t\" && chmod \"$(stat -c %a \"$src\")\" \"$t\" && touch -r \"$src\" \"$t\" && rm -f \"$dest\" && mv -f \"$t\" \"$dest\" || { rm -f \"$t\"; false; }; } && { [ $new = 0 ] || chmod \"$(printf %o $(( 0666 & ~$(umask) )))\" \"$dest\"; }"
        ),
    );
    let out = match cx.sh(&script, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    if !out.success() {
        return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()).with_output(&out);
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dest = text.lines().find_map(|l| l.strip_prefix("DEST ")).unwrap_or(&dest).to_string();
    let mut changed = text.lines().any(|l| l == "CHANGED" || l == "MADE");
    let exists = text.lines().any(|l| l == "EXISTS");
    let mode = match a.mode.as_ref().map(super::Mode::bits).transpose() {
        Ok(m) => m,
        Err(e) => return Outcome::failed(e.to_string()),
    };
    // In check mode a file not copied yet has no attributes to compare.
    if !(exists || cx.check && changed) {
        match super::file_attrs(cx, &dest, mode, a.owner.as_deref(), a.group.as_deref()).await {
            Ok(c) => changed |= c,
            Err(o) => return o,
        }
    }
    let mut o = if exists {
        Outcome::ok("file already exists")
    } else if changed {
        Outcome::changed(format!("{src} copied to {dest}"))
    } else {
        Outcome::ok(format!("{dest} is up to date"))
    };
    o.result.insert("dest".into(), serde_json::json!(dest));
    o.result.insert("src".into(), serde_json::json!(src));
    o
}
