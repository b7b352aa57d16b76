//! The lab as a command (test infrastructure, see tests/lab/; needs root).
//!
//! - `copctl-lab N`: starts N lab hosts, prints their inventory, known_hosts and ssh_config, and
//!   keeps them up until Enter.
//! - `copctl-lab demo [--keep]`: copctl's main job on a small lab cluster under COP names (3
//!   servers, 3 workers, 2 GPU nodes; test doubles stand in for RKE2, kubectl, systemd, NVIDIA):
//!   the cluster without cop-worker-3 is installed first, then `copctl node add cop-worker-3` runs
//!   with its live progress and recap.

#[path = "../../tests/lab/mod.rs"]
mod lab;

use std::process::Command;
use std::time::Instant;

fn wait_for_enter(msg: &str) {
    eprintln!("{msg}");
    let mut s = String::new();
    let _ = std::io::stdin().read_line(&mut s);
}

fn demo(keep: bool) -> i32 {
    let dir = std::env::temp_dir().join("copctl-demo");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("demo directory");
    let t = Instant::now();
    let site = lab::cop_site::CopSite::start(&dir);
    eprintln!(
        "lab cluster up: {} hosts in {:.2}s ({})",
        site.lab.hosts.len(),
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    let exe = std::env::current_exe().expect("own path");
    let copctl = exe.with_file_name("copctl");
    if !copctl.exists() {
        eprintln!("{} not found: build it first (cargo build --release)", copctl.display());
        return 1;
    }
    let kh = site.lab.known_hosts.display().to_string();
    let run = |args: &[&str], quiet: bool| {
        let mut c = Command::new(&copctl);
        c.args(args)
            .args(["-i", "inventory.ini", "--known-hosts", &kh])
            .current_dir(&dir)
            .env("HOME", dir.join("home"));
        if quiet {
            c.env("COPCTL_NO_PROGRESS", "1").stdout(std::fs::File::create(dir.join("install.log")).expect("log"));
        }
        c.status().expect("copctl runs").code().unwrap_or(1)
    };
    eprintln!(
        "installing the existing cluster (everything but cop-worker-3; log in {}/install.log) ...",
        dir.display()
    );
    let t = Instant::now();
    let code = run(&["run", "system-setup", "system-dns", "rke2-install", "--limit", "!cop-worker-3"], true);
    if code != 0 {
        eprintln!("the cluster install failed (exit {code}): see {}/install.log", dir.display());
        return code;
    }
    eprintln!("existing cluster installed in {:.1}s\n\n$ copctl node add cop-worker-3", t.elapsed().as_secs_f64());
    let code = run(&["node", "add", "cop-worker-3"], false);
    eprintln!(
        "\nThe site is in {d}: inventory.ini, env.yaml, .copctl/runs (the run record), .copctl/last-failed.\n\
         What the test doubles on each host were asked, in order: /var/log/copctl-doubles.log on the host.",
        d = dir.display()
    );
    if keep {
        wait_for_enter("press Enter to stop the lab hosts");
    }
    code
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("demo") {
        std::process::exit(demo(args.iter().any(|a| a == "--keep")));
    }
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    let start = Instant::now();
    let lab = lab::Lab::start(n, lab::LabOptions::default());
    eprintln!("{n} lab host(s) up in {:.2}s", start.elapsed().as_secs_f64());
    for h in &lab.hosts {
        println!("{} {}", h.name, h.addr);
    }
    println!("inventory:   {}", lab.inventory.display());
    println!("known_hosts: {}", lab.known_hosts.display());
    println!("ssh_config:  {}", lab.ssh_config.display());
    println!("e.g. ssh -F {} {}", lab.ssh_config.display(), lab.hosts[0].name);
    wait_for_enter("press Enter (or Ctrl-C) to stop");
}
