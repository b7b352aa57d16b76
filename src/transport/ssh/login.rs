//! Logging in to a host: the client settings, private keys, the host-key check (russh's
//! `Handler` against known_hosts), authentication (ssh-agent, key files, password) and jump hosts
//! as direct-tcpip channels over the bastion's own connection, retried while failures are
//! transient. Hands back authenticated handles; knows nothing of what runs over them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::secret::Secret;
use crate::transport::TransportError;
use crate::transport::known_hosts::{self, HostKeyFiles, HostKeyProblem, KnownHosts};
use crate::transport::spec::{Endpoint, HostSpec};

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

/// A logged-in connection: the target's handle, and the jump hosts' handles it rides on (which
/// must live as long as it does).
pub(super) struct Login {
    pub handle: Handle<Handler>,
    pub jumps: Vec<Handle<Handler>>,
}

fn transient(e: &TransportError) -> bool {
    matches!(e, TransportError::Unreachable { transient: true, .. })
}

/// Connects (through the jump hosts, if any) and authenticates, retrying transient failures with
/// exponential backoff. `connect_timeout` is the whole budget for one host, retries included: an
/// operator who types `--connect-timeout 2` hears about a dead host after 2 s, not after the
/// attempts and their pauses have added up.
pub(super) async fn login(
    spec: &HostSpec,
    opts: &SshOptions,
    password: Option<&Secret>,
) -> Result<Login, TransportError> {
    let budget = opts.connect_timeout;
    let deadline = tokio::time::Instant::now() + budget;
    let last: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let attempt = || async { login_once(spec, opts, password).await };
    let retries = attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(200))
                .with_max_delay(Duration::from_secs(3))
                .with_max_times(opts.connect_retries)
                .with_jitter(),
        )
        .sleep(tokio::time::sleep)
        .when(transient)
        // A pause that would end past the budget ends the retries instead.
        .adjust(|_, pause| pause.filter(|p| tokio::time::Instant::now() + *p < deadline))
        .notify(|e, after| {
            *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            tracing::debug!(host = %spec.name, "connection attempt failed, retrying in {after:?}: {e}")
        });
    // A little past the budget: an attempt's own timeout (which names what timed out) ends first.
    match tokio::time::timeout_at(deadline + Duration::from_millis(50), retries).await {
        Ok(r) => r,
        Err(_) => {
            let last = last.lock().unwrap_or_else(|p| p.into_inner()).take();
            Err(TransportError::Unreachable {
                host: spec.name.clone(),
                reason: match last {
                    Some(e) => format!("no SSH login within the connect timeout ({budget:?}); the last attempt: {e}"),
                    None => format!("no SSH login within the connect timeout ({budget:?})"),
                },
                transient: true,
            })
        }
    }
}

async fn login_once(spec: &HostSpec, opts: &SshOptions, password: Option<&Secret>) -> Result<Login, TransportError> {
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
    Ok(Login { handle, jumps })
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
    let r = tokio::time::timeout(opts.connect_timeout, client::connect_stream(opts.client_config(ep), stream, handler))
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
    let home = known_hosts::home();
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
