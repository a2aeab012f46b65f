//! The endpoints controller (kubernetes `pkg/controller/endpoint/endpoints_controller.go`): for
//! every Service with a selector, an Endpoints object of the same name listing the selected
//! pods' addresses, ready ones under `addresses`, the others under `notReadyAddresses`, grouped
//! into subsets by the ports they resolve to.
//!
//! The Endpoints carry the Service's labels and no owner reference (upstream sets none): when
//! the Service goes, this controller deletes them. More than [`MAX_CAPACITY`] addresses are
//! truncated and the object says so with `endpoints.kubernetes.io/over-capacity: truncated`.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, Typed};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, DeleteParams, PostParams};

use crate::pods::PodInfo;
use crate::services::{self, Watched};
use crate::{LAST_CHANGE_TRIGGER_TIME, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "endpoint";
/// `--concurrent-endpoint-syncs`.
const WORKERS: usize = 5;
const MANAGER: &str = "endpoint-controller";
/// The most addresses one Endpoints object lists (upstream `maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// The annotation of truncated Endpoints (`v1.EndpointsOverCapacity`).
pub const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

/// Runs the endpoints controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let (w, declared) = Watched::start(&ctx, NAME).await;
    let endpoints = ctx.informers.resource("", "endpoints").await;
    let endpoints = ctx.informers.cache::<Typed<Endpoints>>(endpoints);
    // Endpoints deleted by someone else are made again (`onEndpointsDelete`).
    declared
        .watches_deletions(&endpoints, |key: &Key, _: &Typed<Endpoints>| {
            Some(ObjectKey(key.clone()))
        })
        .run_with(
            WORKERS,
            (ctx.clone(), w.clone(), endpoints.clone()),
            |(ctx, w, endpoints), key: ObjectKey| async move {
                sync(&ctx, &w, &endpoints, &key.0)
                    .await
                    .map(|()| None::<Duration>)
            },
        )
        .await;
}

/// `syncService`.
async fn sync<C: Cluster>(
    ctx: &Context<C>,
    w: &Watched,
    endpoints: &Cache<Typed<Endpoints>>,
    key: &Key,
) -> Result<()> {
    let api: Api<Endpoints> = Api::namespaced(ctx.client.clone(), &key.0);
    let Some(Typed(svc)) = w.services.get(key) else {
        // The Service is gone: so are its Endpoints (they have no owner reference).
        w.triggers.delete(key);
        if endpoints.get(key).is_some() {
            match api.delete(&key.1, &DeleteParams::default()).await {
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                other => drop(other?),
            }
        }
        return Ok(());
    };
    if !services::has_selector(&svc) {
        return Ok(());
    }
    let pods = w.selected(&key.0, &svc);
    // Computed even when nothing is written, so that the tracker sees every sync (upstream's
    // `syncService` does the same).
    let trigger = w.triggers.compute(key, &svc, &pods);
    let (subsets, truncated) = desired_subsets(&svc, &pods);
    let labels = crate::child_labels(&svc);
    let current = endpoints.get(key).map(|Typed(e)| e);
    if let Some(cur) = &current {
        let annotated = cur
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OVER_CAPACITY))
            .is_some();
        if cur.subsets.clone().unwrap_or_default() == subsets
            && cur.metadata.labels.clone().unwrap_or_default() == labels
            && annotated == truncated
        {
            return Ok(());
        }
    }
    let mut meta = current
        .as_ref()
        .map(|c| c.metadata.clone())
        .unwrap_or_else(|| ObjectMeta {
            name: Some(key.1.clone()),
            namespace: Some(key.0.clone()),
            ..ObjectMeta::default()
        });
    meta.labels = Some(labels);
    let annotations = meta.annotations.get_or_insert_default();
    match trigger {
        Some(t) => annotations.insert(LAST_CHANGE_TRIGGER_TIME.to_owned(), t),
        None => annotations.remove(LAST_CHANGE_TRIGGER_TIME),
    };
    match truncated {
        true => annotations.insert(OVER_CAPACITY.to_owned(), "truncated".to_owned()),
        false => annotations.remove(OVER_CAPACITY),
    };
    meta.managed_fields = None;
    let new = Endpoints {
        metadata: meta,
        subsets: (!subsets.is_empty()).then_some(subsets),
    };
    let pp = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    match current {
        Some(_) => api.replace(&key.1, &pp, &new).await?,
        None => api.create(&pp, &new).await?,
    };
    Ok(())
}

/// The subsets of a Service's Endpoints from the pods it selects (sorted by name), and whether
/// they were truncated to [`MAX_CAPACITY`] addresses. A pod is listed once per set of ports it
/// resolves (a Service port whose named `targetPort` the pod lacks is left out for that pod, as
/// upstream's `FindPort` error skips it); subsets group the pods with the same ports
/// (`RepackSubsets`), addresses sorted by IP.
pub fn desired_subsets(svc: &Service, pods: &[PodInfo]) -> (Vec<EndpointSubset>, bool) {
    let publish = services::publish_not_ready(svc);
    let svc_name = svc.metadata.name.as_deref().unwrap_or_default();
    let ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    // Ports (as JSON, the grouping key) → (ports, ready, not ready).
    type Group = (
        Vec<EndpointPort>,
        Vec<EndpointAddress>,
        Vec<EndpointAddress>,
    );
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for pod in pods {
        if !pod.is_endpoint(publish) {
            continue;
        }
        let Some(ip) = pod.ips.first() else {
            continue;
        };
        let resolved: Vec<EndpointPort> = ports
            .iter()
            .filter_map(|p| {
                Some(EndpointPort {
                    name: p.name.clone(),
                    port: pod.find_port(p)?,
                    protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                    app_protocol: p.app_protocol.clone(),
                })
            })
            .collect();
        // A Service with ports none of which the pod has; a Service without ports lists its
        // pods only when headless.
        if resolved.is_empty() && (!ports.is_empty() || !services::headless(svc)) {
            continue;
        }
        let address = EndpointAddress {
            ip: ip.clone(),
            hostname: pod.hostname_for(svc_name),
            node_name: pod.node_name.clone(),
            target_ref: Some(ObjectReference {
                kind: Some("Pod".to_owned()),
                namespace: svc.metadata.namespace.clone(),
                name: Some(pod.name.clone()),
                uid: Some(pod.uid.clone()),
                ..ObjectReference::default()
            }),
        };
        let key = serde_json::to_string(&resolved).unwrap_or_default();
        let group = groups
            .entry(key)
            .or_insert_with(|| (resolved, vec![], vec![]));
        if publish || pod.ready {
            group.1.push(address);
        } else {
            group.2.push(address);
        }
    }
    let mut budget = MAX_CAPACITY;
    let total: usize = groups.values().map(|g| g.1.len() + g.2.len()).sum();
    let mut subsets: Vec<(
        Vec<EndpointPort>,
        Vec<EndpointAddress>,
        Vec<EndpointAddress>,
    )> = groups.into_values().collect();
    // Truncation keeps ready addresses first (upstream `truncateEndpoints` also prefers them).
    for pass in [1, 2] {
        for (_, ready, not_ready) in &mut subsets {
            let list = if pass == 1 { ready } else { not_ready };
            list.sort_by(|a, b| ip_order(&a.ip).cmp(&ip_order(&b.ip)));
            list.truncate(budget);
            budget -= list.len();
        }
    }
    let subsets = subsets
        .into_iter()
        .filter(|(_, r, n)| !r.is_empty() || !n.is_empty())
        .map(|(ports, ready, not_ready)| EndpointSubset {
            addresses: (!ready.is_empty()).then_some(ready),
            not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
            ports: (!ports.is_empty()).then_some(ports),
        })
        .collect();
    (subsets, total > MAX_CAPACITY)
}

/// IPs compared as addresses where they parse, as text otherwise.
fn ip_order(ip: &str) -> (Option<std::net::IpAddr>, &str) {
    (ip.parse().ok(), ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    pub(crate) fn service(cluster_ip: Option<&str>, ports: Vec<ServicePort>) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                selector: Some([("app".to_owned(), "web".to_owned())].into()),
                cluster_ip: cluster_ip.map(str::to_owned),
                ports: Some(ports),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    fn http() -> ServicePort {
        ServicePort {
            name: Some("http".into()),
            port: 80,
            target_port: Some(IntOrString::String("http".into())),
            protocol: Some("TCP".into()),
            ..ServicePort::default()
        }
    }

    fn pod(i: usize, ready: bool, named_port: bool) -> PodInfo {
        PodInfo {
            name: format!("p{i}"),
            uid: format!("u{i}"),
            ips: vec![format!("10.0.{}.{}", i / 250, i % 250 + 1)],
            ready,
            ports: if named_port {
                vec![("http".into(), 8080, "TCP".into())]
            } else {
                vec![]
            },
            restart_policy: "Always".into(),
            ..PodInfo::default()
        }
    }

    #[test]
    fn ready_and_not_ready_addresses_with_resolved_ports() {
        let svc = service(None, vec![http()]);
        let (subsets, truncated) =
            desired_subsets(&svc, &[pod(1, true, true), pod(2, false, true)]);
        assert!(!truncated);
        assert_eq!(subsets.len(), 1);
        let s = &subsets[0];
        assert_eq!(s.ports.as_ref().unwrap()[0].port, 8080);
        assert_eq!(s.addresses.as_ref().unwrap()[0].ip, "10.0.0.2");
        assert_eq!(s.not_ready_addresses.as_ref().unwrap()[0].ip, "10.0.0.3");
        let target = s.addresses.as_ref().unwrap()[0].target_ref.clone().unwrap();
        assert_eq!(target.name.as_deref(), Some("p1"));
    }

    #[test]
    fn a_pod_without_the_named_port_is_left_out() {
        let svc = service(None, vec![http()]);
        let (subsets, _) = desired_subsets(&svc, &[pod(1, true, true), pod(2, true, false)]);
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn publish_not_ready_lists_every_pod_as_ready() {
        let mut svc = service(None, vec![http()]);
        svc.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let (subsets, _) = desired_subsets(&svc, &[pod(1, false, true)]);
        assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 1);
        assert!(subsets[0].not_ready_addresses.is_none());
    }

    #[test]
    fn headless_without_ports_lists_addresses_only() {
        let svc = service(Some("None"), vec![]);
        let (subsets, _) = desired_subsets(&svc, &[pod(1, true, false)]);
        assert_eq!(subsets.len(), 1);
        assert!(subsets[0].ports.is_none());
        let not_headless = service(None, vec![]);
        assert!(
            desired_subsets(&not_headless, &[pod(1, true, false)])
                .0
                .is_empty()
        );
    }

    #[test]
    fn over_capacity_truncates_to_a_thousand_ready_first() {
        let svc = service(None, vec![http()]);
        let pods: Vec<PodInfo> = (0..1200).map(|i| pod(i, i % 2 == 0, true)).collect();
        let (subsets, truncated) = desired_subsets(&svc, &pods);
        assert!(truncated);
        let s = &subsets[0];
        assert_eq!(s.addresses.as_ref().unwrap().len(), 600);
        assert_eq!(s.not_ready_addresses.as_ref().unwrap().len(), 400);
    }
}
