//! The SSH transport (russh): one connection per host for the whole run, jump hosts as
//! direct-tcpip channels over the bastion's own connection, host keys checked against
//! known_hosts, key/agent authentication, at most 8 channels at a time per connection (stock
//! sshd allows 10 sessions), every channel closed explicitly.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};
use russh::{ChannelMsg, Disconnect};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{Notify, OnceCell, Semaphore};

use super::known_hosts::{HostKeyFiles, HostKeyProblem, KnownHosts};
use super::shell::Shell;
use super::spec::{Endpoint, HostSpec};
use super::{ExecOutput, PathInfo, PathKind, PutSource, TransportError};
use crate::vars::secret::Secret;

/// Channels open at once on one connection.
pub const MAX_CHANNELS: usize = 8;
/// Shells kept open per connection: half the channels, so uploads and SFTP always find one.
const MAX_SHELLS: usize = 4;

/// Settings shared by every connection of a run.
#[derive(Debug)]
pub struct SshOptions {
    pub known_hosts: Arc<KnownHosts>,
    pub connect_timeout: Duration,
    /// Extra connection attempts after a transient failure (refused, reset, timed out).
    pub connect_retries: usize,
    pub keepalive: Duration,
    pub keys: KeyStore,
}

impl SshOptions {
    pub fn new(known_hosts: KnownHosts) -> Self {
        SshOptions {
            known_hosts: Arc::new(known_hosts),
            connect_timeout: Duration::from_secs(10),
            connect_retries: 3,
            keepalive: Duration::from_secs(15),
            keys: KeyStore::default(),
        }
    }

    fn client_config(&self, ep: &Endpoint) -> Arc<client::Config> {
        let mut preferred = russh::Preferred::default();
        let (certificates, keys) = self.known_hosts.algorithms(&ep.address, ep.port, &ep.known_hosts, &preferred.key);
        (preferred.host_key_certificates, preferred.key) = (Cow::Owned(certificates), Cow::Owned(keys));
        // curve25519 first: it costs sshd the least CPU per login (ML-KEM and sntrup cost more).
        let mut kex: Vec<russh::kex::Name> = vec![russh::kex::CURVE25519, russh::kex::CURVE25519_PRE_RFC_8731];
        kex.extend(preferred.kex.iter().filter(|k| !kex.contains(k)).cloned().collect::<Vec<_>>());
        preferred.kex = Cow::Owned(kex);
        // AES-GCM first: hardware AES makes it the fastest for bulk transfers.
        let mut cipher = vec![russh::cipher::AES_128_GCM, russh::cipher::AES_256_GCM];
        cipher.extend(preferred.cipher.iter().filter(|c| !cipher.contains(c)).cloned().collect::<Vec<_>>());
        preferred.cipher = Cow::Owned(cipher);
        Arc::new(client::Config {
            preferred,
            nodelay: true,
            keepalive_interval: Some(self.keepalive),
            keepalive_max: 3,
            inactivity_timeout: None,
            window_size: 16 * 1024 * 1024,
            maximum_packet_size: 65535,
            channel_buffer_size: 256,
            ..Default::default()
        })
    }
}

/// Private keys loaded once per run; an encrypted key asks for its passphrase once.
#[derive(Debug, Default)]
pub struct KeyStore {
    loaded: Mutex<HashMap<PathBuf, Option<Arc<PrivateKey>>>>,
}

impl KeyStore {
    fn load(&self, path: &Path) -> Result<Option<Arc<PrivateKey>>, String> {
        if let Some(k) = self.loaded.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
            return Ok(k.clone());
        }
        if !path.exists() {
            return Ok(None);
        }
        let key = match russh::keys::load_secret_key(path, None) {
            Ok(k) => Some(Arc::new(k)),
            Err(russh::keys::Error::KeyIsEncrypted) => {
                let pass = match std::env::var("COPCTL_KEY_PASSPHRASE") {
                    Ok(p) => Secret::new(p),
                    Err(_) => Secret::new(
                        rpassword::prompt_password(format!("Passphrase for {}: ", path.display()))
                            .map_err(|e| format!("{} is encrypted and no terminal to ask: {e}", path.display()))?,
                    ),
                };
                let k = russh::keys::load_secret_key(path, Some(pass.expose()))
                    .map_err(|e| format!("cannot decrypt {}: {e}", path.display()))?;
                Some(Arc::new(k))
            }
            Err(e) => return Err(format!("cannot read key {}: {e}", path.display())),
        };
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf(), key.clone());
        Ok(key)
    }
}

pub(super) struct Handler {
    host: String,
    port: u16,
    known_hosts: Arc<KnownHosts>,
    files: HostKeyFiles,
    /// Why the host key was refused (the handshake error itself says only "rejected").
    problem: Arc<Mutex<Option<HostKeyProblem>>>,
}

impl client::Handler for Handler {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &russh::keys::PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let verdict = self.known_hosts.verify(&self.host, self.port, &self.files, key);
        let accepted = verdict.is_ok();
        *self.problem.lock().unwrap_or_else(|e| e.into_inner()) = verdict.err();
        Ok(accepted)
    }
}

/// A live connection (and the jump-host connections it rides on).
pub struct SshConnection {
    pub name: String,
    handle: Handle<Handler>,
    _jumps: Vec<Handle<Handler>>,
    channels: Arc<Semaphore>,
    /// The SFTP session, with the channel permit it holds for the connection's life.
    sftp: OnceCell<(russh_sftp::client::SftpSession, tokio::sync::OwnedSemaphorePermit)>,
    /// Idle shells for scripts without stdin (see `shell`), at most `MAX_SHELLS` in all.
    shells: Mutex<Vec<Shell>>,
    shell_slots: Arc<Semaphore>,
    /// Told when a shell goes back to `shells` or away (its slot freed).
    shell_free: Arc<Notify>,
}

impl std::fmt::Debug for SshConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshConnection").field("name", &self.name).finish()
    }
}

fn transient(e: &TransportError) -> bool {
    matches!(e, TransportError::Unreachable { transient: true, .. })
}

async fn handshake<S>(
    stream: S,
    ep: &Endpoint,
    opts: &SshOptions,
    host: &str,
) -> Result<Handle<Handler>, TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let problem = Arc::new(Mutex::new(None));
    let handler = Handler {
        host: ep.address.clone(),
        port: ep.port,
        known_hosts: opts.known_hosts.clone(),
        files: ep.known_hosts.clone(),
        problem: problem.clone(),
    };
    let r =
        tokio::time::timeout(opts.connect_timeout, client::connect_stream(opts.client_config(ep), stream, handler))
            .await;
    let taken = problem.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (r, taken) {
        (_, Some(problem)) => Err(problem.into_error(host)),
        (Ok(Ok(h)), None) => Ok(h),
        (Ok(Err(e)), None) => Err(TransportError::Unreachable {
            host: host.to_string(),
            reason: format!("SSH handshake with {}:{} failed: {e}", ep.address, ep.port),
            transient: true,
        }),
        (Err(_), None) => Err(TransportError::Unreachable {
            host: host.to_string(),
            reason: format!("SSH handshake with {}:{} timed out after {:?}", ep.address, ep.port, opts.connect_timeout),
            transient: true,
        }),
    }
}

async fn authenticate(
    handle: &mut Handle<Handler>,
    ep: &Endpoint,
    opts: &SshOptions,
    password: Option<&Secret>,
    host: &str,
) -> Result<(), TransportError> {
    let fail = |e: russh::Error| TransportError::Unreachable {
        host: host.to_string(),
        reason: format!("connection lost during authentication: {e}"),
        transient: true,
    };
    let mut tried: Vec<String> = Vec::new();
    if std::env::var_os("SSH_AUTH_SOCK").is_some()
        && let Ok(mut agent) = russh::keys::agent::client::AgentClient::connect_env().await
    {
        let ids = agent.request_identities().await.unwrap_or_default();
        for id in ids {
            let key: PublicKey = id.public_key().into_owned();
            let hash = if key.algorithm().is_rsa() {
                handle.best_supported_rsa_hash().await.ok().flatten().flatten()
            } else {
                None
            };
            tried.push(format!("ssh-agent key {}", key.fingerprint(HashAlg::Sha256)));
            if let Ok(r) = handle.authenticate_publickey_with(&ep.user, key, hash, &mut agent).await
                && r.success()
            {
                return Ok(());
            }
        }
    }
    let home = super::known_hosts::home();
    let mut files = ep.key_files.clone();
    for d in ["id_ed25519", "id_ecdsa", "id_rsa"] {
        let p = home.join(".ssh").join(d);
        if !files.contains(&p) {
            files.push(p);
        }
    }
    for f in &files {
        let key = match opts.keys.load(f) {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(e) => {
                tried.push(e);
                continue;
            }
        };
        let hash = if key.algorithm().is_rsa() {
            handle.best_supported_rsa_hash().await.map_err(fail)?.flatten()
        } else {
            None
        };
        tried.push(f.display().to_string());
        let r = handle.authenticate_publickey(&ep.user, PrivateKeyWithHashAlg::new(key, hash)).await.map_err(fail)?;
        if r.success() {
            return Ok(());
        }
    }
    if let Some(pw) = password {
        tried.push("password".into());
        let r = handle.authenticate_password(&ep.user, pw.expose()).await.map_err(fail)?;
        if r.success() {
            return Ok(());
        }
    }
    Err(TransportError::AuthFailed {
        host: host.to_string(),
        user: ep.user.clone(),
        address: ep.address.clone(),
        tried,
    })
}

impl SshConnection {
    /// Connects (through the jump hosts, if any) and authenticates, retrying transient failures
    /// with exponential backoff.
    pub async fn connect(
        spec: &HostSpec,
        opts: &SshOptions,
        password: Option<&Secret>,
    ) -> Result<Self, TransportError> {
        let attempt = || async { Self::connect_once(spec, opts, password).await };
        attempt
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(200))
                    .with_max_delay(Duration::from_secs(3))
                    .with_max_times(opts.connect_retries)
                    .with_jitter(),
            )
            .sleep(tokio::time::sleep)
            .when(transient)
            .notify(
                |e, after| tracing::debug!(host = %spec.name, "connection attempt failed, retrying in {after:?}: {e}"),
            )
            .await
    }

    async fn connect_once(
        spec: &HostSpec,
        opts: &SshOptions,
        password: Option<&Secret>,
    ) -> Result<Self, TransportError> {
        let host = spec.name.as_str();
        let mut jumps: Vec<Handle<Handler>> = Vec::new();
        let hops: Vec<&Endpoint> = spec.jumps.iter().chain(std::iter::once(&spec.endpoint)).collect();
        for (i, ep) in hops.iter().enumerate() {
            let last = i + 1 == hops.len();
            // A jump host without keys of its own tries the target's keys too (as an operator's
            // single bastion key usually opens both).
            let with_target_keys;
            let ep: &Endpoint = if last {
                ep
            } else {
                let mut e = (*ep).clone();
                for k in &spec.endpoint.key_files {
                    if !e.key_files.contains(k) {
                        e.key_files.push(k.clone());
                    }
                }
                with_target_keys = e;
                &with_target_keys
            };
            let mut handle = match jumps.last() {
                None => {
                    let addr = (ep.address.as_str(), ep.port);
                    let tcp = tokio::time::timeout(opts.connect_timeout, tokio::net::TcpStream::connect(addr))
                        .await
                        .map_err(|_| TransportError::Unreachable {
                            host: host.to_string(),
                            reason: format!(
                                "connecting to {}:{} timed out after {:?}",
                                ep.address, ep.port, opts.connect_timeout
                            ),
                            transient: true,
                        })?
                        .map_err(|e| TransportError::Unreachable {
                            host: host.to_string(),
                            reason: format!("cannot connect to {}:{}: {e}", ep.address, ep.port),
                            transient: true,
                        })?;
                    let _ = tcp.set_nodelay(true);
                    handshake(tcp, ep, opts, host).await?
                }
                Some(via) => {
                    let ch = tokio::time::timeout(
                        opts.connect_timeout,
                        via.channel_open_direct_tcpip(ep.address.clone(), ep.port as u32, "127.0.0.1", 0),
                    )
                    .await
                    .map_err(|_| TransportError::Unreachable {
                        host: host.to_string(),
                        reason: format!("jump to {}:{} timed out", ep.address, ep.port),
                        transient: true,
                    })?
                    .map_err(|e| TransportError::Unreachable {
                        host: host.to_string(),
                        reason: format!("jump host cannot reach {}:{}: {e}", ep.address, ep.port),
                        transient: true,
                    })?;
                    handshake(ch.into_stream(), ep, opts, host).await?
                }
            };
            authenticate(&mut handle, ep, opts, if last { password } else { None }, host).await?;
            jumps.push(handle);
        }
        let handle = jumps.pop().expect("at least the target hop");
        Ok(SshConnection {
            name: spec.name.clone(),
            handle,
            _jumps: jumps,
            channels: Arc::new(Semaphore::new(MAX_CHANNELS)),
            sftp: OnceCell::new(),
            shells: Mutex::new(Vec::new()),
            shell_slots: Arc::new(Semaphore::new(MAX_SHELLS)),
            shell_free: Arc::new(Notify::new()),
        })
    }

    fn lost(&self, e: impl std::fmt::Display) -> TransportError {
        TransportError::Unreachable {
            host: self.name.clone(),
            reason: format!("connection lost: {e}"),
            transient: false,
        }
    }

    /// Runs `command`, feeding `stdin`, collecting output until exit. Without stdin it runs in
    /// one of the connection's shells (`/bin/sh`); with stdin in a session of its own (by the
    /// login shell).
    pub async fn exec(
        &self,
        command: &str,
        stdin: StdinSource<'_>,
        timeout: Duration,
    ) -> Result<ExecOutput, TransportError> {
        // Sizes and statuses only: scripts carry rendered values (secrets among them).
        tracing::trace!(host = %self.name, bytes = command.len(), "exec");
        if matches!(stdin, StdinSource::None) {
            // The script never appears on a command line (it travels on the shell's stdin).
            let run = async {
                let mut shell = self.take_shell().await?;
                match shell.run(command).await {
                    Ok(out) => {
                        self.shells.lock().unwrap_or_else(|e| e.into_inner()).push(shell);
                        self.shell_free.notify_one();
                        Ok(out)
                    }
                    Err(e) => {
                        shell.close().await;
                        Err(self.lost(e.0))
                    }
                }
            };
            return match tokio::time::timeout(timeout, run).await {
                Ok(r) => r,
                Err(_) => Err(TransportError::Timeout { host: self.name.clone(), after: timeout }),
            };
        }
        let _permit = self.channels.acquire().await.map_err(|e| self.lost(e))?;
        let mut ch = self.handle.channel_open_session().await.map_err(|e| self.lost(e))?;
        let run = async {
            ch.exec(true, command).await.map_err(|e| self.lost(e))?;
            match stdin {
                StdinSource::None => {}
                StdinSource::Bytes(b) => {
                    ch.data(b).await.map_err(|e| self.lost(e))?;
                }
                StdinSource::Hashed(mut r, digest) => {
                    // Big chunks: russh splits them into maximum-size packets itself, where
                    // `data(reader)` would send 8 KiB at a time. The hash is computed on a
                    // blocking thread beside the sending, not in its path.
                    let (tx, rx) = std::sync::mpsc::channel::<bytes::Bytes>();
                    let hasher = tokio::task::spawn_blocking(move || {
                        let mut h = Sha256::new();
                        for b in rx {
                            h.update(&b);
                        }
                        hex::encode(h.finalize())
                    });
                    loop {
                        let mut buf = vec![0u8; 1 << 20];
                        let n = read_full(&mut r, &mut buf)
                            .await
                            .map_err(|e| TransportError::Local { reason: e.to_string() })?;
                        if n == 0 {
                            break;
                        }
                        buf.truncate(n);
                        let chunk = bytes::Bytes::from(buf);
                        let _ = tx.send(chunk.clone());
                        ch.data_bytes(chunk).await.map_err(|e| self.lost(e))?;
                    }
                    drop(tx);
                    let hex = hasher.await.map_err(|e| TransportError::Local { reason: e.to_string() })?;
                    ch.data_bytes(format!("{hex}\n").into_bytes()).await.map_err(|e| self.lost(e))?;
                    *digest.lock().unwrap_or_else(|e| e.into_inner()) = hex;
                }
            }
            ch.eof().await.map_err(|e| self.lost(e))?;
            let mut out = ExecOutput::default();
            let mut closed = false;
            while let Some(msg) = ch.wait().await {
                match msg {
                    ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
                    ChannelMsg::ExtendedData { data, ext: 1 } => out.stderr.extend_from_slice(&data),
                    ChannelMsg::ExitStatus { exit_status } => out.status = Some(exit_status),
                    ChannelMsg::ExitSignal { signal_name, .. } => out.signal = Some(format!("{signal_name:?}")),
                    ChannelMsg::Close => {
                        closed = true;
                        break;
                    }
                    _ => {}
                }
            }
            if out.status.is_none() && out.signal.is_none() && !closed {
                return Err(self.lost("the channel ended without an exit status"));
            }
            Ok(out)
        };
        let r = tokio::time::timeout(timeout, run).await;
        let _ = ch.close().await;
        match r {
            Ok(r) => r,
            Err(_) => Err(TransportError::Timeout { host: self.name.clone(), after: timeout }),
        }
    }

    /// Writes a file atomically: streamed into a temporary file beside `dest`, its sha256
    /// checked on the host against ours, mode (and owner) set, then renamed into place.
    pub async fn put(
        &self,
        source: PutSource,
        dest: &str,
        mode: u32,
        owner: Option<&str>,
        timeout: Duration,
    ) -> Result<String, TransportError> {
        // Small text goes inside the script to one of the connection's shells: no session, no
        // temp-file tools, no remote hashing (the channel's MAC already guards the bytes).
        if let PutSource::Bytes(b) = &source
            && b.len() <= SMALL_PUT
            && !b.contains(&0)
            && let Ok(text) = std::str::from_utf8(b)
        {
            let digest = hex::encode(Sha256::digest(b));
            tracing::debug!(host = %self.name, dest, bytes = b.len(), mode = format!("{mode:o}"), "upload (inline)");
            let script = small_put_script(dest, text, mode, owner);
            let out = self.exec(&script, StdinSource::None, timeout).await?;
            if out.status != Some(0) {
                return Err(TransportError::Remote {
                    host: self.name.clone(),
                    reason: format!("writing {dest} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
                });
            }
            return Ok(digest);
        }
        let (len, reader): (u64, Box<dyn AsyncRead + Unpin + Send>) = match source {
            PutSource::Bytes(b) => (b.len() as u64, Box::new(std::io::Cursor::new(b))),
            PutSource::File(p) => {
                let f = tokio::fs::File::open(&p)
                    .await
                    .map_err(|e| TransportError::Local { reason: format!("{}: {e}", p.display()) })?;
                let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
                (len, Box::new(f))
            }
        };
        tracing::debug!(host = %self.name, dest, bytes = len, mode = format!("{mode:o}"), "upload");
        let script = put_script(dest, len, mode, owner);
        let digest = Arc::new(Mutex::new(String::new()));
        let out = self.exec(&script, StdinSource::Hashed(reader, digest.clone()), timeout).await?;
        let digest = digest.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if out.status != Some(0) {
            return Err(TransportError::Remote {
                host: self.name.clone(),
                reason: format!("writing {dest} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
            });
        }
        Ok(digest)
    }

    async fn sftp(&self) -> Result<&russh_sftp::client::SftpSession, TransportError> {
        self.sftp
            .get_or_try_init(|| async {
                let permit = self.channels.clone().acquire_owned().await.map_err(|e| self.lost(e))?;
                let ch = self.handle.channel_open_session().await.map_err(|e| self.lost(e))?;
                ch.request_subsystem(true, "sftp").await.map_err(|e| self.lost(e))?;
                let s = russh_sftp::client::SftpSession::new(ch.into_stream()).await.map_err(|e| self.lost(e))?;
                Ok((s, permit))
            })
            .await
            .map(|(s, _)| s)
    }

    /// Reads a remote file over SFTP (no remote process).
    pub async fn get(&self, path: &str) -> Result<Vec<u8>, TransportError> {
        let sftp = self.sftp().await?;
        sftp.read(path)
            .await
            .map_err(|e| TransportError::Remote { host: self.name.clone(), reason: format!("reading {path}: {e}") })
    }

    /// An idle shell, a new one while fewer than `MAX_SHELLS` exist, or the next one returned.
    async fn take_shell(&self) -> Result<Shell, TransportError> {
        loop {
            let freed = self.shell_free.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(s) = self.shells.lock().unwrap_or_else(|e| e.into_inner()).pop() {
                return Ok(s);
            }
            if let Ok(slot) = self.shell_slots.clone().try_acquire_owned() {
                let permit = self.channels.clone().acquire_owned().await.map_err(|e| self.lost(e))?;
                return Shell::open(&self.handle, permit, slot, self.shell_free.clone())
                    .await
                    .map_err(|e| self.lost(e.0));
            }
            freed.await;
        }
    }

    /// `lstat` over SFTP (no remote process): `Ok(None)` when nothing is at `path`, `Err` when
    /// SFTP cannot say (the caller asks a script instead).
    pub async fn lstat(&self, path: &str) -> Result<Option<PathInfo>, TransportError> {
        let sftp = self.sftp().await?;
        let md = match sftp.symlink_metadata(path).await {
            Ok(m) => m,
            Err(russh_sftp::client::error::Error::Status(st))
                if st.status_code == russh_sftp::protocol::StatusCode::NoSuchFile =>
            {
                return Ok(None);
            }
            Err(e) => return Err(TransportError::Remote { host: self.name.clone(), reason: format!("{path}: {e}") }),
        };
        let kind = if md.is_symlink() {
            PathKind::Link
        } else if md.is_dir() {
            PathKind::Directory
        } else if md.is_regular() {
            PathKind::File
        } else {
            PathKind::Other
        };
        let link = match kind {
            PathKind::Link => Some(
                sftp.read_link(path)
                    .await
                    .map_err(|e| TransportError::Remote { host: self.name.clone(), reason: format!("{path}: {e}") })?,
            ),
            _ => None,
        };
        Ok(Some(PathInfo {
            kind,
            mode: md.permissions.unwrap_or(0) & 0o7777,
            size: md.size.unwrap_or(0),
            uid: md.uid.unwrap_or(u32::MAX),
            gid: md.gid.unwrap_or(u32::MAX),
            link,
        }))
    }

    pub async fn close(&self) {
        let _ = self.handle.disconnect(Disconnect::ByApplication, "", "en").await;
    }
}

/// What a command reads on stdin.
pub enum StdinSource<'a> {
    None,
    Bytes(&'a [u8]),
    /// A stream, hashed as it is sent, followed by its sha256 line (the upload protocol); the
    /// digest is left in the mutex.
    Hashed(Box<dyn AsyncRead + Unpin + Send>, Arc<Mutex<String>>),
}

/// Reads until `buf` is full or the stream ends.
async fn read_full(r: &mut (dyn AsyncRead + Unpin + Send), buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let k = r.read(&mut buf[n..]).await?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

/// The remote half of `put`: exactly `len` bytes into a temp file (GNU dd with count_bytes reads
/// no further, in 1 MiB blocks where head would copy 8 KiB at a time), then hashed from the page
/// cache (OpenSSL's SHA-256 where present: three times sha256sum's speed), compared with the
/// sha256 line that follows the data; on a match, mode, owner, rename.
/// UTF-8 uploads up to this size without NUL bytes travel inside a script (`small_put_script`).
const SMALL_PUT: usize = 64 << 10;

fn parent_dir(dest: &str) -> String {
    match dest.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => dest[..i].to_string(),
        None => ".".to_string(),
    }
}

/// Writes `content` (no NUL bytes) atomically: a new temp file beside `dest` (noclobber, a random
/// name), mode and owner set, renamed into place; the temp file is removed if any of it fails.
pub fn small_put_script(dest: &str, content: &str, mode: u32, owner: Option<&str>) -> String {
    let q = crate::template::shell_quote;
    let chown = owner.map(|o| format!(" && chown {} \"$t\"", q(o))).unwrap_or_default();
    format!(
        "umask 077; set -C; t={dir}/.copctl-{rand}; \
         if printf %s {content} > \"$t\" && chmod {mode:o} \"$t\"{chown} && mv -f \"$t\" {dest}; then exit 0; fi; \
         rm -f \"$t\"; exit 92",
        dir = q(&parent_dir(dest)),
        rand = super::shell::random_hex(),
        content = q(content),
        dest = q(dest),
    )
}

pub fn put_script(dest: &str, len: u64, mode: u32, owner: Option<&str>) -> String {
    let q = crate::template::shell_quote;
    let dir = parent_dir(dest);
    let chown = owner.map(|o| format!(" && chown {} \"$t\"", q(o))).unwrap_or_default();
    format!(
        "umask 077; t=$(mktemp {dir}/.copctl-XXXXXXXX) || exit 90; trap 'rm -f \"$t\"' EXIT; \
         dd bs=1M count={len} iflag=count_bytes,fullblock status=none of=\"$t\" || exit 92; \
         got=$(openssl dgst -sha256 -r \"$t\" 2>/dev/null || sha256sum \"$t\") || exit 92; got=${{got%% *}}; read -r want; \
         if [ \"$got\" != \"$want\" ]; then echo \"copctl: checksum mismatch writing {dest_msg}\" >&2; exit 91; fi; \
         chmod {mode:o} \"$t\"{chown} && mv -f \"$t\" {dest} && trap - EXIT",
        dir = q(&dir),
        dest = q(dest),
        dest_msg = dest.replace(['"', '$', '`', '\\'], "_"),
    )
}
