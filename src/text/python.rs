//! Ansible's (Python's) view of a text, without a template engine: whether it holds template
//! syntax, and how to keep a `!unsafe` one as written. Low, so that the YAML loader can use it.

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
