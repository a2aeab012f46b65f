//! The controller runtime of kgc: what every controller and collector stands on, inside
//! `kgc serve` and against any cluster.
#![forbid(unsafe_code)]

pub use kgc_client::backoff;
pub mod informer;
pub mod metrics;
pub mod queue;
