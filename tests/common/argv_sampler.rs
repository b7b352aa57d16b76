//! Samples every command line on a lab's hosts while copctl runs, for the secret audits: a
//! secret must never reach a remote argv, where any local user could read it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::lab::Lab;

/// Stops sampling when finished or dropped (also when an assertion fails meanwhile).
pub struct ArgvSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<String>>>,
}

impl ArgvSampler {
    pub fn start(lab: &Lab) -> ArgvSampler {
        let namespaces: Vec<PathBuf> = (0..lab.hosts.len())
            .filter_map(|i| std::fs::read_link(format!("/proc/{}/ns/pid", lab.pid(i)?)).ok())
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                for e in std::fs::read_dir("/proc").unwrap().flatten() {
                    let p = e.path();
                    if std::fs::read_link(p.join("ns/pid")).is_ok_and(|n| namespaces.contains(&n))
                        && let Ok(c) = std::fs::read(p.join("cmdline"))
                    {
                        seen.push(String::from_utf8_lossy(&c).replace('\0', " "));
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            seen
        });
        ArgvSampler { stop, thread: Some(thread) }
    }

    /// Every command line seen (one entry per sighting).
    pub fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for ArgvSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
