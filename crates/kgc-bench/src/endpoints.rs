//! EndpointSlices for a Service over `--pods` pods (issue 32), against a durable `kgc serve`
//! with its controllers on: the Service first, then the pods, bound to a simulated node and
//! created by 16 clients (as the `pods` measurement); a watch on the namespace's EndpointSlices
//! counts the Service's ready endpoints. Measured: from the last pod Ready (the simulated
//! kubelet's status writes, polled on `/metrics` every 10 ms) to the slices holding every pod
//! ready, and the requests the server served (`kgc_apiserver_requests_total`) in that window
//! and over the whole run, less the benchmark's own.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::pods::{NS, create_running, prepare, written};
use crate::server::Server;
use crate::stats::thousands;
use crate::tree::requests;
use crate::{Bench, create_namespace};

const SERVICE: &str = "bench";
const DEADLINE: Duration = Duration::from_secs(300);

/// Ready endpoints of one slice of the Service, or `None` for another Service's slice.
fn ready_endpoints(slice: &Value) -> Option<usize> {
    if slice["metadata"]["labels"]["kubernetes.io/service-name"] != SERVICE {
        return None;
    }
    Some(slice["endpoints"].as_array().map_or(0, |eps| {
        eps.iter()
            .filter(|e| e["conditions"]["ready"] == true)
            .count()
    }))
}

/// Watches the namespace's EndpointSlices until the Service's hold `n` ready endpoints; sends
/// the time that happened and the number of slices.
async fn watch_slices(
    mut conn: Conn,
    n: usize,
    done: tokio::sync::oneshot::Sender<(Instant, usize)>,
) -> anyhow::Result<()> {
    let path = format!("/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices?watch=true");
    let resp = conn.send(Method::GET, &path, None).await?;
    anyhow::ensure!(resp.status() == StatusCode::OK, "watch: {}", resp.status());
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let mut slices: HashMap<String, usize> = HashMap::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let ev: Value = serde_json::from_slice(&line).context("parsing a watch event")?;
            let name = ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let Some(ready) = ready_endpoints(&ev["object"]) else {
                continue;
            };
            if ev["type"] == "DELETED" {
                slices.remove(&name);
            } else {
                slices.insert(name, ready);
            }
            if slices.values().sum::<usize>() >= n {
                let _ = done.send((Instant::now(), slices.len()));
                return Ok(());
            }
        }
    }
    anyhow::bail!("the EndpointSlice watch ended")
}

impl Bench {
    pub(crate) async fn endpoints(&mut self) -> anyhow::Result<()> {
        let n = self.cli.pods;
        println!(
            "\n== EndpointSlices: a Service over {} pods bound to a simulated node, created by 16 clients after the Service; durable, controllers on",
            thousands(n as u64)
        );
        let dir = self.tempdir("endpoints")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        prepare(&mut conn).await?;
        // Not the pods' namespace: one write, to be sure the controllers have started.
        create_namespace(&mut conn, "warmup").await?;
        let service = json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE},
            "spec": {"selector": {"run": "bench"}, "ports": [{"port": 80, "targetPort": 80}]},
        });
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            &format!("/api/v1/namespaces/{NS}/services"),
            Some(Bytes::from(service.to_string())),
        )
        .await?;
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let watcher = tokio::spawn(watch_slices(Conn::connect(server.addr).await?, n, done_tx));
        // The /metrics read itself counts.
        let before = requests(&mut conn).await? + 1;
        let started = Instant::now();
        let (creates, polls) = create_running(&server, &mut conn, n).await?;
        let last_ready = Instant::now();
        let at_ready = requests(&mut conn).await? + 1;
        let (complete, slices) = tokio::time::timeout(DEADLINE, done)
            .await
            .context("the slices were not complete in time")?
            .context("the EndpointSlice watch failed")?;
        let after = requests(&mut conn).await?;
        watcher.abort();
        anyhow::ensure!(written(&mut conn).await? >= n, "pods not all Running");
        let lag = if complete >= last_ready {
            format!("{:.0} ms", (complete - last_ready).as_secs_f64() * 1e3)
        } else {
            format!(
                "complete {:.0} ms before it was seen",
                (last_ready - complete).as_secs_f64() * 1e3
            )
        };
        let window = after.saturating_sub(at_ready);
        // Less the creates, the kubelet's status writes (one a pod), and the benchmark's
        // /metrics reads.
        let run = after.saturating_sub(before);
        let others = run.saturating_sub(2 * n as u64 + polls + 1);
        println!(
            "   pods created and Running in {:.2} s ({}); last pod Ready → {} ready endpoints in {slices} slices: {lag}; requests in that window {window}; over the whole run {} ({} creates, {} status writes, the rest {})",
            (last_ready - started).as_secs_f64(),
            creates.summary(),
            thousands(n as u64),
            thousands(run),
            thousands(n as u64),
            thousands(n as u64),
            thousands(others)
        );
        self.row(
            format!(
                "EndpointSlices, {} pods: last Ready → complete",
                thousands(n as u64)
            ),
            format!("{lag}; {slices} slices; {window} requests meanwhile"),
        );
        self.row(
            format!(
                "EndpointSlices, {} pods: other requests over the run",
                thousands(n as u64)
            ),
            format!(
                "{} (besides {} creates and as many status writes)",
                thousands(others),
                thousands(n as u64)
            ),
        );
        server.stop().await?;
        Ok(())
    }
}
