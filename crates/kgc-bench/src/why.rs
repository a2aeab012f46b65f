//! `kgc why` on a namespace stuck in Terminating with `--held` objects each held by a custom
//! finalizer (issue 22: the answer within 1 s on 2 cores). The command runs as users run it:
//! the `kgc` binary, through the server's kubeconfig, discovery and metadata lists included.

use std::time::Instant;

use anyhow::Context;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::{Samples, fmt_ms, ms, thousands};
use crate::{Bench, configmaps_path, create_namespace};

/// Runs of `kgc why` measured (after one warm-up).
const RUNS: usize = 5;
/// The finalizer nobody removes.
const HOLD: &str = "bench.kgc.io/hold";

impl Bench {
    /// `kgc why ns/stuck` while `held` ConfigMaps hold the namespace's deletion.
    pub(crate) async fn why(&mut self) -> anyhow::Result<()> {
        let n = self.cli.held;
        println!(
            "\n== kgc why: a namespace stuck in Terminating on {} ConfigMaps, each held by the finalizer {HOLD}; \
             `kgc why ns/stuck -o json`, {RUNS} runs after a warm-up",
            thousands(n as u64)
        );
        let dir = self.tempdir("why")?;
        let (server, _) = Server::start(self.launch(dir.path(), true)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, "stuck").await?;
        for i in 0..n {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("held-{i:05}"), "finalizers": [HOLD]},
                "data": {"index": i.to_string()}});
            conn.expect(
                StatusCode::CREATED,
                Method::POST,
                &configmaps_path("stuck"),
                Some(Bytes::from(body.to_string())),
            )
            .await?;
        }
        conn.expect(
            StatusCode::OK,
            Method::DELETE,
            "/api/v1/namespaces/stuck",
            None,
        )
        .await?;
        // Stuck: the namespace controller reports the finalizers it cannot remove.
        let started = Instant::now();
        loop {
            let ns = conn
                .expect(
                    StatusCode::OK,
                    Method::GET,
                    "/api/v1/namespaces/stuck",
                    None,
                )
                .await?;
            let ns: Value = serde_json::from_slice(&ns)?;
            let stuck = ns["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "NamespaceFinalizersRemaining" && c["status"] == "True");
            if stuck {
                break;
            }
            anyhow::ensure!(
                started.elapsed().as_secs() < 120,
                "the namespace did not report its remaining finalizers within 120 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let kubeconfig = dir.path().join("kubeconfig");
        let mut samples = Vec::with_capacity(RUNS);
        for run in 0..=RUNS {
            let t0 = Instant::now();
            let out = tokio::process::Command::new(&self.kgc)
                .args(["why", "ns/stuck", "-o", "json", "--kubeconfig"])
                .arg(&kubeconfig)
                .output()
                .await
                .context("running kgc why")?;
            let elapsed = t0.elapsed();
            anyhow::ensure!(
                out.status.code() == Some(4),
                "kgc why ended with {:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let answer: Value = serde_json::from_slice(&out.stdout).context("kgc why -o json")?;
            let waiting = answer["holds"][0]["waitingFor"]
                .as_array()
                .map_or(0, Vec::len);
            anyhow::ensure!(
                waiting >= n,
                "kgc why named {waiting} held objects, not {n}"
            );
            if run > 0 {
                samples.push(ms(elapsed));
            }
        }
        let s = Samples::new(samples);
        let result = format!("p50 {}, max {}", fmt_ms(s.median()), fmt_ms(s.max()));
        println!("   {result}");
        let row = self.row(
            format!(
                "kgc why: namespace stuck on {} objects",
                thousands(n as u64)
            ),
            result,
        );
        row.target = "≤ 1 s".into();
        row.met = Some(s.max() <= 1_000.0);
        drop(conn);
        server.stop().await?;
        Ok(())
    }
}
