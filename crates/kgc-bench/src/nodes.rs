//! What simulated nodes cost (issue 19): a durable `kgc serve --nodes N` at steady state,
//! leases and node status included: the server's CPU over a minute, its RSS, and how late
//! leases are renewed, from the renewals a watch sees (each lease's interval between two
//! renewals, less the nominal 10 s).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::Bench;
use crate::http::Conn;
use crate::server::Server;
use crate::stats::{Samples, thousands};

/// How long the CPU is measured once every node renews at its pace.
const WINDOW: Duration = Duration::from_secs(60);
/// The kubelet's renewal interval, which the simulated nodes keep.
const RENEW_INTERVAL: f64 = 10.0;
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

impl Bench {
    pub(crate) async fn nodes(&mut self) -> anyhow::Result<()> {
        let n = self.cli.nodes;
        println!(
            "\n== simulated nodes: a durable `kgc serve --nodes {}`, CPU time (user + system) over {} s at steady state, lease renewal lag",
            thousands(n as u64),
            WINDOW.as_secs()
        );
        let dir = self.tempdir("nodes")?;
        let mut launch = self.launch(dir.path(), false);
        let mut args = launch.extra_args.to_vec();
        args.push(format!("--nodes={n}"));
        launch.extra_args = &args;
        let (server, _) = Server::start(launch).await?;
        let mut conn = Conn::connect(server.addr).await?;
        let started = Instant::now();
        let rv = loop {
            let body = conn
                .expect(StatusCode::OK, Method::GET, LEASES, None)
                .await?;
            let list: Value = serde_json::from_slice(&body)?;
            let have = list["items"].as_array().map_or(0, Vec::len);
            if have >= n {
                break list["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
            }
            if started.elapsed() > Duration::from_secs(300) {
                anyhow::bail!("only {have} of {n} leases after 5 minutes");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        println!(
            "   {n} nodes with leases after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let pods = self.cli.node_pods;
        let mut rv = rv;
        if pods > 0 {
            crate::pods::run_pods(&server, &mut conn, pods).await?;
            println!(
                "   and {} pods Running after {:.1} s",
                thousands(pods as u64),
                started.elapsed().as_secs_f64()
            );
            // The pods' events have pushed the leases' version out of the watch window.
            let body = conn
                .expect(StatusCode::OK, Method::GET, LEASES, None)
                .await?;
            let list: Value = serde_json::from_slice(&body)?;
            rv = list["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
        }
        let lags = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let watcher = tokio::spawn(renewal_lags(server.addr, rv, lags.clone()));
        // Every node's first renewal is spread over the interval; then they renew at pace.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let before = server.cpu_time()?;
        tokio::time::sleep(WINDOW).await;
        let used = server.cpu_time()? - before;
        let rss = server.rss_kib()?;
        watcher.abort();
        let share = used.as_secs_f64() / WINDOW.as_secs_f64() * 100.0;
        let cpu = format!(
            "{:.0} ms of CPU in {} s ({share:.1}% of a core), RSS {} MiB",
            used.as_secs_f64() * 1e3,
            WINDOW.as_secs(),
            rss / 1024
        );
        println!("   {cpu}");
        self.row(
            format!(
                "{} simulated nodes, {} pods, steady state",
                thousands(n as u64),
                thousands(pods as u64)
            ),
            cpu,
        );
        let lags = std::mem::take(&mut *lags.lock().unwrap_or_else(|p| p.into_inner()));
        let samples = Samples::new(lags);
        let lag = format!(
            "{} renewals: lag p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
            samples.len(),
            samples.median(),
            samples.pct(99.0),
            samples.max()
        );
        println!("   {lag}");
        self.row("lease renewal lag (interval − 10 s)", lag);
        server.stop().await?;
        Ok(())
    }
}

/// Watches the leases from `rv` and records in `lags`, for every renewal after a lease's first
/// one seen, how much longer than 10 s its interval was, in milliseconds.
async fn renewal_lags(
    addr: std::net::SocketAddr,
    rv: String,
    lags: std::sync::Arc<std::sync::Mutex<Vec<f64>>>,
) -> anyhow::Result<()> {
    let mut conn = Conn::connect(addr).await?;
    let path = format!("{LEASES}?watch=1&resourceVersion={rv}&allowWatchBookmarks=false");
    let resp = conn.send(Method::GET, &path, None).await?;
    anyhow::ensure!(resp.status() == StatusCode::OK, "watch: {}", resp.status());
    let mut body = resp.into_body();
    let mut last: HashMap<String, f64> = HashMap::new();
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("reading the watch")?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        buf.extend_from_slice(data);
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            let obj = &event["object"];
            let (Some(name), Some(at)) = (
                obj["metadata"]["name"].as_str(),
                obj["spec"]["renewTime"].as_str().and_then(seconds),
            ) else {
                continue;
            };
            if let Some(prev) = last.insert(name.to_owned(), at) {
                let lag_ms = (at - prev - RENEW_INTERVAL) * 1e3;
                lags.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(lag_ms.max(0.0));
            }
        }
    }
    Ok(())
}

/// Seconds since the epoch of an RFC 3339 MicroTime.
fn seconds(s: &str) -> Option<f64> {
    let t: jiff::Timestamp = s.parse().ok()?;
    Some(t.as_microsecond() as f64 / 1e6)
}
