//! Runs `kgc serve` as a child process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::{Method, StatusCode};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::http::Conn;

const LISTENING: &str = "kgc serve: listening on http://";

/// What the server logged when its store opened.
#[derive(Debug, Clone, Copy)]
pub struct Opened {
    pub objects: u64,
    pub elapsed_ms: u64,
}

/// A running `kgc serve`.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pid: u32,
    stderr: Arc<Mutex<Vec<String>>>,
    opened: watch::Receiver<Option<Opened>>,
}

/// How to start a server.
pub struct Launch<'a> {
    pub kgc: &'a Path,
    pub data_dir: &'a Path,
    pub in_memory: bool,
    /// Passed to `kgc serve` after the options above.
    pub extra_args: &'a [String],
}

/// Removes terminal escape sequences, in case the log is coloured.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A `key=value` field of a tracing text line.
fn field(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn parse_opened(line: &str) -> Option<Opened> {
    if !line.contains("store opened") {
        return None;
    }
    Some(Opened {
        objects: field(line, "objects")?,
        elapsed_ms: field(line, "elapsed_ms")?,
    })
}

/// User + system CPU time from a `/proc/PID/stat` file.
pub fn cpu_time(path: &str) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')').context("malformed stat")? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields
        .get(11)
        .and_then(|u| u.parse::<u64>().ok())
        .zip(fields.get(12).and_then(|s| s.parse::<u64>().ok()))
        .map(|(u, s)| u + s)
        .context("malformed stat")?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Ok(Duration::from_secs_f64(ticks as f64 / hz as f64))
}

impl Server {
    /// Starts the server and waits until `GET /readyz` answers 200. Returns the server and the
    /// time from spawning the process to that first 200.
    pub async fn start(launch: Launch<'_>) -> anyhow::Result<(Self, Duration)> {
        let started = Instant::now();
        let mut cmd = Command::new(launch.kgc);
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(launch.data_dir)
            // The benchmarks measure the store and the API, over plain HTTP on loopback.
            .arg("--insecure-http");
        if launch.in_memory {
            cmd.arg("--in-memory");
        }
        cmd.args(launch.extra_args);
        cmd.env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", launch.kgc.display()))?;
        let pid = child.id().context("the kgc process has no pid")?;

        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (opened_tx, opened) = watch::channel(None);
        {
            let lines = Arc::clone(&stderr);
            let mut reader = BufReader::new(child.stderr.take().expect("piped")).lines();
            tokio::spawn(async move {
                while let Ok(Some(line)) = reader.next_line().await {
                    let line = strip_ansi(&line);
                    if let Some(o) = parse_opened(&line) {
                        opened_tx.send_replace(Some(o));
                    }
                    let mut lines = lines.lock().unwrap_or_else(|p| p.into_inner());
                    if lines.len() < 1000 {
                        lines.push(line);
                    }
                }
            });
        }
        let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
        let addr = loop {
            let line = tokio::time::timeout(Duration::from_secs(300), stdout.next_line())
                .await
                .context("kgc serve printed no listening line within 300 s")??;
            let Some(line) = line else {
                // Give the stderr reader a moment to collect the reason.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let status = child.try_wait()?;
                anyhow::bail!(
                    "kgc serve exited ({status:?}) before listening; its log:\n{}",
                    stderr.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
                );
            };
            if let Some(rest) = line.strip_prefix(LISTENING) {
                break rest
                    .trim()
                    .parse::<SocketAddr>()
                    .with_context(|| format!("parsing the listening line {line:?}"))?;
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });

        let mut server = Self {
            child,
            addr,
            pid,
            stderr,
            opened,
        };
        server.wait_ready().await?;
        Ok((server, started.elapsed()))
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(mut conn) = Conn::connect(self.addr).await
                && let Ok((StatusCode::OK, _)) = conn.call(Method::GET, "/readyz", None).await
            {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                anyhow::bail!(
                    "kgc serve exited ({status}) before it was ready; its log:\n{}",
                    self.log_tail()
                );
            }
            if Instant::now() > deadline {
                anyhow::bail!("kgc serve was not ready within 120 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The `store opened` log line's figures (waits briefly for the log to be read).
    pub async fn opened(&self) -> Option<Opened> {
        let mut rx = self.opened.clone();
        tokio::time::timeout(Duration::from_secs(2), rx.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|o| *o)
    }

    /// The resident set size of the server process, in KiB (VmRSS).
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        self.status_kib("VmRSS")
    }

    /// The largest resident set size the server process has had, in KiB (VmHWM).
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        self.status_kib("VmHWM")
    }

    /// A `kB` figure of `/proc/PID/status`.
    fn status_kib(&self, field: &str) -> anyhow::Result<u64> {
        let path = PathBuf::from(format!("/proc/{}/status", self.pid));
        let status = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {field} in /proc/PID/status"))
    }

    /// CPU time (user + system) the server process has used so far.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        cpu_time(&format!("/proc/{}/stat", self.pid))
    }

    fn log_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// SIGTERM, then waits for a clean exit. Returns how long the shutdown took.
    pub async fn stop(mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let pid = rustix::process::Pid::from_raw(self.pid as i32).context("invalid pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .context("sending SIGTERM to kgc serve")?;
        let status = tokio::time::timeout(Duration::from_secs(120), self.child.wait())
            .await
            .context("kgc serve did not exit within 120 s of SIGTERM")??;
        if !status.success() {
            anyhow::bail!(
                "kgc serve exited with {status} after SIGTERM; its log:\n{}",
                self.log_tail()
            );
        }
        Ok(started.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_store_opened_line() {
        let line = "\u{1b}[2m2026-01-01T00:00:00Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m kgc::serve: store opened \u{1b}[3mobjects\u{1b}[0m\u{1b}[2m=\u{1b}[0m100004 revision=100004 durable=true elapsed_ms=812";
        let o = parse_opened(&strip_ansi(line)).unwrap();
        assert_eq!((o.objects, o.elapsed_ms), (100_004, 812));
        assert!(parse_opened("serving listen=127.0.0.1:1").is_none());
    }
}
