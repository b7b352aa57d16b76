//! `block`/`rescue`/`always`: a block stands for the steps of its three parts, in that order,
//! each carrying the block's keywords (its `when` ANDed before the step's own, its `vars` under
//! the step's, its `tags` added, the rest where the step sets none) and, in `Step::blocks`, which
//! block and part hold it. The engine (run/rescue.rs) decides from that chain which of them run
//! on a host after a failure. Entries of a part go through `task::expand` again, so blocks nest
//! and includes work inside them.

use std::sync::atomic::{AtomicUsize, Ordering};

use indexmap::IndexMap;
use serde_json::Value;

use super::Front;
use super::keywords;
use super::node::{Key, Kind, Node};
use super::task::KEYWORDS_NOT_YET;
use crate::playbook::{Condition, Enclosing, OneOrMany, Part, Step, and_conditions};

/// Numbers blocks: the engine tells two blocks apart by it, also two copies of one block (a file
/// of tasks included twice).
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// Keywords a block takes (Ansible's Block: Base, Conditional, Taggable, Notifiable, Delegatable)
/// that copctl translates.
const BLOCK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "tags",
    "become",
    "become_user",
    "become_method",
    "vars",
    "ignore_errors",
    "ignore_unreachable",
    "delegate_to",
    "run_once",
    "environment",
    "notify",
    "check_mode",
    "diff",
    "no_log",
    "any_errors_fatal",
    "module_defaults",
];

/// What a block hands down to every step it holds.
#[derive(Default)]
struct Inherited {
    when: Option<Condition>,
    tags: Vec<String>,
    r#become: Option<bool>,
    become_user: Option<String>,
    become_method: Option<String>,
    vars: IndexMap<String, Value>,
    ignore_errors: bool,
    ignore_unreachable: bool,
    delegate_to: Option<String>,
    run_once: bool,
    environment: IndexMap<String, String>,
    notify: Option<Vec<String>>,
    check_mode: Option<bool>,
    diff: Option<bool>,
    no_log: Option<bool>,
    any_errors_fatal: bool,
}

pub fn block(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    let Some(map) = node.as_map() else { return };
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let before = f.p.count();
    let mut inherited = Inherited::default();
    let mut parts: Vec<(Part, &Key, &Node)> = Vec::new();
    let mut module_defaults = None;
    for (k, v) in map {
        let n = k.name.as_str();
        match n {
            "block" => parts.push((Part::Block, k, v)),
            "rescue" => parts.push((Part::Rescue, k, v)),
            "always" => parts.push((Part::Always, k, v)),
            "name" => {
                keywords::text(f, k, v);
            }
            "when" => {
                inherited.when = keywords::condition(f, k, v).and_then(|c| serde_json::from_value(c).ok());
            }
            "tags" => inherited.tags = keywords::names(f, k, v, true).unwrap_or_default(),
            "become" => inherited.r#become = keywords::flag(f, k, v),
            "become_user" => inherited.become_user = keywords::become_user(f, k, v),
            "become_method" => inherited.become_method = keywords::become_method(f, k, v),
            "vars" => inherited.vars = keywords::vars(f, k, v).map(|m| m.into_iter().collect()).unwrap_or_default(),
            "ignore_errors" => inherited.ignore_errors = keywords::flag(f, k, v).unwrap_or(false),
            "ignore_unreachable" => inherited.ignore_unreachable = keywords::flag(f, k, v).unwrap_or(false),
            "run_once" => inherited.run_once = keywords::flag(f, k, v).unwrap_or(false),
            "check_mode" => inherited.check_mode = keywords::flag(f, k, v),
            "diff" => inherited.diff = keywords::flag(f, k, v),
            "no_log" => inherited.no_log = keywords::flag(f, k, v),
            "any_errors_fatal" => inherited.any_errors_fatal = keywords::flag(f, k, v).unwrap_or(false),
            "delegate_to" => inherited.delegate_to = keywords::text(f, k, v),
            "module_defaults" => module_defaults = Some(keywords::module_defaults(f, k, v)),
            "environment" => {
                inherited.environment = keywords::vars(f, k, v)
                    .map(|m| {
                        m.into_iter()
                            .map(|(k, v)| {
                                let t = match v {
                                    Value::String(s) => s,
                                    other => other.to_string(),
                                };
                                (k, t)
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            }
            "notify" => {
                if handler {
                    f.p.add_key(k, "a handler notifying another is not supported yet".into(), None);
                } else {
                    inherited.notify = keywords::names(f, k, v, false);
                }
            }
            _ => {
                if let Some((_, why)) = KEYWORDS_NOT_YET.iter().find(|(w, _)| *w == n) {
                    f.p.add_key(
                        k,
                        format!("block keyword '{n}' is not supported yet"),
                        (!why.is_empty()).then(|| why.to_string()),
                    );
                } else {
                    let close = super::closest(n, BLOCK_KEYWORDS);
                    let help = if close.is_empty() {
                        format!("a block holds block, rescue and always, and takes: {}", BLOCK_KEYWORDS.join(", "))
                    } else {
                        format!("did you mean {}?", close.join(", "))
                    };
                    f.p.add_key(k, format!("unknown block keyword '{n}'"), Some(help));
                }
            }
        }
    }
    let pushed = module_defaults.is_some();
    f.p.module_defaults.extend(module_defaults);
    let steps = parts_steps(f, parts, handler, id);
    if pushed {
        f.p.module_defaults.pop();
    }
    if f.p.count() != before {
        return;
    }
    // A run_once step that fails in a block with rescue or always: Ansible runs the rescue on
    // the host it ran on and drops the batch's other hosts without a word (it fails them twice:
    // as run_once and as any_errors_fatal). Not something to copy.
    let guarded = steps.iter().any(|s| s.blocks.first().is_some_and(|e| e.part != Part::Block));
    for mut s in steps {
        inherit(&inherited, &mut s);
        if guarded && s.def.run_once && s.lockstep.is_none() {
            s.lockstep = Some((
                "run_once in a block with rescue or always is not supported yet".into(),
                "when it fails, Ansible drops the batch's other hosts silently: run it outside the block".into(),
            ));
        }
        if inherited.any_errors_fatal && s.lockstep.is_none() {
            s.lockstep = Some((
                "any_errors_fatal on a block is not supported yet".into(),
                "Ansible then fails every host of the batch at once, in lock-step: set it on the play".into(),
            ));
        }
        out.push(s);
    }
}

/// The steps of the block's parts (`block`, `rescue`, `always`, each at its key), in order,
/// each marked as held by block `id` in its part.
fn parts_steps(f: &mut Front, parts: Vec<(Part, &Key, &Node)>, handler: bool, id: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for (part, k, v) in parts {
        if handler && part != Part::Block {
            f.p.add_key(
                k,
                format!("{}: in a handler is not supported yet", k.name),
                Some("handlers may hold a plain block; put rescue and always in the tasks".into()),
            );
            continue;
        }
        let entries: &[Node] = match &v.kind {
            Kind::Seq(items) => items,
            Kind::Scalar(Value::Null) => &[],
            _ => {
                f.p.add_key(k, format!("{}: a list of tasks, not {}", k.name, v.what()), None);
                continue;
            }
        };
        for e in entries {
            if is_flush_handlers(e) {
                if handler {
                    f.p.add(
                        e.line,
                        e.column,
                        "meta: flush_handlers in a handler: Ansible refuses it".into(),
                        "here",
                        None,
                    );
                    continue;
                }
                // The play's handlers go here once they are all known (mod.rs).
                let def = serde_json::from_value(
                    serde_json::json!({"name": "meta: flush_handlers", "assert": {"that": ["true"]}}),
                )
                .expect("a valid step");
                match crate::playbook::validate_step(&f.p.source, def, e.line, e.column, false) {
                    Ok(mut s) => {
                        s.flush = Some(crate::playbook::FlushAt::Point);
                        s.blocks.insert(0, Enclosing { id, part });
                        steps.push(s);
                    }
                    Err(err) => f.p.errors.push(err),
                }
                continue;
            }
            let mut produced = Vec::new();
            super::expand(f, e, handler, &mut produced);
            for mut s in produced {
                s.blocks.insert(0, Enclosing { id, part });
                steps.push(s);
            }
        }
    }
    steps
}

/// `any_errors_fatal` on a play with a block's rescue or always part: Ansible then sends every
/// host of the batch into the rescue or always of the block it is in (its hosts run in lock-step,
/// all at the same task), which copctl's hosts, each at its own pace, do not do.
/// Refused by the plan where a batch has more than one host (`Step::lockstep`).
pub fn refuse_with_any_errors_fatal<'a>(steps: impl Iterator<Item = &'a mut Step>) {
    for s in steps.filter(|s| s.blocks.iter().any(|e| e.part != Part::Block)) {
        s.lockstep.get_or_insert_with(|| {
            (
                "any_errors_fatal with a block's rescue or always part is not supported yet".into(),
                "Ansible then runs the rescue or always part on every host of the batch: drop one of the two".into(),
            )
        });
    }
}

/// `meta: flush_handlers`, however written.
fn is_flush_handlers(e: &Node) -> bool {
    e.as_map().is_some_and(|m| {
        m.iter().any(|(k, v)| {
            matches!(k.name.as_str(), "meta" | "ansible.builtin.meta")
                && v.as_str().map(str::trim) == Some("flush_handlers")
        })
    })
}

/// The block's keywords on one of its steps, the step's own first where both set one.
fn inherit(b: &Inherited, s: &mut Step) {
    let d = &mut s.def;
    d.when = and_conditions(b.when.clone(), d.when.take());
    if !b.tags.is_empty() {
        let mut tags = b.tags.clone();
        tags.extend(d.tags.iter().flat_map(|t| t.to_vec()));
        tags.dedup();
        d.tags = Some(OneOrMany::Many(tags));
        for g in &mut s.tag_gates {
            g.extend(b.tags.iter().filter(|t| !g.contains(t)).cloned().collect::<Vec<_>>());
        }
    }
    d.r#become = d.r#become.or(b.r#become);
    if d.become_user.is_none() {
        d.become_user = b.become_user.clone();
    }
    if d.become_method.is_none() {
        d.become_method = b.become_method.clone();
    }
    d.check_mode = d.check_mode.or(b.check_mode);
    d.diff = d.diff.or(b.diff);
    d.no_log = d.no_log.or(b.no_log);
    for (k, v) in &b.vars {
        d.vars.entry(k.clone()).or_insert_with(|| v.clone());
    }
    d.ignore_errors |= b.ignore_errors;
    d.ignore_unreachable |= b.ignore_unreachable;
    d.run_once |= b.run_once;
    if d.delegate_to.is_none() {
        d.delegate_to = b.delegate_to.clone();
    }
    for (k, v) in &b.environment {
        d.environment.entry(k.clone()).or_insert_with(|| v.clone());
    }
    if d.notify.is_none()
        && let Some(n) = &b.notify
    {
        d.notify = Some(OneOrMany::Many(n.clone()));
    }
}
