//! A budget's numbers, as the disruption controller computes them (`getExpectedPodCount`,
//! `buildDisruptedPodMap`, `countHealthyPods`, `updatePdbStatus`).

use jiff::{SignedDuration, Timestamp};
use kgc_meta::disruption::DELETION_TIMEOUT_SECS;
use serde_json::{Map, Value, json};

use crate::{Error, Result};

/// A pod a budget selects, as far as the budget cares.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub name: String,
    /// Being deleted: neither healthy nor waiting for its eviction.
    pub deleting: bool,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
}

/// `intstr.GetScaledValueFromIntOrPercent`: an integer as is, a percentage of `total` rounded
/// up or down; anything else is upstream's error.
pub fn scaled_value(v: &Value, total: i64, round_up: bool) -> Result<i64> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    let Some(s) = v.as_str() else {
        return Err(Error::Invalid(format!(
            "invalid value for IntOrString: invalid type: {v}"
        )));
    };
    kgc_meta::intstr::scaled_percent(s, total, round_up).map_err(Error::Invalid)
}

/// Whether the budget's numbers depend on its pods' controllers' scale (`maxUnavailable`, or a
/// percentage `minAvailable`), rather than on the pods matched.
pub fn needs_scale(spec: &Value) -> bool {
    !spec["maxUnavailable"].is_null() || spec["minAvailable"].is_string()
}

/// `getExpectedPodCount`: `(expectedPods, desiredHealthy)` of a budget selecting `matched` pods
/// whose controllers ask for `scale` replicas in all (`Some` when [`needs_scale`]).
pub fn expected_and_desired(
    spec: &Value,
    matched: usize,
    scale: Option<i64>,
) -> Result<(i64, i64)> {
    let scale = scale.unwrap_or(0);
    let max = &spec["maxUnavailable"];
    let min = &spec["minAvailable"];
    if !max.is_null() {
        let unavailable = scaled_value(max, scale, true)?;
        return Ok((scale, (scale - unavailable).max(0)));
    }
    if min.is_null() {
        return Ok((0, 0));
    }
    if min.is_string() {
        return Ok((scale, scaled_value(min, scale, true)?));
    }
    let matched = i64::try_from(matched).unwrap_or(i64::MAX);
    Ok((matched, min.as_i64().unwrap_or(0)))
}

/// `buildDisruptedPodMap`: the evictions of `disruptedPods` still expected to complete — the
/// pod exists, is not yet being deleted, and was evicted less than 2 minutes ago — and when the
/// first of them expires (the budget is looked at again then).
pub fn pending_evictions(
    recorded: &Value,
    pods: &[Member],
    now: Timestamp,
) -> (Map<String, Value>, Option<Timestamp>) {
    let mut pending = Map::new();
    let mut recheck: Option<Timestamp> = None;
    let timeout = SignedDuration::from_secs(DELETION_TIMEOUT_SECS);
    for pod in pods.iter().filter(|p| !p.deleting) {
        let Some(at) = recorded.get(&pod.name) else {
            continue;
        };
        let Some(expires) = at
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .and_then(|t| t.checked_add(timeout).ok())
        else {
            continue;
        };
        if expires < now {
            tracing::info!(pod = %pod.name, "an evicted pod was not deleted within 2 minutes; counted again");
            continue;
        }
        recheck = Some(recheck.map_or(expires, |r| r.min(expires)));
        pending.insert(pod.name.clone(), at.clone());
    }
    (pending, recheck)
}

/// `countHealthyPods`: ready pods neither being deleted nor about to be.
pub fn current_healthy(pods: &[Member], pending: &Map<String, Value>) -> i64 {
    let n = pods
        .iter()
        .filter(|p| !p.deleting && p.ready && !pending.contains_key(&p.name))
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `updatePdbStatus`: the budget's new status (its conditions updated by the caller). No
/// disruption is allowed while no pod is expected, so a budget whose first pods appear is safe
/// before the controller has seen them.
pub fn status(
    current: i64,
    desired: i64,
    expected: i64,
    pending: Map<String, Value>,
    generation: i64,
) -> Value {
    let allowed = if expected <= 0 {
        0
    } else {
        (current - desired).max(0)
    };
    let mut s = json!({
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "observedGeneration": generation,
    });
    if !pending.is_empty() {
        s["disruptedPods"] = Value::Object(pending);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up_as_upstream() {
        assert_eq!(scaled_value(&json!("50%"), 3, true).unwrap(), 2);
        assert_eq!(scaled_value(&json!("50%"), 3, false).unwrap(), 1);
        assert_eq!(scaled_value(&json!("34%"), 3, true).unwrap(), 2);
        assert_eq!(scaled_value(&json!("100%"), 7, true).unwrap(), 7);
        assert_eq!(scaled_value(&json!("0%"), 7, true).unwrap(), 0);
        assert_eq!(scaled_value(&json!(4), 7, true).unwrap(), 4);
        assert!(scaled_value(&json!("half"), 7, true).is_err());
        assert!(scaled_value(&json!("x%"), 7, true).is_err());
    }

    #[test]
    fn expected_and_desired_per_kind_of_budget() {
        // An integer minAvailable counts the matched pods.
        let spec = json!({"minAvailable": 2});
        assert!(!needs_scale(&spec));
        assert_eq!(expected_and_desired(&spec, 3, None).unwrap(), (3, 2));
        // A percentage of the controllers' scale, rounded up.
        let spec = json!({"minAvailable": "50%"});
        assert!(needs_scale(&spec));
        assert_eq!(expected_and_desired(&spec, 2, Some(5)).unwrap(), (5, 3));
        // maxUnavailable: unavailable rounded up, desired never below 0.
        let spec = json!({"maxUnavailable": "30%"});
        assert_eq!(expected_and_desired(&spec, 4, Some(4)).unwrap(), (4, 2));
        let spec = json!({"maxUnavailable": 5});
        assert_eq!(expected_and_desired(&spec, 4, Some(4)).unwrap(), (4, 0));
        assert_eq!(expected_and_desired(&json!({}), 4, None).unwrap(), (0, 0));
    }

    fn member(name: &str, ready: bool, deleting: bool) -> Member {
        Member {
            name: name.into(),
            ready,
            deleting,
        }
    }

    #[test]
    fn evictions_expire_after_two_minutes() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let recorded = json!({
            "fresh": "2026-01-01T00:09:30Z",
            "old": "2026-01-01T00:07:00Z",
            "going": "2026-01-01T00:09:50Z",
            "gone": "2026-01-01T00:09:50Z",
        });
        let pods = [
            member("fresh", true, false),
            member("old", true, false),
            member("going", true, true),
            member("other", true, false),
            member("unready", false, false),
        ];
        let (pending, recheck) = pending_evictions(&recorded, &pods, now);
        assert_eq!(pending.keys().collect::<Vec<_>>(), ["fresh"]);
        assert_eq!(recheck.unwrap().to_string(), "2026-01-01T00:11:30Z");
        // "fresh" is about to go, "going" is going, "unready" is not ready.
        assert_eq!(current_healthy(&pods, &pending), 2);
    }

    #[test]
    fn disruptions_allowed_needs_expected_pods() {
        let s = status(3, 2, 3, Map::new(), 4);
        assert_eq!(s["disruptionsAllowed"], 1);
        assert_eq!(s["observedGeneration"], 4);
        assert!(s.get("disruptedPods").is_none());
        assert_eq!(status(3, 2, 0, Map::new(), 1)["disruptionsAllowed"], 0);
        assert_eq!(status(1, 2, 3, Map::new(), 1)["disruptionsAllowed"], 0);
    }
}
