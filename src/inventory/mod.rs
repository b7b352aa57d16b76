//! The inventory: hosts, groups, their relations and variables, loaded from an Ansible INI file.
//! Ansible's own data model is followed closely (group depth and priority, `all`/`ungrouped`,
//! host order) because `--limit` and variable precedence depend on it.

mod address;
mod ini;
pub mod pattern;
mod pyliteral;
pub mod range;
mod shlex;

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::error::{Result, Source};

pub use address::parse_address;
pub use pyliteral::parse_value;

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
    pub line: usize,
}

impl Group {
    fn new(name: &str, line: usize) -> Self {
        Group {
            name: name.to_string(),
            hosts: vec![],
            children: vec![],
            parents: vec![],
            vars: Vars::new(),
            depth: 0,
            priority: 1,
            line,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Inventory {
    pub source: Source,
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
    /// Read from a vault-encrypted file: every variable in it is a secret.
    pub vaulted: bool,
}

impl Inventory {
    /// Parses an INI inventory.
    pub fn parse(source: Source) -> Result<Inventory> {
        ini::parse(source)
    }

    /// Reads an INI inventory; a vault-encrypted one is an error saying how to give the password.
    pub fn load(path: &std::path::Path) -> Result<Inventory> {
        Inventory::load_vaulted(path, &crate::vault::VaultSecrets::default())
    }

    /// Reads an INI inventory, decrypting it with `secrets` (asked for only then) when it is
    /// vault-encrypted.
    pub fn load_vaulted(path: &std::path::Path, secrets: &dyn crate::vault::SecretSource) -> Result<Inventory> {
        if let Ok(meta) = std::fs::metadata(path)
            && meta.is_file()
            && meta.len() > MAX_INVENTORY_BYTES
        {
            return Err(crate::error::Error::with_help(
                format!(
                    "{}: the inventory is {} bytes; copctl reads inventories of at most {MAX_INVENTORY_BYTES} bytes",
                    path.display(),
                    meta.len()
                ),
                format!("an inventory holds at most {MAX_HOSTS} hosts; is this the right file?"),
            ));
        }
        let loaded = crate::vault::read_source(path, secrets)?;
        let mut inv = Inventory::parse(loaded.source.clone()).map_err(|e| loaded.guard(e))?;
        inv.vaulted = loaded.encrypted;
        Ok(inv)
    }

    /// Every variable name set in the inventory (hosts and groups).
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

    fn empty(source: Source) -> Self {
        let mut inv = Inventory { source, hosts: IndexMap::new(), groups: IndexMap::new(), vaulted: false };
        inv.groups.insert("all".into(), Group::new("all", 0));
        inv.groups.insert("ungrouped".into(), Group::new("ungrouped", 0));
        inv.add_child("all", "ungrouped");
        inv
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

    /// Every group the host belongs to, directly or through children, `all` included.
    pub fn host_groups(&self, host: &str) -> IndexSet<String> {
        let mut out = IndexSet::new();
        for g in &self.hosts[host].groups {
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

    /// The host's variables as `ansible-inventory --list` and `--host` print them: a bytes
    /// literal stays `{"__ansible_unsafe": "text"}`, Ansible's mark for a value never templated.
    pub fn listed_host_vars(&self, host: &str) -> Vars {
        let mut groups: Vec<&Group> = self.host_groups(host).iter().map(|g| &self.groups[g]).collect();
        groups.sort_by(|a, b| (a.depth, a.priority, &a.name).cmp(&(b.depth, b.priority, &b.name)));
        let mut out = Vars::new();
        for g in groups {
            for (k, v) in &g.vars {
                out.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in &self.hosts[host].vars {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    /// Variables a host gets from two groups of the same depth and priority with different
    /// values: Ansible picks the group later by name, which is rarely what the operator meant.
    /// One message per variable and pair of groups, naming the hosts and where the groups are.
    pub fn var_conflicts<'a>(&self, hosts: impl IntoIterator<Item = &'a String>) -> Vec<String> {
        let mut found: IndexMap<(String, String, String), Vec<String>> = IndexMap::new();
        for host in hosts {
            let Some(h) = self.hosts.get(host) else { continue };
            let mut groups: Vec<&Group> = self.host_groups(host).iter().map(|g| &self.groups[g]).collect();
            groups.sort_by(|a, b| (a.depth, a.priority, &a.name).cmp(&(b.depth, b.priority, &b.name)));
            for (i, a) in groups.iter().enumerate() {
                for b in &groups[i + 1..] {
                    if (a.depth, a.priority) != (b.depth, b.priority) {
                        continue;
                    }
                    for (k, va) in &a.vars {
                        if b.vars.get(k).is_some_and(|vb| vb != va) && !h.vars.contains_key(k) {
                            found.entry((k.clone(), a.name.clone(), b.name.clone())).or_default().push(host.clone());
                        }
                    }
                }
            }
        }
        let file = &self.source.name;
        found
            .into_iter()
            .map(|((var, a, b), hosts)| {
                let shown: Vec<&str> = hosts.iter().take(5).map(String::as_str).collect();
                let more = if hosts.len() > 5 { format!(" and {} more", hosts.len() - 5) } else { String::new() };
                format!(
                    "{var} differs between groups {a} ({file}:{}) and {b} ({file}:{}), which are of equal depth and \
                     priority: {b} wins for {}{more} (Ansible takes the later name); set ansible_group_priority, or set \
                     {var} on the host, to say which should win",
                    self.groups[&a].line,
                    self.groups[&b].line,
                    shown.join(", ")
                )
            })
            .collect()
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
        let mut scored: Vec<(f64, &String)> = self
            .groups
            .keys()
            .chain(self.hosts.keys())
            .map(|n| (strsim::jaro_winkler(name, n), n))
            .filter(|(s, _)| *s > 0.75)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut out: Vec<String> = Vec::new();
        for (_, n) in scored {
            if !out.contains(n) {
                out.push(n.clone());
            }
            if out.len() == 5 {
                break;
            }
        }
        out
    }
}
