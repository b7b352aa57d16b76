//! `ansible_connection=local`: the same operations on this machine, without SSH.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ExecOutput, PutSource, TransportError};

#[derive(Debug, Clone)]
pub struct LocalConnection {
    pub name: String,
}

impl LocalConnection {
    pub async fn exec(
        &self,
        command: &str,
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<ExecOutput, TransportError> {
        let local = |e: std::io::Error| TransportError::Local { reason: format!("{}: {e}", self.name) };
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(local)?;
        let mut input = child.stdin.take().expect("piped stdin");
        let data = stdin.map(<[u8]>::to_vec).unwrap_or_default();
        let writer = tokio::spawn(async move {
            let _ = input.write_all(&data).await;
        });
        // Output is read as it comes and the command is done when its shell exits, not when
        // its pipes close: a process it started in the background (`daemon &`) keeps them
        // open, as Ansible's run_command stops reading once the process has exited.
        let collect = |pipe: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>| {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let b = buf.clone();
            let task = tokio::spawn(async move {
                let Some(mut pipe) = pipe else { return };
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    b.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&chunk[..n]);
                }
            });
            (buf, task)
        };
        let (out_buf, out_task) = collect(child.stdout.take().map(|p| Box::new(p) as _));
        let (err_buf, err_task) = collect(child.stderr.take().map(|p| Box::new(p) as _));
        let status = match tokio::time::timeout(timeout, child.wait()).await {
            Ok(r) => r.map_err(local)?,
            Err(_) => return Err(TransportError::Timeout { host: self.name.clone(), after: timeout }),
        };
        // What the command wrote before it exited is in the pipes: the readers have it at once,
        // unless a background process holds them open (then what was read is the output).
        let (out_abort, err_abort) = (out_task.abort_handle(), err_task.abort_handle());
        let drained = async {
            let _ = out_task.await;
            let _ = err_task.await;
        };
        if tokio::time::timeout(Duration::from_millis(200), drained).await.is_err() {
            // The pipes are closed here, as Ansible's Popen closes them: a background process
            // writing on is told so (EPIPE), and nothing it writes piles up in copctl.
            out_abort.abort();
            err_abort.abort();
        }
        let _ = writer.await;
        let take = |b: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *b.lock().unwrap_or_else(|e| e.into_inner()));
        use std::os::unix::process::ExitStatusExt;
        Ok(ExecOutput {
            status: status.code().map(|c| c as u32),
            signal: status.signal().map(|s| format!("signal {s}")),
            stdout: take(&out_buf),
            stderr: take(&err_buf),
        })
    }

    pub async fn put(&self, source: PutSource, dest: &str, mode: u32) -> Result<String, TransportError> {
        let local = |e: std::io::Error| TransportError::Local { reason: format!("{dest}: {e}") };
        let (data, known) = match source {
            PutSource::Bytes(b) => (b, None),
            PutSource::Shared(b) => (b.to_vec(), None),
            PutSource::File(p) => (tokio::fs::read(&p).await.map_err(local)?, None),
            PutSource::Digested { path, sha256, .. } => (tokio::fs::read(&path).await.map_err(local)?, Some(sha256)),
        };
        let digest = hex::encode(Sha256::digest(&data));
        if known.is_some_and(|k| k != digest) {
            return Err(TransportError::Local { reason: format!("{dest}: its source changed since it was hashed") });
        }
        let dest_path = Path::new(dest);
        let dir = dest_path.parent().unwrap_or(Path::new("."));
        // A name of its own for every write: the hosts of a run that are this machine (a
        // `delegate_to: localhost`, `ansible_connection=local`) write at once, often into one
        // directory, and a shared name would give one host's content to another's file.
        let tmp = dir.join(format!(".copctl-{}-{}", std::process::id(), super::random_hex()));
        let staged = async {
            let mut f = tokio::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).await?;
            f.write_all(&data).await?;
            f.flush().await?;
            drop(f);
            use std::os::unix::fs::PermissionsExt;
            tokio::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).await?;
            tokio::fs::rename(&tmp, dest_path).await
        }
        .await;
        if let Err(e) = staged {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(local(e));
        }
        Ok(digest)
    }

    pub async fn get(&self, path: &str) -> Result<Vec<u8>, TransportError> {
        tokio::fs::read(path)
            .await
            .map_err(|e| TransportError::Remote { host: self.name.clone(), reason: format!("reading {path}: {e}") })
    }
}
