//! The SSH transport (russh), one connection per host for the whole run, split by phase:
//! `login` (keys, host keys, authentication, jump hosts), `shell` (long-lived `/bin/sh`s for
//! scripts without stdin), `upload` (the length/bytes/sha256/rename protocol). This file is the
//! connection that ties them: at most 8 channels at a time (stock sshd allows 10 sessions),
//! sessions for commands with stdin, SFTP for reads, every channel closed explicitly.

mod login;
mod shell;
mod upload;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::Handle;
use russh::{ChannelMsg, Disconnect};
use tokio::sync::{OnceCell, Semaphore};

use super::spec::HostSpec;
use super::sudo::{Sudo, Wrapped};
use super::{ExecOutput, PathInfo, PathKind, PutSource, TransportError};
use crate::secret::Secret;
use login::Handler;
pub use login::{KeyStore, SshOptions};
use shell::{OpenError, Shells};
use upload::{Stream, Upload};
pub use upload::{put_script, small_put_script};

/// Channels open at once on one connection.
pub const MAX_CHANNELS: usize = 8;
/// Shells kept open per connection: half the channels, so uploads and SFTP always find one.
const MAX_SHELLS: usize = 4;

/// SFTP v3 servers must serve reads of 32 KiB: a read answered with less was short.
const SHORT_READ_BELOW: usize = 32 << 10;

/// A live connection (and the jump-host connections it rides on).
pub struct SshConnection {
    pub name: String,
    handle: Handle<Handler>,
    _jumps: Vec<Handle<Handler>>,
    channels: Arc<Semaphore>,
    /// The SFTP session, with the channel permit it holds for the connection's life.
    sftp: OnceCell<(russh_sftp::client::SftpSession, tokio::sync::OwnedSemaphorePermit)>,
    /// Shells for scripts without stdin (see `shell`).
    shells: Shells,
    /// Temporary files of SFTP uploads not yet renamed into place or removed: an upload
    /// abandoned mid-way (a second interrupt) leaves its name here for `close` to remove.
    temps: Mutex<Vec<String>>,
}

impl std::fmt::Debug for SshConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshConnection").field("name", &self.name).finish()
    }
}

impl SshConnection {
    /// Connects (through the jump hosts, if any) and authenticates, retrying transient failures
    /// with exponential backoff.
    pub async fn connect(
        spec: &HostSpec,
        opts: &SshOptions,
        password: Option<&Secret>,
    ) -> Result<Self, TransportError> {
        let login::Login { handle, jumps } = login::login(spec, opts, password).await?;
        Ok(SshConnection {
            name: spec.name.clone(),
            handle,
            _jumps: jumps,
            channels: Arc::new(Semaphore::new(MAX_CHANNELS)),
            sftp: OnceCell::new(),
            shells: Shells::new(MAX_SHELLS),
            temps: Mutex::new(Vec::new()),
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
            return self.in_shell(None, command, timeout).await;
        }
        self.session(command, None, stdin, timeout).await
    }

    /// Runs a script without stdin in one of the connection's long-lived shells: the login
    /// user's, or (`via`) one running as the become user. The script never appears on a command
    /// line (it travels on the shell's stdin).
    pub async fn in_shell(
        &self,
        via: Option<&Sudo>,
        command: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, TransportError> {
        let run = async {
            let mut shell = self.shells.take(&self.handle, &self.channels, via).await.map_err(|e| match e {
                OpenError::Lost(e) => self.lost(e.0),
                OpenError::NeedsPassword => via.map(|v| v.needs_password(&self.name)).unwrap_or_else(|| self.lost("")),
                OpenError::Refused(out) => match via.map(|v| v.check(&self.name, out.clone())) {
                    Some(Err(e)) => e,
                    _ => TransportError::Remote {
                        host: self.name.clone(),
                        reason: format!("become failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
                    },
                },
            })?;
            match shell.run(command).await {
                Ok(out) => {
                    self.shells.give_back(shell);
                    Ok(out)
                }
                Err(e) => {
                    shell.close().await;
                    Err(self.lost(e.0))
                }
            }
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(r) => r,
            Err(_) => Err(TransportError::Timeout { host: self.name.clone(), after: timeout }),
        }
    }

    /// Runs `w` (a script wrapped for become by `via`) in a session of its own, `stdin` after
    /// it; sudo's or su's refusals as errors, the reader's ready line out of stdout.
    pub async fn exec_as(
        &self,
        via: &Sudo,
        w: &Wrapped,
        stdin: StdinSource<'_>,
        timeout: Duration,
    ) -> Result<ExecOutput, TransportError> {
        let out = self.session(&w.command, Some((via, w)), stdin, timeout).await?;
        let out = via.check(&self.name, out)?;
        Ok(w.strip_ready(out))
    }

    async fn session(
        &self,
        command: &str,
        wrapped: Option<(&Sudo, &Wrapped)>,
        stdin: StdinSource<'_>,
        timeout: Duration,
    ) -> Result<ExecOutput, TransportError> {
        let _permit = self.channels.acquire().await.map_err(|e| self.lost(e))?;
        let mut ch = self.handle.channel_open_session().await.map_err(|e| self.lost(e))?;
        let run = async {
            ch.exec(true, command).await.map_err(|e| self.lost(e))?;
            let mut out = ExecOutput::default();
            let mut closed = false;
            if let Some((via, w)) = wrapped {
                ch.data(&w.first[..]).await.map_err(|e| self.lost(e))?;
                if w.wait {
                    // su reads its password with one read() of whatever is waiting: nothing
                    // more is sent until the reader says su is done.
                    match shell::wait_ready(&mut ch, via, &w.ready, &mut out).await {
                        shell::Ready::Yes => {}
                        shell::Ready::Asked => return Err(via.needs_password(&self.name)),
                        shell::Ready::Ended => return Ok(out),
                    }
                }
                if !w.rest.is_empty() {
                    ch.data(&w.rest[..]).await.map_err(|e| self.lost(e))?;
                }
            }
            match stdin {
                StdinSource::None => {}
                StdinSource::Bytes(b) => {
                    ch.data(b).await.map_err(|e| self.lost(e))?;
                }
                StdinSource::Hashed(prefix, stream, digest) => {
                    if !prefix.is_empty() {
                        ch.data(&prefix[..]).await.map_err(|e| self.lost(e))?;
                    }
                    let hex = upload::send_hashed(&ch, stream, |e| self.lost(e)).await?;
                    *digest.lock().unwrap_or_else(|e| e.into_inner()) = hex;
                }
            }
            ch.eof().await.map_err(|e| self.lost(e))?;
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

    /// Writes a file atomically (see `upload`): streamed into a temporary file beside `dest`, its
    /// sha256 checked on the host against ours, mode (and owner) set, then renamed into place.
    pub async fn put(
        &self,
        source: PutSource,
        dest: &str,
        mode: u32,
        owner: Option<&str>,
        timeout: Duration,
        via: Option<&Sudo>,
    ) -> Result<String, TransportError> {
        // Bytes in memory are shared (one copy), so that a failed SFTP upload can go again.
        let source = match source {
            PutSource::Bytes(b) => PutSource::Shared(b.into()),
            s => s,
        };
        let again = source.clone();
        // A login user's own file goes over SFTP whatever its size: a new one then costs the
        // host no process at all, where the script way costs a `mv` (and a fork) even for a few
        // bytes of text.
        let sftp = match (via, owner) {
            (None, None) => self.sftp().await.ok(),
            _ => None,
        };
        match upload::prepare(&self.name, source, dest, mode, owner, sftp.is_none()).await? {
            Upload::Inline { script, digest } => self.put_inline(&script, digest, dest, timeout, via).await,
            Upload::Stream { mut script, mut stream } => {
                // Only large streams queue for a place: a few KiB of text never waits behind
                // another host's big file.
                let _slot = match stream.len > upload::SMALL_PUT as u64 {
                    true => Some(upload::stream_slot().await),
                    false => None,
                };
                if let Some(sftp) = sftp {
                    match self.put_sftp(sftp, dest, mode, stream, timeout).await {
                        Err(SftpPut::NotWritten(e)) => {
                            // SFTP says little of why (ENOSPC and EDQUOT are all "Failure" to
                            // OpenSSH's server): the script's tools name the cause, so the file
                            // goes again that way, from the start.
                            tracing::debug!(host = %self.name, dest, error = %e, "SFTP upload failed; writing by script");
                            (script, stream) = match upload::prepare(&self.name, again, dest, mode, owner, true).await?
                            {
                                Upload::Stream { script, stream } => (script, stream),
                                Upload::Inline { script, digest } => {
                                    return self.put_inline(&script, digest, dest, timeout, via).await;
                                }
                            };
                        }
                        Err(SftpPut::Failed(e)) => return Err(e),
                        Ok(d) => return Ok(d),
                    }
                }
                let digest = Arc::new(Mutex::new(String::new()));
                let stdin = StdinSource::Hashed(Vec::new(), stream, digest.clone());
                let out = match via {
                    None => self.exec(&script, stdin, timeout).await?,
                    Some(sudo) => self.exec_as(sudo, &sudo.wrap(&script), stdin, timeout).await?,
                };
                let digest = digest.lock().unwrap_or_else(|e| e.into_inner()).clone();
                upload::written(&self.name, dest, &out)?;
                Ok(digest)
            }
        }
    }

    /// Small text written by a script in one of the connection's shells (`small_put_script`).
    async fn put_inline(
        &self,
        script: &str,
        digest: String,
        dest: &str,
        timeout: Duration,
        via: Option<&Sudo>,
    ) -> Result<String, TransportError> {
        let out = match via {
            None => self.exec(script, StdinSource::None, timeout).await?,
            Some(sudo) => self.in_shell(Some(sudo), script, timeout).await?,
        };
        upload::written(&self.name, dest, &out)?;
        Ok(digest)
    }

    /// `put` by SFTP (see `upload::write_sftp`), then into place by SFTP's rename (a new file) or
    /// one `mv` (replacing one); the temporary file is removed when anything fails before.
    async fn put_sftp(
        &self,
        sftp: &russh_sftp::client::SftpSession,
        dest: &str,
        mode: u32,
        stream: Stream,
        timeout: Duration,
    ) -> Result<String, SftpPut> {
        let tmp = upload::temp_beside(dest);
        self.temps.lock().unwrap_or_else(|e| e.into_inner()).push(tmp.clone());
        let run = async {
            let digest = match upload::write_sftp(sftp, &tmp, dest, mode, stream).await {
                Ok(d) => d,
                Err(e) => {
                    let _ = sftp.remove_file(tmp.as_str()).await;
                    return Err(match e {
                        TransportError::Remote { reason, .. } => {
                            SftpPut::NotWritten(TransportError::Remote { host: self.name.clone(), reason })
                        }
                        e => SftpPut::Failed(e),
                    });
                }
            };
            // A new file goes into place by SFTP's rename, no process on the host (OpenSSH's
            // server links the name, then unlinks the temporary one: it refuses where `dest`
            // exists, a file, a link or a directory); anything that exists is replaced by `mv`.
            if sftp.rename(tmp.as_str(), dest).await.is_ok() {
                return Ok(digest);
            }
            let q = crate::template::shell_quote;
            let out = self
                .in_shell(None, &format!("mv -f {} {}", q(&tmp), q(dest)), timeout)
                .await
                .map_err(SftpPut::Failed)?;
            if let Err(e) = upload::written(&self.name, dest, &out) {
                let _ = sftp.remove_file(tmp.as_str()).await;
                return Err(SftpPut::Failed(e));
            }
            Ok(digest)
        };
        let r = match tokio::time::timeout(timeout, run).await {
            Ok(r) => r,
            Err(_) => {
                let _ = sftp.remove_file(tmp.as_str()).await;
                Err(SftpPut::Failed(TransportError::Timeout { host: self.name.clone(), after: timeout }))
            }
        };
        self.temps.lock().unwrap_or_else(|e| e.into_inner()).retain(|t| *t != tmp);
        r
    }

    async fn sftp(&self) -> Result<&russh_sftp::client::SftpSession, TransportError> {
        self.sftp
            .get_or_try_init(|| async {
                let permit = self.channels.clone().acquire_owned().await.map_err(|e| self.lost(e))?;
                let ch = self.handle.channel_open_session().await.map_err(|e| self.lost(e))?;
                ch.request_subsystem(true, "sftp").await.map_err(|e| self.lost(e))?;
                // One read in flight: russh-sftp queues `max_concurrent_reads` reads (16 by
                // default) once a first short read gives it a chunk size, so reading a small file
                // to its end sent 16 reads past it, each a round trip the host's sshd serves (80
                // a host in the benchmark's re-run). What copctl reads over SFTP is small (files
                // it compares, edits, slurps); uploads keep their writes pipelined.
                let cfg = russh_sftp::client::Config { max_concurrent_reads: 1, ..Default::default() };
                let s = russh_sftp::client::SftpSession::new_with_config(ch.into_stream(), cfg)
                    .await
                    .map_err(|e| self.lost(e))?;
                Ok((s, permit))
            })
            .await
            .map(|(s, _)| s)
    }

    /// The sha1 of a remote file read over SFTP in chunks into the hasher (no remote process,
    /// never the whole file in memory); `size`: what an `lstat` just said it holds.
    pub async fn sha1_sftp(&self, path: &str, size: u64) -> Result<String, TransportError> {
        use sha1::Digest;
        let mut h = sha1::Sha1::new();
        self.read_sftp(path, Some(size), |b| h.update(b)).await?;
        Ok(hex::encode(h.finalize()))
    }

    /// Reads a remote file over SFTP (no remote process); `size` as in `read_sftp`.
    pub async fn get(&self, path: &str, size: Option<u64>) -> Result<Vec<u8>, TransportError> {
        let mut out = Vec::new();
        self.read_sftp(path, size, |b| out.extend_from_slice(b)).await?;
        Ok(out)
    }

    /// Feeds `path`'s content to `sink` as SFTP reads bring it. `size`: what an `lstat` just
    /// gave; a small file whose first read brings exactly that much is not asked for more
    /// (the read that finds its end was a fifth of a re-run's SFTP requests).
    async fn read_sftp(
        &self,
        path: &str,
        size: Option<u64>,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), TransportError> {
        use tokio::io::AsyncReadExt;
        let remote = |e: &dyn std::fmt::Display| TransportError::Remote {
            host: self.name.clone(),
            reason: format!("reading {path}: {e}"),
        };
        let sftp = self.sftp().await?;
        let mut f = sftp.open(path).await.map_err(|e| remote(&e))?;
        // One byte more than the size: a file grown since the `lstat` shows as longer. At least
        // 32 KiB: a file `lstat` calls empty (/proc) is not read into a buffer of one byte.
        let want = size.map_or(256 << 10, |n| n as usize + 1).clamp(SHORT_READ_BELOW, 256 << 10);
        let mut buf = vec![0u8; want];
        let mut first = true;
        loop {
            let n = f.read(&mut buf).await.map_err(|e| remote(&e))?;
            if n == 0 {
                break;
            }
            sink(&buf[..n]);
            // Each read asks the server for far more than a small file; sftp-server answers with
            // one read(2), which on a regular file comes back short only at its end. Below 32
            // KiB (the least any server must serve in one read) a short answer of the size
            // `lstat` gave is the whole file.
            if first && size == Some(n as u64) && n < SHORT_READ_BELOW {
                break;
            }
            first = false;
        }
        // Closed without waiting for the answer: the server closes handles in order anyway.
        drop(f);
        Ok(())
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
            mtime: md.mtime.map(u64::from),
        }))
    }

    /// Makes the directory `path` over SFTP (no remote process): created as `mkdir` makes one
    /// (0777 less the umask), then given `mode` where that differs. `Ok(Some(true))`: the mode
    /// had to be set; `Ok(None)`: its parent is missing. Any other error (something in the way,
    /// no permission) leaves it to a script, which says why.
    pub async fn mkdir(&self, path: &str, mode: Option<u32>) -> Result<Option<bool>, TransportError> {
        use russh_sftp::client::error::Error as SftpError;
        use russh_sftp::protocol::{FileAttributes, StatusCode};
        let remote = |e: &dyn std::fmt::Display| TransportError::Remote {
            host: self.name.clone(),
            reason: format!("{path}: {e}"),
        };
        let sftp = self.sftp().await?;
        match sftp.create_dir(path).await {
            Ok(()) => {}
            Err(SftpError::Status(st)) if st.status_code == StatusCode::NoSuchFile => return Ok(None),
            Err(e) => return Err(remote(&e)),
        }
        let Some(m) = mode else { return Ok(Some(false)) };
        let md = sftp.symlink_metadata(path).await.map_err(|e| remote(&e))?;
        if md.permissions.unwrap_or(0) & 0o7777 == m {
            return Ok(Some(false));
        }
        let attrs = FileAttributes { permissions: Some(m), ..FileAttributes::empty() };
        sftp.set_metadata(path, attrs).await.map_err(|e| remote(&e))?;
        Ok(Some(true))
    }

    pub async fn close(&self) {
        let temps = std::mem::take(&mut *self.temps.lock().unwrap_or_else(|e| e.into_inner()));
        if let (false, Some((sftp, _))) = (temps.is_empty(), self.sftp.get()) {
            for t in temps {
                let _ = tokio::time::timeout(Duration::from_secs(2), sftp.remove_file(t)).await;
            }
        }
        let _ = self.handle.disconnect(Disconnect::ByApplication, "", "en").await;
    }
}

/// How an SFTP upload failed: before the file was whole on the host (the script way may still
/// write it, or say why not), or after.
enum SftpPut {
    NotWritten(TransportError),
    Failed(TransportError),
}

/// What a command reads on stdin.
pub enum StdinSource<'a> {
    None,
    Bytes(&'a [u8]),
    /// Bytes sent first (a become frame), then a stream, hashed as it is sent unless its digest
    /// is known, followed by its sha256 line (the upload protocol); the digest is left in the mutex.
    Hashed(Vec<u8>, Stream, Arc<Mutex<String>>),
}
