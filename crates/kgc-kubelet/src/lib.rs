//! A simulated kubelet for every simulated node of `kgc serve` (a Node annotated
//! `kgc.io/simulated: "true"`, not `kgc.io/stopped: "true"`), in the manner of kwok but closer
//! to the kubelet: the pods bound to such a node get the status a kubelet writes, their
//! containers run, exit, restart with the crash back-off, and stop when the pod is deleted;
//! the node pulls images, keeps dead containers, and collects both with the kubelet's image
//! and container garbage collection, planned by kgc-node.
//!
//! - [`runtime`]: one pod's containers over time (pure);
//! - [`status`]: the API status from that (`generateAPIPodStatus`, pure);
//! - [`node`]: a node's images, dead containers and their garbage collection;
//! - [`kubelet`]: the controller: shared caches, one work queue, status writes;
//! - [`volumes`]: the Secrets, ConfigMaps and claims a pod needs before it starts;
//! - [`annotations`], [`image`], [`ipam`], [`qos`]: the small rules.
#![forbid(unsafe_code)]

pub mod annotations;
pub mod image;
pub mod ipam;
pub mod kubelet;
mod metrics;
pub use metrics::Metrics;
pub mod node;
pub mod qos;
pub mod runtime;
pub mod status;
pub mod volumes;

pub use kubelet::{Config, NAME, run, simulated_nodes};

/// The annotation that makes a Node simulated.
pub const SIMULATED: &str = "kgc.io/simulated";
/// The annotation that stops a simulated Node (its kubelet is down).
pub const STOPPED: &str = "kgc.io/stopped";

/// Everything that can go wrong in the simulated kubelet, with the cause kept.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A node's `spec.podCIDR` that gives no pod addresses.
    #[error("spec.podCIDR {0}")]
    PodCidr(String),
    /// Settings the kubelet would refuse (thresholds out of range…).
    #[error("kubelet settings: {0}")]
    Settings(#[from] kgc_node::Error),
    /// A write to the API failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
}
