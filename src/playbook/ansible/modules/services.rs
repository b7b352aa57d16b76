//! Service managers' modules: service, systemd and systemd_service.

use serde_json::{Map, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `service`, `systemd` and `systemd_service`: a unit's state, enablement and mask, and
/// systemd reloads.
pub(super) fn service(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name", "service", "unit"]));
    put(
        &mut out,
        "state",
        a.choice(
            &["state"],
            &[("started", "started"), ("stopped", "stopped"), ("restarted", "restarted"), ("reloaded", "reloaded")],
            "state: started, stopped, restarted or reloaded",
        ),
    );
    put(&mut out, "enabled", a.bool_literal(&["enabled"]));
    let mut takes = vec!["name", "state", "enabled"];
    if name != "service" {
        put(&mut out, "masked", a.bool_literal(&["masked"]));
        put(&mut out, "daemon_reload", a.bool_literal(&["daemon_reload", "daemon-reload"]));
        put(&mut out, "daemon_reexec", a.bool_literal(&["daemon_reexec", "daemon-reexec"]));
        takes.extend(["masked", "daemon_reload", "daemon_reexec", "scope"]);
        // The system manager's units: Ansible's default scope.
        a.choice(&["scope"], &[("system", "")], "scope: system (user and global are not supported yet)");
    }
    // Without a unit the module only reloads or re-executes systemd.
    let daemon_only = ["daemon_reload", "daemon_reexec"].iter().any(|k| out.get(*k) == Some(&json!(true)));
    if !out.contains_key("name") && !daemon_only {
        a.missing("name");
    }
    a.finish(&takes);
    Translated::native("service", out)
}
