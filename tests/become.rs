//! Become for a non-root login (issue 14 §1), on lab hosts with a real sudo: the login is
//! `deploy` (uid 1500); steps run as root through sudo, files are written and read as root with
//! the owners and modes asked for, no script and no secret is ever on a remote command line, and
//! sudo's refusals (a password needed, a wrong one) fail the host with a message saying what to
//! do, without hanging.

mod common;

use common::lab::{LabOptions, SUDO_UID};
use common::*;

const PLAY: &str = r#"
description: Steps as root through sudo
plays:
  - name: become
    hosts: lab
    steps:
      - name: who runs the steps
        shell: "id -un > /root/whoami; echo {{ admin_password | quote }} | sha256sum > /root/pw.sum"
      - name: a root-only file
        copy: { content: "token={{ admin_password }}\n", dest: /root/secret.conf, mode: "0600" }
      - name: a big file, streamed
        copy: { content: "{{ 'x' * 200000 }}\n", dest: /etc/copctl-big.txt, mode: "0644" }
      - name: read back a root-only file
        slurp: { path: /root/secret.conf }
        register: back
      - name: what was read
        assert: { that: ["(back.content | trim) == 'token=' ~ admin_password"] }
"#;

fn become_site(password: Option<&str>, become_password: Option<&str>) -> Site {
    let opts = LabOptions { sudo_user: Some(("deploy".into(), password.map(String::from))), ..Default::default() };
    let site = Site::hosts_with(1, opts);
    let pw = become_password.map(|p| format!(" ansible_become_password={p}")).unwrap_or_default();
    site.edit("inventory.ini", |t| {
        t.replace("ansible_user=root", &format!("ansible_user=deploy ansible_become=true{pw}"))
    });
    site.write("env.yaml", "admin_password: \"s3cr'et $HOME pw\"\n").write("playbooks/become.yaml", PLAY);
    site
}

fn owner_and_mode(site: &Site, path: &str) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(site.lab().path(0, path)).unwrap();
    (m.uid(), m.mode() & 0o7777)
}

#[test]
fn a_non_root_login_becomes_root_with_nothing_on_a_command_line() {
    for (password, become_password) in [(None, None), (Some("Deploy-Pw-1"), Some("Deploy-Pw-1"))] {
        let site = become_site(password, become_password);
        let sampler = ArgvSampler::start(site.lab());
        let ran = site.test().args(["run", "become", "-vvv"]).run();
        let argv = sampler.finish();
        assert_eq!(std::fs::read_to_string(site.lab().path(0, "/root/whoami")).unwrap(), "root\n");
        assert_eq!(owner_and_mode(&site, "/root/secret.conf"), (0, 0o600));
        assert_eq!(owner_and_mode(&site, "/etc/copctl-big.txt"), (0, 0o644));
        assert_eq!(std::fs::read(site.lab().path(0, "/etc/copctl-big.txt")).unwrap().len(), 200001);
        assert!(argv.iter().any(|a| a.starts_with("sudo ")), "sudo ran: {argv:?}");
        // The secrets, and a piece of script text that is no process's own argv (a redirection).
        for secret in ["s3cr'et", "Deploy-Pw-1", "token=", "/root/pw.sum"] {
            assert!(!argv.iter().any(|a| a.contains(secret)), "{secret:?} on a command line: {argv:?}");
            assert!(!ran.stdout.contains(secret) || secret == "/root/pw.sum", "{secret:?} in the output");
        }
        // The login user's own files stay the login user's.
        assert_eq!(owner_and_mode(&site, "/home/deploy/.ssh/authorized_keys").0, SUDO_UID);
        // A re-run changes nothing.
        let again = site.test().args(["run", "become", "--output", "json"]).run();
        let changed: u64 = again.recap().values().map(|r| r["changed"].as_u64().unwrap()).sum();
        assert_eq!(changed, 1, "only the shell step reports a change: {}", again.stdout);
    }
}

#[test]
fn sudo_refusals_fail_the_host_with_what_to_do() {
    // A password is needed and none was given.
    let site = become_site(Some("Deploy-Pw-1"), None);
    let ran = site.test().args(["exec", "all", "--", "id -un"]).status(2).run();
    assert_eq!(
        normalize(&ran.stdout, ran.site()),
        "lab-1 | FAILED | rc=- >>\nlab-1: sudo: deploy needs a password to become root: give it with -K/--ask-become-pass, --become-password-file or ansible_become_password\n1 host(s): 0 ok, 1 failed, 0 unreachable ([T])\n"
    );
    // A wrong one: refused, and no hang (sudo's three tries read what is left of stdin).
    let site = site_with_wrong_password();
    let started = std::time::Instant::now();
    let ran = site.test().args(["exec", "all", "--", "id -un"]).status(2).run();
    assert_eq!(
        normalize(&ran.stdout, ran.site()),
        "lab-1 | FAILED | rc=- >>\nlab-1: sudo refused the become password of deploy (to become root): check -K or ansible_become_password\n1 host(s): 0 ok, 1 failed, 0 unreachable ([T])\n"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "took {:?}", started.elapsed());
    // The password from a file (-K's unattended form) works.
    let site = become_site(Some("Deploy-Pw-1"), None);
    site.write("become.pw", "Deploy-Pw-1\n");
    let ran = site.test().args(["exec", "all", "--become-password-file", "become.pw", "--", "id -un"]).run();
    assert!(ran.stdout.starts_with("lab-1 | CHANGED | rc=0 >>\nroot\n"), "{}", ran.stdout);
}

fn site_with_wrong_password() -> Site {
    become_site(Some("Deploy-Pw-1"), Some("not-the-password"))
}

/// A site whose sudoers says `requiretty`: copctl runs without a terminal, so sudo refuses; the
/// host fails with the sudoers line that allows it, and nothing hangs.
#[test]
fn a_requiretty_site_fails_the_host_with_the_sudoers_line_to_add() {
    let site = become_site(None, None);
    let rule = site.lab().path(0, "/etc/sudoers.d/copctl-lab");
    let text = std::fs::read_to_string(&rule).unwrap();
    std::fs::write(&rule, format!("Defaults:deploy requiretty\n{text}")).unwrap();
    let ran = site.test().args(["exec", "all", "--", "id -un"]).status(2).run();
    assert_eq!(
        normalize(&ran.stdout, ran.site()),
        "lab-1 | FAILED | rc=- >>\nlab-1: sudo on this host requires a terminal (requiretty) and copctl runs without one: allow `Defaults:deploy !requiretty` in sudoers\n1 host(s): 0 ok, 1 failed, 0 unreachable ([T])\n"
    );
}

/// `ansible_become_method=su` (or `--become-method su`): the same guarantees with su and the
/// target user's password. su reads its password with one read() of whatever waits on stdin, so
/// nothing else is sent until su is done with it.
fn su_site(become_password: Option<&str>) -> Site {
    let opts = LabOptions {
        sudo_user: Some(("deploy".into(), None)),
        root_password: Some("Root-Pw-1".into()),
        ..Default::default()
    };
    let site = Site::hosts_with(1, opts);
    // sudo would work too: take it away, so only su can become root.
    std::fs::remove_file(site.lab().path(0, "/etc/sudoers.d/copctl-lab")).unwrap();
    let pw = become_password.map(|p| format!(" ansible_become_password={p}")).unwrap_or_default();
    site.edit("inventory.ini", |t| {
        t.replace("ansible_user=root", &format!("ansible_user=deploy ansible_become=true ansible_become_method=su{pw}"))
    });
    site.write("env.yaml", "admin_password: \"s3cr'et $HOME pw\"\n").write("playbooks/become.yaml", PLAY);
    site
}

#[test]
fn become_method_su_runs_steps_uploads_and_reads_as_root_with_nothing_on_a_command_line() {
    let site = su_site(Some("Root-Pw-1"));
    let sampler = ArgvSampler::start(site.lab());
    let ran = site.test().args(["run", "become", "-vvv"]).run();
    let argv = sampler.finish();
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/root/whoami")).unwrap(), "root\n");
    assert_eq!(owner_and_mode(&site, "/root/secret.conf"), (0, 0o600));
    assert_eq!(owner_and_mode(&site, "/etc/copctl-big.txt"), (0, 0o644));
    assert_eq!(std::fs::read(site.lab().path(0, "/etc/copctl-big.txt")).unwrap().len(), 200001);
    assert!(argv.iter().any(|a| a.starts_with("su root -c ")), "su ran: {argv:?}");
    for secret in ["s3cr'et", "Root-Pw-1", "token=", "/root/pw.sum"] {
        assert!(!argv.iter().any(|a| a.contains(secret)), "{secret:?} on a command line: {argv:?}");
        assert!(!ran.stdout.contains(secret) || secret == "/root/pw.sum", "{secret:?} in the output");
    }
    let again = site.test().args(["run", "become", "--output", "json"]).run();
    let changed: u64 = again.recap().values().map(|r| r["changed"].as_u64().unwrap()).sum();
    assert_eq!(changed, 1, "only the shell step reports a change: {}", again.stdout);
}

#[test]
fn su_refusals_fail_the_host_with_what_to_do_and_never_hang() {
    let started = std::time::Instant::now();
    for (pw, msg) in [
        (
            None,
            "su: deploy needs the password of root to become root: give it with -K/--ask-become-pass, --become-password-file or ansible_become_password",
        ),
        (
            Some("not-the-password"),
            "su refused the become password of root (for deploy): check -K or ansible_become_password",
        ),
    ] {
        let site = su_site(pw);
        let ran = site.test().args(["exec", "all", "--", "id -un"]).status(2).run();
        assert_eq!(
            normalize(&ran.stdout, ran.site()),
            format!("lab-1 | FAILED | rc=- >>\nlab-1: {msg}\n1 host(s): 0 ok, 1 failed, 0 unreachable ([T])\n")
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "took {:?}", started.elapsed());
    // The flag's form, with the password from a file.
    let site = su_site(None);
    site.edit("inventory.ini", |t| t.replace(" ansible_become_method=su", ""));
    site.write("become.pw", "Root-Pw-1\n");
    let ran = site
        .test()
        .args(["exec", "all", "--become-method", "su", "--become-password-file", "become.pw", "--", "id -un"])
        .run();
    assert!(ran.stdout.starts_with("lab-1 | CHANGED | rc=0 >>\nroot\n"), "{}", ran.stdout);
}

/// Ansible's `become_method` keyword on a play, a block and a task: su where the play says so,
/// sudo where a task says so (here sudo is gone: that task fails), and the inventory's
/// `ansible_become_method` over any keyword, as Ansible's variables win over keywords.
#[test]
fn a_plays_become_method_is_used_where_the_inventory_sets_none() {
    let site = su_site(Some("Root-Pw-1"));
    site.edit("inventory.ini", |t| t.replace(" ansible_become_method=su", ""));
    site.write(
        "method.yml",
        "- hosts: lab\n  become: true\n  become_method: su\n  gather_facts: false\n  tasks:\n    - command: id -un\n      register: who\n    - copy: {content: \"{{ who.stdout }}\\n\", dest: /root/by-su}\n    - block:\n        - command: id -un\n          become_method: ansible.builtin.sudo\n      become_method: su\n",
    );
    let ran = site.test().args(["run", "method.yml"]).status(2).run();
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/root/by-su")).unwrap(), "root\n");
    assert!(
        normalize(&ran.stdout, ran.site()).contains(
            "FAILED: [lab-1] lab › command ([T]) — lab-1: sudo refused the become password of deploy (to become root)"
        ),
        "the task's own method, sudo, was used (and is gone): {}",
        ran.stdout
    );
    // The inventory's method wins over the task's keyword.
    site.edit("inventory.ini", |t| t.replace("ansible_become=true", "ansible_become=true ansible_become_method=su"));
    site.test().args(["run", "method.yml"]).run();
}

/// Steps of a becoming play run in long-lived shells of the become user: sudo is asked once per
/// shell (at most 4 per connection), not once per step.
#[test]
fn becoming_steps_share_long_lived_sudo_shells() {
    let site = become_site(Some("Deploy-Pw-1"), Some("Deploy-Pw-1"));
    // A sudo on the login user's PATH that counts its calls, then is the real one.
    let shim = site.lab().path(0, "/usr/local/bin/sudo");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(&shim, "#!/bin/sh\necho call >> /tmp/sudo-calls\nexec /usr/bin/sudo \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let steps: String = (0..20)
        .map(|i| format!("      - {{ name: step {i}, shell: \"id -un >> /root/ids; echo {i} > /etc/copctl-{i}\" }}\n"))
        .collect();
    site.write(
        "playbooks/many.yaml",
        format!("description: many steps\nplays:\n  - name: many\n    hosts: lab\n    steps:\n{steps}"),
    );
    site.test().args(["run", "many"]).run();
    let ids = std::fs::read_to_string(site.lab().path(0, "/root/ids")).unwrap();
    assert_eq!(ids, "root\n".repeat(20));
    let calls = std::fs::read_to_string(site.lab().path(0, "/tmp/sudo-calls")).unwrap().lines().count();
    assert!((1..=4).contains(&calls), "sudo ran {calls} times for 20 steps");
}

/// An Ansible play's `remote_user`: the hosts without `ansible_user` log in as that user (the
/// command runs as deploy, its file is deploy's); its `become` and `become_user` are every
/// task's that says none (a task's `become: false` over them); plays that share a host with different users are refused, at the play, before
/// anything runs.
#[test]
fn a_plays_remote_user_is_the_login_where_the_inventory_names_none() {
    let opts = LabOptions { sudo_user: Some(("deploy".into(), None)), ..Default::default() };
    let site = Site::hosts_with(1, opts);
    site.edit("inventory.ini", |t| t.replace("ansible_user=root", ""));
    site.write(
        "login.yml",
        "- hosts: lab\n  remote_user: deploy\n  gather_facts: false\n  tasks:\n    - command: id -un\n      register: who\n    - copy: {content: \"{{ who.stdout }}\\n\", dest: /home/deploy/who}\n",
    );
    site.test().args(["run", "login.yml"]).run();
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/home/deploy/who")).unwrap(), "deploy\n");
    assert_eq!(owner_and_mode(&site, "/home/deploy/who").0, SUDO_UID);
    // The play's become_user (a template, rendered per host): every task's, where it names none.
    site.write(
        "as.yml",
        "- hosts: lab\n  remote_user: deploy\n  become: true\n  become_user: \"{{ runner }}\"\n  vars:\n    runner: nobody\n  gather_facts: false\n  tasks:\n    - command: id -un\n      register: who\n    - copy: {content: \"{{ who.stdout }}\\n\", dest: /root/who}\n      become_user: root\n",
    );
    site.test().args(["run", "as.yml"]).run();
    assert_eq!(std::fs::read_to_string(site.lab().path(0, "/root/who")).unwrap(), "nobody\n");
    // The play's become (the inventory says nothing of it), and a task's become: false in it.
    site.write(
        "root.yml",
        "- hosts: lab\n  remote_user: deploy\n  become: true\n  gather_facts: false\n  tasks:\n    - copy: {content: \"x\\n\", dest: /root/by-play, mode: \"0600\"}\n    - copy: {content: \"y\\n\", dest: /home/deploy/mine}\n      become: false\n",
    );
    site.test().args(["run", "root.yml"]).run();
    assert_eq!(owner_and_mode(&site, "/root/by-play"), (0, 0o600));
    assert_eq!(owner_and_mode(&site, "/home/deploy/mine").0, SUDO_UID);
    site.write(
        "two.yml",
        "- hosts: lab\n  remote_user: deploy\n  tasks: [ping:]\n- name: second\n  hosts: lab-1\n  remote_user: admin\n  tasks: [ping:]\n",
    );
    site.test()
        .args(["validate", "two.yml"])
        .status(1)
        .stdout("")
        .stderr_normalized(
            r#"  x two.yml:4:1: host lab-1 is in play 'lab' with remote_user deploy and in play 'second' with remote_user admin: copctl logs in to a host once per run
   ,-[two.yml:4:1]
 3 |   tasks: [ping:]
 4 | - name: second
   : ^^^^^^^|^^^^^^
   :        `-- this play
 5 |   hosts: lab-1
   `----
  help: give the plays that share lab-1 the same remote_user, or set ansible_user for it in the inventory

"#,
        )
        .run();
}
