//! PodDisruptionBudget rules that the eviction subresource (kgc-apiserver) and the disruption
//! controller (kgc-disruption) must apply identically: when a pod counts as healthy and how the
//! budget's `DisruptionAllowed` condition follows `status.disruptionsAllowed`
//! (kubernetes/kubernetes `pkg/apis/policy/helper`, `pkg/api/v1/pod/util.go` `IsPodReady`).

use serde_json::{Value, json};

/// The condition type a budget reports (`policy.DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// Its reasons: disruptions are allowed, are not, or the controller could not compute them.
pub const SUFFICIENT_PODS: &str = "SufficientPods";
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const SYNC_FAILED: &str = "SyncFailed";
/// How long an evicted pod stays in `status.disruptedPods` before the controller stops waiting
/// for its deletion (`DeletionTimeout`, 2 minutes).
pub const DELETION_TIMEOUT_SECS: i64 = 120;

/// Whether the pod's `Ready` condition is `True`: a pod counts towards a budget only then.
pub fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// `UpdateDisruptionAllowedCondition`: `DisruptionAllowed` is `True`/`SufficientPods` while
/// `status.disruptionsAllowed` is positive, else `False`/`InsufficientPods`.
pub fn update_disruption_allowed(status: &mut Value, now: &str) {
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0) > 0;
    let (value, reason) = match allowed {
        true => ("True", SUFFICIENT_PODS),
        false => ("False", INSUFFICIENT_PODS),
    };
    set_condition(status, value, reason, "", now);
}

/// apimachinery `meta.SetStatusCondition` of the `DisruptionAllowed` condition in a budget's
/// `status`: the transition time moves only when the status changes; reason, message and
/// `observedGeneration` (the status's) are always the new ones.
pub fn set_condition(status: &mut Value, value: &str, reason: &str, message: &str, now: &str) {
    if !status.is_object() {
        *status = json!({});
    }
    let generation = status["observedGeneration"].as_i64().unwrap_or(0);
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return;
    };
    let mut condition = json!({
        "type": DISRUPTION_ALLOWED,
        "status": value,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    });
    match conditions
        .iter_mut()
        .find(|c| c["type"] == DISRUPTION_ALLOWED)
    {
        Some(old) => {
            if old["status"] == value {
                condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_follows_disruptions_allowed_and_keeps_its_transition_time() {
        let mut status = json!({"disruptionsAllowed": 1, "observedGeneration": 3});
        update_disruption_allowed(&mut status, "t1");
        assert_eq!(
            status["conditions"],
            json!([{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                    "message": "", "observedGeneration": 3, "lastTransitionTime": "t1"}])
        );
        update_disruption_allowed(&mut status, "t2");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], "t1");
        status["disruptionsAllowed"] = json!(0);
        update_disruption_allowed(&mut status, "t3");
        let c = &status["conditions"][0];
        assert_eq!(
            (&c["status"], &c["reason"]),
            (&json!("False"), &json!("InsufficientPods"))
        );
        assert_eq!(c["lastTransitionTime"], "t3");
        assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn only_a_ready_pod_is_healthy() {
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(pod_ready(&ready));
        assert!(!pod_ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        ));
        assert!(!pod_ready(&json!({})));
    }
}
