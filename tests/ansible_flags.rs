//! Ansible's connection flags on lab hosts (issue 13 item 5): `-u` and `--private-key` fill in
//! where the inventory says nothing, and an inventory's own `ansible_user` /
//! `ansible_ssh_private_key_file` win, as in Ansible.

mod common;

use common::*;

#[test]
fn dash_u_applies_where_the_inventory_names_no_user_and_ansible_user_wins() {
    let site = Site::hosts(2);
    // lab-1 loses its ansible_user (the lab's ssh_config is not read here): -u decides for it.
    site.edit("inventory.ini", |t| t.replacen(" ansible_user=root", "", 1));
    let ran = site.test().args(["exec", "all", "-u", "nosuchuser", "--", "id -un"]).status(4).run();
    let out = normalize(&ran.stdout, ran.site());
    assert!(out.starts_with("lab-1 | UNREACHABLE! => lab-1: "), "{out}");
    assert!(out.contains("nosuchuser@"), "-u is the login user of lab-1: {out}");
    assert!(out.contains("lab-2 | CHANGED | rc=0 >>\nroot\n"), "ansible_user=root wins on lab-2: {out}");
    site.test().args(["exec", "lab-1", "-u", "root", "--", "id -un"]).run();
}

#[test]
fn private_key_applies_where_the_inventory_names_no_key() {
    let site = Site::hosts(1);
    let key = site.lab().client_key.clone();
    site.edit("inventory.ini", |t| {
        t.lines().filter(|l| !l.starts_with("ansible_ssh_private_key_file")).map(|l| format!("{l}\n")).collect()
    });
    site.test().args(["exec", "all", "--", "true"]).status(4).run();
    site.test().args(["exec", "all", "--private-key"]).arg(&key).args(["--", "true"]).run();
    site.test().args(["exec", "all", "--key-file"]).arg(&key).args(["--", "true"]).run();
}
