//! The controller runtime of kgc: what every controller and collector stands on, inside
//! `kgc serve` and against any cluster.
#![forbid(unsafe_code)]

pub mod backoff;
pub mod metrics;
