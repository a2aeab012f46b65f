//! The controller runtime of kgc: what every controller and collector stands on, inside
//! `kgc serve` and against any cluster, in the shape of client-go's shared informers and
//! workqueue:
//!
//! - [`informer`]: one watch per resource per process, caches of views shared by their readers,
//!   event handlers;
//! - [`queue`]: the one work queue (de-duplicating, delaying, rate limited, with metrics);
//! - [`backoff`]: client-go's reflector back-off, with which failed watches are re-opened;
//! - [`metrics`]: the process's one metrics registry;
//! - [`decisions`]: the collectors' bounded history of what they deleted or orphaned, and why;
//! - [`correlator`]: the one event correlator every event recorder files through;
//! - [`events`]: the event `Recorder` every controller, collector and `kgc sync` records with;
//! - [`leader_election`]: client-go's leader election on a Lease, over kube-rs;
//! - [`Context`]: what every controller and collector shares; [`work`], [`run_by_name`] and
//!   [`run_per_namespace`]: the loops controllers run on, and [`run_workers`] under them, on
//!   which the collectors and the scheduler run too;
//! - [`Controller`]: a controller declared in kube-runtime's shape
//!   (`Controller::new(ctx, name, &objects).owns(&children, owner).watches(&other, mapper).run(workers, reconcile)`).
#![forbid(unsafe_code)]

pub use kgc_client::backoff;
mod context;
mod controller;
pub mod correlator;
pub mod decisions;
pub mod events;
pub mod informer;
pub mod leader_election;
pub mod metrics;
pub mod queue;
mod runner;

pub use context::Context;
pub use controller::{Controller, ObjectKey};
pub use runner::{Next, run_by_name, run_per_namespace, run_workers, work};

/// The runtime's one fallible operation: writing an event, through a controller's client or a
/// collector's cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Client(#[from] kube::Error),
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
}

impl Error {
    /// Whether the API server answered NotFound (a patched Event is gone).
    pub fn is_not_found(&self) -> bool {
        match self {
            Error::Client(kube::Error::Api(s)) => s.is_not_found(),
            Error::Client(_) => false,
            Error::Cluster(e) => e.is(kgc_meta::Reason::NotFound),
        }
    }
}
