//! Variables and their precedence (lowest → highest): playbook `vars` < env.yaml < the inventory's
//! (`Inventory::host_vars`, in Ansible's order: inventory `[all:vars]` < group vars (parent <
//! child) < `group_vars/all` < `group_vars/<group>` < inventory host vars < `host_vars/<host>`) <
//! registered results < `-e` extra vars. env.yaml, copctl's own site file, is below every layer an
//! Ansible site sets. Merging is shallow (a later layer replaces a whole key), as Ansible's default.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result, Source};
use crate::inventory::Vars;
use crate::secret::SecretNames;
use crate::vault::{self, SecretSource, VaultSecrets};

/// The settings file of a site (`inventory/env.yaml`), cleartext or vault-encrypted, with inline
/// `!vault` values decrypted.
#[derive(Debug, Clone)]
pub struct EnvFile {
    pub vars: Vars,
    /// `secret_vars`, then every variable holding a decrypted value (all of them when the file
    /// is vault-encrypted): masked whatever their names.
    pub secret_names: Vec<String>,
    pub source: Option<Source>,
}

impl EnvFile {
    pub fn empty() -> Self {
        EnvFile { vars: Vars::new(), secret_names: vec![], source: None }
    }

    /// Reads env.yaml without vault secrets (a vaulted file or value is an error saying how to
    /// give the password).
    pub fn load(path: &Path) -> Result<EnvFile> {
        EnvFile::load_vaulted(path, &VaultSecrets::default())
    }

    /// Reads env.yaml, decrypting it (or its `!vault` values) with `secrets`, asked for only then.
    pub fn load_vaulted(path: &Path, secrets: &dyn SecretSource) -> Result<EnvFile> {
        let loaded = vault::read_source(path, secrets)?;
        let mut env = EnvFile::parse_vaulted(loaded.source.clone(), secrets).map_err(|e| loaded.guard(e))?;
        if loaded.encrypted {
            let names: Vec<String> = env.vars.keys().cloned().collect();
            add_names(&mut env.secret_names, names);
        }
        Ok(env)
    }

    pub fn parse(source: Source) -> Result<EnvFile> {
        EnvFile::parse_vaulted(source, &VaultSecrets::default())
    }

    /// Parses env.yaml text whose `!vault` values `secrets` decrypts.
    pub fn parse_vaulted(source: Source, secrets: &dyn SecretSource) -> Result<EnvFile> {
        if source.text.trim().is_empty() {
            return Ok(EnvFile { vars: Vars::new(), secret_names: vec![], source: Some(source) });
        }
        let parsed = vault::parse_vars(&source, secrets)?;
        let Value::Object(map) = parsed.value else {
            return Err(source.error_at(
                1,
                1,
                0,
                "env.yaml must be a mapping of settings",
                "not a mapping",
                Some("write one `name: value` per line at the top level".into()),
            ));
        };
        let mut vars: Vars = map.into_iter().collect();
        // `secret_vars` lists more names to treat as secrets; it is not itself a variable.
        let secret_names = match vars.shift_remove("secret_vars") {
            None => vec![],
            Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            Some(_) => {
                let line = source.text.lines().position(|l| l.starts_with("secret_vars")).unwrap_or(0) + 1;
                return Err(source.error_at(
                    line,
                    1,
                    0,
                    "secret_vars must be a list of variable names",
                    "here",
                    Some("e.g. secret_vars: [harbor_admin_pw, ldap_bind]".into()),
                ));
            }
        };
        let mut secret_names = secret_names;
        add_names(&mut secret_names, parsed.secrets.iter().map(|s| s.name.clone()));
        Ok(EnvFile { vars, secret_names, source: Some(source) })
    }
}

fn add_names(list: &mut Vec<String>, names: impl IntoIterator<Item = String>) {
    for n in names {
        if !list.contains(&n) {
            list.push(n);
        }
    }
}

/// Extra variables and the names among them that hold decrypted values.
#[derive(Debug, Clone, Default)]
pub struct ExtraVars {
    pub vars: Vars,
    pub secret_names: Vec<String>,
}

/// `-e k=v`, `-e '{"k": 1}'` (JSON/YAML mapping) and `-e @file.yaml`, later ones winning.
/// `k=v` values are strings, as in Ansible (`-e flag=true` is the string "true"; `| bool`).
pub fn parse_extra_vars(args: &[String]) -> Result<Vars> {
    parse_extra_vars_vaulted(args, &VaultSecrets::default()).map(|e| e.vars)
}

/// `parse_extra_vars`, with `-e @file` vault-encrypted or holding `!vault` values decrypted by
/// `secrets` (asked for only then); the variables they set are secrets.
pub fn parse_extra_vars_vaulted(args: &[String], secrets: &dyn SecretSource) -> Result<ExtraVars> {
    let mut extra = ExtraVars::default();
    let out = &mut extra.vars;
    for arg in args {
        let arg = arg.trim();
        if let Some(path) = arg.strip_prefix('@') {
            let loaded = vault::read_source(Path::new(path), secrets)?;
            let parsed = vault::parse_vars(&loaded.source, secrets).map_err(|e| loaded.guard(e))?;
            let names: Vec<String> = match &parsed.value {
                Value::Object(m) if loaded.encrypted => m.keys().cloned().collect(),
                _ => parsed.secrets.iter().map(|s| s.name.clone()).collect(),
            };
            merge_mapping(out, parsed.value, &format!("-e @{path}"))?;
            add_names(&mut extra.secret_names, names);
        } else if arg.starts_with('{') {
            let source = Source::new("-e", arg);
            let v: Value = crate::yaml::parse(&source)?;
            merge_mapping(out, v, "-e")?;
        } else {
            for token in shlex::split(arg).unwrap_or_else(|| vec![arg.to_string()]) {
                let Some((k, v)) = token.split_once('=') else {
                    return Err(Error::with_help(
                        format!("-e {arg}: expected key=value, got '{token}'"),
                        "use -e name=value, -e '{\"name\": value}' or -e @file.yaml",
                    ));
                };
                if k.is_empty() {
                    return Err(Error::plain(format!("-e {arg}: empty variable name")));
                }
                out.insert(k.to_string(), Value::String(v.to_string()));
            }
        }
    }
    Ok(extra)
}

fn merge_mapping(out: &mut Vars, v: Value, what: &str) -> Result<()> {
    match v {
        Value::Object(m) => {
            out.extend(m);
            Ok(())
        }
        Value::Null => Ok(()),
        _ => Err(Error::plain(format!("{what}: extra variables must be a mapping"))),
    }
}

/// The layers a host's variables come from; `for_host_layers` applies the precedence. Shared,
/// not copied, by every context that reads them.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub playbook: Arc<Vars>,
    pub env: Arc<Vars>,
    pub extra: Arc<Vars>,
    pub secret_names: SecretNames,
}

impl Layers {
    /// Variables that do not depend on a host (for `hosts:` of a play, for instance).
    pub fn global(&self) -> Vars {
        let mut out = (*self.playbook).clone();
        out.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }

    /// A host's variables: playbook < env < inventory (all < groups < group_vars/ files < host <
    /// host_vars/ files, merged by `Inventory::host_vars`) < registered (data, see
    /// `for_task_layers`) < extra, read from the
    /// layers highest first, never merged into a copy. A task's context is made
    /// per host and task, and copying every variable into it was most of the controller's work
    /// (`hostvars[h]` made another copy for each host it named: O(hosts²) a run for a loop over
    /// `groups['cluster']`).
    pub fn for_host_layers(&self, inventory_vars: Arc<Vars>, registered: Option<Arc<Vars>>) -> VarLayers {
        let data = if registered.is_some() { 0b10 } else { 0 };
        let mut layers = vec![self.extra.clone()];
        layers.extend(registered);
        layers.extend([inventory_vars, self.env.clone(), self.playbook.clone()]);
        VarLayers { layers, data, data_names: None, hidden: None }
    }

    /// A task's variables: `for_host_layers` with `own` (the task's: play and task vars, and
    /// the registered results and facts, which win over them) in the registered results' place.
    /// The names in `data` are values a task produced (registered results, facts), read as they
    /// are and never rendered again: Ansible treats them as untrusted, and a host's output
    /// holding `{{ ... }}` stays text (rendering it would let a host run lookups on the bastion).
    pub fn for_task_layers(&self, inventory_vars: Arc<Vars>, own: Arc<Vars>, data: Option<DataNames>) -> VarLayers {
        let layers = vec![self.extra.clone(), own, inventory_vars, self.env.clone(), self.playbook.clone()];
        VarLayers { layers, data: 0, data_names: data.map(|d| (1, d)), hidden: None }
    }
}

/// Names whose values are data, not templates (see `Layers::for_task_layers`).
pub type DataNames = Arc<std::collections::BTreeSet<String>>;

/// Variables in layers, highest precedence first: a name is the first layer's that holds it.
#[derive(Debug, Clone, Default)]
pub struct VarLayers {
    layers: Vec<Arc<Vars>>,
    /// The layers (a bit each, by index) whose values are data, read without rendering.
    data: u64,
    /// A layer (by index) some of whose names are data.
    data_names: Option<(usize, DataNames)>,
    /// A name no layer gives (a play's per-host vars_files, which other hosts do not see).
    hidden: Option<&'static str>,
}

impl VarLayers {
    pub fn one(vars: Vars) -> VarLayers {
        VarLayers { layers: vec![Arc::new(vars)], data: 0, data_names: None, hidden: None }
    }

    /// `self` under a lowest layer of its own.
    pub fn over(mut self, lowest: Arc<Vars>) -> VarLayers {
        self.layers.push(lowest);
        self
    }

    /// `self` without `name`.
    pub fn hiding(mut self, name: &'static str) -> VarLayers {
        self.hidden = Some(name);
        self
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        if self.hidden == Some(name) {
            return None;
        }
        self.layers.iter().find_map(|l| l.get(name))
    }

    /// `get`, and whether the value is data (from a layer never rendered).
    pub fn get_data(&self, name: &str) -> Option<(&Value, bool)> {
        if self.hidden == Some(name) {
            return None;
        }
        let data = |i: usize| {
            self.data & (1 << i) != 0 || self.data_names.as_ref().is_some_and(|(at, n)| *at == i && n.contains(name))
        };
        self.layers.iter().enumerate().find_map(|(i, l)| l.get(name).map(|v| (v, data(i))))
    }

    /// Every name, once each (in no particular order).
    pub fn names(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.layers
            .iter()
            .flat_map(|l| l.keys())
            .map(String::as_str)
            .filter(|k| self.hidden != Some(*k) && seen.insert(*k))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn precedence_playbook_env_inventory_registered_extra() {
        let mut l = Layers::default();
        Arc::make_mut(&mut l.playbook).insert("a".into(), json!("playbook"));
        Arc::make_mut(&mut l.playbook).insert("b".into(), json!("playbook"));
        Arc::make_mut(&mut l.env).insert("b".into(), json!("env"));
        Arc::make_mut(&mut l.env).insert("c".into(), json!("env"));
        let mut inv = Vars::new();
        inv.insert("c".into(), json!("inventory"));
        inv.insert("d".into(), json!("inventory"));
        let mut reg = Vars::new();
        reg.insert("d".into(), json!("registered"));
        reg.insert("e".into(), json!("registered"));
        Arc::make_mut(&mut l.extra).insert("e".into(), json!("extra"));
        let layered = l.for_host_layers(Arc::new(inv), Some(Arc::new(reg)));
        let want = json!({"a": "playbook", "b": "env", "c": "inventory", "d": "registered", "e": "extra"});
        for k in ["a", "b", "c", "d", "e"] {
            assert_eq!(layered.get(k), Some(&want[k]), "{k}");
        }
        assert_eq!(layered.get("f"), None);
        assert_eq!(layered.clone().hiding("d").get("d"), None);
        let mut names = layered.names();
        names.sort();
        assert_eq!(names, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn extra_vars_forms() {
        let v = parse_extra_vars(&["a=1 b='x y'".into(), "{\"c\": true}".into()]).unwrap();
        assert_eq!(v["a"], json!("1"));
        assert_eq!(v["b"], json!("x y"));
        assert_eq!(v["c"], json!(true));
        assert!(parse_extra_vars(&["novalue".into()]).is_err());
    }
}
