//! What the engine needs to know about a kind's shape: how each list merges.

use crate::FieldSet;
use serde_json::Value;

/// How the items of a list are identified and merged (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// The list is one value: replaced whole and owned whole.
    Atomic,
    /// Items are scalars identified by their value (`v:` path elements); merged as a union.
    Set,
    /// Items are objects identified by these key fields (`k:` path elements); merged by key.
    /// An empty key list behaves as [`ListType::Set`].
    Map(Vec<String>),
}

/// The caller's knowledge of a kind's schema.
///
/// `path` arguments are the field names from the object root with list items skipped, e.g.
/// `["spec", "template", "spec", "containers"]` for a Deployment's containers and
/// `["spec", "template", "spec", "containers", "ports"]` for their ports.
///
/// Every object (JSON map) is treated as a struct: its fields are tracked one by one, and a
/// field whose value is an object is owned through its leaves rather than as a whole.
pub trait Schema {
    /// The list type of the list at `path`.
    fn list_type(&self, path: &[&str]) -> ListType;

    /// Maps under this path are atomic (replaced whole, owned whole): `x-kubernetes-map-type:
    /// atomic`, e.g. `spec.selector` of a Deployment. Rare; default false.
    fn map_is_atomic(&self, _path: &[&str]) -> bool {
        false
    }

    /// The default of key field `key` of the list map at `path`, used when an item omits it
    /// (upstream takes it from the schema: `protocol` of container ports defaults to `"TCP"`).
    /// Default: none, and an item without a key field is rejected.
    fn list_map_key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }

    /// Fields whose ownership is never recorded for writes through `subresource` ("" for the
    /// main resource) because the strategy resets them, upstream's `ResetFieldsStrategy`: e.g.
    /// `status` for the main resource of kinds with a status subresource. Default: none.
    fn reset_fields(&self, _subresource: &str) -> FieldSet {
        FieldSet::new()
    }
}

/// A schema that knows only the lists every object has: `metadata.ownerReferences` (a map
/// keyed by `uid`), `metadata.finalizers` (a set) and `status.conditions` (a map keyed by
/// `type`). Every other list is atomic.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultSchema;

impl Schema for DefaultSchema {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path {
            ["metadata", "ownerReferences"] => ListType::Map(vec!["uid".to_string()]),
            ["metadata", "finalizers"] => ListType::Set,
            ["status", "conditions"] => ListType::Map(vec!["type".to_string()]),
            _ => ListType::Atomic,
        }
    }
}
