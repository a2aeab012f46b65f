//! `--wait` for what was applied: polls the applied objects until each is ready by kstatus's
//! rules ([`crate::readiness`]) or the deadline passes, as `kubectl apply --wait` (cli-utils'
//! `StatusPoller`) and Flux's `spec.wait` do.
//!
//! A round costs one LIST per kind and namespace that still has an object to wait for (with
//! the set's label selector), plus, where the cluster keeps EndpointSlices, one LIST of them per
//! namespace with Services still waiting for endpoints: never a GET per object. Rounds start
//! 250 ms apart and slow down to 2 s, so a quick rollout is seen quickly and a slow one costs
//! little. An object is done when Current, or Failed: kstatus's Failed (a progress deadline, a
//! failed Job, a crash loop, a pod unschedulable for 15 s, a `Stalled` condition) does not mend
//! by waiting, so, as cli-utils' wait task, the wait ends once nothing else is in progress.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::desired::{Desired, ObjectKey};
use crate::gvk::GroupKind;
use crate::listing::{ListError, Lister, Resource};
use crate::ownership::LABEL_APP;
use crate::readiness::{self, LABEL_SERVICE_NAME, Readiness, Status};
use crate::str_at;

use super::Progress;
use super::client::ApiServer;

const FIRST_POLL: Duration = Duration::from_millis(250);
const MAX_POLL: Duration = Duration::from_secs(2);

/// An applied object that was not ready when the wait ended, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NotReady {
    pub key: ObjectKey,
    pub status: Status,
    /// kstatus's message (with the condition's own words where it has some).
    pub message: String,
}

/// The applied objects of one kind in one namespace ("" for cluster-scoped kinds): one LIST.
struct Group<'a> {
    resource: &'a Resource,
    namespace: &'a str,
    members: Vec<&'a Desired>,
}

/// Waits until every object of `targets` is Current or Failed, or `deadline`; returns those
/// that are not Current, sorted.
pub(super) async fn until_ready(
    cluster: &ApiServer,
    targets: &[&Desired],
    deadline: Instant,
    progress: &dyn Progress,
) -> Vec<NotReady> {
    let mut groups: BTreeMap<(&str, &str, &str, &str), Group<'_>> = BTreeMap::new();
    for d in targets {
        let r = &d.resource;
        groups
            .entry((&r.gk.group, &r.version, &r.plural, &d.key.namespace))
            .or_insert_with(|| Group {
                resource: r,
                namespace: &d.key.namespace,
                members: Vec::new(),
            })
            .members
            .push(d);
    }
    let endpoints = endpoint_slices(cluster, targets).await;
    let mut last: BTreeMap<&ObjectKey, Readiness> = BTreeMap::new();
    let mut pending: BTreeSet<&ObjectKey> = targets.iter().map(|d| &d.key).collect();
    progress.phase("ready", targets.len());
    let mut pause = FIRST_POLL;
    loop {
        let now = Timestamp::now();
        // Services judged Current by kstatus that still need a ready endpoint, by namespace.
        let mut services: BTreeMap<&str, Vec<&ObjectKey>> = BTreeMap::new();
        for g in groups.values() {
            if !g.members.iter().any(|d| pending.contains(&d.key)) {
                continue;
            }
            let ns = (!g.namespace.is_empty()).then_some(g.namespace);
            match cluster.list(g.resource, ns, LABEL_APP).await {
                Ok(objects) => {
                    let by_name: BTreeMap<&str, &Value> = objects
                        .iter()
                        .map(|o| (str_at(o, "/metadata/name"), o))
                        .collect();
                    for d in g.members.iter().filter(|d| pending.contains(&d.key)) {
                        let r = match by_name.get(d.key.name.as_str()) {
                            Some(o) => {
                                let r = readiness::compute(o, now);
                                if endpoints.is_some()
                                    && r.status == Status::Current
                                    && d.key.gk == GroupKind::new("", "Service")
                                    && readiness::selects_pods(o)
                                {
                                    services.entry(g.namespace).or_default().push(&d.key);
                                }
                                r
                            }
                            None => Readiness {
                                status: Status::NotFound,
                                message: "Resource not found".into(),
                            },
                        };
                        last.insert(&d.key, r);
                    }
                }
                Err(e) => {
                    for d in &g.members {
                        last.insert(
                            &d.key,
                            Readiness {
                                status: Status::Unknown,
                                message: format!("listing {}: {}", g.resource.gk, describe(&e)),
                            },
                        );
                    }
                }
            }
        }
        if let Some(slices) = endpoints {
            for (ns, keys) in services {
                let listed = cluster.list(slices, Some(ns), LABEL_SERVICE_NAME).await;
                for key in keys {
                    let r = match &listed {
                        Ok(all) => {
                            let mine: Vec<&Value> = all
                                .iter()
                                .filter(|s| {
                                    s.pointer("/metadata/labels")
                                        .and_then(|l| l.get(LABEL_SERVICE_NAME))
                                        .and_then(Value::as_str)
                                        == Some(key.name.as_str())
                                })
                                .collect();
                            readiness::service_endpoints(&mine)
                        }
                        Err(e) => Readiness {
                            status: Status::Unknown,
                            message: format!("listing EndpointSlices: {}", describe(e)),
                        },
                    };
                    last.insert(key, r);
                }
            }
        }
        pending.retain(|k| {
            !matches!(
                last.get(k).map(|r| r.status),
                Some(Status::Current | Status::Failed)
            )
        });
        let ready = last
            .values()
            .filter(|r| r.status == Status::Current)
            .count();
        progress.waiting(ready, &summary(targets, &last));
        let left = deadline.saturating_duration_since(Instant::now());
        if pending.is_empty() || left.is_zero() {
            break;
        }
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(MAX_POLL);
    }
    let mut out: Vec<NotReady> = targets
        .iter()
        .filter_map(|d| {
            let r = last.get(&d.key)?;
            (r.status != Status::Current).then(|| NotReady {
                key: d.key.clone(),
                status: r.status,
                message: r.message.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The EndpointSlice resource when the cluster keeps EndpointSlices for its Services and some
/// target is a Service that selects pods. A cluster keeps them when the `kubernetes` Service's
/// slice exists (every API server writes it); `kgc serve` writes none yet, and there a Service
/// is ready as kstatus says, at once.
async fn endpoint_slices<'a>(cluster: &'a ApiServer, targets: &[&Desired]) -> Option<&'a Resource> {
    let service = GroupKind::new("", "Service");
    if !targets
        .iter()
        .any(|d| d.key.gk == service && readiness::selects_pods(&d.object))
    {
        return None;
    }
    let r = cluster
        .catalog()
        .preferred(&GroupKind::new("discovery.k8s.io", "EndpointSlice"))?;
    let selector = format!("{LABEL_SERVICE_NAME}=kubernetes");
    match cluster.list(r, Some("default"), &selector).await {
        Ok(slices) if !slices.is_empty() => Some(r),
        _ => None,
    }
}

/// `Deployment 3/4, Job 1/1`: ready objects per kind.
fn summary(targets: &[&Desired], last: &BTreeMap<&ObjectKey, Readiness>) -> String {
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for d in targets {
        let e = by_kind.entry(&d.key.gk.kind).or_default();
        e.1 += 1;
        if last
            .get(&d.key)
            .is_some_and(|r| r.status == Status::Current)
        {
            e.0 += 1;
        }
    }
    by_kind
        .iter()
        .map(|(k, (ready, total))| format!("{k} {ready}/{total}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(e: &ListError) -> String {
    match e {
        ListError::Forbidden(m) => format!("forbidden: {m}"),
        ListError::NotFound => "the resource is not served".into(),
        ListError::Failed(m) => m.clone(),
    }
}
