//! Patches over `serde_json::Value`: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
//! Kubernetes strategic merge patch ([`strategic`]).
//!
//! The API server applies them to stored objects; the apply and prune engine and the collectors
//! build them. Pure: no I/O.
#![forbid(unsafe_code)]

use serde_json::Value;

pub mod strategic;

/// Why a patch could not be applied. The API server answers these with 422 (a patch that does
/// not apply to this object) or 400 (a patch that is not a patch at all).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body is not a JSON patch document (an array of operations).
    #[error("invalid JSON patch: {0}")]
    Malformed(#[source] serde_json::Error),
    /// An operation failed against the object (missing path, failed `test`…).
    #[error("the JSON patch could not be applied: {0}")]
    Apply(#[source] json_patch::PatchError),
    /// A merge patch whose top level is not an object would replace the whole object.
    #[error("a merge patch must be a JSON object, got {0}")]
    NotAnObject(&'static str),
    /// A strategic merge patch that is not well formed: an unknown `$patch` value, `$patch: merge`
    /// on a list, a `$retainKeys` list missing a key the patch sets, a malformed
    /// `$setElementOrder`/`$deleteFromPrimitiveList`, a patch list item without its merge key…
    /// `field` is the dotted path of the offending field.
    #[error("invalid strategic merge patch at {field}: {reason}")]
    StrategicMalformed { field: String, reason: String },
    /// A strategic merge patch that does not fit this object (an item of a merge list without
    /// its merge key, list element types that differ, lists of lists…).
    #[error("the strategic merge patch could not be applied at {field}: {reason}")]
    StrategicInapplicable { field: String, reason: String },
}

impl Error {
    /// True when the patch itself is malformed (400) rather than inapplicable (422).
    pub fn is_malformed(&self) -> bool {
        matches!(
            self,
            Error::Malformed(_) | Error::NotAnObject(_) | Error::StrategicMalformed { .. }
        )
    }
}

/// Applies an RFC 7386 merge patch: objects merge recursively, `null` deletes, anything else
/// replaces.
pub fn merge(target: &mut Value, patch: &Value) -> Result<(), Error> {
    if !patch.is_object() {
        return Err(Error::NotAnObject(type_name(patch)));
    }
    json_patch::merge(target, patch);
    Ok(())
}

/// Applies an RFC 6902 JSON patch atomically: on error `target` is unchanged.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), Error> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(Error::Malformed)?;
    let mut work = target.clone();
    json_patch::patch(&mut work, &ops).map_err(Error::Apply)?;
    *target = work;
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 7386 appendix A examples.
    #[test]
    fn merge_patch_rfc7386_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (mut doc, patch, want) in cases {
            merge(&mut doc, &patch).unwrap();
            assert_eq!(doc, want, "patch {patch}");
        }
    }

    #[test]
    fn merge_patch_must_be_an_object() {
        let mut doc = json!({"a": 1});
        let e = merge(&mut doc, &json!([1])).unwrap_err();
        assert!(e.is_malformed());
        assert_eq!(doc, json!({"a": 1}));
    }

    #[test]
    fn json_patch_applies_all_or_nothing() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}});
        json_patch(
            &mut doc,
            &json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"},
                    {"op": "remove", "path": "/metadata/labels/a"}]),
        )
        .unwrap();
        assert_eq!(doc, json!({"metadata": {"labels": {"b": "2"}}}));
        let before = doc.clone();
        let e = json_patch(
            &mut doc,
            &json!([{"op": "add", "path": "/metadata/labels/c", "value": "3"},
                    {"op": "test", "path": "/metadata/labels/b", "value": "nope"}]),
        )
        .unwrap_err();
        assert!(!e.is_malformed());
        assert_eq!(doc, before);
        assert!(
            json_patch(&mut doc, &json!({"op": "add"}))
                .unwrap_err()
                .is_malformed()
        );
    }
}
