//! The EndpointSlice controller (kubernetes `pkg/controller/endpointslice/
//! endpointslice_controller.go` `syncService`, `staging/src/k8s.io/endpointslice/utils.go`
//! `podToEndpoint`, `setEndpointSliceLabels`): for every Service with a selector, IPv4
//! EndpointSlices named `<service>-<suffix>`, owned by the Service (controller and
//! blockOwnerDeletion, so the garbage collector takes them with it), labelled with the
//! Service's labels, `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`,
//! each endpoint with its pod's conditions (`ready`, `serving`, `terminating`), node, zone and
//! reference; [`reconciler`](crate::reconciler) decides the writes.
//!
//! Each sync lists the Service's slices from the API server rather than a cache: a slice it
//! created a moment ago is then always seen, which upstream needs its `EndpointSliceTracker`
//! for. A cache of the slices only queues their Service when someone else changes them.

use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kgc_client::Cluster;
use kgc_runtime::informer::{Cache, Key, View};
use kgc_runtime::{Context, ObjectKey};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::Value;

use crate::pods::PodInfo;
use crate::reconciler::{self, Desired, Template};
use crate::services::{self, Watched};
use crate::{Config, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LAST_CHANGE_TRIGGER_TIME, Result};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "endpointslice";
/// The `managed-by` value of this controller's slices (`ControllerName`).
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// `--concurrent-service-endpoint-syncs`.
const WORKERS: usize = 5;
const MANAGER: &str = "endpointslice-controller";
/// The node label of an endpoint's zone (`v1.LabelTopologyZone`).
const LABEL_ZONE: &str = "topology.kubernetes.io/zone";

/// A slice this controller manages: the Service it names.
#[derive(Debug, Clone, PartialEq)]
struct Managed(String);

impl View for Managed {
    fn view(obj: &Value) -> Option<Self> {
        let labels = &obj["metadata"]["labels"];
        (labels[LABEL_MANAGED_BY] == MANAGED_BY)
            .then(|| Some(Managed(labels[LABEL_SERVICE_NAME].as_str()?.to_owned())))
            .flatten()
    }
}

/// A node's zone, when it has one.
#[derive(Debug, Clone, PartialEq)]
struct Zone(Option<String>);

impl View for Zone {
    fn view(obj: &Value) -> Option<Self> {
        Some(Zone(
            obj["metadata"]["labels"][LABEL_ZONE]
                .as_str()
                .map(str::to_owned),
        ))
    }
}

/// Runs the EndpointSlice controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config) {
    let (w, declared) = Watched::start(&ctx, NAME).await;
    let slices = ctx
        .informers
        .resource("discovery.k8s.io", "endpointslices")
        .await;
    let nodes = ctx.informers.resource("", "nodes").await;
    let slices = ctx.informers.cache::<Managed>(slices);
    let zones = ctx.informers.cache::<Zone>(nodes);
    zones.synced().await;
    // A slice of ours someone else changed or deleted: its Service looks again.
    declared
        .owns(&slices, |m: &Managed| Some(m.0.clone()))
        .run_with(
            WORKERS,
            (ctx.clone(), w.clone(), zones.clone()),
            move |(ctx, w, zones), key: ObjectKey| async move {
                sync(&ctx, &w, &zones, config, &key.0)
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
    zones: &Cache<Zone>,
    config: Config,
    key: &Key,
) -> Result<()> {
    // A deleted Service's slices are the garbage collector's.
    let Some(kgc_runtime::informer::Typed(svc)) = w.services.get(key) else {
        w.triggers.delete(key);
        return Ok(());
    };
    if !services::has_selector(&svc) || svc.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let pods = w.selected(&key.0, &svc);
    let desired = desired(&svc, &pods, zones);
    let trigger = w.triggers.compute(key, &svc, &pods);
    let writer = Writer {
        managed_by: MANAGED_BY,
        field_manager: MANAGER,
        max: config.max_endpoints_per_slice,
        placeholder: true,
    };
    writer.write(ctx, &svc, key, &desired, trigger).await
}

/// Writes a Service's slices of one manager: lists them, reconciles, creates, updates, deletes.
pub(crate) struct Writer {
    pub managed_by: &'static str,
    pub field_manager: &'static str,
    pub max: usize,
    /// Whether a Service without endpoints keeps an empty slice (the EndpointSlice
    /// controller's placeholder; the mirroring controller has none).
    pub placeholder: bool,
}

impl Writer {
    pub(crate) async fn write<C: Cluster>(
        &self,
        ctx: &Context<C>,
        svc: &Service,
        key: &Key,
        desired: &Desired,
        trigger: Option<String>,
    ) -> Result<()> {
        let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &key.0);
        let selector = format!(
            "{LABEL_SERVICE_NAME}={},{LABEL_MANAGED_BY}={}",
            key.1, self.managed_by
        );
        let uid = svc.metadata.uid.clone().unwrap_or_default();
        let existing: Vec<EndpointSlice> = api
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .into_iter()
            .filter(|s| {
                s.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid && r.controller == Some(true))
            })
            .collect();
        let mut plan = reconciler::reconcile(
            &template(svc, key, self.managed_by),
            &existing,
            desired,
            self.max,
        );
        if !self.placeholder {
            plan.create
                .retain(|s| !reconciler::endpoints_of(s).is_empty());
        }
        if plan.is_empty() {
            return Ok(());
        }
        let pp = PostParams {
            field_manager: Some(self.field_manager.to_owned()),
            ..PostParams::default()
        };
        let stamped = |mut s: EndpointSlice| {
            let a = s.metadata.annotations.get_or_insert_default();
            match &trigger {
                Some(t) => a.insert(LAST_CHANGE_TRIGGER_TIME.to_owned(), t.clone()),
                None => a.remove(LAST_CHANGE_TRIGGER_TIME),
            };
            s.metadata.managed_fields = None;
            s
        };
        // Creates and updates before deletes, as upstream: endpoints are never missing between.
        for s in plan.create {
            api.create(&pp, &stamped(s)).await?;
        }
        for s in plan.update {
            let name = s.metadata.name.clone().unwrap_or_default();
            api.replace(&name, &pp, &stamped(s)).await?;
        }
        for name in plan.delete {
            match api.delete(&name, &DeleteParams::default()).await {
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                other => drop(other?),
            }
        }
        Ok(())
    }
}

/// The slices' labels and owner (`setEndpointSliceLabels`, `ownerRef`).
fn template(svc: &Service, key: &Key, managed_by: &str) -> Template {
    let mut labels = crate::child_labels(svc);
    labels.insert(LABEL_SERVICE_NAME.to_owned(), key.1.clone());
    labels.insert(LABEL_MANAGED_BY.to_owned(), managed_by.to_owned());
    Template {
        namespace: key.0.clone(),
        service: key.1.clone(),
        labels,
        owner: OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Service".to_owned(),
            name: key.1.clone(),
            uid: svc.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
        address_type: "IPv4".to_owned(),
    }
}

/// The Service's endpoints by port set (`podToEndpoint`, `getEndpointPorts`): every pod with an
/// IPv4 address that is an endpoint, terminating ones included with their conditions.
fn desired(svc: &Service, pods: &[PodInfo], zones: &Cache<Zone>) -> Desired {
    let publish = services::publish_not_ready(svc);
    let svc_name = svc.metadata.name.as_deref().unwrap_or_default();
    let ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let mut out = Desired::new();
    for pod in pods {
        if !pod.is_endpoint(true) {
            continue;
        }
        let Some(ip) = pod.ipv4() else {
            continue;
        };
        let resolved: Vec<EndpointPort> = ports
            .iter()
            .filter_map(|p| {
                Some(EndpointPort {
                    name: Some(p.name.clone().unwrap_or_default()),
                    port: Some(pod.find_port(p)?),
                    protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                    app_protocol: p.app_protocol.clone(),
                })
            })
            .collect();
        let serving = pod.ready;
        let endpoint = Endpoint {
            addresses: vec![ip.to_owned()],
            conditions: Some(EndpointConditions {
                ready: Some(publish || (serving && !pod.terminating)),
                serving: Some(serving),
                terminating: Some(pod.terminating),
            }),
            hostname: pod.hostname_for(svc_name),
            node_name: pod.node_name.clone(),
            zone: pod
                .node_name
                .as_ref()
                .and_then(|n| zones.get(&(String::new(), n.clone())))
                .and_then(|z| z.0),
            target_ref: Some(k8s_openapi::api::core::v1::ObjectReference {
                kind: Some("Pod".to_owned()),
                namespace: svc.metadata.namespace.clone(),
                name: Some(pod.name.clone()),
                uid: Some(pod.uid.clone()),
                ..Default::default()
            }),
            ..Endpoint::default()
        };
        out.entry(reconciler::port_key(&resolved))
            .or_insert_with(|| (resolved, vec![]))
            .1
            .push(endpoint);
    }
    out
}
