//! copctl's vault against ansible-vault itself (ansible-core in the peers' venv, the oracle):
//! what ansible-vault encrypts copctl decrypts to the same bytes, what copctl encrypts
//! ansible-vault decrypts to the same bytes, the same salt gives byte-identical files, and both
//! refuse a wrong password or a tampered HMAC (copctl's message pinned whole).

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

    // ANSIBLE_VAULT_PASSWORD_FILE, through VaultOptions::with_env, reads the same way.
    let env_opts = temp_env("ANSIBLE_VAULT_PASSWORD_FILE", s(&script), || VaultOptions::default().with_env());
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
