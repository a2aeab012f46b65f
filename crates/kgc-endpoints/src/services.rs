//! The Services and pods both endpoint controllers watch, and how a change queues a Service
//! (upstream's `onServiceUpdate`, `addPod`/`updatePod`/`deletePod` through
//! `GetPodServiceMemberships`): a Service when it changes, every Service of the namespace whose
//! selector matches a changed pod's labels, old or new.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Service;
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, Typed};
use kgc_runtime::{Context, Controller, ObjectKey};

use crate::pods::PodInfo;

/// The caches of one endpoint controller.
#[derive(Clone)]
pub struct Watched {
    pub services: Cache<Typed<Service>>,
    pub pods: Cache<PodInfo>,
    pub triggers: TriggerTimeTracker,
}

impl Watched {
    /// Starts the caches of `controller` and declares it, queueing as the module says; the
    /// controller adds what else it watches and runs the declaration.
    pub async fn start<C: Cluster>(
        ctx: &Context<C>,
        controller: &'static str,
    ) -> (Self, Controller) {
        let services = ctx.informers.resource("", "services").await;
        let pods = ctx.informers.resource("", "pods").await;
        let services = ctx.informers.cache::<Typed<Service>>(services);
        let pods = ctx.informers.cache::<PodInfo>(pods);
        // A pod that goes or is relabelled still counts for the Services its old labels
        // matched: the mapper remembers each pod's labels.
        let svcs = services.clone();
        let last: Mutex<HashMap<Key, BTreeMap<String, String>>> = Mutex::default();
        let pod_changed = move |key: &Key, p: Option<&PodInfo>| {
            let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
            let old = match p {
                Some(p) => last.insert(key.clone(), p.labels.clone()),
                None => last.remove(key),
            };
            let new = p.map(|p| &p.labels);
            svcs.read(|m| {
                let matches = |s: &Service, l: Option<&BTreeMap<String, String>>| {
                    l.is_some_and(|l| selects(s, l))
                };
                m.iter()
                    .filter(|(k, Typed(s))| {
                        k.0 == key.0 && (matches(s, new) || matches(s, old.as_ref()))
                    })
                    .map(|(k, _)| ObjectKey(k.clone()))
                    .collect::<Vec<_>>()
            })
        };
        let declared = Controller::new(ctx, controller, &services).watches(&pods, pod_changed);
        let watched = Watched {
            services,
            pods,
            triggers: TriggerTimeTracker::default(),
        };
        (watched, declared)
    }

    /// The pods of `namespace` that `svc`'s selector selects.
    pub fn selected(&self, namespace: &str, svc: &Service) -> Vec<PodInfo> {
        let mut pods: Vec<PodInfo> = self.pods.read(|m| {
            m.iter()
                .filter(|(k, p)| k.0 == namespace && selects(svc, &p.labels))
                .map(|(_, p)| p.clone())
                .collect()
        });
        pods.sort_by(|a, b| a.name.cmp(&b.name));
        pods
    }
}

/// Whether the Service's selector (a map: every pair must match) selects `labels`; a Service
/// without a selector selects nothing here (its endpoints are someone else's).
pub fn selects(svc: &Service, labels: &BTreeMap<String, String>) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// Whether the endpoint controllers keep endpoints for the Service: it has a selector.
pub fn has_selector(svc: &Service) -> bool {
    svc.spec.as_ref().is_some_and(|s| s.selector.is_some())
}

/// `spec.clusterIP: None`.
pub fn headless(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// `spec.publishNotReadyAddresses`.
pub fn publish_not_ready(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false)
}

/// What the tracker saw of one Service at its last sync: the Service's trigger time (its
/// creation) and each selected pod's (its `Ready` condition's last transition).
#[derive(Debug, Clone, Default)]
struct ServiceState {
    service: Option<jiff::Timestamp>,
    pods: HashMap<String, jiff::Timestamp>,
}

/// The `endpoints.kubernetes.io/last-change-trigger-time` of each Service, as upstream's
/// `TriggerTimeTracker` (kubernetes `pkg/controller/util/endpoint/trigger_time_tracker.go`)
/// computes it: the oldest of the changes (a pod's readiness, the Service's creation) that the
/// Service's previous sync had not seen, that is the oldest change not yet published; the
/// Service's creation on its first sync; none when nothing changed. Each controller keeps its
/// own, as upstream's do.
#[derive(Debug, Clone, Default)]
pub struct TriggerTimeTracker(Arc<Mutex<HashMap<Key, ServiceState>>>);

impl TriggerTimeTracker {
    /// The trigger time of a sync of `svc` over its selected `pods`, remembering what it saw
    /// (`ComputeEndpointLastChangeTriggerTime`).
    pub fn compute(&self, key: &Key, svc: &Service, pods: &[PodInfo]) -> Option<String> {
        let previous = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned();
        let before = previous.clone().unwrap_or_default();
        let mut oldest_changed: Option<jiff::Timestamp> = None;
        let mut changed = |t: jiff::Timestamp| {
            oldest_changed = Some(oldest_changed.map_or(t, |o| o.min(t)));
        };
        let mut seen = ServiceState::default();
        for p in pods {
            let Some(t) = p
                .ready_changed
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            else {
                continue;
            };
            if before.pods.get(&p.name).is_none_or(|last| t > *last) {
                changed(t);
            }
            seen.pods.insert(p.name.clone(), t);
        }
        let created = svc.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(t) = created
            && before.service.is_none_or(|last| t > last)
        {
            changed(t);
        }
        seen.service = created;
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), seen);
        // A Service seen for the first time: its creation.
        let time = if previous.is_none() {
            created
        } else {
            oldest_changed
        };
        time.map(|t| t.to_string())
    }

    /// Forgets a deleted Service (`DeleteService`).
    pub fn delete(&self, key: &Key) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn pod(name: &str, ready_changed: &str) -> PodInfo {
        PodInfo {
            name: name.into(),
            ready_changed: Some(ready_changed.into()),
            ..PodInfo::default()
        }
    }

    #[test]
    fn trigger_time_is_the_oldest_change_not_yet_published() {
        let created = "2026-01-01T00:00:00Z";
        let svc = Service {
            metadata: ObjectMeta {
                creation_timestamp: Some(Time(created.parse().unwrap())),
                ..ObjectMeta::default()
            },
            ..Service::default()
        };
        let key: Key = ("ns".into(), "web".into());
        let t = TriggerTimeTracker::default();
        let (a1, b1) = ("2026-01-01T00:00:05Z", "2026-01-01T00:00:07Z");
        // First sync: the Service's creation, whatever its pods.
        assert_eq!(
            t.compute(&key, &svc, &[pod("a", a1)]).as_deref(),
            Some(created)
        );
        // Nothing changed since: no trigger time.
        assert_eq!(t.compute(&key, &svc, &[pod("a", a1)]), None);
        // Two pods changed (b is new): the oldest of the two, not the newest.
        let a2 = "2026-01-01T00:00:09Z";
        assert_eq!(
            t.compute(&key, &svc, &[pod("a", a2), pod("b", b1)])
                .as_deref(),
            Some(b1)
        );
        // Only a changes again: its time; b's was published with the previous sync.
        let a3 = "2026-01-01T00:00:11.5Z";
        assert_eq!(
            t.compute(&key, &svc, &[pod("a", a3), pod("b", b1)])
                .as_deref(),
            Some(a3)
        );
        // A deleted Service is forgotten: seen again, it is new.
        t.delete(&key);
        assert_eq!(
            t.compute(&key, &svc, &[pod("a", a3)]).as_deref(),
            Some(created)
        );
    }
}
