//! The one minijinja environment every template renders in: Ansible's settings (strict
//! undefined, trim_blocks, no escaping, a null printed as nothing), where files load from, and
//! every filter, test and function registered; and the settings a site adds to it.

use std::path::PathBuf;
use std::sync::Arc;

use minijinja::value::Value;
use minijinja::{Environment, UndefinedBehavior};

use super::render::{PRINTED, ROOTS, load_template};
use super::site_plugins::{PYTHON, PythonPlugins};
use super::template_vars::MANAGED;
use super::{Templates, clock, filters, format, lookup, password, python, random, rewrite, urlsplit};
use crate::secret::SecretNames;

impl Templates {
    pub fn new(override_dir: Option<PathBuf>) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // Ansible's template settings: trim_blocks on; the trailing newlines are put back after
        // rendering (`pad_trailing_newlines`), as Ansible does.
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).build().expect("valid syntax config"),
        );
        // minijinja escapes by file name (`config.yaml.j2` would get JSON quoting); Ansible never
        // escapes, and config files must come out exactly as written.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // Ansible 2.19 prints a null as nothing (`x{{ none }}y` is `xy`); inside a list it stays
        // `None`, and a template that is one expression keeps the null itself.
        env.set_formatter(|out, state, value| {
            if !matches!(value.kind(), minijinja::value::ValueKind::String | minijinja::value::ValueKind::None) {
                PRINTED.with(|p| p.borrow_mut().as_mut().map(|p| p.push(value.clone())));
            }
            if let Some((source, plain)) = super::secrets::take_unprinted_read()
                && let Some(root) = ROOTS.with(|r| r.borrow().last().cloned())
            {
                super::secrets::learn_derived(&root, value, &source, &plain);
            }
            if value.is_none() { Ok(()) } else { minijinja::escape_formatter(out, state, value) }
        });
        let dir = override_dir.clone();
        env.set_loader(move |name| Ok(load_template(&dir, name)));
        password::add(&mut env);
        add_functions(&mut env);
        filters::add(&mut env);
        format::add(&mut env);
        random::add(&mut env);
        clock::add(&mut env);
        urlsplit::add(&mut env);
        // Python's string, list and dict methods (`x.split(':')`, `s.startswith('/')`,
        // `d.items()`), which Ansible's templates call as Jinja2 lets them.
        env.set_unknown_method_callback(filters::python_method);
        let python = Arc::new(python::Python::default());
        env.add_global(PYTHON, Value::from_object(PythonPlugins(python.clone())));
        Templates {
            env: Arc::new(env),
            override_dir,
            secret_names: SecretNames::default(),
            python,
            derived: Arc::default(),
        }
    }

    /// What this site's renderings have computed from secrets so far, and will: for the
    /// redactors of what a run prints and records (`Redactor::with_derived`).
    pub fn derived_secrets(&self) -> Arc<crate::secret::DerivedSecrets> {
        self.derived.clone()
    }

    /// The site's Python worker (modules from `library/` are built there).
    pub fn python(&self) -> Arc<python::Python> {
        self.python.clone()
    }

    /// The site's secret names (`secret_vars` of env.yaml on top of the naming rule), which the
    /// contexts made from here track.
    /// The variables whose values are secrets, for the secret reads of what renders.
    pub fn set_secret_names(&mut self, names: SecretNames) {
        self.secret_names = names;
    }

    pub fn with_secret_names(mut self, names: SecretNames) -> Self {
        self.secret_names = names;
        self
    }

    /// ansible.cfg's `ansible_managed` (Ansible's DEFAULT_MANAGED_STR), which the template
    /// module and lookup make their `ansible_managed` of where the task's variables have none.
    pub fn with_ansible_managed(mut self, format: Option<String>) -> Self {
        if let Some(f) = format {
            Arc::make_mut(&mut self.env).add_global(MANAGED, Value::from(f));
        }
        self
    }
}

/// The functions templates call beside filters: Jinja2's globals, the lookups, and the ones
/// copctl's rewrites of template text call (`rewrite`).
fn add_functions(env: &mut Environment<'static>) {
    // Jinja2's own globals beside range, dict and namespace.
    env.add_function("joiner", minijinja_contrib::globals::joiner);
    env.add_function("cycler", minijinja_contrib::globals::cycler);
    env.add_function(rewrite::CHAIN, rewrite::walk);
    env.add_function(rewrite::VAR, rewrite::var);
    env.add_function(rewrite::TERM, lookup::lookup_term);
    env.add_function(rewrite::CONST, super::conditional::conditional_const);
    // Ansible's `lookup('env', NAME)` and `lookup('file', PATH)`: settings kept out of cleartext
    // files (`registry_password: "{{ lookup('env', 'COP_REGISTRY_PASSWORD') }}"`).
    env.add_function("lookup", lookup::lookup);
    env.add_function("query", lookup::query);
    env.add_function("q", lookup::query);
}
