//! Values known when the playbook is loaded: a role name, a `tasks_from` or an include's loop
//! written as a template of the play's `vars` (and `vars_files`), an `import_playbook`'s `vars`,
//! the include's own `vars` and parameters, and a literal loop's item. copctl expands roles and
//! task files when it loads the playbook, so such a template is rendered then, with these
//! variables only (never the inventory's or a role's defaults, which may differ per host or be
//! overridden by the inventory). What else could change the value at run time (`-e`, a
//! `set_fact` or `register` of the same name) is refused when the run is planned
//! (plan/check.rs, from `Playbook::load_time`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::Front;
use crate::error::Source;
use crate::template::is_template;

/// A template rendered when the playbook was loaded: the variables it read (its own and those
/// their values read), and where it is written.
#[derive(Debug, Clone)]
pub struct LoadTime {
    pub text: String,
    pub vars: Vec<String>,
    pub source: Source,
    pub line: usize,
    pub column: usize,
}

/// The variables of the current scope, innermost last (later layers win).
fn scope(f: &Front) -> crate::inventory::Vars {
    let mut all = crate::inventory::Vars::new();
    if let Some(d) = f.defaults.get("playbook_dir") {
        all.insert("playbook_dir".into(), d.clone());
    }
    for layer in &f.scope {
        all.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    all
}

/// The variables `text` reads, following variables whose values are templates themselves.
fn reads(text: &str, all: &crate::inventory::Vars) -> Vec<String> {
    let env = minijinja::Environment::new();
    let mut seen = BTreeSet::new();
    let mut todo = vec![text.to_string()];
    while let Some(t) = todo.pop() {
        let Ok(tpl) = env.template_from_str(&t) else { continue };
        for v in tpl.undeclared_variables(false) {
            if seen.insert(v.clone())
                && let Some(Value::String(s)) = all.get(&v)
                && is_template(s)
            {
                todo.push(s.clone());
            }
        }
    }
    seen.remove("playbook_dir");
    seen.into_iter().collect()
}

fn render(f: &mut Front, text: &str, (line, column): (usize, usize), expression: bool) -> Option<Value> {
    if !is_template(text) {
        return Some(Value::String(text.to_string()));
    }
    let all = scope(f);
    let templates = f.templates.get_or_insert_with(|| crate::template::Templates::new(None));
    let ctx = templates.context(&all);
    let lone = super::loops::lone_expression(text).is_some();
    let value = if expression && lone {
        let v = crate::template::loading(|| templates.eval(text, &ctx)).ok()?;
        if v.is_undefined() {
            return None;
        }
        serde_json::to_value(&v).ok()?
    } else {
        Value::String(crate::template::loading(|| templates.render_str(text, &ctx)).ok()?)
    };
    let vars = reads(text, &all);
    f.load_time.push(LoadTime { text: text.to_string(), vars, source: f.p.source.clone(), line, column });
    Some(value)
}

/// `text` rendered now, or `None` when it reads anything not known yet.
pub fn text(f: &mut Front, text: &str, at: (usize, usize)) -> Option<String> {
    match render(f, text, at, false)? {
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// A loop's items (`loop: "{{ list }}"`) evaluated now, or `None` when it reads anything not
/// known yet or is not a list.
pub fn items(f: &mut Front, text: &str, at: (usize, usize)) -> Option<Vec<Value>> {
    match render(f, text, at, true)? {
        Value::Array(a) => Some(a),
        _ => None,
    }
}

/// Runs `body` with `vars` as the innermost layer of the scope.
pub fn with<T>(f: &mut Front, vars: Map<String, Value>, body: impl FnOnce(&mut Front) -> T) -> T {
    f.scope.push(vars.into_iter().collect());
    let r = body(f);
    f.scope.pop();
    r
}

/// The most items the loop `expr` gives on any host of the inventory, rendered with that host's
/// inventory variables over the roles' defaults and under the play's (as Ansible layers them), its name, `groups` and
/// `group_names`; `None` where no host can render it now (facts, registered results) or the
/// site's inventory is not known.
pub fn most_items_on_hosts(f: &mut Front, expr: &str) -> Option<usize> {
    let inv = f.inventory.clone()?;
    let play = scope(f);
    let templates = f.templates.get_or_insert_with(|| crate::template::Templates::new(None));
    let groups: Map<String, Value> = inv.groups.keys().map(|g| (g.clone(), Value::from(inv.group_hosts(g)))).collect();
    let mut most: Option<usize> = None;
    for h in inv.hosts.keys() {
        // The roles' defaults under the inventory's, under the play's.
        let mut vars = f.defaults.clone();
        vars.extend(inv.host_vars(h));
        vars.extend(play.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars.insert("inventory_hostname".into(), Value::from(h.as_str()));
        vars.insert("groups".into(), Value::Object(groups.clone()));
        vars.insert("group_names".into(), Value::from(inv.group_names(h)));
        let ctx = templates.context(&vars);
        let Ok(v) = templates.eval(expr, &ctx) else { continue };
        if v.kind() == minijinja::value::ValueKind::Seq
            && let Some(n) = v.len()
        {
            most = Some(most.map_or(n, |m| m.max(n)));
        }
    }
    most
}
