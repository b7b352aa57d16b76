//! The lab: isolated SSH test hosts on this machine. Each host is a real OpenSSH `sshd` that sees
//! its own filesystem (an overlay of `/` with a per-host upper directory), hostname and process
//! tree, listening on its own loopback address `127.0.(10+k/250).(k%250+1):22`. Needs root.
//!
//! Used by the integration tests (`mod lab;`) and by the `copctl-lab` command for a person.
#![allow(dead_code)]

pub mod cop_site;
pub mod os;

use std::fs::{self, File};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INIT: &str = include_str!("init.sh");
/// Indices per lab: labs running at the same time (test binaries, people) never share addresses.
const BLOCK: usize = 1000;

/// Options for starting a lab.
#[derive(Debug, Clone, Default)]
pub struct LabOptions {
    /// Allow password login (for ssh-copy-id tests); root's password is set to this.
    pub root_password: Option<String>,
    /// Do not authorise the lab's client key for root.
    pub no_authorized_key: bool,
    /// Name prefix of the hosts (default "lab").
    pub prefix: Option<String>,
    /// sshd_config lines that replace the lab's own for the keywords they set.
    pub sshd_config: Option<String>,
    /// A non-root login user (uid 1500, the lab's client key authorised) allowed to sudo to any
    /// user: without a password (`None`) or with this one (real sudo, its PAM and the host's
    /// /etc/shadow).
    pub sudo_user: Option<(String, Option<String>)>,
    /// Directories of this machine each host sees at the same path, read-only, whatever its
    /// own root holds there (a Python installed under /root, which is the host's own).
    pub see: Vec<PathBuf>,
}

/// The sudo user's uid and gid on lab hosts.
pub const SUDO_UID: u32 = 1500;

pub struct LabHost {
    pub name: String,
    pub addr: Ipv4Addr,
    pub dir: PathBuf,
    /// A network namespace (made by the test) the host lives in, instead of this machine's.
    pub netns: Option<String>,
    child: Option<Child>,
}

/// Where a host listens: its address, and the network namespace holding that address.
#[derive(Debug, Clone)]
pub struct HostPlan {
    pub addr: Ipv4Addr,
    pub netns: Option<String>,
}

pub struct Lab {
    pub root: PathBuf,
    pub hosts: Vec<LabHost>,
    pub client_key: PathBuf,
    pub known_hosts: PathBuf,
    pub ssh_config: PathBuf,
    pub inventory: PathBuf,
    opts: LabOptions,
    _block_lock: File,
    keep: bool,
}

pub fn addr_of(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, (10 + k / 250) as u8, (k % 250 + 1) as u8)
}

/// User + system CPU seconds of a `wait4` resource usage (a finished copctl or peer run).
pub fn rusage_seconds(r: &libc::rusage) -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(r.ru_utime) + tv(r.ru_stime)
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Claims a block of addresses with an flock held for the lab's life (released on exit, even a
/// crash, so stale claims never pile up).
fn claim_block(base: &Path) -> (usize, File) {
    fs::create_dir_all(base.join("blocks")).unwrap();
    for b in 0..16 {
        let f = File::create(base.join(format!("blocks/{b}"))).unwrap();
        let r = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return (b, f);
        }
    }
    panic!("no free lab address block (16 labs running?)");
}

/// Whether `pid` runs inside a host of the lab at `root`: its `/` is not this machine's, and its
/// mounts are the overlay made from the lab's directory (after pivot_root, /proc/PID/root reads
/// as plain `/`, so the mount table is what tells).
fn in_lab_root(pid: i32, root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(theirs), Ok(ours)) = (fs::metadata(format!("/proc/{pid}/root/")), fs::metadata("/")) else {
        return false;
    };
    if theirs.dev() == ours.dev() && theirs.ino() == ours.ino() {
        return false;
    }
    let needle = format!("upperdir={}/", root.display());
    fs::read_to_string(format!("/proc/{pid}/mountinfo")).is_ok_and(|m| m.contains(&needle))
}

/// Hosts left running by a lab whose process was killed (no Drop ran) still hold this block's
/// addresses: their processes run in roots made from the block's directory.
fn kill_stale_hosts(root: &Path) {
    let Ok(rd) = fs::read_dir("/proc") else { return };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if in_lab_root(pid, root) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    std::thread::sleep(Duration::from_millis(50));
}

fn set_opaque(dir: &Path) {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    let r = unsafe { libc::setxattr(path.as_ptr(), c"trusted.overlay.opaque".as_ptr(), b"y".as_ptr().cast(), 1, 0) };
    assert_eq!(r, 0, "setxattr on {}: {}", dir.display(), std::io::Error::last_os_error());
}

fn random_uuid() -> String {
    fs::read_to_string("/proc/sys/kernel/random/uuid").unwrap().trim().to_string()
}

impl Lab {
    /// Starts `n` hosts on loopback addresses and waits until each listens on port 22.
    pub fn start(n: usize, opts: LabOptions) -> Lab {
        Lab::start_plans(n, |_| None, opts)
    }

    /// Starts `n` hosts; `plan(i)` may place host i at an address inside a network namespace.
    pub fn start_plans(n: usize, plan: impl Fn(usize) -> Option<HostPlan>, opts: LabOptions) -> Lab {
        assert!(unsafe { libc::geteuid() } == 0, "the lab needs root (namespaces, overlayfs)");
        let base = PathBuf::from("/tmp/copctl-lab");
        let (block, lock) = claim_block(&base);
        let root = base.join(format!("lab-{block}"));
        kill_stale_hosts(&root);
        let _ = Command::new("umount").arg("-R").arg("-l").arg(&root).output();
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("init.sh"), INIT).unwrap();
        let client_key = root.join("id_ed25519");
        run(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "copctl-lab", "-f"])
            .arg(&client_key));
        let prefix = opts.prefix.clone().unwrap_or_else(|| "lab".into());
        let mut lab = Lab {
            known_hosts: root.join("known_hosts"),
            ssh_config: root.join("ssh_config"),
            inventory: root.join("inventory.ini"),
            root,
            hosts: Vec::new(),
            client_key,
            opts,
            _block_lock: lock,
            keep: std::env::var_os("COPCTL_LAB_KEEP").is_some(),
        };
        for i in 0..n {
            let k = block * BLOCK + i;
            let name = format!("{prefix}-{}", i + 1);
            let dir = lab.root.join(&name);
            let p = plan(i).unwrap_or(HostPlan { addr: addr_of(k), netns: None });
            lab.prepare(&name, &dir, p.addr);
            lab.hosts.push(LabHost { name, addr: p.addr, dir, netns: p.netns, child: None });
        }
        for i in 0..n {
            lab.spawn(i);
        }
        for i in 0..n {
            lab.wait_ready(i);
        }
        lab.write_client_files();
        lab
    }

    fn prepare(&self, name: &str, dir: &Path, addr: Ipv4Addr) {
        for d in ["upper/etc/ssh", "upper/root/.ssh", "work", "merged"] {
            fs::create_dir_all(dir.join(d)).unwrap();
        }
        // An empty /root of its own (the real machine's shell start-up files stay out).
        set_opaque(&dir.join("upper/root"));
        for f in [".bashrc", ".profile"] {
            let _ = fs::copy(Path::new("/etc/skel").join(f), dir.join("upper/root").join(f));
        }
        fs::set_permissions(dir.join("upper/root/.ssh"), fs::Permissions::from_mode(0o700)).unwrap();
        if !self.opts.no_authorized_key {
            let pubkey = fs::read_to_string(self.client_key.with_extension("pub")).unwrap();
            let ak = dir.join("upper/root/.ssh/authorized_keys");
            fs::write(&ak, pubkey).unwrap();
            fs::set_permissions(&ak, fs::Permissions::from_mode(0o600)).unwrap();
        }
        self.new_host_key(dir);
        let password_auth = if self.opts.root_password.is_some() { "yes" } else { "no" };
        let config = format!(
            "{extra}ListenAddress {addr}:22\nHostKey /etc/ssh/lab_host_ed25519_key\nPermitRootLogin yes\n\
             PasswordAuthentication {password_auth}\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             UsePAM no\nMaxStartups 200:30:400\nMaxSessions 64\nPidFile none\nSubsystem sftp internal-sftp\n\
             AuthorizedKeysFile .ssh/authorized_keys\nLogLevel ERROR\nClientAliveInterval 0\n",
            extra = self.opts.sshd_config.as_deref().unwrap_or("")
        );
        // sshd keeps the first value of most keywords but the last of some (MaxStartups): a
        // keyword the options set is dropped from the lab's own lines.
        let extra_keys: Vec<String> = self
            .opts
            .sshd_config
            .iter()
            .flat_map(|c| c.lines())
            .filter_map(|l| l.split_whitespace().next().map(str::to_lowercase))
            .collect();
        let n_extra = extra_keys.len();
        let config: String = config
            .lines()
            .enumerate()
            .filter(|(i, l)| {
                *i < n_extra || !l.split_whitespace().next().is_some_and(|k| extra_keys.contains(&k.to_lowercase()))
            })
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        fs::write(dir.join("upper/etc/ssh/sshd_config.lab"), config).unwrap();
        fs::write(dir.join("upper/etc/hostname"), format!("{name}\n")).unwrap();
        let hash_of = |pw: &str| {
            let hash = Command::new("openssl").args(["passwd", "-6", pw]).output().unwrap();
            String::from_utf8(hash.stdout).unwrap().trim().to_string()
        };
        if self.opts.root_password.is_some() || self.opts.sudo_user.is_some() {
            // A shadow file of the host's own with root's password set and the sudo user added.
            let shadow = fs::read_to_string("/etc/shadow").unwrap();
            let root_hash = self.opts.root_password.as_deref().map(hash_of);
            let mut new: String = shadow
                .lines()
                .map(|l| {
                    let mut f: Vec<&str> = l.split(':').collect();
                    if let Some(h) = &root_hash
                        && f[0] == "root"
                    {
                        f[1] = h;
                    }
                    f.join(":") + "\n"
                })
                .collect();
            if let Some((user, pw)) = &self.opts.sudo_user {
                let hash = pw.as_deref().map(hash_of).unwrap_or_else(|| "*".into());
                new.push_str(&format!("{user}:{hash}:19000:0:99999:7:::\n"));
            }
            fs::write(dir.join("upper/etc/shadow"), new).unwrap();
            fs::set_permissions(dir.join("upper/etc/shadow"), fs::Permissions::from_mode(0o640)).unwrap();
        }
        if let Some((user, pw)) = &self.opts.sudo_user {
            self.add_sudo_user(dir, user, pw.is_some());
        }
    }

    /// The sudo user: passwd and group entries, a home with the lab's key authorised, and a
    /// sudoers rule (with or without a password).
    fn add_sudo_user(&self, dir: &Path, user: &str, with_password: bool) {
        let (uid, up) = (SUDO_UID, dir.join("upper"));
        let passwd =
            fs::read_to_string("/etc/passwd").unwrap() + &format!("{user}:x:{uid}:{uid}::/home/{user}:/bin/sh\n");
        fs::write(up.join("etc/passwd"), passwd).unwrap();
        let group = fs::read_to_string("/etc/group").unwrap() + &format!("{user}:x:{uid}:\n");
        fs::write(up.join("etc/group"), group).unwrap();
        let home = up.join("home").join(user);
        fs::create_dir_all(home.join(".ssh")).unwrap();
        let pubkey = fs::read_to_string(self.client_key.with_extension("pub")).unwrap();
        fs::write(home.join(".ssh/authorized_keys"), pubkey).unwrap();
        for (p, mode) in [(home.clone(), 0o755), (home.join(".ssh"), 0o700), (home.join(".ssh/authorized_keys"), 0o600)]
        {
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
            std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
        }
        fs::create_dir_all(up.join("etc/sudoers.d")).unwrap();
        let rule = if with_password { "ALL=(ALL:ALL) ALL" } else { "ALL=(ALL:ALL) NOPASSWD: ALL" };
        let sudoers = up.join("etc/sudoers.d/copctl-lab");
        fs::write(&sudoers, format!("{user} {rule}\n")).unwrap();
        fs::set_permissions(&sudoers, fs::Permissions::from_mode(0o440)).unwrap();
    }

    fn new_host_key(&self, dir: &Path) {
        let key = dir.join("upper/etc/ssh/lab_host_ed25519_key");
        let _ = fs::remove_file(&key);
        let _ = fs::remove_file(key.with_extension("pub"));
        run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key));
    }

    fn spawn(&mut self, i: usize) {
        let h = &mut self.hosts[i];
        fs::write(h.dir.join("boot_id"), random_uuid() + "\n").unwrap();
        let log = File::create(h.dir.join("sshd.log")).unwrap();
        let mut cmd = match &h.netns {
            Some(ns) => {
                let mut c = Command::new("nsenter");
                c.arg(format!("--net=/var/run/netns/{ns}")).arg("unshare");
                c
            }
            None => Command::new("unshare"),
        };
        let shared = self.root.join("cluster");
        let _ = fs::create_dir_all(&shared);
        let child = cmd
            .args(["--mount", "--uts", "--pid", "--fork", "--propagation", "private", "--kill-child", "sh"])
            .arg(self.root.join("init.sh"))
            .arg(&h.dir)
            .arg(&h.name)
            .arg(&shared)
            .args(&self.opts.see)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("unshare runs");
        h.child = Some(child);
    }

    /// Whether the host's sshd listens on port 22 (read from its own network view, so it works
    /// for hosts this machine cannot reach).
    /// Only this host's own address counts: the hosts share this machine's network namespace,
    /// where other hosts already listen on port 22 (and a host counted as ready before its sshd
    /// runs would have its files written into this machine's root).
    fn listening(&self, i: usize) -> bool {
        let Some(pid) = self.pid(i) else { return false };
        let Ok(tcp) = fs::read_to_string(format!("/proc/{pid}/net/tcp")) else { return false };
        let want = format!("{:08X}:0016", u32::from_le_bytes(self.hosts[i].addr.octets()));
        tcp.lines().skip(1).any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[1] == want && f[3] == "0A"
        }) && self.in_own_root(pid)
    }

    /// Whether the process already lives in the host's own root (after init.sh's pivot_root):
    /// its `/` is the overlay, another filesystem than this machine's `/`.
    fn in_own_root(&self, pid: i32) -> bool {
        in_lab_root(pid, &self.root)
    }

    fn wait_ready(&mut self, i: usize) {
        let start = Instant::now();
        loop {
            if self.listening(i) {
                if self.hosts[i].netns.is_none() {
                    let addr = SocketAddr::from((self.hosts[i].addr, 22));
                    let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
                }
                return;
            }
            if let Some(c) = self.hosts[i].child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                let log = fs::read_to_string(self.hosts[i].dir.join("sshd.log")).unwrap_or_default();
                panic!("lab host {} exited ({status}) before listening:\n{log}", self.hosts[i].name);
            }
            assert!(start.elapsed() < Duration::from_secs(20), "lab host {} did not start", self.hosts[i].name);
            std::thread::sleep(Duration::from_millis(3));
        }
    }

    fn write_client_files(&self) {
        let mut inv = String::from("[lab]\n");
        let mut cfg = String::new();
        let mut kh = String::new();
        for h in &self.hosts {
            inv.push_str(&format!("{} ansible_host={} ansible_user=root\n", h.name, h.addr));
            cfg.push_str(&format!(
                "Host {}\n  HostName {}\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n",
                h.name,
                h.addr,
                self.client_key.display(),
                self.known_hosts.display()
            ));
            let pubkey = fs::read_to_string(h.dir.join("upper/etc/ssh/lab_host_ed25519_key.pub")).unwrap();
            let mut parts = pubkey.split_whitespace();
            kh.push_str(&format!("{} {} {}\n", h.addr, parts.next().unwrap(), parts.next().unwrap()));
        }
        inv.push_str(&format!("\n[lab:vars]\nansible_ssh_private_key_file={}\n", self.client_key.display()));
        fs::write(&self.inventory, inv).unwrap();
        fs::write(&self.ssh_config, cfg).unwrap();
        fs::write(&self.known_hosts, kh).unwrap();
    }

    /// Process id (in this machine's PID namespace) of the host's sshd, its PID 1.
    pub fn pid(&self, i: usize) -> Option<i32> {
        let c = self.hosts[i].child.as_ref()?;
        let text = fs::read_to_string(format!("/proc/{}/task/{}/children", c.id(), c.id())).ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    /// Every process of the host (sshd and what runs under it).
    fn pids(&self, i: usize) -> Vec<i32> {
        let Some(init) = self.pid(i) else { return vec![] };
        let Ok(ns) = fs::read_link(format!("/proc/{init}/ns/pid")) else { return vec![] };
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| fs::read_link(format!("/proc/{p}/ns/pid")).is_ok_and(|n| n == ns))
            .collect()
    }

    /// CPU time (clock ticks) the hosts' processes have used so far, those still running and
    /// those already reaped inside the hosts (sshd sessions, the commands they ran).
    pub fn cpu_ticks(&self) -> u64 {
        let namespaces: std::collections::HashSet<PathBuf> = (0..self.hosts.len())
            .filter_map(|i| fs::read_link(format!("/proc/{}/ns/pid", self.pid(i)?)).ok())
            .collect();
        let mut total = 0;
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if !fs::read_link(format!("/proc/{p}/ns/pid")).is_ok_and(|n| namespaces.contains(&n)) {
                continue;
            }
            let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
            // Fields after the command name (which may hold spaces): utime is the 12th of them.
            let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
            let f: Vec<u64> = rest.split_whitespace().skip(11).take(4).filter_map(|x| x.parse().ok()).collect();
            total += f.iter().sum::<u64>();
        }
        total
    }

    /// Takes the host down (like pulling its plug).
    pub fn kill(&mut self, i: usize) {
        if let Some(p) = self.pid(i) {
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        if let Some(mut c) = self.hosts[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Freezes every process of the host: connections hang, nothing answers. Several passes: a
    /// process forked by one not yet stopped (a new session) is caught by the next.
    pub fn freeze(&self, i: usize) {
        for _ in 0..5 {
            for p in self.pids(i) {
                unsafe { libc::kill(p, libc::SIGSTOP) };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until a process named `comm` runs on the host (a command copctl started).
    pub fn wait_for_process(&self, i: usize, comm: &str, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self
                .pids(i)
                .iter()
                .any(|p| fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == comm))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    pub fn thaw(&self, i: usize) {
        for p in self.pids(i) {
            unsafe { libc::kill(p, libc::SIGCONT) };
        }
    }

    /// Whether the host went down by itself (its sshd exited).
    pub fn is_down(&mut self, i: usize) -> bool {
        match self.hosts[i].child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
            None => true,
        }
    }

    /// Restarts the host: same disk, new boot id.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_ready(i);
    }

    /// Gives the host a new host key (and restarts it).
    pub fn rotate_host_key(&mut self, i: usize) {
        self.kill(i);
        let dir = self.hosts[i].dir.clone();
        self.new_host_key(&dir);
        self.spawn(i);
        self.wait_ready(i);
    }

    /// Where a path of the host lives on this machine while the host runs.
    pub fn path(&self, i: usize, path: &str) -> PathBuf {
        let pid = self.pid(i).expect("host is running");
        assert!(self.in_own_root(pid), "lab host {} is not up (its root is not its own yet)", self.hosts[i].name);
        PathBuf::from(format!("/proc/{pid}/root")).join(path.trim_start_matches('/'))
    }

    /// Runs a shell command inside the host (its namespaces and root), for test set-up.
    pub fn sh(&self, i: usize, script: &str) -> String {
        let pid = self.pid(i).expect("host is running");
        assert!(self.in_own_root(pid), "lab host {} is not up (its root is not its own yet)", self.hosts[i].name);
        let pid = pid.to_string();
        let out = Command::new("nsenter")
            .args(["-t", &pid, "-m", "-u", "-p", "-r", "-w", "--", "sh", "-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Installs test doubles (tests/doubles/NAME) into every running host's /usr/local/sbin.
    pub fn install_doubles(&self, names: &[&str]) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles");
        for i in 0..self.hosts.len() {
            let dir = self.path(i, "/usr/local/sbin");
            fs::create_dir_all(&dir).unwrap();
            for n in names {
                let to = dir.join(n);
                fs::copy(src.join(n), &to).unwrap();
                fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
    }

    /// The calls the doubles recorded on a host, one per line.
    pub fn double_calls(&self, i: usize) -> Vec<String> {
        fs::read_to_string(self.path(i, "/var/log/copctl-doubles.log"))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Writes an inventory of the lab's hosts under `[group]`, with extra lines appended.
    pub fn write_inventory(&self, path: &Path, extra: &str) {
        let mut f = File::create(path).unwrap();
        f.write_all(fs::read_to_string(&self.inventory).unwrap().as_bytes()).unwrap();
        f.write_all(extra.as_bytes()).unwrap();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for i in 0..self.hosts.len() {
            self.thaw(i);
            self.kill(i);
        }
        if !self.keep {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}
