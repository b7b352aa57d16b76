//! Python's ways with a string that copctl's messages and templates follow: `repr` as Ansible's
//! messages quote names, whether a string holds template syntax, and `!unsafe` text kept as
//! written. Here rather than in `template`, as settings, the vault and the inventory use them.

/// Python's `repr` of a string, as Ansible's messages quote names.
pub fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// Whether a string holds template syntax.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
}

/// A text that renders as itself (Ansible's `!unsafe`): a raw block around it where it holds
/// template syntax. One holding `endraw` cannot be kept that way and is refused.
pub fn literal(text: &str) -> Result<String, String> {
    if !is_template(text) {
        return Ok(text.to_string());
    }
    if text.contains("endraw") {
        return Err(format!("copctl cannot keep a !unsafe text holding 'endraw' as written: {text:?}"));
    }
    Ok(format!("{{% raw %}}{text}{{% endraw %}}"))
}
