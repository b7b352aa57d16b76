//! ansible.cfg and the ANSIBLE_* variables (issue 13 item 3), against ansible-core where it
//! decides: which file is found (ANSIBLE_CONFIG, ./ansible.cfg unless the directory is
//! world-writable, ~/.ansible.cfg), what each setting is and where it came from (`copctl config
//! --only-changed` against `ansible-config dump --only-changed`, relative paths resolved from
//! the file's directory, the environment over the file), mistakes at their line, the keys copctl
//! does not use listed under -v, and a run on lab hosts driven by ansible.cfg alone.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use common::lab::LabOptions;
use common::*;

/// A scratch place: a working directory, a HOME, and where config files go.
struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["cwd", "home", "elsewhere"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Place { _dir: dir, root }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn write(&self, rel: &str, text: &str) -> &Place {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }
    /// No ANSIBLE_* or COPCTL_* of the caller; HOME is the place's; runs in `cwd/`.
    fn isolate(&self, c: &mut Command, env: &[(&str, &str)]) {
        for (k, _) in std::env::vars() {
            if k.starts_with("ANSIBLE_") || k.starts_with("COPCTL_") {
                c.env_remove(k);
            }
        }
        c.current_dir(self.path("cwd")).env("HOME", self.path("home")).env("NO_COLOR", "1");
        for (k, v) in env {
            c.env(k, v);
        }
    }
    fn copctl(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_copctl"));
        c.args(args);
        self.isolate(&mut c, env);
        c.output().unwrap()
    }
    fn ansible_config(&self, env: &[(&str, &str)]) -> Output {
        let mut c = ansible_cmd("ansible-config");
        c.args(["dump", "--only-changed"]);
        self.isolate(&mut c, env);
        c.env("ANSIBLE_NOCOLOR", "1");
        c.output().unwrap()
    }
    fn show(&self, o: &Output) -> String {
        stdout(o).replace(&self.root.display().to_string(), "[PLACE]")
    }
}

/// The settings both print, as `NAME(ORIGIN) = VALUE` with copctl's `:LINE` left out: copctl's
/// names, ansible-core's lines for those names (its other settings are not copctl's business).
fn compare_dumps(p: &Place, env: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let ours = p.copctl(&["config", "--only-changed"], env);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let strip_line = |l: &str| match (l.find('('), l.find(") = ")) {
        (Some(a), Some(b)) => {
            let origin = &l[a + 1..b];
            let origin = match origin.rsplit_once(':') {
                Some((f, n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => f,
                _ => origin,
            };
            format!("{}({origin}{}", &l[..a], &l[b..])
        }
        _ => l.to_string(),
    };
    let ours: Vec<String> = stdout(&ours)
        .lines()
        .take_while(|l| !l.is_empty())
        .map(strip_line)
        .filter(|l| !l.starts_with("SSH_"))
        .collect();
    let names: Vec<&str> = ours.iter().map(|l| &l[..l.find('(').unwrap()]).collect();
    let theirs = p.ansible_config(env);
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let theirs: Vec<String> = stdout(&theirs)
        .lines()
        .filter(|l| l.find('(').is_some_and(|i| names.contains(&&l[..i])))
        .map(String::from)
        .collect();
    (ours, theirs)
}

/// What a case of the search writes: (what it shows, files, environment, ./ world-writable).
type Case = (&'static str, &'static [&'static str], &'static [(&'static str, &'static str)], bool);

#[test]
fn the_file_is_found_where_ansible_finds_it() {
    // Each candidate file names its own remote_user, so the winner shows in both dumps.
    let cases: &[Case] = &[
        ("./ansible.cfg before ~/.ansible.cfg", &["cwd/ansible.cfg", "home/.ansible.cfg"], &[], false),
        ("~/.ansible.cfg alone", &["home/.ansible.cfg"], &[], false),
        (
            "ANSIBLE_CONFIG (a directory) first",
            &["cwd/ansible.cfg", "home/.ansible.cfg", "elsewhere/ansible.cfg"],
            &[("ANSIBLE_CONFIG", "../elsewhere")],
            false,
        ),
        ("a world-writable ./ is skipped, with a warning", &["cwd/ansible.cfg", "home/.ansible.cfg"], &[], true),
        (
            "unless ANSIBLE_CONFIG names that very file",
            &["cwd/ansible.cfg", "home/.ansible.cfg"],
            &[("ANSIBLE_CONFIG", "ansible.cfg")],
            true,
        ),
        ("none at all", &[], &[], false),
    ];
    for (what, files, env, world_writable) in cases {
        let p = Place::new();
        for f in *files {
            let user = f.replace(['/', '.'], "_");
            p.write(f, &format!("[defaults]\nremote_user = {user}\n"));
        }
        if *world_writable {
            std::fs::set_permissions(p.path("cwd"), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let (ours, theirs) = compare_dumps(&p, env);
        assert_eq!(ours, theirs, "{what}");
        // The warning: the same text from both, once.
        let ours = stderr(&p.copctl(&["config"], env));
        let theirs = stderr(&p.ansible_config(env));
        let warning = "Ansible is being run in a world writable directory";
        assert_eq!(ours.contains(warning), theirs.contains(warning), "{what}: {ours} / {theirs}");
        if theirs.contains(warning) {
            let text = |s: &str| s[s.find(warning).unwrap()..].lines().next().unwrap().to_string();
            assert_eq!(text(&ours), text(&theirs), "{what}");
            assert_eq!(ours.matches(warning).count(), 1, "{ours}");
        }
    }
}

const FULL: &str = "\
# every key copctl reads from the file
[defaults]
inventory = inventory/, ../shared/hosts.yml ; a comment
remote_user = deploy
remote_port = 2222
private_key_file = keys/id_ed25519
forks = 20
host_key_checking = False
timeout = 33
vault_password_file = ~/.vault-pw
vault_identity_list = prod@prod.pw, dev@prompt
vault_identity = site
vault_id_match = True
ask_vault_pass = no
become_password_file = ../secrets/become.pw
nocows = 1

[privilege_escalation]
become = yes
become_method = sudo
become_user = admin
become_ask_pass = false

[ssh_connection]
ssh_args = -o ControlMaster=auto -o ControlPersist=60s
pipelining = True
";

#[test]
fn every_setting_as_ansible_config_dumps_it() {
    let p = Place::new();
    p.write("site/ansible.cfg", FULL);
    // From elsewhere: the file's relative paths are from its directory, not from here.
    let env = [("ANSIBLE_CONFIG", "../site/ansible.cfg")];
    let (ours, theirs) = compare_dumps(&p, &env);
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 18, "{ours:#?}");

    // The environment over the file; its relative paths from the working directory.
    let env = [
        ("ANSIBLE_CONFIG", "../site/ansible.cfg"),
        ("ANSIBLE_FORKS", "7"),
        ("ANSIBLE_PRIVATE_KEY_FILE", "my/key"),
        ("ANSIBLE_BECOME_USER", "ops"),
        ("ANSIBLE_INVENTORY", "a.ini,b.ini"),
        ("ANSIBLE_HOST_KEY_CHECKING", "true"),
    ];
    let (ours, theirs) = compare_dumps(&p, &env);
    assert_eq!(ours, theirs);
    let o = p.copctl(&["config", "--only-changed"], &env);
    assert_eq!(
        p.show(&o),
        "BECOME_PASSWORD_FILE([PLACE]/site/ansible.cfg:15) = [PLACE]/secrets/become.pw
CONFIG_FILE() = [PLACE]/site/ansible.cfg
DEFAULT_ASK_VAULT_PASS([PLACE]/site/ansible.cfg:14) = False
DEFAULT_BECOME([PLACE]/site/ansible.cfg:19) = True
DEFAULT_BECOME_ASK_PASS([PLACE]/site/ansible.cfg:22) = False
DEFAULT_BECOME_METHOD([PLACE]/site/ansible.cfg:20) = sudo
DEFAULT_BECOME_USER(env: ANSIBLE_BECOME_USER) = ops
DEFAULT_FORKS(env: ANSIBLE_FORKS) = 7
DEFAULT_HOST_LIST(env: ANSIBLE_INVENTORY) = ['[PLACE]/cwd/a.ini', '[PLACE]/cwd/b.ini']
DEFAULT_PRIVATE_KEY_FILE(env: ANSIBLE_PRIVATE_KEY_FILE) = [PLACE]/cwd/my/key
DEFAULT_REMOTE_PORT([PLACE]/site/ansible.cfg:5) = 2222
DEFAULT_REMOTE_USER([PLACE]/site/ansible.cfg:4) = deploy
DEFAULT_TIMEOUT([PLACE]/site/ansible.cfg:9) = 33
DEFAULT_VAULT_IDENTITY([PLACE]/site/ansible.cfg:12) = site
DEFAULT_VAULT_IDENTITY_LIST([PLACE]/site/ansible.cfg:11) = ['prod@prod.pw', 'dev@prompt']
DEFAULT_VAULT_ID_MATCH([PLACE]/site/ansible.cfg:13) = True
DEFAULT_VAULT_PASSWORD_FILE([PLACE]/site/ansible.cfg:10) = [PLACE]/home/.vault-pw
HOST_KEY_CHECKING(env: ANSIBLE_HOST_KEY_CHECKING) = True

not used by copctl:
[PLACE]/site/ansible.cfg:16: [defaults] nocows is not used by copctl
[PLACE]/site/ansible.cfg:25: [ssh_connection] ssh_args is not used by copctl: copctl speaks SSH itself (no ssh processes, no ControlMaster); put options in ~/.ssh/config
[PLACE]/site/ansible.cfg:26: [ssh_connection] pipelining is not used by copctl: moot: copctl sends no modules, every step already runs without temporary files
"
    );

    // Flags over both; without --only-changed, copctl's defaults too, each with its meaning.
    let o = p.copctl(&["config", "-f", "3", "-u", "cli", "-i", "x.ini"], &env);
    let out = p.show(&o);
    for line in [
        "DEFAULT_FORKS(flag: -f/--forks) = 3    # hosts worked on at once (as -f)\n",
        "DEFAULT_REMOTE_USER(flag: -u/--user) = cli    # login user where the inventory sets no ansible_user (as -u)\n",
        "DEFAULT_HOST_LIST(flag: -i/--inventory) = ['x.ini']    # the inventory sources when no -i is given\n",
        "DEFAULT_ASK_PASS(default) = False    # ask for the SSH password (as -k)\n",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn keys_copctl_does_not_use_are_listed_under_v() {
    let p = Place::new();
    p.write("cwd/ansible.cfg", &FULL.replace("inventory/, ../shared/hosts.yml", "inventory/"))
        .write("cwd/inventory/hosts", "[lab]\nlab-1\n");
    let quiet = p.copctl(&["hosts", "all"], &[]);
    assert_eq!((stdout(&quiet).as_str(), stderr(&quiet).as_str()), ("lab-1\n", ""));
    let loud = p.copctl(&["hosts", "all", "-v"], &[]);
    assert_eq!(
        stderr(&loud).replace(&p.root.display().to_string(), "[PLACE]"),
        "note: [PLACE]/cwd/ansible.cfg:16: [defaults] nocows is not used by copctl
note: [PLACE]/cwd/ansible.cfg:25: [ssh_connection] ssh_args is not used by copctl: copctl speaks SSH itself (no ssh processes, no ControlMaster); put options in ~/.ssh/config
note: [PLACE]/cwd/ansible.cfg:26: [ssh_connection] pipelining is not used by copctl: moot: copctl sends no modules, every step already runs without temporary files
"
    );
}

/// copctl's message for `cfg` (in ./ansible.cfg) and the environment `env`, after `hosts all`.
fn refused(cfg: &str, env: &[(&str, &str)]) -> String {
    let p = Place::new();
    p.write("cwd/ansible.cfg", cfg).write("cwd/inventory/inventory.ini", "h1\n");
    let o = p.copctl(&["hosts", "all"], env);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    stderr(&o).replace(&p.root.display().to_string(), "[PLACE]")
}

#[test]
fn mistakes_are_errors_at_their_line() {
    assert_eq!(
        refused("[defaults]\nforks = many\n", &[]),
        "  x [PLACE]/cwd/ansible.cfg:2:1: [defaults] forks = many: not a whole number
   ,-[[PLACE]/cwd/ansible.cfg:2:1]
 1 | [defaults]
 2 | forks = many
   : ^^^^^^|^^^^^
   :       `-- this setting
   `----
  help: write a whole number, e.g. 20

"
    );
    assert_eq!(
        refused("[privilege_escalation]\nbecome = sure\n", &[]),
        "  x [PLACE]/cwd/ansible.cfg:2:1: [privilege_escalation] become = sure: not a boolean
   ,-[[PLACE]/cwd/ansible.cfg:2:1]
 1 | [privilege_escalation]
 2 | become = sure
   : ^^^^^^|^^^^^^
   :       `-- this setting
   `----
  help: write True or False (or yes/no, on/off, 1/0, y/n, t/f, as Ansible reads them)

"
    );
    assert_eq!(
        refused("[defaults]\nremote_user deploy\n", &[]),
        "  x [PLACE]/cwd/ansible.cfg:2:1: expected `key = value` or a `[section]` header
   ,-[[PLACE]/cwd/ansible.cfg:2:1]
 1 | [defaults]
 2 | remote_user deploy
   : ^^^^^^^^^|^^^^^^^^
   :          `-- not a setting
   `----
  help: Ansible refuses this file too (configparser's parsing error); comment the line out with #

"
    );
    assert_eq!(
        refused("[defaults]\nforks = 5\n", &[("ANSIBLE_TIMEOUT", "soon")]),
        "  x ANSIBLE_TIMEOUT=soon: not a whole number\n  help: write a whole number, e.g. 20\n\n"
    );
}

#[test]
fn a_become_method_other_than_sudo_or_su_is_refused_where_it_would_apply() {
    let p = Place::new();
    p.write("cwd/ansible.cfg", "[privilege_escalation]\nbecome_method = doas\n")
        .write("cwd/inventory/inventory.ini", "h1 ansible_connection=local\n");
    // Nothing connects for `hosts`; `exec` would become with it.
    assert!(p.copctl(&["hosts", "all"], &[]).status.success());
    let o = p.copctl(&["exec", "all", "--", "true"], &[]);
    assert_eq!(
        (o.status.code(), stderr(&o).replace(&p.root.display().to_string(), "[PLACE]")),
        (
            Some(1),
            "  x [PLACE]/cwd/ansible.cfg:2: become_method = doas: copctl becomes with sudo or su
  help: set become_method = sudo or su (or leave it out), or give --become-method

"
            .to_string()
        )
    );
    // su is one copctl has: on a local connection it is refused with what to use instead.
    p.write("cwd/ansible.cfg", "[privilege_escalation]\nbecome = true\nbecome_method = su\n");
    let o = p.copctl(&["exec", "all", "--", "true"], &[]);
    assert_eq!(
        (o.status.code(), stderr(&o)),
        (
            Some(1),
            "  x h1: ansible_become_method=su with ansible_connection=local is not supported: use sudo\n\n".to_string()
        )
    );
}

/// A non-root login on lab hosts, the site an Ansible user already has: ansible.cfg names the
/// inventory directory, the login, its key (a path relative to the file), host key checking
/// off and become; the inventory names the hosts, group_vars/ and host_vars/ the rest. No
/// copctl flag, no COPCTL_* variable: run from another directory through ANSIBLE_CONFIG.
#[test]
fn a_run_driven_by_ansible_cfg_alone() {
    let opts = LabOptions { sudo_user: Some(("deploy".into(), None)), ..Default::default() };
    let site = Site::hosts_with(2, opts);
    let lab = site.lab();
    std::fs::create_dir_all(site.path("keys")).unwrap();
    std::fs::copy(&lab.client_key, site.path("keys/id_ed25519")).unwrap();
    let names: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
    site.write(
        "ansible.cfg",
        "[defaults]\ninventory = inventory\nremote_user = deploy\nprivate_key_file = keys/id_ed25519\n\
         host_key_checking = False\nforks = 2\n\n[privilege_escalation]\nbecome = True\n",
    )
    .write("inventory/hosts.ini", format!("[lab]\n{}\n", names.join("\n")))
    .write("inventory/group_vars/lab.yml", "marker: from group_vars\n");
    // lab-2's own ansible_user wins over remote_user, as in Ansible (root needs no sudo).
    for (i, h) in lab.hosts.iter().enumerate() {
        let user = if i == 1 { "ansible_user: root\n" } else { "" };
        site.write(&format!("inventory/host_vars/{}.yml", names[i]), format!("ansible_host: {}\n{user}", h.addr));
    }
    site.write(
        "inventory/playbooks/who.yaml",
        "plays:\n  - name: who\n    hosts: lab\n    steps:\n      - name: as whom\n        \
         shell: \"echo {{ marker | quote }} $(id -un) $SUDO_USER > /root/who\"\n",
    );
    std::fs::create_dir_all(site.path("elsewhere")).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_copctl"));
    c.args(["run", "who", "--output", "json"])
        .current_dir(site.path("elsewhere"))
        .env("ANSIBLE_CONFIG", site.path("ansible.cfg"))
        .env("HOME", site.path("home"))
        .env("NO_COLOR", "1")
        .env_remove("SSH_AUTH_SOCK");
    for (k, _) in std::env::vars() {
        if k.starts_with("ANSIBLE_") || k.starts_with("COPCTL_") {
            c.env_remove(k);
        }
    }
    c.env("ANSIBLE_CONFIG", site.path("ansible.cfg"));
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(lab.path(0, "/root/who")).unwrap(), "from group_vars root deploy\n");
    assert_eq!(std::fs::read_to_string(lab.path(1, "/root/who")).unwrap(), "from group_vars root\n");
    assert!(
        stderr(&o).contains(&format!(
            "warning: host_key_checking = False ({}:5): host keys are not verified",
            site.path("ansible.cfg").display()
        )),
        "{}",
        stderr(&o)
    );
}

/// The example site: group_vars/gpu.yml read as ansible-inventory reads it, and its vaulted
/// registry password, opened by ansible-vault and copctl with the example password.
#[test]
fn the_example_sites_group_vars_and_vault_file() {
    let ours = copctl(None, &["inventory", "host", "cop-gpu-1"]);
    let theirs = ansible_cmd("ansible-inventory")
        .args(["-i", "inventory/inventory.ini", "--host", "cop-gpu-1"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let json = |o: &Output| serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
    assert_eq!(json(&ours), json(&theirs));
    assert_eq!(json(&ours)["gpu_node"], serde_json::Value::Bool(true));

    let d = tempfile::tempdir().unwrap();
    let pw = d.path().join("pw");
    std::fs::write(&pw, "change-me-vault\n").unwrap();
    let pw = pw.display().to_string();
    let file = "inventory/files/registry-secrets.yml";
    let theirs = ansible_cmd("ansible-vault")
        .args(["view", "--vault-password-file", &pw, file])
        .current_dir(repo())
        .output()
        .unwrap();
    let ours = copctl(None, &["vault", "view", "--vault-password-file", &pw, file]);
    assert_eq!(stdout(&ours), stdout(&theirs));
    assert!(stdout(&ours).ends_with("registry_password: change-me\n"), "{}", stdout(&ours));
    // `-i inventory/` takes no file of files/ for an inventory.
    let o = copctl(None, &["hosts", "gpu", "-i", "inventory/"]);
    assert_eq!((stdout(&o).as_str(), stderr(&o).as_str()), ("cop-gpu-1\ncop-gpu-2\n", ""));
}

/// group_vars/ and host_vars/ beside the playbooks (the site's playbooks/, or --playbook-dir),
/// each above its inventory-adjacent counterpart, as `ansible-inventory --playbook-dir` reads
/// them.
#[test]
fn playbook_adjacent_group_vars_and_host_vars() {
    let p = Place::new();
    p.write("cwd/inv/hosts", "[web]\nw1 hv=inv_host\nw2\n[web:vars]\ngi=inv_group\n")
        .write("cwd/inv/group_vars/all.yml", "a1: inv_all\na2: inv_all\na3: inv_all\n")
        .write("cwd/inv/group_vars/web.yml", "a3: inv_web\ng1: inv_web\ng2: inv_web\ngi: inv_web\n")
        .write("cwd/inv/host_vars/w1.yml", "hv: inv_hostvars\nh2: inv_hostvars\nh3: inv_hostvars\n");
    for dir in ["cwd/inv/playbooks", "cwd/pb"] {
        p.write(&format!("{dir}/group_vars/all.yml"), "a2: pb_all\na3: pb_all\ng1: pb_all\n")
            .write(&format!("{dir}/group_vars/web/main.yml"), "g2: pb_web\nhv: pb_web\nh3: pb_web\n")
            .write(&format!("{dir}/host_vars/w1.yml"), "h2: pb_hostvars\n");
    }
    let theirs = |what: &[&str]| {
        let mut c = ansible_cmd("ansible-inventory");
        c.args(["-i", "inv/hosts", "--playbook-dir", "pb"]).args(what);
        p.isolate(&mut c, &[]);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let ours = |args: &[&str]| {
        let o = p.copctl(args, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stderr(&o), "");
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    for h in ["w1", "w2"] {
        let want = theirs(&["--host", h]);
        assert_eq!(ours(&["-i", "inv/hosts", "--playbook-dir", "pb", "inventory", "host", h]), want, "{h}");
        // The site's playbooks/ beside the inventory is the playbook directory by default.
        assert_eq!(ours(&["-i", "inv/hosts", "inventory", "host", h]), want, "{h}");
    }
    assert_eq!(ours(&["-i", "inv/hosts", "inventory", "list"]), theirs(&["--list"]));
    // A file no group reads is named, as beside the inventory.
    p.write("cwd/pb/group_vars/wbe.yml", "x: 1\n");
    let o = p.copctl(&["-i", "inv/hosts", "--playbook-dir", "pb", "hosts", "all"], &[]);
    assert_eq!(stderr(&o), "warning: pb/group_vars/wbe.yml is not read: the inventory has no group 'wbe'\n");
}

/// What would change which files are read or where copctl connects is said without -v.
#[test]
fn keys_that_would_change_the_run_are_warned_about() {
    let p = Place::new();
    p.write(
        "cwd/ansible.cfg",
        "[inventory]\nignore_patterns = artifacts, credentials\n\n[ssh_connection]\n\
         ssh_args = -o ControlMaster=auto -o ProxyJump=admin@bastion\n",
    )
    .write("cwd/inventory/inventory.ini", "h1\n");
    let o = p.copctl(&["hosts", "all"], &[]);
    assert_eq!(
        stderr(&o).replace(&p.root.display().to_string(), "[PLACE]"),
        "warning: [PLACE]/cwd/ansible.cfg:2: [inventory] ignore_patterns is not applied by copctl: a directory source \
         skips no file by pattern, so it may read files this setting would skip
warning: [PLACE]/cwd/ansible.cfg:5: [ssh_connection] ssh_args names a jump host and is not applied by copctl: set \
         ProxyJump in ~/.ssh/config, or [ssh_connection] ssh_common_args = -o ProxyJump=HOST
"
    );
}
