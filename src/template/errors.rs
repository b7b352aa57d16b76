//! Template errors as copctl reports and weighs them: one line in Jinja2's and Ansible's words
//! (`'x' is undefined`), and which errors Ansible raises only when the task runs, which the
//! plan may leave to the run.

use minijinja::ErrorKind;

use super::Templates;

/// The file lookup's words for a file that is not there.
pub(super) const MISSING: &str = "No such file or directory";

/// The words of a site's lookup plugin left to the run while planning.
pub(super) const LOOKUP_AT_RUN: &str = "runs when its task runs";

impl Templates {
    pub fn is_undefined_error(e: &minijinja::Error) -> bool {
        innermost(e).kind() == ErrorKind::UndefinedError
    }

    /// Whether `e` is a site's lookup plugin left to the run while planning.
    pub fn left_to_run(e: &minijinja::Error) -> bool {
        innermost(e).detail().unwrap_or_default().ends_with(LOOKUP_AT_RUN)
    }

    /// Whether `e` is the file lookup's for a file the bastion does not have (yet).
    pub fn reads_missing_file(e: &minijinja::Error) -> bool {
        let detail = innermost(e).detail().unwrap_or_default();
        detail.starts_with("lookup('file', ") && detail.ends_with(&format!(": {}", MISSING))
    }

    /// Whether `e` is an error Ansible raises only when the task runs, where copctl's plan may
    /// leave it to the run for a task that expects to fail (ignore_errors, a rescue): an
    /// undefined variable, a lookup no plugin can be, an untrusted conditional. Unsupported
    /// modules, filters and lookups stay refused when planned.
    pub fn fails_when_run(e: &minijinja::Error) -> bool {
        let detail = innermost(e).detail().unwrap_or_default();
        Self::is_undefined_error(e)
            || (detail.starts_with("The lookup plugin ") && detail.ends_with(" was not found."))
            || detail.starts_with("Encountered untrusted template or expression")
            || ((detail.starts_with("The filter plugin '") || detail.starts_with("The test plugin '"))
                && detail.contains("' failed: "))
    }
}

/// The error inside included and imported templates: minijinja wraps one failing there as
/// `error in "NAME"`, where Jinja2 raises the error itself.
fn innermost(e: &minijinja::Error) -> &minijinja::Error {
    let mut e = e;
    while e.kind() == ErrorKind::BadInclude
        && let Some(inner) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<minijinja::Error>())
    {
        e = inner;
    }
    e
}

/// A template error in one line: what is undefined or wrong.
pub fn describe_error(e: &minijinja::Error) -> String {
    let e = innermost(e);
    let mut msg = match e.detail() {
        Some(d) => d.to_string(),
        None => e.kind().to_string(),
    };
    if Templates::is_undefined_error(e) && !msg.contains("undefined") && !msg.contains("has no attribute") {
        msg = format!("undefined variable: {msg}");
    }
    python_quotes(msg)
}

/// "`x` is undefined" (Jinja's words in MiniJinja) in Jinja2's and Ansible's: "'x' is
/// undefined", which playbooks test for (`error.msg is contains "'y' is undefined"`); an index
/// past a list's end also in Jinja2's words ("object has no element 0").
fn python_quotes(msg: String) -> String {
    let mut out = match msg.rfind("` is undefined").and_then(|end| Some((msg[..end].rfind('`')?, end))) {
        Some((start, end)) => format!("{}'{}'{}", &msg[..start], &msg[start + 1..end], &msg[end + 1..]),
        None => msg,
    };
    let index = out
        .strip_suffix("]' is undefined")
        .and_then(|e| e.rsplit_once('['))
        .map(|(_, i)| i.trim())
        .filter(|i| i.parse::<i64>().is_ok())
        .map(str::to_string);
    if let Some(i) = index {
        out.push_str(&format!(" (object has no element {i})"));
    }
    out
}
