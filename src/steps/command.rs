//! `command` (an argv, no shell) and `shell`. Both report `changed` unless a guard says otherwise:
//! `creates`/`removes` skip the command when the path already is / is not there, `unless` skips
//! it when its own command succeeds. In check mode they run only the guards: a command whose
//! outcome no guard can predict is skipped and says so (not silently, Ansible's #61285).

use super::{Outcome, StepCtx};
use crate::playbook::step::CommandArgs;
use crate::template::shell_quote;

#[derive(Debug, Clone, Default)]
pub struct Guards {
    pub creates: Option<String>,
    pub removes: Option<String>,
    pub unless: Option<String>,
    pub chdir: Option<String>,
    pub stdin: Option<String>,
    pub environment: Vec<(String, String)>,
}

/// Whether a guard already decides; `Some(outcome)` to report without running.
async fn guard(cx: &StepCtx<'_>, g: &Guards) -> Result<Option<Outcome>, Outcome> {
    let mut checks = Vec::new();
    if let Some(p) = &g.creates {
        checks.push(format!("if [ -e {} ]; then echo creates; exit 0; fi", shell_quote(p)));
    }
    if let Some(p) = &g.removes {
        checks.push(format!("if [ ! -e {} ]; then echo removes; exit 0; fi", shell_quote(p)));
    }
    if let Some(u) = &g.unless {
        checks.push(format!("if ( {u} ) >/dev/null 2>&1; then echo unless; exit 0; fi"));
    }
    if checks.is_empty() {
        return Ok(None);
    }
    let out = cx.sh(&format!("{}\necho run", checks.join("\n")), None).await?;
    Ok(match String::from_utf8_lossy(&out.stdout).trim() {
        "creates" => Some(Outcome::ok(format!("skipped: {} exists", g.creates.as_deref().unwrap_or("")))),
        "removes" => Some(Outcome::ok(format!("skipped: {} does not exist", g.removes.as_deref().unwrap_or("")))),
        "unless" => Some(Outcome::ok("skipped: the unless command succeeded")),
        _ => None,
    })
}

fn wrap(g: &Guards, line: &str) -> String {
    let mut s = String::new();
    for (k, v) in &g.environment {
        s.push_str(&format!("export {k}={}; ", shell_quote(v)));
    }
    if let Some(d) = &g.chdir {
        s.push_str(&format!("cd {} || exit 1; ", shell_quote(d)));
    }
    s.push_str(line);
    s
}

async fn run(cx: &StepCtx<'_>, line: String, g: &Guards) -> Outcome {
    match guard(cx, g).await {
        Err(o) => return o,
        Ok(Some(o)) => return o,
        Ok(None) => {}
    }
    if cx.check {
        let mut o = Outcome::skipped("check mode: the command would run (no guard can tell its outcome)");
        o.commands.push(line);
        return o;
    }
    let script = wrap(g, &line);
    let out = match cx.sh(&script, g.stdin.as_ref().map(|s| s.as_bytes())).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let mut o = if out.success() {
        Outcome::changed("")
    } else {
        let tail: String = String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        Outcome::failed(match out.status {
            Some(rc) => format!(
                "non-zero return code {rc}{}",
                if tail.is_empty() { String::new() } else { format!(": {tail}") }
            ),
            None => format!("killed by {}", out.signal.clone().unwrap_or_default()),
        })
    }
    .with_output(&out);
    o.commands.push(line);
    o
}

pub async fn command(cx: &StepCtx<'_>, a: &CommandArgs, g: &Guards) -> Outcome {
    let argv = match a {
        CommandArgs::Argv(v) => v.clone(),
        CommandArgs::Line(l) => match shlex::split(l) {
            Some(v) => v,
            None => return Outcome::failed(format!("cannot split the command line: {l}")),
        },
    };
    if argv.is_empty() {
        return Outcome::failed("empty command");
    }
    let line = argv.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
    run(cx, format!("exec {line}"), g).await
}

pub async fn shell(cx: &StepCtx<'_>, line: &str, g: &Guards) -> Outcome {
    run(cx, line.to_string(), g).await
}
