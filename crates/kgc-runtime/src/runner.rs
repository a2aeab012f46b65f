//! The loops a controller runs on: [`work`], the workers over a queue, and the two shapes of
//! controller every crate has (upstream's `processNextWorkItem` of `pkg/controller/*`):
//! [`run_by_name`], cluster-scoped objects queued by name, and [`run_per_namespace`], an object
//! kept in every active namespace, each a [`Controller`] declaration.

use std::borrow::Cow;
use std::sync::Arc;

use kgc_client::Cluster;
use kgc_meta::ResourceInfo;
use serde_json::Value;

use crate::informer::{Key, View};
use crate::queue::WorkQueue;
use crate::{Context, Controller};

/// Runs a controller of cluster-scoped objects named by their key: `V` keeps only the objects
/// there is something to do for, every change of one queues its name, and `sync` judges a name
/// with the object's resource.
pub async fn run_by_name<C, V, F, Fut, E>(
    ctx: Context<C>,
    controller: &'static str,
    (group, plural): (&str, &str),
    workers: usize,
    sync: F,
) where
    C: Cluster,
    V: View,
    F: Fn(Context<C>, Arc<ResourceInfo>, String) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Option<std::time::Duration>, E>> + Send,
    E: std::fmt::Display,
{
    let resource = ctx.informers.resource(group, plural).await;
    let cache = ctx.informers.cache::<V>(Arc::clone(&resource));
    let declared = Controller::named(&ctx, controller)
        .watches(&cache, |key: &Key, v: Option<&V>| v.map(|_| key.1.clone()));
    let sync = move |name: String| sync.clone()(ctx.clone(), Arc::clone(&resource), name);
    declared.run(workers, sync).await;
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
pub async fn run_per_namespace<C, V, F, Fut, E>(
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
    Fut: std::future::Future<Output = Result<Option<std::time::Duration>, E>> + Send,
    E: std::fmt::Display,
{
    let namespaces = ctx.informers.resource("", "namespaces").await;
    let resource = ctx.informers.resource(group, plural).await;
    let active = ctx.informers.cache::<Active>(namespaces);
    let objects = ctx.informers.cache::<V>(resource);
    let declared = Controller::named(&ctx, controller)
        .watches(&active, |key: &Key, ns: Option<&Active>| {
            ns.map(|_| key.1.clone())
        })
        .watches(&objects, move |key: &Key, _: Option<&V>| {
            (key.1 == object).then(|| key.0.clone())
        });
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
    declared.run(workers, sync).await;
}

/// Runs `workers` workers over `queue`, each calling `sync` for a key and acting on what it
/// says: `Ok(None)` done, `Ok(Some(d))` look again after `d`, `Err` retry with back-off.
/// Every controller runs on it, each with its own error type.
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
    let q = queue.clone();
    let process = move |key: K| {
        let (sync, q) = (sync.clone(), q.clone());
        async move {
            match sync(key.clone()).await {
                Ok(None) => Next::Done,
                Ok(Some(after)) => Next::After(after),
                Err(e) => {
                    tracing::warn!(controller, key = %key, error = %e, retries = q.requeues(&key), "sync failed; retrying with back-off");
                    Next::Retry(Cow::Borrowed(controller))
                }
            }
        }
    };
    run_workers(queue, workers, process).await;
}

/// What a worker does with a key it has processed (client-go's `Forget`, `AddAfter`,
/// `AddRateLimited` after `processNextWorkItem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Done: its failures are forgotten.
    Done,
    /// Done, and looked at again after this long.
    After(std::time::Duration),
    /// Failed: again after the queue's back-off, charged to the named bucket of its limiter.
    Retry(Cow<'static, str>),
}

/// Runs `workers` workers over `queue`, each calling `process` for a key and doing what it
/// returns: [`work`] for controllers whose outcome is a `Result`, and for the collectors, which
/// decide themselves what a failure costs (the owner-reference collector charges a retry to
/// the object's kind, the TTL collector drops a Job it cannot judge).
pub async fn run_workers<K, F, Fut>(queue: WorkQueue<K>, workers: usize, process: F)
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Next> + Send,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let (queue, process) = (queue.clone(), process.clone());
        tasks.spawn(async move {
            while let Some(key) = queue.get().await {
                match process(key.clone()).await {
                    Next::Done => queue.forget(&key),
                    Next::After(after) => {
                        queue.forget(&key);
                        queue.add_after(key.clone(), after);
                    }
                    Next::Retry(bucket) => queue.add_rate_limited(key.clone(), &bucket),
                }
                queue.done(&key);
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}
