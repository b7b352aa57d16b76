//! Modules that move content to or from the host: copy, template, fetch, unarchive and get_url.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::args::{Arg, Args, kind_of, put};
use super::sources::{find_beside, find_dir_beside, list_dirs, searched_src};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// The arguments copy takes.
const COPY_TAKES: &[&str] = &[
    "src",
    "content",
    "dest",
    "mode",
    "owner",
    "group",
    "force",
    "remote_src",
    "backup",
    "validate",
    "directory_mode",
    "follow",
    "local_follow",
];

/// The arguments template takes.
const TEMPLATE_TAKES: &[&str] = &[
    "src",
    "dest",
    "mode",
    "owner",
    "group",
    "backup",
    "validate",
    "follow",
    "output_encoding",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "block_start_string",
    "block_end_string",
    "variable_start_string",
    "variable_end_string",
    "comment_start_string",
    "comment_end_string",
];

/// `copy` and `template`: content put in place from the controller (or, with remote_src, from
/// the host).
pub(super) fn copy(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    // A source on the host itself: its path as written, nothing looked for here.
    let remote = name == "copy" && a.bool_literal(&["remote_src"]) == Some(true);
    let src = a.take(&["src"]);
    let dest = a.text(&["dest"]);
    let mode = a.mode();
    if name == "template" && mode.as_deref() == Some("preserve") {
        out.insert("preserve_mode".into(), json!(true));
    } else {
        put(&mut out, "mode", mode);
    }
    put(&mut out, "owner", a.text(&["owner"]));
    put(&mut out, "group", a.text(&["group"]));
    if name == "copy" {
        put(&mut out, "content", a.text(&["content"]));
        if a.bool_literal(&["backup"]) == Some(true) {
            out.insert("backup".into(), json!(true));
        }
        put(&mut out, "directory_mode", a.mode_of("directory_mode"));
        if a.bool_literal(&["follow"]) == Some(true) {
            out.insert("follow".into(), json!(true));
        }
        a.default_only("local_follow", json!(true), "a link in the source is copied as the file it points at");
    } else {
        template_args(&mut a, &mut out);
    }
    put(&mut out, "validate", a.text(&["validate"]));
    if remote && (out.contains_key("backup") || out.contains_key("validate")) {
        let (l, c) = a.at;
        a.p.add(l, c, "copy: backup and validate with remote_src are not supported yet".into(), "here", None);
    }
    if name == "copy" {
        if a.bool_literal(&["force"]) == Some(false) {
            out.insert("force".into(), json!(false));
        }
    } else {
        a.default_only("force", json!(true), "copctl always puts the content in place");
    }
    let takes = if name == "copy" { COPY_TAKES } else { TEMPLATE_TAKES };
    if let Some(src) = src {
        source(&mut a, m, &src, remote, &mut out);
    } else if remote {
        let (l, c) = a.at;
        a.p.add(l, c, "copy: remote_src needs src, the file on the host".into(), "here", None);
    } else if name == "template" || !out.contains_key("content") {
        a.missing(if name == "template" { "src" } else { "src or content" });
    }
    match &dest {
        // Ansible's words: content is one file, which needs a file's name.
        Some(d) if d.ends_with('/') && name == "copy" && out.contains_key("content") => {
            let (l, c) = a.at;
            a.p.add(l, c, format!("{name}: can not use content with a dir as dest"), "here", None);
        }
        Some(d) => {
            out.insert("dest".into(), json!(d));
        }
        None => a.missing("dest"),
    }
    a.finish(takes);
    Translated::native(if name == "copy" { "copy" } else { "template" }, out)
}

/// Where a copy or template `src` is: on the host (remote_src), found when the task runs (a
/// templated path), or found now beside the role or the playbook.
fn source(a: &mut Args, m: Call, src: &Arg, remote: bool, out: &mut Map<String, Value>) {
    let Call { name, dirs, .. } = m;
    let dir = m.dir();
    if let (Value::String(s), "template") = (&src.value, name) {
        out.insert("template_path".into(), json!(s));
    }
    match &src.value {
        Value::String(s) if remote => {
            out.insert("src".into(), json!(s));
            out.insert("remote_src".into(), json!(true));
        }
        Value::String(s) if s.contains("{{") || s.contains("{%") => {
            // Known only when the task runs: an absolute path is used as it is, a
            // relative one is looked for where Ansible looks (files/ or templates/
            // of the role and the role itself, then of the playbook's directory),
            // the first place named where it is nowhere (its error names that one).
            let sub = if name == "copy" { "files" } else { "templates" };
            let one = [dir.to_path_buf()];
            let dirs = if dirs.is_empty() { &one[..] } else { dirs };
            out.insert("src".into(), json!(searched_src(s, dirs, sub)));
        }
        Value::String(s) => {
            let sub = if name == "copy" { "files" } else { "templates" };
            let found =
                find_beside(dirs, sub, s).or_else(|| if name == "copy" { find_dir_beside(dirs, sub, s) } else { None });
            match found {
                Some(found) => {
                    out.insert("src".into(), json!(found));
                }
                None => a.p.add_len(
                    src.line,
                    src.column,
                    3,
                    format!("{name}: src '{s}' not found"),
                    "this file",
                    Some(match dirs {
                        [_] => {
                            format!("looked in {sub}/{s} and {s} beside the playbook ({})", dir.display())
                        }
                        _ => format!("looked in {sub}/{s} and {s} under {}", list_dirs(dirs)),
                    }),
                ),
            }
        }
        _ => a.p.add_len(src.line, src.column, 3, format!("{name}: src must be text"), "here", None),
    }
}

/// `fetch`: a file brought back from the host, laid out as Ansible lays it out.
pub(super) fn fetch(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let dir = m.dir();
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    let src = a.text(&["src"]);
    let dest = a.text(&["dest"]);
    let flat = a.bool_literal(&["flat"]).unwrap_or(false);
    a.default_only("fail_on_missing", json!(true), "copctl always fails on a missing file");
    a.default_only("validate_checksum", json!(true), "copctl always compares what it fetched");
    match (&src, &dest) {
        (Some(s), Some(d)) if d.contains("{{") || d.contains("{%") => {
            // Known only when the task runs: relative to the playbook's directory, as
            // Ansible takes it, unless absolute.
            let lit = |t: &str| serde_json::to_string(t).expect("a string");
            let mut t = format!(
                "{{% set copctl_dest %}}{d}{{% endset %}}{{% set copctl_dest = copctl_dest if copctl_dest is \
                 startingwith('/') else {} ~ copctl_dest %}}",
                lit(&format!("{}/", dir.display()))
            );
            if !flat {
                let tail = format!("/{}", s.trim_start_matches('/'));
                t.push_str(&format!(
                    "{{{{ copctl_dest.rstrip('/') }}}}/{{{{ inventory_hostname }}}}{{{{ {} }}}}",
                    lit(&tail)
                ));
            } else {
                let name = s.rsplit('/').next().unwrap_or(s);
                t.push_str(&format!(
                    "{{{{ copctl_dest ~ {} if copctl_dest is endingwith('/') else copctl_dest }}}}",
                    lit(name)
                ));
            }
            out.insert("src".into(), json!(s));
            out.insert("dest".into(), json!(t));
        }
        (Some(s), Some(d)) => {
            let base = if Path::new(d).is_absolute() { d.clone() } else { dir.join(d).display().to_string() };
            // Ansible's layout: DEST/HOST/SRC, or DEST itself with flat (a trailing
            // slash: the file's name in that directory).
            let dest = if !flat {
                format!("{}/{{{{ inventory_hostname }}}}/{}", base.trim_end_matches('/'), s.trim_start_matches('/'))
            } else if base.ends_with('/') {
                format!("{base}{}", s.rsplit('/').next().unwrap_or(s))
            } else {
                base
            };
            out.insert("src".into(), json!(s));
            out.insert("dest".into(), json!(dest));
        }
        (None, _) => a.missing("src"),
        (_, None) => a.missing("dest"),
    }
    a.finish(&["src", "dest", "flat"]);
    Translated::native("fetch", out)
}

/// `unarchive`: an archive from the controller or the host, unpacked on the host.
pub(super) fn unarchive(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, dirs, .. } = m;
    let mut out = Map::new();
    let mut fields = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut fields, "creates", a.text(&["creates"]));
    let remote = match (a.bool_literal(&["remote_src"]), a.bool_literal(&["copy"])) {
        (Some(r), _) => r,
        (None, Some(copy)) => !copy,
        (None, None) => false,
    };
    if remote {
        out.insert("remote_src".into(), json!(true));
    }
    let src = a.text(&["src"]);
    put(&mut out, "dest", a.text(&["dest"]));
    put(&mut out, "owner", a.text(&["owner"]));
    put(&mut out, "group", a.text(&["group"]));
    put(&mut out, "mode", a.mode());
    for k in ["exclude", "include", "extra_opts"] {
        match a.value(&[k]) {
            Some(Value::String(s)) => {
                let items: Vec<&str> =
                    if k == "extra_opts" { vec![s.as_str()] } else { s.split(',').map(str::trim).collect() };
                out.insert(k.into(), json!(items));
            }
            Some(Value::Array(v)) => {
                out.insert(k.into(), Value::Array(v));
            }
            Some(other) => {
                let (l, c) = a.at;
                a.p.add(l, c, format!("unarchive: {k} must be a list, not {}", kind_of(&other)), "here", None);
            }
            None => {}
        }
    }
    for k in ["keep_newer", "list_files"] {
        put(&mut out, k, a.flag(&[k]));
    }
    a.default_only("validate_certs", json!(true), "copctl does not download archives");
    a.default_only("decrypt", json!(true), "copctl copies archives as they are");
    match (&src, remote) {
        (Some(s), true) => {
            out.insert("src".into(), json!(s));
        }
        (Some(s), false) if s.contains("://") => {
            let (l, c) = a.at;
            a.p.add(l, c, format!("unarchive: a URL as src ('{s}') is not supported yet"), "here", None);
        }
        (Some(s), false) if s.contains("{{") || s.contains("{%") => {
            let (l, c) = a.at;
            a.p.add(
                l,
                c,
                format!("unarchive: a templated src ('{s}') from the bastion is not supported yet"),
                "here",
                None,
            );
        }
        (Some(s), false) => match find_beside(dirs, "files", s) {
            Some(found) => {
                out.insert("src".into(), json!(found));
            }
            None => {
                let (l, c) = a.at;
                let help = format!("looked in files/{s} and {s} under {}", list_dirs(dirs));
                a.p.add(l, c, format!("unarchive: src '{s}' not found"), "here", Some(help));
            }
        },
        (None, _) => a.missing("src"),
    }
    if !out.contains_key("dest") {
        a.missing("dest");
    }
    a.finish(&[
        "src",
        "dest",
        "remote_src",
        "copy",
        "creates",
        "owner",
        "group",
        "mode",
        "exclude",
        "include",
        "extra_opts",
        "keep_newer",
        "list_files",
    ]);
    Some(Translated { kind: Some("unarchive"), args: Value::Object(out), fields, fails: None })
}

/// `get_url`: a download on the host.
pub(super) fn get_url(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "url", a.text(&["url"]));
    put(&mut out, "dest", a.text(&["dest"]));
    put(&mut out, "checksum", a.text(&["checksum"]));
    put(&mut out, "owner", a.text(&["owner"]));
    put(&mut out, "group", a.text(&["group"]));
    put(&mut out, "mode", a.mode());
    put(&mut out, "url_username", a.text(&["url_username", "username"]));
    put(&mut out, "url_password", a.text(&["url_password", "password"]));
    put(&mut out, "timeout", a.number(&["timeout"]));
    for k in ["force", "validate_certs"] {
        put(&mut out, k, a.flag(&[k]));
    }
    match a.value(&["headers"]) {
        Some(Value::Object(m)) => {
            let h: Map<String, Value> = m
                .into_iter()
                .map(|(k, v)| (k, Value::String(v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))))
                .collect();
            out.insert("headers".into(), Value::Object(h));
        }
        Some(other) => {
            let (l, c) = a.at;
            a.p.add(l, c, format!("get_url: headers must be a mapping, not {}", kind_of(&other)), "here", None);
        }
        None => {}
    }
    a.default_only("backup", json!(false), "copctl keeps no backup copies of downloads yet");
    a.default_only("use_proxy", json!(true), "the host's proxy variables apply");
    a.default_only("force_basic_auth", json!(false), "credentials are sent as curl sends them");
    a.default_only("decompress", json!(true), "copctl saves what the server sends");
    for k in ["url", "dest"] {
        if !out.contains_key(k) {
            a.missing(k);
        }
    }
    a.finish(&[
        "url",
        "dest",
        "checksum",
        "owner",
        "group",
        "mode",
        "url_username",
        "url_password",
        "timeout",
        "force",
        "validate_certs",
        "headers",
    ]);
    Translated::native("get_url", out)
}

/// The template module's own arguments: its Jinja settings, `output_encoding`, `follow` and
/// `backup`.
fn template_args(a: &mut Args, out: &mut Map<String, Value>) {
    let mut syntax = Map::new();
    for k in ["trim_blocks", "lstrip_blocks"] {
        put(&mut syntax, k, a.bool_literal(&[k]));
    }
    for k in [
        "block_start_string",
        "block_end_string",
        "variable_start_string",
        "variable_end_string",
        "comment_start_string",
        "comment_end_string",
    ] {
        put(&mut syntax, k, a.text(&[k]));
    }
    // As Ansible's action: the escaped forms `\n`, `\r`, `\r\n` mean the characters.
    let at = a.items.iter().find(|x| x.name == "newline_sequence").map(|x| (x.line, x.column));
    if let Some(seq) = a.text(&["newline_sequence"]) {
        let seq = seq.replace("\\r", "\r").replace("\\n", "\n");
        if ["\n", "\r", "\r\n"].contains(&seq.as_str()) {
            syntax.insert("newline_sequence".into(), json!(seq));
        } else {
            let (l, c) = at.unwrap_or(a.at);
            a.p.add_len(
                l,
                c,
                16,
                "template: newline_sequence needs to be one of: \\n, \\r or \\r\\n".into(),
                "this argument",
                None,
            );
        }
    }
    if !syntax.is_empty() {
        out.insert("syntax".into(), Value::Object(syntax));
    }
    put(out, "output_encoding", a.text(&["output_encoding"]));
    put(out, "follow", a.bool_literal(&["follow"]));
    put(out, "backup", a.bool_literal(&["backup"]));
}
