//! [`Cluster`] straight against the embedded store: no HTTP, no serialization round trip, and
//! every read-modify-write is one atomic store update.

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use kgc_meta::{DeleteOptions, ObjectMeta, Reason, ResourceInfo, Status};
use kgc_store::{EventType, Store, StoredObject, WatchEvent, WatchFilter, Watcher};
use serde_json::Value;

use crate::{Cluster, Deleted, Error, MetaEvent, ObjectEvent, Result};

/// The embedded store as a [`Cluster`].
#[derive(Clone)]
pub struct InProcess {
    store: Store,
}

impl InProcess {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs `change` on the object whose uid is `uid`, as one store update; a no-op change
    /// writes nothing.
    async fn modify(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        change: impl FnOnce(&mut serde_json::Map<String, Value>) + Send,
    ) -> Result<()> {
        let gr = resource.group_resource();
        let uid = uid.to_owned();
        self.store
            .update(resource, namespace, name, None, false, move |mut obj| {
                let current = obj["metadata"]["uid"].as_str().unwrap_or_default();
                if !uid.is_empty() && current != uid {
                    return Err(Status::conflict(
                        &gr,
                        name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {current}"
                        ),
                    ));
                }
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    change(meta);
                }
                Ok(obj)
            })
            .await
            .map(|_| ())
            .map_err(store_error)
    }
}

fn store_error(e: kgc_store::Error) -> Error {
    Error::Api(e.status())
}

fn meta(o: &StoredObject) -> ObjectMeta {
    ObjectMeta::from_object(&o.value())
}

/// Drains the snapshot a fresh watcher starts with.
fn snapshot(watcher: &mut Watcher) -> Vec<ObjectMeta> {
    snapshot_with(watcher, meta)
}

fn snapshot_with<T>(watcher: &mut Watcher, view: fn(&StoredObject) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(watcher.buffered());
    for _ in 0..watcher.buffered() {
        if let Some(WatchEvent::Event(_, o)) = watcher.try_next() {
            out.push(view(&o));
        }
    }
    out
}

fn whole(o: &StoredObject) -> Value {
    o.value()
}

impl Cluster for InProcess {
    async fn resources(&self) -> Result<Vec<Arc<ResourceInfo>>> {
        Ok(self.store.catalog().resources().cloned().collect())
    }

    fn watch(&self, resource: Arc<ResourceInfo>) -> BoxStream<'static, Result<MetaEvent>> {
        let store = self.store.clone();
        let filter = WatchFilter::new(resource.group_resource());
        let state = (store, filter, None::<Watcher>);
        stream::unfold(state, |(store, filter, watcher)| async move {
            let mut watcher = match watcher {
                Some(w) => w,
                None => {
                    let mut w = store.watch(filter.clone(), None);
                    let items = snapshot(&mut w);
                    return Some((Ok(MetaEvent::Resync(items)), (store, filter, Some(w))));
                }
            };
            match watcher.next().await {
                WatchEvent::Event(EventType::Deleted, o) => Some((
                    Ok(MetaEvent::Delete(meta(&o))),
                    (store, filter, Some(watcher)),
                )),
                WatchEvent::Event(_, o) => Some((
                    Ok(MetaEvent::Apply(meta(&o))),
                    (store, filter, Some(watcher)),
                )),
                WatchEvent::Expired { .. } => {
                    let mut w = store.watch(filter.clone(), None);
                    let items = snapshot(&mut w);
                    Some((Ok(MetaEvent::Resync(items)), (store, filter, Some(w))))
                }
                WatchEvent::Closed => None,
            }
        })
        .boxed()
    }

    async fn get(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectMeta>> {
        let ns = if resource.namespaced() { namespace } else { "" };
        Ok(self
            .store
            .get(&resource.group_resource(), ns, name)
            .map(|o| meta(&o)))
    }

    async fn delete(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted> {
        let d = self
            .store
            .delete(resource, namespace, name, options)
            .await
            .map_err(store_error)?;
        Ok(if d.gone {
            Deleted::Gone
        } else {
            Deleted::Pending(meta(&d.object))
        })
    }

    async fn remove_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        owners: &[String],
    ) -> Result<()> {
        let owners = owners.to_vec();
        self.modify(resource, namespace, name, uid, move |meta| {
            if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
                refs.retain(|r| !owners.iter().any(|o| r["uid"].as_str() == Some(o.as_str())));
                if refs.is_empty() {
                    meta.remove("ownerReferences");
                }
            }
        })
        .await
    }

    async fn unblock_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<()> {
        self.modify(resource, namespace, name, uid, |meta| {
            if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
                for r in refs.iter_mut() {
                    if r["blockOwnerDeletion"] == Value::Bool(true) {
                        r["blockOwnerDeletion"] = Value::Bool(false);
                    }
                }
            }
        })
        .await
    }

    async fn remove_finalizer(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        finalizer: &str,
    ) -> Result<()> {
        let finalizer = finalizer.to_owned();
        let result = self
            .modify(resource, namespace, name, uid, move |meta| {
                if let Some(Value::Array(fins)) = meta.get_mut("finalizers") {
                    fins.retain(|f| f.as_str() != Some(finalizer.as_str()));
                    if fins.is_empty() {
                        meta.remove("finalizers");
                    }
                }
            })
            .await;
        match result {
            Err(e) if e.is(Reason::NotFound) => Ok(()),
            other => other,
        }
    }

    async fn create_event(&self, event: Value) -> Result<()> {
        let info = self
            .store
            .catalog()
            .get("", "v1", "events")
            .cloned()
            .ok_or_else(|| Error::Api(Status::no_such_resource()))?;
        let namespace = event["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        self.store
            .create(&info, &namespace, event, false)
            .await
            .map(|_| ())
            .map_err(store_error)
    }

    fn watch_objects(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent>> {
        let store = self.store.clone();
        let filter = WatchFilter::new(resource.group_resource());
        let state = (store, filter, None::<Watcher>);
        stream::unfold(state, |(store, filter, watcher)| async move {
            let mut watcher = match watcher {
                Some(w) => w,
                None => {
                    let mut w = store.watch(filter.clone(), None);
                    let items = snapshot_with(&mut w, whole);
                    return Some((Ok(ObjectEvent::Resync(items)), (store, filter, Some(w))));
                }
            };
            let event = match watcher.next().await {
                WatchEvent::Event(EventType::Deleted, o) => ObjectEvent::Delete(o.value()),
                WatchEvent::Event(_, o) => ObjectEvent::Apply(o.value()),
                WatchEvent::Expired { .. } => {
                    watcher = store.watch(filter.clone(), None);
                    ObjectEvent::Resync(snapshot_with(&mut watcher, whole))
                }
                WatchEvent::Closed => return None,
            };
            Some((Ok(event), (store, filter, Some(watcher))))
        })
        .boxed()
    }

    async fn get_object(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let ns = if resource.namespaced() { namespace } else { "" };
        Ok(self
            .store
            .get(&resource.group_resource(), ns, name)
            .map(|o| o.value()))
    }

    async fn replace_status(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        object: Value,
    ) -> Result<Value> {
        self.store
            .update(
                resource,
                namespace,
                name,
                Some("status"),
                false,
                move |_| Ok(object),
            )
            .await
            .map(|u| u.object().value())
            .map_err(store_error)
    }
}
