//! Package managers' modules: package, apt, dnf and yum.

use serde_json::{Map, Value, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `package`, `apt`, `dnf` and `yum`: packages installed, removed or updated, and the
/// package cache.
pub(super) fn package(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    match a.value(&["name", "pkg"]) {
        Some(Value::String(s)) if s.contains(',') && !s.contains("{{") => {
            out.insert("name".into(), json!(s.split(',').map(str::trim).collect::<Vec<_>>()));
        }
        Some(Value::String(s)) => {
            out.insert("name".into(), json!(s));
        }
        Some(Value::Array(v)) => {
            out.insert("name".into(), Value::Array(v));
        }
        Some(_) => a.p.add(a.at.0, a.at.1, format!("{name}: name must be a package name or a list"), "here", None),
        None => {}
    }
    put(
        &mut out,
        "state",
        a.choice(
            &["state"],
            &[
                ("present", "present"),
                ("installed", "present"),
                ("absent", "absent"),
                ("removed", "absent"),
                ("latest", "latest"),
            ],
            "state: present (installed), absent (removed) or latest",
        ),
    );
    // Each manager's module takes `update_cache` (dnf's alias `expire-cache`, apt's
    // `update-cache`); the rest are apt's.
    let mut takes = vec!["name", "state", "update_cache"];
    put(&mut out, "update_cache", a.flag(&["update_cache", "update-cache", "expire-cache"]));
    if name == "apt" {
        for k in ["cache_valid_time", "update_cache_retries", "update_cache_retry_max_delay"] {
            put(&mut out, k, a.number(&[k]));
        }
        takes.extend(["cache_valid_time", "update_cache_retries", "update_cache_retry_max_delay"]);
    }
    let updates = out.get("update_cache").is_some_and(|v| v != &json!(false))
        || out.get("cache_valid_time").is_some_and(|v| v != &json!(0));
    if !out.contains_key("name") && !updates {
        a.missing("name");
    }
    a.finish(&takes);
    Translated::native("package", out)
}
