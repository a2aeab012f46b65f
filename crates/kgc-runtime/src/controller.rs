//! A controller declared in kube-runtime's shape (`kube_runtime::Controller`: `new(api)`,
//! `.owns(child)`, `.watches(other, mapper)`, `.run(reconcile)`), over the process's shared
//! caches, one work queue and [`work`]: a controller is its reconcile function and one
//! declaration of what makes it look at which key.
//!
//! Upstream wires the same by hand in each controller's constructor: event handlers on shared
//! informers that compute keys and enqueue them (`pkg/controller/deployment/deployment_controller.go`,
//! `NewDeploymentController`: `addDeployment`, `addReplicaSet` resolving the controller
//! reference, `deleteReplicaSet`), then `WaitForNamedCacheSync` and `workers` goroutines of
//! `processNextWorkItem`. The declaration registers those handlers as it is built, so each sees
//! every cached object first, and [`Controller::run`] waits for every watched cache's first
//! list before the workers start.

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kgc_client::Cluster;

use crate::Context;
use crate::informer::{Cache, Key, View, describe};
use crate::queue::WorkQueue;
use crate::runner::work;

/// The key of one object, as a queue holds it and as logs name it (`namespace/name`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(pub Key);

impl From<Key> for ObjectKey {
    fn from(key: Key) -> Self {
        Self(key)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(&self.0))
    }
}

/// A first list a controller waits for before its workers start, or a task that runs beside
/// them.
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A controller being declared: its queue, the handlers feeding it, the caches it waits for
/// (and keeps watching while it runs), the tasks that run beside its workers.
pub struct Controller<K = ObjectKey> {
    name: &'static str,
    queue: WorkQueue<K>,
    synced: Vec<Task>,
    watched: Vec<Box<dyn std::any::Any + Send>>,
    beside: Vec<Task>,
}

impl<K> Controller<K>
where
    K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
{
    /// A controller of the objects in `objects`: each change of one, and its going, queues its
    /// key. `name` names the queue (its metrics) and the controller in logs.
    pub fn new<C: Cluster, V: View>(
        ctx: &Context<C>,
        name: &'static str,
        objects: &Cache<V>,
    ) -> Self
    where
        K: From<Key>,
    {
        Self::named(ctx, name).watches(objects, |key: &Key, _: Option<&V>| {
            Some(K::from(key.clone()))
        })
    }

    /// A controller whose keys are not simply its objects' (a Job and the pods whose finalizer
    /// it removes): every key comes from a [`watches`](Self::watches).
    pub fn named<C: Cluster>(ctx: &Context<C>, name: &'static str) -> Self {
        Self {
            name,
            queue: ctx.queue(name),
            synced: Vec::new(),
            watched: Vec::new(),
            beside: Vec::new(),
        }
    }

    /// The controller's queue, for a mapper that queues keys it reads from another cache.
    pub fn queue(&self) -> &WorkQueue<K> {
        &self.queue
    }

    /// Every `period`, queues every object of `objects` (client-go's informer resync, as
    /// `resyncPeriod` makes upstream's handlers see each object again): a full
    /// recalculation now and then, whatever events were missed or never come.
    pub fn resyncs<V: View>(mut self, objects: &Cache<V>, period: Duration) -> Self
    where
        K: From<Key>,
    {
        let (queue, objects) = (self.queue.clone(), objects.clone());
        self.beside.push(Box::pin(async move {
            loop {
                tokio::time::sleep(period).await;
                let keys: Vec<Key> = objects.read(|m| m.keys().cloned().collect());
                for key in keys {
                    queue.add(K::from(key));
                }
            }
        }));
        self
    }

    /// `task` runs beside the workers, and stops with them: one that watches more as the
    /// controller's objects name them (upstream's `QuotaMonitor` starting informers for the
    /// resources quotas count).
    pub fn beside(mut self, task: impl Future<Output = ()> + Send + 'static) -> Self {
        self.beside.push(Box::pin(task));
        self
    }

    /// Children whose controller reference names their owner: a child's change, and its going,
    /// queue the owner's key (in the child's namespace), which `owner` reads from the child
    /// (`None`: not one of this controller's).
    pub fn owns<V: View>(
        self,
        children: &Cache<V>,
        owner: impl Fn(&V) -> Option<String> + Send + Sync + 'static,
    ) -> Self
    where
        K: From<Key>,
    {
        let owner = Arc::new(owner);
        let of = Arc::clone(&owner);
        self.watches(children, move |key: &Key, child: Option<&V>| {
            let name = of(child?)?;
            Some(K::from((key.0.clone(), name)))
        })
        .watches_deletions(children, move |key: &Key, child: &V| {
            owner(child).map(|name| K::from((key.0.clone(), name)))
        })
    }

    /// Every change of an object of `other` (`None`: it is gone) queues the keys `mapper`
    /// maps it to. The mapper runs as a [`Handler`](crate::informer::Handler), on the watch's
    /// task: it keeps short, and may read any cache.
    pub fn watches<V: View, I>(
        mut self,
        other: &Cache<V>,
        mapper: impl Fn(&Key, Option<&V>) -> I + Send + Sync + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = K>,
    {
        let q = self.queue.clone();
        other.on_change(Arc::new(move |key: &Key, v: Option<&V>| {
            for k in mapper(key, v) {
                q.add(k);
            }
        }));
        self.wait_for(other);
        self
    }

    /// Every object of `other` that goes queues the keys `mapper` maps its last view to (what
    /// upstream's `DeleteFunc` reads, e.g. whose it was).
    pub fn watches_deletions<V: View, I>(
        mut self,
        other: &Cache<V>,
        mapper: impl Fn(&Key, &V) -> I + Send + Sync + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = K>,
    {
        let q = self.queue.clone();
        other.on_delete(Arc::new(move |key: &Key, v: &V| {
            for k in mapper(key, v) {
                q.add(k);
            }
        }));
        self.wait_for(other);
        self
    }

    /// A cache the reconcile reads without being queued by it: its first list is waited for
    /// too, and it is kept as long as the controller runs.
    pub fn reads<V: View>(mut self, cache: &Cache<V>) -> Self {
        self.wait_for(cache);
        self
    }

    /// Waits for `cache`'s first list before the workers start, and keeps it (its watch
    /// stops with its last handle) as long as the controller runs.
    fn wait_for<V: View>(&mut self, cache: &Cache<V>) {
        self.watched.push(Box::new(cache.clone()));
        let cache = cache.clone();
        self.synced
            .push(Box::pin(async move { cache.synced().await }));
    }

    /// Waits for every watched cache's first list, then runs `workers` workers calling
    /// `reconcile` for each queued key, as [`work`] does, until dropped.
    pub async fn run<F, Fut, E>(self, workers: usize, reconcile: F)
    where
        F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Duration>, E>> + Send,
        E: fmt::Display,
    {
        for synced in self.synced {
            synced.await;
        }
        tracing::info!(controller = self.name, "started");
        let _watched = self.watched;
        // A task that ends does not stop the workers.
        let beside = async {
            futures::future::join_all(self.beside).await;
            std::future::pending::<()>().await
        };
        tokio::select! {
            () = work(self.name, self.queue, workers, reconcile) => {}
            () = beside => {}
        }
    }

    /// [`Controller::run`] with the state every reconcile needs (the controller, or the caches
    /// it reads), cloned into each call, so that a declaration does not build that closure.
    pub async fn run_with<S, F, Fut, E>(self, workers: usize, state: S, reconcile: F)
    where
        S: Clone + Send + Sync + 'static,
        F: Fn(S, K) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Duration>, E>> + Send,
        E: fmt::Display,
    {
        self.run(workers, move |key| reconcile(state.clone(), key))
            .await;
    }
}
