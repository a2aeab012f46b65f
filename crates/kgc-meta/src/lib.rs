//! Kubernetes identities, the resource catalog, selectors and the object-metadata rules kgc
//! depends on.
//!
//! Everything here is pure: no I/O, no randomness, and only one reading of the system clock
//! ([`time::Clock`], which every other part asks for the time). The store, the API server and
//! every collector share these definitions, so a rule (say, which finalizer a DELETE adds, or
//! whether a name is valid) is written once and means the same everywhere.
#![forbid(unsafe_code)]

pub mod catalog;
pub mod crd;
pub mod defaults;
pub mod deletion;
pub mod disruption;
pub mod duration;
pub mod encoding;
pub mod gojson;
pub mod intstr;
pub mod object;
pub mod quantity;
pub mod schema;
pub mod selector;
pub mod status;
pub mod time;
pub mod trim;
pub mod validation;

pub use catalog::{
    Catalog, GcPolicy, GroupKind, GroupResource, GroupVersionKind, GroupVersionResource,
    ResourceInfo, Scope,
};
pub use deletion::{DeleteOptions, Preconditions, PropagationPolicy};
pub use object::{ObjectMeta, ObjectRef, OwnerReference};
pub use selector::{FieldSelector, LabelSelector};
pub use status::{Reason, Status};
pub use validation::FieldError;

/// Errors raised while interpreting user input that is not an object body (selectors, names of
/// resources and API versions). Object bodies are validated into [`FieldError`] lists instead,
/// because Kubernetes reports every invalid field at once.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A label selector that does not parse; `reason` names the offending token.
    #[error("unable to parse requirement: {reason}")]
    InvalidLabelSelector { selector: String, reason: String },
    /// A field selector that does not parse.
    #[error("invalid field selector {selector:?}: {reason}")]
    InvalidFieldSelector { selector: String, reason: String },
    /// An `apiVersion` that is not `version` or `group/version`.
    #[error("invalid apiVersion {0:?}: expected \"v1\" or \"group/version\"")]
    InvalidApiVersion(String),
}
