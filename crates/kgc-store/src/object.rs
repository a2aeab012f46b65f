//! How one object is held: its serialized JSON plus the few metadata fields that reads filter on.
//!
//! Objects are kept serialized because reads dominate: a LIST writes stored bytes straight into
//! the response, and a serialized object costs a fraction of the memory of a parsed
//! `serde_json::Value`. Writes parse, change and re-serialize one object, which costs
//! microseconds.

use std::collections::BTreeMap;
use std::sync::Arc;

use kgc_meta::Status;
use serde_json::{Map, Value};

/// One stored object version. Shared (`Arc`) between the live index, the watch log and readers.
#[derive(Debug, PartialEq, Eq)]
pub struct StoredObject {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: u64,
    /// `metadata.deletionTimestamp` is set: the object is being deleted.
    pub deleting: bool,
    pub labels: BTreeMap<String, String>,
    /// The object as JSON text, `metadata.resourceVersion` included.
    pub raw: Box<str>,
}

impl StoredObject {
    /// Builds the stored form of `value`, whose metadata the store has already filled in.
    pub(crate) fn from_value(value: &Value) -> Result<Arc<Self>, Status> {
        let raw = serde_json::to_string(value)
            .map_err(|e| Status::internal(format!("serializing object: {e}")))?;
        Self::from_meta(value.meta(), raw.into_boxed_str())
    }

    /// Rebuilds an object read back from disk.
    pub(crate) fn from_raw(raw: Box<str>) -> Result<Arc<Self>, Status> {
        let value: Value = serde_json::from_str(&raw)
            .map_err(|e| Status::internal(format!("stored object is not JSON: {e}")))?;
        Self::from_meta(value.meta(), raw)
    }

    /// The stored form of the object `raw`, whose `metadata` is `m`.
    pub(crate) fn from_meta(
        m: Option<&Map<String, Value>>,
        raw: Box<str>,
    ) -> Result<Arc<Self>, Status> {
        let get = |k: &str| m.and_then(|m| m.get(k));
        let s = |k: &str| {
            get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let resource_version = get("resourceVersion")
            .and_then(Value::as_str)
            .and_then(|rv| rv.parse().ok())
            .ok_or_else(|| Status::internal("stored object has no resourceVersion"))?;
        Ok(Arc::new(Self {
            namespace: s("namespace"),
            name: s("name"),
            uid: s("uid"),
            resource_version,
            deleting: get("deletionTimestamp").is_some_and(|t| !t.is_null()),
            labels: get("labels").map(string_map).unwrap_or_default(),
            raw,
        }))
    }

    /// The object as a JSON value.
    pub fn value(&self) -> Value {
        // The store only ever holds text it serialized itself.
        serde_json::from_str(&self.raw).unwrap_or(Value::Null)
    }
}

/// Reads a `map[string]string` field (labels, annotations); anything else is empty.
pub fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Typed access to `metadata` of an object being written. Every accessor tolerates missing or
/// mistyped fields: validation reports those, accessors never panic.
pub(crate) trait Meta {
    fn meta(&self) -> Option<&Map<String, Value>>;
    fn meta_mut(&mut self) -> &mut Map<String, Value>;

    fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta()?.get(key)?.as_str()
    }
    fn name(&self) -> &str {
        self.meta_str("name").unwrap_or_default()
    }
    fn uid(&self) -> &str {
        self.meta_str("uid").unwrap_or_default()
    }
    fn finalizers(&self) -> Vec<String> {
        str_list(self.meta().and_then(|m| m.get("finalizers")))
    }
    fn set_finalizers(&mut self, finalizers: Vec<String>) {
        if finalizers.is_empty() {
            self.meta_mut().remove("finalizers");
        } else {
            self.meta_mut()
                .insert("finalizers".into(), Value::from(finalizers));
        }
    }
    fn deletion_timestamp(&self) -> Option<&str> {
        self.meta_str("deletionTimestamp")
    }
    fn deletion_grace(&self) -> Option<i64> {
        self.meta()?.get("deletionGracePeriodSeconds")?.as_i64()
    }
    fn generation(&self) -> i64 {
        self.meta()
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }
    fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.meta_mut().insert(key.into(), value.into());
    }
}

impl Meta for Value {
    fn meta(&self) -> Option<&Map<String, Value>> {
        self.get("metadata")?.as_object()
    }

    fn meta_mut(&mut self) -> &mut Map<String, Value> {
        if !self.is_object() {
            *self = Value::Object(Map::new());
        }
        let obj = self.as_object_mut().expect("made an object above");
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        meta.as_object_mut().expect("made an object above")
    }
}

/// Reads a list of strings, skipping non-strings.
pub fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the value a field selector names (`spec.nodeName`, `involvedObject.uid`), rendered the
/// way upstream field sets render it: strings as-is, numbers and booleans as text.
pub fn field_value(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether two objects differ outside `metadata` and `status`: the rule for bumping
/// `metadata.generation` (apiextensions `customresource/strategy.go`; built-ins compare `.spec`,
/// which for kgc's kinds amounts to the same).
pub(crate) fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(old) != strip(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_accessors_tolerate_garbage() {
        let mut v = json!("not an object");
        assert_eq!(v.name(), "");
        assert!(v.finalizers().is_empty());
        v.set("name", "x");
        assert_eq!(v.name(), "x");
        let mut w = json!({"metadata": {"finalizers": ["a", 1, "b"]}});
        assert_eq!(w.finalizers(), vec!["a", "b"]);
        w.set_finalizers(vec![]);
        assert!(w["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn field_values_render_like_upstream() {
        let v = json!({"spec": {"hostNetwork": true, "nodeName": "n1"}, "status": {"replicas": 3}});
        assert_eq!(field_value(&v, "spec.hostNetwork").as_deref(), Some("true"));
        assert_eq!(field_value(&v, "spec.nodeName").as_deref(), Some("n1"));
        assert_eq!(field_value(&v, "status.replicas").as_deref(), Some("3"));
        assert_eq!(field_value(&v, "status.phase"), None);
    }

    #[test]
    fn generation_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"s": 2}});
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(!spec_changed(&a, &b));
        assert!(spec_changed(&a, &c));
        assert!(spec_changed(
            &json!({"data": {"k": "1"}}),
            &json!({"data": {"k": "2"}})
        ));
    }
}
