//! `Test`: one copctl run in a site and what it must print: the exit status (always checked,
//! 0 unless told), and stdout / stderr as whole texts, matched exactly or after `normalize`
//! (the one place where times, run ids and scratch paths are masked). Owns the expectations,
//! not the site (see site.rs).

use std::ffi::OsString;
use std::process::{Child, Output, Stdio};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::site::Site;

/// A site owned by a one-shot test, or borrowed from a test that runs copctl several times.
enum SiteRef<'a> {
    Owned(Box<Site>),
    Borrowed(&'a Site),
}

impl SiteRef<'_> {
    fn get(&self) -> &Site {
        match self {
            SiteRef::Owned(s) => s,
            SiteRef::Borrowed(s) => s,
        }
    }
}

#[derive(Debug, Clone)]
enum Expect {
    Exact(String),
    Normalized(String),
}

#[must_use = "a Test does nothing until .run()"]
pub struct Test<'a> {
    site: SiteRef<'a>,
    args: Vec<OsString>,
    vars: Vec<(OsString, OsString)>,
    status: i32,
    stdout: Option<Expect>,
    stderr: Option<Expect>,
}

impl Default for Test<'static> {
    fn default() -> Self {
        Test::new()
    }
}

impl Test<'static> {
    /// A test in a fresh, empty scratch site.
    pub fn new() -> Test<'static> {
        Test::owning(Site::new())
    }

    /// A test in the repository's own site (its inventory/, playbooks/ and templates/).
    pub fn repo() -> Test<'static> {
        Test::owning(Site::repo())
    }

    pub fn owning(site: Site) -> Test<'static> {
        Test::with(SiteRef::Owned(Box::new(site)))
    }
}

impl<'a> Test<'a> {
    pub fn on(site: &'a Site) -> Test<'a> {
        Test::with(SiteRef::Borrowed(site))
    }

    fn with(site: SiteRef<'a>) -> Test<'a> {
        Test { site, args: vec![], vars: vec![], status: 0, stdout: None, stderr: None }
    }

    pub fn site(&self) -> &Site {
        self.site.get()
    }

    // --- the site's files (written at once) ---

    pub fn inventory(self, text: &str) -> Self {
        self.write("inventory.ini", text)
    }

    /// env.yaml, the site's settings.
    pub fn env(self, text: &str) -> Self {
        self.write("env.yaml", text)
    }

    /// playbooks/NAME.yaml.
    pub fn playbook(self, name: &str, text: &str) -> Self {
        self.write(&format!("playbooks/{name}.yaml"), text)
    }

    /// templates/NAME.
    pub fn template(self, name: &str, text: &str) -> Self {
        self.write(&format!("templates/{name}"), text)
    }

    /// Any file of the site, relative to it (files/motd, vars.yaml, …).
    pub fn write(self, rel: &str, contents: impl AsRef<[u8]>) -> Self {
        self.site().write(rel, contents);
        self
    }

    // --- the command ---

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn arg(self, arg: impl Into<OsString>) -> Self {
        self.args([arg])
    }

    /// An environment variable of the copctl process (`env` is the site's env.yaml).
    pub fn env_var(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.push((key.into(), value.into()));
        self
    }

    // --- what it must do ---

    /// The exit status (0 when not given).
    pub fn status(mut self, code: i32) -> Self {
        self.status = code;
        self
    }

    /// The whole stdout, byte for byte.
    pub fn stdout(mut self, text: &str) -> Self {
        self.stdout = Some(Expect::Exact(text.into()));
        self
    }

    /// The whole stderr, byte for byte.
    pub fn stderr(mut self, text: &str) -> Self {
        self.stderr = Some(Expect::Exact(text.into()));
        self
    }

    /// The whole stdout after `normalize` (times, run ids, the site's path masked).
    pub fn stdout_normalized(mut self, text: &str) -> Self {
        self.stdout = Some(Expect::Normalized(text.into()));
        self
    }

    /// The whole stderr after `normalize`.
    pub fn stderr_normalized(mut self, text: &str) -> Self {
        self.stderr = Some(Expect::Normalized(text.into()));
        self
    }

    // --- running it ---

    /// Runs copctl and checks every expectation; the returned run holds what it printed.
    pub fn run(self) -> Ran<'a> {
        let o = self.command().output().expect("copctl runs");
        self.check(o)
    }

    /// Starts copctl (stdout and stderr captured) for a test that acts while it runs (a signal,
    /// a host going down); `Running::wait` checks the expectations.
    pub fn spawn(self) -> Running<'a> {
        let child = self.command().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("copctl starts");
        Running { child, test: self }
    }

    fn command(&self) -> std::process::Command {
        let mut c = self.site().command(&self.args);
        c.envs(self.vars.iter().map(|(k, v)| (k, v)));
        c
    }

    fn check(self, o: Output) -> Ran<'a> {
        let ran = Ran {
            status: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            site: self.site,
        };
        let what = format!("copctl {}", self.args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" "));
        let shown = format!("--- stdout\n{}--- stderr\n{}---", ran.stdout, ran.stderr);
        assert_eq!(ran.status, Some(self.status), "exit status of `{what}`\n{shown}");
        for (name, want, got) in [("stdout", &self.stdout, &ran.stdout), ("stderr", &self.stderr, &ran.stderr)] {
            match want {
                None => {}
                Some(Expect::Exact(want)) => {
                    assert!(got == want, "{name} of `{what}`\n--- expected\n{want}--- got\n{got}---\n{shown}")
                }
                Some(Expect::Normalized(want)) => {
                    let got = normalize(got, ran.site());
                    assert!(
                        &got == want,
                        "{name} of `{what}` (normalized)\n--- expected\n{want}--- got\n{got}---\n{shown}"
                    )
                }
            }
        }
        ran
    }
}

/// A copctl process started by `Test::spawn`.
pub struct Running<'a> {
    pub child: Child,
    test: Test<'a>,
}

impl<'a> Running<'a> {
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn wait(self) -> Ran<'a> {
        let o = self.child.wait_with_output().expect("copctl ends");
        self.test.check(o)
    }
}

/// What a run printed, once its expectations held; keeps a one-shot test's site alive.
pub struct Ran<'a> {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    site: SiteRef<'a>,
}

impl Ran<'_> {
    pub fn site(&self) -> &Site {
        self.site.get()
    }

    /// stdout as one JSON document (`--format json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// stdout's JSON lines (`--output json` events); other lines are skipped.
    pub fn events(&self) -> Vec<Value> {
        self.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// The run_end event's recap: host → its counts.
    pub fn recap(&self) -> serde_json::Map<String, Value> {
        self.events().iter().find(|e| e["event"] == "run_end").expect("a run_end event")["recap"]
            .as_object()
            .unwrap()
            .clone()
    }
}

/// What varies from one run to the next, masked: the site's scratch path → `[SITE]`, run ids
/// (`20260102-030405-678`) → `[RUN]`, start times (`2026-01-02 03:04:05`) → `[DATE]`, lab
/// addresses → `[ADDR]`, and durations (`0.12s`, with
/// the spaces that right-align them) → `[T]`.
pub fn normalize(text: &str, site: &Site) -> String {
    static RUN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d{8}-\d{6}-\d{3}\b").unwrap());
    // A run's local start time (`copctl runs`).
    static DATE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b").unwrap());
    static ADDR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b127\.0\.\d{1,3}\.\d{1,3}\b").unwrap());
    static TIME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"( *)\b\d+\.\d+s\b").unwrap());
    let text = text.replace(&site.dir().display().to_string(), "[SITE]");
    let text = RUN.replace_all(&text, "[RUN]");
    let text = DATE.replace_all(&text, "[DATE]");
    let text = ADDR.replace_all(&text, "[ADDR]");
    TIME.replace_all(&text, |c: &regex::Captures| if c[1].is_empty() { "[T]" } else { " [T]" }).into_owned()
}
