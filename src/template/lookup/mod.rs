//! Ansible's `lookup()`, `query()` and `q()`: their arguments, their `wantlist` and `errors`
//! options, and the lookup each names, run on the bastion: `bastion` (env, pipe, lines,
//! password), `files` (file, fileglob, first_found, template), `values` (the with_ loops', vars,
//! sequence, ...) and `site` (a site's Python lookup plugins).

mod bastion;
mod files;
mod site;
mod values;

use minijinja::ErrorKind;
use minijinja::value::{Object, Value};

use crate::template::errors::describe_error;
use crate::template::render::render_term;
use crate::text::python::py_repr;

/// The lookups copctl runs, for its refusal.
const LOOKUPS: &str = "dict, env, file, fileglob, first_found, indexed_items, inventory_hostnames, items, lines, list, nested, password, pipe, random_choice, sequence, template, together and vars";

thread_local! {
    /// Set while the plan's checks render templates: the pipe lookup runs no command then.
    static PLANNING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set while an Ansible playbook is loaded (its roles' names, include loops): a site's
    /// lookup plugin does not run then, as it does not while planning.
    static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` as a playbook's load-time templates render: a site's Python lookup is left to the
/// run (the template is then not known when loading).
pub fn loading<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&LOADING, f)
}

/// Runs `f` as the plan's checks render: no lookup runs a command on the bastion (`pipe` gives
/// "" then), as planning changes nothing anywhere.
pub fn planning<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&PLANNING, f)
}

/// Runs `f` with the thread's `flag` set, put back as it was however `f` ends (a panic too).
fn with_flag<T>(flag: &'static std::thread::LocalKey<std::cell::Cell<bool>>, f: impl FnOnce() -> T) -> T {
    struct Reset(&'static std::thread::LocalKey<std::cell::Cell<bool>>, bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            self.0.with(|p| p.set(self.1));
        }
    }
    let _reset = Reset(flag, flag.with(|p| p.replace(true)));
    f()
}

/// `lookup(kind, terms..., wantlist=False)` as Ansible gives its result: with `wantlist` the
/// list; else none for no result, one result as it is, several texts joined with commas.
pub(super) fn lookup(
    state: &minijinja::State,
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    let (kind, terms, kw) = lookup_args(args)?;
    let wantlist: bool = kw.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let Some(mut out) = lookup_or_not(state, &kind, &terms, &kw)? else { return Ok(Value::from(())) };
    Ok(match out.len() {
        _ if wantlist => Value::from(out),
        0 => Value::from(()),
        1 => out.remove(0),
        _ if out.iter().all(|v| v.as_str().is_some()) => {
            Value::from(out.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
        }
        _ => Value::from(out),
    })
}

/// The lookup's results, or none where it failed and its `errors` (`strict`, the default;
/// `warn`; `ignore`) says to go on, as Ansible's templar does with every lookup.
fn lookup_or_not(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Option<Vec<Value>>, minijinja::Error> {
    let errors: Option<String> = kw.get("errors")?;
    match (run_lookup(state, kind, terms, kw), errors.as_deref()) {
        (Ok(out), _) => Ok(Some(out)),
        (Err(e), None | Some("strict")) => Err(e),
        (Err(e), Some("warn")) => {
            tracing::warn!("an error occurred while running the lookup plugin '{kind}': {}", describe_error(&e));
            Ok(None)
        }
        (Err(_), Some("ignore")) => Ok(None),
        (Err(_), Some(other)) => Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("lookup('{kind}', ...): errors is one of strict, warn and ignore, not {other:?}"),
        )),
    }
}

/// `query(kind, terms...)` (and `q`): the lookup's list, always.
pub(super) fn query(
    state: &minijinja::State,
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    let (kind, terms, kw) = lookup_args(args)?;
    let _: Option<bool> = kw.get("wantlist")?;
    Ok(Value::from(lookup_or_not(state, &kind, &terms, &kw)?.unwrap_or_default()))
}

/// The arguments of `lookup(kind, terms..., options...)`: the kind, the terms, the options
/// (keyword arguments may come anywhere, as Python's `*terms, **kwargs` take them).
fn lookup_args(
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<(String, Vec<Value>, minijinja::value::Kwargs), minijinja::Error> {
    let mut pos = Vec::new();
    let mut kw = None;
    for v in args.into_values() {
        if v.is_kwargs() {
            kw = Some(minijinja::value::Kwargs::try_from(v)?);
        } else {
            pos.push(v);
        }
    }
    let kw = kw.unwrap_or_else(|| minijinja::value::Kwargs::from_iter(std::iter::empty::<(&str, Value)>()));
    let Some((kind, terms)) = pos.split_first() else {
        return Err(minijinja::Error::new(ErrorKind::MissingArgument, "lookup: the lookup's name is missing"));
    };
    let kind = kind.as_str().ok_or_else(|| {
        minijinja::Error::new(ErrorKind::InvalidOperation, format!("lookup: the lookup's name is text, not {kind}"))
    })?;
    // `lookup('ansible.builtin.env', ...)`: ansible-core's own lookups by their FQCN.
    let kind = kind.strip_prefix("ansible.builtin.").or_else(|| kind.strip_prefix("ansible.legacy.")).unwrap_or(kind);
    term_failed(kind, terms)?;
    Ok((kind.to_string(), terms.to_vec(), kw))
}

/// Ansible's lookup plugin `kind` over `terms`, on the bastion: its list of results.
/// `env` (an unset variable is an error here, not Ansible's silent empty string, unless a
/// default is given as the second term), `file` (found as Ansible finds it: in `files/` and then
/// in each directory of the task's `ansible_search_path`, else from where copctl runs; `rstrip`
/// (default) and `lstrip` as its options) and `list` (the terms as they are).
fn run_lookup(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    // `with_X: "{{ list }}"` gives the lookup its list as one term: its items are the terms.
    let spread: Vec<Value>;
    let terms = match terms {
        [one]
            if matches!(kind, "inventory_hostnames" | "lines" | "random_choice")
                && one.kind() == minijinja::value::ValueKind::Seq =>
        {
            spread = one.try_iter()?.collect();
            spread.as_slice()
        }
        _ => terms,
    };
    let out = match kind {
        "env" => bastion::env(kind, terms, kw)?,
        "file" => files::file(state, kind, terms, kw)?,
        "list" => terms.to_vec(),
        "template" => files::template_lookup(state, &texts(kind, terms)?, kw)?,
        "pipe" => bastion::pipe_lookup(state, &texts(kind, terms)?)?,
        "password" => bastion::passwords(state, kind, terms, kw)?,
        "dict" | "items" | "together" | "nested" => values::with_loop(state, kind, terms)?,
        "lines" => bastion::lines(state, kind, terms)?,
        "indexed_items" => values::indexed_items(terms),
        "random_choice" => values::random_choice(terms),
        "inventory_hostnames" => values::inventory_hostnames(state, kind, terms)?,
        "vars" => values::vars(state, terms, kw)?,
        "fileglob" => files::fileglobs(state, kind, terms)?,
        "first_found" => files::first_found(state, terms, kw)?,
        "sequence" => values::sequences(kind, terms)?,
        // A name no plugin can have (Ansible does not render a lookup's name): Ansible fails the
        // task when it runs, so may the run (a task that ignores its errors goes on).
        other if !is_plugin_name(other) => {
            return Err(fail(format!("The lookup plugin {} was not found.", py_repr(other))));
        }
        other => return site::lookup(state, other, terms, kw),
    };
    kw.assert_all_used()?;
    Ok(out)
}

/// A lookup's failure, in its words.
fn fail(msg: String) -> minijinja::Error {
    minijinja::Error::new(ErrorKind::InvalidOperation, msg)
}

/// A term of lookup `kind` as text, which each term of most lookups is.
fn text(kind: &str, v: &Value) -> Result<String, minijinja::Error> {
    match v.as_str() {
        Some(s) => Ok(s.to_string()),
        None => Err(fail(format!("lookup('{kind}', ...): each term is text, not {v}"))),
    }
}

/// Every term of lookup `kind` as text.
fn texts(kind: &str, terms: &[Value]) -> Result<Vec<String>, minijinja::Error> {
    terms.iter().map(|t| text(kind, t)).collect()
}

/// A lookup's argument written as a template in the playbook (`rewrite::lookup_terms`),
/// rendered with the variables where the lookup is called (a loop's too): a single expression
/// keeps its value's type, as Ansible's templating of an argument does.
pub(super) fn lookup_term(state: &minijinja::State, text: String) -> Result<Value, minijinja::Error> {
    // The lookup says what failed: its own name first, when copctl has no such lookup.
    Ok(render_term(state, &text).unwrap_or_else(|e| {
        Value::from_object(TermFailed { kind: e.kind(), detail: e.detail().unwrap_or_default().to_string() })
    }))
}

/// A lookup argument that did not render (`lookup_term`): the error, raised by the lookup.
#[derive(Debug)]
struct TermFailed {
    kind: ErrorKind,
    detail: String,
}

impl Object for TermFailed {}

/// The error of the first argument of a lookup copctl has that did not render.
fn term_failed(kind: &str, terms: &[Value]) -> Result<(), minijinja::Error> {
    if !LOOKUPS.replace(" and ", ", ").split(", ").any(|n| n == kind) {
        return Ok(());
    }
    match terms.iter().find_map(|t| t.downcast_object_ref::<TermFailed>()) {
        Some(f) => Err(minijinja::Error::new(f.kind, f.detail.clone())),
        None => Ok(()),
    }
}

/// Whether `name` can name a plugin: a Python identifier, or dotted ones (a collection's FQCN).
fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|p| {
            p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use minijinja::value::Value;

    use crate::template::Templates;

    #[test]
    fn lookups_read_the_bastions_environment_and_files() {
        let t = Templates::new(None);
        let ctx = Value::from(());
        let path = std::env::var("PATH").unwrap();
        assert_eq!(t.render_str("{{ lookup('env', 'PATH') }}", &ctx).unwrap(), path);
        assert_eq!(t.render_str("{{ lookup('env', 'COPCTL_SURELY_UNSET', 'dflt') }}", &ctx).unwrap(), "dflt");
        let e = t.render_str("{{ lookup('env', 'COPCTL_SURELY_UNSET') }}", &ctx).unwrap_err();
        assert!(
            e.to_string().contains(
                "lookup('env', 'COPCTL_SURELY_UNSET'): the environment variable COPCTL_SURELY_UNSET is not set"
            ),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pw");
        std::fs::write(&f, "s3cret pass\n").unwrap();
        let src = format!("{{{{ lookup('file', '{}') }}}}|{{{{ query('env', 'PATH') | length }}}}", f.display());
        assert_eq!(t.render_str(&src, &ctx).unwrap(), "s3cret pass|1");
        let e = t.render_str("{{ lookup('vault', 'x') }}", &ctx).unwrap_err();
        assert!(
            e.to_string().contains(
                "lookup('vault', ...): copctl has the dict, env, file, fileglob, first_found, indexed_items, inventory_hostnames, items, lines, list, nested, password, pipe, random_choice, sequence, template, together and vars lookups"
            ),
            "{e}"
        );
    }
}
