//! `copctl node add|remove|drain|cordon|uncordon NAME`: the manual's node procedures end to end. This
//! file asks and prints (the key on a new node, the confirmation of a removal, what state a
//! drained or uncordoned node is left in); which playbooks make up each procedure is
//! `procedures`' business.

use std::io::Write;

use super::Cli;
use super::args::NodeCmd;
use super::ssh_copy_id::{copy_id, password_source, public_key_file};
use crate::error::{Error, Result};
use crate::procedures::{self, Procedure};
use crate::report::OutputFormat;
use crate::run::RunRequest;
use crate::transport::{ConnectionKind, HostSpec, SshConfigFile, SshConnection, TransportError};

pub fn node(cli: &Cli, what: &NodeCmd) -> Result<i32> {
    cli.init_tracing(None);
    let site = cli.site(&[])?;
    let name = match what {
        NodeCmd::Add { name, .. }
        | NodeCmd::Remove { name, .. }
        | NodeCmd::Drain { name, .. }
        | NodeCmd::Cordon { name, .. }
        | NodeCmd::Uncordon { name, .. } => name,
    };
    if !site.inventory.hosts.contains_key(name) {
        return Err(site.inventory.no_match_error("node", name).with_extra_help(
            "add the node to inventory.ini (and its settings to env.yaml) first: the manual's step 2",
        ));
    }
    match what {
        NodeCmd::Add { name, extra_vars, output, check, diff } => {
            if !check {
                install_key_if_needed(cli, &site, name)?;
            }
            let procedure = procedures::node_add(&site, name);
            for note in &procedure.notes {
                eprintln!("note: {note}");
            }
            run(cli, name, extra_vars, (*output, *check, *diff), procedure)
        }
        NodeCmd::Remove { name, yes, force, extra_vars, output, check, diff } => {
            let dead = unreachable(cli, &site, name)?;
            if let Some(why) = &dead {
                eprintln!(
                    "{name} is unreachable ({why}): removing it as a dead node: nothing runs on it (RKE2 is not stopped \
                     or uninstalled there), its pods are drained with --force and those still there after {}s \
                     (-e drain_timeout=SECONDS) are deleted, then the node is deleted from the cluster",
                    drain_timeout(extra_vars)
                );
            }
            if !yes && !check && !confirmed(name, dead.is_some())? {
                eprintln!("not confirmed: nothing was changed");
                return Ok(1);
            }
            let p = procedures::node_remove(name, *force, dead.is_some());
            run(cli, name, extra_vars, (*output, *check, *diff), p)
        }
        NodeCmd::Drain { name, yes, force, force_unmanaged, extra_vars, output } => {
            let o = procedures::DrainOptions { yes: *yes, force: *force, force_unmanaged: *force_unmanaged };
            let code = run(cli, name, extra_vars, (*output, false, false), procedures::node_drain(name, o))?;
            if code == 0 {
                say(
                    *output,
                    &format!(
                        "{name} is drained and cordoned: do the maintenance, then `copctl node uncordon {name}` (other procedures leave this cordon alone)"
                    ),
                )?;
            }
            Ok(code)
        }
        NodeCmd::Cordon { name, extra_vars, output } => {
            let code = run(cli, name, extra_vars, (*output, false, false), procedures::node_cordon(name))?;
            if code == 0 {
                say(
                    *output,
                    &format!(
                        "{name} is cordoned: no new pods are scheduled on it and its pods stay; `copctl node uncordon {name}` lifts it (other procedures leave this cordon alone)"
                    ),
                )?;
            }
            Ok(code)
        }
        NodeCmd::Uncordon { name, extra_vars, output } => {
            let code = run(cli, name, extra_vars, (*output, false, false), procedures::node_uncordon(name))?;
            if code == 0 {
                say(*output, &format!("{name} is uncordoned: pods can be scheduled on it again"))?;
            }
            Ok(code)
        }
    }
}

/// The state a procedure left the node in: after the recap, or on stderr under `--output json`
/// (stdout stays JSON lines).
fn say(output: OutputFormat, line: &str) -> Result<()> {
    if output == OutputFormat::Json {
        eprintln!("{line}");
    } else {
        writeln!(std::io::stdout(), "{line}")?;
    }
    Ok(())
}

/// Step 3 of the manual: the bastion's key on the node, asked for only when key authentication
/// does not work yet.
fn install_key_if_needed(cli: &Cli, site: &crate::site::Site, name: &str) -> Result<()> {
    let cfg = SshConfigFile::load(cli.ssh_config.as_deref());
    let spec = HostSpec::from_inventory_with(&site.inventory, name, &cfg, &cli.connect_defaults()?);
    if spec.kind != ConnectionKind::Ssh {
        return Ok(());
    }
    let opts = cli.ssh_options();
    let rt = crate::runtime()?;
    match rt.block_on(SshConnection::connect(&spec, &opts, None)) {
        Ok(c) => rt.block_on(c.close()),
        Err(TransportError::AuthFailed { .. }) => {
            let pubkey = public_key_file(None)?;
            let text = std::fs::read_to_string(&pubkey)
                .map_err(|e| Error::plain(format!("cannot read {}: {e}", pubkey.display())))?;
            let pw = password_source(format!("SSH password for {}: ", spec.target()));
            rt.block_on(copy_id(&spec, &opts, &text, &pw))?;
            writeln!(std::io::stdout(), "{name}: installed {} for {}", pubkey.display(), spec.target())?;
        }
        Err(e) => return Err(Error::plain(e.to_string())),
    }
    Ok(())
}

/// Whether the node is down: `Some(why)` when SSH cannot reach it at all (refused, timed out,
/// no route); a node that answers but refuses the login or shows another host key is not dead,
/// and its removal goes on as usual (and fails there, saying why).
fn unreachable(cli: &Cli, site: &crate::site::Site, name: &str) -> Result<Option<String>> {
    let cfg = SshConfigFile::load(cli.ssh_config.as_deref());
    let spec = HostSpec::from_inventory_with(&site.inventory, name, &cfg, &cli.connect_defaults()?);
    if spec.kind != ConnectionKind::Ssh {
        return Ok(None);
    }
    let rt = crate::runtime()?;
    Ok(match rt.block_on(SshConnection::connect(&spec, &cli.ssh_options(), None)) {
        Ok(c) => {
            rt.block_on(c.close());
            None
        }
        Err(TransportError::Unreachable { reason, transient: true, .. }) => Some(reason),
        Err(_) => None,
    })
}

/// The drain timeout the removal will use (the playbook's 300 unless `-e drain_timeout=N`).
fn drain_timeout(extra_vars: &[String]) -> String {
    extra_vars
        .iter()
        .rev()
        .find_map(|e| e.strip_prefix("drain_timeout=").map(str::to_string))
        .unwrap_or_else(|| "300".into())
}

/// Asks on the terminal for the node's name; there must be a terminal to ask on.
fn confirmed(name: &str, dead: bool) -> Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(Error::with_help(
            format!("removing {name} needs a confirmation and there is no terminal to ask on"),
            "pass --yes to confirm on the command line",
        ));
    }
    if dead {
        eprint!("Remove the dead node {name} from the cluster?\nType the node name to confirm: ");
    } else {
        eprint!(
            "Remove {name} from the cluster? It is cordoned, drained, deleted from the cluster and RKE2 is uninstalled.\nType the node name to confirm: "
        );
    }
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(answer.trim() == name)
}

/// Runs the procedure limited to the node, the operator's `-e` first.
fn run(
    cli: &Cli,
    name: &str,
    extra_vars: &[String],
    (output, check, diff): (OutputFormat, bool, bool),
    p: Procedure,
) -> Result<i32> {
    let mut ev = extra_vars.to_vec();
    ev.extend(p.extra_vars);
    let req = RunRequest {
        playbooks: p.playbooks,
        limit: Some(name.to_string()),
        extra_vars: ev,
        output,
        check,
        diff,
        ..super::run::defaults(cli)
    };
    super::run::execute(cli, req)
}
