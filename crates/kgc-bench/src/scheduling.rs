//! Scheduling throughput (issue 19): a durable server with `--sched-nodes` Ready nodes; 16
//! clients create `--pods` pods at once; the time from the first create until the scheduler has
//! bound the last pod (none left without `spec.nodeName`). Then the scheduler alone: the same
//! pods created with it off, and the server restarted with it on, until all are bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::thousands;
use crate::{Bench, create_namespace};

/// Clients creating pods, as the measurement has it.
const CLIENTS: usize = 16;
/// How often the unbound pods are counted.
const POLL: Duration = Duration::from_millis(50);

fn pod(name: &str) -> Bytes {
    Bytes::from(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}})
        .to_string(),
    )
}

/// Registers a Ready node: created, then its status written through `/status`.
async fn node(conn: &mut Conn, name: &str) -> anyhow::Result<()> {
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
    let created = conn
        .expect(
            StatusCode::CREATED,
            Method::POST,
            "/api/v1/nodes",
            Some(Bytes::from(body.to_string())),
        )
        .await?;
    let mut node: Value = serde_json::from_slice(&created)?;
    let resources = json!({"cpu": "64", "memory": "256Gi", "pods": "500"});
    node["status"] = json!({"capacity": resources, "allocatable": resources,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]});
    conn.expect(
        StatusCode::OK,
        Method::PUT,
        &format!("/api/v1/nodes/{name}/status"),
        Some(Bytes::from(node.to_string())),
    )
    .await?;
    Ok(())
}

/// How many pods of `ns` have no node yet.
async fn unbound(conn: &mut Conn, ns: &str) -> anyhow::Result<usize> {
    let body = conn
        .expect(
            StatusCode::OK,
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D"),
            None,
        )
        .await?;
    let list: Value = serde_json::from_slice(&body)?;
    Ok(list["items"].as_array().map_or(0, Vec::len))
}

/// `pods` pods created in `ns` by [`CLIENTS`] clients at once.
async fn create_pods(addr: std::net::SocketAddr, ns: &str, pods: usize) -> anyhow::Result<()> {
    let path: Arc<str> = format!("/api/v1/namespaces/{ns}/pods").into();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let mut c = Conn::connect(addr).await?;
        let (next, path) = (Arc::clone(&next), Arc::clone(&path));
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= pods {
                    break;
                }
                c.expect(
                    StatusCode::CREATED,
                    Method::POST,
                    &path,
                    Some(pod(&format!("p-{i:06}"))),
                )
                .await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Waits until no pod of `ns` is left unbound.
async fn all_bound(conn: &mut Conn, ns: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while unbound(conn, ns).await? > 0 {
        anyhow::ensure!(Instant::now() < deadline, "pods still unbound after 300 s");
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

impl Bench {
    pub(crate) async fn scheduling(&mut self) -> anyhow::Result<()> {
        let (pods, nodes) = (self.cli.pods, self.cli.sched_nodes);
        println!(
            "\n== scheduling: {} pods created by {CLIENTS} clients onto {nodes} nodes, durable; from the first create until every pod is bound",
            thousands(pods as u64)
        );
        let dir = self.tempdir("scheduling")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for i in 0..nodes {
            node(&mut conn, &format!("bench-node-{i}")).await?;
        }
        create_namespace(&mut conn, "sched").await?;
        let started = Instant::now();
        create_pods(server.addr, "sched", pods).await?;
        let created = started.elapsed();
        all_bound(&mut conn, "sched").await?;
        let bound = started.elapsed();
        let cpu = server.cpu_time()?;
        let result = format!(
            "created in {:.2} s ({} pods/s); all bound after {:.2} s: {} pods/s; server CPU {:.1} s",
            created.as_secs_f64(),
            thousands((pods as f64 / created.as_secs_f64()) as u64),
            bound.as_secs_f64(),
            thousands((pods as f64 / bound.as_secs_f64()) as u64),
            cpu.as_secs_f64(),
        );
        println!("{result}");
        self.row(
            format!(
                "{} pods created and scheduled, {nodes} nodes",
                thousands(pods as u64)
            ),
            result,
        );
        server.stop().await?;

        // The scheduler alone: pods waiting when it starts.
        let dir = self.tempdir("scheduling-alone")?;
        let mut off = self.cli.server_args.clone();
        off.push("--disable=scheduler".into());
        let (server, _) = self.start_durable(dir.path(), &off).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for i in 0..nodes {
            node(&mut conn, &format!("bench-node-{i}")).await?;
        }
        create_namespace(&mut conn, "sched").await?;
        create_pods(server.addr, "sched", pods).await?;
        drop(conn);
        server.stop().await?;
        let (server, ready) = self
            .start_durable(dir.path(), &self.cli.server_args)
            .await?;
        let started = Instant::now();
        let mut conn = Conn::connect(server.addr).await?;
        all_bound(&mut conn, "sched").await?;
        let bound = started.elapsed();
        let cpu = server.cpu_time()?;
        let result = format!(
            "{} pods bound {:.2} s after the server was ready ({:.2} s): {} binds/s; server CPU {:.1} s",
            thousands(pods as u64),
            bound.as_secs_f64(),
            ready.as_secs_f64(),
            thousands((pods as f64 / bound.as_secs_f64()) as u64),
            cpu.as_secs_f64(),
        );
        println!("{result}");
        self.row(
            format!(
                "{} waiting pods scheduled, {nodes} nodes",
                thousands(pods as u64)
            ),
            result,
        );
        server.stop().await?;
        Ok(())
    }
}
