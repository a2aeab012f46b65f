//! The embedded kgc object store.
//!
//! It holds every object of `kgc serve` with the semantics kube-apiserver's registry gives them
//! (uids, a cluster-wide `resourceVersion`, generation, finalizers, graceful and cascading
//! deletion, namespace termination), keeps a watchable log of committed changes, and makes every
//! acknowledged write durable in one SQLite file or in an etcd v3 cluster (see [`backend`]).
//!
//! Reads are served from memory. Writes take one short lock to validate and apply a change and
//! assign its revision, then wait for the commit thread (see [`backend`]) to make it durable;
//! their watch events are published only after that commit.
//!
//! A commit that fails (a full disk, an I/O error) fails its writers and every write queued
//! behind it, undoes all of them in memory (each change carries the state it replaced), and
//! leaves the store read-only ([`Store::failure`] says why) until a probe commit succeeds
//! again: nothing unacknowledged stays visible, nothing acknowledged is lost.
//!
//! On etcd the store is one replica of several: a write is planned the same way under the
//! lock but memory is not changed by it; etcd's watch brings every change, this replica's
//! and the others', into memory in etcd's order (see [`backend::etcd`]). A failed etcd
//! request fails only its write; [`Store::failure`] reports etcd's reason until a write or a
//! probe succeeds, and reads go on from memory meanwhile.
#![forbid(unsafe_code)]

mod backend;
mod continue_token;
mod crd;
mod deferred;
mod delete;
mod fencing;
mod history;
mod job;
mod lease;
pub mod migrate;
mod namespace;
mod object;
mod objects;
mod read;
mod shallow;
#[cfg(test)]
mod testing;
mod watch;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use kgc_meta::{Catalog, GroupResource, Status};
use tokio::sync::{oneshot, watch as notify};

pub use backend::etcd::EtcdOptions;
pub use continue_token::Continue;
pub use deferred::Deferred;
pub use delete::Deleted;
pub use fencing::{LeaseFence, fenced};
pub use object::{StoredObject, field_value, string_map};
pub use read::{ListOptions, ListResult, ReadFrom, too_large_resource_version};
pub use watch::{Event, EventType, WatchEvent, WatchFilter, Watcher};
pub use write::{Updated, normalize, random_suffix};

use backend::etcd::{Feed, Replica, Seen};
use backend::{Backend, Codec, Committer, Landed, Loaded, Op, Unit};
use history::History;
use lease::Leases;
use object::Meta;
use objects::Objects;
use watch::EventLog;

/// Errors of the store. API outcomes (not found, conflict, invalid…) are [`Error::Api`] and carry
/// the exact `metav1.Status`; everything else is a storage failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] Status),
    #[error("opening the database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("creating the database {path}: {source}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("etcd: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// The datastore (etcd) cannot be reached or used, or no longer holds what memory holds.
    #[error("{0}")]
    Datastore(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A stored value could not be decrypted, or encrypted (see `kgc-encryption`).
    #[error(transparent)]
    Encryption(#[from] kgc_encryption::Error),
    #[error("the store is read-only after a failed commit: {0}")]
    Failed(String),
    #[error("the store is shut down")]
    Closed,
    /// A write under a leader Lease another identity holds now (see [`fenced`]).
    #[error("{0}")]
    Fenced(String),
    /// etcd compacted the revisions a watch of it still needed (never answered to a client:
    /// the store reloads).
    #[error("etcd compacted its history up to revision {0}")]
    Compacted(u64),
}

impl Error {
    /// The `metav1.Status` a client should see for this error. A storage failure is a 500
    /// carrying the storage's own text and no reason, as kube-apiserver answers when etcd
    /// fails a write (`responsewriters.ErrorToAPIStatus` of a plain error).
    pub fn status(&self) -> Status {
        match self {
            Error::Api(s) => s.clone(),
            Error::Failed(_) | Error::Sqlite(_) | Error::Etcd(_) | Error::Datastore(_) => {
                Status::unknown(500, self.to_string())
            }
            other => Status::internal(other.to_string()),
        }
    }

    /// Whether the storage failed for want of disk space (SQLite's `SQLITE_FULL`, `ENOSPC`).
    pub fn is_disk_full(&self) -> bool {
        let sqlite_full =
            |e: &rusqlite::Error| e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull);
        match self {
            Error::Sqlite(e) | Error::Open { source: e, .. } => sqlite_full(e),
            Error::Create { source, .. } => source.kind() == std::io::ErrorKind::StorageFull,
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How many committed events are retained for watch resumption.
pub const DEFAULT_WATCH_LOG: usize = 100_000;

/// The store's notion of now, shared with everything else that reads the time.
pub use kgc_meta::time::Clock;

/// Everything guarded by the write lock.
pub(crate) struct State {
    /// The latest revision: assigned by the store (SQLite, memory), or applied from etcd's
    /// watch (etcd: the revisions are etcd's, see [`backend::etcd`]).
    rv: u64,
    /// On etcd: a write's revision is the one it lands at, and memory changes by the watch.
    replicated: bool,
    objects: HashMap<GroupResource, Objects>,
    /// The recent changes, for reads at past revisions.
    history: History,
    /// Why writes are refused, if they are.
    failed: Option<Failure>,
    /// (etcd only) Why etcd failed the last request, until a request or probe succeeds:
    /// readiness fails with it, while writes are still sent (each fails on its own).
    unavailable: Option<String>,
    /// (etcd only) This replica's deletions on their way, by key: the revision of the state
    /// they delete and the object they delete it as (a last finalizer removed by an update
    /// deletes the object without it, which etcd's `prev_kv` does not know), for the DELETED
    /// event the watch brings.
    deleting: HashMap<(GroupResource, String, String), (u64, Arc<StoredObject>)>,
    /// When the objects of resources with a TTL expire.
    leases: Leases,
    /// Changes written with the next commit (see [`deferred`]).
    deferred: deferred::Entries,
}

/// Why the store refuses writes.
#[derive(Debug, Clone)]
enum Failure {
    /// A commit failed (the storage's text); cleared when a probe commit succeeds.
    Commit(String),
    /// [`Store::close`] was called.
    Closed,
}

impl State {
    /// Replaces what memory holds by what storage holds (a start, or a reload from etcd).
    fn load(&mut self, loaded: Loaded, now: i64) {
        self.rv = loaded.revision;
        self.objects.clear();
        self.leases = Leases::new(std::mem::take(&mut self.leases.ttl));
        self.leases.backlog = loaded.expired_rows;
        for (group, resource, obj, expires) in loaded.objects {
            self.rv = self.rv.max(obj.resource_version);
            let gr = GroupResource::new(group, resource);
            // Without a stored expiry (on etcd, or stored before its resource had a TTL): a
            // TTL after its last write, as far as the object tells, else from now.
            let expires = expires.or_else(|| {
                self.leases.ttl(&gr)?;
                let written = lease::last_written(&obj.value()).map_or(now, |w| w.min(now));
                self.leases.expiry_at(&gr, written)
            });
            if let Some(at) = expires {
                self.leases.grant(&gr, &obj.namespace, &obj.name, at);
            }
            self.objects
                .entry(gr)
                .or_default()
                .insert((obj.namespace.clone(), obj.name.clone()), obj);
        }
    }

    pub(crate) fn get(
        &self,
        gr: &GroupResource,
        ns: &str,
        name: &str,
    ) -> Option<&Arc<StoredObject>> {
        self.objects.get(gr)?.get(ns, name)
    }

    /// The revision of the next change. On etcd, only a placeholder until etcd says where the
    /// change landed: memory does not move until the watch brings it.
    pub(crate) fn next_rv(&mut self) -> u64 {
        if self.replicated {
            return self.rv + 1;
        }
        self.rv += 1;
        self.rv
    }
}

/// A change to commit.
pub(crate) struct Change {
    pub gr: GroupResource,
    pub kind: EventType,
    pub object: Arc<StoredObject>,
    pub prev: Option<Arc<StoredObject>>,
}

/// A commit in flight; awaiting it returns once the change is durable, with where each change
/// landed (nothing for a write that changed nothing or was not durable).
#[must_use]
pub(crate) struct Pending(Option<oneshot::Receiver<Result<Vec<Landed>>>>);

impl Pending {
    pub async fn wait(self) -> Result<Vec<Landed>> {
        match self.0 {
            None => Ok(Vec::new()),
            Some(rx) => rx.await.unwrap_or(Err(Error::Closed)),
        }
    }
}

struct Inner {
    state: Mutex<State>,
    /// Replaced whole when a CRD changes, so readers hold a consistent snapshot without a lock.
    catalog: RwLock<Arc<Catalog>>,
    /// Moved on each catalog edit: what in-process discovery waits on, so that a CRD's kind is
    /// watched from the commit that makes it served, not at the next periodic discovery.
    catalog_edited: notify::Sender<u64>,
    log: Arc<Mutex<EventLog>>,
    committed: notify::Sender<u64>,
    /// Per resource, moved when a change to it commits: what watchers wait on, so a write wakes
    /// only the watchers of its own resource.
    resource_committed: Mutex<HashMap<GroupResource, notify::Sender<u64>>>,
    committer: Mutex<Option<Committer>>,
    durable: bool,
    /// On etcd: etcd's current revision, for reads of the latest state.
    replica: Option<Replica>,
    /// The watch log's capacity, for a reload.
    watch_log: usize,
    clock: Clock,
}

/// A handle to the store; clones share it.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct Options {
    /// The SQLite file; `None` keeps everything in memory (unless `etcd` is set).
    pub path: Option<PathBuf>,
    /// An etcd cluster to keep the objects in instead of `path`.
    pub etcd: Option<EtcdOptions>,
    pub watch_log: usize,
    pub clock: Clock,
    /// Encryption at rest of the values written to `path` (memory always holds plain objects).
    /// Without it nothing is encrypted, and an encrypted value on disk fails the open.
    pub encryption: Option<Arc<kgc_encryption::Transformers>>,
    /// Resources whose objects expire this long after their last write, as kube-apiserver's
    /// `--event-ttl` gives Events (see [`lease`]).
    pub ttl: HashMap<GroupResource, Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            path: None,
            etcd: None,
            watch_log: DEFAULT_WATCH_LOG,
            clock: Clock::default(),
            encryption: None,
            ttl: HashMap::new(),
        }
    }
}

impl Store {
    /// A throwaway store in memory.
    pub async fn in_memory() -> Result<Self> {
        Self::open_with(Options::default()).await
    }

    /// Opens (or creates) the durable store at `path`.
    pub async fn open(path: &Path) -> Result<Self> {
        Self::open_with(Options {
            path: Some(path.to_owned()),
            ..Options::default()
        })
        .await
    }

    pub async fn open_with(opts: Options) -> Result<Self> {
        let mut state = State {
            rv: 0,
            replicated: opts.etcd.is_some(),
            objects: HashMap::new(),
            history: History::new(0, opts.watch_log),
            failed: None,
            unavailable: None,
            deleting: HashMap::new(),
            leases: Leases::new(opts.ttl.clone()),
            deferred: HashMap::new(),
        };
        let mut backend = None;
        let mut replica = None;
        let codec = Codec::new(opts.encryption.clone());
        let now = opts.clock.now().as_millisecond();
        let loaded = match (&opts.etcd, &opts.path) {
            (Some(etcd), _) => {
                let (etcd, loaded) = backend::etcd::Etcd::open(etcd, &codec)?;
                replica = Some(etcd.replica());
                backend = Some(Backend::Etcd(Box::new(etcd)));
                Some(loaded)
            }
            (None, Some(path)) => {
                let (conn, loaded) = backend::sqlite::open(path, &codec, now)?;
                backend = Some(Backend::Sqlite(conn));
                Some(loaded)
            }
            (None, None) => None,
        };
        if let Some(loaded) = loaded {
            state.load(loaded, now);
        }
        // Nothing before the loaded revision can be read back.
        state.history = History::new(state.rv, opts.watch_log);
        let (committed, _) = notify::channel(state.rv);
        let log = Arc::new(Mutex::new(EventLog::new(state.rv, opts.watch_log)));
        let store = Store {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                catalog: RwLock::new(Arc::new(Catalog::builtin())),
                catalog_edited: notify::channel(0).0,
                log,
                committed,
                resource_committed: Mutex::default(),
                committer: Mutex::new(None),
                durable: backend.is_some(),
                replica,
                watch_log: opts.watch_log,
                clock: opts.clock,
            }),
        };
        if let (Some(Backend::Etcd(etcd)), Some(replica)) = (&backend, &store.inner.replica) {
            let from = store.revision();
            etcd.start_watch(
                codec.clone(),
                from,
                replica,
                Durable(Arc::downgrade(&store.inner)),
            );
        }
        if let Some(backend) = backend {
            let committer = Committer::start(backend, codec, Durable(Arc::downgrade(&store.inner)));
            *store
                .inner
                .committer
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(committer);
        }
        store.restore_catalog();
        store.bootstrap_namespaces().await?;
        if store.inner.durable || !opts.ttl.is_empty() {
            store.start_expiry();
        }
        Ok(store)
    }

    /// Whether this store is one replica of several on etcd: memory follows etcd's watch.
    pub fn is_replicated(&self) -> bool {
        self.inner.replica.is_some()
    }

    /// Whether writes reach disk.
    pub fn is_durable(&self) -> bool {
        self.inner.durable
    }

    /// Why the store refuses writes, if it does: the storage's text after a failed commit
    /// (until a probe commit succeeds again), or that it is shut down; on etcd, also etcd's
    /// reason for failing the last request (writes are still sent). Reads keep working.
    pub fn failure(&self) -> Option<String> {
        let st = self.inner.lock_state();
        match &st.failed {
            None => st.unavailable.clone(),
            Some(Failure::Commit(reason)) => Some(reason.clone()),
            Some(Failure::Closed) => Some(Error::Closed.to_string()),
        }
    }

    /// A snapshot of the catalog of served resources.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.inner.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The catalog's generation, moved after each edit of the catalog (a CRD changed; the
    /// served resources may be the same): wait on it with `changed()`, then read
    /// [`Store::catalog`].
    pub fn catalog_edits(&self) -> notify::Receiver<u64> {
        self.inner.catalog_edited.subscribe()
    }

    /// Changes the catalog (a CRD became served or went away).
    pub(crate) fn edit_catalog(&self, f: impl FnOnce(&mut Catalog)) {
        {
            let mut guard = self
                .inner
                .catalog
                .write()
                .unwrap_or_else(|p| p.into_inner());
            f(Arc::make_mut(&mut guard));
        }
        self.inner.catalog_edited.send_modify(|g| *g += 1);
    }

    pub fn clock(&self) -> Clock {
        self.inner.clock
    }

    /// The latest assigned revision.
    pub fn revision(&self) -> u64 {
        self.inner.lock_state().rv
    }

    /// The revision of the last change to `gr` committed since anything first watched it
    /// (`None` when nothing does). A watcher of `gr` whose bookmark has reached it has handed
    /// out every change to `gr` so far: how a consumer of several watches knows they all
    /// caught up (the garbage collector, before it finishes a foreground deletion).
    pub fn last_change(&self, gr: &GroupResource) -> Option<u64> {
        self.inner
            .resource_committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(gr)
            .map(|tx| *tx.borrow())
    }

    /// Number of stored objects, for metrics and benchmarks.
    pub fn len(&self) -> usize {
        self.inner
            .lock_state()
            .objects
            .values()
            .map(Objects::len)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Commits what is queued and stops accepting writes. Watchers see `Closed`.
    pub fn close(&self) {
        let committer = {
            let _st = self.inner.lock_state();
            self.inner
                .committer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
        };
        if let Some(c) = committer {
            c.close();
        }
        self.inner.lock_state().failed = Some(Failure::Closed);
    }

    /// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` when missing.
    async fn bootstrap_namespaces(&self) -> Result<()> {
        let info = self
            .catalog()
            .get("", "v1", "namespaces")
            .cloned()
            .expect("namespaces are built in");
        for name in namespace::SYSTEM_NAMESPACES {
            if self.get(&info.group_resource(), "", name).is_none() {
                let obj = serde_json::json!({
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {}
                });
                match self.create(&info, "", obj, false).await {
                    // Another replica starting at the same time made it.
                    Err(Error::Api(s)) if s.is(kgc_meta::Reason::AlreadyExists) => {}
                    other => drop(other?),
                }
            }
        }
        Ok(())
    }

    /// Applies changes to memory and hands them to the commit path. Called with the lock held.
    /// On etcd memory is left alone: the changes are sent as they are planned, guarded by the
    /// revisions they were planned from, and come back through the watch (see
    /// [`Store::written`]).
    pub(crate) fn commit(&self, st: &mut State, changes: Vec<Change>) -> Result<Pending> {
        let Some(last) = changes.last() else {
            return Ok(Pending(None));
        };
        let rv = last.object.resource_version;
        let fence = match st.replicated {
            true => fencing::guard(st)?,
            false => None,
        };
        let now = lease::now_ms(&self.inner);
        let mut ops = Vec::with_capacity(changes.len());
        let mut events = Vec::with_capacity(changes.len());
        for c in changes {
            if st.replicated {
                if let (EventType::Deleted, Some(prev)) = (c.kind, &c.prev) {
                    let key = (
                        c.gr.clone(),
                        c.object.namespace.clone(),
                        c.object.name.clone(),
                    );
                    st.deleting
                        .insert(key, (prev.resource_version, Arc::clone(&c.object)));
                }
                events.push(Arc::new(Event {
                    rv: c.object.resource_version,
                    kind: c.kind,
                    gr: c.gr,
                    object: c.object,
                    prev: c.prev,
                }));
                continue;
            }
            let (event, op) = self.apply(st, c, now);
            ops.extend(op);
            events.push(event);
        }
        if !self.inner.durable {
            self.inner.publish(events, rv);
            return Ok(Pending(None));
        }
        let (done, rx) = oneshot::channel();
        let unit = Unit {
            rv,
            ops,
            events,
            fence,
            done,
        };
        let committer = self
            .inner
            .committer
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match committer.as_ref().map(|c| c.submit(unit)) {
            Some(Ok(())) => Ok(Pending(Some(rx))),
            // Writes check `failed` first, and `close` marks it under the same lock, so a missing
            // committer here means a bug; refuse rather than acknowledge a non-durable write.
            _ => Err(Error::Closed),
        }
    }

    /// Applies one change to memory (objects, leases, the catalog, the history) and returns
    /// its event, and the row change a durable SQLite store writes.
    fn apply(&self, st: &mut State, c: Change, now: i64) -> (Arc<Event>, Option<Op>) {
        let key = (c.object.namespace.clone(), c.object.name.clone());
        let durable = self.inner.durable && !st.replicated;
        let objects = match st.objects.get_mut(&c.gr) {
            Some(objects) => objects,
            None => st.objects.entry(c.gr.clone()).or_default(),
        };
        let op = if c.kind == EventType::Deleted {
            objects.remove(&key);
            let had_lease = st.leases.revoke(&c.gr, &key.0, &key.1);
            durable.then(|| Op::Delete {
                group: c.gr.group.clone(),
                resource: c.gr.resource.clone(),
                leased: had_lease || st.leases.ttl(&c.gr).is_some(),
                namespace: key.0,
                name: key.1,
            })
        } else {
            objects.insert(key, Arc::clone(&c.object));
            // Each write takes a new lease, as kube-apiserver attaches one at each write.
            let expires = st.leases.expiry_at(&c.gr, now);
            if let Some(at) = expires {
                st.leases
                    .grant(&c.gr, &c.object.namespace, &c.object.name, at);
            }
            durable.then(|| Op::Put {
                group: c.gr.group.clone(),
                resource: c.gr.resource.clone(),
                object: Arc::clone(&c.object),
                expires,
            })
        };
        if crd::is_crd(&c.gr) {
            self.sync_catalog(&c);
        }
        let event = Arc::new(Event {
            rv: c.object.resource_version,
            kind: c.kind,
            gr: c.gr,
            object: c.object,
            prev: c.prev,
        });
        st.history.record(&event);
        (event, op)
    }

    /// Where the changes of a write landed, once memory holds them: on etcd, memory changes
    /// when the watch brings them, so a writer waits for it (bounded: the write is durable
    /// whether or not the watch is late), and a change that lost its guard to another
    /// replica's is answered with the revision to catch up with before planning again.
    pub(crate) async fn written(&self, pending: Pending) -> Result<Written> {
        let landed = pending.wait().await?;
        if let Some(conflict) = landed.iter().find_map(|l| match l {
            Landed::Conflict(at) => Some(*at),
            Landed::At(_) => None,
        }) {
            self.caught_up(conflict).await;
            return Ok(Written::Conflict);
        }
        let revisions: Vec<u64> = landed
            .iter()
            .filter_map(|l| match l {
                Landed::At(rv) => Some(*rv),
                Landed::Conflict(_) => None,
            })
            .collect();
        if let Some(&last) = revisions.iter().max()
            && self.inner.replica.is_some()
        {
            self.caught_up(last).await;
        }
        Ok(Written::At(revisions))
    }

    /// Waits (at most [`CATCH_UP`]) until memory has applied revision `rv`.
    async fn caught_up(&self, rv: u64) {
        let mut committed = self.inner.committed.subscribe();
        let _ = tokio::time::timeout(CATCH_UP, committed.wait_for(|&at| at >= rv)).await;
    }

    /// On etcd, before a write refuses for a missing object (`gr`, `namespace`, `name`): waits
    /// for the latest state if memory lacks it, since another replica may have just written it
    /// (kube-apiserver reads the object from etcd in `GuaranteedUpdate` and `Delete`, and
    /// NamespaceLifecycle admission looks a namespace missing from its cache up in storage
    /// before refusing: `plugin/pkg/admission/namespace/lifecycle/admission.go`). A no-op when
    /// memory holds it, or off etcd.
    pub(crate) async fn latest_if_missing(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<()> {
        if self.is_replicated() && self.get(gr, namespace, name).is_none() {
            self.wait_for_latest().await?;
        }
        Ok(())
    }

    /// Waits until memory holds everything etcd held when the read arrived (kube-apiserver's
    /// consistent reads from the watch cache: `cacher.go` reads etcd's current revision and
    /// `waitUntilFreshAndBlock`s); at most 4 s (3 s once progress was asked), then the 504 "Too large resource version".
    /// A no-op off etcd, where memory is the truth. While etcd fails (no quorum) reads go on
    /// from memory as it is, as the server's readiness says.
    ///
    /// Progress is asked of the watch only when the change does not arrive by itself within
    /// [`PROGRESS_AFTER`]: etcd before 3.4.25 and 3.5.8 may answer a progress request ahead of
    /// changes its watch has not sent yet (etcd-io/etcd#15220, why kube-apiserver checks
    /// etcd's version before reading consistently from its cache), and changes under the
    /// prefix, the usual case, arrive by themselves.
    pub async fn wait_for_latest(&self) -> Result<()> {
        let Some(replica) = &self.inner.replica else {
            return Ok(());
        };
        let failing = self.inner.lock_state().unavailable.is_some();
        let current = match replica.current_revision(failing).await {
            Ok(current) => current,
            Err(e) => {
                tracing::warn!(error = %e, "etcd did not tell its revision; reading memory");
                self.inner.lock_state().unavailable = Some(e.to_string());
                return Ok(());
            }
        };
        if self.revision() < current {
            let mut committed = self.inner.committed.subscribe();
            let arrived = committed.wait_for(|&at| at >= current);
            if tokio::time::timeout(PROGRESS_AFTER, arrived).await.is_err() {
                replica.request_progress();
            }
        }
        Ok(self.wait_for_revision(current).await?)
    }

    /// Takes the write lock, refusing writes after a failed commit or shutdown.
    pub(crate) fn write_lock(&self) -> Result<MutexGuard<'_, State>> {
        let st = self.inner.lock_state();
        match &st.failed {
            None => Ok(st),
            Some(Failure::Commit(reason)) => Err(Error::Failed(reason.clone())),
            Some(Failure::Closed) => Err(Error::Closed),
        }
    }

    /// Undoes the changes of `units` in memory, newest first, so that memory holds exactly
    /// what is committed: each change puts back the state it replaced (its event's `prev`),
    /// and a CRD change puts back the catalog entry it made.
    fn roll_back(&self, st: &mut State, units: &[Unit]) {
        let now = lease::now_ms(&self.inner);
        for e in units.iter().rev().flat_map(|u| u.events.iter().rev()) {
            let key = (e.object.namespace.clone(), e.object.name.clone());
            let objects = st.objects.entry(e.gr.clone()).or_default();
            match &e.prev {
                Some(prev) => {
                    objects.insert(key, Arc::clone(prev));
                    if let Some(at) = st.leases.expiry_at(&e.gr, now) {
                        st.leases.grant(&e.gr, &prev.namespace, &prev.name, at);
                    }
                }
                None => {
                    objects.remove(&key);
                    let _ = st.leases.revoke(&e.gr, &e.object.namespace, &e.object.name);
                }
            }
            if crd::is_crd(&e.gr) {
                self.sync_catalog(&Change {
                    gr: e.gr.clone(),
                    kind: if e.prev.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Deleted
                    },
                    object: e.prev.clone().unwrap_or_else(|| Arc::clone(&e.object)),
                    prev: Some(Arc::clone(&e.object)),
                });
            }
        }
    }
}

/// How long a consistent read on etcd waits for the watch to bring etcd's revision by itself
/// before asking it for progress.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// How long a writer on etcd waits for the watch to bring its change into memory.
const CATCH_UP: Duration = Duration::from_secs(10);

/// How a write went through [`Store::written`].
pub(crate) enum Written {
    /// Durable: the revision of each change (the ones planned, off etcd).
    At(Vec<u64>),
    /// Another replica changed a key first; memory now holds its change: plan again.
    Conflict,
}

/// How many times a write that lost its guard to another replica is planned again before it
/// is answered 409 (kube-apiserver's `GuaranteedUpdate` retries as long as its update
/// function accepts the fresh object; a bound keeps every request bounded).
pub(crate) const CONFLICT_RETRIES: usize = 16;

/// The commit thread's (and the etcd watch's) view of a durable store.
struct Durable(Weak<Inner>);

impl Feed for Durable {
    fn apply(&self, seen: Vec<Seen>, revision: u64) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        let store = Store { inner };
        let now = lease::now_ms(&store.inner);
        let mut events = Vec::with_capacity(seen.len());
        {
            let mut st = store.inner.lock_state();
            for s in seen {
                if s.rv <= st.rv {
                    continue;
                }
                let prev = st.get(&s.gr, &s.namespace, &s.name).cloned();
                let planned = st
                    .deleting
                    .remove(&(s.gr.clone(), s.namespace.clone(), s.name.clone()))
                    .filter(|(at, _)| prev.as_ref().is_some_and(|p| p.resource_version == *at))
                    .map(|(_, object)| object);
                let (kind, object) = match (s.object, prev.as_ref().or(s.prev.as_ref())) {
                    (Some(object), None) => (EventType::Added, object),
                    (Some(object), Some(_)) => (EventType::Modified, object),
                    // A DELETED event carries the last state at the deletion's revision: this
                    // replica's own deletion the object it deleted it as.
                    (None, Some(last)) => {
                        match stamp(&mut planned.as_ref().unwrap_or(last).value(), s.rv) {
                            Ok(object) => (EventType::Deleted, object),
                            Err(e) => {
                                tracing::warn!(error = %e, "an object deleted in etcd");
                                continue;
                            }
                        }
                    }
                    (None, None) => continue,
                };
                let change = Change {
                    gr: s.gr,
                    kind,
                    object,
                    prev,
                };
                events.push(store.apply(&mut st, change, now).0);
                st.rv = s.rv;
            }
            st.rv = st.rv.max(revision);
        }
        let rv = store.revision();
        store.inner.publish(events, rv);
    }

    fn reload(&self, loaded: Loaded) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        let store = Store { inner };
        let now = lease::now_ms(&store.inner);
        let rv = {
            let mut st = store.inner.lock_state();
            st.load(loaded, now);
            st.history = History::new(st.rv, store.inner.watch_log);
            // Every watcher is behind the new floor: each is answered 410 Expired and re-lists.
            *store.inner.log.lock().unwrap_or_else(|p| p.into_inner()) =
                EventLog::new(st.rv, store.inner.watch_log);
            st.rv
        };
        store.restore_catalog();
        store.inner.publish(Vec::new(), rv);
        // Wake them all now: a watcher sleeps until its own resource changes, and one of a
        // quiet resource would otherwise go on without the changes it missed.
        store.inner.wake_every_watcher(rv);
    }

    fn alive(&self) -> bool {
        self.0
            .upgrade()
            .is_some_and(|inner| !matches!(inner.lock_state().failed, Some(Failure::Closed)))
    }
}

impl backend::Sink for Durable {
    fn before_batch(&self) -> Option<u64> {
        let store = Store {
            inner: self.0.upgrade()?,
        };
        let mut st = store.write_lock().ok()?;
        match store.flush_deferred(&mut st) {
            Ok(last) => last,
            Err(e) => {
                tracing::warn!(error = %e, "writing deferred changes");
                None
            }
        }
    }

    fn committed(&self, events: Vec<Arc<Event>>, rv: u64) {
        if let Some(inner) = self.0.upgrade() {
            inner.publish(events, rv);
        }
    }

    fn failed(&self, reason: &str, units: &mut Vec<Unit>, drain: &mut dyn FnMut(&mut Vec<Unit>)) {
        let Some(inner) = self.0.upgrade() else {
            return drain(units);
        };
        let store = Store { inner };
        // Writers queue units with the write lock held: under it, the queue is complete.
        let mut st = store.inner.lock_state();
        drain(units);
        if !matches!(st.failed, Some(Failure::Closed)) {
            st.failed = Some(Failure::Commit(reason.to_owned()));
        }
        store.roll_back(&mut st, units);
        tracing::warn!(
            writes = units.len(),
            revision = st.rv,
            "failed writes undone; the store is read-only"
        );
    }

    fn revision(&self) -> u64 {
        self.0.upgrade().map_or(0, |inner| inner.lock_state().rv)
    }

    fn recovered(&self) {
        if let Some(inner) = self.0.upgrade() {
            let mut st = inner.lock_state();
            if matches!(st.failed, Some(Failure::Commit(_))) {
                st.failed = None;
            }
            st.unavailable = None;
        }
    }

    fn unavailable(&self, reason: &str) {
        if let Some(inner) = self.0.upgrade() {
            inner.lock_state().unavailable = Some(reason.to_owned());
        }
    }

    fn is_unavailable(&self) -> bool {
        self.0
            .upgrade()
            .is_some_and(|inner| inner.lock_state().unavailable.is_some())
    }
}

impl Inner {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, events: Vec<Arc<Event>>, rv: u64) {
        let mut touched: Vec<GroupResource> = Vec::new();
        for e in &events {
            if !touched.contains(&e.gr) {
                touched.push(e.gr.clone());
            }
        }
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(events);
        {
            let senders = self
                .resource_committed
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            for gr in &touched {
                if let Some(tx) = senders.get(gr) {
                    tx.send_replace(rv);
                }
            }
        }
        self.committed.send_replace(rv);
    }

    /// Wakes the watchers of every resource, whether or not it changed.
    fn wake_every_watcher(&self, rv: u64) {
        let senders = self
            .resource_committed
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for tx in senders.values() {
            tx.send_replace(rv);
        }
    }

    /// A receiver that moves when a change to `gr` commits.
    fn subscribe(&self, gr: &GroupResource) -> notify::Receiver<u64> {
        let mut senders = self
            .resource_committed
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match senders.get(gr) {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = notify::channel(0);
                senders.insert(gr.clone(), tx);
                rx
            }
        }
    }
}

/// Fills `metadata.resourceVersion` and builds the stored form.
pub(crate) fn stamp(value: &mut serde_json::Value, rv: u64) -> Result<Arc<StoredObject>> {
    value.set("resourceVersion", rv.to_string());
    Ok(StoredObject::from_value(value)?)
}
