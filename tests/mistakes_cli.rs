//! Command-line mistakes and conventions (issue 12, items 13-16): a usage error exits 1 (2 means
//! a failed host), `--connect-timeout` is the whole budget for reaching a host, the manual's
//! playbook names and `.yaml` paths find the built-in playbooks (saying so), and a reader that
//! stops reading (`| head`) ends the output quietly. Each test pins the whole message and the
//! exit code.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_usage_error_exits_1_not_the_failed_host_code() {
    Test::repo()
        .args(["plan", "system-setup", "--forks", "abc"])
        .status(1)
        .stdout("")
        .stderr(
            "error: invalid value 'abc' for '--forks <FORKS>': invalid digit found in string\n\nFor more information, try '--help'.\n",
        )
        .run();
    Test::repo()
        .args(["plan", "system-setup", "--nosuch"])
        .status(1)
        .stdout("")
        .stderr(
            "error: unexpected argument '--nosuch' found\n\n  tip: to pass '--nosuch' as a value, use '-- --nosuch'\n\nUsage: copctl plan <PLAYBOOKS>...\n\nFor more information, try '--help'.\n",
        )
        .run();
    // Help is not a mistake.
    let ran = Test::repo().args(["plan", "--help"]).status(0).stderr("").run();
    assert!(ran.stdout.starts_with("Show the task graph a run would execute"), "{}", ran.stdout);
}

#[test]
fn connect_timeout_is_the_whole_budget_retries_included() {
    // A host that accepts TCP and never says a word: each attempt would wait for the handshake.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let ran = Test::new()
        .inventory(&format!("[web]\nw1 ansible_host=127.0.0.1 ansible_port={port}\n"))
        .args(["exec", "all", "--connect-timeout", "2", "--", "true"])
        .status(4)
        .stderr("")
        .run();
    assert_eq!(
        normalize(&ran.stdout, ran.site()).replace(&port.to_string(), "PORT"),
        "w1 | UNREACHABLE! => w1: unreachable: SSH handshake with [ADDR]:PORT timed out after 2s\n1 host(s): 0 ok, 0 failed, 1 unreachable ([T])\n"
    );
    // Three retries, each waiting the full 2 s plus the pauses between them, took 9 s before.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "--connect-timeout 2 took {took:?}");
    drop(silent);
}

#[test]
fn the_manuals_playbook_names_and_yaml_paths_run_the_built_in_playbooks() {
    let ran = Test::repo()
        .args(["plan", "openmaru-cop-rke2-rolling-restart.yaml"])
        .stderr("note: no file openmaru-cop-rke2-rolling-restart.yaml here; it is the manual's name of the built-in playbook 'rolling-restart': running 'rolling-restart'\n")
        .run();
    assert!(ran.stdout.starts_with("playbook rolling-restart — "), "{}", ran.stdout);
    let ran = Test::repo()
        .args(["plan", "openmaru-cop-system-setup"])
        .stderr("note: 'openmaru-cop-system-setup' is the manual's name of the built-in playbook 'system-setup': running 'system-setup'\n")
        .run();
    assert!(ran.stdout.starts_with("playbook system-setup — "), "{}", ran.stdout);
    let ran = Test::repo()
        .args(["plan", "rolling-restart.yaml"])
        .stderr("note: no file rolling-restart.yaml here: running the built-in playbook 'rolling-restart'\n")
        .run();
    assert!(ran.stdout.starts_with("playbook rolling-restart — "), "{}", ran.stdout);
    Test::repo()
        .args(["plan", "./nosuch.yaml"])
        .status(1)
        .stdout("")
        .stderr("  x no playbook file ./nosuch.yaml\n  help: give the path of a copctl playbook, or a built-in name: etcd-restore, etcd-snapshot, gpu-driver-upgrade, gpu-install, gpu-operator, gpu-preinstall, node-cordon, node-drain, node-remove, node-uncordon, rke2-cert-rotate, rke2-install, rke2-post-install, rke2-private-registry, rke2-uninstall, rke2-upgrade, rolling-reboot, rolling-restart, system-dns, system-setup\n\n")
        .run();
}

#[test]
fn the_manuals_numbered_scripts_run_the_built_in_playbooks() {
    for (script, playbook) in [
        ("120-gpu-preinstall", "gpu-preinstall"),
        ("120-gpu-preinstall.sh", "gpu-preinstall"),
        ("140-gpu-install", "gpu-install"),
        ("./140-gpu-install.sh", "gpu-install"),
        ("450-gpu-operator-install", "gpu-operator"),
        ("450-gpu-operator-install.sh", "gpu-operator"),
    ] {
        let ran = Test::repo()
            .args(["plan", script])
            .stderr(&format!(
                "note: '{script}' is the manual's script for the built-in playbook '{playbook}': running '{playbook}'\n"
            ))
            .run();
        assert!(ran.stdout.starts_with(&format!("playbook {playbook} — ")), "{script}: {}", ran.stdout);
    }
    // A script the manual names that no playbook replaces is still no playbook.
    Test::repo()
        .args(["plan", "build-app.sh"])
        .status(1)
        .stdout("")
        .stderr("  x no playbook named 'build-app.sh'\n  help: available playbooks: etcd-restore, etcd-snapshot, gpu-driver-upgrade, gpu-install, gpu-operator, gpu-preinstall, node-cordon, node-drain, node-remove, node-uncordon, rke2-cert-rotate, rke2-install, rke2-post-install, rke2-private-registry, rke2-uninstall, rke2-upgrade, rolling-reboot, rolling-restart, system-dns, system-setup\n\n")
        .run();
}

#[test]
fn the_operators_old_ansible_playbook_runs_as_written_with_a_note_on_the_built_in_name() {
    Test::new()
        .inventory("[masters]\nm1\n")
        .write("openmaru-cop-system-dns.yaml", "- hosts: all\n  tasks: []\n")
        .args(["plan", "openmaru-cop-system-dns.yaml"])
        .stdout(
            "playbook openmaru-cop-system-dns\n  play all (hosts: all)\n    batch 1/1\n      m1\n        - [setup] Gathering Facts  (read-only)\n1 tasks; hosts that may change: none\n",
        )
        .stderr(
            "note: openmaru-cop-system-dns.yaml is an Ansible playbook, run as written; copctl's own version of it is the built-in playbook 'system-dns': copctl run system-dns\n",
        )
        .run();
}

#[test]
fn a_reader_that_stops_reading_ends_the_output_quietly() {
    // Far more than a pipe holds, so copctl must meet the closed pipe.
    let site = Site::new();
    site.write("inventory.ini", "[web]\nweb[00001:30000].example.com\n");
    let mut child =
        site.command(["hosts", "all"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("copctl starts");
    let mut first = [0u8; 16];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""), "`copctl hosts all | head -c 16`");
    assert_eq!(&first, b"web00001.example");
}

#[test]
fn ansible_playbooks_list_flags_print_and_run_nothing() {
    Test::repo()
        .args(["run", "system-dns", "--list-hosts", "--limit", "cop-worker-3,cop-master-1"])
        .stderr("")
        .stdout("playbook system-dns\n  play hosts-and-resolver (hosts: cluster): 2 host(s)\n    cop-master-1\n    cop-worker-3\n")
        .run();
    Test::repo()
        .args(["run", "system-dns", "--syntax-check"])
        .stderr("")
        .stdout("ok: 9 host(s), 7 group(s), 1 playbook(s), 65 planned task(s); nothing was run\n")
        .run();
    let ran = Test::repo().args(["run", "system-dns", "--list-tasks", "--limit", "cop-worker-1"]).stderr("").run();
    let plan = Test::repo().args(["plan", "system-dns", "--limit", "cop-worker-1"]).stderr("").run();
    assert_eq!(ran.stdout, plan.stdout);
    // Ansible's spelling of --start-at.
    Test::repo()
        .args(["run", "system-dns", "--start-at-task", "nosuch step", "--limit", "cop-worker-1"])
        .status(1)
        .stdout("")
        .stderr("  x --start-at 'nosuch step' names no planned step of system-dns\n  help: the planned steps are: cluster names in /etc/hosts, resolver in use, resolver drop-in directory, resolver drop-in, NetworkManager DNS configuration directory, NetworkManager DNS\n\n")
        .run();
}

#[test]
fn dra_with_an_rke2_release_that_cannot_serve_it_is_refused_at_plan_time() {
    Test::repo()
        .args(["plan", "gpu-operator", "-e", "rke2_version=v1.31.4+rke2r1"])
        .status(1)
        .stdout("")
        .stderr(
            r#"  x playbooks/gpu-operator.yaml:8:1: gpu_dra_enabled needs Kubernetes 1.34.2 or later (the manual's DRA objects are resource.k8s.io/v1) and rke2_version is v1.31.4+rke2r1: set rke2_version to v1.34.2+rke2r1 or later, or gpu_dra_enabled: false
   ,-[playbooks/gpu-operator.yaml:8:1]
 7 |     msg: "env.yaml enables both DRA (gpu_dra_enabled) and time-slicing (gpu_time_slicing_enabled): never both on the same GPUs (the operations manual)"
 8 |   - that: not (gpu_dra_enabled | default(true) | bool) or rke2_version is not defined or (rke2_version | string | regex_replace('^v', '') | regex_replace('[+-].*$', '')) is version('1.34.2', '>=')
   : ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^|^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   :                                                                                                   `-- this requirement
 9 |     msg: "gpu_dra_enabled needs Kubernetes 1.34.2 or later (the manual's DRA objects are resource.k8s.io/v1) and rke2_version is {{ rke2_version }}: set rke2_version to v1.34.2+rke2r1 or later, or gpu_dra_enabled: false"
   `----
  help: gpu-operator requires: not (gpu_dra_enabled | default(true) | bool) or rke2_version is not defined or (rke2_version | string | regex_replace('^v', '') | regex_replace('[+-].*$', '')) is version('1.34.2', '>='); fix the settings in env.yaml (or -e)

"#,
        )
        .run();
    // The shipped default serves it; without DRA any release does.
    Test::repo().args(["plan", "gpu-operator"]).stderr("").run();
    Test::repo()
        .args(["plan", "gpu-operator", "-e", "rke2_version=v1.31.4+rke2r1", "-e", "gpu_dra_enabled=false"])
        .stderr("")
        .run();
    // Sharing under DRA needs the feature gate of 1.34 too (rke2-install sets it).
    let ran = Test::repo()
        .args(["plan", "rke2-install", "-e", "gpu_dra_sharing_enabled=true", "-e", "rke2_version=v1.33.9+rke2r1"])
        .status(1)
        .stdout("")
        .run();
    assert!(ran.stderr.starts_with("  x playbooks/rke2-install.yaml:9:1: gpu_dra_sharing_enabled (the DRAConsumableCapacity feature gate) needs Kubernetes 1.34.2 or later"), "{}", ran.stderr);
}

#[test]
fn a_secret_var_without_a_value_stops_the_run_when_there_is_no_terminal_to_ask() {
    Test::new()
        .inventory("[local]\nhere ansible_connection=local\n")
        .env("secret_vars: [api_key]\n")
        .playbook("p", "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        debug: { msg: \"{{ api_key }}\" }\n")
        .args(["run", "p"])
        .status(1)
        .stdout("")
        .stderr("  x env.yaml's secret_vars lists api_key but nothing gives it a value\n  help: set it in env.yaml (an inline !vault value keeps it out of cleartext), with -e or lookup('env', NAME), or run copctl on a terminal to be asked for it\n\n")
        .run();
    // Given with -e, it runs (and is masked).
    let ran = Test::new()
        .inventory("[local]\nhere ansible_connection=local\n")
        .env("secret_vars: [api_key]\n")
        .playbook("p", "plays:\n  - name: p\n    hosts: all\n    steps:\n      - name: s\n        debug: { msg: \"{{ api_key }}\" }\n")
        .args(["run", "p", "-e", "api_key=k-12345"])
        .run();
    assert!(!ran.stdout.contains("k-12345"), "{}", ran.stdout);
}

#[test]
fn settings_kept_in_the_inventory_pass_the_playbooks_site_checks() {
    // The site's names in group variables (as an Ansible site keeps them), not in env.yaml: the
    // playbook-level checks must not call them undefined.
    Test::new()
        .inventory(
            "[masters]\nm1\n[workers]\nw1\n[gpu]\n[cluster:children]\nmasters\nworkers\ngpu\n[cluster:vars]\n\
             ingress_ip=192.0.2.100\ndomain=example\nsub_domain=cop\nTLD=com\nrke2_version=v1.34.2+rke2r1\ngpu_operator_version=v25.10.0\n",
        )
        .args(["validate", "system-dns", "system-setup", "gpu-operator"])
        .stderr("warning: gpu-operator: play 'GPU nodes': hosts 'gpu' matches no host; skipped\n")
        .stdout("ok: 2 host(s), 6 group(s), 3 playbook(s), 76 planned task(s); nothing was run\n")
        .run();
}

#[test]
fn a_become_method_or_connection_copctl_does_not_have_is_refused_before_any_login() {
    // Nothing listens on port 9: a refusal that came from a login attempt would say unreachable.
    for (vars, msg) in [
        (
            "ansible_become=true ansible_become_method=doas",
            "w1: ansible_become_method=doas is not supported: copctl becomes with sudo or su (set ansible_become_method, or log in as the user to become)",
        ),
        (
            "ansible_connection=winrm",
            "w1: ansible_connection=winrm is not supported: copctl connects with ssh or local",
        ),
        ("ansible_port=22x", "w1: ansible_port=22x is not a port number (1-65535)"),
    ] {
        let port = if vars.starts_with("ansible_port") { String::new() } else { " ansible_port=9".into() };
        Test::new()
            .inventory(&format!("[web]\nw1 ansible_host=127.0.0.1{port} {vars}\n"))
            .args(["exec", "all", "--", "true"])
            .status(1)
            .stdout("")
            .stderr(&format!("  x {msg}\n\n"))
            .run();
    }
}

/// The example site copied into a fresh directory, with `env_extra` appended to its env.yaml and
/// `cfg` as the ansible.cfg of the directory copctl runs in.
fn example_site_with(env_extra: &str, cfg: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inventory")).unwrap();
    for e in std::fs::read_dir(repo().join("inventory")).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dir.path().join("inventory").join(e.file_name())).unwrap();
        }
    }
    let env = dir.path().join("inventory/env.yaml");
    let text = std::fs::read_to_string(&env).unwrap();
    std::fs::write(&env, format!("{text}{env_extra}")).unwrap();
    std::fs::write(dir.path().join("ansible.cfg"), cfg).unwrap();
    dir
}

#[test]
fn a_misspelt_env_yaml_or_ansible_cfg_key_is_named_with_the_fix() {
    let site =
        example_site_with("rke2_verison: v1.35.0+rke2r1\nsite_owner: ops\n", "[defaults]\nforks = 5\nforsk = 5\n");
    let line = std::fs::read_to_string(repo().join("inventory/env.yaml")).unwrap().lines().count() + 1;
    let cfg = site.path().join("ansible.cfg");
    let want = format!(
        "warning: {}:3: [defaults] forsk is not a setting copctl reads (did you mean: forks?)\n\
         warning: inventory/env.yaml:{line}: 'rke2_verison' is read by no playbook or template (did you mean: \
         rke2_version?)\n\
         warning: inventory/env.yaml:{}: 'site_owner' is read by no playbook or template\n",
        cfg.display(),
        line + 1
    );
    for args in [&["plan", "rke2-install"][..], &["validate", "rke2-install"], &["run", "rke2-install", "--list-tasks"]]
    {
        let o = copctl(Some(site.path()), args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), want, "{args:?}");
    }
}

#[test]
fn the_example_site_has_no_unread_env_yaml_key() {
    let o = copctl(None, &["validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("is read by no playbook"), "{}", stderr(&o));
    let site = example_site_with("", "[defaults]\nforks = 5\n");
    let o = copctl(Some(site.path()), &["validate"]);
    assert_eq!(stderr(&o), "", "the example site copied with a correct ansible.cfg");
}
