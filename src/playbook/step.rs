//! One step of a play: its common fields (name, when, register, notify, guards...) and exactly
//! one action (the step kind). Every struct refuses unknown fields, so a typo is an error at its
//! line instead of a silently ignored setting.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A single value or a list of them (`notify: x` or `notify: [x, y]`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(t) => vec![t.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// A number that may also be written as a template (`timeout: "{{ drain_timeout }}"`); the text
/// must render to a number.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Number {
    Value(u64),
    Text(String),
}

impl Number {
    pub fn get(&self) -> Result<u64, String> {
        match self {
            Number::Value(n) => Ok(*n),
            Number::Text(t) => t.trim().parse().map_err(|_| format!("'{t}' is not a number")),
        }
    }
}

/// `mode:` of a file: octal text, quoted or not (`mode: 644` is 0644, never decimal 644 as in
/// Ansible). Kept as written, since it may be a template rendered per host; a literal mode is
/// checked when the playbook is loaded, a rendered one when the step runs.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(transparent)]
pub struct Mode(String);

/// A mode that is not octal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeError(String);

impl std::fmt::Display for ModeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mode '{}' is not an octal mode; quote it in YAML: mode: \"0644\"", self.0)
    }
}

impl std::error::Error for ModeError {}

impl From<&str> for Mode {
    fn from(s: &str) -> Self {
        Mode(s.to_string())
    }
}

impl Mode {
    /// The permission bits ("0644", "644", "0o644"; symbolic modes like u=rw are not supported).
    pub fn bits(&self) -> Result<u32, ModeError> {
        let t = self.0.trim().trim_start_matches("0o");
        u32::from_str_radix(t, 8).ok().filter(|v| *v <= 0o7777).ok_or_else(|| ModeError(self.0.clone()))
    }

    /// Whether the mode is rendered per host, so that only the rendered text can be checked.
    pub fn is_template(&self) -> bool {
        self.0.contains("{{")
    }
}

/// `when:`/`changed_when:`/`failed_when:`: an expression, a list of them (all must hold), or a
/// literal boolean.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Condition {
    Bool(bool),
    Expr(String),
    All(Vec<String>),
}

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

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CopyArgs {
    pub src: Option<String>,
    pub content: Option<String>,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TemplateArgs {
    pub src: String,
    pub dest: String,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    File,
    Directory,
    Absent,
    Link,
    Touch,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileArgs {
    pub path: String,
    pub state: Option<FileState>,
    pub src: Option<String>,
    pub mode: Option<Mode>,
    pub owner: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    #[default]
    Present,
    Absent,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LineArgs {
    pub path: String,
    pub line: Option<String>,
    pub regexp: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BlockArgs {
    pub path: String,
    #[serde(default)]
    pub block: String,
    /// `{mark}` becomes BEGIN / END.
    pub marker: Option<String>,
    #[serde(default)]
    pub state: Presence,
    pub insertafter: Option<String>,
    pub insertbefore: Option<String>,
    #[serde(default)]
    pub create: bool,
    pub mode: Option<Mode>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ServiceState {
    Started,
    Stopped,
    Restarted,
    Reloaded,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceArgs {
    pub name: String,
    pub state: Option<ServiceState>,
    pub enabled: Option<bool>,
    pub masked: Option<bool>,
    #[serde(default)]
    pub daemon_reload: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackageArgs {
    pub name: OneOrMany<String>,
    #[serde(default)]
    pub state: Presence,
    /// A directory on the host holding package files, for air-gapped installs.
    pub from: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SlurpArgs {
    pub path: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    pub src: String,
    pub dest: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WaitForArgs {
    pub port: Option<u16>,
    pub host: Option<String>,
    pub path: Option<String>,
    pub command: Option<String>,
    /// Seconds before giving up.
    pub timeout: Option<Number>,
    /// Seconds between attempts.
    pub interval: Option<Number>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RebootArgs {
    pub timeout: Option<u64>,
    pub msg: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthorizedKeyArgs {
    pub user: String,
    pub key: String,
    #[serde(default)]
    pub state: Presence,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum KubeAction {
    Cordon,
    Uncordon,
    Drain,
    Delete,
    Label,
    WaitReady,
    /// Before draining a GPU node: GPU work on it (pods holding ResourceClaims), and room for it
    /// on the other GPU nodes (free devices in their resource slices).
    GpuDrainCheck,
}

/// Node operations through kubectl on a control-plane host. `uncordon` only undoes a cordon
/// copctl made itself (an admin's cordon stays).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubeArgs {
    pub action: KubeAction,
    pub node: String,
    #[serde(default)]
    pub labels: IndexMap<String, String>,
    pub timeout: Option<Number>,
    /// gpu_drain_check: go on although GPU work would be cut off (`--yes`).
    pub yes: Option<Flag>,
    /// gpu_drain_check: go on although no other GPU node could take the work (`--force`).
    pub force: Option<Flag>,
}

/// A boolean that may be written as a template (`"{{ yes | default(false) }}"`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Flag {
    Value(bool),
    Text(String),
}

impl Flag {
    pub fn get(&self) -> bool {
        match self {
            Flag::Value(b) => *b,
            Flag::Text(t) => matches!(t.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "1" | "on"),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HelmArgs {
    pub release: String,
    pub chart: String,
    pub namespace: String,
    pub version: Option<String>,
    #[serde(default)]
    pub set: IndexMap<String, Value>,
    pub values: Option<String>,
    #[serde(default)]
    pub create_namespace: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AssertArgs {
    pub that: OneOrMany<String>,
    pub fail_msg: Option<String>,
    pub success_msg: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DebugArgs {
    pub msg: Option<String>,
    pub var: Option<String>,
}

/// The raw step as written. Exactly one of the action fields must be set.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct StepDef {
    pub name: Option<String>,
    pub when: Option<Condition>,
    pub register: Option<String>,
    pub notify: Option<OneOrMany<String>>,
    pub tags: Option<OneOrMany<String>>,
    /// Changes nothing: may run on a host outside `--limit` when an in-limit task needs it.
    pub read_only: Option<bool>,
    #[serde(default)]
    pub run_once: bool,
    pub delegate_to: Option<String>,
    pub retries: Option<u32>,
    /// Seconds between retries.
    pub delay: Option<u64>,
    pub until: Option<String>,
    pub changed_when: Option<Condition>,
    pub failed_when: Option<Condition>,
    #[serde(default)]
    pub ignore_errors: bool,
    /// Seconds; default 1800 so that one hung host never freezes a run.
    pub timeout: Option<u64>,
    pub r#become: Option<bool>,
    #[serde(default)]
    pub vars: IndexMap<String, Value>,
    #[serde(rename = "loop")]
    pub loop_over: Option<Value>,
    pub creates: Option<String>,
    pub removes: Option<String>,
    pub unless: Option<String>,
    pub chdir: Option<String>,
    pub stdin: Option<String>,
    /// Extra environment for command/shell.
    #[serde(default)]
    pub environment: IndexMap<String, String>,
    /// Not a step: a file of steps put in its place when the playbook is loaded (mod.rs).
    pub import_steps: Option<String>,

    pub command: Option<CommandArgs>,
    pub shell: Option<String>,
    pub copy: Option<CopyArgs>,
    pub template: Option<TemplateArgs>,
    pub file: Option<FileArgs>,
    pub line: Option<LineArgs>,
    pub block: Option<BlockArgs>,
    pub service: Option<ServiceArgs>,
    pub package: Option<PackageArgs>,
    pub slurp: Option<SlurpArgs>,
    pub fetch: Option<FetchArgs>,
    pub wait_for: Option<WaitForArgs>,
    pub reboot: Option<RebootArgs>,
    pub authorized_key: Option<AuthorizedKeyArgs>,
    pub kube: Option<KubeArgs>,
    pub helm: Option<HelmArgs>,
    pub assert: Option<AssertArgs>,
    pub debug: Option<DebugArgs>,
    pub set_fact: Option<IndexMap<String, Value>>,
}

/// The action of a step, once validated.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Command(CommandArgs),
    Shell(String),
    Copy(CopyArgs),
    Template(TemplateArgs),
    File(FileArgs),
    Line(LineArgs),
    Block(BlockArgs),
    Service(ServiceArgs),
    Package(PackageArgs),
    Slurp(SlurpArgs),
    Fetch(FetchArgs),
    WaitFor(WaitForArgs),
    Reboot(RebootArgs),
    AuthorizedKey(AuthorizedKeyArgs),
    Kube(KubeArgs),
    Helm(HelmArgs),
    Assert(AssertArgs),
    Debug(DebugArgs),
    SetFact(IndexMap<String, Value>),
}

pub const KINDS: &[&str] = &[
    "command",
    "shell",
    "copy",
    "template",
    "file",
    "line",
    "block",
    "service",
    "package",
    "slurp",
    "fetch",
    "wait_for",
    "reboot",
    "authorized_key",
    "kube",
    "helm",
    "assert",
    "debug",
    "set_fact",
];

impl Action {
    /// The `mode:` of the file the step writes, if it has one.
    pub fn mode(&self) -> Option<&Mode> {
        match self {
            Action::Copy(a) => a.mode.as_ref(),
            Action::Template(a) => a.mode.as_ref(),
            Action::File(a) => a.mode.as_ref(),
            Action::Line(a) => a.mode.as_ref(),
            Action::Block(a) => a.mode.as_ref(),
            _ => None,
        }
    }

    /// The arguments as JSON text: what the planner searches for the names a step uses.
    pub fn text(&self) -> String {
        let v = match self {
            Action::Command(x) => serde_json::to_value(x),
            Action::Shell(x) => serde_json::to_value(x),
            Action::Copy(x) => serde_json::to_value(x),
            Action::Template(x) => serde_json::to_value(x),
            Action::File(x) => serde_json::to_value(x),
            Action::Line(x) => serde_json::to_value(x),
            Action::Block(x) => serde_json::to_value(x),
            Action::Service(x) => serde_json::to_value(x),
            Action::Package(x) => serde_json::to_value(x),
            Action::Slurp(x) => serde_json::to_value(x),
            Action::Fetch(x) => serde_json::to_value(x),
            Action::WaitFor(x) => serde_json::to_value(x),
            Action::Reboot(x) => serde_json::to_value(x),
            Action::AuthorizedKey(x) => serde_json::to_value(x),
            Action::Kube(x) => serde_json::to_value(x),
            Action::Helm(x) => serde_json::to_value(x),
            Action::Assert(x) => serde_json::to_value(x),
            Action::Debug(x) => serde_json::to_value(x),
            Action::SetFact(x) => serde_json::to_value(x),
        };
        v.map(|v| v.to_string()).unwrap_or_default()
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Command(_) => "command",
            Action::Shell(_) => "shell",
            Action::Copy(_) => "copy",
            Action::Template(_) => "template",
            Action::File(_) => "file",
            Action::Line(_) => "line",
            Action::Block(_) => "block",
            Action::Service(_) => "service",
            Action::Package(_) => "package",
            Action::Slurp(_) => "slurp",
            Action::Fetch(_) => "fetch",
            Action::WaitFor(_) => "wait_for",
            Action::Reboot(_) => "reboot",
            Action::AuthorizedKey(_) => "authorized_key",
            Action::Kube(_) => "kube",
            Action::Helm(_) => "helm",
            Action::Assert(_) => "assert",
            Action::Debug(_) => "debug",
            Action::SetFact(_) => "set_fact",
        }
    }

    /// Kinds that cannot change a host. Any other step is read-only only when it says so.
    pub fn inherently_read_only(&self) -> bool {
        matches!(
            self,
            Action::Slurp(_)
                | Action::Fetch(_)
                | Action::WaitFor(_)
                | Action::Assert(_)
                | Action::Debug(_)
                | Action::SetFact(_)
        ) || matches!(self, Action::Kube(k) if matches!(k.action, KubeAction::WaitReady | KubeAction::GpuDrainCheck))
    }
}

impl StepDef {
    /// The one action of this step; `Err` lists what was found (none or several).
    pub fn take_action(&mut self) -> Result<Action, Vec<&'static str>> {
        let mut found: Vec<Action> = Vec::new();
        if let Some(a) = self.command.take() {
            found.push(Action::Command(a));
        }
        if let Some(a) = self.shell.take() {
            found.push(Action::Shell(a));
        }
        if let Some(a) = self.copy.take() {
            found.push(Action::Copy(a));
        }
        if let Some(a) = self.template.take() {
            found.push(Action::Template(a));
        }
        if let Some(a) = self.file.take() {
            found.push(Action::File(a));
        }
        if let Some(a) = self.line.take() {
            found.push(Action::Line(a));
        }
        if let Some(a) = self.block.take() {
            found.push(Action::Block(a));
        }
        if let Some(a) = self.service.take() {
            found.push(Action::Service(a));
        }
        if let Some(a) = self.package.take() {
            found.push(Action::Package(a));
        }
        if let Some(a) = self.slurp.take() {
            found.push(Action::Slurp(a));
        }
        if let Some(a) = self.fetch.take() {
            found.push(Action::Fetch(a));
        }
        if let Some(a) = self.wait_for.take() {
            found.push(Action::WaitFor(a));
        }
        if let Some(a) = self.reboot.take() {
            found.push(Action::Reboot(a));
        }
        if let Some(a) = self.authorized_key.take() {
            found.push(Action::AuthorizedKey(a));
        }
        if let Some(a) = self.kube.take() {
            found.push(Action::Kube(a));
        }
        if let Some(a) = self.helm.take() {
            found.push(Action::Helm(a));
        }
        if let Some(a) = self.assert.take() {
            found.push(Action::Assert(a));
        }
        if let Some(a) = self.debug.take() {
            found.push(Action::Debug(a));
        }
        if let Some(a) = self.set_fact.take() {
            found.push(Action::SetFact(a));
        }
        if found.len() == 1 {
            Ok(found.pop().expect("one action"))
        } else {
            Err(found.iter().map(Action::kind).collect())
        }
    }
}
