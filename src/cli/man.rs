//! `copctl man [COMMAND...] [--dir DIR]`: a man page per command, made from the same clap
//! definitions as `--help` (clap_mangen), with the sections a man page has beyond the options:
//! EXIT STATUS, ENVIRONMENT, FILES and the command's EXAMPLES (examples.rs).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use roff::{Roff, bold, italic, roman};

use super::args::Cli;
use super::examples;
use crate::error::{Error, Result};

/// Exit statuses, as Ansible's (docs/src/reference/exit-codes.md says more).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Everything ran; for the commands that run nothing, the input is valid. Also --help and --version."),
    (
        "1",
        "Bad input or usage, reported before anything connects: an inventory, env.yaml, playbook or template error, an unknown option, a --limit that matches nothing, a removal not confirmed.",
    ),
    ("2", "A host failed: a task failed and was not ignored, or exec's command exited non-zero."),
    ("4", "A host was unreachable (4 wins when both happen)."),
    ("130", "Interrupted by Ctrl-C: no new task started; the recap and .copctl/last-failed written."),
    ("143", "Interrupted by SIGTERM, likewise."),
];

/// copctl's own environment variables (tests/docs.rs holds this list against the environment
/// page, which holds every one the code reads).
const ENVIRONMENT: &[(&str, &str)] = &[
    ("COPCTL_INVENTORY", "The inventory when no -i is given (over ansible.cfg's inventory)."),
    ("COPCTL_ENV", "The site settings file, as --env (default: env.yaml beside the inventory)."),
    ("COPCTL_KNOWN_HOSTS", "The known_hosts file, as --known-hosts."),
    ("COPCTL_SSH_PASSWORD", "The password ssh-copy-id and node add log in with, for unattended runs."),
    ("COPCTL_KEY_PASSPHRASE", "The passphrase of an encrypted private key, instead of asking."),
    ("COPCTL_PYTHON", "The Python that runs a site's own Python plugins and modules."),
    ("COPCTL_NO_PROGRESS", "Set: no live progress display; one plain line per finished task."),
    ("COPCTL_COMPLETE", "Set by the shell completion script when it asks for candidates; not for people."),
    ("COPCTL_REMOTE_HASH", "sftp: hash files of any size over SFTP instead of on the host (tests, benchmarks)."),
];

/// What copctl reads and writes, relative to the working directory unless absolute.
const FILES: &[(&str, &str)] = &[
    (
        "inventory/inventory.ini",
        "The default inventory (an INI or YAML file, or a directory); group_vars/ and host_vars/ beside it are read.",
    ),
    ("env.yaml", "The site settings, beside the inventory."),
    ("playbooks/, templates/", "Beside the inventory: the site's playbooks and templates, over the built-in ones."),
    (
        "ansible.cfg",
        "Ansible's settings: ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg, the first found.",
    ),
    ("~/.ssh/known_hosts, ~/.ssh/config", "Host keys, and the ssh_config read for each host."),
    (".copctl/runs/ID/", "Each run's record: events.jsonl, summary.json, plan.json, hosts/HOST.log (copctl runs)."),
    (".copctl/last-failed", "The hosts the last run failed on: --limit @.copctl/last-failed."),
];

/// Writes the page of the command at `path` (none: copctl's own) to stdout, or with `dir` every
/// command's page as a file there (copctl.1, copctl-run.1, copctl-node-add.1, ...).
pub fn man(path: &[String], dir: Option<&Path>) -> Result<i32> {
    let mut root = Cli::command();
    root.build();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(|e| Error::plain(format!("cannot create {}: {e}", dir.display())))?;
        let mut written = 0;
        write_all(&root, "copctl", dir, &mut written)?;
        println!("{written} man pages written to {}", dir.display());
        return Ok(0);
    }
    let mut cmd = &root;
    let mut at = String::from("copctl");
    for word in path {
        let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
        cmd = cmd.find_subcommand(word).ok_or_else(|| {
            let close = crate::text::closest::closest(word, &names, 3);
            Error::with_help(
                format!("`{at}` has no command named '{word}'"),
                if close.is_empty() {
                    format!("its commands: {}", names.join(", "))
                } else {
                    format!("did you mean {}?", close.join(", "))
                },
            )
        })?;
        at = format!("{at} {}", cmd.get_name());
    }
    let mut out = std::io::stdout().lock();
    page(cmd, &at, &mut out)?;
    out.flush()?;
    Ok(0)
}

fn write_all(cmd: &clap::Command, at: &str, dir: &Path, written: &mut usize) -> Result<()> {
    let file = dir.join(format!("{}.1", at.replace(' ', "-")));
    let mut f =
        std::fs::File::create(&file).map_err(|e| Error::plain(format!("cannot write {}: {e}", file.display())))?;
    page(cmd, at, &mut f)?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_all(sub, &format!("{at} {}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// One page: clap_mangen's sections, then copctl's own.
fn page(cmd: &clap::Command, at: &str, w: &mut dyn Write) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .title(at.replace(' ', "-"))
        .source(format!("copctl {}", env!("CARGO_PKG_VERSION")))
        .manual("copctl");
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.get_subcommands().any(|s| s.get_name() != "help") {
        man.render_subcommands_section(w)?;
    }
    let mut roff = Roff::new();
    let install = at == "copctl install";
    if install {
        roff.control("SH", ["THE INSTALL"]);
        for line in crate::procedures::install_help().lines().filter(|l| !l.is_empty()) {
            roff.text([roman(line.trim())]).control("br", [] as [&str; 0]);
        }
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, what) in EXIT_STATUS {
        roff.control("TP", [] as [&str; 0]).text([bold(*code)]).text([roman(*what)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (var, what) in ENVIRONMENT {
        roff.control("TP", [] as [&str; 0]).text([bold(*var)]).text([roman(*what)]);
    }
    roff.control("TP", [] as [&str; 0]).text([bold("ANSIBLE_*")]).text([roman(
        "Ansible's own variables (ANSIBLE_CONFIG, ANSIBLE_INVENTORY, ANSIBLE_VAULT_PASSWORD_FILE, ...), \
         read as Ansible reads them: below the options, above ansible.cfg. copctl config shows each.",
    )]);
    roff.control("SH", ["FILES"]);
    for (file, what) in FILES {
        roff.control("TP", [] as [&str; 0]).text([italic(*file)]).text([roman(*what)]);
    }
    roff.control("SH", ["EXAMPLES"]);
    for (line, what) in examples::of(at) {
        roff.control("TP", [] as [&str; 0]).text([bold(*line)]).text([roman(*what)]);
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(
        "copctl man COMMAND for each command's page; the book in the source's docs/ (docs/src/SUMMARY.md).",
    )]);
    roff.to_writer(w)?;
    // Only copctl's own page has a version (clap_mangen's section needs one).
    if cmd.get_version().is_some() {
        man.render_version_section(w)?;
    }
    Ok(())
}
