//! Node taints and pod tolerations, following kubernetes/kubernetes
//! `pkg/apis/core/validation/validation.go` (`validateNodeTaints`, `ValidateTolerations`,
//! `validateTaintEffect`, `validateOnlyAddedTolerations`).

use kgc_meta::gojson::go_json;
use kgc_meta::validation::{FieldError, FieldErrorKind, is_label_value};
use serde_json::Value;

use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, same_except};
use crate::labels::validate_label_name;

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `validateTaintEffect`.
fn effect(effect: &str, allow_empty: bool, path: &Path<'_>, errs: &mut Errors) {
    if effect.is_empty() && !allow_empty {
        errs.required(path, "");
        return;
    }
    if !EFFECTS.contains(&effect) {
        errs.not_supported_typed(path, effect, &EFFECTS);
    }
}

/// A `core.Taint` as `encoding/json` prints the internal struct (Go field names).
fn render_taint(t: &Value) -> String {
    go_struct(&[
        ("Key", typed(t.str_of("key"))),
        ("Value", typed(t.str_of("value"))),
        ("Effect", typed(t.str_of("effect"))),
        ("TimeAdded", go_json(t.at("timeAdded"))),
    ])
}

/// A `core.Toleration` as `encoding/json` prints the internal struct.
fn render_toleration(t: &Value) -> String {
    go_struct(&[
        ("Key", typed(t.str_of("key"))),
        ("Operator", typed(t.str_of("operator"))),
        ("Value", typed(t.str_of("value"))),
        ("Effect", typed(t.str_of("effect"))),
        ("TolerationSeconds", go_json(t.at("tolerationSeconds"))),
    ])
}

/// `validateNodeTaints`: valid keys, values and effects, unique by key and effect.
pub(crate) fn validate_taints(taints: &[Value], path: &Path<'_>, errs: &mut Errors) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, t) in taints.iter().enumerate() {
        let p = path.index(i);
        validate_label_name(t.str_of("key"), &p.child("key"), errs);
        let value = t.str_of("value");
        let msgs = is_label_value(value);
        if !msgs.is_empty() {
            errs.invalid(p.child("value"), value, msgs.join(";"));
        }
        effect(t.str_of("effect"), false, &p.child("effect"), errs);
        let pair = (t.str_of("key"), t.str_of("effect"));
        if seen.contains(&pair) {
            errs.push(FieldError {
                kind: FieldErrorKind::Duplicate,
                field: p.to_string(),
                value: Some(render_taint(t)),
                detail: "taints must be unique by key and effect pair".to_owned(),
            });
            continue;
        }
        seen.push(pair);
    }
}

/// `ValidateTolerations`.
pub(crate) fn validate_tolerations(tolerations: &[Value], path: &Path<'_>, errs: &mut Errors) {
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let (key, op, value, eff) = (
            t.str_of("key"),
            t.str_of("operator"),
            t.str_of("value"),
            t.str_of("effect"),
        );
        if !key.is_empty() {
            validate_label_name(key, &p.child("key"), errs);
        }
        if key.is_empty() && op != "Exists" {
            errs.invalid_typed(
                p.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            );
        }
        if t.has("tolerationSeconds") && eff != "NoExecute" {
            errs.invalid_typed(
                p.child("effect"),
                eff,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            );
        }
        match op {
            "Equal" | "" => {
                let msgs = is_label_value(value);
                if !msgs.is_empty() {
                    errs.invalid(p.child("operator"), value, msgs.join(";"));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.invalid_raw(
                        p.child("operator"),
                        render_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    );
                }
            }
            other => errs.not_supported_typed(p.child("operator"), other, &["Equal", "Exists"]),
        }
        if !eff.is_empty() {
            effect(eff, true, &p.child("effect"), errs);
        }
    }
}

/// `validateOnlyAddedTolerations`: every old toleration must still be there (only its
/// `tolerationSeconds` may change); then the new list is validated.
pub(crate) fn validate_only_added(
    new: &[Value],
    old: &[Value],
    path: &Path<'_>,
    errs: &mut Errors,
) {
    for o in old {
        if !new
            .iter()
            .any(|n| same_except(n, o, &["tolerationSeconds"]))
        {
            errs.forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            );
            return;
        }
    }
    validate_tolerations(new, path, errs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::messages as run;
    use serde_json::json;

    /// `TestValidateTolerations` (the failure cases).
    #[test]
    fn test_validate_tolerations() {
        let t = json!([
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"operator": "Equal", "value": "v"},
            {"key": "k", "operator": "Exists", "value": "v"},
            {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 10},
            {"key": "k", "operator": "Greater", "effect": "Never"},
        ]);
        assert_eq!(
            run(|e| validate_tolerations(
                t.as_array().unwrap_or(&vec![]),
                &Path::new("spec.tolerations"),
                e
            )),
            vec![
                "spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "spec.tolerations[2].operator: Invalid value: {\"Key\":\"k\",\"Operator\":\"Exists\",\"Value\":\"v\",\"Effect\":\"\",\"TolerationSeconds\":null}: value must be empty when `operator` is 'Exists'",
                "spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                "spec.tolerations[4].operator: Unsupported value: \"Greater\": supported values: \"Equal\", \"Exists\"",
                "spec.tolerations[4].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            ]
        );
    }

    /// `TestValidateNodeTaints` via `ValidateNode` (upstream's path is `metadata.taints`).
    #[test]
    fn test_validate_node_taints() {
        let t = json!([
            {"key": "a", "value": "1", "effect": "NoSchedule"},
            {"key": "a", "value": "2", "effect": "NoSchedule"},
            {"key": "b", "effect": ""},
        ]);
        assert_eq!(
            run(|e| validate_taints(
                t.as_array().unwrap_or(&vec![]),
                &Path::new("metadata.taints"),
                e
            )),
            vec![
                "metadata.taints[1]: Duplicate value: {\"Key\":\"a\",\"Value\":\"2\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair",
                "metadata.taints[2].effect: Required value",
            ]
        );
    }

    #[test]
    fn tolerations_may_only_be_added() {
        let old = json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]);
        let new_ok = json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 9}, {"key": "x", "operator": "Exists"}]);
        let new_bad = json!([{"key": "x", "operator": "Exists"}]);
        let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
        assert!(
            run(|e| validate_only_added(
                &list(&new_ok),
                &list(&old),
                &Path::new("spec.tolerations"),
                e
            ))
            .is_empty()
        );
        assert_eq!(
            run(|e| validate_only_added(
                &list(&new_bad),
                &list(&old),
                &Path::new("spec.tolerations"),
                e
            )),
            vec![
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
    }
}
