//! Variables and their precedence (lowest → highest): playbook `vars` < env.yaml < the inventory's
//! (`Inventory::host_vars`, in Ansible's order: inventory `[all:vars]` < group vars (parent <
//! child) < `group_vars/all` < `group_vars/<group>` < inventory host vars < `host_vars/<host>`) <
//! registered results < `-e` extra vars. env.yaml, copctl's own site file, is below every layer an
//! Ansible site sets. Merging is shallow (a later layer replaces a whole key), as Ansible's default.

pub mod secret;

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;

use crate::error::{Error, Result, Source, read_source};
use crate::inventory::Vars;
use secret::SecretNames;

/// The settings file of a site (`inventory/env.yaml`).
#[derive(Debug, Clone)]
pub struct EnvFile {
    pub vars: Vars,
    pub secret_names: Vec<String>,
    pub source: Option<Source>,
}

impl EnvFile {
    pub fn empty() -> Self {
        EnvFile { vars: Vars::new(), secret_names: vec![], source: None }
    }

    pub fn load(path: &Path) -> Result<EnvFile> {
        let source = read_source(path)?;
        EnvFile::parse(source)
    }

    pub fn parse(source: Source) -> Result<EnvFile> {
        if source.text.trim().is_empty() {
            return Ok(EnvFile { vars: Vars::new(), secret_names: vec![], source: Some(source) });
        }
        let value: Value = crate::yaml::parse(&source)?;
        let Value::Object(map) = value else {
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
        Ok(EnvFile { vars, secret_names, source: Some(source) })
    }
}

/// `-e k=v`, `-e '{"k": 1}'` (JSON/YAML mapping) and `-e @file.yaml`, later ones winning.
/// `k=v` values are strings, as in Ansible (`-e flag=true` is the string "true"; `| bool`).
pub fn parse_extra_vars(args: &[String]) -> Result<Vars> {
    let mut out = Vars::new();
    for arg in args {
        let arg = arg.trim();
        if let Some(path) = arg.strip_prefix('@') {
            let source = read_source(Path::new(path))?;
            let v: Value = crate::yaml::parse(&source)?;
            merge_mapping(&mut out, v, &format!("-e @{path}"))?;
        } else if arg.starts_with('{') {
            let source = Source::new("-e", arg);
            let v: Value = crate::yaml::parse(&source)?;
            merge_mapping(&mut out, v, "-e")?;
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
    Ok(out)
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

/// The layers a host's variables come from; `for_host` applies the precedence.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub playbook: Vars,
    pub env: Vars,
    pub extra: Vars,
    pub secret_names: SecretNames,
}

impl Layers {
    /// Variables that do not depend on a host (for `hosts:` of a play, for instance).
    pub fn global(&self) -> Vars {
        let mut out = self.playbook.clone();
        out.extend(self.env.clone());
        out.extend(self.extra.clone());
        out
    }

    /// A host's full variables: playbook < env < inventory (all < groups < group_vars/ files <
    /// host < host_vars/ files, merged by `Inventory::host_vars`) < registered < extra.
    pub fn for_host(&self, inventory_vars: &Vars, registered: Option<&IndexMap<String, Value>>) -> Vars {
        let mut out = self.playbook.clone();
        out.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.extend(inventory_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(r) = registered {
            out.extend(r.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        out.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn precedence_playbook_env_inventory_registered_extra() {
        let mut l = Layers::default();
        l.playbook.insert("a".into(), json!("playbook"));
        l.playbook.insert("b".into(), json!("playbook"));
        l.env.insert("b".into(), json!("env"));
        l.env.insert("c".into(), json!("env"));
        let mut inv = Vars::new();
        inv.insert("c".into(), json!("inventory"));
        inv.insert("d".into(), json!("inventory"));
        let mut reg = IndexMap::new();
        reg.insert("d".to_string(), json!("registered"));
        reg.insert("e".to_string(), json!("registered"));
        l.extra.insert("e".into(), json!("extra"));
        let v = l.for_host(&inv, Some(&reg));
        assert_eq!(
            Value::Object(v.into_iter().collect()),
            json!({"a": "playbook", "b": "env", "c": "inventory", "d": "registered", "e": "extra"})
        );
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
