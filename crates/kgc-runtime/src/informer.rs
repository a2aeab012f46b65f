//! Shared informers: one watch per resource per process, however many controllers read it
//! (client-go's `SharedInformerFactory`, `staging/src/k8s.io/client-go/informers/factory.go`;
//! kube-runtime's `watcher` → `reflector`).
//!
//! A controller asks the process's [`Informers`] for a [`Cache`] of a resource, keeping each
//! object as a [`View`]: the few fields it judges by, not the whole object (PodGC keeps 100,000
//! pods in a few megabytes this way). Caches of one resource share its watch; caches of one
//! resource *and* view type are one cache, so a view type shared by the controllers that read a
//! resource (PodGC and the departed-nodes collector both read [`View`]s of Nodes of one type)
//! caches that resource once. Handlers registered on a cache see every change, and the
//! current content when they register, as client-go's `AddEventHandler` replays it.
//!
//! The owner-reference GC keeps its own store of every object (its graph), so it takes the
//! watch's events rather than a cache: [`Informers::subscribe_meta`]. A resource only the GC
//! follows is watched for metadata alone (`Cluster::watch`, which reads just `metadata`); once
//! a cache reads it too, the one watch carries whole objects, each cache keeps its view and the
//! GC gets the metadata of the same events.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, Weak};

use futures::StreamExt;
use futures::stream::BoxStream;
use kgc_client::{Cluster, ObjectEvent};
use kgc_meta::{GroupResource, ObjectMeta, ResourceInfo};
use serde_json::Value;
use tokio::sync::watch;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type Key = (String, String);

/// The key of a JSON object.
pub fn key_of(obj: &Value) -> Key {
    let m = &obj["metadata"];
    let s = |f: &str| m[f].as_str().unwrap_or_default().to_owned();
    (s("namespace"), s("name"))
}

/// `namespace/name`, or `name` for a cluster-scoped object, as logs name objects.
pub fn describe(key: &Key) -> String {
    if key.0.is_empty() {
        key.1.clone()
    } else {
        format!("{}/{}", key.0, key.1)
    }
}

/// What a cache keeps of each object.
pub trait View: Send + Sync + Sized + 'static {
    /// The view of `obj`; `None` for an object that cannot be judged (malformed), which is then
    /// not cached, and so never acted on (log why where it is decided).
    fn view(obj: &Value) -> Option<Self>;
}

/// The whole object, for the few readers that need it (small resources: CSRs, volumes).
impl View for Value {
    fn view(obj: &Value) -> Option<Self> {
        Some(obj.clone())
    }
}

/// A view that is the whole typed object (k8s-openapi), for controllers of resources with few
/// objects (ReplicaSets, claims, classes). An object that does not decode is not cached: the
/// API server admitted it typed, so only a field set newer than the types could cause that.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send + Sync + 'static> View for Typed<T> {
    fn view(obj: &Value) -> Option<Self> {
        match serde_json::from_value(obj.clone()) {
            Ok(t) => Some(Typed(t)),
            Err(e) => {
                tracing::warn!(object = %describe(&key_of(obj)), error = %e, "cannot decode; not cached");
                None
            }
        }
    }
}

/// How often a controller waiting for its resource runs discovery anyway, besides when the
/// cluster says its resources changed.
const DISCOVERY_RESYNC: std::time::Duration = std::time::Duration::from_secs(30);

/// Called for every change a cache takes in, once the cache holds it: the key and the new view
/// (`None`: deleted, or the object no longer has a valid view). Called on the watch's task
/// under the cache's read lock, never its write lock, so a handler may read any cache (a Job's
/// pod handler reads the Jobs while the Job handler reads the pods); keep it short (queue the
/// key). A handler registered while events arrive may see one state twice, never out of order.
pub type Handler<V> = Arc<dyn Fn(&Key, Option<&V>) + Send + Sync>;

/// Called with the last view of each object that leaves the cache (deleted, or no longer
/// viewable), before the [`Handler`]s hear of it: what a controller needs to know whose the
/// object was (upstream's `DeleteFunc` gets the last state). Called as [`Handler`], with no
/// lock held.
pub type DeleteHandler<V> = Arc<dyn Fn(&Key, &V) + Send + Sync>;

/// Called with every event of a resource's watch, as metadata, in the watch's order (on the
/// watch's task: keep it short, e.g. send it on).
pub type MetaHandler = Arc<dyn Fn(ObjectEvent<ObjectMeta>) + Send + Sync>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What discovery last said (`None` before its first answer), shared by every
/// [`Informers::resource`] wait of one set of informers.
type Served = Arc<Option<Result<kgc_client::discovery::Resources, String>>>;

/// The one discovery stream of a set of informers, followed while they are held.
struct Discovery {
    served: watch::Receiver<Served>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Discovery {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The informers of one process: one watch per resource, started when the first cache of the
/// resource is asked for, and one discovery stream, started when a resource is first waited
/// for. Clones share them; a watch stops once neither they nor a cache of it are held, the
/// discovery once they are not.
pub struct Informers<C> {
    cluster: C,
    sources: Arc<Sources>,
    discovery: Arc<OnceLock<Discovery>>,
}

impl<C: Clone> Clone for Informers<C> {
    fn clone(&self) -> Self {
        Self {
            cluster: self.cluster.clone(),
            sources: Arc::clone(&self.sources),
            discovery: Arc::clone(&self.discovery),
        }
    }
}

impl<C: Cluster> Informers<C> {
    pub fn new(cluster: C) -> Self {
        Self {
            cluster,
            sources: Arc::default(),
            discovery: Arc::default(),
        }
    }

    pub fn cluster(&self) -> &C {
        &self.cluster
    }

    /// The source of `resource`: the running one, or a new one when there is none or the
    /// running one watches another version or kind (a CRD deleted and created again), which
    /// then lives on only for those still holding it.
    fn source(&self, resource: Arc<ResourceInfo>) -> Arc<Source> {
        let mut sources = lock(&self.sources);
        let gr = resource.group_resource();
        if let Some(s) = sources.get(&gr)
            && s.resource.preferred_version() == resource.preferred_version()
            && s.resource.kind == resource.kind
        {
            return Arc::clone(s);
        }
        let s = Arc::new(Source::new(resource));
        sources.insert(gr, Arc::clone(&s));
        s
    }

    /// The cache of `resource` keeping `V`s, shared with every other reader of the same
    /// resource and view; the resource's one watch starts (or, for a cache added to a running
    /// watch, re-lists so that the new cache sees the complete list).
    pub fn cache<V: View>(&self, resource: Arc<ResourceInfo>) -> Cache<V> {
        let source = self.source(resource);
        let (cache, added) = {
            let mut caches = lock(&source.caches);
            match caches.get(&TypeId::of::<V>()) {
                Some(c) => (
                    Arc::clone(c)
                        .downcast::<CacheInner<V>>()
                        .expect("keyed by the view's type"),
                    false,
                ),
                None => {
                    let c = Arc::new(CacheInner::<V>::default());
                    caches.insert(TypeId::of::<V>(), c.clone() as Arc<dyn Any + Send + Sync>);
                    (c, true)
                }
            }
        };
        if added {
            let sink: Arc<dyn Sink> = cache.clone();
            source.start(&self.cluster, || {
                let mut sinks = source.sinks.write().unwrap_or_else(PoisonError::into_inner);
                let mut next: Vec<Arc<dyn Sink>> = sinks.to_vec();
                next.push(sink);
                *sinks = next.into();
            });
        }
        Cache {
            inner: cache,
            _source: source,
        }
    }

    /// Follows every event of `resource`'s watch as metadata, from a complete list on, until
    /// the returned subscription is dropped; the watch is the one the resource's caches share
    /// (a running watch re-lists once so that `handler` sees the complete list). When nothing
    /// else follows the resource, dropping the subscription stops its watch.
    pub fn subscribe_meta(
        &self,
        resource: Arc<ResourceInfo>,
        handler: MetaHandler,
    ) -> Subscription {
        let source = self.source(resource);
        let id = source.next_id.fetch_add(1, Ordering::Relaxed);
        source.start(&self.cluster, || {
            let mut metas = source.metas.write().unwrap_or_else(PoisonError::into_inner);
            let mut next = metas.to_vec();
            next.push((id, handler));
            *metas = next.into();
        });
        Subscription {
            source,
            id,
            sources: Arc::downgrade(&self.sources),
        }
    }

    /// The served resource `group`/`plural`, waiting until the cluster serves it: a controller
    /// may start before the CRD or the API it reads exists. It follows the informers' one
    /// discovery stream (a new snapshot at once when the cluster says its resources changed,
    /// else every 30 s: one discovery for every controller waiting, not one each) and says
    /// once that it waits.
    pub async fn resource(&self, group: &str, plural: &str) -> Arc<ResourceInfo> {
        let mut served = self.served();
        let mut warned = false;
        loop {
            let current = Arc::clone(&served.borrow_and_update());
            match current.as_ref() {
                // Discovery has not answered yet.
                None => {}
                Some(Ok(rs)) => {
                    if let Some(r) = rs.iter().find(|r| r.group == group && r.plural == plural) {
                        return Arc::clone(r);
                    }
                    if !warned {
                        tracing::warn!(%group, %plural, "the cluster does not serve this resource yet");
                    }
                    warned = true;
                }
                Some(Err(e)) => {
                    if !warned {
                        tracing::warn!(%group, %plural, error = %e, "discovery failed");
                    }
                    warned = true;
                }
            }
            if served.changed().await.is_err() {
                // The stream ended (it never does): nothing will be served.
                return std::future::pending().await;
            }
        }
    }

    /// The informers' discovery stream, started by its first follower.
    fn served(&self) -> watch::Receiver<Served> {
        let discovery = self.discovery.get_or_init(|| {
            let (tx, served) = watch::channel(Served::default());
            let mut stream = kgc_client::discovery::served(self.cluster.clone(), DISCOVERY_RESYNC);
            let task = tokio::spawn(async move {
                while let Some(snapshot) = stream.next().await {
                    let snapshot = snapshot.map_err(|e| e.to_string());
                    if tx.send(Arc::new(Some(snapshot))).is_err() {
                        return;
                    }
                }
            });
            Discovery { served, task }
        });
        discovery.served.clone()
    }

    /// How many watches this process holds open (one per resource read).
    pub fn watches(&self) -> usize {
        lock(&self.sources).len()
    }
}

/// Something fed by a resource's watch.
trait Sink: Send + Sync {
    fn event(&self, event: &ObjectEvent<Value>);
}

type Sources = Mutex<HashMap<GroupResource, Arc<Source>>>;

/// One resource's watch and what it feeds.
struct Source {
    resource: Arc<ResourceInfo>,
    /// The caches each event goes to: swapped whole when a cache is added, so the watch task
    /// reads it without holding a lock while it feeds.
    sinks: RwLock<Arc<[Arc<dyn Sink>]>>,
    /// The metadata followers, by subscription id (swapped whole, as `sinks`).
    metas: RwLock<Arc<[(u64, MetaHandler)]>>,
    next_id: AtomicU64,
    caches: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The generation of the watch allowed to feed, held while it feeds one event. An aborted
    /// task stops only at its next await, and a stream with events buffered may not await for
    /// a while: without this, the old watch could go on feeding after the new one's list began
    /// (an old `Init` emptying the new list, an old `InitDone` marking a new cache synced with
    /// nothing in it, stale updates over fresh ones).
    generation: Mutex<u64>,
}

impl Source {
    fn new(resource: Arc<ResourceInfo>) -> Self {
        Self {
            resource,
            sinks: RwLock::new(Arc::new([])),
            metas: RwLock::new(Arc::new([])),
            next_id: AtomicU64::new(0),
            caches: Mutex::default(),
            task: Mutex::default(),
            generation: Mutex::default(),
        }
    }

    fn sinks(&self) -> Arc<[Arc<dyn Sink>]> {
        Arc::clone(&self.sinks.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn metas(&self) -> Arc<[(u64, MetaHandler)]> {
        Arc::clone(&self.metas.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// (Re)starts the watch so that every follower gets a complete list first: of whole objects
    /// when a cache reads the resource, else of metadata only. `register` adds the new follower
    /// in the same step that retires the running watch, so the follower sees only the new
    /// watch's events, starting with its list.
    fn start<C: Cluster>(self: &Arc<Self>, cluster: &C, register: impl FnOnce()) {
        let mut task = lock(&self.task);
        let generation = {
            let mut g = lock(&self.generation);
            register();
            *g += 1;
            *g
        };
        if let Some(t) = task.take() {
            t.abort();
        }
        let source = Arc::downgrade(self);
        let gr = self.resource.group_resource();
        *task = Some(if self.sinks().is_empty() {
            tokio::spawn(Self::follow(
                cluster.watch(Arc::clone(&self.resource)),
                source,
                gr,
                generation,
                |source, e| feed_meta(&source.metas(), e),
            ))
        } else {
            tokio::spawn(Self::follow(
                cluster.watch_objects(Arc::clone(&self.resource)),
                source,
                gr,
                generation,
                |source, e| {
                    for sink in source.sinks().iter() {
                        sink.event(&e);
                    }
                    let metas = source.metas();
                    if !metas.is_empty() {
                        feed_meta(&metas, meta_event(&e));
                    }
                },
            ))
        });
    }

    async fn follow<T>(
        mut stream: BoxStream<'static, kgc_client::Result<ObjectEvent<T>>>,
        source: Weak<Source>,
        gr: GroupResource,
        generation: u64,
        feed: impl Fn(&Source, ObjectEvent<T>),
    ) {
        while let Some(event) = stream.next().await {
            let Some(source) = source.upgrade() else {
                return;
            };
            match event {
                Ok(e) => {
                    let current = lock(&source.generation);
                    if *current != generation {
                        // A newer watch has replaced this one.
                        return;
                    }
                    feed(&source, e);
                }
                // The watch re-opens itself, paced and logged once per failure by the
                // cluster (`kgc_client::Remote` backs off as client-go's reflector does).
                Err(e) => tracing::debug!(resource = %gr, error = %e, "watch error"),
            }
        }
    }
}

/// The metadata of a whole-object event.
fn meta_event(e: &ObjectEvent<Value>) -> ObjectEvent<ObjectMeta> {
    match e {
        ObjectEvent::Init => ObjectEvent::Init,
        ObjectEvent::InitApply(o) => ObjectEvent::InitApply(ObjectMeta::from_object(o)),
        ObjectEvent::InitDone => ObjectEvent::InitDone,
        ObjectEvent::Apply(o) => ObjectEvent::Apply(ObjectMeta::from_object(o)),
        ObjectEvent::Delete(o) => ObjectEvent::Delete(ObjectMeta::from_object(o)),
        ObjectEvent::Bookmark(rv) => ObjectEvent::Bookmark(*rv),
    }
}

/// Hands `event` to every metadata follower, moving it to the last (usually the only) one.
fn feed_meta(metas: &[(u64, MetaHandler)], event: ObjectEvent<ObjectMeta>) {
    if let Some(((_, last), rest)) = metas.split_last() {
        for (_, h) in rest {
            h(event.clone());
        }
        last(event);
    }
}

/// A metadata follower of one resource's watch ([`Informers::subscribe_meta`]); dropping it
/// stops following, and stops the watch when nothing else follows the resource.
pub struct Subscription {
    source: Arc<Source>,
    id: u64,
    sources: Weak<Sources>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let idle = {
            let mut metas = self
                .source
                .metas
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let next: Vec<_> = metas
                .iter()
                .filter(|(id, _)| *id != self.id)
                .cloned()
                .collect();
            *metas = next.into();
            metas.is_empty() && lock(&self.source.caches).is_empty()
        };
        if !idle {
            return;
        }
        if let Some(t) = lock(&self.source.task).take() {
            t.abort();
        }
        if let Some(sources) = self.sources.upgrade() {
            let mut sources = lock(&sources);
            let gr = self.source.resource.group_resource();
            if sources
                .get(&gr)
                .is_some_and(|s| Arc::ptr_eq(s, &self.source))
            {
                sources.remove(&gr);
            }
        }
    }
}

/// A watch runs while its informers or one of its caches are held.
impl Drop for Source {
    fn drop(&mut self) {
        if let Some(t) = lock(&self.task).take() {
            t.abort();
        }
    }
}

struct CacheInner<V> {
    items: RwLock<HashMap<Key, V>>,
    /// The list being received, until `InitDone` swaps it in.
    fresh: Mutex<Option<HashMap<Key, V>>>,
    /// Replaced, not changed, on registration: an event calls the list it loaded.
    handlers: Mutex<Arc<[Handler<V>]>>,
    delete_handlers: Mutex<Arc<[DeleteHandler<V>]>>,
    synced: watch::Sender<bool>,
}

impl<V> Default for CacheInner<V> {
    fn default() -> Self {
        Self {
            items: RwLock::default(),
            fresh: Mutex::default(),
            handlers: Mutex::new(Arc::new([])),
            delete_handlers: Mutex::new(Arc::new([])),
            synced: watch::Sender::new(false),
        }
    }
}

impl<V: View> CacheInner<V> {
    fn notify(&self, key: &Key, view: Option<&V>) {
        let handlers = Arc::clone(&lock(&self.handlers));
        for h in handlers.iter() {
            h(key, view);
        }
    }

    /// Tells every handler the view `key` now has in the cache, under the read lock only.
    fn notify_cached(&self, key: &Key) {
        let map = self.items.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = map.get(key) {
            self.notify(key, Some(v));
        }
    }

    /// Tells every handler that `key` left the cache, its last view being `old`.
    fn notify_gone(&self, key: &Key, old: Option<V>) {
        if let Some(old) = old {
            let handlers = Arc::clone(&lock(&self.delete_handlers));
            for h in handlers.iter() {
                h(key, &old);
            }
        }
        self.notify(key, None);
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Key, V>> {
        self.items.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<V: View> Sink for CacheInner<V> {
    fn event(&self, event: &ObjectEvent<Value>) {
        match event {
            ObjectEvent::Init => *lock(&self.fresh) = Some(HashMap::new()),
            ObjectEvent::InitApply(o) => {
                if let (Some(map), Some(v)) = (lock(&self.fresh).as_mut(), V::view(o)) {
                    map.insert(key_of(o), v);
                }
            }
            ObjectEvent::InitDone => {
                // The end of a list this cache did not see begin: not a complete list.
                let Some(fresh) = lock(&self.fresh).take() else {
                    return;
                };
                // The handlers run after the write lock is released (see [`Handler`]); this
                // task is the cache's only writer, so what they read is what was swapped in.
                let gone: Vec<(Key, V)> = {
                    let mut map = self.write();
                    let old = std::mem::replace(&mut *map, fresh);
                    old.into_iter()
                        .filter(|(k, _)| !map.contains_key(k))
                        .collect()
                };
                for (k, v) in gone {
                    self.notify_gone(&k, Some(v));
                }
                let map = self.items.read().unwrap_or_else(PoisonError::into_inner);
                for (k, v) in map.iter() {
                    self.notify(k, Some(v));
                }
                drop(map);
                self.synced.send_replace(true);
            }
            ObjectEvent::Apply(o) => {
                let key = key_of(o);
                match V::view(o) {
                    Some(v) => {
                        self.write().insert(key.clone(), v);
                        self.notify_cached(&key);
                    }
                    None => {
                        let old = self.write().remove(&key);
                        self.notify_gone(&key, old);
                    }
                }
            }
            ObjectEvent::Delete(o) => {
                let key = key_of(o);
                let old = self.write().remove(&key);
                self.notify_gone(&key, old);
            }
            // A cache of one resource has no other watch to keep in step with.
            ObjectEvent::Bookmark(_) => {}
        }
    }
}

/// A shared cache of one resource (cheap to clone).
pub struct Cache<V> {
    inner: Arc<CacheInner<V>>,
    _source: Arc<Source>,
}

impl<V> Clone for Cache<V> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _source: Arc::clone(&self._source),
        }
    }
}

impl<V: View> Cache<V> {
    /// Registers a handler of every change from now on; it first sees every cached object.
    pub fn on_change(&self, handler: Handler<V>) {
        // The read lock keeps changes out until the handler is registered, so it misses
        // nothing; a change made just before may reach it twice, never out of order.
        let map = self
            .inner
            .items
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for (k, v) in map.iter() {
            handler(k, Some(v));
        }
        let mut handlers = lock(&self.inner.handlers);
        *handlers = handlers.iter().cloned().chain([handler]).collect();
    }

    /// Registers a handler of every object that leaves the cache from now on, with its last
    /// view.
    pub fn on_delete(&self, handler: DeleteHandler<V>) {
        let mut handlers = lock(&self.inner.delete_handlers);
        *handlers = handlers.iter().cloned().chain([handler]).collect();
    }

    /// Waits for the first complete list.
    pub async fn synced(&self) {
        let mut s = self.inner.synced.subscribe();
        let _ = s.wait_for(|v| *v).await;
    }

    /// Runs `f` over the cache (under its read lock: keep it short and do not await).
    pub fn read<R>(&self, f: impl FnOnce(&HashMap<Key, V>) -> R) -> R {
        f(&self
            .inner
            .items
            .read()
            .unwrap_or_else(PoisonError::into_inner))
    }

    pub fn len(&self) -> usize {
        self.read(HashMap::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V: View + Clone> Cache<V> {
    /// A copy of one cached view.
    pub fn get(&self, key: &Key) -> Option<V> {
        self.read(|m| m.get(key).cloned())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::stream::BoxStream;
    use kgc_client::Deleted;
    use kgc_inprocess::InProcess;
    use kgc_meta::DeleteOptions;
    use kgc_store::Store;
    use serde_json::json;

    use super::*;

    /// The in-process cluster, counting the watches opened through it.
    #[derive(Clone)]
    struct Counting {
        inner: InProcess,
        watches: Arc<AtomicUsize>,
        /// Of which metadata-only.
        meta_watches: Arc<AtomicUsize>,
    }

    impl Cluster for Counting {
        async fn resources(&self) -> kgc_client::Result<Vec<Arc<ResourceInfo>>> {
            self.inner.resources().await
        }
        fn watch(
            &self,
            r: Arc<ResourceInfo>,
        ) -> BoxStream<'static, kgc_client::Result<ObjectEvent<ObjectMeta>>> {
            self.meta_watches.fetch_add(1, Ordering::SeqCst);
            self.watches.fetch_add(1, Ordering::SeqCst);
            self.inner.watch(r)
        }
        async fn get(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
        ) -> kgc_client::Result<Option<ObjectMeta>> {
            self.inner.get(r, ns, n).await
        }
        async fn delete(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
            o: &DeleteOptions,
        ) -> kgc_client::Result<Deleted> {
            self.inner.delete(r, ns, n, o).await
        }
        async fn remove_owner_references(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
            uid: &str,
            owners: &[String],
        ) -> kgc_client::Result<()> {
            self.inner
                .remove_owner_references(r, ns, n, uid, owners)
                .await
        }
        async fn unblock_owner_references(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
            uid: &str,
        ) -> kgc_client::Result<()> {
            self.inner.unblock_owner_references(r, ns, n, uid).await
        }
        async fn remove_finalizer(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
            uid: &str,
            f: &str,
        ) -> kgc_client::Result<()> {
            self.inner.remove_finalizer(r, ns, n, uid, f).await
        }
        async fn create_event(&self, e: Value) -> kgc_client::Result<()> {
            self.inner.create_event(e).await
        }
        async fn patch_event(&self, ns: &str, n: &str, p: Value) -> kgc_client::Result<()> {
            self.inner.patch_event(ns, n, p).await
        }
        fn watch_objects(
            &self,
            r: Arc<ResourceInfo>,
        ) -> BoxStream<'static, kgc_client::Result<ObjectEvent>> {
            self.watches.fetch_add(1, Ordering::SeqCst);
            self.inner.watch_objects(r)
        }
        async fn get_object(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
        ) -> kgc_client::Result<Option<Value>> {
            self.inner.get_object(r, ns, n).await
        }
        async fn replace_subresource(
            &self,
            r: &ResourceInfo,
            ns: &str,
            n: &str,
            sub: &str,
            o: Value,
        ) -> kgc_client::Result<Value> {
            self.inner.replace_subresource(r, ns, n, sub, o).await
        }
        async fn list(&self, r: &ResourceInfo, ns: &str) -> kgc_client::Result<Vec<ObjectMeta>> {
            self.inner.list(r, ns).await
        }
        async fn delete_collection(
            &self,
            r: &ResourceInfo,
            ns: &str,
            o: &DeleteOptions,
        ) -> kgc_client::Result<()> {
            self.inner.delete_collection(r, ns, o).await
        }
    }

    /// A view keeping the name only.
    #[derive(Clone, Debug, PartialEq)]
    struct Name(String);

    impl View for Name {
        fn view(obj: &Value) -> Option<Self> {
            Some(Name(obj["metadata"]["name"].as_str()?.to_owned()))
        }
    }

    async fn cluster() -> (Counting, Arc<ResourceInfo>) {
        let store = Store::in_memory().await.unwrap();
        let cm = Arc::clone(store.catalog().get("", "v1", "configmaps").unwrap());
        let cluster = Counting {
            inner: InProcess::new(store),
            watches: Arc::default(),
            meta_watches: Arc::default(),
        };
        (cluster, cm)
    }

    async fn create(c: &Counting, cm: &ResourceInfo, name: &str) {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}});
        c.inner
            .store()
            .create(cm, "default", obj, false)
            .await
            .unwrap();
    }

    async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !f() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn one_watch_per_resource_however_many_readers() {
        let (cluster, cm) = cluster().await;
        create(&cluster, &cm, "before").await;
        let informers = Informers::new(cluster.clone());
        let names = informers.cache::<Name>(Arc::clone(&cm));
        let same = informers.cache::<Name>(Arc::clone(&cm));
        names.synced().await;
        let whole = informers.cache::<Value>(Arc::clone(&cm));
        whole.synced().await;
        assert_eq!(informers.watches(), 1);
        // One watch per resource; the view added later re-listed that same watch once.
        assert_eq!(cluster.watches.load(Ordering::SeqCst), 2);
        create(&cluster, &cm, "after").await;
        let key = ("default".to_owned(), "after".to_owned());
        eventually("every reader sees the new object", || {
            same.get(&key).is_some() && whole.read(|m| m.contains_key(&key))
        })
        .await;
        assert_eq!(names.get(&key), Some(Name("after".into())));
        assert_eq!(names.len(), 2);
    }

    #[tokio::test]
    async fn a_late_handler_sees_the_content_then_every_change() {
        let (cluster, cm) = cluster().await;
        create(&cluster, &cm, "a").await;
        let informers = Informers::new(cluster.clone());
        let cache = informers.cache::<Name>(cm.clone());
        cache.synced().await;
        let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
        let s = Arc::clone(&seen);
        cache.on_change(Arc::new(move |k, v| {
            lock(&s).push((k.1.clone(), v.is_some()))
        }));
        create(&cluster, &cm, "b").await;
        let opts = DeleteOptions::default();
        cluster.delete(&cm, "default", "a", &opts).await.unwrap();
        eventually("the delete is seen", || lock(&seen).len() == 3).await;
        assert_eq!(
            *lock(&seen),
            [("a".into(), true), ("b".into(), true), ("a".into(), false)]
        );
    }

    #[tokio::test]
    async fn the_watch_stops_when_nothing_holds_it() {
        let (cluster, cm) = cluster().await;
        let informers = Informers::new(cluster.clone());
        let cache = informers.cache::<Name>(cm.clone());
        cache.synced().await;
        let source = Arc::downgrade(&cache._source);
        drop(informers);
        assert!(source.upgrade().is_some(), "the cache still holds it");
        drop(cache);
        assert!(source.upgrade().is_none());
    }

    /// A metadata follower that records what it saw, as the GC's monitors follow a resource.
    fn recorder() -> (MetaHandler, Arc<Mutex<Vec<String>>>) {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = Arc::clone(&seen);
        let handler: MetaHandler = Arc::new(move |e| {
            let line = match e {
                ObjectEvent::Init => "init".to_owned(),
                ObjectEvent::InitApply(m) => format!("list {}", m.name),
                ObjectEvent::InitDone => "listed".to_owned(),
                ObjectEvent::Apply(m) => format!("apply {}", m.name),
                ObjectEvent::Delete(m) => format!("delete {}", m.name),
                ObjectEvent::Bookmark(_) => return,
            };
            lock(&s).push(line);
        });
        (handler, seen)
    }

    #[tokio::test]
    async fn a_metadata_follower_alone_watches_metadata_and_stops_the_watch_when_it_goes() {
        let (cluster, cm) = cluster().await;
        create(&cluster, &cm, "a").await;
        let informers = Informers::new(cluster.clone());
        let (handler, seen) = recorder();
        let sub = informers.subscribe_meta(Arc::clone(&cm), handler);
        eventually("the list", || lock(&seen).len() == 3).await;
        create(&cluster, &cm, "b").await;
        eventually("the change", || lock(&seen).len() == 4).await;
        assert_eq!(*lock(&seen), ["init", "list a", "listed", "apply b"]);
        assert_eq!(cluster.meta_watches.load(Ordering::SeqCst), 1);
        assert_eq!(informers.watches(), 1);
        drop(sub);
        assert_eq!(
            informers.watches(),
            0,
            "nothing follows the resource any more"
        );
    }

    #[tokio::test]
    async fn a_metadata_follower_shares_the_watch_of_a_cache() {
        let (cluster, cm) = cluster().await;
        create(&cluster, &cm, "a").await;
        let informers = Informers::new(cluster.clone());
        let names = informers.cache::<Name>(Arc::clone(&cm));
        names.synced().await;
        let (handler, seen) = recorder();
        let sub = informers.subscribe_meta(Arc::clone(&cm), handler);
        eventually("the follower's list", || lock(&seen).len() == 3).await;
        create(&cluster, &cm, "b").await;
        eventually("the change", || lock(&seen).len() == 4).await;
        assert_eq!(*lock(&seen), ["init", "list a", "listed", "apply b"]);
        assert_eq!(informers.watches(), 1);
        assert_eq!(
            cluster.meta_watches.load(Ordering::SeqCst),
            0,
            "one watch of whole objects"
        );
        drop(sub);
        assert_eq!(informers.watches(), 1, "the cache still reads it");
        let key = ("default".to_owned(), "b".to_owned());
        assert_eq!(names.get(&key), Some(Name("b".into())));
    }

    #[tokio::test]
    async fn a_delete_handler_gets_the_last_view() {
        let (cluster, cm) = cluster().await;
        create(&cluster, &cm, "a").await;
        let informers = Informers::new(cluster.clone());
        let cache = informers.cache::<Name>(cm.clone());
        cache.synced().await;
        let gone: Arc<Mutex<Vec<Name>>> = Arc::default();
        let g = Arc::clone(&gone);
        cache.on_delete(Arc::new(move |_, last: &Name| lock(&g).push(last.clone())));
        let opts = DeleteOptions::default();
        cluster.delete(&cm, "default", "a", &opts).await.unwrap();
        eventually("the delete is seen", || !lock(&gone).is_empty()).await;
        assert_eq!(*lock(&gone), [Name("a".into())]);
    }
}
