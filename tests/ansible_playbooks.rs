//! Ansible playbooks run by copctl against ansible-playbook itself (ansible-core in the peers'
//! venv, the oracle): the same playbooks (tests/fixtures/ansible-playbooks/) on fresh lab hosts,
//! run twice by each tool; after each run the hosts' files (paths, kinds, modes, owners,
//! contents) and the per-host recap counts must be the same. Plus the plan-time refusals, whole
//! messages pinned: an unknown module, an unknown keyword, an unsupported argument, and
//! `validate` listing every problem of a file at once.

mod common;

use std::collections::BTreeMap;

use common::*;

/// Where the fixture playbooks write on the hosts: what is compared.
const TRACKED: &[&str] = &[
    "/opt/app",
    "/etc/motd-lab",
    "/etc/lab-facts",
    "/etc/lab-label",
    "/etc/lab-label.link",
    "/etc/sysctl.conf",
    "/etc/sysctl.d",
    "/var/lib/copctl-doubles/sysctl",
    "/etc/hostname",
    "/etc/security/limits.conf",
    "/etc/fstab",
];

const KEYS: [&str; 5] = ["ok", "changed", "failed", "skipped", "ignored"];

fn site(n: usize) -> Site {
    ansible::site(n, "ansible-playbooks")
}

type Recap = BTreeMap<String, [u64; 5]>;

/// ansible-playbook's PLAY RECAP as host → [ok, changed, failed, skipped, ignored] (ok counts
/// changed tasks too, as Ansible's does).
fn ansible_run(site: &Site, playbook: &str) -> Recap {
    ansible_run_with(site, &[playbook])
}

/// ansible-playbook with more arguments (`--tags`).
fn ansible_run_with(site: &Site, args: &[&str]) -> Recap {
    ansible::ansible_recap(site, args, 0, KEYS)
}

/// copctl's recap in the same terms.
fn copctl_run(site: &Site, playbook: &str) -> Recap {
    copctl_run_with(site, &[playbook])
}

fn copctl_run_with(site: &Site, args: &[&str]) -> Recap {
    ansible::copctl_recap(site, args, 0, KEYS)
}

/// Every tracked path of every host: kind, mode, owner, group and content (or link target).
fn state(site: &Site, n: usize) -> BTreeMap<String, String> {
    ansible::files(site, n, TRACKED)
}

fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> String {
    ansible::files_diff(a, b)
}

/// The permission bits of `path` on host `i` of the site.
fn mode_on(site: &Site, i: usize, path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(site.lab().path(i, path)).unwrap().permissions().mode() & 0o7777
}

/// The same playbook, first run and re-run, by both tools on their own fresh hosts.
fn same_as_ansible(playbook: &str) {
    same_as_ansible_on(&site(2), &site(2), playbook);
}

/// The same on sites already made (with test doubles installed, say).
fn same_as_ansible_on(theirs: &Site, ours: &Site, playbook: &str) {
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(theirs, playbook), copctl_run(ours, playbook));
        eprintln!("{playbook} {run}: recap [ok, changed, failed, skipped, ignored]: ansible {a:?} copctl {b:?}");
        let (sa, sb) = (state(theirs, 2), state(ours, 2));
        assert!(!sa.is_empty(), "{playbook}: nothing tracked was written");
        assert_eq!(diff(&sa, &sb), "", "{playbook} {run}: the hosts' files differ");
        assert_eq!(a, b, "{playbook} {run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
}

#[test]
fn node_setup_ends_as_ansible_leaves_it() {
    same_as_ansible("node-setup.yml");
}

/// copy with remote_src, into directories ending in '/', and a missing source.
/// A role's template including and importing the role's other templates (where the playbook
/// has a file of the same name), a template file an earlier task wrote on the bastion named by
/// a variable, and a template failing in a block with a rescue.
/// A playbook in a directory of its own naming the site's templates/, files/ and vars/ with
/// `..` (`template: {src: ../templates/x.j2}`), from the play and from an imported task file.
#[test]
fn sources_named_up_from_the_playbooks_directory_end_as_ansible_leaves_them() {
    same_as_ansible("paths/site.yml");
}

#[test]
fn templates_built_of_others_and_written_during_the_run_end_as_ansible_leaves_them() {
    same_as_ansible("templates-included.yml");
}

/// ansible.cfg's `ansible_managed` in a template's `ansible_managed` (Python's format of
/// `{file}`, `{host}`, `{uid}`, strftime at the template's time), a template whose name is a
/// template found in the playbook's templates/, a fetched file read back on the bastion by the
/// file lookup (absent when planned), and an undefined variable in an included template failing
/// its task in Jinja2's words.
#[test]
fn ansible_managed_and_files_made_on_the_bastion_end_as_ansible_leaves_them() {
    let managed = "ansible_managed = Managed by {uid} on {host}: {file} (%Y-%m-%d %H:%M)\n";
    let (theirs, ours) = (site(2), site(2));
    for s in [&theirs, &ours] {
        s.edit("ansible.cfg", |c| c.replacen("[defaults]\n", &format!("[defaults]\n{managed}"), 1));
    }
    same_as_ansible_on(&theirs, &ours, "templates-managed.yml");
    let conf = std::fs::read_to_string(ours.lab().path(0, "/opt/app/managed/node.conf")).unwrap();
    assert!(conf.starts_with("# Managed by root on "), "{conf}");
    assert!(conf.contains(": kinds/node.conf.j2 (20"), "{conf}");
}

/// A site's own Python plugins: filters beside the playbook (importing `ansible.errors`), a
/// test in a role, a lookup reading the task's variables and its keyword arguments, a filter
/// raising its error in a task that ignores it.
#[test]
fn a_sites_own_python_plugins_run_as_ansible_runs_them() {
    same_as_ansible("plugins/site.yml");
}

/// A site's own modules (`library/` beside the playbook and in a role): arguments as a mapping
/// and as `k=v` words, a registered result with its `invocation`, check mode, a failure a task
/// ignores.
#[test]
fn a_sites_own_modules_run_as_ansible_runs_them() {
    same_as_ansible("modules/site.yml");
}

/// The command and shell modules' results: chdir, globbed and relative guards, check mode,
/// `cmd`, and `skipped` only on a skipped result.
#[test]
fn command_results_end_as_ansible_leaves_them() {
    same_as_ansible("commands.yml");
}

/// Results are data (a host's output holding template text is never rendered: its lookup does
/// not run on the bastion), and conditionals are judged as ansible-core 2.19 judges them: kept
/// in a variable, built of templates (untrusted), wrapped with a value (deprecated), a lookup
/// no plugin can be failing when its task runs, a lookup's arguments and a conditional's
/// constants written as templates rendered.
#[test]
fn results_stay_data_and_conditionals_are_judged_as_ansible_judges_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "conditionals.yml");
    let report = std::fs::read_to_string(ours.lab().path(0, "/opt/app/cond/report")).unwrap();
    assert_eq!(
        report,
        "judged: True False\nwrapped: 1 True\nlooped: [False, True] False\nbuilt: True True\nmade: True True True True\n\
         nameless: True True True\n"
    );
    assert_eq!(
        std::fs::read_to_string(ours.lab().path(1, "/opt/app/cond/output")).unwrap(),
        "{{ lookup('pipe', 'touch rendered-a-result') }}\n"
    );
    assert_eq!(
        std::fs::read_to_string(ours.lab().path(1, "/opt/app/cond/lines")).unwrap(),
        "{{ lookup('pipe', 'touch rendered-a-result') }}\n"
    );
    assert!(!ours.path("rendered-a-result").exists(), "a host's output was rendered on the bastion");
    let terms = std::fs::read_to_string(ours.lab().path(1, "/opt/app/cond/terms")).unwrap();
    assert_eq!(terms, "lab-2 True\n");
    assert!(ours.lab().path(0, "/opt/app/cond/first-only").exists());
    assert!(!ours.lab().path(1, "/opt/app/cond/first-only").exists());
}

#[test]
fn copies_on_the_host_and_into_directories_end_as_ansible_leaves_them() {
    same_as_ansible("copies.yml");
}

/// A result and a fact one host sets, read by the others through hostvars later in the play.
#[test]
fn a_result_read_through_hostvars_later_in_the_play_ends_as_ansible_leaves_it() {
    same_as_ansible("tokens.yml");
}

/// A play on the implicit localhost (the bastion), whose result the lab hosts read.
#[test]
fn a_play_on_the_implicit_localhost_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "localhost.yml");
    let made = |s: &Site| std::fs::read_to_string(s.path("made-on-bastion")).unwrap();
    assert_eq!(made(&ours), made(&theirs));
    assert_eq!(made(&ours), "from the bastion [] localhost False\n");
}

/// A play's vault-encrypted vars_files and include_vars files, named literally and by a template
/// (ansible-vault's own files, the password from a file): the same files and recap as Ansible's,
/// and no secret in any output of copctl's.
#[test]
fn vault_encrypted_vars_files_end_as_ansible_leaves_them_and_stay_secret() {
    let (theirs, ours) = (site(2), site(2));
    for s in [&theirs, &ours] {
        s.write("vault-pw", "s3cret-pw\n");
        s.write("vault.yml", "db_password: Tr0ub4dor-secret\nregion: north\n");
        // include_vars of encrypted files: one named literally, one by a template.
        s.write("vars/api.yml", "api_token: Sw0rdfish-token\n");
        s.write("vars/zone-north.yml", "site_key: C0rrect-horse-north\n");
        s.write("vars/zone-south.yml", "site_key: C0rrect-horse-south\n");
        // A file the template can name but no host picks may read what no host has.
        s.write("vars/zone-west.yml", "site_key: \"{{ west_only_key }}\"\n");
        let out = ansible_cmd("ansible-vault")
            .args(["encrypt", "--vault-password-file", "vault-pw"])
            .args(["vault.yml", "vars/api.yml", "vars/zone-north.yml", "vars/zone-south.yml"])
            .current_dir(s.dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "ansible-vault: {}", stderr(&out));
        s.write(
            "vaulted.yml",
            "- hosts: lab\n  gather_facts: false\n  vars_files: [vault.yml]\n  tasks:\n    - file: path=/opt/app state=directory mode=0755\n    - copy: dest=/opt/app/db.conf content=\"password={{ db_password }} region={{ region }}\\n\" mode=0600\n    - debug: msg=\"{{ db_password }}\"\n    - command: echo {{ db_password }}\n      changed_when: false\n    - include_vars: api.yml\n    - include_vars: \"zone-{{ region }}.yml\"\n    - copy: dest=/opt/app/api.conf content=\"token={{ api_token }} key={{ site_key }}\\n\" mode=0600\n    - debug: var=api_token\n    - debug: msg=\"{{ site_key }}\"\n",
        );
    }
    let args = ["vaulted.yml", "--vault-password-file", "vault-pw"];
    let (a, b) = (ansible_run_with(&theirs, &args), copctl_run_with(&ours, &args));
    assert_eq!(a, b, "vaulted.yml: recap counts differ");
    let (sa, sb) = (state(&theirs, 2), state(&ours, 2));
    assert_eq!(diff(&sa, &sb), "", "vaulted.yml: the hosts' files differ");
    assert_eq!(sb["lab-1:/opt/app/db.conf"], "file 600 0:0\npassword=Tr0ub4dor-secret region=north\n");
    assert_eq!(sb["lab-2:/opt/app/api.conf"], "file 600 0:0\ntoken=Sw0rdfish-token key=C0rrect-horse-north\n");
    let human = ours.test().args(["run", "vaulted.yml", "--vault-password-file", "vault-pw", "-vv"]).run();
    let json = ours.run_json(&args, 0);
    for (what, text) in [("terminal", &human.stdout), ("terminal's stderr", &human.stderr), ("JSON", &json.stdout)] {
        for secret in ["Tr0ub4dor", "Sw0rdfish", "C0rrect-horse"] {
            assert!(!text.contains(secret), "{what} shows the secret {secret}:\n{text}");
        }
    }
}

#[test]
fn facts_are_what_ansible_gathers() {
    same_as_ansible("facts.yml");
}

#[test]
fn play_and_task_structure_ends_as_ansible_leaves_it() {
    same_as_ansible("structure.yml");
}

#[test]
fn stat_slurp_replace_and_raw_end_as_ansible_leaves_them() {
    same_as_ansible("inspect.yml");
}

/// ansible.posix.sysctl, community.general.pam_limits and hostname: the files as the modules
/// rewrite them, and what the kernel (the sysctl and hostnamectl doubles) was given, first run
/// and re-run.
#[test]
fn kernel_parameters_and_the_name_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    for s in [&theirs, &ours] {
        s.lab().install_doubles(&["sysctl", "hostnamectl"]);
    }
    same_as_ansible_on(&theirs, &ours, "kernel.yml");
    let calls = ours.lab().double_calls(0);
    assert!(calls.contains(&"sysctl -w vm.max_map_count=262144".to_string()), "sysctl_set: {calls:?}");
}

/// community.general.modprobe, against the module's own code rather than a run of it: the
/// kernel here has no module support (no /proc/modules), where Ansible's module fails before it
/// does anything, so the expected files are what its source writes (the doubled newlines of a
/// file it comments a line out in included). The modprobe and lsmod doubles play the kernel;
/// modules.builtin is there, empty. A re-run changes nothing.
#[test]
fn kernel_modules_load_and_persist_as_the_module_leaves_them() {
    let site = site(1);
    site.lab().install_doubles(&["modprobe", "lsmod"]);
    site.lab().sh(0, "mkdir -p /lib/modules/$(uname -r) && : > /lib/modules/$(uname -r)/modules.builtin");
    assert_eq!(copctl_run(&site, "modprobe.yml"), Recap::from([("lab-1".into(), [7, 7, 0, 0, 0])]));
    let file = |p: &str| std::fs::read_to_string(site.lab().path(0, p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert_eq!(file("/etc/modules-load.d/br_netfilter.conf"), "br_netfilter\n");
    assert_eq!(file("/etc/modules-load.d/loop.conf"), "loop\n");
    assert_eq!(file("/etc/modprobe.d/loop.conf"), "options loop max_loop=16\n");
    assert_eq!(file("/etc/modprobe.d/site.conf"), "# site options\n\n#options loop max_loop=8\n\noptions snd foo=1\n");
    assert_eq!(file("/etc/modules-load.d/legacy.conf"), "#old_mod\n\nother_mod # kept\n");
    assert!(!site.lab().path(0, "/etc/modules-load.d/overlay.conf").exists(), "overlay is not persistent");
    let loads: Vec<String> = site.lab().double_calls(0).into_iter().filter(|c| c.starts_with("modprobe")).collect();
    assert_eq!(loads, ["modprobe br_netfilter", "modprobe overlay", "modprobe loop max_loop=16"]);
    assert_eq!(copctl_run(&site, "modprobe.yml"), Recap::from([("lab-1".into(), [7, 0, 0, 0, 0])]), "re-run");
    assert_eq!(site.lab().double_calls(0).iter().filter(|c| c.starts_with("modprobe")).count(), 3);
}

/// unarchive: the same tree, modes and owners as Ansible's after each run, from an archive the
/// test makes on the bastion (a directory, an executable, a config file, a symbolic link).
#[test]
fn archives_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    let stage = tempfile::tempdir().unwrap();
    let r = stage.path().join("release");
    std::fs::create_dir_all(r.join("bin")).unwrap();
    std::fs::create_dir_all(r.join("conf")).unwrap();
    std::fs::write(r.join("bin/run.sh"), "#!/bin/sh\necho run\n").unwrap();
    std::fs::write(r.join("conf/app.conf"), "port = 8080\n").unwrap();
    std::os::unix::fs::symlink("bin", r.join("current")).unwrap();
    let sh =
        |cmd: &str| assert!(std::process::Command::new("sh").args(["-c", cmd]).status().unwrap().success(), "{cmd}");
    sh(&format!("chmod 0755 {0}/bin/run.sh && chmod 0640 {0}/conf/app.conf", r.display()));
    for s in [&theirs, &ours] {
        std::fs::create_dir_all(s.path("files")).unwrap();
        sh(&format!(
            "tar -czf {} -C {} --mtime=2026-01-01 --owner=0 --group=0 release",
            s.path("files/release.tar.gz").display(),
            stage.path().display()
        ));
    }
    same_as_ansible_on(&theirs, &ours, "archives.yml");
}

/// get_url from the node's own mirror (file URLs): the same files, modes and recap as Ansible's,
/// a checksum sparing the download on the re-run, failures where Ansible fails.
#[test]
fn downloads_end_as_ansible_leaves_them() {
    same_as_ansible("downloads.yml");
}

/// get_url over HTTP from a mirror on the bastion (Python's http.server, which answers
/// If-Modified-Since with 304): the same files and recap as Ansible's, first run and re-run.
#[test]
fn http_downloads_end_as_ansible_leaves_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool-2.0.bin"), "tool binary 2.0\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = std::process::Command::new("python3")
        .args(["-m", "http.server", "--bind", "127.0.0.1", &port.to_string(), "--directory"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "the mirror did not start");
    let mirror = format!("mirror=http://127.0.0.1:{port}");
    let args = ["downloads-http.yml", "-e", mirror.as_str()];
    let (theirs, ours) = (site(2), site(2));
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run_with(&theirs, &args), copctl_run_with(&ours, &args));
        eprintln!("downloads-http.yml {run}: ansible {a:?} copctl {b:?}");
        assert_eq!(diff(&state(&theirs, 2), &state(&ours, 2)), "", "{run}: the hosts' files differ");
        assert_eq!(a, b, "{run}: recap counts [ok, changed, failed, skipped, ignored] differ");
    }
    server.kill().unwrap();
    server.wait().unwrap();
}

/// copy's and template's `validate` (a check that fails leaves the file as it was) and `backup`:
/// the same files, registered results and recap as Ansible's, first run and re-run.
#[test]
fn validated_and_backed_up_files_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "validated.yml");
    let file = std::fs::read_to_string(ours.lab().path(1, "/opt/app/validated")).unwrap();
    assert_eq!(
        file,
        "replaced changed=True backup=True\nsame changed=False backup=False\n\
         refused failed=True msg=failed to validate exit_status=1 stderr=checked\n\nrendered changed=False\n\
         backups=['640 old', '640 old']\n",
        "after the re-run"
    );
    let conf = std::fs::read_to_string(ours.lab().path(1, "/var/tmp/validated/conf")).unwrap();
    assert_eq!(conf, "key = lab-2\n", "the refused content never went in");
}

/// vars_files named by a fact and by a list of candidates, decided per host: the same files
/// and recap as Ansible's (their variables over the play's, under a task's own and set_fact,
/// not in hostvars).
#[test]
fn vars_files_decided_per_host_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "vars-files.yml");
    let file = |i: usize, p: &str| std::fs::read_to_string(ours.lab().path(i, p)).unwrap();
    assert_eq!(file(0, "/opt/app/vars-files"), "apt host first Debian via apt host-task unseen\n");
    assert_eq!(file(1, "/opt/app/vars-files"), "apt os other Debian via apt os-task unseen\n");
    assert_eq!(file(1, "/opt/app/vars-files-task"), "task\n");
    assert_eq!(file(1, "/opt/app/vars-files-fact"), "fact\n");
}

/// meta: end_host (on one host by a when, then on every host) and end_play: the same files
/// and recap as Ansible's; a handler notified before is not run, the next play is.
#[test]
fn a_play_ended_for_a_host_ends_as_ansible_ends_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "end-host.yml");
    let there = |i: usize, p: &str| ours.lab().path(i, p).exists();
    assert!(there(0, "/opt/app/two") && !there(1, "/opt/app/two"), "lab-2 ended before two");
    assert!(there(0, "/opt/app/three"), "handlers flushed after pre_tasks");
    assert!(!there(0, "/opt/app/never") && there(1, "/opt/app/second") && !there(1, "/opt/app/never-either"));
}

/// The pipe and inventory_hostnames lookups: the same files and recap as Ansible's.
#[test]
fn pipe_and_inventory_lookups_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "lookups.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/lookups")).unwrap();
    assert_eq!(
        file,
        "pipe=hello\n  world\ndir=app.yml\nhosts=['lab-1', 'lab-2']\nbut=['lab-2']\nnone=[]\nall=lab-1,lab-2\n\
         dict=[{'key': 'b', 'value': 2}, {'key': 'a', 'value': 1}]\nitems=[1, [2, 3], 4]\n\
         together=[[1, 'a'], [2, None]]\nnested=[['x', 1], ['x', 2], ['y', 1], ['y', 2]]\n"
    );
    let failed = std::fs::read_to_string(ours.lab().path(0, "/opt/app/lookups-failed")).unwrap();
    assert_eq!(failed, "matched=True\n");
    // Planning runs no command on the bastion.
    std::fs::write(
        ours.path("planned.yml"),
        "- hosts: lab\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ lookup('pipe', 'touch ran') }}\"\n",
    )
    .unwrap();
    let out = ours.command(["plan", "planned.yml"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!ours.path("ran").exists(), "copctl plan ran the pipe lookup's command");
}

/// A task tagged `never` that copctl cannot run: a warning, not a refusal; the task stays out
/// of a run as Ansible leaves it out, and fails, saying why, where `--tags` selects it.
#[test]
fn a_task_tagged_never_that_copctl_cannot_run_fails_only_where_selected() {
    let site = site(1);
    std::fs::write(
        site.path("never.yml"),
        "- hosts: lab\n  gather_facts: false\n  tasks:\n    - name: rotate keys\n      cron: name=rotate job=/bin/true\n      tags: [never, rotate]\n    - file: {path: /opt/app, state: directory}\n",
    )
    .unwrap();
    let warning = "warning: a task tagged never holds what copctl cannot run (it fails where --tags selects it): never.yml:5:7: module 'cron' is not supported yet\n";
    let out = site.command(["validate", "never.yml"]).output().unwrap();
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stderr).as_ref()), (Some(0), warning));
    assert_eq!(copctl_run_with(&site, &["never.yml"]), Recap::from([("lab-1".into(), [1, 1, 0, 0, 0])]));
    let out = site.command(["run", "never.yml", "--tags", "rotate"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("copctl cannot run this task: never.yml:5:7: module 'cron' is not supported yet"),
        "{stdout}"
    );
}

/// What is read only when the run reaches it (include_tasks over a loop and alone, a handler
/// that includes, include_role) and holds modules copctl lacks (a role's Windows branch): not a
/// refusal but a warning per problem, naming the include, its `when` and the problem at its
/// file:line; never reached on these hosts, the run ends as Ansible's.
#[test]
fn branches_read_only_when_reached_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    let out = ours.command(["validate", "dynamic/site.yml"]).output().unwrap();
    let tail = "read when the run reaches it, holds what copctl cannot run:";
    let fails = "(a host that reaches it fails there)";
    let warnings = format!(
        "warning: dynamic/roles/tmpdir/handlers/main.yml:6:3: handler 'clean up (windows)' (when: not (keep_tmp | default(false) | bool), when notified): include_tasks dynamic/roles/tmpdir/tasks/windows-cleanup.yml, {tail} dynamic/roles/tmpdir/tasks/windows-cleanup.yml:2:3: unknown module 'win_file' {fails}\n\
         warning: dynamic/site.yml:13:7: include_tasks dynamic/windows.yml (when: ansible_os_family == 'Windows'), {tail} dynamic/windows.yml:2:3: unknown module 'win_file' {fails}\n\
         warning: dynamic/site.yml:13:7: include_tasks dynamic/windows.yml (when: ansible_os_family == 'Windows'), {tail} dynamic/windows.yml:7:3: unknown module 'win_regedit' {fails}\n\
         warning: dynamic/site.yml:18:7: include_role 'winonly' (when: ansible_os_family == 'Windows'), {tail} dynamic/roles/winonly/tasks/main.yml:2:3: unknown module 'win_feature' {fails}\n\
         warning: dynamic/site.yml:23:7: include_tasks dynamic/windows.yml (when: ansible_system == 'Win32NT'), {tail} dynamic/windows.yml:2:3: unknown module 'win_file' {fails}\n\
         warning: dynamic/site.yml:23:7: include_tasks dynamic/windows.yml (when: ansible_system == 'Win32NT'), {tail} dynamic/windows.yml:7:3: unknown module 'win_regedit' {fails}\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.as_ref()), (Some(0), warnings.as_str()));
    // `plan` says the same, after the plan.
    let out = ours.command(["plan", "dynamic/site.yml"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with(&format!("{warnings}22 tasks; hosts that may change: lab-1, lab-2\n")), "{stdout}");
    same_as_ansible_on(&theirs, &ours, "dynamic/site.yml");
    assert!(!ours.lab().path(0, "/opt/app/dynamic-tmp").exists(), "the handler's include did not run");
    // What is imported is checked before the run, as Ansible checks it when it loads the play.
    ours.write("imported.yml", "- hosts: lab\n  tasks:\n    - import_tasks: dynamic/windows.yml\n      when: false\n");
    let out = ours.command(["validate", "imported.yml"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("x dynamic/windows.yml:2:3: unknown module 'win_file'"), "{stderr}");
}

/// Such an include where the run reaches it: the host fails there, with the warning's words,
/// before any of the file's tasks, and runs nothing after it. (ansible-playbook stops the whole
/// run there, naming the task (where it starts, a line above its module); copctl fails the hosts that reach it.)
#[test]
fn a_dynamic_include_copctl_cannot_run_fails_the_hosts_that_reach_it() {
    let (theirs, ours) = (site(2), site(2));
    let out = ansible_cmd("ansible-playbook")
        .args(["-i", "inventory.ini", "dynamic/reached.yml"])
        .current_dir(theirs.dir())
        .env("ANSIBLE_CONFIG", theirs.path("ansible.cfg"))
        .env("HOME", theirs.path("home"))
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("couldn't resolve module/action 'win_file'"), "{text}");
    assert!(text.contains(&format!("Origin: {}:1:3", theirs.path("dynamic/windows.yml").display())), "{text}");
    assert!(!theirs.lab().path(1, "/opt/app/after").exists());
    let message = "dynamic/reached.yml:6:7: include_tasks dynamic/windows.yml (when: inventory_hostname == 'lab-2'), read when the run reaches it, holds what copctl cannot run: dynamic/windows.yml:2:3: unknown module 'win_file' (a host that reaches it fails there) (and 1 more problems: see the warnings)";
    let ran = ours.run_json(&["dynamic/reached.yml"], 2);
    let failed: Vec<String> = ran
        .events()
        .iter()
        .filter(|e| e["event"] == "task_end" && e["status"] == "failed")
        .map(|e| format!("{} {}", e["host"], e["msg"]))
        .collect();
    assert_eq!(failed, [format!("\"lab-2\" {}", serde_json::Value::from(message))]);
    let recap: Recap = ran
        .recap()
        .iter()
        .map(|(h, r)| {
            (
                h.clone(),
                KEYS.map(|k| r[k].as_u64().unwrap() + if k == "ok" { r["changed"].as_u64().unwrap() } else { 0 }),
            )
        })
        .collect();
    assert_eq!(recap, Recap::from([("lab-1".into(), [1, 1, 0, 1, 0]), ("lab-2".into(), [0, 0, 1, 0, 0])]));
    assert!(ours.lab().path(0, "/opt/app/after").exists());
    assert!(!ours.lab().path(1, "/opt/app/after").exists());
}

/// setup's `gather_subset` (lists and comma texts, `!` negations, `all`, `min`, a fact's own
/// name choosing its collector, the collectors a chosen one needs), `filter` (fnmatch patterns,
/// with and without `ansible_`) and `gather_timeout`: the same facts of those copctl gathers as
/// Ansible's, merged into the host's as Ansible merges them; a bad subset or timeout fails the
/// task with Ansible's own words.
#[test]
fn setup_subsets_and_filters_end_as_ansible_leaves_them() {
    const SUBSETS: &str = "all_ipv4_addresses, all_ipv6_addresses, apparmor, architecture, caps, chroot, cmdline, date_time, default_ipv4, default_ipv6, devices, distribution, distribution_major_version, distribution_release, distribution_version, dns, effective_group_ids, effective_user_id, env, facter, fibre_channel_wwn, fips, hardware, interfaces, is_chroot, iscsi, kernel, kernel_version, loadavg, local, lsb, machine, machine_id, mounts, network, nvme, ohai, os_family, pkg_mgr, platform, processor, processor_cores, processor_count, python, python_version, real_user_id, selinux, service_mgr, ssh_host_key_dsa_public, ssh_host_key_ecdsa_public, ssh_host_key_ed25519_public, ssh_host_key_rsa_public, ssh_host_pub_keys, ssh_pub_keys, system, system_capabilities, system_capabilities_enforced, systemd, user, user_dir, user_gecos, user_gid, user_id, user_shell, user_uid, virtual, virtualization_role, virtualization_tech_guest, virtualization_tech_host, virtualization_type";
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "setup-subsets.yml");
    let got = std::fs::read_to_string(ours.lab().path(0, "/opt/app/setup-subsets")).unwrap();
    let line = |p: &str| got.lines().find(|l| l.starts_with(p)).unwrap_or_default().to_string();
    // `min` comes with any subset; a fact's name chooses its collector; service_mgr needs
    // distribution and platform; the module's result names the facts `ansible_*`.
    let min = "architecture,date_time,distribution,distribution_major_version,distribution_minor_version,distribution_release,distribution_version,dns,domain,effective_group_id,effective_user_id,env,fqdn,gather_subset,hostname,kernel,kernel_version,machine,machine_id,module_setup,nodename,os_family,pkg_mgr,python,python_version,real_group_id,real_user_id,selinux,selinux_python_present,service_mgr,system,user_dir,user_gecos,user_gid,user_id,user_shell,user_uid";
    assert_eq!(line("1:"), format!("1: {min} ['distribution'] False"));
    assert_eq!(line("3:"), "3: gather_subset,module_setup ['!all', '!min'] False");
    assert_eq!(
        line("7:"),
        "7: distribution,distribution_major_version,distribution_minor_version,distribution_release,distribution_version,gather_subset,module_setup,os_family ['!all', '!min', 'os_family', '!nothing_known'] False"
    );
    assert_eq!(
        line("8:"),
        "8: architecture,distribution,distribution_major_version,distribution_minor_version,distribution_release,distribution_version,domain,fqdn,gather_subset,hostname,kernel,kernel_version,machine,machine_id,module_setup,nodename,os_family,python_version,service_mgr,system ['!all', '!min', 'service_mgr'] False"
    );
    assert_eq!(line("12:"), "12: all_ipv4_addresses,default_ipv4,os_family - False");
    assert_eq!(
        line("bad1:"),
        format!("bad1: True Bad subset 'bogus' given to Ansible. gather_subset options allowed: all, {SUBSETS}")
    );
    assert_eq!(
        line("bad2:"),
        format!("bad2: True Bad subset ' network' given to Ansible. gather_subset options allowed: all, {SUBSETS}")
    );
    assert_eq!(
        line("bad3:"),
        "bad3: True argument 'gather_timeout' is of type str and we were unable to convert to int: \"'soon'\" cannot be converted to an int"
    );
}

/// A fact Ansible gathers and copctl does not: where a playbook guards it, a warning naming the
/// step (the run would quietly take the other branch); where it does not, an error saying so.
#[test]
fn facts_copctl_does_not_gather_are_named_before_the_run() {
    let site = site(1);
    std::fs::write(
        site.path("ungathered.yml"),
        "- hosts: lab\n  tasks:\n    - name: release\n      debug:\n        msg: \"{{ ansible_lsb.codename | default(ansible_distribution_release) }}\"\n    \
         - name: vendor\n      copy:\n        content: \"{{ ansible_facts['product_name'] | default('vm') }}\"\n        dest: /opt/app/vendor\n      \
         when: ansible_lsb is defined\n",
    )
    .unwrap();
    let out = site.command(["validate", "ungathered.yml"]).output().unwrap();
    let warning = "warning: ungathered.yml:3: step 'release' reads the fact 'ansible_lsb', which Ansible gathers and copctl does not: it is undefined there (`is defined` is false, `default` applies)\n\
                   warning: ungathered.yml:6: step 'vendor' reads the fact 'ansible_product_name', which Ansible gathers and copctl does not: it is undefined there (`is defined` is false, `default` applies)\n";
    // One warning per fact and file.
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stderr).as_ref()), (Some(0), warning));
    std::fs::write(
        site.path("unguarded.yml"),
        "- hosts: lab\n  tasks:\n    - debug: msg=\"{{ ansible_mounts[0].mount }}\"\n",
    )
    .unwrap();
    let out = site.command(["validate", "unguarded.yml"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("step 'debug' on lab-1: 'ansible_mounts' is undefined"), "{stderr}");
    assert!(
        stderr.contains("help: 'ansible_mounts' is a fact Ansible gathers and copctl does not (README: Facts)"),
        "{stderr}"
    );
}

/// module_defaults on a play, a block and a task: the same files, modes and recap as Ansible's.
#[test]
fn module_defaults_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "module-defaults.yml");
    let mode = |p: &str| mode_on(&ours, 0, p);
    assert_eq!(
        ["/opt/app", "/opt/app/own", "/opt/app/a", "/opt/app/b", "/opt/app/in-block", "/opt/app/c"].map(mode),
        [0o750, 0o700, 0o640, 0o600, 0o750, 0o604]
    );
}

/// copy's directory_mode, local_follow and follow: the same tree, modes and links as Ansible's.
#[test]
fn copied_directories_and_followed_links_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "copy-dirs.yml");
    let mode = |p: &str| mode_on(&ours, 0, p);
    assert_eq!(["/opt/app/tree", "/opt/app/tree/sub", "/opt/app/made"].map(mode), [0o700, 0o700, 0o750]);
    assert_eq!(std::fs::read_to_string(ours.lab().path(0, "/opt/app/real")).unwrap(), "through\n");
    assert!(ours.lab().path(0, "/opt/app/link").is_symlink(), "the link stays");
}

/// ignore_unreachable on a task and a block, with a host nothing listens for: the same files and
/// recap as Ansible's (ok and ignored where ignored, then unreachable), both exiting 4.
#[test]
fn an_unreachable_host_ignored_goes_on_as_in_ansible() {
    let (theirs, ours) = (site(2), site(2));
    for s in [&theirs, &ours] {
        s.edit("inventory.ini", |t| {
            format!("{t}\n[gone]\ngone ansible_host=127.0.0.1 ansible_port=1 ansible_user=root\n")
        });
    }
    let keys = ["ok", "changed", "failed", "skipped", "ignored", "unreachable"];
    let a = ansible::ansible_recap(&theirs, &["unreachable.yml"], 4, keys);
    let b = ansible::copctl_recap(&ours, &["unreachable.yml"], 4, keys);
    assert_eq!(diff(&state(&theirs, 2), &state(&ours, 2)), "", "the hosts' files differ");
    assert_eq!(a, b, "recap counts {keys:?} differ");
    assert_eq!(b["gone"], [2, 0, 0, 0, 2, 1]);
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/unreachable")).unwrap();
    assert_eq!(file, "unreachable=False\n");
}

/// The password lookup: each tool makes its password once (0600, its directory 0700, beside
/// the playbook) and every host reads that one: the same recap and, but for the random
/// password itself, the same files as Ansible's.
#[test]
fn passwords_made_by_the_lookup_are_made_once_as_in_ansible() {
    let (theirs, ours) = (site(2), site(2));
    let tracked = ["/opt/app/password"];
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, "password.yml"), copctl_run(&ours, "password.yml"));
        assert_eq!(a, b, "{run}: recap counts differ");
        let (sa, sb) = (ansible::files(&theirs, 2, &tracked), ansible::files(&ours, 2, &tracked));
        assert_eq!(diff(&sa, &sb), "", "{run}: the hosts' files differ");
    }
    let stored = std::fs::read_to_string(ours.path("credentials/db")).unwrap();
    for i in 0..2 {
        let on_host = std::fs::read_to_string(ours.lab().path(i, "/opt/app/password-value")).unwrap();
        assert_eq!(on_host, stored, "every host has the one password stored");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| std::fs::metadata(ours.path(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode("credentials"), mode("credentials/db")), (0o700, 0o600));
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/password")).unwrap();
    assert_eq!(file, "length=12\ndigits=True\nsame=True\ndevnull=8\nkw=6\n");
}

/// wait_for's delay: the same files and recap as Ansible's.
/// And a wait for a line in a file (`search_regex`, Python's `\d`), which comes and which does not.
#[test]
fn a_wait_with_a_delay_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "waits.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/waited")).unwrap();
    assert_eq!(file, "after the delay=True\n");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/found")).unwrap();
    assert_eq!(file, "found=True never=True\n");
}

/// apt's update_cache and cache_valid_time on nodes whose apt has no sources, by the real
/// apt-get (Ansible's module uses python-apt on the same lists): the same changes, registered
/// results and files as Ansible's, first run (the lists made) and re-run (nothing new).
#[test]
fn package_lists_refresh_as_ansible_refreshes_them() {
    let (theirs, ours) = (site(2), site(2));
    for s in [&theirs, &ours] {
        for i in 0..2 {
            s.lab().sh(
                i,
                "rm -rf /var/lib/apt/lists /var/lib/apt/periodic /etc/apt/sources.list.d/* \
                 && : > /etc/apt/sources.list && mkdir -p /var/lib/apt/lists",
            );
        }
    }
    same_as_ansible_on(&theirs, &ours, "apt-cache.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/apt-cache")).unwrap();
    assert_eq!(
        file,
        "first changed=False updated=False\nfresh changed=False updated=False same=True\npkg changed=False updated=False\n",
        "re-run: the lists are already there"
    );
}

/// A mirror that cannot be reached: apt-get update tried as often as `update_cache_retries`
/// says, then the task fails with apt's error, and nothing is installed.
#[test]
fn an_unreachable_mirror_fails_the_refresh_after_its_retries() {
    let site = site(1);
    site.lab().install_doubles(&["apt-get", "dpkg-query"]);
    site.lab().sh(0, "mkdir -p /var/lib/copctl-doubles && touch /var/lib/copctl-doubles/apt-update-fails");
    std::fs::write(
        site.path("refresh.yml"),
        "- hosts: lab\n  gather_facts: false\n  tasks:\n    - apt: {name: chrony, update_cache: true, update_cache_retries: 2}\n",
    )
    .unwrap();
    let out = site.command(["run", "refresh.yml"]).output().unwrap();
    let stdout = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains(
            "Failed to update apt cache after 2 retries: E: Failed to fetch http://mirror.invalid/dists/stable/InRelease  \
             Could not resolve 'mirror.invalid'"
        ),
        "{stdout}"
    );
    let calls: Vec<String> = site.lab().double_calls(0).into_iter().filter(|c| c.starts_with("apt-get")).collect();
    assert_eq!(calls, ["apt-get update -q", "apt-get update -q"], "two tries, no install");
}

/// ansible.posix.mount: fstab as the module rewrites it and what is mounted (a tmpfs mounted,
/// remounted with new options), first run and re-run.
#[test]
fn mounts_end_as_ansible_leaves_them() {
    same_as_ansible("mounts.yml");
}

/// A task's `throttle: 1` runs it on one host at a time (its hosts' start-to-end intervals do
/// not overlap), where the task before it, unthrottled, ran on all three at once.
#[test]
fn throttle_runs_a_task_on_so_many_hosts_at_once() {
    let site = site(3);
    copctl_run_with(&site, &["throttle.yml", "-f", "3"]);
    let interval = |i: usize, what: &str| -> (f64, f64) {
        let read = |f: &str| {
            let p = site.lab().path(i, &format!("/tmp/{what}-{f}"));
            std::fs::read_to_string(&p).unwrap().trim().parse::<f64>().unwrap()
        };
        (read("start"), read("end"))
    };
    let overlaps = |what: &str| {
        let v: Vec<(f64, f64)> = (0..3).map(|i| interval(i, what)).collect();
        (0..3).any(|a| (0..3).any(|b| a != b && v[a].0 < v[b].1 && v[b].0 < v[a].1))
    };
    assert!(!overlaps("throttle"), "throttle: 1 ran the task on two hosts at once");
    assert!(overlaps("free"), "without throttle the hosts run together");
}

#[test]
fn scripts_end_as_ansible_leaves_them() {
    same_as_ansible("scripts.yml");
}

#[test]
fn users_and_groups_end_as_ansible_leaves_them() {
    same_as_ansible("accounts.yml");
}

#[test]
fn loops_with_loop_control_and_with_dict_end_as_ansible_leaves_them() {
    same_as_ansible("loops.yml");
}

#[test]
fn line_and_block_edits_end_as_ansible_leaves_them() {
    same_as_ansible("edits.yml");
}

#[test]
fn tags_select_what_ansible_selects() {
    let (theirs, ours) = (site(1), site(1));
    let args = ["edits.yml", "--tags", "base,templates"];
    let (a, b) = (ansible_run_with(&theirs, &args), copctl_run_with(&ours, &args));
    eprintln!("edits.yml --tags base,templates: ansible {a:?} copctl {b:?}");
    let (sa, sb) = (state(&theirs, 1), state(&ours, 1));
    assert_eq!(diff(&sa, &sb), "", "edits.yml --tags: the hosts' files differ");
    assert!(sb.contains_key("lab-1:/opt/app/trim.conf") && !sb.contains_key("lab-1:/opt/app/created.conf"));
    assert_eq!(a, b, "edits.yml --tags: recap counts differ");
}

/// An ignored failure counts as Ansible counts it: ignored, and ok (changed, for a command)
/// besides. The hosts end the same.
#[test]
fn an_ignored_failure_counts_as_ansible_counts_it() {
    let (theirs, ours) = (site(1), site(1));
    for s in [&theirs, &ours] {
        s.lab().sh(0, "mkdir -p /opt/app");
    }
    let (a, b) = (ansible_run(&theirs, "ignored.yml"), copctl_run(&ours, "ignored.yml"));
    assert_eq!(diff(&state(&theirs, 1), &state(&ours, 1)), "");
    assert_eq!(a["lab-1"], [3, 2, 0, 0, 2], "ansible: [ok, changed, failed, skipped, ignored]");
    assert_eq!(b, a, "copctl: [ok, changed, failed, skipped, ignored]");
}

#[test]
fn plan_with_limit_shows_only_that_host() {
    let site = Site::new();
    site.fixture("ansible-playbooks");
    site.write("inventory.ini", "[lab]\nlab-1\nlab-2\n");
    site.test()
        .args(["plan", "node-setup.yml", "--limit", "lab-2"])
        .stdout(
            "limit: lab-2
playbook node-setup
  play node setup (hosts: lab)
    batch 1/1
      lab-2
        - [setup] Gathering Facts  (read-only)
        - [file] app directories
        - [copy] message of the day
        - [template] application config
        - [line] connection limit
        - [block] host block
        - [command] install once
        - [shell] what is installed
        - [copy] state file when installed
        - [debug] never on this family  (read-only)
        - [shell] reload app (handler)
11 tasks; hosts that may change: lab-2
",
        )
        .run();
}

#[test]
fn an_ansible_playbook_among_the_sites_playbooks_runs_by_its_name() {
    Test::new()
        .inventory("[web]\nw1\n")
        .playbook("mine", "# kept with the site's copctl playbooks\n- hosts: web\n  gather_facts: false\n  tasks:\n    - ping:\n")
        .args(["plan", "mine"])
        .stdout("playbook mine\n  play web (hosts: web)\n    batch 1/1\n      w1\n        - [ping] ping  (read-only)\n1 tasks; hosts that may change: none\n")
        .stderr("")
        .run();
}

fn refused(playbook: &str, stderr: &str) {
    Test::new()
        .inventory("[web]\nw1\n")
        .write("site.yml", playbook)
        .args(["validate", "site.yml"])
        .status(1)
        .stdout("")
        .stderr(stderr)
        .run();
}

#[test]
fn a_python_plugin_that_does_not_load_is_refused_naming_its_file() {
    Test::new()
        .inventory("[web]\nw1\n")
        .write("filter_plugins/site.py", "import no_such_module_anywhere\n")
        .write("site.yml", "- hosts: web\n  tasks:\n    - debug: msg=x\n")
        .args(["validate", "site.yml"])
        .status(1)
        .stdout("")
        .stderr(
            "  x filter_plugins/site.py: the site's filter plugin does not load: No module named \
             'no_such_module_anywhere' (ModuleNotFoundError)\n  help: copctl runs a site's Python plugins with \
             COPCTL_PYTHON, else the Python of ansible-playbook on PATH, else python3\n\n",
        )
        .run();
}

#[test]
fn an_unknown_module_is_refused_where_it_is_written() {
    refused(
        "- hosts: web\n  tasks:\n    - name: x\n      lineinfil: path=/x line=y\n",
        r#"  x site.yml:4:7: unknown module 'lineinfil'
   ,-[site.yml:4:7]
 3 |     - name: x
 4 |       lineinfil: path=/x line=y
   :       ^^^^|^^^^
   :           `-- here
   `----
  help: did you mean lineinfile? copctl runs these Ansible modules: apt, assert, authorized_key, blockinfile, command, copy, debug, dnf, fail, fetch, file, find, get_url, getent, group, hostname, include_vars, lineinfile, meta, modprobe, mount, package, pam_limits, pause, ping, raw, reboot, replace, script, service, set_fact, setup, shell, slurp, stat, sysctl, systemd, systemd_service, template, tempfile, unarchive, user, wait_for, wait_for_connection, yum

"#,
    );
}

#[test]
fn an_unknown_keyword_is_refused_where_it_is_written() {
    refused(
        "- hosts: web\n  tasks:\n    - shell: echo hi\n      regster: out\n",
        r#"  x site.yml:4:7: unknown task keyword 'regster'
   ,-[site.yml:4:7]
 3 |     - shell: echo hi
 4 |       regster: out
   :       ^^^|^^^
   :          `-- here
   `----
  help: did you mean register?

"#,
    );
}

#[test]
fn an_unsupported_argument_is_refused_never_dropped() {
    refused(
        "- hosts: web\n  tasks:\n    - copy: dest=/etc/hosts content=x remote_src=yes\n",
        r#"  x site.yml:3:13: copy: remote_src needs src, the file on the host
   ,-[site.yml:3:13]
 2 |   tasks:
 3 |     - copy: dest=/etc/hosts content=x remote_src=yes
   :             ^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^
   :                                 `-- here
   `----

"#,
    );
}

/// A conditional's constant written as a template is rendered (ansible-core 2.19): one that
/// reads an undefined variable is an error, never a constant that compares unequal.
#[test]
fn a_conditionals_templated_constant_reading_an_undefined_variable_is_refused() {
    refused(
        "- hosts: web\n  tasks:\n    - debug: msg=ran\n      when: inventory_hostname != \"{{ nope }}\"\n",
        r#"  x site.yml:4:13: step 'debug' on w1: the constant '{{ nope }}': 'nope' is undefined
   ,-[site.yml:4:13]
 3 |     - debug: msg=ran
 4 |       when: inventory_hostname != "{{ nope }}"
   :             ^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^
   :                              `-- in this template
   `----
  help: define it in inventory/env.yaml, the inventory, the playbook's vars or with -e name=value (or guard it with `is defined`)

"#,
    );
}

#[test]
fn validate_lists_every_problem_of_the_file_at_once() {
    refused(
        "- hosts: web\n  order: sorted\n  tasks:\n    - pause: prompt=go\n    - copy:\n        dest: /etc/x\n        content: y\n        mode: 0644\n        unsafe_writes: yes\n    - file: path=/x state=gone\n    - shell: echo\n      debugger: always\n",
        r#"  x site.yml: 5 problems: copctl cannot run this playbook as written

Error: 
  x site.yml:2:3: play keyword 'order' is not supported yet
   ,-[site.yml:2:3]
 1 | - hosts: web
 2 |   order: sorted
   :   ^^|^^
   :     `-- here
 3 |   tasks:
   `----

Error: 
  x site.yml:4:14: pause: waiting for a key press (no seconds or minutes) is not supported
   ,-[site.yml:4:14]
 3 |   tasks:
 4 |     - pause: prompt=go
   :              ^^^^|^^^^
   :                  `-- here
 5 |     - copy:
   `----
  help: copctl runs without a terminal to answer a prompt: give seconds or minutes

Error: 
  x site.yml:9:9: copy: argument 'unsafe_writes' is not supported
    ,-[site.yml:9:9]
  8 |         mode: 0644
  9 |         unsafe_writes: yes
    :         ^^^^^^|^^^^^^
    :               `-- this argument
 10 |     - file: path=/x state=gone
    `----
  help: copy takes: src, content, dest, mode, owner, group, force, remote_src, backup, validate, directory_mode, follow, local_follow

Error: 
  x site.yml:10:21: file: state 'gone' is not supported
    ,-[site.yml:10:21]
  9 |         unsafe_writes: yes
 10 |     - file: path=/x state=gone
    :                     ^^|^^
    :                       `-- this argument
 11 |     - shell: echo
    `----
  help: state: file, directory, absent, link, hard or touch

Error: 
  x site.yml:12:7: task keyword 'debugger' is not supported yet
    ,-[site.yml:12:7]
 11 |     - shell: echo
 12 |       debugger: always
    :       ^^^^|^^^
    :           `-- here
    `----

"#,
    );
}

/// `assert: '{{ item }}'` and `fail: '{{ item }}'`: the whole argument mapping from one
/// expression, per item, the task's `args:` over it, checked as the module checks its own
/// (no `that`): the same results and messages as ansible-playbook's.
#[test]
fn assert_arguments_from_a_template_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "templated-assert.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/templated-assert")).unwrap();
    assert_eq!(
        file,
        "held=['All assertions passed', 'holds on lab-1', 'All assertions passed']\n\
         failed=[True, True, True, True]\n\
         msgs=['one is not two', 'Assertion failed', 'not three', 'missing required arguments: that']\n\
         over=['from the task']\n\
         fail=['stop here', 'Failed as requested from task']\n"
    );
}

/// Everyday idioms: `default(omit)` leaving an argument out (the copy's mode then the file's
/// default, as Ansible's), filters, tests and lookups by their `ansible.builtin.` names, and a
/// fact accumulated over a loop from its own earlier value (`names | default([]) + [item]`).
#[test]
fn everyday_idioms_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "idioms.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/idioms")).unwrap();
    assert_eq!(
        file,
        "names=ana,bo\nuids={\"ana\": 2001, \"cy\": 2003}\nbase=app.conf\nmatch=True\nnotmatch=True\nhome=none\nlisted=2\n\
         play=idioms: lab-1,lab-2 / lab-1,lab-2 / lab-1,lab-2 / 2\nversion=2.19\n\
         backref=1.7 joined=a\\nb winpath=c:\\\\temp\nextracted=lab-1,lab-2\ntried=1\n\
         md5=aa3ef5b6ebb78d184429cab1ec2ab521\n\
         merged={\"a\": [1, 2, 4], \"b\": {\"c\": [3, 5]}}\n\
         tern=unset n\nanyall=True False True\nfacts=0\ninv=inventory.ini True\nprepended={\"a\": [0, 1]}\n"
    );
    assert_eq!(mode_on(&ours, 0, "/opt/app/given"), 0o640);
}

/// The find module: every filter, the walk's order and counts, what each file's entry holds,
/// and a loop over what it found.
#[test]
fn find_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "find.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/found")).unwrap();
    // After the re-run: the old logs the first run found are gone.
    assert_eq!(
        file,
        "/opt/app/find/a.conf matched=1 examined=8 msg=All paths examined skipped={}\n\
         /opt/app/find/.hdir/e.conf,/opt/app/find/.hidden.conf,/opt/app/find/a.conf,/opt/app/find/logs/app.3.log,/opt/app/find/sub/c.conf,/opt/app/find/sub/deep/d.conf matched=6 examined=13 msg=All paths examined skipped={}\n\
         /opt/app/find/a.conf,/opt/app/find/b.log,/opt/app/find/sub/c.conf matched=3 examined=13 msg=All paths examined skipped={}\n\
         /opt/app/find/logs,/opt/app/find/sub,/opt/app/find/sub/deep matched=3 examined=13 msg=All paths examined skipped={}\n\
         /opt/app/find/a.conf,/opt/app/find/b.log,/opt/app/find/big.bin,/opt/app/find/link,/opt/app/find/logs,/opt/app/find/sub matched=6 examined=8 msg=All paths examined skipped={}\n\
         /opt/app/find/link matched=1 examined=8 msg=All paths examined skipped={}\n\
         \x20matched=0 examined=1 msg=All paths examined skipped={}\n\
         /opt/app/find/big.bin matched=1 examined=8 msg=All paths examined skipped={}\n\
         /opt/app/find/b.log matched=1 examined=8 msg=All paths examined skipped={}\n\
         /opt/app/find/a.conf,/opt/app/find/sub/c.conf matched=2 examined=13 msg=All paths examined skipped={}\n\
         /opt/app/find/sub/c.conf matched=1 examined=2 msg=All paths examined skipped={}\n\
         /opt/app/find/a.conf matched=1 examined=8 msg=All paths examined skipped={}\n\
         /opt/app/find/sub/c.conf matched=1 examined=2 msg=Not all paths examined, check warnings for details skipped={\"/opt/app/find/a.conf\": \"'/opt/app/find/a.conf' is not a directory\"}\n\
         one=1 Limit of matches reached 1\n\
         /opt/app/find/a.conf 0644 reg=True dir=False lnk=False root:root TrueFalseFalse 10 True True\n\
         /opt/app/find/b.log 0600 reg=True dir=False lnk=False root:root TrueFalseFalse 2 True True\n\
         /opt/app/find/big.bin 0644 reg=True dir=False lnk=False root:root TrueFalseFalse 2048 True True\n\
         /opt/app/find/link 0777 reg=False dir=False lnk=True root:root TrueTrueTrue - True True\n\
         /opt/app/find/logs 0755 reg=False dir=True lnk=False root:root TrueFalseTrue - True True\n\
         /opt/app/find/sub 0755 reg=False dir=True lnk=False root:root TrueFalseTrue - True True\n\
         /opt/app/find/a.conf c626afb138b79005a681b787a1b5b7d06a1dce8b\n\
         "
    );
}

/// The getent module: records as facts, beside the gathered ones, its three failures, a loop.
#[test]
fn getent_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "getent.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/getent")).unwrap();
    assert_eq!(
        file,
        "last=6 ['daemon'] replaced\nhome=True root_gid=0 groups=True\nhosts=1 localhost\nfacts=True True\n\
         missing=One or more supplied key could not be found in the database. {\"getent_passwd\": {\"no-such-user-here\": null}}\n\
         failed_key=One or more supplied key could not be found in the database. unknown=Missing arguments, or database unknown.\n"
    );
}

/// Third round of idioms: dates (a datetime minus another as Python's timedelta), strftime,
/// path_join and realpath, urlsplit, the sequence lookup and a templated with_sequence,
/// itertools filters, to_nice_yaml(sort_keys=False), regex_escape's kinds, ansible_run_tags,
/// and a playbook written as JSON.
#[test]
fn dates_paths_urls_and_sequences_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "idioms-dates.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/idioms-dates")).unwrap();
    assert_eq!(
        file,
        "nodes=cop-worker-01,cop-worker-02,cop-worker-03\nseq=0,4,8 n1,n2\ndays=2160\ndelta=2160 days, 11:30:00\n\
         secs=45000.0\nback=-32 days, 11:30:00\nchained=5 4\nparsed=2024-02-01 12:30:00 1 1900-01-01 12:30:00\n\
         json={\"at\": \"2024-02-01T12:30:00\"}\nfmt=1971-01-02 00 Thursday 032\njoined=/etc/rancher/rke2 /opt/x a/b\n\
         real=/etc/hostname\nurl=harbor.example 8443 /v2/_catalog n=10 svc\n\
         parts=fragment,hostname,netloc,password,path,port,query,scheme,username\n\
         longest=[[1, \"a\"], [2, \"-\"], [3, \"-\"]]\ncombos=[[1, 2], [1, 3], [2, 3]] ab,ac,ba,bc,ca,cb\n\
         escaped=cop\\-1\\.example\\ com a\\.b\\*c\nyaml=zeta: 1\nalpha:\n- 1\n- 2\ntags=all skip=0\n\
         regex=True &lt;b&gt;\nfrom-json=lab-1\n"
    );
}

/// Second round of idioms: `default` and `is defined` over attributes of what is not defined
/// (Ansible's undefined chains), seeded `random`/`shuffle` (Python's draws), regex_replace's
/// keywords, `int` with a base, `dict()` over `zip`, `now()` a datetime, version's kinds, lookup
/// `errors`, a null printed as nothing, `to_nice_yaml(width=)`, `'%02d' % n`, `include_vars: dir`.
#[test]
fn filter_arguments_and_chained_defaults_end_as_ansible_leaves_them() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "idioms-args.yml");
    let file = |i| std::fs::read_to_string(ours.lab().path(i, "/opt/app/idioms-args")).unwrap();
    assert_eq!(
        file(0),
        "port=8080 deep=0644 item=z\ndefined=False True True\nminute=55 pick=a\norder=3,5,1,4,2\n\
         regex=bar bar FOO dollar=$HOME named=v=k\nhex=255 31\nzipped={\"http\": 80, \"https\": 443}\nnow=True True\n\
         versions=True True\nmissing=[] 0 xy\nlong=k: a very long value that goes on and on and\n  on for many words until it is past forty\n\
         layered={\"layer_a\": 1, \"layer_b\": \"over\", \"layer_c\": [3]}\npercent=07 lab-1:443 12.3%\n"
    );
    // Seeded by the host's name: another host, another minute.
    assert!(file(1).contains("minute=33 pick=c\norder=3,2,1,4,5\n"), "{}", file(1));
}

/// Six hosts writing their own reports into one bastion directory at once (delegate_to:
/// localhost; copy, template, copy with validate): every file has its own host's content, as
/// Ansible leaves them, first run and re-run.
#[test]
fn reports_written_on_the_bastion_by_every_host_at_once_keep_each_hosts_content() {
    let (theirs, ours) = (site(6), site(6));
    let reports = |s: &Site| -> BTreeMap<String, String> {
        std::fs::read_dir(s.path("reports"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap())
            })
            .collect()
    };
    for run in ["first run", "re-run"] {
        let (a, b) = (ansible_run(&theirs, "delegated-reports.yml"), copctl_run(&ours, "delegated-reports.yml"));
        assert_eq!(a, b, "{run}: recap counts [ok, changed, failed, skipped, ignored] differ");
        assert_eq!(diff(&state(&theirs, 6), &state(&ours, 6)), "", "{run}: the hosts' files differ");
        let (ra, rb) = (reports(&theirs), reports(&ours));
        assert_eq!(ra, rb, "{run}: the reports differ");
        assert_eq!(rb.len(), 18, "{rb:?}");
        for (name, text) in &rb {
            let (host, kind) = name.rsplit_once('.').unwrap();
            let want = match kind {
                "copy" => format!("{host}\n"),
                "template" => format!("report of {host} (True)\n"),
                _ => format!("{host} checked\n"),
            };
            assert_eq!(text, &want, "{run}: {name}");
        }
    }
}

/// What a task printed read the ways playbooks read it (split, from_json, float, a registered
/// loop's results, a list as a debug message): accepted before the run, as Ansible accepts them,
/// and the same file after it.
#[test]
fn reading_what_tasks_printed_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "idioms-results.yml");
    let file = std::fs::read_to_string(ours.lab().path(0, "/opt/app/idioms-results")).unwrap();
    assert_eq!(
        file,
        "first=4.2.1 (build 7) major=4\nserver=1.29 load=True\nfloats=0.0 1.5 1000.0 2.5\n\
         report={\"kernel\": {\"rc\": 0, \"out\": \"6.1\"}, \"broken\": {\"rc\": 3, \"out\": \"\"}}\n\
         failed=['broken']\nlines=version 4.2.1|build 7)|3 mapped=1.29\n\
         partial=[1] [True, False]\nrule=Instance {{ $labels.instance }} down said=alert: Instance {{ $labels.instance }} down title={{ .Values.title }}\n"
    );
    let arg = std::fs::read_to_string(ours.lab().path(0, "/opt/app/unsafe-arg")).unwrap();
    assert_eq!(arg, "{{ raw }} {% if %}\n");
}

/// A string that is one expression and a newline (`content: "{{ port }}\n"`): a number or a
/// boolean loses the newline, as Ansible 2.19's native rendering has it; text keeps it, and a
/// space around the expression makes it text (in a fact or a variable too).
#[test]
fn one_expression_and_a_newline_ends_as_ansible_leaves_it() {
    let (theirs, ours) = (site(2), site(2));
    same_as_ansible_on(&theirs, &ours, "trailing-newline.yml");
    let read = |p: &str| std::fs::read_to_string(ours.lab().path(0, &format!("/opt/app/{p}"))).unwrap();
    let files =
        ["port", "port2", "listen", "enabled", "greeting", "nl-number", "nl-bool", "nl-text", "lines", "banner"];
    assert_eq!(
        files.map(read),
        ["8443", "8443\n\n", "listen 8443\n", "True", "hello\n", "8443", "True", "hello\n", "8444\n", "Hi\n"]
    );
    assert_eq!(
        read("facts"),
        "[8443, 'hello\\n', ' 8443\\n', ' hello ', ['ana', 'bo'], 8443, 'hello\\n', ' hello\\n', 'Hi\\n', 'Hi\\n']\n\
         ['int', 'str', 'str', 'str', 'list', 'int', 'str', 'str']\n"
    );
}
