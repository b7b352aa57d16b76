//! Python's `shlex.quote`: the one way copctl quotes a word for a POSIX shell, which is also
//! Ansible's `quote` filter, so that a site's shell lines render the same under both. The
//! `shlex` crate quotes otherwise (`'` as `"'"`), hence this small function.

/// Python's `shlex.quote`: an empty word as `''`; a word of only `[a-zA-Z0-9_@%+=:,./-]` as it
/// is; any other inside single quotes (`quoted_body`).
pub fn shell_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", quoted_body(s))
}

/// What `shell_quote` writes between its single quotes: the text, each `'` closed, given in
/// double quotes and opened again (`'"'"'`).
pub fn quoted_body(s: &str) -> String {
    s.replace('\'', "'\"'\"'")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Python's `shlex.quote` gives for each (python3 -c 'import shlex; ...').
    #[test]
    fn quotes_as_pythons_shlex_quote() {
        for (word, python) in [
            ("", "''"),
            ("abc", "abc"),
            ("a b", "'a b'"),
            ("it's", r#"'it'"'"'s'"#),
            ("a_b@c%d+e=f:g,h./-i", "a_b@c%d+e=f:g,h./-i"),
            ("$HOME", "'$HOME'"),
            ("é", "'é'"),
            ("tab\there", "'tab\there'"),
            ("''", r#"''"'"''"'"''"#),
            ("-n", "-n"),
            ("a\nb", "'a\nb'"),
            ("x*", "'x*'"),
        ] {
            assert_eq!(shell_quote(word), python, "{word:?}");
        }
    }
}
