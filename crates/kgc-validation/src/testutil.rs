//! Helpers shared by the unit tests: building variants of a valid object and rendering errors
//! as the strings upstream's tests compare.

use serde_json::Value;

use crate::field::Errors;

/// `v` with the value at the JSON pointer `pointer` replaced (parents created as needed).
pub(crate) fn set(mut v: Value, pointer: &str, to: Value) -> Value {
    let mut slot = &mut v;
    for part in pointer.split('/').skip(1) {
        if let Value::Array(items) = slot {
            let i: usize = part.parse().expect("array index");
            slot = &mut items[i];
            continue;
        }
        if !slot.is_object() {
            *slot = Value::Object(serde_json::Map::new());
        }
        slot = slot
            .as_object_mut()
            .expect("object")
            .entry(part.to_owned())
            .or_insert(Value::Null);
    }
    *slot = to;
    v
}

/// The rendered errors a validator appends.
pub(crate) fn messages(f: impl FnOnce(&mut Errors)) -> Vec<String> {
    let mut e = Errors::default();
    f(&mut e);
    e.into_vec().iter().map(ToString::to_string).collect()
}

/// The rendered errors of a kind validator for a write described as `validate` takes it.
pub(crate) fn check(
    f: fn(&Value, crate::Op<'_>, &mut Errors),
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<String> {
    let op = match (old, subresource) {
        (None, _) => crate::Op::Create,
        (Some(old), None) => crate::Op::Update(old),
        (Some(old), Some(sub)) => crate::Op::Subresource(sub, old),
    };
    messages(|e| f(obj, op, e))
}
