//! known_hosts as OpenSSH reads it, with OpenSSH as the oracle: `ssh-keygen -F` says which lines
//! name a host, `ssh -o StrictHostKeyChecking=...` against lab sshd hosts says whether a key is
//! accepted; copctl must answer the same. Also: `@revoked` refused in every mode, host
//! certificates from a `@cert-authority`, files and hashing from ssh_config.

mod common;
use common::lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use lab::{Lab, LabOptions};

/// One lab host and a directory of the test's own (known_hosts files, a HOME without keys).
struct Site {
    lab: Lab,
    dir: tempfile::TempDir,
}

impl Site {
    fn new(opts: LabOptions) -> Site {
        let lab = Lab::start(1, opts);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Site { lab, dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn addr(&self) -> String {
        self.lab.hosts[0].addr.to_string()
    }

    fn host_key_file(&self) -> PathBuf {
        self.lab.hosts[0].dir.join("upper/etc/ssh/lab_host_ed25519_key.pub")
    }

    /// The host's key as `ssh-ed25519 AAAA...`.
    fn host_key(&self) -> String {
        key_text(&self.host_key_file())
    }

    fn fingerprint(&self) -> String {
        fingerprint(&self.host_key_file())
    }

    /// `copctl exec all -- true` with these extra options; HOME is the test's.
    fn copctl(&self, opts: &[&str]) -> Output {
        let inv = self.lab.inventory.to_str().unwrap().to_string();
        let mut args = vec!["exec", "all", "-i", &inv];
        args.extend(opts);
        args.extend(["--", "true"]);
        let home = self.path("home");
        copctl_env(Some(self.dir.path()), &args, &[("HOME", home.to_str().unwrap())])
    }

    /// copctl with `--known-hosts FILE --host-key-checking MODE`.
    fn copctl_kh(&self, file: &Path, mode: &str) -> Output {
        self.copctl(&["--known-hosts", file.to_str().unwrap(), "--host-key-checking", mode])
    }

    /// OpenSSH's client with the same files and mode (copctl's `strict` is ssh's `yes`).
    fn ssh(&self, user: &Path, global: &Path, mode: &str) -> Output {
        let strict = if mode == "strict" { "yes" } else { mode };
        Command::new("ssh")
            .args(["-F", "/dev/null", "-o", "BatchMode=yes", "-o", "CheckHostIP=no", "-o", "ConnectTimeout=10"])
            .arg("-o")
            .arg(format!("StrictHostKeyChecking={strict}"))
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", user.display()))
            .arg("-o")
            .arg(format!("GlobalKnownHostsFile={}", global.display()))
            .arg("-i")
            .arg(&self.lab.client_key)
            .arg(format!("root@{}", self.addr()))
            .arg("true")
            .env("HOME", self.path("home"))
            .env_remove("SSH_AUTH_SOCK")
            .output()
            .unwrap()
    }
}

fn key_text(pubfile: &Path) -> String {
    let text = std::fs::read_to_string(pubfile).unwrap();
    text.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

fn fingerprint(pubfile: &Path) -> String {
    let o = Command::new("ssh-keygen").arg("-lf").arg(pubfile).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1).unwrap().to_string()
}

/// A fresh key pair of `kind` in `dir`; returns the private key's path.
fn keygen(dir: &Path, name: &str, kind: &str) -> PathBuf {
    let p = dir.join(name);
    let st = Command::new("ssh-keygen").args(["-q", "-t", kind, "-N", "", "-C", name, "-f"]).arg(&p).status().unwrap();
    assert!(st.success());
    p
}

fn first_line(o: &Output) -> String {
    stdout(o).lines().next().unwrap_or("").to_string()
}

fn revoked_message(site: &Site, file: &Path, line: usize) -> String {
    format!(
        "lab-1 | UNREACHABLE! => lab-1: the host key {} is marked @revoked at {}:{line}; refusing to connect \
         (whatever --host-key-checking says). Record the host's new key only once you have checked it out of band",
        site.fingerprint(),
        file.display()
    )
}

#[test]
fn revoked_key_is_refused_in_every_mode() {
    let site = Site::new(LabOptions::default());
    let text = format!("# retired after the leak\n@revoked * {}\n", site.host_key());
    let kh = site.write("known_hosts", &text);
    for mode in ["accept-new", "strict", "off"] {
        let o = site.copctl_kh(&kh, mode);
        assert_eq!(o.status.code(), Some(4), "{mode}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(first_line(&o), revoked_message(&site, &kh, 2), "{mode}");
        assert_eq!(std::fs::read_to_string(&kh).unwrap(), text, "{mode}: a revoked key is never recorded");
    }
    // OpenSSH refuses it too (in its strict modes; its `no` would go on without some protections).
    for mode in ["accept-new", "strict"] {
        assert!(!site.ssh(&kh, Path::new("/dev/null"), mode).status.success(), "{mode}");
    }
}

#[test]
fn revoked_key_beside_a_matching_entry_is_still_refused() {
    let site = Site::new(LabOptions::default());
    let global = site.write("global", &format!("{} {}\n", site.addr(), site.host_key()));
    let user = site.write("user", &format!("@revoked {} {}\n", site.addr(), site.host_key()));
    // The global file names the key as the host's; the user's file revokes it: revoked wins.
    let cfg = site.write("ssh_config", &format!("Host *\n  GlobalKnownHostsFile {}\n", global.display()));
    let o = site.copctl(&[
        "--ssh-config",
        cfg.to_str().unwrap(),
        "--known-hosts",
        user.to_str().unwrap(),
        "--host-key-checking",
        "off",
    ]);
    assert_eq!(first_line(&o), revoked_message(&site, &user, 1), "{}", stdout(&o));
    assert!(!site.ssh(&user, &global, "strict").status.success());
}

/// Signs the lab host's key with a new CA for `principal`, restarts sshd presenting the
/// certificate; returns the CA's public key line.
fn certify(site: &mut Site, principal: &str) -> String {
    let ca = keygen(site.dir.path(), "ca", "ed25519");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca)
        .args(["-I", "lab-1", "-h", "-n", principal, "-V", "-5m:+1h"])
        .arg(site.host_key_file())
        .status()
        .unwrap();
    assert!(st.success());
    site.lab.restart(0);
    key_text(&ca.with_extension("pub"))
}

fn cert_lab() -> LabOptions {
    LabOptions {
        sshd_config: Some("HostCertificate /etc/ssh/lab_host_ed25519_key-cert.pub\n".into()),
        ..Default::default()
    }
}

#[test]
fn host_certificate_signed_by_a_cert_authority_is_accepted() {
    let mut site = Site::new(cert_lab());
    let addr = site.addr();
    let ca = certify(&mut site, &addr);
    let text = format!("@cert-authority 127.0.* {ca}\n");
    let kh = site.write("known_hosts", &text);
    let o = site.copctl_kh(&kh, "strict");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(&kh).unwrap(), text, "nothing to record: the authority vouches for the host");
    assert!(site.ssh(&kh, Path::new("/dev/null"), "strict").status.success(), "OpenSSH accepts it too");
}

#[test]
fn certificate_for_another_name_is_checked_as_its_plain_key() {
    let mut site = Site::new(cert_lab());
    let ca = certify(&mut site, "other.example");
    let kh = site.write("known_hosts", &format!("@cert-authority * {ca}\n"));
    let o = site.copctl_kh(&kh, "strict");
    assert_eq!(
        first_line(&o),
        format!(
            "lab-1 | UNREACHABLE! => lab-1: unknown host key {} and --host-key-checking strict; add it to {} or use \
             accept-new",
            site.fingerprint(),
            kh.display()
        )
    );
    assert!(!site.ssh(&kh, Path::new("/dev/null"), "strict").status.success());
}

#[test]
fn certificate_from_a_revoked_authority_is_refused() {
    let mut site = Site::new(cert_lab());
    let addr = site.addr();
    let ca = certify(&mut site, &addr);
    let kh = site.write("known_hosts", &format!("@cert-authority * {ca}\n@revoked * {ca}\n"));
    let o = site.copctl_kh(&kh, "off");
    assert_eq!(first_line(&o), revoked_message(&site, &kh, 2), "{}", stdout(&o));
    assert!(!site.ssh(&kh, Path::new("/dev/null"), "strict").status.success());
}

/// Which lines `ssh-keygen -F NAME -f FILE` lists.
fn keygen_find(file: &Path, name: &str) -> Vec<usize> {
    let o = Command::new("ssh-keygen").arg("-F").arg(name).arg("-f").arg(file).output().unwrap();
    stdout(&o)
        .lines()
        .filter_map(|l| {
            l.split_once(" found: line ").map(|(_, n)| n.split_whitespace().next().unwrap().parse().unwrap())
        })
        .collect()
}

#[test]
fn lines_naming_a_host_are_those_ssh_keygen_finds() {
    let dir = tempfile::tempdir().unwrap();
    let k = key_text(&keygen(dir.path(), "k", "ed25519").with_extension("pub"));
    let r = key_text(&keygen(dir.path(), "r", "rsa").with_extension("pub"));
    // Hashed entries as ssh-keygen -H writes them.
    let hashed = dir.path().join("hashed");
    std::fs::write(&hashed, format!("web1.example.com {k}\n[db.example.com]:2222 {r}\n")).unwrap();
    assert!(Command::new("ssh-keygen").arg("-H").arg("-f").arg(&hashed).output().unwrap().status.success());
    let hashed_lines = std::fs::read_to_string(&hashed).unwrap();
    let lines = [
        "# a comment".to_string(),
        String::new(),
        format!("web1.example.com,10.0.0.1 {k}"),
        format!("*.example.com,!bad.example.com {k}"),
        format!("web? {r}"),
        format!("[db.example.com]:2222 {k}"),
        format!("[*.example.com]:22?? {r}"),
        format!("  \tindented.example.org\t {k} trailing comment"),
        format!("UPPER.Example.ORG {k}"),
        format!("@cert-authority *.corp.example {k}"),
        format!("@revoked bad.example.com {r}"),
        format!("@unknown-marker web1.example.com {k}"),
        format!("!web2.example.com {k}"),
        "truncated.example.com".to_string(),
        format!("|1|c2FsdA==|AAAAAAAAAAAAAAAAAAAAAAAAAAA= {k}"),
        format!("* {r}"),
    ];
    let file = dir.path().join("known_hosts");
    std::fs::write(&file, lines.join("\n") + "\n" + &hashed_lines).unwrap();
    let names = [
        "web1.example.com",
        "web2.example.com",
        "bad.example.com",
        "example.com",
        "10.0.0.1",
        "web1",
        "web12",
        "[db.example.com]:2222",
        "[db.example.com]:22",
        "[x.example.com]:2201",
        "db.example.com",
        "indented.example.org",
        "upper.example.org",
        "host.corp.example",
        "truncated.example.com",
        "nothing.invalid",
    ];
    for name in names {
        let want = keygen_find(&file, name);
        let got = copctl::transport::known_hosts::find(&file, name);
        assert_eq!(got, want, "lines naming {name}");
    }
}

/// Connect-time decisions, copctl against `ssh` on the same files: (user file, global file, mode).
#[test]
fn connect_decisions_match_ssh() {
    let site = Site::new(LabOptions::default());
    let (addr, key) = (site.addr(), site.host_key());
    let other = key_text(&keygen(site.dir.path(), "other", "ed25519").with_extension("pub"));
    let other_rsa = key_text(&keygen(site.dir.path(), "other_rsa", "rsa").with_extension("pub"));
    let hashed = {
        let p = site.write("to_hash", &format!("{addr} {key}\n"));
        assert!(Command::new("ssh-keygen").arg("-H").arg("-f").arg(&p).output().unwrap().status.success());
        std::fs::read_to_string(&p).unwrap()
    };
    let cases: Vec<(&str, String, String, &str)> = vec![
        ("exact name", format!("{addr} {key}\n"), String::new(), "strict"),
        ("wildcard", format!("127.0.*.* {key}\n"), String::new(), "strict"),
        ("question marks", format!("127.0.??.* {key}\n"), String::new(), "strict"),
        ("negated", format!("127.0.*,!{addr} {key}\n"), String::new(), "strict"),
        ("hashed", hashed.clone(), String::new(), "strict"),
        ("global file only", String::new(), format!("{addr} {key}\n"), "strict"),
        ("changed", format!("{addr} {other}\n"), String::new(), "accept-new"),
        ("changed in global file", String::new(), format!("# global\n{addr} {other}\n"), "accept-new"),
        ("other type recorded", format!("{addr} {other_rsa}\n"), String::new(), "accept-new"),
        ("one of several", format!("{addr} {other}\n{addr} {key}\n"), String::new(), "strict"),
        ("user file wins", format!("{addr} {key}\n"), format!("{addr} {other}\n"), "strict"),
        ("unknown, strict", format!("other.example {key}\n"), String::new(), "strict"),
        ("unknown, accept-new", String::new(), String::new(), "accept-new"),
        ("revoked by pattern", format!("{addr} {key}\n@revoked 127.* {key}\n"), String::new(), "accept-new"),
        ("unknown marker ignored", format!("@bogus {addr} {other}\n{addr} {key}\n"), String::new(), "strict"),
    ];
    for (what, user_text, global_text, mode) in cases {
        let run = |who: &str| {
            let user = site.write(&format!("user-{who}"), &user_text);
            let global = site.write(&format!("global-{who}"), &global_text);
            let ok = if who == "ssh" {
                site.ssh(&user, &global, mode).status.success()
            } else {
                let cfg = site.write("ssh_config", &format!("Host *\n  GlobalKnownHostsFile {}\n", global.display()));
                let o = site.copctl(&[
                    "--ssh-config",
                    cfg.to_str().unwrap(),
                    "--known-hosts",
                    user.to_str().unwrap(),
                    "--host-key-checking",
                    mode,
                ]);
                o.status.success()
            };
            // What was recorded: the lines that now name the host in the user file.
            (ok, keygen_find(&user, &addr))
        };
        assert_eq!(run("copctl"), run("ssh"), "{what}: (connected, lines naming the host after the run)");
    }
}

#[test]
fn changed_key_names_the_line_ssh_names() {
    let site = Site::new(LabOptions::default());
    let addr = site.addr();
    let other = key_text(&keygen(site.dir.path(), "other", "ed25519").with_extension("pub"));
    let kh = site.write("known_hosts", &format!("# keys\n{addr} {other}\n127.0.* {other}\n"));
    let o = site.ssh(&kh, Path::new("/dev/null"), "accept-new");
    let offending = format!("Offending ED25519 key in {}:3", kh.display());
    assert!(stderr(&o).contains(&offending), "{}", stderr(&o));
    let o = site.copctl_kh(&kh, "accept-new");
    assert_eq!(
        first_line(&o),
        format!(
            "lab-1 | UNREACHABLE! => lab-1: the host key has changed (now {}); refusing to connect. If the host was \
             reinstalled, remove line 3 of {} (`ssh-keygen -R '{addr}' -f {}`)",
            site.fingerprint(),
            kh.display(),
            kh.display()
        )
    );
}

#[test]
fn hash_known_hosts_yes_records_hashed_entries() {
    let site = Site::new(LabOptions::default());
    let kh = site.path("known_hosts");
    let cfg = site.write("ssh_config", "Host *\n  HashKnownHosts yes\n");
    let args = ["--ssh-config", cfg.to_str().unwrap(), "--known-hosts", kh.to_str().unwrap()];
    let o = site.copctl(&args);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&kh).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("|1|") && !text.contains(&site.addr()), "{text}");
    assert!(text.trim_end().ends_with(&site.host_key()), "{text}");
    assert_eq!(keygen_find(&kh, &site.addr()), [1], "ssh-keygen finds the hashed entry");
    assert!(site.copctl(&args).status.success());
    assert_eq!(std::fs::read_to_string(&kh).unwrap(), text, "known on the next run: nothing appended");
}

#[test]
fn known_hosts_files_come_from_ssh_config() {
    let site = Site::new(LabOptions::default());
    let global = site.write("global", &format!("{} {}\n", site.addr(), site.host_key()));
    let user = site.path("user_known_hosts");
    let cfg = site.write(
        "ssh_config",
        &format!("Host *\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile {}\n", user.display(), global.display()),
    );
    // The global file knows the key: strict connects and writes nothing.
    let o = site.copctl(&["--ssh-config", cfg.to_str().unwrap(), "--host-key-checking", "strict"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(!user.exists());
    // Without it, accept-new records the key in ssh_config's user file, not ~/.ssh/known_hosts.
    std::fs::write(&global, "").unwrap();
    let o = site.copctl(&["--ssh-config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(&user).unwrap(), format!("{} {}\n", site.addr(), site.host_key()));
    assert!(!site.path("home/.ssh/known_hosts").exists());
    // --known-hosts wins over UserKnownHostsFile, as `ssh -o` wins over the config.
    let flag = site.path("flag_known_hosts");
    let o = site.copctl(&["--ssh-config", cfg.to_str().unwrap(), "--known-hosts", flag.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(&flag).unwrap(), format!("{} {}\n", site.addr(), site.host_key()));
}
