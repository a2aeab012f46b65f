//! The Services and pods both endpoint controllers watch, and how a change queues a Service
//! (upstream's `onServiceUpdate`, `addPod`/`updatePod`/`deletePod` through
//! `GetPodServiceMemberships`): a Service when it changes, every Service of the namespace whose
//! selector matches a changed pod's labels, old or new.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Service;
use kgc_client::Cluster;
use kgc_runtime::Context;
use kgc_runtime::informer::{Cache, Key, Typed, describe};
use kgc_runtime::queue::WorkQueue;

use crate::pods::PodInfo;

/// A Service's key, displayed `namespace/name` in logs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceKey(pub Key);

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(&self.0))
    }
}

/// The caches and the queue of one endpoint controller.
#[derive(Clone)]
pub struct Watched {
    pub services: Cache<Typed<Service>>,
    pub pods: Cache<PodInfo>,
    pub queue: WorkQueue<ServiceKey>,
}

impl Watched {
    /// Starts the caches of `controller`, queues as the module says, and waits for them.
    pub async fn start<C: Cluster>(ctx: &Context<C>, controller: &str) -> Self {
        let services = ctx.informers.resource("", "services").await;
        let pods = ctx.informers.resource("", "pods").await;
        let queue = ctx.queue::<ServiceKey>(controller);
        let services = ctx.informers.cache::<Typed<Service>>(services);
        let pods = ctx.informers.cache::<PodInfo>(pods);
        let q = queue.clone();
        services.on_change(Arc::new(move |key: &Key, _: Option<&Typed<Service>>| {
            q.add(ServiceKey(key.clone()));
        }));
        // A pod that goes or is relabelled still counts for the Services its old labels
        // matched: the handler remembers each pod's labels.
        let (q, svcs) = (queue.clone(), services.clone());
        let last: Mutex<HashMap<Key, BTreeMap<String, String>>> = Mutex::default();
        pods.on_change(Arc::new(move |key: &Key, p: Option<&PodInfo>| {
            let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
            let old = match p {
                Some(p) => last.insert(key.clone(), p.labels.clone()),
                None => last.remove(key),
            };
            let new = p.map(|p| &p.labels);
            svcs.read(|m| {
                for (k, Typed(s)) in m {
                    let matches =
                        |l: Option<&BTreeMap<String, String>>| l.is_some_and(|l| selects(s, l));
                    if k.0 == key.0 && (matches(new) || matches(old.as_ref())) {
                        q.add(ServiceKey(k.clone()));
                    }
                }
            });
        }));
        services.synced().await;
        pods.synced().await;
        Watched {
            services,
            pods,
            queue,
        }
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

/// The time of the newest change among the Service's creation and its pods' readiness, the
/// `last-change-trigger-time` (upstream's `TriggerTimeTracker` keeps the oldest change not yet
/// published; kgc publishes every change as it syncs, so the newest is the one that led here).
pub fn trigger_time(svc: &Service, pods: &[PodInfo]) -> Option<String> {
    let created = svc.metadata.creation_timestamp.as_ref().map(|t| t.0);
    pods.iter()
        .filter_map(|p| p.ready_changed.as_deref()?.parse::<jiff::Timestamp>().ok())
        .chain(created)
        .max()
        .map(|t| t.to_string())
}
