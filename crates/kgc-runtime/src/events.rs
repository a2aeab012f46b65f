//! Recording core/v1 Events as client-go's recorder files them
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`): in the involved
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<unix nanoseconds in
//! hex>`, with the component (and, for a kubelet, its node) as source. This is the process's one
//! event writer: the controllers (through their `kube::Client`), the collectors (through their
//! [`Cluster`], wrapped in [`Collector`]) and `kgc sync` all record with a [`Recorder`], and
//! every event goes through the process's one correlator ([`crate::correlator`]): a repeat is a
//! patch of the first Event's `count` and `lastTimestamp`, similar events are aggregated, and a
//! source that floods one object is throttled, so a pod that cannot be scheduled for an hour
//! makes one Event, not hundreds. Recording never holds up a controller: [`Recorder::normal`]
//! and [`Recorder::warning`] send on a task of their own and log a failure, as upstream's
//! broadcaster drops what it cannot write; [`Recorder::write`] is the awaited form.

use std::future::Future;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kgc_client::Cluster;
use kgc_meta::time::Clock;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::Value;

use crate::Error;
use crate::correlator::{Correlated, correlator};

/// Upstream's event types.
pub const NORMAL: &str = "Normal";
pub const WARNING: &str = "Warning";

/// Where a [`Recorder`] writes: create an Event, or merge-patch one filed before (a flat
/// object of top-level fields). A patch of an Event that is gone fails with NotFound.
pub trait Sink: Clone + Send + Sync + 'static {
    fn create(
        &self,
        namespace: &str,
        event: Value,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn patch(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The controllers' sink: their typed client, with the whole API's admission.
impl Sink for kube::Client {
    async fn create(&self, namespace: &str, event: Value) -> Result<(), Error> {
        let event: Event = serde_json::from_value(event).map_err(kube::Error::SerdeError)?;
        Api::<Event>::namespaced(self.clone(), namespace)
            .create(&PostParams::default(), &event)
            .await?;
        Ok(())
    }

    async fn patch(&self, namespace: &str, name: &str, patch: Value) -> Result<(), Error> {
        Api::<Event>::namespaced(self.clone(), namespace)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }
}

/// The collectors' sink: the [`Cluster`] they act through (in `kgc serve` the store itself).
#[derive(Clone)]
pub struct Collector<C>(pub C);

impl<C: Cluster> Sink for Collector<C> {
    async fn create(&self, _namespace: &str, event: Value) -> Result<(), Error> {
        Ok(self.0.create_event(event).await?)
    }

    async fn patch(&self, namespace: &str, name: &str, patch: Value) -> Result<(), Error> {
        Ok(self.0.patch_event(namespace, name, patch).await?)
    }
}

/// Records the events of one component.
#[derive(Clone)]
pub struct Recorder<S = kube::Client> {
    sink: S,
    component: &'static str,
    /// The node a kubelet's events come from (`source.host`, `reportingInstance`).
    host: Option<String>,
    clock: Clock,
}

impl<S: Sink> Recorder<S> {
    pub fn new(sink: S, component: &'static str, clock: Clock) -> Self {
        Self {
            sink,
            component,
            host: None,
            clock,
        }
    }

    /// The same recorder, its events coming from `host` (a kubelet's node).
    pub fn on_host(&self, host: &str) -> Self {
        Self {
            host: Some(host.to_owned()),
            ..self.clone()
        }
    }

    /// A `Normal` event about `involved`, sent in the background.
    pub fn normal(&self, involved: ObjectReference, reason: &str, message: String) {
        self.record(involved, NORMAL, reason, message);
    }

    /// A `Warning` event about `involved`, sent in the background.
    pub fn warning(&self, involved: ObjectReference, reason: &str, message: String) {
        self.record(involved, WARNING, reason, message);
    }

    /// Forgets the repeats of the events about the object `namespace`/`name` (it is gone, or
    /// what it waited for happened), so that memory follows the live objects.
    pub fn forget(&self, namespace: &str, name: &str) {
        correlator().forget(namespace, name);
    }

    fn record(
        &self,
        involved: ObjectReference,
        type_: &'static str,
        reason: &str,
        message: String,
    ) {
        let this = self.clone();
        let reason = reason.to_owned();
        tokio::spawn(async move {
            if let Err(e) = this.write(involved, type_, &reason, message).await {
                tracing::warn!(component = this.component, error = %e, "recording an event failed");
            }
        });
    }

    /// Records an event of `type_` ([`NORMAL`] or [`WARNING`]) about `involved` and waits for
    /// the write: for a caller that exits right after (`kgc sync --once`) and for tests.
    pub async fn write(
        &self,
        involved: ObjectReference,
        type_: &str,
        reason: &str,
        message: String,
    ) -> Result<(), Error> {
        let namespace = involved
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let now = Time(self.clock.now());
        let name = format!(
            "{}.{:x}",
            involved.name.as_deref().unwrap_or_default(),
            now.0.as_nanosecond().max(0)
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: involved,
            reason: Some(reason.to_owned()),
            message: Some(message),
            type_: Some(type_.to_owned()),
            source: Some(EventSource {
                component: Some(self.component.to_owned()),
                host: self.host.clone(),
            }),
            reporting_component: Some(self.component.to_owned()),
            reporting_instance: self.host.clone(),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now.clone()),
            count: Some(1),
            ..Event::default()
        };
        let value = serde_json::to_value(&event).map_err(kube::Error::SerdeError)?;
        file(&self.sink, correlator().correlate(value, now.0)).await
    }
}

/// Writes what the correlator decided, as client-go's `recordToSink` does: a repeat whose
/// Event is gone (deleted, or expired by the TTL) is created afresh; an Event that could not
/// be created is forgotten, so that its next repeat is created rather than patched (upstream
/// updates its cache only after a successful write).
async fn file<S: Sink>(sink: &S, decision: Correlated) -> Result<(), Error> {
    let create = |event: Value| async move {
        let text = |field: &str| event["metadata"][field].as_str().map(str::to_owned);
        let namespace = text("namespace").unwrap_or_else(|| "default".to_owned());
        let name = text("name").unwrap_or_default();
        let written = sink.create(&namespace, event).await;
        if written.is_err() {
            correlator().forget_event(&namespace, &name);
        }
        written
    };
    match decision {
        Correlated::Skip => Ok(()),
        Correlated::Create(event) => create(event).await,
        Correlated::Patch {
            namespace,
            name,
            patch,
            event,
        } => match sink.patch(&namespace, &name, patch).await {
            Err(e) if e.is_not_found() => create(event).await,
            other => other,
        },
    }
}

/// The reference an event names a collector's object by.
pub fn object_reference(object: &kgc_meta::ObjectRef) -> ObjectReference {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    ObjectReference {
        api_version: some(&object.api_version),
        kind: some(&object.kind),
        namespace: some(&object.namespace),
        name: some(&object.name),
        uid: some(&object.uid),
        ..ObjectReference::default()
    }
}

/// The reference an event names `object` by.
pub fn reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgc_inprocess::InProcess;
    use kgc_store::Store;

    /// The Events stored about `object` in `default`.
    async fn events_about(cluster: &InProcess, object: &str) -> Vec<Value> {
        let info = cluster.store().catalog().get("", "v1", "events").cloned();
        let info = info.unwrap();
        let mut out = Vec::new();
        for meta in cluster.list(&info, "default").await.unwrap() {
            let event = cluster.get_object(&info, "default", &meta.name).await;
            let event = event.unwrap().unwrap();
            if event["involvedObject"]["name"] == object {
                out.push(event);
            }
        }
        out
    }

    fn pod(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    /// A collector's repeats are patches of the first Event, as a controller's are; a repeat
    /// whose Event was deleted creates it again, carrying the count.
    #[tokio::test]
    async fn a_collectors_repeats_patch_the_first_event() {
        let cluster = InProcess::new(Store::in_memory().await.unwrap());
        let recorder = Recorder::new(Collector(cluster.clone()), "test", Clock::default());
        let repeat = || async {
            let m = "owner in another namespace".to_owned();
            recorder
                .write(pod("repeat"), WARNING, "R", m)
                .await
                .unwrap();
        };
        for _ in 0..3 {
            repeat().await;
        }
        let events = events_about(&cluster, "repeat").await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["count"], 3);
        assert_eq!(events[0]["source"]["component"], "test");

        let info = cluster.store().catalog().get("", "v1", "events").cloned();
        let name = events[0]["metadata"]["name"].as_str().unwrap();
        let options = kgc_meta::DeleteOptions::default();
        cluster
            .delete(&info.unwrap(), "default", name, &options)
            .await
            .unwrap();
        repeat().await;
        let events = events_about(&cluster, "repeat").await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["count"], 4);
    }

    /// Similar events of a collector are aggregated after ten, as upstream's recorder does.
    #[tokio::test]
    async fn a_collectors_similar_events_are_aggregated() {
        let cluster = InProcess::new(Store::in_memory().await.unwrap());
        let recorder = Recorder::new(Collector(cluster.clone()), "test", Clock::default());
        for n in 0..15 {
            let m = format!("message {n}");
            recorder
                .write(pod("similar"), WARNING, "R", m)
                .await
                .unwrap();
        }
        let events = events_about(&cluster, "similar").await;
        assert_eq!(events.len(), 10, "{events:?}");
        let combined: Vec<_> = events
            .iter()
            .filter(|e| {
                let message = e["message"].as_str().unwrap();
                message.starts_with("(combined from similar events): ")
            })
            .collect();
        assert_eq!(combined.len(), 1);
        assert_eq!(combined[0]["count"], 6);
    }
}
