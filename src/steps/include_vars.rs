//! `include_vars` with a file name from a template (`"{{ ansible_os_family }}.yml"`, an item of
//! `with_first_found`, a `first_found` lookup): which file is decided per host when the step
//! runs. The files it can be were read when the playbook loaded (`files`: each file of the
//! search directories' `vars/`, and beside them, whose name the template can give), so a file
//! that does not parse is an error before anything runs and the plan knows the variables the
//! step may set; one outside them is read when the step picks it. The chosen file's variables
//! become the host's facts, rendered as `set_fact` renders them.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Guards, Kind, Outcome, StepCtx};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IncludeVarsArgs {
    /// The file's name, a template rendered for the host.
    pub file: String,
    /// Put the variables under this one name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where a relative name is looked for, in order: `DIR/vars/NAME`, then `DIR/NAME` (none
    /// given, as in a native playbook: the playbook's directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// The files the name may give, read when the playbook loaded: path → variables.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub files: IndexMap<String, Map<String, Value>>,
    /// A play's `vars_files` entries decided per host (`file` unused): each entry's candidates
    /// in order, the first found read; later entries over earlier ones. Their variables are the
    /// play's (`VARS_FILES`), not facts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vars_files: Vec<Vec<String>>,
}

/// Where a host's per-host `vars_files` variables are kept among its results: the engine puts
/// them over the play's `vars` and under the task's own, where Ansible's precedence has them.
pub const VARS_FILES: &str = "__copctl_vars_files";

impl IncludeVarsArgs {
    /// Every variable the step may set (for the plan's checks), with a value from one of the
    /// files.
    pub fn may_set(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if !self.vars_files.is_empty() {
            for vars in self.files.values() {
                for (k, v) in vars {
                    out.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            return out;
        }
        for vars in self.files.values() {
            match &self.name {
                Some(n) => {
                    out.entry(n.clone()).or_insert_with(|| Value::Object(vars.clone()));
                }
                None => {
                    for (k, v) in vars {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
        out
    }

    /// Where a name is looked for, in order (`here`: where a native playbook is).
    pub fn candidates(&self, name: &str, here: &std::path::Path) -> Vec<String> {
        if name.starts_with('/') {
            return vec![name.to_string()];
        }
        let here = vec![here.display().to_string()];
        let search = if self.search.is_empty() { &here } else { &self.search };
        search
            .iter()
            .flat_map(|d| {
                let d = d.trim_end_matches('/');
                [format!("{d}/vars/{name}"), format!("{d}/{name}")]
            })
            .collect()
    }
}

impl Kind for IncludeVarsArgs {
    const RENDERED: bool = false;

    fn read_only(&self) -> bool {
        true
    }

    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        if !self.vars_files.is_empty() {
            return self.play_vars_files(cx);
        }
        let name = match cx.templates.render_str(&self.file, cx.vars) {
            Ok(n) => n.trim().to_string(),
            Err(e) => return Outcome::failed(format!("file: {}", crate::template::describe_error(&e))),
        };
        let tried = self.candidates(&name, cx.local_dir);
        let Some(path) = tried.iter().find(|p| self.files.contains_key(*p) || std::path::Path::new(p).is_file())
        else {
            return Outcome::failed(format!(
                "Could not find or access '{name}' on the bastion; looked in: {}",
                tried.join(", ")
            ));
        };
        let vars = match self.files.get(path) {
            Some(v) => v.clone(),
            None => match read_vars(std::path::Path::new(path)) {
                Ok(v) => v,
                Err(e) => return Outcome::failed(e),
            },
        };
        let mut facts = Map::new();
        for (k, v) in &vars {
            match super::set_fact::native(cx, v) {
                Ok(r) => {
                    facts.insert(k.clone(), r);
                }
                Err(e) => return Outcome::failed(format!("{path}: {k}: {}", crate::template::describe_error(&e))),
            }
        }
        if let Some(n) = &self.name {
            facts = Map::from_iter([(n.clone(), Value::Object(facts))]);
        }
        let mut o = Outcome::ok("");
        o.result.insert("ansible_facts".into(), Value::Object(facts.clone()));
        o.result.insert("ansible_included_var_files".into(), json!([path]));
        o.facts = Some(facts);
        o
    }
}

impl IncludeVarsArgs {
    /// The play's per-host `vars_files`, as Ansible's variable manager reads them: each entry's
    /// names rendered for the host, the first that is a file read. An entry none of whose files
    /// is there fails the step (Ansible passes over it without a word).
    fn play_vars_files(&self, cx: &StepCtx<'_>) -> Outcome {
        let mut merged = Map::new();
        let mut read = Vec::new();
        for entry in &self.vars_files {
            let mut tried = Vec::new();
            let mut found = None;
            for template in entry {
                let name = match cx.templates.render_str(template, cx.vars) {
                    Ok(n) => n.trim().to_string(),
                    Err(e) => {
                        return Outcome::failed(format!(
                            "vars_files: '{template}': {}",
                            crate::template::describe_error(&e)
                        ));
                    }
                };
                let candidates = self.candidates(&name, cx.local_dir);
                found = candidates.iter().find(|p| self.files.contains_key(*p) || std::path::Path::new(p).is_file()).cloned();
                tried.extend(candidates);
                if found.is_some() {
                    break;
                }
            }
            let Some(path) = found else {
                return Outcome::failed(format!("vars_files: none of {} is on the bastion", tried.join(", ")));
            };
            let vars = match self.files.get(&path) {
                Some(v) => v.clone(),
                None => match read_vars(std::path::Path::new(&path)) {
                    Ok(v) => v,
                    Err(e) => return Outcome::failed(e),
                },
            };
            merged.extend(vars);
            read.push(path);
        }
        let mut o = Outcome::ok("");
        o.result.insert("ansible_included_var_files".into(), json!(read));
        o.facts = Some(Map::from_iter([(VARS_FILES.to_string(), Value::Object(merged))]));
        o
    }
}

/// A variables file as include_vars reads it: a YAML (or JSON) mapping; empty is no variables.
pub fn read_vars(path: &std::path::Path) -> Result<Map<String, Value>, String> {
    let source = crate::error::read_source(path).map_err(|e| e.to_string())?;
    if source.text.trim_start().starts_with("$ANSIBLE_VAULT") {
        return Err(format!(
            "{} is vault-encrypted, which include_vars does not read yet (put the variables in group_vars/)",
            path.display()
        ));
    }
    crate::yaml::parse_ansible_vars::<Option<Map<String, Value>>>(&source)
        .map(Option::unwrap_or_default)
        .map_err(|e| format!("{}: {e}", path.display()))
}
