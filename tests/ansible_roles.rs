//! Ansible roles, task files and imported playbooks run by copctl against ansible-playbook
//! itself (ansible-core in the peers' venv, the oracle): tests/fixtures/ansible-roles/ (two
//! roles, one a meta dependency of the other, defaults overridden by the inventory, role vars and
//! parameters, a file, templates and handlers from the roles, import_tasks and include_tasks with
//! when and tags, import_role with tasks_from, import_playbook with vars and when) on fresh lab
//! hosts, run twice by each tool: the hosts' files and the per-host recap counts must be the
//! same; and `--tags` through them. Plus the refusals, whole messages pinned: a role not found, a
//! task file not found, a dynamic include, problems inside a role's task files reported at their
//! file:line with the playbook's, and a play of an imported playbook at its file.

mod common;

use std::collections::BTreeMap;

use common::*;

/// Where the fixture writes on the hosts: what is compared.
const TRACKED: &[&str] = &["/opt/app"];

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

fn site(n: usize) -> Site {
    ansible::site(n, "ansible-roles")
}

type Recap = BTreeMap<String, [u64; 5]>;

/// ansible-playbook's PLAY RECAP as host → [ok, changed, failed, skipped, ignored].
fn ansible_run(site: &Site, args: &[&str]) -> Recap {
    ansible::ansible_recap(site, args, 0, KEYS)
}

/// copctl's recap in the same terms.
fn copctl_run(site: &Site, args: &[&str]) -> Recap {
    ansible::copctl_recap(site, args, 0, KEYS)
}

fn state(site: &Site, n: usize) -> BTreeMap<String, String> {
    ansible::files(site, n, TRACKED)
}

fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> String {
    ansible::files_diff(a, b)
}

/// The same playbook, first run and re-run, by both tools on their own sites: the same files
/// and recap counts.
fn same_as_ansible(theirs: &Site, ours: &Site, playbook: &str) {
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(theirs, &[playbook]), copctl_run(ours, &[playbook]));
        eprintln!("{playbook} {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(theirs, 2), state(ours, 2));
        assert_eq!(diff(&sa, &sb), "", "{playbook} {run}: the hosts' files differ");
        assert_eq!(a, b, "{playbook} {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

#[test]
fn roles_task_files_and_imported_playbooks_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, &["site.yml"]), copctl_run(&ours, &["site.yml"]));
        eprintln!("site.yml {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert!(sb.contains_key("lab-1:/opt/app/web/web.conf"), "the web role ran: {sb:?}");
        assert_eq!(diff(&sa, &sb), "", "site.yml {run}: the hosts' files differ");
        assert_eq!(a, b, "site.yml {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

/// A role that picks its variables by OS as public roles do (include_vars of a templated name,
/// the first_found lookup, with_first_found over variables files and templates, with_nested):
/// the same files and recap as Ansible's.
#[test]
fn os_specific_variables_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, &["tuning.yml"]), copctl_run(&ours, &["tuning.yml"]));
        eprintln!("tuning.yml {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert!(sb.contains_key("lab-2:/opt/app/tuning/limits.conf"), "the tuning role ran: {sb:?}");
        assert!(sb.contains_key("lab-1:/opt/app/tuning/rendered"), "the template lookup rendered: {sb:?}");
        assert_eq!(diff(&sa, &sb), "", "tuning.yml {run}: the hosts' files differ");
        assert_eq!(a, b, "tuning.yml {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

/// include_tasks of a file named from a fact (in a role, with a file for another OS that copctl
/// cannot run), the host's name, a registered result, under a false `when`, and a name that
/// gives no file on one host: the same files and recap as Ansible's.
#[test]
fn files_included_by_a_name_each_host_renders_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    for run in ["first run", "re-run"] {
        // lab-2 fails at its missing file: both exit 2.
        let a = ansible::ansible_recap(&theirs, &["picked.yml"], 2, KEYS);
        let b = ansible::copctl_recap(&ours, &["picked.yml"], 2, KEYS);
        eprintln!("picked.yml {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert!(sb.contains_key("lab-2:/opt/app/picked/host.txt"), "the host's file was included: {sb:?}");
        assert!(sb.contains_key("lab-1:/opt/app/picked/end.txt"), "lab-1 ran to the end: {sb:?}");
        assert!(!sb.contains_key("lab-2:/opt/app/picked/end.txt"), "lab-2 stopped at its missing file: {sb:?}");
        assert_eq!(diff(&sa, &sb), "", "picked.yml {run}: the hosts' files differ");
        assert_eq!(a, b, "picked.yml {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

/// include_tasks' `apply` (keywords for the included tasks, under args too), with and without
/// `--tags`: the same files and recap as Ansible's.
#[test]
fn applied_keywords_of_an_include_end_as_ansible_leaves_them() {
    for args in [&["applied.yml", "--tags", "applied"][..], &["applied.yml", "--tags", "second"], &["applied.yml"]] {
        let (theirs, ours) = (site(2), site(2));
        let (a, b) = (ansible_run(&theirs, args), copctl_run(&ours, args));
        eprintln!("{args:?}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert_eq!(diff(&sa, &sb), "", "{args:?}: the hosts' files differ");
        assert_eq!(a, b, "{args:?}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

/// include_tasks over a loop from the inventory's group_vars and host_vars (a different number
/// of items per host, none on one): the same files and recap as Ansible's.
#[test]
fn includes_over_the_inventorys_lists_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, &["byhost.yml"]), copctl_run(&ours, &["byhost.yml"]));
        eprintln!("byhost.yml {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert!(sb.contains_key("lab-1:/opt/app/accounts/c"), "lab-1's third account: {sb:?}");
        assert_eq!(diff(&sa, &sb), "", "byhost.yml {run}: the hosts' files differ");
        assert_eq!(a, b, "byhost.yml {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

/// `--tags` through roles (a role's tags reach its tasks and its dependencies'), imports (their
/// tags reach the imported tasks) and includes (their tags are their own).
#[test]
fn tags_select_in_roles_and_task_files_what_ansible_selects() {
    let (theirs, ours) = (site(1), site(1));
    let args = ["site.yml", "--tags", "web,extra"];
    let (a, b) = (ansible_run(&theirs, &args), copctl_run(&ours, &args));
    eprintln!("site.yml --tags web,extra: ansible {a:?} copctl {b:?}");
    let (sa, sb) = (state(&theirs, 1), state(&ours, 1));
    assert_eq!(diff(&sa, &sb), "", "site.yml --tags: the hosts' files differ");
    assert!(sb.contains_key("lab-1:/opt/app/extra.txt") && !sb.contains_key("lab-1:/opt/app/lab1.txt"), "{sb:?}");
    assert_eq!(a, b, "site.yml --tags: recap counts differ");
}

/// `copctl validate site.yml` in a site with `files` (ansible.cfg's roles_path: shared-roles/).
fn refused(files: &[(&str, &str)], stderr: &str) {
    let mut t = Test::new()
        .inventory("[web]\nw1\n")
        .write("ansible.cfg", "[defaults]\nroles_path = shared-roles\n")
        .write("shared-roles/base/tasks/main.yml", "- ping:\n");
    for (path, text) in files {
        t = t.write(path, text);
    }
    t.args(["validate", "site.yml"]).status(1).stdout("").stderr_normalized(stderr).run();
}

#[test]
fn a_missing_role_names_where_it_was_looked_for_and_the_closest_roles() {
    refused(
        &[("site.yml", "- hosts: web\n  roles:\n    - comon\n"), ("roles/common/tasks/main.yml", "- ping:\n")],
        r#"  x site.yml:3:7: role 'comon' not found
   ,-[site.yml:3:7]
 2 |   roles:
 3 |     - comon
   :       ^^|^^
   :         `-- this role
   `----
  help: looked in [SITE]/roles, [SITE]/shared-roles, [SITE]; did you mean common?

"#,
    );
}

#[test]
fn a_missing_task_file_is_refused_at_the_include() {
    refused(
        &[("site.yml", "- hosts: web\n  tasks:\n    - import_tasks: tasks/nope.yml\n")],
        r#"  x site.yml:3:21: import_tasks: tasks/nope.yml not found
   ,-[site.yml:3:21]
 2 |   tasks:
 3 |     - import_tasks: tasks/nope.yml
   :                     ^^^^^^^|^^^^^^
   :                            `-- this file
   `----
  help: looked for [SITE]/tasks/nope.yml

"#,
    );
}

#[test]
fn an_include_with_a_templated_loop_is_refused() {
    refused(
        &[
            ("site.yml", "- hosts: web\n  tasks:\n    - include_tasks: more.yml\n      loop: \"{{ things }}\"\n"),
            ("more.yml", "- ping:\n"),
        ],
        r#"  x site.yml:4:7: include_tasks with a templated loop (a dynamic include) is not supported
   ,-[site.yml:4:7]
 3 |     - include_tasks: more.yml
 4 |       loop: "{{ things }}"
   :       ^^|^
   :         `-- here
   `----
  help: copctl reads every task when the playbook is loaded: loop over a list written there or in the play's vars, or put the loop on the included tasks

"#,
    );
}

/// Templates copctl renders when the playbook is loaded (a role's name, an include's loop from
/// the play's vars), the old `action:` form, `check_mode` on an import, a skipped include (its
/// tasks unseen, its loop never read) and fail's k=v arguments: the recap Ansible's.
#[test]
fn includes_from_the_plays_vars_and_skipped_includes_count_as_ansible_counts_them() {
    let (theirs, ours) = (site(1), site(1));
    for s in [&theirs, &ours] {
        s.write("roles/kn1/tasks/main.yml", "- debug: msg=\"in {{ role_name }} {{ item | default('') }}\"\n");
        s.write("roles/kn2/tasks/main.yml", "- debug: msg=\"in {{ role_name }}\"\n");
        s.write("kn.yml", "- command: \"true\"\n");
        s.write(
            "known.yml",
            r#"- hosts: all
  gather_facts: false
  vars:
    which: kn1
    names: [kn1, kn2]
    more: [a, b]
  tasks:
    - include_role:
        name: "{{ which }}"
    - include_role:
        name: "{{ item }}"
      loop: "{{ names }}"
    - include_tasks: kn.yml
      loop: "{{ more }}"
    - include_tasks: kn.yml
      when: false
    - name: the old action form
      action: debug msg="{{ which }}"
    - name: a local_action, on the controller
      local_action: command echo local
      register: local
      changed_when: false
    - assert:
        that: local.stdout == 'local'
    - import_tasks: kn.yml
      check_mode: true
    - include_tasks: nowhere.yml
      loop: "{{ not_known_yet }}"
      when: false
      register: skipped_include
    - assert:
        that:
          - skipped_include is skipped
          - skipped_include.skip_reason is defined
          - skipped_include.results is undefined
    - block:
        - fail: msg="{{ which }} failed"
      rescue:
        - assert:
            that:
              - ansible_failed_result.msg == 'kn1 failed'
              - ansible_failed_task.action == 'fail'
"#,
        );
    }
    let (a, b) = (ansible_run(&theirs, &["known.yml"]), copctl_run(&ours, &["known.yml"]));
    assert_eq!(a, b, "known.yml: recap counts [ok, changed, failed, skipped, ignored] differ");
    // `-e` would give the role's name another value than the one read when the playbook loaded.
    ours.test()
        .args(["validate", "known.yml", "-e", "which=kn2"])
        .status(1)
        .stdout("")
        .stderr_normalized(
            r#"  x known.yml:9:15: '{{ which }}' was rendered from the play's variables when the playbook was loaded, but -e which would change it
    ,-[known.yml:9:15]
  8 |     - include_role:
  9 |         name: "{{ which }}"
    :               ^^^^^^|^^^^^^
    :                     `-- here
 10 |     - include_role:
    `----
  help: copctl expands roles and task files when it loads the playbook: name them there

"#,
        )
        .run();
}

#[test]
fn problems_in_a_roles_files_are_reported_there_with_the_playbooks() {
    refused(
        &[
            ("site.yml", "- hosts: web\n  roles: [base, app]\n  tasks:\n    - shell: echo\n      regster: out\n"),
            ("roles/app/tasks/main.yml", "- name: app\n  shell: echo\n  regster: out\n- import_tasks: more.yml\n"),
            ("roles/app/tasks/more.yml", "- name: more\n  shell: echo\n  notify: nothere\n"),
        ],
        r#"  x site.yml: 3 problems: copctl cannot run this playbook as written

Error: 
  x roles/app/tasks/main.yml:3:3: unknown task keyword 'regster'
   ,-[roles/app/tasks/main.yml:3:3]
 2 |   shell: echo
 3 |   regster: out
   :   ^^^|^^^
   :      `-- here
 4 | - import_tasks: more.yml
   `----
  help: did you mean register?

Error: 
  x roles/app/tasks/more.yml:1:3: task 'more' notifies 'nothere', which is not a handler of this play
   ,-[roles/app/tasks/more.yml:1:3]
 1 | - name: more
   :   ^^^^^|^^^^
   :        `-- unknown handler
 2 |   shell: echo
   `----
  help: add it under the play's handlers: or fix the name

Error: 
  x site.yml:5:7: unknown task keyword 'regster'
   ,-[site.yml:5:7]
 4 |     - shell: echo
 5 |       regster: out
   :       ^^^|^^^
   :          `-- here
   `----
  help: did you mean register?

"#,
    );
}

#[test]
fn a_play_from_an_imported_playbook_is_reported_in_its_file() {
    Test::new()
        .inventory("[web]\nw1\n")
        .write("site.yml", "- import_playbook: more/other.yml\n")
        .write("more/other.yml", "# another playbook\n- hosts: wbe\n  tasks:\n    - ping:\n")
        .args(["plan", "site.yml"])
        .status(1)
        .stdout("")
        .stderr_normalized(
            r#"  x more/other.yml:2:1: play 'wbe': hosts 'wbe': 'wbe' is no group or host of inventory.ini
   ,-[more/other.yml:2:1]
 1 | # another playbook
 2 | - hosts: wbe
   : ^^^^^^|^^^^^
   :       `-- in this play
 3 |   tasks:
   `----
  help: groups in inventory.ini: all, ungrouped, web

"#,
        )
        .run();
}

/// Handlers notified by topic (`listen`, a named and an unnamed handler, one on two topics; a
/// handler notifying a later one),
/// `meta: flush_handlers` inside a role's task file, include_role's vars_from, defaults_from and
/// handlers_from, `strategy`, `playbook_dir` in an include's file name and a template, and
/// set_fact values that keep their expression's type (and a key `n`, text in PyYAML): the
/// same files and recap as ansible-playbook's, first run and re-run.
#[test]
fn handler_topics_a_flush_in_a_role_and_a_roles_other_files_end_as_ansible_leaves_them() {
    let (theirs, ours) = (ansible::site(2, "ansible-handlers"), ansible::site(2, "ansible-handlers"));
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, &["site.yml"]), copctl_run(&ours, &["site.yml"]));
        eprintln!("ansible-handlers {run}: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
        assert_eq!(diff(&sa, &sb), "", "ansible-handlers {run}: the hosts' files differ");
        assert_eq!(a, b, "ansible-handlers {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
    let events = ours.lab().path(0, "/opt/app/events.log");
    assert_eq!(
        std::fs::read_to_string(events).unwrap(),
        "reload lab-1\naudit\nsummary\n",
        "both listeners ran, once, then the handler the first notified"
    );
    let svc = ours.lab().path(0, "/opt/app/svc.conf");
    assert_eq!(std::fs::read_to_string(svc).unwrap(), "level=prod size=small\n");
    let facts = ours.lab().path(0, "/opt/app/facts.txt");
    assert_eq!(std::fs::read_to_string(facts).unwrap(), "True 3 1,2\n", "set_fact kept the number");
}

/// What handlers cannot do yet, each at its place: `listen` on a task, a handler notifying an
/// earlier handler (Ansible would run it in another round), a topic no handler listens to.
#[test]
fn handler_topics_that_cannot_run_as_ansible_runs_them_are_refused() {
    refused(
        &[(
            "site.yml",
            "- hosts: web\n  tasks:\n    - command: echo\n      listen: x\n      notify: restart\n  handlers:\n    - name: reload\n      command: echo\n      listen: restart\n    - name: restart\n      command: echo\n      notify: [reload, audit]\n",
        )],
        r#"  x site.yml: 3 problems: copctl cannot run this playbook as written

Error: 
  x site.yml:4:7: listen on a task: it is a handler's keyword
   ,-[site.yml:4:7]
 3 |     - command: echo
 4 |       listen: x
   :       ^^^|^^
   :          `-- here
 5 |       notify: restart
   `----
  help: put the task under the play's handlers:, or notify by name

Error: 
  x site.yml:10:7: handler 'restart' notifies 'reload', which is not after it: not supported yet
    ,-[site.yml:10:7]
  9 |       listen: restart
 10 |     - name: restart
    :       ^^^^^^|^^^^^^
    :             `-- notifies an earlier handler
 11 |       command: echo
    `----
  help: order the handlers so that a handler notifies only those after it

Error: 
  x site.yml:10:7: handler 'restart' notifies 'audit', which is not a handler of this play
    ,-[site.yml:10:7]
  9 |       listen: restart
 10 |     - name: restart
    :       ^^^^^^|^^^^^^
    :             `-- unknown handler
 11 |       command: echo
    `----
  help: add it under the play's handlers: or fix the name

"#,
    );
}

/// `--tags` and a dynamic include: its tasks run only where the include is selected too (an
/// untagged include_tasks brings in nothing under `--tags`, even a task tagged to match),
/// while an import's tasks answer by their own tags; as ansible-playbook selects them.
#[test]
fn tags_select_an_included_task_only_with_its_include() {
    let files = [
        (
            "tags.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - file: {path: /opt/app, state: directory, mode: '0755'}\n      tags: [always]\n    - include_tasks: inner.yml\n    - include_tasks: inner2.yml\n      tags: [outer]\n    - import_tasks: inner3.yml\n",
        ),
        ("inner.yml", "- copy: {dest: /opt/app/one, content: '1', mode: '0644'}\n  tags: [pick]\n"),
        (
            "inner2.yml",
            "- copy: {dest: /opt/app/two, content: '2', mode: '0644'}\n  tags: [pick]\n- copy: {dest: /opt/app/two-b, content: '2', mode: '0644'}\n",
        ),
        ("inner3.yml", "- copy: {dest: /opt/app/three, content: '3', mode: '0644'}\n  tags: [pick]\n"),
    ];
    let (theirs, ours) = (site(1), site(1));
    for s in [&theirs, &ours] {
        for (p, text) in files {
            s.write(p, text);
        }
    }
    let runs: [&[&str]; 2] =
        [&["tags.yml", "--tags", "pick,outer"], &["tags.yml", "--tags", "pick", "--skip-tags", "outer"]];
    for args in runs {
        let (a, b) = (ansible_run(&theirs, args), copctl_run(&ours, args));
        eprintln!("{args:?}: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(&theirs, 1), state(&ours, 1));
        assert_eq!(diff(&sa, &sb), "", "{args:?}: the hosts' files differ");
        assert_eq!(a, b, "{args:?}: recap counts differ");
    }
    let sb = state(&ours, 1);
    assert!(!sb.contains_key("lab-1:/opt/app/one") && sb.contains_key("lab-1:/opt/app/two"), "{sb:?}");
}

/// A handler that fails on one host of an `any_errors_fatal` play at its `meta: flush_handlers`
/// stops the play there for every host: the tasks after the flush neither run nor count, the
/// same recap as ansible-playbook's.
#[test]
fn a_fatal_handler_failure_at_a_flush_stops_the_rest_of_the_play_uncounted() {
    let text = "- hosts: all\n  gather_facts: false\n  any_errors_fatal: true\n  tasks:\n    - command: /bin/true\n      notify: check\n    - meta: flush_handlers\n    - copy: {dest: /tmp/after-flush, content: x, mode: '0644'}\n  handlers:\n    - name: check\n      command: \"/bin/{{ (inventory_hostname == 'lab-1') | ternary('true', 'false') }}\"\n";
    let (theirs, ours) = (site(2), site(2));
    theirs.write("fatal.yml", text);
    ours.write("fatal.yml", text);
    let a = ansible::ansible_recap(&theirs, &["fatal.yml"], 2, KEYS);
    let b = ansible::copctl_recap(&ours, &["fatal.yml"], 2, KEYS);
    assert_eq!(a, b, "recap counts [ok, changed, failed, skipped, ignored] differ");
    assert!(!ours.lab().path(0, "/tmp/after-flush").exists(), "the task after the flush ran");
}

/// Keywords given to a role where the play lists it (`environment`, `vars`, `when`,
/// `check_mode`) reach its handlers, and its dependencies' handlers, as they reach its tasks.
#[test]
fn a_roles_keywords_reach_its_handlers_as_ansible_has_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible(&theirs, &ours, "role-keywords.yml");
    let read = |p: &str| std::fs::read_to_string(ours.lab().path(0, &format!("/opt/app/notifier/{p}"))).unwrap();
    assert_eq!(read("task-listed"), "task env=from-the-role\n");
    assert_eq!(read("handler-listed"), "handler env=from-the-role check=False\n");
    assert_eq!(read("handler-dependency"), "handler env=from-the-parent check=False\n");
}
