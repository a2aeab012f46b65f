//! apps/v1 DaemonSet, following kubernetes/kubernetes `pkg/apis/apps/validation/validation.go`
//! (`ValidateDaemonSetSpec`, `ValidateDaemonSetUpdateStrategy`, `ValidateRollingUpdateDaemonSet`,
//! `ValidateDaemonSetStatusUpdate`, `validateDaemonSetStatus`) and
//! `pkg/registry/apps/daemonset/strategy.go` (the immutable selector of apps/v1).

use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path};
use crate::json::Json;
use crate::labels::{Selector, is_empty_selector, render_selector, validate_selector};
use crate::pod::validate_template;
use crate::workload::{
    Rules, always_restart, counters, immutable_selector, int_or_percent_value,
    not_more_than_100_percent, render_int_or_string, render_strategy, render_surge_and_unavailable,
    route, surge_and_unavailable, template_matches,
};

/// A DaemonSet create, update or `status` update.
pub(crate) fn daemon_set(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let rules = Rules {
        spec,
        update: immutable_selector,
        status,
    };
    route(obj, op, &rules, errs);
}

/// `validateDaemonSetStatus`.
fn status(s: &Value, errs: &mut Errors) {
    counters(
        s,
        &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
            "observedGeneration",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
            "collisionCount",
        ],
        errs,
    );
}

/// `ValidateDaemonSetSpec`.
fn spec(spec: &Value, errs: &mut Errors) {
    let sel = spec.at("selector");
    validate_selector(sel, false, &Path::new("spec.selector"), errs);
    let template = spec.at("template");
    // A nil selector selects nothing, so an absent one fails the match.
    if let Some(selector) = Selector::from_json(sel) {
        template_matches(&selector, template, &Path::new("spec.template"), errs);
    }
    if !sel.is_null() && is_empty_selector(sel) {
        errs.invalid_raw(
            "spec.selector",
            render_selector(sel),
            "empty selector is invalid for daemonset",
        );
    }
    validate_template(template, &Path::new("spec.template"), errs);
    always_restart(template, &Path::new("spec.template"), errs);
    if let Some(d) = template.at("spec").opt_int("activeDeadlineSeconds") {
        errs.invalid_int(
            "spec.template.spec.activeDeadlineSeconds",
            d,
            "activeDeadlineSeconds must be nil for daemon sets",
        );
    }
    errs.nonnegative("spec.minReadySeconds", spec.int_of("minReadySeconds"));
    strategy(
        spec.at("updateStrategy"),
        &Path::new("spec.updateStrategy"),
        errs,
    );
    if let Some(limit) = spec.opt_int("revisionHistoryLimit") {
        errs.nonnegative("spec.revisionHistoryLimit", limit);
    }
}

/// `ValidateDaemonSetUpdateStrategy` and `ValidateRollingUpdateDaemonSet`.
fn strategy(s: &Value, path: &Path<'_>, errs: &mut Errors) {
    let ru = s.at("rollingUpdate");
    match s.str_of("type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let rp = path.child("rollingUpdate");
            if ru.is_null() {
                errs.required(rp, "");
                return;
            }
            let [(mu, mu_path), (ms, ms_path)] = surge_and_unavailable(ru, &rp, errs);
            not_more_than_100_percent(mu, &mu_path, errs);
            not_more_than_100_percent(ms, &ms_path, errs);
            match (int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0) {
                (true, true) => errs.invalid_raw(
                    ms_path,
                    render_int_or_string(ms),
                    "may not be set when maxUnavailable is non-zero",
                ),
                (false, false) => errs.required(mu_path, "cannot be 0 when maxSurge is 0"),
                _ => {}
            }
        }
        _ => errs.not_supported_raw(
            path,
            render_strategy(s, render_surge_and_unavailable),
            &["RollingUpdate", "OnDelete"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::set;
    use serde_json::json;

    fn valid() -> Value {
        json!({"spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
        }})
    }

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(daemon_set, obj, old, sub)
    }

    /// `TestValidateDaemonSet`.
    #[test]
    fn test_validate_daemon_set() {
        assert!(run(&valid(), None, None).is_empty());
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/updateStrategy/rollingUpdate",
                    json!({"maxUnavailable": 1, "maxSurge": 1})
                ),
                None,
                None
            ),
            vec![
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/updateStrategy/rollingUpdate",
                    json!({"maxUnavailable": "0%", "maxSurge": 0})
                ),
                None,
                None
            ),
            vec![
                "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
            ]
        );
        assert_eq!(
            run(
                &set(valid(), "/spec/updateStrategy", json!({"type": "Surge"})),
                None,
                None
            ),
            vec![
                "spec.updateStrategy: Unsupported value: {\"Type\":\"Surge\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""
            ]
        );
        assert_eq!(
            run(&set(valid(), "/spec/selector", Value::Null), None, None),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`"
            ]
        );
        assert_eq!(
            run(
                &set(
                    valid(),
                    "/spec/template/spec/activeDeadlineSeconds",
                    json!(5)
                ),
                None,
                None
            ),
            vec![
                "spec.template.spec.activeDeadlineSeconds: Invalid value: 5: activeDeadlineSeconds must be nil for daemon sets"
            ]
        );
    }

    /// `TestValidateDaemonSetUpdate`: the selector is fixed, the template is not.
    #[test]
    fn test_validate_daemon_set_update() {
        let image = set(
            valid(),
            "/spec/template/spec/containers/0/image",
            json!("i:2"),
        );
        assert!(run(&image, Some(&valid()), None).is_empty());
        let relabel = set(
            set(valid(), "/spec/selector/matchLabels/app", json!("x")),
            "/spec/template/metadata/labels/app",
            json!("x"),
        );
        assert_eq!(
            run(&relabel, Some(&valid()), None),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\"}}: field is immutable"
            ]
        );
        let status = set(valid(), "/status", json!({"numberReady": -1}));
        assert_eq!(
            run(&status, Some(&valid()), Some("status")),
            vec!["status.numberReady: Invalid value: -1: must be greater than or equal to 0"]
        );
    }
}
