//! The options several commands share, given before the command (`copctl -e x=1 run ...`): each
//! handed to the command that takes it, as if typed after it, or refused naming the command that
//! does not take it. Nothing given there is dropped.

use clap::ArgMatches;
use clap::ValueEnum;
use clap::parser::ValueSource;

use super::args::{Cli, Command, GpuCmd, NodeCmd, PlanFormat, RunsCmd};
use crate::error::{Error, Result};
use crate::report::OutputFormat;

/// Where the command keeps each shared option, for those it takes.
#[derive(Default)]
struct Slots<'a> {
    extra_vars: Option<&'a mut Vec<String>>,
    limit: Option<&'a mut Option<String>>,
    check: Option<&'a mut bool>,
    diff: Option<&'a mut bool>,
    output: Option<Output<'a>>,
    yes: Option<&'a mut bool>,
    force: Option<&'a mut bool>,
}

enum Output<'a> {
    Run(&'a mut OutputFormat),
    Plan(&'a mut PlanFormat),
}

impl Cli {
    /// Hands the options given before the command to it; `matches` tells which of the
    /// command's own were typed (a value given both before and after it must agree).
    pub fn take_leading(&mut self, matches: &ArgMatches) -> Result<()> {
        let lead = std::mem::take(&mut self.leading);
        let (path, leaf) = leaf(matches);
        let typed = |id: &str| leaf.value_source(id) == Some(ValueSource::CommandLine);
        let refuse = |flag: &str| {
            Error::with_help(
                format!("{flag} is given before `{path}`, which takes no {flag}"),
                format!("leave it out (`{path} --help` lists what it takes)"),
            )
        };
        let mut s = slots(&mut self.command);
        if !lead.extra_vars.is_empty() {
            let slot = s.extra_vars.take().ok_or_else(|| refuse("-e/--extra-vars"))?;
            let mut all = lead.extra_vars;
            all.append(slot);
            *slot = all;
        }
        if let Some(l) = lead.limit {
            let slot = s.limit.take().ok_or_else(|| refuse("--limit"))?;
            match slot {
                Some(after) if *after != l => return Err(twice("--limit", &l, after, &path)),
                _ => *slot = Some(l),
            }
        }
        for (given, slot, flag) in [
            (lead.check, s.check.take(), "--check"),
            (lead.diff, s.diff.take(), "--diff"),
            (lead.yes, s.yes.take(), "--yes"),
            (lead.force, s.force.take(), "--force"),
        ] {
            if given {
                *slot.ok_or_else(|| refuse(flag))? = true;
            }
        }
        if let Some(o) = lead.output {
            let bad = |valid: &[&str]| {
                Error::with_help(
                    format!("invalid value '{o}' for --output before `{path}`"),
                    format!("one of: {}", valid.join(", ")),
                )
            };
            match s.output.take().ok_or_else(|| refuse("--output"))? {
                Output::Run(slot) => {
                    let v = OutputFormat::from_str(&o, true).map_err(|_| bad(&["human", "json"]))?;
                    if typed("output") && *slot != v {
                        return Err(twice("--output", &o, &format!("{slot:?}").to_lowercase(), &path));
                    }
                    *slot = v;
                }
                Output::Plan(slot) => {
                    let v = PlanFormat::from_str(&o, true).map_err(|_| bad(&["text", "dot", "json"]))?;
                    if typed("output") && *slot != v {
                        return Err(twice("--output", &o, &format!("{slot:?}").to_lowercase(), &path));
                    }
                    *slot = v;
                }
            }
        }
        Ok(())
    }
}

fn twice(flag: &str, before: &str, after: &str, path: &str) -> Error {
    Error::with_help(
        format!("{flag} is given twice, '{before}' before `{path}` and '{after}' after it"),
        format!("give {flag} once"),
    )
}

/// The command typed, as a path (`copctl node add`), and its own matches.
fn leaf(matches: &ArgMatches) -> (String, &ArgMatches) {
    let mut path = String::from("copctl");
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path = format!("{path} {name}");
        m = sub;
    }
    (path, m)
}

fn slots(command: &mut Command) -> Slots<'_> {
    let run = |o| Some(Output::Run(o));
    match command {
        Command::Plan(a) => Slots {
            extra_vars: Some(&mut a.extra_vars),
            limit: Some(&mut a.limit),
            output: Some(Output::Plan(&mut a.output)),
            ..Slots::default()
        },
        Command::Run(a) => Slots {
            extra_vars: Some(&mut a.extra_vars),
            limit: Some(&mut a.limit),
            check: Some(&mut a.check),
            diff: Some(&mut a.diff),
            output: run(&mut a.output),
            yes: Some(&mut a.yes),
            force: Some(&mut a.force),
        },
        Command::Install(a) => Slots {
            extra_vars: Some(&mut a.extra_vars),
            limit: Some(&mut a.limit),
            check: Some(&mut a.check),
            diff: Some(&mut a.diff),
            output: run(&mut a.output),
            yes: Some(&mut a.yes),
            force: Some(&mut a.force),
        },
        Command::Validate(a) => {
            Slots { extra_vars: Some(&mut a.extra_vars), limit: Some(&mut a.limit), ..Slots::default() }
        }
        Command::Exec(a) => Slots { limit: Some(&mut a.limit), output: run(&mut a.output), ..Slots::default() },
        Command::Hosts { limit, .. } => Slots { limit: Some(limit), ..Slots::default() },
        Command::Runs { what: Some(RunsCmd::Show { output, .. }), .. } => {
            Slots { output: run(output), ..Slots::default() }
        }
        Command::Gpu { what: GpuCmd::Lint(a) } => Slots { output: run(&mut a.output), ..Slots::default() },
        Command::Gpu { what: GpuCmd::Status(a) } => Slots { output: run(&mut a.output), ..Slots::default() },
        Command::Gpu { what: GpuCmd::Check(a) } => Slots {
            extra_vars: Some(&mut a.extra_vars),
            limit: Some(&mut a.limit),
            output: run(&mut a.output),
            ..Slots::default()
        },
        Command::Node { what } => match what {
            NodeCmd::Add { extra_vars, output, check, diff, .. } => Slots {
                extra_vars: Some(extra_vars),
                check: Some(check),
                diff: Some(diff),
                output: run(output),
                ..Slots::default()
            },
            NodeCmd::Remove { extra_vars, output, check, diff, yes, force, .. } => Slots {
                extra_vars: Some(extra_vars),
                check: Some(check),
                diff: Some(diff),
                output: run(output),
                yes: Some(yes),
                force: Some(force),
                ..Slots::default()
            },
            NodeCmd::Drain { extra_vars, output, yes, force, .. } => Slots {
                extra_vars: Some(extra_vars),
                output: run(output),
                yes: Some(yes),
                force: Some(force),
                ..Slots::default()
            },
            NodeCmd::Cordon { extra_vars, output, .. } | NodeCmd::Uncordon { extra_vars, output, .. } => {
                Slots { extra_vars: Some(extra_vars), output: run(output), ..Slots::default() }
            }
        },
        _ => Slots::default(),
    }
}
