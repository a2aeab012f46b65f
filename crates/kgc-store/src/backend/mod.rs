//! Durability: the commit thread and the storage it writes to.
//!
//! Writers hand a [`Unit`] (the rows one API write changes, and its watch events) to the commit
//! thread and wait. The thread takes every unit that is waiting, writes them to its [`Backend`],
//! and only then publishes their watch events and acknowledges the writers. So an acknowledged
//! write survives `kill -9` and power loss, a watcher never sees a write that could still be
//! lost, and (on SQLite, see [`sqlite`]) the fsync cost is shared by every writer that arrived
//! while the previous commit was on disk.
//!
//! A failed commit is reported to the store (see [`Sink::failed`]), which undoes it and every
//! write queued behind it; the thread then probes with small commits until the storage takes
//! writes again. Values are encrypted at rest on their way into storage and decrypted on the
//! way out ([`Codec`]); memory holds plain objects.
//!
//! The backends: one SQLite file ([`sqlite`], the default), or an etcd v3 cluster ([`etcd`])
//! laid out as kube-apiserver lays it out. The store's semantics live above this seam; a
//! backend only makes a batch of units durable, in order, and loads everything back at start.
//! On etcd a unit's changes may also lose to another replica's ([`Landed::Conflict`]), and
//! memory follows etcd's watch instead of the commits (see [`etcd`]).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use kgc_encryption::{Transformers, storage_key};
use tokio::sync::oneshot;

use crate::fencing::Guard;
use crate::object::StoredObject;
use crate::watch::Event;
use crate::{Error, Result};

pub(crate) mod etcd;
pub(crate) mod sqlite;

/// The most units one transaction takes; bounds commit latency under a flood.
const MAX_BATCH: usize = 4096;

/// A row change.
#[derive(Debug)]
pub(crate) enum Op {
    Put {
        group: String,
        resource: String,
        object: Arc<StoredObject>,
        /// When the object expires (Unix milliseconds), if its resource has a TTL.
        expires: Option<i64>,
    },
    Delete {
        group: String,
        resource: String,
        namespace: String,
        name: String,
        /// Whether the row may be in `leased_objects`.
        leased: bool,
    },
    /// Deletes up to `limit` rows of `leased_objects` that expired at or before `before`
    /// (Unix milliseconds), and says how many in `deleted`.
    PurgeExpired {
        before: i64,
        limit: usize,
        deleted: Arc<AtomicUsize>,
    },
}

/// Where one change landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Landed {
    /// Committed at this revision (the object's new `resourceVersion`).
    At(u64),
    /// (etcd only) Its guard failed: the key changed since the store read it (another replica
    /// wrote it), and etcd was at this revision when it said so.
    Conflict(u64),
}

/// What one API write commits.
pub(crate) struct Unit {
    pub rv: u64,
    pub ops: Vec<Op>,
    pub events: Vec<Arc<Event>>,
    /// (etcd) The leader Lease each change is guarded by as well (see `crate::fencing`).
    pub fence: Option<Guard>,
    /// Where each event landed, in order.
    pub done: oneshot::Sender<Result<Vec<Landed>>>,
}

/// Everything loaded from disk at start.
pub(crate) struct Loaded {
    pub revision: u64,
    /// (group, resource, object, expiry in Unix milliseconds if it has a lease)
    pub objects: Vec<LoadedObject>,
    /// Whether rows expired while the server was down (left on disk, not loaded).
    pub expired_rows: bool,
}

pub(crate) type LoadedObject = (String, String, Arc<StoredObject>, Option<i64>);

/// How object rows are stored: encrypted by their resource's first provider (a BLOB carrying
/// the `k8s:enc:` envelope), or as JSON text when no provider encrypts them.
#[derive(Clone)]
pub(crate) struct Codec(Arc<Transformers>);

impl Codec {
    pub fn new(transformers: Option<Arc<Transformers>>) -> Self {
        Self(transformers.unwrap_or_default())
    }

    /// The row value of an object: `None` to store its JSON text as it is.
    pub(super) fn encode(
        &self,
        group: &str,
        resource: &str,
        object: &StoredObject,
    ) -> Result<Option<Vec<u8>>> {
        if !self.0.encrypts(group, resource) {
            return Ok(None);
        }
        let key = storage_key(group, resource, &object.namespace, &object.name);
        Ok(self.0.write(group, resource, &key, object.raw.as_bytes())?)
    }

    /// The object a row holds, and whether it is stale (not stored as [`Codec::encode`] would
    /// store it now).
    pub(super) fn decode(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
        data: &[u8],
    ) -> Result<(Arc<StoredObject>, bool)> {
        let key = storage_key(group, resource, namespace, name);
        let read = self.0.read(group, resource, &key, data)?;
        let text = String::from_utf8(read.data.into_owned())
            .map_err(|_| Error::Corrupt(format!("{key} is not UTF-8 JSON")))?;
        let object = StoredObject::from_raw(text.into_boxed_str())
            .map_err(|s| Error::Corrupt(format!("{key}: {}", s.message)))?;
        Ok((object, read.stale))
    }

    /// The object a row holds, as of revision `rv`: on etcd a key's `mod_revision` is the
    /// object's `resourceVersion` (kube-apiserver's versioner sets it on every object it reads),
    /// which the stored text cannot carry, as it is written before etcd chooses the revision.
    /// One parse and one serialization, where [`Codec::decode`] and stamping would parse twice.
    pub(super) fn decode_at(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        name: &str,
        data: &[u8],
        rv: u64,
    ) -> Result<Arc<StoredObject>> {
        let key = storage_key(group, resource, namespace, name);
        let read = self.0.read(group, resource, &key, data)?;
        let mut value: serde_json::Value = serde_json::from_slice(&read.data)
            .map_err(|e| Error::Corrupt(format!("{key}: stored object is not JSON: {e}")))?;
        crate::stamp(&mut value, rv)
    }
}

/// Where the commit thread writes. An enum, not a trait object: the SQLite path is the hot
/// one and stays a direct call.
pub(crate) enum Backend {
    Sqlite(rusqlite::Connection),
    /// Boxed: it is large, and the enum moves once, into the commit thread.
    Etcd(Box<etcd::Etcd>),
}

/// What the commit thread reports to the store.
pub(crate) trait Sink: Send + Sync + 'static {
    /// (SQLite) A batch is about to be written: queue the changes deferred to it (see
    /// `crate::deferred`); the revision of the last one queued.
    fn before_batch(&self) -> Option<u64>;
    /// A batch is durable: publish its events (in revision order) up to `rv`.
    fn committed(&self, events: Vec<Arc<Event>>, rv: u64);
    /// A commit failed with `reason`. Under whatever stops new units from being queued, the
    /// sink calls `drain` (which appends every unit queued behind `units`), undoes all of
    /// `units` in memory and refuses writes; the committer then fails each of them.
    fn failed(&self, reason: &str, units: &mut Vec<Unit>, drain: &mut dyn FnMut(&mut Vec<Unit>));
    /// The revision a probe commit records (the highest one handed out).
    fn revision(&self) -> u64;
    /// A probe commit succeeded after a failure: writes may resume.
    fn recovered(&self);
    /// (etcd) etcd failed a request with `reason`: readiness fails until it answers again.
    fn unavailable(&self, reason: &str);
    /// Whether readiness fails for [`Sink::unavailable`].
    fn is_unavailable(&self) -> bool;
}

/// How long the commit thread waits between probe commits while the store is read-only.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// The commit thread's handle.
pub(crate) struct Committer {
    tx: mpsc::Sender<Unit>,
    thread: JoinHandle<()>,
}

impl Committer {
    /// Starts the commit thread.
    pub fn start(backend: Backend, codec: Codec, sink: impl Sink) -> Self {
        let (tx, rx) = mpsc::channel::<Unit>();
        let thread = std::thread::Builder::new()
            .name("kgc-commit".into())
            .spawn(move || match backend {
                Backend::Sqlite(conn) => commit_to_sqlite(conn, &rx, &codec, &sink),
                Backend::Etcd(etcd) => commit_to_etcd(*etcd, &rx, &codec, Arc::new(sink)),
            })
            .expect("spawning the commit thread");
        Self { tx, thread }
    }

    /// Queues a unit; the caller awaits `unit.done`.
    pub fn submit(&self, unit: Unit) -> std::result::Result<(), Unit> {
        self.tx.send(unit).map_err(|e| e.0)
    }

    /// Commits what is queued and stops the thread.
    pub fn close(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

/// The SQLite commit loop: batches of units in one transaction each; a failed one makes the
/// store undo them and refuse writes until a probe commit succeeds.
fn commit_to_sqlite(
    mut conn: rusqlite::Connection,
    rx: &mpsc::Receiver<Unit>,
    codec: &Codec,
    sink: &impl Sink,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(u) => batch.push(u),
                Err(_) => break,
            }
        }
        // Every write in the batch was planned after the charges it depends on were
        // deferred: the batch takes them too, up to the last unit they were queued in (units
        // are queued in revision order, under the write lock).
        if let Some(upto) = sink.before_batch() {
            while batch.last().is_some_and(|u| u.rv < upto) {
                match rx.recv() {
                    Ok(u) => batch.push(u),
                    Err(_) => break,
                }
            }
        }
        if let Err(e) = sqlite::write_batch(&mut conn, codec, &batch) {
            // The storage's own words ("database or disk is full").
            let reason = match e {
                Error::Sqlite(e) => e.to_string(),
                other => other.to_string(),
            };
            tracing::error!(error = %reason, "commit failed; the store is read-only until a probe commit succeeds");
            sink.failed(&reason, &mut batch, &mut |units| {
                units.extend(rx.try_iter());
            });
            for u in batch {
                let _ = u.done.send(Err(Error::Failed(reason.clone())));
            }
            if !probe_until_healthy(&mut conn, rx, sink) {
                break;
            }
            continue;
        }
        let rv = batch.last().map(|u| u.rv).unwrap_or_default();
        let mut events = Vec::new();
        let mut acks = Vec::with_capacity(batch.len());
        for u in batch {
            let landed = u.events.iter().map(|e| Landed::At(e.rv)).collect();
            events.extend(u.events);
            acks.push((u.done, landed));
        }
        sink.committed(events, rv);
        for (done, landed) in acks {
            let _ = done.send(Ok(landed));
        }
    }
    // All senders are gone: checkpoint so the next start reads one file.
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
}

/// The etcd commit loop: each unit is sent as it arrives, its changes as guarded
/// transactions, without waiting for the units before it (see `Etcd::send_unit`); each
/// writer learns where its changes landed (or that another replica got there first), and the
/// store learns of them from its watch. A failure fails that unit only: memory was not
/// touched, and a write whose answer was lost shows in the watch if it landed after all. A
/// failure of etcd itself (no quorum, no member answering) makes readiness fail with its
/// reason, without refusing writes, until a write or a probe every [`PROBE_INTERVAL`] succeeds.
/// The thread wakes every interval to check, as a read that found etcd failing marks it so too,
/// while this thread waits for writes: an idle replica must not stay unready for want of one.
/// When the store closes, every unit sent is answered before the thread ends.
fn commit_to_etcd(
    mut etcd: etcd::Etcd,
    rx: &mpsc::Receiver<Unit>,
    codec: &Codec,
    sink: Arc<impl Sink>,
) {
    loop {
        let unit = match rx.recv_timeout(PROBE_INTERVAL) {
            Ok(unit) => unit,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if sink.is_unavailable() {
                    match etcd.probe() {
                        Ok(()) => {
                            tracing::info!("etcd answers again");
                            sink.recovered();
                        }
                        Err(e) => tracing::debug!(error = %e, "etcd probe failed"),
                    }
                }
                continue;
            }
        };
        let sink = Arc::clone(&sink);
        etcd.send_unit(codec, unit, move |result| match result {
            Ok(_) => sink.recovered(),
            Err(e @ (Error::Etcd(_) | Error::Datastore(_))) => {
                tracing::warn!(error = %e, "an etcd transaction failed");
                sink.unavailable(&e.to_string());
            }
            Err(e) => tracing::warn!(error = %e, "an etcd transaction failed"),
        });
    }
    etcd.close();
}

/// While the store is read-only, commits the revision counter every [`PROBE_INTERVAL`] until
/// one commit succeeds (then tells the sink, and returns true) or the store closes (false).
/// The probe is a real write through the same connection, so its success means the disk takes
/// writes again, not merely that a file can be opened.
fn probe_until_healthy(
    conn: &mut rusqlite::Connection,
    rx: &mpsc::Receiver<Unit>,
    sink: &impl Sink,
) -> bool {
    loop {
        match rx.recv_timeout(PROBE_INTERVAL) {
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            // Writes are refused while read-only, so nothing is queued; a unit here would be a
            // bug, and is refused rather than written out of order.
            Ok(u) => {
                let _ = u
                    .done
                    .send(Err(Error::Failed("the store is read-only".into())));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => match sqlite::probe(conn, sink.revision()) {
                Ok(()) => {
                    tracing::info!("a probe commit succeeded; the store takes writes again");
                    sink.recovered();
                    return true;
                }
                Err(e) => tracing::debug!(error = %e, "probe commit failed"),
            },
        }
    }
}
