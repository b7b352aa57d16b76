//! Bad input: each mistake exits 1 with a message that names the file and line (or the
//! pattern) and says what to fix, before anything connects anywhere.

mod common;

use std::path::Path;

use common::*;

/// A scratch site: inventory, env.yaml, playbooks/ and templates/ beside each other.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Self {
        let s = Site { dir: tempfile::tempdir().unwrap() };
        s.write("inventory.ini", "[masters]\nm1\nm2\n[workers]\nw1\nw2\n");
        s.write("env.yaml", "domain: example\n");
        s
    }

    fn write(&self, name: &str, text: &str) -> &Self {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs copctl, expects exit 1, returns stderr.
    fn fails(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["-i", "inventory.ini"]);
        let o = copctl(Some(self.path()), &all);
        assert_eq!(o.status.code(), Some(1), "expected exit 1 for {args:?}; stdout: {}", stdout(&o));
        stderr(&o)
    }
}

fn assert_has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "missing {p:?} in:\n{text}");
    }
}

const PLAY: &str = "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n";

#[test]
fn malformed_host_line() {
    let s = Site::new();
    s.write("inventory.ini", "[web]\nweb1\nweb2 port 22\n");
    let e = s.fails(&["hosts", "all"]);
    assert_has(&e, &["inventory.ini:3:6", "Expected key=value host variable assignment, got: port", "help:"]);
}

#[test]
fn child_group_never_declared() {
    let s = Site::new();
    s.write("inventory.ini", "[web]\nw1\n[cluster:children]\nweb\ndatabase\n");
    let e = s.fails(&["inventory", "list"]);
    assert_has(
        &e,
        &["inventory.ini:5", "[cluster:children] includes undefined group 'database'", "declare [database]"],
    );
}

#[test]
fn vars_for_unknown_group() {
    let s = Site::new();
    s.write("inventory.ini", "[web]\nw1\n\n[wbe:vars]\nx=1\n");
    let e = s.fails(&["inventory", "list"]);
    assert_has(&e, &["inventory.ini:4", "Section [wbe:vars] not valid for undefined group 'wbe'"]);
}

#[test]
fn bad_host_ranges() {
    let s = Site::new();
    s.write("inventory.ini", "[web]\nweb[01:9]\n");
    assert_has(&s.fails(&["hosts", "all"]), &["inventory.ini:2", "bad host range", "equal length"]);
    s.write("inventory.ini", "[web]\nok\nweb[3]\n");
    assert_has(&s.fails(&["hosts", "all"]), &["inventory.ini:3", "begin:end"]);
}

#[test]
fn vars_line_without_equals() {
    let s = Site::new();
    s.write("inventory.ini", "[web]\nw1\n[web:vars]\nansible_user root\n");
    assert_has(&s.fails(&["inventory", "list"]), &["inventory.ini:4", "Expected key=value, got: ansible_user root"]);
}

#[test]
fn non_utf8_inventory() {
    let s = Site::new();
    std::fs::write(s.path().join("inventory.ini"), b"[web]\nw1\nh\xe9te\n").unwrap();
    assert_has(&s.fails(&["hosts", "all"]), &["inventory.ini:3", "not valid UTF-8"]);
}

#[test]
fn undefined_template_variable_in_a_step() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: workers\n    steps:\n      - name: write\n        copy:\n          dest: /etc/x\n          content: \"{{ domian }}\"\n",
    );
    let e = s.fails(&["plan", "site"]);
    assert_has(&e, &["site.yaml:8", "step 'write' on w1", "domian", "help:"]);
}

#[test]
fn undefined_template_variable_in_a_template_file() {
    let s = Site::new();
    s.write("templates/app.conf.j2", "domain={{ domain }}\nregistry={{ registry_hots }}\n");
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: workers\n    steps:\n      - template: { src: app.conf.j2, dest: /etc/app.conf }\n",
    );
    let e = s.fails(&["plan", "site"]);
    assert_has(&e, &["templates/app.conf.j2:2", "registry_hots", "for w1"]);
}

#[test]
fn needs_cycle_names_the_cycle() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: a\n    hosts: masters\n    needs: [b]\n    steps: [{debug: {msg: x}}]\n  - name: b\n    hosts: workers\n    steps: [{debug: {msg: y}}]\n",
    );
    let e = s.fails(&["plan", "site"]);
    assert_has(&e, &["site.yaml:", "cycle", "a → needs → b → needs → a"]);
}

#[test]
fn unknown_step_field() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        regster: out\n",
    );
    let e = s.fails(&["validate", "site"]);
    assert_has(&e, &["site.yaml:7", "unknown field", "regster"]);
}

#[test]
fn step_with_two_actions() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        shell: echo\n",
    );
    assert_has(&s.fails(&["validate", "site"]), &["site.yaml:5", "2 actions: command, shell"]);
}

#[test]
fn yaml_syntax_error_in_env() {
    let s = Site::new();
    s.write("env.yaml", "domain: example\nregistry:\n\tport: 8443\n");
    assert_has(&s.fails(&["plan", "x"]), &["env.yaml:3", "tabs"]);
    s.write("env.yaml", "domain: example\ndomain: other\n");
    assert_has(&s.fails(&["plan", "x"]), &["env.yaml:2", "duplicate"]);
}

#[test]
fn yes_is_not_a_boolean() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: all\n    steps:\n      - service: { name: chronyd, enabled: yes }\n",
    );
    assert_has(&s.fails(&["validate", "site"]), &["site.yaml:5", "true or false"]);
}

#[test]
fn limit_that_matches_nothing() {
    let s = Site::new();
    s.write("playbooks/site.yaml", PLAY);
    let e = s.fails(&["plan", "site", "--limit", "wokers"]);
    assert_has(&e, &["--limit 'wokers' matches no host", "did you mean: workers"]);
}

#[test]
fn unknown_playbook_suggests_a_name() {
    let s = Site::new();
    assert_has(&s.fails(&["plan", "rke2-instal"]), &["no playbook named 'rke2-instal'", "rke2-install"]);
}

#[test]
fn notify_of_a_missing_handler() {
    let s = Site::new();
    s.write(
        "playbooks/site.yaml",
        "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        notify: restart rke3\nhandlers:\n  - name: restart rke2\n    command: [true]\n",
    );
    assert_has(&s.fails(&["validate", "site"]), &["site.yaml:5", "notifies 'restart rke3'"]);
}

#[test]
fn extra_vars_without_value() {
    let s = Site::new();
    s.write("playbooks/site.yaml", PLAY);
    assert_has(&s.fails(&["plan", "site", "-e", "flag"]), &["expected key=value"]);
}

#[test]
fn modes_are_octal_quoted_or_not_and_anything_else_is_refused() {
    // Ansible's pitfall (an unquoted `mode: 644` is decimal 644) cannot happen: copctl reads the
    // mode's text as octal either way. What is not octal is refused at its line.
    let s = Site::new();
    let pb = |mode: &str| {
        format!(
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - file: {{ path: /etc/x, state: directory, mode: {mode} }}\n"
        )
    };
    for ok in ["0755", "755", "\"0755\"", "'0o755'"] {
        s.write("playbooks/site.yaml", &pb(ok));
        let o = copctl(Some(s.path()), &["validate", "site", "-i", "inventory.ini"]);
        assert_eq!(o.status.code(), Some(0), "mode: {ok}: {}", stderr(&o));
    }
    for bad in ["0999", "u=rwx", "75a"] {
        s.write("playbooks/site.yaml", &pb(bad));
        assert_has(&s.fails(&["validate", "site"]), &["site.yaml:5", "not an octal mode", "help:"]);
    }
}

#[test]
fn a_host_in_two_groups_with_conflicting_vars_is_warned_about() {
    let s = Site::new();
    s.write("inventory.ini", "[gpu]\nn1\n[workers]\nn1\nn2\n[gpu:vars]\nmtu=9000\n[workers:vars]\nmtu=1500\n");
    s.write("playbooks/site.yaml", PLAY);
    let o = copctl(Some(s.path()), &["validate", "site", "-i", "inventory.ini"]);
    assert_eq!(o.status.code(), Some(0), "a warning, not an error (Ansible accepts it)");
    assert_has(
        &stderr(&o),
        &[
            "warning: mtu differs between groups gpu (inventory.ini:1) and workers (inventory.ini:3)",
            "workers wins for n1",
            "ansible_group_priority",
        ],
    );
    assert!(!stderr(&o).contains("n2"), "n2 is only in one of them: {}", stderr(&o));
    // Saying which should win silences it.
    s.write(
        "inventory.ini",
        "[gpu]\nn1\n[workers]\nn1\nn2\n[gpu:vars]\nmtu=9000\nansible_group_priority=2\n[workers:vars]\nmtu=1500\n",
    );
    let o = copctl(Some(s.path()), &["validate", "site", "-i", "inventory.ini"]);
    assert!(!stderr(&o).contains("differs"), "{}", stderr(&o));
}

#[test]
fn a_ten_megabyte_env_yaml_loads_and_its_errors_keep_their_line() {
    let s = Site::new();
    let mut env = String::from("domain: example\n");
    let mut n = 1;
    while env.len() < 10 << 20 {
        n += 1;
        env.push_str(&format!("setting_{n}: {{ name: value-{n}, list: [1, 2, 3], text: \"some words for {n}\" }}\n"));
    }
    s.write("env.yaml", &env);
    s.write("playbooks/site.yaml", PLAY);
    let t = std::time::Instant::now();
    let o = copctl(Some(s.path()), &["validate", "site", "-i", "inventory.ini"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "10 MB took {:?}", t.elapsed());
    env.push_str("broken: [unclosed\n");
    s.write("env.yaml", &env);
    assert_has(&s.fails(&["validate", "site"]), &[&format!("env.yaml:{}", n + 1)]);
}
