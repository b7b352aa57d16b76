//! `copctl install`: the manual's first install (`procedures::FIRST_INSTALL`) as one run, in
//! order. It prints the order before it starts and, after a failure or an interruption, the
//! playbook to resume from (`--from`), read back from the run's record.

use std::io::Write;
use std::path::Path;

use super::Cli;
use super::args::InstallArgs;
use crate::error::Result;
use crate::procedures;
use crate::report::OutputFormat;
use crate::report::history;
use crate::run::RunRequest;

pub fn install(cli: &Cli, args: &InstallArgs) -> Result<i32> {
    cli.init_tracing(None);
    let site = cli.site(&[])?;
    let p = procedures::install(&site, args.from.as_deref())?;
    drop(site);
    for note in &p.notes {
        eprintln!("note: {note}");
    }
    let mut order = match &args.from {
        Some(f) => format!("install from {f} (--from), in this order:"),
        None => "install, in this order:".to_string(),
    };
    for (i, pb) in p.playbooks.iter().enumerate() {
        order.push_str(&format!("\n  {}. {pb}", i + 1));
    }
    say(args.output, &order)?;
    let mut extra_vars = args.extra_vars.clone();
    if args.yes {
        extra_vars.push("{\"yes\": true}".into());
    }
    if args.force {
        extra_vars.push("{\"force\": true}".into());
    }
    let req = RunRequest {
        playbooks: p.playbooks.clone(),
        limit: args.limit.clone(),
        extra_vars,
        output: args.output,
        check: args.check,
        diff: args.diff,
        ..super::run::defaults(cli)
    };
    let root = req.record_root.clone();
    let before = history::ids(&root).last().cloned();
    let code = super::run::execute(cli, req)?;
    if code != 0
        && let Some(line) = resume_hint(&root, before.as_deref(), &p.playbooks, args.limit.as_deref())
    {
        say(args.output, &line)?;
    }
    Ok(code)
}

/// After the recap, or on stderr under `--output json` (stdout stays JSON lines).
fn say(output: OutputFormat, text: &str) -> Result<()> {
    if output == OutputFormat::Json {
        eprintln!("{text}");
    } else {
        writeln!(std::io::stdout(), "{text}")?;
    }
    Ok(())
}

/// Where the install stopped: the first playbook, in the install's order, where a host failed
/// or was unreachable; after an interruption, the first with a planned task that never ended.
/// `None` where the run left no record of its own.
fn resume_hint(root: &Path, before: Option<&str>, playbooks: &[String], limit: Option<&str>) -> Option<String> {
    let id = history::ids(root).pop().filter(|id| Some(id.as_str()) != before)?;
    let run = history::load(root, &id, false);
    let rank = |pb: &str| playbooks.iter().position(|p| p == pb).unwrap_or(usize::MAX);
    let resume = |pb: &str| {
        let limit = limit.map(|l| format!(" --limit {l}")).unwrap_or_default();
        format!("`copctl install --from {pb}{limit}`")
    };
    if let Some(first) = run.tasks.iter().filter(|t| t.failed()).min_by_key(|t| rank(&t.playbook)) {
        let pb = &first.playbook;
        let hosts = |status: &str| {
            let mut h: Vec<&str> = Vec::new();
            for t in run.tasks.iter().filter(|t| t.failed() && t.status == status && &t.playbook == pb) {
                if !h.contains(&t.host.as_str()) {
                    h.push(&t.host);
                }
            }
            (!h.is_empty()).then(|| format!("{status}: {}", h.join(", ")))
        };
        let who: Vec<String> = [hosts("failed"), hosts("unreachable")].into_iter().flatten().collect();
        return Some(format!(
            "install stopped in {pb} ({}): fix the cause, then resume with {}",
            who.join("; "),
            resume(pb)
        ));
    }
    let ended: std::collections::HashSet<u64> = run.tasks.iter().map(|t| t.task).collect();
    let pb = run
        .planned
        .iter()
        .filter(|t| t["kind"] != "barrier" && t["id"].as_u64().is_some_and(|id| !ended.contains(&id)))
        .filter_map(|t| t["playbook"].as_str())
        .min_by_key(|pb| rank(pb))?;
    Some(format!("install interrupted in {pb}: resume with {}", resume(pb)))
}
