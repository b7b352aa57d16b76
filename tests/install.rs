//! `copctl install` without hosts: its help lists the manual's first install in order, and a
//! `--from` that names no playbook of the install is refused before anything connects. The
//! install itself runs on a lab cluster in tests/cop.rs.

mod common;

use common::*;

#[test]
fn install_help_lists_the_first_install_in_order() {
    let out = Test::new().args(["install", "--help"]).run().stdout;
    let tail = "The install runs, in this order (as one run; a host goes on to the next playbook when it is done):
  1. system-setup
  2. system-dns
  3. gpu-preinstall  (GPU nodes; left out when the gpu group has no host)
  4. gpu-install  (GPU nodes; left out when the gpu group has no host)
  5. rke2-install
  6. rke2-post-install
  7. rke2-private-registry
  8. gpu-operator  (GPU nodes; left out when the gpu group has no host)

A failed run says which playbook to resume from: copctl install --from PLAYBOOK.

Examples:
  copctl install --check --diff       # what the first install would change
  copctl install                      # the first install
  copctl install --from rke2-install  # resume from the playbook that failed
";
    assert!(out.ends_with(tail), "{out}");
    assert!(
        out.starts_with("The manual's first install, in order, on the whole site (or --limit): see the list below\n"),
        "{out}"
    );
}

#[test]
fn install_from_a_playbook_outside_the_install_is_refused() {
    Test::repo()
        .args(["install", "--from", "rke2-instal"])
        .status(1)
        .stderr(
            "  x --from 'rke2-instal' is no playbook of the install\n  help: did you mean: rke2-install, rke2-post-install? the install \
             runs system-setup, system-dns, gpu-preinstall, gpu-install, rke2-install, rke2-post-install, \
             rke2-private-registry, gpu-operator\n\n",
        )
        .run();
    Test::new()
        .inventory("[masters]\nm1\n[workers]\nw1\n[cluster:children]\nmasters\nworkers\n")
        .args(["install", "--from", "gpu-operator"])
        .status(1)
        .stderr(
            "  x --from 'gpu-operator' is left out of this install (the inventory's gpu group has no host)\n  help: \
             the install runs system-setup, system-dns, rke2-install, rke2-post-install, rke2-private-registry\n\n",
        )
        .run();
}
