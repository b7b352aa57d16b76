//! The lookups that find files as Ansible finds them along the task's search path (`files/`,
//! `templates/`, the role, the playbook's directory): `file`, `fileglob`, `first_found` and
//! `template`, which renders the file it finds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::ErrorKind;
use minijinja::value::{Kwargs, Value};

use super::{fail, text};
use crate::template::Syntax;
use crate::template::errors::MISSING;
use crate::template::native::single_expression;
use crate::template::render::{ROOTS, native_result, noting_printed, render_text, with_root};
use crate::template::source::prepared;
use crate::template::template_vars::template_file_vars;
use crate::text::fnmatch::fnmatch_regex;

/// Ansible's file lookup: each term a file found as Ansible finds it (in `files/` and then in each
/// directory of the task's `ansible_search_path`, else from where copctl runs), its text with
/// `rstrip` (default) and `lstrip` as its options.
pub(super) fn file(
    state: &minijinja::State,
    kind: &str,
    terms: &[Value],
    kw: &Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let lstrip: bool = kw.get::<Option<bool>>("lstrip")?.unwrap_or(false);
    let rstrip: bool = kw.get::<Option<bool>>("rstrip")?.unwrap_or(true);
    let search = search_path(state);
    let mut out = Vec::new();
    for term in terms {
        let term = text(kind, term)?;
        let path = find_file(&search, "files", &term);
        let t = std::fs::read_to_string(&path).map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::NotFound { MISSING.to_string() } else { e.to_string() };
            fail(format!("lookup('file', '{term}'): cannot read {}: {why}", path.display()))
        })?;
        let t = if lstrip { t.trim_start() } else { &t };
        let t = if rstrip { t.trim_end() } else { t };
        out.push(Value::from(t));
    }
    Ok(out)
}

/// Ansible's fileglob lookup: the files each term's pattern matches (`fileglob`).
pub(super) fn fileglobs(state: &minijinja::State, kind: &str, terms: &[Value]) -> Result<Vec<Value>, minijinja::Error> {
    let search = search_path(state);
    let mut out = Vec::new();
    for term in terms {
        out.extend(fileglob(&search, &text(kind, term)?).into_iter().map(Value::from));
    }
    Ok(out)
}

/// Ansible's first_found lookup: the first of the candidate files its terms and options name
/// that exists, or none where `skip` says so.
pub(super) fn first_found(
    state: &minijinja::State,
    terms: &[Value],
    kw: &Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let search = search_path(state);
    // `with_first_found` looks in the subdirectory its module's name suggests.
    let sub: Option<String> = kw.get("_subdir")?;
    let mut options = FirstFound::from_kwargs(kw)?;
    let mut wanted = Vec::new();
    let terms = if terms.is_empty() { vec![Value::from(())] } else { terms.to_vec() };
    for term in &terms {
        first_found_terms(term, &mut options, &mut wanted)?;
    }
    for name in &wanted {
        if let Some(p) = find_in_search(&search, sub.as_deref(), name) {
            kw.assert_all_used()?;
            return Ok(vec![Value::from(p.display().to_string())]);
        }
    }
    if options.skip { Ok(vec![]) } else { Err(fail("No file was found when using first_found.".into())) }
}

/// Ansible's template lookup: each term a file found in `templates/` along the task's search
/// path (as the file lookup finds files), rendered with the task's variables, the template
/// module's `ansible_managed`/`template_*` names and `template_vars` over them; Jinja's
/// settings from its options (`trim_blocks` on by default); the text's trailing newlines kept.
/// A file that is one `{{ expression }}` gives the expression's value, as Ansible's native
/// templating does.
pub(super) fn template_lookup(
    state: &minijinja::State,
    terms: &[String],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    let ctx = ROOTS
        .with(|r| r.borrow().last().cloned())
        .ok_or_else(|| fail("lookup('template', ...): no task's variables to render with".into()))?;
    let extra: Option<Value> = kw.get("template_vars")?;
    if let Some(v) = &extra
        && v.kind() != minijinja::value::ValueKind::Map
    {
        return Err(fail(format!("lookup('template', ...): template_vars must be a mapping, not {v}")));
    }
    // Deprecated in 2.19 and without effect there.
    let _: Option<bool> = kw.get("convert_data")?;
    let _: Option<bool> = kw.get("jinja2_native")?;
    let syntax = Syntax {
        trim_blocks: kw.get("trim_blocks")?,
        variable_start_string: kw.get("variable_start_string")?,
        variable_end_string: kw.get("variable_end_string")?,
        comment_start_string: kw.get("comment_start_string")?,
        comment_end_string: kw.get("comment_end_string")?,
        ..Syntax::default()
    };
    let search = search_path(state);
    let mut out = Vec::new();
    for term in terms {
        let path = find_file(&search, "templates", term);
        let Ok(source) = std::fs::read_to_string(&path) else {
            return Err(fail(format!("the template file {term} could not be found for the lookup")));
        };
        let full = std::path::absolute(&path).unwrap_or(path);
        let vars = minijinja::context! {
            ..extra.clone().unwrap_or_else(|| Value::from(BTreeMap::<String, Value>::new())),
            ..template_file_vars(state.env(), &ctx, term, &full, None)?,
            ..ctx.clone()
        };
        let body = source.strip_suffix('\n').unwrap_or(&source);
        let one = body.starts_with("{{") && body.ends_with("}}") && syntax == Syntax::default();
        match single_expression(body).filter(|_| one) {
            Some(expr) => {
                out.push(with_root(&vars, expr, || state.env().compile_expression(&prepared(expr))?.eval(&vars))?)
            }
            None if search.is_empty() => {
                let (text, printed) = noting_printed(|| render_text(state.env(), term, &source, &vars, &syntax));
                let text = text?;
                out.push(native_result(state.env(), &source, &text, &printed).unwrap_or_else(|| Value::from(text)));
            }
            None => {
                // Its includes and imports as Ansible's lookup finds them: beside the template,
                // then in each directory of the search path's templates/ and itself.
                let mut dirs: Vec<PathBuf> = full.parent().map(Path::to_path_buf).into_iter().collect();
                dirs.extend(search.iter().flat_map(|p| [Path::new(p).join("templates"), PathBuf::from(p)]));
                let mut env = state.env().clone();
                env.clear_templates();
                env.set_loader(move |n| {
                    if n.split('/').any(|c| c == "..") {
                        return Ok(None);
                    }
                    Ok(dirs.iter().find_map(|d| std::fs::read_to_string(d.join(n)).ok()))
                });
                let (text, printed) = noting_printed(|| render_text(&env, term, &source, &vars, &syntax));
                let text = text?;
                out.push(native_result(&env, &source, &text, &printed).unwrap_or_else(|| Value::from(text)));
            }
        }
    }
    Ok(out)
}

/// The task's `ansible_search_path` as a list of directories (none outside an Ansible task).
pub(super) fn search_path(state: &minijinja::State) -> Vec<String> {
    state
        .lookup("ansible_search_path")
        .and_then(|v| v.try_iter().ok().map(|i| i.filter_map(|p| p.as_str().map(String::from)).collect()))
        .unwrap_or_default()
}

/// Ansible's fileglob lookup for one pattern: a pattern with a directory is looked for as a
/// file lookup finds that directory (`files/` first); a bare one in `files/` and then each
/// directory of the search path; the files of the first directory with matches. Python's glob
/// rules (`*` and `?` skip a leading dot, `[...]`), in name order (Python's is the directory's).
fn fileglob(search: &[String], term: &str) -> Vec<String> {
    let (dir, pattern) = match term.rsplit_once('/') {
        Some((d, p)) => (Some(if d.is_empty() { "/" } else { d }), p),
        None => (None, term),
    };
    let dirs: Vec<PathBuf> = match dir {
        Some(d) => vec![find_file(search, "files", d)],
        None => search.iter().flat_map(|p| [Path::new(p).join("files"), PathBuf::from(p)]).collect(),
    };
    let Ok(re) = fnmatch_regex(pattern) else { return vec![] };
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut found: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| re.is_match(n) && (!n.starts_with('.') || pattern.starts_with('.')))
            .map(|n| d.join(n).display().to_string())
            .collect();
        if !found.is_empty() {
            found.sort();
            return found;
        }
    }
    vec![]
}

/// The first_found lookup's options: from its keyword arguments, then from each mapping term
/// (which sets them all, as Ansible's `set_options` does).
#[derive(Default)]
struct FirstFound {
    files: Vec<String>,
    paths: Vec<String>,
    skip: bool,
}

impl FirstFound {
    fn from_kwargs(kw: &minijinja::value::Kwargs) -> Result<Self, minijinja::Error> {
        let files: Option<Value> = kw.get("files")?;
        let paths: Option<Value> = kw.get("paths")?;
        Ok(FirstFound {
            files: files.map(|v| split_terms(&v, ",;")).transpose()?.unwrap_or_default(),
            paths: paths.map(|v| split_terms(&v, ",:;")).transpose()?.unwrap_or_default(),
            skip: kw.get::<Option<bool>>("skip")?.unwrap_or(false),
        })
    }
}

/// A text split on any of `on` (Ansible's deprecated splitting), or a list of such texts.
fn split_terms(v: &Value, on: &str) -> Result<Vec<String>, minijinja::Error> {
    if let Some(s) = v.as_str() {
        return Ok(s.split(|c| on.contains(c)).map(str::to_string).collect());
    }
    if v.is_undefined() || v.is_none() {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    for x in v.try_iter()? {
        out.extend(split_terms(&x, on)?);
    }
    Ok(out)
}

/// The candidate names of one first_found term, in order: a text is a file name (joined to each
/// of the current `paths`), a mapping sets the options and gives its `files` × `paths`, a list
/// gives its terms'.
fn first_found_terms(term: &Value, o: &mut FirstFound, out: &mut Vec<String>) -> Result<(), minijinja::Error> {
    let files = if term.is_none() || term.is_undefined() {
        o.files.clone()
    } else if let Some(s) = term.as_str() {
        vec![s.to_string()]
    } else if term.kind() == minijinja::value::ValueKind::Map {
        let get = |k: &str| term.get_attr(k).ok().filter(|v| !v.is_undefined() && !v.is_none());
        let files = get("files").map(|v| split_terms(&v, ",;")).transpose()?.unwrap_or_default();
        let paths = get("paths").map(|v| split_terms(&v, ",:;")).transpose()?.unwrap_or_default();
        let skip = get("skip").is_some_and(|v| v.is_true());
        *o = FirstFound { files: files.clone(), paths, skip };
        files
    } else if term.kind() == minijinja::value::ValueKind::Seq {
        for t in term.try_iter()? {
            first_found_terms(&t, o, out)?;
        }
        return Ok(());
    } else {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("Invalid term supplied. A string, dict or list is required, not {term}."),
        ));
    };
    if o.paths.is_empty() {
        out.extend(files);
    } else {
        for p in &o.paths {
            out.extend(
                files
                    .iter()
                    .map(|f| if f.starts_with('/') { f.clone() } else { format!("{}/{f}", p.trim_end_matches('/')) }),
            );
        }
    }
    Ok(())
}

/// A file found as Ansible's `find_file_in_search_path` finds it, or none: an absolute name if
/// it exists, else `sub/name` and `name` in each directory of `search`.
fn find_in_search(search: &[String], sub: Option<&str>, name: &str) -> Option<PathBuf> {
    let name_path = Path::new(name);
    if name_path.is_absolute() {
        return name_path.exists().then(|| name_path.to_path_buf());
    }
    search.iter().find_map(|d| {
        let d = Path::new(d);
        let in_sub = sub.filter(|s| name.split('/').next() != Some(*s)).map(|s| d.join(s).join(name));
        [in_sub, Some(d.join(name))].into_iter().flatten().find(|p| p.exists())
    })
}

/// Where Ansible's lookups find a relative file (its `path_dwim_relative_stack`): `sub/name`
/// and then `name` in each directory of `search`; else the name as it is (from where copctl
/// runs, when there is no search path).
fn find_file(search: &[String], sub: &str, name: &str) -> PathBuf {
    let name_path = Path::new(name);
    if name_path.is_absolute() || name.starts_with('~') {
        return name_path.to_path_buf();
    }
    let in_sub = name.split('/').next() != Some(sub);
    search
        .iter()
        .flat_map(|d| {
            let d = Path::new(d);
            [in_sub.then(|| d.join(sub).join(name)), Some(d.join(name))]
        })
        .flatten()
        .find(|p| p.exists())
        .unwrap_or_else(|| name_path.to_path_buf())
}
