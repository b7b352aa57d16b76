//! The SSH transport against real OpenSSH servers: lab hosts (tests/lab/), each an sshd with
//! its own filesystem, hostname and process tree. No mock of SSH anywhere.

mod common;
use common::lab;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use lab::{HostPlan, Lab, LabOptions};

/// copctl against a lab: its inventory, a known_hosts of the test's own (accept-new), no agent,
/// and a HOME without keys so that only the keys the test names are tried.
struct Run<'a> {
    lab: &'a Lab,
    dir: tempfile::TempDir,
}

impl<'a> Run<'a> {
    fn new(lab: &'a Lab) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Run { lab, dir }
    }

    fn known_hosts(&self) -> std::path::PathBuf {
        self.dir.path().join("known_hosts")
    }

    fn copctl(&self, args: &[&str]) -> std::process::Output {
        self.copctl_with(args, &[])
    }

    fn copctl_with(&self, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
        let inv = self.lab.inventory.to_str().unwrap().to_string();
        let kh = self.known_hosts().to_str().unwrap().to_string();
        let home = self.dir.path().join("home").to_str().unwrap().to_string();
        // Options go before `--` (after it everything is the remote command).
        let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut all: Vec<&str> = args[..split].to_vec();
        if !args[..split].contains(&"-i") {
            all.extend(["-i", &inv]);
        }
        all.extend(["--known-hosts", &kh]);
        all.extend(&args[split..]);
        let mut e = vec![("HOME", home.as_str())];
        e.extend_from_slice(envs);
        copctl_env(Some(self.dir.path()), &all, &e)
    }
}

/// Each host's block of `copctl exec` output: (host, status line, body).
fn blocks(out: &str) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = Vec::new();
    for line in out.lines() {
        if line.contains(" host(s): ") {
            break; // the summary line
        }
        if let Some((host, rest)) = line.split_once(" | ") {
            v.push((host.to_string(), rest.to_string(), String::new()));
        } else if let Some(last) = v.last_mut() {
            last.2.push_str(line);
            last.2.push('\n');
        }
    }
    v
}

#[test]
fn exec_reaches_twenty_isolated_hosts() {
    let lab = Lab::start(20, LabOptions::default());
    let run = Run::new(&lab);
    let o = run.copctl(&["exec", "all", "--", "hostname"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let b = blocks(&stdout(&o));
    assert_eq!(b.len(), 20);
    for (host, status, body) in &b {
        assert!(status.starts_with("CHANGED | rc=0"), "{host}: {status}");
        assert_eq!(body.trim(), host, "each host answers with its own name");
    }
    assert!(stdout(&o).contains("20 host(s): 20 ok, 0 failed, 0 unreachable"));
    // Unknown host keys were recorded (accept-new), once each, and a re-run adds nothing.
    let kh = std::fs::read_to_string(run.known_hosts()).unwrap();
    assert_eq!(kh.lines().count(), 20, "{kh}");
    assert!(run.copctl(&["exec", "all", "--", "true"]).status.success());
    assert_eq!(std::fs::read_to_string(run.known_hosts()).unwrap(), kh);

    // A file written on one host exists on that host only.
    let marker = format!("/etc/copctl-marker-{}", std::process::id());
    let o = run.copctl(&["exec", "lab-1", "--", &format!("touch {marker}")]);
    assert!(o.status.success(), "{}", stdout(&o));
    let o = run.copctl(&["exec", "all", "--", &format!("test -e {marker} && echo present || echo absent")]);
    for (host, _, body) in blocks(&stdout(&o)) {
        assert_eq!(body.trim(), if host == "lab-1" { "present" } else { "absent" }, "{host}");
    }
    assert!(!Path::new(&marker).exists(), "the real machine must not see a lab host's file");
}

/// A pool holding lab-1's connection (its host key recorded in `dir`), no retries.
fn lab_1_pool(lab: &Lab, dir: &Path) -> copctl::transport::Pool {
    use copctl::transport::*;
    let mut opts = SshOptions::new(KnownHosts::new(dir.join("kh"), HostKeyPolicy::AcceptNew));
    opts.connect_retries = 0;
    let inv = copctl::inventory::Inventory::load(&lab.inventory).unwrap();
    let spec = HostSpec::from_inventory(&inv, "lab-1", &SshConfigFile::default());
    Pool::new(vec![spec], opts, 4)
}

#[test]
fn upload_of_200_mib_arrives_with_its_sha256_and_mode() {
    use copctl::transport::*;
    use sha2::Digest;
    let lab = Lab::start(1, LabOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.bin");
    let mut data = vec![0u8; 200 << 20];
    let mut x: u64 = 0x9E3779B97F4A7C15;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(&src, &data).unwrap();
    let want = hex::encode(sha2::Sha256::digest(&data));
    drop(data);
    let pool = lab_1_pool(&lab, dir.path());
    let rt = copctl::runtime().unwrap();
    let got = rt.block_on(async {
        let c = pool.get("lab-1").await.unwrap();
        c.put(PutSource::File(src.clone()), "/var/tmp/big.bin", 0o640).await.unwrap()
    });
    assert_eq!(got, want);
    let on_host = lab.path(0, "/var/tmp/big.bin");
    let meta = std::fs::metadata(&on_host).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.len(), 200 << 20);
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    let remote = hex::encode(sha2::Sha256::digest(std::fs::read(&on_host).unwrap()));
    assert_eq!(remote, want);
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(lab.path(0, "/var/tmp"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".copctl-"))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn changed_host_key_fails_that_host_only_and_names_the_line() {
    let mut lab = Lab::start(3, LabOptions::default());
    let run = Run::new(&lab);
    std::fs::copy(&lab.known_hosts, run.known_hosts()).unwrap();
    drop(run);
    lab.rotate_host_key(1);
    let run = Run::new(&lab);
    std::fs::copy(&lab.known_hosts, run.known_hosts()).unwrap();
    // The lab rewrote its own known_hosts? No: only the test's copy from before the rotation counts.
    let before = std::fs::read_to_string(run.known_hosts()).unwrap();
    let o = run.copctl(&["exec", "all", "--", "hostname"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    let b = blocks(&out);
    let bad = b.iter().find(|x| x.0 == "lab-2").unwrap();
    assert!(bad.1.starts_with("UNREACHABLE!"), "{out}");
    assert!(bad.1.contains("host key has changed") && bad.1.contains("remove line 2 of"), "{out}");
    assert!(b.iter().filter(|x| x.0 != "lab-2").all(|x| x.1.starts_with("CHANGED")), "{out}");
    assert_eq!(std::fs::read_to_string(run.known_hosts()).unwrap(), before, "a changed key is never written");
}

#[test]
fn wrong_key_is_an_auth_error_naming_user_and_keys() {
    let lab = Lab::start(2, LabOptions::default());
    let run = Run::new(&lab);
    let other = run.dir.path().join("other_key");
    let st = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(st.success());
    let inv = run.dir.path().join("inv.ini");
    std::fs::write(
        &inv,
        format!(
            "[lab]\nlab-1 ansible_host={} ansible_user=root ansible_ssh_private_key_file={}\n",
            lab.hosts[0].addr,
            other.display()
        ),
    )
    .unwrap();
    let o = run.copctl(&["exec", "all", "-i", inv.to_str().unwrap(), "--", "true"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    assert!(out.contains(&format!("authentication failed for root@{}", lab.hosts[0].addr)), "{out}");
    assert!(out.contains(other.to_str().unwrap()), "names the key tried: {out}");
    assert!(out.contains("copctl ssh-copy-id lab-1"), "says how to fix it: {out}");
}

#[test]
fn killed_host_is_unreachable_while_others_succeed() {
    let mut lab = Lab::start(3, LabOptions::default());
    lab.kill(1);
    let run = Run::new(&lab);
    let t = Instant::now();
    let o = run.copctl(&["exec", "all", "--connect-timeout", "2", "--", "hostname"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
    let b = blocks(&out);
    assert!(b.iter().any(|x| x.0 == "lab-2" && x.1.starts_with("UNREACHABLE!")), "{out}");
    assert_eq!(b.iter().filter(|x| x.1.starts_with("CHANGED")).count(), 2, "{out}");
    assert!(out.contains("3 host(s): 2 ok, 0 failed, 1 unreachable"), "{out}");
}

#[test]
fn frozen_host_times_out_and_others_are_unaffected() {
    let lab = Lab::start(3, LabOptions::default());
    let run = Run::new(&lab);
    let inv = lab.inventory.to_str().unwrap().to_string();
    let kh = run.known_hosts().to_str().unwrap().to_string();
    let home = run.dir.path().join("home");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_copctl"))
        .args(["exec", "all", "-i", &inv, "--known-hosts", &kh, "--timeout", "3", "--", "sleep 2; hostname"])
        .env("HOME", &home)
        .env_remove("SSH_AUTH_SOCK")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Freeze lab-2 while its command runs (not before it started: that would be a handshake timeout).
    assert!(lab.wait_for_process(1, "sleep", Duration::from_secs(10)), "the command never started on lab-2");
    lab.freeze(1);
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    lab.thaw(1);
    let out = stdout(&o);
    assert!(t.elapsed() < Duration::from_secs(10), "the run ended within the bound: {:?}", t.elapsed());
    assert_eq!(o.status.code(), Some(2), "{out}");
    let b = blocks(&out);
    let frozen = b.iter().find(|x| x.0 == "lab-2").unwrap();
    assert!(frozen.1.starts_with("FAILED") && frozen.2.contains("timed out after 3s"), "{out}");
    assert_eq!(b.iter().filter(|x| x.1.starts_with("CHANGED")).count(), 2, "{out}");
}

/// Network namespaces made by this test; removed (with their veths) when dropped.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = std::process::Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &str) {
    let st = std::process::Command::new("ip").args(args.split_whitespace()).status().unwrap();
    assert!(st.success(), "ip {args}");
}

#[test]
fn jump_host_reaches_a_host_only_it_can_reach() {
    // Three namespaces of the test's own, none with a default route, so nothing leaves them:
    //   nc (copctl runs here) --veth 169.254.77.0/30-- na (host A) --veth 169.254.78.0/30-- nb (host B)
    // copctl can reach A; only A can reach B.
    let id = std::process::id() % 100000;
    let (nc, na, nb) = (format!("cpc{id}"), format!("cpa{id}"), format!("cpb{id}"));
    let _guard = Netns(vec![nc.clone(), na.clone(), nb.clone()]);
    for n in [&nc, &na, &nb] {
        ip(&format!("netns add {n}"));
        ip(&format!("-n {n} link set lo up"));
    }
    ip(&format!("-n {nc} link add cc{id} type veth peer name ca{id} netns {na}"));
    ip(&format!("-n {nc} addr add 169.254.77.1/30 dev cc{id}"));
    ip(&format!("-n {nc} link set cc{id} up"));
    ip(&format!("-n {na} addr add 169.254.77.2/30 dev ca{id}"));
    ip(&format!("-n {na} link set ca{id} up"));
    ip(&format!("-n {na} link add cb1{id} type veth peer name cb2{id} netns {nb}"));
    ip(&format!("-n {na} addr add 169.254.78.1/30 dev cb1{id}"));
    ip(&format!("-n {na} link set cb1{id} up"));
    ip(&format!("-n {nb} addr add 169.254.78.2/30 dev cb2{id}"));
    ip(&format!("-n {nb} link set cb2{id} up"));
    let plans = [
        HostPlan { addr: "169.254.77.2".parse().unwrap(), netns: Some(na.clone()) },
        HostPlan { addr: "169.254.78.2".parse().unwrap(), netns: Some(nb.clone()) },
    ];
    let lab = Lab::start_plans(2, |i| Some(plans[i].clone()), LabOptions::default());
    let in_nc = |prog: &str| {
        let mut c = std::process::Command::new("nsenter");
        c.arg(format!("--net=/var/run/netns/{nc}")).arg(prog);
        c
    };
    // From copctl's namespace, B has no route at all; A answers.
    let probe = |addr: &str| in_nc("bash").args(["-c", &format!("exec 3<>/dev/tcp/{addr}/22")]).output().unwrap();
    let b = probe("169.254.78.2");
    assert!(
        !b.status.success() && String::from_utf8_lossy(&b.stderr).contains("unreachable"),
        "B must not be reachable directly"
    );
    assert!(probe("169.254.77.2").status.success(), "A must be reachable");
    let run = Run::new(&lab);
    let inv = run.dir.path().join("inv.ini");
    let key = lab.client_key.display();
    std::fs::write(&inv, format!(
        "[lab]\nlab-1 ansible_host=169.254.77.2\nlab-2 ansible_host=169.254.78.2 ansible_ssh_common_args='-o ProxyJump=root@169.254.77.2'\n\
         [lab:vars]\nansible_user=root\nansible_ssh_private_key_file={key}\n"
    )).unwrap();
    let o = in_nc(env!("CARGO_BIN_EXE_copctl"))
        .args(["exec", "lab-2", "-i", inv.to_str().unwrap(), "--known-hosts", run.known_hosts().to_str().unwrap()])
        .args(["--", "hostname"])
        .env("HOME", run.dir.path().join("home"))
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(blocks(&stdout(&o))[0].2.trim(), "lab-2");
    // Both hops' keys were recorded.
    let kh = std::fs::read_to_string(run.known_hosts()).unwrap();
    assert!(kh.contains("169.254.77.2 ") && kh.contains("169.254.78.2 "), "{kh}");
}

#[test]
fn ssh_copy_id_installs_the_key_once() {
    let lab = Lab::start(
        1,
        LabOptions { root_password: Some("lab-Pw-4711".into()), no_authorized_key: true, ..Default::default() },
    );
    let run = Run::new(&lab);
    let pubkey = lab.client_key.with_extension("pub");
    let pk = pubkey.to_str().unwrap();
    let env = [("COPCTL_SSH_PASSWORD", "lab-Pw-4711")];
    // Key auth does not work yet.
    assert_eq!(run.copctl(&["exec", "all", "--", "true"]).status.code(), Some(4));
    let o = run.copctl_with(&["ssh-copy-id", "lab-1", "--key", pk], &env);
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{text}");
    assert!(text.contains("lab-1: installed"), "{text}");
    assert!(!text.contains("lab-Pw-4711"), "the password is never printed");
    let o = run.copctl_with(&["ssh-copy-id", "lab-1", "--key", pk], &env);
    assert!(
        stdout(&o).contains("key authentication already works") && stdout(&o).contains("nothing changed"),
        "{}",
        stdout(&o)
    );
    let ak = std::fs::read_to_string(lab.path(0, "/root/.ssh/authorized_keys")).unwrap();
    let key = std::fs::read_to_string(&pubkey).unwrap();
    assert_eq!(ak.matches(key.trim()).count(), 1, "{ak}");
    let o = lab.sh(0, "stat -c %a /root/.ssh /root/.ssh/authorized_keys");
    assert_eq!(o.split_whitespace().collect::<Vec<_>>(), ["700", "600"]);
    assert_eq!(run.copctl(&["exec", "all", "--", "true"]).status.code(), Some(0));
}

#[test]
fn secrets_are_masked_in_exec_output() {
    let lab = Lab::start(1, LabOptions::default());
    let run = Run::new(&lab);
    let inv = run.dir.path().join("inv.ini");
    std::fs::write(
        &inv,
        format!(
            "[lab]\nlab-1 ansible_host={} ansible_user=root ansible_ssh_private_key_file={} db_password=hunter2-xyz\n",
            lab.hosts[0].addr,
            lab.client_key.display()
        ),
    )
    .unwrap();
    let o = run.copctl(&["exec", "all", "-i", inv.to_str().unwrap(), "--", "echo the password is hunter2-xyz"]);
    assert!(o.status.success());
    assert!(!stdout(&o).contains("hunter2-xyz") && stdout(&o).contains("the password is ********"), "{}", stdout(&o));
}

/// Small text travels inside a script; its mode comes from the umask it is created under (no
/// `chmod`) unless it has execute or special bits. Every mode must still arrive exactly, and a
/// file already there with another mode must take the new one.
#[test]
fn small_files_arrive_with_exactly_their_mode() {
    use copctl::transport::*;
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::start(1, LabOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let pool = lab_1_pool(&lab, dir.path());
    let rt = copctl::runtime().unwrap();
    let modes = [0o644, 0o640, 0o600, 0o444, 0o000, 0o755, 0o750, 0o4755, 0o1777];
    for (i, mode) in modes.into_iter().enumerate() {
        let dest = format!("/var/tmp/small-{i}");
        // Twice: the second write replaces a file created with the previous mode.
        for (text, m) in [("first\n", 0o666), ("second\n", mode)] {
            rt.block_on(async {
                let c = pool.get("lab-1").await.unwrap();
                c.put(PutSource::Bytes(text.as_bytes().to_vec()), &dest, m).await.unwrap()
            });
        }
        let on_host = lab.path(0, &dest);
        let meta = std::fs::symlink_metadata(&on_host).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, mode, "mode {mode:o}");
        assert_eq!(std::fs::read_to_string(&on_host).unwrap(), "second\n", "mode {mode:o}");
    }
}
