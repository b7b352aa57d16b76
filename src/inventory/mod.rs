//! The inventory: hosts, groups, their relations and variables, loaded from Ansible inventory
//! sources (INI and YAML files, directories of them, `h1,h2,` host lists) and the `group_vars/`
//! and `host_vars/` beside them. Ansible's own data model is followed closely (group depth and
//! priority, `all`/`ungrouped`, host order, variable precedence) because `--limit` and every
//! variable a playbook reads depend on it.

mod address;
mod file;
mod ini;
pub mod pattern;
pub(crate) mod pyliteral;
pub mod range;
mod shlex;
mod source;
mod var_files;
mod yaml;

use std::sync::Arc;

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::error::{Result, Source};

pub use address::parse_address;
pub use pyliteral::parse_value;
pub use source::{is_host_list, site_dir};
pub use var_files::VarDir;

pub type Vars = IndexMap<String, Value>;

/// The most hosts one inventory may hold, ranges expanded: far above any cluster copctl drives,
/// far below what would exhaust memory (`web[1:100000000]` is refused at its line).
pub const MAX_HOSTS: usize = 100_000;

/// The largest inventory file read, checked before reading it.
pub const MAX_INVENTORY_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone)]
pub struct Host {
    pub name: String,
    /// Variables set on the host line(s), later lines overriding earlier ones.
    pub vars: Vars,
    /// Groups the host was listed in directly, in inventory order.
    pub groups: Vec<String>,
    /// Line of the host's first appearance.
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub hosts: Vec<String>,
    pub children: Vec<String>,
    pub parents: Vec<String>,
    pub vars: Vars,
    /// Longest distance from `all`; deeper groups' variables win.
    pub depth: usize,
    /// `ansible_group_priority`: among groups of equal depth, higher priority wins.
    pub priority: i64,
    /// The inventory file that declared the group first, and the line (0: `all`, `ungrouped`).
    pub file: Arc<str>,
    pub line: usize,
}

impl Group {
    fn new(name: &str, file: &Arc<str>, line: usize) -> Self {
        Group {
            name: name.to_string(),
            hosts: vec![],
            children: vec![],
            parents: vec![],
            vars: Vars::new(),
            depth: 0,
            priority: 1,
            file: file.clone(),
            line,
        }
    }
}

/// Ansible's implicit localhost: a pattern, `--limit`, `delegate_to` or play naming the
/// controller (when the inventory does not list it) selects it, and it runs there over a local
/// connection. It is never part of `all`, so a limit selects it only by one of these names.
pub fn is_implicit_localhost(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

/// The implicit localhost's own variables, as Ansible sets them: a local connection, and the
/// controller's Python (Ansible's is the one running it; copctl's, the `python3` on PATH).
static IMPLICIT_LOCALHOST_VARS: std::sync::LazyLock<Vars> = std::sync::LazyLock::new(|| {
    let python = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("python3")).find(|f| f.is_file()))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/usr/bin/python3".into());
    let mut v = Vars::new();
    v.insert("ansible_connection".into(), serde_json::Value::from("local"));
    v.insert("ansible_python_interpreter".into(), serde_json::Value::from(python));
    v
});

#[derive(Debug, Clone)]
pub struct Inventory {
    /// What the inventory was read from, as the user named it (`-i` values, comma-separated):
    /// messages say "in {source.name}".
    pub source: Source,
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
    /// `group_vars/` and `host_vars/` beside each inventory source, in `-i` order.
    pub var_dirs: Vec<Arc<VarDir>>,
    /// `group_vars/` and `host_vars/` beside the playbooks (the site's `playbooks/` or
    /// `--playbook-dir`): Ansible's playbook-adjacent `host_group_vars`, each above its
    /// inventory-adjacent counterpart.
    pub play_var_dirs: Vec<Arc<VarDir>>,
    /// What was read and is not used, said once when the site loads (files for unknown groups,
    /// keys Ansible skips): Ansible ignores these silently, copctl does not.
    pub warnings: Vec<String>,
    /// An inventory file was vault-encrypted: every variable of the inventory files is a secret.
    pub vaulted: bool,
    /// Variables set by vault-encrypted group_vars/host_vars files and inline `!vault` values:
    /// secrets whatever their names.
    pub secret_vars: Vec<String>,
}

/// One layer of a host's variables (see `Inventory::layers`).
struct Layer<'a> {
    /// Layers of one tier tie when their groups have equal depth and priority.
    tier: usize,
    group: Option<&'a Group>,
    vars: &'a Vars,
    /// The variable file layer's files (`None`: the inventory file).
    files: Option<&'a var_files::VarLayer>,
}

impl Inventory {
    /// Parses an INI inventory (no files beside it are read).
    pub fn parse(source: Source) -> Result<Inventory> {
        ini::parse(source)
    }

    /// One inventory source (a file, a directory, or a `h1,h2,` host list) with the
    /// `group_vars/` and `host_vars/` beside it; a vault-encrypted file or value is an error saying
    /// how to give the password.
    pub fn load(path: &std::path::Path) -> Result<Inventory> {
        Inventory::load_vaulted(path, &crate::vault::VaultSecrets::default())
    }

    /// `load`, decrypting vault-encrypted files and values with `secrets` (asked for only then);
    /// a site's own files in a directory source (env.yaml, playbooks/, templates/, files/) are no
    /// inventory.
    pub fn load_vaulted(path: &std::path::Path, secrets: &dyn crate::vault::SecretSource) -> Result<Inventory> {
        let sources = [path.to_path_buf()];
        let base = site_dir(&sources);
        let own: Vec<std::path::PathBuf> =
            ["env.yaml", "playbooks", "templates", "files"].iter().map(|n| base.join(n)).collect();
        Inventory::load_sources(&sources, &own, secrets)
    }

    /// The sources of `-i`, merged in order as Ansible merges them, then the `group_vars/` and
    /// `host_vars/` beside each. `site_files` are copctl's own files, skipped where a directory
    /// source holds them (env.yaml, playbooks/, templates/: they are no inventory). Vault-encrypted
    /// files and `!vault` values are decrypted with `secrets`, asked for only when one is met.
    pub fn load_sources(
        sources: &[std::path::PathBuf],
        site_files: &[std::path::PathBuf],
        secrets: &dyn crate::vault::SecretSource,
    ) -> Result<Inventory> {
        source::load(sources, site_files, secrets)
    }

    /// Reads `group_vars/` and `host_vars/` beside the playbooks in `dir` (once: a directory
    /// that is also an inventory source's keeps that place only); warns about files no group
    /// or host reads, as for the inventory's.
    pub fn add_playbook_vars(&mut self, dir: &std::path::Path, secrets: &dyn crate::vault::SecretSource) -> Result<()> {
        if !(dir.join("group_vars").is_dir() || dir.join("host_vars").is_dir()) {
            return Ok(());
        }
        let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if self.var_dirs.iter().any(|d| d.base.canonicalize().unwrap_or_else(|_| d.base.clone()) == key) {
            return Ok(());
        }
        let mut warnings = Vec::new();
        let d = var_files::load(dir, self, &mut warnings, secrets)?;
        self.secret_vars.extend(d.secret_vars.iter().cloned());
        self.play_var_dirs.push(Arc::new(d));
        self.warnings.extend(warnings);
        Ok(())
    }

    /// Every variable name set in the inventory files (hosts and groups).
    pub fn var_names(&self) -> Vec<String> {
        let mut out: IndexSet<String> = IndexSet::new();
        for h in self.hosts.values() {
            out.extend(h.vars.keys().cloned());
        }
        for g in self.groups.values() {
            out.extend(g.vars.keys().cloned());
        }
        out.into_iter().collect()
    }

    /// The variables that are secrets because they were vault-encrypted: all of the inventory
    /// files' when one was, and those of encrypted variable files and inline `!vault` values.
    pub fn secret_var_names(&self) -> Vec<String> {
        let mut out: IndexSet<String> = IndexSet::new();
        if self.vaulted {
            out.extend(self.var_names());
        }
        out.extend(self.secret_vars.iter().cloned());
        out.into_iter().collect()
    }

    fn empty(source: Source) -> Self {
        let mut inv = Inventory {
            source,
            hosts: IndexMap::new(),
            groups: IndexMap::new(),
            var_dirs: Vec::new(),
            play_var_dirs: Vec::new(),
            warnings: Vec::new(),
            vaulted: false,
            secret_vars: Vec::new(),
        };
        let none: Arc<str> = "".into();
        inv.groups.insert("all".into(), Group::new("all", &none, 0));
        inv.groups.insert("ungrouped".into(), Group::new("ungrouped", &none, 0));
        inv.add_child("all", "ungrouped");
        inv
    }

    /// Ansible's `add_host`: the host is created on its first appearance (with the port, if
    /// any: later ports are ignored, as in Ansible), then added to `group`.
    fn add_host(&mut self, name: &str, group: &str, port: Option<u16>, line: usize) {
        let host = self.hosts.entry(name.to_string()).or_insert_with(|| {
            let mut vars = Vars::new();
            if let Some(p) = port {
                vars.insert("ansible_port".into(), Value::from(p));
            }
            Host { name: name.to_string(), vars, groups: vec![], line }
        });
        if !host.groups.iter().any(|g| g == group) {
            host.groups.push(group.to_string());
            self.groups[group].hosts.push(name.to_string());
        }
    }

    fn add_child(&mut self, parent: &str, child: &str) {
        let p = self.groups.get_mut(parent).expect("parent group exists");
        if !p.children.iter().any(|c| c == child) {
            p.children.push(child.to_string());
        }
        let c = self.groups.get_mut(child).expect("child group exists");
        if !c.parents.iter().any(|x| x == parent) {
            c.parents.push(parent.to_string());
        }
    }

    /// Ansible's `reconcile_inventory` plus depth: parentless groups go under `all`, hosts in
    /// no group go to `ungrouped`, and hosts also in a real group leave `ungrouped`.
    fn reconcile(&mut self) {
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for g in &names {
            if g != "all" && self.groups[g].parents.is_empty() {
                self.add_child("all", g);
            }
        }
        let host_names: Vec<String> = self.hosts.keys().cloned().collect();
        let mut leave_ungrouped: IndexSet<String> = IndexSet::new();
        for h in &host_names {
            let groups = self.hosts[h].groups.clone();
            if groups.iter().any(|g| g == "ungrouped") {
                if groups.iter().any(|g| g != "ungrouped" && g != "all") {
                    leave_ungrouped.insert(h.clone());
                    self.hosts[h].groups.retain(|g| g != "ungrouped");
                }
            } else if groups.is_empty() || groups == ["all"] {
                // A host listed only under an explicit [all] is ungrouped too, as in Ansible.
                self.groups["ungrouped"].hosts.push(h.clone());
                self.hosts[h].groups.push("ungrouped".into());
            }
        }
        self.groups["ungrouped"].hosts.retain(|x| !leave_ungrouped.contains(x));
        // Depth: longest path from `all` (the graph is acyclic; the parser refuses loops).
        let mut depth: IndexMap<String, usize> = IndexMap::new();
        fn depth_of(inv: &Inventory, g: &str, memo: &mut IndexMap<String, usize>) -> usize {
            if let Some(d) = memo.get(g) {
                return *d;
            }
            let d = inv.groups[g].parents.iter().map(|p| depth_of(inv, p, memo) + 1).max().unwrap_or(0);
            memo.insert(g.to_string(), d);
            d
        }
        for g in &names {
            let d = depth_of(self, g, &mut depth);
            self.groups[g].depth = d;
        }
    }

    /// All groups above `group`, itself excluded.
    pub fn ancestors(&self, group: &str) -> IndexSet<String> {
        let mut out = IndexSet::new();
        let mut todo: Vec<&str> = vec![group];
        while let Some(g) = todo.pop() {
            for p in &self.groups[g].parents {
                if out.insert(p.clone()) {
                    todo.push(p);
                }
            }
        }
        out
    }

    /// Every group the host belongs to, directly or through children, `all` included (only
    /// `all` for Ansible's implicit localhost, which the inventory does not list).
    pub fn host_groups(&self, host: &str) -> IndexSet<String> {
        let mut out = IndexSet::new();
        for g in self.hosts.get(host).iter().flat_map(|h| &h.groups) {
            out.insert(g.clone());
            out.extend(self.ancestors(g));
        }
        out.insert("all".into());
        out
    }

    /// `group_names`: the host's groups without `all`, sorted, as in
    /// Ansible.
    pub fn group_names(&self, host: &str) -> Vec<String> {
        let mut v: Vec<String> = self.host_groups(host).into_iter().filter(|g| g != "all").collect();
        v.sort();
        v
    }

    /// The host's inventory variables: `all` < groups by (depth, priority, name) < host, as
    /// playbooks and templates see them (bytes literals as plain text).
    pub fn host_vars(&self, host: &str) -> Vars {
        self.listed_host_vars(host).into_iter().map(|(k, v)| (k, pyliteral::strip_unsafe(&v))).collect()
    }

    /// `host_vars` for templates: unsafe text (`!unsafe`) renders as written, never templated.
    pub fn template_vars(&self, host: &str) -> Vars {
        self.listed_host_vars(host).into_iter().map(|(k, v)| (k, pyliteral::literal_unsafe(&v))).collect()
    }

    /// The host's variables as `ansible-inventory --list` and `--host` print them: a bytes
    /// literal stays `{"__ansible_unsafe": "text"}`, Ansible's mark for a value never templated.
    pub fn listed_host_vars(&self, host: &str) -> Vars {
        let mut out = Vars::new();
        for layer in self.layers(host) {
            for (k, v) in layer.vars {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// A host's variable layers, lowest precedence first, as Ansible's `VariableManager` merges
    /// them (its `VARIABLE_PRECEDENCE` default): the inventory files' `all` vars, then their
    /// group vars by (depth, priority, name); `group_vars/all` beside each source in `-i` order;
    /// `group_vars/<group>` beside each source, groups in the same order; the inventory files'
    /// host vars; `host_vars/<host>` beside each source. The playbooks' `group_vars/all`,
    /// `group_vars/<group>` and `host_vars/<host>` come right after their inventory-adjacent
    /// counterparts (`all_plugins_play`, `groups_plugins_play`, `host_plugins_play`).
    fn layers(&self, host: &str) -> Vec<Layer<'_>> {
        let mut groups: Vec<&Group> = self.host_groups(host).iter().map(|g| &self.groups[g]).collect();
        groups.sort_by(|a, b| (a.depth, a.priority, &a.name).cmp(&(b.depth, b.priority, &b.name)));
        let mut out: Vec<Layer<'_>> =
            groups.iter().map(|g| Layer { tier: 0, group: Some(g), vars: &g.vars, files: None }).collect();
        let all = &self.groups["all"];
        let dirs: Vec<&Arc<VarDir>> = self.var_dirs.iter().chain(&self.play_var_dirs).collect();
        for d in &dirs {
            if let Some(l) = d.groups.get("all") {
                out.push(Layer { tier: 1, group: Some(all), vars: &l.vars, files: Some(l) });
            }
        }
        for (i, d) in dirs.iter().enumerate() {
            for g in groups.iter().filter(|g| g.name != "all") {
                if let Some(l) = d.groups.get(&g.name) {
                    out.push(Layer { tier: 2 + i, group: Some(g), vars: &l.vars, files: Some(l) });
                }
            }
        }
        if let Some(h) = self.hosts.get(host) {
            out.push(Layer { tier: usize::MAX, group: None, vars: &h.vars, files: None });
        } else if is_implicit_localhost(host) {
            out.push(Layer { tier: usize::MAX, group: None, vars: &IMPLICIT_LOCALHOST_VARS, files: None });
        }
        for d in &dirs {
            if let Some(l) = d.hosts.get(host) {
                out.push(Layer { tier: usize::MAX, group: None, vars: &l.vars, files: Some(l) });
            }
        }
        out
    }

    /// Variables a host gets from two groups of the same depth and priority with different
    /// values (in the inventory files, or in the group_vars/ files beside one source): Ansible
    /// picks the group later by name, which is rarely what the operator meant. Only a tie that
    /// decides the host's value counts (a deeper group or the host setting it settles it). One
    /// message per variable and pair of groups, naming the hosts and where the values are set.
    pub fn var_conflicts<'a>(&self, hosts: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        // (variable, losing group, winning group) → (where each sets it, the hosts).
        type Tie = (String, String, String);
        let mut found: IndexMap<Tie, (String, String, Vec<String>)> = IndexMap::new();
        for host in hosts {
            if !self.hosts.contains_key(host) {
                continue;
            }
            let layers = self.layers(host);
            let mut winner: IndexMap<&str, usize> = IndexMap::new();
            for (i, l) in layers.iter().enumerate() {
                for k in l.vars.keys() {
                    winner.insert(k, i);
                }
            }
            for (k, &wi) in &winner {
                let w = &layers[wi];
                let Some(wg) = w.group else { continue };
                for l in &layers[..wi] {
                    let Some(g) = l.group else { continue };
                    if l.tier != w.tier || g.name == wg.name || (g.depth, g.priority) != (wg.depth, wg.priority) {
                        continue;
                    }
                    if l.vars.get(*k).is_some_and(|v| Some(v) != w.vars.get(*k)) {
                        found
                            .entry((k.to_string(), g.name.clone(), wg.name.clone()))
                            .or_insert_with(|| (Self::origin(l, k), Self::origin(w, k), vec![]))
                            .2
                            .push(host.clone());
                    }
                }
            }
        }
        found
            .into_iter()
            .map(|((var, a, b), (at_a, at_b, hosts))| {
                let shown: Vec<&str> = hosts.iter().take(5).map(String::as_str).collect();
                let more = if hosts.len() > 5 { format!(" and {} more", hosts.len() - 5) } else { String::new() };
                format!(
                    "{var} differs between groups {a} ({at_a}) and {b} ({at_b}), which are of equal depth and \
                     priority: {b} wins for {}{more} (Ansible takes the later name); set ansible_group_priority, or set \
                     {var} on the host, to say which should win",
                    shown.join(", ")
                )
            })
            .collect()
    }

    /// Where a layer sets `var`: `file:line` of the group in an inventory file, or the
    /// group_vars/ file.
    fn origin(layer: &Layer<'_>, var: &str) -> String {
        match (layer.files, layer.group) {
            (Some(f), _) => f.file_of(var).to_string(),
            (None, Some(g)) => format!("{}:{}", g.file, g.line),
            (None, None) => String::new(),
        }
    }

    /// The group and the groups below it in Ansible's order (`get_descendants` with ordering
    /// preserved): itself, its children, then each further level as discovered.
    pub fn descendants(&self, group: &str) -> Vec<String> {
        let mut ordered: Vec<String> = vec![group.to_string()];
        ordered.extend(self.groups[group].children.iter().cloned());
        let mut seen: IndexSet<String> = IndexSet::new();
        let mut level: IndexSet<String> = ordered.iter().cloned().collect();
        while !level.is_empty() {
            seen.extend(level.iter().cloned());
            let mut next = IndexSet::new();
            for g in &level {
                for c in &self.groups[g].children {
                    next.insert(c.clone());
                    if !seen.contains(c) && !ordered.contains(c) {
                        ordered.push(c.clone());
                    }
                }
            }
            next.retain(|g| !seen.contains(g));
            level = next;
        }
        ordered
    }

    /// The hosts of a group and of all groups below it, in Ansible's order.
    pub fn group_hosts(&self, group: &str) -> Vec<String> {
        let mut seen = IndexSet::new();
        for g in self.descendants(group) {
            for h in &self.groups[&g].hosts {
                seen.insert(h.clone());
            }
        }
        seen.into_iter().collect()
    }

    /// Names close to `name`, for "did you mean" hints.
    pub fn close_names(&self, name: &str) -> Vec<String> {
        let names = self.groups.keys().chain(self.hosts.keys());
        crate::text::closest::closest(name, names, 5).into_iter().map(String::from).collect()
    }
}
