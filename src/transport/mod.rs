//! Talking to hosts: `HostConnection` over the two kinds of connection, `ssh` (russh) and
//! `local` (`ansible_connection=local`), wrapping commands for become, plus the per-run pool that
//! opens one connection per host, lazily and concurrently (bounded by `--forks`). Knows nothing
//! of playbooks. An enum, not a trait: the kinds are a closed set the inventory picks, every caller
//! holds a `HostConnection`, and the two differ (SSH alone has SFTP `lstat`, owners, stdin streams).

pub mod known_content;
pub mod known_hosts;
mod local;
pub mod spec;
pub mod ssh;
pub mod sudo;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OnceCell, Semaphore};
use tokio::task::{JoinError, JoinSet};

pub use known_hosts::{HostKeyFiles, HostKeyPolicy, KnownHosts};
pub use local::LocalConnection;
pub use spec::{ConnectionKind, HostSpec, SshConfigFile, check_connection_vars};
pub use ssh::{SshConnection, SshOptions, StdinSource};

#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    #[error("{host}: unreachable: {reason}")]
    Unreachable { host: String, reason: String, transient: bool },
    #[error(
        "{host}: the host key has changed (now {fingerprint}); refusing to connect. If the host was reinstalled, \
         remove line {line} of {} (`ssh-keygen -R '{entry}' -f {}`)",
        file.display(),
        file.display()
    )]
    HostKeyChanged { host: String, file: PathBuf, line: usize, fingerprint: String, entry: String },
    #[error(
        "{host}: unknown host key {fingerprint} and --host-key-checking strict; add it to {} or use accept-new",
        file.display()
    )]
    HostKeyUnknown { host: String, file: PathBuf, fingerprint: String },
    #[error(
        "{host}: the host key {fingerprint} is marked @revoked at {}:{line}; refusing to connect \
         (whatever --host-key-checking says). Record the host's new key only once you have checked it \
         out of band",
        file.display()
    )]
    HostKeyRevoked { host: String, file: PathBuf, line: usize, fingerprint: String },
    #[error(
        "{host}: authentication failed for {user}@{address}; tried: {}. Install a key with `copctl ssh-copy-id {host}` \
         or set ansible_ssh_private_key_file",
        if tried.is_empty() { "no keys found (ssh-agent, ~/.ssh/id_ed25519, id_ecdsa, id_rsa)".to_string() } else { tried.join(", ") }
    )]
    AuthFailed { host: String, user: String, address: String, tried: Vec<String> },
    #[error("{host}: command timed out after {}s", after.as_secs())]
    Timeout { host: String, after: Duration },
    #[error("{host}: {reason}")]
    Remote { host: String, reason: String },
    #[error("{reason}")]
    Local { reason: String },
}

impl TransportError {
    /// Ansible's "unreachable": the host could not be reached or logged into.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            TransportError::Unreachable { .. }
                | TransportError::HostKeyChanged { .. }
                | TransportError::HostKeyUnknown { .. }
                | TransportError::HostKeyRevoked { .. }
                | TransportError::AuthFailed { .. }
        )
    }
}

#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    /// Exit status; `None` when the command was killed by a signal.
    pub status: Option<u32>,
    pub signal: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }
}

/// What `lstat` found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInfo {
    pub kind: PathKind,
    /// Permission bits (with setuid/setgid/sticky).
    pub mode: u32,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    /// A link's target.
    pub link: Option<String>,
    /// Modification time, whole seconds since the epoch on the host's clock.
    pub mtime: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    File,
    Directory,
    Link,
    Other,
}

/// What `put` uploads (cheap to clone but for `Bytes`).
#[derive(Debug, Clone)]
pub enum PutSource {
    Bytes(Vec<u8>),
    /// Bytes every host shares (a small `copy` source, read once per run).
    Shared(Arc<[u8]>),
    File(PathBuf),
    /// A file whose length and sha256 are known (a `copy` source read once per run): streamed
    /// without hashing it again; the host checks what it got against that digest.
    Digested {
        path: PathBuf,
        len: u64,
        sha256: String,
    },
}

/// A command to run.
#[derive(Debug, Clone, Copy)]
pub struct ExecRequest<'a> {
    pub command: &'a str,
    pub stdin: Option<&'a [u8]>,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub enum Connection {
    Ssh(Arc<SshConnection>),
    Local(LocalConnection),
}

/// Random hex digits: a tag no script prints by chance (shell output markers, temp file names).
pub(crate) fn random_hex() -> String {
    let mut b = [0u8; 12];
    if getrandom::fill(&mut b).is_err() {
        // No entropy source: the time and pid still make a tag no script prints by chance.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return format!("{:x}{:x}", t.as_nanos(), std::process::id());
    }
    hex::encode(b)
}

/// A connection with the host's spec (for become).
#[derive(Debug, Clone)]
pub struct HostConnection {
    pub spec: Arc<HostSpec>,
    pub conn: Connection,
    /// Variables every command of one step sees (Ansible's task `environment`, which a module's
    /// process gets): exported at the start of each script, inside become.
    pub env: Arc<[(String, String)]>,
}

impl HostConnection {
    /// This connection for one step: `become` (the task's or play's keyword: on or off, where
    /// the inventory does not decide for the host), `become_user` (a task's or play's, over the
    /// host's become user: sudo or su to it, with the host's become password and method) and
    /// `env` on each command.
    pub fn for_step(
        &self,
        r#become: Option<bool>,
        become_user: Option<&str>,
        become_method: Option<&str>,
        env: &[(String, String)],
    ) -> HostConnection {
        let mut c = self.clone();
        let on = match r#become {
            Some(b) if !self.spec.become_fixed => b,
            _ => self.spec.r#become.is_some(),
        };
        let settings = &self.spec.become_settings;
        let want = on.then(|| spec::Become {
            user: become_user
                .map(str::to_string)
                .or_else(|| self.spec.r#become.as_ref().map(|b| b.user.clone()))
                .unwrap_or_else(|| settings.user.clone()),
            password: settings.password.clone(),
            su: match become_method {
                Some(m) if !self.spec.method_fixed => m == "su",
                _ => settings.su,
            },
        });
        let same = match (&want, &self.spec.r#become) {
            (None, None) => true,
            (Some(a), Some(b)) => a.user == b.user && a.su == b.su,
            _ => false,
        };
        if !same {
            let mut spec = (*self.spec).clone();
            spec.r#become = want;
            c.spec = Arc::new(spec);
        }
        if !env.is_empty() {
            c.env = env.iter().cloned().collect();
        }
        c
    }

    /// `command` with the step's environment exported first.
    fn with_env<'a>(&self, command: &'a str) -> std::borrow::Cow<'a, str> {
        if self.env.is_empty() {
            return std::borrow::Cow::Borrowed(command);
        }
        let mut s = String::new();
        for (k, v) in self.env.iter() {
            s.push_str(&format!("export {k}={}; ", crate::template::shell_quote(v)));
        }
        s.push_str(command);
        std::borrow::Cow::Owned(s)
    }
}

impl HostConnection {
    /// `lstat` without a remote process where the connection can (SSH without become: SFTP
    /// runs as the login user, who then is the user the steps run as). `None`: ask a script.
    pub async fn lstat(&self, path: &str) -> Option<Result<Option<PathInfo>, TransportError>> {
        if self.spec.r#become.as_ref().is_some_and(|b| b.user != self.spec.endpoint.user) {
            return None;
        }
        match &self.conn {
            Connection::Ssh(c) => Some(c.lstat(path).await),
            Connection::Local(_) => None,
        }
    }
}

impl HostConnection {
    /// A new directory made over SFTP where `lstat` may use SFTP and no become is asked (the
    /// directory is the login user's, as a script's `mkdir` would make it); `None`: a script
    /// makes it. `Some(Ok(Some(true)))`: its mode had to be set after `mkdir`; `Some(Ok(None))`:
    /// its parent is missing.
    pub async fn mkdir(&self, path: &str, mode: Option<u32>) -> Option<Result<Option<bool>, TransportError>> {
        if self.spec.r#become.is_some() {
            return None;
        }
        match &self.conn {
            Connection::Ssh(c) => Some(c.mkdir(path, mode).await),
            Connection::Local(_) => None,
        }
    }
}

impl HostConnection {
    /// The sha1 of a file read over SFTP in chunks, where `lstat` may use SFTP; `None`: ask a
    /// script.
    pub async fn sha1_sftp(&self, path: &str, size: u64) -> Option<Result<String, TransportError>> {
        if self.spec.r#become.as_ref().is_some_and(|b| b.user != self.spec.endpoint.user) {
            return None;
        }
        match &self.conn {
            Connection::Ssh(c) => Some(c.sha1_sftp(path, size).await),
            Connection::Local(_) => None,
        }
    }

    pub async fn exec(&self, req: ExecRequest<'_>) -> Result<ExecOutput, TransportError> {
        let command = self.with_env(req.command);
        let req = ExecRequest { command: &command, ..req };
        let Some(sudo) = sudo::Sudo::for_spec(&self.spec) else {
            return match &self.conn {
                Connection::Ssh(c) => {
                    let s = req.stdin.map(StdinSource::Bytes).unwrap_or(StdinSource::None);
                    c.exec(req.command, s, req.timeout).await
                }
                Connection::Local(c) => c.exec(req.command, req.stdin, req.timeout).await,
            };
        };
        match &self.conn {
            // Scripts without stdin run in a long-lived shell of the become user.
            Connection::Ssh(c) => match req.stdin {
                None => c.in_shell(Some(&sudo), req.command, req.timeout).await,
                Some(b) => c.exec_as(&sudo, &sudo.wrap(req.command), StdinSource::Bytes(b), req.timeout).await,
            },
            // sudo only (su on a local connection is refused with the connection variables).
            Connection::Local(c) => {
                let w = sudo.wrap(req.command);
                let mut input = w.all_input();
                input.extend_from_slice(req.stdin.unwrap_or_default());
                let out = sudo.check(&self.spec.name, c.exec(&w.command, Some(&input), req.timeout).await?)?;
                Ok(w.strip_ready(out))
            }
        }
    }

    /// Writes `dest` atomically with `mode`; returns the content's sha256.
    pub async fn put(&self, source: PutSource, dest: &str, mode: u32) -> Result<String, TransportError> {
        match &self.conn {
            Connection::Ssh(c) => {
                let sudo = sudo::Sudo::for_spec(&self.spec);
                c.put(source, dest, mode, None, Duration::from_secs(3600), sudo.as_ref()).await
            }
            Connection::Local(c) => c.put(source, dest, mode).await,
        }
    }

    /// `path`'s content; `size`: what a `stat` just said it holds, where one did (a small file
    /// read over SFTP is then not asked for its end).
    pub async fn get(&self, path: &str, size: Option<u64>) -> Result<Vec<u8>, TransportError> {
        // SFTP reads as the login user: a become user's files are read by a script run as them.
        if sudo::Sudo::for_spec(&self.spec).is_some() {
            let cmd = format!("cat -- {}", crate::template::shell_quote(path));
            let out = self.exec(ExecRequest { command: &cmd, stdin: None, timeout: Duration::from_secs(3600) }).await?;
            if !out.success() {
                let reason = format!("reading {path}: {}", String::from_utf8_lossy(&out.stderr).trim());
                return Err(TransportError::Remote { host: self.spec.name.clone(), reason });
            }
            return Ok(out.stdout);
        }
        match &self.conn {
            Connection::Ssh(c) => c.get(path, size).await,
            Connection::Local(c) => c.get(path).await,
        }
    }
}

/// A host's connection, or why there is none, once the first attempt is over.
type ConnectionSlot = OnceCell<Result<HostConnection, TransportError>>;

/// One connection per host for the whole run, opened on first use; concurrent first uses wait
/// for the same attempt. At most `forks` connection attempts at a time.
#[derive(Debug)]
pub struct Pool {
    pub options: Arc<SshOptions>,
    specs: HashMap<String, Arc<HostSpec>>,
    conns: Mutex<HashMap<String, Arc<ConnectionSlot>>>,
    connecting: Semaphore,
    /// Releases still closing their host's connection; `close` waits for them.
    releasing: std::sync::Mutex<JoinSet<()>>,
    /// What the hosts' files were last seen to hold (none kept unless a run sets where).
    pub known: known_content::KnownContent,
}

impl Pool {
    pub fn new(specs: Vec<HostSpec>, options: SshOptions, forks: usize) -> Self {
        Pool {
            options: Arc::new(options),
            specs: specs.into_iter().map(|s| (s.name.clone(), Arc::new(s))).collect(),
            conns: Mutex::new(HashMap::new()),
            connecting: Semaphore::new(forks.max(1)),
            releasing: std::sync::Mutex::new(JoinSet::new()),
            known: known_content::KnownContent::default(),
        }
    }

    pub fn spec(&self, host: &str) -> Option<&Arc<HostSpec>> {
        self.specs.get(host)
    }

    pub async fn get(&self, host: &str) -> Result<HostConnection, TransportError> {
        let cell = self.conns.lock().await.entry(host.to_string()).or_default().clone();
        cell.get_or_init(|| async {
            let Some(spec) = self.specs.get(host).cloned() else {
                return Err(TransportError::Local { reason: format!("{host}: not in the inventory") });
            };
            let conn = match spec.kind {
                ConnectionKind::Local => Connection::Local(LocalConnection { name: spec.name.clone() }),
                ConnectionKind::Ssh => {
                    let _permit = self.connecting.acquire().await.expect("semaphore open");
                    let c = SshConnection::connect(&spec, &self.options, spec.password.as_ref()).await?;
                    Connection::Ssh(Arc::new(c))
                }
            };
            Ok(HostConnection { spec, conn, env: Arc::new([]) })
        })
        .await
        .clone()
    }

    /// Drops the host's connection and opens a new one (after a reboot).
    pub async fn reconnect(&self, host: &str) -> Result<HostConnection, TransportError> {
        let old = self.conns.lock().await.remove(host);
        if let Some(c) = old
            && let Some(Ok(HostConnection { conn: Connection::Ssh(s), .. })) = c.get()
        {
            s.close().await;
        }
        self.get(host).await
    }

    /// Forgets the host's connection (it has nothing left to do), closing an open SSH connection;
    /// a later use opens a new one.
    pub async fn release(&self, host: &str) {
        let slot = self.conns.lock().await.remove(host);
        if let Some(Ok(HostConnection { conn: Connection::Ssh(s), .. })) = slot.as_ref().and_then(|c| c.get()) {
            s.close().await;
        }
    }

    /// `release` on a task of its own, so the caller need not wait for the disconnect; `close`
    /// waits for it.
    pub fn spawn_release(self: &Arc<Self>, host: &str) {
        let (pool, host) = (self.clone(), host.to_string());
        let mut releasing = self.releasing.lock().unwrap_or_else(|e| e.into_inner());
        // Reap the finished ones: a long run keeps only the releases in flight.
        while let Some(r) = releasing.try_join_next() {
            resume_panic(r);
        }
        releasing.spawn(async move { pool.release(&host).await });
    }

    /// Waits for the releases in flight, then closes every connection still open.
    pub async fn close(&self) {
        let mut releasing = std::mem::take(&mut *self.releasing.lock().unwrap_or_else(|e| e.into_inner()));
        while let Some(r) = releasing.join_next().await {
            resume_panic(r);
        }
        let conns: Vec<_> = self.conns.lock().await.values().cloned().collect();
        for c in conns {
            if let Some(Ok(HostConnection { conn: Connection::Ssh(s), .. })) = c.get() {
                s.close().await;
            }
        }
    }
}

/// A release task's panic goes on in the pool's owner instead of vanishing with the task.
fn resume_panic(r: Result<(), JoinError>) {
    if let Err(e) = r
        && e.is_panic()
    {
        std::panic::resume_unwind(e.into_panic());
    }
}
