//! A component's value walked for Kubernetes objects, as qbec walks it (splunk/qbec
//! `internal/eval/object-extract.go`): an object with a string `kind` and `apiVersion` is a
//! Kubernetes object (one whose `items` is a list is a list, and its items are walked);
//! any other object's values and any list's elements are walked; `null` is nothing; anything
//! else is an error naming its path (`$.a.b[2]`).

use serde_json::Value;

/// The objects in `value`, in the order found (object keys in key order).
pub(crate) fn objects(value: Value) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    walk("$".to_owned(), value, &mut out)?;
    Ok(out)
}

fn walk(path: String, value: Value, out: &mut Vec<Value>) -> Result<(), String> {
    match value {
        Value::Null => Ok(()),
        Value::Array(items) => {
            for (i, item) in items.into_iter().enumerate() {
                walk(format!("{path}[{i}]"), item, out)?;
            }
            Ok(())
        }
        Value::Object(mut map) => {
            let is_k8s = ["kind", "apiVersion"].iter().all(|f| {
                map.get(*f)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            });
            if !is_k8s {
                for (k, v) in map {
                    walk(format!("{path}.{k}"), v, out)?;
                }
                return Ok(());
            }
            if let Some(Value::Array(_)) = map.get("items") {
                let items = map.remove("items").unwrap_or_default();
                return walk(format!("{path}.items"), items, out);
            }
            let object = Value::Object(map);
            let named = |f: &str| {
                object
                    .pointer(&format!("/metadata/{f}"))
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            if !named("name") && !named("generateName") {
                return Err(format!("object did not have a name at path {path:?}"));
            }
            check_metadata(&object, &path)?;
            out.push(object);
            Ok(())
        }
        other => Err(format!(
            "non-kubernetes object found while evaluating path {path:?} (found {})",
            type_name(&other)
        )),
    }
}

/// qbec's `AssertMetadataValid`: labels and annotations are maps of strings (a `null` value
/// is tolerated, as there).
fn check_metadata(object: &Value, path: &str) -> Result<(), String> {
    for field in ["labels", "annotations"] {
        let Some(m) = object.pointer(&format!("/metadata/{field}")) else {
            continue;
        };
        let ok = match m {
            Value::Null => true,
            Value::Object(map) => map.values().all(|v| v.is_string() || v.is_null()),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "object at path {path:?}: metadata.{field} must map names to strings"
            ));
        }
    }
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    }

    #[test]
    fn nested_objects_lists_and_kubernetes_lists_are_walked() {
        let value = json!({
            "b": [cm("b1"), null, {"deeper": cm("b2")}],
            "a": cm("a"),
            "list": {"apiVersion": "v1", "kind": "List", "items": [cm("l1"), [cm("l2")]]},
        });
        let names: Vec<String> = objects(value)
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a", "b1", "b2", "l1", "l2"]);
    }

    #[test]
    fn leaves_that_are_not_objects_are_errors_naming_the_path() {
        let err = objects(json!({"a": [cm("x"), "oops"]})).unwrap_err();
        assert!(
            err.contains("\"$.a[1]\"") && err.contains("a string"),
            "{err}"
        );
        let err = objects(json!(3)).unwrap_err();
        assert!(err.contains("\"$\"") && err.contains("a number"), "{err}");
        let err = objects(json!({"x": {"apiVersion": "v1", "kind": "ConfigMap"}})).unwrap_err();
        assert!(err.contains("did not have a name at path \"$.x\""), "{err}");
        let mut bad = cm("x");
        bad["metadata"]["labels"] = json!({"a": 1});
        let err = objects(bad).unwrap_err();
        assert!(err.contains("metadata.labels"), "{err}");
    }
}
