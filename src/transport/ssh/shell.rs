//! A long-lived `/bin/sh` on a session channel, running one script after another. A new session
//! costs the host an sshd fork and a login shell (~2–3 ms of CPU, more than most check scripts);
//! a script in the running shell costs one fork. Each script runs as `( eval 'SCRIPT' )` with
//! stdin from /dev/null, so `exit`, `cd`, `set -e` and syntax errors stay inside it; a line with a
//! per-shell random tag after its stdout and its stderr marks where its output ends. Scripts that
//! need stdin (uploads, a sudo password) use their own session instead. `Shells` keeps a
//! connection's idle shells.

use std::sync::{Arc, Mutex};

use russh::ChannelMsg;
use russh::client::{Handle, Msg};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::login::Handler;
use crate::transport::sudo::Sudo;
use crate::transport::{ExecOutput, random_hex};

pub struct Shell {
    ch: russh::Channel<Msg>,
    /// Who the shell runs as: `None` the login user, else the become method and user.
    key: Option<String>,
    permit: Option<OwnedSemaphorePermit>,
    slot: Option<OwnedSemaphorePermit>,
    /// Told when the shell goes away, so a task waiting for one may open another.
    gone: Arc<Notify>,
    tag: String,
    seq: u64,
}

/// Why a shell could not run a script: the channel is gone (the shell is discarded).
#[derive(Debug)]
pub struct ShellLost(pub String);

/// How the wait for the become reader's ready line ended.
pub enum Ready {
    Yes,
    /// su asked for a password and none was given.
    Asked,
    /// The channel ended first: sudo or su refused (their output is in `out`).
    Ended,
}

/// Reads `ch` into `out` until stdout begins with the reader's `ready` line (sudo or su let it
/// run), su asks for a password no one will give, or the channel ends.
pub async fn wait_ready(ch: &mut russh::Channel<Msg>, via: &Sudo, ready: &str, out: &mut ExecOutput) -> Ready {
    let ready = format!("{ready}\n");
    while !out.stdout.starts_with(ready.as_bytes()) {
        match ch.wait().await {
            Some(ChannelMsg::Data { data }) => out.stdout.extend_from_slice(&data),
            Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                out.stderr.extend_from_slice(&data);
                if via.su_asks(&out.stderr) {
                    return Ready::Asked;
                }
            }
            Some(ChannelMsg::ExitStatus { exit_status }) => out.status = Some(exit_status),
            Some(ChannelMsg::Close) | None => return Ready::Ended,
            Some(_) => {}
        }
    }
    Ready::Yes
}

/// Why a shell could not be opened.
#[derive(Debug)]
pub enum OpenError {
    Lost(ShellLost),
    /// sudo or su did not run the reader: their output, for `Sudo::check` to explain.
    Refused(ExecOutput),
    /// su asked for a password and none was given.
    NeedsPassword,
}

impl From<ShellLost> for OpenError {
    fn from(e: ShellLost) -> Self {
        OpenError::Lost(e)
    }
}

/// Where the output before a marker line ends: `buf` ends with `\n<tag><rest>\n`; returns the
/// index of that first newline and `<rest>`.
fn split_marker<'a>(buf: &'a [u8], tag: &str) -> Option<(usize, &'a [u8])> {
    let body = buf.strip_suffix(b"\n")?;
    let nl = body.iter().rposition(|b| *b == b'\n')?;
    let last = &body[nl + 1..];
    last.strip_prefix(tag.as_bytes()).map(|rest| (nl, rest))
}

impl Shell {
    /// Opens a shell holding `permit` (a channel) and `slot` (the connection's count of shells),
    /// as the become user when `via` says so: sudo or su runs the reader, which, once they let
    /// it run (its ready line), reads `exec /bin/sh`; scripts then go to that shell.
    pub async fn open(
        handle: &Handle<Handler>,
        permit: OwnedSemaphorePermit,
        slot: OwnedSemaphorePermit,
        gone: Arc<Notify>,
        via: Option<&Sudo>,
    ) -> Result<Shell, OpenError> {
        let lost = |e: russh::Error| ShellLost(e.to_string());
        let mut ch = handle.channel_open_session().await.map_err(lost)?;
        match via {
            None => ch.exec(true, "exec /bin/sh").await.map_err(lost)?,
            Some(via) => {
                let w = via.wrap("exec /bin/sh");
                ch.exec(true, w.command.as_str()).await.map_err(lost)?;
                ch.data(&w.first[..]).await.map_err(lost)?;
                let mut out = ExecOutput::default();
                match wait_ready(&mut ch, via, &w.ready, &mut out).await {
                    Ready::Yes => {}
                    Ready::Asked => {
                        let _ = ch.close().await;
                        return Err(OpenError::NeedsPassword);
                    }
                    Ready::Ended => return Err(OpenError::Refused(out)),
                }
                if !w.rest.is_empty() {
                    ch.data(&w.rest[..]).await.map_err(lost)?;
                }
            }
        }
        Ok(Shell {
            ch,
            key: via.map(Sudo::key),
            permit: Some(permit),
            slot: Some(slot),
            gone,
            tag: format!("__copctl_{}_", random_hex()),
            seq: 0,
        })
    }

    /// Runs one script; its output and exit status as a session of its own would give them.
    pub async fn run(&mut self, script: &str) -> Result<ExecOutput, ShellLost> {
        self.seq += 1;
        let tag = format!("{}{}", self.tag, self.seq);
        let text = format!(
            "( eval {} ) </dev/null; printf '\\n{tag} %d\\n' $?; printf '\\n{tag}\\n' >&2\n",
            crate::template::shell_quote(script)
        );
        self.ch.data(text.as_bytes()).await.map_err(|e| ShellLost(e.to_string()))?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let (mut status, mut err_done) = (None, false);
        while status.is_none() || !err_done {
            match self.ch.wait().await {
                Some(ChannelMsg::Data { data }) => {
                    out.extend_from_slice(&data);
                    if let Some((end, rest)) = split_marker(&out, &tag) {
                        let code = std::str::from_utf8(rest).ok().and_then(|r| r.trim().parse::<u32>().ok());
                        status = Some(code.ok_or_else(|| ShellLost("garbled status line".into()))?);
                        out.truncate(end);
                    }
                }
                Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                    err.extend_from_slice(&data);
                    if let Some((end, rest)) = split_marker(&err, &tag)
                        && rest.is_empty()
                    {
                        err.truncate(end);
                        err_done = true;
                    }
                }
                Some(ChannelMsg::WindowAdjusted { .. }) | Some(ChannelMsg::Success) => {}
                Some(other) => return Err(ShellLost(format!("the shell ended ({other:?})"))),
                None => return Err(ShellLost("the channel closed".into())),
            }
        }
        Ok(ExecOutput { stdout: out, stderr: err, status, signal: None })
    }

    pub async fn close(self) {
        let _ = self.ch.close().await;
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // Free the channel and the slot before waking a waiter, or it would find none free.
        drop(self.permit.take());
        drop(self.slot.take());
        self.gone.notify_one();
    }
}

/// A connection's shells: the idle ones, and at most `max` open in all.
pub struct Shells {
    idle: Mutex<Vec<Shell>>,
    slots: Arc<Semaphore>,
    /// Told when a shell goes back to `idle` or away (its slot freed).
    free: Arc<Notify>,
}

impl Shells {
    pub fn new(max: usize) -> Self {
        Shells { idle: Mutex::new(Vec::new()), slots: Arc::new(Semaphore::new(max)), free: Arc::new(Notify::new()) }
    }

    /// An idle shell of the same user (`via`), a new one (on a channel from `channels`) while
    /// fewer than `max` exist, one in place of an idle shell of another user, or the next one
    /// given back.
    pub async fn take(
        &self,
        handle: &Handle<Handler>,
        channels: &Arc<Semaphore>,
        via: Option<&Sudo>,
    ) -> Result<Shell, OpenError> {
        let key = via.map(Sudo::key);
        loop {
            let freed = self.free.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let other = {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(i) = idle.iter().position(|s| s.key == key) {
                    return Ok(idle.swap_remove(i));
                }
                idle.pop()
            };
            if let Ok(slot) = self.slots.clone().try_acquire_owned() {
                if let Some(o) = other {
                    self.give_back(o);
                }
                let permit = channels.clone().acquire_owned().await.map_err(|e| ShellLost(e.to_string()))?;
                return Shell::open(handle, permit, slot, self.free.clone(), via).await;
            }
            if let Some(o) = other {
                // Closing it frees its slot (and wakes us through `free`).
                o.close().await;
                continue;
            }
            freed.await;
        }
    }

    /// Keeps a shell that ran its script for the next one.
    pub fn give_back(&self, shell: Shell) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(shell);
        self.free.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::split_marker;

    #[test]
    fn marker_after_output_with_and_without_newline() {
        assert_eq!(split_marker(b"abc\n\n__t_1 0\n", "__t_1"), Some((4, &b" 0"[..])));
        assert_eq!(split_marker(b"abc\n__t_1 3\n", "__t_1"), Some((3, &b" 3"[..])));
        assert_eq!(split_marker(b"\n__t_1 0\n", "__t_1"), Some((0, &b" 0"[..])));
        assert_eq!(split_marker(b"abc\n__t_1 0", "__t_1"), None);
        assert_eq!(split_marker(b"abc\n__t_2 0\n", "__t_1"), None);
    }
}
