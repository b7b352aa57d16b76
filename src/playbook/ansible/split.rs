//! Ansible's free-form module arguments (`file: path=/x state=directory mode=0755`,
//! `command: make install chdir=/src creates=/usr/bin/x`): split into words as
//! ansible/parsing/splitter.py does (quotes and Jinja blocks keep their spaces), `k=v` words
//! taken as arguments, the rest kept as the raw parameters.

/// Words of `text`, each as written (quotes kept): whitespace splits, except inside quotes or
/// `{{ }}` / `{% %}` / `{# #}`.
pub fn split_args(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if quote.is_none() && c == '{' && matches!(next, Some('{' | '%' | '#')) {
            depth += 1;
            cur.push(c);
            cur.push(next.unwrap_or_default());
            i += 2;
            continue;
        }
        if quote.is_none() && depth > 0 && matches!(c, '}' | '%' | '#') && next == Some('}') {
            depth -= 1;
            cur.push(c);
            cur.push('}');
            i += 2;
            continue;
        }
        match quote {
            Some(q) if c == q && chars.get(i.wrapping_sub(1)) != Some(&'\\') => quote = None,
            None if depth == 0 && (c == '"' || c == '\'') => quote = Some(c),
            _ => {}
        }
        if quote.is_none() && depth == 0 && c.is_whitespace() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
        i += 1;
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// A value without its surrounding quotes (Ansible's `unquote`).
pub fn unquote(s: &str) -> String {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

/// `k=v` words as arguments (only the names in `only`, when given: what `command` and `shell`
/// take from their line) and the other words, joined, as the raw parameters.
///
/// The raw parameters are the text itself less the `k=v` words taken out, so that a multi-line
/// `shell: |` keeps its lines and spacing.
/// Python's escapes in a `k=v` value, decoded as Ansible's parse_kv decodes them before it
/// splits (`content="a\nb"` holds a newline): `\n \t \r \a \b \f \v \\ \' \"`, `\xHH`,
/// `\uHHHH`, `\UHHHHHHHH`. A free-form word (a command line) keeps its text.
pub fn decode_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let simple = match chars[i + 1] {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            _ => None,
        };
        if let Some(x) = simple {
            out.push(x);
            i += 2;
            continue;
        }
        let digits = match chars[i + 1] {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        let hex: String = chars.iter().skip(i + 2).take(digits).collect();
        match (digits > 0 && hex.len() == digits && hex.chars().all(|h| h.is_ascii_hexdigit()))
            .then(|| u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32))
            .flatten()
        {
            Some(x) => {
                out.push(x);
                i += 2 + digits;
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

pub fn parse_kv(text: &str, only: Option<&[&str]>) -> (Vec<(String, String)>, String) {
    let mut kv = Vec::new();
    let mut taken = Vec::new();
    for w in split_args(text) {
        if let Some((k, v)) = w.split_once('=')
            && !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && only.is_none_or(|o| o.contains(&k))
        {
            kv.push((k.to_string(), unquote(&decode_escapes(v))));
            taken.push(w);
        }
    }
    let mut raw = text.to_string();
    for w in taken.iter().rev() {
        if let Some(i) = raw.rfind(w.as_str()) {
            let start = raw[..i].trim_end_matches([' ', '\t']).len();
            raw.replace_range(start..i + w.len(), "");
        }
    }
    (kv, raw.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_quotes_and_templates_together() {
        assert_eq!(
            split_args(r#"path=/x state=directory msg="a b" n={{ x | default('a b') }}"#),
            ["path=/x", "state=directory", "msg=\"a b\"", "n={{ x | default('a b') }}"]
        );
        let (kv, raw) = parse_kv("make install chdir=/src creates='/usr/bin/x'", Some(&["chdir", "creates"]));
        assert_eq!(kv, [("chdir".into(), "/src".into()), ("creates".into(), "/usr/bin/x".into())]);
        assert_eq!(raw, "make install");
        let (kv, raw) = parse_kv("echo a=b", Some(&["chdir"]));
        assert_eq!((kv.len(), raw.as_str()), (0, "echo a=b"));
        let (kv, _) = parse_kv(r#"dest=/f content="a\nb\t\x41\u00e9\\n" x=\q"#, None);
        assert_eq!(kv[1], ("content".into(), "a\nb\tA\u{e9}\\n".into()));
        assert_eq!(kv[2], ("x".into(), "\\q".into()));
        let (kv, raw) = parse_kv("set -e\necho  'a  b'\nmake creates=/x\n", Some(&["creates"]));
        assert_eq!((kv.len(), raw.as_str()), (1, "set -e\necho  'a  b'\nmake"));
    }
}
