//! An etcd cluster on loopback for the tests of `kgc serve --datastore-endpoint`: the machine's
//! `etcd` binary (Debian's `etcd-server`), each member on free ports with its own temporary
//! data directory, killed when the cluster is dropped.
//!
//! Without `etcd` on `PATH` the cluster is not started and [`EtcdCluster::start`] says so,
//! so that a developer without etcd can still run the rest; under CI (`CI` set) a missing
//! etcd fails the test instead, so that CI never passes by skipping.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process;

/// How long a cluster may take to elect a leader (members start in parallel on a busy machine).
const HEALTHY_DEADLINE: Duration = Duration::from_secs(60);

/// How many times [`EtcdCluster::start`] starts a cluster whose port was taken meanwhile.
const START_ATTEMPTS: u32 = 5;

/// What etcd logs before it exits when a port it should listen on is taken.
const PORT_TAKEN: &str = "address already in use";

/// A running etcd cluster.
pub struct EtcdCluster {
    members: Vec<Member>,
    root: tempfile::TempDir,
    binary: PathBuf,
    initial_cluster: String,
    token: String,
}

struct Member {
    name: String,
    client_url: String,
    peer_url: String,
    child: Option<Child>,
}

impl EtcdCluster {
    /// Starts `members` members and waits until the cluster has a leader. `None` (with a line
    /// on stderr saying the test is skipped) when `etcd` is not installed and `CI` is unset.
    ///
    /// A port found free may be taken by another process before etcd binds it (tests start
    /// servers and clusters in parallel): a member that exits saying so is not a failure of
    /// the test, and the cluster is started again on other ports, up to [`START_ATTEMPTS`]
    /// times.
    pub async fn start(members: usize) -> Option<Self> {
        let binary = etcd_binary()?;
        let mut attempt = 1;
        loop {
            let mut cluster = Self::spawn_new(binary.clone(), members);
            match cluster.wait_started().await {
                Ok(()) => return Some(cluster),
                Err(taken) if attempt < START_ATTEMPTS => {
                    eprintln!("etcd: {taken}; starting the cluster again on other ports");
                    attempt += 1;
                }
                Err(taken) => panic!("etcd: {taken}, {START_ATTEMPTS} times"),
            }
        }
    }

    /// Spawns `members` new members on fresh ports and a fresh data directory.
    fn spawn_new(binary: PathBuf, members: usize) -> Self {
        let root = tempfile::Builder::new()
            .prefix("kgc-etcd-")
            .tempdir()
            .expect("creating a temporary directory");
        let ports = free_ports(members * 2);
        let ports: Vec<(u16, u16)> = ports.chunks(2).map(|p| (p[0], p[1])).collect();
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let token = root
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut cluster = EtcdCluster {
            members: Vec::new(),
            root,
            binary,
            initial_cluster,
            token,
        };
        for (i, (client, peer)) in ports.into_iter().enumerate() {
            cluster.members.push(Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{client}"),
                peer_url: format!("http://127.0.0.1:{peer}"),
                child: None,
            });
            cluster.spawn(i);
        }
        cluster
    }

    /// Waits until every member serves on its own client port and the cluster says it is
    /// healthy. A member which exited because one of its ports was taken ends the wait with the
    /// line etcd logged; one that exited otherwise fails the test with its log. Health is asked
    /// only once every member has logged that it serves its port: until then the port may
    /// answer for another test's etcd that took it.
    async fn wait_started(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + HEALTHY_DEADLINE;
        loop {
            for i in 0..self.members.len() {
                let exited = self.members[i].child.as_mut().map(|c| c.try_wait());
                if let Some(Ok(Some(status))) = exited {
                    let log = self.log_tail(i, 40);
                    if let Some(line) = log.lines().find(|l| l.contains(PORT_TAKEN)) {
                        return Err(line.trim().to_owned());
                    }
                    panic!("etcd member m{i} exited ({status}) while starting; its log:\n{log}");
                }
            }
            if (0..self.members.len()).all(|i| self.serves(i)) {
                for m in &self.members {
                    if healthy(m.client_url.trim_start_matches("http://")).await {
                        return Ok(());
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "etcd was not healthy within {HEALTHY_DEADLINE:?}; log of m0:\n{}",
                self.log_tail(0, 40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether member `i` logged that it serves clients on its own port.
    fn serves(&self, i: usize) -> bool {
        let m = &self.members[i];
        let serving = format!(
            "serving insecure client requests on {}",
            m.client_url.trim_start_matches("http://")
        );
        std::fs::read_to_string(self.log_path(&m.name)).is_ok_and(|log| log.contains(&serving))
    }

    /// Every member's client URL, comma-separated: the value of `--datastore-endpoint`.
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|m| m.client_url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Each member's client URL.
    pub fn endpoint_list(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// Starts member `i` on its data directory (the first time, or again after [`Self::kill`]:
    /// etcd then rejoins with what it had, ignoring the initial-cluster flags).
    fn spawn(&mut self, i: usize) {
        let m = &self.members[i];
        let data = self.root.path().join(&m.name);
        let log = process::log_file(&self.log_path(&m.name));
        let child = Command::new(&self.binary)
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &m.client_url])
            .args(["--advertise-client-urls", &m.client_url])
            .args(["--listen-peer-urls", &m.peer_url])
            .args(["--initial-advertise-peer-urls", &m.peer_url])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", &self.token])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", self.binary.display()));
        self.members[i].child = Some(child);
    }

    /// Starts member `i` again after [`Self::kill`], on the same ports and data.
    pub fn restart(&mut self, i: usize) {
        assert!(self.members[i].child.is_none(), "member {i} is running");
        self.spawn(i);
    }

    /// Kills member `i` with SIGKILL (a crash: the others go on if they keep a quorum).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOP of member `i`, as a machine frozen in place: its connections stay open and
    /// silent (the others go on if they keep a quorum). Returns once the kernel reports it
    /// stopped.
    pub async fn pause(&self, i: usize) {
        process::pause(self.pid(i), "the etcd member").await;
    }

    /// SIGCONT after [`Self::pause`].
    pub fn resume(&self, i: usize) {
        process::send(self.pid(i), "CONT");
    }

    fn pid(&self, i: usize) -> u32 {
        let member = self.members[i].child.as_ref();
        member.expect("member is running").id()
    }

    /// Polls `/health` of the live members until one says the cluster is healthy.
    pub async fn wait_healthy(&self) {
        self.wait_healthy_among(|_| true).await;
    }

    /// Polls member `i`'s `/health` until it says healthy: after [`Self::restart`], it has
    /// rejoined (it knows the leader and serves a quorum read), so that another member may be
    /// killed without losing the quorum.
    pub async fn wait_member_healthy(&self, i: usize) {
        self.wait_healthy_among(|j| j == i).await;
    }

    async fn wait_healthy_among(&self, which: impl Fn(usize) -> bool) {
        let deadline = Instant::now() + HEALTHY_DEADLINE;
        loop {
            let live = self.members.iter().enumerate();
            for (_, m) in live.filter(|(j, m)| which(*j) && m.child.is_some()) {
                if healthy(m.client_url.trim_start_matches("http://")).await {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "etcd was not healthy within {HEALTHY_DEADLINE:?}; log of m0:\n{}",
                self.log_tail(0, 40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last `lines` lines of member `i`'s log.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        process::log_tail(&self.log_path(&self.members[i].name), lines)
    }

    fn log_path(&self, name: &str) -> PathBuf {
        self.root.path().join(format!("{name}.log"))
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// The `etcd` binary on `PATH`; `None` (after saying so) when it is missing outside CI.
fn etcd_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("etcd"))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("etcd is not on PATH (install Debian's etcd-server); CI runs the etcd tests")
        }
        None => {
            eprintln!("skipped: etcd is not on PATH (install Debian's etcd-server to run this)");
            None
        }
    }
}

/// Whether etcd's `GET /health` at `addr` says `"health":"true"` (a leader, a quorum).
async fn healthy(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        Some(String::from_utf8_lossy(&buf).contains("\"health\":\"true\""))
    };
    tokio::time::timeout(Duration::from_secs(2), ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// `n` distinct ports nothing listens on right now (each held until all are found, so that
/// the kernel cannot hand out one twice).
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("finding a free port"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("a bound port").port())
        .collect()
}
