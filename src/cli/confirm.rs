//! The confirmation `copctl run` asks for before a playbook that destroys what no re-run brings
//! back (`rke2-uninstall`, `etcd-restore`): the nodes it will work on, and a word typed on the
//! terminal, or `--yes`. Apart from run.rs, which resolves and runs requests without asking.

use std::io::IsTerminal;

use super::Cli;
use crate::error::{Error, Result};
use crate::procedures;
use crate::run::RunRequest;

/// What the operator answered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Answer {
    /// No playbook of the request asks.
    NotAsked,
    /// Each question was answered with its word.
    Confirmed,
    Refused,
}

/// Asks for each playbook of the request that needs a confirmation. Without a terminal to ask
/// on, an error saying to pass `--yes`.
pub(super) fn ask(cli: &Cli, req: &RunRequest) -> Result<Answer> {
    let mut answer = Answer::NotAsked;
    for playbook in &req.playbooks {
        let name = stem(playbook);
        let Some(pattern) = procedures::destructive_hosts(name) else { continue };
        let site = cli.site(&req.extra_vars)?;
        let nodes = site.inventory.list_hosts(pattern, req.limit.as_deref())?;
        if nodes.is_empty() {
            continue;
        }
        let snapshot =
            site.extra.get("etcd_snapshot").map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        // A restore without its snapshot stops when planned, saying what to give: nothing to ask.
        if name == "etcd-restore" && snapshot.is_none() {
            continue;
        }
        let Some(c) = procedures::confirmation(name, &nodes, snapshot.as_deref()) else { continue };
        if !std::io::stdin().is_terminal() {
            return Err(Error::with_help(
                format!("{name} needs a confirmation and there is no terminal to ask on"),
                "pass --yes to confirm on the command line",
            ));
        }
        eprint!("{}\nType '{}' to confirm: ", c.question, c.word);
        let mut typed = String::new();
        std::io::stdin().read_line(&mut typed)?;
        if typed.trim() != c.word {
            return Ok(Answer::Refused);
        }
        answer = Answer::Confirmed;
    }
    Ok(answer)
}

/// A playbook's name as given, or a path's file name without `.yaml`/`.yml`.
fn stem(playbook: &str) -> &str {
    let file = playbook.rsplit('/').next().unwrap_or(playbook);
    file.strip_suffix(".yaml").or_else(|| file.strip_suffix(".yml")).unwrap_or(file)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_known_by_its_file_name() {
        assert_eq!(super::stem("rke2-uninstall"), "rke2-uninstall");
        assert_eq!(super::stem("./playbooks/etcd-restore.yaml"), "etcd-restore");
        assert_eq!(super::stem("x.yml"), "x");
    }
}
