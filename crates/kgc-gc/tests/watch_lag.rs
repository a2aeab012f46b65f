//! The collector against a store whose watch of one resource lags behind the others: each
//! resource has its own watch, so the graph can learn of an owner's deletion before it learns
//! of a dependent committed earlier. Where revisions are comparable across resources (the
//! in-process cluster), the collector waits for the lagging watch's bookmark before it lets a
//! foreground owner go or orphans an owner's dependents; upstream's informers cannot, and
//! would act on the partial graph.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kgc_client::{Cluster, Deleted, ObjectEvent, Result};
use kgc_gc::{Config, GarbageCollector};
use kgc_inprocess::InProcess;
use kgc_meta::{DeleteOptions, GroupResource, ObjectMeta, PropagationPolicy, ResourceInfo};
use kgc_store::{EventType, Store, WatchEvent, WatchFilter};
use kgc_testsupport::eventually;
use serde_json::{Value, json};
use tokio::sync::watch;

/// The in-process cluster, with the metadata watch of `held` delivering nothing after its
/// first list (not even bookmarks) until the gate opens.
#[derive(Clone)]
struct Lagging {
    inner: InProcess,
    held: GroupResource,
    gate: Arc<watch::Sender<bool>>,
}

impl Cluster for Lagging {
    async fn resources(&self) -> Result<Vec<Arc<ResourceInfo>>> {
        self.inner.resources().await
    }

    fn watch(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent<ObjectMeta>>> {
        let stream = self.inner.watch(Arc::clone(&resource));
        if resource.group_resource() != self.held {
            return stream;
        }
        let gate = self.gate.subscribe();
        // The first list passes; everything after it waits for the gate.
        stream
            .scan(false, |listed, event| {
                let held = *listed;
                *listed |= matches!(event, Ok(ObjectEvent::InitDone));
                futures::future::ready(Some((held, event)))
            })
            .then(move |(held, event)| {
                let mut gate = gate.clone();
                async move {
                    if held {
                        let _ = gate.wait_for(|open| *open).await;
                    }
                    event
                }
            })
            .boxed()
    }

    fn last_change(&self, gr: &GroupResource) -> Option<u64> {
        self.inner.last_change(gr)
    }

    async fn get(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ObjectMeta>> {
        self.inner.get(resource, namespace, name).await
    }

    async fn delete(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted> {
        self.inner.delete(resource, namespace, name, options).await
    }

    async fn remove_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
        owners: &[String],
    ) -> Result<()> {
        self.inner
            .remove_owner_references(resource, namespace, name, uid, owners)
            .await
    }

    async fn unblock_owner_references(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<()> {
        self.inner
            .unblock_owner_references(resource, namespace, name, uid)
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
        self.inner
            .remove_finalizer(resource, namespace, name, uid, finalizer)
            .await
    }

    async fn create_event(&self, event: Value) -> Result<()> {
        self.inner.create_event(event).await
    }

    async fn patch_event(&self, namespace: &str, name: &str, patch: Value) -> Result<()> {
        self.inner.patch_event(namespace, name, patch).await
    }

    fn watch_objects(
        &self,
        resource: Arc<ResourceInfo>,
    ) -> BoxStream<'static, Result<ObjectEvent>> {
        self.inner.watch_objects(resource)
    }

    async fn get_object(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        self.inner.get_object(resource, namespace, name).await
    }

    async fn replace_subresource(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        name: &str,
        subresource: &str,
        object: Value,
    ) -> Result<Value> {
        self.inner
            .replace_subresource(resource, namespace, name, subresource, object)
            .await
    }

    async fn list(&self, resource: &ResourceInfo, namespace: &str) -> Result<Vec<ObjectMeta>> {
        self.inner.list(resource, namespace).await
    }

    async fn delete_collection(
        &self,
        resource: &ResourceInfo,
        namespace: &str,
        options: &DeleteOptions,
    ) -> Result<()> {
        self.inner
            .delete_collection(resource, namespace, options)
            .await
    }
}

struct Scenario {
    store: Store,
    gc: GarbageCollector<Lagging>,
    gate: Arc<watch::Sender<bool>>,
    configmaps: Arc<ResourceInfo>,
    secrets: Arc<ResourceInfo>,
    task: tokio::task::JoinHandle<()>,
}

impl Scenario {
    /// A running collector whose `secrets` watch is held after its first list.
    async fn start() -> Self {
        let store = Store::in_memory().await.expect("store");
        let info = |resource: &str| {
            store
                .catalog()
                .get("", "v1", resource)
                .cloned()
                .expect("built in")
        };
        let (configmaps, secrets) = (info("configmaps"), info("secrets"));
        store
            .create(
                &info("namespaces"),
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
                false,
            )
            .await
            .expect("namespace");
        let gate = Arc::new(watch::channel(false).0);
        let cluster = Lagging {
            inner: InProcess::new(store.clone()),
            held: secrets.group_resource(),
            gate: Arc::clone(&gate),
        };
        let gc = GarbageCollector::new(
            cluster,
            Config {
                workers: 2,
                ..Config::default()
            },
        );
        let runner = gc.clone();
        let task = tokio::spawn(async move { runner.run().await });
        wait_for("the collector to sync", || gc.is_synced()).await;
        Scenario {
            store,
            gc,
            gate,
            configmaps,
            secrets,
            task,
        }
    }

    async fn owner(&self) -> String {
        let owner = self
            .store
            .create(
                &self.configmaps,
                "ns",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
                false,
            )
            .await
            .expect("owner");
        let uid = owner.uid.clone();
        wait_for("the graph to hold the owner", || {
            self.gc.graph_has_uid(&uid)
        })
        .await;
        uid
    }

    /// A Secret owned by `owner` (blocking), which the held watch does not deliver.
    async fn dependent(&self, owner: &str) {
        self.store
            .create(
                &self.secrets,
                "ns",
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {
                    "name": "dependent",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                         "uid": owner, "blockOwnerDeletion": true}]}}),
                false,
            )
            .await
            .expect("dependent");
    }

    async fn delete_owner(&self, policy: PropagationPolicy) {
        let opts = DeleteOptions {
            propagation_policy: Some(policy),
            ..DeleteOptions::default()
        };
        self.store
            .delete(&self.configmaps, "ns", "owner", &opts)
            .await
            .expect("deleting the owner");
    }

    /// An owner and a dependent that the held watch does not deliver; the owner deleted with
    /// `policy`. Gives the collector the time in which, acting on the partial graph, it
    /// finished the owner's deletion, then lets the held watch go, and waits for the owner to
    /// be gone.
    async fn owner_deleted(policy: PropagationPolicy) -> Self {
        let s = Scenario::start().await;
        let owner = s.owner().await;
        s.dependent(&owner).await;
        s.delete_owner(policy).await;
        wait_for("the graph to see the owner's deletion", || {
            s.gc.node(&owner).is_some_and(|n| n.being_deleted)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.gate.send_replace(true);
        wait_for("the owner to go", || {
            s.store
                .get(&s.configmaps.group_resource(), "ns", "owner")
                .is_none()
        })
        .await;
        s
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits, with a deadline, for a condition on in-process state.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    eventually(what, Duration::from_secs(20), || std::future::ready(done())).await;
}

/// The revision at which each of `names` left the store, from its history.
fn gone_at(store: &Store, resource: &str, name: &str) -> Option<u64> {
    let mut w = store.watch(WatchFilter::new(GroupResource::new("", resource)), Some(0));
    let mut at = None;
    while let Some(WatchEvent::Event(t, o)) = w.try_next() {
        if t == EventType::Deleted && o.name == name {
            at = Some(o.resource_version);
        }
    }
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_owner_waits_for_a_blocking_dependent_its_watch_has_not_delivered() {
    let s = Scenario::owner_deleted(PropagationPolicy::Foreground).await;
    let dependent = gone_at(&s.store, "secrets", "dependent")
        .expect("the blocking dependent was collected with its owner");
    let owner = gone_at(&s.store, "configmaps", "owner").expect("the owner went");
    assert!(
        dependent < owner,
        "the foreground owner went (revision {owner}) before its blocking dependent \
         (revision {dependent})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphaning_waits_for_a_dependent_its_watch_has_not_delivered() {
    let s = Scenario::owner_deleted(PropagationPolicy::Orphan).await;
    let dependent = s
        .store
        .get(&s.secrets.group_resource(), "ns", "dependent")
        .expect("an orphaned dependent stays");
    assert_eq!(
        dependent.value()["metadata"].get("ownerReferences"),
        None,
        "the orphaned dependent keeps no reference to its owner"
    );
}
