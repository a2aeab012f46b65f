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
    /// A JSON patch with more operations than [`MAX_JSON_PATCH_OPERATIONS`].
    #[error(
        "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}"
    )]
    TooManyOperations(usize),
    /// The `copy` operations of a JSON patch would copy more than [`MAX_COPY_BYTES`] in all
    /// (evanphx/json-patch `AccumulatedCopySizeError`, whose words these are).
    #[error(
        "Unable to complete the copy, the accumulated size increase of copy is {accumulated}, exceeding the limit {MAX_COPY_BYTES}"
    )]
    CopyTooLarge { accumulated: usize },
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

/// The most operations a JSON patch may have (kubernetes/apiserver
/// `pkg/endpoints/handlers/patch.go` `maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes the `copy` operations of one JSON patch may copy in all, as serialized JSON
/// (kubernetes/apiserver `pkg/server/config.go` sets evanphx/json-patch's
/// `AccumulatedCopySizeLimit` to `JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Applies an RFC 6902 JSON patch atomically: on error `target` is unchanged.
///
/// A patch of 2 KB can otherwise build gigabytes: each `copy` of the document into itself
/// doubles it. So the operations are counted first, and each copy is measured *before* it
/// allocates, the sizes adding up against [`MAX_COPY_BYTES`] (upstream measures after copying;
/// measuring first bounds the memory a request can take as well).
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), Error> {
    if let Some(ops) = patch.as_array()
        && ops.len() > MAX_JSON_PATCH_OPERATIONS
    {
        return Err(Error::TooManyOperations(ops.len()));
    }
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(Error::Malformed)?;
    let mut work = target.clone();
    let mut copied = 0usize;
    for op in &ops.0 {
        if let json_patch::PatchOperation::Copy(copy) = op
            && let Ok(from) = copy.from.resolve(&work)
        {
            copied = copied.saturating_add(serialized_len(from));
            if copied > MAX_COPY_BYTES {
                return Err(Error::CopyTooLarge {
                    accumulated: copied,
                });
            }
        }
        // `work` is a copy, so the crate's own undo log is not needed.
        json_patch::patch_unsafe(&mut work, std::slice::from_ref(op)).map_err(Error::Apply)?;
    }
    *target = work;
    Ok(())
}

/// The length of `v` serialized as compact JSON, counted without building the text.
pub fn serialized_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
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

    #[test]
    fn json_patch_refuses_too_many_operations() {
        let op = json!({"op": "test", "path": "/a", "value": 1});
        let mut doc = json!({"a": 1});
        let ok = Value::Array(vec![op.clone(); MAX_JSON_PATCH_OPERATIONS]);
        json_patch(&mut doc, &ok).unwrap();
        let over = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1]);
        let e = json_patch(&mut doc, &over).unwrap_err();
        assert!(matches!(e, Error::TooManyOperations(10_001)));
        assert_eq!(
            e.to_string(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    /// Twenty copies of the document into itself would build 2^20 times its size; the copies
    /// stop as soon as their sizes add up past the limit, before they allocate.
    #[test]
    fn a_copy_chain_is_refused_before_it_allocates() {
        let mut doc = json!({"data": {"a": "x".repeat(1000)}});
        let ops: Vec<Value> = (0..20)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
            .collect();
        let before = doc.clone();
        let e = json_patch(&mut doc, &Value::Array(ops)).unwrap_err();
        let Error::CopyTooLarge { accumulated } = e else {
            panic!("expected CopyTooLarge, got {e}");
        };
        assert!(accumulated > MAX_COPY_BYTES && accumulated < 2 * MAX_COPY_BYTES + 4096);
        assert!(!Error::CopyTooLarge { accumulated }.is_malformed());
        assert_eq!(doc, before);
        // Copies that stay under the limit apply.
        let ops = json!([{"op": "copy", "from": "/data/a", "path": "/data/b"}]);
        json_patch(&mut doc, &ops).unwrap();
        assert_eq!(doc["data"]["b"], doc["data"]["a"]);
    }
}
