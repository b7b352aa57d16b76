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
            format!("{prelude}exec {}", words.join(" "))
        } else {
            format!("exec {}", argv.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" "))
        };
        let mut o = run_line(cx, line, g).await;
        if let Some(e) = &g.executable {
            // Ansible's words: command runs no shell, so it has none to change.
            o.warnings.push(format!(
                "As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '{e}'."
            ));
        }
        o
    }
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

/// Whether a guard already decides; `Some(outcome)` to report without running.
pub(super) async fn guard(cx: &StepCtx<'_>, g: &Guards) -> Result<Option<Outcome>, Outcome> {
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

/// Runs a command line under the guards (what `command` and `shell` share).
pub(super) async fn run_line(cx: &StepCtx<'_>, line: String, g: &Guards) -> Outcome {
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
    if g.keep_empty_ends {
        o.result.insert("stdout".into(), serde_json::json!(String::from_utf8_lossy(&out.stdout)));
        o.result.insert("stderr".into(), serde_json::json!(String::from_utf8_lossy(&out.stderr)));
    }
    o.commands.push(line);
    o
}
