//! Recording core/v1 Events as client-go's recorder files them
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`): in the involved
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<unix nanoseconds in
//! hex>`, with the component as source. Recording never holds up the controller: each event is
//! sent on its own task, and a failure is logged, as upstream's broadcaster drops what it
//! cannot write.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Resource;
use kube::api::{Api, PostParams};

use crate::Clock;

/// Upstream's event types.
const NORMAL: &str = "Normal";
const WARNING: &str = "Warning";

/// Records the events of one component.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: &'static str,
    clock: Clock,
}

impl Recorder {
    pub fn new(client: kube::Client, component: &'static str, clock: Clock) -> Self {
        Self {
            client,
            component,
            clock,
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

    fn record(&self, involved: ObjectReference, kind: &str, reason: &str, message: String) {
        let now = self.clock.now();
        let namespace = involved
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = format!(
            "{}.{:x}",
            involved.name.as_deref().unwrap_or_default(),
            now.as_nanosecond().max(0)
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
                host: None,
            }),
            reporting_component: Some(self.component.to_owned()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let component = self.component;
        tokio::spawn(async move {
            if let Err(e) = api.create(&PostParams::default(), &event).await {
                tracing::warn!(component, error = %e, "recording an event failed");
            }
        });
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
