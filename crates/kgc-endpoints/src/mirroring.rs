//! The EndpointSlice mirroring controller (kubernetes `pkg/controller/endpointslicemirroring/
//! endpointslicemirroring_controller.go`, `utils.go`): Endpoints written by hand for a Service
//! without a selector are mirrored into EndpointSlices managed by
//! `endpointslicemirroring-controller.k8s.io`, so that readers of slices see them too. Each
//! subset's ports make a port set; its `addresses` are ready endpoints, its
//! `notReadyAddresses` not ready ones. Endpoints labelled
//! `endpointslice.kubernetes.io/skip-mirror: "true"` are not mirrored, nor are the endpoint
//! controller's own (their Service has a selector). The slices are owned by the Service, so
//! they go with it.

use std::time::Duration;

use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, Typed};
use kgc_runtime::{Context, ObjectKey};

use crate::endpointslice::Writer;
use crate::reconciler::{Desired, port_key};
use crate::services::{self, Watched};
use crate::{Config, LAST_CHANGE_TRIGGER_TIME, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "endpointslicemirroring";
/// The `managed-by` value of the mirrored slices.
pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
/// The label that turns mirroring off for one Endpoints object.
pub const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
const MANAGER: &str = "endpointslicemirroring-controller";
const WORKERS: usize = 5;

/// Runs the mirroring controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let (w, declared) = Watched::start(&ctx, NAME).await;
    let endpoints = ctx.informers.resource("", "endpoints").await;
    let endpoints = ctx.informers.cache::<Typed<Endpoints>>(endpoints);
    declared
        .watches(&endpoints, |key: &Key, _: Option<&Typed<Endpoints>>| {
            Some(ObjectKey(key.clone()))
        })
        .run_with(
            WORKERS,
            (ctx.clone(), w.clone(), endpoints.clone()),
            move |(ctx, w, endpoints), key: ObjectKey| async move {
                sync(&ctx, &w, &endpoints, config, &key.0)
                    .await
                    .map(|()| None::<Duration>)
            },
        )
        .await;
}

/// `syncEndpoints`.
async fn sync<C: Cluster>(
    ctx: &Context<C>,
    w: &Watched,
    endpoints: &Cache<Typed<Endpoints>>,
    config: Config,
    key: &Key,
) -> Result<()> {
    let Some(Typed(svc)) = w.services.get(key) else {
        return Ok(());
    };
    if services::has_selector(&svc) || svc.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let ep = endpoints.get(key).map(|Typed(e)| e);
    let mirrored = ep.as_ref().filter(|e| {
        e.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SKIP_MIRROR))
            .map(String::as_str)
            != Some("true")
    });
    let desired = mirrored.map(mirror).unwrap_or_default();
    let trigger = mirrored
        .and_then(|e| {
            e.metadata
                .annotations
                .as_ref()?
                .get(LAST_CHANGE_TRIGGER_TIME)
        })
        .cloned();
    let writer = Writer {
        managed_by: MANAGED_BY,
        field_manager: MANAGER,
        max: config.max_endpoints_per_slice,
        placeholder: false,
    };
    writer.write(ctx, &svc, key, &desired, trigger).await
}

/// The endpoints of an Endpoints object by port set (`addressesToEndpoints`): IPv4 addresses
/// only, as the slices are IPv4.
pub fn mirror(e: &Endpoints) -> Desired {
    let mut out = Desired::new();
    for subset in e.subsets.iter().flatten() {
        let ports: Vec<EndpointPort> = subset
            .ports
            .iter()
            .flatten()
            .map(|p| EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(p.port),
                protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                app_protocol: p.app_protocol.clone(),
            })
            .collect();
        let entry = out
            .entry(port_key(&ports))
            .or_insert_with(|| (ports, vec![]));
        let listed = [
            (&subset.addresses, true),
            (&subset.not_ready_addresses, false),
        ];
        for (addresses, ready) in listed {
            for a in addresses.iter().flatten() {
                if a.ip.parse::<std::net::Ipv4Addr>().is_ok() {
                    entry.1.push(endpoint(a, ready));
                }
            }
        }
    }
    out.retain(|_, (_, eps)| !eps.is_empty());
    out
}

fn endpoint(a: &EndpointAddress, ready: bool) -> Endpoint {
    Endpoint {
        addresses: vec![a.ip.clone()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(ready),
            terminating: Some(false),
        }),
        hostname: a.hostname.clone(),
        node_name: a.node_name.clone(),
        target_ref: a.target_ref.clone(),
        ..Endpoint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::EndpointSubset;

    fn addr(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..EndpointAddress::default()
        }
    }

    #[test]
    fn subsets_become_endpoints_by_port_set() {
        let e = Endpoints {
            subsets: Some(vec![EndpointSubset {
                addresses: Some(vec![addr("192.168.1.1"), addr("fd00::1")]),
                not_ready_addresses: Some(vec![addr("192.168.1.2")]),
                ports: Some(vec![k8s_openapi::api::core::v1::EndpointPort {
                    name: Some("db".into()),
                    port: 5432,
                    ..Default::default()
                }]),
            }]),
            ..Endpoints::default()
        };
        let d = mirror(&e);
        let (ports, eps) = d.values().next().unwrap();
        assert_eq!(ports[0].port, Some(5432));
        assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
        assert_eq!(eps.len(), 2);
        let ready: Vec<bool> = eps
            .iter()
            .map(|e| e.conditions.as_ref().unwrap().ready.unwrap())
            .collect();
        assert_eq!(ready, [true, false]);
    }
}
