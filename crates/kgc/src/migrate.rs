//! `kgc serve migrate --to etcd://…`: a stopped SQLite data directory's cluster moved into etcd,
//! for users who outgrow one machine (issue 33).
//!
//! Every object is copied, in revision order, into an etcd prefix that must hold nothing (see
//! `kgc_store::migrate`); Secrets are encrypted there with the data directory's encryption
//! configuration, as a server on etcd writes them. Only then is the data directory marked as
//! etcd's (`DATA_DIR/datastore`, what a start on etcd records) and its SQLite file kept aside
//! as `kgc.db.migrated`: a start without `--datastore-endpoint` is refused from then on, and one
//! with it serves the same cluster with the same `pki/` (CA, service-account key, encryption
//! key), so the kubeconfig and every token still work. Every refusal comes before anything is
//! written, in one line.

use std::path::Path;

use kgc_store::Clock;
use kgc_store::migrate::{Source, Target};

#[derive(clap::Args)]
pub struct Args {
    /// The etcd cluster to copy into: its members' client URLs, comma-separated, as
    /// --datastore-endpoint takes them (`etcd://a:2379,…`, `http://…`, or `https://…`; etcd://
    /// is https when TLS files are given).
    #[arg(
        id = "datastore_endpoint",
        long = "to",
        value_name = "URL",
        value_delimiter = ',',
        required = true
    )]
    to: Vec<String>,
    #[command(flatten)]
    etcd: crate::serve::EtcdArgs,
}

pub async fn run(
    args: Args,
    data_dir: &Path,
    encryption: &crate::encryption::EncryptionArgs,
    clock: Clock,
) -> anyhow::Result<()> {
    // Before the lock, which would create the directory.
    let db = crate::data_dir::migratable(data_dir)?;
    let _held = crate::data_dir::DataDir::lock(data_dir)?;
    let opts = args.etcd.options(&args.to);
    let datastore = crate::serve::describe_etcd(&opts);
    let one_line = |e: &dyn std::fmt::Display| anyhow::anyhow!("reading {}: {e}", db.display());
    let reading = encryption
        .transformers(data_dir, false)
        .map_err(|e| one_line(&format!("{e:#}")))?;
    let source = Source::read_sqlite(&db, reading.clone(), clock).map_err(|e| one_line(&e))?;
    let target = Target::connect(&opts).await?;
    // A data directory of a kgc from before encryption at rest has no configuration yet: it
    // gets the one a start would make, so that its Secrets are encrypted in etcd.
    let writing = match reading {
        Some(t) => Some(t),
        None => encryption.transformers(data_dir, true)?,
    };
    let copied = target.copy(&source, writing).await?;
    crate::data_dir::retire_sqlite(data_dir, &datastore)?;
    tracing::info!(
        objects = source.len(),
        first = copied.first,
        last = copied.last,
        "migrated"
    );
    println!(
        "kgc serve migrate: copied {} objects from {} into {datastore} (revisions {} to {}); \
         the SQLite file is kept as kgc.db.migrated",
        source.len(),
        db.display(),
        copied.first,
        copied.last
    );
    println!(
        "start with: kgc serve --data-dir {} --datastore-endpoint {}",
        data_dir.display(),
        args.to.join(",")
    );
    Ok(())
}
