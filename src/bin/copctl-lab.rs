//! The lab as a command (test infrastructure, see tests/lab/). `copctl-lab N`: starts N lab hosts for a person, prints where their inventory, known_hosts
//! and ssh_config are, and keeps them up until Ctrl-C (or stdin closes).

#[path = "../../tests/lab/mod.rs"]
mod lab;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let start = std::time::Instant::now();
    let lab = lab::Lab::start(n, lab::LabOptions::default());
    eprintln!("{n} lab host(s) up in {:.2}s", start.elapsed().as_secs_f64());
    for h in &lab.hosts {
        println!("{} {}", h.name, h.addr);
    }
    println!("inventory:   {}", lab.inventory.display());
    println!("known_hosts: {}", lab.known_hosts.display());
    println!("ssh_config:  {}", lab.ssh_config.display());
    println!("e.g. ssh -F {} {}", lab.ssh_config.display(), lab.hosts[0].name);
    eprintln!("press Enter (or Ctrl-C) to stop");
    let mut s = String::new();
    let _ = std::io::stdin().read_line(&mut s);
}
