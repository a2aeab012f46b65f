//! A StatefulSet's status (`kubernetes/kubernetes pkg/controller/statefulset/
//! stateful_set_control.go`, `computeReplicaStatus`, `completeRollingUpdate`).

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};

use super::identity::Member;

fn count(pods: &[Member], f: impl Fn(&Member) -> bool) -> i32 {
    i32::try_from(pods.iter().filter(|m| f(m)).count()).unwrap_or(i32::MAX)
}

/// The status of `set` with `pods` (its claimed members), at the revisions named.
pub fn status(
    set: &StatefulSet,
    pods: &[Member],
    current_revision: &str,
    update_revision: &str,
    collision_count: i32,
    now: Timestamp,
) -> StatefulSetStatus {
    let min_ready = i64::from(set.spec.min_ready_seconds.unwrap_or(0));
    let live = |m: &Member, revision: &str| !m.pod.deleting && m.revision() == Some(revision);
    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation,
        replicas: count(pods, |_| true),
        ready_replicas: Some(count(pods, Member::is_running_and_ready)),
        available_replicas: Some(count(pods, |m| {
            m.is_running_and_ready() && m.pod.is_available(min_ready, now)
        })),
        current_replicas: Some(count(pods, |m| live(m, current_revision))),
        updated_replicas: Some(count(pods, |m| live(m, update_revision))),
        current_revision: Some(current_revision.to_owned()),
        update_revision: Some(update_revision.to_owned()),
        collision_count: Some(collision_count),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
    };
    // A rolling update is complete once every replica runs the update revision, ready.
    let rolling = set
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        != Some("OnDelete");
    if rolling
        && status.updated_replicas == Some(status.replicas)
        && status.ready_replicas == Some(status.replicas)
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
    status
}

#[cfg(test)]
mod tests {
    use kgc_runtime::informer::View;
    use serde_json::json;

    use super::*;

    fn pod(ord: i32, ready: bool, revision: &str) -> Member {
        let conditions = if ready {
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}])
        } else {
            json!([])
        };
        Member::view(&json!({
            "metadata": {"name": format!("web-{ord}"), "uid": "u",
                         "labels": {"controller-revision-hash": revision}},
            "status": {"phase": "Running", "conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn counts_and_completes_a_rolling_update() {
        let set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "web", "generation": 4},
            "spec": {"selector": {}, "template": {}, "minReadySeconds": 60},
        }))
        .unwrap();
        let now = "2026-01-01T00:00:30Z".parse().unwrap();
        let pods = [pod(0, true, "old"), pod(1, false, "new")];
        let s = status(&set, &pods, "old", "new", 0, now);
        assert_eq!(s.replicas, 2);
        assert_eq!(s.ready_replicas, Some(1));
        assert_eq!(s.available_replicas, Some(0), "ready for 30 s of 60");
        assert_eq!((s.current_replicas, s.updated_replicas), (Some(1), Some(1)));
        assert_eq!(s.observed_generation, Some(4));
        assert_eq!(s.current_revision.as_deref(), Some("old"));

        let done = [pod(0, true, "new"), pod(1, true, "new")];
        let s = status(&set, &done, "old", "new", 0, now);
        assert_eq!(s.current_revision.as_deref(), Some("new"));
        assert_eq!(s.current_replicas, Some(2));
    }
}
