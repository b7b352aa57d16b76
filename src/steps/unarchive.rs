//! `unarchive` (Ansible's unarchive module) for tar archives (plain, gzip, bzip2, xz): the
//! archive from the bastion (streamed to a private temporary file, removed after) or already on
//! the host (`remote_src`), compared with `dest` by GNU tar's `--diff` and extracted only where
//! it differs, as the module decides it (the same differences counted: contents, size, time,
//! missing files, links, and owner, group or mode unless those are set); then `owner`, `group`
//! and `mode` applied to every extracted path and top directory, each a change where it differs.
//! The compression is found as the module finds it, trying gzip, none, bzip2 and xz in that
//! order; a zip archive is refused. In check mode it is skipped, as the module skips it for tar.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Flag, Guards, Kind, Mode, Outcome, StepCtx};
use crate::template::shell_quote;
use crate::transport::PutSource;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UnarchiveArgs {
    /// The archive: on the bastion (found beside the playbook when it was loaded), or on the
    /// host with `remote_src`.
    pub src: String,
    /// An existing directory on the host.
    pub dest: String,
    #[serde(default = "no")]
    pub remote_src: Flag,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub mode: Option<Mode>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub extra_opts: Vec<String>,
    #[serde(default = "no")]
    pub keep_newer: Flag,
    #[serde(default = "no")]
    pub list_files: Flag,
}

fn no() -> Flag {
    Flag::Value(false)
}

impl Kind for UnarchiveArgs {
    fn mode(&self) -> Option<&Mode> {
        self.mode.as_ref()
    }

    async fn apply(&self, cx: &StepCtx<'_>, g: &Guards) -> Outcome {
        let a = self;
        match super::command::guard(cx, g).await {
            Err(o) => return o,
            Ok(Some(o)) => {
                let mut s = Outcome::skipped(o.msg.replace("skipped: ", "skipped, since "));
                s.result.insert("msg".into(), json!(s.msg));
                return s;
            }
            Ok(None) => {}
        }
        let mode = match a.mode.as_ref().map(Mode::bits).transpose() {
            Ok(m) => m,
            Err(e) => return Outcome::failed(e.to_string()),
        };
        let remote = a.remote_src.get();
        let src = if remote {
            a.src.clone()
        } else {
            let local = cx.local_dir.join(&a.src);
            if !local.is_file() {
                return Outcome::failed(format!("Source '{}' failed to transfer", a.src));
            }
            let name = local.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let tmp = format!("/tmp/.copctl-unarchive-{}-{}-{name}", std::process::id(), crate::transport::random_hex());
            if let Err(e) = cx.conn.put(PutSource::File(local), &tmp, 0o600).await {
                return super::transport_outcome(e);
            }
            tmp
        };
        let o = unpack(cx, a, &src, mode).await;
        if !remote {
            let _ = cx.sh(&format!("rm -f {}", shell_quote(&src)), None).await;
        }
        o
    }
}

/// The archive's handler, its comparison with `dest`, the extraction and the attributes.
async fn unpack(cx: &StepCtx<'_>, a: &UnarchiveArgs, src: &str, mode: Option<u32>) -> Outcome {
    let (s, d) = (shell_quote(src), shell_quote(&a.dest));
    let shown = if a.remote_src.get() { a.src.clone() } else { src.to_string() };
    // The module's checks before anything else, with its messages.
    let pre = format!(
        "if [ ! -e {s} ]; then echo \"Source '{shown}' does not exist\"; exit 3; fi\n\
         if [ ! -s {s} ]; then echo \"Invalid archive '{shown}', the file is 0 bytes\"; exit 3; fi\n\
         if [ ! -d {d} ]; then echo \"Destination '{dest}' is not a directory\"; exit 3; fi\n\
         if command -v unzip >/dev/null 2>&1 && unzip -Z {s} >/dev/null 2>&1; then echo zip; exit 0; fi\n\
         for fl in -z '' -j -J; do if LC_ALL=C tar --list -C {d} $fl -f {s} >/dev/null 2>&1; then echo \"flag $fl\"; exit 0; fi; done\n\
         echo \"Failed to find handler for \\\"{shown}\\\". Make sure the required command to extract the file is installed.\"; exit 3",
        dest = a.dest,
    );
    let out = match cx.sh(&pre, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.success() {
        return Outcome::failed(said);
    }
    if said == "zip" {
        return Outcome::failed(format!("{shown}: copctl extracts tar archives (plain, gzip, bzip2, xz); zip is not supported yet"));
    }
    let flag = said.strip_prefix("flag").unwrap_or("").trim().to_string();
    let handler = match flag.as_str() {
        "-z" => "TgzArchive",
        "-j" => "TarBzipArchive",
        "-J" => "TarXzArchive",
        _ => "TarArchive",
    };
    if cx.check {
        let mut o = Outcome::skipped("remote module (unarchive) does not support check mode when using gtar");
        o.result.insert("msg".into(), json!(o.msg));
        return o;
    }
    let mut opts: Vec<String> = Vec::new();
    if !flag.is_empty() {
        opts.push(flag.clone());
    }
    if !a.extra_opts.is_empty() {
        opts.push("--show-transformed-names".into());
        opts.extend(a.extra_opts.iter().cloned());
    }
    let mut owned = opts.clone();
    if let Some(o) = &a.owner {
        owned.push(format!("--owner={o}"));
    }
    if let Some(gr) = &a.group {
        owned.push(format!("--group={gr}"));
    }
    if a.keep_newer.get() {
        owned.push("--keep-newer-files".into());
    }
    let excludes: Vec<String> = a.exclude.iter().map(|e| format!("--exclude={}", e.trim_end_matches('/'))).collect();
    let words = |v: &[String]| v.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
    let tail = format!("{} -f {s} {}", words(&excludes), words(&a.include));
    let diff = format!("cd {d} && LC_ALL=C tar --diff -C {d} {} {tail} 2>&1; id -u >&2", words(&owned));
    let out = match cx.sh(&diff, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let uid = String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("").to_string();
    let differs = differences(&String::from_utf8_lossy(&out.stdout), uid == "0", a);
    let mut changed = false;
    let mut o = Outcome::ok("");
    if !differs.is_empty() {
        let extract = format!("cd {d} && LC_ALL=C tar --extract -C {d} {} {tail}", words(&owned));
        let out = match cx.sh(&extract, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        o.commands.push(extract);
        if !out.success() {
            return Outcome::failed(format!("failed to unpack {shown} to {}", a.dest)).with_output(&out);
        }
        changed = true;
    }
    // The files of the archive, for the attributes (and list_files).
    let list = format!("cd {d} && LC_ALL=C tar --list -C {d} {} {tail}", words(&opts));
    let out = match cx.sh(&list, None).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_start_matches('/').to_string())
        .filter(|l| !a.exclude.iter().any(|e| glob_match(e.trim_end_matches('/'), l)))
        .collect();
    if a.owner.is_some() || a.group.is_some() || mode.is_some() {
        let mut paths: Vec<String> = files.clone();
        for f in &files {
            if let Some((top, _)) = f.split_once('/')
                && !paths.iter().any(|p| p == top)
            {
                paths.push(top.to_string());
            }
        }
        let mut script = format!("cd {d} || exit 1\n");
        for p in &paths {
            let q = shell_quote(&format!("{}/{}", a.dest.trim_end_matches('/'), p.trim_end_matches('/')));
            if let Some(m) = mode {
                script.push_str(&format!(
                    "[ \"$(stat -c %a {q})\" = {m:o} ] || {{ chmod {m:o} {q} && echo CHANGED; }}\n"
                ));
            }
            if let Some(u) = &a.owner {
                let u = shell_quote(u);
                script.push_str(&format!(
                    "[ \"$(stat -c %U {q})\" = {u} ] || [ \"$(stat -c %u {q})\" = {u} ] || {{ chown -h {u} {q} && echo CHANGED; }}\n"
                ));
            }
            if let Some(gr) = &a.group {
                let gr = shell_quote(gr);
                script.push_str(&format!(
                    "[ \"$(stat -c %G {q})\" = {gr} ] || [ \"$(stat -c %g {q})\" = {gr} ] || {{ chgrp -h {gr} {q} && echo CHANGED; }}\n"
                ));
            }
        }
        let out = match cx.sh(&script, None).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        if !out.success() {
            return Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        if String::from_utf8_lossy(&out.stdout).contains("CHANGED") {
            changed = true;
        }
    }
    if changed {
        o.status = super::Status::Changed;
        o.msg = format!("{shown} unpacked into {}", a.dest);
    }
    o.result.insert("handler".into(), json!(handler));
    o.result.insert("dest".into(), json!(a.dest));
    o.result.insert("src".into(), json!(src));
    if a.list_files.get() {
        o.result.insert("files".into(), Value::from(files));
    }
    o
}

/// The lines of `tar --diff` that the module counts as the archive not being unpacked: owner
/// and group (as root, where not set) and mode (where not set), times, missing files, invalid
/// owners, links, contents and sizes.
fn differences(out: &str, root: bool, a: &UnarchiveArgs) -> Vec<String> {
    let mut d = Vec::new();
    for l in out.lines() {
        if l.ends_with(": : Warning: Cannot stat: No such file or directory") {
            continue;
        }
        let counts = (root && a.owner.is_none() && l.ends_with(": Uid differs"))
            || (root && a.group.is_none() && l.ends_with(": Gid differs"))
            || (a.mode.is_none() && l.ends_with(": Mode differs"))
            || l.ends_with(": Mod time differs")
            || l.ends_with(": Warning: Cannot stat: No such file or directory")
            || l.contains(": Invalid owner")
            || l.contains(": Invalid group")
            || l.ends_with(": Symlink differs")
            || l.ends_with(": Contents differ")
            || l.ends_with(": Size differs");
        if counts {
            d.push(l.to_string());
        }
    }
    d
}

/// Python's fnmatch for the module's `exclude` patterns.
fn glob_match(pattern: &str, name: &str) -> bool {
    crate::text::fnmatch::fnmatch_regex(pattern).is_ok_and(|r| r.is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_modules_differences_count() {
        let a = UnarchiveArgs {
            src: "a.tgz".into(),
            dest: "/opt".into(),
            remote_src: no(),
            owner: None,
            group: None,
            mode: Some(Mode::from("0755")),
            exclude: vec![],
            include: vec![],
            extra_opts: vec![],
            keep_newer: no(),
            list_files: no(),
        };
        let out = "app/run.sh: Mode differs\napp/conf: Contents differ\napp/x: Warning: Cannot stat: No such file or directory\n\
                   : : Warning: Cannot stat: No such file or directory\napp/y: Uid differs\n";
        assert_eq!(differences(out, false, &a), ["app/conf: Contents differ", "app/x: Warning: Cannot stat: No such file or directory"]);
        assert_eq!(differences(out, true, &a).len(), 3, "as root an owner difference counts too");
        assert!(glob_match("app/*.log", "app/x.log") && !glob_match("app/*.log", "app/x.conf"));
        assert!(glob_match("a[!b]c", "axc") && !glob_match("a[!b]c", "abc"));
    }
}
