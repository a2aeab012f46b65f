//! A cache of one resource fed by a whole-object watch, like client-go's informer, but holding
//! only the few fields a collector judges by (a `view` of each object). PodGC keeps 100,000 pods
//! in a few megabytes this way, and its pass reads the cache instead of listing the cluster.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kgc_client::{Cluster, ObjectEvent};
use kgc_meta::ResourceInfo;
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

/// Called for every change the watch delivers: the key and the new view (`None`: deleted, or
/// the object no longer has a valid view).
pub type Handler<T> = Box<dyn Fn(&Key, Option<&T>) + Send + Sync>;

/// A running cache; stops its watch when the last clone is dropped.
pub struct Informer<T> {
    items: Arc<RwLock<HashMap<Key, T>>>,
    synced: watch::Receiver<bool>,
    _task: Arc<AbortOnDrop>,
}

impl<T> Clone for Informer<T> {
    fn clone(&self) -> Self {
        Self {
            items: Arc::clone(&self.items),
            synced: self.synced.clone(),
            _task: Arc::clone(&self._task),
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T: Send + Sync + 'static> Informer<T> {
    /// Starts watching `resource`. `view` turns an object into what the collector keeps; it
    /// returns `None` for an object it cannot judge (malformed), which is then not cached (and
    /// so never acted on). `handler` sees every change.
    pub fn start<C: Cluster>(
        cluster: &C,
        resource: Arc<ResourceInfo>,
        view: fn(&Value) -> Option<T>,
        handler: Option<Handler<T>>,
    ) -> Self {
        let items: Arc<RwLock<HashMap<Key, T>>> = Arc::default();
        let (synced_tx, synced) = watch::channel(false);
        let mut stream = cluster.watch_objects(Arc::clone(&resource));
        let cache = Arc::clone(&items);
        let task = tokio::spawn(async move {
            let notify = |key: &Key, v: Option<&T>| {
                if let Some(h) = &handler {
                    h(key, v);
                }
            };
            // The list being received, until `InitDone` swaps it in.
            let mut fresh: Option<HashMap<Key, T>> = None;
            while let Some(event) = stream.next().await {
                match event {
                    Ok(ObjectEvent::Init) => fresh = Some(HashMap::new()),
                    Ok(ObjectEvent::InitApply(o)) => {
                        if let (Some(map), Some(v)) = (fresh.as_mut(), view(&o)) {
                            map.insert(key_of(&o), v);
                        }
                    }
                    Ok(ObjectEvent::InitDone) => {
                        let fresh = fresh.take().unwrap_or_default();
                        let gone: Vec<Key> = {
                            let mut map = cache.write().unwrap_or_else(|p| p.into_inner());
                            let gone = map
                                .keys()
                                .filter(|k| !fresh.contains_key(*k))
                                .cloned()
                                .collect();
                            *map = fresh;
                            gone
                        };
                        for k in &gone {
                            notify(k, None);
                        }
                        let map = cache.read().unwrap_or_else(|p| p.into_inner());
                        for (k, v) in map.iter() {
                            notify(k, Some(v));
                        }
                        drop(map);
                        let _ = synced_tx.send(true);
                    }
                    Ok(ObjectEvent::Apply(o)) => {
                        let key = key_of(&o);
                        let mut map = cache.write().unwrap_or_else(|p| p.into_inner());
                        match view(&o) {
                            Some(v) => {
                                notify(&key, Some(&v));
                                map.insert(key, v);
                            }
                            None => {
                                map.remove(&key);
                                notify(&key, None);
                            }
                        }
                    }
                    Ok(ObjectEvent::Delete(o)) => {
                        let key = key_of(&o);
                        cache
                            .write()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&key);
                        notify(&key, None);
                    }
                    // A cache of one resource has no other watch to keep in step with.
                    Ok(ObjectEvent::Bookmark(_)) => {}
                    // The watch re-opens itself, paced and logged by the cluster
                    // (`kgc_client::Remote` backs off as client-go's reflector does).
                    Err(e) => {
                        tracing::debug!(resource = %resource.group_resource(), error = %e, "watch error");
                    }
                }
            }
        });
        Self {
            items,
            synced,
            _task: Arc::new(AbortOnDrop(task)),
        }
    }

    /// Waits for the first complete list.
    pub async fn synced(&self) {
        let mut s = self.synced.clone();
        let _ = s.wait_for(|v| *v).await;
    }

    /// Runs `f` over the cache (under its read lock: keep it short and do not await).
    pub fn read<R>(&self, f: impl FnOnce(&HashMap<Key, T>) -> R) -> R {
        f(&self.items.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn len(&self) -> usize {
        self.read(HashMap::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Clone + Send + Sync + 'static> Informer<T> {
    /// A copy of one cached view.
    pub fn get(&self, key: &Key) -> Option<T> {
        self.read(|m| m.get(key).cloned())
    }
}
