//! Errors as values with a location: every error copctl reports about user input names the file,
//! the line and column, and says what was expected. Rendering is miette's; this module only builds
//! the diagnostics. An error that code decides on carries an `ErrorKind`; its text is for people.

use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// What an error means where code decides on it (`copctl validate` goes on past these); every
/// other error is `Other`. The kind never changes what is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorKind {
    #[default]
    Other,
    /// `--limit` leaves no task to do in the playbooks planned.
    NothingToDo,
    /// A play's `hosts:` needs a variable that was not given (`-e name=value`).
    NeedsVar,
    /// stdout was closed by its reader (`copctl plan --output json | head -1`): not worth a word.
    BrokenPipe,
    /// The host a command works through is unreachable (exit 4, as a run's unreachable host).
    Unreachable,
}

/// An error pointing into a source file (inventory, env.yaml, playbook, template).
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{file}:{line}:{column}: {message}")]
pub struct LocatedError {
    pub message: String,
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// `None` when the source must not be quoted (decrypted vault text).
    #[source_code]
    source_code: Option<NamedSource<Arc<String>>>,
    #[label("{label}")]
    span: Option<SourceSpan>,
    label: String,
    #[help]
    pub help: Option<String>,
    kind: ErrorKind,
}

/// The one error type of the library. `Located` carries a source snippet; `Plain` is for errors
/// about a command-line argument (a `--limit` pattern, a missing file).
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum Error {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Located(Box<LocatedError>),
    #[error("{message}")]
    Plain {
        message: String,
        #[help]
        help: Option<String>,
        kind: ErrorKind,
    },
    /// Several errors found together, each with its location (every unsupported item of an
    /// Ansible playbook): all are shown, after a line counting them.
    #[error("{message}")]
    Many {
        message: String,
        #[related]
        errors: Vec<Error>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A source file kept in memory so that errors can quote it.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub text: Arc<String>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source { name: name.into(), text: Arc::new(text.into()) }
    }

    /// Byte offset of the start of 1-based `line`, column 1-based (in characters).
    fn offset(&self, line: usize, column: usize) -> usize {
        let mut off = 0;
        for (i, l) in self.text.split_inclusive('\n').enumerate() {
            if i + 1 == line {
                let col: usize = l.chars().take(column.saturating_sub(1)).map(char::len_utf8).sum();
                return off + col;
            }
            off += l.len();
        }
        self.text.len()
    }

    fn line_len(&self, line: usize) -> usize {
        self.text.lines().nth(line.saturating_sub(1)).map(|l| l.trim_end().len()).unwrap_or(0)
    }

    /// An error at `line:column`, underlining `len` bytes (0: the rest of the line).
    pub fn error_at(
        &self,
        line: usize,
        column: usize,
        len: usize,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<String>,
    ) -> Error {
        let column = column.max(1);
        let offset = self.offset(line, column);
        let len = if len == 0 { self.line_len(line).saturating_sub(column - 1).max(1) } else { len };
        let len = len.min(self.text.len().saturating_sub(offset));
        Error::Located(Box::new(LocatedError {
            message: message.into(),
            file: self.name.clone(),
            line,
            column,
            source_code: Some(NamedSource::new(self.name.clone(), self.text.clone())),
            span: Some((offset, len).into()),
            label: label.into(),
            help,
            kind: ErrorKind::Other,
        }))
    }
}

impl Error {
    pub fn plain(message: impl Into<String>) -> Self {
        Error::Plain { message: message.into(), help: None, kind: ErrorKind::Other }
    }

    pub fn many(message: impl Into<String>, errors: Vec<Error>) -> Self {
        Error::Many { message: message.into(), errors }
    }

    pub fn with_help(message: impl Into<String>, help: impl Into<String>) -> Self {
        Error::Plain { message: message.into(), help: Some(help.into()), kind: ErrorKind::Other }
    }

    /// Adds a second piece of advice to the error's help.
    pub fn with_extra_help(mut self, more: &str) -> Self {
        let help = match &mut self {
            Error::Plain { help, .. } => help,
            Error::Located(e) => &mut e.help,
            Error::Many { errors, .. } => {
                *errors = std::mem::take(errors).into_iter().map(|e| e.with_extra_help(more)).collect();
                return self;
            }
        };
        *help = Some(match help.take() {
            Some(h) => format!("{h}; {more}"),
            None => more.to_string(),
        });
        self
    }

    /// The same error, marked as `kind` for the code that decides on it.
    pub fn with_kind(mut self, new: ErrorKind) -> Self {
        match &mut self {
            Error::Located(e) => e.kind = new,
            Error::Plain { kind, .. } => *kind = new,
            Error::Many { .. } => {}
        }
        self
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Located(e) => e.kind,
            Error::Plain { kind, .. } => *kind,
            Error::Many { .. } => ErrorKind::Other,
        }
    }

    /// The same error without the quoted lines of its source (file, line, column, message and
    /// help stay): for errors in decrypted vault text, whose lines are secrets.
    pub fn without_snippet(mut self) -> Self {
        match &mut self {
            Error::Located(e) => {
                e.source_code = None;
                e.span = None;
            }
            Error::Many { errors, .. } => {
                *errors = std::mem::take(errors).into_iter().map(Error::without_snippet).collect();
            }
            Error::Plain { .. } => {}
        }
        self
    }

    /// The `file:line` this error points at, if any (tests and JSON output use it).
    pub fn location(&self) -> Option<(String, usize)> {
        match self {
            Error::Located(e) => Some((e.file.clone(), e.line)),
            Error::Plain { .. } => None,
            Error::Many { errors, .. } => errors.first().and_then(Error::location),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::BrokenPipe { ErrorKind::BrokenPipe } else { ErrorKind::Other };
        Error::plain(e.to_string()).with_kind(kind)
    }
}

/// Reads a file for parsing, naming it in the error when it cannot be read.
pub fn read_source(path: &std::path::Path) -> Result<Source> {
    source_from_bytes(path, read_bytes(path)?)
}

/// Reads a file's bytes, naming it in the error when it cannot be read.
pub fn read_bytes(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::with_help(
            format!("cannot read {}: {e}", path.display()),
            "check the path, or pass another one with -i/--env",
        )
    })
}

/// A file's bytes as a `Source` named after `path`, refused at the first line that is not UTF-8.
pub fn source_from_bytes(path: &std::path::Path, bytes: Vec<u8>) -> Result<Source> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source::new(path.display().to_string(), text)),
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            Err(Error::with_help(
                format!("{}:{line}: the file is not valid UTF-8", path.display()),
                "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_kept_and_never_printed() {
        let e = Error::with_help("--limit 'x' leaves nothing to do", "check").with_kind(ErrorKind::NothingToDo);
        let e = e.with_extra_help("more");
        assert_eq!(e.kind(), ErrorKind::NothingToDo);
        assert_eq!(e.to_string(), "--limit 'x' leaves nothing to do");
        let l = Source::new("p.yaml", "a: 1\n").error_at(1, 1, 0, "m", "l", None).with_kind(ErrorKind::NeedsVar);
        assert_eq!(l.kind(), ErrorKind::NeedsVar);
        assert_eq!(l.to_string(), "p.yaml:1:1: m");
        assert_eq!(Error::plain("x").kind(), ErrorKind::Other);
    }
}
