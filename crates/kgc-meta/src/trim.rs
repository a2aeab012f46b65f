//! Objects as controllers cache them: without `metadata.managedFields`, as kube-controller-
//! manager's shared informers keep them (`kubernetes/kubernetes
//! cmd/kube-controller-manager/app/controllermanager.go`, `CreateControllerContext`: "Informer
//! transform to trim ManagedFields for memory efficiency").
//!
//! No controller reads them, and a controller that writes back an object it cached without
//! them keeps the stored ones: an update whose body has no managedFields is tracked against the
//! live object's (upstream's field manager, and kgc-managedfields). They are often the
//! largest part of an object (a pod's status manager alone names every condition and
//! container status field), so skipping them while parsing, not after, saves most of the
//! work of every watch event a cache takes in.

use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

const MANAGED_FIELDS: &str = "managedFields";

/// Parses an object's JSON text without its `metadata.managedFields`. Text that is not an
/// object with an object `metadata` is parsed whole, then trimmed.
pub fn parse_without_managed_fields(text: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    match de.deserialize_map(ObjectVisitor { depth: 0 }) {
        Ok(v) => de.end().map(|()| v),
        Err(_) => serde_json::from_str(text).map(|mut v| {
            strip_managed_fields(&mut v);
            v
        }),
    }
}

/// Removes `metadata.managedFields` from an object already parsed.
pub fn strip_managed_fields(object: &mut Value) {
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        meta.remove(MANAGED_FIELDS);
    }
}

/// The object (`depth` 0) or its `metadata` (`depth` 1): a map whose values are parsed whole,
/// but for `metadata` itself and the metadata's `managedFields`.
struct ObjectVisitor {
    depth: u8,
}

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match (self.depth, key.as_str()) {
                (0, "metadata") => {
                    let meta = map.next_value_seed(ObjectVisitor { depth: 1 })?;
                    out.insert(key, meta);
                }
                (1, MANAGED_FIELDS) => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    out.insert(key, value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

impl<'de> DeserializeSeed<'de> for ObjectVisitor {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn managed_fields_are_skipped_and_the_rest_kept() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "labels": {"app": "a"},
                "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
            },
            "spec": {"nodeName": "n", "managedFields": "a spec field of the same name stays"},
            "status": {"phase": "Running"},
        });
        let parsed = parse_without_managed_fields(&object.to_string()).unwrap();
        let mut expected = object.clone();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(parsed, expected);
        let mut stripped = object;
        strip_managed_fields(&mut stripped);
        assert_eq!(stripped, expected);
    }

    #[test]
    fn text_of_another_shape_is_parsed_whole() {
        for text in [
            r#"{"metadata": null, "a": 1}"#,
            "[1, 2]",
            "7",
            r#"{"a": {}}"#,
        ] {
            assert_eq!(
                parse_without_managed_fields(text).unwrap(),
                serde_json::from_str::<Value>(text).unwrap(),
                "{text}"
            );
        }
        assert!(parse_without_managed_fields(r#"{"a": 1} trailing"#).is_err());
        assert!(parse_without_managed_fields("{").is_err());
    }
}
