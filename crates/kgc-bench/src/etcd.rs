//! etcd's own ceiling on the cluster of `--server-arg=--datastore-endpoint=URL,…` (issue 33),
//! so that `kgc serve`'s creates on etcd can be judged: the write a create sends there (a put
//! guarded by `create_revision == 0`, of a value the size of a stored ConfigMap), straight from
//! the client library kgc uses, by 1 and 16 concurrent writers, one transaction at a time each.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};

use crate::stats::{Samples, ms, thousands};
use crate::{Bench, Creates};

/// The value put: about a stored ConfigMap's 987 bytes.
const VALUE_BYTES: usize = 1_000;

impl Bench {
    /// Guarded puts per second straight to etcd, 1 and 16 writers.
    pub(crate) async fn etcd(&mut self) -> anyhow::Result<()> {
        let endpoints: Vec<String> = self
            .cli
            .server_args
            .iter()
            .find_map(|a| a.strip_prefix("--datastore-endpoint="))
            .context(
                "`etcd` measures the etcd cluster of \
                 --server-arg=--datastore-endpoint=http://HOST:PORT,…",
            )?
            .split(',')
            .map(|e| e.replacen("etcd://", "http://", 1))
            .collect();
        let n = self.cli.creates;
        println!(
            "\n== etcd's own ceiling at {}: {} puts of {VALUE_BYTES} bytes, each one transaction guarded by \
             create_revision == 0 (a create's), by concurrent writers on one client, one at a time each",
            endpoints.join(","),
            thousands(n as u64)
        );
        let client = Client::connect(&endpoints, None)
            .await
            .context("connecting to etcd")?;
        // Keys of their own: the cluster outlives the run.
        let run = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        for writers in [1, 16] {
            let puts =
                guarded_puts(&client, &format!("/kgc-bench/{run}/w{writers}"), writers, n).await?;
            println!("   {writers:>2} writer(s): {}", puts.summary());
            self.row(
                format!(
                    "etcd alone, guarded puts, {writers} writer{}",
                    if writers > 1 { "s" } else { "" }
                ),
                puts.summary(),
            );
        }
        Ok(())
    }
}

/// `total` guarded puts under `prefix` by `writers` concurrent tasks, each waiting for its
/// answer before the next.
async fn guarded_puts(
    client: &Client,
    prefix: &str,
    writers: usize,
    total: usize,
) -> anyhow::Result<Creates> {
    let next = Arc::new(AtomicUsize::new(0));
    let value = Arc::new(vec![b'x'; VALUE_BYTES]);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(writers);
    for _ in 0..writers {
        let (next, value, mut kv) = (Arc::clone(&next), Arc::clone(&value), client.kv_client());
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(total / writers + 1);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let key = format!("{prefix}/{i:06}");
                let txn = Txn::new()
                    .when(vec![Compare::create_revision(
                        key.as_str(),
                        CompareOp::Equal,
                        0,
                    )])
                    .and_then(vec![TxnOp::put(key.as_str(), value.as_slice(), None)]);
                let t0 = Instant::now();
                let response = kv.txn(txn).await?;
                anyhow::ensure!(response.succeeded(), "{key} existed already");
                latencies.push(ms(t0.elapsed()));
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut all = Vec::with_capacity(total);
    for task in tasks {
        all.extend(task.await??);
    }
    Ok(Creates {
        elapsed: started.elapsed(),
        latencies: Samples::new(all),
        stored_bytes: VALUE_BYTES,
    })
}
