//! `pam_limits` (Ansible's `community.general.pam_limits`): one `domain type item value` line of
//! /etc/security/limits.conf (or `dest`), changed in place or added, as the module rewrites the
//! file: comment lines and lines that are not four fields kept as they are, the matching line
//! replaced by `domain<TAB>type<TAB>item<TAB>value` (with `<TAB>#comment` when there is one:
//! `comment`, else the first comment of an earlier line, the module's quirk), `use_max`/`use_min`
//! keeping the larger/smaller of the two values; values checked as the module checks them.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::edit::{Safeguards, open_for_edit, write_guarded};
use super::{Flag, Guards, Kind, Outcome, Presence, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PamLimitsArgs {
    pub domain: String,
    pub limit_type: String,
    pub limit_item: String,
    pub value: String,
    #[serde(default = "no")]
    pub use_max: Flag,
    #[serde(default = "no")]
    pub use_min: Flag,
    #[serde(default = "no")]
    pub backup: Flag,
    #[serde(default = "default_dest")]
    pub dest: String,
    #[serde(default)]
    pub comment: String,
}

fn no() -> Flag {
    Flag::Value(false)
}

fn default_dest() -> String {
    "/etc/security/limits.conf".into()
}

/// The module's choices.
pub const ITEMS: &[&str] = &[
    "core",
    "data",
    "fsize",
    "memlock",
    "nofile",
    "rss",
    "stack",
    "cpu",
    "nproc",
    "as",
    "maxlogins",
    "maxsyslogins",
    "priority",
    "locks",
    "sigpending",
    "msgqueue",
    "nice",
    "rtprio",
    "chroot",
];
pub const TYPES: &[&str] = &["soft", "hard", "-"];

impl Kind for PamLimitsArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let a = self;
        for (name, got, choices) in [("limit_type", &a.limit_type, TYPES), ("limit_item", &a.limit_item, ITEMS)] {
            if !choices.contains(&got.as_str()) {
                return Outcome::failed(format!("value of {name} must be one of: {}, got: {got}", choices.join(", ")));
            }
        }
        if a.use_max.get() && a.use_min.get() {
            return Outcome::failed("Cannot use use_min and use_max at the same time.");
        }
        if let Err(e) = valid_value(&a.limit_item, &a.value, "") {
            return Outcome::failed(e);
        }
        let edit = match open_for_edit(cx, &a.dest, Presence::Present, true, None).await {
            Ok(e) => e,
            Err(o) => return o,
        };
        let (new, changed, message) = match rewrite(&edit.text, a) {
            Ok(r) => r,
            Err(e) => return Outcome::failed(e),
        };
        let old = edit.current.as_ref().map(|c| c.0.as_str());
        let g = Safeguards { backup: a.backup.get(), validate: None };
        let mut o = if changed || old.is_none() {
            match write_guarded(cx, &a.dest, old, new, edit.file_mode, &message, &g).await {
                Ok((mut o, backup)) => {
                    // A file made empty counts as a change, as the module counts it.
                    if old.is_none() {
                        o.status = super::Status::Changed;
                    }
                    if !backup.is_empty() {
                        o.result.insert("backup_file".into(), json!(backup));
                    }
                    o
                }
                Err(o) => return o,
            }
        } else {
            Outcome::ok("")
        };
        o.result.insert("msg".into(), json!(message));
        o
    }
}

/// The module's check of a value: a number from -20 to 19 for nice and priority, else
/// unlimited, infinity, -1 or a whole number.
fn valid_value(item: &str, value: &str, prefix: &str) -> Result<(), String> {
    if item == "nice" || item == "priority" {
        if value.trim().parse::<i64>().is_ok_and(|v| (-20..=19).contains(&v)) {
            return Ok(());
        }
        return Err(format!(
            "{prefix} Value of '{value}' for item '{item}' is invalid. Value must be a number in the range -20 to 19 inclusive. \
             Refer to the limits.conf(5) manual pages for more details."
        ));
    }
    if ["unlimited", "infinity", "-1"].contains(&value) || (!value.is_empty() && value.chars().all(|c| c.is_ascii_digit())) {
        return Ok(());
    }
    Err(format!(
        "{prefix} Value of '{value}' for item '{item}' is invalid. Value must either be 'unlimited', 'infinity' or -1, all of \
         which indicate no limit, or a limit of 0 or larger. Refer to the limits.conf(5) manual pages for more details."
    ))
}

/// The file as the module writes it, whether the limit changed, and the module's `msg` (the
/// limit's line).
fn rewrite(text: &str, a: &PamLimitsArgs) -> Result<(String, bool, String), String> {
    let space = regex::Regex::new(r"\s+").expect("a valid pattern");
    let mut out = String::new();
    let mut changed = false;
    let mut found = false;
    let mut message = String::new();
    let mut new_comment = a.comment.clone();
    let mut new_value = a.value.clone();
    let unlimited = |v: &str| ["unlimited", "infinity", "-1"].contains(&v);
    let limit_line = |value: &str, comment: &str| {
        let comment = if comment.is_empty() { String::new() } else { format!("\t#{comment}") };
        format!("{}\t{}\t{}\t{value}{comment}\n", a.domain, a.limit_type, a.limit_item)
    };
    for line in text.split_inclusive('\n') {
        if line.starts_with('#') {
            out.push_str(line);
            continue;
        }
        let squeezed = space.replace_all(line, " ").trim().to_string();
        if squeezed.is_empty() {
            out.push_str(line);
            continue;
        }
        let fields_part = squeezed.split('#').next().unwrap_or("").trim_end().to_string();
        let old_comment = line.split_once('#').map(|(_, c)| c.to_string()).unwrap_or_default();
        if new_comment.is_empty() {
            new_comment = old_comment;
        }
        let fields: Vec<&str> = fields_part.split(' ').collect();
        let [domain, kind, item, actual] = fields[..] else {
            out.push_str(line);
            continue;
        };
        valid_value(item, actual, &format!("Invalid configuration found in '{}'.", a.dest))?;
        if !(domain == a.domain && kind == a.limit_type && item == a.limit_item) {
            out.push_str(line);
            continue;
        }
        found = true;
        if a.value == actual {
            message = line.to_string();
            out.push_str(line);
            continue;
        }
        // The module compares the limit's type (never nice or priority) here, not its item.
        let (actual_unlimited, value_unlimited) =
            if kind != "nice" && kind != "priority" { (unlimited(actual), unlimited(&a.value)) } else { (false, false) };
        let int = |v: &str| v.parse::<i64>().map_err(|_| format!("invalid literal for int() with base 10: '{v}'"));
        if a.use_max.get() {
            new_value = if actual_unlimited {
                actual.to_string()
            } else if value_unlimited {
                a.value.clone()
            } else {
                int(&a.value)?.max(int(actual)?).to_string()
            };
        }
        if a.use_min.get() {
            new_value = match (actual_unlimited, value_unlimited) {
                (true, true) => actual.to_string(),
                (true, false) => a.value.clone(),
                (false, true) => actual.to_string(),
                (false, false) => int(&a.value)?.min(int(actual)?).to_string(),
            };
        }
        if new_value != actual {
            changed = true;
            let l = limit_line(&new_value, &new_comment);
            // The comment once used carries its tab and `#` into a later match, as in the module.
            if !new_comment.is_empty() {
                new_comment = format!("\t#{new_comment}");
            }
            message = l.clone();
            out.push_str(&l);
        } else {
            message = line.to_string();
            out.push_str(line);
        }
    }
    if !found {
        changed = true;
        let l = limit_line(&new_value, &new_comment);
        message = l.clone();
        out.push_str(&l);
    }
    Ok((out, changed, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(domain: &str, kind: &str, item: &str, value: &str) -> PamLimitsArgs {
        PamLimitsArgs {
            domain: domain.into(),
            limit_type: kind.into(),
            limit_item: item.into(),
            value: value.into(),
            use_max: Flag::Value(false),
            use_min: Flag::Value(false),
            backup: Flag::Value(false),
            dest: default_dest(),
            comment: String::new(),
        }
    }

    #[test]
    fn the_file_is_rewritten_as_the_module_rewrites_it() {
        let text = "# limits\n*   soft   core   0\n\nroot  hard  nofile  1024  # old\nbad line\n";
        let (new, changed, msg) = rewrite(text, &args("root", "hard", "nofile", "64000")).unwrap();
        assert!(changed);
        // The old comment keeps its newline, so the module's line has two.
        assert_eq!(new, "# limits\n*   soft   core   0\n\nroot\thard\tnofile\t64000\t# old\n\nbad line\n");
        assert_eq!(msg, "root\thard\tnofile\t64000\t# old\n\n");
        let (new, changed, _) = rewrite(&new, &args("root", "hard", "nofile", "64000")).unwrap();
        assert!(!changed, "the same value: unchanged");
        let (added, changed, _) = rewrite(text, &args("app", "-", "memlock", "unlimited")).unwrap();
        assert!(changed);
        assert!(added.ends_with("bad line\napp\t-\tmemlock\tunlimited\t# old\n\n"), "the first old comment rides along: {added:?}");
        let mut max = args("root", "hard", "nofile", "512");
        max.use_max = Flag::Value(true);
        assert!(!rewrite(&new, &max).unwrap().1, "use_max keeps the larger value");
        assert_eq!(
            rewrite("*  soft  nofile  lots\n", &args("x", "soft", "nofile", "1")).unwrap_err(),
            "Invalid configuration found in '/etc/security/limits.conf'. Value of 'lots' for item 'nofile' is invalid. Value must either be 'unlimited', 'infinity' or -1, all of which indicate no limit, or a limit of 0 or larger. Refer to the limits.conf(5) manual pages for more details."
        );
    }
}
