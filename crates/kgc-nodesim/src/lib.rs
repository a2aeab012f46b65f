//! Simulated nodes, as kwok ("Kubernetes WithOut Kubelet") simulates them, built into
//! `kgc serve`: Nodes that register, hold a heartbeat Lease and post their status as a kubelet
//! does, at the cost of a few map entries each, and the node-lifecycle controller that judges
//! every Node (simulated or not) by those heartbeats.
//!
//! - [`simulator`] (`nodes-sim`): registers `--nodes` Nodes, and for every Node annotated
//!   `kgc.io/simulated: "true"` and not `kgc.io/stopped: "true"` fills in its pod CIDR, renews
//!   its Lease in `kube-node-lease` and posts its status;
//! - [`lifecycle`] (`node-lifecycle`): kube-controller-manager's node lifecycle controller: a
//!   Node whose heartbeat is older than the grace period gets Unknown conditions and the
//!   `node.kubernetes.io/unreachable` taints, removed when it is back;
//! - the pure parts: [`capacity`] (`--node-capacity`), [`registration`] (labels, address
//!   ranges), [`node_status`] (the kubelet's status setters), [`lease`].
#![forbid(unsafe_code)]

pub mod capacity;
pub mod lease;
pub mod lifecycle;
pub mod node_status;
pub mod registration;
pub mod simulator;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kgc_runtime::informer::View;
use serde_json::Value;

/// The annotation that makes a Node simulated (`"true"`).
pub const SIMULATED: &str = "kgc.io/simulated";
/// The annotation that stops a simulated Node (`"true"`): no lease renewal, no status.
pub const STOPPED: &str = "kgc.io/stopped";
/// Where nodes keep their heartbeat leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The source of the simulator's events (bad annotations).
pub const COMPONENT: &str = "kgc-nodesim";

/// The reference an event about a Node names it by, as upstream's `RecordNodeEvent`
/// (`kubernetes/kubernetes pkg/controller/util/node/controller_utils.go`) builds it.
pub fn node_reference(node: &Node) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..Default::default()
    }
}

/// The crate's errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `--node-capacity` entry that is not a valid resource quantity.
    #[error("{key}: {why}")]
    Capacity { key: String, why: String },
    /// A write through the API failed (retried with back-off).
    #[error(transparent)]
    Api(#[from] kube::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A Node as both controllers read it: the typed object, shared, so that the process caches
/// its Nodes once for them.
#[derive(Debug, Clone)]
pub struct NodeObject(pub Arc<Node>);

impl View for NodeObject {
    fn view(obj: &Value) -> Option<Self> {
        match serde_json::from_value::<Node>(obj.clone()) {
            Ok(n) => Some(Self(Arc::new(n))),
            Err(e) => {
                let name = obj["metadata"]["name"].as_str().unwrap_or_default();
                tracing::warn!(node = name, error = %e, "a Node that cannot be read");
                None
            }
        }
    }
}

impl NodeObject {
    /// The value of a `kgc.io/*` flag annotation: absent or `"false"` is off, `"true"` on;
    /// anything else is an error carrying the value.
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        match self
            .0
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
        {
            None => Ok(false),
            Some(v) if v == "true" => Ok(true),
            Some(v) if v == "false" => Ok(false),
            Some(v) => Err(v.clone()),
        }
    }

    /// Annotated `kgc.io/simulated: "true"`.
    pub fn is_simulated(&self) -> bool {
        self.flag(SIMULATED) == Ok(true)
    }

    /// Annotated `kgc.io/stopped: "true"`.
    pub fn is_stopped(&self) -> bool {
        self.flag(STOPPED) == Ok(true)
    }

    /// Carries the `kgc.io/simulated` annotation, whatever its value.
    pub fn claims_simulation(&self) -> bool {
        self.flag(SIMULATED) != Ok(false)
    }
}

/// `true` for a Conflict or NotFound answer: the object moved on under us.
fn is_status(e: &kube::Error, codes: &[u16]) -> bool {
    matches!(e, kube::Error::Api(s) if codes.contains(&s.code))
}
