//! Python's `fnmatch.fnmatchcase`: shell-style patterns (`*`, `?`, `[seq]`, `[!seq]`) over a
//! whole name, as Ansible matches host patterns, `find`'s and `unarchive`'s patterns and the
//! fileglob lookup's names. One translation for all of them, Python's `fnmatch.translate`.

use regex::Regex;

/// Python's `fnmatch.translate` of `pat`, compiled: a regex matching a whole name (newlines
/// too) as `fnmatch.fnmatchcase(name, pat)` does.
pub fn fnmatch_regex(pat: &str) -> Result<Regex, regex::Error> {
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
                    re.push_str(&class(&chars[i..j]));
                    i = j + 1;
                }
            }
            _ => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    re.push_str(")\\z");
    Regex::new(&re)
}

/// The regex for a bracket expression whose inside is `set` (without its brackets), as
/// Python's translate writes it: a range whose ends are out of order is left out (none left:
/// a set that matches nothing), a `-` that makes no range and `\`, `&`, `~`, `|` are literal, a
/// leading `!` negates. Besides, every `[` and `]` is escaped: in the regex crate a `[` opens a
/// nested class and a `]` first in a set does not start a range, where both are literal
/// characters to Python's `re`.
fn class(set: &[char]) -> String {
    let escape = |s: &[char], hyphen: bool| -> String {
        let mut out = String::new();
        for &c in s {
            if matches!(c, '\\' | '[' | ']' | '&' | '~' | '|') || (hyphen && c == '-') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let body = if !set.contains(&'-') {
        escape(set, false)
    } else {
        // The chunks between the hyphens that make ranges, as Python's translate cuts them.
        let mut chunks: Vec<Vec<char>> = Vec::new();
        let mut start = 0;
        let mut k = if set[0] == '!' { 2 } else { 1 };
        while let Some(h) = set.get(k..).and_then(|rest| rest.iter().position(|&c| c == '-')).map(|p| k + p) {
            chunks.push(set[start..h].to_vec());
            start = h + 1;
            k = h + 3;
        }
        let last = set[start..].to_vec();
        match chunks.last_mut() {
            Some(prev) if last.is_empty() => prev.push('-'),
            _ => chunks.push(last),
        }
        // Ranges whose ends are out of order are left out.
        for k in (1..chunks.len()).rev() {
            if chunks[k - 1].last() > chunks[k].first() {
                let next = chunks.remove(k);
                let prev = &mut chunks[k - 1];
                prev.pop();
                prev.extend_from_slice(&next[1..]);
            }
        }
        chunks.iter().map(|c| escape(c, true)).collect::<Vec<_>>().join("-")
    };
    match body.as_str() {
        // Python's `(?!)`: the regex crate has no look-ahead, and an empty class never matches.
        "" => "[^\\s\\S]".into(),
        "!" => ".".into(),
        _ => match body.strip_prefix('!') {
            Some(rest) => format!("[^{rest}]"),
            None if body.starts_with('^') => format!("[\\{body}]"),
            None => format!("[{body}]"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::fnmatch_regex;

    /// Each (pattern, name) as Python's `fnmatch.fnmatchcase(name, pattern)` answers it
    /// (Python 3.11): brackets that do not close, `]` first in a set, out-of-order ranges,
    /// hyphens, set operators and `[` inside a set, newlines.
    #[test]
    fn matches_as_pythons_fnmatchcase() {
        for (pattern, name, python) in [
            ("web*", "web1", true),
            ("web*", "web", true),
            ("web*", "xweb1", false),
            ("web*", "web\n1", true),
            ("w[!e]b*", "wxb1", true),
            ("w[!e]b*", "web1", false),
            ("db?", "db1", true),
            ("db?", "db", false),
            ("db?", "db12", false),
            ("*.tar.gz", "a.tar.gz", true),
            ("*.tar.gz", ".tar.gz", true),
            ("*.tar.gz", "a.tar.gzip", false),
            ("*.tar.gz", "a.tgz", false),
            ("a[", "a[", true),
            ("a[", "a", false),
            ("[]]", "]", true),
            ("[]]", "a", false),
            ("[!]]", "]", false),
            ("[!]]", "a", true),
            ("[]-a]", "^", true),
            ("[]-a]", "b", false),
            ("[]-a]", "]", true),
            ("[^a]", "^", true),
            ("[^a]", "a", true),
            ("[^a]", "b", false),
            ("[!^a]", "^", false),
            ("[!^a]", "b", true),
            ("[a-]", "a", true),
            ("[a-]", "-", true),
            ("[a-]", "b", false),
            ("[z-a]", "z", false),
            ("[z-a]", "a", false),
            ("[z-a]", "m", false),
            ("[!z-a]", "z", true),
            ("[!z-a]", "-", true),
            ("[!z-a]", "\n", true),
            ("[b-a-c]", "-", true),
            ("[b-a-c]", "c", true),
            ("[b-a-c]", "b", false),
            ("[b-a-c]", "a", false),
            ("[a-z-0]", "m", true),
            ("[a-z-0]", "-", true),
            ("[a-z-0]", "0", true),
            ("[a-z-0]", "5", false),
            ("[%-&]", "%", true),
            ("[%-&]", "&", true),
            ("[%-&]", "'", false),
            ("[a&&b]", "&", true),
            ("[a&&b]", "a", true),
            ("[a&&b]", "c", false),
            ("[a~~b]", "~", true),
            ("[a~~b]", "b", true),
            ("[a||b]", "|", true),
            ("[a||b]", "a", true),
            ("[\\d]", "\\", true),
            ("[\\d]", "d", true),
            ("[\\d]", "5", false),
            ("[[:alpha:]]", "a]", true),
            ("[[:alpha:]]", ":]", true),
            ("[[:alpha:]]", "[]", true),
            ("[[:alpha:]]", "x", false),
            ("[a[b]", "[", true),
            ("[a[b]", "a", true),
            ("[a[b]", "c", false),
            ("[!", "[!", true),
            ("[!", "a", false),
            ("[]", "[]", true),
            ("[]", "]", false),
            ("x[]y]", "x]", true),
            ("x[]y]", "xy", true),
            ("x[]y]", "xz", false),
            ("(a|b).+", "(a|b).+", true),
            ("(a|b).+", "a", false),
            ("é?", "éa", true),
            ("é?", "e", false),
            ("*a*b", "ab", true),
            ("*a*b", "xaxb", true),
            ("*a*b", "ba", false),
            ("*a*b", "aab", true),
            ("", "", true),
            ("", "a", false),
        ] {
            let re = fnmatch_regex(pattern).unwrap_or_else(|e| panic!("{pattern:?}: {e}"));
            assert_eq!(re.is_match(name), python, "fnmatchcase({name:?}, {pattern:?})");
        }
    }
}
