//! The disruption controller, which kube-controller-manager runs and `kgc serve` runs
//! in-process (or `kgc controller` against any cluster): it keeps each PodDisruptionBudget's
//! status, which the `pods/eviction` subresource spends (kubernetes/kubernetes
//! `pkg/controller/disruption/disruption.go`).
//!
//! - [`budget`]: the arithmetic of a budget — how many pods are expected (the replicas of the
//!   pods' controllers, or the matched pods for an integer `minAvailable`), how many must stay
//!   healthy, how many are, and so how many disruptions are allowed; the evictions still
//!   waiting for their pod to go (`disruptedPods`, forgotten after 2 minutes);
//! - [`controller`]: the controller on kgc-runtime: a budget is synced when it, one of its
//!   namespace's pods or one of its namespace's workloads changes, and again when an entry of
//!   its `disruptedPods` expires.
#![forbid(unsafe_code)]

pub mod budget;
pub mod controller;

pub use controller::{NAME, run};

/// Errors of a budget's sync; the budget is marked `SyncFailed` and retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The budget cannot be computed (a percentage that does not parse, a pod whose controller
    /// cannot be found): upstream's wording, shown in the budget's condition.
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
