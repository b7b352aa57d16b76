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
    // The raw parameters as Ansible's parse_kv recombines them (`join_args` of the words that
    // are not arguments): lines and spaces kept, a line ending in a lone `\` joined to the next,
    // the last newline of a `|` block kept.
    let raw: Vec<String> = ansible_split_args(text)
        .into_iter()
        .filter(|w| {
            let word = w.trim_end_matches('\n');
            !taken.iter().any(|t| t == word)
        })
        .collect();
    (kv, join_args(&raw))
}

/// ansible/parsing/splitter.py's `join_args`.
fn join_args(words: &[String]) -> String {
    let mut out = String::new();
    for w in words {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// ansible/parsing/splitter.py's `split_args`, line by line as it works: words split on spaces
/// (runs of spaces kept on the word before), quotes and Jinja blocks kept together, each line's
/// newline kept on its last word unless the line ends with a lone `\`.
fn ansible_split_args(text: &str) -> Vec<String> {
    fn quote_state(token: &str, mut q: Option<char>) -> Option<char> {
        let mut prev = None;
        for c in token.chars() {
            if (c == '"' || c == '\'') && prev != Some('\\') {
                match q {
                    Some(open) if open == c => q = None,
                    Some(_) => {}
                    None => q = Some(c),
                }
            }
            prev = Some(c);
        }
        q
    }
    fn depth(token: &str, cur: usize, open: &str, close: &str) -> usize {
        let (o, c) = (token.matches(open).count(), token.matches(close).count());
        if o == c { cur } else { (cur as isize + o as isize - c as isize).max(0) as usize }
    }
    let mut params: Vec<String> = Vec::new();
    let (mut quote, mut print, mut block, mut comment) = (None, 0usize, 0usize, 0usize);
    let items: Vec<&str> = text.split('\n').collect();
    for (n, item) in items.iter().enumerate() {
        let mut continued = false;
        for (idx, token) in item.split(' ').enumerate() {
            if token.is_empty() && idx != 0 {
                match params.last_mut() {
                    Some(p) => p.push(' '),
                    None => params.push(" ".into()),
                }
                continue;
            }
            let inside_before = quote.is_some();
            if token == "\\" && !inside_before {
                continued = true;
                continue;
            }
            quote = quote_state(token, quote);
            let inside = quote.is_some();
            let mut appended = false;
            let in_jinja = print > 0 || block > 0 || comment > 0;
            if inside && !inside_before && !in_jinja {
                params.push(token.to_string());
                appended = true;
            } else if in_jinja || inside || inside_before {
                let last = params.last_mut();
                match last {
                    Some(p) if idx == 0 && inside_before => p.push_str(token),
                    Some(p) => {
                        if idx > 0 {
                            p.push(' ');
                        }
                        p.push_str(token);
                    }
                    None => params.push(token.to_string()),
                }
                appended = true;
            }
            for (d, open, close) in [(&mut print, "{{", "}}"), (&mut block, "{%", "%}"), (&mut comment, "{#", "#}")] {
                let before = *d;
                *d = depth(token, *d, open, close);
                if *d != before && !appended {
                    params.push(token.to_string());
                    appended = true;
                }
            }
            if print == 0 && block == 0 && comment == 0 && quote.is_none() && !appended && !token.is_empty() {
                params.push(token.to_string());
            }
        }
        if items.len() > 1 && n != items.len() - 1 && !continued {
            match params.last_mut() {
                Some(p) => p.push('\n'),
                None => params.push("\n".into()),
            }
        }
    }
    params
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

    /// The raw parameters as ansible-core 2.19's parse_kv(check_raw=True) gives them (each
    /// expected value printed by it).
    #[test]
    fn raw_parameters_are_recombined_as_ansibles() {
        let raw = |t: &str| parse_kv(t, Some(&["creates", "chdir"])).1;
        assert_eq!(
            raw(
                "echo this is a \\\n\"multiline echo\" \\\n\"with a new line\nin quotes\" \\\n| cat\necho \"this is a second line\"\n"
            ),
            "echo this is a \"multiline echo\" \"with a new line\nin quotes\" | cat\necho \"this is a second line\"\n"
        );
        assert_eq!(raw("echo one \\\n  two\n"), "echo one  two\n");
        assert_eq!(raw("  lead  two   spaces\n\tx\n"), "  lead  two   spaces\n\tx\n");
        assert_eq!(raw("cmd {{ a | default('x y') }}  creates=/x\nnext\n"), "cmd {{ a | default('x y') }}  next\n");
    }
}
