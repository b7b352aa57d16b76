//! SIGINT and SIGTERM: remembered from copctl's start (an interrupt while the site loads ends
//! copctl with its empty recap), then watched by the run, which stops starting tasks on the
//! first and abandons the running ones on the second.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::report::{OutputFormat, Reporter};

/// A SIGINT or SIGTERM that came before the run's own handling was set up (while the site was
/// loaded and planned): remembered, and the run then starts nothing.
static EARLY_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn remember_signal(sig: libc::c_int) {
    EARLY_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Called first thing (main) and again when a run begins (before the site is loaded): an
/// interrupt from then on ends the run with its recap and last-failed, never kills copctl
/// half-way through its start; commands that run nothing go back to the default
/// (`default_signals`) once their arguments are read.
pub fn catch_early_signals() {
    let handler = remember_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler is async-signal-safe (one store to an atomic) and a plain `extern "C"`
    // function that lives as long as the process; libc::signal has no other precondition.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// For a command that runs nothing: an interrupt that came while copctl started ends it now,
/// as it would have without the early handling, and from here on interrupts end it at once.
pub fn default_signals() {
    if let Some(code) = early_signal() {
        std::process::exit(code);
    }
    // SAFETY: restoring the default disposition has no precondition.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Loads the site and plans the run (`load`) while watching for SIGINT / SIGTERM: loading a
/// huge inventory can take a while, and an interrupt then ends copctl at once with its (empty)
/// recap rather than being remembered until the load is over.
pub fn load_interruptibly<T: Send>(
    output: OutputFormat,
    verbose: u8,
    load: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    let started = Instant::now();
    std::thread::scope(|s| {
        let loading = s.spawn(load);
        loop {
            if loading.is_finished() {
                return loading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
            let code = match EARLY_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
                libc::SIGINT => 130,
                libc::SIGTERM => 143,
                _ => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            };
            let mut reporter = Reporter::new(output, verbose, false, crate::secret::Redactor::new(Vec::new()), 0);
            reporter.note("interrupted while loading the inventory and playbooks: nothing was started");
            reporter.run_end(&BTreeMap::new(), &[], code, true, started.elapsed());
            // The loading thread is left behind: exiting here is the point.
            std::process::exit(code);
        }
    })
}

pub(super) fn early_signal() -> Option<i32> {
    match EARLY_SIGNAL.swap(0, std::sync::atomic::Ordering::SeqCst) {
        libc::SIGINT => Some(130),
        libc::SIGTERM => Some(143),
        _ => None,
    }
}

/// SIGINT / SIGTERM as exit codes 130 / 143.
pub(super) struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub(super) fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Signals { int: signal(SignalKind::interrupt()).ok(), term: signal(SignalKind::terminate()).ok() }
    }

    pub(super) async fn next(&mut self) -> i32 {
        let int = async {
            match &mut self.int {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        let term = async {
            match &mut self.term {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = int => 130,
            _ = term => 143,
        }
    }
}
