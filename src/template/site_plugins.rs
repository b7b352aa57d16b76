//! A site's own Python filters and tests made the environment's, and the global through which
//! its lookups reach the same Python worker (`lookup::site`). The worker itself is `python`.

use std::path::Path;
use std::sync::Arc;

use minijinja::ErrorKind;
use minijinja::value::{Object, Rest, Value, ValueOrKwargs};

use super::{Templates, python, to_value};

/// The global through which lookups reach the site's Python plugins.
pub(super) const PYTHON: &str = "__copctl_python";

#[derive(Debug)]
pub(super) struct PythonPlugins(pub(super) Arc<python::Python>);

impl Object for PythonPlugins {}

/// `value` and `args` as JSON for a site's plugin.
pub(super) fn to_json(v: &Value) -> Result<serde_json::Value, minijinja::Error> {
    serde_json::to_value(v).map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))
}

/// Filter or test `name` of the site's plugin file `path` on `value` with `args`.
fn python_call(
    py: &python::Python,
    kind: &str,
    path: &Path,
    name: &str,
    value: Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, minijinja::Error> {
    // As Ansible's plugin sees an undefined value: an error, not a None.
    if value.is_undefined() {
        return Err(minijinja::Error::new(
            ErrorKind::UndefinedError,
            format!("the {kind} '{name}' was given an undefined value"),
        ));
    }
    let mut pos = vec![to_json(&value)?];
    let mut kwargs = serde_json::Map::new();
    for a in args.into_values() {
        if a.is_kwargs() {
            let kw = minijinja::value::Kwargs::try_from(a)?;
            for k in kw.args().map(str::to_string).collect::<Vec<_>>() {
                let v: Value = kw.get(&k)?;
                kwargs.insert(k, to_json(&v)?);
            }
        } else {
            pos.push(to_json(&a)?);
        }
    }
    // Ansible's words, and the file.
    let fail = |e: String| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("The {kind} plugin '{name}' failed: {e} in {}", path.display()),
        )
    };
    match py.call(kind, path, name, pos, serde_json::Value::Object(kwargs)).map_err(fail)? {
        python::Answer::Value(v) => Ok(to_value(v)),
        python::Answer::Undefined(e) | python::Answer::Failed(e) => Err(fail(e)),
    }
}

impl Templates {
    /// A site's own Python filters and tests in `dirs` (each file's, once) made the
    /// environment's, and its lookup directories where lookups are looked for; a file Python
    /// cannot load is an error naming it.
    pub fn add_python_plugins(&mut self, dirs: &python::PluginDirs) -> Result<(), String> {
        {
            let mut l = self.python.lookup_dirs.lock().unwrap_or_else(|p| p.into_inner());
            for d in &dirs.lookup {
                if !l.contains(d) {
                    l.push(d.clone());
                }
            }
        }
        for (kind, list) in [("filter", &dirs.filter), ("test", &dirs.test)] {
            for file in list.iter().flat_map(|d| python::plugin_files(d)) {
                if !self.python.registered.lock().unwrap_or_else(|p| p.into_inner()).insert(file.clone()) {
                    continue;
                }
                let names = self.python.names(kind, &file)?;
                let env = Arc::make_mut(&mut self.env);
                for name in names {
                    let (py, path, n) = (self.python.clone(), file.clone(), name.clone());
                    if kind == "filter" {
                        env.add_filter(name, move |value: Value, args: Rest<ValueOrKwargs>| {
                            python_call(&py, "filter", &path, &n, value, args)
                        });
                    } else {
                        env.add_test(name, move |value: Value, args: Rest<ValueOrKwargs>| {
                            python_call(&py, "test", &path, &n, value, args).map(|v| v.is_true())
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
