//! Events (issue 30) against a durable `kgc serve`:
//! - `events`: `--events` Events posted by 16 writers, once with the default `--event-ttl` (1 h:
//!   none expires) and once with `--event-ttl=2s`, so that they expire while the writers
//!   write; throughput and the writers' p99 (goal: within 20% of the run without expiry), and,
//!   once the TTL has passed, the Events left, the server's RSS and the database's size. Events
//!   posted through the API are stored as sent, as kube-apiserver stores them: aggregation and
//!   the spam filter are the recorders' (client-go's correlator, kgc's own controllers'), not
//!   the API's, so what the TTL leaves is the measure;
//! - `expired-events`: `--expired-events` Events written with the default TTL, then the server
//!   restarted twice: as they are (all live: they are loaded), and with its clock two hours
//!   ahead (`--clock-offset=2h`, a hidden testing flag: every one has expired, as after a
//!   downtime longer than the TTL); spawn → `/readyz` 200 each time (goal with the expired ones:
//!   ≤ 3 s, they are not loaded).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::{fmt_ms, thousands};
use crate::{Bench, BodyFn, Creates, create_namespace, post_many};

const CLIENTS: usize = 16;
const NS: &str = "events";
/// The short TTL of the expiring run.
const SHORT_TTL: Duration = Duration::from_secs(2);

/// A `FailedScheduling` Event about one of 1,000 pods, as the scheduler's recorder writes one.
fn event(i: usize) -> Bytes {
    let pod = format!("web-{:04}", i % 1000);
    let e = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{pod}.{i:08x}"), "namespace": NS},
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod, "apiVersion": "v1",
            "uid": format!("00000000-0000-4000-8000-{:012}", i % 1000)},
        "reason": "FailedScheduling",
        "message": "0/100 nodes are available: 100 Insufficient cpu. preemption: 0/100 nodes are available: 100 No preemption victims found for incoming pod.",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1, "type": "Warning",
    });
    Bytes::from(e.to_string())
}

fn events_path() -> String {
    format!("/api/v1/namespaces/{NS}/events")
}

/// Bytes of the files in `dir` (the database, its WAL and anything else the server keeps).
fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / 1024.0 / 1024.0)
}

/// Events in the namespace (a full LIST).
async fn stored(conn: &mut Conn) -> anyhow::Result<usize> {
    let body = conn
        .expect(StatusCode::OK, Method::GET, &events_path(), None)
        .await?;
    let v: Value = serde_json::from_slice(&body).context("parsing the Event LIST")?;
    Ok(v["items"].as_array().map_or(0, Vec::len))
}

impl Bench {
    fn args_with(&self, extra: &[String]) -> Vec<String> {
        let mut args = self.cli.server_args.clone();
        args.extend_from_slice(extra);
        args
    }

    /// `n` Events by [`CLIENTS`] writers into a server started with `extra`.
    async fn write_events(
        &self,
        dir: &Path,
        extra: &[String],
        n: usize,
    ) -> anyhow::Result<(Server, Creates)> {
        let args = self.args_with(extra);
        let (server, _) = self.start_durable(dir, &args).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, NS).await?;
        let body: BodyFn = Arc::new(event);
        let run = post_many(server.addr, &events_path(), CLIENTS, n, body).await?;
        Ok((server, run))
    }

    pub(crate) async fn events(&mut self) -> anyhow::Result<()> {
        let n = self.cli.events;
        println!(
            "\n== Events: {} Events posted by {CLIENTS} writers, with the default --event-ttl (1 h) and with --event-ttl={}s; durable",
            thousands(n as u64),
            SHORT_TTL.as_secs()
        );
        let mut p99 = [0.0; 2];
        for (k, ttl) in [None, Some(SHORT_TTL)].into_iter().enumerate() {
            let dir = self.tempdir("events")?;
            let extra: Vec<String> = ttl
                .map(|t| format!("--event-ttl={}s", t.as_secs()))
                .into_iter()
                .collect();
            let (server, run) = self.write_events(dir.path(), &extra, n).await?;
            let mut conn = Conn::connect(server.addr).await?;
            let at_end = stored(&mut conn).await?;
            if let Some(ttl) = ttl {
                // Every Event has expired a TTL after the last write; the sweep runs each second.
                tokio::time::sleep(ttl + Duration::from_secs(3)).await;
            }
            let left = stored(&mut conn).await?;
            let (rss, peak) = (server.rss_kib()?, server.peak_rss_kib()?);
            let db = dir_bytes(dir.path())?;
            let label = ttl.map_or("TTL 1 h".to_owned(), |t| format!("TTL {} s", t.as_secs()));
            println!(
                "   {label}: {}; Events stored when the writers finished {}, {} later {}; RSS {} MiB (peak {} MiB); data directory {}",
                run.summary(),
                thousands(at_end as u64),
                if ttl.is_some() { "a TTL" } else { "just" },
                thousands(left as u64),
                rss / 1024,
                peak / 1024,
                mib(db)
            );
            p99[k] = run.latencies.pct(99.0);
            self.row(
                format!(
                    "events: {} by {CLIENTS} writers, {label}",
                    thousands(n as u64)
                ),
                format!(
                    "{}; {} left; RSS {} MiB; data {}",
                    run.summary(),
                    thousands(left as u64),
                    rss / 1024,
                    mib(db)
                ),
            );
            server.stop().await?;
        }
        let ratio = p99[1] / p99[0];
        let row = self.row(
            "events: writers' p99 while expiring / without",
            format!("{} / {} (ratio {ratio:.2})", fmt_ms(p99[1]), fmt_ms(p99[0])),
        );
        row.target = "≤ 1.20".into();
        row.met = Some(ratio <= 1.20);
        Ok(())
    }

    pub(crate) async fn expired_events(&mut self) -> anyhow::Result<()> {
        let n = self.cli.expired_events;
        println!(
            "\n== start-up with {} Events on disk: written with the default --event-ttl by {} writers, restarted as they are (live) and with the clock 2 h ahead (all expired); durable",
            thousands(n as u64),
            self.cli.load_clients
        );
        let dir = self.tempdir("expired-events")?;
        let args = self.args_with(&[]);
        let (server, _) = self.start_durable(dir.path(), &args).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, NS).await?;
        let body: BodyFn = Arc::new(event);
        let started = Instant::now();
        let load = post_many(server.addr, &events_path(), self.cli.load_clients, n, body).await?;
        server.stop().await?;
        println!(
            "   written in {:.0} s ({}); data directory {}",
            started.elapsed().as_secs_f64(),
            load.summary(),
            mib(dir_bytes(dir.path())?)
        );
        for (label, extra) in [
            ("live", vec![]),
            ("expired", vec!["--clock-offset=2h".to_owned()]),
        ] {
            let args = self.args_with(&extra);
            let (server, ready) = self.start_durable(dir.path(), &args).await?;
            let opened = server.opened().await;
            let rss = server.rss_kib()?;
            let opened_text = opened.map_or("no `store opened` line".into(), |o| {
                format!(
                    "store opened in {} ms with {} objects",
                    o.elapsed_ms,
                    thousands(o.objects)
                )
            });
            println!(
                "   restart, {label}: /readyz 200 after {:.2} s from spawn; {opened_text}; RSS {} MiB",
                ready.as_secs_f64(),
                rss / 1024
            );
            let row = self.row(
                format!(
                    "start-up with {} Events on disk, {label} (spawn → /readyz 200)",
                    thousands(n as u64)
                ),
                format!("{:.2} s; {opened_text}", ready.as_secs_f64()),
            );
            if label == "expired" {
                row.target = "≤ 3 s".into();
                row.met = Some(ready <= Duration::from_secs(3));
                // The expired rows go from the disk in the background, in batches.
                tokio::time::sleep(Duration::from_secs(2)).await;
                let mut conn = Conn::connect(server.addr).await?;
                let left = stored(&mut conn).await?;
                println!(
                    "   2 s later: {} Events served; data directory {}",
                    thousands(left as u64),
                    mib(dir_bytes(dir.path())?)
                );
            }
            server.stop().await?;
        }
        Ok(())
    }
}
