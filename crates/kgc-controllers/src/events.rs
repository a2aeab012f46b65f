//! Recording core/v1 Events as client-go's recorder files them
//! (`kubernetes/kubernetes staging/src/k8s.io/client-go/tools/record/event.go`): in the involved
//! object's namespace (`default` for a cluster-scoped one), named `<object>.<unix nanoseconds in
//! hex>`, with the component (and, for a kubelet, its node) as source. A repeated event (same
//! object, type, reason and message) is counted on the first one, as the recorder's correlator
//! (`events_cache.go`) does, rather than written again: a pod that cannot be scheduled for an
//! hour makes one Event, not hundreds. Recording never holds up the controller: each event is
//! sent on its own task, and a failure is logged, as upstream's broadcaster drops what it
//! cannot write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::Clock;

/// Upstream's event types.
const NORMAL: &str = "Normal";
const WARNING: &str = "Warning";

/// At most this many events are remembered for counting repeats (a bound on memory); then the
/// correlator starts over, as upstream's LRU of 4,096 forgets.
const REMEMBERED: usize = 10_000;

/// The involved object of an event: its namespace and name.
type Object = (String, String);

/// An event's identity for the correlator, within its object: the object's uid, the type,
/// reason and message.
type Identity = (String, &'static str, String, String);

/// The name and count of each event written, by object, then identity: forgetting an object's
/// events (the scheduler does at every bind) is one removal, not a scan of every event.
#[derive(Default)]
struct Seen {
    objects: HashMap<Object, HashMap<Identity, (String, i32)>>,
    events: usize,
}

/// Records the events of one component.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    component: &'static str,
    /// The node a kubelet's events come from (`source.host`, `reportingInstance`).
    host: Option<String>,
    clock: Clock,
    seen: Arc<Mutex<Seen>>,
}

impl Recorder {
    pub fn new(client: kube::Client, component: &'static str, clock: Clock) -> Self {
        Self {
            client,
            component,
            host: None,
            clock,
            seen: Arc::default(),
        }
    }

    /// The same recorder, its events coming from `host` (a kubelet's node); repeats are still
    /// counted across hosts.
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
        let mut seen = lock(&self.seen);
        let object = (namespace.to_owned(), name.to_owned());
        if let Some(gone) = seen.objects.remove(&object) {
            seen.events -= gone.len();
        }
    }

    fn record(&self, involved: ObjectReference, kind: &'static str, reason: &str, message: String) {
        let namespace = involved
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let object: Object = (namespace.clone(), involved.name.clone().unwrap_or_default());
        let id: Identity = (
            involved.uid.clone().unwrap_or_default(),
            kind,
            reason.to_owned(),
            message.clone(),
        );
        let now = Time(self.clock.now());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let repeat = lock(&self.seen)
            .objects
            .get_mut(&object)
            .and_then(|o| o.get_mut(&id))
            .map(|(name, count)| {
                *count += 1;
                (name.clone(), *count)
            });
        if let Some((name, count)) = repeat {
            let seen = self.seen.clone();
            let component = self.component;
            tokio::spawn(async move {
                let patch = json!({"count": count, "lastTimestamp": now});
                if let Err(e) = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    // Gone (deleted, or expired): the next repeat writes a new one.
                    let mut seen = lock(&seen);
                    if let Some(o) = seen.objects.get_mut(&object)
                        && o.remove(&id).is_some()
                    {
                        seen.events -= 1;
                    }
                    tracing::debug!(component, error = %e, "counting a repeated event failed");
                }
            });
            return;
        }
        let name = format!(
            "{}.{:x}",
            involved.name.as_deref().unwrap_or_default(),
            now.0.as_nanosecond().max(0)
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
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
            last_timestamp: Some(now),
            count: Some(1),
            ..Event::default()
        };
        let seen = self.seen.clone();
        let component = self.component;
        tokio::spawn(async move {
            match api.create(&PostParams::default(), &event).await {
                Ok(_) => {
                    let mut seen = lock(&seen);
                    if seen.events >= REMEMBERED {
                        *seen = Seen::default();
                    }
                    if seen
                        .objects
                        .entry(object)
                        .or_default()
                        .insert(id, (name, 1))
                        .is_none()
                    {
                        seen.events += 1;
                    }
                }
                Err(e) => tracing::warn!(component, error = %e, "recording an event failed"),
            }
        });
    }
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
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
