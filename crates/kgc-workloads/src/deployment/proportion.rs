//! Proportional scaling (`kubernetes/kubernetes pkg/controller/deployment/sync.go` `scale`,
//! `util/deployment_util.go` `GetProportion`): a Deployment resized in the middle of a rollout
//! (or while paused) resizes each of its active ReplicaSets in proportion to its share, rather
//! than only the new or only the old ones, which would hasten a rollout whose template may be
//! bad. Each ReplicaSet's `max-replicas` annotation says what size the Deployment was when the
//! ReplicaSet was last scaled, so its share is `replicas * new max / old max`.

use std::cmp::Reverse;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::{DESIRED_REPLICAS, MAX_REPLICAS, available, fenceposts, replicas};

fn annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata.annotations.as_ref()?.get(key)?.parse().ok()
}

fn rolling(d: &Deployment) -> bool {
    d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) != Some("Recreate")
}

/// Upstream `isScalingEvent`: an active ReplicaSet last scaled for another Deployment size.
pub(super) fn is_scaling_event(d: &Deployment, sets: &[ReplicaSet]) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    sets.iter()
        .filter(|rs| replicas(rs) > 0)
        .filter_map(|rs| annotation(rs, DESIRED_REPLICAS))
        .any(|desired| desired != want)
}

/// Upstream `IsSaturated`: the new ReplicaSet alone is the whole Deployment, all available.
fn saturated(d: &Deployment, new: &ReplicaSet) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    replicas(new) == want
        && annotation(new, DESIRED_REPLICAS) == Some(want)
        && available(new) == want
}

/// Upstream `getReplicaSetFraction`: how many replicas a ReplicaSet gains (or loses) to keep
/// its share of the resized Deployment.
fn fraction(d: &Deployment, rs: &ReplicaSet) -> i32 {
    let want = d.spec.replicas.unwrap_or(1);
    if want == 0 {
        return -replicas(rs);
    }
    let max = want + fenceposts(d).0;
    let before = match annotation(rs, MAX_REPLICAS) {
        Some(m) if m != 0 => m,
        _ => d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
    };
    if before == 0 {
        return 0;
    }
    let size = f64::from(replicas(rs)) * f64::from(max) / f64::from(before);
    // `math.Round`: halves away from zero; sizes fit an i32.
    #[allow(clippy::cast_possible_truncation)]
    let rounded = size.round() as i32;
    rounded - replicas(rs)
}

/// Upstream `GetProportion`: the fraction, capped by what is left to add or remove.
fn proportion(d: &Deployment, rs: &ReplicaSet, to_add: i32, added: i32) -> i32 {
    if replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let f = fraction(d, rs);
    let allowed = to_add - added;
    if to_add > 0 {
        f.min(allowed)
    } else {
        f.max(allowed)
    }
}

/// Upstream `scale`: the size each ReplicaSet (by index into `sets`) should have, `new` being
/// the index of the new one if it exists. Only the sizes that change are returned.
pub(super) fn plan(d: &Deployment, sets: &[ReplicaSet], new: Option<usize>) -> Vec<(usize, i32)> {
    let want = d.spec.replicas.unwrap_or(1);
    let active: Vec<usize> = (0..sets.len())
        .filter(|&i| replicas(&sets[i]) > 0)
        .collect();
    // One active ReplicaSet (or none: then the newest) takes the whole Deployment.
    let only = match active.as_slice() {
        [i] => Some(*i),
        [] => new.or_else(|| {
            (0..sets.len())
                .max_by_key(|&i| sets[i].metadata.creation_timestamp.as_ref().map(|t| t.0))
        }),
        _ => None,
    };
    if let Some(i) = only {
        return if replicas(&sets[i]) == want {
            vec![]
        } else {
            vec![(i, want)]
        };
    }
    if let Some(n) = new
        && saturated(d, &sets[n])
    {
        return active
            .into_iter()
            .filter(|&i| i != n)
            .map(|i| (i, 0))
            .collect();
    }
    if !rolling(d) {
        return vec![];
    }
    let total: i32 = active.iter().map(|&i| replicas(&sets[i])).sum();
    let allowed = if want > 0 { want + fenceposts(d).0 } else { 0 };
    let to_add = allowed - total;
    let mut order = active;
    // Larger first; among equals, newer first when growing, older first when shrinking
    // (upstream `ReplicaSetsBySizeNewer`, `ReplicaSetsBySizeOlder`).
    let created = |i: usize| sets[i].metadata.creation_timestamp.as_ref().map(|t| t.0);
    if to_add > 0 {
        order.sort_by_key(|&i| (Reverse(replicas(&sets[i])), Reverse(created(i))));
    } else {
        order.sort_by_key(|&i| (Reverse(replicas(&sets[i])), created(i)));
    }
    let mut added = 0;
    let mut sizes: Vec<(usize, i32)> = order
        .iter()
        .map(|&i| {
            let p = proportion(d, &sets[i], to_add, added);
            added += p;
            (i, replicas(&sets[i]) + p)
        })
        .collect();
    // The leftover goes to (or comes from) the largest.
    if let Some(first) = sizes.first_mut() {
        first.1 = (first.1 + to_add - added).max(0);
    }
    sizes.retain(|&(i, size)| size != replicas(&sets[i]));
    sizes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(replicas: i32) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "d"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}},
            }
        }))
        .unwrap()
    }

    fn rs(name: &str, replicas: i32, created: &str, desired: i32, max: i32) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name, "creationTimestamp": created, "annotations": {
                DESIRED_REPLICAS: desired.to_string(), MAX_REPLICAS: max.to_string()}},
            "spec": {"replicas": replicas, "selector": {}},
        }))
        .unwrap()
    }

    /// Upstream `TestScale` "proportional scaling: 5 -> 10" and "10 -> 5" in spirit: a rollout
    /// of 10 (surge 3) with 8 old and 5 new replicas resized.
    #[test]
    fn a_resize_mid_rollout_is_shared_in_proportion() {
        let sets = [
            rs("old", 8, "2026-01-01T00:00:00Z", 10, 13),
            rs("new", 5, "2026-01-01T00:01:00Z", 10, 13),
        ];
        let d = deployment(20);
        assert!(is_scaling_event(&d, &sets));
        // 23 allowed, 13 running: +10, split 8:5 → old +6, new +4.
        assert_eq!(plan(&d, &sets, Some(1)), vec![(0, 14), (1, 9)]);
        let d = deployment(5);
        // 8 allowed: -5; old 8*8/13 = 4.9 → 5 (-3), new 5*8/13 = 3.1 → 3 (-2).
        assert_eq!(plan(&d, &sets, Some(1)), vec![(0, 5), (1, 3)]);
        assert!(!is_scaling_event(&deployment(10), &sets));
    }

    #[test]
    fn one_active_replica_set_takes_the_whole_size() {
        let sets = [
            rs("old", 0, "2026-01-01T00:00:00Z", 10, 13),
            rs("new", 10, "2026-01-01T00:01:00Z", 10, 13),
        ];
        assert_eq!(plan(&deployment(4), &sets, Some(1)), vec![(1, 4)]);
        let idle = [rs("old", 0, "2026-01-01T00:00:00Z", 10, 13)];
        assert_eq!(plan(&deployment(4), &idle, None), vec![(0, 4)]);
    }
}
