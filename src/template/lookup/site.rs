//! A site's own lookup plugins (`lookup_plugins/NAME.py` beside the playbook, in a role or in
//! ansible.cfg's paths), run by the site's Python worker with the task's variables; left to
//! the run while planning or loading, as a lookup may read or change what those must not.

use std::path::{Path, PathBuf};

use minijinja::ErrorKind;
use minijinja::value::{Kwargs, Value};

use super::files::search_path;
use super::{LOADING, LOOKUPS, PLANNING, TermFailed, fail};
use crate::template::errors::LOOKUP_AT_RUN;
use crate::template::python;
use crate::template::render::ROOTS;
use crate::template::site_plugins::{PYTHON, PythonPlugins, to_json};
use crate::template::to_value;

/// Lookup `name`, which copctl does not have: a site's plugin of that name where there is one.
pub(super) fn lookup(
    state: &minijinja::State,
    name: &str,
    terms: &[Value],
    kw: &Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    // A site's own plugin, beside the playbook, in a role or in ansible.cfg's lookup
    // plugin paths, is Python Ansible imports: run by the site's Python.
    let mut dirs: Vec<PathBuf> = search_path(state).iter().map(PathBuf::from).collect();
    dirs.extend(state.lookup("playbook_dir").and_then(|d| d.as_str().map(PathBuf::from)));
    let mut files: Vec<PathBuf> = dirs.iter().map(|d| d.join("lookup_plugins").join(format!("{name}.py"))).collect();
    let plugins = state.lookup(PYTHON);
    let py = plugins.as_ref().and_then(|p| p.downcast_object_ref::<PythonPlugins>()).map(|p| p.0.clone());
    if let Some(py) = &py {
        let configured = py.lookup_dirs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        files.extend(configured.iter().map(|d| d.join(format!("{name}.py"))));
    }
    match (files.into_iter().find(|p| p.is_file()), py) {
        (Some(file), Some(py)) => python_lookup(state, &py, name, &file, terms, kw),
        _ => Err(fail(format!(
            "lookup('{name}', ...): copctl has the {LOOKUPS} lookups, and no lookup_plugins/{name}.py is beside the playbook, in its roles or in ansible.cfg's lookup_plugins"
        ))),
    }
}

/// A site's lookup plugin `file` run for `terms` with the task's variables; while planning,
/// an error saying it is left to the run (a lookup may read or change what the plan must not).
fn python_lookup(
    state: &minijinja::State,
    py: &python::Python,
    name: &str,
    file: &Path,
    terms: &[Value],
    kw: &minijinja::value::Kwargs,
) -> Result<Vec<Value>, minijinja::Error> {
    let fail = |msg: String| minijinja::Error::new(ErrorKind::InvalidOperation, msg);
    let mut kwargs = serde_json::Map::new();
    for k in kw.args().map(str::to_string).collect::<Vec<_>>() {
        if matches!(k.as_str(), "wantlist" | "errors") {
            continue;
        }
        let v: Value = kw.get(&k)?;
        kwargs.insert(k, to_json(&v)?);
    }
    if PLANNING.with(|p| p.get()) || LOADING.with(|p| p.get()) {
        return Err(fail(format!("lookup('{name}', ...): {} {LOOKUP_AT_RUN}", file.display())));
    }
    let mut json_terms = Vec::new();
    for t in terms {
        json_terms.push(match t.downcast_object_ref::<TermFailed>() {
            Some(f) => serde_json::json!({ "__copctl_undefined__": f.detail }),
            None => to_json(t)?,
        });
    }
    // The task's variables as the plugin's `variables`: what can be JSON, hostvars aside.
    let mut variables = serde_json::Map::new();
    if let Some(ctx) = ROOTS.with(|r| r.borrow().last().cloned())
        && let Ok(keys) = ctx.try_iter()
    {
        for k in keys {
            let Some(key) = k.as_str().filter(|k| !matches!(*k, "hostvars" | "vars" | PYTHON)) else { continue };
            if let Ok(v) = ctx.get_attr(key)
                && !v.is_undefined()
                && let Ok(j) = serde_json::to_value(&v)
            {
                variables.insert(key.to_string(), j);
            }
        }
    }
    let basedir = state.lookup("playbook_dir").and_then(|d| d.as_str().map(String::from));
    let answer = py
        .lookup(
            file,
            json_terms,
            serde_json::Value::Object(variables),
            serde_json::Value::Object(kwargs),
            basedir.as_deref(),
        )
        .map_err(|e| fail(format!("lookup('{name}', ...): {e}")))?;
    match answer {
        python::Answer::Value(serde_json::Value::Array(items)) => Ok(items.into_iter().map(to_value).collect()),
        python::Answer::Value(other) => {
            Err(fail(format!("lookup('{name}', ...): {} returned {other}, not a list", file.display())))
        }
        python::Answer::Undefined(e) => {
            let term = terms.iter().find_map(|t| t.downcast_object_ref::<TermFailed>());
            Err(match term {
                Some(f) => minijinja::Error::new(f.kind, f.detail.clone()),
                None => minijinja::Error::new(ErrorKind::UndefinedError, e),
            })
        }
        python::Answer::Failed(e) => Err(fail(format!(
            "An unhandled exception occurred while running the lookup plugin '{name}' ({}): {e}",
            file.display()
        ))),
    }
}
