//! Modules that edit a file on the host in place: lineinfile, blockinfile and replace.

use serde_json::{Map, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `lineinfile` and `blockinfile`: one line, or one marked block, kept in a file.
pub(super) fn line_or_block(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let block = name == "blockinfile";
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["path", "dest", "destfile", "name"]));
    if block {
        put(&mut out, "block", a.text(&["block", "content"]));
        let marker = a.text(&["marker"]).unwrap_or_else(|| "# {mark} ANSIBLE MANAGED BLOCK".into());
        out.insert("marker".into(), json!(marker));
        put(&mut out, "marker_begin", a.text(&["marker_begin"]));
        put(&mut out, "marker_end", a.text(&["marker_end"]));
        put(&mut out, "append_newline", a.bool_literal(&["append_newline"]));
        put(&mut out, "prepend_newline", a.bool_literal(&["prepend_newline"]));
    } else {
        put(&mut out, "line", a.text(&["line", "value"]));
        put(&mut out, "regexp", a.text(&["regexp", "regex"]));
        put(&mut out, "search_string", a.text(&["search_string"]));
        put(&mut out, "backrefs", a.bool_literal(&["backrefs"]));
        put(&mut out, "firstmatch", a.bool_literal(&["firstmatch"]));
    }
    put(&mut out, "state", a.presence());
    put(&mut out, "insertafter", a.text(&["insertafter"]));
    put(&mut out, "insertbefore", a.text(&["insertbefore"]));
    put(&mut out, "create", a.bool_literal(&["create"]));
    put(&mut out, "mode", a.mode());
    put(&mut out, "backup", a.bool_literal(&["backup"]));
    put(&mut out, "validate", a.text(&["validate"]));
    if !out.contains_key("path") {
        a.missing("path");
    }
    let takes: &[&str] = if block {
        &[
            "path",
            "block",
            "marker",
            "marker_begin",
            "marker_end",
            "state",
            "insertafter",
            "insertbefore",
            "create",
            "mode",
            "append_newline",
            "prepend_newline",
            "backup",
            "validate",
        ]
    } else {
        &[
            "path",
            "line",
            "regexp",
            "search_string",
            "state",
            "insertafter",
            "insertbefore",
            "create",
            "mode",
            "backrefs",
            "firstmatch",
            "backup",
            "validate",
        ]
    };
    a.finish(takes);
    Translated::native(if block { "block" } else { "line" }, out)
}

/// `replace`: every match of a pattern replaced in a file.
pub(super) fn replace(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["path", "dest", "destfile", "name"]));
    put(&mut out, "regexp", a.text(&["regexp"]));
    put(&mut out, "replace", a.text(&["replace"]));
    put(&mut out, "after", a.text(&["after"]));
    put(&mut out, "before", a.text(&["before"]));
    put(&mut out, "mode", a.mode());
    put(&mut out, "backup", a.bool_literal(&["backup"]));
    put(&mut out, "validate", a.text(&["validate"]));
    a.default_only("encoding", json!("utf-8"), "copctl edits UTF-8 text");
    for k in ["path", "regexp"] {
        if !out.contains_key(k) {
            a.missing(k);
        }
    }
    a.finish(&["path", "regexp", "replace", "after", "before", "mode", "backup", "validate"]);
    Translated::native("replace", out)
}
