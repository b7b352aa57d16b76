//! `copctl run`: the raw `run` arguments resolved once into a `RunRequest`
//! (`--yes`/`--force` become the variables the playbooks read, the global options fill in the
//! rest), then loaded, planned and handed to the engine.

use std::io::Write;
use std::path::PathBuf;

use super::Cli;
use super::args::{RunArgs, ValidateArgs};
use crate::error::{Error, Result};
use crate::report::OutputFormat;
use crate::run::RunRequest;

pub fn run(cli: &Cli, args: &RunArgs) -> Result<i32> {
    if args.syntax_check || args.list_hosts || args.list_tasks {
        return list(cli, &request(cli, args), args);
    }
    cli.init_tracing(args.log_file.as_deref());
    let mut req = request(cli, args);
    // A playbook that destroys what no re-run brings back asks first (check mode changes nothing).
    if !args.yes && !args.check {
        match super::confirm::ask(cli, &req)? {
            super::confirm::Answer::NotAsked => {}
            super::confirm::Answer::Confirmed => req.extra_vars.push("{\"yes\": true}".into()),
            super::confirm::Answer::Refused => {
                eprintln!("not confirmed: nothing was changed");
                return Ok(1);
            }
        }
    }
    execute(cli, req)
}

/// ansible-playbook's `--syntax-check`, `--list-hosts` and `--list-tasks` (in that order when
/// several are given): the check of `copctl validate`, each play's hosts, and the plan. Nothing
/// connects.
fn list(cli: &Cli, req: &RunRequest, args: &RunArgs) -> Result<i32> {
    if args.syntax_check {
        let v = ValidateArgs {
            playbooks: req.playbooks.clone(),
            limit: req.limit.clone(),
            extra_vars: req.extra_vars.clone(),
        };
        super::plan::validate(cli, &v)?;
    }
    if !(args.list_hosts || args.list_tasks) {
        return Ok(0);
    }
    let mut site = cli.site(&req.extra_vars)?;
    if !args.syntax_check {
        super::plan::warn_unread_keys(&site);
    }
    let pbs = req.playbooks.iter().map(|p| site.load_playbook(p)).collect::<Result<Vec<_>>>()?;
    let plan = crate::plan::plan(&site, pbs, req.limit.as_deref())?;
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    if args.list_hosts {
        for (pb, plays) in plan.playbooks.iter().zip(&plan.batches) {
            writeln!(out, "playbook {}", pb.name)?;
            for (play, batches) in pb.plays.iter().zip(plays) {
                let hosts: Vec<&String> = batches.iter().flatten().collect();
                writeln!(out, "  play {} (hosts: {}): {} host(s)", play.name, play.hosts, hosts.len())?;
                for h in hosts {
                    writeln!(out, "    {h}")?;
                }
            }
        }
    }
    if args.list_tasks {
        writeln!(out, "{}", crate::plan::render::text(&plan).trim_end())?;
    }
    Ok(0)
}

fn request(cli: &Cli, args: &RunArgs) -> RunRequest {
    let mut extra_vars = args.extra_vars.clone();
    if args.yes {
        extra_vars.push("{\"yes\": true}".into());
    }
    if args.force {
        extra_vars.push("{\"force\": true}".into());
    }
    RunRequest {
        playbooks: args.playbooks.clone(),
        limit: args.limit.clone(),
        extra_vars,
        check: args.check,
        diff: args.diff,
        tags: args.tags.clone(),
        skip_tags: args.skip_tags.clone(),
        start_at: args.start_at.clone(),
        force_handlers: args.force_handlers,
        output: args.output,
        ..defaults(cli)
    }
}

/// A request with only the global options: what `copctl node` starts from.
pub(super) fn defaults(cli: &Cli) -> RunRequest {
    RunRequest {
        playbooks: Vec::new(),
        limit: None,
        extra_vars: Vec::new(),
        check: false,
        diff: false,
        forks: cli.forks(),
        tags: Vec::new(),
        skip_tags: Vec::new(),
        start_at: None,
        force_handlers: false,
        output: OutputFormat::Human,
        verbose: cli.verbose,
        record_root: PathBuf::from(".copctl"),
        local_dir: crate::inventory::site_dir(&cli.inventory_sources()),
    }
}

/// Loads the site with the request's extra vars, plans, and runs; returns the exit code.
pub(super) fn execute(cli: &Cli, req: RunRequest) -> Result<i32> {
    crate::run::catch_early_signals();
    let (site, plan, servers) = crate::run::load_interruptibly(req.output, cli.verbose, || {
        let mut site = cli.site(&req.extra_vars)?;
        ask_missing_secrets(&mut site)?;
        let pbs = req.playbooks.iter().map(|p| site.load_playbook(p)).collect::<Result<Vec<_>>>()?;
        let wanted = pbs.iter().any(|p| super::servers::wanted(&p.source.text));
        let plan = crate::plan::plan(&site, pbs.clone(), req.limit.as_deref())?;
        if !wanted || site.extra.contains_key(super::servers::VAR) {
            return Ok((site, plan, None));
        }
        // The plan holds (nothing it refuses has connected anywhere): the server doing the
        // cluster's work is asked for, and the plan made again with it, as its plays and
        // delegations name it.
        let servers = super::servers::ask_for(cli, &mut site)?;
        let plan = crate::plan::plan(&site, pbs, req.limit.as_deref())?;
        Ok((site, plan, Some(servers)))
    })?;
    if let Some(note) = servers.and_then(|s| s.note(&super::servers::masters(&site))) {
        eprintln!("note: {note}");
    }
    super::plan::warn_unread_keys(&site);
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    let mut hosts: Vec<String> = Vec::new();
    for t in plan.graph.node_weights() {
        for h in t.host.iter().chain(t.runs_on.iter()) {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
    }
    let logins = crate::plan::logins::logins(&site, &plan)?;
    let mut pool = cli.pool(&site, &hosts, &logins)?;
    pool.known = crate::transport::known_content::KnownContent::at(req.record_root.join("content"));
    crate::run::run(site, plan, pool, req)
}

/// A `secret_vars` entry with no value is asked for once on a terminal (no echo); without a
/// terminal the run stops before anything connects, rather than run with the secret undefined.
fn ask_missing_secrets(site: &mut crate::site::Site) -> Result<()> {
    use std::io::IsTerminal;
    let missing = site.missing_secrets();
    if missing.is_empty() {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::with_help(
            format!("env.yaml's secret_vars lists {} but nothing gives it a value", missing.join(", ")),
            "set it in env.yaml (an inline !vault value keeps it out of cleartext), with -e or lookup('env', NAME), \
             or run copctl on a terminal to be asked for it",
        ));
    }
    for name in missing {
        let value = rpassword::prompt_password(format!("{name} (secret_vars, no value set): "))
            .map_err(|e| Error::plain(format!("cannot read {name} from the terminal: {e}")))?;
        site.extra.insert(name, serde_json::Value::String(value));
    }
    Ok(())
}
