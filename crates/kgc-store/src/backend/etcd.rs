//! The etcd v3 backend: the store's objects in an etcd cluster, laid out as kube-apiserver lays
//! them out, so that `etcdctl get --prefix /registry` reads what an operator expects.
//!
//! One key per object: `<prefix>/<resource prefix>/<namespace>/<name>` (no namespace segment for
//! cluster-scoped objects). A built-in resource's prefix is its resource name, but for the few
//! kube-apiserver renames (kubernetes/kubernetes `pkg/kubeapiserver/default_storage_factory_builder.go`,
//! `SpecialDefaultResourcePrefixes`); a custom resource's is `<group>/<plural>`, as
//! apiextensions-apiserver's `crdHandler` gives it, and so are CRDs' and APIServices' own.
//!
//! `resourceVersion` is etcd's `mod_revision`, and several `kgc serve` replicas may share one
//! prefix, as kube-apiserver's replicas do. Each change is one transaction guarded by its key's
//! revision only (`mod_revision` equal to the version the store planned from, or
//! `create_revision == 0` for a create: kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`); a guard that fails means another
//! replica (or any client) changed the key first, and the writer plans again on the fresh object
//! or answers 409, as `GuaranteedUpdate` does. Memory is fed only by etcd's watch of the prefix
//! (with `prev_kv`, from the revision loaded: the cacher of `storage/cacher/` fed by
//! `etcd3/watcher.go`), so every replica applies every change once, in etcd's order, its own
//! included; a writer returns once the watch has brought its change. A watch that falls behind
//! etcd's compaction reloads the prefix at the current revision, and the store's watchers are
//! answered 410 `Expired`.
//!
//! A start reads the whole prefix at one revision, in pages, and decodes each value through the
//! [`Codec`] (Secrets are encrypted before they leave the process, as on SQLite). Objects whose
//! resource has a TTL are deleted by the store when they expire, as any deletion (etcd leases
//! would delete keys behind the store's back); after a restart they expire a TTL after their last
//! write as the object tells it (`lease::last_written`), since no expiry is stored here.
//! Old revisions are compacted every `--etcd-compaction-interval` to the revision seen one
//! interval earlier, as kube-apiserver's compactor does (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/storage/etcd3/compact.go`); the store answers reads and
//! watches from its own history, so what it cannot serve is still answered 410 `Expired`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, EventType as WatchEventType,
    GetOptions, Identity, KvClient, TlsOptions, Txn, TxnOp, WatchOptions,
};
use kgc_meta::{Catalog, GroupResource};
use tokio::sync::{Notify, Semaphore};

use super::{Codec, Landed, Loaded, LoadedObject, Unit};
use crate::fencing::{self, Guard};
use crate::object::StoredObject;
use crate::watch::{Event, EventType};
use crate::{Error, Result};

/// Keys a start reads per request.
const PAGE: i64 = 1_000;

/// How often a copy into etcd (`kgc serve migrate`) logs its progress, in objects.
const PROGRESS: usize = 10_000;

/// The most units in flight to etcd at once, as kube-apiserver's
/// `--max-mutating-requests-inflight` (200 by default) bounds the writes it has in flight there.
const MAX_UNITS_IN_FLIGHT: usize = 200;

/// How long a start waits for the cluster to answer, and a request for its reply.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a probe of an etcd that failed a request waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a broken watch waits before watching again, and how often a quiet one checks that
/// the store is still open.
const WATCH_RETRY: Duration = Duration::from_millis(500);
/// How long opening a watch (or its connection to one member) may take before the next
/// member is tried, and how long a watch behind its member may leave a progress request
/// unanswered before it is opened again.
const WATCH_OPEN_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a watch may hear nothing before it checks that its member has nothing newer, and
/// how long that member may take to tell its revision.
const WATCH_QUIET: Duration = Duration::from_secs(3);
const WATCH_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// How `kgc serve --datastore-endpoint` reaches etcd.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// `http://host:port`, `https://host:port` or `etcd://host:port` (http, or https with TLS
    /// files), one per member.
    pub endpoints: Vec<String>,
    /// Where the objects live (`--etcd-prefix`, `/registry` by default).
    pub prefix: String,
    /// TLS: the CA that signed the members' certificates, and the client's own certificate.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// How often old revisions are compacted; zero never compacts.
    pub compaction_interval: Duration,
}

impl EtcdOptions {
    /// Plain-text endpoints and the defaults of kube-apiserver's flags.
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints,
            prefix: "/registry".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            compaction_interval: Duration::from_secs(300),
        }
    }

    /// The prefix without a trailing slash, starting with one.
    fn prefix(&self) -> String {
        format!("/{}", self.prefix.trim_matches('/'))
    }
}

/// The commit thread's connection to etcd.
pub(crate) struct Etcd {
    /// Its own runtime: the commit thread is a plain thread, and the client's connections (and
    /// the watch that feeds the store) must be driven whether or not it is in a call.
    rt: tokio::runtime::Runtime,
    client: Client,
    keys: Arc<Keys>,
    /// For the watch's own connections when it must open again.
    opts: EtcdOptions,
    /// Slots for the units in flight ([`MAX_UNITS_IN_FLIGHT`]).
    in_flight: Arc<Semaphore>,
}

impl Etcd {
    /// Connects, checks the cluster answers within [`CONNECT_TIMEOUT`], and reads every object
    /// under the prefix at one revision. Runs on a thread of its own, as the store opens from
    /// async code and the client needs a runtime that lives with the commit thread.
    pub fn open(opts: &EtcdOptions, codec: &Codec) -> Result<(Self, Loaded)> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("kgc-etcd")
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Datastore(format!("starting the etcd client: {e}")))?;
                let (client, keys, loaded) = rt.block_on(Self::connect_and_load(opts, codec))?;
                if !opts.compaction_interval.is_zero() {
                    rt.spawn(compact_every(
                        client.kv_client(),
                        keys.sentinel.clone(),
                        opts.compaction_interval,
                    ));
                }
                Ok((
                    Etcd {
                        rt,
                        client,
                        keys: Arc::new(keys),
                        opts: opts.clone(),
                        in_flight: Arc::new(Semaphore::new(MAX_UNITS_IN_FLIGHT)),
                    },
                    loaded,
                ))
            })
            .join()
            .unwrap_or_else(|_| Err(Error::Datastore("the etcd client panicked".into())))
        })
    }

    async fn connect_and_load(opts: &EtcdOptions, codec: &Codec) -> Result<(Client, Keys, Loaded)> {
        let keys = Keys::new(&opts.prefix());
        let (client, loaded) = answering(opts, |mut kv| {
            let keys = &keys;
            async move {
                // A first request proves a member answers (the client connects lazily).
                kv.get(keys.sentinel.clone(), None).await?;
                keys.load(&mut kv, codec).await
            }
        })
        .await?;
        Ok((client, keys, loaded))
    }

    /// What the store needs to read etcd's current revision and to drive its watch.
    pub fn replica(&self) -> Replica {
        Replica {
            kv: self.client.kv_client(),
            probe: self.keys.sentinel.clone(),
            progress: Arc::new(Notify::new()),
        }
    }

    /// Starts the watch that feeds the store every change under the prefix after `revision`
    /// (kube-apiserver's cacher fed by `etcd3/watcher.go`), on this connection's runtime.
    pub fn start_watch(&self, codec: Codec, revision: u64, replica: &Replica, feed: impl Feed) {
        let watch = Watch {
            client: self.client.clone(),
            opts: self.opts.clone(),
            keys: Arc::clone(&self.keys),
            codec,
            progress: Arc::clone(&replica.progress),
        };
        self.rt.spawn(watch.run(revision as i64, feed));
    }

    /// Sends a unit's changes, each as one transaction guarded by its key's revision
    /// (kube-apiserver `etcd3/store.go`: `GuaranteedUpdate`'s and `Delete`'s `mod_revision`
    /// comparison, `Create`'s `create_revision == 0`), and answers its writer where each landed
    /// once etcd has answered them all, after `report` has seen the outcome. A unit's changes go
    /// one after another; each unit goes as soon as it is handed over, whatever is in flight,
    /// as kube-apiserver's concurrent requests each send their own transaction: two units
    /// racing for one key end as they would one after the other, one landed and the other a
    /// conflict, planned again. At most [`MAX_UNITS_IN_FLIGHT`] are in flight; the next waits
    /// for a slot. Memory is not touched here: the watch brings every change, this replica's
    /// and the others', in etcd's order.
    pub fn send_unit(
        &self,
        codec: &Codec,
        unit: Unit,
        report: impl FnOnce(&Result<Vec<Landed>>) + Send + 'static,
    ) {
        let slots = Arc::clone(&self.in_flight);
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => Ok(slot),
            Err(_) => self.rt.block_on(slots.acquire_owned()),
        };
        // Only a closed semaphore fails, and nothing closes it.
        let Ok(slot) = slot else {
            let _ = unit.done.send(Err(Error::Closed));
            return;
        };
        let (mut kv, keys, codec) = (
            self.client.kv_client(),
            Arc::clone(&self.keys),
            codec.clone(),
        );
        self.rt.spawn(async move {
            let landed: Result<Vec<Landed>> = async {
                let mut landed = Vec::with_capacity(unit.events.len());
                for event in &unit.events {
                    let fence = unit.fence.as_ref();
                    landed.push(commit_event(&mut kv, &keys, &codec, event, fence).await?);
                }
                Ok(landed)
            }
            .await;
            report(&landed);
            let _ = unit.done.send(landed);
            drop(slot);
        });
    }

    /// Whether etcd serves a linearizable read (which needs a leader and a quorum).
    pub fn probe(&mut self) -> Result<()> {
        let kv = self.client.kv_client();
        self.rt.block_on(async {
            let deadline = tokio::time::Instant::now() + PROBE_TIMEOUT;
            let read = revision_of(&kv, &self.keys.sentinel, GetOptions::new(), deadline);
            tokio::time::timeout_at(deadline, read)
                .await
                .map_err(|_| Error::Datastore("etcd did not answer within 1s".into()))??;
            Ok(())
        })
    }

    /// Waits until every unit sent is answered, then drops the connection.
    pub fn close(self) {
        let _ = self
            .rt
            .block_on(self.in_flight.acquire_many(MAX_UNITS_IN_FLIGHT as u32));
        self.rt.shutdown_background();
    }
}

/// Commits one change as one transaction guarded by its key's revision, and by the leader
/// Lease's revision when `fence` says so, and says where it landed (or that a guard failed:
/// another writer changed the key, or the lease, first).
async fn commit_event(
    kv: &mut KvClient,
    keys: &Keys,
    codec: &Codec,
    event: &Event,
    fence: Option<&Guard>,
) -> Result<Landed> {
    let (group, resource) = (&event.gr.group, &event.gr.resource);
    let object = &event.object;
    let key = keys.object(group, resource, &object.namespace, &object.name);
    let guard = match &event.prev {
        Some(prev) => {
            Compare::mod_revision(key.clone(), CompareOp::Equal, prev.resource_version as i64)
        }
        None => Compare::create_revision(key.clone(), CompareOp::Equal, 0),
    };
    let op = match event.kind {
        EventType::Deleted => TxnOp::delete(key.clone(), None),
        _ => {
            let value = match codec.encode(group, resource, object)? {
                Some(sealed) => sealed,
                None => object.raw.as_bytes().to_vec(),
            };
            TxnOp::put(key.clone(), value, None)
        }
    };
    let mut guards = vec![guard];
    if let Some(fence) = fence {
        let leases = fencing::leases();
        let lease = keys.object(
            &leases.group,
            &leases.resource,
            &fence.namespace,
            &fence.name,
        );
        guards.push(Compare::mod_revision(
            lease,
            CompareOp::Equal,
            fence.rv as i64,
        ));
    }
    let txn = Txn::new().when(guards).and_then(vec![op]);
    let response = send(kv, txn).await?;
    let revision = response.header().map_or(0, |h| h.revision()) as u64;
    Ok(match response.succeeded() {
        true => Landed::At(revision),
        false => Landed::Conflict(revision),
    })
}

/// The store's handle on etcd outside the commit thread: etcd's current revision, for reads
/// that must see the latest state, and a nudge to the watch to report its progress.
pub(crate) struct Replica {
    kv: KvClient,
    /// A key read for its response header (kgc's old revision sentinel; never written now).
    probe: String,
    progress: Arc<Notify>,
}

impl Replica {
    /// Asks the watch to report its progress (kube-apiserver's `progressRequester`): a prefix
    /// that no write touched since etcd's revision moved (writes elsewhere in the cluster)
    /// catches up without waiting for a change.
    pub fn request_progress(&self) {
        self.progress.notify_one();
    }

    /// etcd's current revision, from a range request that counts at most the (absent) probe key
    /// (kube-apiserver `storage.GetCurrentResourceVersionFromStorage`).
    /// `failing`: etcd failed the last request, so its answer is awaited only as long as a
    /// probe's.
    pub async fn current_revision(&self, failing: bool) -> Result<u64> {
        let (timeout, why) = match failing {
            true => (PROBE_TIMEOUT, "etcd did not answer within 1s"),
            false => (REQUEST_TIMEOUT, "etcd did not answer within 10s"),
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let read = revision_of(&self.kv, &self.probe, GetOptions::new(), deadline);
        tokio::time::timeout_at(deadline, read)
            .await
            .map_err(|_| Error::Datastore(why.into()))?
    }
}

/// etcd's revision, from a range request (with `options`) that counts at most the (absent)
/// `probe` key: no value is read.
async fn revision_of(
    kv: &KvClient,
    probe: &str,
    options: GetOptions,
    deadline: tokio::time::Instant,
) -> Result<u64> {
    let options = options.with_count_only();
    let got = until_sent(deadline, || {
        let (mut kv, options) = (kv.clone(), options.clone());
        async move { kv.get(probe, Some(options)).await }
    })
    .await?;
    Ok(got.header().map_or(0, |h| h.revision()) as u64)
}

/// A change the watch saw.
pub(crate) struct Seen {
    pub gr: GroupResource,
    pub namespace: String,
    pub name: String,
    /// The new state, stamped with the change's revision; `None` for a deletion.
    pub object: Option<Arc<StoredObject>>,
    /// The state before a deletion, from `prev_kv`, for when memory lacks it.
    pub prev: Option<Arc<StoredObject>>,
    pub rv: u64,
}

/// What the watch feeds.
pub(crate) trait Feed: Send + Sync + 'static {
    /// Changes in revision order; afterwards the store is at `revision` (a progress report
    /// without changes moves it too).
    fn apply(&self, seen: Vec<Seen>, revision: u64);
    /// The watch fell behind etcd's compaction: everything under the prefix as of `loaded`.
    fn reload(&self, loaded: Loaded);
    /// Whether the store is still open.
    fn alive(&self) -> bool;
}

struct Watch {
    client: Client,
    opts: EtcdOptions,
    keys: Arc<Keys>,
    codec: Codec,
    progress: Arc<Notify>,
}

impl Watch {
    /// Watches from `revision + 1` until the store closes: a broken stream is opened again
    /// from the last revision applied; a compacted one reloads the prefix.
    ///
    /// The client spreads requests over the members and does not move a stream off one that
    /// is down (opening it again may wait on the dead member for ever): the watch runs on a
    /// connection of its own to one member, a member picked at random first (so that the
    /// replicas' watches spread), the next one after each break, each attempt bounded by
    /// [`WATCH_OPEN_TIMEOUT`]. A stream that is open but stuck (its member frozen, or its
    /// watcher never catching up) counts as a break: see [`Watch::behind`].
    async fn run(mut self, mut revision: i64, feed: impl Feed) {
        let mut member = usize::from(uuid::Uuid::new_v4().as_bytes()[0]);
        self.move_to(member).await;
        while feed.alive() {
            match self.stream(&mut revision, &feed).await {
                Ok(()) => {}
                Err(Error::Compacted(at)) => {
                    tracing::warn!(
                        revision,
                        compacted = at,
                        "the watch on etcd fell behind its compaction; reloading"
                    );
                    let mut kv = self.client.kv_client();
                    match self.keys.load(&mut kv, &self.codec).await {
                        Ok(loaded) => {
                            revision = loaded.revision as i64;
                            feed.reload(loaded);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "reloading from etcd");
                            tokio::time::sleep(WATCH_RETRY).await;
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, revision, "the watch on etcd broke; watching again");
                    tokio::time::sleep(WATCH_RETRY).await;
                    member += 1;
                    self.move_to(member).await;
                }
            }
        }
    }

    /// Connects the watch to member `member` (modulo their number) alone; on a failure it
    /// keeps the connection it has, and the next attempt moves on.
    async fn move_to(&mut self, member: usize) {
        let endpoint = &self.opts.endpoints[member % self.opts.endpoints.len()];
        let one = EtcdOptions {
            endpoints: vec![endpoint.clone()],
            ..self.opts.clone()
        };
        match tokio::time::timeout(WATCH_OPEN_TIMEOUT, connect(&one)).await {
            Ok(Ok(client)) => self.client = client,
            Ok(Err(e)) => tracing::debug!(error = %e, endpoint, "connecting to etcd"),
            Err(_) => tracing::debug!(endpoint, "connecting to etcd timed out"),
        }
    }

    async fn stream(&self, revision: &mut i64, feed: &impl Feed) -> Result<()> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_progress_notify()
            .with_start_revision(*revision + 1);
        let mut watch = self.client.watch_client();
        let mut stream = tokio::time::timeout(
            WATCH_OPEN_TIMEOUT,
            watch.watch(format!("{}/", self.keys.prefix), Some(options)),
        )
        .await
        .map_err(|_| Error::Datastore("etcd did not open the watch within 3s".into()))??;
        tracing::debug!(revision = *revision, "the watch on etcd is open");
        let kv = self.client.kv_client();
        let mut heard = tokio::time::Instant::now();
        // The member's revision when the quiet watch was found behind it, and when.
        let mut behind: Option<(i64, tokio::time::Instant)> = None;
        loop {
            let message = tokio::select! {
                m = stream.message() => m?,
                () = self.progress.notified() => {
                    stream.request_progress().await?;
                    continue;
                }
                // A store that closed ends the watch; a quiet one checks it is not stuck.
                () = tokio::time::sleep(WATCH_RETRY) => {
                    if !feed.alive() {
                        return Ok(());
                    }
                    if let Some((at, since)) = behind.filter(|&(at, _)| *revision < at) {
                        if since.elapsed() > WATCH_OPEN_TIMEOUT {
                            return Err(Error::Datastore(format!(
                                "the watch stayed at revision {revision} while its member is \
                                 at {at}, and did not answer a progress request"
                            )));
                        }
                    } else if heard.elapsed() >= WATCH_QUIET {
                        heard = tokio::time::Instant::now();
                        behind = self
                            .behind(&kv, *revision)
                            .await?
                            .map(|at| (at, tokio::time::Instant::now()));
                        if behind.is_some() {
                            stream.request_progress().await?;
                        }
                    }
                    continue;
                }
            };
            heard = tokio::time::Instant::now();
            let Some(response) = message else {
                return Err(Error::Datastore("etcd ended the watch".into()));
            };
            if response.compact_revision() > 0 {
                return Err(Error::Compacted(response.compact_revision() as u64));
            }
            // The answer that the watch was created carries etcd's current revision, not a
            // promise that every change up to it was delivered: the changes since the start
            // revision come after it (taking it as progress would skip them).
            if response.created() && response.events().is_empty() {
                continue;
            }
            if response.canceled() {
                return Err(Error::Datastore(format!(
                    "etcd canceled the watch: {}",
                    response.cancel_reason()
                )));
            }
            let mut seen = Vec::with_capacity(response.events().len());
            for event in response.events() {
                match self.seen(event) {
                    Ok(Some(s)) => seen.push(s),
                    Ok(None) => {}
                    // Watching again would meet it again: one value this replica cannot read
                    // (another replica's encryption key, see `DATA_DIR/pki`) must not stop the
                    // rest.
                    Err(e) => {
                        tracing::error!(error = %e, "a change in etcd this replica cannot read; skipped")
                    }
                }
            }
            // No events: a progress report, every change up to its revision delivered.
            let at = match response.events().last().and_then(|e| e.kv()) {
                Some(kv) => kv.mod_revision(),
                None => response.header().map_or(0, |h| h.revision()),
            };
            if at > *revision {
                *revision = at;
                feed.apply(seen, at as u64);
            }
        }
    }

    /// The watch's member's revision when it is after `revision`, the last the watch
    /// delivered, read from the member itself (a serializable read needs no quorum): a watch
    /// that heard nothing for [`WATCH_QUIET`] while its member moved on may be stuck (etcd
    /// answers a progress request only from a watcher that has caught up,
    /// `server/storage/mvcc/watchable_store.go` `progress`), so it is asked for progress and
    /// opened again if it stays behind. A member that does not answer within
    /// [`WATCH_CHECK_TIMEOUT`] (frozen, its connections open and silent) is an error: the
    /// watch opens on another member rather than wait for TCP keep-alive.
    async fn behind(&self, kv: &KvClient, revision: i64) -> Result<Option<i64>> {
        let deadline = tokio::time::Instant::now() + WATCH_CHECK_TIMEOUT;
        let own = GetOptions::new().with_serializable();
        let read = revision_of(kv, &self.keys.sentinel, own, deadline);
        let at = match tokio::time::timeout_at(deadline, read).await {
            Ok(at) => at? as i64,
            Err(_) => {
                return Err(Error::Datastore(format!(
                    "the watch's etcd member did not tell its revision within \
                     {WATCH_CHECK_TIMEOUT:?}"
                )));
            }
        };
        Ok((at > revision).then_some(at))
    }

    /// The change one watch event carries; `None` for keys kgc does not store objects under.
    fn seen(&self, event: &etcd_client::Event) -> Result<Option<Seen>> {
        let Some(kv) = event.kv() else {
            return Ok(None);
        };
        let key = String::from_utf8_lossy(kv.key());
        let Some((gr, ns, name)) = self.keys.parse(&key) else {
            return Ok(None);
        };
        let rv = kv.mod_revision() as u64;
        let decode = |data: &[u8], rv: u64| {
            self.codec
                .decode_at(&gr.group, &gr.resource, ns, name, data, rv)
        };
        let (object, prev) = match event.event_type() {
            WatchEventType::Put => (Some(decode(kv.value(), rv)?), None),
            WatchEventType::Delete => {
                let prev = match event.prev_kv() {
                    Some(p) => Some(decode(p.value(), p.mod_revision() as u64)?),
                    None => None,
                };
                (None, prev)
            }
        };
        Ok(Some(Seen {
            namespace: ns.to_owned(),
            name: name.to_owned(),
            gr,
            object,
            prev,
            rv,
        }))
    }
}

/// Connects and runs `attempt` until a member answers it. The client spreads requests over the
/// endpoints and does not retry one sent to a member that is down (a cluster that lost a member
/// of three still serves): an attempt that etcd failed is made again until one answers, up to
/// [`CONNECT_TIMEOUT`]; then the start fails with one line naming the endpoints.
async fn answering<T, F, Fut>(opts: &EtcdOptions, mut attempt: F) -> Result<(Client, T)>
where
    F: FnMut(KvClient) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let endpoints = opts.endpoints.join(",");
    let unreachable = |reason: String| Error::Datastore(format!("etcd at {endpoints}: {reason}"));
    let client = tokio::time::timeout(CONNECT_TIMEOUT, connect(opts))
        .await
        .map_err(|_| unreachable("no answer within 10s".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
    let deadline = tokio::time::Instant::now() + CONNECT_TIMEOUT;
    let mut last = None;
    loop {
        match tokio::time::timeout_at(deadline, attempt(client.kv_client())).await {
            Err(_) => {
                let why = last.map_or("no answer within 10s".into(), |e: Error| e.to_string());
                return Err(unreachable(why));
            }
            Ok(Ok(answer)) => return Ok((client, answer)),
            Ok(Err(e @ Error::Etcd(_))) => {
                tracing::debug!(error = %e, "etcd did not answer; trying again");
                last = Some(e);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(Err(e)) => return Err(e),
        }
    }
}

/// The etcd side of `kgc serve migrate`: a connection to a cluster whose prefix holds nothing.
pub(crate) struct Target {
    client: Client,
    keys: Keys,
}

impl Target {
    /// Connects (as a start does) and refuses a prefix that holds any key: the copy never
    /// mixes with another cluster's objects, nor with an earlier copy's.
    pub async fn connect(opts: &EtcdOptions) -> Result<Self> {
        let keys = Keys::new(&opts.prefix());
        let (start, end) = keys.range();
        let (client, held) = answering(opts, |mut kv| {
            let (start, end) = (start.clone(), end.clone());
            async move {
                let count = GetOptions::new().with_range(end).with_count_only();
                Ok(kv.get(start, Some(count)).await?.count())
            }
        })
        .await?;
        if held > 0 {
            return Err(Error::Datastore(format!(
                "etcd at {} already holds {held} keys under {}/: kgc serve migrate copies into an \
                 empty prefix only (choose another --etcd-prefix, or remove them with `etcdctl \
                 del --prefix {}/`)",
                opts.endpoints.join(","),
                keys.prefix,
                keys.prefix
            )));
        }
        Ok(Self { client, keys })
    }

    /// Puts each object under its key, one transaction each in the order given (so that their
    /// `mod_revision`s, their new `resourceVersion`s, keep that order), encoded as the backend
    /// stores it and guarded by `create_revision == 0` as a create is. Returns the revisions of
    /// the first and last put. On a failure, the keys already put are deleted again (each
    /// guarded by the revision it was put at) before the error is returned.
    pub async fn copy(&self, codec: &Codec, objects: &[LoadedObject]) -> Result<(u64, u64)> {
        let mut written = Vec::with_capacity(objects.len());
        let copied = self.put_all(codec, objects, &mut written).await;
        let Err(e) = copied else {
            let at = |put: Option<&(String, i64)>| put.map_or(0, |(_, rv)| *rv as u64);
            return Ok((at(written.first()), at(written.last())));
        };
        let mut kv = self.client.kv_client();
        let mut left = 0;
        for (key, rv) in written.iter().rev() {
            let guard = Compare::mod_revision(key.clone(), CompareOp::Equal, *rv);
            let undo = Txn::new()
                .when(vec![guard])
                .and_then(vec![TxnOp::delete(key.clone(), None)]);
            if !matches!(send(&mut kv, undo).await, Ok(r) if r.succeeded()) {
                left += 1;
            }
        }
        Err(Error::Datastore(match left {
            0 => format!("{e} (nothing was kept in etcd)"),
            n => format!(
                "{e}; {n} keys it wrote could not be removed: remove them with `etcdctl del \
                 --prefix {}/`",
                self.keys.prefix
            ),
        }))
    }

    async fn put_all(
        &self,
        codec: &Codec,
        objects: &[LoadedObject],
        written: &mut Vec<(String, i64)>,
    ) -> Result<()> {
        let mut kv = self.client.kv_client();
        for (group, resource, object, _) in objects {
            let key = self
                .keys
                .object(group, resource, &object.namespace, &object.name);
            let value = match codec.encode(group, resource, object)? {
                Some(sealed) => sealed,
                None => object.raw.as_bytes().to_vec(),
            };
            let txn = Txn::new()
                .when(vec![Compare::create_revision(
                    key.clone(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then(vec![TxnOp::put(key.clone(), value, None)]);
            let response = tokio::time::timeout(REQUEST_TIMEOUT, send(&mut kv, txn))
                .await
                .map_err(|_| {
                    Error::Datastore(format!("etcd did not answer the put of {key} within 10s"))
                })??;
            if !response.succeeded() {
                return Err(Error::Datastore(format!(
                    "{key} appeared in etcd during the copy: another writer uses the prefix"
                )));
            }
            let revision = response.header().map_or(0, |h| h.revision());
            written.push((key, revision));
            if written.len().is_multiple_of(PROGRESS) {
                tracing::info!(
                    copied = written.len(),
                    of = objects.len(),
                    "copying into etcd"
                );
            }
        }
        Ok(())
    }
}

/// Sends a transaction, again to another member while it was refused before reaching etcd,
/// for up to [`REQUEST_TIMEOUT`].
async fn send(kv: &mut KvClient, txn: Txn) -> Result<etcd_client::TxnResponse> {
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    Ok(until_sent(deadline, || {
        let (mut kv, txn) = (kv.clone(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?)
}

/// Makes a request again while it was refused before reaching etcd ([`never_sent`]), until
/// `deadline`. The client spreads requests over the members and does not retry one through
/// another member itself: with one member of three down, one request in a few would fail
/// (and a read that must see the latest state would fall back to memory, a probe would find
/// the cluster failing) though the cluster serves.
async fn until_sent<T, F, Fut>(
    deadline: tokio::time::Instant,
    mut request: F,
) -> std::result::Result<T, etcd_client::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    loop {
        match request().await {
            Err(e) if never_sent(&e) && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            r => return r,
        }
    }
}

/// Whether a request was refused before it reached etcd: no connection to the member it was
/// routed to could be made (a member that is down), so sending it again, to another member,
/// cannot apply it twice. An answer lost after sending is not this: that write may have landed.
fn never_sent(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message() == "tcp connect error")
}

/// The client, with TLS when files are given.
async fn connect(opts: &EtcdOptions) -> Result<Client> {
    let read = |path: &PathBuf| {
        std::fs::read(path)
            .map_err(|e| Error::Datastore(format!("reading {}: {e}", path.display())))
    };
    let tls = opts.ca_file.is_some() || opts.cert_file.is_some();
    let mut options = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_timeout(REQUEST_TIMEOUT)
        .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
    if tls {
        let mut config = TlsOptions::new();
        if let Some(ca) = &opts.ca_file {
            config = config.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        match (&opts.cert_file, &opts.key_file) {
            (Some(cert), Some(key)) => {
                config = config.identity(Identity::from_pem(read(cert)?, read(key)?))
            }
            (None, None) => {}
            _ => {
                return Err(Error::Datastore(
                    "--datastore-certfile and --datastore-keyfile go together".into(),
                ));
            }
        }
        options = options.with_tls(config);
    }
    let endpoints: Vec<String> = opts
        .endpoints
        .iter()
        .map(|e| match e.strip_prefix("etcd://") {
            Some(rest) if tls => format!("https://{rest}"),
            Some(rest) => format!("http://{rest}"),
            None => e.clone(),
        })
        .collect();
    Ok(Client::connect(endpoints, Some(options)).await?)
}

/// Compacts, each `interval`, to the revision seen one interval earlier.
async fn compact_every(mut kv: KvClient, sentinel: String, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut seen = None;
    let mut compacted = 0;
    loop {
        tick.tick().await;
        let current = match kv.get(sentinel.clone(), None).await {
            Ok(r) => r.header().map_or(0, |h| h.revision()),
            Err(e) => {
                tracing::debug!(error = %e, "reading etcd's revision for compaction");
                continue;
            }
        };
        if let Some(target) = seen.filter(|&t| t > compacted) {
            match kv.compact(target, None).await {
                Ok(_) => {
                    compacted = target;
                    tracing::debug!(revision = target, "compacted etcd");
                }
                Err(e) => tracing::warn!(error = %e, revision = target, "compacting etcd"),
            }
        }
        seen = Some(current);
    }
}

/// kube-apiserver's key layout under one prefix.
#[derive(Clone)]
struct Keys {
    prefix: String,
    sentinel: String,
    /// The built-in resources stored under a name of their own (rather than `<group>/<resource>`).
    builtin: HashMap<GroupResource, String>,
    /// The way back, from a resource's path to the resource.
    by_path: HashMap<String, GroupResource>,
}

impl Keys {
    fn new(prefix: &str) -> Self {
        // kubernetes/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go.
        const RENAMED: [(&str, &str, &str); 6] = [
            ("", "replicationcontrollers", "controllers"),
            ("", "endpoints", "services/endpoints"),
            ("", "nodes", "minions"),
            ("", "services", "services/specs"),
            ("extensions", "ingresses", "ingress"),
            ("networking.k8s.io", "ingresses", "ingress"),
        ];
        // Served by apiextensions-apiserver and kube-aggregator, which key by group.
        const BY_GROUP: [&str; 2] = ["apiextensions.k8s.io", "apiregistration.k8s.io"];
        let mut builtin = HashMap::new();
        for info in Catalog::builtin().resources() {
            let gr = info.storage_resource();
            if info.custom || BY_GROUP.contains(&gr.group.as_str()) {
                continue;
            }
            let path = RENAMED
                .iter()
                .find(|(g, r, _)| *g == gr.group && *r == gr.resource)
                .map_or_else(|| gr.resource.clone(), |(_, _, p)| (*p).to_owned());
            builtin.insert(gr, path);
        }
        let by_path = builtin
            .iter()
            .map(|(gr, path)| (path.clone(), gr.clone()))
            .collect();
        Self {
            sentinel: format!("{prefix}/kgc/revision"),
            prefix: prefix.to_owned(),
            builtin,
            by_path,
        }
    }

    fn object(&self, group: &str, resource: &str, namespace: &str, name: &str) -> String {
        let gr = GroupResource::new(group, resource);
        let path = match self.builtin.get(&gr) {
            Some(path) => path.clone(),
            None if group.is_empty() => resource.to_owned(),
            None => format!("{group}/{resource}"),
        };
        match namespace {
            "" => format!("{}/{path}/{name}", self.prefix),
            ns => format!("{}/{path}/{ns}/{name}", self.prefix),
        }
    }

    /// The resource, namespace and name a key holds.
    fn parse<'k>(&self, key: &'k str) -> Option<(GroupResource, &'k str, &'k str)> {
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix('/')?;
        let segments: Vec<&str> = rest.split('/').collect();
        // The longest known resource path first (`services/specs` before `services`).
        let (gr, taken) = [2, 1].into_iter().find_map(|n| {
            let path = segments.get(..n)?.join("/");
            match self.by_path.get(&path) {
                Some(gr) => Some((gr.clone(), n)),
                // A group has a dot (CRD validation requires one): `<group>/<resource>`.
                None if n == 2 && segments[0].contains('.') => {
                    Some((GroupResource::new(segments[0], segments[1]), 2))
                }
                None => None,
            }
        })?;
        match segments[taken..] {
            [name] => Some((gr, "", name)),
            [ns, name] => Some((gr, ns, name)),
            _ => None,
        }
    }

    /// The range of every key under the prefix: those that start with `<prefix>/`.
    fn range(&self) -> (String, String) {
        (format!("{}/", self.prefix), format!("{}0", self.prefix))
    }

    /// Reads every object under the prefix at one revision.
    async fn load(&self, kv: &mut KvClient, codec: &Codec) -> Result<Loaded> {
        let (start, end) = self.range();
        let mut from = start.into_bytes();
        let mut revision = 0;
        let mut objects = Vec::new();
        let skip: HashSet<&str> = HashSet::from([self.sentinel.as_str()]);
        loop {
            let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
            if revision > 0 {
                options = options.with_revision(revision);
            }
            let page = kv.get(from.clone(), Some(options)).await?;
            if revision == 0 {
                revision = page.header().map_or(0, |h| h.revision());
            }
            for item in page.kvs() {
                let key = String::from_utf8_lossy(item.key());
                if skip.contains(key.as_ref()) {
                    continue;
                }
                let (gr, ns, name) = self.parse(&key).ok_or_else(|| {
                    Error::Corrupt(format!("{key} is not the key of an object kgc stores"))
                })?;
                let rv = item.mod_revision() as u64;
                let object =
                    codec.decode_at(&gr.group, &gr.resource, ns, name, item.value(), rv)?;
                objects.push((gr.group, gr.resource, object, None));
            }
            match page.kvs().last() {
                Some(last) if page.more() => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => break,
            }
        }
        Ok(Loaded {
            revision: revision as u64,
            objects,
            expired_rows: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use etcd_client::{Client, GetOptions};
    use kgc_testsupport::EtcdCluster;
    use serde_json::json;

    use super::{EtcdOptions, Keys};
    use crate::watch::{WatchEvent, WatchFilter};
    use crate::{Error, GroupResource, Options, Store};

    fn options(cluster: &EtcdCluster) -> Options {
        Options {
            etcd: Some(EtcdOptions::new(cluster.endpoint_list())),
            ..Options::default()
        }
    }

    async fn client(cluster: &EtcdCluster) -> Client {
        Client::connect(cluster.endpoint_list(), None)
            .await
            .unwrap()
    }

    /// The key's value and mod_revision, and etcd's revision.
    async fn read(client: &mut Client, key: &str) -> (Option<(serde_json::Value, u64)>, u64) {
        let got = client.get(key, None).await.unwrap();
        let revision = got.header().unwrap().revision() as u64;
        let item = got.kvs().first().map(|kv| {
            let value = serde_json::from_slice(kv.value()).unwrap();
            (value, kv.mod_revision() as u64)
        });
        (item, revision)
    }

    async fn create_cm(store: &Store, name: &str, v: &str) -> Result<u64, Error> {
        let cm = store.catalog().get("", "v1", "configmaps").unwrap().clone();
        let body = json!({"metadata": {"name": name}, "data": {"v": v}});
        Ok(store
            .create(&cm, "default", body, false)
            .await?
            .resource_version)
    }

    fn cms() -> GroupResource {
        GroupResource::new("", "configmaps")
    }

    /// Each member in turn freezes (SIGSTOP: its connections stay open and silent) while
    /// another writer writes through the others: whichever member the store's watch was on,
    /// the change reaches memory within 9 s (a quiet watch checks its member after 3 s and
    /// opens again on another that answers), where TCP keep-alive alone takes up to 15 s.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_watch_on_a_member_that_froze_moves_to_another() {
        let Some(cluster) = EtcdCluster::start(3).await else {
            return;
        };
        let store = Store::open_with(options(&cluster)).await.unwrap();
        for member in 0..3 {
            cluster.pause(member).await;
            let mut others = cluster.endpoint_list();
            others.remove(member);
            let mut etcd = Client::connect(others, None).await.unwrap();
            let key = format!("/registry/configmaps/default/frozen-{member}");
            let value = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("frozen-{member}"), "namespace": "default"},
            });
            // The two that answer may first have to elect a leader.
            let deadline = Instant::now() + Duration::from_secs(30);
            let put = loop {
                match etcd.put(key.as_str(), value.to_string(), None).await {
                    Ok(put) => break put,
                    Err(e) => assert!(
                        Instant::now() < deadline,
                        "writing with {member} frozen: {e}"
                    ),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            let written = put.header().unwrap().revision() as u64;
            let since = Instant::now();
            while store.revision() < written && since.elapsed() < Duration::from_secs(9) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(
                store
                    .get(&cms(), "default", &format!("frozen-{member}"))
                    .is_some(),
                "member {member} frozen: the store is at {} after {:?}, etcd at {written}",
                store.revision(),
                since.elapsed()
            );
            cluster.resume(member);
            cluster.wait_member_healthy(member).await;
        }
        store.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn resource_versions_are_etcds_mod_revisions_across_a_restart() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let mut etcd = client(&cluster).await;
        let store = Store::open_with(options(&cluster)).await.unwrap();
        let rv = create_cm(&store, "a", "1").await.unwrap();
        let (item, revision) = read(&mut etcd, "/registry/configmaps/default/a").await;
        let (value, mod_revision) = item.unwrap();
        assert_eq!((mod_revision, revision, store.revision()), (rv, rv, rv));
        assert_eq!(value["data"]["v"], "1");
        assert_eq!(value["metadata"]["resourceVersion"], rv.to_string());
        // The namespaces the store made at its start are there too.
        let (ns, _) = read(&mut etcd, "/registry/namespaces/kube-system").await;
        assert!(ns.is_some());

        let cm = store.catalog().get("", "v1", "configmaps").unwrap().clone();
        let updated = store
            .update(&cm, "default", "a", None, false, |mut o| {
                o["data"]["v"] = json!("2");
                Ok(o)
            })
            .await
            .unwrap();
        let (item, _) = read(&mut etcd, "/registry/configmaps/default/a").await;
        assert_eq!(item.unwrap().1, updated.object().resource_version);
        create_cm(&store, "b", "1").await.unwrap();
        let deleted = store
            .delete(&cm, "default", "b", &Default::default())
            .await
            .unwrap();
        let (item, revision) = read(&mut etcd, "/registry/configmaps/default/b").await;
        assert!(item.is_none());
        assert_eq!(revision, deleted.object.resource_version);
        store.close();

        let reopened = Store::open_with(options(&cluster)).await.unwrap();
        assert_eq!(reopened.revision(), revision);
        let a = reopened.get(&cms(), "default", "a").unwrap();
        assert_eq!(a.resource_version, updated.object().resource_version);
        assert!(reopened.get(&cms(), "default", "b").is_none());
        let rv = create_cm(&reopened, "c", "1").await.unwrap();
        assert_eq!(rv, revision + 1);
        reopened.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_writers_change_reaches_memory_and_a_stale_write_is_planned_again() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let mut etcd = client(&cluster).await;
        let store = Store::open_with(options(&cluster)).await.unwrap();
        let mut watcher = store.watch(WatchFilter::new(cms()), Some(store.revision()));
        create_cm(&store, "a", "1").await.unwrap();
        // Another writer (another replica) changes the object under the store.
        let (item, _) = read(&mut etcd, "/registry/configmaps/default/a").await;
        let mut value = item.unwrap().0;
        value["data"]["v"] = json!("foreign");
        let put = etcd
            .put("/registry/configmaps/default/a", value.to_string(), None)
            .await
            .unwrap();
        let foreign = put.header().unwrap().revision() as u64;
        // The latest state waits for the watch to bring it.
        store.wait_for_latest().await.unwrap();
        let a = store.get(&cms(), "default", "a").unwrap();
        assert_eq!(
            (a.resource_version, &*a.value()["data"]["v"].to_string()),
            (foreign, "\"foreign\"")
        );
        let mut kinds = Vec::new();
        while kinds.len() < 2 {
            match watcher.next().await {
                WatchEvent::Event(kind, o) => kinds.push((kind, o.resource_version)),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(kinds[1], (crate::EventType::Modified, foreign));

        // An update planned on the old version loses its guard, and is planned again: a
        // change that can run again runs on the fresh object.
        let cm = store.catalog().get("", "v1", "configmaps").unwrap().clone();
        let mut calls = 0;
        let mut raced = Some(etcd.clone());
        let updated = store
            .update_retrying(&cm, "default", "a", None, false, |mut o| {
                calls += 1;
                if let Some(mut etcd) = raced.take() {
                    let mut value = o.clone();
                    value["data"]["v"] = json!("raced");
                    std::thread::scope(|s| {
                        s.spawn(|| {
                            let rt = tokio::runtime::Runtime::new().unwrap();
                            rt.block_on(etcd.put(
                                "/registry/configmaps/default/a",
                                value.to_string(),
                                None,
                            ))
                            .unwrap();
                        });
                    });
                }
                o["data"]["w"] = json!("mine");
                Ok(o)
            })
            .await
            .unwrap();
        assert_eq!(calls, 2);
        let value = updated.object().value();
        assert_eq!(
            (value["data"]["v"].as_str(), value["data"]["w"].as_str()),
            (Some("raced"), Some("mine"))
        );
        let (item, _) = read(&mut etcd, "/registry/configmaps/default/a").await;
        assert_eq!(item.unwrap().1, updated.object().resource_version);
        assert_eq!(
            store.get(&cms(), "default", "a").unwrap().resource_version,
            updated.object().resource_version
        );
        store.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn old_revisions_are_compacted_and_a_watch_before_the_log_is_expired() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let mut etcd = client(&cluster).await;
        let mut opts = options(&cluster);
        opts.watch_log = 3;
        if let Some(e) = opts.etcd.as_mut() {
            e.compaction_interval = Duration::from_millis(200);
        }
        let store = Store::open_with(opts).await.unwrap();
        let first = create_cm(&store, "c0", "0").await.unwrap();
        for i in 1..6 {
            create_cm(&store, &format!("c{i}"), "x").await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let old = GetOptions::new().with_revision(first as i64);
            match etcd.get("/registry/configmaps/default/c0", Some(old)).await {
                Err(e) if e.to_string().contains("compacted") => break,
                _ => {}
            }
            assert!(Instant::now() < deadline, "etcd was not compacted");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut watcher = store.watch(WatchFilter::new(cms()), Some(first));
        match watcher.next().await {
            WatchEvent::Expired { requested, .. } => assert_eq!(requested, first),
            other => panic!("expected Expired, got {other:?}"),
        }
        store.close();
    }

    /// A reload (the watch fell behind etcd's compaction) answers 410 to every open watch at
    /// once, a quiet resource's too: its watcher cannot tell what it missed while the watch
    /// was behind, and must not wait for its resource's next change to learn it has to re-list.
    #[tokio::test]
    async fn a_reload_answers_every_open_watch_410_without_waiting_for_a_change() {
        let store = Store::open_with(Options::default()).await.unwrap();
        let rv = create_cm(&store, "a", "1").await.unwrap();
        let mut watcher = store.watch(WatchFilter::new(cms()), Some(rv));
        // Parked, waiting for a change to ConfigMaps (one runtime thread: the task runs until
        // it waits when this one yields).
        let parked = tokio::spawn(async move { watcher.next().await });
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let feed = crate::Durable(std::sync::Arc::downgrade(&store.inner));
        crate::backend::etcd::Feed::reload(
            &feed,
            crate::backend::Loaded {
                revision: rv + 5,
                objects: Vec::new(),
                expired_rows: false,
            },
        );
        match tokio::time::timeout(Duration::from_secs(5), parked).await {
            Ok(Ok(WatchEvent::Expired { requested, oldest })) => {
                assert_eq!((requested, oldest), (rv, rv + 6))
            }
            other => panic!("expected Expired at once, got {other:?}"),
        }
        store.close();
    }

    /// A write right after another replica's write it depends on (a create in a namespace
    /// just created, an update or delete of an object just created) is not refused because
    /// this replica's memory has not caught up yet: it waits for the latest state first. The
    /// other replica is the test writing to etcd directly, which returns before the store's
    /// watch brings the change.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_right_after_another_replicas_write_waits_for_it() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let mut etcd = client(&cluster).await;
        let store = Store::open_with(options(&cluster)).await.unwrap();
        let cm = store.catalog().get("", "v1", "configmaps").unwrap().clone();
        create_cm(&store, "template", "1").await.unwrap();
        let (ns_template, _) = read(&mut etcd, "/registry/namespaces/default").await;
        let (cm_template, _) = read(&mut etcd, "/registry/configmaps/default/template").await;
        let put = |mut value: serde_json::Value, ns: &str, name: &str| {
            value["metadata"]["name"] = json!(name);
            value["metadata"]["uid"] = json!(format!("uid-{ns}-{name}"));
            let key = match value["kind"].as_str() {
                Some("Namespace") => format!("/registry/namespaces/{name}"),
                _ => {
                    value["metadata"]["namespace"] = json!(ns);
                    format!("/registry/configmaps/{ns}/{name}")
                }
            };
            (key, value.to_string())
        };
        for i in 0..5 {
            let ns = format!("ns-{i}");
            let (key, value) = put(ns_template.clone().unwrap().0, "", &ns);
            etcd.put(key, value, None).await.unwrap();
            let body = json!({"metadata": {"name": "b"}, "data": {"v": "1"}});
            store
                .create(&cm, &ns, body, false)
                .await
                .unwrap_or_else(|e| panic!("creating in {ns} just created: {e}"));
            let (key, value) = put(cm_template.clone().unwrap().0, &ns, "a");
            etcd.put(key, value, None).await.unwrap();
            store
                .update(&cm, &ns, "a", None, false, |mut o| {
                    o["data"]["v"] = json!("2");
                    Ok(o)
                })
                .await
                .unwrap_or_else(|e| panic!("updating {ns}/a just created: {e}"));
            let (key, value) = put(cm_template.clone().unwrap().0, &ns, "c");
            etcd.put(key, value, None).await.unwrap();
            store
                .delete(&cm, &ns, "c", &Default::default())
                .await
                .unwrap_or_else(|e| panic!("deleting {ns}/c just created: {e}"));
        }
        store.close();
    }

    /// A write under a leader Lease carries the lease's revision as a guard in its own etcd
    /// transaction: the holder's own renewal only makes it plan again, but once another
    /// identity holds the lease the write is refused, and nothing of it lands, even sent right
    /// after the takeover was written to etcd behind the store's back (before its watch may
    /// have brought it). Writes outside `fenced` are not guarded.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_under_a_lease_another_identity_took_is_refused_by_etcd() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let mut etcd = client(&cluster).await;
        let store = Store::open_with(options(&cluster)).await.unwrap();
        let leases = store
            .catalog()
            .get("coordination.k8s.io", "v1", "leases")
            .unwrap()
            .clone();
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "ctl"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
        });
        store
            .create(&leases, "kube-system", lease, false)
            .await
            .unwrap();
        let fence = crate::LeaseFence {
            namespace: "kube-system".into(),
            name: "ctl".into(),
            holder: "a".into(),
        };
        let key = "/registry/leases/kube-system/ctl";
        let write_lease = async |etcd: &mut Client, holder: &str, renewed: &str| {
            let (item, _) = read(etcd, key).await;
            let mut value = item.unwrap().0;
            value["spec"]["holderIdentity"] = json!(holder);
            value["spec"]["renewTime"] = json!(renewed);
            etcd.put(key, value.to_string(), None).await.unwrap();
        };
        let landed = async |etcd: &mut Client, name: &str| {
            read(etcd, &format!("/registry/configmaps/default/{name}"))
                .await
                .0
                .is_some()
        };

        crate::fenced(fence.clone(), create_cm(&store, "x1", "1"))
            .await
            .unwrap();
        assert!(landed(&mut etcd, "x1").await);
        write_lease(&mut etcd, "a", "2026-01-01T00:00:01.000000Z").await;
        crate::fenced(fence.clone(), create_cm(&store, "x2", "1"))
            .await
            .unwrap_or_else(|e| panic!("a write right after the holder's own renewal: {e}"));
        assert!(landed(&mut etcd, "x2").await);
        write_lease(&mut etcd, "b", "2026-01-01T00:00:02.000000Z").await;
        let refused = crate::fenced(fence, create_cm(&store, "x3", "1")).await;
        assert!(
            matches!(refused, Err(Error::Fenced(_))),
            "a write under a lease b took: {refused:?}"
        );
        assert!(!landed(&mut etcd, "x3").await);
        create_cm(&store, "x4", "1").await.unwrap();
        store.close();
    }

    /// etcd marked failing by a read (a consistent read that could not learn etcd's revision)
    /// is probed and cleared without any write: an idle replica becomes ready again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_idle_store_marked_failing_by_a_read_is_probed_back_to_ready() {
        let Some(cluster) = EtcdCluster::start(1).await else {
            return;
        };
        let store = Store::open_with(options(&cluster)).await.unwrap();
        store.inner.lock_state().unavailable = Some("a read failed".into());
        assert_eq!(store.failure().as_deref(), Some("a read failed"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.failure().is_some() {
            assert!(
                Instant::now() < deadline,
                "still failing: {:?}",
                store.failure()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        store.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_datastore_that_does_not_answer_fails_the_start_with_one_line() {
        let opts = Options {
            etcd: Some(EtcdOptions::new(vec!["http://127.0.0.1:1".into()])),
            ..Options::default()
        };
        let started = Instant::now();
        let Err(err) = Store::open_with(opts).await else {
            panic!("opened without etcd");
        };
        let text = err.to_string();
        assert!(text.starts_with("etcd at http://127.0.0.1:1: "), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[test]
    fn keys_follow_kube_apiservers_layout() {
        let keys = Keys::new("/registry");
        let cases = [
            (("", "pods", "ns", "p"), "/registry/pods/ns/p"),
            (("", "namespaces", "", "ns"), "/registry/namespaces/ns"),
            (("", "services", "ns", "s"), "/registry/services/specs/ns/s"),
            (
                ("", "endpoints", "ns", "s"),
                "/registry/services/endpoints/ns/s",
            ),
            (("", "nodes", "", "n"), "/registry/minions/n"),
            (
                ("", "replicationcontrollers", "ns", "r"),
                "/registry/controllers/ns/r",
            ),
            (
                ("apps", "deployments", "ns", "d"),
                "/registry/deployments/ns/d",
            ),
            (
                ("networking.k8s.io", "ingresses", "ns", "i"),
                "/registry/ingress/ns/i",
            ),
            (
                (
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    "",
                    "crontabs.example.com",
                ),
                "/registry/apiextensions.k8s.io/customresourcedefinitions/crontabs.example.com",
            ),
            (
                ("example.com", "crontabs", "ns", "c"),
                "/registry/example.com/crontabs/ns/c",
            ),
        ];
        for ((group, resource, ns, name), key) in cases {
            assert_eq!(keys.object(group, resource, ns, name), key);
            let (gr, got_ns, got_name) = keys.parse(key).unwrap();
            assert_eq!(
                (gr.group.as_str(), gr.resource.as_str()),
                (group, resource),
                "{key}"
            );
            assert_eq!((got_ns, got_name), (ns, name), "{key}");
        }
        assert!(keys.parse("/registry/masterleases/10.0.0.1").is_none());
        assert!(keys.parse("/other/pods/ns/p").is_none());
    }
}
