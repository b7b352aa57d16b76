//! Helpers shared by the integration tests. New tests use the builder: a `Test` writes a scratch
//! site (or borrows a `Site`, optionally on lab hosts), runs copctl in it, and checks the exit
//! status (0 unless told) and the WHOLE stdout / stderr, exactly or after `normalize` (times,
//! run ids, scratch paths, lab addresses masked — the one place that knows them):
//!
//! ```ignore
//! Test::new()
//!     .inventory("[workers]\nw1\n")
//!     .playbook("site", "plays:\n  - name: p\n    hosts: all\n    steps: [{debug: {msg: hi}}]\n")
//!     .args(["plan", "site", "--limit", "wokers"])
//!     .status(1)
//!     .stderr("  x --limit 'wokers' matches no host in inventory.ini\n  help: did you mean: workers?\n")
//!     .run();
//! ```
//!
//! Several runs on one site (lab hosts, a cluster): `let site = Site::hosts(3); site.fixture("site");
//! let ran = site.test().args(["run", "x", "--output", "json"]).run();` then `ran.recap()`,
//! `ran.events()`, `site.lab().path(0, "/etc/x")`. Error tests pin the whole message (caret lines
//! included), never a fragment.
//!
//! Also here: the copctl binary and the repository, and the peers (ansible-core) installed by
//! scripts/peers-setup.sh.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod ansible;
mod argv_sampler;
pub mod cop;
#[path = "../lab/mod.rs"]
pub mod lab;
mod site;
mod test;

// Each test binary uses a part of these.
#[allow(unused_imports)]
pub use argv_sampler::ArgvSampler;
#[allow(unused_imports)]
pub use site::Site;
#[allow(unused_imports)]
pub use test::{Ran, Running, Test, normalize};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

/// Runs copctl with `args` in `dir` (the repository when `None`).
pub fn copctl(dir: Option<&Path>, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copctl"))
        .args(args)
        .current_dir(dir.map(Path::to_path_buf).unwrap_or_else(repo))
        .env("NO_COLOR", "1")
        .output()
        .expect("copctl runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The ansible-core venv. Missing peers are a failure, not a skip: run scripts/peers-setup.sh.
pub fn ansible_bin(tool: &str) -> PathBuf {
    let dir = std::env::var_os("COPCTL_PEERS_VENV").map(PathBuf::from).unwrap_or_else(|| repo().join(".peers/venv"));
    let bin = dir.join("bin").join(tool);
    assert!(
        bin.exists(),
        "{} not found: the differential tests compare copctl with Ansible itself; run scripts/peers-setup.sh \
         (or scripts/test.sh, which does it)",
        bin.display()
    );
    bin
}

pub fn ansible_cmd(tool: &str) -> Command {
    let mut c = Command::new(ansible_bin(tool));
    c.env("PYTHONHASHSEED", "0")
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "True")
        .env("ANSIBLE_LOCALHOST_WARNING", "False")
        .env("ANSIBLE_HOST_PATTERN_MISMATCH", "ignore")
        .env("ANSIBLE_NOCOLOR", "1");
    c
}

/// Runs copctl with extra environment variables (and without the caller's ssh-agent).
pub fn copctl_env(dir: Option<&Path>, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_copctl"));
    c.args(args)
        .current_dir(dir.map(Path::to_path_buf).unwrap_or_else(repo))
        .env("NO_COLOR", "1")
        .env_remove("SSH_AUTH_SOCK");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("copctl runs")
}

/// Every file below `dir` with its text (lossy), e.g. a run record to scan for secrets.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()).into_owned();
                out.push((e.path(), text));
            }
        }
    }
    out
}

/// `copctl ARGS` run from a site directory against lab hosts: its inventory.ini, that site's
/// HOME, no agent, no colour.
pub fn site_command(dir: &Path, known_hosts: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_copctl"));
    c.args(args)
        .args(["-i", "inventory.ini", "--known-hosts"])
        .arg(known_hosts)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env("NO_COLOR", "1")
        .env_remove("SSH_AUTH_SOCK");
    c
}

/// xorshift64*: deterministic (a failing case can be replayed from its seed), no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
