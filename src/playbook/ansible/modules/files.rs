//! Modules about a path on the host itself, not its content: file, stat, find, slurp and
//! tempfile.

use serde_json::{Map, Value, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `file`: a path's state, mode, owner, links and times.
pub(super) fn file(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut fails = None;
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["path", "dest", "name"]));
    put(&mut out, "src", a.text(&["src"]));
    match a.mode() {
        Some(m) if crate::steps::file::symbolic_for_chmod(&m).is_some() => {
            out.insert("symbolic_mode".into(), json!(m));
        }
        m => put(&mut out, "mode", m),
    }
    put(&mut out, "owner", a.text(&["owner"]));
    put(&mut out, "group", a.text(&["group"]));
    let state = a.choice(
        &["state"],
        &[
            ("file", "file"),
            ("directory", "directory"),
            ("absent", "absent"),
            ("link", "link"),
            ("hard", "hard"),
            ("touch", "touch"),
        ],
        "state: file, directory, absent, link, hard or touch",
    );
    // Ansible's defaults where copctl's native ones differ (see steps/file.rs): force
    // off, follow on, and touch sets both times to now (changed on every run).
    out.insert("force".into(), json!(a.bool_literal(&["force"]).unwrap_or(false)));
    out.insert("follow".into(), json!(a.bool_literal(&["follow"]).unwrap_or(true)));
    let recurse = a.bool_literal(&["recurse"]);
    put(&mut out, "recurse", recurse);
    for k in ["modification_time", "access_time"] {
        let v = a.text(&[k]);
        let v = v.or_else(|| (state.as_deref() == Some("touch")).then(|| "now".to_string()));
        put(&mut out, k, v);
        put(&mut out, &format!("{k}_format"), a.text(&[&format!("{k}_format")]));
    }
    if out.contains_key("src") && !matches!(state.as_deref(), Some("link" | "hard") | None) {
        let (l, c) = a.at;
        a.p.add(l, c, "file: src option requires state to be 'link' or 'hard'".into(), "here", None);
    }
    if recurse == Some(true) && !matches!(state.as_deref(), Some("directory") | None) {
        let (l, c) = a.at;
        a.p.add(l, c, "file: recurse option requires state to be 'directory'".into(), "here", None);
    }
    if out.contains_key("src") && state.is_none() {
        out.insert("src_without_state".into(), json!(true));
    }
    if recurse == Some(true) && state.is_none() {
        out.insert("state".into(), json!("directory"));
    }
    put(&mut out, "state", state);
    put(&mut out, "attributes", a.text(&["attributes", "attr"]));
    // Ansible's own diff probe: any value asks for it.
    if a.take(&["_diff_peek"]).is_some() {
        out.insert("diff_peek".into(), json!(true));
    }
    if !out.contains_key("path") {
        fails = Some(("missing required arguments: path".to_string(), "file: path is required".to_string()));
    }
    a.finish(&[
        "path",
        "attributes",
        "state",
        "src",
        "mode",
        "owner",
        "group",
        "force",
        "follow",
        "recurse",
        "modification_time",
        "modification_time_format",
        "access_time",
        "access_time_format",
    ]);
    Some(Translated { kind: Some("file"), args: Value::Object(out), fields: Map::new(), fails })
}

/// `stat`: facts about a path.
pub(super) fn stat(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["path", "dest", "name"]));
    put(&mut out, "follow", a.flag(&["follow"]));
    put(&mut out, "get_checksum", a.flag(&["get_checksum"]));
    put(
        &mut out,
        "checksum_algorithm",
        a.choice(
            &["checksum_algorithm", "checksum", "checksum_algo"],
            &[
                ("sha1", "sha1"),
                ("sha224", "sha224"),
                ("sha256", "sha256"),
                ("sha384", "sha384"),
                ("sha512", "sha512"),
                ("md5", "md5"),
            ],
            "sha1, sha224, sha256, sha384, sha512 or md5",
        ),
    );
    put(&mut out, "get_mime", a.flag(&["get_mime", "mime", "mime_type", "mime-type"]));
    put(&mut out, "get_attributes", a.flag(&["get_attributes", "attr", "attributes"]));
    if !out.contains_key("path") {
        a.missing("path");
    }
    a.finish(&["path", "follow", "get_checksum", "checksum_algorithm", "get_mime", "get_attributes"]);
    Translated::native("stat", out)
}

/// `find`: the files under paths that match.
pub(super) fn find(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "paths", a.value(&["paths", "name", "path"]));
    put(&mut out, "patterns", a.value(&["patterns", "pattern"]));
    put(&mut out, "excludes", a.value(&["excludes", "exclude"]));
    for k in ["contains", "file_type", "age", "age_stamp", "size", "mode"] {
        put(&mut out, k, a.text(&[k]));
    }
    put(&mut out, "checksum_algorithm", a.text(&["checksum_algorithm", "checksum", "checksum_algo"]));
    for k in ["read_whole_file", "recurse", "hidden", "get_checksum", "use_regex", "exact_mode"] {
        put(&mut out, k, a.flag(&[k]));
    }
    for k in ["depth", "limit"] {
        put(&mut out, k, a.number(&[k]));
    }
    a.default_only(
        "follow",
        json!(false),
        "find with follow is not supported yet: links to directories are listed, not walked into",
    );
    if !out.contains_key("paths") {
        a.missing("paths");
    }
    a.finish(&[
        "paths",
        "patterns",
        "excludes",
        "contains",
        "read_whole_file",
        "file_type",
        "age",
        "age_stamp",
        "size",
        "recurse",
        "hidden",
        "follow",
        "get_checksum",
        "checksum_algorithm",
        "use_regex",
        "depth",
        "mode",
        "exact_mode",
        "limit",
    ]);
    Translated::native("find", out)
}

/// `slurp`: a file's content, base64.
pub(super) fn slurp(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["src", "path"]));
    if !out.contains_key("path") {
        a.missing("src");
    }
    a.finish(&["src"]);
    out.insert("encoding".into(), json!("base64"));
    Translated::native("slurp", out)
}

/// `tempfile`: a new temporary file or directory.
pub(super) fn tempfile(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(
        &mut out,
        "state",
        a.choice(&["state"], &[("file", "file"), ("directory", "directory")], "state: file or directory"),
    );
    for k in ["path", "prefix", "suffix"] {
        put(&mut out, k, a.text(&[k]));
    }
    a.finish(&["state", "path", "prefix", "suffix"]);
    Translated::native("tempfile", out)
}
