//! The owner-reference garbage collector, faithful to kube-controller-manager's
//! (kubernetes/kubernetes `pkg/controller/garbagecollector`).
//!
//! - [`graph`]: the uid-keyed dependency graph and the absent-owner cache;
//! - [`graph_builder`]: turns watch events into graph changes and work (`graph_builder.go`);
//! - `garbagecollector`: the `attemptToDelete` and `attemptToOrphan` workers;
//! - `monitor`: discovery, and following each deletable resource's shared watch;
//! - [`metrics`]: what it exposes on `/metrics`;
//! - [`queue`]: client-go work-queue semantics with per-resource retry budgets.
//!
//! It runs against any [`Cluster`]: in-process inside `kgc serve`, or against a real API server.
#![forbid(unsafe_code)]

mod garbagecollector;
pub mod graph;
pub mod graph_builder;
pub mod metrics;
mod monitor;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use kgc_client::Cluster;
use kgc_meta::catalog::split_api_version;
use kgc_meta::time::Clock;
use kgc_meta::{GroupResource, ResourceInfo};
use tokio::sync::{Notify, mpsc};

use garbagecollector::Outcome;
use graph::Uid;
use graph_builder::{Effects, GraphBuilder, GraphEvent};
use kgc_runtime::decisions::Decisions;
use kgc_runtime::events::{Collector, Recorder, object_reference};
use kgc_runtime::informer::Informers;
use kgc_runtime::queue::WorkQueue;
use kgc_runtime::{Next, run_workers};
pub use metrics::Metrics;
pub use monitor::is_deletable;

/// The component name events are recorded under.
pub const COMPONENT: &str = "garbage-collector-controller";

/// Tuning.
#[derive(Debug, Clone)]
pub struct Config {
    /// Workers per queue (`--concurrent-gc-syncs`, default 20).
    pub workers: usize,
    /// How often discovery runs anyway (default 30 s): the safety net behind the cluster's own
    /// word that its resources changed (`kgc_client::discovery::served`).
    pub resync: Duration,
    /// How long workers wait for every monitor's first list before starting anyway (30 s).
    pub initial_sync_timeout: Duration,
    /// Dependents patched at once when orphaning.
    pub orphan_concurrency: usize,
    /// The server clock, for the times of the events the collector records.
    pub clock: Clock,
    /// Where the collector records what it deleted or orphaned, and why (shared with the
    /// process's other collectors, served on `/debug/gc/decisions`).
    pub decisions: Decisions,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            workers: 20,
            resync: Duration::from_secs(30),
            initial_sync_timeout: Duration::from_secs(30),
            orphan_concurrency: 32,
            clock: Clock::default(),
            decisions: Decisions::default(),
        }
    }
}

/// apiVersion/kind → resource, from discovery (the collector's REST mapper). An apiVersion that
/// is not served does not resolve, so references to it are retried, never judged dangling.
#[derive(Debug, Default)]
pub(crate) struct Mapper {
    by_kind: HashMap<(String, String), Arc<ResourceInfo>>,
}

impl Mapper {
    fn replace(&mut self, resources: &[Arc<ResourceInfo>]) {
        self.by_kind = resources
            .iter()
            .map(|r| ((r.group.clone(), r.kind.clone()), Arc::clone(r)))
            .collect();
    }

    fn resolve(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let (group, version) = split_api_version(api_version).ok()?;
        self.by_kind
            .get(&(group.to_owned(), kind.to_owned()))
            .filter(|r| r.serves_version(version))
            .cloned()
    }
}

/// State shared by the builder, the monitors and the workers.
pub(crate) struct Shared<C> {
    cluster: C,
    /// The process's watches, which the monitors follow.
    informers: Informers<C>,
    config: Config,
    builder: Mutex<GraphBuilder>,
    mapper: RwLock<Mapper>,
    attempt_to_delete_queue: WorkQueue<Uid>,
    attempt_to_orphan_queue: WorkQueue<Uid>,
    changes: mpsc::UnboundedSender<GraphEvent>,
    metrics: Metrics,
    synced: Mutex<HashSet<GroupResource>>,
    monitors: AtomicUsize,
    /// Woken after each batch of graph changes, for workers waiting on bookmarks.
    progress: Notify,
}

impl<C> Shared<C> {
    fn lock_builder(&self) -> MutexGuard<'_, GraphBuilder> {
        self.builder.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<C: Send + Sync> metrics::Observed for Shared<C> {
    fn queue_depths(&self) -> [usize; 2] {
        [
            self.attempt_to_delete_queue.len(),
            self.attempt_to_orphan_queue.len(),
        ]
    }

    fn graph_len(&self) -> usize {
        self.lock_builder().graph.len()
    }
}

/// The garbage collector. Cheap to clone; every clone is a handle onto the same collector.
pub struct GarbageCollector<C: Cluster> {
    shared: Arc<Shared<C>>,
    changes_rx: Arc<Mutex<Option<mpsc::UnboundedReceiver<GraphEvent>>>>,
}

impl<C: Cluster> Clone for GarbageCollector<C> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            changes_rx: Arc::clone(&self.changes_rx),
        }
    }
}

impl<C: Cluster> GarbageCollector<C> {
    /// A collector with watches of its own, whose metrics are not exposed (tests, tools).
    pub fn new(cluster: C, config: Config) -> Self {
        Self::with_metrics(Informers::new(cluster), config, Metrics::default())
    }

    /// A collector following the process's watches (`informers`, shared with its other
    /// controllers) and counting into `metrics`, whose gauges then read this collector.
    pub fn with_metrics(informers: Informers<C>, config: Config, metrics: Metrics) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = |name: &str| match &metrics.queues {
            Some(m) => WorkQueue::with_metrics(name, m),
            None => WorkQueue::new(),
        };
        let shared = Arc::new(Shared {
            cluster: informers.cluster().clone(),
            informers,
            config,
            builder: Mutex::new(GraphBuilder::default()),
            mapper: RwLock::default(),
            // Upstream's queue names (`garbagecollector.go`, `NewGarbageCollector`).
            attempt_to_delete_queue: queue("garbage_collector_attempt_to_delete"),
            attempt_to_orphan_queue: queue("garbage_collector_attempt_to_orphan"),
            changes: tx,
            metrics,
            synced: Mutex::default(),
            monitors: AtomicUsize::new(0),
            progress: Notify::new(),
        });
        let observed: std::sync::Weak<Shared<C>> = Arc::downgrade(&shared);
        shared.metrics.observe(observed);
        Self {
            shared,
            changes_rx: Arc::new(Mutex::new(Some(rx))),
        }
    }

    /// Runs the collector until the returned future is dropped: monitors, the graph builder,
    /// and `workers` workers per queue once every monitor has listed (or the initial sync
    /// timeout passed, so that one broken resource cannot stop collection).
    pub async fn run(&self) {
        let Some(rx) = self
            .changes_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            tracing::error!("the garbage collector is already running");
            return;
        };
        let shared = Arc::clone(&self.shared);
        let tasks = vec![
            tokio::spawn(Arc::clone(&shared).run_monitors()),
            tokio::spawn(Arc::clone(&shared).run_graph_builder(rx)),
        ];
        let deadline = tokio::time::Instant::now() + shared.config.initial_sync_timeout;
        while !self.is_synced() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !self.is_synced() {
            tracing::warn!("not every resource has synced; starting the workers anyway");
        }
        // `workers` workers per queue, on the runtime's worker loop.
        let workers = shared.config.workers;
        let s = Arc::clone(&shared);
        let delete = run_workers(
            shared.attempt_to_delete_queue.clone(),
            workers,
            move |uid: Uid| {
                let s = Arc::clone(&s);
                async move {
                    let outcome = s.attempt_to_delete(&uid).await;
                    s.next(&uid, outcome)
                }
            },
        );
        let s = Arc::clone(&shared);
        let orphan = run_workers(
            shared.attempt_to_orphan_queue.clone(),
            workers,
            move |uid: Uid| {
                let s = Arc::clone(&s);
                async move {
                    let outcome = s.attempt_to_orphan(&uid).await;
                    s.next(&uid, outcome)
                }
            },
        );
        struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                for t in &self.0 {
                    t.abort();
                }
            }
        }
        let _tasks = AbortOnDrop(tasks);
        tokio::join!(delete, orphan);
        std::future::pending::<()>().await;
    }

    /// Whether every monitor has delivered its first list (upstream `IsSynced`).
    pub fn is_synced(&self) -> bool {
        let monitors = self.shared.monitors.load(Ordering::Relaxed);
        monitors > 0
            && self
                .shared
                .synced
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len()
                >= monitors
    }

    /// Whether the graph holds `uid` (upstream `GraphHasUID`, for tests).
    pub fn graph_has_uid(&self, uid: &str) -> bool {
        self.shared.lock_builder().graph.contains(uid)
    }

    /// Nodes in the graph.
    pub fn graph_len(&self) -> usize {
        self.shared.lock_builder().graph.len()
    }

    /// Approximate bytes of graph state.
    pub fn graph_bytes(&self) -> usize {
        self.shared.lock_builder().graph.approximate_bytes()
    }

    /// Items queued or in progress across both queues: zero when the collector is idle.
    pub fn pending_work(&self) -> usize {
        self.shared.attempt_to_delete_queue.pending()
            + self.shared.attempt_to_orphan_queue.pending()
    }

    /// Deterministic stepping (tests, tools): feeds one event to the graph builder and returns
    /// what it asked for, without queueing it.
    pub fn process_event(&self, event: GraphEvent) -> Effects {
        self.shared.lock_builder().process(event)
    }

    /// Deterministic stepping: refreshes the REST mapper from the cluster's discovery once.
    pub async fn refresh_mapper(&self) -> Result<(), kgc_client::Error> {
        let resources = self.shared.cluster.resources().await?;
        self.shared
            .mapper
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace(&resources);
        Ok(())
    }

    /// Deterministic stepping: one `attemptToDelete` pass over `uid`; true when it finished,
    /// false when it would be retried.
    pub async fn attempt_to_delete_once(&self, uid: &str) -> bool {
        self.shared.attempt_to_delete(&Uid::from(uid)).await == Outcome::Done
    }

    /// Deterministic stepping: one `attemptToOrphan` pass over `uid`.
    pub async fn attempt_to_orphan_once(&self, uid: &str) -> bool {
        self.shared.attempt_to_orphan(&Uid::from(uid)).await == Outcome::Done
    }

    /// Deterministic stepping: the graph events workers produced (virtual deletes), when the
    /// collector is not running.
    pub fn drain_worker_events(&self) -> Vec<GraphEvent> {
        let mut guard = self.changes_rx.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        if let Some(rx) = guard.as_mut() {
            while let Ok(e) = rx.try_recv() {
                out.push(e);
            }
        }
        out
    }

    /// A copy of one graph node.
    pub fn node(&self, uid: &str) -> Option<graph::Node> {
        self.shared.lock_builder().graph.node(uid, true)
    }

    /// Whether the absent-owner cache holds an identity.
    pub fn absent_contains(&self, identity: &kgc_meta::ObjectRef) -> bool {
        self.shared.lock_builder().absent.has(identity)
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The graph (or the part connected to `uid`) in DOT, like upstream's
    /// `/debug/controllers/garbagecollector/graph`.
    pub fn dump_dot(&self, uid: Option<&str>) -> String {
        let b = self.shared.lock_builder();
        let nodes = select(&b, uid);
        let mut out = String::from("digraph full {\n");
        for n in &nodes {
            let _ = writeln!(
                out,
                "  {:?} [label={:?}];",
                n.identity.uid,
                format!(
                    "uid={}\nnamespace={}\n{}/{}\nname={}\nvirtual={}",
                    n.identity.uid,
                    n.identity.namespace,
                    n.identity.api_version,
                    n.identity.kind,
                    n.identity.name,
                    n.is_virtual
                )
            );
        }
        for n in &nodes {
            for o in &n.owners {
                let _ = writeln!(out, "  {:?} -> {:?};", n.identity.uid, o.uid);
            }
        }
        out.push_str("}\n");
        out
    }

    /// The graph (or the part connected to `uid`) as JSON.
    pub fn dump_json(&self, uid: Option<&str>) -> serde_json::Value {
        let b = self.shared.lock_builder();
        let nodes: Vec<serde_json::Value> = select(&b, uid)
            .iter()
            .map(|n| {
                serde_json::json!({
                    "uid": n.identity.uid,
                    "apiVersion": n.identity.api_version,
                    "kind": n.identity.kind,
                    "namespace": n.identity.namespace,
                    "name": n.identity.name,
                    "virtual": n.is_virtual,
                    "beingDeleted": n.being_deleted,
                    "deletingDependents": n.deleting_dependents,
                    "owners": n.owners.iter().map(kgc_meta::OwnerReference::to_json).collect::<Vec<_>>(),
                    "dependents": n.dependents.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({"nodes": nodes})
    }
}

/// All nodes, or those connected to `uid` (owners and dependents, transitively).
fn select(b: &GraphBuilder, uid: Option<&str>) -> Vec<graph::Node> {
    let Some(start) = uid else {
        let mut all: Vec<graph::Node> = b
            .graph
            .keys()
            .filter_map(|k| b.graph.node(&k.to_string(), true))
            .collect();
        all.sort_by(|a, c| a.identity.uid.cmp(&c.identity.uid));
        return all;
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut todo = vec![start.to_owned()];
    let mut out = Vec::new();
    while let Some(u) = todo.pop() {
        if !seen.insert(u.clone()) {
            continue;
        }
        if let Some(n) = b.graph.node(&u, true) {
            todo.extend(n.owners.iter().map(|o| o.uid.clone()));
            todo.extend(n.dependents.iter().map(|d| d.to_string()));
            out.push(n);
        }
    }
    out.sort_by(|a, c| a.identity.uid.cmp(&c.identity.uid));
    out
}

impl<C: Cluster> Shared<C> {
    /// The single graph-builder loop: takes up to 64 waiting events, processes them under one
    /// lock, then hands the work to the queues. (Larger batches hold the lock long enough to
    /// stall the workers, which take it for a moment per item.)
    async fn run_graph_builder(self: Arc<Self>, mut rx: mpsc::UnboundedReceiver<GraphEvent>) {
        let mut batch = Vec::new();
        while rx.recv_many(&mut batch, 64).await > 0 {
            let mut effects = Vec::with_capacity(batch.len());
            {
                let mut b = self.lock_builder();
                for event in batch.drain(..) {
                    effects.push(b.process(event));
                }
            }
            self.progress.notify_waiters();
            self.metrics.graph_events.inc_by(effects.len() as u64);
            for fx in effects {
                self.apply_effects(fx);
            }
        }
    }

    fn apply_effects(&self, fx: Effects) {
        for uid in fx.attempt_to_delete {
            self.attempt_to_delete_queue.add(uid);
        }
        for uid in fx.attempt_to_delete_later {
            let key = self.budget_key(&uid);
            self.attempt_to_delete_queue.add_rate_limited(uid, &key);
        }
        for uid in fx.attempt_to_orphan {
            self.attempt_to_orphan_queue.add(uid);
        }
        for bad in fx.invalid_owner_refs {
            tracing::warn!(child = %bad.child, owner = %bad.owner, "OwnerRefInvalidNamespace");
            Recorder::new(
                Collector(self.cluster.clone()),
                COMPONENT,
                self.config.clock,
            )
            .warning(
                object_reference(&bad.child),
                "OwnerRefInvalidNamespace",
                bad.message(),
            );
        }
    }

    /// The retry budget an item is charged to: its kind.
    fn budget_key(&self, uid: &str) -> String {
        let b = self.lock_builder();
        b.graph
            .entry(&graph::UidKey::new(uid))
            .map(|n| format!("{}/{}", b.graph.api_version(n), b.graph.kind(n)))
            .unwrap_or_default()
    }

    /// What the worker loop does with an item after a pass: a retry is charged to the item's
    /// kind.
    fn next(&self, uid: &Uid, outcome: Outcome) -> Next {
        match outcome {
            Outcome::Done => Next::Done,
            Outcome::Retry => Next::Retry(self.budget_key(uid).into()),
        }
    }
}
