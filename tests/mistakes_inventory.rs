//! Inventory and pattern mistakes an operator makes, each pinned whole: the exit code, what is
//! printed and the warning or error text with its closest names. Ansible's verdict on the same
//! input is the reference (tests/ansible_differential.rs compares the selections themselves).

use std::path::Path;

use assert_cmd::Command;

/// A scratch directory with `inv.ini` holding `text`.
fn site(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inv.ini"), text).unwrap();
    dir
}

/// `copctl -i inv.ini ARGS` in `dir`: exit code, stdout, stderr.
fn copctl(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("copctl")
        .unwrap()
        .args(["-i", "inv.ini"])
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

const CLUSTER: &str =
    "[servers]\ncop-server-1\n[workers]\ncop-worker-1\ncop-worker-2\n[infra_nodes:children]\nworkers\n";

#[test]
fn limit_matching_nothing_is_an_error_with_the_closest_names() {
    let d = site(CLUSTER);
    let (code, out, err) = copctl(d.path(), &["hosts", "all", "--limit", "cop-wroker-1"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "warning: could not match supplied host pattern, ignoring: cop-wroker-1 (did you mean: cop-worker-1, cop-worker-2?)\n  \
         x --limit 'cop-wroker-1' matches no host in inv.ini\n  help: did you mean: cop-worker-1, cop-worker-2?\n\n"
    );
}

#[test]
fn anchored_regex_limit_matching_nothing_is_an_error() {
    let d = site(CLUSTER);
    let (code, out, err) = copctl(d.path(), &["hosts", "workers", "--limit", "~gpu"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "warning: could not match supplied host pattern, ignoring: ~gpu (no group or host of inv.ini is named like \
         it)\n  x --limit '~gpu' matches no host in inv.ini\n  help: groups in inv.ini: all, ungrouped, servers, \
         workers, infra_nodes\n\n"
    );
}

#[test]
fn limit_leaving_none_of_the_patterns_hosts_is_an_error() {
    let d = site(CLUSTER);
    let (code, out, err) = copctl(d.path(), &["hosts", "workers", "--limit", "cop-server-1"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x pattern 'workers' and --limit 'cop-server-1' leave no host to target in inv.ini\n  help: 'workers' \
         matches 2 host(s), none of them among the 1 --limit 'cop-server-1' admits: cop-server-1\n\n"
    );
}

#[test]
fn limit_list_entry_matching_nothing_warns_with_the_closest_names() {
    let d = site(CLUSTER);
    let (code, out, err) = copctl(d.path(), &["hosts", "all", "--limit", "cop-worker-3,cop-wroker-1"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "warning: could not match supplied host pattern, ignoring: cop-worker-3 (did you mean: cop-worker-1, \
         cop-worker-2?)\nwarning: could not match supplied host pattern, ignoring: cop-wroker-1 (did \
         you mean: cop-worker-1, cop-worker-2?)\n  x --limit 'cop-worker-3,cop-wroker-1' matches no \
         host in inv.ini\n  help: did you mean: cop-worker-1, cop-worker-2?\n\n"
    );
    let (code, out, err) = copctl(d.path(), &["hosts", "all", "--limit", "cop-worker-2,cop-wroker-1"]);
    assert_eq!((code, out.as_str()), (0, "cop-worker-2\n"));
    assert_eq!(
        err,
        "warning: could not match supplied host pattern, ignoring: cop-wroker-1 (did you mean: cop-worker-1, \
         cop-worker-2?)\n"
    );
}

#[test]
fn unclosed_subscript_warns_and_ignores_what_matches_nothing() {
    let d = site("[web]\nweb1\nweb2\nweb3\n");
    let (code, out, err) = copctl(d.path(), &["hosts", "all", "--limit", "web[1:"]);
    assert_eq!((code, out.as_str()), (0, "web1\nweb2\nweb3\n"));
    assert_eq!(
        err,
        "warning: --limit 'web[1:' has an unclosed '[': read as the patterns web, 1\nwarning: could not match \
         supplied host pattern, ignoring: 1 (no group or host of inv.ini is named like it)\n"
    );
}

#[test]
fn hosts_listed_only_under_all_are_ungrouped() {
    let d = site("[all]\nh1\n[web]\nh2\n");
    let (code, out, err) = copctl(d.path(), &["hosts", "ungrouped"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "h1\n", ""));
    let (code, out, _) = copctl(d.path(), &["inventory", "graph"]);
    assert_eq!((code, out.as_str()), (0, "@all:\n  |--@ungrouped:\n  |  |--h1\n  |--@web:\n  |  |--h2\n"));
}

#[test]
fn vault_encrypted_inventory_without_a_password_says_how_to_give_one() {
    let d = site(
        "$ANSIBLE_VAULT;1.1;AES256\n62313365396662343061393464336163383764373764613633653634306231386433626436623361\n",
    );
    let (code, out, err) = copctl(d.path(), &["hosts", "all"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x inv.ini:1:1: Attempting to decrypt but no vault secrets found: inv.ini is vault-encrypted\n   \
         ,-[inv.ini:1:1]\n 1 | $ANSIBLE_VAULT;1.1;AES256\n   : ^^^^^^^^^^^^|^^^^^^^^^^^^\n   :             `-- \
         vault-encrypted\n   `----\n  help: give the vault password: pass it with --vault-id LABEL@FILE, \
         --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE)\n\n"
    );
}

#[test]
fn python_literals_are_typed_as_ansible_types_them() {
    // A bytes literal is unsafe text: `inventory list` marks it as `ansible-inventory --list` does
    // (tests/ansible_differential.rs); `--host` prints it unmarked, and so does `inventory host`.
    let d = site("[all:vars]\nv=b'x'\n[g]\nh1 a=set() c=\"[1, set()]\" d=\"[..., 1j]\"\n");
    let (code, out, err) = copctl(d.path(), &["inventory", "host", "h1"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "{\n    \"a\": [],\n    \"c\": [\n        1,\n        []\n    ],\n    \"d\": [\n        \"...\",\n        \"1j\"\n    ],\n    \
         \"v\": \"x\"\n}\n"
    );
}

#[test]
fn subscript_past_the_end_selects_nothing() {
    let letters: String = ('a'..='z').chain('A'..='Z').map(|c| format!("h{c}\n")).collect();
    let d = site(&format!("[letters]\n{letters}"));
    let (code, out, err) = copctl(d.path(), &["hosts", "letters[51]"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "hZ\n", ""));
    let (code, out, err) = copctl(d.path(), &["hosts", "letters[52]"]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(
        err,
        "warning: No hosts matched the subscripted pattern 'letters[52]' ('letters' has 52 host(s); subscripts count \
         from 0)\nwarning: no hosts matched 'letters[52]'\n"
    );
    let (code, out, err) = copctl(d.path(), &["hosts", "all", "--limit", "letters[52]"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x No hosts matched the subscripted pattern 'letters[52]'\n  help: 'letters' has 52 host(s); subscripts count from 0\n\n"
    );
}

#[test]
fn huge_range_is_refused_at_its_line_before_allocation() {
    let d = site("[web]\nweb[1:100000000]\n");
    let start = std::time::Instant::now();
    let (code, out, err) = copctl(d.path(), &["hosts", "all"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "took {:?}", start.elapsed());
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x inv.ini:2:1: bad host range: host range 'web[1:100000000]' makes 100000000 hosts, more than the 100000 \
         this inventory has room for (at most 100000 in all)\n   ,-[inv.ini:2:1]\n 1 | [web]\n 2 | web[1:100000000]\n   \
         : ^^^^^^^^|^^^^^^^\n   :         `-- this range\n   `----\n  help: ranges are [01:20] (zero-padded: equal \
         widths), [a:f], or [1:10:2]\n\n"
    );
}

#[test]
fn ranges_together_past_the_bound_are_refused_at_the_line_that_passes_it() {
    let d = site("[a]\na[1:60000]\n[b]\nb[1:60000]\n");
    let (code, out, err) = copctl(d.path(), &["hosts", "all"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x inv.ini:4:1: bad host range: host range 'b[1:60000]' makes 60000 hosts, more than the 40000 this \
         inventory has room for (at most 100000 in all)\n   ,-[inv.ini:4:1]\n 3 | [b]\n 4 | b[1:60000]\n   : \
         ^^^^^|^^^^\n   :      `-- this range\n   `----\n  help: ranges are [01:20] (zero-padded: equal widths), \
         [a:f], or [1:10:2]\n\n"
    );
}

#[test]
fn bad_group_vars_yaml_is_an_error_at_its_line() {
    let d = site(CLUSTER);
    std::fs::create_dir(d.path().join("group_vars")).unwrap();
    std::fs::write(d.path().join("group_vars/workers.yml"), "ntp: pool.ntp.org\ndns:\n  - 10.0.0.2\n  mtu: 1500\n")
        .unwrap();
    let (code, out, err) = copctl(d.path(), &["hosts", "all"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x group_vars/workers.yml:4:3: while parsing a block collection, did not find expected '-' indicator\n   \
         ,-[group_vars/workers.yml:4:3]\n 3 |   - 10.0.0.2\n 4 |   mtu: 1500\n   :   ^^^^|^^^^\n   :       `-- here\n   \
         `----\n\n"
    );
    // A file that is no mapping is an error naming it.
    std::fs::write(d.path().join("group_vars/workers.yml"), "- ntp\n- dns\n").unwrap();
    let (code, out, err) = copctl(d.path(), &["hosts", "all"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x group_vars/workers.yml:1:1: a variable file is a mapping of variables (name: value), not a list\n   \
         ,-[group_vars/workers.yml:1:1]\n 1 | - ntp\n   : ^^|^^\n   :   `-- not a mapping\n 2 | - dns\n   `----\n  \
         help: write one `name: value` per line at the top level\n\n"
    );
}

#[test]
fn group_vars_file_for_an_unknown_group_is_warned_about() {
    // Ansible reads group_vars/NAME only for a group NAME and ignores the rest without a word.
    let d = site(CLUSTER);
    std::fs::create_dir(d.path().join("group_vars")).unwrap();
    std::fs::create_dir(d.path().join("host_vars")).unwrap();
    std::fs::write(d.path().join("group_vars/wrokers.yml"), "mtu: 9000\n").unwrap();
    std::fs::write(d.path().join("group_vars/cop-worker-1.yml"), "mtu: 9000\n").unwrap();
    std::fs::write(d.path().join("host_vars/cop-worker-9.yml"), "mtu: 9000\n").unwrap();
    let (code, out, err) = copctl(d.path(), &["inventory", "host", "cop-worker-1"]);
    assert_eq!((code, out.as_str()), (0, "{}\n"));
    assert_eq!(
        err,
        "warning: group_vars/cop-worker-1.yml is not read: the inventory has no group 'cop-worker-1'; cop-worker-1 is \
         a host, whose variables go in host_vars/\nwarning: group_vars/wrokers.yml is not read: the inventory has no \
         group 'wrokers' (did you mean: workers?)\nwarning: host_vars/cop-worker-9.yml is not read: the inventory \
         has no host 'cop-worker-9' (did you mean: cop-worker-1, cop-worker-2?)\n"
    );
}

#[test]
fn yaml_inventory_mistakes_name_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("inv.ini"), "").unwrap();
    std::fs::write(
        d.path().join("hosts.yml"),
        "all:\n  children:\n    workers:\n      host:\n        w1:\n      hosts:\n        - w2\n",
    )
    .unwrap();
    let (code, out, err) = copctl(d.path(), &["-i", "hosts.yml", "hosts", "all"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "  x hosts.yml:6:7: Invalid \"hosts\" entry for \"workers\" group, requires a dictionary, found a list \
         instead\n   ,-[hosts.yml:6:7]\n 5 |         w1:\n 6 |       hosts:\n   :       ^^^|^^\n   :          `-- \
         here\n 7 |         - w2\n   `----\n  help: write hosts: as a mapping, one entry per line (`name:` with no \
         value is fine)\n\n"
    );
    // What Ansible skips with a warning, copctl skips with one too.
    std::fs::write(d.path().join("hosts.yml"), "all:\n  children:\n    workers:\n      host:\n        w1:\n").unwrap();
    let (code, out, err) = copctl(d.path(), &["-i", "hosts.yml", "hosts", "all"]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(
        err,
        "warning: hosts.yml:4: key 'host' in group 'workers' is skipped: a group has only vars:, children: and \
         hosts: (as in Ansible)\nwarning: no hosts matched 'all'\n"
    );
}

#[test]
fn a_large_yaml_inventory_loads_in_linear_time() {
    // Each host's line is found going on from the last one: searched from its group's line
    // instead, 50,000 hosts took over ten minutes.
    let mut text = String::from("all:\n  children:\n    web:\n      hosts:\n");
    for i in 0..20_000 {
        text.push_str(&format!("        w{i}:\n          ansible_host: 10.0.{}.{}\n", i / 250, i % 250));
    }
    let d = site("");
    std::fs::write(d.path().join("hosts.yml"), text).unwrap();
    let start = std::time::Instant::now();
    let (code, out, err) = copctl(d.path(), &["-i", "hosts.yml", "hosts", "web[-1]"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "took {:?}", start.elapsed());
    assert_eq!((code, out.as_str(), err.as_str()), (0, "w19999\n", ""));
}
