//! The client-side apply annotation and server-side apply (apimachinery
//! `managedfields/internal/lastappliedmanager.go`, `lastappliedupdater.go`, `lastapplied.go`).
//!
//! When the manager is exactly `kubectl` (what `kubectl apply --server-side` uses), conflicts on
//! fields the annotation records with the live value are forced (the upgrade path from
//! client-side apply), and the annotation of an object that has one is rewritten to the applied
//! configuration.

use crate::typed::{compare, to_field_set};
use crate::{FieldSet, Schema};
use kgc_meta::gojson;
use serde_json::{Map, Value};

/// `kubectl.kubernetes.io/last-applied-configuration`.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only manager name the upgrade logic applies to.
pub(crate) const KUBECTL_MANAGER: &str = "kubectl";

/// Upstream's total annotation size limit (`TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn last_applied(obj: &Value) -> Option<&str> {
    obj.get("metadata")?
        .get("annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// Fields the annotation of `live` records with the value `live` has: conflicts on them are
/// allowed. None when there is no usable annotation.
pub(crate) fn allowed_conflicts(
    live: &Value,
    api_version: &str,
    schema: &dyn Schema,
) -> Option<FieldSet> {
    let text = last_applied(live)?;
    let applied: Value = serde_json::from_str(text).ok()?;
    if !applied.is_object()
        || applied.get("apiVersion").and_then(Value::as_str) != Some(api_version)
    {
        return None;
    }
    let set = to_field_set(&applied, schema, false).ok()?;
    let cmp = compare(&applied, live, false, schema).ok()?;
    Some(
        set.difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// Rewrites the annotation of `obj` (if it has one) to `config` without the annotation, encoded
/// as Go encodes it, with the trailing newline; drops it when annotations would exceed the size
/// limit.
pub(crate) fn update_annotation(obj: &mut Value, config: &Value) {
    if last_applied(obj).is_none() {
        return;
    }
    let mut config = config.clone();
    if let Some(Value::Object(ann)) = config
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        ann.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = gojson::go_json(&config);
    text.push('\n');
    let Some(Value::Object(ann)) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    else {
        return;
    };
    ann.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(text));
    if annotations_size(ann) > TOTAL_ANNOTATION_SIZE_LIMIT {
        ann.remove(LAST_APPLIED_ANNOTATION);
    }
}

fn annotations_size(ann: &Map<String, Value>) -> usize {
    ann.iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum()
}
