//! Tasks from other files: `import_tasks`/`include_tasks`, `import_role`/`include_role`.
//! Not translated yet: the task translation reports it.

use super::Front;
use super::node::Node;
use crate::playbook::Step;

/// The keys that make a task an include.
pub const KEYS: &[&str] = &[
    "include_tasks",
    "import_tasks",
    "include_role",
    "import_role",
    "include",
    "ansible.builtin.include_tasks",
    "ansible.builtin.import_tasks",
    "ansible.builtin.include_role",
    "ansible.builtin.import_role",
];

pub fn include(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    out.extend(super::task::task(f, node, handler));
}
