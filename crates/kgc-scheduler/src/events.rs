//! The scheduler's Events, as core/v1 Events (client-go tools/record): `kubectl describe pod`
//! and `kubectl get events` read that API, and kgc stores `events.k8s.io` separately. Source
//! `default-scheduler`; a repeated event (same pod, reason and message) is counted on the first
//! one, as the recorder's correlator does, rather than written again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kgc_meta::time::Clock;
use kgc_runtime::informer::Key;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::pod::DEFAULT_SCHEDULER;

/// At most this many repeated events are remembered (a bound on memory); then it starts over.
const REMEMBERED: usize = 10_000;

/// An event's identity for the correlator (pod, reason, message), and its name and count.
type Seen = HashMap<(Key, String, String), (String, i32)>;

#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    clock: Clock,
    seen: Arc<Mutex<Seen>>,
}

impl Recorder {
    pub fn new(client: kube::Client, clock: Clock) -> Self {
        Self {
            client,
            clock,
            seen: Arc::default(),
        }
    }

    /// Records `reason` about the pod `key` (uid `uid`); failures are logged, never fatal.
    pub async fn record(&self, key: &Key, uid: &str, type_: &str, reason: &str, message: &str) {
        let now = Time(self.clock.now());
        let api = kube::Api::<Event>::namespaced(self.client.clone(), &key.0);
        let id = (key.clone(), reason.to_owned(), message.to_owned());
        let repeat = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            seen.get_mut(&id).map(|(name, count)| {
                *count += 1;
                (name.clone(), *count)
            })
        };
        let result = match repeat {
            Some((name, count)) => {
                let patch = json!({"count": count, "lastTimestamp": now});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(drop)
            }
            None => {
                let name = format!("{}.{:x}", key.1, now.0.as_nanosecond());
                let event = Event {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(key.0.clone()),
                        ..ObjectMeta::default()
                    },
                    involved_object: ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("Pod".into()),
                        namespace: Some(key.0.clone()),
                        name: Some(key.1.clone()),
                        uid: Some(uid.to_owned()),
                        ..ObjectReference::default()
                    },
                    reason: Some(reason.to_owned()),
                    message: Some(message.to_owned()),
                    type_: Some(type_.to_owned()),
                    source: Some(EventSource {
                        component: Some(DEFAULT_SCHEDULER.into()),
                        host: None,
                    }),
                    reporting_component: Some(DEFAULT_SCHEDULER.into()),
                    reporting_instance: Some(String::new()),
                    first_timestamp: Some(now.clone()),
                    last_timestamp: Some(now),
                    count: Some(1),
                    ..Event::default()
                };
                let created = api.create(&PostParams::default(), &event).await.map(drop);
                if created.is_ok() {
                    let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
                    if seen.len() >= REMEMBERED {
                        seen.clear();
                    }
                    seen.insert(id, (name, 1));
                }
                created
            }
        };
        if let Err(e) = result {
            tracing::warn!(pod = %kgc_runtime::informer::describe(key), reason, error = %e, "recording an event failed");
        }
    }

    /// Forgets the pod's repeated events (it is bound or gone).
    pub fn forget(&self, key: &Key) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(k, _, _), _| k != key);
    }
}
