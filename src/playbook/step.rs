//! One step of a play: its common fields (name, when, register, notify, guards...) and exactly
//! one action (the step kind). The action fields come from the kinds' registry (`steps::kinds!`),
//! each typed by its kind's arguments. Every struct refuses unknown fields, so a typo is an error
//! at its line instead of a silently ignored setting.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use crate::steps::{Action, Flag, KINDS, Mode, ModeError, Number, OneOrMany, Presence};

/// `when:`/`changed_when:`/`failed_when:`: an expression, a list of them (all must hold), or a
/// literal boolean.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Condition {
    Bool(bool),
    Expr(String),
    All(Vec<String>),
}

/// `loop_control:` the loop variable's name (default `item`), a variable holding the item's
/// index, and the label shown for an item.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LoopControl {
    pub loop_var: Option<String>,
    pub index_var: Option<String>,
    pub label: Option<String>,
    /// Seconds to wait between two items (Ansible's `pause`, fractions allowed).
    pub pause: Option<f64>,
    /// `ansible_loop` (index, first, last, length, revindex, previtem, nextitem, allitems) for
    /// each item.
    #[serde(default)]
    pub extended: bool,
    /// Whether `ansible_loop` has `allitems` (Ansible's `extended_allitems`, on by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_allitems: Option<bool>,
    /// Conditions judged after each item, with its variables: the first that holds ends the
    /// loop (Ansible's `break_when`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_when: Option<Vec<String>>,
}

impl LoopControl {
    pub fn var(lc: Option<&LoopControl>) -> &str {
        lc.and_then(|l| l.loop_var.as_deref()).unwrap_or("item")
    }
}

/// `StepDef` with one optional field per kind, in the order of `kinds!` (serde's "expected one
/// of" list names the fields in that order), and `take_action`.
macro_rules! step_def {
    ($($kind:ident: $Variant:ident($Args:ident)),* $(,)?) => {
        /// The raw step as written. Exactly one of the action fields must be set.
        #[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
        #[serde(deny_unknown_fields)]
        pub struct StepDef {
            pub name: Option<String>,
            pub when: Option<Condition>,
            pub register: Option<String>,
            pub notify: Option<OneOrMany<String>>,
            pub tags: Option<OneOrMany<String>>,
            /// Changes nothing: may run on a host outside `--limit` when an in-limit task needs it.
            pub read_only: Option<bool>,
            #[serde(default)]
            pub run_once: bool,
            pub delegate_to: Option<String>,
            /// A number, or a template that renders to one (when the task runs).
            pub retries: Option<crate::steps::Number>,
            /// Seconds between retries (a number or a template).
            pub delay: Option<crate::steps::Number>,
            pub until: Option<String>,
            pub changed_when: Option<Condition>,
            pub failed_when: Option<Condition>,
            #[serde(default)]
            pub ignore_errors: bool,
            /// Ansible's `ignore_unreachable`: the host, unreachable at this step, goes on to
            /// the next (counted ok and ignored, as Ansible counts it).
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            pub ignore_unreachable: bool,
            /// Seconds; default 1800 so that one hung host never freezes a run.
            pub timeout: Option<u64>,
            /// At most this many hosts run the step at once (Ansible's task `throttle`), within
            /// `--forks` and the play's own.
            pub throttle: Option<usize>,
            /// Ansible's `check_mode:` on one step: `true` only reports what it would change,
            /// `false` changes the host even under `--check`; unset follows the run.
            pub check_mode: Option<bool>,
            /// Ansible's `diff:` on one step: shows (or hides) its diff whatever `--diff` says.
            pub diff: Option<bool>,
            /// Ansible's `no_log:`: the step's output (message, stdout, stderr, diff, commands)
            /// is shown and recorded only as "hidden"; what it registers is whole.
            pub no_log: Option<bool>,
            /// Set by the Ansible front-end: Ansible's rules where they differ from native ones
            /// (a read-only step that fails under `--check` fails; `timeout` bounds the whole
            /// task, with Ansible's message).
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            pub ansible: bool,
            pub r#become: Option<bool>,
            /// Ansible's `become_user` on a task: with `become: true`, the step runs as this
            /// user (sudo -u, or su), whoever the host's become user is.
            pub become_user: Option<String>,
            /// Ansible's `become_method` keyword: `sudo` or `su`, where the inventory does not
            /// set `ansible_become_method` for the host (Ansible's variables win over keywords).
            pub become_method: Option<String>,
            #[serde(default)]
            pub vars: IndexMap<String, Value>,
            #[serde(rename = "loop")]
            pub loop_over: Option<Value>,
            pub loop_control: Option<LoopControl>,
            pub creates: Option<String>,
            pub removes: Option<String>,
            pub unless: Option<String>,
            pub chdir: Option<String>,
            /// The shell that runs a `shell` step's line (`EXECUTABLE -c LINE`), as Ansible's
            /// shell `executable`; POSIX `sh` without it.
            pub executable: Option<String>,
            /// A `command` step's arguments expand `$VAR`, `${VAR}` (left as written where the
            /// variable is unset) and a leading `~` on the host, as Ansible's command does
            /// (its `expand_argument_vars`, on by default there).
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            pub expand_argument_vars: bool,
            /// `false`: a command's or shell's output keeps its trailing newlines and carriage
            /// returns (Ansible's `strip_empty_ends`; stripped by default).
            pub strip_empty_ends: Option<bool>,
            pub stdin: Option<String>,
            /// Extra environment for command/shell.
            #[serde(default)]
            pub environment: IndexMap<String, String>,
            /// Not a step: a file of steps put in its place when the playbook is loaded (mod.rs).
            pub import_steps: Option<String>,

            $(pub $kind: Option<crate::steps::$Args>,)*
        }

        impl StepDef {
            /// The one action of this step; `Err` lists what was found (none or several).
            pub fn take_action(&mut self) -> Result<Action, Vec<&'static str>> {
                let mut found: Vec<Action> = Vec::new();
                $(
                    if let Some(a) = self.$kind.take() {
                        found.push(Action::$Variant(a));
                    }
                )*
                if found.len() == 1 {
                    Ok(found.pop().expect("one action"))
                } else {
                    Err(found.iter().map(Action::kind).collect())
                }
            }
        }
    };
}
crate::steps::kinds!(step_def);

/// `ansible_loop` for the item at `index` of `all`, as Ansible's `loop_control.extended` sets
/// it (`previtem`/`nextitem` absent at the ends, so that `is undefined` holds there).
pub fn extended_loop(all: &[Value], index: usize, allitems: bool) -> Value {
    let n = all.len();
    let mut m = serde_json::Map::new();
    if allitems {
        m.insert("allitems".into(), json!(all));
    }
    m.insert("index".into(), json!(index + 1));
    m.insert("index0".into(), json!(index));
    m.insert("first".into(), json!(index == 0));
    m.insert("last".into(), json!(index + 1 == n));
    m.insert("length".into(), json!(n));
    m.insert("revindex".into(), json!(n - index));
    m.insert("revindex0".into(), json!(n - index - 1));
    if index > 0 {
        m.insert("previtem".into(), all[index - 1].clone());
    }
    if index + 1 < n {
        m.insert("nextitem".into(), all[index + 1].clone());
    }
    Value::Object(m)
}
