//! What open watches cost the server: memory per idle watch, and RSS with 2,000
//! `resourceVersion=0` watches over a few MB of objects, whose clients read their initial state
//! or never read at all (issue 17: watches cost what they send).

use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Response, StatusCode};
use serde_json::Value;

use crate::http::Conn;
use crate::server::Server;
use crate::stats::thousands;
use crate::{Bench, Kind, configmaps_path, create_many, create_namespace};

/// How the clients of a scenario's watches behave.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// `resourceVersion` = the list's: nothing to send until something changes.
    Idle,
    /// `resourceVersion=0`, every client reading its whole initial state.
    Reading,
    /// `resourceVersion=0`, no client reading anything.
    Stalled,
}

impl Scenario {
    fn describe(self) -> &'static str {
        match self {
            Scenario::Idle => "idle (resourceVersion = the list's)",
            Scenario::Reading => "resourceVersion=0, clients read the initial state",
            Scenario::Stalled => "resourceVersion=0, clients never read",
        }
    }
}

/// One scenario's outcome.
struct Outcome {
    rss_before_kib: u64,
    rss_after_kib: u64,
    peak_kib: u64,
    elapsed: Duration,
}

/// Raises the open-file limit to what `needed` connections on both ends take (the server
/// inherits it), or says why not.
fn raise_nofile(needed: u64) -> anyhow::Result<()> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|c| c >= needed) {
        return Ok(());
    }
    if limit.maximum.is_some_and(|m| m < needed) {
        anyhow::bail!(
            "the open-file limit (hard {:?}) is below the {needed} this measurement needs",
            limit.maximum
        );
    }
    limit.current = Some(needed);
    setrlimit(Resource::Nofile, limit).context("raising the open-file limit")
}

/// Polls the server's RSS until it has not moved by more than 1% for a second (at most 30 s),
/// and returns it.
async fn settled_rss(server: &Server) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = server.rss_kib()?;
    let mut stable_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let rss = server.rss_kib()?;
        if rss.abs_diff(last) * 100 > last {
            stable_since = Instant::now();
            last = rss;
        }
        if stable_since.elapsed() >= Duration::from_secs(1) || Instant::now() > deadline {
            return Ok(rss);
        }
    }
}

/// Reads a watch body until `events` lines have arrived, says so, then keeps the watch (and its
/// connection) open, idle, until aborted.
async fn read_events(
    conn: Conn,
    resp: Response<Incoming>,
    events: usize,
    done: tokio::sync::mpsc::Sender<()>,
) -> anyhow::Result<()> {
    let mut body = resp.into_body();
    let mut lines = 0;
    while lines < events {
        let frame = body
            .frame()
            .await
            .context("the watch ended before its initial state")??;
        if let Ok(data) = frame.into_data() {
            lines += data.iter().filter(|b| **b == b'\n').count();
        }
    }
    done.send(()).await?;
    std::future::pending::<()>().await;
    drop((conn, body));
    Ok(())
}

impl Bench {
    /// 6. Watch memory: per idle watch, and with `resourceVersion=0` watches over the state.
    pub(crate) async fn watches(&mut self) -> anyhow::Result<()> {
        let (watches, objects) = (self.cli.watches, self.cli.watch_objects);
        raise_nofile(2 * watches as u64 + 1_000)?;
        println!(
            "\n== watch memory, durable: {} ConfigMaps in a namespace, then {} watches of it, each on its own connection; \
             server RSS before, after (settled), and its peak (VmHWM)",
            thousands(objects as u64),
            thousands(watches as u64)
        );
        for scenario in [Scenario::Idle, Scenario::Reading, Scenario::Stalled] {
            let (o, state_bytes) = self.watch_scenario(scenario, watches, objects).await?;
            let added = o.rss_after_kib.saturating_sub(o.rss_before_kib);
            let per = added as f64 * 1024.0 / watches as f64;
            let result = format!(
                "+{:.1} MiB ({:.1} KiB per watch; RSS {} → {} MiB, peak {} MiB)",
                added as f64 / 1024.0,
                per / 1024.0,
                o.rss_before_kib / 1024,
                o.rss_after_kib / 1024,
                o.peak_kib / 1024
            );
            println!(
                "   {}: {result}; state {:.1} MB; {:.1} s",
                scenario.describe(),
                state_bytes as f64 / 1e6,
                o.elapsed.as_secs_f64()
            );
            let row = self.row(
                format!(
                    "{} watches, {}",
                    thousands(watches as u64),
                    scenario.describe()
                ),
                result,
            );
            match scenario {
                Scenario::Idle => {
                    row.target = "≤ 16 KiB per watch".into();
                    row.met = Some(per <= 16.0 * 1024.0);
                }
                Scenario::Reading | Scenario::Stalled => {
                    row.target = "< 100 MB added".into();
                    row.met = Some((added * 1024) < 100_000_000);
                }
            }
        }
        Ok(())
    }

    /// Loads the state into a fresh server, opens the watches and measures. Returns the outcome
    /// and the size of the state as listed.
    async fn watch_scenario(
        &mut self,
        scenario: Scenario,
        watches: usize,
        objects: usize,
    ) -> anyhow::Result<(Outcome, usize)> {
        let dir = self.tempdir("watches")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, "state").await?;
        create_many(server.addr, Kind::Configmaps, "state", "cm", 16, objects).await?;
        let path = configmaps_path("state");
        let list = conn
            .expect(StatusCode::OK, Method::GET, &path, None)
            .await?;
        let state_bytes = list.len();
        let rv = serde_json::from_slice::<Value>(&list)?["metadata"]["resourceVersion"]
            .as_str()
            .context("no resourceVersion in the list")?
            .to_owned();
        let rss_before_kib = settled_rss(&server).await?;
        let from = match scenario {
            Scenario::Idle => rv,
            Scenario::Reading | Scenario::Stalled => "0".to_owned(),
        };
        let watch_path = format!("{path}?watch=true&resourceVersion={from}");
        let started = Instant::now();
        let mut held = Vec::with_capacity(watches);
        let mut readers = tokio::task::JoinSet::new();
        let (done_tx, mut done) = tokio::sync::mpsc::channel(watches.max(1));
        for _ in 0..watches {
            let mut c = Conn::connect(server.addr).await?;
            let resp = c.send(Method::GET, &watch_path, None).await?;
            if resp.status() != StatusCode::OK {
                anyhow::bail!("watch: {}", resp.status());
            }
            match scenario {
                Scenario::Reading => {
                    readers.spawn(read_events(c, resp, objects, done_tx.clone()));
                }
                Scenario::Idle | Scenario::Stalled => held.push((c, resp)),
            }
        }
        drop(done_tx);
        if scenario == Scenario::Reading {
            for _ in 0..watches {
                tokio::time::timeout(Duration::from_secs(600), done.recv())
                    .await
                    .context("the readers did not get their initial state within 10 minutes")?
                    .context("a reader failed")?;
            }
        }
        let rss_after_kib = settled_rss(&server).await?;
        let outcome = Outcome {
            rss_before_kib,
            rss_after_kib,
            peak_kib: server.peak_rss_kib()?,
            elapsed: started.elapsed(),
        };
        readers.abort_all();
        drop(held);
        server.stop().await?;
        Ok((outcome, state_bytes))
    }
}
