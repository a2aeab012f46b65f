//! A Deployment's status and conditions (`kubernetes/kubernetes pkg/controller/deployment/
//! progress.go`, `sync.go` `calculateStatus`, `util/deployment_util.go`): the counts, the
//! Available condition, and the Progressing condition that tells a rollout moving
//! (`ReplicaSetUpdated`), done (`NewReplicaSetAvailable`), paused or resumed, or stuck for
//! longer than `progressDeadlineSeconds` (`ProgressDeadlineExceeded`, which `kubectl rollout
//! status` reports as an error). Pure functions of the objects and the time.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{available, fenceposts, replicas};

pub(super) const PROGRESSING: &str = "Progressing";
const AVAILABLE: &str = "Available";
const REPLICA_FAILURE: &str = "ReplicaFailure";
/// Upstream `NewRSAvailableReason`.
pub(super) const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
/// Upstream `TimedOutReason`.
pub(super) const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub(super) const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub(super) const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
const RS_UPDATED: &str = "ReplicaSetUpdated";
const PAUSED: &str = "DeploymentPaused";
const RESUMED: &str = "DeploymentResumed";

/// Upstream `HasProgressDeadline`: a deadline set and not `MaxInt32` (which means none).
pub(super) fn has_deadline(d: &Deployment) -> bool {
    d.spec
        .progress_deadline_seconds
        .is_some_and(|s| s != i32::MAX)
}

fn want(d: &Deployment) -> i32 {
    d.spec.replicas.unwrap_or(1)
}

/// Upstream `MaxUnavailable`: none for Recreate or an empty Deployment, at most the replicas.
fn max_unavailable(d: &Deployment) -> i32 {
    let recreate = d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate");
    if recreate || want(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(want(d))
}

pub(super) fn condition<'a>(
    conditions: &'a [DeploymentCondition],
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    conditions
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))
}

/// Upstream `NewDeploymentCondition`.
pub(super) fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: Some(type_.into()),
        status: Some(status.into()),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Upstream `SetDeploymentCondition`: a condition of the same status and reason is left as it
/// is (its update time included); one of the same status keeps its transition time.
pub(super) fn set_condition(conditions: &mut Vec<DeploymentCondition>, mut c: DeploymentCondition) {
    if let Some(i) = conditions.iter().position(|x| x.type_ == c.type_) {
        let current = &conditions[i];
        if current.status == c.status && current.reason == c.reason {
            return;
        }
        if current.status == c.status {
            c.last_transition_time = current.last_transition_time.clone();
        }
        conditions.remove(i);
    }
    conditions.push(c);
}

fn remove_condition(conditions: &mut Vec<DeploymentCondition>, type_: &str) {
    conditions.retain(|c| c.type_.as_deref() != Some(type_));
}

/// The Deployment's conditions, to change in place.
pub(super) fn conditions_mut(d: &mut Deployment) -> &mut Vec<DeploymentCondition> {
    d.status
        .get_or_insert_with(DeploymentStatus::default)
        .conditions
        .get_or_insert_with(Vec::new)
}

/// Upstream `checkPausedConditions`: Progressing is Unknown while paused, and says so once
/// resumed; a reported timeout is not overwritten. Whether the conditions changed.
pub(super) fn check_paused(d: &mut Deployment, now: Timestamp) -> bool {
    if !has_deadline(d) {
        return false;
    }
    let paused = d.spec.paused == Some(true);
    let current = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| condition(c, PROGRESSING))
        .and_then(|c| c.reason.clone());
    if current.as_deref() == Some(TIMED_OUT) {
        return false;
    }
    let paused_reported = current.as_deref() == Some(PAUSED);
    let c = match (paused, paused_reported) {
        (true, false) => new_condition(
            PROGRESSING,
            "Unknown",
            PAUSED,
            "Deployment is paused".into(),
            now,
        ),
        (false, true) => new_condition(
            PROGRESSING,
            "Unknown",
            RESUMED,
            "Deployment is resumed".into(),
            now,
        ),
        _ => return false,
    };
    set_condition(conditions_mut(d), c);
    true
}

/// Upstream `calculateStatus`: the counts over every ReplicaSet, the new one's as updated, and
/// the Available condition.
pub(super) fn calculate(
    d: &Deployment,
    sets: &[ReplicaSet],
    new: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let sum = |f: &dyn Fn(&ReplicaSet) -> i32| sets.iter().map(f).sum::<i32>();
    let actual = |rs: &ReplicaSet| rs.status.as_ref().map_or(0, |s| s.replicas);
    let avail = sum(&available);
    let mut conditions = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let c = if avail >= want(d) - max_unavailable(d) {
        new_condition(
            AVAILABLE,
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
            now,
        )
    } else {
        new_condition(
            AVAILABLE,
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
            now,
        )
    };
    set_condition(&mut conditions, c);
    DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(sum(&actual)),
        updated_replicas: Some(new.map_or(0, actual)),
        ready_replicas: Some(sum(&|rs| {
            rs.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
        })),
        available_replicas: Some(avail),
        unavailable_replicas: Some((sum(&replicas) - avail).max(0)),
        conditions: Some(conditions),
        collision_count: d.status.as_ref().and_then(|s| s.collision_count),
        terminating_replicas: d.status.as_ref().and_then(|s| s.terminating_replicas),
    }
}

/// Upstream `DeploymentComplete`: every replica updated and available, and the spec observed.
pub(super) fn complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let w = Some(want(d));
    s.updated_replicas == w
        && s.replicas == w
        && s.available_replicas == w
        && s.observed_generation >= d.metadata.generation
}

/// Upstream `DeploymentProgressing`: more updated, ready or available replicas than the last
/// status said, or fewer old ones.
fn progressing(old: &DeploymentStatus, new: &DeploymentStatus) -> bool {
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_olds = n(old.replicas) - n(old.updated_replicas);
    let new_olds = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_olds < old_olds
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// Upstream `DeploymentTimedOut`: no progress for `progressDeadlineSeconds` since the
/// Progressing condition was last updated.
fn timed_out(d: &Deployment, s: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(c) = s
        .conditions
        .as_deref()
        .and_then(|c| condition(c, PROGRESSING))
    else {
        return false;
    };
    match c.reason.as_deref() {
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        _ => c.last_update_time.as_ref().is_some_and(|t| {
            let deadline = i64::from(d.spec.progress_deadline_seconds.unwrap_or(0));
            t.0 + jiff::SignedDuration::from_secs(deadline) < now
        }),
    }
}

/// Upstream `syncRolloutStatus`: the status of a rollout, with its Progressing condition
/// (`d.status` holds this sync's conditions; `observed` the status the cache last saw) and the
/// new ReplicaSet's failure, if any, as the Deployment's.
pub(super) fn rollout(
    d: &Deployment,
    observed: &DeploymentStatus,
    sets: &[ReplicaSet],
    new: Option<&ReplicaSet>,
    now: Timestamp,
) -> DeploymentStatus {
    let mut status = calculate(d, sets, new, now);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if !has_deadline(d) {
        remove_condition(conditions, PROGRESSING);
    }
    let current = d
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| condition(c, PROGRESSING))
        .cloned();
    let done = status.replicas == status.updated_replicas
        && current.as_ref().and_then(|c| c.reason.as_deref()) == Some(NEW_RS_AVAILABLE);
    let what = match new.and_then(|rs| rs.metadata.name.as_deref()) {
        Some(rs) => format!("ReplicaSet {rs:?}"),
        None => format!(
            "Deployment {:?}",
            d.metadata.name.as_deref().unwrap_or_default()
        ),
    };
    if has_deadline(d) && !done {
        if complete(d, &status) {
            let c = new_condition(
                PROGRESSING,
                "True",
                NEW_RS_AVAILABLE,
                format!("{what} has successfully progressed."),
                now,
            );
            set_condition(status.conditions.get_or_insert_with(Vec::new), c);
        } else if progressing(observed, &status) {
            // Progress refreshes the condition's update time, which the deadline counts from.
            let mut c = new_condition(
                PROGRESSING,
                "True",
                RS_UPDATED,
                format!("{what} is progressing."),
                now,
            );
            let conditions = status.conditions.get_or_insert_with(Vec::new);
            if let Some(cur) = &current {
                if cur.status.as_deref() == Some("True") {
                    c.last_transition_time = cur.last_transition_time.clone();
                }
                remove_condition(conditions, PROGRESSING);
            }
            set_condition(conditions, c);
        } else if timed_out(d, &status, now) {
            let c = new_condition(
                PROGRESSING,
                "False",
                TIMED_OUT,
                format!("{what} has timed out progressing."),
                now,
            );
            set_condition(status.conditions.get_or_insert_with(Vec::new), c);
        }
    }
    let failure = new
        .into_iter()
        .chain(sets)
        .filter_map(|rs| rs.status.as_ref()?.conditions.as_ref())
        .flatten()
        .find(|c| c.type_.as_deref() == Some(REPLICA_FAILURE))
        .cloned();
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match failure {
        Some(f) => set_condition(
            conditions,
            DeploymentCondition {
                type_: f.type_,
                status: f.status,
                reason: f.reason,
                message: f.message,
                last_update_time: f.last_transition_time.clone(),
                last_transition_time: f.last_transition_time,
            },
        ),
        None => remove_condition(conditions, REPLICA_FAILURE),
    }
    status
}

/// Upstream `requeueStuckDeployment`: when to look again so a rollout that stops moving times
/// out on time; `None` without a deadline, or once complete or timed out.
pub(super) fn recheck(
    d: &Deployment,
    observed: &DeploymentStatus,
    status: &DeploymentStatus,
    now: Timestamp,
) -> Option<Duration> {
    let current = observed
        .conditions
        .as_deref()
        .and_then(|c| condition(c, PROGRESSING))?;
    if !has_deadline(d) || complete(d, status) || current.reason.as_deref() == Some(TIMED_OUT) {
        return None;
    }
    let from = current.last_update_time.as_ref()?.0;
    let deadline =
        jiff::SignedDuration::from_secs(i64::from(d.spec.progress_deadline_seconds.unwrap_or(0)));
    let after = (from + deadline).duration_since(now);
    Some(
        Duration::try_from(after).map_or(Duration::from_secs(1), |a| {
            a.max(Duration::from_secs(1)) + Duration::from_secs(1)
        }),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "d", "generation": 1},
            "spec": {
                "replicas": 2, "progressDeadlineSeconds": 10,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}},
            },
            "status": status,
        }))
        .unwrap()
    }

    fn rs(name: &str, replicas: i32, actual: i32, avail: i32) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {}},
            "status": {"replicas": actual, "readyReplicas": avail, "availableReplicas": avail},
        }))
        .unwrap()
    }

    fn progressing_reason(s: &DeploymentStatus) -> Option<String> {
        condition(s.conditions.as_deref().unwrap_or_default(), PROGRESSING)?
            .reason
            .clone()
    }

    #[test]
    fn a_rollout_that_stops_moving_times_out_after_the_deadline() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let created = json!({"observedGeneration": 1, "replicas": 0, "updatedReplicas": 0,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated",
                "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        let d = deployment(created);
        let observed = d.status.clone().unwrap();
        let new = rs("d-1", 2, 0, 0);
        let sets = [new.clone()];
        let s = rollout(
            &d,
            &observed,
            &sets,
            Some(&new),
            t0 + jiff::SignedDuration::from_secs(5),
        );
        assert_eq!(progressing_reason(&s).as_deref(), Some(NEW_RS_CREATED));
        assert_eq!(
            recheck(&d, &observed, &s, t0 + jiff::SignedDuration::from_secs(5)),
            Some(Duration::from_secs(6))
        );
        let late = t0 + jiff::SignedDuration::from_secs(11);
        let s = rollout(&d, &observed, &sets, Some(&new), late);
        assert_eq!(progressing_reason(&s).as_deref(), Some(TIMED_OUT));
        let c = condition(s.conditions.as_deref().unwrap(), PROGRESSING).unwrap();
        assert_eq!(c.status.as_deref(), Some("False"));
        assert_eq!(
            c.message.as_deref(),
            Some("ReplicaSet \"d-1\" has timed out progressing.")
        );
    }

    #[test]
    fn progress_refreshes_the_condition_and_completion_ends_it() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let d = deployment(
            json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 1,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        let observed = d.status.clone().unwrap();
        let (old, new) = (rs("d-0", 0, 0, 0), rs("d-1", 2, 2, 1));
        let sets = [old, new.clone()];
        let now = t0 + jiff::SignedDuration::from_secs(20);
        let s = rollout(&d, &observed, &sets, Some(&new), now);
        let c = condition(s.conditions.as_deref().unwrap(), PROGRESSING).unwrap();
        assert_eq!(c.last_update_time, Some(Time(now)));
        assert_eq!(c.last_transition_time, Some(Time(t0)));
        let new = rs("d-1", 2, 2, 2);
        let s = rollout(&d, &observed, std::slice::from_ref(&new), Some(&new), now);
        assert_eq!(progressing_reason(&s).as_deref(), Some(NEW_RS_AVAILABLE));
        assert_eq!(recheck(&d, &observed, &s, now), None);
    }

    #[test]
    fn pausing_and_resuming_are_reported_but_a_timeout_stays() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut d = deployment(json!({}));
        d.spec.paused = Some(true);
        assert!(check_paused(&mut d, now));
        assert!(!check_paused(&mut d, now));
        d.spec.paused = None;
        assert!(check_paused(&mut d, now));
        let c = condition(
            d.status.as_ref().unwrap().conditions.as_deref().unwrap(),
            PROGRESSING,
        )
        .unwrap();
        assert_eq!(
            (c.status.as_deref(), c.reason.as_deref()),
            (Some("Unknown"), Some(RESUMED))
        );
        set_condition(
            conditions_mut(&mut d),
            new_condition(PROGRESSING, "False", TIMED_OUT, String::new(), now),
        );
        d.spec.paused = Some(true);
        assert!(!check_paused(&mut d, now));
    }

    #[test]
    fn recreate_allows_no_unavailability() {
        let mut d = deployment(json!({}));
        d.spec.strategy = Some(serde_json::from_value(json!({"type": "Recreate"})).unwrap());
        let now = Timestamp::UNIX_EPOCH;
        let s = calculate(&d, &[rs("d-1", 2, 2, 1)], None, now);
        let c = condition(s.conditions.as_deref().unwrap(), AVAILABLE).unwrap();
        assert_eq!(c.status.as_deref(), Some("False"));
        assert_eq!(s.unavailable_replicas, Some(1));
    }

    #[test]
    fn a_replica_set_failure_is_the_deployments_until_it_clears() {
        let now: Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let failure = json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
            "message": "pods \"d-1-\" is forbidden: no", "lastTransitionTime": "2026-01-01T00:00:00Z"});
        let with = |rs: &mut ReplicaSet, c: &serde_json::Value| {
            rs.status.as_mut().unwrap().conditions =
                Some(vec![serde_json::from_value(c.clone()).unwrap()]);
        };
        let d = deployment(json!({}));
        let observed = DeploymentStatus::default();
        let (mut old, mut new) = (rs("d-0", 1, 1, 1), rs("d-1", 2, 0, 0));
        with(
            &mut old,
            &json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedDelete"}),
        );
        with(&mut new, &failure);
        let s = rollout(&d, &observed, &[old.clone(), new.clone()], Some(&new), now);
        let c = condition(s.conditions.as_deref().unwrap(), REPLICA_FAILURE).unwrap();
        assert_eq!(
            c.reason.as_deref(),
            Some("FailedCreate"),
            "the new set's first"
        );
        assert_eq!(c.message.as_deref(), Some("pods \"d-1-\" is forbidden: no"));
        let t0 = Some(Time("2026-01-01T00:00:00Z".parse().unwrap()));
        assert_eq!((&c.last_update_time, &c.last_transition_time), (&t0, &t0));
        let mut d = d;
        d.status = Some(s);
        new.status.as_mut().unwrap().conditions = None;
        let s = rollout(&d, &observed, &[old.clone(), new.clone()], Some(&new), now);
        let c = condition(s.conditions.as_deref().unwrap(), REPLICA_FAILURE).unwrap();
        assert_eq!(
            c.reason.as_deref(),
            Some("FailedDelete"),
            "else an old set's"
        );
        old.status.as_mut().unwrap().conditions = None;
        let s = rollout(&d, &observed, &[old, new.clone()], Some(&new), now);
        assert!(condition(s.conditions.as_deref().unwrap(), REPLICA_FAILURE).is_none());
    }
}
