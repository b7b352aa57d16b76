//! A site a test runs copctl in: a scratch directory (inventory.ini, env.yaml, playbooks/,
//! templates/, files/), the repository's own site, or either on lab hosts. Owns where copctl
//! runs and with what environment; what a run must print is `Test`'s business.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::lab::cop_site::CopSite;
use super::lab::{Lab, LabOptions};
use super::repo;

pub struct Site {
    root: PathBuf,
    /// Held for its Drop (the scratch directory goes with the site); `None` for the repository.
    _dir: Option<tempfile::TempDir>,
    lab: Option<Lab>,
}

impl Default for Site {
    fn default() -> Self {
        Site::new()
    }
}

impl Site {
    /// An empty scratch directory: copctl finds `-i inventory.ini` there.
    pub fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        Site { root: dir.path().to_path_buf(), _dir: Some(dir), lab: None }
    }

    /// The repository's own site (inventory/, playbooks/, templates/), with copctl's defaults.
    /// Shared by every test: never write into it.
    pub fn repo() -> Site {
        Site { root: repo(), _dir: None, lab: None }
    }

    /// A scratch site on `n` lab hosts: inventory.ini lists them under `[lab]`, copctl trusts
    /// their host keys and logs in with the lab's key, HOME is the site's `home/`.
    pub fn hosts(n: usize) -> Site {
        Site::hosts_with(n, LabOptions::default())
    }

    pub fn hosts_with(n: usize, opts: LabOptions) -> Site {
        let mut s = Site::new();
        let lab = Lab::start(n, opts);
        lab.write_inventory(&s.path("inventory.ini"), "");
        std::fs::create_dir_all(s.path("home")).unwrap();
        s.lab = Some(lab);
        s
    }

    /// The COP cluster under its real names (tests/lab/cop_site.rs): every double installed, the
    /// repository's env.yaml pointing at a bastion of RKE2 and NVIDIA artifacts.
    pub fn cop_cluster() -> Site {
        Site::cop_cluster_with(LabOptions::default())
    }

    /// The COP cluster, with `opts.sudo_user` logging in as that user and becoming root by sudo.
    pub fn cop_cluster_with(opts: LabOptions) -> Site {
        let mut s = Site::new();
        s.lab = Some(CopSite::start_with(&s.root, opts).lab);
        s
    }

    pub fn dir(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn lab(&self) -> &Lab {
        self.lab.as_ref().expect("a site on lab hosts (Site::hosts)")
    }

    pub fn lab_mut(&mut self) -> &mut Lab {
        self.lab.as_mut().expect("a site on lab hosts (Site::hosts)")
    }

    /// Writes a file of the site, making its directories.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Self {
        assert!(self._dir.is_some(), "the repository's site is shared: write into a Site::new() instead");
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// Changes a file of the site: `edit` gets its text and returns the new one.
    pub fn edit(&self, rel: &str, edit: impl FnOnce(String) -> String) -> &Self {
        self.write(rel, edit(self.read(rel)))
    }

    /// Copies tests/fixtures/NAME into the site, keeping what the site already has otherwise.
    pub fn fixture(&self, name: &str) -> &Self {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap().flatten() {
                if e.path().is_dir() {
                    copy(&e.path(), &to.join(e.file_name()));
                } else {
                    std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                }
            }
        }
        assert!(self._dir.is_some(), "the repository's site is shared: copy into a Site::new() instead");
        copy(&super::fixture(name), &self.root);
        self
    }

    /// `copctl ARGS` as a person would type it in the site. The site's inventory and the lab's
    /// known_hosts come through copctl's environment variables, so the arguments stay the test's
    /// own (an explicit `-i` wins); no agent, no colour, nothing from the caller's COPCTL_*.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut c = Command::new(env!("CARGO_BIN_EXE_copctl"));
        c.args(args)
            .current_dir(&self.root)
            .env("NO_COLOR", "1")
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("COPCTL_INVENTORY")
            .env_remove("COPCTL_ENV")
            .env_remove("COPCTL_KNOWN_HOSTS")
            // A site's own Python plugins run with the Python Ansible runs with here.
            .env("COPCTL_PYTHON", repo().join(".peers/venv/bin/python3"));
        if self._dir.is_some() {
            c.env("COPCTL_INVENTORY", "inventory.ini");
        }
        if let Some(lab) = &self.lab {
            c.env("COPCTL_KNOWN_HOSTS", &lab.known_hosts).env("HOME", self.path("home"));
        }
        c
    }

    /// `copctl run ARGS --output json`, which must exit `status`; `.events()`, `.recap()` read it.
    pub fn run_json(&self, args: &[&str], status: i32) -> super::Ran<'_> {
        self.test().arg("run").args(args).args(["--output", "json"]).status(status).run()
    }

    /// A test of one copctl run in this site (the site outlives it).
    pub fn test(&self) -> super::Test<'_> {
        super::Test::on(self)
    }
}
