//! Node garbage collection: the kubelet's image GC and container, sandbox and pod-log GC, as
//! pure functions from a [`Snapshot`] of a container runtime to a [`Plan`], and a CRI v1 client
//! ([`cri`]) that records snapshots from a live runtime and carries plans out.
//!
//! Keeping the policies pure (no I/O, time passed in) is what lets `kgc node gc --dry-run`
//! show exactly what a pass would do, lets `kgc node simulate` replay a policy over days in
//! milliseconds, and lets the upstream unit tests be ported case by case.
#![forbid(unsafe_code)]

pub mod containers;
pub mod cri;
mod fetch;
pub mod hash;
pub mod images;
mod intern;
pub mod plan;
pub mod simulate;
pub mod snapshot;

pub use containers::ContainerGcPolicy;
pub use images::{ImageGcPolicy, ImageRecords};
pub use plan::{GcState, Plan, Policy, plan};
pub use snapshot::Snapshot;

/// Everything that can go wrong in node GC, with the cause kept.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A policy that upstream's validation rejects (thresholds out of range, low ≥ high…).
    #[error("invalid policy: {0}")]
    Policy(String),
    /// A snapshot whose content cannot be planned over (named object and field).
    #[error("invalid snapshot: {0}")]
    Snapshot(String),
    /// The runtime endpoint is not a `unix://` URL.
    #[error("runtime endpoint {0:?}: only unix:// endpoints are supported")]
    Endpoint(String),
    /// The runtime's socket cannot be reached.
    #[error("connecting to the container runtime at {endpoint}: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// A CRI call failed (including timeouts, which tonic reports as `Cancelled`/`DeadlineExceeded`).
    #[error("CRI {rpc}: {}", .source.message())]
    Cri {
        rpc: &'static str,
        #[source]
        source: tonic::Status,
    },
    /// The runtime answered, but with something a conforming runtime never sends.
    #[error("CRI {rpc} answered garbage: {what}")]
    Garbage { rpc: &'static str, what: String },
    /// The image filesystem's capacity could not be read.
    #[error("statfs {path}: {source}")]
    Statfs {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
