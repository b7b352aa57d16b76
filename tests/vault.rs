//! copctl's vault against ansible-vault itself (ansible-core in the peers' venv, the oracle):
//! what ansible-vault encrypts copctl decrypts to the same bytes, what copctl encrypts
//! ansible-vault decrypts to the same bytes, the same salt gives byte-identical files, and both
//! refuse a wrong password or a tampered HMAC (copctl's message pinned whole).
//!
//! Then copctl as a person uses it: env.yaml, `-e @file` and the inventory encrypted by
//! ansible-vault (whole, or values from `encrypt_string`) read with `--vault-password-file`, a
//! password script, `--vault-id`s and ANSIBLE_VAULT_PASSWORD_FILE, their values masked whatever
//! their names; `copctl vault` and ansible-vault reading each other's files; the errors (wrong
//! password, tampered file, no password, a YAML error inside a vaulted file) pinned whole; and a
//! run on a lab host where a vaulted password reaches a file and nothing else.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use copctl::error::Source;
use copctl::vault::{self, VaultOptions, VaultSecret, VaultSecrets};

/// Passwords that trip naive handling: unicode, an inner newline, quotes, surrounding blanks
/// (stripped by Ansible from a file), shell metacharacters.
const PASSWORDS: &[&str] = &["pw1", "pässwörd ✓ 🔑", "line1\nline2", "it's \"quoted\" $HOME `x`", "  padded \t\n\n"];

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn write(&self, name: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    }
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.write(name, format!("#!/bin/sh\n{body}\n"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }
}

fn ansible_vault(args: &[&str]) -> Output {
    ansible_cmd("ansible-vault").args(args).output().expect("ansible-vault runs")
}

fn ok(o: Output) -> Vec<u8> {
    assert!(o.status.success(), "ansible-vault failed: {}", stderr(&o));
    o.stdout
}

fn secrets(opts: VaultOptions) -> VaultSecrets {
    VaultSecrets::from_sources_with_prompt(&opts, &mut |p: &str| panic!("unexpected prompt {p}")).unwrap()
}

fn from_file(pw: &Path) -> VaultSecrets {
    secrets(VaultOptions { password_files: vec![pw.to_path_buf()], ..VaultOptions::default() })
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed);
    (0..n).map(|_| r.next() as u8).collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn ansible_vault_encrypts_copctl_decrypts() {
    let d = Dir::new();
    let plaintexts: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("text", b"registry_password: s3cret\n".to_vec()),
        ("unicode", "ünïcødé — 鍵\r\nno newline at end".as_bytes().to_vec()),
        ("block", vec![b'x'; 16]),
        ("binary-3MiB", random_bytes(3 << 20, 7)),
    ];
    // One thread per password: each ansible-vault run is mostly Python starting up.
    std::thread::scope(|scope| {
        for (i, pw) in PASSWORDS.iter().enumerate() {
            let (d, plaintexts) = (&d, &plaintexts);
            scope.spawn(move || {
                let pw_file = d.write(&format!("pw{i}"), pw);
                let secrets = from_file(&pw_file);
                for (name, plain) in plaintexts {
                    // The big one once, the others with every password.
                    if name.starts_with("binary") && i > 1 {
                        continue;
                    }
                    let f = d.write(&format!("{name}-{i}"), plain);
                    let label = format!("lab{i}");
                    let (flag, expect_header) = if i % 2 == 0 {
                        (format!("--vault-password-file={}", s(&pw_file)), "$ANSIBLE_VAULT;1.1;AES256\n".to_string())
                    } else {
                        (format!("--vault-id={label}@{}", s(&pw_file)), format!("$ANSIBLE_VAULT;1.2;AES256;{label}\n"))
                    };
                    ok(ansible_vault(&["encrypt", &flag, s(&f)]));
                    let vaulted = std::fs::read(&f).unwrap();
                    assert!(
                        vaulted.starts_with(expect_header.as_bytes()),
                        "{name}: {}",
                        String::from_utf8_lossy(&vaulted[..40])
                    );
                    assert!(vault::is_vaulted(&vaulted));
                    let got = secrets.decrypt_file(&f).unwrap().expect("vaulted");
                    assert!(got[..] == plain[..], "{name} with password #{i}: plaintext differs");
                }
            });
        }
    });
}

#[test]
fn copctl_encrypts_ansible_vault_decrypts() {
    let d = Dir::new();
    let plaintexts: Vec<Vec<u8>> =
        vec![vec![], b"a: 1\n".to_vec(), "ünï \"q\" 'q'\n\n".as_bytes().to_vec(), random_bytes(2 << 20, 11)];
    std::thread::scope(|scope| {
        for (i, pw) in PASSWORDS.iter().enumerate() {
            let (d, plaintexts) = (&d, &plaintexts);
            scope.spawn(move || {
                let pw_file = d.write(&format!("pw{i}"), pw);
                let (label, secret) = {
                    let all = from_file(&pw_file);
                    let (l, s) = all.encrypt_secret(None).unwrap();
                    (l.to_string(), s.clone())
                };
                assert_eq!(label, "default");
                for (j, plain) in plaintexts.iter().enumerate() {
                    if j == 3 && i > 0 {
                        continue;
                    }
                    let vault_id = (i % 2 == 1).then(|| format!("id{i}"));
                    let text = vault::encrypt(plain, &secret, vault_id.as_deref()).unwrap();
                    let f = d.write(&format!("c{i}-{j}"), &text);
                    let flag = match &vault_id {
                        Some(id) => format!("--vault-id={id}@{}", s(&pw_file)),
                        None => format!("--vault-password-file={}", s(&pw_file)),
                    };
                    let out = ok(ansible_vault(&["decrypt", &flag, "--output", "-", s(&f)]));
                    assert!(out == *plain, "plaintext #{j} with password #{i} differs after ansible-vault decrypt");
                }
            });
        }
    });
}

#[test]
fn same_salt_gives_byte_identical_output() {
    let d = Dir::new();
    let pw_file = d.write("pw", "pässwörd\n");
    let plain = d.write("plain", "db_password: x\n");
    let salt = "0123456789abcdef0123456789abcdef";
    let secret = VaultSecret::new("pässwörd".as_bytes().to_vec());
    for id in [None, Some("prod")] {
        let flag = match id {
            Some(id) => format!("--vault-id={id}@{}", s(&pw_file)),
            None => format!("--vault-password-file={}", s(&pw_file)),
        };
        let theirs = ok(ansible_cmd("ansible-vault")
            .env("ANSIBLE_VAULT_ENCRYPT_SALT", salt)
            .args(["encrypt", &flag, "--output", "-", s(&plain)])
            .output()
            .unwrap());
        let ours = vault::encrypt_with_salt(b"db_password: x\n", &secret, id, salt.as_bytes()).unwrap();
        assert_eq!(ours, String::from_utf8(theirs).unwrap());

        let theirs = ok(ansible_cmd("ansible-vault")
            .env("ANSIBLE_VAULT_ENCRYPT_SALT", salt)
            .args(["encrypt_string", &flag, "--name", "db_password", "it's ü"])
            .output()
            .unwrap());
        let ours = vault::encrypt_with_salt("it's ü".as_bytes(), &secret, id, salt.as_bytes()).unwrap();
        assert_eq!(vault::encrypt_string_block(&ours, Some("db_password")) + "\n", String::from_utf8(theirs).unwrap());
    }
}

#[test]
fn encrypt_string_values_in_yaml_both_ways() {
    let d = Dir::new();
    let pw_file = d.write("pw", "line1\nline2 ✓\n");
    let flag = format!("--vault-id=lab@{}", s(&pw_file));
    let values = ["s3cret", "ünï \"q\" 'q' {{ not_a_template }}", "multi\nline\n"];
    // ansible-vault → copctl: its encrypt_string output pasted into a vars file.
    let mut yaml = String::from("user: admin\n");
    for (i, v) in values.iter().enumerate() {
        let out = ok(ansible_vault(&["encrypt_string", &flag, "--name", &format!("v{i}"), v]));
        yaml.push_str(&String::from_utf8(out).unwrap());
    }
    let secrets = secrets(VaultOptions { vault_ids: vec![format!("lab@{}", s(&pw_file))], ..VaultOptions::default() });
    let got = vault::parse_vars(&Source::new("group_vars/all.yml", yaml), &secrets).unwrap();
    let want = serde_json::json!({"user": "admin", "v0": values[0], "v1": values[1], "v2": values[2]});
    assert_eq!(got.value, want);
    assert_eq!(got.secrets.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["v0", "v1", "v2"]);
    assert!(got.secrets.iter().all(|s| s.vault_id == "lab"));

    // copctl → Ansible: copctl's blocks in a vars file that Ansible itself loads (`-e @file`).
    let (_, secret) = secrets.encrypt_secret(None).unwrap();
    let mut yaml = String::new();
    for (i, v) in values.iter().enumerate() {
        let text = vault::encrypt(v.as_bytes(), secret, Some("lab")).unwrap();
        yaml.push_str(&vault::encrypt_string_block(&text, Some(&format!("v{i}"))));
        yaml.push('\n');
    }
    let vars = d.write("vars.yml", yaml);
    let out = ok(ansible_cmd("ansible")
        .args(["localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug"])
        .args(["-a", "msg={{ [v0, v1, v2] | to_json }}", "-e", &format!("@{}", s(&vars)), &flag])
        .output()
        .unwrap());
    let out = String::from_utf8(out).unwrap();
    let json: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let msg: serde_json::Value = serde_json::from_str(json["msg"].as_str().unwrap()).unwrap();
    assert_eq!(msg, serde_json::json!(values));
}

#[test]
fn password_scripts_and_vault_ids() {
    let d = Dir::new();
    let plain = d.write("plain", "token: abc\n");
    // A plain script (stdout stripped of CR/LF only: the surrounding spaces are the password).
    let script = d.script("pass.sh", "printf ' from script \\r\\n'");
    // A client script answers per label and exits 2 for an unknown one.
    let client = d.script(
        "keys-client.sh",
        "case \"$2\" in prod) echo 'prod pässword';; dev) echo dev;; *) echo \"no key for $2\" >&2; exit 2;; esac",
    );
    let dev_file = d.write("dev-pw", "dev\n");

    let enc_script = d.write("by-script", "");
    std::fs::copy(&plain, &enc_script).unwrap();
    ok(ansible_vault(&["encrypt", &format!("--vault-id=ops@{}", s(&script)), s(&enc_script)]));
    let enc_client = d.write("by-client", "");
    std::fs::copy(&plain, &enc_client).unwrap();
    ok(ansible_vault(&["encrypt", &format!("--vault-id=prod@{}", s(&client)), s(&enc_client)]));

    // Several --vault-id: dev (a file) first, the prod client, the ops script; each file opens.
    let opts = VaultOptions {
        vault_ids: vec![format!("dev@{}", s(&dev_file)), format!("prod@{}", s(&client)), format!("ops@{}", s(&script))],
        ..VaultOptions::default()
    };
    let all = secrets(opts);
    assert_eq!(all.labels(), ["dev", "prod", "ops"]);
    for f in [&enc_script, &enc_client] {
        assert_eq!(&all.decrypt_file(f).unwrap().unwrap()[..], b"token: abc\n", "{}", f.display());
    }
    let (_, used) = all.decrypt_and_get_vault_id(&std::fs::read(&enc_client).unwrap()).unwrap();
    assert_eq!(used, "prod");

    // copctl encrypts with the client's prod secret; ansible-vault asks the same client.
    let (_, prod) = all.encrypt_secret(Some("prod")).unwrap();
    let ours = d.write("ours", vault::encrypt(b"x: 1\n", prod, Some("prod")).unwrap());
    let out = ok(ansible_vault(&["decrypt", &format!("--vault-id=prod@{}", s(&client)), "--output", "-", s(&ours)]));
    assert_eq!(out, b"x: 1\n");

    // A label the client does not know: both refuse.
    let theirs = ansible_vault(&["decrypt", &format!("--vault-id=qa@{}", s(&client)), "--output", "-", s(&ours)]);
    assert!(!theirs.status.success());
    assert!(stderr(&theirs).contains("did not find a secret for vault-id=qa"), "{}", stderr(&theirs));
    let ours = VaultSecrets::from_sources_with_prompt(
        &VaultOptions { vault_ids: vec![format!("qa@{}", s(&client))], ..VaultOptions::default() },
        &mut |_: &str| unreachable!(),
    )
    .unwrap_err();
    assert_eq!(
        ours.to_string(),
        format!("Vault password client script {} did not find a secret for vault-id=qa: no key for qa", s(&client))
    );

    // ANSIBLE_VAULT_PASSWORD_FILE, through ansible_cfg and VaultOptions::with_config, reads the same way.
    let env_opts = temp_env("ANSIBLE_VAULT_PASSWORD_FILE", s(&script), || {
        VaultOptions::default().with_config(&copctl::ansible_cfg::AnsibleCfg::load().unwrap())
    });
    assert_eq!(env_opts.config_password_file.as_deref(), Some(script.as_path()));
    assert_eq!(&secrets(env_opts).decrypt_file(&enc_script).unwrap().unwrap()[..], b"token: abc\n");
}

/// Sets one variable for the duration of `f` (this test binary's other tests do not read it).
fn temp_env<T>(key: &str, value: &str, f: impl FnOnce() -> T) -> T {
    // SAFETY: no other thread of this test binary reads or writes ANSIBLE_VAULT_* variables.
    unsafe { std::env::set_var(key, value) };
    let out = f();
    unsafe { std::env::remove_var(key) };
    out
}

#[test]
fn wrong_password_and_tampered_hmac_are_refused_by_both() {
    let d = Dir::new();
    let right = d.write("right", "right\n");
    let wrong = d.write("wrong", "wrong\n");
    let f = d.write("secret.yml", "a: 1\n");
    ok(ansible_vault(&["encrypt", &format!("--vault-password-file={}", s(&right)), s(&f)]));
    let text = std::fs::read_to_string(&f).unwrap();

    // Flip one hex digit of the HMAC (line 2 of the inner text is the HMAC, hexlified again).
    let env_lines: Vec<&str> = text.lines().collect();
    let body: String = env_lines[1..].concat();
    let inner = String::from_utf8(hex::decode(&body).unwrap()).unwrap();
    let mut parts: Vec<String> = inner.splitn(3, '\n').map(str::to_string).collect();
    let flipped = if parts[1].starts_with('0') { "1" } else { "0" };
    parts[1].replace_range(0..1, flipped);
    let tampered_body = hex::encode(parts.join("\n"));
    let mut tampered = String::from("$ANSIBLE_VAULT;1.1;AES256\n");
    for chunk in tampered_body.as_bytes().chunks(80) {
        tampered.push_str(std::str::from_utf8(chunk).unwrap());
        tampered.push('\n');
    }
    let t = d.write("tampered.yml", &tampered);

    for (file, pw) in [(&f, &wrong), (&t, &right)] {
        let theirs = ansible_vault(&["decrypt", &format!("--vault-password-file={}", s(pw)), "--output", "-", s(file)]);
        assert!(!theirs.status.success());
        assert!(
            stderr(&theirs).contains("Decryption failed (no vault secrets were found that could decrypt)"),
            "{}",
            stderr(&theirs)
        );
        let err = from_file(pw).decrypt_file(file).unwrap_err();
        assert_eq!(
            format!("{err}\nhelp: {}", help(&err)),
            format!(
                "Decryption failed (no vault secrets were found that could decrypt) on {}\nhelp: the password is wrong \
                 or the file was tampered with (tried the secrets for vault ids: default): pass it with --vault-id \
                 LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE) with \
                 the password it was encrypted with",
                file.display()
            )
        );
    }

    // A 1.2 file whose label has no secret: the help names the missing --vault-id.
    let g = d.write("prod.yml", "b: 2\n");
    ok(ansible_vault(&["encrypt", &format!("--vault-id=prod@{}", s(&right)), s(&g)]));
    let err = secrets(VaultOptions { vault_ids: vec![format!("dev@{}", s(&wrong))], ..VaultOptions::default() })
        .decrypt_file(&g)
        .unwrap_err();
    assert_eq!(
        help(&err),
        "it is encrypted for vault id `prod` and no secret has that label (tried: dev): add --vault-id prod@FILE (or prod@prompt)"
    );

    // An inline value with the wrong password: the error points at its line.
    let out =
        ok(ansible_vault(&["encrypt_string", &format!("--vault-password-file={}", s(&right)), "--name", "pw", "x"]));
    let yaml = format!("user: admin\n{}", String::from_utf8(out).unwrap());
    let err = vault::parse_vars(&Source::new("host_vars/web1.yml", yaml), &from_file(&wrong)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "host_vars/web1.yml:2:5: Decryption failed (no vault secrets were found that could decrypt) on the !vault value at host_vars/web1.yml:2"
    );
}

fn help(e: &copctl::error::Error) -> String {
    use miette::Diagnostic;
    e.help().map(|h| h.to_string()).unwrap_or_default()
}

// --- copctl itself: the flags, the site files, `copctl vault`, a run on lab hosts ---

/// The password every site test below encrypts with, and one that is not it.
const SITE_PW: &str = "correct horse ✓";

/// `ansible-vault ARGS` run in `site`'s directory; must succeed.
fn av_in(site: &Site, args: &[&str]) -> Vec<u8> {
    ok(ansible_cmd("ansible-vault").current_dir(site.dir()).args(args).output().expect("ansible-vault runs"))
}

/// A scratch site with `pw` (the password), `wrong-pw`, and a local host `here` in [web]
/// (`ansible_connection=local`, so `copctl run` needs no SSH) and a host `d1` in [db].
fn vault_site() -> Site {
    let site = Site::new();
    site.write("pw", format!("{SITE_PW}\n"))
        .write("wrong-pw", "not it\n")
        .write("inventory.ini", "[web]\nhere ansible_connection=local\n[db]\nd1\n")
        // `show`: its hosts come from a variable; its step prints two variables.
        .write(
            "playbooks/show.yaml",
            "plays:\n  - name: show\n    hosts: \"{{ target }}\"\n    steps:\n      - name: values\n        debug: { msg: \"values: {{ neutral_setting }} / {{ registry_password }}\" }\n",
        );
    site
}

/// `ansible-vault encrypt_string --name NAME VALUE` with `flag`, as a line for a YAML file.
fn av_string(site: &Site, flag: &str, name: &str, value: &str) -> String {
    String::from_utf8(av_in(site, &["encrypt_string", flag, "--name", name, value])).unwrap()
}

/// `copctl plan show` printed for the hosts `target` names.
fn plan_of(hosts: &[&str]) -> String {
    let mut out = String::from("playbook show\n  play show (hosts: {{ target }})\n    batch 1/1\n");
    for h in hosts {
        out.push_str(&format!("      {h}\n        - [debug] values  (read-only)\n"));
    }
    out + "1 tasks; hosts that may change: none\n"
}

/// The human output of `copctl run show` on `here` (timings normalized), with the step's message.
/// The debug message of `show` when it reads secrets: its source, naming them (never its text).
fn withheld(secrets: &str) -> String {
    format!(
        "values: {{{{ neutral_setting }}}} / {{{{ registry_password }}}}    # rendered text withheld: it reads secret variables: {secrets}"
    )
}

fn run_output(message: &str) -> String {
    format!(
        "copctl run show: 1 tasks on 1 host(s)\nok: [here] show › values ([T]) — {message}\n\nRECAP\nhost     ok  changed  failed  skipped  unreachable  ignored     time\nhere      1        0       0        0            0        0 [T]\n\nslowest steps:\n [T]  here › show › values\n\nok: nothing changed in [T] (exit 0)\n"
    )
}

#[test]
fn an_env_yaml_encrypted_by_ansible_vault_is_read_with_the_password_and_masked() {
    let site = vault_site();
    site.write("env.yaml", "target: web\nregistry_password: s3cret-Reg\nneutral_setting: plain-looking\n");
    av_in(&site, &["encrypt", "--vault-password-file", "pw", "env.yaml"]);
    assert!(site.read("env.yaml").starts_with("$ANSIBLE_VAULT;1.1;AES256\n"));

    // plan sees `target` (the hosts of [web]); the same through ANSIBLE_VAULT_PASSWORD_FILE.
    site.test().args(["plan", "show", "--vault-password-file", "pw"]).stdout(&plan_of(&["here"])).stderr("").run();
    site.test()
        .args(["plan", "show"])
        .env_var("ANSIBLE_VAULT_PASSWORD_FILE", site.path("pw"))
        .stdout(&plan_of(&["here"]))
        .run();
    // A run uses both values and prints neither: every variable of a vaulted file is a secret,
    // `neutral_setting` too.
    site.test()
        .args(["run", "show", "--vault-password-file", "pw"])
        .stdout_normalized(&run_output(&withheld("neutral_setting, registry_password")))
        .stderr("")
        .run();
    // The same values in cleartext: only the secret-named one is masked.
    site.write("env.yaml", "target: web\nregistry_password: s3cret-Reg\nneutral_setting: plain-looking\n");
    site.test().args(["run", "show"]).stdout_normalized(&run_output(&withheld("registry_password"))).run();
}

#[test]
fn a_vaulted_inventory_is_read_with_a_vault_id_and_its_variables_are_masked() {
    let site = vault_site();
    site.write("inventory.ini", "[web]\nw1 ansible_host=10.9.8.7 rack=r12\n[db]\nd1\n");
    av_in(&site, &["encrypt", "--vault-id", "inv@pw", "inventory.ini"]);
    assert!(site.read("inventory.ini").starts_with("$ANSIBLE_VAULT;1.2;AES256;inv\n"));
    site.test()
        .args(["inventory", "host", "w1", "--vault-id", "inv@pw"])
        .stdout("{\n    \"ansible_host\": \"********\",\n    \"rack\": \"********\"\n}\n")
        .stderr("")
        .run();
    site.test().args(["hosts", "all", "--vault-id", "inv@pw"]).stdout("w1\nd1\n").run();
    // Without a password: where, and which flag gives it.
    site.test()
        .args(["hosts", "all"])
        .status(1)
        .stderr(
            "  x inventory.ini:1:1: Attempting to decrypt but no vault secrets found: inventory.ini is vault-encrypted\n   ,-[inventory.ini:1:1]\n 1 | $ANSIBLE_VAULT;1.2;AES256;inv\n   : ^^^^^^^^^^^^^^|^^^^^^^^^^^^^^\n   :               `-- vault-encrypted\n   `----\n  help: give the vault password: pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE)\n\n",
        )
        .run();
}

#[test]
fn inline_values_from_ansible_vault_encrypt_string_in_env_yaml_and_extra_vars_files() {
    let site = vault_site();
    let flag = "--vault-password-file=pw";
    site.write(
        "env.yaml",
        format!(
            "# settings\ntarget: web\n{}registry_password: cleartext-but-secret-named\n",
            av_string(&site, flag, "neutral_setting", "from-inline-vault")
        ),
    );
    site.write("extra.yaml", av_string(&site, flag, "target", "db"));
    site.test().args(["plan", "show", "--vault-password-file", "pw"]).stdout(&plan_of(&["here"])).run();
    // `-e @file` with an inline value: it wins over env.yaml, as any extra var.
    site.test()
        .args(["plan", "show", "-e", "@extra.yaml", "--vault-password-file", "pw"])
        .stdout(&plan_of(&["d1"]))
        .run();
    site.test()
        .args(["run", "show", "--vault-password-file", "pw"])
        .stdout_normalized(&run_output(&withheld("neutral_setting, registry_password")))
        .run();
    // Without the password, the value's own line is named (a comment line before it).
    site.test()
        .args(["plan", "show"])
        .status(1)
        .stderr(
            "  x env.yaml:3:18: Attempting to decrypt but no vault secrets found: the !vault value at env.yaml:3 is vault-encrypted\n   ,-[env.yaml:3:18]\n 2 | target: web\n 3 | neutral_setting: !vault |\n   :                  ^^^^|^^^\n   :                      `-- this value\n 4 |           $ANSIBLE_VAULT;1.1;AES256\n   `----\n  help: give the vault password: pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE)\n\n",
        )
        .run();
}

#[test]
fn a_password_script_and_two_vault_ids() {
    let site = vault_site();
    // A script printing the password (what --vault-password-file runs when it is executable).
    site.write("pw.sh", format!("#!/bin/sh\nprintf '%s\\n' '{SITE_PW}'\n"));
    std::fs::set_permissions(site.path("pw.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    site.write("dev-pw", "dev password\n");
    // Two values under two vault ids: dev (a file) and prod (the script).
    let env = format!(
        "target: web\n{}{}",
        av_string(&site, "--vault-id=prod@pw.sh", "registry_password", "prod-value"),
        av_string(&site, "--vault-id=dev@dev-pw", "neutral_setting", "dev-value"),
    );
    assert!(env.contains("$ANSIBLE_VAULT;1.2;AES256;dev\n") && env.contains("$ANSIBLE_VAULT;1.2;AES256;prod\n"));
    site.write("env.yaml", &env);
    site.test()
        .args(["run", "show", "--vault-id", "dev@dev-pw", "--vault-id", "prod@pw.sh"])
        .stdout_normalized(&run_output(&withheld("neutral_setting, registry_password")))
        .run();
    // The same two from ANSIBLE_VAULT_IDENTITY_LIST, as Ansible reads it (comma-separated).
    site.test()
        .args(["run", "show"])
        .env_var("ANSIBLE_VAULT_IDENTITY_LIST", "dev@dev-pw, prod@pw.sh")
        .stdout_normalized(&run_output(&withheld("neutral_setting, registry_password")))
        .run();
    // The values themselves, through a vault-encrypted -e file that the template of `target` reads.
    site.write(
        "sel.yaml",
        "target: \"{{ 'db' if neutral_setting == 'dev-value' and registry_password == 'prod-value' else 'web' }}\"\n",
    );
    av_in(&site, &["encrypt", "--vault-id", "prod@pw.sh", "sel.yaml"]);
    site.test()
        .args(["plan", "show", "-e", "@sel.yaml", "--vault-id", "dev@dev-pw", "--vault-password-file", "pw.sh"])
        .stdout(&plan_of(&["d1"]))
        .run();
    // Only one of the two: the other value's line is named, and the missing label.
    site.test()
        .args(["plan", "show", "--vault-id", "dev@dev-pw"])
        .status(1)
        .stderr(
            "  x env.yaml:2:20: Decryption failed (no vault secrets were found that could decrypt) on the !vault value at env.yaml:2\n   ,-[env.yaml:2:20]\n 1 | target: web\n 2 | registry_password: !vault |\n   :                    ^^^^|^^^\n   :                        `-- this value\n 3 |           $ANSIBLE_VAULT;1.2;AES256;prod\n   `----\n  help: it is encrypted for vault id `prod` and no secret has that label (tried: dev): add --vault-id prod@FILE (or prod@prompt)\n\n",
        )
        .run();
}

#[test]
fn wrong_password_tampered_file_and_no_password_messages() {
    let site = vault_site();
    site.write("env.yaml", "target: web\nregistry_password: x1\nneutral_setting: y\n");
    av_in(&site, &["encrypt", "--vault-password-file", "pw", "env.yaml"]);
    let wrong = "  x env.yaml:1:1: Decryption failed (no vault secrets were found that could decrypt) on env.yaml\n   ,-[env.yaml:1:1]\n 1 | $ANSIBLE_VAULT;1.1;AES256\n   : ^^^^^^^^^^^^|^^^^^^^^^^^^\n   :             `-- vault-encrypted\n   `----\n  help: the password is wrong or the file was tampered with (tried the secrets for vault ids: default): pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE) with the password it was encrypted with\n\n";
    site.test().args(["plan", "show", "--vault-password-file", "wrong-pw"]).status(1).stderr(wrong).run();
    // One changed digit of the ciphertext: the HMAC no longer matches, the same message.
    let text = site.read("env.yaml");
    let last = text.trim_end().len() - 1;
    // '1' or '2' keeps the inner text hex ("31"/"32" is "1"/"2", "61"/"62" is "a"/"b").
    let flipped = if &text[last..last + 1] == "1" { "2" } else { "1" };
    site.write("env.yaml", format!("{}{flipped}{}", &text[..last], &text[last + 1..]));
    site.test().args(["plan", "show", "--vault-password-file", "pw"]).status(1).stderr(wrong).run();
    // No password at all.
    site.test()
        .args(["plan", "show"])
        .status(1)
        .stderr(
            "  x env.yaml:1:1: Attempting to decrypt but no vault secrets found: env.yaml is vault-encrypted\n   ,-[env.yaml:1:1]\n 1 | $ANSIBLE_VAULT;1.1;AES256\n   : ^^^^^^^^^^^^|^^^^^^^^^^^^\n   :             `-- vault-encrypted\n   `----\n  help: give the vault password: pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE)\n\n",
        )
        .run();
    // A password file that is not there.
    site.test()
        .args(["plan", "show", "--vault-password-file", "nope"])
        .status(1)
        .stderr_normalized("  x The vault password file [SITE]/nope was not found\n  help: check the path given to --vault-id/--vault-password-file or in ANSIBLE_VAULT_PASSWORD_FILE\n\n")
        .run();
}

#[test]
fn ask_vault_pass_prompts_on_the_terminal() {
    let site = vault_site();
    site.write("env.yaml", "target: db\nregistry_password: x1\nneutral_setting: y\n");
    av_in(&site, &["encrypt", "--vault-password-file", "pw", "env.yaml"]);
    // A terminal (script(1) makes one) on which the password is typed: copctl asks there.
    let line = format!("{} plan show --ask-vault-pass", env!("CARGO_BIN_EXE_copctl"));
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(site.dir())
        .env("NO_COLOR", "1")
        .env("COPCTL_INVENTORY", "inventory.ini")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().expect("script(1) runs (util-linux)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(format!("{SITE_PW}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Vault password: \n"), "{text}");
    assert!(text.ends_with(&plan_of(&["d1"])), "{text}");
}

#[test]
fn a_site_without_vault_never_reads_a_password() {
    let site = vault_site();
    site.write("env.yaml", "target: web\nregistry_password: x1\nneutral_setting: y\n");
    // A missing password file and a prompt (there is no terminal to answer it): neither is touched.
    site.test()
        .args(["plan", "show", "--vault-password-file", "missing", "--ask-vault-pass", "--vault-id", "x@prompt"])
        .stdout(&plan_of(&["here"]))
        .stderr("")
        .run();
}

#[test]
fn errors_in_a_decrypted_file_name_its_line_and_never_quote_it() {
    let site = vault_site();
    site.write("env.yaml", "target: web\nneutral_setting: do-not-show-me\nregistry_password: [1, 2\nother: 3\n");
    av_in(&site, &["encrypt", "--vault-password-file", "pw", "env.yaml"]);
    site.test()
        .args(["plan", "show", "--vault-password-file", "pw"])
        .status(1)
        .stderr("  x env.yaml:4:6: illegal placement of ':' indicator\n  help: env.yaml is vault-encrypted, so its lines are not shown: `copctl vault view env.yaml` shows them\n\n")
        .run();
}

#[test]
fn copctl_vault_encrypt_and_encrypt_string_are_read_by_ansible() {
    let site = vault_site();
    let plain = "registry_password: ünï \"q\"\nport: 8443\n";
    site.write("secrets.yaml", plain);
    std::fs::set_permissions(site.path("secrets.yaml"), std::fs::Permissions::from_mode(0o640)).unwrap();
    site.test().args(["vault", "encrypt", "secrets.yaml", "--vault-id", "prod@pw"]).stdout("").stderr("").run();
    let text = site.read("secrets.yaml");
    assert!(text.starts_with("$ANSIBLE_VAULT;1.2;AES256;prod\n"), "{text}");
    let mode = std::fs::metadata(site.path("secrets.yaml")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640, "the mode is kept");
    let leftovers: Vec<_> = std::fs::read_dir(site.dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("copctl-vault"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left");
    assert_eq!(av_in(&site, &["view", "--vault-id", "prod@pw", "secrets.yaml"]), plain.as_bytes());
    // Encrypting twice is refused, as ansible-vault refuses it.
    site.test()
        .args(["vault", "encrypt", "secrets.yaml", "--vault-password-file", "pw"])
        .status(1)
        .stderr("  x input is already encrypted: secrets.yaml\n  help: it is a vault file already: `copctl vault view` shows it\n\n")
        .run();

    // encrypt_string, named, from an argument and from stdin: Ansible reads both values.
    let arg = site
        .test()
        .args(["vault", "encrypt_string", "--vault-password-file", "pw", "--name", "a_value", "it's ü"])
        .run();
    assert!(arg.stdout.starts_with("a_value: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n"), "{}", arg.stdout);
    let mut piped = site
        .command(["vault", "encrypt_string", "--vault-password-file", "pw", "--stdin-name", "b_value"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    piped.stdin.take().unwrap().write_all(b"line1\nline2\n").unwrap();
    let piped = piped.wait_with_output().unwrap();
    assert!(piped.status.success());
    site.write("vars.yaml", format!("{}{}", arg.stdout, String::from_utf8(piped.stdout).unwrap()));
    let out = ok(ansible_cmd("ansible")
        .current_dir(site.dir())
        .args(["localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug"])
        .args(["-a", "msg={{ [a_value, b_value] | to_json }}", "-e", "@vars.yaml", "--vault-password-file", "pw"])
        .output()
        .unwrap());
    let out = String::from_utf8(out).unwrap();
    let json: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let msg: serde_json::Value = serde_json::from_str(json["msg"].as_str().unwrap()).unwrap();
    assert_eq!(msg, serde_json::json!(["it's ü", "line1\nline2\n"]));

    // With two vault ids, the one to encrypt with must be named.
    site.test()
        .args(["vault", "encrypt_string", "--vault-id", "a@pw", "--vault-id", "b@wrong-pw", "x"])
        .status(1)
        .stderr("  x The vault-ids a,b are available to encrypt. Specify the vault-id to encrypt with --encrypt-vault-id\n  help: pass --encrypt-vault-id LABEL\n\n")
        .run();
    let b = site
        .test()
        .args([
            "vault",
            "encrypt_string",
            "--vault-id",
            "a@pw",
            "--vault-id",
            "b@wrong-pw",
            "--encrypt-vault-id",
            "b",
            "x",
        ])
        .run();
    assert!(b.stdout.starts_with("!vault |\n          $ANSIBLE_VAULT;1.2;AES256;b\n"), "{}", b.stdout);
}

#[test]
fn ansible_vault_encrypt_is_read_by_copctl_vault_view_and_decrypt() {
    let site = vault_site();
    let plain = "token: abc ✓\nlist: [1, 2]\n";
    site.write("f.yaml", plain);
    std::fs::set_permissions(site.path("f.yaml"), std::fs::Permissions::from_mode(0o604)).unwrap();
    av_in(&site, &["encrypt", "--vault-id", "ops@pw", "f.yaml"]);
    site.test().args(["vault", "view", "f.yaml", "--vault-id", "ops@pw"]).stdout(plain).stderr("").run();
    // The same bytes to --output -, then in place.
    site.test()
        .args(["vault", "decrypt", "f.yaml", "--output", "-", "--vault-password-file", "pw"])
        .stdout(plain)
        .run();
    // ansible-vault wrote it 0600; copctl keeps what it finds.
    std::fs::set_permissions(site.path("f.yaml"), std::fs::Permissions::from_mode(0o644)).unwrap();
    site.test().args(["vault", "decrypt", "f.yaml", "--vault-password-file", "pw"]).stdout("").stderr("").run();
    assert_eq!(site.read("f.yaml"), plain);
    assert_eq!(std::fs::metadata(site.path("f.yaml")).unwrap().permissions().mode() & 0o7777, 0o644);
    // A wrong password names the file.
    av_in(&site, &["encrypt", "--vault-password-file", "pw", "f.yaml"]);
    site.test()
        .args(["vault", "view", "f.yaml", "--vault-password-file", "wrong-pw"])
        .status(1)
        .stderr("  x f.yaml:1:1: Decryption failed (no vault secrets were found that could decrypt) on f.yaml\n   ,-[f.yaml:1:1]\n 1 | $ANSIBLE_VAULT;1.1;AES256\n   : ^^^^^^^^^^^^|^^^^^^^^^^^^\n   :             `-- vault-encrypted\n   `----\n  help: the password is wrong or the file was tampered with (tried the secrets for vault ids: default): pass it with --vault-id LABEL@FILE, --vault-password-file FILE or --ask-vault-pass (or set ANSIBLE_VAULT_PASSWORD_FILE) with the password it was encrypted with\n\n")
        .run();
}

#[test]
fn a_vaulted_password_reaches_the_host_and_no_output_record_or_log() {
    let site = Site::hosts(1);
    let lab = site.lab();
    let reg_pw = "Vaulted-Reg-Pw-7781";
    let neutral = "vaulted-neutral-4410";
    site.write("pw", format!("{SITE_PW}\n"));
    let flag = "--vault-password-file=pw";
    site.write(
        "env.yaml",
        format!(
            "registry_username: admin\n{}{}",
            av_string(&site, flag, "registry_password", reg_pw),
            av_string(&site, flag, "mirror_note", neutral)
        ),
    );
    site.write(
        "templates/registry.conf.j2",
        "user = {{ registry_username }}\npassword = {{ registry_password }}\nnote = {{ mirror_note }}\n",
    );
    site.write(
        "playbooks/registry.yaml",
        "plays:\n  - name: registry\n    hosts: all\n    steps:\n      - name: registry config\n        template: { src: registry.conf.j2, dest: /var/tmp/registry.conf, mode: \"0600\" }\n      - name: show it\n        debug: { msg: \"{{ registry_password }} {{ mirror_note }}\" }\n      - name: read it back\n        command: cat /var/tmp/registry.conf\n        register: conf\n        read_only: true\n      - name: echo it\n        debug: { var: conf.stdout }\n",
    );
    let run = site
        .test()
        .args(["run", "registry", "-vvv", "--diff", "--log-file", "run.log", "--vault-password-file", "pw"])
        .run();
    let json = site.run_json(&["registry", "--vault-password-file", "pw"], 0);
    assert_eq!(
        std::fs::read_to_string(lab.path(0, "/var/tmp/registry.conf")).unwrap(),
        format!("user = admin\npassword = {reg_pw}\nnote = {neutral}\n")
    );
    assert!(run.stdout.contains("registry config") && run.stdout.contains("********"), "{}", run.stdout);
    let mut places: Vec<(String, String)> = vec![
        ("stdout".into(), run.stdout.clone()),
        ("stderr (-vvv)".into(), run.stderr.clone()),
        ("json events".into(), json.stdout.clone()),
        ("log file".into(), site.read("run.log")),
    ];
    assert!(places[1].1.contains("TRACE exec host=lab-1"), "-vvv traced the run: {}", places[1].1);
    assert!(places[3].1.contains("task finished"), "the log file was written: {}", places[3].1);
    places.extend(files_under(&site.path(".copctl")).into_iter().map(|(p, t)| (p.display().to_string(), t)));
    for (place, text) in &places {
        for secret in [reg_pw, neutral, SITE_PW] {
            assert!(!text.contains(secret), "{secret} in {place}");
        }
    }
}
