//! `block`/`rescue`/`always`: a block's keywords apply to every task it holds.
//! Not translated yet: the task translation reports it.

use super::Front;
use super::node::Node;
use crate::playbook::Step;

pub fn block(f: &mut Front, node: &Node, handler: bool, out: &mut Vec<Step>) {
    out.extend(super::task::task(f, node, handler));
}
