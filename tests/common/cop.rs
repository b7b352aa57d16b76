//! Reading a COP lab cluster's shared state (tests/doubles/README.md) and playing its machines
//! while copctl runs: what tests/cop.rs, cop_gpu.rs and cop_maintenance.rs share.

use serde_json::Value;

use super::Site;
use super::lab::cop_site::NAMES;

/// Lines of a file of the shared cluster state (joins, violations, events...), as the doubles
/// wrote them; none when it does not exist.
pub fn cluster_file(c: &Site, name: &str) -> Vec<String> {
    std::fs::read_to_string(c.lab().root.join("cluster").join(name))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// One line of the cluster's event log: time (ns), what, and its words.
pub struct Event {
    pub at: u128,
    pub what: String,
    pub args: Vec<String>,
}

pub fn cluster_events(c: &Site) -> Vec<Event> {
    cluster_file(c, "events")
        .iter()
        .map(|l| {
            let mut w = l.split(' ');
            let at = w.next().unwrap().parse().unwrap();
            Event { at, what: w.next().unwrap().to_string(), args: w.map(str::to_string).collect() }
        })
        .collect()
}

/// Runs copctl while playing the machines: a lab host that went down (the reboot double) comes
/// back `down` later (same disk, new boot id) and boots (lab-boot: RKE2 starts). Returns the
/// exit code and the JSON events.
pub fn run_rebooting(c: &mut Site, args: &[&str], down: std::time::Duration) -> (Option<i32>, Vec<Value>) {
    use std::time::{Duration, Instant};
    let (out, err) = (c.path("reboot-run.out"), c.path("reboot-run.err"));
    let mut child = c
        .command(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut went_down: Vec<Option<Instant>> = vec![None; NAMES.len()];
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(400) {
            let _ = child.kill();
            panic!("copctl still runs after 400s:\n{}", std::fs::read_to_string(&out).unwrap_or_default());
        }
        for (i, d) in went_down.iter_mut().enumerate() {
            if d.is_none() && c.lab_mut().is_down(i) {
                *d = Some(Instant::now());
            }
            if d.is_some_and(|at| at.elapsed() >= down) {
                c.lab_mut().restart(i);
                c.lab().sh(i, "/usr/local/sbin/lab-boot");
                *d = None;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out).unwrap();
    if status.code() != Some(0) {
        eprintln!("{text}\n--- stderr\n{}", std::fs::read_to_string(&err).unwrap_or_default());
    }
    (status.code(), text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}
