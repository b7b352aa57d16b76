//! Step kinds, one file each: its arguments (read from the step, unknown fields refused) and its
//! check → (diff) → apply, reporting ok / changed / skipped / failed with the reason. `kinds!`
//! lists the kinds once; `Action`, `KINDS`, the action fields of `playbook::StepDef` and the
//! dispatch here are all derived from it. A new kind is its file plus one line there.
//!
//! Layering: below the playbook model (a step holds an `Action`), above templates and the
//! transport. Steps know nothing of playbooks, plans or runs; a step gets its arguments already
//! rendered for its host.
//!
//! Secrets: text rendered from a template that reads a secret variable (a command line, a
//! file's content, a message) is itself secret. Such a step's commands are shown as written in
//! the playbook, its file diffs as a notice, and a rendered argument inside a message as its
//! template source (`Outcome::withhold`), each saying which secret variables it reads.

mod args;
mod attrs;
mod backup;
mod edit;
mod home;
mod source;
mod transfer;
pub(crate) use attrs::file_attrs;
mod validate;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

pub use args::{Flag, Mode, ModeError, Number, OneOrMany, Presence};
pub use command::{Guards, ran_nothing};
/// kubectl on a server: RKE2's binary where none is on PATH, RKE2's admin kubeconfig.
pub use kube::PRELUDE as KUBECTL_PRELUDE;

use crate::template::Templates;
use crate::transport::{ExecOutput, ExecRequest, HostConnection, Pool, TransportError};

/// The step kinds, each `name: Variant(Args)`: `name` is the key a step writes, the kind's name
/// and its file in src/steps/; `Args` is declared there, with its `impl Kind`. This list is the
/// only place that enumerates kinds: `$then!` receives it and derives what it needs.
macro_rules! kinds {
    ($then:ident) => {
        $then! {
            command: Command(CommandArgs),
            shell: Shell(ShellArgs),
            copy: Copy(CopyArgs),
            template: Template(TemplateArgs),
            file: File(FileArgs),
            line: Line(LineArgs),
            block: Block(BlockArgs),
            replace: Replace(ReplaceArgs),
            service: Service(ServiceArgs),
            package: Package(PackageArgs),
            slurp: Slurp(SlurpArgs),
            stat: Stat(StatArgs),
            find: Find(FindArgs),
            getent: Getent(GetentArgs),
            fetch: Fetch(FetchArgs),
            wait_for: WaitFor(WaitForArgs),
            reboot: Reboot(RebootArgs),
            authorized_key: AuthorizedKey(AuthorizedKeyArgs),
            user: User(UserArgs),
            group: Group(GroupArgs),
            kube: Kube(KubeArgs),
            helm: Helm(HelmArgs),
            image_check: ImageCheck(ImageCheckArgs),
            assert: Assert(AssertArgs),
            debug: Debug(DebugArgs),
            set_fact: SetFact(SetFactArgs),
            setup: Setup(SetupArgs),
            ping: Ping(PingArgs),
            tempfile: Tempfile(TempfileArgs),
            pause: Pause(PauseArgs),
            sysctl: Sysctl(SysctlArgs),
            include_vars: IncludeVars(IncludeVarsArgs),
            modprobe: Modprobe(ModprobeArgs),
            hostname: Hostname(HostnameArgs),
            script: Script(ScriptArgs),
            wait_for_connection: WaitForConnection(WaitForConnectionArgs),
            pam_limits: PamLimits(PamLimitsArgs),
            unarchive: Unarchive(UnarchiveArgs),
            get_url: GetUrl(GetUrlArgs),
            mount: Mount(MountArgs),
            python_module: PythonModule(PythonModuleArgs),
        }
    };
}
pub(crate) use kinds;

/// What every kind is: arguments that serialize (so they can be rendered for a host through
/// their JSON form) and an apply that checks first and changes only what differs.
pub trait Kind: Clone + serde::Serialize + serde::de::DeserializeOwned + Send + Sync {
    /// Whether the engine renders the arguments for the host before `apply`; kinds that evaluate
    /// expressions themselves (`assert`, `debug`, `set_fact`) say no.
    const RENDERED: bool = true;

    /// Whether a step of this kind may be declared `read_only: true` (a command that only reads).
    const MAY_BE_READ_ONLY: bool = false;

    /// Cannot change a host, whatever it is given.
    fn read_only(&self) -> bool {
        false
    }

    /// The `mode:` of the file the step writes, if it has one (checked when the playbook loads).
    fn mode(&self) -> Option<&Mode> {
        None
    }

    /// Checks the host and applies what differs (only reports it in check mode).
    fn apply(&self, cx: &StepCtx<'_>, guards: &Guards) -> impl Future<Output = Outcome> + Send;
}

/// Everything derived from `kinds!` on this side: the modules, `Action`, `KINDS`, dispatch.
macro_rules! derive_from_kinds {
    ($($kind:ident: $Variant:ident($Args:ident)),* $(,)?) => {
        $(pub mod $kind;)*
        $(pub use $kind::$Args;)*

        /// The action of a step, once validated: one kind with its arguments.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Action {
            $($Variant($Args),)*
        }

        /// Every kind's name, in the order of `kinds!`.
        pub const KINDS: &[&str] = &[$(stringify!($kind)),*];

        impl Action {
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Action::$Variant(_) => stringify!($kind),)*
                }
            }

            /// The `mode:` of the file the step writes, if it has one.
            pub fn mode(&self) -> Option<&Mode> {
                match self {
                    $(Action::$Variant(a) => a.mode(),)*
                }
            }

            /// Kinds that cannot change a host. Any other step is read-only only when it says so.
            pub fn inherently_read_only(&self) -> bool {
                match self {
                    $(Action::$Variant(a) => a.read_only(),)*
                }
            }

            /// Whether the step may be declared `read_only: true`.
            pub fn may_be_read_only(&self) -> bool {
                match self {
                    $(Action::$Variant(_) => <$Args as Kind>::MAY_BE_READ_ONLY,)*
                }
            }

            /// The arguments as JSON text: what the planner searches for the names a step uses.
            pub fn text(&self) -> String {
                let v = match self {
                    $(Action::$Variant(a) => serde_json::to_value(a),)*
                };
                v.map(|v| v.to_string()).unwrap_or_default()
            }

            /// The step as written in the playbook, unrendered: a `shell:` or `command:` line
            /// itself, any other kind as `kind: {arguments}`. Shown instead of what it renders
            /// to when that reads a secret.
            pub fn source(&self) -> String {
                match self {
                    Action::Shell(ShellArgs(line)) => line.clone(),
                    Action::Command(CommandArgs::Line(line)) => line.clone(),
                    Action::Command(CommandArgs::Argv(argv)) => {
                        argv.iter().map(|w| crate::template::shell_quote(w)).collect::<Vec<_>>().join(" ")
                    }
                    other => {
                        let mut v = match other {
                            $(Action::$Variant(a) => serde_json::to_value(a),)*
                        }
                        .unwrap_or_default();
                        if let Value::Object(m) = &mut v {
                            m.retain(|_, x| !x.is_null());
                        }
                        format!("{}: {v}", other.kind())
                    }
                }
            }
        }

        /// Runs one step's action on the host.
        pub async fn run_action(cx: &StepCtx<'_>, action: &Action, guards: &Guards) -> Outcome {
            match action {
                $(Action::$Variant(a) => run_kind(cx, a, guards).await,)*
            }
        }
    };
}
kinds!(derive_from_kinds);

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Changed,
    Skipped,
    Failed,
    Unreachable,
}

/// What a step did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub msg: String,
    /// What `register:` stores (stdout, stderr, rc, content, ... plus changed/failed/skipped/msg).
    pub result: Map<String, Value>,
    /// Unified diff of a file change (for `--diff`).
    pub diff: Option<String>,
    /// `set_fact` variables.
    pub facts: Option<Map<String, Value>>,
    /// The remote command(s) run, for `-v` and the run log.
    pub commands: Vec<String>,
    /// The secret variables the step's rendered text read (`withhold` sets it).
    pub secret_reads: BTreeSet<String>,
    /// Arguments rendered from secrets, as (rendered, source): `withhold` puts the source back
    /// wherever the rendered text shows up in the message or diff.
    pub rendered_secrets: Vec<(String, String)>,
    /// What the operator must see whatever the step's status (a drain a PodDisruptionBudget will
    /// block): shown on the terminal even when ok, and in the JSON event.
    pub warnings: Vec<String>,
    /// What Ansible deprecates in the task as written (a conditional wrapped in `{{ }}`): in the
    /// registered result's `deprecations`, as Ansible's, and shown as warnings.
    pub deprecations: Vec<String>,
    /// The step failed before it ran anything (its `when`, its loop or its guards could not be
    /// judged): never a change, whatever the module.
    pub not_run: bool,
}

/// What is said in place of text rendered from secrets.
pub fn withheld_note(reads: &BTreeSet<String>) -> String {
    let names: Vec<&str> = reads.iter().map(String::as_str).collect();
    format!("# rendered text withheld: it reads secret variables: {}", names.join(", "))
}

/// The diff of a file whose new content reads secrets.
pub fn secret_diff(path: &str, reads: &BTreeSet<String>) -> String {
    let names: Vec<&str> = reads.iter().map(String::as_str).collect();
    format!("{path}: changed; content not shown (reads secret variables: {})\n", names.join(", "))
}

impl Outcome {
    pub fn new(status: Status, msg: impl Into<String>) -> Self {
        Outcome {
            status,
            msg: msg.into(),
            result: Map::new(),
            diff: None,
            facts: None,
            commands: vec![],
            secret_reads: BTreeSet::new(),
            rendered_secrets: vec![],
            warnings: vec![],
            deprecations: vec![],
            not_run: false,
        }
    }

    /// For a step whose rendered text read the secret variables `reads`: its commands become
    /// the step as written (`action.source()`) with a note naming them, a rendered argument in
    /// its message or diff becomes its template source, and a diff that is not already a notice
    /// becomes one. Its output (stdout, stderr) is left to the run's redactor.
    pub fn withhold(&mut self, action: &Action, reads: &BTreeSet<String>) {
        if reads.is_empty() {
            return;
        }
        let note = withheld_note(reads);
        if !self.commands.is_empty() {
            let source = action.source();
            let mut lines = source.lines();
            let first = lines.next().unwrap_or("");
            let rest: Vec<&str> = lines.collect();
            let mut shown = format!("{first}    {note}");
            for l in rest {
                shown.push('\n');
                shown.push_str(l);
            }
            self.commands = vec![shown];
        }
        let mut pairs = std::mem::take(&mut self.rendered_secrets);
        pairs.retain(|(rendered, _)| rendered.len() >= 3);
        pairs.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        let put_back = |text: &str| {
            pairs.iter().fold(text.to_string(), |t, (rendered, source)| t.replace(rendered.as_str(), source))
        };
        self.msg = put_back(&self.msg);
        if let Some(m) = self.result.get_mut("msg")
            && let Some(text) = m.as_str()
        {
            *m = json!(put_back(text));
        }
        self.diff = self.diff.take().map(|d| {
            if d.contains("content not shown") {
                put_back(&d)
            } else {
                let names: Vec<&str> = reads.iter().map(String::as_str).collect();
                format!("changed; content not shown (reads secret variables: {})\n", names.join(", "))
            }
        });
        self.secret_reads.extend(reads.iter().cloned());
    }

    pub fn ok(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Ok, msg)
    }

    pub fn changed(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Changed, msg)
    }

    pub fn failed(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Failed, msg)
    }

    pub fn skipped(msg: impl Into<String>) -> Self {
        Outcome::new(Status::Skipped, msg)
    }

    pub fn with_output(mut self, out: &ExecOutput) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        self.result.insert("rc".into(), out.status.map(|s| json!(s)).unwrap_or(Value::Null));
        self.result.insert("stdout_lines".into(), json!(stdout.lines().collect::<Vec<_>>()));
        self.result.insert("stderr_lines".into(), json!(stderr.lines().collect::<Vec<_>>()));
        // As Ansible's command strips them (strip_empty_ends).
        self.result.insert("stdout".into(), json!(stdout.trim_end_matches(['\r', '\n'])));
        self.result.insert("stderr".into(), json!(stderr.trim_end_matches(['\r', '\n'])));
        self
    }

    /// A failure before the step ran anything (see `not_run`).
    pub fn failed_before_running(msg: impl Into<String>) -> Self {
        Outcome { not_run: true, ..Outcome::failed(msg) }
    }

    /// The registered value: the result plus the status flags every result has.
    pub fn registered(&self) -> Value {
        let mut m = self.result.clone();
        m.insert("changed".into(), json!(self.status == Status::Changed));
        m.insert("failed".into(), json!(matches!(self.status, Status::Failed | Status::Unreachable)));
        // A skipped task ran nothing: Ansible registers no message, output or return code. Only
        // a skipped result has `skipped` (`'skipped' in r` is false otherwise, as in Ansible).
        if self.status == Status::Skipped {
            m.insert("skipped".into(), json!(true));
            return Value::Object(m);
        }
        m.entry("msg").or_insert(json!(self.msg));
        for k in ["stdout", "stderr"] {
            m.entry(k).or_insert(json!(""));
        }
        m.entry("rc").or_insert(json!(0));
        if !self.warnings.is_empty() {
            m.entry("warnings").or_insert(json!(self.warnings));
        }
        if !self.deprecations.is_empty() {
            let d: Vec<Value> = self
                .deprecations
                .iter()
                .map(|msg| json!({"msg": msg, "version": "2.23", "collection_name": "ansible.builtin"}))
                .collect();
            m.entry("deprecations").or_insert(json!(d));
        }
        Value::Object(m)
    }
}

/// What a step needs from the engine.
pub struct StepCtx<'a> {
    pub host: &'a str,
    pub conn: &'a HostConnection,
    pub pool: &'a Pool,
    pub templates: &'a Templates,
    pub vars: &'a minijinja::Value,
    pub check: bool,
    pub diff: bool,
    pub timeout: Duration,
    /// Where relative local paths (copy src, fetch dest) are resolved.
    pub local_dir: &'a Path,
}

impl StepCtx<'_> {
    /// The secret variables the step's rendering has read so far (its arguments, a template
    /// file): its diffs are then a notice.
    pub fn secret_reads(&self) -> BTreeSet<String> {
        crate::template::secret_reads(self.vars)
    }

    /// Runs a script on the host; transport errors become failed or unreachable outcomes.
    pub async fn sh(&self, script: &str, stdin: Option<&[u8]>) -> Result<ExecOutput, Outcome> {
        self.conn.exec(ExecRequest { command: script, stdin, timeout: self.timeout }).await.map_err(transport_outcome)
    }
}

/// What a check-and-apply script reported: its `CHANGED what` lines.
pub fn reported_changes(out: &ExecOutput) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("CHANGED "))
        .map(str::to_string)
        .collect()
}

pub fn transport_outcome(e: TransportError) -> Outcome {
    if e.is_unreachable() { Outcome::new(Status::Unreachable, e.to_string()) } else { Outcome::failed(e.to_string()) }
}

/// Renders every string inside an argument value for the host.
pub fn render_value(t: &Templates, v: &Value, ctx: &minijinja::Value) -> Result<Value, minijinja::Error> {
    render_noting_secrets(t, v, ctx, &mut Vec::new())
}

/// `render_value`, noting each string whose rendering read a secret as (rendered, source).
pub fn render_noting_secrets(
    t: &Templates,
    v: &Value,
    ctx: &minijinja::Value,
    secret: &mut Vec<(String, String)>,
) -> Result<Value, minijinja::Error> {
    Ok(match v {
        Value::String(s) => {
            let (r, reads) = crate::template::tracking_secrets(ctx, || t.render_str(s, ctx));
            let r = r?;
            if !reads.is_empty() && r != *s {
                secret.push((r.clone(), s.clone()));
            }
            Value::String(r)
        }
        Value::Array(a) => {
            Value::Array(a.iter().map(|x| render_noting_secrets(t, x, ctx, secret)).collect::<Result<_, _>>()?)
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Ok::<_, minijinja::Error>((k.clone(), render_noting_secrets(t, x, ctx, secret)?)))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// Renders a typed argument struct through its JSON form.
pub fn render_args<T: serde::Serialize + serde::de::DeserializeOwned>(
    t: &Templates,
    args: &T,
    ctx: &minijinja::Value,
) -> Result<T, String> {
    render_args_noting_secrets(t, args, ctx, &mut Vec::new())
}

fn render_args_noting_secrets<T: serde::Serialize + serde::de::DeserializeOwned>(
    t: &Templates,
    args: &T,
    ctx: &minijinja::Value,
    secret: &mut Vec<(String, String)>,
) -> Result<T, String> {
    let v = serde_json::to_value(args).map_err(|e| e.to_string())?;
    let r = render_noting_secrets(t, &v, ctx, secret).map_err(|e| crate::template::describe_error(&e))?;
    let r = crate::template::remove_omit(r);
    // serde's message would quote the rendered value.
    serde_json::from_value(r).map_err(|e| {
        if secret.is_empty() { format!("after rendering: {e}") } else { "after rendering: invalid arguments".into() }
    })
}

/// Renders the arguments for the host (unless the kind evaluates them itself), then applies.
/// The arguments rendered from secrets go with the outcome, for `Outcome::withhold`.
async fn run_kind<K: Kind>(cx: &StepCtx<'_>, args: &K, guards: &Guards) -> Outcome {
    if !K::RENDERED {
        return args.apply(cx, guards).await;
    }
    let mut secret = Vec::new();
    let mut o = match render_args_noting_secrets(cx.templates, args, cx.vars, &mut secret) {
        Ok(a) => a.apply(cx, guards).await,
        Err(e) => Outcome::failed_before_running(e),
    };
    o.rendered_secrets.extend(secret);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_whose_text_read_secrets_shows_its_source_instead() {
        let action = Action::Shell(ShellArgs("printf %s {{ admin_password | quote }} >/x\necho done".into()));
        let rendered = "'x'\"'\"'y'";
        let mut o = Outcome::failed(format!("cannot write {rendered}"));
        o.commands.push(format!("printf %s {rendered} >/x\necho done"));
        o.diff = Some("--- /x (before)\n+++ /x (after)\n+x'y\n".into());
        o.rendered_secrets.push((rendered.into(), "{{ admin_password | quote }}".into()));
        let reads: BTreeSet<String> = ["admin_password".to_string()].into();
        let untouched = o.clone();
        o.withhold(&action, &BTreeSet::new());
        assert_eq!((&o.commands, &o.msg, &o.diff), (&untouched.commands, &untouched.msg, &untouched.diff));
        o.withhold(&action, &reads);
        assert_eq!(
            o.commands,
            ["printf %s {{ admin_password | quote }} >/x    \
              # rendered text withheld: it reads secret variables: admin_password\necho done"]
        );
        assert_eq!(o.msg, "cannot write {{ admin_password | quote }}");
        assert_eq!(o.diff.as_deref(), Some("changed; content not shown (reads secret variables: admin_password)\n"));
        assert_eq!(o.secret_reads, reads);
        // A notice already naming its file keeps it.
        let mut o = Outcome::changed("");
        o.diff = Some(secret_diff("/etc/app.conf", &reads));
        o.withhold(&action, &reads);
        assert_eq!(
            o.diff.as_deref(),
            Some("/etc/app.conf: changed; content not shown (reads secret variables: admin_password)\n")
        );
    }

    #[test]
    fn a_step_source_is_its_line_or_its_arguments_as_written() {
        let argv = Action::Command(CommandArgs::Argv(vec!["login".into(), "-p".into(), "{{ pw }}".into()]));
        assert_eq!(argv.source(), "login -p '{{ pw }}'");
        let copy = Action::Copy(CopyArgs {
            src: None,
            content: Some("{{ pw }}".into()),
            dest: "/x".into(),
            mode: None,
            owner: None,
            group: None,
            force: true,
            remote_src: false,
            backup: false,
            validate: None,
            directory_mode: None,
            follow: false,
            file_result: false,
        });
        assert_eq!(copy.source(), r#"copy: {"content":"{{ pw }}","dest":"/x"}"#);
    }
}
