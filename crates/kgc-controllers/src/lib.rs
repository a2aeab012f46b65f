//! The cluster's own controllers, which kube-controller-manager and kube-apiserver run and
//! `kgc serve` runs in-process (or `kgc controller` against any cluster), beside the collectors:
//!
//! - [`namespace`]: deletes a terminating namespace's content, reports what remains, and
//!   finalizes it (kubernetes `pkg/controller/namespace`);
//! - [`crd_finalizer`]: deletes a deleted CRD's custom resources, then lets the CRD go
//!   (apiextensions-apiserver `pkg/controller/finalizer/crd_finalizer.go`);
//! - [`pod_termination`]: completes a pod's graceful deletion when its grace period ends, the
//!   final grace-0 DELETE a kubelet sends, for pods on nodes without a simulated kubelet;
//! - [`serviceaccount`]: a `default` ServiceAccount in every active namespace (kubernetes
//!   `pkg/controller/serviceaccount`);
//! - [`root_ca`]: the `kube-root-ca.crt` ConfigMap in every namespace (kubernetes
//!   `pkg/controller/certificates/rootcacertpublisher`);
//! - [`resourcequota`]: every ResourceQuota's `status.hard` and `status.used` (kubernetes
//!   `pkg/controller/resourcequota`).
//!
//! Each runs on kgc-runtime (a shared cache, a work queue) and acts only through
//! [`kgc_client::Cluster`]; the store knows nothing of them.
#![forbid(unsafe_code)]

pub mod crd_finalizer;
pub mod events;
pub mod namespace;
pub mod pod_termination;
pub mod resourcequota;
pub mod root_ca;
pub mod serviceaccount;

use std::sync::Arc;

use kgc_client::Cluster;
use kgc_meta::ResourceInfo;
pub use kgc_meta::time::Clock;
use kgc_runtime::informer::View;
use kgc_runtime::informer::{Informers, Key};
use kgc_runtime::queue::{QueueMetrics, WorkQueue};
use serde_json::Value;

/// Errors of a controller's sync; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
    /// Content that should be gone is still there and nothing says why (no finalizer, no
    /// grace period): retried with back-off, as upstream does.
    #[error("{0}")]
    Remaining(String),
    /// A typed write through the kube client failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An object read through the kube client did not encode back to JSON.
    #[error("encoding an object: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What every controller shares: the process's informers, the client it writes with, the
/// clock, the queues' metrics.
#[derive(Clone)]
pub struct Context<C> {
    pub informers: Informers<C>,
    /// Typed writes (k8s-openapi objects) with the whole API's semantics: in `kgc serve` the
    /// API server's loopback client (no socket), in `kgc controller` the kubeconfig's.
    pub client: kube::Client,
    pub clock: Clock,
    pub queues: Option<QueueMetrics>,
    /// The PEM bundle that verifies the API server, which [`root_ca`] publishes (upstream
    /// `--root-ca-file`); `None` when there is none (a plain-HTTP server).
    pub root_ca: Option<Arc<str>>,
}

impl<C: Cluster> Context<C> {
    pub fn cluster(&self) -> &C {
        self.informers.cluster()
    }

    /// A work queue reporting under `name` when the process has a registry.
    pub fn queue<K: std::hash::Hash + Eq + Clone>(&self, name: &str) -> WorkQueue<K> {
        match &self.queues {
            Some(m) => WorkQueue::with_metrics(name, m),
            None => WorkQueue::new(),
        }
    }
}

/// Runs a controller of cluster-scoped objects named by their key: `V` keeps only the objects
/// there is something to do for, every change of one queues its name, and `sync` judges a name
/// with the object's resource.
async fn run_by_name<C, V, F, Fut>(
    ctx: Context<C>,
    controller: &'static str,
    (group, plural): (&str, &str),
    workers: usize,
    sync: F,
) where
    C: Cluster,
    V: kgc_runtime::informer::View,
    F: Fn(Context<C>, Arc<ResourceInfo>, String) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Option<std::time::Duration>>> + Send,
{
    let resource = ctx.informers.resource(group, plural).await;
    let queue = ctx.queue::<String>(controller);
    let cache = ctx.informers.cache::<V>(Arc::clone(&resource));
    let q = queue.clone();
    cache.on_change(Arc::new(move |key: &Key, v: Option<&V>| {
        if v.is_some() {
            q.add(key.1.clone());
        }
    }));
    cache.synced().await;
    tracing::info!(controller, "started");
    let sync = move |name: String| sync.clone()(ctx.clone(), Arc::clone(&resource), name);
    work(controller, queue, workers, sync).await;
}

/// What the per-namespace controllers keep of a namespace: only active ones (no
/// deletionTimestamp, phase not `Terminating`), since upstream's leave terminating namespaces
/// alone.
#[derive(Debug, Clone, PartialEq)]
struct Active;

impl View for Active {
    fn view(obj: &Value) -> Option<Self> {
        let deleting = obj["metadata"]["deletionTimestamp"].is_string();
        (!deleting && obj["status"]["phase"] != "Terminating").then_some(Active)
    }
}

/// Runs a controller that keeps an object named `object` of `(group, plural)` in every active
/// namespace, keyed by the namespace's name: a namespace is queued when it appears or changes
/// and when its `object` changes or goes; `sync` gets the namespace and the cached view of its
/// `object` (`V` may view only objects of that name), and is called only for active namespaces.
async fn run_per_namespace<C, V, F, Fut>(
    ctx: Context<C>,
    controller: &'static str,
    (group, plural): (&str, &str),
    object: &'static str,
    workers: usize,
    sync: F,
) where
    C: Cluster,
    V: View + Clone,
    F: Fn(Context<C>, String, Option<V>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Option<std::time::Duration>>> + Send,
{
    let namespaces = ctx.informers.resource("", "namespaces").await;
    let resource = ctx.informers.resource(group, plural).await;
    let queue = ctx.queue::<String>(controller);
    let active = ctx.informers.cache::<Active>(namespaces);
    let objects = ctx.informers.cache::<V>(resource);
    let q = queue.clone();
    active.on_change(Arc::new(move |key: &Key, ns: Option<&Active>| {
        if ns.is_some() {
            q.add(key.1.clone());
        }
    }));
    let q = queue.clone();
    objects.on_change(Arc::new(move |key: &Key, _: Option<&V>| {
        if key.1 == object {
            q.add(key.0.clone());
        }
    }));
    active.synced().await;
    objects.synced().await;
    tracing::info!(controller, "started");
    let sync = move |ns: String| {
        let (ctx, sync) = (ctx.clone(), sync.clone());
        let is_active = active.get(&(String::new(), ns.clone())).is_some();
        let current = objects.get(&(ns.clone(), object.to_owned()));
        async move {
            if !is_active {
                return Ok(None);
            }
            sync(ctx, ns, current).await
        }
    };
    work(controller, queue, workers, sync).await;
}

/// Whether a create failed only because the namespace is gone or terminating, which upstream's
/// per-namespace controllers do not retry (the namespace's next change queues it again).
fn namespace_unusable(e: &kube::Error) -> bool {
    let kube::Error::Api(s) = e else {
        return false;
    };
    s.is_not_found()
        || s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
}

/// Runs `workers` workers over `queue`, each calling `sync` for a key and acting on what it
/// says: `Ok(None)` done, `Ok(Some(d))` look again after `d`, `Err` retry with back-off.
/// Controllers of other crates run on it too, with their own error types.
pub async fn work<K, F, Fut, E>(
    controller: &'static str,
    queue: WorkQueue<K>,
    workers: usize,
    sync: F,
) where
    K: std::hash::Hash + Eq + Clone + std::fmt::Display + Send + Sync + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = std::result::Result<Option<std::time::Duration>, E>> + Send,
    E: std::fmt::Display,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let (queue, sync) = (queue.clone(), sync.clone());
        tasks.spawn(async move {
            while let Some(key) = queue.get().await {
                match sync(key.clone()).await {
                    Ok(None) => queue.forget(&key),
                    Ok(Some(after)) => {
                        queue.forget(&key);
                        queue.add_after(key.clone(), after);
                    }
                    Err(e) => {
                        tracing::warn!(controller, key = %key, error = %e, retries = queue.requeues(&key), "sync failed; retrying with back-off");
                        queue.add_rate_limited(key.clone(), controller);
                    }
                }
                queue.done(&key);
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}
