//! What `kgc serve` and `kgc controller` children have in common: a log file, the lines they
//! announce themselves with on stdout, and stopping them by signal with a deadline.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long a child may take to announce itself and become ready (generous: tests run in
/// parallel on 2 cores).
pub(crate) const READY_DEADLINE: Duration = Duration::from_secs(30);

/// How long a child may take to exit after SIGTERM or SIGINT.
const EXIT_DEADLINE: Duration = Duration::from_secs(20);

/// The log level of spawned kgc processes: `KGC_TEST_LOG`, else `info`.
pub(crate) fn rust_log() -> String {
    std::env::var("KGC_TEST_LOG").unwrap_or("info".into())
}

/// A log file to append a child's stderr to.
pub(crate) fn log_file(path: &Path) -> File {
    File::options()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()))
}

/// The last `lines` lines of a log file (empty if it cannot be read).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Reads `stdout` on a thread, calling `announce` on each line until it returns a value, which
/// is sent back; then keeps draining so the child never writes to a closed pipe.
pub(crate) fn announcement<T: Send + 'static>(
    stdout: ChildStdout,
    mut announce: impl FnMut(&str) -> Option<T> + Send + 'static,
) -> tokio::sync::oneshot::Receiver<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.is_some()
                && let Some(v) = announce(&line)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(v);
            }
        }
    });
    rx
}

/// Sends `signal` (`TERM`, `STOP`) to process `pid` with kill(1).
pub(crate) fn send(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("running kill");
    assert!(sent.success(), "kill -{signal} {pid} failed");
}

/// SIGSTOP of process `pid` (`what`, for the message if it does not stop): returns once the
/// kernel reports it stopped.
pub(crate) async fn pause(pid: u32, what: &str) {
    send(pid, "STOP");
    crate::wait::eventually(
        &format!("{what} stopped by SIGSTOP"),
        std::time::Duration::from_secs(5),
        || std::future::ready(is_stopped(pid)),
    )
    .await;
}

/// Whether process `pid` is stopped by a signal: state `T` in `/proc/<pid>/stat` (the field
/// after the parenthesised command name).
pub(crate) fn is_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
            Some(state == "T")
        })
        .unwrap_or(false)
}

/// Sends `signal` (`TERM`, `INT`) to `child` and waits, with a deadline, for it to exit;
/// on timeout kills it and panics with the tail of `log`.
pub(crate) fn signal_and_wait(
    mut child: Child,
    signal: &str,
    what: &str,
    log: &Path,
) -> ExitStatus {
    send(child.id(), signal);
    let deadline = Instant::now() + EXIT_DEADLINE;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not exit within {EXIT_DEADLINE:?} of SIG{signal}; log:\n{}",
                log_tail(log, 100)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills and reaps `child`, if any.
pub(crate) fn kill(child: Option<Child>) {
    if let Some(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
}
