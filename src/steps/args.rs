//! Argument types several step kinds share: one value or a list, a number or a flag that may
//! be a template, present/absent, and a file's mode. Each kind's own arguments live in its file.

use serde::{Deserialize, Serialize};

/// A single value or a list of them (`notify: x` or `notify: [x, y]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(t) => vec![t.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// A number that may also be written as a template (`timeout: "{{ drain_timeout }}"`); the text
/// must render to a number.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Number {
    Value(u64),
    Text(String),
}

impl Number {
    pub fn get(&self) -> Result<u64, String> {
        match self {
            Number::Value(n) => Ok(*n),
            Number::Text(t) => t.trim().parse().map_err(|_| format!("'{t}' is not a number")),
        }
    }
}

/// A boolean that may be written as a template (`"{{ yes | default(false) }}"`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Flag {
    Value(bool),
    Text(String),
}

impl Flag {
    pub fn get(&self) -> bool {
        match self {
            Flag::Value(b) => *b,
            Flag::Text(t) => matches!(t.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "1" | "on"),
        }
    }
}

/// `state:` of kinds that put something in place or take it away.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    #[default]
    Present,
    Absent,
}

/// `mode:` of a file: octal text, quoted or not (`mode: 644` is 0644, never decimal 644 as in
/// Ansible). Kept as written, since it may be a template rendered per host; a literal mode is
/// checked when the playbook is loaded, a rendered one when the step runs.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(transparent)]
pub struct Mode(String);

/// A mode that is not octal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeError(String);

impl std::fmt::Display for ModeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mode '{}' is not an octal mode; quote it in YAML: mode: \"0644\"", self.0)
    }
}

impl std::error::Error for ModeError {}

impl From<&str> for Mode {
    fn from(s: &str) -> Self {
        Mode(s.to_string())
    }
}

impl Mode {
    /// The permission bits ("0644", "644", "0o644"; symbolic modes like u=rw are not supported).
    pub fn bits(&self) -> Result<u32, ModeError> {
        let t = self.0.trim().trim_start_matches("0o");
        u32::from_str_radix(t, 8).ok().filter(|v| *v <= 0o7777).ok_or_else(|| ModeError(self.0.clone()))
    }

    /// Whether the mode is rendered per host, so that only the rendered text can be checked.
    pub fn is_template(&self) -> bool {
        self.0.contains("{{")
    }
}
