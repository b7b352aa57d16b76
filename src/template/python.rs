//! A site's own Python plugins, as Ansible runs them on its controller: the filters and tests
//! of `filter_plugins/*.py` and `test_plugins/*.py` (each file's `FilterModule().filters()`,
//! `TestModule().tests()`), and the lookups of `lookup_plugins/NAME.py` (`LookupModule.run`),
//! beside a playbook, in a role, or in ansible.cfg's plugin paths. copctl runs them in one
//! Python worker on the bastion (python_worker.py), started when a plugin is first needed and
//! kept for the command: a request a line, an answer a line, both JSON. Values cross as JSON
//! (what templates hold); a plugin's own imports of `ansible.*` need the Python Ansible runs
//! with: `COPCTL_PYTHON`, else the interpreter of `ansible-playbook` on PATH, else `python3`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};

const WORKER: &str = include_str!("python_worker.py");

/// Where a site's plugin files are looked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginDirs {
    /// Directories of filter plugin files (`filter_plugins/`, ansible.cfg's `filter_plugins`).
    pub filter: Vec<PathBuf>,
    /// Directories of test plugin files.
    pub test: Vec<PathBuf>,
    /// Directories of lookup plugin files, beyond those beside a task's playbook or role.
    pub lookup: Vec<PathBuf>,
}

impl PluginDirs {
    /// The plugin directories Ansible reads beside a playbook or in a role (`base`).
    pub fn beside(base: &Path) -> PluginDirs {
        PluginDirs {
            filter: vec![base.join("filter_plugins")],
            test: vec![base.join("test_plugins")],
            lookup: vec![base.join("lookup_plugins")],
        }
    }

    pub fn extend(&mut self, other: &PluginDirs) {
        for (mine, theirs) in
            [(&mut self.filter, &other.filter), (&mut self.test, &other.test), (&mut self.lookup, &other.lookup)]
        {
            for d in theirs {
                if !mine.contains(d) {
                    mine.push(d.clone());
                }
            }
        }
    }
}

/// The files of plugin directory `dir` Ansible loads: `*.py` not starting with `_`, by name.
pub fn plugin_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "py")
                && p.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('_'))
                && p.is_file()
        })
        .collect();
    files.sort();
    files
}

/// `path` relative to the working directory where it is under it, as a site names its files.
pub fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd).unwrap_or(path).display().to_string()
}

/// The Python a site's plugins run with.
fn interpreter() -> PathBuf {
    if let Some(p) = std::env::var_os("COPCTL_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    // The Python Ansible itself runs with: its plugins import `ansible`.
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let Ok(mut f) = std::fs::File::open(dir.join("ansible-playbook")) else { continue };
        let mut head = [0u8; 256];
        let n = f.read(&mut head).unwrap_or(0);
        let line = String::from_utf8_lossy(&head[..n]);
        let Some(shebang) = line.lines().next().and_then(|l| l.strip_prefix("#!")) else { continue };
        // Only a Python (a wrapper script's own interpreter is no use: bash would read the
        // worker as a shell script).
        let python = |p: &str| Path::new(p).file_name().is_some_and(|n| n.to_string_lossy().starts_with("python"));
        let mut words = shebang.split_whitespace();
        match (words.next(), words.next()) {
            (Some(env), Some(py)) if env.ends_with("/env") && python(py) => return PathBuf::from(py),
            (Some(py), _) if python(py) => return PathBuf::from(py),
            _ => {}
        }
    }
    PathBuf::from("python3")
}

/// How long a plugin may take to answer before copctl gives up on the worker.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(300);

struct Worker {
    child: Child,
    requests: ChildStdin,
    /// The worker's answers, a line each, read by a thread of their own (a wait with a limit).
    answers: std::sync::mpsc::Receiver<std::io::Result<String>>,
    /// The last of what the worker wrote to stderr, for an error when it dies.
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start(python: &Path) -> Result<Worker, String> {
        let mut child = Command::new(python)
            .args(["-c", WORKER])
            .env("PYTHONWARNINGS", "ignore")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!("cannot start {} for the site's Python plugins: {e} (set COPCTL_PYTHON)", python.display())
            })?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_reader = child.stderr.take().map(|err| {
            let keep = stderr.clone();
            // What a plugin prints is shown, as Ansible shows it (whatever its encoding: the
            // pipe is drained to its end, so the worker never blocks writing it); the tail is
            // kept for errors.
            std::thread::spawn(move || {
                let mut r = BufReader::new(err);
                let mut raw = Vec::new();
                while r.read_until(b'\n', &mut raw).is_ok_and(|n| n > 0) {
                    let line = String::from_utf8_lossy(&raw).trim_end_matches('\n').to_string();
                    raw.clear();
                    eprintln!("python plugin: {line}");
                    let mut k = keep.lock().unwrap_or_else(|p| p.into_inner());
                    k.push_str(&line);
                    k.push('\n');
                    if k.len() > 8192 {
                        let cut = k.len() - 4096;
                        let cut = (cut..k.len()).find(|&i| k.is_char_boundary(i)).unwrap_or(cut);
                        k.drain(..cut);
                    }
                }
            })
        });
        let requests = child.stdin.take().expect("piped stdin");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            loop {
                let mut line = String::new();
                match r.read_line(&mut line) {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(Ok(line)).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
        });
        Ok(Worker { child, requests, answers, stderr, stderr_reader })
    }

    /// The worker ended (or was ended): what it said last on stderr.
    fn last_words(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        self.stderr.lock().map(|s| s.trim().to_string()).unwrap_or_default()
    }

    fn ask(&mut self, request: &Json) -> Result<Json, String> {
        let mut line = serde_json::to_string(request).map_err(|e| e.to_string())?;
        line.push('\n');
        if self.requests.write_all(line.as_bytes()).and_then(|_| self.requests.flush()).is_err() {
            return Err(format!("the Python worker for the site's plugins stopped: {}", self.last_words()));
        }
        match self.answers.recv_timeout(ANSWER_WITHIN) {
            Ok(Ok(answer)) => serde_json::from_str(&answer).map_err(|e| format!("the Python worker answered {e}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let tail = self.last_words();
                Err(format!(
                    "the site's Python plugin gave no answer in {} s: its worker was stopped{}",
                    ANSWER_WITHIN.as_secs(),
                    if tail.is_empty() { String::new() } else { format!(" ({tail})") }
                ))
            }
            _ => Err(format!("the Python worker for the site's plugins stopped: {}", self.last_words())),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a plugin's answer was.
pub enum Answer {
    Value(Json),
    /// A lookup argument that did not render, which the plugin does not accept (the error).
    Undefined(String),
    Failed(String),
}

/// The worker of one command, started when first asked.
#[derive(Default)]
pub struct Python {
    worker: Mutex<Option<Worker>>,
    /// Plugin files already registered, so a directory read twice adds nothing.
    pub registered: Mutex<BTreeSet<PathBuf>>,
    /// ansible.cfg's lookup plugin directories.
    pub lookup_dirs: Mutex<Vec<PathBuf>>,
}

impl std::fmt::Debug for Python {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Python").field("lookup_dirs", &self.lookup_dirs).finish()
    }
}

impl Python {
    fn ask(&self, request: Json) -> Result<Answer, String> {
        let mut slot = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(Worker::start(&interpreter())?);
        }
        let answer = slot.as_mut().expect("started").ask(&request);
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                *slot = None;
                return Err(e);
            }
        };
        Ok(match (answer.get("ok"), answer.get("undefined"), answer.get("error")) {
            (Some(v), _, _) => Answer::Value(v.clone()),
            (_, Some(u), _) => Answer::Undefined(u.as_str().unwrap_or_default().to_string()),
            (_, _, e) => {
                let what = answer.get("type").and_then(Json::as_str).unwrap_or("Exception");
                Answer::Failed(format!("{} ({what})", e.and_then(Json::as_str).unwrap_or("no answer")))
            }
        })
    }

    /// The names of the filters (`kind` "filter") or tests ("test") of plugin file `path`.
    pub fn names(&self, kind: &str, path: &Path) -> Result<Vec<String>, String> {
        match self.ask(json!({"op": "names", "kind": kind, "path": path}))? {
            Answer::Value(Json::Array(names)) => {
                Ok(names.iter().filter_map(|n| n.as_str().map(String::from)).collect())
            }
            Answer::Failed(e) => Err(format!("{}: the site's {kind} plugin does not load: {e}", shown(path))),
            _ => Err(format!("{}: the site's {kind} plugin gives no {kind}s", shown(path))),
        }
    }

    /// Filter or test `name` of `path` called with `args` and `kwargs`.
    pub fn call(&self, kind: &str, path: &Path, name: &str, args: Vec<Json>, kwargs: Json) -> Result<Answer, String> {
        self.ask(json!({"op": kind, "path": path, "name": name, "args": args, "kwargs": kwargs}))
    }

    /// The payload Ansible sends a host for module `name` (file `path`) with `args`: a Python
    /// script for the host's `interpreter`, its arguments inside.
    #[allow(clippy::too_many_arguments)]
    pub fn module(
        &self,
        name: &str,
        path: &Path,
        args: Json,
        interpreter: &str,
        check: bool,
        diff: bool,
        no_log: bool,
    ) -> Result<Vec<u8>, String> {
        let request = json!({"op": "module", "name": name, "path": path, "args": args,
            "interpreter": interpreter, "check": check, "diff": diff, "no_log": no_log});
        match self.ask(request)? {
            Answer::Value(Json::String(b64)) => {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| e.to_string())
            }
            Answer::Failed(e) | Answer::Undefined(e) => Err(e),
            Answer::Value(other) => Err(format!("the Python worker built {other}")),
        }
    }

    /// Lookup plugin `path` run with `terms`, the task's `variables` and `kwargs`, relative to
    /// `basedir` (the playbook's or role's directory).
    pub fn lookup(
        &self,
        path: &Path,
        terms: Vec<Json>,
        variables: Json,
        kwargs: Json,
        basedir: Option<&str>,
    ) -> Result<Answer, String> {
        self.ask(json!({"op": "lookup", "path": path, "terms": terms, "variables": variables, "kwargs": kwargs, "basedir": basedir}))
    }
}
