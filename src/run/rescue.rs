//! Ansible's `rescue`/`always` rules on a play's steps: where a host goes after a failure inside
//! blocks. A step carries the blocks that enclose it (`Step::blocks`, outermost first); a host's
//! steps run in the play's order, so "where it goes" is the index of the next step it runs, the
//! steps in between passed over without a word (Ansible neither shows nor counts them).
//!
//! From the innermost block out: a failure in a block's `block` part is caught by its `rescue`;
//! a failure in its `block` or `rescue` part runs its `always` first and then goes on outwards
//! (from the always part's last step); a failure in its `always` part goes on outwards. A
//! failure no block catches fails the host.

use crate::playbook::{Enclosing, Part, Step};

#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Caught by block `id`: the host runs on from its rescue's first step, no longer failed.
    Rescue { to: usize, id: usize },
    /// Not caught yet: the host runs the always part `to..=end`, then the failure goes on from
    /// the blocks around it (`outer`).
    Always { to: usize, end: usize, outer: Vec<Enclosing> },
    /// The host has failed.
    Failed,
}

fn holds(s: &Step, id: usize, part: Part) -> bool {
    s.blocks.contains(&Enclosing { id, part })
}

/// Where a host goes after step `at` of `steps` failed (or after the always part ending at `at`
/// finished with a failure pending), the failure inside `chain`.
pub fn after_failure(steps: &[Step], at: usize, chain: &[Enclosing]) -> Next {
    let first = |id: usize, part: Part| (at + 1..steps.len()).find(|&j| holds(&steps[j], id, part));
    for i in (0..chain.len()).rev() {
        let Enclosing { id, part } = chain[i];
        if part == Part::Block
            && let Some(to) = first(id, Part::Rescue)
        {
            return Next::Rescue { to, id };
        }
        if part != Part::Always
            && let Some(to) = first(id, Part::Always)
        {
            let mut end = to;
            while end + 1 < steps.len() && holds(&steps[end + 1], id, Part::Always) {
                end += 1;
            }
            return Next::Always { to, end, outer: chain[..i].to_vec() };
        }
    }
    Next::Failed
}

/// Whether a failure inside `chain` counts as rescued in the recap, as Ansible counts it: some
/// enclosing block has a rescue and the failure is in its `block` part (even when an inner
/// always part runs first, or the rescue is reached only after it).
pub fn counts_as_rescued(steps: &[Step], at: usize, chain: &[Enclosing]) -> bool {
    chain.iter().any(|e| e.part == Part::Block && steps[at + 1..].iter().any(|s| holds(s, e.id, Part::Rescue)))
}

/// Whether a host runs step `s`: not when it is in the rescue of a block whose rescue the host
/// has not entered (`rescuing`: the blocks whose rescue it has, after a failure they caught).
pub fn runs(s: &Step, rescuing: Option<&std::collections::HashSet<usize>>) -> bool {
    s.blocks.iter().all(|e| e.part != Part::Rescue || rescuing.is_some_and(|r| r.contains(&e.id)))
}

/// A host's way through the rest of a play after a failure inside blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Detour {
    pub playbook: usize,
    pub play: usize,
    /// Steps before this one are passed over.
    pub to: usize,
    /// The block whose rescue the host runs from `to`.
    pub rescue: Option<usize>,
    /// With a failure pending: the always part's last step, and the blocks the failure goes
    /// on to after it.
    pub pending: Option<(usize, Vec<Enclosing>)>,
}

impl Detour {
    /// `None` for `Next::Failed`.
    pub fn new(playbook: usize, play: usize, next: Next) -> Option<Detour> {
        match next {
            Next::Rescue { to, id } => Some(Detour { playbook, play, to, rescue: Some(id), pending: None }),
            Next::Always { to, end, outer } => {
                Some(Detour { playbook, play, to, rescue: None, pending: Some((end, outer)) })
            }
            Next::Failed => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::StepDef;

    /// Steps each given as its chain: (block id, part) outermost first.
    fn steps(chains: &[&[(usize, Part)]]) -> Vec<Step> {
        chains
            .iter()
            .map(|c| {
                let mut def: StepDef = serde_json::from_value(serde_json::json!({"debug": {"msg": "x"}})).unwrap();
                let action = def.take_action().unwrap();
                Step {
                    name: String::new(),
                    def,
                    action,
                    read_only: true,
                    line: 1,
                    column: 1,
                    blocks: c.iter().map(|&(id, part)| Enclosing { id, part }).collect(),
                    file: None,
                    tag_gates: Vec::new(),
                    include: None,
                    within: Vec::new(),
                    gate: false,
                    flush: None,
                    lockstep: None,
                    module: None,
                }
            })
            .collect()
    }

    use Part::{Always as A, Block as B, Rescue as R};

    #[test]
    fn a_failure_in_a_block_goes_to_its_rescue() {
        let s = steps(&[&[(0, B)], &[(0, B)], &[(0, R)], &[(0, A)], &[]]);
        assert_eq!(after_failure(&s, 0, &s[0].blocks), Next::Rescue { to: 2, id: 0 });
        assert!(counts_as_rescued(&s, 0, &s[0].blocks));
    }

    #[test]
    fn a_rescue_runs_only_on_hosts_that_entered_it() {
        let s = steps(&[&[(0, B)], &[(0, B), (1, R)], &[(0, R)], &[(0, A)]]);
        let entered: std::collections::HashSet<usize> = [0].into();
        assert!(runs(&s[0], None) && runs(&s[3], None));
        assert!(!runs(&s[2], None) && runs(&s[2], Some(&entered)));
        // Inside block 0, in the rescue of block 1: only after entering block 1's rescue.
        assert!(!runs(&s[1], Some(&entered)));
    }

    #[test]
    fn a_failure_in_a_rescue_runs_always_then_fails_the_host() {
        let s = steps(&[&[(0, B)], &[(0, R)], &[(0, A)], &[(0, A)], &[]]);
        assert_eq!(after_failure(&s, 1, &s[1].blocks), Next::Always { to: 2, end: 3, outer: vec![] });
        assert!(!counts_as_rescued(&s, 1, &s[1].blocks));
        // After the always part, nothing catches it.
        assert_eq!(after_failure(&s, 3, &[]), Next::Failed);
    }

    #[test]
    fn a_failure_in_always_or_outside_blocks_fails_the_host() {
        let s = steps(&[&[(0, B)], &[(0, A)], &[(0, A)], &[]]);
        assert_eq!(after_failure(&s, 1, &s[1].blocks), Next::Failed);
        assert_eq!(after_failure(&s, 3, &s[3].blocks), Next::Failed);
    }

    #[test]
    fn a_block_without_rescue_runs_always_and_the_outer_rescue_catches() {
        // outer 0 { inner 1 { block; always } ; rest } rescue { r } always { a }
        let s = steps(&[&[(0, B), (1, B)], &[(0, B), (1, A)], &[(0, B)], &[(0, R)], &[(0, A)]]);
        let n = after_failure(&s, 0, &s[0].blocks);
        assert_eq!(n, Next::Always { to: 1, end: 1, outer: vec![Enclosing { id: 0, part: B }] });
        assert_eq!(after_failure(&s, 1, &[Enclosing { id: 0, part: B }]), Next::Rescue { to: 3, id: 0 });
        // Ansible counts it as rescued when it fails: an enclosing block has a rescue.
        assert!(counts_as_rescued(&s, 0, &s[0].blocks));
    }

    #[test]
    fn a_failing_inner_rescue_is_caught_by_the_outer_one() {
        // outer 0 { inner 1 { b } rescue { r } always { a } ; o2 } rescue { or } always { oa }
        let s = steps(&[&[(0, B), (1, B)], &[(0, B), (1, R)], &[(0, B), (1, A)], &[(0, B)], &[(0, R)], &[(0, A)]]);
        assert_eq!(after_failure(&s, 0, &s[0].blocks), Next::Rescue { to: 1, id: 1 });
        let n = after_failure(&s, 1, &s[1].blocks);
        assert_eq!(n, Next::Always { to: 2, end: 2, outer: vec![Enclosing { id: 0, part: B }] });
        assert!(counts_as_rescued(&s, 1, &s[1].blocks));
        assert_eq!(after_failure(&s, 2, &[Enclosing { id: 0, part: B }]), Next::Rescue { to: 4, id: 0 });
        // A failure in the outer rescue: its always, then the host fails.
        assert_eq!(after_failure(&s, 4, &s[4].blocks), Next::Always { to: 5, end: 5, outer: vec![] });
    }
}
