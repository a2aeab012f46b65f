//! The integration-test harness: spawns the real `kgc serve` binary and drives it over HTTP with
//! kube-rs, raw requests and the machine's `kubectl`.
//!
//! Every [`Server`] gets its own temporary directory (data dir, server log and kubectl cache), a
//! free port (`--listen 127.0.0.1:0`, parsed from the `listening on` line) and is killed when
//! dropped. A test that panics prints the tail of the server log.
//!
//! Each test binary includes this module with `mod support;` and uses only part of it.
#![allow(dead_code)]

use std::fs::File;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, Stream, StreamExt, TryStreamExt};
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::Value;

/// How long a server may take to become ready (generous: tests run in parallel on 2 cores).
const READY_DEADLINE: Duration = Duration::from_secs(30);

/// The package that provides `kubectl`, named when it is missing.
pub const KUBECTL_PACKAGE_HINT: &str = "kubectl is required by the kgc integration tests but was not found on PATH: \
     install it (Debian/Ubuntu: `apt-get install kubernetes-client`; Google Cloud SDK: \
     `gcloud components install kubectl`, or the `google-cloud-cli-kubectl`/`kubectl` package)";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A unique, DNS-label-safe name with a prefix (per process; test binaries run in their own
/// processes, and every server is fresh, so this is unique where it matters).
pub fn unique(prefix: &str) -> String {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id() % 100_000)
}

/// A running `kgc serve`.
pub struct Server {
    child: Option<Child>,
    root: tempfile::TempDir,
    args: Vec<String>,
    url: String,
    client: Option<Client>,
    /// A `kgc controller` running the collector against this server (see [`Server::start_gc`]).
    controller: Option<(Child, String)>,
    /// HTTPS with authentication and RBAC (see [`Server::start_secure`]); otherwise
    /// `--insecure-http`.
    secure: bool,
}

/// Set (to anything) to run the garbage-collector suites through `kgc controller` against a
/// `kgc serve --disable gc`, instead of the collector built into `kgc serve`.
pub const GC_VIA_CONTROLLER: &str = "KGC_GC_VIA_CONTROLLER";

thread_local! {
    /// Where the current test's collector serves its graph, when it runs as a controller.
    static GC_GRAPH_BASE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The base URL of the controller running this test's collector, if it runs as one.
pub fn gc_graph_base() -> Option<String> {
    GC_GRAPH_BASE.with(|b| b.borrow().clone())
}

/// The collector's graph around `uid` (`/debug/controllers/garbagecollector/graph`, JSON):
/// from the API server, or from the controller when the collector runs as one. This is the
/// harness's `GraphHasUID`.
pub async fn gc_graph(client: &Client, uid: &str) -> Value {
    let path = format!("/debug/controllers/garbagecollector/graph?uid={uid}&format=json");
    let (status, body) = match gc_graph_base() {
        Some(base) => http_get(&format!("{base}{path}")),
        None => {
            let r = raw(client, "GET", &path, None, Vec::new()).await;
            (r.status, r.text())
        }
    };
    assert_eq!(status, 200, "graph dump: {body}");
    serde_json::from_str(&body).expect("the graph is JSON")
}

/// A plain `GET` (HTTP/1.1, `Connection: close`): status and body.
pub fn http_get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut conn = std::net::TcpStream::connect(host).expect("connecting");
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("writing");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("reading");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

impl Server {
    /// A fresh in-memory server.
    pub async fn start() -> Self {
        Self::start_with(&["--in-memory"]).await
    }

    /// A fresh server with extra `kgc serve` arguments (`--listen` and `--data-dir` are added).
    /// Pass no `--in-memory` for a durable server.
    pub async fn start_with(args: &[&str]) -> Self {
        Self::start_inner(args, false, |_| {}).await
    }

    /// Like [`Server::start_with`], with the data directory set up by `prepare` first (a
    /// size-limited file system mounted on it, the files of an older kgc).
    pub async fn start_prepared(args: &[&str], prepare: impl FnOnce(&Path)) -> Self {
        Self::start_inner(args, false, prepare).await
    }

    async fn start_inner(args: &[&str], secure: bool, prepare: impl FnOnce(&Path)) -> Self {
        let root = tempfile::Builder::new()
            .prefix("kgc-test-")
            .tempdir()
            .expect("creating a temporary directory");
        std::fs::create_dir_all(root.path().join("data")).expect("creating the data dir");
        prepare(&root.path().join("data"));
        let mut s = Server {
            child: None,
            root,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            url: String::new(),
            client: None,
            controller: None,
            secure,
        };
        s.spawn().await;
        s
    }

    /// A server whose garbage collector takes `--gc-workers`/`--gc-resync` from `args`: built in
    /// by default; with [`GC_VIA_CONTROLLER`] set, a `kgc serve --disable gc` plus a
    /// `kgc controller` (no leader election) pointed at it, so that the same suite exercises the
    /// remote path.
    pub async fn start_gc(args: &[&str]) -> Self {
        if std::env::var_os(GC_VIA_CONTROLLER).is_none() {
            return Self::start_with(args).await;
        }
        Self::start_gc_via_controller(args).await
    }

    /// A `kgc serve --disable gc` plus a `kgc controller` (no leader election) pointed at it,
    /// the controller taking `--gc-workers`/`--gc-resync` from `args`.
    pub async fn start_gc_via_controller(args: &[&str]) -> Self {
        let (mut serve_args, mut gc_args) = (vec!["--disable", "gc"], Vec::new());
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if matches!(*a, "--gc-workers" | "--gc-resync") {
                gc_args.push(*a);
                gc_args.extend(it.next());
            } else {
                serve_args.push(*a);
            }
        }
        let mut s = Self::start_with(&serve_args).await;
        let log = File::options()
            .create(true)
            .append(true)
            .open(s.root.path().join("controller.log"))
            .expect("opening the controller log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kgc"))
            .arg("controller")
            .arg("--kubeconfig")
            .arg(s.kubeconfig_path())
            .args(["--listen", "127.0.0.1:0", "--leader-elect=false"])
            .args(&gc_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawning kgc controller");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(u) = line.strip_prefix("kgc controller: listening on ") {
                    let _ = tx.send(u.trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(READY_DEADLINE)
            .expect("kgc controller announced its address");
        let deadline = Instant::now() + READY_DEADLINE;
        while http_get(&format!("{url}/healthz")).0 != 200 {
            assert!(
                Instant::now() < deadline,
                "kgc controller never became healthy"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        GC_GRAPH_BASE.with(|b| *b.borrow_mut() = Some(url.clone()));
        s.controller = Some((child, url));
        s
    }

    /// The data directory (`--data-dir`).
    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir().join("kubeconfig")
    }

    fn log_path(&self) -> PathBuf {
        self.root.path().join("server.log")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is not running").id()
    }

    /// A kube-rs client built from the written kubeconfig (context `kgc`). Rebuilt on restart,
    /// since the port changes.
    pub fn client(&self) -> Client {
        self.client.clone().expect("the server is not running")
    }

    async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("opening the server log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kgc"));
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args((!self.secure).then_some("--insecure-http"))
            .args(&self.args)
            .env(
                "RUST_LOG",
                std::env::var("KGC_TEST_LOG").unwrap_or("info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        let mut child = cmd.spawn().expect("spawning kgc serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = tokio::sync::oneshot::channel::<(String, String)>();
        // Reads the two announcement lines, then keeps draining so the server never writes to a
        // closed pipe.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            let mut url = None;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(u) = line.strip_prefix("kgc serve: listening on ") {
                    url = Some(u.trim().to_owned());
                } else if let Some(k) = line.strip_prefix("export KUBECONFIG=")
                    && let (Some(u), Some(tx)) = (url.clone(), tx.take())
                {
                    let _ = tx.send((u, k.trim().to_owned()));
                }
            }
        });
        self.child = Some(child);
        let announced = tokio::time::timeout(READY_DEADLINE, rx).await;
        let (url, kubeconfig) = match announced {
            Ok(Ok(v)) => v,
            _ => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!(
                    "kgc serve did not announce its address (exit status: {status:?}); log:\n{}",
                    self.log_tail(200)
                );
            }
        };
        let scheme = if self.secure { "https" } else { "http" };
        assert!(
            url.starts_with(&format!("{scheme}://127.0.0.1:")),
            "unexpected listen line {url:?}"
        );
        assert_eq!(
            PathBuf::from(&kubeconfig),
            self.kubeconfig_path(),
            "the export KUBECONFIG line names another file"
        );
        self.url = url;
        let kc = Kubeconfig::read_from(self.kubeconfig_path()).expect("reading the kubeconfig");
        let opts = KubeConfigOptions {
            context: Some("kgc".into()),
            ..KubeConfigOptions::default()
        };
        let config = Config::from_custom_kubeconfig(kc, &opts)
            .await
            .expect("loading the kubeconfig");
        assert_eq!(
            config.cluster_url.to_string().trim_end_matches('/'),
            self.url,
            "the kubeconfig points elsewhere"
        );
        self.client = Some(Client::try_from(config).expect("building the kube client"));
        self.wait_ready().await;
    }

    /// Polls `GET /readyz` until 200, with a deadline.
    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_DEADLINE;
        let addr = self.url.trim_start_matches("http://").to_owned();
        loop {
            let ready = if self.secure {
                // Through the kube client: it speaks TLS.
                let req = http::Request::get("/readyz")
                    .body(Vec::new())
                    .expect("building a request");
                self.client().request_text(req).await.is_ok()
            } else {
                http_get_status(&addr, "/readyz").await == Some(200)
            };
            if ready {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "kgc serve exited before it was ready ({status}); log:\n{}",
                    self.log_tail(200)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "kgc serve was not ready within {READY_DEADLINE:?}; log:\n{}",
                    self.log_tail(200)
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether `GET /readyz` answers 200 right now.
    pub async fn is_ready(&self) -> bool {
        let addr = self.url.trim_start_matches("http://");
        http_get_status(addr, "/readyz").await == Some(200)
    }

    /// The last `lines` lines of the server's log (stderr).
    pub fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            let _ = f.read_to_string(&mut text);
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGKILL (`kill -9`), as a crash; returns the exit status.
    pub fn kill9(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the server is not running");
        self.client = None;
        child.kill().expect("sending SIGKILL");
        child.wait().expect("reaping the server")
    }

    /// SIGTERM and wait (with a deadline) for a clean exit; returns the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal_and_wait("TERM")
    }

    /// SIGINT and wait (with a deadline) for a clean exit; returns the exit status.
    pub fn interrupt(&mut self) -> ExitStatus {
        self.signal_and_wait("INT")
    }

    fn signal_and_wait(&mut self, signal: &str) -> ExitStatus {
        let mut child = self.child.take().expect("the server is not running");
        self.client = None;
        let pid = child.id();
        let sent = Command::new("sh")
            .arg("-c")
            .arg(format!("kill -{signal} {pid}"))
            .status()
            .expect("running kill");
        assert!(sent.success(), "kill -{signal} {pid} failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("waiting for the server") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "kgc serve did not exit within 20 s of SIG{signal}; log:\n{}",
                    self.log_tail(100)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same data dir (terminating it first if it still runs).
    /// The port changes: take a new [`Server::client`] afterwards.
    pub async fn restart(&mut self) {
        if self.child.is_some() {
            let status = self.terminate();
            assert!(
                status.success(),
                "kgc serve exited with {status} on SIGTERM"
            );
        }
        self.spawn().await;
    }

    /// Runs `kubectl` against this server (`KUBECONFIG` and a per-server `KUBECACHEDIR`).
    pub async fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_stdin(args, None).await
    }

    /// Runs `kubectl` with `input` on its stdin (for `-f -`).
    pub async fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        self.kubectl_with_stdin(args, Some(input)).await
    }

    async fn kubectl_with_stdin(&self, args: &[&str], input: Option<&str>) -> Output {
        let mut cmd = self.kubectl_command(args);
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning kubectl");
        if let Some(input) = input {
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().expect("piped stdin");
            stdin
                .write_all(input.as_bytes())
                .await
                .expect("writing kubectl's stdin");
            drop(stdin);
        }
        match tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await {
            Ok(out) => out.expect("running kubectl"),
            Err(_) => panic!("kubectl {args:?} did not finish within 60 s"),
        }
    }

    /// Runs `kubectl`, asserting success; returns stdout.
    pub async fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args).await;
        assert_success(args, &out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `kubectl` with stdin, asserting success; returns stdout.
    pub async fn kubectl_stdin_ok(&self, args: &[&str], input: &str) -> String {
        let out = self.kubectl_stdin(args, input).await;
        assert_success(args, &out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A `kubectl` command set up for this server, for long-running invocations (`get -w`).
    /// The child is killed when dropped.
    pub fn kubectl_command(&self, args: &[&str]) -> tokio::process::Command {
        let kubectl = kubectl_path();
        let mut cmd = tokio::process::Command::new(kubectl);
        cmd.args(args)
            .env("KUBECONFIG", self.kubeconfig_path())
            .env("KUBECACHEDIR", self.root.path().join("kubecache"))
            .kill_on_drop(true);
        cmd
    }

    /// Writes a file in this server's scratch directory (for `kubectl -f FILE`).
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.root.path().join(name);
        let mut f = File::create(&path).expect("creating a scratch file");
        f.write_all(contents.as_bytes())
            .expect("writing a scratch file");
        path
    }

    /// One raw request through the kube client; any status is returned, never an error.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<Vec<u8>>,
    ) -> RawResponse {
        raw(&self.client(), method, path, content_type, body).await
    }

    /// A raw watch: each line of the response body parsed as JSON.
    pub async fn raw_watch(&self, path_and_query: &str) -> WatchLines {
        let req = http::Request::get(path_and_query)
            .body(Vec::new())
            .expect("building a request");
        let body = self
            .client()
            .request_stream(req)
            .await
            .unwrap_or_else(|e| panic!("GET {path_and_query}: {e}"));
        Box::pin(body.lines().map(|l| {
            let line = l.expect("reading a watch line");
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("a watch line is not one JSON document ({e}): {line}"))
        }))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((mut child, url)) = self.controller.take() {
            let _ = child.kill();
            let _ = child.wait();
            GC_GRAPH_BASE.with(|b| *b.borrow_mut() = None);
            if std::thread::panicking() {
                let log = std::fs::read_to_string(self.root.path().join("controller.log"))
                    .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(150).collect();
                eprintln!(
                    "---- kgc controller log ({url}) ----\n{}\n---- end of log ----",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- kgc serve log ({}) ----\n{}\n---- end of log ----",
                self.url,
                self.log_tail(150)
            );
        }
    }
}

fn assert_success(args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kubectl`'s path; panics naming the package when it is missing (tests never skip).
pub fn kubectl_path() -> PathBuf {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|d| d.join("kubectl"))
                .find(|p| is_executable(p))
        })
        .clone()
        .unwrap_or_else(|| panic!("{KUBECTL_PACKAGE_HINT}"))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A minimal `GET` over a fresh TCP connection: the status code, or `None` if the server does
/// not answer (yet).
async fn http_get_status(addr: &str, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fut = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf);
        text.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(2), fut)
        .await
        .ok()
        .flatten()
}

/// The lines of a raw watch, each parsed as JSON.
pub type WatchLines = std::pin::Pin<Box<dyn Stream<Item = Value> + Send>>;

/// A raw HTTP response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the response ({}) is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// One raw request through a kube client; any status is returned, never an error.
pub async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> RawResponse {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    let req = req
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body.into()))
        .expect("building a request");
    let resp = client
        .send(req)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}"))
        .to_vec();
    RawResponse {
        status,
        headers,
        body,
    }
}

/// Asserts a `metav1.Status` failure body: code, reason and exact message.
#[track_caller]
pub fn assert_status(resp: &RawResponse, code: u16, reason: &str, message: &str) {
    let v = resp.json();
    assert_eq!(resp.status, code, "HTTP status; body: {v}");
    assert_eq!(v["kind"], "Status", "body: {v}");
    assert_eq!(v["apiVersion"], "v1", "body: {v}");
    assert_eq!(v["status"], "Failure", "body: {v}");
    assert_eq!(v["code"], code, "body: {v}");
    if reason.is_empty() {
        assert!(
            v.get("reason").is_none_or(|r| r == "" || r.is_null()),
            "no reason expected; body: {v}"
        );
    } else {
        assert_eq!(v["reason"], reason, "body: {v}");
    }
    assert_eq!(v["message"], message, "body: {v}");
}

/// The `metav1.Status` of a kube-rs API error; panics on any other outcome.
#[track_caller]
pub fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Waits for `cond` to hold, polling every 20 ms, up to `deadline`.
pub async fn eventually<F, Fut>(what: &str, deadline: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + deadline;
    loop {
        if cond().await {
            return;
        }
        if Instant::now() > until {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next item of a stream, failing the test after `deadline`.
pub async fn next_within<S, T>(stream: &mut S, deadline: Duration, what: &str) -> T
where
    S: Stream<Item = T> + Unpin,
{
    match tokio::time::timeout(deadline, stream.next()).await {
        Ok(Some(v)) => v,
        Ok(None) => panic!("the stream ended while waiting for {what}"),
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

/// Like [`next_within`] for fallible streams.
pub async fn try_next_within<S, T, E>(stream: &mut S, deadline: Duration, what: &str) -> T
where
    S: futures::TryStream<Ok = T, Error = E> + Unpin,
    E: std::fmt::Debug,
{
    match tokio::time::timeout(deadline, stream.try_next()).await {
        Ok(Ok(Some(v))) => v,
        Ok(Ok(None)) => panic!("the stream ended while waiting for {what}"),
        Ok(Err(e)) => panic!("stream error while waiting for {what}: {e:?}"),
        Err(_) => panic!("timed out after {deadline:?} waiting for {what}"),
    }
}

/// Creates a namespace through kube-rs and returns its name.
pub async fn create_namespace(client: &Client, name: &str) -> String {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
    }))
    .expect("a namespace");
    api.create(&kube::api::PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    name.to_owned()
}

/// A fresh namespace with a unique name.
pub async fn fresh_namespace(client: &Client, prefix: &str) -> String {
    create_namespace(client, &unique(prefix)).await
}

/// Parses a JSON value into a typed object.
pub fn typed<T: k8s_openapi::serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("deserializing a test object")
}

/// `wait.Poll` / `wait.PollImmediate`: polls `cond` every `interval` until it holds; false on
/// timeout.
pub async fn poll<F, Fut>(
    interval: Duration,
    timeout: Duration,
    immediate: bool,
    mut cond: F,
) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    if !immediate {
        tokio::time::sleep(interval).await;
    }
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() + interval > deadline {
            return false;
        }
        tokio::time::sleep(interval).await;
    }
}

/// Asserts that `cond` holds at every check for `period` (upstream's `wait.Poll` loops that
/// fail on the first counter-example and time out as success).
pub async fn consistently<F, Fut>(what: &str, period: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + period;
    loop {
        assert!(cond().await, "{what} stopped holding");
        if Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Server {
    /// Restarts the server on the same data dir with other `kgc serve` arguments (the lifecycle
    /// tests move time forward this way: a larger hidden `--clock-offset`).
    pub async fn restart_with(&mut self, args: &[&str]) {
        self.args = args.iter().map(|a| (*a).to_owned()).collect();
        self.restart().await;
    }

    /// A fresh server as users run it: HTTPS with authentication and RBAC (no
    /// `--insecure-http`). Its kubeconfig authenticates as the `system:masters` admin; `args`
    /// are added as in [`Server::start_with`].
    pub async fn start_secure(args: &[&str]) -> Self {
        Self::start_inner(args, true, |_| {}).await
    }

    /// The root of this server's scratch directory (kubeconfigs, files for `kubectl -f`).
    pub fn scratch(&self) -> &Path {
        self.root.path()
    }
}

/// A `GET /metrics` of the server, as text.
pub async fn metrics_text(client: &Client) -> String {
    raw(client, "GET", "/metrics", None, Vec::new())
        .await
        .text()
}

/// `kgc serve add-user NAME ARGS...` against this server's data directory: writes the printed
/// kubeconfig into the scratch directory and returns its path.
pub fn add_user(server: &Server, name: &str, args: &[&str]) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_kgc"))
        .args(["serve", "add-user", name, "--data-dir"])
        .arg(server.data_dir())
        .args(args)
        .output()
        .expect("running kgc serve add-user");
    assert!(
        out.status.success(),
        "add-user {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = server.scratch().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, &out.stdout).expect("writing a kubeconfig");
    path
}
