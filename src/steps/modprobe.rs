//! `modprobe` (Ansible's `community.general.modprobe`, which ansible-core routes the short name
//! to): a kernel module loaded or unloaded, and kept so across boots (`persistent`), decided as
//! the module decides: loaded means listed in /proc/modules (its `-` as `_`; read through
//! `lsmod`, which lists that file, where kmod is installed) or built into the kernel
//! (`modules.builtin`); a module that loads without showing up there is not a change;
//! `persistent: present` writes /etc/modules-load.d/NAME.conf and /etc/modprobe.d/NAME.conf
//! (`options NAME k=v` lines, other files' options for it commented out), `absent` comments the
//! module's lines out. The files are rewritten as the module rewrites them, to the byte.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Guards, Kind, Outcome, Presence, StepCtx};
use crate::template::shell_quote;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModprobeArgs {
    pub name: String,
    #[serde(default)]
    pub state: Presence,
    /// `k=v` words passed to modprobe (and kept as `options` lines when persistent).
    #[serde(default)]
    pub params: String,
    /// `disabled` (the default: the boot configuration is left alone), `present` or `absent`.
    #[serde(default = "disabled")]
    pub persistent: String,
}

fn disabled() -> String {
    "disabled".into()
}

const MODULES_LOAD: &str = "/etc/modules-load.d";
const PARAMETERS: &str = "/etc/modprobe.d";

/// What the host says of the module, read in one command.
struct HostState {
    /// The loaded modules, a line each starting with the name (lsmod's or /proc/modules').
    proc_modules: String,
    /// `None`: modules.builtin could not be read (the message the module fails with).
    builtin: Result<String, String>,
    /// (path, content) of each file of /etc/modules-load.d.
    load_files: Vec<(String, String)>,
    /// (path, content) of each file of /etc/modprobe.d.
    param_files: Vec<(String, String)>,
}

impl Kind for ModprobeArgs {
    async fn apply(&self, cx: &StepCtx<'_>, _: &Guards) -> Outcome {
        let name = self.name.as_str();
        let params: Vec<String> = match shlex::split(&self.params) {
            Some(p) => p,
            None => return Outcome::failed(format!("params: cannot split '{}'", self.params)),
        };
        let mut st = match read_state(cx).await {
            Ok(s) => s,
            Err(o) => return o,
        };
        let mut changed = false;
        let mut warnings = Vec::new();
        let mut commands = Vec::new();
        let loaded = match loaded(name, &st) {
            Ok(l) => l,
            Err(e) => return Outcome::failed(e),
        };
        let words = |pre: &[&str]| -> String {
            let mut w: Vec<String> = vec!["modprobe".into()];
            w.extend(pre.iter().map(|s| s.to_string()));
            w.push(name.to_string());
            w.extend(params.iter().cloned());
            w.iter().map(|s| shell_quote(s)).collect::<Vec<_>>().join(" ")
        };
        if self.state == Presence::Present && !loaded {
            let cmd = words(if cx.check { &["-n"] } else { &[] });
            if let Err(o) = run_modprobe(cx, cmd, self, &mut commands).await {
                return o;
            }
            st = match read_state(cx).await {
                Ok(s) => s,
                Err(o) => return o,
            };
            if cx.check || loaded_now(name, &st) {
                changed = true;
            } else {
                let cmd = words(&["-n", "--first-time"]);
                match cx.sh(&cmd, None).await {
                    Ok(o) if !o.success() => warnings.push(String::from_utf8_lossy(&o.stderr).into_owned()),
                    Ok(_) => {}
                    Err(o) => return o,
                }
            }
        } else if self.state == Presence::Absent && loaded {
            let mut cmd = format!("modprobe -r {}", shell_quote(name));
            if cx.check {
                cmd.push_str(" -n");
            }
            if let Err(o) = run_modprobe(cx, cmd, self, &mut commands).await {
                return o;
            }
            changed = true;
        }
        let find_module = regex::Regex::new(&format!(r"^ *{name} *(?:[#;].*)?\n?$")).ok();
        let find_params = regex::Regex::new(&format!(r"^options {name} \w+=\S+ *(?:[#;].*)?\n?$")).ok();
        let get_params = regex::Regex::new(&format!(r"^options {name} (\w+=\S+) *(?:[#;].*)?\n?$")).ok();
        let (Some(find_module), Some(find_params), Some(get_params)) = (find_module, find_params, get_params) else {
            return Outcome::failed(format!("name: '{name}' is not a module name"));
        };
        let persistently = st.load_files.iter().any(|(_, t)| lines(t).any(|l| find_module.is_match(l)));
        let permanent: std::collections::BTreeSet<String> = st
            .param_files
            .iter()
            .flat_map(|(_, t)| lines(t).filter_map(|l| get_params.captures(l).map(|c| c[1].to_string())).collect::<Vec<_>>())
            .collect();
        let wanted: std::collections::BTreeSet<String> = self.params.split_whitespace().map(str::to_string).collect();
        let mut writes: Vec<(String, String)> = Vec::new();
        // `'\n'.join(readlines())` with each `#`-prefixed line: the module doubles the newlines
        // of every file it comments a line out in.
        let commented = |files: &[(String, String)], re: &regex::Regex| -> Vec<(String, String)> {
            files
                .iter()
                .filter(|(_, t)| lines(t).any(|l| re.is_match(l)))
                .map(|(p, t)| {
                    let new: Vec<String> =
                        lines(t).map(|l| if re.is_match(l) { format!("#{l}") } else { l.to_string() }).collect();
                    (p.clone(), new.join("\n"))
                })
                .collect()
        };
        match self.persistent.as_str() {
            "present" if !(persistently && permanent == wanted) => {
                if !persistently {
                    writes.push((format!("{MODULES_LOAD}/{name}.conf"), format!("{name}\n")));
                    changed = true;
                }
                if permanent != wanted {
                    writes.extend(commented(&st.param_files, &find_params));
                    let body: Vec<String> = self.params.split_whitespace().map(|p| format!("options {name} {p}")).collect();
                    writes.push((format!("{PARAMETERS}/{name}.conf"), format!("{}\n", body.join("\n"))));
                    changed = true;
                }
            }
            "absent" if persistently || !permanent.is_empty() => {
                if persistently {
                    writes.extend(commented(&st.load_files, &find_module));
                }
                if !permanent.is_empty() {
                    writes.extend(commented(&st.param_files, &find_params));
                }
                changed = true;
            }
            _ => {}
        }
        if !cx.check {
            for (path, text) in &writes {
                let cmd = format!("cat > {}", shell_quote(path));
                match cx.sh(&cmd, Some(text.as_bytes())).await {
                    Ok(o) if o.success() => commands.push(format!("{cmd}  # {} bytes", text.len())),
                    Ok(o) => return Outcome::failed(String::from_utf8_lossy(&o.stderr).trim().to_string()),
                    Err(o) => return o,
                }
            }
        }
        let mut o = if changed { Outcome::changed(format!("{name} {}", self.state_word())) } else { Outcome::ok("") };
        o.result.insert("name".into(), json!(name));
        o.result.insert("params".into(), json!(self.params));
        o.result.insert("state".into(), json!(self.state_word()));
        o.warnings = warnings.into_iter().filter(|w| !w.trim().is_empty()).collect();
        o.commands = commands;
        o
    }
}

impl ModprobeArgs {
    fn state_word(&self) -> &'static str {
        match self.state {
            Presence::Present => "present",
            Presence::Absent => "absent",
        }
    }
}

/// Runs a modprobe command (noted in `commands`); its failure is the module's.
async fn run_modprobe(
    cx: &StepCtx<'_>,
    cmd: String,
    a: &ModprobeArgs,
    commands: &mut Vec<String>,
) -> Result<(), Outcome> {
    let out = cx.sh(&cmd, None).await?;
    commands.push(cmd);
    if out.success() { Ok(()) } else { Err(failed_with(&a.name, a, &out)) }
}

/// A failed modprobe as the module reports it: its stderr as the message, with rc and output.
fn failed_with(name: &str, a: &ModprobeArgs, out: &crate::transport::ExecOutput) -> Outcome {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut o = Outcome::failed(err.clone());
    o.result.insert("rc".into(), json!(out.status));
    o.result.insert("stdout".into(), json!(String::from_utf8_lossy(&out.stdout)));
    o.result.insert("stderr".into(), json!(err));
    o.result.insert("name".into(), json!(name));
    o.result.insert("params".into(), json!(a.params));
    o.result.insert("state".into(), json!(a.state_word()));
    o
}

/// Lines as Python's `readlines` gives them, each with its newline.
fn lines(t: &str) -> impl Iterator<Item = &str> {
    t.split_inclusive('\n')
}

/// Whether the module is loaded or built in; `Err` when modules.builtin cannot be read (the
/// module's failure).
fn loaded(name: &str, st: &HostState) -> Result<bool, String> {
    if loaded_now(name, st) {
        return Ok(true);
    }
    let builtin = st.builtin.as_ref().map_err(Clone::clone)?;
    let ko = format!("/{name}.ko");
    Ok(builtin.lines().any(|l| l.trim_end().ends_with(&ko)))
}

fn loaded_now(name: &str, st: &HostState) -> bool {
    let prefix = format!("{} ", name.replace('-', "_"));
    st.proc_modules.lines().any(|l| l.starts_with(&prefix))
}

/// /proc/modules, modules.builtin and the files of the two directories, in one command.
async fn read_state(cx: &StepCtx<'_>) -> Result<HostState, Outcome> {
    let script = format!(
        "set -e; if command -v lsmod >/dev/null; then lsmod; else cat /proc/modules; fi; set +e; \
         echo '@@builtin'; b=/lib/modules/$(uname -r)/modules.builtin; \
         if [ -r \"$b\" ]; then cat \"$b\"; else echo \"@@missing $b\"; fi; \
         for d in {MODULES_LOAD} {PARAMETERS}; do for f in \"$d\"/*; do [ -f \"$f\" ] || continue; \
         printf '@@file %s\\n' \"$f\"; od -An -v -tx1 \"$f\" | tr -d ' \\n'; echo; done; done"
    );
    let out = cx.sh(&script, None).await?;
    if !out.success() {
        return Err(Outcome::failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (proc_modules, rest) = text.split_once("@@builtin\n").unwrap_or((&text, ""));
    let (builtin, files) = match rest.find("@@file ") {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let builtin = match builtin.strip_prefix("@@missing ") {
        Some(p) => Err(format!("[Errno 2] No such file or directory: '{}'", p.trim())),
        None => Ok(builtin.to_string()),
    };
    let mut st = HostState { proc_modules: proc_modules.to_string(), builtin, load_files: vec![], param_files: vec![] };
    let mut lines = files.lines();
    while let Some(l) = lines.next() {
        let Some(path) = l.strip_prefix("@@file ") else { continue };
        let hex = lines.next().unwrap_or("");
        let bytes: Vec<u8> =
            (0..hex.len() / 2).filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()).collect();
        let entry = (path.to_string(), String::from_utf8_lossy(&bytes).into_owned());
        if path.starts_with(PARAMETERS) {
            st.param_files.push(entry);
        } else {
            st.load_files.push(entry);
        }
    }
    Ok(st)
}
