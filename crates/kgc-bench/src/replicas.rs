//! Two `kgc serve` replicas on one etcd cluster (issue 33), the cluster named by
//! `--server-arg=--datastore-endpoint=URL,…`: watch delivery from a create on replica A to a
//! watch on replica B (through etcd and B's watch of it), and a full LIST of `--small-list`
//! ConfigMaps that A created, served by B from its cache.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;

use crate::http::Conn;
use crate::server::Server;
use crate::stats::{fmt_ms, thousands};
use crate::{Bench, Kind, configmaps_path, create_many, create_namespace, time_list};

/// Timed LISTs on replica B (after one untimed).
const LIST_RUNS: usize = 5;

/// Copies `from`'s `pki/` into `to`: how a second replica joins with the first one's identity
/// (CA, service-account key, the encryption configuration of Secrets at rest).
fn copy_pki(from: &Path, to: &Path) -> anyhow::Result<()> {
    let (from, to) = (from.join("pki"), to.join("pki"));
    std::fs::create_dir_all(&to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(&from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))
            .with_context(|| format!("copying {}", entry.path().display()))?;
    }
    Ok(())
}

impl Bench {
    /// Watch delivery across two replicas, and a LIST from the second one's cache.
    pub(crate) async fn replicas(&mut self) -> anyhow::Result<()> {
        if !self
            .cli
            .server_args
            .iter()
            .any(|a| a.starts_with("--datastore-endpoint"))
        {
            anyhow::bail!(
                "`replicas` runs two servers on one etcd cluster: pass \
                 --server-arg=--datastore-endpoint=http://HOST:PORT,…"
            );
        }
        let (n, small) = (self.cli.watch_events, self.cli.small_list);
        println!(
            "\n== two replicas on one etcd cluster: {} ConfigMaps created one at a time on A, each awaited on \
             a watch on B; then {} ConfigMaps created on A and listed on B",
            thousands(n as u64),
            thousands(small as u64)
        );
        let (dir_a, dir_b) = (self.tempdir("replica-a")?, self.tempdir("replica-b")?);
        let (a, _) = Server::start(self.launch(dir_a.path(), false)).await?;
        copy_pki(dir_a.path(), dir_b.path())?;
        let (b, _) = Server::start(self.launch(dir_b.path(), false)).await?;
        // The etcd cluster outlives the run: namespaces of its own.
        let run = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();

        let delivery = crate::watch_delivery(a.addr, b.addr, &format!("w-{run}"), n).await?;
        let row = self.row(
            "watch delivery across replicas (POST on A → event on B)",
            delivery.summary(),
        );
        row.target = "p99 ≤ 50 ms".into();
        row.met = Some(delivery.from_post.pct(99.0) <= 50.0);

        let ns = format!("list-{run}");
        create_namespace(&mut Conn::connect(a.addr).await?, &ns).await?;
        create_many(
            a.addr,
            Kind::Configmaps,
            &ns,
            "cm",
            self.cli.load_clients,
            small,
        )
        .await?;
        let mut on_b = Conn::connect(b.addr).await?;
        let (full, bytes) = time_list(&mut on_b, &configmaps_path(&ns), small, LIST_RUNS).await?;
        println!(
            "   LIST on B (request sent → body fully read): {} median of {} (min {}, max {}; {:.1} MB)",
            fmt_ms(full.median()),
            full.len(),
            fmt_ms(full.min()),
            fmt_ms(full.max()),
            bytes as f64 / 1e6
        );
        self.row(
            format!("LIST {}k ConfigMaps created on A, full, on B", small / 1000),
            format!("{} median of {}", fmt_ms(full.median()), full.len()),
        );
        b.stop().await?;
        a.stop().await?;
        Ok(())
    }
}
