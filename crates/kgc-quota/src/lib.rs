//! ResourceQuota's logic, as kubernetes/kubernetes computes it, with no I/O: the API server's
//! admission plugin and the resource-quota controller both call it.
//!
//! - [`evaluator`]: which evaluator measures a resource (pods, Services, claims, any other as
//!   an object count) and what an object charges;
//! - [`admission`]: whether a write fits a quota, and the quota's new usage
//!   (upstream's `CheckRequest`);
//! - [`usage`]: a quota's recalculated status from its namespace's objects;
//! - [`scope`]: scopes and scope selectors; [`resources`]: resource-list arithmetic.
#![forbid(unsafe_code)]

pub mod admission;
pub mod evaluator;
pub mod object_count;
mod persistent_volume_claims;
mod pods;
pub mod resources;
pub mod scope;
mod services;
pub mod usage;

pub use admission::{Quota, Refusal, Request, charge, charge_to, concerns, refund};
pub use evaluator::{Evaluator, Operation};
pub use resources::ResourceList;
