//! apps/v1 StatefulSet, following kubernetes/kubernetes `pkg/apis/apps/validation/validation.go`
//! (`ValidateStatefulSetSpec`, `ValidatePodTemplateSpecForStatefulSet`,
//! `validateRollingUpdateStatefulSet`, `validatePersistentVolumeClaimRetentionPolicy`,
//! `ValidateStatefulSetUpdate`, `ValidateStatefulSetStatus`, `ValidateStatefulSetStatusUpdate`).
//!
//! As upstream, the pod template is checked only for its selector match, labels, annotations,
//! restart policy and deadline: its pod spec is not validated (upstream's TODO: volume mounts may
//! name `volumeClaimTemplates`).

use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path, go_struct};
use crate::json::{Json, same_except};
use crate::labels::{render_selector, validate_annotations, validate_labels};
use crate::workload::{
    Rules, always_restart, counters, int_or_percent_value, not_more_than_100_percent,
    positive_int_or_percent, render_int_or_string, render_strategy, replica_bounds,
    required_selector, route, template_matches,
};

/// A StatefulSet create, update or `status` update.
pub(crate) fn stateful_set(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let rules = Rules {
        spec,
        update: only_mutable_fields_changed,
        status,
    };
    route(obj, op, &rules, errs);
}

/// Fields of the spec an update may change; everything else is fixed at creation.
const MUTABLE: [&str; 7] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

fn only_mutable_fields_changed(spec: &Value, old: &Value, errs: &mut Errors) {
    if !same_except(spec, old, &MUTABLE) {
        errs.forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        );
    }
}

/// `ValidateStatefulSetSpec`.
fn spec(spec: &Value, errs: &mut Errors) {
    match spec.str_of("podManagementPolicy") {
        "" => errs.required("spec.podManagementPolicy", ""),
        "OrderedReady" | "Parallel" => {}
        other => errs.invalid_typed(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        ),
    }
    let strategy = spec.at("updateStrategy");
    let ru = strategy.at("rollingUpdate");
    match strategy.str_of("type") {
        "" => errs.required("spec.updateStrategy", ""),
        "OnDelete" => {
            if !ru.is_null() {
                errs.invalid_raw(
                    "spec.updateStrategy.rollingUpdate",
                    render_rolling_update(ru),
                    "only allowed for updateStrategy 'RollingUpdate'",
                );
            }
        }
        "RollingUpdate" => {
            if !ru.is_null() {
                rolling_update(ru, &Path::new("spec.updateStrategy.rollingUpdate"), errs);
            }
        }
        _ => errs.invalid_raw(
            "spec.updateStrategy",
            render_strategy(strategy, render_rolling_update),
            "must be 'RollingUpdate' or 'OnDelete'",
        ),
    }
    let policy = spec.at("persistentVolumeClaimRetentionPolicy");
    if !policy.is_null() {
        for field in ["whenDeleted", "whenScaled"] {
            let v = policy.str_of(field);
            if !matches!(v, "Retain" | "Delete") {
                errs.not_supported_typed(
                    Path::new("spec.persistentVolumeClaimRetentionPolicy").child(field),
                    v,
                    &["Retain", "Delete"],
                );
            }
        }
    }
    errs.nonnegative("spec.replicas", spec.int_of("replicas"));
    errs.nonnegative("spec.minReadySeconds", spec.int_of("minReadySeconds"));
    if spec.has("ordinals") {
        errs.nonnegative("spec.ordinals.start", spec.at("ordinals").int_of("start"));
    }
    let template = spec.at("template");
    match required_selector(spec, "statefulset", &Path::new("spec"), errs) {
        Some(sel) => {
            template_matches(&sel, template, &Path::new("spec.template"), errs);
            let meta = template.at("metadata");
            validate_labels(meta, "labels", &Path::new("spec.template.labels"), errs);
            validate_annotations(
                meta,
                "annotations",
                &Path::new("spec.template.annotations"),
                errs,
            );
        }
        None => errs.invalid_raw("spec.selector", render_selector(spec.at("selector")), ""),
    }
    always_restart(template, &Path::new("spec.template"), errs);
    if template.at("spec").has("activeDeadlineSeconds") {
        errs.forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        );
    }
}

/// `validateRollingUpdateStatefulSet`.
fn rolling_update(ru: &Value, path: &Path<'_>, errs: &mut Errors) {
    errs.nonnegative(path.child("partition"), ru.int_of("partition"));
    let mu = ru.at("maxUnavailable");
    if !mu.is_null() {
        let p = path.child("maxUnavailable");
        positive_int_or_percent(mu, &p, errs);
        if int_or_percent_value(mu) == 0 {
            errs.invalid_raw(p, render_int_or_string(mu), "cannot be 0");
        }
        not_more_than_100_percent(mu, &p, errs);
    }
}

/// The internal `RollingUpdateStatefulSetStrategy` as `encoding/json` prints it.
fn render_rolling_update(ru: &Value) -> String {
    if ru.is_null() {
        return "null".to_owned();
    }
    // A `*intstr.IntOrString` here, unlike the Deployment's.
    let mu = ru.at("maxUnavailable");
    let max_unavailable = if mu.is_null() {
        "null".to_owned()
    } else {
        render_int_or_string(mu)
    };
    go_struct(&[
        ("Partition", ru.int_of("partition").to_string()),
        ("MaxUnavailable", max_unavailable),
    ])
}

/// `ValidateStatefulSetStatus`.
fn status(s: &Value, errs: &mut Errors) {
    counters(
        s,
        &[
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ],
        errs,
    );
    replica_bounds(
        s,
        &[
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ],
        "cannot be greater than status.readyReplicas",
        errs,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::set;
    use serde_json::json;

    fn valid() -> Value {
        json!({"spec": {
            "replicas": 3, "serviceName": "web", "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
        }})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(stateful_set, obj, old, sub)
    }

    /// `TestValidateStatefulSet`.
    #[test]
    fn test_validate_stateful_set() {
        assert!(run(&valid(), None, None).is_empty());
        assert_eq!(
            run(
                &set(
                    set(valid(), "/spec/podManagementPolicy", json!("Sometimes")),
                    "/spec/updateStrategy",
                    json!({"type": "OnDelete", "rollingUpdate": {"partition": 1}})
                ),
                None,
                None
            ),
            vec![
                "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'",
                "spec.updateStrategy.rollingUpdate: Invalid value: {\"Partition\":1,\"MaxUnavailable\":null}: only allowed for updateStrategy 'RollingUpdate'",
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/updateStrategy/rollingUpdate",
                    json!({"partition": -1, "maxUnavailable": 0})
                ),
                None,
                None
            ),
            vec![
                "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0",
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Keep", "whenScaled": "Delete"})
                ),
                None,
                None
            ),
            vec![
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\""
            ]
        );
        assert_eq!(
            run(
                &set(
                    set(valid(), "/spec/replicas", json!(-1)),
                    "/spec/template/spec/restartPolicy",
                    json!("Never")
                ),
                None,
                None
            ),
            vec![
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/selector", json!({"matchLabels": {}})),
                None,
                None
            ),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for statefulset"]
        );
    }

    /// `TestValidateStatefulSetUpdate`.
    #[test]
    fn test_validate_stateful_set_update() {
        let old = valid();
        let scaled = set(
            set(valid(), "/spec/replicas", json!(5)),
            "/spec/template/spec/containers/0/image",
            json!("i:2"),
        );
        assert!(run(&scaled, Some(&old), None).is_empty());
        let claims = set(valid(), "/spec/volumeClaimTemplates", json!([]));
        assert_eq!(
            run(&claims, Some(&old), None),
            vec![
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );
    }

    /// `TestValidateStatefulSetStatus`.
    #[test]
    fn test_validate_stateful_set_status() {
        let s = set(
            valid(),
            "/status",
            json!({"replicas": 2, "readyReplicas": 2, "currentReplicas": 3, "availableReplicas": 1, "observedGeneration": -1}),
        );
        assert_eq!(
            run(&s, Some(&valid()), Some("status")),
            vec![
                "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
                "status.currentReplicas: Invalid value: 3: cannot be greater than status.replicas",
            ]
        );
    }
}
