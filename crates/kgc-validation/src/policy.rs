//! policy/v1 PodDisruptionBudget, following kubernetes/kubernetes
//! `pkg/apis/policy/validation/validation.go` (`ValidatePodDisruptionBudget`,
//! `ValidatePodDisruptionBudgetStatusUpdate`): exactly one of `minAvailable` and
//! `maxUnavailable` may be set, each a non-negative integer or a percentage of at most 100%;
//! the selector is a valid label selector; the unhealthy-pod eviction policy is a known one.

use kgc_meta::gojson::go_json;
use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path, go_struct};
use crate::json::Json;
use crate::labels::validate_selector;
use crate::workload::{counters, not_more_than_100_percent, positive_int_or_percent};

const POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];

/// A budget's create, update or status update.
pub(crate) fn pod_disruption_budget(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    if op.is_status() {
        counters(
            obj.at("status"),
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
            errs,
        );
        return;
    }
    let spec = obj.at("spec");
    let path = Path::new("spec");
    let (min, max) = (spec.at("minAvailable"), spec.at("maxUnavailable"));
    if !min.is_null() && !max.is_null() {
        let rendered = go_struct(&[
            ("MinAvailable", go_json(min)),
            ("Selector", go_json(spec.at("selector"))),
            ("MaxUnavailable", go_json(max)),
            (
                "UnhealthyPodEvictionPolicy",
                go_json(spec.at("unhealthyPodEvictionPolicy")),
            ),
        ]);
        errs.invalid_raw(
            path,
            rendered,
            "minAvailable and maxUnavailable cannot be both set",
        );
    }
    for (v, name) in [(min, "minAvailable"), (max, "maxUnavailable")] {
        if !v.is_null() {
            let p = path.child(name);
            positive_int_or_percent(v, &p, errs);
            not_more_than_100_percent(v, &p, errs);
        }
    }
    // An update keeps accepting label values a stored budget already has
    // (`AllowInvalidLabelValueInSelector`).
    let allow_invalid = op.old().is_some_and(|old| {
        let mut e = Errors::default();
        validate_selector(old.at("spec").at("selector"), false, &path, &mut e);
        e.len() > 0
    });
    validate_selector(
        spec.at("selector"),
        allow_invalid,
        &path.child("selector"),
        errs,
    );
    if let Some(p) = spec.at("unhealthyPodEvictionPolicy").as_str()
        && !POLICIES.contains(&p)
    {
        errs.not_supported(path.child("unhealthyPodEvictionPolicy"), p, &POLICIES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(spec: Value) -> Vec<String> {
        let mut e = Errors::default();
        pod_disruption_budget(&json!({"spec": spec}), Op::Create, &mut e);
        e.into_vec().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn one_of_min_available_and_max_unavailable() {
        assert!(
            run(json!({"minAvailable": 2, "selector": {"matchLabels": {"a": "b"}}})).is_empty()
        );
        assert!(run(json!({"maxUnavailable": "25%"})).is_empty());
        let e = run(json!({"minAvailable": 1, "maxUnavailable": 1}));
        assert_eq!(
            e,
            [
                "spec: Invalid value: {\"MinAvailable\":1,\"Selector\":null,\"MaxUnavailable\":1,\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set"
            ]
        );
    }

    #[test]
    fn int_or_percent_values() {
        assert_eq!(
            run(json!({"minAvailable": -1})),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            run(json!({"maxUnavailable": "120%"})),
            ["spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%"]
        );
        let e = run(json!({"minAvailable": "half"}));
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("spec.minAvailable: Invalid value: \"half\": a valid percent string")
        );
    }

    #[test]
    fn selector_and_policy() {
        let e = run(
            json!({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Sometimes",
            "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}),
        );
        assert_eq!(
            e,
            [
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Sometimes\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
            ]
        );
    }

    #[test]
    fn status_counters_are_not_negative() {
        let mut e = Errors::default();
        let old = json!({});
        pod_disruption_budget(
            &json!({"status": {"disruptionsAllowed": -1}}),
            Op::Subresource("status", &old),
            &mut e,
        );
        assert_eq!(
            e.into_vec()[0].to_string(),
            "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
