//! `command`: an argv, no shell (a line is split as a shell would, without running one). Both
//! `command` and `shell` report `changed` unless a guard says otherwise: `creates`/`removes` skip
//! the command when the path already is / is not there, `unless` skips it when its own command
//! succeeds. In check mode they run only the guards: a command whose outcome no guard can
//! predict is skipped and says so (not silently, Ansible's #61285).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Kind, Outcome, StepCtx};
use crate::template::shell_quote;

/// `command:` is an argv list (no shell) or a line split like a shell would, without running one.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum CommandArgs {
    Line(String),
    Argv(Vec<String>),
}

impl<'de> Deserialize<'de> for CommandArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CommandArgs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a command line or a list of arguments")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<CommandArgs, E> {
                Ok(CommandArgs::Line(s.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<CommandArgs, A::Error> {
                // Arguments are text: `[true]` or `[sleep, 5]` mean the words, not a bool or number.
                let mut argv = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    argv.push(match v {
                        Value::String(s) => s,
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        other => {
                            return Err(serde::de::Error::custom(format!("command arguments are words; got {other}")));
                        }
                    });
                }
                Ok(CommandArgs::Argv(argv))
            }
        }
        d.deserialize_any(V)
    }
}

impl Kind for CommandArgs {
    const MAY_BE_READ_ONLY: bool = true;

    async fn apply(&self, cx: &StepCtx<'_>, g: &Guards) -> Outcome {
        let argv = match self {
            CommandArgs::Argv(v) => v.clone(),
            CommandArgs::Line(l) => match shlex::split(l) {
                Some(v) => v,
                None => return Outcome::failed(format!("cannot split the command line: {l}")),
            },
        };
        if argv.is_empty() {
            return Outcome::failed("empty command");
        }
        let line = if g.expand_vars {
            let mut refs = Vec::new();
            let words: Vec<String> = argv.iter().map(|w| expanded_word(w, &mut refs)).collect();
            let prelude: String = refs
                .iter()
                .enumerate()
                .map(|(i, (name, raw))| {
                    format!("if [ \"${{{name}+x}}\" = x ]; then __copctl_x{i}=${name}; else __copctl_x{i}={}; fi; ", shell_quote(raw))
                })
                .collect();
            format!("{prelude}{}exec {}", found(&words[0]), words.join(" "))
        } else {
            let words: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
            format!("{}exec {}", found(&words[0]), words.join(" "))
        };
        let mut o = run_line(cx, line, g).await;
        // The module's `cmd`: the words it ran.
        o.result.insert("cmd".into(), serde_json::json!(argv));
        if let Some(e) = &g.executable {
            // Ansible's words: command runs no shell, so it has none to change.
            o.warnings.push(format!(
                "As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '{e}'."
            ));
        }
        o
    }
}

/// A check that the program `word` (a shell word) exists before it is run: where it does not,
/// the module fails as its Python `Popen` does (`no_program`), not with the shell's message.
fn found(word: &str) -> String {
    format!(
        "case {word} in */*) [ -e {word} ] ;; *) command -v -- {word} >/dev/null 2>&1 ;; esac || \
         {{ printf '{NO_PROGRAM} %s\\n' {word} >&2; exit 2; }}; "
    )
}

/// What the script says on stderr, and alone, before the program's name, where the program to
/// run does not exist.
const NO_PROGRAM: &str = "__copctl_no_program__";

/// The module's message where the program does not exist.
const NO_PROGRAM_MSG: &str = "Error executing command.";

/// The module's failure where the program does not exist (Python's `FileNotFoundError`): its
/// words, no output, `rc` the errno.
fn no_program(out: &crate::transport::ExecOutput) -> Option<Outcome> {
    let err = std::str::from_utf8(&out.stderr).ok()?;
    let program = err.strip_prefix(NO_PROGRAM)?.strip_prefix(' ')?.strip_suffix('\n')?;
    (out.status == Some(2) && out.stdout.is_empty() && !program.contains('\n')).then(|| {
        // The module's words in the result; the operator is told which program is missing.
        let shown = format!("{NO_PROGRAM_MSG} ({program}: no such file or directory)");
        before_running(shown, NO_PROGRAM_MSG, serde_json::json!(2))
    })
}

/// One argument as the host's shell gives it with what Ansible's command expands
/// (`expand_argument_vars`, Python's `expandvars` then `expanduser`): `$NAME` and `${NAME}` of
/// the command's environment (left as written where unset), and a leading `~` or `~user`; the
/// rest quoted. Each variable read is a `(name, as written)` in `refs`, set before the command.
fn expanded_word(w: &str, refs: &mut Vec<(String, String)>) -> String {
    static VAR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\$(\w+|\{[^}]*\})").expect("a valid pattern"));
    let is_name = |n: &str| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let (tilde, rest) = match w.strip_prefix('~') {
        Some(after) => {
            let user = after.split('/').next().unwrap_or_default();
            if user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
                w.split_at(1 + user.len())
            } else {
                ("", w)
            }
        }
        None => ("", w),
    };
    let mut out = tilde.to_string();
    let mut last = 0;
    for m in VAR.find_iter(rest) {
        let raw = m.as_str();
        let name = raw[1..].trim_start_matches('{').trim_end_matches('}');
        if !is_name(name) {
            continue;
        }
        if m.start() > last {
            out.push_str(&shell_quote(&rest[last..m.start()]));
        }
        out.push_str(&format!("\"$__copctl_x{}\"", refs.len()));
        refs.push((name.to_string(), raw.to_string()));
        last = m.end();
    }
    if last < rest.len() || out.is_empty() {
        out.push_str(&shell_quote(&rest[last..]));
    }
    out
}

#[derive(Debug, Clone, Default)]
pub struct Guards {
    pub creates: Option<String>,
    pub removes: Option<String>,
    pub unless: Option<String>,
    pub chdir: Option<String>,
    pub executable: Option<String>,
    /// A command's arguments expand `$VAR`, `${VAR}` and a leading `~` on the host.
    pub expand_vars: bool,
    /// The output as it came, trailing newlines and carriage returns kept.
    pub keep_empty_ends: bool,
    pub stdin: Option<String>,
    pub environment: Vec<(String, String)>,
}

/// `pattern` as a shell word that expands as Python's `glob.glob` does (the module's test of
/// `creates`/`removes`): `*`, `?` and `[...]` left to the shell, everything else quoted.
fn glob_word(pattern: &str) -> String {
    let mut out = String::new();
    let mut literal = String::new();
    for c in pattern.chars() {
        if matches!(c, '*' | '?' | '[' | ']') {
            if !literal.is_empty() {
                out.push_str(&shell_quote(&std::mem::take(&mut literal)));
            }
            out.push(c);
        } else {
            literal.push(c);
        }
    }
    if !literal.is_empty() || out.is_empty() {
        out.push_str(&shell_quote(&literal));
    }
    out
}

/// Whether a guard already decides; `Some(outcome)` to report without running. `creates` and
/// `removes` are glob patterns, as the module's.
pub(super) async fn guard(cx: &StepCtx<'_>, g: &Guards) -> Result<Option<Outcome>, Outcome> {
    if let (None, None, Some(u)) = (&g.creates, &g.removes, &g.unless) {
        return unless_alone(cx, g.chdir.as_deref(), u).await;
    }
    let mut checks = Vec::new();
    let any = |p: &str| format!("__copctl_any() {{ for f in {}; do [ -e \"$f\" ] || [ -L \"$f\" ] && return 0; done; return 1; }}", glob_word(p));
    if let Some(p) = &g.creates {
        checks.push(format!("{}; if __copctl_any; then echo creates; exit 0; fi", any(p)));
    }
    if let Some(p) = &g.removes {
        checks.push(format!("{}; if ! __copctl_any; then echo removes; exit 0; fi", any(p)));
    }
    if let Some(u) = &g.unless {
        checks.push(format!("if ( {u} ) >/dev/null 2>&1; then echo unless; exit 0; fi"));
    }
    if checks.is_empty() {
        return Ok(None);
    }
    // `creates` and `removes` are relative to `chdir`, which the module enters first (where it
    // cannot, the command's own script fails as the module does).
    if let Some(d) = &g.chdir {
        checks.insert(0, format!("cd -P {} 2>/dev/null || {{ echo run; exit 0; }}", shell_quote(d)));
    }
    let out = cx.sh(&format!("{}\necho run", checks.join("\n")), None).await?;
    let would = if cx.check { "Would" } else { "Did" };
    // The module's words and result where a guard decides (`rc` 0, the old `stdout` note).
    let decided = |msg: String, note: String| {
        let mut o = Outcome::ok(msg);
        o.result.insert("rc".into(), serde_json::json!(0));
        o.result.insert("stdout".into(), serde_json::json!(note));
        o.result.insert("stdout_lines".into(), serde_json::json!([note]));
        o
    };
    Ok(match String::from_utf8_lossy(&out.stdout).trim() {
        "creates" => {
            let p = g.creates.as_deref().unwrap_or("");
            Some(decided(format!("{would} not run command since '{p}' exists"), format!("skipped, since {p} exists")))
        }
        "removes" => {
            let p = g.removes.as_deref().unwrap_or("");
            Some(decided(
                format!("{would} not run command since '{p}' does not exist"),
                format!("skipped, since {p} does not exist"),
            ))
        }
        "unless" => Some(Outcome::ok("skipped: the unless command succeeded")),
        _ => None,
    })
}

/// `unless` without `creates` or `removes`: the command is the script, and its exit status the
/// answer. Its output goes nowhere, as in a test of it; run last in the script's subshell, the
/// shell execs it (`if ( u )` in a script forked a subshell of the subshell: a process more
/// for every guarded step on every host).
async fn unless_alone(cx: &StepCtx<'_>, chdir: Option<&str>, u: &str) -> Result<Option<Outcome>, Outcome> {
    let mut script = String::new();
    if let Some(d) = chdir {
        // Where it cannot enter, the command's own script fails as the module does.
        script.push_str(&format!("cd -P {} 2>/dev/null || exit 1\n", shell_quote(d)));
    }
    // `false` first: a text with no command in it (blank, a comment) leaves its status, and the
    // step runs, as when the old `if ( u )` could not parse it.
    script.push_str("exec >/dev/null 2>&1\nfalse\n");
    script.push_str(u);
    let out = cx.sh(&script, None).await?;
    Ok(out.success().then(|| Outcome::ok("skipped: the unless command succeeded")))
}

fn wrap(g: &Guards, line: &str) -> String {
    let mut s = String::new();
    for (k, v) in &g.environment {
        s.push_str(&format!("export {k}={}; ", shell_quote(v)));
    }
    if let Some(d) = &g.chdir {
        s.push_str(&format!("cd -P {} 2>/dev/null || {{ echo {NO_CHDIR} >&2; exit 1; }}; ", shell_quote(d)));
    }
    s.push_str(line);
    s
}

/// The module's message where `chdir` cannot be entered: it fails before it runs anything, so
/// (unlike a command that failed) it reports no change.
const NO_CHDIR_MSG: &str = "Unable to change directory before execution.";

/// Whether a failed command or shell step failed before it ran anything (`chdir`, a missing
/// program): the module reports no change then, where a command that ran and failed did.
pub fn ran_nothing(o: &Outcome) -> bool {
    o.not_run
        || [NO_CHDIR_MSG, NO_PROGRAM_MSG].iter().any(|m| o.result.get("msg").and_then(|v| v.as_str()) == Some(m))
}

/// What the script says on stderr, and alone, where `chdir` could not be entered (the command
/// never ran).
const NO_CHDIR: &str = "__copctl_no_chdir__";

/// The command module's failure where `chdir` cannot be entered: nothing ran, no return code.
fn no_chdir(out: &crate::transport::ExecOutput) -> Option<Outcome> {
    (out.status == Some(1) && out.stdout.is_empty() && out.stderr == format!("{NO_CHDIR}\n").as_bytes())
        .then(|| before_running(NO_CHDIR_MSG.into(), NO_CHDIR_MSG, serde_json::Value::Null))
}

/// A failure of the module before it ran anything: `shown` for the operator, the module's `msg`,
/// its `rc`, and no output.
fn before_running(shown: String, msg: &str, rc: serde_json::Value) -> Outcome {
    let mut o = Outcome::failed(shown);
    for (k, v) in [("msg", serde_json::json!(msg)), ("rc", rc), ("stdout", "".into()), ("stderr", "".into())] {
        o.result.insert(k.into(), v);
    }
    o.result.insert("stdout_lines".into(), serde_json::json!([]));
    o.result.insert("stderr_lines".into(), serde_json::json!([]));
    o
}

/// Runs a command line under the guards (what `command` and `shell` share).
pub(super) async fn run_line(cx: &StepCtx<'_>, line: String, g: &Guards) -> Outcome {
    match guard(cx, g).await {
        Err(o) => return o,
        Ok(Some(o)) => return o,
        Ok(None) => {}
    }
    if cx.check {
        // The module's partial check mode: with `creates`/`removes` it says the command would
        // run (changed); with neither it cannot tell, and skips.
        let mut o = if g.creates.is_some() || g.removes.is_some() {
            let mut o = Outcome::changed("Command would have run if not in check mode");
            o.result.insert("rc".into(), serde_json::json!(0));
            o
        } else {
            // Skipped by the module itself: its result says why (a skipped task's has nothing).
            let mut o = Outcome::skipped("Command would have run if not in check mode");
            o.result.insert("msg".into(), serde_json::json!(o.msg));
            o.result.insert("rc".into(), serde_json::json!(0));
            o
        };
        o.commands.push(line);
        return o;
    }
    let script = wrap(g, &line);
    let start = chrono::Local::now();
    let out = match cx.sh(&script, g.stdin.as_ref().map(|s| s.as_bytes())).await {
        Ok(o) => o,
        Err(o) => return o,
    };
    let end = chrono::Local::now();
    if let Some(mut o) = no_chdir(&out).or_else(|| no_program(&out)) {
        o.commands.push(line);
        return o;
    }
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
    // The module's times, as Python prints a datetime and a timedelta.
    let stamp = |t: chrono::DateTime<chrono::Local>| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    let took = (end - start).num_microseconds().unwrap_or(0).max(0);
    let (secs, micros) = (took / 1_000_000, took % 1_000_000);
    let delta = format!("{}:{:02}:{:02}.{micros:06}", secs / 3600, secs / 60 % 60, secs % 60);
    for (k, v) in [("start", stamp(start)), ("end", stamp(end)), ("delta", delta)] {
        o.result.insert(k.into(), serde_json::json!(v));
    }
    if g.keep_empty_ends {
        o.result.insert("stdout".into(), serde_json::json!(String::from_utf8_lossy(&out.stdout)));
        o.result.insert("stderr".into(), serde_json::json!(String::from_utf8_lossy(&out.stderr)));
    }
    o.commands.push(line);
    o
}
