//! Reading a decoded object the way Go code reads its typed struct: a missing field, `null` or a
//! value of an unexpected JSON type is the Go zero value, so validators never panic and never
//! fail on shape (the typed decode already reported shape problems).

use serde_json::{Map, Value};

static NULL: Value = Value::Null;

/// Field access with Go zero-value semantics.
pub(crate) trait Json {
    /// The value under `key`; `null` when absent or when `self` is not an object.
    fn at(&self, key: &str) -> &Value;
    /// A string field; `""` when absent or not a string.
    fn str_of(&self, key: &str) -> &str;
    /// A pointer-to-string field: `None` when absent, `null` or not a string.
    fn opt_str(&self, key: &str) -> Option<&str>;
    /// An integer field; 0 when absent or not an integer.
    fn int_of(&self, key: &str) -> i64;
    /// A pointer-to-integer field.
    fn opt_int(&self, key: &str) -> Option<i64>;
    /// A pointer-to-bool field.
    fn opt_bool(&self, key: &str) -> Option<bool>;
    /// A list field; empty when absent or not a list.
    fn list(&self, key: &str) -> &[Value];
    /// A map or struct field, if it is an object.
    fn obj(&self, key: &str) -> Option<&Map<String, Value>>;
    /// Whether a pointer, map or list field is set (present and not `null`).
    fn has(&self, key: &str) -> bool;
}

impl Json for Value {
    fn at(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }

    fn str_of(&self, key: &str) -> &str {
        self.at(key).as_str().unwrap_or_default()
    }

    fn opt_str(&self, key: &str) -> Option<&str> {
        self.at(key).as_str()
    }

    fn int_of(&self, key: &str) -> i64 {
        self.opt_int(key).unwrap_or(0)
    }

    fn opt_int(&self, key: &str) -> Option<i64> {
        self.at(key).as_i64()
    }

    fn opt_bool(&self, key: &str) -> Option<bool> {
        self.at(key).as_bool()
    }

    fn list(&self, key: &str) -> &[Value] {
        self.at(key)
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    fn obj(&self, key: &str) -> Option<&Map<String, Value>> {
        self.at(key).as_object()
    }

    fn has(&self, key: &str) -> bool {
        !self.at(key).is_null()
    }
}

/// A `map[string]string` field as sorted `(key, value)` pairs; non-string values read as "".
/// Sorting gives a stable error order where Go would iterate a map randomly.
pub(crate) fn string_map<'a>(v: &'a Value, key: &str) -> Vec<(&'a str, &'a str)> {
    let mut out: Vec<(&str, &str)> = v
        .obj(key)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

/// The items of a `[]string` field (non-strings read as "").
pub(crate) fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    v.list(key)
        .iter()
        .map(|s| s.as_str().unwrap_or_default())
        .collect()
}

/// Go zero values as JSON shows them: `null`, `""`, `0`, `false`, `[]` and `{}`.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.values().all(is_zero),
    }
}

/// apimachinery's `Semantic.DeepEqual` on decoded objects: a field that is absent, `null` or at
/// its zero value equals any other spelling of that zero value (Go cannot tell them apart, and
/// semantic equality treats nil and empty slices and maps alike).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter().all(|(k, v)| same(v, y.get(k).unwrap_or(&NULL)))
                && y.iter().all(|(k, v)| x.contains_key(k) || is_zero(v))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ if is_zero(a) && is_zero(b) => true,
        _ => a == b,
    }
}

/// [`same`] with the fields in `skip` of either object left out (the fields an update may
/// change), without copying the objects to remove them.
pub(crate) fn same_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    let kept = |(k, _): &(&String, &Value)| !skip.contains(&k.as_str());
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter()
                .filter(kept)
                .all(|(k, v)| same(v, y.get(k).unwrap_or(&NULL)))
                && y.iter()
                    .filter(kept)
                    .all(|(k, v)| x.contains_key(k) || is_zero(v))
        }
        (Value::Object(x), other) | (other, Value::Object(x)) => {
            x.iter().filter(kept).all(|(_, v)| is_zero(v)) && is_zero(other)
        }
        _ => same(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_values_compare_equal() {
        assert!(same(&json!({"a": null, "b": []}), &json!({})));
        assert!(same(&json!({"a": {"x": ""}}), &json!({"a": {}})));
        assert!(same(&json!([1, {"k": 0}]), &json!([1.0, {}])));
        assert!(!same(&json!({"a": 1}), &json!({})));
        assert!(!same(&json!({}), &json!({"a": "x"})));
        assert!(!same(&json!([1]), &json!([1, 2])));
    }

    #[test]
    fn same_except_ignores_the_skipped_fields() {
        let skip = ["replicas"];
        assert!(same_except(
            &json!({"replicas": 1, "a": 1}),
            &json!({"replicas": 2, "a": 1}),
            &skip
        ));
        assert!(same_except(&json!({"replicas": 1}), &json!({}), &skip));
        assert!(same_except(
            &json!({"replicas": 1, "a": ""}),
            &Value::Null,
            &skip
        ));
        assert!(!same_except(
            &json!({"replicas": 1, "a": 1}),
            &json!({"a": 2}),
            &skip
        ));
        assert!(!same_except(&json!({"a": 1}), &json!({}), &skip));
        assert!(!same_except(&Value::Null, &json!({"a": 1}), &skip));
    }

    #[test]
    fn accessors_read_wrong_types_as_zero() {
        let v = json!({"s": 3, "i": "x", "l": {}, "b": 1});
        assert_eq!(v.str_of("s"), "");
        assert_eq!(v.opt_int("i"), None);
        assert!(v.list("l").is_empty());
        assert_eq!(v.opt_bool("b"), None);
        assert_eq!(json!(5).str_of("x"), "");
        assert!(!v.has("missing"));
    }
}
