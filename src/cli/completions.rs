//! `copctl completions SHELL`: shell completion, made from the clap definitions in args.rs. It
//! is clap_complete's environment-driven kind: the shell calls copctl back
//! (`COPCTL_COMPLETE=bash copctl -- ...`), so playbook names, hosts and groups are the site's
//! own, read when the user presses TAB.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};

use super::args::{Cli, Shell};
use crate::error::Result;

/// The variable that turns a copctl call into a completion request.
pub const COMPLETE_VAR: &str = "COPCTL_COMPLETE";

/// Answers a completion request, if this process is one (then it exits).
pub fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command).var(COMPLETE_VAR).complete();
}

/// The script a shell sources to complete copctl (e.g. `source <(copctl completions bash)`).
pub fn completions(shell: Shell) -> Result<i32> {
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Zsh => &Zsh,
        Shell::Fish => &Fish,
        Shell::Elvish => &Elvish,
        Shell::Powershell => &Powershell,
    };
    let mut out = std::io::stdout().lock();
    completer.write_registration(COMPLETE_VAR, "copctl", "copctl", "copctl", &mut out)?;
    out.flush()?;
    Ok(0)
}
