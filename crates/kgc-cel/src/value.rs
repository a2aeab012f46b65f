//! JSON values as CEL sees them under a structural schema (apiextensions-apiserver
//! `pkg/apiserver/schema/cel/values.go`): an `integer` is an `int`, a `number` a `double` even
//! when written without a fraction, an object a map whose absent properties fail `has()`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Key, OptionalValue};
use serde_json::Value;

/// `value` as CEL sees it under `schema` (`None`: by its JSON type alone).
pub fn to_cel(value: &Value, schema: Option<&Value>) -> Cel {
    let kind = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (kind, n.as_i64(), n.as_u64()) {
            (Some("number"), _, _) => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
            (_, Some(i), _) => Cel::Int(i),
            (_, None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(i, item_schema)).collect(),
            ))
        }
        Value::Object(map) => {
            let properties = schema
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object);
            let additional = schema
                .and_then(|s| s.get("additionalProperties"))
                .filter(|a| a.is_object());
            let entries: HashMap<Key, Cel> = map
                .iter()
                .map(|(k, v)| {
                    let child = properties.and_then(|p| p.get(k)).or(additional);
                    (Key::String(Arc::new(k.clone())), to_cel(v, child))
                })
                .collect();
            Cel::from(entries)
        }
    }
}

/// A CEL map with string keys (a policy's `variables`).
pub fn map(entries: impl IntoIterator<Item = (String, Cel)>) -> Cel {
    let entries: HashMap<Key, Cel> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Cel::from(entries)
}

/// An `optional` of the value (`optionalOldSelf`): `optional.none()` when there is none.
pub fn optional(value: Option<Cel>) -> Cel {
    let opt = match value {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    };
    Cel::Opaque(Arc::new(opt))
}

/// A CEL result as JSON, for messages and callers that want plain data.
pub fn to_json(value: &Cel) -> Value {
    match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Cel::String(s) => Value::String(s.as_str().to_owned()),
        Cel::List(items) => Value::Array(items.iter().map(to_json).collect()),
        Cel::Map(map) => Value::Object(
            map.map
                .iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect(),
        ),
        other => Value::String(format!("{other:?}")),
    }
}

fn key_text(key: &Key) -> String {
    match key {
        Key::String(s) => s.as_str().to_owned(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"}}});
        let v = to_cel(&json!({"n": 1, "i": 2}), Some(&schema));
        let Cel::Map(m) = v else { panic!("not a map") };
        assert_eq!(
            m.get(&Key::String(Arc::new("n".into()))),
            Some(&Cel::Float(1.0))
        );
        assert_eq!(
            m.get(&Key::String(Arc::new("i".into()))),
            Some(&Cel::Int(2))
        );
    }
}
