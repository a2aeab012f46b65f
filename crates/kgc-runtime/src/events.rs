//! Recording core/v1 Events as client-go's recorder files them
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`): in the involved
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<unix nanoseconds in
//! hex>`, with the component (and, for a kubelet, its node) as source. Every event goes through
//! the process's one correlator ([`crate::correlator`]): a repeat is counted on the first
//! Event, similar ones are aggregated, and a source that floods one object is throttled, so a
//! pod that cannot be scheduled for an hour makes one Event, not hundreds. Recording never
//! holds up the controller: each event is sent on its own task, and a failure is logged, as
//! upstream's broadcaster drops what it cannot write.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kgc_meta::time::Clock;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::correlator::{Correlated, correlator};

/// Upstream's event types.
const NORMAL: &str = "Normal";
const WARNING: &str = "Warning";

/// Records the events of one component.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: &'static str,
    /// The node a kubelet's events come from (`source.host`, `reportingInstance`).
    host: Option<String>,
    clock: Clock,
}

impl Recorder {
    pub fn new(client: kube::Client, component: &'static str, clock: Clock) -> Self {
        Self {
            client,
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

    /// A `Normal` event about `involved`.
    pub fn normal(&self, involved: ObjectReference, reason: &str, message: String) {
        self.record(involved, NORMAL, reason, message);
    }

    /// A `Warning` event about `involved`.
    pub fn warning(&self, involved: ObjectReference, reason: &str, message: String) {
        self.record(involved, WARNING, reason, message);
    }

    /// Forgets the repeats of the events about the object `namespace`/`name` (it is gone, or
    /// what it waited for happened), so that memory follows the live objects.
    pub fn forget(&self, namespace: &str, name: &str) {
        correlator().forget(namespace, name);
    }

    fn record(&self, involved: ObjectReference, kind: &'static str, reason: &str, message: String) {
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
            type_: Some(kind.to_owned()),
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
        let Ok(value) = serde_json::to_value(&event) else {
            return;
        };
        let decision = correlator().correlate(value, now.0);
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let component = self.component;
        tokio::spawn(async move {
            if let Err(e) = file(&api, decision).await {
                tracing::warn!(component, error = %e, "recording an event failed");
            }
        });
    }
}

/// Writes what the correlator decided, as client-go's `recordToSink` does: a repeat whose
/// Event is gone (deleted, or expired by the TTL) is created afresh.
pub async fn file(api: &Api<Event>, decision: Correlated) -> Result<(), kube::Error> {
    let create = |event: serde_json::Value| async move {
        let event: Event = serde_json::from_value(event).map_err(kube::Error::SerdeError)?;
        api.create(&PostParams::default(), &event).await.map(|_| ())
    };
    match decision {
        Correlated::Skip => Ok(()),
        Correlated::Create(event) => create(event).await,
        Correlated::Patch {
            name, patch, event, ..
        } => match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(kube::Error::Api(s)) if s.is_not_found() => create(event).await,
            other => other.map(|_| ()),
        },
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
