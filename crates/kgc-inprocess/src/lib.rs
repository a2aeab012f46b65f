//! [`Cluster`] straight against the embedded store: no HTTP, no serialization round trip, and
//! every read-modify-write is one atomic store update.
//!
//! A crate of its own so that kgc-client (the interface and its remote side) does not link the
//! store: `kgc controller`, `kgc tree` and a collector against a real cluster need no SQLite.
#![forbid(unsafe_code)]

use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use kgc_meta::{
    DeleteOptions, GroupResource, ObjectMeta, OwnerReference, Reason, ResourceInfo, Status,
};
use kgc_store::{EventType, ListOptions, Store, StoredObject, WatchEvent, WatchFilter, Watcher};
use serde_json::Value;

use kgc_client::{Cluster, Deleted, Error, Fence, ObjectEvent, Result};

/// The embedded store as a [`Cluster`].
#[derive(Clone)]
pub struct InProcess {
    store: Store,
    /// Checked before every write: a leader's term ([`InProcess::fenced`]).
    fence: Fence,
}

impl InProcess {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            fence: Fence::open(),
        }
    }

    /// Writes only while `fence` is open: the cluster of one leadership term, whose
    /// collectors must write nothing once the lease may have passed to another replica.
    pub fn fenced(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// core/v1 Events, which collectors record.
    fn events(&self) -> Result<Arc<ResourceInfo>> {
        self.store
            .catalog()
            .get("", "v1", "events")
            .cloned()
            .ok_or_else(|| Error::Api(Status::no_such_resource()))
    }

    /// Runs `change` on the object whose uid is `uid`, as one store update; a no-op change
    /// writes nothing.
    async fn modify(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        mut change: impl FnMut(&mut serde_json::Map<String, Value>) + Send,
    ) -> Result<()> {
        let gr = resource.group_resource();
        let uid = uid.to_owned();
        // Runs again on the fresh object when another replica changed it first.
        let retried = move |mut obj: Value| {
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
        };
        let update = self
            .store
            .update_retrying(resource, namespace, name, None, false, retried);
        self.guarded(update).await?.map(|_| ()).map_err(store_error)
    }

    /// Runs `write` (calls to the store) once the fence lets it through, each change guarded in
    /// the store by the lease the fence names, if it names one (`kgc_store::fenced`): a write
    /// already past the fence when the process was paused is still refused once another
    /// replica holds the lease.
    async fn guarded<T>(&self, write: impl Future<Output = T>) -> Result<T> {
        self.fence.check()?;
        Ok(match self.fence.lease() {
            Some(lease) => {
                let lease = kgc_store::LeaseFence {
                    namespace: lease.namespace.clone(),
                    name: lease.name.clone(),
                    holder: lease.identity.clone(),
                };
                kgc_store::fenced(lease, write).await
            }
            None => write.await,
        })
    }
}

fn store_error(e: kgc_store::Error) -> Error {
    match e {
        kgc_store::Error::Fenced(_) => Error::Fenced,
        e => Error::Api(e.status()),
    }
}

/// An object's metadata, read straight from its stored JSON: only the fields collectors use are
/// built, the rest of the object is skipped without building a `Value` (which was most of the
/// cost of a watch event). A field of an unexpected type falls back to the tolerant reader.
fn meta(o: &StoredObject) -> ObjectMeta {
    meta_from_text(&o.raw)
}

fn meta_from_text(raw: &str) -> ObjectMeta {
    match serde_json::from_str::<Doc>(raw) {
        Ok(Doc { metadata: m }) => ObjectMeta {
            namespace: m.namespace,
            name: m.name,
            uid: m.uid,
            resource_version: m.resource_version,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            owner_references: m
                .owner_references
                .iter()
                .map(OwnerReference::from_json)
                .collect(),
        },
        Err(_) => ObjectMeta::from_object(&serde_json::from_str(raw).unwrap_or(Value::Null)),
    }
}

/// The part of a stored object [`meta`] reads.
#[derive(serde::Deserialize)]
struct Doc {
    #[serde(default)]
    metadata: MetaDoc,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct MetaDoc {
    namespace: String,
    name: String,
    uid: String,
    resource_version: String,
    deletion_timestamp: Option<String>,
    finalizers: Vec<String>,
    /// Read by the tolerant reader, entry by entry (they are few).
    owner_references: Vec<Value>,
}

/// A deleted object as the metadata watch reports it: its identity and last resourceVersion,
/// from the fields the store indexes, without reading the object's text. A deletion is mostly
/// what a cascade produces, the store's DELETE of a kind without delete-time rules never parses
/// the object, and the collector needs only the identity of what went (upstream's graph builder
/// also reads the owners of a deleted object from its graph node, not from the event).
fn deleted_meta(o: &StoredObject) -> ObjectMeta {
    ObjectMeta {
        namespace: o.namespace.clone(),
        name: o.name.clone(),
        uid: o.uid.clone(),
        resource_version: o.resource_version.to_string(),
        ..ObjectMeta::default()
    }
}

/// An object as caches keep it (`Cluster::watch_objects`): parsed without its managedFields.
fn cached(o: &StoredObject) -> Value {
    kgc_meta::trim::parse_without_managed_fields(&o.raw).unwrap_or(Value::Null)
}

/// A watch of one resource, each object presented by `view` (a deleted one by `deleted`), that
/// starts with a list and re-lists when it expires. The list is the watcher's snapshot (shared
/// `Arc`s), handed out one object at a time.
fn watch_as<T: Send + 'static>(
    store: Store,
    resource: &ResourceInfo,
    view: fn(&StoredObject) -> T,
    deleted: fn(&StoredObject) -> T,
) -> BoxStream<'static, Result<ObjectEvent<T>>> {
    struct State {
        store: Store,
        filter: WatchFilter,
        watcher: Option<Watcher>,
        /// Snapshot objects still to hand out; `Some(0)`: the list is done, say so.
        listing: Option<usize>,
        /// The last bookmark handed out.
        bookmark: u64,
    }
    let state = State {
        store,
        filter: WatchFilter::new(resource.group_resource()),
        watcher: None,
        listing: None,
        bookmark: 0,
    };
    stream::unfold(state, move |mut st| async move {
        loop {
            let Some(w) = st.watcher.as_mut() else {
                let w = st.store.watch(st.filter.clone(), None);
                st.listing = Some(w.buffered());
                st.watcher = Some(w);
                return Some((Ok(ObjectEvent::Init), st));
            };
            match st.listing {
                Some(0) => {
                    st.listing = None;
                    return Some((Ok(ObjectEvent::InitDone), st));
                }
                Some(n) => {
                    st.listing = Some(n - 1);
                    if let Some(WatchEvent::Event(_, o)) = w.try_next() {
                        return Some((Ok(ObjectEvent::InitApply(view(&o))), st));
                    }
                    continue;
                }
                None => {}
            }
            // Every event the last scan of the log queued has been handed out: say how far
            // that scan went, so that a consumer of several watches can tell this one has
            // nothing older left to deliver. After every scan, not only when idle, so that a
            // busy resource's watch still moves on.
            if w.buffered() == 0 && st.bookmark < w.resource_version() {
                st.bookmark = w.resource_version();
                return Some((Ok(ObjectEvent::Bookmark(st.bookmark)), st));
            }
            let ready = match w.try_next() {
                Some(e) => e,
                None => w.next().await,
            };
            let event = match ready {
                WatchEvent::Event(EventType::Deleted, o) => ObjectEvent::Delete(deleted(&o)),
                WatchEvent::Event(_, o) => ObjectEvent::Apply(view(&o)),
                WatchEvent::Expired { .. } => {
                    st.watcher = None;
                    continue;
                }
                WatchEvent::Closed => return None,
            };
            return Some((Ok(event), st));
        }
    })
    .boxed()
}

impl Cluster for InProcess {
    async fn resources(&self) -> Result<Vec<Arc<ResourceInfo>>> {
        Ok(self.store.catalog().resources().cloned().collect())
    }

    /// The store's catalog edits: a CRD's kind is served from the commit that establishes it
    /// and gone from the commit that deletes it, and discovery follows at once. The first
    /// wake-up is immediate: an edit between the discovery that found `served` and this
    /// subscription is not missed.
    fn resource_changes(&self, _served: &[Arc<ResourceInfo>]) -> BoxStream<'static, ()> {
        let mut edits = self.store.catalog_edits();
        edits.mark_changed();
        stream::unfold(edits, |mut edits| async move {
            edits.changed().await.ok()?;
            Some(((), edits))
        })
        .boxed()
    }

    fn watch(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent<ObjectMeta>>> {
        watch_as(self.store.clone(), &resource, meta, deleted_meta)
    }

    fn last_change(&self, gr: &GroupResource) -> Option<u64> {
        self.store.last_change(gr)
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
            .guarded(self.store.delete(resource, namespace, name, options))
            .await?
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
        let info = self.events()?;
        let namespace = event["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        self.guarded(self.store.create(&info, &namespace, event, false))
            .await?
            .map(|_| ())
            .map_err(store_error)
    }

    async fn patch_event(&self, namespace: &str, name: &str, patch: Value) -> Result<()> {
        let info = self.events()?;
        let update = self
            .store
            .update(&info, namespace, name, None, false, move |mut event| {
                // A flat merge patch: each top-level field replaced (see the trait).
                if let (Some(event), Value::Object(patch)) = (event.as_object_mut(), patch) {
                    event.extend(patch);
                }
                Ok(event)
            });
        self.guarded(update).await?.map(|_| ()).map_err(store_error)
    }

    fn watch_objects(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent>> {
        watch_as(self.store.clone(), &resource, cached, cached)
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

    async fn replace_subresource(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: &str,
        object: Value,
    ) -> Result<Value> {
        let update = self.store.update(
            resource,
            namespace,
            name,
            Some(subresource),
            false,
            move |_| Ok(object),
        );
        self.guarded(update)
            .await?
            .map(|u| u.object().value())
            .map_err(store_error)
    }

    async fn list(&self, resource: &ResourceInfo, namespace: &str) -> Result<Vec<ObjectMeta>> {
        let options = ListOptions {
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            ..ListOptions::default()
        };
        let listed = self
            .store
            .list(&resource.group_resource(), &options)
            .map_err(store_error)?;
        Ok(listed.items.iter().map(|o| meta(o)).collect())
    }

    async fn delete_collection(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        options: &DeleteOptions,
    ) -> Result<()> {
        let list = ListOptions {
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            ..ListOptions::default()
        };
        self.guarded(self.store.delete_collection(resource, &list, options))
            .await?
            .map(|_| ())
            .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_reads_as_the_tolerant_reader_does() {
        for raw in [
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u1","resourceVersion":"9","deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["orphan"],"ownerReferences":[{"apiVersion":"v1","kind":"ReplicationController","name":"rc","uid":"o1","controller":true,"blockOwnerDeletion":true},{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o2"}],"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx\u0041"}]}}"#,
            r#"{"metadata":{"name":"p","deletionTimestamp":null,"ownerReferences":[{}]}}"#,
            r#"{"kind":"ConfigMap","data":{"metadata":"x"}}"#,
            // Fields of unexpected types: the typed read fails and the tolerant one decides.
            r#"{"metadata":{"name":"p","uid":7,"finalizers":["a",3],"ownerReferences":[{"uid":"o","controller":"yes"}]}}"#,
            r#"{"metadata":null}"#,
            r#"not json"#,
        ] {
            let tolerant =
                ObjectMeta::from_object(&serde_json::from_str(raw).unwrap_or(Value::Null));
            assert_eq!(meta_from_text(raw), tolerant, "{raw}");
        }
    }
}
