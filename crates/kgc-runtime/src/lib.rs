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
//! - [`events`]: the event `Recorder` every controller records with;
//! - [`leader_election`]: client-go's leader election on a Lease, over kube-rs;
//! - [`Context`]: what every controller shares; [`work`], [`run_by_name`] and
//!   [`run_per_namespace`]: the loops controllers run on.
#![forbid(unsafe_code)]

pub use kgc_client::backoff;
mod context;
pub mod correlator;
pub mod decisions;
pub mod events;
pub mod informer;
pub mod leader_election;
pub mod metrics;
pub mod queue;
mod runner;

pub use context::Context;
pub use runner::{run_by_name, run_per_namespace, work};
