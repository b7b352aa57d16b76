//! Modules for accounts and their keys: user, group, authorized_key and getent.

use serde_json::{Map, Value, json};

use super::args::{Args, kind_of, put};
use super::{Call, Translated};
use crate::playbook::ansible::Problems;

/// `user`: a local account.
pub(super) fn user(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name", "user"]));
    put(&mut out, "state", a.presence());
    for k in ["uid", "group", "comment", "home", "shell", "password"] {
        put(&mut out, k, a.text(&[k]));
    }
    match a.value(&["groups"]) {
        Some(Value::Null) | None => {}
        Some(v @ (Value::String(_) | Value::Array(_))) => {
            out.insert("groups".into(), v);
        }
        Some(other) => {
            let (l, c) = a.at;
            a.p.add(l, c, format!("user: groups must be a list or text, not {}", kind_of(&other)), "here", None);
        }
    }
    put(
        &mut out,
        "update_password",
        a.choice(&["update_password"], &[("always", "always"), ("on_create", "on_create")], "always or on_create"),
    );
    for k in ["append", "system", "remove", "force"] {
        put(&mut out, k, a.flag(&[k]));
    }
    put(&mut out, "create_home", a.flag(&["create_home", "createhome"]));
    a.default_only("non_unique", json!(false), "copctl creates accounts with unique uids");
    a.default_only("local", json!(false), "copctl manages accounts with useradd/usermod");
    a.default_only("move_home", json!(false), "copctl does not move home directories yet");
    a.default_only("generate_ssh_key", json!(false), "use a command task for ssh-keygen");
    if !out.contains_key("name") {
        a.missing("name");
    }
    a.finish(&[
        "name",
        "state",
        "uid",
        "group",
        "groups",
        "append",
        "comment",
        "home",
        "shell",
        "password",
        "update_password",
        "system",
        "create_home",
        "remove",
        "force",
    ]);
    Translated::native("user", out)
}

/// `group`: a local group.
pub(super) fn group(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "name", a.text(&["name"]));
    put(&mut out, "state", a.presence());
    put(&mut out, "gid", a.text(&["gid"]));
    put(&mut out, "system", a.flag(&["system"]));
    a.default_only("non_unique", json!(false), "copctl creates groups with unique gids");
    a.default_only("local", json!(false), "copctl manages groups with groupadd/groupmod");
    if !out.contains_key("name") {
        a.missing("name");
    }
    a.finish(&["name", "state", "gid", "system"]);
    Translated::native("group", out)
}

/// `authorized_key`: a key in a user's authorized_keys.
pub(super) fn authorized_key(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    put(&mut out, "user", a.text(&["user"]));
    put(&mut out, "key", a.text(&["key"]));
    put(&mut out, "state", a.presence());
    for (k, why) in [("user", "user"), ("key", "key")] {
        if !out.contains_key(k) {
            a.missing(why);
        }
    }
    a.finish(&["user", "key", "state"]);
    Translated::native("authorized_key", out)
}

/// `getent`: entries of a name service database, as facts.
pub(super) fn getent(p: &mut Problems, m: Call) -> Option<Translated> {
    let Call { name, node, extra, .. } = m;
    let mut out = Map::new();
    let mut a = Args::new(p, name, node, extra, None);
    for k in ["database", "key", "service", "split"] {
        put(&mut out, k, a.text(&[k]));
    }
    put(&mut out, "fail_key", a.flag(&["fail_key"]));
    if !out.contains_key("database") {
        a.missing("database");
    }
    a.finish(&["database", "key", "service", "split", "fail_key"]);
    Translated::native("getent", out)
}
