//! Ansible's regex filters and tests (`regex_search`, `regex_replace`, `regex_findall`,
//! `regex_escape`; `match`, `search`, `regex`) as Python's `re` gives them: its replacement
//! syntax, its findall's groups, its escape; the compiled patterns kept for the run.

use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{Environment, Error};

use super::bad;

/// Compiled patterns of the regex filters, kept for the run: a playbook's `require:` or a loop
/// applies the same few patterns for every host and item, and compiling one costs more than
/// most renderings (the peers benchmark compiled ~10 per host). Bounded: a run rendering more
/// distinct patterns than this starts over.
type Compiled = std::collections::HashMap<(String, bool, bool), regex::Regex>;
static COMPILED: std::sync::LazyLock<std::sync::Mutex<Compiled>> = std::sync::LazyLock::new(Default::default);
const COMPILED_MAX: usize = 256;

fn regex(pattern: &str, kw: &Kwargs) -> Result<regex::Regex, Error> {
    let ignorecase: Option<bool> = kw.get("ignorecase")?;
    let multiline: Option<bool> = kw.get("multiline")?;
    let key = (pattern.to_string(), ignorecase.unwrap_or(false), multiline.unwrap_or(false));
    if let Some(re) = COMPILED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(re.clone());
    }
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(key.1)
        .multi_line(key.2)
        .build()
        .map_err(|e| bad(format!("bad regular expression {pattern:?}: {e}")))?;
    let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= COMPILED_MAX {
        cache.clear();
    }
    cache.insert(key, re.clone());
    Ok(re)
}

/// A replacement in Python's `re.sub` syntax as the regex crate's: `\1` and `\g<name>` are
/// groups, `\n`/`\t` and `\\` their characters, `$` itself (a group in the regex crate's).
fn python_replacement(rep: &str) -> String {
    let mut out = String::with_capacity(rep.len() + 8);
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut n = String::new();
                    while n.len() < 2 && chars.peek().is_some_and(char::is_ascii_digit) {
                        n.push(chars.next().unwrap_or('0'));
                    }
                    out.push_str(&format!("${{{n}}}"));
                }
                Some('g') => {
                    let rest: String = chars.clone().collect();
                    match rest.strip_prefix("g<").and_then(|r| r.split_once('>')) {
                        Some((name, _)) => {
                            out.push_str(&format!("${{{name}}}"));
                            for _ in 0..name.chars().count() + 3 {
                                chars.next();
                            }
                        }
                        None => out.push('\\'),
                    }
                }
                Some(e @ ('n' | 't' | 'r' | '\\' | 'a' | 'f' | 'v')) => {
                    chars.next();
                    out.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'a' => '\x07',
                        'f' => '\x0c',
                        'v' => '\x0b',
                        _ => '\\',
                    });
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

pub(super) fn add(env: &mut Environment<'static>) {
    env.add_filter(
        "regex_search",
        |s: String, pattern: String, groups: Rest<String>, kw: Kwargs| -> Result<Value, Error> {
            let re = regex(&pattern, &kw)?;
            kw.assert_all_used()?;
            let Some(c) = re.captures(&s) else { return Ok(Value::from(())) };
            if groups.0.is_empty() {
                return Ok(Value::from(c.get(0).map(|m| m.as_str()).unwrap_or("")));
            }
            // `'\\1'` or `'\\g<name>'`: those groups, as a list.
            let mut out = Vec::new();
            for g in &groups.0 {
                let m = if let Some(n) = g.strip_prefix('\\').and_then(|n| n.parse::<usize>().ok()) {
                    c.get(n)
                } else if let Some(name) = g.strip_prefix("\\g<").and_then(|n| n.strip_suffix('>')) {
                    c.name(name)
                } else {
                    return Err(bad(format!("regex_search: unknown group {g:?} (write '\\\\1' or '\\\\g<name>')")));
                };
                out.push(Value::from(m.map(|m| m.as_str()).unwrap_or("")));
            }
            Ok(Value::from(out))
        },
    );
    // Python's re.subn as Ansible's `regex_replace` calls it: `count` (0: all),
    // `mandatory_count` (an error unless that many were replaced), the replacement in Python's
    // syntax.
    env.add_filter(
        "regex_replace",
        |s: String, pattern: String, rep: Option<String>, kw: Kwargs| -> Result<String, Error> {
            let re = regex(&pattern, &kw)?;
            let count: usize = kw.get::<Option<usize>>("count")?.unwrap_or(0);
            let mandatory: usize = kw.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
            kw.assert_all_used()?;
            let rep = python_replacement(rep.as_deref().unwrap_or(""));
            let found = re.find_iter(&s).count();
            let made = if count == 0 { found } else { found.min(count) };
            if mandatory != 0 && made != mandatory {
                return Err(bad(format!(
                    "regex_replace: {made} replacements made, mandatory_count is {mandatory} (pattern {pattern:?})"
                )));
            }
            Ok(re.replacen(&s, count, rep.as_str()).into_owned())
        },
    );
    env.add_filter("regex_findall", |s: String, pattern: String, kw: Kwargs| -> Result<Value, Error> {
        let re = regex(&pattern, &kw)?;
        kw.assert_all_used()?;
        // Python's findall: the whole match, the one group, or a tuple of the groups.
        let out: Vec<Value> = re
            .captures_iter(&s)
            .map(|c| match c.len() {
                1 => Value::from(c.get(0).map(|m| m.as_str()).unwrap_or("")),
                2 => Value::from(c.get(1).map(|m| m.as_str()).unwrap_or("")),
                _ => Value::from(
                    (1..c.len()).map(|i| Value::from(c.get(i).map(|m| m.as_str()).unwrap_or(""))).collect::<Vec<_>>(),
                ),
            })
            .collect();
        Ok(Value::from(out))
    });
    // Python's re.escape (its set of characters, a space among them), or with
    // `re_type='posix_basic'` Ansible's escape of `[].^$*\\`.
    env.add_filter("regex_escape", |s: String, re_type: Option<String>, kw: Kwargs| -> Result<String, Error> {
        let re_type = re_type.or(kw.get("re_type")?).unwrap_or_else(|| "python".into());
        kw.assert_all_used()?;
        let special: &str = match re_type.as_str() {
            "python" => "()[]{}?*+-|^$\\.&~# \t\n\r\u{b}\u{c}",
            "posix_basic" => "[].^$*\\",
            "posix_extended" => return Err(bad("Regex type (posix_extended) not yet implemented")),
            other => return Err(bad(format!("Invalid regex type ({other})"))),
        };
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if special.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        Ok(out)
    });
    // Tests on strings: Python's re.match (anchored at the start), re.search.
    // Ansible's pattern defaults to '' (`x is regex` is true).
    env.add_test("match", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        let pattern = pattern.unwrap_or_default();
        let re = regex(&format!("^(?:{pattern})"), &kw)?;
        Ok(re.is_match(&s))
    });
    env.add_test("search", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        Ok(regex(&pattern.unwrap_or_default(), &kw)?.is_match(&s))
    });
    env.add_test("regex", |s: String, pattern: Option<String>, kw: Kwargs| -> Result<bool, Error> {
        let pattern = pattern.unwrap_or_default();
        let kind: Option<String> = kw.get("match_type")?;
        match kind.as_deref().unwrap_or("search") {
            "match" => Ok(regex(&format!("^(?:{pattern})"), &kw)?.is_match(&s)),
            "search" => Ok(regex(&pattern, &kw)?.is_match(&s)),
            other => Err(bad(format!("regex: match_type '{other}' is not supported"))),
        }
    });
}
