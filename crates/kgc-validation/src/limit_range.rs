//! LimitRange (kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! `ValidateLimitRange`): each item's type is known or qualified and appears once, its resource
//! names fit the type, and per resource `min ≤ defaultRequest ≤ default ≤ max`, a
//! `maxLimitRequestRatio` of at least 1 and within `max/min`.
//!
//! Upstream walks Go maps, so the order of its errors within one item varies from run to run;
//! here resources are taken in name order. A quantity shown as the invalid value is printed as
//! its canonical string, where upstream prints Go's `%#v` of its internal struct.

use std::collections::BTreeMap;

use kgc_meta::quantity::Quantity;
use kgc_meta::validation::is_qualified_name;
use serde_json::Value;

use crate::field::{Errors, Path, typed};
use crate::json::Json;
use crate::resources::{
    is_overcommit_allowed, resource_list, validate_container_resource_name, validate_resource_name,
};

/// `IsStandardLimitRangeType`.
const STANDARD_TYPES: [&str; 3] = ["Pod", "Container", "PersistentVolumeClaim"];

/// The five lists of one item, by resource name.
#[derive(Default)]
struct Bounds {
    min: BTreeMap<String, Quantity>,
    max: BTreeMap<String, Quantity>,
    default: BTreeMap<String, Quantity>,
    default_request: BTreeMap<String, Quantity>,
    ratio: BTreeMap<String, Quantity>,
}

/// A LimitRange create or update.
pub(crate) fn limit_range(obj: &Value, errs: &mut Errors) {
    let limits_path = Path::new("spec.limits");
    let items = obj.at("spec").at("limits").as_array();
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items.into_iter().flatten().enumerate() {
        let path = limits_path.index(i);
        let kind = item.str_of("type");
        type_name(kind, &path.child("type"), errs);
        if seen.contains(&kind) {
            errs.duplicate_raw(path.child("type"), typed(kind));
        }
        seen.push(kind);
        item_bounds(item, kind, &path, errs);
    }
}

/// `validateLimitRangeTypeName`.
fn type_name(kind: &str, path: &Path<'_>, errs: &mut Errors) {
    let msgs = is_qualified_name(kind);
    if !msgs.is_empty() {
        for m in msgs {
            errs.invalid(path, kind, m);
        }
        return;
    }
    if !kind.contains('/') && !STANDARD_TYPES.contains(&kind) {
        errs.invalid(
            path,
            kind,
            "must be a standard limit type or fully qualified",
        );
    }
}

/// `validateLimitRangeResourceName`: compute types take container resources, others any.
fn resource_name(kind: &str, name: &str, path: &Path<'_>, errs: &mut Errors) {
    if matches!(kind, "Pod" | "Container") {
        validate_container_resource_name(name, path, errs);
    } else {
        validate_resource_name(name, path, errs);
    }
}

/// Collects one list of the item (names checked) into `into`.
fn collect(
    item: &Value,
    field: &str,
    kind: &str,
    path: &Path<'_>,
    errs: &mut Errors,
    into: &mut BTreeMap<String, Quantity>,
) {
    let p = path.child(field);
    for (name, q) in resource_list(item, field) {
        resource_name(kind, name, &p.key(name), errs);
        into.insert(name.to_owned(), q);
    }
}

fn item_bounds(item: &Value, kind: &str, path: &Path<'_>, errs: &mut Errors) {
    let mut b = Bounds::default();
    collect(item, "max", kind, path, errs, &mut b.max);
    collect(item, "min", kind, path, errs, &mut b.min);
    if kind == "Pod" {
        for field in ["default", "defaultRequest"] {
            if item.obj(field).is_some_and(|m| !m.is_empty()) {
                errs.forbidden(
                    path.child(field),
                    "may not be specified when `type` is 'Pod'",
                );
            }
        }
    } else {
        collect(item, "default", kind, path, errs, &mut b.default);
        collect(
            item,
            "defaultRequest",
            kind,
            path,
            errs,
            &mut b.default_request,
        );
    }
    if kind == "PersistentVolumeClaim"
        && !b.min.contains_key("storage")
        && !b.max.contains_key("storage")
    {
        errs.required(
            path.child("limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        );
    }
    collect(item, "maxLimitRequestRatio", kind, path, errs, &mut b.ratio);
    let mut names: Vec<&String> = b
        .min
        .keys()
        .chain(b.max.keys())
        .chain(b.default.keys())
        .chain(b.default_request.keys())
        .chain(b.ratio.keys())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        resource_bounds(&b, name, path, errs);
    }
}

/// The ordering rules of one resource of an item, in upstream's order.
fn resource_bounds(b: &Bounds, name: &str, path: &Path<'_>, errs: &mut Errors) {
    let (min, max) = (b.min.get(name), b.max.get(name));
    let (default, request) = (b.default.get(name), b.default_request.get(name));
    let ratio = b.ratio.get(name);
    let mut invalid = |field: &str, shown: &Quantity, detail: String| {
        let p = path.child(field);
        errs.invalid_typed(p.key(name), &shown.to_string(), detail);
    };
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        invalid(
            "min",
            min,
            format!("min value {min} is greater than max value {max}"),
        );
    }
    if let (Some(request), Some(min)) = (request, min)
        && min > request
    {
        let detail = format!("min value {min} is greater than default request value {request}");
        invalid("defaultRequest", request, detail);
    }
    if let (Some(request), Some(max)) = (request, max)
        && request > max
    {
        let detail = format!("default request value {request} is greater than max value {max}");
        invalid("defaultRequest", request, detail);
    }
    if let (Some(request), Some(default)) = (request, default)
        && request > default
    {
        let detail = format!(
            "default request value {request} is greater than default limit value {default}"
        );
        invalid("defaultRequest", request, detail);
    }
    if let (Some(default), Some(min)) = (default, min)
        && min > default
    {
        let detail = format!("min value {min} is greater than default value {default}");
        invalid("default", min, detail);
    }
    if let (Some(default), Some(max)) = (default, max)
        && default > max
    {
        let detail = format!("default value {default} is greater than max value {max}");
        invalid("default", max, detail);
    }
    if let Some(ratio) = ratio {
        let one = Quantity::parse("1").ok();
        if one.as_ref().is_some_and(|one| ratio < one) {
            invalid(
                "maxLimitRequestRatio",
                ratio,
                format!("ratio {ratio} is less than 1"),
            );
        }
        if let (Some(min), Some(max)) = (min, max) {
            let limit = max_over_min(min, max);
            if ratio_value(ratio) > limit {
                let detail = format!("ratio {ratio} is greater than max/min = {limit:.6}");
                invalid("maxLimitRequestRatio", ratio, detail);
            }
        }
    }
    if let (Some(default), Some(request)) = (default, request)
        && !is_overcommit_allowed(name)
        && default != request
    {
        let detail = format!(
            "default value {default} must equal to defaultRequest value {request} in {name}"
        );
        invalid("defaultRequest", request, detail);
    }
}

/// The ratio as a float, in thousandths where that fits (as upstream compares it).
fn ratio_value(ratio: &Quantity) -> f64 {
    match ratio.milli_value() {
        Some(m) => m as f64 / 1000.0,
        None => ratio.value().unwrap_or(i64::MAX) as f64,
    }
}

/// `max/min` in thousandths where both fit, else in units (Go's float division: a zero `min`
/// gives +Inf, which no ratio exceeds).
fn max_over_min(min: &Quantity, max: &Quantity) -> f64 {
    let (lo, hi) = match (min.milli_value(), max.milli_value()) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => (
            min.value().unwrap_or(i64::MAX),
            max.value().unwrap_or(i64::MAX),
        ),
    };
    hi as f64 / lo as f64
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn errors(spec: serde_json::Value) -> Vec<String> {
        let obj = json!({"metadata": {"name": "lr", "namespace": "ns"}, "spec": spec});
        crate::validate("", "LimitRange", &obj, None, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_consistent_range_is_valid() {
        let spec = json!({"limits": [
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2"},
             "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}, "maxLimitRequestRatio": {"cpu": "4"}},
            {"type": "Pod", "max": {"memory": "1Gi"}},
            {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}},
        ]});
        assert_eq!(errors(spec), Vec::<String>::new());
    }

    #[test]
    fn min_above_max_and_defaults_outside_are_refused() {
        let spec = json!({"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"},
            "defaultRequest": {"memory": "2Gi"}, "default": {"memory": "1Gi"}}]});
        assert_eq!(
            errors(spec),
            [
                "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[memory]: Invalid value: \"2Gi\": default request value 2Gi is greater than default limit value 1Gi",
            ]
        );
    }

    #[test]
    fn unknown_type_duplicates_and_pod_defaults_are_refused() {
        let spec = json!({"limits": [
            {"type": "Node", "max": {"cpu": "1"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "Pod", "max": {"storage": "1Gi"}},
        ]});
        assert_eq!(
            errors(spec),
            [
                "spec.limits[0].type: Invalid value: \"Node\": must be a standard limit type or fully qualified",
                "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[2].type: Duplicate value: \"Pod\"",
                "spec.limits[2].max[storage]: Invalid value: \"storage\": must be a standard resource for containers",
            ]
        );
    }

    #[test]
    fn claims_need_a_storage_bound_and_ratios_are_bounded() {
        let spec = json!({"limits": [
            {"type": "PersistentVolumeClaim", "min": {"cpu": "1"}},
            {"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}},
            {"type": "Pod", "maxLimitRequestRatio": {"memory": "500m"}},
        ]});
        assert_eq!(
            errors(spec),
            [
                "spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
                "spec.limits[1].maxLimitRequestRatio[cpu]: Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000",
                "spec.limits[2].maxLimitRequestRatio[memory]: Invalid value: \"500m\": ratio 500m is less than 1",
            ]
        );
    }
}
