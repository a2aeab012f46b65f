//! Decoding request bodies while noticing duplicate fields.
//!
//! A JSON object may repeat a key; Go's decoder keeps the last value, and kube-apiserver's strict
//! decoder (kubernetes-sigs/json `UnmarshalStrict` with `DisallowDuplicateFields`) also reports
//! each repetition as `duplicate field "<path>"`, the path being the field stack from the root
//! (`metadata.name`, `spec.containers[0].name`, map keys included: `metadata.labels.app`). What
//! the server does with them depends on `fieldValidation`: `Strict` refuses the request, `Warn`
//! (the default) answers with a `Warning` header, `Ignore` says nothing. `serde_json::Value`
//! silently keeps the last value, so bodies are decoded here instead, into the same `Value`
//! (last value wins) plus the list of repeated paths.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A decoded body and the duplicate fields it had, in document order.
#[derive(Debug, Default)]
pub struct Decoded {
    pub value: Value,
    pub duplicates: Vec<String>,
}

/// Upstream stops collecting strict errors at 100 (kubernetes-sigs/json
/// `internal/golang/encoding/json/kubernetes_patch.go`).
const MAX_DUPLICATES: usize = 100;

/// One step of the field stack.
enum Step {
    Key(String),
    Index(usize),
}

#[derive(Default)]
struct Context {
    path: Vec<Step>,
    duplicates: Vec<String>,
}

impl Context {
    fn record(&mut self, key: &str) {
        if self.duplicates.len() >= MAX_DUPLICATES {
            return;
        }
        let mut out = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Step::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
        self.duplicates.push(out);
    }
}

/// Notes where the decoder is, for the paths of repeated keys.
trait Track {
    fn enter_key(&self, key: &str);
    fn enter_index(&self, index: usize);
    fn leave(&self);
    /// `key` repeats in the object being decoded.
    fn duplicate(&self, key: &str);
}

impl Track for RefCell<Context> {
    fn enter_key(&self, key: &str) {
        self.borrow_mut().path.push(Step::Key(key.to_owned()));
    }

    fn enter_index(&self, index: usize) {
        self.borrow_mut().path.push(Step::Index(index));
    }

    fn leave(&self) {
        self.borrow_mut().path.pop();
    }

    fn duplicate(&self, key: &str) {
        self.borrow_mut().record(key);
    }
}

/// Tracks nothing, only whether any key repeats: the first pass over a body, which for almost
/// every body is the only one (paths cost an allocation per key).
struct Repeats(Cell<bool>);

impl Track for Repeats {
    fn enter_key(&self, _: &str) {}

    fn enter_index(&self, _: usize) {}

    fn leave(&self) {}

    fn duplicate(&self, _: &str) {
        self.0.set(true);
    }
}

/// Decodes `bytes` as JSON. Bodies without a repeated key are read once, as fast as
/// `serde_json::Value` reads them; the rare body with one is read again to name its paths.
pub fn from_json(bytes: &[u8]) -> Result<Decoded, serde_json::Error> {
    let repeats = Repeats(Cell::new(false));
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = ValueSeed(&repeats).deserialize(&mut de)?;
    de.end()?;
    if !repeats.0.get() {
        return Ok(Decoded {
            value,
            duplicates: Vec::new(),
        });
    }
    let context = RefCell::new(Context::default());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = ValueSeed(&context).deserialize(&mut de)?;
    Ok(Decoded {
        value,
        duplicates: context.into_inner().duplicates,
    })
}

/// Decodes `text` as YAML (one document). Keys that are not strings (`1: a`, `true: b`) become
/// their string form, as the YAML-to-JSON conversion kube-apiserver runs does.
pub fn from_yaml(text: &str) -> Result<Decoded, serde_saphyr::Error> {
    // Repeated keys reach the visitor, which keeps the last and records them.
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
    };
    YAML_CONTEXT.with(|c| *c.borrow_mut() = Context::default());
    let parsed = serde_saphyr::from_str_with_options::<YamlValue>(text, options);
    let context = YAML_CONTEXT.with(|c| std::mem::take(&mut *c.borrow_mut()));
    Ok(Decoded {
        value: parsed?.0,
        duplicates: context.duplicates,
    })
}

thread_local! {
    /// serde-saphyr takes a type, not a seed: the field stack of the YAML document being decoded
    /// on this thread (decoding is synchronous, so one at a time).
    static YAML_CONTEXT: RefCell<Context> = RefCell::default();
}

/// A YAML document decoded with [`ValueSeed`] over [`YAML_CONTEXT`].
struct YamlValue(Value);

impl<'de> serde::Deserialize<'de> for YamlValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        YAML_CONTEXT.with(|c| ValueSeed(c).deserialize(deserializer).map(YamlValue))
    }
}

struct ValueSeed<'c, T>(&'c T);

impl<T> Clone for ValueSeed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ValueSeed<'_, T> {}

impl<'de, T: Track> DeserializeSeed<'de> for ValueSeed<'_, T> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Track> Visitor<'de> for ValueSeed<'_, T> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    /// Not-a-number and the infinities (YAML has them) become `null`, as `serde_json::Value`'s
    /// own decoding makes them.
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            self.0.enter_index(items.len());
            let item = seq.next_element_seed(self);
            self.0.leave();
            match item? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            self.0.enter_key(&key);
            let value = map.next_value_seed(self);
            self.0.leave();
            let value = value?;
            match out.entry(key) {
                serde_json::map::Entry::Occupied(mut slot) => {
                    self.0.duplicate(slot.key());
                    slot.insert(value);
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// An object key: a string, or the string form of a YAML boolean or number key (sigs.k8s.io/yaml
/// `convertToJSONableObject`; any other key, `null` included, is an error there too).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_duplicates_are_reported_with_their_paths_and_the_last_value_wins() {
        let body = br#"{"metadata": {"name": "a", "labels": {"x": "1", "x": "2"}, "name": "b"},
            "spec": {"containers": [{"name": "c", "name": "d"}]}, "kind": "Pod", "kind": "Pod"}"#;
        let d = from_json(body).unwrap();
        assert_eq!(
            d.duplicates,
            [
                "metadata.labels.x",
                "metadata.name",
                "spec.containers[0].name",
                "kind"
            ]
        );
        assert_eq!(d.value["metadata"]["name"], "b");
        assert_eq!(d.value["metadata"]["labels"]["x"], "2");
        assert_eq!(d.value["spec"]["containers"][0]["name"], "d");
    }

    #[test]
    fn json_without_duplicates_decodes_as_serde_json_does() {
        let text = r#"{"a": [1, -2, 3.5, true, null, "s", {"b": {}}], "c": 18446744073709551615}"#;
        let d = from_json(text.as_bytes()).unwrap();
        assert!(d.duplicates.is_empty());
        assert_eq!(d.value, serde_json::from_str::<Value>(text).unwrap());
        assert!(from_json(b"{\"a\": 1} trailing").is_err());
        assert!(from_json(b"{\"a\": ").is_err());
    }

    #[test]
    fn yaml_duplicates_are_reported_too() {
        let d = from_yaml("kind: ConfigMap\ndata:\n  a: '1'\n  a: '2'\n  1: x\n").unwrap();
        assert_eq!(d.duplicates, ["data.a"]);
        assert_eq!(
            d.value,
            json!({"kind": "ConfigMap", "data": {"a": "2", "1": "x"}})
        );
    }

    #[test]
    fn duplicates_stop_at_upstreams_limit() {
        let body = format!("{{{}}}", vec!["\"a\": 1"; 300].join(","));
        assert_eq!(from_json(body.as_bytes()).unwrap().duplicates.len(), 100);
    }
}
