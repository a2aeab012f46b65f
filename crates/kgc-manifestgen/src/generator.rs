//! Running one generator (`fluxcd/flux pkg/manifests/configfile.go`, `execCommand`):
//! `/bin/sh -c COMMAND` in the target directory, stdin empty, stdout the manifests.
//!
//! The environment is kgc's own, inherited whole, as fluxd's generators inherit fluxd's
//! (`execGenerators` leaves `cmd.Env` nil; only the image `updaters`, which kgc does not run,
//! get `FLUX_*` variables and `PATH` alone). A generator is the repository's code running with
//! kgc's rights either way; hiding variables from it would protect nothing.
//!
//! Better than fluxd where a generator misbehaves: it runs in its own process group, and the
//! whole group is killed at the timeout (fluxd kills `sh` only, and a `helm` it started lives
//! on), or when stdout passes the limit; a background process still holding stdout after `sh`
//! exits counts against the same timeout; stderr is kept to its tail.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Error;

/// The bytes of a generator's stderr kept for the error: its end, where tools put the reason.
pub const STDERR_KEPT: usize = 4096;

/// How long the stderr of a killed generator is awaited for the error message.
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// Why a generator produced no manifests.
#[derive(Debug)]
pub enum Failure {
    Exited(ExitStatus),
    TimedOut(Duration),
    TooMuchOutput(usize),
    Read(std::io::Error),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Exited(s) => {
                match (s.code(), std::os::unix::process::ExitStatusExt::signal(s)) {
                    (Some(code), _) => write!(f, "failed with exit code {code}"),
                    (None, Some(sig)) => write!(f, "was killed by signal {sig}"),
                    (None, None) => write!(f, "failed ({s})"),
                }
            }
            Failure::TimedOut(after) => write!(
                f,
                "did not finish within {after:?} (the .flux.yaml's timeout, else 60s); its processes were killed"
            ),
            Failure::TooMuchOutput(limit) => write!(
                f,
                "printed more than {} MiB; its processes were killed",
                limit >> 20
            ),
            Failure::Read(e) => write!(f, "could not be read from: {e}"),
        }
    }
}

/// `: stderr…` for an error message, on one line, or nothing when stderr was empty.
pub fn stderr_suffix(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", lines.join(" | "))
    }
}

/// A failed run, before it is named after its config and command.
#[derive(Debug)]
pub(crate) enum RunError {
    Spawn(std::io::Error),
    Failed { failure: Failure, stderr: String },
}

impl RunError {
    pub(crate) fn into_error(self, file: &Path, command: &str) -> Error {
        match self {
            RunError::Spawn(source) => Error::Spawn {
                file: file.to_owned(),
                command: command.to_owned(),
                source,
            },
            RunError::Failed { failure, stderr } => Error::Failed {
                file: file.to_owned(),
                command: command.to_owned(),
                failure,
                stderr,
            },
        }
    }
}

enum Message {
    Stdout(Result<Vec<u8>, Failure>),
    Stderr(String),
}

/// Runs `command` in `dir`; its stdout, if it exits 0 within `timeout` having printed at
/// most `max_output` bytes.
pub(crate) fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    max_output: usize,
) -> Result<Vec<u8>, RunError> {
    let started = Instant::now();
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(RunError::Spawn)?;
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Message::Stdout(read_bounded(out, max_output)));
        });
    }
    if let Some(err) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = tx.send(Message::Stderr(read_tail(err)));
        });
    }
    let deadline = started + timeout;
    let mut status = None;
    let mut stdout = None;
    let mut stderr = None;
    let failure = loop {
        if status.is_none() {
            match child.try_wait() {
                Ok(s) => status = s,
                Err(e) => break Failure::Read(e),
            }
        }
        if let (Some(s), true) = (status, stderr.is_some())
            && let Some(out) = stdout.take()
        {
            if s.success() {
                return Ok(out);
            }
            return Err(RunError::Failed {
                failure: Failure::Exited(s),
                stderr: stderr.unwrap_or_default(),
            });
        }
        let now = Instant::now();
        if now >= deadline {
            break Failure::TimedOut(timeout);
        }
        // Woken by the readers; the exit itself is polled.
        let wait = (deadline - now).min(Duration::from_millis(20));
        match rx.recv_timeout(wait) {
            Ok(Message::Stdout(Ok(out))) => stdout = Some(out),
            Ok(Message::Stdout(Err(failure))) => break failure,
            Ok(Message::Stderr(s)) => stderr = Some(s),
            Err(_) => {}
        }
    };
    kill(&mut child);
    if stderr.is_none() {
        let until = Instant::now() + STDERR_GRACE;
        while let Ok(m) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            if let Message::Stderr(s) = m {
                stderr = Some(s);
                break;
            }
        }
    }
    Err(RunError::Failed {
        failure,
        stderr: stderr.unwrap_or_default(),
    })
}

/// Kills the generator's process group (its `sh` leads it) and reaps `sh`. The readers are
/// left to end when the last holder of the pipes is gone.
fn kill(child: &mut Child) {
    let group = rustix::process::Pid::from_child(child);
    if let Err(e) = rustix::process::kill_process_group(group, rustix::process::Signal::KILL) {
        tracing::debug!(error = %e, "killing a generator's process group");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// All of `r`, or [`Failure::TooMuchOutput`] as soon as it passes `max` bytes (the pipe is
/// then closed, so a writer gets `SIGPIPE` instead of blocking).
fn read_bounded(r: impl Read, max: usize) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    r.take(limit).read_to_end(&mut buf).map_err(Failure::Read)?;
    if buf.len() > max {
        return Err(Failure::TooMuchOutput(max));
    }
    Ok(buf)
}

/// The last [`STDERR_KEPT`] bytes of `r` (read to its end), as text.
fn read_tail(mut r: impl Read) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut cut = false;
    loop {
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * STDERR_KEPT {
                    tail.drain(..tail.len() - STDERR_KEPT);
                    cut = true;
                }
            }
        }
    }
    if tail.len() > STDERR_KEPT {
        tail.drain(..tail.len() - STDERR_KEPT);
        cut = true;
    }
    let text = String::from_utf8_lossy(&tail).into_owned();
    if cut { format!("…{text}") } else { text }
}
