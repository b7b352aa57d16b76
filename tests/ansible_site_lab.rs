//! An existing Ansible site on lab hosts (issue 13 items 1 and 2): the inventory names the hosts
//! only; where they are and who logs in comes from group_vars/ and host_vars/ files, as Ansible
//! reads them. Were those files not read, the hosts' names would be dialled and fail.

mod common;

use common::*;

/// The lab's hosts under `[lab]` with nothing else on their lines: the lab's inventory.ini,
/// stripped.
fn names_only(site: &Site) -> String {
    let names: Vec<String> = site.lab().hosts.iter().map(|h| h.name.clone()).collect();
    format!("[lab]\n{}\n", names.join("\n"))
}

#[test]
fn addresses_and_users_from_host_vars_and_group_vars() {
    let site = Site::hosts(2);
    let (a1, a2) = (site.lab().hosts[0].addr, site.lab().hosts[1].addr);
    let key = site.lab().client_key.display().to_string();
    site.write("inventory.ini", names_only(&site))
        .write("group_vars/all.yml", "ansible_user: root\n")
        .write("group_vars/lab/10-ssh.yml", format!("ansible_ssh_private_key_file: {key}\n"))
        .write("host_vars/lab-1.yml", format!("ansible_host: {a1}\n"))
        .write("host_vars/lab-2/main.yaml", format!("ansible_host: {a2}\n"));
    site.test().args(["exec", "all", "--", "true"]).run();
    let ran = site.test().args(["exec", "all", "--", "hostname; id -un"]).run();
    let out = normalize(&ran.stdout, ran.site());
    for h in ["lab-1", "lab-2"] {
        assert!(out.contains(&format!("{h} | CHANGED | rc=0 >>\n{h}\nroot\n")), "{out}");
    }
    // The variables are the ones Ansible would use.
    site.test()
        .args(["inventory", "host", "lab-1"])
        .stdout_normalized(&format!(
            "{{\n    \"ansible_host\": \"[ADDR]\",\n    \"ansible_ssh_private_key_file\": \"{key}\",\n    \
             \"ansible_user\": \"root\"\n}}\n"
        ))
        .run();
    // Without host_vars/, lab-1 is dialled by its name, which no resolver knows.
    std::fs::remove_file(site.path("host_vars/lab-1.yml")).unwrap();
    site.test().args(["exec", "all", "-T", "3", "--", "true"]).status(4).run();
}

#[test]
fn a_directory_of_yaml_and_ini_with_copctls_own_files_beside_them() {
    let site = Site::hosts(2);
    let (a1, a2) = (site.lab().hosts[0].addr, site.lab().hosts[1].addr);
    let key = site.lab().client_key.display().to_string();
    // `-i inventory/`: lab-1 in a YAML file, lab-2 in an INI file, addresses in host_vars/;
    // env.yaml and playbooks/ in the same directory are copctl's, no inventory.
    site.write("inventory/10-first.yml", "all:\n  children:\n    lab:\n      hosts:\n        lab-1:\n")
        .write("inventory/20-second.ini", "[lab]\nlab-2\n")
        .write("inventory/group_vars/lab.yaml", format!("ansible_user: root\nansible_ssh_private_key_file: {key}\n"))
        .write("inventory/host_vars/lab-1", format!("ansible_host: {a1}\n"))
        .write("inventory/host_vars/lab-2.json", format!("{{\"ansible_host\": \"{a2}\"}}\n"))
        .write("inventory/env.yaml", "greeting: hello from env.yaml\n")
        .write(
            "inventory/playbooks/hi.yaml",
            "plays:\n  - name: hi\n    hosts: lab\n    steps:\n      - name: say\n        debug: {msg: \"{{ greeting }}\"}\n",
        );
    site.test().args(["exec", "all", "-i", "inventory", "--", "true"]).run();
    site.test().args(["hosts", "all", "-i", "inventory/"]).stdout("lab-1\nlab-2\n").run();
    let ran = site.test().args(["run", "hi", "-i", "inventory", "--output", "json"]).run();
    assert!(ran.stdout.contains("hello from env.yaml"), "{}", ran.stdout);
    // A host list reaches a host by address, with the user and key given as flags.
    site.test().args(["exec", "all", "-i", &format!("{a1},"), "-u", "root", "--private-key", &key, "--", "true"]).run();
}
