//! Host patterns and `--limit`, with Ansible's semantics: comma lists (colon lists when the
//! colon cannot be part of an address), union first, then `&` intersections, then `!`
//! exclusions; fnmatch globs over groups and hosts; `~regex` anchored at the start; subscripts
//! `g[0]`, `g[-1]`, `g[1:]`, `g[0:2]` (end inclusive); `@file` in limits. Nothing is dropped
//! silently: an entry that matches nothing is a warning (Ansible's "Could not match supplied host
//! pattern, ignoring"), a limit that leaves no host is an error, both with the closest names.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

use indexmap::IndexSet;
use regex::Regex;

use super::{Inventory, address};
use crate::error::{Error, Result};
use crate::text::fnmatch::fnmatch_regex;

static SUBSCRIPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]*))\]$").unwrap());
static COLON_PARTS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?:[^\s:\[\]]|\[[^\]]*\])+").unwrap());

/// Ansible's `split_host_pattern`.
pub fn split(pattern: &str) -> Vec<String> {
    let parts: Vec<String> = if pattern.contains(',') {
        pattern.split(',').map(str::to_string).collect()
    } else if address::parse_address(pattern).is_some() {
        vec![pattern.to_string()]
    } else {
        COLON_PARTS.find_iter(pattern).map(|m| m.as_str().to_string()).collect()
    };
    parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// The largest `@file` a limit may name: a list of host names, not a data set.
const MAX_LIMIT_FILE_BYTES: u64 = 16 << 20;

/// Prints a warning on stderr, once per process: the same limit is evaluated for every playbook.
pub fn warn(message: String) {
    static SEEN: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(|| Mutex::new(HashSet::new()));
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.len() > 4096 {
        seen.clear(); // a long-lived caller (the fuzzer) must not grow without bound
    }
    if seen.insert(message.clone()) {
        eprintln!("warning: {message}");
    }
}

/// A colon list with an unclosed `[` (`web[1:`) splits into `web` and `1`, as Ansible splits
/// it; say so, since the result is rarely what was meant.
fn note_unclosed(what: &str, pattern: &str) {
    if pattern.contains(',') || pattern.matches('[').count() <= pattern.matches(']').count() {
        return;
    }
    let parts = split(pattern);
    if parts.len() > 1 {
        warn(format!("{what} '{pattern}' has an unclosed '[': read as the patterns {}", parts.join(", ")));
    }
}

const SUBSCRIPT_MISS: &str = "No hosts matched the subscripted pattern";

/// Expands `@file` entries of a limit into the host names listed in the file (one per line).
pub fn expand_limit_files(parts: Vec<String>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for p in parts {
        if let Some(path) = p.strip_prefix('@') {
            let help = "a limit starting with @ names a file with one host per line (e.g. @.copctl/last-failed)";
            let cannot =
                |e: &dyn std::fmt::Display| Error::with_help(format!("cannot read limit file {path}: {e}"), help);
            let size = std::fs::metadata(path).map_err(|e| cannot(&e))?.len();
            if size > MAX_LIMIT_FILE_BYTES {
                return Err(Error::with_help(
                    format!("limit file {path} is {size} bytes; copctl reads at most {MAX_LIMIT_FILE_BYTES}"),
                    help,
                ));
            }
            let text = std::fs::read_to_string(path).map_err(|e| cannot(&e))?;
            out.extend(text.split('\n').map(|l| l.trim().to_string()));
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

fn compile(pattern: &str) -> Result<Regex> {
    let r = match pattern.strip_prefix('~') {
        Some(rx) => Regex::new(&format!("^(?:{rx})")),
        None => fnmatch_regex(pattern),
    };
    r.map_err(|e| Error::with_help(format!("Invalid host list pattern: {pattern}"), e.to_string()))
}

impl Inventory {
    /// Hosts matched by one pattern (without its `&`/`!` prefix): groups first, then hosts by
    /// name when no group matched or the pattern is a glob or regex.
    fn enumerate(&self, pattern: &str) -> Result<Vec<String>> {
        let re = compile(pattern)?;
        let mut out = Vec::new();
        let groups: Vec<&String> = self.groups.keys().filter(|g| re.is_match(g)).collect();
        for g in &groups {
            out.extend(self.group_hosts(g));
        }
        let special = pattern.starts_with('~') || pattern.contains(['.', '?', '*', '[']);
        if groups.is_empty() || special {
            out.extend(self.hosts.keys().filter(|h| re.is_match(h)).cloned());
        }
        // Ansible's implicit localhost: `localhost`, `127.0.0.1` or `::1`, named where the
        // inventory has no such host, is the controller (never part of `all`).
        if out.is_empty() && groups.is_empty() && super::is_implicit_localhost(pattern) {
            return Ok(vec![pattern.to_string()]);
        }
        if out.is_empty() && groups.is_empty() {
            let close = self.close_names(pattern.trim_start_matches('~'));
            let hint = if close.is_empty() {
                format!("no group or host of {} is named like it", self.source.name)
            } else {
                format!("did you mean: {}?", close.join(", "))
            };
            warn(format!("could not match supplied host pattern, ignoring: {pattern} ({hint})"));
        }
        Ok(out)
    }

    fn match_one(&self, pattern: &str) -> Result<Vec<String>> {
        let pattern = pattern.strip_prefix(['&', '!']).unwrap_or(pattern);
        if pattern.starts_with('~') {
            return self.enumerate(pattern);
        }
        let Some(m) = SUBSCRIPT.captures(pattern) else { return self.enumerate(pattern) };
        let hosts = self.enumerate(&m[1])?;
        // As in Ansible, a subscript of nothing is nothing; past the end of something, an error.
        if hosts.is_empty() {
            return Ok(hosts);
        }
        let n = hosts.len() as i64;
        let past_end = || {
            Error::with_help(
                format!("{SUBSCRIPT_MISS} '{pattern}'"),
                format!("'{}' has {n} host(s); subscripts count from 0", &m[1]),
            )
        };
        if let Some(idx) = m.get(2) {
            let i: i64 = idx.as_str().parse().unwrap_or(i64::MAX);
            let at = if i < 0 { n + i } else { i };
            if at < 0 || at >= n {
                return Err(past_end());
            }
            return Ok(vec![hosts[at as usize].clone()]);
        }
        // [x:y] is inclusive; [x:] runs to the end; Ansible reads an end of 0 as "one host".
        let start: i64 = m[3].parse().unwrap_or(i64::MAX);
        let end: i64 = if m[5].is_empty() { -1 } else { m[5].parse().unwrap_or(i64::MAX) };
        if end == 0 {
            return hosts.get(start as usize).map(|h| vec![h.clone()]).ok_or_else(past_end);
        }
        let end = if end == -1 { n - 1 } else { end };
        let (s, e) = (start.clamp(0, n), (end + 1).clamp(0, n));
        Ok(if s < e { hosts[s as usize..e as usize].to_vec() } else { vec![] })
    }

    /// Ansible's `_evaluate_patterns` over already split patterns.
    pub fn evaluate(&self, patterns: &[String]) -> Result<Vec<String>> {
        let mut regular: Vec<&String> = Vec::new();
        let mut inter = Vec::new();
        let mut excl = Vec::new();
        for p in patterns.iter().filter(|p| !p.is_empty()) {
            match p.chars().next() {
                Some('!') => excl.push(p),
                Some('&') => inter.push(p),
                _ => regular.push(p),
            }
        }
        let all = "all".to_string();
        if regular.is_empty() {
            regular.push(&all);
        }
        let mut hosts: IndexSet<String> = IndexSet::new();
        for p in regular.into_iter().chain(inter).chain(excl) {
            if self.hosts.contains_key(p.as_str()) {
                hosts.insert(p.clone());
                continue;
            }
            let that = self.match_one(p)?;
            if p.starts_with('!') {
                let that: IndexSet<String> = that.into_iter().collect();
                hosts.retain(|h| !that.contains(h));
            } else if p.starts_with('&') {
                let that: IndexSet<String> = that.into_iter().collect();
                hosts.retain(|h| that.contains(h));
            } else {
                hosts.extend(that);
            }
        }
        Ok(hosts.into_iter().collect())
    }

    /// The hosts a pattern selects within a limit, for acting on them (plays, `exec`): a
    /// subscript past the end of a group is an error, as in `ansible-playbook`, and so is a
    /// limit that leaves no host (Ansible: "Specified inventory, host pattern and/or --limit
    /// leaves us with no hosts to target").
    pub fn select(&self, pattern: &str, limit: Option<&str>) -> Result<Vec<String>> {
        note_unclosed("pattern", pattern);
        let allowed: Option<IndexSet<String>> = match limit {
            Some(l) => Some(self.limit_hosts(l)?.into_iter().collect()),
            None => None,
        };
        let mut hosts = self.evaluate(&split(pattern))?;
        if let (Some(allowed), Some(limit)) = (allowed, limit) {
            let matched = hosts.len();
            hosts.retain(|h| allowed.contains(h));
            if hosts.is_empty() {
                if matched == 0 {
                    return Err(self.no_match_error("pattern", pattern));
                }
                return Err(Error::with_help(
                    format!(
                        "pattern '{pattern}' and --limit '{limit}' leave no host to target in {}",
                        self.source.name
                    ),
                    format!(
                        "'{pattern}' matches {matched} host(s), none of them among the {} --limit '{limit}' admits: {}",
                        allowed.len(),
                        shown(allowed.iter())
                    ),
                ));
            }
        }
        Ok(hosts)
    }

    /// `ansible PATTERN --limit LIMIT --list-hosts`: as `select`, except that without a limit a
    /// pattern Ansible cannot evaluate (a subscript past the end) selects nothing, with a warning.
    pub fn list_hosts(&self, pattern: &str, limit: Option<&str>) -> Result<Vec<String>> {
        match self.select(pattern, limit) {
            Err(Error::Plain { message, help, .. }) if limit.is_none() && message.starts_with(SUBSCRIPT_MISS) => {
                warn(format!("{message} ({})", help.unwrap_or_default()));
                Ok(vec![])
            }
            other => other,
        }
    }

    /// The hosts a `--limit` admits (with `@file` entries read); none is an error naming the
    /// closest names, as it is in Ansible.
    pub fn limit_hosts(&self, limit: &str) -> Result<Vec<String>> {
        note_unclosed("--limit", limit);
        let hosts = self.evaluate(&expand_limit_files(split(limit))?)?;
        if hosts.is_empty() {
            return Err(self.no_match_error("--limit", limit));
        }
        Ok(hosts)
    }

    /// A pattern that selects nothing is an error where copctl would act on it: name the pattern
    /// and what it may have meant.
    pub fn no_match_error(&self, what: &str, pattern: &str) -> Error {
        let mut close = Vec::new();
        for part in split(pattern) {
            let bare = part.trim_start_matches(['&', '!', '~', '@']);
            let bare = SUBSCRIPT.captures(bare).map(|m| m[1].to_string()).unwrap_or(bare.to_string());
            for c in self.close_names(&bare) {
                if !close.contains(&c) {
                    close.push(c);
                }
            }
        }
        let help = if close.is_empty() {
            let groups: Vec<&str> = self.groups.keys().map(String::as_str).take(12).collect();
            format!("groups in {}: {}", self.source.name, groups.join(", "))
        } else {
            format!("did you mean: {}?", close.join(", "))
        };
        Error::with_help(format!("{what} '{pattern}' matches no host in {}", self.source.name), help)
    }
}

/// Up to five names, and how many more.
fn shown<'a>(names: impl ExactSizeIterator<Item = &'a String>) -> String {
    let n = names.len();
    let first: Vec<&str> = names.take(5).map(String::as_str).collect();
    if n > 5 { format!("{} and {} more", first.join(", "), n - 5) } else { first.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Source;

    fn inv() -> Inventory {
        Inventory::parse(Source::new("t.ini", "[web]\nweb[1:4]\n[db]\ndb1\nweb2\n[prod:children]\nweb\ndb\n")).unwrap()
    }

    fn sel(p: &str) -> Vec<String> {
        inv().select(p, None).unwrap()
    }

    #[test]
    fn splits_like_ansible() {
        assert_eq!(split("a,b , c"), ["a", "b", "c"]);
        assert_eq!(split("web:&db:!web3"), ["web", "&db", "!web3"]);
        assert_eq!(split("web[1:]"), ["web[1:]"]);
        assert_eq!(split("host:22"), ["host:22"]);
    }

    #[test]
    fn set_operations_and_subscripts() {
        assert_eq!(sel("web:&db"), ["web2"]);
        assert_eq!(sel("!db"), ["web1", "web3", "web4"]);
        assert_eq!(sel("web[0]"), ["web1"]);
        assert_eq!(sel("web[-1]"), ["web4"]);
        assert_eq!(sel("web[1:2]"), ["web2", "web3"]);
        assert_eq!(sel("web[2:]"), ["web3", "web4"]);
        assert_eq!(sel("web[1*]"), ["web1"]);
        assert_eq!(sel("~web[24]"), ["web2", "web4"]);
        assert_eq!(sel("db,web1"), ["db1", "web2", "web1"]);
        assert!(inv().select("web[9]", None).is_err());
    }

    #[test]
    fn fnmatch_like_python() {
        let r = fnmatch_regex("w[!e]b*").unwrap();
        assert!(r.is_match("wxb1") && !r.is_match("web1"));
        assert!(fnmatch_regex("a[").unwrap().is_match("a["));
    }
}
