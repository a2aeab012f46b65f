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

/// A running etcd cluster.
pub struct EtcdCluster {
    members: Vec<Member>,
    root: tempfile::TempDir,
}

struct Member {
    name: String,
    client_url: String,
    child: Option<Child>,
}

impl EtcdCluster {
    /// Starts `members` members and waits until the cluster has a leader. `None` (with a line
    /// on stderr saying the test is skipped) when `etcd` is not installed and `CI` is unset.
    pub async fn start(members: usize) -> Option<Self> {
        let binary = etcd_binary()?;
        let root = tempfile::Builder::new()
            .prefix("kgc-etcd-")
            .tempdir()
            .expect("creating a temporary directory");
        let ports: Vec<(u16, u16)> = (0..members).map(|_| (free_port(), free_port())).collect();
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
        };
        for (i, (client, peer)) in ports.into_iter().enumerate() {
            let name = format!("m{i}");
            let client_url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let data = cluster.root.path().join(&name);
            let log = process::log_file(&cluster.log_path(&name));
            let child = Command::new(&binary)
                .arg("--name")
                .arg(&name)
                .arg("--data-dir")
                .arg(&data)
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer_url])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &initial_cluster])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", &token])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("spawning {}: {e}", binary.display()));
            cluster.members.push(Member {
                name,
                client_url,
                child: Some(child),
            });
        }
        cluster.wait_healthy().await;
        Some(cluster)
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

    /// Kills member `i` with SIGKILL (a crash: the others go on if they keep a quorum).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Polls `/health` of the live members until one says the cluster is healthy.
    pub async fn wait_healthy(&self) {
        let deadline = Instant::now() + HEALTHY_DEADLINE;
        loop {
            for m in self.members.iter().filter(|m| m.child.is_some()) {
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

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("finding a free port")
}
