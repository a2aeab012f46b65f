//! A `kgc serve` child process: its scratch directory (data dir, kubeconfig, log), its kube-rs
//! client, and its lifecycle (start, restart, crash, signals).

use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use crate::binary::KgcBinary;
use crate::controller::Controller;
use crate::http::http_get_status;
use crate::process::{self, READY_DEADLINE};

/// A running `kgc serve` of the binary `B` (test binaries name it `Server`, see
/// [`bind_kgc!`](crate::bind_kgc)).
pub struct Server<B> {
    child: Option<Child>,
    root: tempfile::TempDir,
    args: Vec<String>,
    url: String,
    client: Option<Client>,
    /// A `kgc controller` running the collector against this server (see [`Server::start_gc`]).
    pub(crate) controller: Option<Controller>,
    /// HTTPS with authentication and RBAC (see [`Server::start_secure`]); otherwise
    /// `--insecure-http`.
    secure: bool,
    /// Everything on, the simulators and workload controllers included (see [`SIMULATORS`]).
    living: bool,
    /// The server's own etcd under `KGC_TEST_DATASTORE=etcd` ([`DATASTORE`]), kept across
    /// restarts.
    etcd: Option<crate::etcd::EtcdCluster>,
    binary: PhantomData<fn() -> B>,
}

/// The environment variable that picks the backend of every server a test spawns: unset (or
/// `sqlite`), the data directory's SQLite file (or memory, for `--in-memory`); `etcd`, a fresh
/// one-member etcd of the server's own (`--datastore-endpoint`; `--in-memory` is dropped, the
/// etcd being as throwaway), so that the suites of the store's semantics run on both backends.
/// Each server has an etcd to itself, since a kgc server expects to be its etcd's only writer.
pub const DATASTORE: &str = "KGC_TEST_DATASTORE";

/// Whether `KGC_TEST_DATASTORE` asks for etcd; any value but `sqlite` and `etcd` is refused.
fn on_etcd() -> bool {
    match std::env::var(DATASTORE).as_deref() {
        Err(_) | Ok("" | "sqlite") => false,
        Ok("etcd") => true,
        Ok(other) => panic!("{DATASTORE}={other:?}: use sqlite or etcd"),
    }
}

/// The controllers that make the cluster live: off in a server a test starts with
/// [`Server::start`] or [`Server::start_with`], so that a test of one collector can forge the
/// status they would write and create the children they would create; on with
/// [`Server::living`]. Such a server also registers no node (`--nodes=0`) unless the test
/// says `--nodes`.
pub const SIMULATORS: &[&str] = &[
    "replicaset",
    "deployment",
    "statefulset",
    "job",
    "daemonset",
    "replicationcontroller",
    "cronjob",
    "provisioner",
    "persistentvolume-binder",
    "scheduler",
    "nodes-sim",
    "node-lifecycle",
    "kubelet-sim",
];

impl<B: KgcBinary> Server<B> {
    /// A fresh in-memory server.
    pub async fn start() -> Self {
        Self::start_with(&["--in-memory"]).await
    }

    /// A fresh server with extra `kgc serve` arguments (`--listen` and `--data-dir` are added).
    /// Pass no `--in-memory` for a durable server.
    pub async fn start_with(args: &[&str]) -> Self {
        Self::start_inner(args, false, |_| {}).await
    }

    /// A fresh in-memory server as users run it, every controller on: pods are created by
    /// their controllers, not by the test.
    pub async fn living(args: &[&str]) -> Self {
        let mut s = Self::unstarted(args, false);
        s.living = true;
        s.spawn().await;
        s
    }

    /// A living server (as [`Server::living`]) that is also secure (as
    /// [`Server::start_secure`]): for what a namespace user may do to running workloads.
    pub async fn living_secure(args: &[&str]) -> Self {
        let mut s = Self::unstarted(args, true);
        s.living = true;
        s.spawn().await;
        s
    }

    /// Like [`Server::start_with`], with the data directory set up by `prepare` first (a
    /// size-limited file system mounted on it, the files of an older kgc).
    pub async fn start_prepared(args: &[&str], prepare: impl FnOnce(&Path)) -> Self {
        Self::start_inner(args, false, prepare).await
    }

    /// A fresh server as users run it: HTTPS with authentication and RBAC (no
    /// `--insecure-http`). Its kubeconfig authenticates as the `system:masters` admin; `args`
    /// are added as in [`Server::start_with`].
    pub async fn start_secure(args: &[&str]) -> Self {
        Self::start_inner(args, true, |_| {}).await
    }

    async fn start_inner(args: &[&str], secure: bool, prepare: impl FnOnce(&Path)) -> Self {
        let mut s = Self::unstarted(args, secure);
        prepare(&s.data_dir());
        s.spawn().await;
        s
    }

    fn unstarted(args: &[&str], secure: bool) -> Self {
        let root = tempfile::Builder::new()
            .prefix("kgc-test-")
            .tempdir()
            .expect("creating a temporary directory");
        std::fs::create_dir_all(root.path().join("data")).expect("creating the data dir");
        Server {
            child: None,
            root,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            url: String::new(),
            client: None,
            controller: None,
            secure,
            living: false,
            etcd: None,
            binary: PhantomData,
        }
    }

    /// What turns the [`SIMULATORS`] off, unless the server is [`Server::living`]: `--disable`
    /// for each, and `--nodes 0` unless the test gives `--nodes`.
    fn simulators_off(&self) -> Vec<String> {
        if self.living {
            return Vec::new();
        }
        let mut out = vec![format!("--disable={}", SIMULATORS.join(","))];
        if !self
            .args
            .iter()
            .any(|a| a == "--nodes" || a.starts_with("--nodes="))
        {
            out.push("--nodes=0".into());
        }
        out
    }

    /// The test's arguments, on the backend [`DATASTORE`] picks.
    async fn datastore_args(&mut self) -> Vec<String> {
        let chosen = self
            .args
            .iter()
            .any(|a| a.starts_with("--datastore-endpoint"));
        if chosen || !on_etcd() {
            return self.args.clone();
        }
        if self.etcd.is_none() {
            let etcd = crate::etcd::EtcdCluster::start(1).await;
            self.etcd =
                Some(etcd.unwrap_or_else(|| panic!("{DATASTORE}=etcd: etcd is not on PATH")));
        }
        let endpoint = self
            .etcd
            .as_ref()
            .map(|e| e.endpoints())
            .unwrap_or_default();
        self.args
            .iter()
            .filter(|a| *a != "--in-memory")
            .cloned()
            .chain(["--datastore-endpoint".to_owned(), endpoint])
            .collect()
    }

    /// `--leader-elect=false` for a server that is not [`Server::living`], unless the test
    /// names a `--leader-elect*` flag: such a server is a quiet store the test drives itself
    /// (the tests that assert that something wrote nothing compare store revisions), and the
    /// renewals of the controllers' leases would write every 2 s.
    fn election_off(&self) -> Option<&'static str> {
        let named = self.args.iter().any(|a| a.starts_with("--leader-elect"));
        (!self.living && !named).then_some("--leader-elect=false")
    }

    async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let args = self.datastore_args().await;
        let mut child = B::command()
            .arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args((!self.secure).then_some("--insecure-http"))
            .args(self.simulators_off())
            .args(self.election_off())
            .args(&args)
            .env("RUST_LOG", process::rust_log())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(process::log_file(&self.log_path()))
            .spawn()
            .expect("spawning kgc serve");
        let mut url = None;
        let announced =
            process::announcement(child.stdout.take().expect("piped stdout"), move |line| {
                if let Some(u) = line.strip_prefix("kgc serve: listening on ") {
                    url = Some(u.trim().to_owned());
                    return None;
                }
                let k = line.strip_prefix("export KUBECONFIG=")?;
                Some((url.clone()?, k.trim().to_owned()))
            });
        self.child = Some(child);
        let (url, kubeconfig) = match tokio::time::timeout(READY_DEADLINE, announced).await {
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
        if self.living {
            self.wait_simulated_nodes().await;
        }
    }

    /// Waits for the `--nodes` simulated nodes (1 by default) to be registered. They come with
    /// the controller manager's leadership term, which starts just after readiness (a lease
    /// is taken first), and a living test may name them in its first request. A test that
    /// chooses the controllers (`--controllers`, or `nodes-sim` named in `--disable`) waits
    /// for what it chose itself.
    async fn wait_simulated_nodes(&self) {
        if self
            .args
            .iter()
            .any(|a| a.starts_with("--controllers") || a.contains("nodes-sim"))
        {
            return;
        }
        let wanted: usize = self
            .args
            .iter()
            .zip(self.args.iter().skip(1).chain([&String::new()]))
            .find_map(|(a, next)| match a.strip_prefix("--nodes") {
                Some("") => next.parse().ok(),
                Some(v) => v.strip_prefix('=')?.parse().ok(),
                None => None,
            })
            .unwrap_or(1);
        if wanted == 0 {
            return;
        }
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(self.client());
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let registered = nodes
                .list_metadata(&Default::default())
                .await
                .map(|l| {
                    l.items
                        .iter()
                        .filter(|n| {
                            n.metadata
                                .name
                                .as_deref()
                                .is_some_and(|n| n.starts_with("kgc-node-"))
                        })
                        .count()
                })
                .unwrap_or(0);
            if registered >= wanted {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{registered} of {wanted} simulated nodes registered within {READY_DEADLINE:?}; log:\n{}",
                self.log_tail(200)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
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

    /// Restarts the server on the same data dir with other `kgc serve` arguments (the lifecycle
    /// tests move time forward this way: a larger hidden `--clock-offset`).
    pub async fn restart_with(&mut self, args: &[&str]) {
        self.args = args.iter().map(|a| (*a).to_owned()).collect();
        self.restart().await;
    }
}

impl<B> Server<B> {
    /// Polls `GET /readyz` until 200, with a deadline.
    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let ready = if self.secure {
                // Through the kube client: it speaks TLS.
                let req = http::Request::get("/readyz")
                    .body(Vec::new())
                    .expect("building a request");
                self.client().request_text(req).await.is_ok()
            } else {
                self.is_ready().await
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

    /// Whether `GET /readyz` answers 200 right now (plain HTTP servers only).
    pub async fn is_ready(&self) -> bool {
        let addr = self.url.trim_start_matches("http://");
        http_get_status(addr, "/readyz").await == Some(200)
    }

    /// The data directory (`--data-dir`).
    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir().join("kubeconfig")
    }

    /// The root of this server's scratch directory (kubeconfigs, files for `kubectl -f`,
    /// logs).
    pub fn scratch(&self) -> &Path {
        self.root.path()
    }

    fn log_path(&self) -> PathBuf {
        self.root.path().join("server.log")
    }

    /// `http://127.0.0.1:PORT` (`https://` for [`Server::start_secure`]).
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

    /// Writes a file in this server's scratch directory (for `kubectl -f FILE`).
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.root.path().join(name);
        let mut f = File::create(&path).expect("creating a scratch file");
        f.write_all(contents.as_bytes())
            .expect("writing a scratch file");
        path
    }

    /// The last `lines` lines of the server's log (stderr).
    pub fn log_tail(&self, lines: usize) -> String {
        process::log_tail(&self.log_path(), lines)
    }

    /// SIGKILL (`kill -9`), as a crash; returns the exit status.
    pub fn kill9(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the server is not running");
        self.client = None;
        child.kill().expect("sending SIGKILL");
        child.wait().expect("reaping the server")
    }

    /// SIGSTOP, as a process frozen in place (a VM paused, a stall): returns once the kernel
    /// reports the process stopped. Its sockets stay open; nothing it has not yet sent goes
    /// out until [`Server::resume`].
    pub async fn pause(&self) {
        process::pause(self.pid(), "the server").await;
    }

    /// SIGCONT after [`Server::pause`].
    pub fn resume(&self) {
        process::send(self.pid(), "CONT");
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
        let child = self.child.take().expect("the server is not running");
        self.client = None;
        process::signal_and_wait(child, signal, "kgc serve", &self.log_path())
    }
}

impl<B> Drop for Server<B> {
    fn drop(&mut self) {
        // The collector's controller first: it must not outlive the server it watches.
        if self.controller.take().is_some() {
            crate::gc::set_graph_base(None);
        }
        process::kill(self.child.take());
        if std::thread::panicking() {
            eprintln!(
                "---- kgc serve log ({}) ----\n{}\n---- end of log ----",
                self.url,
                self.log_tail(150)
            );
        }
    }
}

/// `kgc serve add-user NAME ARGS...` against this server's data directory: writes the printed
/// kubeconfig into the scratch directory and returns its path.
pub fn add_user<B: KgcBinary>(server: &Server<B>, name: &str, args: &[&str]) -> PathBuf {
    let out = B::command()
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

/// Copies `from`'s `pki/` into `to`: how a second replica joins with the first one's identity
/// (CA, service-account key, encryption configuration). Pass it to [`Server::start_prepared`]
/// with the first replica's [`Server::data_dir`].
pub fn copy_pki(from: &Path, to: &Path) {
    let (from, to) = (from.join("pki"), to.join("pki"));
    std::fs::create_dir_all(&to).expect("creating pki/");
    for entry in std::fs::read_dir(&from).expect("reading the first replica's pki/") {
        let entry = entry.expect("reading pki/");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copying pki/");
    }
}
