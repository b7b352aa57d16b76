//! A site: the inventory, env.yaml, extra vars, playbook and template sources of one run, and
//! the variable contexts built from them. Every command starts by loading one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use indexmap::IndexMap;
use serde_json::Value;

use crate::error::Result;
use crate::inventory::{Inventory, Vars};
use crate::playbook::{Playbook, PlaybookSource};
use crate::secret::{Redactor, SecretNames};
use crate::template::{HostVarLookup, Templates};
use crate::vars::{EnvFile, Layers, parse_extra_vars_vaulted};
use crate::vault::Vault;

/// Where to load a site from (the CLI's global options).
#[derive(Debug, Clone, Default)]
pub struct SiteOptions {
    /// The inventory sources (`-i`, repeated): files, directories, `h1,h2,` host lists.
    pub inventory: Vec<PathBuf>,
    /// `None`: `env.yaml` beside the inventory, if present.
    pub env: Option<PathBuf>,
    pub extra_vars: Vec<String>,
    /// `None`: `playbooks/` beside the inventory, if present.
    pub playbook_dir: Option<PathBuf>,
    /// `None`: `templates/` beside the inventory, if present.
    pub template_dir: Option<PathBuf>,
    /// The vault secrets for a vault-encrypted inventory, env.yaml or `-e @file`, and their
    /// `!vault` values: read only when one is met.
    pub vault: Arc<Vault>,
    /// ansible.cfg's `ansible_managed`, for templates' `ansible_managed`.
    pub ansible_managed: Option<String>,
    /// ansible.cfg's plugin paths (or Ansible's defaults), for a site's own Python plugins.
    pub plugin_paths: crate::template::python::PluginDirs,
}

#[derive(Debug)]
pub struct Site {
    pub inventory: Arc<Inventory>,
    pub env: EnvFile,
    pub extra: Vars,
    pub playbooks: PlaybookSource,
    pub templates: Templates,
    pub secret_names: SecretNames,
    groups: OnceLock<Value>,
    /// `groups` as templates see it, converted once (it names every host: converting it for
    /// every task made large inventories quadratic).
    groups_template: OnceLock<minijinja::Value>,
    /// Each playbook's variable layers (by name and file) and each host's inventory variables,
    /// built once: they are the same for every task, and building them per task was most of the
    /// scheduler's allocations. (Nothing changes a site's variables once it is planned from.)
    layers_cache: Mutex<HashMap<(String, String), Arc<Layers>>>,
    host_vars_cache: Arc<HostVarsCache>,
    /// Each host's `group_names`, found once (its groups and all their ancestors).
    group_names_cache: Mutex<HashMap<String, Arc<Vec<String>>>>,
    /// The inventory file every host comes from, where `-i` named one file: Ansible's
    /// `inventory_file` (and `inventory_dir`). With several sources, or a directory, copctl does
    /// not know a host's file, and the names stay undefined.
    pub inventory_file: Option<PathBuf>,
    /// ansible.cfg's plugin paths (`SiteOptions::plugin_paths`).
    pub plugin_paths: crate::template::python::PluginDirs,
}

/// `name` in the site directory (`crate::inventory::site_dir`: the first inventory source's
/// directory, or the source itself when it is one), if present.
fn beside(inventory: &[PathBuf], name: &str) -> Option<PathBuf> {
    let p = crate::inventory::site_dir(inventory).join(name);
    p.exists().then_some(p)
}

impl Site {
    /// Loads the site's files. A value that was vault-encrypted is a secret whatever its name:
    /// every variable of a vaulted file, each variable holding an inline `!vault` value.
    pub fn load(opts: &SiteOptions) -> Result<Site> {
        let vault = opts.vault.as_ref();
        let env_path = opts.env.clone().or_else(|| beside(&opts.inventory, "env.yaml"));
        let playbook_dir = opts.playbook_dir.clone().or_else(|| beside(&opts.inventory, "playbooks"));
        let template_dir = opts.template_dir.clone().or_else(|| beside(&opts.inventory, "templates"));
        // copctl's own files are no inventory where a directory source holds them (`-i inventory/`
        // with env.yaml in it).
        let mut own: Vec<PathBuf> = [&env_path, &playbook_dir, &template_dir].into_iter().flatten().cloned().collect();
        own.push(crate::inventory::site_dir(&opts.inventory).join("files"));
        let mut inventory = Inventory::load_sources(&opts.inventory, &own, vault)?;
        if let Some(dir) = &playbook_dir {
            inventory.add_playbook_vars(dir, vault)?;
        }
        for w in &inventory.warnings {
            crate::inventory::pattern::warn(w.clone());
        }
        let env = match &env_path {
            Some(p) => EnvFile::load_vaulted(p, vault)?,
            None => EnvFile::empty(),
        };
        let extra = parse_extra_vars_vaulted(&opts.extra_vars, vault)?;
        let inventory_secrets = inventory.secret_var_names();
        let mut site = Site::new(inventory, env, extra.vars, playbook_dir, template_dir);
        site.templates = site.templates.with_ansible_managed(opts.ansible_managed.clone());
        site.plugin_paths = opts.plugin_paths.clone();
        site.playbooks.vault = Some(opts.vault.clone());
        if let [only] = opts.inventory.as_slice()
            && only.is_file()
        {
            site.inventory_file = std::path::absolute(only).ok();
        }
        site.secret_names.add(inventory_secrets);
        site.secret_names.add(extra.secret_names);
        Ok(site)
    }

    pub fn new(
        inventory: Inventory,
        env: EnvFile,
        extra: Vars,
        playbook_dir: Option<PathBuf>,
        template_dir: Option<PathBuf>,
    ) -> Site {
        let secret_names = SecretNames::new(env.secret_names.clone());
        let inventory = Arc::new(inventory);
        Site {
            inventory: inventory.clone(),
            env,
            extra,
            playbooks: PlaybookSource { override_dir: playbook_dir, inventory: Some(inventory), vault: None },
            templates: Templates::new(template_dir).with_secret_names(secret_names.clone()),
            secret_names,
            groups: OnceLock::new(),
            groups_template: OnceLock::new(),
            layers_cache: Mutex::default(),
            host_vars_cache: Arc::default(),
            group_names_cache: Mutex::default(),
            inventory_file: None,
            plugin_paths: Default::default(),
        }
    }

    /// Variables that are secrets from now on (those of a playbook's vault-encrypted files),
    /// for masking and for templates' secret reads alike.
    pub fn add_secret_names(&mut self, names: Vec<String>) {
        if names.is_empty() {
            return;
        }
        self.secret_names.add(names);
        self.templates.set_secret_names(self.secret_names.clone());
    }

    /// Secret values of the site (env.yaml, every host's variables, extra vars) and of
    /// `playbooks`' variables, for masking what a command prints.
    pub fn redactor_with(&self, playbooks: &[crate::playbook::Playbook]) -> Redactor {
        let mut r = self.redactor();
        let mut values = Vec::new();
        for pb in playbooks.iter().filter(|p| !p.secret_vars.is_empty()) {
            let vars = pb.plays.iter().flat_map(|p| p.vars.iter()).chain(pb.vars.iter());
            let v = Value::Object(vars.map(|(k, v)| (k.clone(), v.clone())).collect());
            self.secret_names.collect_values(&v, &mut values);
        }
        r.learn(values);
        r
    }

    /// Secret values of the site (env.yaml, every host's variables, extra vars), for masking
    /// what a command prints.
    pub fn redactor(&self) -> Redactor {
        let mut values = Vec::new();
        let env = Value::Object(self.env.vars.clone().into_iter().collect());
        self.secret_names.collect_values(&env, &mut values);
        for h in self.inventory.hosts.keys() {
            let v = Value::Object(self.inventory.host_vars(h).into_iter().collect());
            self.secret_names.collect_values(&v, &mut values);
        }
        let extra = Value::Object(self.extra.clone().into_iter().collect());
        self.secret_names.collect_values(&extra, &mut values);
        Redactor::new(values).with_derived(self.templates.derived_secrets())
    }

    /// `secret_vars` entries that nothing gives a value (env.yaml, `-e`, the inventory).
    pub fn missing_secrets(&self) -> Vec<String> {
        let given = |n: &String| {
            self.env.vars.contains_key(n)
                || self.extra.contains_key(n)
                || self.inventory.groups.values().any(|g| g.vars.contains_key(n))
                || self.inventory.hosts.values().any(|h| h.vars.contains_key(n))
        };
        self.env.secret_names.iter().filter(|n| !given(n)).cloned().collect()
    }

    /// The playbook `name`, and its Python filter, test and lookup plugins (an Ansible
    /// playbook's, beside it and in its roles, and ansible.cfg's) made the templates'.
    pub fn load_playbook(&mut self, name: &str) -> Result<Playbook> {
        let pb = self.playbooks.load(name)?;
        if !pb.plugin_dirs.is_empty() {
            let mut dirs = crate::template::python::PluginDirs::default();
            for d in &pb.plugin_dirs {
                dirs.extend(&crate::template::python::PluginDirs::beside(d));
            }
            dirs.extend(&self.plugin_paths);
            self.templates.add_python_plugins(&dirs).map_err(|e| {
                crate::error::Error::with_help(
                    e,
                    "copctl runs a site's Python plugins with COPCTL_PYTHON, else the Python of ansible-playbook on PATH, else python3",
                )
            })?;
        }
        Ok(pb)
    }

    /// An extra variable set after the site was loaded (what the run found when it connected):
    /// contexts made from now on see it.
    pub fn set_extra(&mut self, name: &str, value: serde_json::Value) {
        self.extra.insert(name.to_string(), value);
        self.layers_cache.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    }

    pub fn layers(&self, pb: &Playbook) -> Layers {
        Layers {
            playbook: Arc::new(pb.vars.clone()),
            env: Arc::new(self.env.vars.clone()),
            extra: Arc::new(self.extra.clone()),
            secret_names: self.secret_names.clone(),
        }
    }

    /// `groups`: every group with its hosts, as templates see it.
    pub fn groups_value(&self) -> &Value {
        self.groups.get_or_init(|| {
            let inv = &self.inventory;
            Value::Object(inv.groups.keys().map(|g| (g.clone(), Value::from(inv.group_hosts(g)))).collect())
        })
    }

    /// The template context of `host`, with `registered` results layered in (the same for every
    /// host: plan-time checks use placeholders).
    pub fn context(&self, pb: &Playbook, host: &str, registered: Arc<IndexMap<String, Value>>) -> minijinja::Value {
        let all = Registered::Same(registered.clone());
        self.context_with_magic(pb, host, registered, None, all, None)
    }

    /// `context` with the play's magic variables (the plan's checks).
    pub fn context_magic(
        &self,
        pb: &Playbook,
        host: &str,
        registered: Arc<IndexMap<String, Value>>,
        magic: &crate::template::Magic,
    ) -> minijinja::Value {
        let all = Registered::Same(registered.clone());
        self.context_with_magic(pb, host, registered, None, all, Some(magic))
    }

    /// The context of `host` during a run: `own` are its task-level variables (play and step
    /// vars, registered results, facts, the loop item), `all` every host's registered results
    /// for `hostvars[...]`.
    pub fn context_with(
        &self,
        pb: &Playbook,
        host: &str,
        own: &IndexMap<String, Value>,
        all: Registered,
    ) -> minijinja::Value {
        self.context_with_magic(pb, host, Arc::new(own.clone()), None, all, None)
    }

    /// `context_with` and the play's magic variables (`plan::play_magic`).
    pub fn context_with_magic(
        &self,
        pb: &Playbook,
        host: &str,
        own: Arc<IndexMap<String, Value>>,
        data: Option<crate::vars::DataNames>,
        all: Registered,
        magic: Option<&crate::template::Magic>,
    ) -> minijinja::Value {
        let layers = {
            let mut cache = self.layers_cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.entry((pb.name.clone(), pb.source.name.clone())).or_insert_with(|| Arc::new(self.layers(pb))).clone()
        };
        let inv_vars = self.host_vars_cache.get(&self.inventory, host);
        let mut vars = layers.for_task_layers(inv_vars, own, data);
        if let Some(f) = &self.inventory_file {
            // Under every other layer: only where nothing else names them.
            let dir = f.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let names = Vars::from([
                ("inventory_file".to_string(), Value::from(f.display().to_string())),
                ("inventory_dir".to_string(), Value::from(dir)),
            ]);
            vars = vars.over(Arc::new(names));
        }
        let lookup = Arc::new(SiteLookup {
            inventory: self.inventory.clone(),
            layers,
            registered: all,
            host_vars: self.host_vars_cache.clone(),
        });
        let groups = self.groups_template.get_or_init(|| crate::template::to_value(self.groups_value())).clone();
        let group_names = {
            let mut cache = self.group_names_cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.entry(host.to_string()).or_insert_with(|| Arc::new(self.inventory.group_names(host))).clone()
        };
        crate::template::host_context_with(&self.templates, host, vars, groups, &group_names, lookup, magic)
    }

    /// Renders a host-independent string (a play's `hosts:`), with playbook, env and extra vars
    /// and the play's own `vars` (above env, below extra vars, as for a host).
    pub fn render_global(
        &self,
        pb: &Playbook,
        play_vars: &Vars,
        text: &str,
    ) -> std::result::Result<String, minijinja::Error> {
        let layers = self.layers(pb);
        let mut vars = layers.global();
        vars.extend(
            play_vars.iter().filter(|(k, _)| !layers.extra.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())),
        );
        self.templates.render_str(text, &self.templates.context(&vars))
    }

    pub fn render_for_host(
        &self,
        pb: &Playbook,
        host: &str,
        text: &str,
    ) -> std::result::Result<String, minijinja::Error> {
        let ctx = self.context(pb, host, Arc::new(IndexMap::new()));
        self.templates.render_str(text, &ctx)
    }
}

/// Registered results as `hostvars[...]` sees them.
#[derive(Debug, Clone)]
pub enum Registered {
    /// The same for every host (plan-time placeholders).
    Same(Arc<IndexMap<String, Value>>),
    /// Each host's own (a run).
    PerHost(HostResults),
}

const SHARDS: usize = 64;

/// Every host's registered results and facts during a run; a task takes a copy when it starts.
/// Kept in copy-on-write shards so that the copy is one pointer per shard, not one entry per
/// host: copied whole per task, the map cost 0.87 s of CPU on the scheduler's thread for 1000
/// hosts × 10 steps (0.05 s sharded), and grew with hosts × tasks.
#[derive(Debug, Clone)]
pub struct HostResults {
    shards: Vec<Arc<Shard>>,
}

type Shard = std::collections::HashMap<String, Arc<IndexMap<String, Value>>>;

impl Default for HostResults {
    fn default() -> Self {
        HostResults { shards: (0..SHARDS).map(|_| Arc::default()).collect() }
    }
}

impl HostResults {
    fn shard(host: &str) -> usize {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut h = DefaultHasher::new();
        host.hash(&mut h);
        (h.finish() % SHARDS as u64) as usize
    }

    pub fn get(&self, host: &str) -> Option<&Arc<IndexMap<String, Value>>> {
        self.shards[Self::shard(host)].get(host)
    }

    /// Copies the host's shard first only while a running task's copy still holds it.
    pub fn insert(&mut self, host: String, results: Arc<IndexMap<String, Value>>) {
        Arc::make_mut(&mut self.shards[Self::shard(&host)]).insert(host, results);
    }
}

/// Each host's inventory variables, built once a run (they are the same for every task).
#[derive(Debug, Default)]
struct HostVarsCache(Mutex<HashMap<String, Arc<Vars>>>);

impl HostVarsCache {
    fn get(&self, inventory: &Inventory, host: &str) -> Arc<Vars> {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cache.entry(host.to_string()).or_insert_with(|| Arc::new(inventory.template_vars(host))).clone()
    }
}

#[derive(Debug)]
struct SiteLookup {
    inventory: Arc<Inventory>,
    layers: Arc<Layers>,
    registered: Registered,
    host_vars: Arc<HostVarsCache>,
}

impl HostVarLookup for SiteLookup {
    fn host_names(&self) -> Vec<String> {
        self.inventory.hosts.keys().cloned().collect()
    }

    fn pattern_hosts(&self, patterns: &[String]) -> Vec<String> {
        let parts: Vec<String> = patterns.iter().flat_map(|p| crate::inventory::pattern::split(p)).collect();
        self.inventory.evaluate(&parts).unwrap_or_default()
    }

    fn vars_of(&self, host: &str) -> Option<crate::vars::VarLayers> {
        // Ansible's implicit localhost is always there for hostvars, as it makes it on demand.
        if !self.inventory.hosts.contains_key(host) && !crate::inventory::is_implicit_localhost(host) {
            return None;
        }
        let reg = match &self.registered {
            Registered::Same(r) => Some(r.clone()),
            Registered::PerHost(m) => m.get(host).cloned(),
        };
        let inv = self.host_vars.get(&self.inventory, host);
        // A play's per-host vars_files are not among another host's variables, as in Ansible.
        Some(self.layers.for_host_layers(inv, reg).hiding(crate::steps::include_vars::VARS_FILES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_what_it_saw() {
        let mut r = HostResults::default();
        let one = |v: &str| Arc::new(IndexMap::from([("x".to_string(), Value::from(v))]));
        r.insert("h1".into(), one("a"));
        let copy = r.clone();
        r.insert("h1".into(), one("b"));
        r.insert("h2".into(), one("c"));
        assert_eq!(copy.get("h1").unwrap()["x"], "a");
        assert!(copy.get("h2").is_none());
        assert_eq!(r.get("h1").unwrap()["x"], "b");
        assert_eq!(r.get("h2").unwrap()["x"], "c");
    }
}
