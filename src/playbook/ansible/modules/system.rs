//! Modules that set up the host's system: sysctl, modprobe, hostname, mount, pam_limits and
//! reboot.

use serde_json::{Map, Value, json};

use super::args::{Args, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `sysctl`: a kernel parameter, set and kept in a sysctl file.
pub(super) fn sysctl(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name", "key"]));
    put(&mut out, "value", a.value(&["value", "val"]));
    put(&mut out, "state", a.presence());
    for k in ["reload", "sysctl_set", "ignoreerrors"] {
        put(&mut out, k, a.flag(&[k]));
    }
    put(&mut out, "sysctl_file", a.text(&["sysctl_file"]));
    if !out.contains_key("name") {
        a.missing("name");
    }
    if out.get("state").and_then(Value::as_str) != Some("absent") && !out.contains_key("value") {
        a.missing("value (state is present)");
    }
    a.finish(&["name", "value", "state", "reload", "sysctl_set", "ignoreerrors", "sysctl_file"]);
    Translated::native("sysctl", out)
}

/// `modprobe`: a kernel module loaded or unloaded, and kept so at boot.
pub(super) fn modprobe(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name"]));
    put(&mut out, "state", a.presence());
    put(&mut out, "params", a.text(&["params"]));
    put(
        &mut out,
        "persistent",
        a.choice(
            &["persistent"],
            &[("disabled", "disabled"), ("present", "present"), ("absent", "absent")],
            "persistent: disabled, present or absent",
        ),
    );
    if !out.contains_key("name") {
        a.missing("name");
    }
    a.finish(&["name", "state", "params", "persistent"]);
    Translated::native("modprobe", out)
}

/// `hostname`: the host's name.
pub(super) fn hostname(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name"]));
    put(
        &mut out,
        "use",
        a.choice(
            &["use"],
            &[("systemd", "systemd"), ("debian", "debian")],
            "copctl sets names with hostnamectl (use: systemd or debian) or, unset, as the host needs",
        ),
    );
    if !out.contains_key("name") {
        a.missing("name");
    }
    a.finish(&["name", "use"]);
    Translated::native("hostname", out)
}

/// `mount`: a mount and its fstab line.
pub(super) fn mount(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "path", a.text(&["path", "name"]));
    let states: Vec<(&str, &str)> = crate::steps::mount::STATES.iter().map(|x| (*x, *x)).collect();
    let help = format!("state: {} (ephemeral is not supported yet)", crate::steps::mount::STATES.join(", "));
    put(&mut out, "state", a.choice(&["state"], &states, &help));
    for k in ["src", "fstype", "opts", "dump", "passno", "fstab"] {
        put(&mut out, k, a.text(&[k]));
    }
    for k in ["boot", "backup"] {
        put(&mut out, k, a.flag(&[k]));
    }
    a.default_only("opts_no_log", json!(false), "copctl shows mount options as it shows other arguments");
    for k in ["path", "state"] {
        if !out.contains_key(k) {
            a.missing(k);
        }
    }
    a.finish(&["path", "state", "src", "fstype", "opts", "dump", "passno", "fstab", "boot", "backup"]);
    Translated::native("mount", out)
}

/// `pam_limits`: a line of limits.conf.
pub(super) fn pam_limits(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    for k in ["domain", "value", "dest", "comment"] {
        put(&mut out, k, a.text(&[k]));
    }
    // A literal choice is checked now, a templated one when the step runs.
    let pick = |v: &[&'static str]| v.iter().map(|x| (*x, *x)).collect::<Vec<_>>();
    for (k, choices, help) in [
        ("limit_type", crate::steps::pam_limits::TYPES, "limit_type: soft, hard or -".to_string()),
        (
            "limit_item",
            crate::steps::pam_limits::ITEMS,
            format!("limit_item: one of {}", crate::steps::pam_limits::ITEMS.join(", ")),
        ),
    ] {
        let templated = a.items.iter().any(|x| x.name == k && x.value.as_str().is_some_and(|t| t.contains("{{")));
        if templated {
            put(&mut out, k, a.text(&[k]));
        } else {
            put(&mut out, k, a.choice(&[k], &pick(choices), &help));
        }
    }
    for k in ["use_max", "use_min", "backup"] {
        put(&mut out, k, a.flag(&[k]));
    }
    for k in ["domain", "limit_type", "limit_item", "value"] {
        if !out.contains_key(k) {
            a.missing(k);
        }
    }
    a.finish(&["domain", "limit_type", "limit_item", "value", "use_max", "use_min", "backup", "dest", "comment"]);
    Translated::native("pam_limits", out)
}

/// `reboot`: the host rebooted, and waited for.
pub(super) fn reboot(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "msg", a.text(&["msg"]));
    for (k, native) in [
        ("reboot_timeout", "timeout"),
        ("pre_reboot_delay", "pre_reboot_delay"),
        ("post_reboot_delay", "post_reboot_delay"),
    ] {
        match a.number(&[k]) {
            Some(v) if v.as_u64().is_some() => put(&mut out, native, v.as_u64()),
            Some(_) => {
                let (l, c) = a.at;
                a.p.add(
                    l,
                    c,
                    format!("reboot: {k} from a template is not supported yet"),
                    "here",
                    Some("give the number of seconds".into()),
                );
            }
            None => {}
        }
    }
    put(&mut out, "test_command", a.text(&["test_command"]));
    a.finish(&["reboot_timeout", "msg", "pre_reboot_delay", "post_reboot_delay", "test_command"]);
    Translated::native("reboot", out)
}
