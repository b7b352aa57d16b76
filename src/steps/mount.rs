//! `mount` (Ansible's `ansible.posix.mount`, which ansible-core routes the short name to) on
//! Linux: a mount point in fstab and in the running system, decided as the module decides it.
//! fstab is rewritten as the module rewrites it (the line for `path` replaced as
//! `src path fstype opts dump passno` with its fields escaped, or added; other lines kept as they
//! are); `mounted` creates the directory, writes fstab and mounts, or remounts where the line
//! changed and it is mounted already (an unmount and mount where remount fails); `present` only
//! writes fstab; `unmounted` unmounts; `absent` removes the line, unmounts and removes the
//! directory; `absent_from_fstab` only removes the line; `remounted` remounts. Mounted is what
//! `mountpoint` says (bind mounts included), as the module reads /proc/self/mountinfo.

use serde::{Deserialize, Serialize};

use super::edit::{Safeguards, open_for_edit, write_guarded};
use super::{Flag, Guards, Kind, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MountArgs {
    pub path: String,
    pub state: String,
    pub src: Option<String>,
    pub fstype: Option<String>,
    pub opts: Option<String>,
    #[serde(default = "zero")]
    pub dump: String,
    #[serde(default = "zero")]
    pub passno: String,
    #[serde(default = "yes")]
    pub boot: Flag,
    #[serde(default = "default_fstab")]
    pub fstab: String,
    #[serde(default = "no")]
    pub backup: Flag,
}

fn zero() -> String {
    "0".into()
}

fn yes() -> Flag {
    Flag::Value(true)
}

fn no() -> Flag {
    Flag::Value(false)
}

fn default_fstab() -> String {
    "/etc/fstab".into()
}

pub const STATES: &[&str] = &["mounted", "present", "unmounted", "absent", "absent_from_fstab", "remounted"];

/// The fields of the line the module writes.
struct Line {
    src: String,
    name: String,
    fstype: String,
    opts: String,
    dump: String,
    passno: String,
}

impl Kind for MountArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        let state = a.state.as_str();
        if !STATES.contains(&state) {
            return Outcome::failed(format!("state: '{state}' is not supported (copctl has {})", STATES.join(", ")));
        }
        if matches!(state, "mounted" | "present") && (a.src.is_none() || a.fstype.is_none()) {
            return Outcome::failed(format!("state is {state} but all of the following are missing: src, fstype"));
        }
        let mut opts = a.opts.clone().unwrap_or_else(|| "defaults".into());
        if !a.boot.get() && !opts.split(',').any(|o| o == "noauto") {
            opts.push_str(",noauto");
        }
        let line = Line {
            src: escape(a.src.as_deref().unwrap_or("")),
            name: escape(&a.path),
            fstype: escape(a.fstype.as_deref().unwrap_or("")),
            opts: escape(&opts),
            dump: escape(&a.dump),
            passno: escape(&a.passno),
        };
        let q = shell_quote(&a.path);
        let edit = match open_for_edit(cx, &a.fstab, Presence::Present, true, None).await {
            Ok(e) => e,
            Err(o) => return o,
        };
        let old = edit.current.as_ref().map(|c| c.0.clone());
        let fstab_arg =
            if a.fstab == "/etc/fstab" { String::new() } else { format!(" -T {}", shell_quote(&a.fstab)) };
        let old = old.as_deref();
        let mode = edit.file_mode;
        let mut changed = false;
        match state {
            "absent_from_fstab" | "absent" => {
                let (new, removed) = unset(&edit.text, &line, a.src.as_deref());
                if removed {
                    changed = true;
                    if !cx.check {
                        if let Err(o) = write_fstab(cx, a, old, new, mode).await {
                            return o;
                        }
                        if state == "absent" {
                            match mounted(cx, &q).await {
                                Ok(true) => match run(cx, format!("umount {q}")).await {
                                    Ok((true, _)) => {}
                                    Ok((false, msg)) => {
                                        return Outcome::failed(format!("Error unmounting {}: {}", a.path, msg.trim()));
                                    }
                                    Err(o) => return o,
                                },
                                Ok(false) => {}
                                Err(o) => return o,
                            }
                            if let Err(o) = must(cx, format!("[ ! -e {q} ] || rmdir {q}"), &format!("Error rmdir {}", a.path)).await {
                                return o;
                            }
                        }
                    }
                }
            }
            "unmounted" => match mounted(cx, &q).await {
                Ok(true) => {
                    changed = true;
                    if !cx.check
                        && let Err(o) = must(cx, format!("umount {q}"), &format!("Error unmounting {}", a.path)).await
                    {
                        return o;
                    }
                }
                Ok(false) => {}
                Err(o) => return o,
            },
            "present" => match put_line(cx, a, &edit.text, &line, old, mode).await {
                Ok(differs) => changed = differs,
                Err(o) => return o,
            },
            "remounted" => {
                changed = true;
                if !cx.check
                    && let Err(msg) = remount(cx, &q, &fstab_arg, state, &opts).await
                {
                    return Outcome::failed(format!("Error remounting {}: {msg}", a.path));
                }
            }
            _ => {
                // mounted
                if !cx.check
                    && let Err(o) = must(cx, format!("[ -e {q} ] || mkdir -p {q}"), &format!("Error making dir {}", a.path)).await
                {
                    return o;
                }
                match put_line(cx, a, &edit.text, &line, old, mode).await {
                    Ok(differs) => changed = differs,
                    Err(o) => return o,
                }
                let is_mounted = match mounted(cx, &q).await {
                    Ok(m) => m,
                    Err(o) => return o,
                };
                let result = if is_mounted {
                    if changed && !cx.check { remount(cx, &q, &fstab_arg, state, &opts).await } else { Ok(()) }
                } else {
                    changed = true;
                    if cx.check {
                        Ok(())
                    } else {
                        match run(cx, format!("mount{fstab_arg} {q}")).await {
                            Ok((true, _)) => Ok(()),
                            Ok((false, msg)) => Err(msg.trim().to_string()),
                            Err(o) => return o,
                        }
                    }
                };
                if let Err(msg) = result {
                    // The module puts fstab back as it was.
                    if let Some(old) = old {
                        let _ = cx.conn.put(crate::transport::PutSource::Bytes(old.as_bytes().to_vec()), &a.fstab, mode).await;
                    }
                    return Outcome::failed(format!("Error mounting {}: {msg}", a.path));
                }
            }
        }
        if changed { Outcome::changed(format!("{} {state}", a.path)) } else { Outcome::ok("") }
    }
}

/// Writes fstab (a backup first when asked).
async fn write_fstab(cx: &StepCtx<'_>, a: &MountArgs, old: Option<&str>, new: String, mode: u32) -> Result<(), Outcome> {
    let g = Safeguards { backup: a.backup.get(), validate: None };
    write_guarded(cx, &a.fstab, old, new, mode, &format!("{} in fstab", a.path), &g).await.map(drop)
}

/// fstab with the path's line set (written unless in check mode): whether it differed.
async fn put_line(
    cx: &StepCtx<'_>,
    a: &MountArgs,
    text: &str,
    line: &Line,
    old: Option<&str>,
    mode: u32,
) -> Result<bool, Outcome> {
    let (new, differs) = set(text, line, a.src.as_deref());
    if differs && !cx.check {
        write_fstab(cx, a, old, new, mode).await?;
    }
    Ok(differs)
}

/// Runs a command that must succeed: its failure is `what` with what it printed.
async fn must(cx: &StepCtx<'_>, cmd: String, what: &str) -> Result<(), Outcome> {
    match run(cx, cmd).await? {
        (true, _) => Ok(()),
        (false, msg) => Err(Outcome::failed(format!("{what}: {}", msg.trim()))),
    }
}

/// Runs a command: whether it succeeded, and what it printed.
async fn run(cx: &StepCtx<'_>, cmd: String) -> Result<(bool, String), Outcome> {
    let out = cx.sh(&cmd, None).await?;
    Ok((out.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))))
}

/// Whether something is mounted at the (quoted) path.
async fn mounted(cx: &StepCtx<'_>, q: &str) -> Result<bool, Outcome> {
    let cmd = format!(
        "if command -v mountpoint >/dev/null 2>&1; then mountpoint -q {q}; \
         else [ -d {q} ] && [ \"$(stat -c %d {q})\" != \"$(stat -c %d {q}/..)\" ]; fi"
    );
    Ok(run(cx, cmd).await?.0)
}

/// `mount -o remount`, and where that fails an unmount and a mount (the module's remount).
async fn remount(cx: &StepCtx<'_>, q: &str, fstab_arg: &str, state: &str, opts: &str) -> Result<(), String> {
    let o = if state == "remounted" && opts != "defaults" { format!("remount,{opts}") } else { "remount".into() };
    let (ok, _) = run(cx, format!("mount -o {}{fstab_arg} {q}", shell_quote(&o))).await.map_err(|o| o.msg)?;
    if ok {
        return Ok(());
    }
    if state == "remounted" && opts != "defaults" {
        return Err("Options were specified with remounted, but the remount command failed. Failing in order to prevent an unexpected mount result. Try replacing this command with a \"state: unmounted\" followed by a \"state: mounted\" using the full desired mount options instead.".into());
    }
    let (ok, msg) = run(cx, format!("umount {q}")).await.map_err(|o| o.msg)?;
    if !ok {
        return Err(msg.trim().to_string());
    }
    let (ok, msg) = run(cx, format!("mount{fstab_arg} {q}")).await.map_err(|o| o.msg)?;
    if ok { Ok(()) } else { Err(msg.trim().to_string()) }
}

/// The module's escaping of fstab fields: `\` as `\134`, space as `\040`, `&` as `\046`.
fn escape(v: &str) -> String {
    v.replace('\\', "\\134").replace(' ', "\\040").replace('&', "\\046")
}

/// fstab with the line for `l.name` set (the module's `_set_mount_save_old`): whether it differs.
fn set(text: &str, l: &Line, raw_src: Option<&str>) -> (String, bool) {
    let mut out = String::new();
    let (mut exists, mut changed) = (false, false);
    for line in text.split_inclusive('\n') {
        let line = if line.ends_with('\n') { line.to_string() } else { format!("{line}\n") };
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            out.push_str(&line);
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if !(4..=6).contains(&fields.len()) {
            out.push_str(&line);
            continue;
        }
        // A missing dump or passno is the number 0 to the module, which no text equals: such a
        // line is always rewritten.
        let get = |i: usize| fields.get(i).map(|s| s.to_string()).unwrap_or_else(|| "\0missing".into());
        let (src, name, fstype, opts, dump, passno) = (get(0), get(1), get(2), get(3), get(4), get(5));
        let swap_other = raw_src.is_some_and(|s| name == "none" && fstype == "swap" && src != s);
        if name != l.name || swap_other {
            out.push_str(&line);
            continue;
        }
        exists = true;
        let want = [&l.src, &l.fstype, &l.opts, &l.dump, &l.passno];
        let have = [&src, &fstype, &opts, &dump, &passno];
        if want.iter().zip(have.iter()).any(|(w, h)| w != h) {
            changed = true;
            out.push_str(&format!("{} {} {} {} {} {}\n", l.src, name, l.fstype, l.opts, l.dump, l.passno));
        } else {
            out.push_str(&line);
        }
    }
    if !exists {
        out.push_str(&format!("{} {} {} {} {} {}\n", l.src, l.name, l.fstype, l.opts, l.dump, l.passno));
        changed = true;
    }
    (out, changed)
}

/// fstab without the line for `l.name` (the module's `unset_mount`): whether one was removed.
fn unset(text: &str, l: &Line, raw_src: Option<&str>) -> (String, bool) {
    let mut out = String::new();
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        let fields: Vec<&str> = line.split_whitespace().collect();
        if t.is_empty() || t.starts_with('#') || fields.len() != 6 {
            out.push_str(line);
            continue;
        }
        let swap_other = raw_src.is_some_and(|s| fields[1] == "none" && fields[2] == "swap" && fields[0] != s);
        if fields[1] != l.name || swap_other {
            out.push_str(line);
            continue;
        }
        changed = true;
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(src: &str, name: &str, fstype: &str, opts: &str) -> Line {
        Line {
            src: escape(src),
            name: escape(name),
            fstype: fstype.into(),
            opts: opts.into(),
            dump: "0".into(),
            passno: "0".into(),
        }
    }

    #[test]
    fn fstab_is_rewritten_as_the_module_rewrites_it() {
        let text = "# fstab\nUUID=1 / ext4 errors=remount-ro 0 1\ntmpfs /mnt/data tmpfs size=5m\nbad\n/dev/sdb1 /srv xfs defaults 0 0";
        let (_, changed) = set("tmpfs /mnt/data tmpfs size=10m\n", &line("tmpfs", "/mnt/data", "tmpfs", "size=10m"), None);
        assert!(changed, "four fields: dump and passno are the number 0, never the text");
        let (new, changed) = set(text, &line("tmpfs", "/mnt/data", "tmpfs", "size=10m"), Some("tmpfs"));
        assert!(changed);
        assert_eq!(
            new,
            "# fstab\nUUID=1 / ext4 errors=remount-ro 0 1\ntmpfs /mnt/data tmpfs size=10m 0 0\nbad\n/dev/sdb1 /srv xfs defaults 0 0\n"
        );
        let (same, changed) = set(&new, &line("tmpfs", "/mnt/data", "tmpfs", "size=10m"), Some("tmpfs"));
        assert!(!changed, "the same line: unchanged");
        assert_eq!(same, new);
        let (added, _) = set(&new, &line("/srv/my data", "/mnt/my data", "none", "bind"), None);
        assert!(added.ends_with("/srv/my\\040data /mnt/my\\040data none bind 0 0\n"), "{added}");
        let (removed, changed) = unset(&new, &line("", "/srv", "", ""), None);
        assert!(changed);
        assert_eq!(removed, "# fstab\nUUID=1 / ext4 errors=remount-ro 0 1\ntmpfs /mnt/data tmpfs size=10m 0 0\nbad\n");
    }
}
