//! Which hosts each play runs on: its `hosts:` pattern rendered and checked against the
//! inventory (Ansible's implicit localhost aside), cut by `--limit` into the hosts inside and
//! outside it, and split into `serial` batches.

use std::sync::LazyLock;

use indexmap::IndexSet;
use regex::Regex;

use super::is_implicit_localhost;
use crate::error::{ErrorKind, Result};
use crate::inventory::Inventory;
use crate::playbook::{Play, Playbook};
use crate::site::Site;

/// The hosts `--limit` names; an error where it names none.
pub(super) fn limit_hosts(inv: &Inventory, limit: Option<&str>) -> Result<Option<IndexSet<String>>> {
    Ok(match limit {
        Some(l) => {
            let hosts = inv.limit_hosts(l)?;
            if hosts.is_empty() {
                return Err(inv.no_match_error("--limit", l));
            }
            Some(hosts.into_iter().collect())
        }
        None => None,
    })
}

/// Per playbook, per play: the hosts it runs on inside the limit, and those outside it (where
/// only read-only steps whose results an in-limit task uses may run).
pub(super) type PlayHosts = Vec<Vec<(Vec<String>, Vec<String>)>>;

/// Each play's hosts (`PlayHosts`).
pub(super) fn play_hosts(
    site: &Site,
    playbooks: &[Playbook],
    limit_set: Option<&IndexSet<String>>,
    warnings: &mut Vec<String>,
) -> Result<PlayHosts> {
    let mut play_hosts: PlayHosts = Vec::new();
    for pb in playbooks {
        let mut per_play = Vec::new();
        for play in &pb.plays {
            per_play.push(hosts_of_play(site, pb, play, limit_set, warnings)?);
        }
        play_hosts.push(per_play);
    }
    Ok(play_hosts)
}

/// One play's hosts inside the limit and outside it.
fn hosts_of_play(
    site: &Site,
    pb: &Playbook,
    play: &Play,
    limit_set: Option<&IndexSet<String>>,
    warnings: &mut Vec<String>,
) -> Result<(Vec<String>, Vec<String>)> {
    let inv = &site.inventory;
    let pattern = site.render_global(pb, &play.vars, &play.hosts).map_err(|e| {
        let needs_var = crate::template::Templates::is_undefined_error(&e);
        let help = needs_var.then(|| "this playbook needs that variable: pass it with -e name=value".to_string());
        let err = play.source(&pb.source).error_at(
            play.line,
            1,
            0,
            format!("play '{}': hosts: {}", play.name, crate::template::describe_error(&e)),
            "in this play",
            help,
        );
        if needs_var { err.with_kind(ErrorKind::NeedsVar) } else { err }
    })?;
    // Ansible reads an empty pattern as `all`: never here (think of node-remove).
    if pattern.trim().is_empty() {
        return Err(play.source(&pb.source).error_at(
            play.line,
            1,
            0,
            format!("play '{}': hosts: '{}' renders to an empty pattern", play.name, play.hosts),
            "in this play",
            Some("an empty pattern would select every host: set the variable (-e name=value)".into()),
        ));
    }
    // Ansible's implicit localhost: a play on `localhost` where the inventory has no such
    // host runs on the bastion (a local connection, the `all` group's variables), under a
    // `--limit` only when the limit names it.
    let implicit = is_implicit_localhost(pattern.trim()) && !inv.hosts.contains_key(pattern.trim());
    let full = if implicit {
        vec![pattern.trim().to_string()]
    } else {
        check_pattern_names(site, pb, play, &pattern)?;
        inv.select(&pattern, None)?
    };
    if full.is_empty() {
        warnings.push(format!("{}: play '{}': hosts '{pattern}' matches no host; skipped", pb.name, play.name));
    }
    let limited_out = implicit && limit_set.is_some_and(|l| !l.contains(pattern.trim()));
    let inside: Vec<String> = match limit_set {
        Some(_) if limited_out => {
            warnings.push(format!(
                "{}: play '{}': hosts '{pattern}' is the bastion itself, which --limit leaves out; skipped",
                pb.name, play.name
            ));
            Vec::new()
        }
        Some(l) => full.iter().filter(|h| l.contains(*h)).cloned().collect(),
        None => full.clone(),
    };
    let full = if limited_out { Vec::new() } else { full };
    let outside: Vec<String> = full.into_iter().filter(|h| !inside.contains(h)).collect();
    Ok((inside, outside))
}

static SUBSCRIPTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(.+)\[[^\]]*\]$").unwrap());

/// Every plain name of a play's pattern is a group or a host of the inventory: a typo
/// (`-e target_group=worker`) would otherwise plan nothing and "succeed". Globs and `~regex`
/// may match nothing; an existing group may be empty.
fn check_pattern_names(site: &Site, pb: &Playbook, play: &Play, pattern: &str) -> Result<()> {
    let inv = &site.inventory;
    for part in crate::inventory::pattern::split(pattern) {
        let bare = part.trim_start_matches(['&', '!']);
        if bare.starts_with('~') || bare.starts_with('@') {
            continue;
        }
        let name = SUBSCRIPTED.captures(bare).map(|c| c[1].to_string()).unwrap_or_else(|| bare.to_string());
        if name.contains(['*', '?', '['])
            || inv.groups.contains_key(&name)
            || inv.hosts.contains_key(&name)
            || is_implicit_localhost(&name)
        {
            continue;
        }
        let close = inv.close_names(&name);
        let help = if close.is_empty() {
            let groups: Vec<&str> = inv.groups.keys().map(String::as_str).take(12).collect();
            format!("groups in {}: {}", inv.source.name, groups.join(", "))
        } else {
            format!("did you mean: {}?", close.join(", "))
        };
        return Err(play.source(&pb.source).error_at(
            play.line,
            1,
            0,
            format!("play '{}': hosts '{pattern}': '{name}' is no group or host of {}", play.name, inv.source.name),
            "in this play",
            Some(help),
        ));
    }
    Ok(())
}

/// `serial: "{{ worker_batch }}"`: rendered with the site's variables (as `hosts:`), each must
/// give a count or a percentage.
pub(super) fn resolve_serial_templates(site: &Site, playbooks: &mut [Playbook]) -> Result<()> {
    for pb in playbooks.iter_mut() {
        let mut resolved = Vec::new();
        for (ki, play) in pb.plays.iter().enumerate() {
            for (k, t) in &play.serial_templates {
                let at = |msg: String, help: Option<String>| {
                    play.source(&pb.source).error_at(
                        play.line,
                        1,
                        0,
                        format!("play '{}': serial: {msg}", play.name),
                        "in this play",
                        help,
                    )
                };
                let text = site.render_global(pb, &play.vars, t).map_err(|e| {
                    let needs_var = crate::template::Templates::is_undefined_error(&e);
                    let err = at(
                        crate::template::describe_error(&e),
                        needs_var.then(|| "this playbook needs that variable: pass it with -e name=value".into()),
                    );
                    if needs_var { err.with_kind(ErrorKind::NeedsVar) } else { err }
                })?;
                let Some(b) = crate::playbook::parse_batch(&text) else {
                    return Err(at(
                        format!("'{t}' renders to '{text}', neither a count of at least 1 nor a percentage"),
                        Some(
                            "set the variable it uses to a number of hosts (-e name=2) or a percentage (-e name=30%)"
                                .into(),
                        ),
                    ));
                };
                resolved.push((ki, *k, b));
            }
        }
        for (ki, k, b) in resolved {
            pb.plays[ki].serial[k] = b;
        }
    }
    Ok(())
}

/// `serial` batches over the play's hosts; the last size repeats.
pub fn split_batches(play: &Play, hosts: &[String]) -> Vec<Vec<String>> {
    if hosts.is_empty() {
        return vec![];
    }
    if play.serial.is_empty() {
        return vec![hosts.to_vec()];
    }
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < hosts.len() {
        let rule = play.serial[k.min(play.serial.len() - 1)];
        let n = rule.size(hosts.len()).min(hosts.len() - i);
        out.push(hosts[i..i + n].to_vec());
        i += n;
        k += 1;
    }
    out
}
