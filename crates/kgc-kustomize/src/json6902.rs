//! JSON 6902 patches as kustomize applies them (`kubernetes-sigs/kustomize
//! api/filters/patchjson6902`, over evanphx/json-patch v4), through `kgc_patch::json_patch`.
//!
//! evanphx v4 differs from RFC 6902 in two ways builds depend on, kept here: `replace` of a key
//! missing from an object that exists adds it, and `copy` from a key missing from an object that
//! exists copies `null`. Its messages are kept too (`testing value /spec/replicas failed: test
//! failed`, `error in remove for path: '/spec/x': Unable to remove nonexistent key: x: missing
//! value`). Operations apply one by one on a copy (so the result is all or nothing), with
//! kgc-patch's bounds: as many operations, and as many bytes copied in all, as the API server
//! allows.

use kgc_patch::{MAX_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, serialized_len};
use serde_json::{Value, json};

/// Applies `ops` to `object`, all or nothing; the error is kustomize's message.
pub fn apply(object: &mut Value, ops: &[Value]) -> Result<(), String> {
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(kgc_patch::Error::TooManyOperations(ops.len()).to_string());
    }
    let mut work = object.clone();
    let mut copied = 0usize;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
        let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
        let from = op.get("from").and_then(Value::as_str).unwrap_or_default();
        let op = match kind {
            "add" | "remove" | "test" | "move" => op.clone(),
            "replace" if missing_key_of_object(&work, path) => {
                json!({"op": "add", "path": path, "value": op.get("value")})
            }
            "replace" => op.clone(),
            "copy" => {
                let value = match work.pointer(from) {
                    Some(v) => v,
                    None if missing_key_of_object(&work, from) => &Value::Null,
                    None => {
                        return Err(format!(
                            "error in copy for from: '{from}': {}",
                            missing(&work, from)
                        ));
                    }
                };
                copied = copied.saturating_add(serialized_len(value));
                if copied > MAX_COPY_BYTES {
                    return Err(kgc_patch::Error::CopyTooLarge {
                        accumulated: copied,
                    }
                    .to_string());
                }
                json!({"op": "add", "path": path, "value": value})
            }
            other => return Err(format!("Unexpected kind: {other}")),
        };
        kgc_patch::json_patch(&mut work, &Value::Array(vec![op])).map_err(|e| match e {
            kgc_patch::Error::Apply(e) => message(&work, kind, path, from, &e.kind.to_string()),
            other => other.to_string(),
        })?;
    }
    *object = work;
    Ok(())
}

/// `pointer` names a key its parent object does not have.
fn missing_key_of_object(doc: &Value, pointer: &str) -> bool {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return false;
    };
    doc.pointer(parent)
        .and_then(Value::as_object)
        .is_some_and(|o| !o.contains_key(&unescape(key)))
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Why `pointer` does not resolve, in evanphx's words.
fn missing(doc: &Value, pointer: &str) -> String {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    match doc.pointer(parent) {
        Some(Value::Array(_)) => {
            format!("Unable to access invalid index: {key}: invalid index referenced")
        }
        _ => format!(
            "Unable to remove nonexistent key: {}: missing value",
            unescape(key)
        ),
    }
}

/// kustomize's message for an operation that failed.
fn message(doc: &Value, op: &str, path: &str, from: &str, reason: &str) -> String {
    let parent_exists = path
        .rsplit_once('/')
        .is_some_and(|(parent, _)| doc.pointer(parent).is_some());
    match op {
        "test" => format!("testing value {path} failed: test failed"),
        "add" if !parent_exists => {
            format!("add operation does not apply: doc is missing path: \"{path}\": missing value")
        }
        "replace" if !parent_exists => {
            format!("replace operation does not apply: doc is missing path: {path}: missing value")
        }
        "replace" => {
            format!("replace operation does not apply: doc is missing key: {path}: missing value")
        }
        "move" if doc.pointer(from).is_none() => {
            let key = from.rsplit_once('/').map_or(from, |(_, k)| k);
            format!(
                "error in move for path: '{}': {}",
                unescape(key),
                missing(doc, from)
            )
        }
        "add" | "remove" | "move" => {
            format!("error in {op} for path: '{path}': {}", missing(doc, path))
        }
        _ => format!("error in {op} for path: '{path}': {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({"spec": {"replicas": 1, "list": [1, 2], "m": {"a": "x"}}})
    }

    fn run(ops: Value) -> Result<Value, String> {
        let mut d = doc();
        apply(&mut d, ops.as_array().unwrap()).map(|()| d)
    }

    #[test]
    fn the_six_operations() {
        let out = run(json!([
            {"op": "add", "path": "/spec/list/-", "value": 3},
            {"op": "replace", "path": "/spec/replicas", "value": 2},
            {"op": "remove", "path": "/spec/list/0"},
            {"op": "move", "from": "/spec/m/a", "path": "/spec/m/b"},
            {"op": "copy", "from": "/spec/m", "path": "/spec/n"},
            {"op": "test", "path": "/spec/n/b", "value": "x"},
        ]))
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"replicas": 2, "list": [2, 3], "m": {"b": "x"}, "n": {"b": "x"}}})
        );
    }

    /// evanphx v4: replacing a missing key adds it, copying one copies null.
    #[test]
    fn evanphx_leniencies() {
        let out = run(json!([
            {"op": "replace", "path": "/spec/new", "value": 5},
            {"op": "copy", "from": "/spec/none", "path": "/spec/c"},
        ]))
        .unwrap();
        assert_eq!(out["spec"]["new"], json!(5));
        assert_eq!(out["spec"]["c"], Value::Null);
    }

    #[test]
    fn kustomize_messages() {
        let cases = [
            (
                json!({"op": "test", "path": "/spec/replicas", "value": 5}),
                "testing value /spec/replicas failed: test failed",
            ),
            (
                json!({"op": "add", "path": "/spec/a/b", "value": 5}),
                "add operation does not apply: doc is missing path: \"/spec/a/b\": missing value",
            ),
            (
                json!({"op": "remove", "path": "/spec/nothere"}),
                "error in remove for path: '/spec/nothere': Unable to remove nonexistent key: nothere: missing value",
            ),
            (
                json!({"op": "remove", "path": "/spec/list/5"}),
                "error in remove for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!({"op": "add", "path": "/spec/list/5", "value": 1}),
                "error in add for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!({"op": "copy", "from": "/spec/list/7", "path": "/spec/a"}),
                "error in copy for from: '/spec/list/7': Unable to access invalid index: 7: invalid index referenced",
            ),
            (
                json!({"op": "replace", "path": "/spec/list/5", "value": 1}),
                "replace operation does not apply: doc is missing key: /spec/list/5: missing value",
            ),
            (
                json!({"op": "move", "from": "/spec/zz", "path": "/spec/a"}),
                "error in move for path: 'zz': Unable to remove nonexistent key: zz: missing value",
            ),
            (
                json!({"op": "bogus", "path": "/spec"}),
                "Unexpected kind: bogus",
            ),
            (json!({"path": "/spec"}), "Unexpected kind: unknown"),
        ];
        for (op, want) in cases {
            let e = run(json!([op])).unwrap_err();
            assert_eq!(e, want, "{op}");
        }
        // All or nothing.
        let mut d = doc();
        let ops = [
            json!({"op": "add", "path": "/spec/z", "value": 1}),
            json!({"op": "remove", "path": "/nope"}),
        ];
        assert!(apply(&mut d, &ops).is_err());
        assert_eq!(d, doc());
    }

    #[test]
    fn copies_are_bounded_in_all() {
        let mut d = json!({"data": {"a": "x".repeat(1000)}});
        let ops: Vec<Value> = (0..20)
            .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
            .collect();
        let e = apply(&mut d, &ops).unwrap_err();
        assert!(e.starts_with("Unable to complete the copy"), "{e}");
    }
}
