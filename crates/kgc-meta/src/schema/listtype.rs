//! `x-kubernetes-list-type: set | map` in custom resources: a set may not repeat an item, a map
//! may not repeat a key tuple (apiextensions-apiserver `pkg/apiserver/schema/listtype/validation.go`).
//! The duplicate is named by its index and shown as Go's `%#v` shows it.

use serde_json::{Map, Value};

use crate::gojson::{go_json, go_quote};
use crate::validation::{FieldError, FieldErrorKind};

/// The key fields of a `map` list (`x-kubernetes-list-map-keys`; none when absent).
pub(super) fn map_keys(schema: &Value) -> Vec<&str> {
    schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The duplicates of `items` under the list type of `schema` (none for `atomic` or no type).
pub fn validate(items: &[Value], schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    errs.push(duplicate(path, i, go_value(item)));
                }
            }
        }
        Some("map") => {
            let keys = map_keys(schema);
            let key_of = |item: &Value| -> Map<String, Value> {
                keys.iter()
                    .filter_map(|k| item.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                    .collect()
            };
            let seen: Vec<Map<String, Value>> = items.iter().map(key_of).collect();
            for (i, key) in seen.iter().enumerate() {
                if items[i].is_object() && seen[..i].contains(key) {
                    errs.push(duplicate(path, i, go_map(key)));
                }
            }
        }
        _ => {}
    }
    errs
}

fn duplicate(path: &str, index: usize, rendered: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Duplicate,
        field: format!("{path}[{index}]"),
        value: Some(rendered),
        detail: String::new(),
    }
}

/// A scalar as `field.Duplicate` prints it (`"a"`, `1`, `true`), anything else as Go's `%#v` of
/// the unstructured value.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Object(m) => go_map(m),
        Value::Array(_) | Value::Null => format!("[]interface {{}}{}", go_json(v)),
        other => other.to_string(),
    }
}

/// Go's `%#v` of a `map[string]interface{}`: keys sorted, `"k":v` pairs joined by `, `.
fn go_map(m: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let pairs: Vec<String> = keys
        .iter()
        .map(|k| format!("{}:{}", go_quote(k), go_value(&m[*k])))
        .collect();
    format!("map[string]interface {{}}{{{}}}", pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_and_maps_refuse_duplicates_as_upstream_words_them() {
        let set = json!({"type": "array", "x-kubernetes-list-type": "set"});
        let errs = validate(&[json!("a"), json!("b"), json!("a")], &set, "spec.tags");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].to_string(), "spec.tags[2]: Duplicate value: \"a\"");
        assert!(validate(&[json!(1), json!(2)], &set, "spec.tags").is_empty());

        let map = json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "port"]});
        let items = [
            json!({"name": "a", "port": 80, "x": 1}),
            json!({"name": "a", "port": 81}),
            json!({"name": "a", "port": 80, "x": 2}),
        ];
        let errs = validate(&items, &map, "spec.ports");
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"a\", \"port\":80}"
        );
        let atomic = json!({"type": "array"});
        assert!(validate(&[json!("a"), json!("a")], &atomic, "x").is_empty());
    }
}
