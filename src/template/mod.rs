//! Templates: one minijinja environment with strict undefined (a missing variable is an error,
//! never an empty string), Ansible-familiar filters (`quote`, `bool`, `to_json`, `b64encode`,
//! `urlencode`, `regex_replace`, ...) and the names `inventory_hostname`, `groups`, `group_names`,
//! `hostvars`.
//! Template files come from a site's override directory first, then the embedded `templates/`.
//!
//! Secret tracking lives here too (`secrets`): every context records which secret variables its
//! renderings read (`take_secret_reads`), through other variables, `hostvars` and facts alike,
//! so that text rendered from a secret, in whatever form a filter gave it, is withheld from
//! every output.
//!
//! The core types are here (`Templates`, `Syntax`, `LazyVars`); each concern has its file:
//! `environment` (the environment and its settings), `render` (files, strings, expressions),
//! `context` (a host's variables), `secrets` (what renderings read), `conditional`, `lookup`,
//! `filters`, `errors`.

mod clock;
mod conditional;
mod context;
mod environment;
mod errors;
mod filters;
mod format;
mod lookup;
mod native;
mod password;
pub mod python;
mod random;
mod render;
mod rewrite;
mod secrets;
pub mod sequence;
mod site_plugins;
mod source;
mod template_vars;
mod urlsplit;
mod yaml_dump;

pub use crate::text::python::{is_template, literal, py_repr};
pub use crate::text::quote::shell_quote;
pub use conditional::{RENDERED_TEXT, TEMPLATED_CONDITIONALS, note_rendered_text};
pub use context::{host_context, host_context_with, raw_var};
pub use errors::describe_error;
pub use filters::version::compare_versions;
pub use format::normpath;
pub use lookup::{loading, planning};
pub use native::{json_with_dropped_newline, single_expression, with_dropped_newline, yaml_single_expression};
pub use render::ANSIBLE_TASK;
pub use secrets::{secret_reads, take_secret_reads, tracking_secrets, treat_as_secret};
pub use source::escape_backslashes;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use minijinja::Environment;
use minijinja::value::Value;

use crate::secret::SecretNames;
use secrets::SecretReads;

/// Looks up the variables of any host, for `hostvars[...]`.
pub trait HostVarLookup: Send + Sync + std::fmt::Debug {
    fn host_names(&self) -> Vec<String>;
    /// A host's variables (`inventory_hostname` is set over them by the caller).
    fn vars_of(&self, host: &str) -> Option<crate::vars::VarLayers>;
    /// The inventory's hosts a host pattern selects (no `--limit`), for the inventory_hostnames
    /// lookup; none where the pattern matches nothing.
    fn pattern_hosts(&self, _patterns: &[String]) -> Vec<String> {
        Vec::new()
    }
}

/// A template file's own Jinja settings (Ansible's template module arguments); `None`: Ansible's
/// default (trim_blocks on, lstrip_blocks off, Jinja2's delimiters, `\n`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Syntax {
    pub trim_blocks: Option<bool>,
    pub lstrip_blocks: Option<bool>,
    pub newline_sequence: Option<String>,
    pub block_start_string: Option<String>,
    pub block_end_string: Option<String>,
    pub variable_start_string: Option<String>,
    pub variable_end_string: Option<String>,
    pub comment_start_string: Option<String>,
    pub comment_end_string: Option<String>,
    /// The rest only come from a template's `#jinja2:` first line (no module argument sets them).
    #[serde(skip)]
    pub keep_trailing_newline: Option<bool>,
    #[serde(skip)]
    pub line_statement_prefix: Option<String>,
    #[serde(skip)]
    pub line_comment_prefix: Option<String>,
}

pub struct Templates {
    env: Arc<Environment<'static>>,
    pub override_dir: Option<PathBuf>,
    /// Which variables are secrets, for the contexts to track their reads.
    secret_names: SecretNames,
    /// The site's own Python plugins (python.rs).
    python: Arc<python::Python>,
    /// What renderings computed from secrets, for the run's redactor (`secrets.rs`).
    derived: Arc<crate::secret::DerivedSecrets>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates").field("override_dir", &self.override_dir).finish()
    }
}

/// Names a context holds beside the host's variables (the play's magic variables), as values
/// shared by every task that uses them.
pub type Magic = Arc<Vec<(&'static str, Value)>>;

/// Ansible's `omit`: an argument whose value renders to it is left out of the module's
/// arguments (`mode: "{{ m | default(omit) }}"`), as if the task had not named it.
pub const OMIT: &str = "__omit_place_holder__copctl";

/// `v` without the mappings' entries and the lists' items that are `omit` (Ansible's
/// `remove_omit`, over nested mappings and lists too).
pub fn remove_omit(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter().filter(|(_, x)| x.as_str() != Some(OMIT)).map(|(k, x)| (k, remove_omit(x))).collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().filter(|x| x.as_str() != Some(OMIT)).map(remove_omit).collect())
        }
        other => other,
    }
}

/// A template context whose variables holding templates (`node_token: "{{ inventory_hostname }}-x"`)
/// are rendered when they are read, in the same context, as Ansible's lazy templating does: in a
/// template file, a step's arguments, `when` or a play's pattern alike. A variable that needs
/// itself is an error naming the chain.
struct LazyVars {
    env: Arc<Environment<'static>>,
    /// Names set by copctl (`inventory_hostname`, `groups`, ...): they shadow variables.
    ready: BTreeMap<String, Value>,
    /// The variables as loaded, converted when first read: a context is made per host and task,
    /// and converting a large env.yaml whole each time made planning O(hosts x tasks x settings).
    raw: crate::vars::VarLayers,
    /// Names this context does not hold itself (`groups`, `hostvars` for another host's vars).
    fallback: Option<Value>,
    /// Variables converted or rendered as they were read, with the secrets each read.
    rendered: Mutex<BTreeMap<String, (Value, BTreeSet<String>)>>,
    reads: Arc<SecretReads>,
}

impl std::fmt::Debug for LazyVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyVars").field("ready", &self.ready.keys()).field("raw", &self.raw.names()).finish()
    }
}

/// Any serializable value as a template value.
pub fn to_value<T: serde::Serialize>(v: T) -> Value {
    Value::from(minijinja::value::Serde(v))
}

/// No inventory: the `hostvars` of the unit tests' contexts.
#[cfg(test)]
#[derive(Debug)]
struct NoHosts;

#[cfg(test)]
impl HostVarLookup for NoHosts {
    fn host_names(&self) -> Vec<String> {
        vec![]
    }
    fn vars_of(&self, _: &str) -> Option<crate::vars::VarLayers> {
        None
    }
}
