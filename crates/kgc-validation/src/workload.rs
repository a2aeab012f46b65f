//! What the replica-managing workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet,
//! ReplicationController) share: the selector-and-template rules, `IntOrString` percentages and
//! the status counters, following kubernetes/kubernetes `pkg/apis/apps/validation/validation.go`
//! (`ValidatePodTemplateSpecForReplicaSet`, `ValidatePositiveIntOrPercent`,
//! `IsNotMoreThan100Percent`, the `Validate*Status` functions) and
//! `pkg/apis/core/validation/validation.go` (`ValidatePodTemplateSpecForRC`, `IsDecremented`).

use kgc_meta::gojson::go_json;
use kgc_meta::validation::regex_error;
use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path, go_struct, typed};
use crate::json::{Json, same};
use crate::labels::{
    Selector, is_empty_selector, render_labels, render_selector, validate_required_selector,
};
use crate::pod::validate_template;

/// The rules of one replica-managing kind, for [`route`].
pub(crate) struct Rules {
    /// Validates `spec` (create and update).
    pub(crate) spec: fn(&Value, &mut Errors),
    /// What an update may not change (new `spec`, old `spec`).
    pub(crate) update: fn(&Value, &Value, &mut Errors),
    /// Validates `status` on a `status` write.
    pub(crate) status: fn(&Value, &mut Errors),
}

/// How these kinds route a write: a `status` write checks the status and that the collision
/// count never decreases (`IsDecremented`); a write of the object checks its spec and, on
/// update, what may not change; other subresources (`scale`) have no rules here.
pub(crate) fn route(obj: &Value, op: Op<'_>, rules: &Rules, errs: &mut Errors) {
    match op {
        Op::Subresource("status", old) => {
            (rules.status)(obj.at("status"), errs);
            collision_count_not_decremented(obj.at("status"), old.at("status"), errs);
        }
        Op::Subresource(..) => {}
        Op::Create => (rules.spec)(obj.at("spec"), errs),
        Op::Update(old) => {
            (rules.spec)(obj.at("spec"), errs);
            (rules.update)(obj.at("spec"), old.at("spec"), errs);
        }
    }
}

/// apps/v1 selectors cannot change (`ValidateImmutableField` in the registry strategies).
pub(crate) fn immutable_selector(spec: &Value, old: &Value, errs: &mut Errors) {
    let sel = spec.at("selector");
    if !same(sel, old.at("selector")) {
        errs.invalid_raw(
            "spec.selector",
            render_selector(sel),
            crate::field::IMMUTABLE,
        );
    }
}

/// The `spec.selector` rules of Deployments, ReplicaSets and StatefulSets: required, valid,
/// non-empty. Returns the converted selector (`None` when it does not convert).
pub(crate) fn required_selector<'a>(
    spec: &'a Value,
    kind_word: &str,
    path: &Path<'_>,
    errs: &mut Errors,
) -> Option<Selector<'a>> {
    let sel = spec.at("selector");
    let sp = path.child("selector");
    if validate_required_selector(sel, &sp, errs) && is_empty_selector(sel) {
        errs.invalid_raw(
            sp,
            render_selector(sel),
            format!("empty selector is invalid for {kind_word}"),
        );
    }
    Selector::from_json(sel)
}

/// The selector and template rules Deployments and ReplicaSets share (upstream's empty-selector
/// message says "deployment" for both).
pub(crate) fn selector_and_template(spec: &Value, errs: &mut Errors) {
    match required_selector(spec, "deployment", &Path::new("spec"), errs) {
        Some(sel) => template_for_replicas(
            &sel,
            spec.at("template"),
            "ReplicaSet",
            &Path::new("spec.template"),
            errs,
        ),
        None => errs.invalid_raw(
            "spec.selector",
            render_selector(spec.at("selector")),
            "invalid label selector",
        ),
    }
}

/// The template's labels must be selected by a non-empty selector.
pub(crate) fn template_matches(
    selector: &Selector<'_>,
    template: &Value,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    let meta = template.at("metadata");
    if !selector.is_everything() && !selector.matches(meta, "labels") {
        errs.invalid_raw(
            path.child("metadata").child("labels"),
            render_labels(meta, "labels"),
            "`selector` does not match template `labels`",
        );
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` / `ValidatePodTemplateSpecForRC`: the selector
/// matches, the template is a valid pod template, pods restart `Always` and have no deadline.
/// `owner` names the kind in the deadline message ("ReplicaSet", "ReplicationController").
pub(crate) fn template_for_replicas(
    selector: &Selector<'_>,
    template: &Value,
    owner: &str,
    path: &Path<'_>,
    errs: &mut Errors,
) {
    template_matches(selector, template, path, errs);
    validate_template(template, path, errs);
    always_restart(template, path, errs);
    if template.at("spec").has("activeDeadlineSeconds") {
        errs.forbidden(
            path.child("spec").child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {owner} is not Supported"),
        );
    }
}

/// Long-running pods must restart `Always`.
pub(crate) fn always_restart(template: &Value, path: &Path<'_>, errs: &mut Errors) {
    let policy = template.at("spec").str_of("restartPolicy");
    if policy != "Always" {
        errs.not_supported_typed(
            path.child("spec").child("restartPolicy"),
            policy,
            &["Always"],
        );
    }
}

/// An `intstr.IntOrString` as `encoding/json` prints it.
pub(crate) fn render_int_or_string(v: &Value) -> String {
    match v {
        Value::String(_) => go_json(v),
        other => other.as_i64().unwrap_or(0).to_string(),
    }
}

/// A strategy (the internal `DeploymentStrategy`, `DaemonSetUpdateStrategy`,
/// `StatefulSetUpdateStrategy`: a type and a rolling update) as `encoding/json` prints it;
/// upstream shows it when the type is not supported.
pub(crate) fn render_strategy(strategy: &Value, rolling_update: fn(&Value) -> String) -> String {
    go_struct(&[
        ("Type", typed(strategy.str_of("type"))),
        (
            "RollingUpdate",
            rolling_update(strategy.at("rollingUpdate")),
        ),
    ])
}

/// A `*RollingUpdateDeployment` or `*RollingUpdateDaemonSet` (the same two fields) as
/// `encoding/json` prints the internal struct.
pub(crate) fn render_surge_and_unavailable(ru: &Value) -> String {
    if ru.is_null() {
        return "null".to_owned();
    }
    go_struct(&[
        (
            "MaxUnavailable",
            render_int_or_string(ru.at("maxUnavailable")),
        ),
        ("MaxSurge", render_int_or_string(ru.at("maxSurge"))),
    ])
}

/// `IsValidPercent`: `[0-9]+%`.
fn percent_errors(s: &str) -> Vec<String> {
    let digits = s.strip_suffix('%').unwrap_or("");
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    vec![regex_error(
        "a valid percent string must be a numeric string followed by an ending '%'",
        "[0-9]+%",
        &["1%", "93%"],
    )]
}

/// `getPercentValue`: the number of a valid percentage.
fn percent_value(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    if !percent_errors(s).is_empty() {
        return None;
    }
    Some(s.trim_end_matches('%').parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a percentage's number, or `IntValue()` (a string that is not a
/// number counts as 0).
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    match (percent_value(v), v) {
        (Some(p), _) => p,
        (None, Value::String(s)) => s.parse().unwrap_or(0),
        (None, other) => other.as_i64().unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn positive_int_or_percent(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    match v {
        Value::String(s) => {
            for m in percent_errors(s) {
                errs.invalid_raw(path, go_json(v), m);
            }
        }
        other => errs.nonnegative(path, other.as_i64().unwrap_or(0)),
    }
}

/// `maxUnavailable` and `maxSurge` of a rolling update, each checked as a non-negative
/// integer or percentage; returns them with their paths.
pub(crate) fn surge_and_unavailable<'a, 'p>(
    ru: &'a Value,
    path: &'p Path<'_>,
    errs: &mut Errors,
) -> [(&'a Value, Path<'p>); 2] {
    let fields = ["maxUnavailable", "maxSurge"].map(|f| (ru.at(f), path.child(f)));
    for (v, p) in &fields {
        positive_int_or_percent(v, p, errs);
    }
    fields
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(v: &Value, path: &Path<'_>, errs: &mut Errors) {
    if percent_value(v).is_some_and(|p| p > 100) {
        errs.invalid_raw(path, go_json(v), "must not be greater than 100%");
    }
}

/// Non-negative status counters.
pub(crate) fn counters(status: &Value, fields: &[&str], errs: &mut Errors) {
    for f in fields {
        if let Some(n) = status.opt_int(f) {
            errs.nonnegative(Path::new("status").child(f), n);
        }
    }
}

/// The bounds of the replica counters the `Validate*Status` functions check in this order:
/// each of `within` at most `status.replicas`, then `availableReplicas` at most
/// `readyReplicas` (`avail_msg` words that per kind).
pub(crate) fn replica_bounds(status: &Value, within: &[&str], avail_msg: &str, errs: &mut Errors) {
    let not_above = |field: &str, limit: &str, msg: &str, errs: &mut Errors| {
        let v = status.int_of(field);
        if v > status.int_of(limit) {
            errs.invalid_int(Path::new("status").child(field), v, msg);
        }
    };
    for field in within {
        not_above(
            field,
            "replicas",
            "cannot be greater than status.replicas",
            errs,
        );
    }
    not_above("availableReplicas", "readyReplicas", avail_msg, errs);
}

/// `IsDecremented` on `status.collisionCount`.
fn collision_count_not_decremented(status: &Value, old_status: &Value, errs: &mut Errors) {
    let (new, old) = (
        status.opt_int("collisionCount"),
        old_status.opt_int("collisionCount"),
    );
    let decremented = match (new, old) {
        (None, Some(_)) => true,
        (Some(n), Some(o)) => n < o,
        _ => false,
    };
    if decremented {
        errs.invalid_int(
            "status.collisionCount",
            new.unwrap_or(0),
            "cannot be decremented",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn int_or_percent_values() {
        assert_eq!(int_or_percent_value(&json!("25%")), 25);
        assert_eq!(int_or_percent_value(&json!(3)), 3);
        assert_eq!(int_or_percent_value(&json!("7")), 7);
        assert_eq!(int_or_percent_value(&json!("x%")), 0);
        let mut e = Errors::default();
        positive_int_or_percent(&json!("x%"), &Path::new("p"), &mut e);
        positive_int_or_percent(&json!(-1), &Path::new("q"), &mut e);
        not_more_than_100_percent(&json!("101%"), &Path::new("r"), &mut e);
        let got: Vec<String> = e.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            vec![
                "p: Invalid value: \"x%\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                "q: Invalid value: -1: must be greater than or equal to 0",
                "r: Invalid value: \"101%\": must not be greater than 100%",
            ]
        );
    }
}
