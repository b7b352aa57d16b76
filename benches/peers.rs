//! copctl against tuned Ansible and pyinfra on lab hosts (needs root; the peers come from
//! `scripts/peers-setup.sh`). The workload is the shipped `system-setup` + `system-dns` playbooks
//! against the lab's test doubles; `benches/peers/site.yml` and `benches/peers/deploy.py` are the
//! same work for the peers. Every run starts on fresh hosts; after it, each host's state (the
//! files the workload writes, their modes, what the doubles recorded as installed / enabled /
//! restarted) must equal what copctl left on the same host, and the re-run must leave it as it was.
//!
//! `cargo bench --bench peers -- [--hosts 10,50,100] [--runs 3] [--tools copctl,ansible,pyinfra]
//! [--workload files|base|ansible] [--out FILE]`, `--quick` (2 hosts, 1 run: the CI smoke), `--scale
//! 250,500,1000` (copctl alone: a 10-step playbook and the file workload, first run, re-runs, the
//! hosts' SSH-login floor and the workload's own commands alone, per size). The `files` workload
//! (the default) adds `bench-files`: a 1 MiB copy and a template from play and host variables;
//! `ansible` runs the peers' Ansible playbook (`site-files.yml`, the same work) through copctl
//! itself, against ansible-playbook on the same file (issue 17's speed check). Prints a Markdown
//! table; `--out` also writes JSON.

#[path = "../tests/lab/mod.rs"]
mod lab;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Tool {
    Copctl,
    Ansible,
    Pyinfra,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Copctl => "copctl",
            Tool::Ansible => "ansible",
            Tool::Pyinfra => "pyinfra",
        }
    }
}

/// One run of one tool.
#[derive(Clone, Copy, Default, Debug)]
struct Measure {
    wall: f64,
    /// Controller CPU seconds (user + system), the tool and every process it started.
    cpu: f64,
    /// Peak proportional set size of the controller's process tree (sampled), MiB.
    pss_mib: f64,
    /// Peak resident set of its largest process (the kernel's figure), MiB.
    maxrss_mib: f64,
    /// CPU seconds spent on the hosts (sshd, shells, the commands).
    host_cpu: f64,
}

/// The copctl under test: this build's, or `COPCTL_BENCH_BIN` (an earlier build kept for a
/// before → after comparison in one session).
fn copctl_bin() -> PathBuf {
    std::env::var_os("COPCTL_BENCH_BIN").map(PathBuf::from).unwrap_or_else(|| env!("CARGO_BIN_EXE_copctl").into())
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn tick_seconds() -> f64 {
    1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn children_of(pid: i32) -> Vec<i32> {
    let mut out = vec![];
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return out };
    for t in tasks.flatten() {
        if let Ok(text) = fs::read_to_string(t.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out
}

fn comm(pid: i32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

/// SSH control masters (ControlPersist) leave the tool's process tree; as a child subreaper the
/// bench inherits them, so they are found (and counted) among its own children.
fn orphaned_ssh() -> Vec<i32> {
    children_of(std::process::id() as i32).into_iter().filter(|p| comm(*p) == "ssh").collect()
}

fn tree_pss_kib(root: i32) -> u64 {
    let mut stack = vec![root];
    stack.extend(orphaned_ssh());
    let mut total = 0;
    while let Some(p) = stack.pop() {
        if let Ok(text) = fs::read_to_string(format!("/proc/{p}/smaps_rollup")) {
            total += text
                .lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or(0);
        }
        stack.extend(children_of(p));
    }
    total
}

/// Runs `cmd` to completion and measures it; its output goes to `log`. Returns the exit code.
fn measure(mut cmd: Command, lab: &lab::Lab, log: &Path) -> (Measure, i32) {
    let host_before = lab.cpu_ticks();
    let out = fs::File::create(log).unwrap();
    cmd.stdin(Stdio::null()).stdout(out.try_clone().unwrap()).stderr(out);
    let start = Instant::now();
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let pid = child.id() as i32;
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(tree_pss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let wall = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    std::mem::forget(child);
    let mut cpu = lab::rusage_seconds(&ru);
    let mut maxrss = ru.ru_maxrss as f64;
    // The run ends the control masters it left (each run pays for its own connections).
    for p in orphaned_ssh() {
        unsafe { libc::kill(p, libc::SIGTERM) };
        let mut st = 0;
        let mut r2: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::wait4(p, &mut st, 0, &mut r2) } == p {
            cpu += lab::rusage_seconds(&r2);
            maxrss = maxrss.max(r2.ru_maxrss as f64);
        }
    }
    // Let the hosts' session processes finish and be reaped before reading their CPU time.
    std::thread::sleep(Duration::from_millis(300));
    let host_cpu = (lab.cpu_ticks() - host_before) as f64 * tick_seconds();
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    let m = Measure {
        wall,
        cpu,
        pss_mib: peak.load(Ordering::Relaxed) as f64 / 1024.0,
        maxrss_mib: maxrss / 1024.0,
        host_cpu,
    };
    (m, code)
}

/// What the workload leaves on host `i`: the files it writes (content and mode), the directories'
/// modes, and the doubles' state (packages installed, units enabled / active, restart counts).
fn fingerprint(lab: &lab::Lab, i: usize) -> String {
    let mut s = String::new();
    for p in [
        "/etc/NetworkManager/conf.d",
        "/etc/modules-load.d",
        "/etc/sysctl.d",
        "/etc/chrony",
        "/etc/NetworkManager/conf.d/rke2-canal.conf",
        "/etc/modules-load.d/rke2.conf",
        "/etc/sysctl.d/90-rke2.conf",
        "/etc/chrony/chrony.conf",
        "/etc/hosts",
        "/etc/fstab",
        "/etc/hostname",
        "/opt/bench",
        "/opt/bench/node.conf",
    ] {
        let path = lab.path(i, p);
        match fs::metadata(&path) {
            Err(_) => writeln!(s, "{p}: missing").unwrap(),
            Ok(m) if m.is_dir() => writeln!(s, "{p}: dir {:o}", m.permissions().mode() & 0o7777).unwrap(),
            Ok(m) => writeln!(
                s,
                "{p}: {:o}\n{}",
                m.permissions().mode() & 0o7777,
                // pyinfra's spelling of the /etc/hosts marker (see deploy.py).
                String::from_utf8_lossy(&fs::read(&path).unwrap_or_default())
                    .replace("OPENMARU COP HOSTS copctl", "OPENMARU COP HOSTS (copctl)")
            )
            .unwrap(),
        }
    }
    // The payload by its digest and mode, not its 1 MiB.
    let payload = lab.path(i, "/opt/bench/payload.bin");
    match fs::read(&payload) {
        Err(_) => writeln!(s, "/opt/bench/payload.bin: missing").unwrap(),
        Ok(b) => writeln!(
            s,
            "/opt/bench/payload.bin: {:o} sha256 {}",
            fs::metadata(&payload).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0),
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&b))
        )
        .unwrap(),
    }
    let mut state = BTreeMap::new();
    let mut stack = vec![lab.path(i, "/var/lib/copctl-doubles")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(lab.path(i, "/var/lib/copctl-doubles")).unwrap().display().to_string();
                state.insert(rel, fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
    }
    for (k, v) in state {
        writeln!(s, "doubles {k}: {v:?}").unwrap();
    }
    // Each tool's run has a lab of its own, whose addresses may differ (another lab on the
    // machine holding a range): the hosts' addresses by index, longest first (…1.10 before …1.1).
    let mut addrs: Vec<(usize, String)> = lab.hosts.iter().enumerate().map(|(j, h)| (j, h.addr.to_string())).collect();
    addrs.sort_by_key(|(_, a)| std::cmp::Reverse(a.len()));
    for (j, a) in addrs {
        s = s.replace(&a, &format!("[address of host {}]", j + 1));
    }
    s
}

/// Where two fingerprints first differ; both are kept in the bench's directory for a person.
fn first_difference(a: &str, b: &str) -> String {
    let _ = fs::write("/tmp/copctl-bench/state-copctl.txt", a);
    let _ = fs::write("/tmp/copctl-bench/state-peer.txt", b);
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: copctl `{x}` / peer `{y}`", n + 1);
        }
    }
    format!("lengths differ ({} / {} lines)", a.lines().count(), b.lines().count())
}

struct Site {
    dir: PathBuf,
    lab: lab::Lab,
}

const DOUBLES: &[&str] =
    &["systemctl", "apt-get", "dpkg-query", "modprobe", "lsmod", "sysctl", "hostnamectl", "chronyc"];

fn start_site(n: usize, work: &Path) -> Site {
    let dir = work.join(format!("site-{n}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("home")).unwrap();
    let lab = lab::Lab::start(n, lab::LabOptions { prefix: Some("bench".into()), ..Default::default() });
    lab.install_doubles(DOUBLES);
    // Inventory names differ from the hosts' own names, so `hostname` has work to do.
    let mut inv = String::from("[cluster]\n");
    let mut py = String::from("cluster = [\n");
    for (i, h) in lab.hosts.iter().enumerate() {
        writeln!(inv, "cop-node-{} ansible_host={} node_index={}", i + 1, h.addr, i + 1).unwrap();
        writeln!(
            py,
            "    (\"cop-node-{}\", {{\"ssh_hostname\": \"{}\", \"ssh_user\": \"root\", \"ssh_key\": \"{}\", \
             \"ssh_known_hosts_file\": \"{}\", \"ssh_strict_host_key_checking\": \"yes\", \
             \"ingress_ip\": \"192.0.2.100\", \"domain\": \"example\", \"sub_domain\": \"cop\", \"TLD\": \"com\", \"node_index\": {}}}),",
            i + 1,
            h.addr,
            lab.client_key.display(),
            lab.known_hosts.display(),
            i + 1
        )
        .unwrap();
    }
    py.push_str("]\n");
    write!(
        inv,
        "[cluster:vars]\nansible_user=root\nansible_ssh_private_key_file={}\ningress_ip=192.0.2.100\n\
         domain=example\nsub_domain=cop\nTLD=com\n",
        lab.client_key.display()
    )
    .unwrap();
    fs::write(dir.join("inventory.ini"), inv).unwrap();
    fs::write(dir.join("inventory.py"), py).unwrap();
    // The file workload's inputs: its playbook and template beside the inventory (where copctl
    // looks by default), and a 1 MiB payload of fixed pseudo-random bytes (incompressible).
    for d in ["playbooks", "templates", "files"] {
        fs::create_dir_all(dir.join(d)).unwrap();
    }
    fs::copy(repo().join("benches/peers/bench-files.yaml"), dir.join("playbooks/bench-files.yaml")).unwrap();
    fs::copy(repo().join("benches/peers/files/bench-node.conf.j2"), dir.join("templates/bench-node.conf.j2")).unwrap();
    fs::write(dir.join("files/payload.bin"), payload()).unwrap();
    fs::write(
        dir.join("ansible.cfg"),
        format!(
            "[defaults]\nforks = {n}\ngathering = explicit\ninterpreter_python = /usr/bin/python3\n\
             retry_files_enabled = False\nhost_key_checking = True\nlocal_tmp = {d}/home/.ansible/tmp\n\
             [ssh_connection]\npipelining = True\n\
             ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes\n\
             control_path_dir = {d}/cp\n",
            d = dir.display(),
            kh = lab.known_hosts.display()
        ),
    )
    .unwrap();
    Site { dir, lab }
}

/// The 1 MiB the file workload copies: xorshift bytes, the same on every run.
fn payload() -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..PAYLOAD_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

const PAYLOAD_BYTES: usize = 1 << 20;

fn peer(path: &str) -> PathBuf {
    let p = repo().join(path);
    assert!(p.exists(), "{} is missing: run scripts/peers-setup.sh first", p.display());
    p
}

/// The workload: the shipped playbooks (`base`), plus `bench-files` (`files`), or the Ansible
/// playbook `benches/peers/site-files.yml` run by copctl itself (`ansible`: the same file
/// through both tools).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Workload {
    Base,
    Files,
    Ansible,
}

fn command(tool: Tool, site: &Site, n: usize, workload: Workload) -> Command {
    let files = workload != Workload::Base;
    let mut c = match tool {
        Tool::Copctl if workload == Workload::Ansible => {
            let mut c = Command::new(copctl_bin());
            c.arg("run")
                .arg(repo().join("benches/peers/site-files.yml"))
                .arg("-e")
                .arg(format!("copctl_templates={}", repo().join("templates").display()))
                .arg("-e")
                .arg(format!("bench_site={}", site.dir.display()))
                .args(["-i", "inventory.ini", "--output", "json", "-f"])
                .arg(n.to_string())
                .arg("--known-hosts")
                .arg(&site.lab.known_hosts)
                .env("COPCTL_NO_PROGRESS", "1");
            c
        }
        Tool::Copctl => {
            let mut c = Command::new(copctl_bin());
            c.args(["run", "system-setup", "system-dns"]);
            if files {
                c.arg("bench-files");
            }
            c.args(["-i", "inventory.ini", "--output", "json", "-f"])
                .arg(n.to_string())
                .arg("--known-hosts")
                .arg(&site.lab.known_hosts)
                .env("COPCTL_NO_PROGRESS", "1");
            c
        }
        Tool::Ansible => {
            let mut c = Command::new(peer(".peers/venv/bin/ansible-playbook"));
            c.args(["-i", "inventory.ini"])
                .arg("-e")
                .arg(format!("copctl_templates={}", repo().join("templates").display()))
                .arg("-e")
                .arg(format!("bench_site={}", site.dir.display()))
                .arg(repo().join(if files { "benches/peers/site-files.yml" } else { "benches/peers/site.yml" }))
                .env("ANSIBLE_CONFIG", site.dir.join("ansible.cfg"));
            c
        }
        Tool::Pyinfra => {
            let mut c = Command::new(peer(".peers/pyinfra/bin/pyinfra"));
            c.args(["-y", "--parallel"])
                .arg(n.to_string())
                .arg("inventory.py")
                .arg(repo().join(if files { "benches/peers/deploy-files.py" } else { "benches/peers/deploy.py" }))
                .env("COPCTL_TEMPLATES", repo().join("templates"))
                .env("BENCH_SITE", &site.dir);
            c
        }
    };
    c.current_dir(&site.dir).env("HOME", site.dir.join("home"));
    c
}

struct Args {
    hosts: Vec<usize>,
    runs: usize,
    tools: Vec<Tool>,
    out: Option<PathBuf>,
    scale: Vec<usize>,
    workload: Workload,
}

fn parse_args() -> Args {
    let mut a = Args {
        hosts: vec![10, 50, 100],
        runs: 3,
        tools: vec![Tool::Copctl, Tool::Ansible, Tool::Pyinfra],
        out: None,
        scale: vec![],
        workload: Workload::Files,
    };
    let list = |v: Option<String>| -> Vec<usize> {
        v.expect("a value").split(',').map(|x| x.trim().parse().expect("a number")).collect()
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => {
                a.hosts = vec![2];
                a.runs = 1;
            }
            "--hosts" => a.hosts = list(it.next()),
            "--runs" => a.runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--out" => a.out = it.next().map(PathBuf::from),
            "--scale" => a.scale = list(it.next()),
            "--workload" => {
                a.workload = match it.next().as_deref() {
                    Some("files") => Workload::Files,
                    Some("base") => Workload::Base,
                    Some("ansible") => Workload::Ansible,
                    other => panic!("--workload files|base|ansible, not {other:?}"),
                }
            }
            "--tools" => {
                a.tools = it
                    .next()
                    .expect("--tools a,b")
                    .split(',')
                    .map(|t| match t {
                        "copctl" => Tool::Copctl,
                        "ansible" => Tool::Ansible,
                        "pyinfra" => Tool::Pyinfra,
                        other => panic!("unknown tool {other}"),
                    })
                    .collect()
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    if a.workload == Workload::Ansible {
        // pyinfra cannot run an Ansible playbook.
        a.tools.retain(|t| *t != Tool::Pyinfra);
    }
    if !a.tools.contains(&Tool::Copctl) {
        a.tools.insert(0, Tool::Copctl);
    }
    a.tools.sort();
    a
}

/// The run of median wall time.
fn by_wall_median(v: &mut [Measure]) -> Measure {
    v.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    v[v.len() / 2]
}

/// `--scale`: copctl alone on many hosts, per size: the 10-step playbook and the file workload
/// (a 1 MiB copy, a template), then three re-runs, each followed by the SSH-login floor:
/// `copctl exec -- true` on every host (a login and one `true`), whose host CPU over the
/// machine's cores is the least wall time any run that logs into every host can take here. The
/// median re-run is compared with the median floor. Beside them, the workload's own commands
/// (`uname` and the `unless` guard's `grep`) as one `exec`: what its re-run costs a tool that
/// adds nothing to them.
fn scale(sizes: &[usize], work: &Path, json: &mut String) {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!(
        "\n| hosts | first run s | re-run s | controller CPU s first / re-run | peak RSS MiB first / re-run | host CPU s first / re-run | login floor s | re-run / floor |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    json.push_str("\"scale\": [");
    for (k, &n) in sizes.iter().enumerate() {
        let t = Instant::now();
        let site = start_site(n, work);
        eprintln!("{n} lab hosts up in {:.1}s", t.elapsed().as_secs_f64());
        // The site's options go before a command's `--`. `-f 64` (copctl's default) explicitly:
        // the site's ansible.cfg, written for Ansible's runs, says forks = the host count, and
        // copctl reads it — 1000 logins at once overran the 10 s connect timeout.
        let copctl = |args: &[&str], command: &[&str]| {
            let mut c = Command::new(copctl_bin());
            c.args(args)
                .args(["-f", "64", "-i", "inventory.ini", "--known-hosts"])
                .arg(&site.lab.known_hosts)
                .args(command)
                .env("COPCTL_NO_PROGRESS", "1")
                .current_dir(&site.dir)
                .env("HOME", site.dir.join("home"));
            c
        };
        fs::copy(repo().join("benches/peers/scale-10.yaml"), site.dir.join("playbooks/scale-10.yaml")).unwrap();
        let run = |label: &str| {
            let log = site.dir.join(format!("scale-{label}.log"));
            let (m, code) =
                measure(copctl(&["run", "scale-10", "bench-files", "--output", "json"], &[]), &site.lab, &log);
            assert_eq!(code, 0, "copctl failed on {n} hosts ({label}): see {}", log.display());
            eprintln!(
                "  {n} hosts {label}: {:.2}s wall, {:.2}s CPU, {:.1} MiB RSS, hosts {:.2}s CPU",
                m.wall, m.cpu, m.maxrss_mib, m.host_cpu
            );
            m
        };
        // `copctl exec` of one command line on every host.
        let exec_all = |log: String, line: &str| {
            let log = site.dir.join(log);
            let (m, code) = measure(copctl(&["exec", "cluster", "--output", "json"], &["--", line]), &site.lab, &log);
            assert_eq!(code, 0, "copctl exec failed on {n} hosts: see {}", log.display());
            m
        };
        let login = |k: usize| {
            let m = exec_all(format!("scale-floor-{k}.log"), "true");
            eprintln!(
                "  {n} hosts login floor {k}: {:.2} s of host CPU ({:.1} ms a login)",
                m.host_cpu,
                m.host_cpu * 1000.0 / n as f64
            );
            m
        };
        // The workload's own processes (scale-10.yaml's `command` and its `unless` guard) over
        // the same logins, as one `exec`: what a re-run costs a tool that adds nothing of its own.
        let own = |k: usize| {
            let m = exec_all(format!("scale-own-{k}.log"), "uname -r >/dev/null; grep -q configured /opt/scale/state");
            eprintln!("  {n} hosts own commands {k}: {:.2}s wall, hosts {:.2} s CPU", m.wall, m.host_cpu);
            m
        };
        // The re-run and the login floor, three of each, interleaved: the floor's host CPU moves
        // by a tenth between one run and the next on this machine; the medians are compared.
        let first = run("first");
        let (mut reruns, mut floors, mut owns) = (vec![], vec![], vec![]);
        for k in 0..3 {
            reruns.push(run(&format!("rerun-{k}")));
            floors.push(login(k));
            owns.push(own(k));
        }
        let own = by_wall_median(&mut owns);
        let rerun = by_wall_median(&mut reruns);
        floors.sort_by(|a, b| a.host_cpu.total_cmp(&b.host_cpu));
        let floor = floors[floors.len() / 2];
        let floor_s = floor.host_cpu / cores as f64;
        let (a, b) = (first, rerun);
        println!(
            "| {n} | {:.2} | {:.2} | {:.2} / {:.2} | {:.1} / {:.1} | {:.1} / {:.1} | {floor_s:.2} | {:.2}× |",
            a.wall,
            b.wall,
            a.cpu,
            b.cpu,
            a.maxrss_mib,
            b.maxrss_mib,
            a.host_cpu,
            b.host_cpu,
            b.wall / floor_s
        );
        eprintln!(
            "  {n} hosts login floor (median of 3): {:.2} s of host CPU for {n} logins ({:.1} ms each) over {cores} cores = {floor_s:.2} s (exec itself took {:.2} s); re-run: median of 3",
            floor.host_cpu,
            floor.host_cpu * 1000.0 / n as f64,
            floor.wall
        );
        eprintln!(
            "  {n} hosts, the workload's own commands alone over the same logins (median of 3): {:.2} s wall = {:.2}x the floor, hosts {:.2} s CPU",
            own.wall,
            own.wall / floor_s,
            own.host_cpu
        );
        write!(
            json,
            "{}{{\"hosts\": {n}, \"first\": {}, \"rerun\": {}, \"login\": {}, \"own_commands\": {}, \"cores\": {cores}, \"login_floor_s\": {floor_s:.3}}}",
            if k > 0 { ", " } else { "" },
            measure_json(&a),
            measure_json(&b),
            measure_json(&floor),
            measure_json(&own)
        )
        .unwrap();
    }
    json.push(']');
}

fn measure_json(m: &Measure) -> String {
    format!(
        "{{\"wall_s\": {:.3}, \"cpu_s\": {:.3}, \"pss_mib\": {:.1}, \"maxrss_mib\": {:.1}, \"host_cpu_s\": {:.2}}}",
        m.wall, m.cpu, m.pss_mib, m.maxrss_mib, m.host_cpu
    )
}

fn main() {
    let args = parse_args();
    assert!(unsafe { libc::geteuid() } == 0, "the benchmark needs root (lab hosts)");
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let work = PathBuf::from("/tmp/copctl-bench");
    fs::create_dir_all(&work).unwrap();
    let mut json = String::from("{");
    if !args.scale.is_empty() {
        scale(&args.scale, &work, &mut json);
        json.push('}');
        if let Some(out) = &args.out {
            fs::write(out, json + "\n").unwrap();
        }
        return;
    }
    eprintln!(
        "workload: {}; tools: {}; hosts: {:?}; {} run(s) each",
        match args.workload {
            Workload::Base => "system-setup + system-dns",
            Workload::Files => "system-setup + system-dns + bench-files (1 MiB copy, template)",
            Workload::Ansible => "the Ansible playbook benches/peers/site-files.yml, run by each tool",
        },
        args.tools.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "),
        args.hosts,
        args.runs
    );
    // results[(n, tool)] = (first runs, re-runs)
    let mut results: Results = BTreeMap::new();
    for &n in &args.hosts {
        for rep in 0..args.runs {
            let mut reference: Option<Vec<String>> = None;
            for &tool in &args.tools {
                let site = start_site(n, &work);
                let mut fps = vec![];
                let mut ms = vec![];
                for label in ["first", "rerun"] {
                    let log = site.dir.join(format!("{}-{label}.log", tool.name()));
                    let (m, code) = measure(command(tool, &site, n, args.workload), &site.lab, &log);
                    assert_eq!(
                        code,
                        0,
                        "{} ({label} run, {n} hosts) exited {code}:\n{}",
                        tool.name(),
                        fs::read_to_string(&log)
                            .unwrap_or_default()
                            .lines()
                            .rev()
                            .take(30)
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                    eprintln!(
                        "  {n} hosts, run {}: {:8} {label}: {:6.2}s wall, {:6.2}s CPU, {:6.1} MiB, hosts {:6.2}s CPU",
                        rep + 1,
                        tool.name(),
                        m.wall,
                        m.cpu,
                        m.pss_mib,
                        m.host_cpu
                    );
                    ms.push(m);
                    fps.push((0..n).map(|i| fingerprint(&site.lab, i)).collect::<Vec<_>>());
                }
                for (i, (a, b)) in fps[0].iter().zip(&fps[1]).enumerate() {
                    assert!(a == b, "{}: the re-run changed host {} ({})", tool.name(), i + 1, first_difference(a, b));
                }
                match &reference {
                    None => reference = Some(fps[0].clone()),
                    Some(r) => {
                        for (i, (a, b)) in r.iter().zip(&fps[0]).enumerate() {
                            assert!(
                                a == b,
                                "{} left host {} differently from copctl: {}",
                                tool.name(),
                                i + 1,
                                first_difference(a, b)
                            );
                        }
                    }
                }
                let e = results.entry((n, tool)).or_default();
                e.0.push(ms[0]);
                e.1.push(ms[1]);
            }
        }
    }
    report(&args, &results, &mut json);
    json.push('}');
    if let Some(out) = &args.out {
        fs::write(out, json + "\n").unwrap();
    }
}

/// Per host count and tool: the first runs and the re-runs.
type Results = BTreeMap<(usize, Tool), (Vec<Measure>, Vec<Measure>)>;

fn report(args: &Args, results: &Results, json: &mut String) {
    println!(
        "\n| hosts | tool | first run s | re-run s | controller CPU s (first) | peak memory MiB (first) | host CPU s (first) | host CPU s (re-run) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    json.push_str("\"runs\": [");
    let mut sep = "";
    let med = |v: &[Measure], f: fn(&Measure) -> f64| median(v.iter().map(f).collect());
    for &n in &args.hosts {
        for &tool in &args.tools {
            let (first, rerun) = &results[&(n, tool)];
            println!(
                "| {n} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2} |",
                tool.name(),
                med(first, |m| m.wall),
                med(rerun, |m| m.wall),
                med(first, |m| m.cpu),
                med(first, |m| m.pss_mib),
                med(first, |m| m.host_cpu),
                med(rerun, |m| m.host_cpu),
            );
            for (label, v) in [("first", first), ("rerun", rerun)] {
                for m in v {
                    write!(
                        json,
                        "{sep}{{\"hosts\": {n}, \"tool\": \"{}\", \"run\": \"{label}\", \"wall_s\": {:.3}, \"cpu_s\": {:.3}, \
                         \"pss_mib\": {:.1}, \"maxrss_mib\": {:.1}, \"host_cpu_s\": {:.2}}}",
                        tool.name(),
                        m.wall,
                        m.cpu,
                        m.pss_mib,
                        m.maxrss_mib,
                        m.host_cpu
                    )
                    .unwrap();
                    sep = ", ";
                }
            }
        }
    }
    json.push_str("], \"ratios\": [");
    println!(
        "\n| hosts | peer | first run: peer / copctl | re-run: peer / copctl | host CPU (first): peer / copctl | peak memory: copctl / peer |"
    );
    println!("|---:|---|---:|---:|---:|---:|");
    let mut sep = "";
    for &n in &args.hosts {
        let (c1, c2) = &results[&(n, Tool::Copctl)];
        for &tool in args.tools.iter().filter(|t| **t != Tool::Copctl) {
            let (p1, p2) = &results[&(n, tool)];
            let r1 = med(p1, |m| m.wall) / med(c1, |m| m.wall);
            let r2 = med(p2, |m| m.wall) / med(c2, |m| m.wall);
            let r3 = med(p1, |m| m.host_cpu) / med(c1, |m| m.host_cpu).max(0.01);
            let r4 = med(c1, |m| m.pss_mib) / med(p1, |m| m.pss_mib).max(0.01);
            println!("| {n} | {} | {r1:.1}× | {r2:.1}× | {r3:.1}× | {r4:.2}× |", tool.name());
            write!(
                json,
                "{sep}{{\"hosts\": {n}, \"peer\": \"{}\", \"first\": {r1:.2}, \"rerun\": {r2:.2}, \"host_cpu\": {r3:.2}, \"memory\": {r4:.3}}}",
                tool.name()
            )
            .unwrap();
            sep = ", ";
        }
    }
    json.push(']');
}
