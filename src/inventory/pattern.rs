//! Host patterns and `--limit`, with Ansible's semantics: comma lists (colon lists when the
//! colon cannot be part of an address), union first, then `&` intersections, then `!`
//! exclusions; fnmatch globs over groups and hosts; `~regex` anchored at the start; subscripts
//! `g[0]`, `g[-1]`, `g[1:]`, `g[0:2]` (end inclusive); `@file` in limits.

use std::sync::LazyLock;

use indexmap::IndexSet;
use regex::Regex;

use super::{Inventory, address};
use crate::error::{Error, Result};

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

/// Expands `@file` entries of a limit into the host names listed in the file (one per line).
pub fn expand_limit_files(parts: Vec<String>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for p in parts {
        if let Some(path) = p.strip_prefix('@') {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::with_help(
                    format!("cannot read limit file {path}: {e}"),
                    "a limit starting with @ names a file with one host per line (e.g. @.copctl/last-failed)",
                )
            })?;
            out.extend(text.split('\n').map(|l| l.trim().to_string()));
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

/// Python's `fnmatch.translate`, anchored at both ends.
fn fnmatch_regex(pat: &str) -> std::result::Result<Regex, regex::Error> {
    let chars: Vec<char> = pat.chars().collect();
    let mut re = String::from("^(?s:");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut j = i;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    re.push_str("\\[");
                } else {
                    let mut body: String = chars[i..j].iter().collect();
                    i = j + 1;
                    body = body.replace('\\', "\\\\");
                    if let Some(rest) = body.strip_prefix('!') {
                        body = format!("^{rest}");
                    } else if body.starts_with('^') {
                        body = format!("\\{body}");
                    }
                    // `[` and set operators inside a class are literal in Python's re.
                    let body = body.replace('[', "\\[").replace("&&", "\\&\\&").replace("~~", "\\~\\~");
                    re.push('[');
                    re.push_str(&body);
                    re.push(']');
                }
            }
            _ => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push_str(")$");
    Regex::new(&re)
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
        Ok(out)
    }

    fn match_one(&self, pattern: &str) -> Result<Vec<String>> {
        let pattern = pattern.strip_prefix(['&', '!']).unwrap_or(pattern);
        if pattern.starts_with('~') {
            return self.enumerate(pattern);
        }
        let Some(m) = SUBSCRIPT.captures(pattern) else { return self.enumerate(pattern) };
        let hosts = self.enumerate(&m[1])?;
        let n = hosts.len() as i64;
        if let Some(idx) = m.get(2) {
            let i: i64 = idx.as_str().parse().unwrap_or(i64::MAX);
            let at = if i < 0 { n + i } else { i };
            if at < 0 || at >= n {
                return Err(Error::with_help(
                    format!("No hosts matched the subscripted pattern '{pattern}'"),
                    format!("'{}' has {n} host(s); subscripts count from 0", &m[1]),
                ));
            }
            return Ok(vec![hosts[at as usize].clone()]);
        }
        // [x:y] is inclusive; [x:] runs to the end; Ansible reads an end of 0 as "one host".
        let start: i64 = m[3].parse().unwrap_or(i64::MAX);
        let end: i64 = if m[5].is_empty() { -1 } else { m[5].parse().unwrap_or(i64::MAX) };
        if end == 0 {
            return hosts
                .get(start as usize)
                .map(|h| vec![h.clone()])
                .ok_or_else(|| Error::plain(format!("No hosts matched the subscripted pattern '{pattern}'")));
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

    /// `ansible PATTERN --limit LIMIT --list-hosts`: the pattern's hosts, in its order, kept only
    /// where the limit also matches.
    pub fn select(&self, pattern: &str, limit: Option<&str>) -> Result<Vec<String>> {
        let mut hosts = self.evaluate(&split(pattern))?;
        if let Some(limit) = limit {
            let allowed: IndexSet<String> = self.limit_hosts(limit)?.into_iter().collect();
            hosts.retain(|h| allowed.contains(h));
        }
        Ok(hosts)
    }

    /// The hosts a `--limit` admits (with `@file` entries read).
    pub fn limit_hosts(&self, limit: &str) -> Result<Vec<String>> {
        self.evaluate(&expand_limit_files(split(limit))?)
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
