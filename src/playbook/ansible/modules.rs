//! The module table: each Ansible module copctl runs, mapped to the native kind whose semantics
//! match (arguments, `changed` rule, registered result), with its arguments translated one by
//! one. An argument or value without a native equivalent is a problem reported where it is
//! written, never dropped; so is a module that is not in the table.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Problems;
use super::node::{Kind, Node};
use super::split::{parse_kv, split_args, unquote};

/// Modules copctl runs (short names; `ansible.builtin.X` and `ansible.legacy.X` too).
pub const SUPPORTED: &[&str] = &[
    "apt",
    "assert",
    "authorized_key",
    "blockinfile",
    "command",
    "copy",
    "debug",
    "dnf",
    "fail",
    "fetch",
    "file",
    "find",
    "get_url",
    "getent",
    "group",
    "hostname",
    "include_vars",
    "lineinfile",
    "meta",
    "modprobe",
    "mount",
    "package",
    "pam_limits",
    "pause",
    "ping",
    "raw",
    "reboot",
    "replace",
    "script",
    "service",
    "set_fact",
    "setup",
    "shell",
    "slurp",
    "stat",
    "sysctl",
    "systemd",
    "systemd_service",
    "template",
    "tempfile",
    "unarchive",
    "user",
    "wait_for",
    "wait_for_connection",
    "yum",
];

/// Ansible modules copctl knows of but does not run yet, with why where it is not obvious.
pub const NOT_YET: &[(&str, &str)] = &[
    ("uri", ""),
    ("git", ""),
    ("pip", ""),
    ("cron", ""),
    ("add_host", ""),
    ("group_by", ""),
    ("apt_key", ""),
    ("apt_repository", ""),
    ("yum_repository", ""),
    ("rpm_key", ""),
    ("known_hosts", ""),
    ("service_facts", ""),
    ("package_facts", ""),
    ("archive", ""),
    ("assemble", ""),
    ("debconf", ""),
    ("async_status", ""),
    ("iptables", ""),
    ("selinux", ""),
    ("seboolean", ""),
    ("firewalld", ""),
    ("ufw", ""),
    ("timezone", ""),
];

/// What a task's module becomes: a native kind with its arguments, and step fields the module's
/// arguments set (`chdir`, `creates`, ...). `None` kind: the task does nothing (`meta: noop`).
pub struct Translated {
    pub kind: Option<&'static str>,
    pub args: Value,
    pub fields: Map<String, Value>,
    /// A problem Ansible's module reports when the task runs (a required argument missing):
    /// this message, and the plan-time problem for a task that does not tolerate failing.
    pub fails: Option<(String, String)>,
}

/// A site's own module (`library/NAME.py` at `path`): its arguments as the task gives them
/// (a mapping, `k=v` words, `args:`), templates kept for the run; words that are not `k=v` are
/// its `_raw_params`, as Ansible gives them.
pub fn library(p: &mut Problems, name: &str, path: &Path, node: &Node, extra: Option<&Node>) -> Option<Translated> {
    let a = Args::new(p, name, node, extra, None);
    let mut args = Map::new();
    for item in &a.items {
        args.insert(item.name.clone(), item.value.clone());
    }
    if let Some((raw, ..)) = &a.raw {
        args.insert("_raw_params".into(), json!(raw));
    }
    let short = short_name(name).unwrap_or(name);
    Some(Translated {
        kind: Some("python_module"),
        args: json!({"module": short, "path": std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string(), "args": args}),
        fields: Map::new(),
        fails: None,
    })
}

/// The short name of a module key (`ansible.builtin.copy` → `copy`), if it is one copctl may
/// know; `None` for another collection's module.
pub fn short_name(key: &str) -> Option<&str> {
    if let Some(s) = key.strip_prefix("ansible.builtin.").or_else(|| key.strip_prefix("ansible.legacy.")) {
        return Some(s);
    }
    // Modules ansible-core routes to collections (its runtime.yml): copctl runs them itself.
    match key {
        "ansible.posix.authorized_key" => return Some("authorized_key"),
        "ansible.posix.sysctl" => return Some("sysctl"),
        "ansible.posix.mount" => return Some("mount"),
        "community.general.modprobe" => return Some("modprobe"),
        "community.general.pam_limits" => return Some("pam_limits"),
        _ => {}
    }
    if key.contains('.') { None } else { Some(key) }
}

/// One argument: its value and where it is written.
struct Arg {
    name: String,
    value: Value,
    line: usize,
    column: usize,
}

/// A module's arguments, taken one by one; what is left at the end is unsupported.
pub struct Args<'p> {
    module: String,
    items: Vec<Arg>,
    /// Words of a free-form line that are no `k=v` (the command itself for command and shell).
    raw: Option<(String, usize, usize)>,
    p: &'p mut Problems,
    at: (usize, usize),
}

impl<'p> Args<'p> {
    /// Arguments as a mapping, a free-form line, or both (`args:` beside a line). `raw_keys`:
    /// for command and shell, the only `k=v` words a line may carry.
    fn new(p: &'p mut Problems, module: &str, node: &Node, extra: Option<&Node>, raw_keys: Option<&[&str]>) -> Self {
        let mut a = Args { module: module.to_string(), items: vec![], raw: None, p, at: (node.line, node.column) };
        for n in [Some(node), extra].into_iter().flatten() {
            match &n.kind {
                Kind::Map(m) => {
                    for (k, v) in m {
                        a.items.push(Arg { name: k.name.clone(), value: v.to_value(), line: k.line, column: k.column });
                    }
                }
                Kind::Scalar(Value::Null) => {}
                Kind::Scalar(Value::String(s)) => {
                    let (kv, raw) = parse_kv(s, raw_keys);
                    // Each `k=` where it is written, when the line is the node's own line.
                    let line_text = p_source_line(a.p, n.line);
                    for (k, v) in kv {
                        let column = line_text
                            .as_deref()
                            .and_then(|t| {
                                t.char_indices()
                                    .skip(n.column.saturating_sub(1))
                                    .find(|(i, _)| t[*i..].starts_with(&format!("{k}=")))
                            })
                            .map(|(i, _)| line_text.as_deref().unwrap_or_default()[..i].chars().count() + 1)
                            .unwrap_or(n.column);
                        a.items.push(Arg { name: k, value: Value::String(v), line: n.line, column });
                    }
                    if !raw.is_empty() {
                        a.raw = Some((raw, n.line, n.column));
                    }
                }
                Kind::Scalar(v) => a.raw = Some((v.to_string(), n.line, n.column)),
                Kind::Seq(_) => a.p.add(
                    n.line,
                    n.column,
                    format!("{module}: arguments are a mapping or a `k=v` line, not a list"),
                    "a list",
                    None,
                ),
            }
        }
        // `module_defaults` for the arguments the task does not give, the innermost first.
        let mut defaults = Vec::new();
        for layer in a.p.module_defaults.iter().rev() {
            if let Some(Value::Object(d)) = layer.get(module) {
                for (k, v) in d {
                    if !a.items.iter().any(|i| i.name == *k) && !defaults.iter().any(|i: &Arg| i.name == *k) {
                        defaults.push(Arg { name: k.clone(), value: v.clone(), line: a.at.0, column: a.at.1 });
                    }
                }
            }
        }
        a.items.extend(defaults);
        a
    }

    fn take(&mut self, names: &[&str]) -> Option<Arg> {
        let i = self.items.iter().position(|a| names.contains(&a.name.as_str()))?;
        Some(self.items.remove(i))
    }

    fn bad(&mut self, a: &Arg, msg: String, help: Option<String>) {
        self.p.add_len(a.line, a.column, a.name.len(), msg, "this argument", help);
    }

    /// Text (numbers and booleans as written: `owner: 0`).
    fn text(&mut self, names: &[&str]) -> Option<String> {
        let a = self.take(names)?;
        match &a.value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null => None,
            other => {
                let m = format!("{}: {} must be text, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A list of texts, as Ansible's `type='list'` reads one: a YAML list, or one text split at
    /// commas.
    fn texts(&mut self, names: &[&str]) -> Option<Vec<String>> {
        let a = self.take(names)?;
        match &a.value {
            Value::String(s) => Some(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()),
            Value::Array(l) if l.iter().all(|x| x.is_string()) => {
                Some(l.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            }
            other => {
                let m = format!("{}: {} must be a list of texts, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A boolean as Ansible reads one (`yes`, `no`, `true`, `1`, ...), or a template left to
    /// render.
    fn flag(&mut self, names: &[&str]) -> Option<Value> {
        let a = self.take(names)?;
        match &a.value {
            Value::Bool(b) => Some(json!(b)),
            Value::String(s) if s.contains("{{") => Some(json!(s)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "yes" | "true" | "on" | "1" | "y" | "t" => Some(json!(true)),
                "no" | "false" | "off" | "0" | "n" | "f" => Some(json!(false)),
                _ => {
                    let m = format!("{}: {} must be a boolean, not '{s}'", self.module, a.name);
                    self.bad(&a, m, None);
                    None
                }
            },
            Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => Some(json!(n.as_u64() == Some(1))),
            other => {
                let m = format!("{}: {} must be a boolean, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A literal boolean (where the native argument cannot be a template).
    fn bool_literal(&mut self, names: &[&str]) -> Option<bool> {
        let at =
            self.items.iter().find(|a| names.contains(&a.name.as_str())).map(|a| (a.line, a.column, a.name.clone()));
        match self.flag(names)? {
            Value::Bool(b) => Some(b),
            _ => {
                let (l, c, n) = at.unwrap_or_default();
                self.p.add_len(
                    l,
                    c,
                    n.len(),
                    format!("{}: {n} must be a literal boolean here (a template is not supported yet)", self.module),
                    "this argument",
                    None,
                );
                None
            }
        }
    }

    /// A number, or a template rendering to one.
    fn number(&mut self, names: &[&str]) -> Option<Value> {
        let a = self.take(names)?;
        match &a.value {
            Value::Number(n) if n.as_u64().is_some() => Some(a.value.clone()),
            Value::String(s) if s.contains("{{") => Some(json!(s)),
            Value::String(s) if s.trim().parse::<u64>().is_ok() => Some(json!(s.trim().parse::<u64>().ok())),
            other => {
                let m = format!("{}: {} must be a whole number, not {}", self.module, a.name, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// `mode:` as octal text. A YAML number is what Ansible reads it as: `0644` (YAML 1.1
    /// octal) is 0644, `644` is decimal 644 (octal 1204), as Ansible applies it.
    fn mode(&mut self) -> Option<String> {
        self.mode_of("mode")
    }

    /// A mode argument by its name, read as `mode` is.
    fn mode_of(&mut self, name: &str) -> Option<String> {
        let a = self.take(&[name])?;
        match &a.value {
            Value::Number(n) if n.as_u64().is_some() => Some(format!("{:o}", n.as_u64().unwrap_or_default())),
            Value::String(s) => Some(s.clone()),
            other => {
                let m = format!("{}: {name} must be octal text, not {}", self.module, kind_of(other));
                self.bad(&a, m, None);
                None
            }
        }
    }

    /// A value given as written.
    fn value(&mut self, names: &[&str]) -> Option<Value> {
        self.take(names).map(|a| a.value)
    }

    /// One of `allowed` (Ansible's value → the native one); anything else is a problem.
    fn choice(&mut self, names: &[&str], allowed: &[(&str, &str)], help: &str) -> Option<String> {
        let a = self.take(names)?;
        let text = match &a.value {
            Value::String(s) => s.clone(),
            Value::Null => return None,
            other => other.to_string(),
        };
        if let Some((_, native)) = allowed.iter().find(|(x, _)| *x == text) {
            return Some(native.to_string());
        }
        let m = format!("{}: {} '{text}' is not supported", self.module, a.name);
        self.bad(&a, m, Some(help.to_string()));
        None
    }

    /// Refuses an argument unless it has Ansible's default value (`backup: no`).
    fn default_only(&mut self, name: &str, default: Value, why: &str) {
        let Some(a) = self.take(&[name]) else { return };
        let same = match (&a.value, &default) {
            (Value::String(s), Value::Bool(b)) => {
                matches!(s.to_ascii_lowercase().as_str(), "yes" | "true" | "1") == *b
                    && matches!(s.to_ascii_lowercase().as_str(), "yes" | "true" | "1" | "no" | "false" | "0")
            }
            (v, d) => v == d,
        };
        if !same {
            let m = format!("{}: {} other than {default} is not supported", self.module, a.name);
            self.bad(&a, m, Some(why.to_string()));
        }
    }

    /// A required argument that is missing.
    fn missing(&mut self, what: &str) {
        let (l, c) = self.at;
        self.p.add(l, c, format!("{}: {what} is required", self.module), "in these arguments", None);
    }

    /// The free-form words, taken (command and shell only).
    fn take_raw(&mut self) -> Option<(String, usize, usize)> {
        self.raw.take()
    }

    /// Every argument not taken is unsupported: one problem each, naming what the module takes.
    fn finish(mut self, takes: &[&str]) {
        if let Some((raw, l, c)) = self.raw.take() {
            self.p.add(
                l,
                c,
                format!("{}: free-form text '{raw}' is not an argument", self.module),
                "not k=v",
                Some(format!("{} takes: {}", self.module, takes.join(", "))),
            );
        }
        for a in std::mem::take(&mut self.items) {
            let close = super::closest(&a.name, takes);
            let help = if close.is_empty() {
                format!("{} takes: {}", self.module, takes.join(", "))
            } else {
                format!("did you mean {}? {} takes: {}", close.join(", "), self.module, takes.join(", "))
            };
            let m = format!("{}: argument '{}' is not supported", self.module, a.name);
            self.bad(&a, m, Some(help));
        }
    }
}

/// The text of `line` of the file (1-based).
fn p_source_line(p: &Problems, line: usize) -> Option<String> {
    p.source.text.lines().nth(line.checked_sub(1)?).map(str::to_string)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Null => "empty",
    }
}

/// The template module's own arguments: its Jinja settings, `output_encoding`, `follow` and
/// `backup`.
fn template_args(a: &mut Args, out: &mut Map<String, Value>) {
    let mut syntax = Map::new();
    for k in ["trim_blocks", "lstrip_blocks"] {
        put(&mut syntax, k, a.bool_literal(&[k]));
    }
    for k in [
        "block_start_string",
        "block_end_string",
        "variable_start_string",
        "variable_end_string",
        "comment_start_string",
        "comment_end_string",
    ] {
        put(&mut syntax, k, a.text(&[k]));
    }
    // As Ansible's action: the escaped forms `\n`, `\r`, `\r\n` mean the characters.
    let at = a.items.iter().find(|x| x.name == "newline_sequence").map(|x| (x.line, x.column));
    if let Some(seq) = a.text(&["newline_sequence"]) {
        let seq = seq.replace("\\r", "\r").replace("\\n", "\n");
        if ["\n", "\r", "\r\n"].contains(&seq.as_str()) {
            syntax.insert("newline_sequence".into(), json!(seq));
        } else {
            let (l, c) = at.unwrap_or(a.at);
            a.p.add_len(
                l,
                c,
                16,
                "template: newline_sequence needs to be one of: \\n, \\r or \\r\\n".into(),
                "this argument",
                None,
            );
        }
    }
    if !syntax.is_empty() {
        out.insert("syntax".into(), Value::Object(syntax));
    }
    put(out, "output_encoding", a.text(&["output_encoding"]));
    put(out, "follow", a.bool_literal(&["follow"]));
    put(out, "backup", a.bool_literal(&["backup"]));
}

/// The command's vault secrets, for an `include_vars` file that is vault-encrypted, and the
/// names such files set (secret variables from then on).
pub struct Vaulted<'a> {
    pub vault: Option<&'a std::sync::Arc<crate::vault::Vault>>,
    pub names: &'a mut Vec<String>,
}

/// Sets `key` in `m` when `v` is given.
fn put(m: &mut Map<String, Value>, key: &str, v: Option<impl Into<Value>>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}

/// Translates the module `name` (a short name of `SUPPORTED`) with its arguments `node` (and
/// `args:`); `dirs`: where copy and template sources are found, the playbook's directory last.
pub fn translate(
    p: &mut Problems,
    name: &str,
    node: &Node,
    extra: Option<&Node>,
    dirs: &[PathBuf],
    vaulted: Vaulted<'_>,
) -> Option<Translated> {
    let dir = dirs.last().map(PathBuf::as_path).unwrap_or(Path::new("."));
    let mut fields = Map::new();
    let mut out = Map::new();
    let mut fails = None;
    let kind: &'static str = match name {
        "command" | "shell" => {
            // The only `k=v` words Ansible takes out of a command line (splitter.py's parse_kv
            // with check_raw); any other stays part of the command.
            let guard_keys: &[&str] = &["creates", "removes", "chdir", "executable", "warn", "stdin"];
            let mut a = Args::new(p, name, node, extra, Some(guard_keys));
            for k in ["chdir", "creates", "removes", "executable"] {
                put(&mut fields, k, a.text(&[k]));
            }
            // Ansible ends stdin with a newline unless stdin_add_newline is false.
            let newline = a.bool_literal(&["stdin_add_newline"]).unwrap_or(true);
            if a.bool_literal(&["strip_empty_ends"]) == Some(false) {
                fields.insert("strip_empty_ends".into(), json!(false));
            }
            if name == "command" && a.bool_literal(&["expand_argument_vars"]).unwrap_or(true) {
                fields.insert("expand_argument_vars".into(), json!(true));
            }
            // The option is the command module's: given to shell, the module's argument check
            // fails the task (with its words), refused unless the task may fail.
            let mut unsupported = None;
            if name == "shell" && a.bool_literal(&["expand_argument_vars"]).is_some() {
                unsupported = Some((
                    "Unsupported parameters for (shell) module: expand_argument_vars".to_string(),
                    "shell: expand_argument_vars is the command module's (a shell expands its own line)".to_string(),
                ));
            }
            put(&mut fields, "stdin", a.text(&["stdin"]).map(|s| if newline { format!("{s}\n") } else { s }));
            let cmd = a.text(&["cmd"]);
            let argv = a.value(&["argv"]);
            let raw = a.take_raw();
            // argv is command's only (shell takes a line).
            let all: &[&str] = &[
                "cmd",
                "argv",
                "chdir",
                "creates",
                "removes",
                "stdin",
                "stdin_add_newline",
                "executable",
                "expand_argument_vars",
                "strip_empty_ends",
            ];
            let takes: Vec<&str> = all.iter().copied().filter(|k| name == "command" || *k != "argv").collect();
            let takes = takes.as_slice();
            // A command missing or given twice fails the task on each host, as the module's
            // argument checks do (with its words): refused unless the task may fail.
            let mut fails = None;
            let line = match (raw, cmd, argv) {
                (Some((r, ..)), None, None) => Some(Value::String(r)),
                (None, Some(c), None) => Some(Value::String(c)),
                (None, None, Some(Value::Array(v))) if name == "command" => Some(Value::Array(v)),
                (None, None, None) => {
                    fails = Some((
                        "one of the following is required: _raw_params, cmd, argv".to_string(),
                        format!("{name}: the command (free form, cmd or argv) is required"),
                    ));
                    None
                }
                _ => {
                    fails = Some((
                        "parameters are mutually exclusive: _raw_params|cmd|argv".to_string(),
                        format!("{name}: give the command once (free form, cmd or argv)"),
                    ));
                    None
                }
            };
            a.finish(takes);
            let Some(line) = line else {
                return Some(Translated { kind: Some("command"), args: json!(["true"]), fields, fails });
            };
            if name == "shell" {
                return Some(Translated { kind: Some("shell"), args: line, fields, fails: unsupported });
            }
            // `command` runs no shell: the words are split as Ansible splits them (shlex), each
            // passed as one argument, so `>` or `|` mean themselves as in Ansible (`$HOME` and a
            // leading `~` are expanded on the host, as its expand_argument_vars does).
            let argv: Vec<Value> = match line {
                Value::Array(v) => v,
                Value::String(s) if !s.contains("{{") && !s.contains("{%") => match shlex::split(&s) {
                    Some(w) => w.into_iter().map(Value::String).collect(),
                    None => {
                        p.add(node.line, node.column, format!("command: unbalanced quotes in '{s}'"), "here", None);
                        return None;
                    }
                },
                Value::String(s) => split_args(&s).iter().map(|w| Value::String(unquote(w))).collect(),
                _ => return None,
            };
            return Some(Translated { kind: Some("command"), args: Value::Array(argv), fields, fails: None });
        }
        "copy" | "template" => {
            let mut a = Args::new(p, name, node, extra, None);
            // A source on the host itself: its path as written, nothing looked for here.
            let remote = name == "copy" && a.bool_literal(&["remote_src"]) == Some(true);
            let src = a.take(&["src"]);
            let dest = a.text(&["dest"]);
            let mode = a.mode();
            if name == "template" && mode.as_deref() == Some("preserve") {
                out.insert("preserve_mode".into(), json!(true));
            } else {
                put(&mut out, "mode", mode);
            }
            put(&mut out, "owner", a.text(&["owner"]));
            put(&mut out, "group", a.text(&["group"]));
            if name == "copy" {
                put(&mut out, "content", a.text(&["content"]));
                if a.bool_literal(&["backup"]) == Some(true) {
                    out.insert("backup".into(), json!(true));
                }
                put(&mut out, "directory_mode", a.mode_of("directory_mode"));
                if a.bool_literal(&["follow"]) == Some(true) {
                    out.insert("follow".into(), json!(true));
                }
                a.default_only("local_follow", json!(true), "a link in the source is copied as the file it points at");
            } else {
                template_args(&mut a, &mut out);
            }
            put(&mut out, "validate", a.text(&["validate"]));
            if remote && (out.contains_key("backup") || out.contains_key("validate")) {
                let (l, c) = a.at;
                a.p.add(l, c, "copy: backup and validate with remote_src are not supported yet".into(), "here", None);
            }
            if name == "copy" {
                if a.bool_literal(&["force"]) == Some(false) {
                    out.insert("force".into(), json!(false));
                }
            } else {
                a.default_only("force", json!(true), "copctl always puts the content in place");
            }
            let takes: &[&str] = if name == "copy" {
                &[
                    "src",
                    "content",
                    "dest",
                    "mode",
                    "owner",
                    "group",
                    "force",
                    "remote_src",
                    "backup",
                    "validate",
                    "directory_mode",
                    "follow",
                    "local_follow",
                ]
            } else {
                &[
                    "src",
                    "dest",
                    "mode",
                    "owner",
                    "group",
                    "backup",
                    "validate",
                    "follow",
                    "output_encoding",
                    "trim_blocks",
                    "lstrip_blocks",
                    "newline_sequence",
                    "block_start_string",
                    "block_end_string",
                    "variable_start_string",
                    "variable_end_string",
                    "comment_start_string",
                    "comment_end_string",
                ]
            };
            if let Some(src) = src {
                if let (Value::String(s), "template") = (&src.value, name) {
                    out.insert("template_path".into(), json!(s));
                }
                match &src.value {
                    Value::String(s) if remote => {
                        out.insert("src".into(), json!(s));
                        out.insert("remote_src".into(), json!(true));
                    }
                    Value::String(s) if s.contains("{{") || s.contains("{%") => {
                        // Known only when the task runs: an absolute path is used as it is, a
                        // relative one is looked for where Ansible looks (files/ or templates/
                        // of the role and the role itself, then of the playbook's directory),
                        // the first place named where it is nowhere (its error names that one).
                        let sub = if name == "copy" { "files" } else { "templates" };
                        let one = [dir.to_path_buf()];
                        let dirs = if dirs.is_empty() { &one[..] } else { dirs };
                        out.insert("src".into(), json!(searched_src(s, dirs, sub)));
                    }
                    Value::String(s) => {
                        let sub = if name == "copy" { "files" } else { "templates" };
                        let found = find_beside(dirs, sub, s)
                            .or_else(|| if name == "copy" { find_dir_beside(dirs, sub, s) } else { None });
                        match found {
                            Some(found) => {
                                out.insert("src".into(), json!(found));
                            }
                            None => a.p.add_len(
                                src.line,
                                src.column,
                                3,
                                format!("{name}: src '{s}' not found"),
                                "this file",
                                Some(match dirs {
                                    [_] => {
                                        format!("looked in {sub}/{s} and {s} beside the playbook ({})", dir.display())
                                    }
                                    _ => format!("looked in {sub}/{s} and {s} under {}", list_dirs(dirs)),
                                }),
                            ),
                        }
                    }
                    _ => a.p.add_len(src.line, src.column, 3, format!("{name}: src must be text"), "here", None),
                }
            } else if remote {
                let (l, c) = a.at;
                a.p.add(l, c, "copy: remote_src needs src, the file on the host".into(), "here", None);
            } else if name == "template" || !out.contains_key("content") {
                a.missing(if name == "template" { "src" } else { "src or content" });
            }
            match &dest {
                // Ansible's words: content is one file, which needs a file's name.
                Some(d) if d.ends_with('/') && name == "copy" && out.contains_key("content") => {
                    let (l, c) = a.at;
                    a.p.add(l, c, format!("{name}: can not use content with a dir as dest"), "here", None);
                }
                Some(d) => {
                    out.insert("dest".into(), json!(d));
                }
                None => a.missing("dest"),
            }
            a.finish(takes);
            if name == "copy" { "copy" } else { "template" }
        }
        "file" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["path", "dest", "name"]));
            put(&mut out, "src", a.text(&["src"]));
            match a.mode() {
                Some(m) if crate::steps::file::symbolic_for_chmod(&m).is_some() => {
                    out.insert("symbolic_mode".into(), json!(m));
                }
                m => put(&mut out, "mode", m),
            }
            put(&mut out, "owner", a.text(&["owner"]));
            put(&mut out, "group", a.text(&["group"]));
            let state = a.choice(
                &["state"],
                &[
                    ("file", "file"),
                    ("directory", "directory"),
                    ("absent", "absent"),
                    ("link", "link"),
                    ("hard", "hard"),
                    ("touch", "touch"),
                ],
                "state: file, directory, absent, link, hard or touch",
            );
            // Ansible's defaults where copctl's native ones differ (see steps/file.rs): force
            // off, follow on, and touch sets both times to now (changed on every run).
            out.insert("force".into(), json!(a.bool_literal(&["force"]).unwrap_or(false)));
            out.insert("follow".into(), json!(a.bool_literal(&["follow"]).unwrap_or(true)));
            let recurse = a.bool_literal(&["recurse"]);
            put(&mut out, "recurse", recurse);
            for k in ["modification_time", "access_time"] {
                let v = a.text(&[k]);
                let v = v.or_else(|| (state.as_deref() == Some("touch")).then(|| "now".to_string()));
                put(&mut out, k, v);
                put(&mut out, &format!("{k}_format"), a.text(&[&format!("{k}_format")]));
            }
            if out.contains_key("src") && !matches!(state.as_deref(), Some("link" | "hard") | None) {
                let (l, c) = a.at;
                a.p.add(l, c, "file: src option requires state to be 'link' or 'hard'".into(), "here", None);
            }
            if recurse == Some(true) && !matches!(state.as_deref(), Some("directory") | None) {
                let (l, c) = a.at;
                a.p.add(l, c, "file: recurse option requires state to be 'directory'".into(), "here", None);
            }
            if out.contains_key("src") && state.is_none() {
                out.insert("src_without_state".into(), json!(true));
            }
            if recurse == Some(true) && state.is_none() {
                out.insert("state".into(), json!("directory"));
            }
            put(&mut out, "state", state);
            put(&mut out, "attributes", a.text(&["attributes", "attr"]));
            // Ansible's own diff probe: any value asks for it.
            if a.take(&["_diff_peek"]).is_some() {
                out.insert("diff_peek".into(), json!(true));
            }
            if !out.contains_key("path") {
                fails = Some(("missing required arguments: path".to_string(), "file: path is required".to_string()));
            }
            a.finish(&[
                "path",
                "attributes",
                "state",
                "src",
                "mode",
                "owner",
                "group",
                "force",
                "follow",
                "recurse",
                "modification_time",
                "modification_time_format",
                "access_time",
                "access_time_format",
            ]);
            "file"
        }
        "lineinfile" | "blockinfile" => {
            let block = name == "blockinfile";
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["path", "dest", "destfile", "name"]));
            if block {
                put(&mut out, "block", a.text(&["block", "content"]));
                let marker = a.text(&["marker"]).unwrap_or_else(|| "# {mark} ANSIBLE MANAGED BLOCK".into());
                out.insert("marker".into(), json!(marker));
                put(&mut out, "marker_begin", a.text(&["marker_begin"]));
                put(&mut out, "marker_end", a.text(&["marker_end"]));
                put(&mut out, "append_newline", a.bool_literal(&["append_newline"]));
                put(&mut out, "prepend_newline", a.bool_literal(&["prepend_newline"]));
            } else {
                put(&mut out, "line", a.text(&["line", "value"]));
                put(&mut out, "regexp", a.text(&["regexp", "regex"]));
                put(&mut out, "search_string", a.text(&["search_string"]));
                put(&mut out, "backrefs", a.bool_literal(&["backrefs"]));
                put(&mut out, "firstmatch", a.bool_literal(&["firstmatch"]));
            }
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            put(&mut out, "insertafter", a.text(&["insertafter"]));
            put(&mut out, "insertbefore", a.text(&["insertbefore"]));
            put(&mut out, "create", a.bool_literal(&["create"]));
            put(&mut out, "mode", a.mode());
            put(&mut out, "backup", a.bool_literal(&["backup"]));
            put(&mut out, "validate", a.text(&["validate"]));
            if !out.contains_key("path") {
                a.missing("path");
            }
            let takes: &[&str] = if block {
                &[
                    "path",
                    "block",
                    "marker",
                    "marker_begin",
                    "marker_end",
                    "state",
                    "insertafter",
                    "insertbefore",
                    "create",
                    "mode",
                    "append_newline",
                    "prepend_newline",
                    "backup",
                    "validate",
                ]
            } else {
                &[
                    "path",
                    "line",
                    "regexp",
                    "search_string",
                    "state",
                    "insertafter",
                    "insertbefore",
                    "create",
                    "mode",
                    "backrefs",
                    "firstmatch",
                    "backup",
                    "validate",
                ]
            };
            a.finish(takes);
            if block { "block" } else { "line" }
        }
        "debug" => {
            let mut a = Args::new(p, name, node, extra, None);
            match a.value(&["msg"]) {
                Some(Value::String(s)) => {
                    out.insert("msg".into(), json!(s));
                }
                // A list or mapping of texts, each rendered (Ansible's multi-line report).
                Some(other) => {
                    out.insert("msg".into(), other);
                }
                None => {}
            }
            put(&mut out, "var", a.text(&["var"]));
            put(&mut out, "verbosity", a.number(&["verbosity"]));
            a.finish(&["msg", "var", "verbosity"]);
            "debug"
        }
        "set_fact" => {
            let mut a = Args::new(p, name, node, extra, None);
            // The fact is set as any set_fact sets it; Ansible's default (memory) fact cache
            // keeps nothing past the run either.
            let _ = a.flag(&["cacheable"]);
            for it in std::mem::take(&mut a.items) {
                out.insert(it.name, it.value);
            }
            a.finish(&[]);
            if out.is_empty() {
                p.add(node.line, node.column, "set_fact: no variable to set".into(), "here", None);
                return None;
            }
            "set_fact"
        }
        "assert" | "fail" => {
            // `assert: '{{ item }}'`: the whole argument mapping from a template, per item. A k=v
            // string (`fail: msg="{{ msg }}"`) is split before templating, as Ansible's parse_kv
            // does: the templates are values only.
            if let Kind::Scalar(Value::String(t)) = &node.kind
                && t.contains("{{")
                && !is_kv_only(t)
            {
                let Some(expr) = crate::template::single_expression(t) else {
                    let m = format!("{name}: arguments from a template ('{t}') are not supported");
                    let help = "the whole argument mapping may come from one expression ('{{ item }}'); \
                                else write the arguments as a mapping (that: ...)";
                    p.add(node.line, node.column, m, "a templated argument mapping", Some(help.into()));
                    return None;
                };
                // The task's own `args:` go over the mapping's when the task runs.
                let mut over = Map::new();
                if let Some(e) = extra {
                    let takes: &[&str] =
                        if name == "fail" { &["msg"] } else { &["that", "fail_msg", "msg", "success_msg", "quiet"] };
                    let mut a = Args::new(p, name, e, None, None);
                    let (known, unknown) = std::mem::take(&mut a.items)
                        .into_iter()
                        .partition::<Vec<_>, _>(|it| takes.contains(&it.name.as_str()));
                    over.extend(known.into_iter().map(|it| (it.name, it.value)));
                    a.items = unknown;
                    a.finish(takes);
                }
                out.insert("that".into(), json!([]));
                out.insert("args_from".into(), json!({"expr": expr.trim(), "over": over, "fail": name == "fail"}));
                return Some(Translated { kind: Some("assert"), args: Value::Object(out), fields, fails: None });
            }
            let mut a = Args::new(p, name, node, extra, None);
            if name == "fail" {
                let msg = a.text(&["msg"]).unwrap_or_else(|| "Failed as requested from task".into());
                a.finish(&["msg"]);
                out.insert("that".into(), json!(["false"]));
                out.insert("fail_msg".into(), json!(msg));
                return Some(Translated { kind: Some("assert"), args: Value::Object(out), fields, fails: None });
            }
            match a.value(&["that"]) {
                Some(Value::Array(v)) => {
                    out.insert("that".into(), Value::Array(v.into_iter().map(condition_text).collect()));
                }
                Some(v) => {
                    out.insert("that".into(), condition_text(v));
                }
                None => a.missing("that"),
            }
            // Ansible's messages by default; `quiet` only changes what its callback shows.
            out.insert("fail_msg".into(), json!(a.text(&["fail_msg", "msg"]).unwrap_or("Assertion failed".into())));
            out.insert("success_msg".into(), json!(a.text(&["success_msg"]).unwrap_or("All assertions passed".into())));
            a.flag(&["quiet"]);
            a.finish(&["that", "fail_msg", "msg", "success_msg", "quiet"]);
            "assert"
        }
        "service" | "systemd" | "systemd_service" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name", "service", "unit"]));
            put(
                &mut out,
                "state",
                a.choice(
                    &["state"],
                    &[
                        ("started", "started"),
                        ("stopped", "stopped"),
                        ("restarted", "restarted"),
                        ("reloaded", "reloaded"),
                    ],
                    "state: started, stopped, restarted or reloaded",
                ),
            );
            put(&mut out, "enabled", a.bool_literal(&["enabled"]));
            let mut takes = vec!["name", "state", "enabled"];
            if name != "service" {
                put(&mut out, "masked", a.bool_literal(&["masked"]));
                put(&mut out, "daemon_reload", a.bool_literal(&["daemon_reload", "daemon-reload"]));
                put(&mut out, "daemon_reexec", a.bool_literal(&["daemon_reexec", "daemon-reexec"]));
                takes.extend(["masked", "daemon_reload", "daemon_reexec", "scope"]);
                // The system manager's units: Ansible's default scope.
                a.choice(&["scope"], &[("system", "")], "scope: system (user and global are not supported yet)");
            }
            // Without a unit the module only reloads or re-executes systemd.
            let daemon_only = ["daemon_reload", "daemon_reexec"].iter().any(|k| out.get(*k) == Some(&json!(true)));
            if !out.contains_key("name") && !daemon_only {
                a.missing("name");
            }
            a.finish(&takes);
            "service"
        }
        "package" | "apt" | "dnf" | "yum" => {
            let mut a = Args::new(p, name, node, extra, None);
            match a.value(&["name", "pkg"]) {
                Some(Value::String(s)) if s.contains(',') && !s.contains("{{") => {
                    out.insert("name".into(), json!(s.split(',').map(str::trim).collect::<Vec<_>>()));
                }
                Some(Value::String(s)) => {
                    out.insert("name".into(), json!(s));
                }
                Some(Value::Array(v)) => {
                    out.insert("name".into(), Value::Array(v));
                }
                Some(_) => {
                    a.p.add(a.at.0, a.at.1, format!("{name}: name must be a package name or a list"), "here", None)
                }
                None => {}
            }
            put(
                &mut out,
                "state",
                a.choice(
                    &["state"],
                    &[
                        ("present", "present"),
                        ("installed", "present"),
                        ("absent", "absent"),
                        ("removed", "absent"),
                        ("latest", "latest"),
                    ],
                    "state: present (installed), absent (removed) or latest",
                ),
            );
            // Each manager's module takes `update_cache` (dnf's alias `expire-cache`, apt's
            // `update-cache`); the rest are apt's.
            let mut takes = vec!["name", "state", "update_cache"];
            put(&mut out, "update_cache", a.flag(&["update_cache", "update-cache", "expire-cache"]));
            if name == "apt" {
                for k in ["cache_valid_time", "update_cache_retries", "update_cache_retry_max_delay"] {
                    put(&mut out, k, a.number(&[k]));
                }
                takes.extend(["cache_valid_time", "update_cache_retries", "update_cache_retry_max_delay"]);
            }
            let updates = out.get("update_cache").is_some_and(|v| v != &json!(false))
                || out.get("cache_valid_time").is_some_and(|v| v != &json!(0));
            if !out.contains_key("name") && !updates {
                a.missing("name");
            }
            a.finish(&takes);
            "package"
        }
        "wait_for" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "port", a.number(&["port"]));
            put(&mut out, "host", a.text(&["host"]));
            put(&mut out, "path", a.text(&["path"]));
            put(&mut out, "search_regex", a.text(&["search_regex"]));
            put(&mut out, "timeout", a.number(&["timeout"]));
            put(&mut out, "interval", a.number(&["sleep"]));
            a.choice(&["state"], &[("started", ""), ("present", "")], "state: started (a port) or present (a path)");
            put(&mut out, "delay", a.number(&["delay"]));
            if !out.contains_key("port") && !out.contains_key("path") {
                a.p.add(
                    a.at.0,
                    a.at.1,
                    "wait_for: without port or path (a pause) is not supported yet".into(),
                    "here",
                    None,
                );
            }
            if out.contains_key("search_regex") && !out.contains_key("path") {
                a.p.add(
                    a.at.0,
                    a.at.1,
                    "wait_for: search_regex with a port is not supported yet (with path it is)".into(),
                    "here",
                    None,
                );
            }
            a.finish(&["port", "host", "path", "search_regex", "timeout", "sleep", "state", "delay"]);
            "wait_for"
        }
        "mount" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["path", "name"]));
            let states: Vec<(&str, &str)> = crate::steps::mount::STATES.iter().map(|x| (*x, *x)).collect();
            let help = format!("state: {} (ephemeral is not supported yet)", crate::steps::mount::STATES.join(", "));
            put(&mut out, "state", a.choice(&["state"], &states, &help));
            for k in ["src", "fstype", "opts", "dump", "passno", "fstab"] {
                put(&mut out, k, a.text(&[k]));
            }
            for k in ["boot", "backup"] {
                put(&mut out, k, a.flag(&[k]));
            }
            a.default_only("opts_no_log", json!(false), "copctl shows mount options as it shows other arguments");
            for k in ["path", "state"] {
                if !out.contains_key(k) {
                    a.missing(k);
                }
            }
            a.finish(&["path", "state", "src", "fstype", "opts", "dump", "passno", "fstab", "boot", "backup"]);
            "mount"
        }
        "get_url" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "url", a.text(&["url"]));
            put(&mut out, "dest", a.text(&["dest"]));
            put(&mut out, "checksum", a.text(&["checksum"]));
            put(&mut out, "owner", a.text(&["owner"]));
            put(&mut out, "group", a.text(&["group"]));
            put(&mut out, "mode", a.mode());
            put(&mut out, "url_username", a.text(&["url_username", "username"]));
            put(&mut out, "url_password", a.text(&["url_password", "password"]));
            put(&mut out, "timeout", a.number(&["timeout"]));
            for k in ["force", "validate_certs"] {
                put(&mut out, k, a.flag(&[k]));
            }
            match a.value(&["headers"]) {
                Some(Value::Object(m)) => {
                    let h: Map<String, Value> = m
                        .into_iter()
                        .map(|(k, v)| {
                            (k, Value::String(v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                        })
                        .collect();
                    out.insert("headers".into(), Value::Object(h));
                }
                Some(other) => {
                    let (l, c) = a.at;
                    a.p.add(l, c, format!("get_url: headers must be a mapping, not {}", kind_of(&other)), "here", None);
                }
                None => {}
            }
            a.default_only("backup", json!(false), "copctl keeps no backup copies of downloads yet");
            a.default_only("use_proxy", json!(true), "the host's proxy variables apply");
            a.default_only("force_basic_auth", json!(false), "credentials are sent as curl sends them");
            a.default_only("decompress", json!(true), "copctl saves what the server sends");
            for k in ["url", "dest"] {
                if !out.contains_key(k) {
                    a.missing(k);
                }
            }
            a.finish(&[
                "url",
                "dest",
                "checksum",
                "owner",
                "group",
                "mode",
                "url_username",
                "url_password",
                "timeout",
                "force",
                "validate_certs",
                "headers",
            ]);
            "get_url"
        }
        "unarchive" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut fields, "creates", a.text(&["creates"]));
            let remote = match (a.bool_literal(&["remote_src"]), a.bool_literal(&["copy"])) {
                (Some(r), _) => r,
                (None, Some(copy)) => !copy,
                (None, None) => false,
            };
            if remote {
                out.insert("remote_src".into(), json!(true));
            }
            let src = a.text(&["src"]);
            put(&mut out, "dest", a.text(&["dest"]));
            put(&mut out, "owner", a.text(&["owner"]));
            put(&mut out, "group", a.text(&["group"]));
            put(&mut out, "mode", a.mode());
            for k in ["exclude", "include", "extra_opts"] {
                match a.value(&[k]) {
                    Some(Value::String(s)) => {
                        let items: Vec<&str> =
                            if k == "extra_opts" { vec![s.as_str()] } else { s.split(',').map(str::trim).collect() };
                        out.insert(k.into(), json!(items));
                    }
                    Some(Value::Array(v)) => {
                        out.insert(k.into(), Value::Array(v));
                    }
                    Some(other) => {
                        let (l, c) = a.at;
                        a.p.add(l, c, format!("unarchive: {k} must be a list, not {}", kind_of(&other)), "here", None);
                    }
                    None => {}
                }
            }
            for k in ["keep_newer", "list_files"] {
                put(&mut out, k, a.flag(&[k]));
            }
            a.default_only("validate_certs", json!(true), "copctl does not download archives");
            a.default_only("decrypt", json!(true), "copctl copies archives as they are");
            match (&src, remote) {
                (Some(s), true) => {
                    out.insert("src".into(), json!(s));
                }
                (Some(s), false) if s.contains("://") => {
                    let (l, c) = a.at;
                    a.p.add(l, c, format!("unarchive: a URL as src ('{s}') is not supported yet"), "here", None);
                }
                (Some(s), false) if s.contains("{{") || s.contains("{%") => {
                    let (l, c) = a.at;
                    a.p.add(
                        l,
                        c,
                        format!("unarchive: a templated src ('{s}') from the bastion is not supported yet"),
                        "here",
                        None,
                    );
                }
                (Some(s), false) => match find_beside(dirs, "files", s) {
                    Some(found) => {
                        out.insert("src".into(), json!(found));
                    }
                    None => {
                        let (l, c) = a.at;
                        let help = format!("looked in files/{s} and {s} under {}", list_dirs(dirs));
                        a.p.add(l, c, format!("unarchive: src '{s}' not found"), "here", Some(help));
                    }
                },
                (None, _) => a.missing("src"),
            }
            if !out.contains_key("dest") {
                a.missing("dest");
            }
            a.finish(&[
                "src",
                "dest",
                "remote_src",
                "copy",
                "creates",
                "owner",
                "group",
                "mode",
                "exclude",
                "include",
                "extra_opts",
                "keep_newer",
                "list_files",
            ]);
            "unarchive"
        }
        "script" => {
            // The free form is the script and its arguments, with Ansible's k=v words taken out.
            let keys: &[&str] = &["creates", "removes", "chdir", "executable", "cmd"];
            let mut a = Args::new(p, name, node, extra, Some(keys));
            for k in ["chdir", "creates", "removes"] {
                put(&mut fields, k, a.text(&[k]));
            }
            put(&mut out, "executable", a.text(&["executable"]));
            let line = match (a.take_raw(), a.text(&["cmd"])) {
                (Some((r, ..)), None) => Some(r),
                (None, Some(c)) => Some(c),
                (None, None) => {
                    a.missing("the script (free form or cmd)");
                    None
                }
                _ => {
                    let (l, c) = a.at;
                    a.p.add(l, c, "script: give the script once (free form or cmd)".into(), "here", None);
                    None
                }
            };
            a.finish(&["cmd", "creates", "removes", "chdir", "executable"]);
            let line = line?;
            let line = line.trim();
            let (script, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let script = unquote(script);
            if script.contains("{{") || script.contains("{%") {
                p.add(
                    node.line,
                    node.column,
                    format!("script: a templated script name ('{script}') is not supported yet"),
                    "here",
                    None,
                );
                return None;
            }
            match find_beside(dirs, "files", &script) {
                Some(found) => {
                    out.insert("src".into(), json!(found));
                }
                None => {
                    p.add(
                        node.line,
                        node.column,
                        format!("script: '{script}' not found"),
                        "here",
                        Some(format!("looked in files/{script} and {script} under {}", list_dirs(dirs))),
                    );
                    return None;
                }
            }
            out.insert("args".into(), json!(args.trim()));
            "script"
        }
        "fetch" => {
            let mut a = Args::new(p, name, node, extra, None);
            let src = a.text(&["src"]);
            let dest = a.text(&["dest"]);
            let flat = a.bool_literal(&["flat"]).unwrap_or(false);
            a.default_only("fail_on_missing", json!(true), "copctl always fails on a missing file");
            a.default_only("validate_checksum", json!(true), "copctl always compares what it fetched");
            match (&src, &dest) {
                (Some(s), Some(d)) if d.contains("{{") || d.contains("{%") => {
                    // Known only when the task runs: relative to the playbook's directory, as
                    // Ansible takes it, unless absolute.
                    let lit = |t: &str| serde_json::to_string(t).expect("a string");
                    let mut t = format!(
                        "{{% set copctl_dest %}}{d}{{% endset %}}{{% set copctl_dest = copctl_dest if copctl_dest is \
                         startingwith('/') else {} ~ copctl_dest %}}",
                        lit(&format!("{}/", dir.display()))
                    );
                    if !flat {
                        let tail = format!("/{}", s.trim_start_matches('/'));
                        t.push_str(&format!(
                            "{{{{ copctl_dest.rstrip('/') }}}}/{{{{ inventory_hostname }}}}{{{{ {} }}}}",
                            lit(&tail)
                        ));
                    } else {
                        let name = s.rsplit('/').next().unwrap_or(s);
                        t.push_str(&format!(
                            "{{{{ copctl_dest ~ {} if copctl_dest is endingwith('/') else copctl_dest }}}}",
                            lit(name)
                        ));
                    }
                    out.insert("src".into(), json!(s));
                    out.insert("dest".into(), json!(t));
                }
                (Some(s), Some(d)) => {
                    let base = if Path::new(d).is_absolute() { d.clone() } else { dir.join(d).display().to_string() };
                    // Ansible's layout: DEST/HOST/SRC, or DEST itself with flat (a trailing
                    // slash: the file's name in that directory).
                    let dest = if !flat {
                        format!(
                            "{}/{{{{ inventory_hostname }}}}/{}",
                            base.trim_end_matches('/'),
                            s.trim_start_matches('/')
                        )
                    } else if base.ends_with('/') {
                        format!("{base}{}", s.rsplit('/').next().unwrap_or(s))
                    } else {
                        base
                    };
                    out.insert("src".into(), json!(s));
                    out.insert("dest".into(), json!(dest));
                }
                (None, _) => a.missing("src"),
                (_, None) => a.missing("dest"),
            }
            a.finish(&["src", "dest", "flat"]);
            "fetch"
        }
        "authorized_key" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "user", a.text(&["user"]));
            put(&mut out, "key", a.text(&["key"]));
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            for (k, why) in [("user", "user"), ("key", "key")] {
                if !out.contains_key(k) {
                    a.missing(why);
                }
            }
            a.finish(&["user", "key", "state"]);
            "authorized_key"
        }
        "reboot" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "msg", a.text(&["msg"]));
            for (k, native) in [
                ("reboot_timeout", "timeout"),
                ("pre_reboot_delay", "pre_reboot_delay"),
                ("post_reboot_delay", "post_reboot_delay"),
            ] {
                match a.number(&[k]) {
                    Some(v) if v.as_u64().is_some() => put(&mut out, native, v.as_u64()),
                    Some(_) => {
                        let (l, c) = a.at;
                        a.p.add(
                            l,
                            c,
                            format!("reboot: {k} from a template is not supported yet"),
                            "here",
                            Some("give the number of seconds".into()),
                        );
                    }
                    None => {}
                }
            }
            put(&mut out, "test_command", a.text(&["test_command"]));
            a.finish(&["reboot_timeout", "msg", "pre_reboot_delay", "post_reboot_delay", "test_command"]);
            "reboot"
        }
        "tempfile" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("file", "file"), ("directory", "directory")], "state: file or directory"),
            );
            for k in ["path", "prefix", "suffix"] {
                put(&mut out, k, a.text(&[k]));
            }
            a.finish(&["state", "path", "prefix", "suffix"]);
            "tempfile"
        }
        "pause" => {
            let mut a = Args::new(p, name, node, extra, None);
            let seconds = a.number(&["seconds"]);
            let minutes = a.number(&["minutes"]);
            if seconds.is_some() && minutes.is_some() {
                let (l, c) = a.at;
                a.p.add(l, c, "pause: parameters are mutually exclusive: minutes|seconds".into(), "here", None);
            }
            if seconds.is_none() && minutes.is_none() {
                let (l, c) = a.at;
                a.p.add(
                    l,
                    c,
                    "pause: waiting for a key press (no seconds or minutes) is not supported".into(),
                    "here",
                    Some("copctl runs without a terminal to answer a prompt: give seconds or minutes".into()),
                );
            }
            put(&mut out, "seconds", seconds);
            put(&mut out, "minutes", minutes);
            put(&mut out, "prompt", a.text(&["prompt"]));
            put(&mut out, "echo", a.bool_literal(&["echo"]));
            a.finish(&["seconds", "minutes", "prompt", "echo"]);
            "pause"
        }
        "ping" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "data", a.text(&["data"]));
            a.finish(&["data"]);
            "ping"
        }
        "raw" => {
            // What raw runs is the line itself, through the login shell: copctl's shell kind
            // runs it the same way, changed as raw always is.
            let mut a = Args::new(p, name, node, extra, Some(&["executable"]));
            if let Some(x) = a.take(&["executable"]) {
                let m = "raw: executable is not supported".to_string();
                a.bad(&x, m, Some("copctl runs raw lines with the login shell".into()));
            }
            let line = a.take_raw();
            a.finish(&[]);
            let Some((line, ..)) = line else {
                p.add(node.line, node.column, "raw: the command is required".into(), "here", None);
                return None;
            };
            return Some(Translated { kind: Some("shell"), args: json!(line), fields, fails: None });
        }
        "replace" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["path", "dest", "destfile", "name"]));
            put(&mut out, "regexp", a.text(&["regexp"]));
            put(&mut out, "replace", a.text(&["replace"]));
            put(&mut out, "after", a.text(&["after"]));
            put(&mut out, "before", a.text(&["before"]));
            put(&mut out, "mode", a.mode());
            put(&mut out, "backup", a.bool_literal(&["backup"]));
            put(&mut out, "validate", a.text(&["validate"]));
            a.default_only("encoding", json!("utf-8"), "copctl edits UTF-8 text");
            for k in ["path", "regexp"] {
                if !out.contains_key(k) {
                    a.missing(k);
                }
            }
            a.finish(&["path", "regexp", "replace", "after", "before", "mode", "backup", "validate"]);
            "replace"
        }
        "user" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name", "user"]));
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            for k in ["uid", "group", "comment", "home", "shell", "password"] {
                put(&mut out, k, a.text(&[k]));
            }
            match a.value(&["groups"]) {
                Some(Value::Null) | None => {}
                Some(v @ (Value::String(_) | Value::Array(_))) => {
                    out.insert("groups".into(), v);
                }
                Some(other) => {
                    let (l, c) = a.at;
                    a.p.add(
                        l,
                        c,
                        format!("user: groups must be a list or text, not {}", kind_of(&other)),
                        "here",
                        None,
                    );
                }
            }
            put(
                &mut out,
                "update_password",
                a.choice(
                    &["update_password"],
                    &[("always", "always"), ("on_create", "on_create")],
                    "always or on_create",
                ),
            );
            for k in ["append", "system", "remove", "force"] {
                put(&mut out, k, a.flag(&[k]));
            }
            put(&mut out, "create_home", a.flag(&["create_home", "createhome"]));
            a.default_only("non_unique", json!(false), "copctl creates accounts with unique uids");
            a.default_only("local", json!(false), "copctl manages accounts with useradd/usermod");
            a.default_only("move_home", json!(false), "copctl does not move home directories yet");
            a.default_only("generate_ssh_key", json!(false), "use a command task for ssh-keygen");
            if !out.contains_key("name") {
                a.missing("name");
            }
            a.finish(&[
                "name",
                "state",
                "uid",
                "group",
                "groups",
                "append",
                "comment",
                "home",
                "shell",
                "password",
                "update_password",
                "system",
                "create_home",
                "remove",
                "force",
            ]);
            "user"
        }
        "group" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name"]));
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            put(&mut out, "gid", a.text(&["gid"]));
            put(&mut out, "system", a.flag(&["system"]));
            a.default_only("non_unique", json!(false), "copctl creates groups with unique gids");
            a.default_only("local", json!(false), "copctl manages groups with groupadd/groupmod");
            if !out.contains_key("name") {
                a.missing("name");
            }
            a.finish(&["name", "state", "gid", "system"]);
            "group"
        }
        "include_vars" => {
            // Read when the playbook is loaded and set as facts (Ansible's include_vars sits
            // just below set_fact in its precedence): the file must be named literally.
            let mut a = Args::new(p, name, node, extra, None);
            let file = a.take_raw().map(|(r, ..)| r).or_else(|| a.text(&["file", "_raw_params"]));
            let under = a.text(&["name"]);
            let dir = a.text(&["dir"]);
            let depth = a.number(&["depth"]).and_then(|d| d.as_u64()).unwrap_or(0);
            let matching = a.text(&["files_matching"]);
            let ignore = a.texts(&["ignore_files"]).unwrap_or_default();
            let extensions =
                a.texts(&["extensions"]).unwrap_or_else(|| ["yaml", "yml", "json"].map(String::from).to_vec());
            let ignore_unknown = a.bool_literal(&["ignore_unknown_extensions"]).unwrap_or(false);
            a.finish(&[
                "file",
                "name",
                "dir",
                "depth",
                "files_matching",
                "ignore_files",
                "extensions",
                "ignore_unknown_extensions",
            ]);
            let paths: Vec<(String, PathBuf)> = match (file, dir) {
                (Some(_), Some(_)) => {
                    p.add(node.line, node.column, "include_vars: give file or dir, not both".into(), "here", None);
                    return None;
                }
                (None, None) => {
                    p.add(node.line, node.column, "include_vars: file or dir is required".into(), "here", None);
                    return None;
                }
                (Some(file), None) if file.contains("{{") || file.contains("{%") => {
                    // Decided per host when the step runs, among the files the template can give.
                    let search: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                    let files = templated_candidates(dirs, &file, vaulted);
                    let mut args = json!({"file": file, "search": search, "files": files});
                    if let Some(n) = under {
                        args["name"] = json!(n);
                    }
                    return Some(Translated { kind: Some("include_vars"), args, fields, fails: None });
                }
                (Some(file), None) => {
                    let candidates = if Path::new(&file).is_absolute() {
                        vec![std::path::PathBuf::from(&file)]
                    } else {
                        dirs.iter().flat_map(|d| [d.join("vars").join(&file), d.join(&file)]).collect()
                    };
                    let Some(path) = candidates.iter().find(|c| c.is_file()) else {
                        let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
                        p.add(
                            node.line,
                            node.column,
                            format!("include_vars: {file} not found"),
                            "here",
                            Some(format!("looked in {}", tried.join(", "))),
                        );
                        return None;
                    };
                    vec![(file, path.clone())]
                }
                (None, Some(d)) => {
                    let walk = DirWalk { depth, matching, ignore, extensions, ignore_unknown };
                    match vars_dir_files(dirs, &d, &walk) {
                        Ok(files) => files,
                        Err((m, help)) => {
                            p.add(node.line, node.column, format!("include_vars: {m}"), "here", help);
                            return None;
                        }
                    }
                }
            };
            // Each file's variables over the earlier files' (Ansible's update, file by file).
            let mut read = Map::new();
            for (file, path) in &paths {
                let source = match crate::error::read_source(path) {
                    Ok(s) => s,
                    Err(e) => {
                        p.errors.push(e);
                        return None;
                    }
                };
                let (source, secret) = match super::vars_source(vaulted.vault, path, source) {
                    Ok(s) => s,
                    Err(e) => {
                        let m = format!("include_vars: {file}: {e}");
                        p.add(node.line, node.column, m, "here", Some(super::VAULT_HELP.into()));
                        return None;
                    }
                };
                let vars = match crate::yaml::parse_ansible_vars::<Option<Map<String, Value>>>(&source) {
                    Ok(m) => m.unwrap_or_default(),
                    // The decrypted text is secret: no snippet of it in the message.
                    Err(_) if secret => {
                        let m = format!(
                            "include_vars: {file} decrypts to no mapping of variables (its text is not shown: it is secret)"
                        );
                        p.add(node.line, node.column, m, "here", None);
                        return None;
                    }
                    Err(e) => {
                        p.errors.push(e);
                        return None;
                    }
                };
                if secret {
                    vaulted.names.extend(vars.keys().cloned());
                    if let Some(n) = &under {
                        vaulted.names.push(n.clone());
                    }
                }
                read.extend(vars);
            }
            match under {
                Some(n) => {
                    out.insert(n, Value::Object(read));
                }
                None => out.extend(read),
            }
            if out.is_empty() {
                return Some(Translated { kind: None, args: Value::Null, fields, fails: None });
            }
            "set_fact"
        }
        "wait_for_connection" => {
            let mut a = Args::new(p, name, node, extra, None);
            for k in ["delay", "sleep", "timeout", "connect_timeout"] {
                put(&mut out, k, a.number(&[k]));
            }
            a.finish(&["delay", "sleep", "timeout", "connect_timeout"]);
            "wait_for_connection"
        }
        "pam_limits" => {
            let mut a = Args::new(p, name, node, extra, None);
            for k in ["domain", "value", "dest", "comment"] {
                put(&mut out, k, a.text(&[k]));
            }
            // A literal choice is checked now, a templated one when the step runs.
            let pick = |v: &[&'static str]| v.iter().map(|x| (*x, *x)).collect::<Vec<_>>();
            for (k, choices, help) in [
                ("limit_type", crate::steps::pam_limits::TYPES, "limit_type: soft, hard or -".to_string()),
                (
                    "limit_item",
                    crate::steps::pam_limits::ITEMS,
                    format!("limit_item: one of {}", crate::steps::pam_limits::ITEMS.join(", ")),
                ),
            ] {
                let templated =
                    a.items.iter().any(|x| x.name == k && x.value.as_str().is_some_and(|t| t.contains("{{")));
                if templated {
                    put(&mut out, k, a.text(&[k]));
                } else {
                    put(&mut out, k, a.choice(&[k], &pick(choices), &help));
                }
            }
            for k in ["use_max", "use_min", "backup"] {
                put(&mut out, k, a.flag(&[k]));
            }
            for k in ["domain", "limit_type", "limit_item", "value"] {
                if !out.contains_key(k) {
                    a.missing(k);
                }
            }
            a.finish(&[
                "domain",
                "limit_type",
                "limit_item",
                "value",
                "use_max",
                "use_min",
                "backup",
                "dest",
                "comment",
            ]);
            "pam_limits"
        }
        "hostname" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name"]));
            put(
                &mut out,
                "use",
                a.choice(
                    &["use"],
                    &[("systemd", "systemd"), ("debian", "debian")],
                    "copctl sets names with hostnamectl (use: systemd or debian) or, unset, as the host needs",
                ),
            );
            if !out.contains_key("name") {
                a.missing("name");
            }
            a.finish(&["name", "use"]);
            "hostname"
        }
        "modprobe" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name"]));
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            put(&mut out, "params", a.text(&["params"]));
            put(
                &mut out,
                "persistent",
                a.choice(
                    &["persistent"],
                    &[("disabled", "disabled"), ("present", "present"), ("absent", "absent")],
                    "persistent: disabled, present or absent",
                ),
            );
            if !out.contains_key("name") {
                a.missing("name");
            }
            a.finish(&["name", "state", "params", "persistent"]);
            "modprobe"
        }
        "sysctl" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "name", a.text(&["name", "key"]));
            put(&mut out, "value", a.value(&["value", "val"]));
            put(
                &mut out,
                "state",
                a.choice(&["state"], &[("present", "present"), ("absent", "absent")], "state: present or absent"),
            );
            for k in ["reload", "sysctl_set", "ignoreerrors"] {
                put(&mut out, k, a.flag(&[k]));
            }
            put(&mut out, "sysctl_file", a.text(&["sysctl_file"]));
            if !out.contains_key("name") {
                a.missing("name");
            }
            if out.get("state").and_then(Value::as_str) != Some("absent") && !out.contains_key("value") {
                a.missing("value (state is present)");
            }
            a.finish(&["name", "value", "state", "reload", "sysctl_set", "ignoreerrors", "sysctl_file"]);
            "sysctl"
        }
        "stat" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["path", "dest", "name"]));
            put(&mut out, "follow", a.flag(&["follow"]));
            put(&mut out, "get_checksum", a.flag(&["get_checksum"]));
            put(
                &mut out,
                "checksum_algorithm",
                a.choice(
                    &["checksum_algorithm", "checksum", "checksum_algo"],
                    &[
                        ("sha1", "sha1"),
                        ("sha224", "sha224"),
                        ("sha256", "sha256"),
                        ("sha384", "sha384"),
                        ("sha512", "sha512"),
                        ("md5", "md5"),
                    ],
                    "sha1, sha224, sha256, sha384, sha512 or md5",
                ),
            );
            put(&mut out, "get_mime", a.flag(&["get_mime", "mime", "mime_type", "mime-type"]));
            put(&mut out, "get_attributes", a.flag(&["get_attributes", "attr", "attributes"]));
            if !out.contains_key("path") {
                a.missing("path");
            }
            a.finish(&["path", "follow", "get_checksum", "checksum_algorithm", "get_mime", "get_attributes"]);
            "stat"
        }
        "getent" => {
            let mut a = Args::new(p, name, node, extra, None);
            for k in ["database", "key", "service", "split"] {
                put(&mut out, k, a.text(&[k]));
            }
            put(&mut out, "fail_key", a.flag(&["fail_key"]));
            if !out.contains_key("database") {
                a.missing("database");
            }
            a.finish(&["database", "key", "service", "split", "fail_key"]);
            "getent"
        }
        "find" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "paths", a.value(&["paths", "name", "path"]));
            put(&mut out, "patterns", a.value(&["patterns", "pattern"]));
            put(&mut out, "excludes", a.value(&["excludes", "exclude"]));
            for k in ["contains", "file_type", "age", "age_stamp", "size", "mode"] {
                put(&mut out, k, a.text(&[k]));
            }
            put(&mut out, "checksum_algorithm", a.text(&["checksum_algorithm", "checksum", "checksum_algo"]));
            for k in ["read_whole_file", "recurse", "hidden", "get_checksum", "use_regex", "exact_mode"] {
                put(&mut out, k, a.flag(&[k]));
            }
            for k in ["depth", "limit"] {
                put(&mut out, k, a.number(&[k]));
            }
            a.default_only(
                "follow",
                json!(false),
                "find with follow is not supported yet: links to directories are listed, not walked into",
            );
            if !out.contains_key("paths") {
                a.missing("paths");
            }
            a.finish(&[
                "paths",
                "patterns",
                "excludes",
                "contains",
                "read_whole_file",
                "file_type",
                "age",
                "age_stamp",
                "size",
                "recurse",
                "hidden",
                "follow",
                "get_checksum",
                "checksum_algorithm",
                "use_regex",
                "depth",
                "mode",
                "exact_mode",
                "limit",
            ]);
            "find"
        }
        "slurp" => {
            let mut a = Args::new(p, name, node, extra, None);
            put(&mut out, "path", a.text(&["src", "path"]));
            if !out.contains_key("path") {
                a.missing("src");
            }
            a.finish(&["src"]);
            out.insert("encoding".into(), json!("base64"));
            "slurp"
        }
        "setup" => {
            let a = Args::new(p, name, node, extra, None);
            a.finish(&[]);
            "setup"
        }
        "meta" => {
            let what = node.as_str().unwrap_or_default().trim().to_string();
            if what == "noop" {
                return Some(Translated { kind: None, args: Value::Null, fields, fails: None });
            }
            // A step of its own the engine knows by its module (task.rs), run quietly.
            if matches!(what.as_str(), "clear_host_errors" | "end_host" | "end_play") {
                return Some(Translated { kind: Some("assert"), args: json!({"that": ["true"]}), fields, fails: None });
            }
            let help = "copctl runs meta: noop, flush_handlers, clear_host_errors, end_host and end_play";
            p.add(node.line, node.column, format!("meta: {what} is not supported yet"), "here", Some(help.into()));
            return None;
        }
        _ => unreachable!("not in SUPPORTED: {name}"),
    };
    Some(Translated { kind: Some(kind), args: Value::Object(out), fields, fails })
}

/// A condition as text (`that: true` is the expression `true`).
fn condition_text(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(s),
        other => Value::String(other.to_string()),
    }
}

/// A copy or template source as Ansible finds it: under each of `dirs` (a role's, a task
/// file's, the playbook's), `files/` (`templates/`) first, then the directory itself; an
/// absolute path as it is.
/// A message and its help.
type Refusal = (String, Option<String>);

/// What `include_vars: dir` reads of a directory (its `depth`, `files_matching`,
/// `ignore_files`, `extensions`, `ignore_unknown_extensions`).
struct DirWalk {
    depth: u64,
    matching: Option<String>,
    ignore: Vec<String>,
    extensions: Vec<String>,
    ignore_unknown: bool,
}

/// The files `include_vars: dir` reads, in Ansible's order (the walk's directories sorted by
/// path, each one's files by name): the directory under `vars/` beside the role or playbook,
/// else beside it.
fn vars_dir_files(dirs: &[PathBuf], dir: &str, w: &DirWalk) -> Result<Vec<(String, PathBuf)>, Refusal> {
    let candidates: Vec<PathBuf> = if Path::new(dir).is_absolute() {
        vec![PathBuf::from(dir)]
    } else if dir.split('/').next() == Some("vars") {
        dirs.iter().map(|d| d.join(dir)).collect()
    } else {
        dirs.iter().flat_map(|d| [d.join("vars").join(dir), d.join(dir)]).collect()
    };
    let Some(root) = candidates.iter().find(|c| c.is_dir()) else {
        let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        return Err((format!("{dir} is not a directory"), Some(format!("looked in {}", tried.join(", ")))));
    };
    let matching = match &w.matching {
        Some(m) => Some(regex::Regex::new(m).map_err(|e| (format!("files_matching {m:?}: {e}"), None))?),
        None => None,
    };
    let mut walked: Vec<(PathBuf, u64)> = vec![(root.clone(), 1)];
    let mut i = 0;
    while i < walked.len() {
        let (d, level) = walked[i].clone();
        i += 1;
        if w.depth != 0 && level >= w.depth {
            continue;
        }
        let entries = std::fs::read_dir(&d).map_err(|e| (format!("{}: {e}", d.display()), None))?;
        for e in entries.flatten() {
            if e.path().is_dir() {
                walked.push((e.path(), level + 1));
            }
        }
    }
    // Python sorts the walk by the directories' paths as text.
    let mut dirs_sorted: Vec<PathBuf> = walked.into_iter().map(|(d, _)| d).collect();
    dirs_sorted.sort_by_key(|d| d.display().to_string());
    // Each of `ignore_files` is a pattern the name ends with (`re.search(pattern + '$')`).
    let ignore = w
        .ignore
        .iter()
        .map(|x| regex::Regex::new(&format!("(?:{x})$")).map_err(|e| (format!("ignore_files {x:?}: {e}"), None)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for d in dirs_sorted {
        let mut names: Vec<String> = std::fs::read_dir(&d)
            .map_err(|e| (format!("{}: {e}", d.display()), None))?
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            if ignore.iter().any(|r| r.is_match(&name)) || matching.as_ref().is_some_and(|m| !m.is_match(&name)) {
                continue;
            }
            let ext = Path::new(&name).extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
            if !w.extensions.contains(&ext) {
                if w.ignore_unknown {
                    continue;
                }
                return Err((
                    format!("{} does not have a valid extension: {}", d.join(&name).display(), w.extensions.join(", ")),
                    Some("ignore_unknown_extensions: true skips such files".into()),
                ));
            }
            let path = d.join(&name);
            out.push((path.display().to_string(), path));
        }
    }
    Ok(out)
}

/// A template giving the path of `src` (itself a template) when the task runs: as it is where
/// absolute, else the first of `dirs`' `sub`/SRC and SRC that exists (a file, or for files/ a
/// directory too), else the first of them.
fn searched_src(src: &str, dirs: &[PathBuf], sub: &str) -> String {
    let places: Vec<String> = dirs
        .iter()
        .flat_map(|d| [d.join(sub), d.clone()])
        .map(|d| std::path::absolute(&d).unwrap_or(d).display().to_string())
        .map(|d| serde_json::to_string(&format!("{}/", d.trim_end_matches('/'))).expect("a string"))
        .collect();
    let test = if sub == "files" { "is file or (p ~ copctl_src) is directory" } else { "is file" };
    let mut t = format!(
        "{{% set copctl_src %}}{src}{{% endset %}}{{% if copctl_src is startingwith('/') %}}{{{{ copctl_src }}}}"
    );
    for p in &places {
        t.push_str(&format!(
            "{{% elif ({p} ~ copctl_src) {} %}}{{{{ {p} ~ copctl_src }}}}",
            test.replace("p ~", &format!("{p} ~"))
        ));
    }
    t.push_str(&format!("{{% else %}}{{{{ {} ~ copctl_src }}}}{{% endif %}}", places[0]));
    t
}

fn find_beside(dirs: &[PathBuf], sub: &str, src: &str) -> Option<String> {
    if Path::new(src).is_absolute() {
        return Path::new(src).is_file().then(|| src.to_string());
    }
    dirs.iter()
        .flat_map(|dir| [dir.join(sub).join(src), dir.join(src)])
        .find(|p| p.is_file())
        .map(|p| std::path::absolute(&p).unwrap_or(p).display().to_string())
}

/// A directory `src` of copy, where find_beside looks for a file (a trailing `/` kept: it
/// means the directory's contents).
fn find_dir_beside(dirs: &[PathBuf], sub: &str, src: &str) -> Option<String> {
    let slash = if src.ends_with('/') { "/" } else { "" };
    if Path::new(src).is_absolute() {
        return Path::new(src).is_dir().then(|| src.to_string());
    }
    dirs.iter()
        .flat_map(|dir| [dir.join(sub).join(src), dir.join(src)])
        .find(|p| p.is_dir())
        .map(|p| format!("{}{slash}", std::path::absolute(&p).unwrap_or(p).display().to_string().trim_end_matches('/')))
}

fn list_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The variables files a templated include_vars name may give, read now: under each
/// directory's `vars/` (at any depth) and directly in it, each file whose path the template can
/// give (its `{{ ... }}` parts matching anything; under `vars/` with or without that prefix)
/// and that is a YAML or JSON mapping. Others are read if the step ever picks them.
pub(super) fn templated_candidates(dirs: &[PathBuf], template: &str, vaulted: Vaulted<'_>) -> Map<String, Value> {
    let parts = regex::Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}").expect("a valid pattern");
    let mut pattern = String::from("^");
    let mut last = 0;
    for m in parts.find_iter(template) {
        pattern.push_str(&regex::escape(&template[last..m.start()]));
        pattern.push_str(".*");
        last = m.end();
    }
    pattern.push_str(&regex::escape(&template[last..]));
    pattern.push('$');
    let Ok(re) = regex::Regex::new(&pattern) else { return Map::new() };
    fn walk(root: &Path, rel: &str, deep: bool, out: &mut Vec<(String, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let r = if rel.is_empty() {
                e.file_name().to_string_lossy().into_owned()
            } else {
                format!("{rel}/{}", e.file_name().to_string_lossy())
            };
            if !e.path().is_dir() {
                out.push((r, e.path()));
            } else if deep {
                walk(root, &r, deep, out);
            }
        }
    }
    let mut out = Map::new();
    for d in dirs {
        let (mut under_vars, mut beside) = (Vec::new(), Vec::new());
        walk(&d.join("vars"), "", true, &mut under_vars);
        walk(d, "", false, &mut beside);
        let named = under_vars
            .into_iter()
            .filter(|(rel, p)| {
                re.is_match(rel) || re.is_match(&format!("vars/{rel}")) || re.is_match(&p.display().to_string())
            })
            .chain(beside.into_iter().filter(|(rel, p)| re.is_match(rel) || re.is_match(&p.display().to_string())));
        for (_, path) in named {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !matches!(ext, "yml" | "yaml" | "json" | "") {
                continue;
            }
            // A vault-encrypted candidate is decrypted now (the step has no vault secrets when
            // it runs); one that cannot be read is left to fail if a host picks it.
            let Ok(source) = crate::error::read_source(&path) else { continue };
            let Ok((source, secret)) = super::vars_source(vaulted.vault, &path, source) else { continue };
            if let Ok(vars) = crate::yaml::parse_ansible_vars::<Option<Map<String, Value>>>(&source) {
                let vars = vars.unwrap_or_default();
                if secret {
                    vaulted.names.extend(vars.keys().cloned());
                }
                out.entry(path.display().to_string()).or_insert(Value::Object(vars));
            }
        }
    }
    out
}

/// Whether `text` is nothing but `key=value` words (its templates inside the values).
fn is_kv_only(text: &str) -> bool {
    let (kv, rest) = parse_kv(text, None);
    !kv.is_empty() && rest.is_empty()
}
