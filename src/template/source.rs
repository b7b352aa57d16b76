//! Template text as copctl gives it to minijinja: backslashes in a YAML string's expressions
//! escaped as Ansible escapes them, ansible-core's FQCN filter and test names made short, and
//! the rewrites of `rewrite` applied to a bare expression.

use super::rewrite;

/// Ansible's `_escape_backslashes` for a template written in YAML (not a template file): every
/// backslash inside a string literal of a `{{ ... }}` is doubled before Jinja reads it, so that
/// YAML's unescaping and Jinja's do not both act on it (`regex_replace('(\\d+)', '\\1')`
/// written once in a double-quoted YAML string keeps its backreference; `join('\n')` in a plain
/// or single-quoted one is a backslash and an `n`, as under Ansible). `{% ... %}`, comments and
/// `raw` blocks are left as they are, as Ansible leaves them.
pub fn escape_backslashes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\\') || !text.contains("{{") {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let mut last = 0;
    while i + 1 < b.len() {
        match &b[i..i + 2] {
            b"{%" => {
                let raw = text[i + 2..].trim_start_matches(['-', '+', ' ', '\t', '\n']).starts_with("raw");
                let end = if raw {
                    text[i..].find("endraw").and_then(|e| text[i + e..].find("%}").map(|x| i + e + x + 2))
                } else {
                    text[i..].find("%}").map(|x| i + x + 2)
                };
                i = end.unwrap_or(b.len());
            }
            b"{#" => i = text[i..].find("#}").map(|x| i + x + 2).unwrap_or(b.len()),
            b"{{" => {
                i += 2;
                // Inside the expression: string literals get their backslashes doubled.
                while i < b.len() && !(b[i] == b'}' && b.get(i + 1) == Some(&b'}')) {
                    if b[i] == b'\'' || b[i] == b'"' {
                        let q = b[i];
                        let start = i;
                        i += 1;
                        while i < b.len() && b[i] != q {
                            i += if b[i] == b'\\' { 2 } else { 1 };
                        }
                        let lit = &text[start..i.min(b.len())];
                        out.push_str(&text[last..start]);
                        out.push_str(&lit.replace('\\', "\\\\"));
                        last = i.min(b.len());
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// ansible-core's filters and tests named by their FQCN (`x | ansible.builtin.basename`, `is
/// ansible.builtin.match`) as their short names, which are the ones copctl registers: the text
/// with the collection's prefix taken out where a filter or a test is named.
pub(super) fn unqualified(text: &str) -> std::borrow::Cow<'_, str> {
    static FQCN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(\|\s*|\bis\s+(?:not\s+)?)ansible\.(?:builtin|legacy)\.([A-Za-z_])")
            .expect("a valid pattern")
    });
    if !text.contains("ansible.") {
        return std::borrow::Cow::Borrowed(text);
    }
    FQCN.replace_all(text, "$1$2")
}

/// A bare expression as copctl compiles it: FQCN names made short, attribute chains under
/// `default` and `is defined` made chained lookups, `str % args` the format filter (see `rewrite`).
pub(super) fn prepared(expr: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match unqualified(expr) {
        Cow::Borrowed(t) => rewrite::apply_default(t, true),
        Cow::Owned(t) => Cow::Owned(rewrite::apply_default(&t, true).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_in_expressions_are_escaped_as_ansible_escapes_them() {
        let e = |t: &str| escape_backslashes(t).into_owned();
        assert_eq!(e(r"{{ x | regex_replace('(\d+)', '\1') }}"), r"{{ x | regex_replace('(\\d+)', '\\1') }}");
        assert_eq!(e(r#"a\b {{ "c:\t" ~ 'it\'s' }} d\e"#), r#"a\b {{ "c:\\t" ~ 'it\\'s' }} d\e"#);
        // Statements, comments and raw blocks are Jinja's own.
        assert_eq!(e(r"{% set p = 'a\b' %}{{ p }}"), r"{% set p = 'a\b' %}{{ p }}");
        assert_eq!(
            e(r"{# '\x' #}{% raw %}{{ '\y' }}{% endraw %}{{ '\z' }}"),
            r"{# '\x' #}{% raw %}{{ '\y' }}{% endraw %}{{ '\\z' }}"
        );
        assert_eq!(e(r"no template \here"), r"no template \here");
    }
}
