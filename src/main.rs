//! The copctl binary: parses the command line and runs the command (src/cli), exiting with
//! Ansible's codes; the process-wide settings (signals, allocator, error reports) are set here first.

use std::io::IsTerminal;

fn main() {
    // Before anything else: on a loaded machine a run's Ctrl-C can come while copctl is still
    // starting, and must then end it with its recap, not kill it unreported.
    copctl::run::catch_early_signals();
    tune_allocator();
    let tty = std::io::stderr().is_terminal();
    let _ = miette::set_hook(Box::new(move |_| {
        // Off a terminal (logs, CI, tests) lines are not wrapped, so each message stays greppable.
        let opts = miette::MietteHandlerOpts::new().terminal_links(false);
        let opts = if tty { opts } else { opts.wrap_lines(false) };
        Box::new(opts.unicode(tty).color(tty && std::env::var_os("NO_COLOR").is_none()).build())
    }));
    copctl::descriptors::raise();
    // A shell asking for completions (COPCTL_COMPLETE set) is answered here, and nothing else runs.
    copctl::cli::answer_if_asked();
    let parsed = <copctl::cli::Cli as clap::CommandFactory>::command()
        .try_get_matches()
        .and_then(|m| <copctl::cli::Cli as clap::FromArgMatches>::from_arg_matches(&m).map(|cli| (cli, m)));
    let cli = match parsed {
        Ok((mut cli, matches)) => {
            if let Err(e) = cli.take_leading(&matches) {
                eprintln!("{:?}", miette::Report::new(e));
                std::process::exit(1);
            }
            if !matches!(cli.command, copctl::cli::args::Command::Run(_) | copctl::cli::args::Command::Node { .. }) {
                copctl::run::default_signals();
            }
            cli
        }
        Err(e) => {
            let _ = e.print();
            // Exit 2 means "a host failed" (README); a usage error is 1, help and version 0.
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    match copctl::cli::execute(&cli) {
        Ok(code) => std::process::exit(code),
        // A reader that stopped reading (`| head`) ends the output quietly, as other Unix tools do.
        Err(e) if e.kind() == copctl::error::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            let code = if e.kind() == copctl::error::ErrorKind::Unreachable { 4 } else { 1 };
            eprintln!("{:?}", miette::Report::new(e));
            std::process::exit(code);
        }
    }
}

/// glibc's allocator, told to hand memory back. By default each thread that allocates gets an
/// arena of its own, and freeing a large buffer (an upload's chunk) raises the thresholds below
/// which memory is kept; with 50 hosts that left ~10 MiB of freed memory resident (45.3 -> 35.4 MiB
/// peak in the peers benchmark, files workload). One arena: the runtime's two worker threads do
/// little allocating, and the controller's CPU did not change measurably.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets the allocator's parameters; it runs before any other thread
    // exists and before the first allocation of ours, and a refused setting keeps the default.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_TOP_PAD, 0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}
