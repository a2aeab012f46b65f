//! Properties: an empty patch is the identity, and a patch without directives and without lists
//! is exactly a JSON merge patch (RFC 7386).

use kgc_patch::strategic::{Schema, apply, schema_for};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,3}",
        Just("metadata".to_owned()),
        Just("spec".to_owned()),
        Just("template".to_owned()),
        Just("containers".to_owned()),
        Just("finalizers".to_owned()),
        Just("labels".to_owned()),
        Just("strategy".to_owned()),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::String),
    ]
}

/// Any JSON document without directive keys (lists included).
fn document() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A patch without lists and directives; `null` deletes.
fn list_free_patch() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![scalar(), Just(Value::Null)];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop::collection::btree_map(key(), inner, 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
    })
}

fn object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => {
            let mut m = Map::new();
            m.insert("v".to_owned(), other);
            Value::Object(m)
        }
    }
}

fn schemas() -> [Schema; 3] {
    [
        schema_for("", "Pod").unwrap(),
        schema_for("apps", "Deployment").unwrap(),
        schema_for("", "ConfigMap").unwrap(),
    ]
}

proptest! {
    #[test]
    fn empty_patch_is_identity(doc in document()) {
        let doc = object(doc);
        for schema in schemas() {
            prop_assert_eq!(&apply(&doc, &Value::Object(Map::new()), schema).unwrap(), &doc);
        }
    }

    #[test]
    fn list_free_patch_is_json_merge_patch(doc in document(), patch in list_free_patch()) {
        let doc = object(doc);
        let patch = object(patch);
        let mut want = doc.clone();
        kgc_patch::merge(&mut want, &patch).unwrap();
        for schema in schemas() {
            prop_assert_eq!(&apply(&doc, &patch, schema).unwrap(), &want);
        }
    }
}
