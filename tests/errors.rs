//! Bad input: each mistake exits 1 with a message that names the file and line (or the
//! pattern) and says what to fix, before anything connects anywhere. Every case pins the whole
//! message, caret lines included.

mod common;

use common::*;

const INVENTORY: &str = "[masters]\nm1\nm2\n[workers]\nw1\nw2\n";
const PLAY: &str = "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n";

/// The scratch site each case starts from: two masters, two workers, one setting.
fn test() -> Test<'static> {
    Test::new().inventory(INVENTORY).env("domain: example\n")
}

/// A site for cases that run copctl more than once.
fn site() -> Site {
    let s = Site::new();
    s.write("inventory.ini", INVENTORY).write("env.yaml", "domain: example\n");
    s
}

#[test]
fn malformed_host_line() {
    test()
        .inventory("[web]\nweb1\nweb2 port 22\n")
        .args(["hosts", "all"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:3:6: Expected key=value host variable assignment, got: port
   ,-[inventory.ini:3:6]
 2 | web1
 3 | web2 port 22
   :      ^^|^
   :        `-- expected key=value
   `----
  help: host variables are written name=value after the host name; quote values with spaces

"#,
        )
        .run();
}

#[test]
fn child_group_never_declared() {
    test()
        .inventory("[web]\nw1\n[cluster:children]\nweb\ndatabase\n")
        .args(["inventory", "list"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:5:1: Section [cluster:children] includes undefined group 'database'
   ,-[inventory.ini:5:1]
 4 | web
 5 | database
   : ^^^^|^^^
   :     `-- undefined group
   `----
  help: declare [database] (it may come later in the file), or fix the name

"#,
        )
        .run();
}

#[test]
fn vars_for_unknown_group() {
    test()
        .inventory("[web]\nw1\n\n[wbe:vars]\nx=1\n")
        .args(["inventory", "list"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:4:1: Section [wbe:vars] not valid for undefined group 'wbe'
   ,-[inventory.ini:4:1]
 3 | 
 4 | [wbe:vars]
   : ^^^^^|^^^^
   :      `-- undefined group
 5 | x=1
   `----
  help: declare the group with a [wbe] or [wbe:children] section, or fix the name

"#,
        )
        .run();
}

#[test]
fn bad_host_ranges() {
    let s = site();
    s.write("inventory.ini", "[web]\nweb[01:9]\n");
    s.test().args(["hosts", "all"]).status(1).stdout("").stderr(r#"  x inventory.ini:2:1: bad host range: host range [01:9] must have begin and end of equal length when zero-padded (01 vs 9)
   ,-[inventory.ini:2:1]
 1 | [web]
 2 | web[01:9]
   : ^^^^|^^^^
   :     `-- this range
   `----
  help: ranges are [01:20] (zero-padded: equal widths), [a:f], or [1:10:2]

"#).run();
    s.write("inventory.ini", "[web]\nok\nweb[3]\n");
    s.test()
        .args(["hosts", "all"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:3:1: bad host range: host range [3] must be begin:end or begin:end:step
   ,-[inventory.ini:3:1]
 2 | ok
 3 | web[3]
   : ^^^|^^
   :    `-- this range
   `----
  help: ranges are [01:20] (zero-padded: equal widths), [a:f], or [1:10:2]

"#,
        )
        .run();
}

#[test]
fn vars_line_without_equals() {
    test()
        .inventory("[web]\nw1\n[web:vars]\nansible_user root\n")
        .args(["inventory", "list"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:4:1: Expected key=value, got: ansible_user root
   ,-[inventory.ini:4:1]
 3 | [web:vars]
 4 | ansible_user root
   : ^^^^^^^^|^^^^^^^^
   :         `-- not a key=value line
   `----
  help: lines in [web:vars] set one variable each: name=value

"#,
        )
        .run();
}

#[test]
fn non_utf8_inventory() {
    test()
        .write("inventory.ini", b"[web]\nw1\nh\xe9te\n")
        .args(["hosts", "all"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x inventory.ini:3: the file is not valid UTF-8
  help: save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)

"#,
        )
        .run();
}

#[test]
fn undefined_template_variable_in_a_step() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: workers\n    steps:\n      - name: write\n        copy:\n          dest: /etc/x\n          content: \"{{ domian }}\"\n",
        )
        .args(["plan", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:8:21: step 'write' on w1: 'domian' is undefined
   ,-[playbooks/site.yaml:8:21]
 7 |           dest: /etc/x
 8 |           content: "{{ domian }}"
   :                     ^^^^^^|^^^^^
   :                           `-- in this template
   `----
  help: define it in inventory/env.yaml, the inventory, the playbook's vars or with -e name=value (or guard it with `is defined`)

"#)
        .run();
}

#[test]
fn undefined_template_variable_in_a_template_file() {
    test()
        .template("app.conf.j2", "domain={{ domain }}\nregistry={{ registry_hots }}\n")
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: workers\n    steps:\n      - template: { src: app.conf.j2, dest: /etc/app.conf }\n",
        )
        .args(["plan", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x templates/app.conf.j2:2:1: template for w1: 'registry_hots' is undefined
   ,-[templates/app.conf.j2:2:1]
 1 | domain={{ domain }}
 2 | registry={{ registry_hots }}
   : ^^^^^^^^^^^^^^|^^^^^^^^^^^^^
   :               `-- here
   `----
  help: define it in inventory/env.yaml, the inventory, the playbook's vars or with -e name=value (or guard it with `is defined`)

"#)
        .run();
}

#[test]
fn needs_cycle_names_the_cycle() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: a\n    hosts: masters\n    needs: [b]\n    steps: [{debug: {msg: x}}]\n  - name: b\n    hosts: workers\n    steps: [{debug: {msg: y}}]\n",
        )
        .args(["plan", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:2:1: plays depend on each other in a cycle: a → needs → b → needs → a
   ,-[playbooks/site.yaml:2:1]
 1 | plays:
 2 |   - name: a
   : ^^^^^|^^^^^
   :      `-- part of the cycle
 3 |     hosts: masters
   `----
  help: remove one of these `needs` (a play without `needs` follows the previous play)

"#)
        .run();
}

#[test]
fn unknown_step_field() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        regster: out\n",
        )
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:7:9: unknown field `regster`, expected one of name, when, register, notify, tags, read_only, run_once, delegate_to, retries, delay, until, changed_when, failed_when, ignore_errors, ignore_unreachable, timeout, throttle, check_mode, diff, no_log, ansible, become, become_user, become_method, vars, loop, loop_control, creates, removes, unless, chdir, executable, expand_argument_vars, strip_empty_ends, stdin, environment, import_steps, command, shell, copy, template, file, line, block, replace, service, package, slurp, stat, find, getent, fetch, wait_for, reboot, authorized_key, user, group, kube, helm, image_check, assert, debug, set_fact, setup, ping, tempfile, pause, sysctl, include_vars, modprobe, hostname, script, wait_for_connection, pam_limits, unarchive, get_url, mount, python_module
   ,-[playbooks/site.yaml:7:9]
 6 |         command: [true]
 7 |         regster: out
   :         ^^^^^^|^^^^^
   :               `-- here
   `----
  help: check the spelling against the playbook format in README.md

"#)
        .run();
}

#[test]
fn step_with_two_actions() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        shell: echo\n",
        )
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:5:9: this step has 2 actions: command, shell
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - name: s
   :         ^^^|^^^
   :            `-- one action per step
 6 |         command: [true]
   `----
  help: a step has exactly one of: command, shell, copy, template, file, line, block, replace, service, package, slurp, stat, find, getent, fetch, wait_for, reboot, authorized_key, user, group, kube, helm, image_check, assert, debug, set_fact, setup, ping, tempfile, pause, sysctl, include_vars, modprobe, hostname, script, wait_for_connection, pam_limits, unarchive, get_url, mount, python_module

"#)
        .run();
}

#[test]
fn yaml_syntax_error_in_env() {
    let s = site();
    s.write("env.yaml", "domain: example\nregistry:\n\tport: 8443\n");
    s.test()
        .args(["plan", "x"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x env.yaml:3:2: tabs disallowed within this context (block indentation)
   ,-[env.yaml:3:2]
 2 | registry:
 3 |     port: 8443
   :     ^^^^^|^^^^
   :          `-- here
   `----
  help: YAML does not allow tabs for indentation: use spaces

"#,
        )
        .run();
    s.write("env.yaml", "domain: example\ndomain: other\n");
    s.test()
        .args(["plan", "x"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x env.yaml:2:1: duplicate mapping key: domain, set DuplicateKeyPolicy in Options if acceptable
   ,-[env.yaml:2:1]
 1 | domain: example
 2 | domain: other
   : ^^^^^^|^^^^^^
   :       `-- here
   `----
  help: each key may appear once in a mapping: remove or rename one

"#,
        )
        .run();
}

#[test]
fn yes_is_not_a_boolean() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - service: { name: chronyd, enabled: yes }\n",
        )
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x playbooks/site.yaml:5:44: invalid boolean (strict mode expects true/false)
   ,-[playbooks/site.yaml:5:44]
 4 |     steps:
 5 |       - service: { name: chronyd, enabled: yes }
   :                                            ^^|^^
   :                                              `-- here
   `----
  help: write true or false (YAML 1.2: yes/no/on/off are strings)

"#,
        )
        .run();
}

#[test]
fn limit_that_matches_nothing() {
    test()
        .playbook("site", PLAY)
        .args(["plan", "site", "--limit", "wokers"])
        .status(1)
        .stdout("")
        .stderr(
            // As Ansible: the entry is ignored with a warning, then the empty limit stops the run.
            r#"warning: could not match supplied host pattern, ignoring: wokers (did you mean: workers?)
  x --limit 'wokers' matches no host in inventory.ini
  help: did you mean: workers?

"#,
        )
        .run();
}

#[test]
fn unknown_playbook_suggests_a_name() {
    test()
        .args(["plan", "rke2-instal"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x no playbook named 'rke2-instal'
  help: did you mean rke2-install, rke2-uninstall, rke2-post-install?

"#,
        )
        .run();
}

#[test]
fn notify_of_a_missing_handler() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n        notify: restart rke3\nhandlers:\n  - name: restart rke2\n    command: [true]\n",
        )
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:5:9: step 's' notifies 'restart rke3', which is not a handler
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - name: s
   :         ^^^|^^^
   :            `-- unknown handler
 6 |         command: [true]
   `----
  help: add it under `handlers:` or fix the name

"#)
        .run();
}

#[test]
fn extra_vars_without_value() {
    test()
        .playbook("site", PLAY)
        .args(["plan", "site", "-e", "flag"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x -e flag: expected key=value, got 'flag'
  help: use -e name=value, -e '{"name": value}' or -e @file.yaml

"#,
        )
        .run();
}

#[test]
fn modes_are_octal_quoted_or_not_and_anything_else_is_refused() {
    // Ansible's pitfall (an unquoted `mode: 644` is decimal 644) cannot happen: copctl reads the
    // mode's text as octal either way. What is not octal is refused at its line.
    let s = site();
    let pb = |mode: &str| {
        format!(
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - file: {{ path: /etc/x, state: directory, mode: {mode} }}\n"
        )
    };
    for ok in ["0755", "755", "\"0755\"", "'0o755'"] {
        s.write("playbooks/site.yaml", pb(ok));
        s.test().args(["validate", "site"]).run();
    }
    for (bad, message) in [
        (
            "0999",
            r#"  x playbooks/site.yaml:5:9: mode '0999' is not an octal mode; quote it in YAML: mode: "0644"
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - file: { path: /etc/x, state: directory, mode: 0999 }
   :         ^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                   `-- in this step
   `----
  help: write the mode as octal digits, e.g. mode: "0644" (symbolic modes like u=rw are not supported)

"#,
        ),
        (
            "u=rwx",
            r#"  x playbooks/site.yaml:5:9: mode 'u=rwx' is not an octal mode; quote it in YAML: mode: "0644"
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - file: { path: /etc/x, state: directory, mode: u=rwx }
   :         ^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                   `-- in this step
   `----
  help: write the mode as octal digits, e.g. mode: "0644" (symbolic modes like u=rw are not supported)

"#,
        ),
        (
            "75a",
            r#"  x playbooks/site.yaml:5:9: mode '75a' is not an octal mode; quote it in YAML: mode: "0644"
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - file: { path: /etc/x, state: directory, mode: 75a }
   :         ^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                  `-- in this step
   `----
  help: write the mode as octal digits, e.g. mode: "0644" (symbolic modes like u=rw are not supported)

"#,
        ),
    ] {
        s.write("playbooks/site.yaml", pb(bad));
        s.test().args(["validate", "site"]).status(1).stdout("").stderr(message).run();
    }
}

#[test]
fn a_host_in_two_groups_with_conflicting_vars_is_warned_about() {
    // A warning, not an error (Ansible accepts it).
    let s = site();
    s.write("inventory.ini", "[gpu]\nn1\n[workers]\nn1\nn2\n[gpu:vars]\nmtu=9000\n[workers:vars]\nmtu=1500\n")
        .write("playbooks/site.yaml", PLAY);
    s.test().args(["validate", "site"]).stderr(r#"warning: mtu differs between groups gpu (inventory.ini:1) and workers (inventory.ini:3), which are of equal depth and priority: workers wins for n1 (Ansible takes the later name); set ansible_group_priority, or set mtu on the host, to say which should win
"#).run();
    // Saying which should win silences it.
    s.write(
        "inventory.ini",
        "[gpu]\nn1\n[workers]\nn1\nn2\n[gpu:vars]\nmtu=9000\nansible_group_priority=2\n[workers:vars]\nmtu=1500\n",
    );
    s.test().args(["validate", "site"]).stderr("").run();
}

#[test]
fn a_ten_megabyte_env_yaml_loads_and_its_errors_keep_their_line() {
    let s = site();
    let mut env = String::from("domain: example\n");
    let mut n = 1;
    while env.len() < 10 << 20 {
        n += 1;
        env.push_str(&format!("setting_{n}: {{ name: value-{n}, list: [1, 2, 3], text: \"some words for {n}\" }}\n"));
    }
    s.write("env.yaml", &env).write("playbooks/site.yaml", PLAY);
    // Not timed (speed is the benchmarks' business); a loader quadratic in the file's size would
    // not finish this one.
    let ran = s.test().args(["validate", "site"]).run();
    // No playbook reads the settings: the first 20 are named, the rest counted in one line.
    let warnings: Vec<&str> = ran.stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 21, "{}", &ran.stderr[..ran.stderr.len().min(3000)]);
    assert_eq!(warnings[0], "warning: env.yaml:2: 'setting_2' is read by no playbook or template");
    assert_eq!(
        warnings[20],
        format!(
            "warning: env.yaml: {} more keys are read by no playbook or template (the first 20 are named above)",
            n - 21
        )
    );
    env.push_str("broken: [unclosed\n");
    s.write("env.yaml", &env);
    let (line, w, p) = (n + 1, (n + 1).to_string().len(), " ".repeat((n + 1).to_string().len() + 2));
    let setting = format!("setting_{n}: {{ name: value-{n}, list: [1, 2, 3], text: \"some words for {n}\" }}");
    s.test()
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(&format!(
            "  x env.yaml:{line}:9: unclosed bracket '['\n{p},-[env.yaml:{line}:9]\n {n:>w$} | {setting}\n \
             {line:>w$} | broken: [unclosed\n{p}:         ^^^^|^^^^\n{p}:             `-- here\n{p}`----\n\n"
        ))
        .run();
}

#[test]
fn a_step_list_that_is_not_there() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        command: [true]\n      - import_steps: steps/restart.yaml\n        when: x is defined\n",
        )
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:7:9: step list 'steps/restart.yaml' not found
   ,-[playbooks/site.yaml:7:9]
 6 |         command: [true]
 7 |       - import_steps: steps/restart.yaml
   :         ^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^
   :                         `-- imported here
 8 |         when: x is defined
   `----
  help: step lists are looked up in the site's playbooks/ directory, then the built-in ones

"#)
        .run();
}

#[test]
fn a_mistake_in_a_step_list_is_located_in_it() {
    test()
        .playbook("site", "plays:\n  - name: p\n    hosts: all\n    steps:\n      - import_steps: steps/s.yaml\n")
        .write("playbooks/steps/s.yaml", "# shared\n- name: a\n  command: [true]\n- name: b\n  shell: echo\n  regster: out\n")
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/steps/s.yaml:6:3: unknown field `regster`, expected one of name, when, register, notify, tags, read_only, run_once, delegate_to, retries, delay, until, changed_when, failed_when, ignore_errors, ignore_unreachable, timeout, throttle, check_mode, diff, no_log, ansible, become, become_user, become_method, vars, loop, loop_control, creates, removes, unless, chdir, executable, expand_argument_vars, strip_empty_ends, stdin, environment, import_steps, command, shell, copy, template, file, line, block, replace, service, package, slurp, stat, find, getent, fetch, wait_for, reboot, authorized_key, user, group, kube, helm, image_check, assert, debug, set_fact, setup, ping, tempfile, pause, sysctl, include_vars, modprobe, hostname, script, wait_for_connection, pam_limits, unarchive, get_url, mount, python_module
   ,-[playbooks/steps/s.yaml:6:3]
 5 |   shell: echo
 6 |   regster: out
   :   ^^^^^^|^^^^^
   :         `-- here
   `----
  help: check the spelling against the playbook format in README.md

"#)
        .run();
}

#[test]
fn an_import_takes_only_when() {
    test()
        .playbook(
            "site",
            "plays:\n  - name: p\n    hosts: all\n    steps:\n      - import_steps: steps/s.yaml\n        register: out\n",
        )
        .write("playbooks/steps/s.yaml", "- command: [true]\n")
        .args(["validate", "site"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/site.yaml:5:9: import_steps: steps/s.yaml takes no other field than `when`
   ,-[playbooks/site.yaml:5:9]
 4 |     steps:
 5 |       - import_steps: steps/s.yaml
   :         ^^^^^^^^^^^^^|^^^^^^^^^^^^
   :                      `-- in this import
 6 |         register: out
   `----
  help: set the other fields on the imported steps themselves

"#)
        .run();
}

#[test]
fn an_ntp_server_that_would_add_a_line_to_chrony_conf_is_refused() {
    Test::new()
        .inventory("[cluster]\nn1\n")
        .env("ntp_servers: [\"ntp.example.com\", \"10.0.0.1 iburst\\nserver evil\"]\n")
        .args(["validate", "system-setup"])
        .status(1)
        .stdout("")
        .stderr(r#"  x playbooks/system-setup.yaml:6:1: ntp_servers must be host names or addresses (letters, digits, . : % -): ["ntp.example.com", "10.0.0.1 iburst\nserver evil"]
   ,-[playbooks/system-setup.yaml:6:1]
 5 |   # chrony.conf has no quoting: a space, `#` or newline in a name would change what it says.
 6 |   - that: (ntp_servers | default([])) | map('string') | map('regex_replace', '^[A-Za-z0-9.:%-]+$', '') | reject('equalto', '') | list | length == 0
   : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                                                          `-- this requirement
 7 |     msg: "ntp_servers must be host names or addresses (letters, digits, . : % -): {{ ntp_servers | to_json }}"
   `----
  help: system-setup requires: (ntp_servers | default([])) | map('string') | map('regex_replace', '^[A-Za-z0-9.:%-]+$', '') | reject('equalto', '') | list | length == 0; fix the settings in env.yaml (or -e)

"#)
        .run();
}
