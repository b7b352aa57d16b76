//! POSIX shell-like splitting of an inventory host line, with `#` comments, exactly as Python's
//! `shlex.split(line, comments=True)` does it (which is what Ansible's INI parser uses). The shlex
//! crate has no comment support, and a `#` inside quotes must survive, so this is hand-written.

/// Splits `line`; `Err` carries Python's message ("No closing quotation", "No escaped character").
pub fn split(line: &str) -> Result<Vec<String>, &'static str> {
    #[derive(PartialEq)]
    enum State {
        Space,
        Word,
        Single,
        Double,
    }
    let mut tokens = Vec::new();
    let mut token = String::new();
    let mut quoted = false;
    let mut state = State::Space;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            State::Space | State::Word => match c {
                ' ' | '\t' | '\r' | '\n' => {
                    if state == State::Word {
                        tokens.push(std::mem::take(&mut token));
                        quoted = false;
                        state = State::Space;
                    }
                }
                '#' => {
                    // A comment ends the line, and ends the current word too.
                    if state == State::Word {
                        tokens.push(std::mem::take(&mut token));
                    }
                    return Ok(tokens);
                }
                '\'' => {
                    state = State::Single;
                    quoted = true;
                }
                '"' => {
                    state = State::Double;
                    quoted = true;
                }
                '\\' => {
                    let Some(n) = chars.next() else { return Err("No escaped character") };
                    token.push(n);
                    state = State::Word;
                }
                _ => {
                    token.push(c);
                    state = State::Word;
                }
            },
            State::Single => {
                if c == '\'' {
                    state = State::Word;
                } else {
                    token.push(c);
                }
            }
            State::Double => match c {
                '"' => state = State::Word,
                '\\' => {
                    let Some(n) = chars.next() else { return Err("No escaped character") };
                    // Inside double quotes only the quote and the backslash itself are escapable.
                    if n != '"' && n != '\\' {
                        token.push('\\');
                    }
                    token.push(n);
                }
                _ => token.push(c),
            },
        }
    }
    match state {
        State::Single | State::Double => Err("No closing quotation"),
        State::Word => {
            tokens.push(token);
            Ok(tokens)
        }
        State::Space => {
            if quoted {
                tokens.push(token);
            }
            Ok(tokens)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_like_python_shlex() {
        assert_eq!(split("a b=1 c=\"x y\"").unwrap(), ["a", "b=1", "c=x y"]);
        assert_eq!(split("h v=a#b w=1").unwrap(), ["h", "v=a"]);
        assert_eq!(split("h v='a#b'").unwrap(), ["h", "v=a#b"]);
        assert_eq!(split("h v=\"a\\\"b\\n\"").unwrap(), ["h", "v=a\"b\\n"]);
        assert_eq!(split("h v=''").unwrap(), ["h", "v="]);
        assert_eq!(split("h v=a\\ b").unwrap(), ["h", "v=a b"]);
        assert_eq!(split("h v='x").unwrap_err(), "No closing quotation");
    }
}
