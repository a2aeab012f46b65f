//! A `kgc controller` child process pointed at a [`Server`]: the collectors running remotely,
//! through kube-rs, with their own `/healthz`, `/readyz`, `/metrics` and graph dump.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kube::Client;

use crate::binary::KgcBinary;
use crate::http::{RawResponse, raw};
use crate::namespace::unique;
use crate::process::{self, READY_DEADLINE};
use crate::server::Server;

/// A running `kgc controller`, killed when dropped; a test that panics prints its log's tail.
pub struct Controller {
    child: Option<Child>,
    url: String,
    /// A client for the controller's own endpoints.
    client: Client,
    log: PathBuf,
}

impl Controller {
    /// Starts `kgc controller --kubeconfig KUBECONFIG --listen 127.0.0.1:0 ARGS` against
    /// `server` with the server's admin kubeconfig, and waits for `/healthz`.
    pub async fn start<B: KgcBinary>(server: &Server<B>, args: &[&str]) -> Self {
        Self::start_as(server, &server.kubeconfig_path(), args).await
    }

    /// Like [`Controller::start`], authenticating with another kubeconfig (a service account's
    /// token, say).
    pub async fn start_as<B: KgcBinary>(
        server: &Server<B>,
        kubeconfig: &Path,
        args: &[&str],
    ) -> Self {
        let log = server
            .scratch()
            .join(format!("{}.log", unique("controller")));
        // The tests judge what the controller does, not how fast a production-safe client
        // limit lets it: unlimited unless the test sets a limit itself.
        let unlimited: &[&str] = match args.iter().any(|a| a.starts_with("--kube-api-qps")) {
            true => &[],
            false => &["--kube-api-qps=0"],
        };
        let mut child = B::command()
            .arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--listen", "127.0.0.1:0"])
            .args(unlimited)
            .args(args)
            .env("RUST_LOG", process::rust_log())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(process::log_file(&log))
            .spawn()
            .expect("spawning kgc controller");
        let announced = process::announcement(child.stdout.take().expect("piped stdout"), |l| {
            l.strip_prefix("kgc controller: listening on ")
                .map(|u| u.trim().to_owned())
        });
        let url = match tokio::time::timeout(READY_DEADLINE, announced).await {
            Ok(Ok(url)) => url,
            _ => {
                process::kill(Some(child));
                panic!(
                    "kgc controller did not announce its address; log:\n{}",
                    process::log_tail(&log, 100)
                );
            }
        };
        let mut config = kube::Config::new(url.parse().expect("a URL"));
        // Every status is an answer here (kube-rs retries 503s by default).
        config.default_retry = false;
        let c = Controller {
            child: Some(child),
            url,
            client: Client::try_from(config).expect("a client for the controller"),
            log,
        };
        let deadline = Instant::now() + READY_DEADLINE;
        while c.get("/healthz").await.status != 200 {
            assert!(
                Instant::now() < deadline,
                "/healthz did not answer 200; log:\n{}",
                c.log_tail(100)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        c
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The controller process id.
    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .expect("the controller is not running")
            .id()
    }

    /// `GET path` of the controller's own endpoints; any status is returned.
    pub async fn get(&self, path: &str) -> RawResponse {
        raw(&self.client, "GET", path, None, Vec::new()).await
    }

    /// The last `lines` lines of the controller's log (stderr).
    pub fn log_tail(&self, lines: usize) -> String {
        process::log_tail(&self.log, lines)
    }

    /// SIGTERM and wait (with a deadline) for the exit; returns the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let child = self.child.take().expect("the controller is not running");
        process::signal_and_wait(child, "TERM", "kgc controller", &self.log)
    }

    /// SIGKILL: a crash (that leaves a lease held).
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("the controller is not running");
        child.kill().expect("SIGKILL");
        child.wait().expect("reaping the controller");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        process::kill(self.child.take());
        if std::thread::panicking() {
            eprintln!(
                "---- kgc controller log ({}) ----\n{}\n---- end of log ----",
                self.url,
                self.log_tail(150)
            );
        }
    }
}
