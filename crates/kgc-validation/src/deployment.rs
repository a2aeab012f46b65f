//! apps/v1 Deployment, following kubernetes/kubernetes `pkg/apis/apps/validation/validation.go`
//! (`ValidateDeployment`, `ValidateDeploymentSpec`, `ValidateDeploymentStrategy`,
//! `ValidateRollingUpdateDeployment`, `ValidateDeploymentUpdate`, `ValidateDeploymentStatus`,
//! `ValidateDeploymentStatusUpdate`) and `pkg/registry/apps/deployment/strategy.go` (the
//! immutable selector of apps/v1).

use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::workload::{
    Rules, counters, immutable_selector, int_or_percent_value, not_more_than_100_percent,
    render_int_or_string, render_strategy, render_surge_and_unavailable, replica_bounds, route,
    selector_and_template, surge_and_unavailable,
};

/// A Deployment create, update or `status` update.
pub(crate) fn deployment(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let rules = Rules {
        spec,
        update: immutable_selector,
        status,
    };
    route(obj, op, &rules, errs);
}

/// `ValidateDeploymentSpec`.
fn spec(spec: &Value, errs: &mut Errors) {
    errs.nonnegative("spec.replicas", spec.int_of("replicas"));
    selector_and_template(spec, errs);
    strategy(spec.at("strategy"), &Path::new("spec.strategy"), errs);
    let min_ready = spec.int_of("minReadySeconds");
    errs.nonnegative("spec.minReadySeconds", min_ready);
    if let Some(limit) = spec.opt_int("revisionHistoryLimit") {
        errs.nonnegative("spec.revisionHistoryLimit", limit);
    }
    if let Some(deadline) = spec.opt_int("progressDeadlineSeconds") {
        errs.nonnegative("spec.progressDeadlineSeconds", deadline);
        if deadline <= min_ready {
            errs.invalid_int(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            );
        }
    }
}

/// `ValidateDeploymentStrategy`.
fn strategy(s: &Value, path: &Path<'_>, errs: &mut Errors) {
    let ru = s.at("rollingUpdate");
    match s.str_of("type") {
        "Recreate" => {
            if !ru.is_null() {
                errs.forbidden(
                    path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                );
            }
        }
        "RollingUpdate" => {
            let rp = path.child("rollingUpdate");
            if ru.is_null() {
                errs.required(rp, "this should be defaulted and never be nil");
                return;
            }
            let [(mu, mu_path), (ms, _)] = surge_and_unavailable(ru, &rp, errs);
            if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                errs.invalid_raw(
                    mu_path,
                    render_int_or_string(mu),
                    "may not be 0 when `maxSurge` is 0",
                );
            }
            not_more_than_100_percent(mu, &mu_path, errs);
        }
        _ => errs.not_supported_raw(
            path,
            render_strategy(s, render_surge_and_unavailable),
            &["Recreate", "RollingUpdate"],
        ),
    }
}

/// `ValidateDeploymentStatus`.
fn status(s: &Value, errs: &mut Errors) {
    counters(
        s,
        &[
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "collisionCount",
        ],
        errs,
    );
    replica_bounds(
        s,
        &["updatedReplicas", "readyReplicas", "availableReplicas"],
        "cannot be greater than readyReplicas",
        errs,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::set;
    use serde_json::json;

    pub(crate) fn valid() -> Value {
        json!({"metadata": {"name": "d", "namespace": "ns"}, "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
        }})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(deployment, obj, old, sub)
    }

    /// `TestValidateDeployment`.
    #[test]
    fn test_validate_deployment() {
        assert!(run(&valid(), None, None).is_empty());
        assert_eq!(
            run(&set(valid(), "/spec/replicas", json!(-1)), None, None),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/selector",
                    json!({"matchLabels": {"app": "db"}})
                ),
                None,
                None
            ),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/selector", Value::Null), None, None),
            vec![
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/selector", json!({})), None, None),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/template/spec/restartPolicy",
                    json!("OnFailure")
                ),
                None,
                None
            ),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\""
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/template/spec/activeDeadlineSeconds",
                    json!(10)
                ),
                None,
                None
            ),
            vec![
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/template/spec/containers/0/image", json!("")),
                None,
                None
            ),
            vec!["spec.template.spec.containers[0].image: Required value"]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/strategy",
                    json!({"type": "Recreate", "rollingUpdate": {}})
                ),
                None,
                None
            ),
            vec![
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/strategy", json!({"type": "Rolling"})),
                None,
                None
            ),
            vec![
                "spec.strategy: Unsupported value: {\"Type\":\"Rolling\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/strategy/rollingUpdate",
                    json!({"maxUnavailable": 0, "maxSurge": "0%"})
                ),
                None,
                None
            ),
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/strategy/rollingUpdate/maxUnavailable",
                    json!("110%")
                ),
                None,
                None
            ),
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"110%\": must not be greater than 100%"
            ]
        );
        assert_eq!(
            run(
                &set(
                    set(valid(), "/spec/progressDeadlineSeconds", json!(5)),
                    "/spec/minReadySeconds",
                    json!(5)
                ),
                None,
                None
            ),
            vec![
                "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/revisionHistoryLimit", json!(-2)),
                None,
                None
            ),
            vec![
                "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0"
            ]
        );
    }

    /// `TestValidateDeploymentUpdate` and the apps/v1 immutable selector.
    #[test]
    fn test_validate_deployment_update() {
        let old = valid();
        let scaled = set(valid(), "/spec/replicas", json!(5));
        assert!(run(&scaled, Some(&old), None).is_empty());
        let relabeled = set(
            set(
                valid(),
                "/spec/selector",
                json!({"matchLabels": {"app": "v2"}}),
            ),
            "/spec/template/metadata/labels",
            json!({"app": "v2"}),
        );
        assert_eq!(
            run(&relabeled, Some(&old), None),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"v2\"}}: field is immutable"
            ]
        );
    }

    /// `TestValidateDeploymentStatus` and `TestValidateDeploymentStatusUpdate`.
    #[test]
    fn test_validate_deployment_status() {
        let with_status = |s: Value| set(valid(), "/status", s);
        let old = with_status(json!({"collisionCount": 3}));
        assert_eq!(
            run(
                &with_status(
                    json!({"replicas": 2, "readyReplicas": 3, "availableReplicas": 4, "updatedReplicas": -1, "collisionCount": 2})
                ),
                Some(&old),
                Some("status")
            ),
            vec![
                "status.updatedReplicas: Invalid value: -1: must be greater than or equal to 0",
                "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 4: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 4: cannot be greater than readyReplicas",
                "status.collisionCount: Invalid value: 2: cannot be decremented",
            ]
        );
        // The main resource ignores status.
        assert!(run(&with_status(json!({"replicas": -5})), Some(&old), None).is_empty());
    }
}
