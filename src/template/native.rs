//! Ansible's native values: a string that is one `{{ expression }}` gives the expression's
//! value with its type (a number, a list), where any other template renders to text; and the
//! trailing newline Jinja drops, given back to text.

use minijinja::value::Value;

use super::source::escape_backslashes;

/// The expression of a string that is one `{{ expression }}` and nothing else, but for one
/// trailing newline (which Jinja drops before Ansible renders the rest natively): its value keeps
/// its type (Ansible's native values), where any other template, a space around it included,
/// renders to text. A value that is text gets the newline back (`with_dropped_newline`).
pub fn single_expression(s: &str) -> Option<&str> {
    s.strip_suffix('\n')
        .unwrap_or(s)
        .strip_prefix("{{")
        .and_then(|x| x.strip_suffix("}}"))
        .filter(|x| !x.contains("{{") && !x.contains("{%") && (!x.contains("}}") || one_expression(x)))
}

/// Whether `inner` (what is between a text's first `{{` and last `}}`) is one expression: no
/// bracket closes what it did not open (a `}}` ending the expression early), as Jinja's lexer
/// reads `{{ {'a': {'b': 1}} }}` as one mapping.
fn one_expression(inner: &str) -> bool {
    let mut depth = 0usize;
    let mut quote = None;
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0 && quote.is_none()
}

/// The native value of `source`, a `single_expression`: text gets back the trailing newline Jinja
/// dropped, unless it ends with one (Ansible puts back the newlines the result lacks):
/// `"{{ name }}\n"` is the name and a newline, `"{{ port }}\n"` the number.
pub fn with_dropped_newline(source: &str, v: Value) -> Value {
    match v.as_str() {
        Some(text) if source.ends_with('\n') && !text.ends_with('\n') => Value::from(format!("{text}\n")),
        _ => v,
    }
}

/// `with_dropped_newline` for a value already in JSON.
pub fn json_with_dropped_newline(source: &str, v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::String(text) if source.ends_with('\n') && !text.ends_with('\n') => {
            serde_json::Value::String(format!("{text}\n"))
        }
        v => v,
    }
}

/// `single_expression` of a string written in YAML, its backslashes escaped as Ansible's are
/// (`escape_backslashes`).
pub fn yaml_single_expression(s: &str) -> Option<String> {
    single_expression(&escape_backslashes(s)).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_expression_holds_nested_mappings_and_no_second_template() {
        assert_eq!(single_expression("{{ {'a': {'port': 1}} }}"), Some(" {'a': {'port': 1}} "));
        assert_eq!(
            single_expression("{{ x | combine({'a': {'b': '}}'}}) }}"),
            Some(" x | combine({'a': {'b': '}}'}}) ")
        );
        assert_eq!(single_expression("{{ a }} and {{ b }}"), None);
        assert_eq!(single_expression("{{ a }}-{{ {'b': 1} }}"), None);
        assert_eq!(single_expression("{{ a }}}}"), None);
    }
}
