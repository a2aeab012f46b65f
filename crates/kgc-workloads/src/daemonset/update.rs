//! RollingUpdate and status (`kubernetes/kubernetes pkg/controller/daemon/update.go`
//! `rollingUpdate`, `updatedDesiredNodeCounts`, `findUpdatedPodsOnNode`;
//! `daemon_controller.go` `updateDaemonSetStatus`), as pure functions of the nodes and the
//! pods on them.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::placement::{Verdict, is_updated};
use crate::deployment::scaled;
use crate::pods::Pod;

/// One node as the rollout and the status see it: its name, its verdict and the DaemonSet's
/// pods on it.
pub struct OnNode<'a> {
    pub name: &'a str,
    pub verdict: Verdict,
    pub pods: Vec<&'a Pod>,
}

/// Whether the DaemonSet rolls by itself (RollingUpdate, the default) or waits for its pods
/// to be deleted (OnDelete).
pub fn rolls(ds: &DaemonSet) -> bool {
    ds.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        != Some("OnDelete")
}

/// maxSurge and maxUnavailable of `desired` nodes, both rounded up, maxUnavailable 1 when both
/// are 0 (upstream `updatedDesiredNodeCounts`; the API defaults are 0 and 1).
pub fn fenceposts(ds: &DaemonSet, desired: i32) -> (i32, i32) {
    let rolling = ds
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let one = IntOrString::Int(1);
    let zero = IntOrString::Int(0);
    let surge = scaled(
        Some(rolling.and_then(|r| r.max_surge.as_ref()).unwrap_or(&zero)),
        "0%",
        desired,
        true,
    );
    let unavailable = scaled(
        Some(
            rolling
                .and_then(|r| r.max_unavailable.as_ref())
                .unwrap_or(&one),
        ),
        "0%",
        desired,
        true,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

/// The updated and the old pod on a node, not being deleted; `None` when there are two of
/// either (upstream `findUpdatedPodsOnNode`: the manage step sorts that out first).
#[allow(clippy::type_complexity)]
fn new_and_old<'a>(
    pods: &[&'a Pod],
    hash: &str,
    generation: i64,
) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for &p in pods.iter().filter(|p| !p.deleting) {
        let slot = if is_updated(p, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.replace(p).is_some() {
            return None;
        }
    }
    Some((new, old))
}

/// What one step of a rolling update does.
#[derive(Debug, Default, PartialEq)]
pub struct Step<'a> {
    pub delete: Vec<&'a Pod>,
    /// Nodes that get an updated pod beside their old one (surge).
    pub create_on: Vec<String>,
}

/// Upstream `rollingUpdate`: without surge, old pods are deleted (unavailable ones at once,
/// available ones while at most maxUnavailable nodes lack an available pod) and the manage
/// step puts updated ones in their place; with surge, updated pods are started beside old
/// ones on at most maxSurge nodes at a time, and an old pod goes once its successor is
/// available.
pub fn rolling_update<'a>(
    ds: &DaemonSet,
    nodes: &[OnNode<'a>],
    hash: &str,
    generation: i64,
    now: Timestamp,
) -> Step<'a> {
    let min_ready = ds.spec.min_ready_seconds.map_or(0, i64::from);
    let available = |p: &Pod| p.is_available(min_ready, now);
    let mut nodes: Vec<&OnNode> = nodes
        .iter()
        .filter(|n| n.verdict.should_continue_running)
        .collect();
    nodes.sort_by_key(|n| n.name);
    let desired = nodes.iter().filter(|n| n.verdict.should_run).count();
    let (max_surge, max_unavailable) = fenceposts(ds, i32::try_from(desired).unwrap_or(i32::MAX));
    let mut step = Step::default();
    let mut candidates = Vec::new();
    let mut used = 0;
    for n in nodes {
        let Some(pair) = new_and_old(&n.pods, hash, generation) else {
            used += 1;
            continue;
        };
        if max_surge == 0 {
            match pair {
                (Some(new), None) if available(new) => {}
                (None, Some(old)) if !available(old) => step.delete.push(old),
                (None, Some(old)) => candidates.push((old, n.name)),
                _ => used += 1,
            }
        } else {
            match pair {
                (_, None) => {}
                (None, Some(old)) if !available(old) => step.create_on.push(n.name.to_owned()),
                (None, Some(old)) => candidates.push((old, n.name)),
                (Some(new), Some(old)) if available(new) => step.delete.push(old),
                (Some(_), Some(_)) => used += 1,
            }
        }
    }
    let budget = if max_surge == 0 {
        max_unavailable
    } else {
        max_surge
    };
    let room = usize::try_from(budget - used).unwrap_or(0);
    for (old, node) in candidates.into_iter().take(room) {
        if max_surge == 0 {
            step.delete.push(old);
        } else {
            step.create_on.push(node.to_owned());
        }
    }
    step
}

/// Upstream `updateDaemonSetStatus`: per node that should run a pod, whether it has one, and
/// whether its oldest is ready, available and updated; pods on other nodes are misscheduled.
pub fn status(
    ds: &DaemonSet,
    nodes: &[OnNode],
    hash: &str,
    generation: i64,
    now: Timestamp,
) -> DaemonSetStatus {
    let min_ready = ds.spec.min_ready_seconds.map_or(0, i64::from);
    let mut s = DaemonSetStatus {
        observed_generation: ds.metadata.generation,
        collision_count: ds.status.as_ref().and_then(|s| s.collision_count),
        conditions: ds.status.as_ref().and_then(|s| s.conditions.clone()),
        ..DaemonSetStatus::default()
    };
    let (mut available, mut updated) = (0, 0);
    for n in nodes {
        // Deleted pods that have finished count no more (upstream `includeDeletedTerminal`).
        let oldest = n
            .pods
            .iter()
            .filter(|p| !(p.deleting && matches!(p.phase.as_str(), "Succeeded" | "Failed")))
            .min_by_key(|p| p.created);
        if !n.verdict.should_run {
            if oldest.is_some() {
                s.number_misscheduled += 1;
            }
            continue;
        }
        s.desired_number_scheduled += 1;
        let Some(p) = oldest else { continue };
        s.current_number_scheduled += 1;
        if p.is_ready() {
            s.number_ready += 1;
            if p.is_available(min_ready, now) {
                available += 1;
            }
        }
        if is_updated(p, hash, generation) {
            updated += 1;
        }
    }
    s.number_available = Some(available);
    s.number_unavailable = Some(s.desired_number_scheduled - available);
    s.updated_number_scheduled = Some(updated);
    s
}

#[cfg(test)]
mod tests {
    use kgc_runtime::informer::View;
    use serde_json::json;

    use super::*;
    use crate::daemonset::placement::REVISION_HASH;

    const RUN: Verdict = Verdict {
        should_run: true,
        should_continue_running: true,
    };

    fn ds(strategy: serde_json::Value) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "ds", "generation": 3},
            "spec": {"selector": {}, "template": {}, "updateStrategy": strategy},
        }))
        .unwrap()
    }

    fn pod(name: &str, node: &str, hash: &str, ready: bool) -> Pod {
        let mut status = json!({"phase": "Running"});
        if ready {
            status["conditions"] = json!([{"type": "Ready", "status": "True",
                                           "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        }
        Pod::view(&json!({
            "metadata": {"name": name, "uid": name, "labels": {REVISION_HASH: hash},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node},
            "status": status,
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        "2026-01-01T01:00:00Z".parse().unwrap()
    }

    #[test]
    fn fenceposts_round_up_and_never_stall() {
        assert_eq!(fenceposts(&ds(json!(null)), 3), (0, 1));
        let pct = ds(json!({"rollingUpdate": {"maxUnavailable": "50%"}}));
        assert_eq!(fenceposts(&pct, 3), (0, 2));
        let zero = ds(json!({"rollingUpdate": {"maxUnavailable": 0}}));
        assert_eq!(fenceposts(&zero, 3), (0, 1));
        let surge = ds(json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}));
        assert_eq!(fenceposts(&surge, 3), (1, 0));
        assert!(!rolls(&ds(json!({"type": "OnDelete"}))));
    }

    #[test]
    fn old_pods_go_within_max_unavailable() {
        let (a, b, c) = (
            pod("a", "n1", "old", true),
            pod("b", "n2", "old", true),
            pod("c", "n3", "old", false),
        );
        let nodes = [
            OnNode {
                name: "n1",
                verdict: RUN,
                pods: vec![&a],
            },
            OnNode {
                name: "n2",
                verdict: RUN,
                pods: vec![&b],
            },
            OnNode {
                name: "n3",
                verdict: RUN,
                pods: vec![&c],
            },
        ];
        let step = rolling_update(&ds(json!(null)), &nodes, "new", 3, now());
        let names: Vec<&str> = step.delete.iter().map(|p| p.name.as_str()).collect();
        // The unavailable one at once, and one available one.
        assert_eq!(names, ["c", "a"]);
        // A node whose updated pod is not available yet uses up the budget.
        let fresh = pod("f", "n1", "new", false);
        let nodes = [
            OnNode {
                name: "n1",
                verdict: RUN,
                pods: vec![&fresh],
            },
            OnNode {
                name: "n2",
                verdict: RUN,
                pods: vec![&b],
            },
        ];
        assert!(
            rolling_update(&ds(json!(null)), &nodes, "new", 3, now())
                .delete
                .is_empty()
        );
    }

    #[test]
    fn surge_starts_new_pods_beside_old_ones() {
        let strategy = json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}});
        let (a, b) = (pod("a", "n1", "old", true), pod("b", "n2", "old", true));
        let nodes = [
            OnNode {
                name: "n1",
                verdict: RUN,
                pods: vec![&a],
            },
            OnNode {
                name: "n2",
                verdict: RUN,
                pods: vec![&b],
            },
        ];
        let step = rolling_update(&ds(strategy.clone()), &nodes, "new", 3, now());
        assert_eq!(step.create_on, ["n1"]);
        let new = pod("new", "n1", "new", true);
        let nodes = [
            OnNode {
                name: "n1",
                verdict: RUN,
                pods: vec![&a, &new],
            },
            OnNode {
                name: "n2",
                verdict: RUN,
                pods: vec![&b],
            },
        ];
        let step = rolling_update(&ds(strategy), &nodes, "new", 3, now());
        assert_eq!(step.delete[0].name, "a");
        assert_eq!(step.create_on, ["n2"]);
    }

    #[test]
    fn status_counts_per_node() {
        let (a, b, c) = (
            pod("a", "n1", "new", true),
            pod("b", "n2", "old", false),
            pod("c", "n3", "new", true),
        );
        let off = Verdict {
            should_run: false,
            should_continue_running: false,
        };
        let nodes = [
            OnNode {
                name: "n1",
                verdict: RUN,
                pods: vec![&a],
            },
            OnNode {
                name: "n2",
                verdict: RUN,
                pods: vec![&b],
            },
            OnNode {
                name: "n3",
                verdict: off,
                pods: vec![&c],
            },
            OnNode {
                name: "n4",
                verdict: RUN,
                pods: vec![],
            },
        ];
        let s = status(&ds(json!(null)), &nodes, "new", 3, now());
        assert_eq!(s.desired_number_scheduled, 3);
        assert_eq!(s.current_number_scheduled, 2);
        assert_eq!(s.number_misscheduled, 1);
        assert_eq!(s.number_ready, 1);
        assert_eq!(s.number_available, Some(1));
        assert_eq!(s.number_unavailable, Some(2));
        assert_eq!(s.updated_number_scheduled, Some(1));
        assert_eq!(s.observed_generation, Some(3));
    }
}
