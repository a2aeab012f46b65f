//! Properties: applying a configuration twice is a fixed point; a second manager applying the
//! same configuration shares every field; FieldsV1 round-trips.

mod common;

use common::*;
use kgc_managedfields::{FieldSet, PathElement, apply};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::from),
        Just(Value::Null),
    ]
}

/// Nested objects of scalars (and atomic lists of scalars), small key alphabet so that
/// configurations overlap.
fn tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        scalar(),
        prop::collection::vec(scalar(), 0..3).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop::collection::btree_map("[a-e]", inner, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>()))
    })
}

fn config() -> impl Strategy<Value = Value> {
    (
        prop::collection::btree_map("[a-d]", "[a-c]{1,2}", 0..4),
        prop::collection::btree_set("[a-d]\\.io/[a-c]", 0..3),
        prop::collection::btree_map("[a-d]", "[a-c]{0,2}", 0..3),
        tree(),
        prop::collection::btree_map("[a-c]", (scalar(), tree()), 0..3),
    )
        .prop_map(|(labels, finalizers, conditions, spec, containers)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .map(|(name, (image, env))| json!({"name": name, "image": image, "extra": env}))
                .collect();
            let conditions: Vec<Value> = conditions
                .into_iter()
                .map(|(t, s)| json!({"type": t, "status": s}))
                .collect();
            let mut spec = match spec {
                Value::Object(m) => m,
                other => [("x".to_string(), other)].into_iter().collect(),
            };
            // Always own something, so the object is tracked from its creation.
            spec.insert("replicas".into(), json!(1));
            spec.insert(
                "template".into(),
                json!({"spec": {"containers": containers}}),
            );
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns", "labels": labels,
                             "finalizers": finalizers.into_iter().collect::<Vec<_>>()},
                "spec": spec,
                "status": {"conditions": conditions}
            })
        })
}

fn has_null_field(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(|v| v.is_null() || has_null_field(v)),
        Value::Array(items) => items.iter().any(has_null_field),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn apply_is_a_fixed_point(cfg in config()) {
        let first = apply(None, &cfg, &mgr("a", T1), false, &Apps).unwrap();
        let second = apply(Some(&first), &cfg, &mgr("a", T2), false, &Apps).unwrap();
        prop_assert_eq!(&second, &first);
        // No null field survives (null list items are values).
        prop_assert!(!has_null_field(&first));
        // The stored sets parse back.
        for e in entries(&first) {
            let set = FieldSet::from_fields_v1(&e["fieldsV1"]).unwrap();
            let text = set.to_fields_v1_string();
            prop_assert_eq!(FieldSet::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap(), set);
        }
    }

    #[test]
    fn a_second_applier_of_the_same_configuration_shares_everything(cfg in config()) {
        let first = apply(None, &cfg, &mgr("a", T1), false, &Apps).unwrap();
        let second = apply(Some(&first), &cfg, &mgr("b", T2), false, &Apps).unwrap();
        prop_assert_eq!(without_managed_fields(&second), without_managed_fields(&first));
        if let Some(a) = entry(&first, "a", "Apply") {
            let b = entry(&second, "b", "Apply").unwrap();
            prop_assert_eq!(&a["fieldsV1"], &b["fieldsV1"]);
        }
    }

    #[test]
    fn switching_configurations_converges(c1 in config(), c2 in config()) {
        // Applying c2 over c1 by the same manager, then c2 again, is stable, and the result
        // contains no field of c1 that c2 does not set (nobody else owns anything).
        let first = apply(None, &c1, &mgr("a", T1), false, &Apps).unwrap();
        let second = apply(Some(&first), &c2, &mgr("a", T2), false, &Apps).unwrap();
        let third = apply(Some(&second), &c2, &mgr("a", T3), false, &Apps).unwrap();
        prop_assert_eq!(&third, &second);
        let fresh = apply(None, &c2, &mgr("a", T2), false, &Apps).unwrap();
        prop_assert_eq!(
            FieldSet::from_object(&without_managed_fields(&second), &Apps).unwrap(),
            FieldSet::from_object(&without_managed_fields(&fresh), &Apps).unwrap()
        );
    }

    #[test]
    fn fields_v1_round_trips(paths in prop::collection::vec(prop::collection::vec(
        prop_oneof![
            "[a-c]{1,2}".prop_map(PathElement::field),
            "[a-c]".prop_map(|k| PathElement::key([("name".to_string(), Value::from(k))])),
            (0i64..3).prop_map(|v| PathElement::Value(Value::from(v))),
            (0usize..3).prop_map(PathElement::Index),
        ], 1..4), 0..8)) {
        let mut set = FieldSet::new();
        for p in &paths {
            set.insert(p);
        }
        let text = set.to_fields_v1_string();
        let parsed = FieldSet::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap();
        prop_assert_eq!(&parsed, &set);
        prop_assert_eq!(parsed.to_fields_v1_string(), text);
        prop_assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), set.clone());
        prop_assert_eq!(set.len(), parsed.paths().len());
    }
}
