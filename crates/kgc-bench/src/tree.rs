//! `kgc tree` of a large namespace (issue 22): `--small-list` ConfigMaps in one ownership tree
//! (a root, 100 owners under it, the rest spread under those), drawn by the real `kgc tree`
//! binary against a durable `kgc serve`, once narrowed by the collector's graph and once
//! through metadata lists of every kind: wall time, and the requests it made (the server's
//! `kgc_apiserver_requests_total`, before and after).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::thousands;
use crate::{Bench, configmaps_path, create_namespace};

const NS: &str = "tree";
/// Owners directly under the root.
const MIDDLE: usize = 100;
const CLIENTS: usize = 16;

/// A ConfigMap named `name` owned by `owner` (name, uid).
fn owned(name: &str, owner: &(String, String)) -> Bytes {
    Bytes::from(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "ownerReferences": [{"apiVersion": "v1",
                   "kind": "ConfigMap", "name": owner.0, "uid": owner.1,
                   "controller": true, "blockOwnerDeletion": true}]},
               "data": {"k": "v"}})
        .to_string(),
    )
}

/// Creates ConfigMaps `{prefix}-{i}` for `i` in `0..n`, each owned by `owners[i % len]`, from
/// [`CLIENTS`] connections; returns each one's (name, uid).
async fn create_owned(
    server: &Server,
    prefix: &str,
    n: usize,
    owners: &[(String, String)],
) -> anyhow::Result<Vec<(String, String)>> {
    let owners: Arc<[(String, String)]> = owners.into();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let mut conn = Conn::connect(server.addr).await?;
        let (owners, prefix) = (Arc::clone(&owners), prefix.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut made = Vec::new();
            for i in (c..n).step_by(CLIENTS) {
                let name = format!("{prefix}-{i}");
                let body = conn
                    .expect(
                        StatusCode::CREATED,
                        Method::POST,
                        &configmaps_path(NS),
                        Some(owned(&name, &owners[i % owners.len()])),
                    )
                    .await?;
                let v: Value = serde_json::from_slice(&body)?;
                let uid = v["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
                made.push((name, uid));
            }
            anyhow::Ok(made)
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.extend(t.await??);
    }
    Ok(out)
}

/// The server's API requests served so far.
pub(crate) async fn requests(conn: &mut Conn) -> anyhow::Result<u64> {
    let body = conn
        .expect(StatusCode::OK, Method::GET, "/metrics", None)
        .await?;
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| l.starts_with("kgc_apiserver_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64)
}

/// Objects in a `kgc tree -o json` branch, itself included.
fn count(branch: &Value) -> usize {
    1 + branch["children"]
        .as_array()
        .map_or(0, |c| c.iter().map(count).sum())
}

impl Bench {
    pub(crate) async fn tree(&mut self) -> anyhow::Result<()> {
        let n = self.cli.small_list.max(MIDDLE + 2);
        println!(
            "\n== kgc tree: one ownership tree of {} ConfigMaps (a root, {MIDDLE} owners under it, the rest under those) in one namespace, against a durable server",
            thousands(n as u64)
        );
        let dir = self.tempdir("tree")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, NS).await?;
        let root = conn
            .expect(
                StatusCode::CREATED,
                Method::POST,
                &configmaps_path(NS),
                Some(Bytes::from(
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "root"}})
                        .to_string(),
                )),
            )
            .await?;
        let root: Value = serde_json::from_slice(&root)?;
        let root = (
            "root".to_owned(),
            root["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        let middle = create_owned(&server, "owner", MIDDLE, &[root]).await?;
        create_owned(&server, "leaf", n - 1 - MIDDLE, &middle).await?;

        for (how, extra) in [
            ("the collector's graph", None),
            ("metadata lists of every kind", Some("--list-all-kinds")),
        ] {
            let before = requests(&mut conn).await?;
            let started = Instant::now();
            let out = std::process::Command::new(&self.kgc)
                .args([
                    "tree",
                    "configmap/root",
                    "-n",
                    NS,
                    "-o",
                    "json",
                    "--kubeconfig",
                ])
                .arg(dir.path().join("kubeconfig"))
                .args(extra)
                .output()
                .context("running kgc tree")?;
            let elapsed = started.elapsed();
            // The /metrics read itself is one.
            let made = requests(&mut conn).await?.saturating_sub(before + 1);
            anyhow::ensure!(
                out.status.success(),
                "kgc tree failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let tree: Value =
                serde_json::from_slice(&out.stdout).context("parsing kgc tree -o json")?;
            let shown = count(&tree["root"]);
            anyhow::ensure!(shown == n, "kgc tree showed {shown} of {n} objects");
            let result = format!("{:.2} s, {made} requests", elapsed.as_secs_f64());
            println!("   through {how}: {result}");
            self.row(
                format!("kgc tree, {} objects, {how}", thousands(n as u64)),
                result,
            );
        }
        server.stop().await?;
        Ok(())
    }
}
