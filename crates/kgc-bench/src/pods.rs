//! Pods from creation to Running (issue 19): pods bound to a simulated node by `spec.nodeName`
//! are created by 16 clients, and the clock stops when the simulated kubelet has written the
//! last of them Running (its `kgc_kubelet_pod_status_writes_total{result="ok"}`: one write per
//! pod, checked at the end with a LIST).

use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::thousands;
use crate::{Bench, Kind, create_many, create_namespace};

/// The simulated node the pods are bound to.
const NODE: &str = "kgc-bench-node";
/// The pods' namespace.
pub(crate) const NS: &str = "pods";
const CLIENTS: usize = 16;
const DEADLINE: Duration = Duration::from_secs(300);

/// A pod as `kubectl run` sends it, already bound to the simulated node.
pub(crate) fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"run": "bench"}},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        },
    })
}

/// The kubelet's successful status writes so far.
pub(crate) async fn written(conn: &mut Conn) -> anyhow::Result<usize> {
    let body = conn
        .expect(StatusCode::OK, Method::GET, "/metrics", None)
        .await?;
    let text = String::from_utf8_lossy(&body);
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("kgc_kubelet_pod_status_writes_total{result=\"ok\"} "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0) as usize)
}

/// Creates `n` pods bound to a simulated node of their own (registered here) from
/// [`CLIENTS`] clients, and waits until the simulated kubelet has written every one Running.
pub(crate) async fn run_pods(
    server: &Server,
    conn: &mut Conn,
    n: usize,
) -> anyhow::Result<crate::Creates> {
    prepare(conn).await?;
    Ok(create_running(server, conn, n).await?.0)
}

/// The namespace `pods` and the simulated node the pods are bound to.
pub(crate) async fn prepare(conn: &mut Conn) -> anyhow::Result<()> {
    create_namespace(conn, NS).await?;
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "annotations": {"kgc.io/simulated": "true"}},
        "spec": {"podCIDR": "10.128.0.0/14"},
    });
    conn.expect(
        StatusCode::CREATED,
        Method::POST,
        "/api/v1/nodes",
        Some(Bytes::from(node.to_string())),
    )
    .await?;
    Ok(())
}

/// Creates `n` pods in the namespace [`prepare`] made, and waits until the simulated kubelet
/// has written every one Running; also returns how many `/metrics` reads that took.
pub(crate) async fn create_running(
    server: &Server,
    conn: &mut Conn,
    n: usize,
) -> anyhow::Result<(crate::Creates, u64)> {
    let started = Instant::now();
    let creates = create_many(server.addr, Kind::Pods, NS, "p", CLIENTS, n).await?;
    let mut polls = 1;
    while written(conn).await? < n {
        if started.elapsed() > DEADLINE {
            anyhow::bail!("pods not Running after {DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        polls += 1;
    }
    Ok((creates, polls))
}

impl Bench {
    pub(crate) async fn pods(&mut self) -> anyhow::Result<()> {
        let n = self.cli.small_list;
        println!(
            "\n== pods to Running: {} pods bound to a simulated node, created by {CLIENTS} clients against a durable server, until the simulated kubelet has written every one Running",
            thousands(n as u64)
        );
        let dir = self.tempdir("pods")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        let cpu_before = server.cpu_time()?;
        let started = Instant::now();
        let creates = run_pods(&server, &mut conn, n).await?;
        let elapsed = started.elapsed();
        let cpu = server.cpu_time()? - cpu_before;
        let body = conn
            .expect(
                StatusCode::OK,
                Method::GET,
                "/api/v1/namespaces/pods/pods",
                None,
            )
            .await?;
        let list: Value = serde_json::from_slice(&body).context("parsing the pod LIST")?;
        let running = list["items"].as_array().map_or(0, |a| {
            a.iter()
                .filter(|p| p["status"]["phase"] == "Running")
                .count()
        });
        anyhow::ensure!(running == n, "{running} of {n} pods Running");
        let rate = n as f64 / elapsed.as_secs_f64();
        let result = format!(
            "{} pods/s created to Running ({} in {:.2} s; creates alone {}); server CPU {:.1} s",
            thousands(rate.round() as u64),
            thousands(n as u64),
            elapsed.as_secs_f64(),
            creates.summary(),
            cpu.as_secs_f64()
        );
        println!("   {result}");
        let row = self.row(format!("pods to Running, {CLIENTS} clients"), result);
        row.target = "≥ 5,000/s".into();
        row.met = Some(rate >= 5000.0);
        row.reference = "kwok: 20 pods/s".into();
        server.stop().await?;
        Ok(())
    }
}
