//! The pod evaluator, kubernetes/kubernetes `pkg/quota/v1/evaluator/core/pods.go`: a pod
//! counts in `count/pods` whatever its state, and in `pods` and the compute resources only
//! while it lives (not Succeeded or Failed, not past its deletion grace period); its requests
//! and limits are the pod's as `component-helpers/resource/helpers.go` `PodRequests` and
//! `PodLimits` compute them (init containers as a maximum, sidecars summed, overhead added).

use std::collections::BTreeSet;

use jiff::Timestamp;
use kgc_meta::quantity::Quantity;
use serde_json::Value;

use crate::resources::{self, ResourceList};
use crate::scope::{self, Operator, Selector};

pub(crate) const OBJECT_COUNT: &str = "count/pods";

/// `podResources`: the names the evaluator charges besides prefixed and extended ones.
const RESOURCES: [&str; 11] = [
    OBJECT_COUNT,
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The names whose use a quota requires every container to declare (`validationSet`).
const MUST_DECLARE: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// `MatchingResources` for one name.
pub(crate) fn matches_resource(name: &str) -> bool {
    RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
        || name
            .strip_prefix("requests.")
            .is_some_and(is_extended_resource)
}

/// `IsExtendedResourceName`, for quota names: a qualified name outside `kubernetes.io`.
fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// `QuotaV1Pod`: whether the pod still counts for compute resources.
fn counts(pod: &Value, now: Timestamp) -> bool {
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let meta = &pod["metadata"];
    if let (Some(deleted), Some(grace)) = (
        meta["deletionTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok()),
        meta["deletionGracePeriodSeconds"].as_i64(),
    ) && now > deleted + jiff::SignedDuration::from_secs(grace)
    {
        return false;
    }
    true
}

/// `PodUsageFunc`.
pub(crate) fn usage(pod: &Value, now: Timestamp) -> ResourceList {
    let mut out = ResourceList::from([(OBJECT_COUNT.to_owned(), Quantity::from_i64(1))]);
    if !counts(pod, now) {
        return out;
    }
    let spec = &pod["spec"];
    out.extend(compute_usage(
        &pod_resources(spec, "requests"),
        &pod_resources(spec, "limits"),
    ));
    out
}

/// `podComputeUsageHelper`: `pods` and the quota names of a set of requests and limits.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::from([("pods".to_owned(), Quantity::from_i64(1))]);
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.to_owned(), q.clone());
            out.insert(format!("requests.{r}"), q.clone());
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), q.clone());
        }
    }
    for (r, q) in requests {
        if r.starts_with("hugepages-") {
            out.insert(r.clone(), q.clone());
            out.insert(format!("requests.{r}"), q.clone());
        } else if is_extended_resource(r) {
            out.insert(format!("requests.{r}"), q.clone());
        }
    }
    out
}

/// A container's requests or limits; a request left out where a limit is set is the limit,
/// as the API's defaulting makes it.
fn container_resources(c: &Value, field: &str) -> ResourceList {
    let res = &c["resources"];
    let mut out = resources::from_json(&res[field]);
    if field == "requests" {
        for (k, v) in resources::from_json(&res["limits"]) {
            out.entry(k).or_insert(v);
        }
    }
    out
}

/// `maxResourceList`: `into` raised to `other` name by name.
fn raise(into: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        match into.get(k) {
            Some(cur) if cur >= v => {}
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `PodRequests` / `PodLimits` (`field` is `requests` or `limits`): the containers' sum, at
/// least what any init container needs beside the sidecars started before it, plus overhead
/// (for limits only on the names already limited).
fn pod_resources(spec: &Value, field: &str) -> ResourceList {
    let containers = |k: &str| spec[k].as_array().into_iter().flatten();
    let mut sum = containers("containers").fold(ResourceList::new(), |acc, c| {
        resources::add(&acc, &container_resources(c, field))
    });
    let (mut sidecars, mut init_max) = (ResourceList::new(), ResourceList::new());
    for c in containers("initContainers") {
        let own = container_resources(c, field);
        let needed = if c["restartPolicy"].as_str() == Some("Always") {
            sum = resources::add(&sum, &own);
            sidecars = resources::add(&sidecars, &own);
            sidecars.clone()
        } else {
            resources::add(&own, &sidecars)
        };
        raise(&mut init_max, &needed);
    }
    raise(&mut sum, &init_max);
    let overhead = resources::from_json(&spec["overhead"]);
    if field == "requests" {
        sum = resources::add(&sum, &overhead);
    } else {
        for (k, v) in overhead {
            if let Some(cur) = sum.get_mut(&k) {
                *cur = cur.add(&v);
            }
        }
    }
    sum
}

/// `isTerminating`: an active deadline of zero or more.
fn is_terminating(pod: &Value) -> bool {
    pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|d| d >= 0)
}

/// `GetPodQOS == BestEffort`: no container asks for or limits cpu or memory.
fn is_best_effort(pod: &Value) -> bool {
    let spec = &pod["spec"];
    !["containers", "initContainers"].iter().any(|k| {
        spec[*k].as_array().into_iter().flatten().any(|c| {
            ["requests", "limits"].iter().any(|f| {
                let list = resources::from_json(&c["resources"][*f]);
                ["cpu", "memory"]
                    .iter()
                    .any(|r| list.get(*r).is_some_and(|q| !q.is_zero()))
            })
        })
    })
}

/// `podMatchesScopeFunc`.
pub(crate) fn matches_scope(sel: &Selector, pod: &Value) -> bool {
    match sel.scope.as_str() {
        scope::TERMINATING => is_terminating(pod),
        scope::NOT_TERMINATING => !is_terminating(pod),
        scope::BEST_EFFORT => is_best_effort(pod),
        scope::NOT_BEST_EFFORT => !is_best_effort(pod),
        scope::PRIORITY_CLASS => {
            let class = pod["spec"]["priorityClassName"]
                .as_str()
                .unwrap_or_default();
            if sel.operator == Operator::Exists {
                !class.is_empty()
            } else {
                sel.matches_value(class)
            }
        }
        scope::CROSS_NAMESPACE_POD_AFFINITY => uses_cross_namespace_affinity(pod),
        _ => false,
    }
}

/// `usesCrossNamespacePodAffinity`: a pod (anti-)affinity term naming namespaces or a
/// namespace selector.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let affinity = &pod["spec"]["affinity"];
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let a = &affinity[*kind];
        let required = a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten();
        let preferred = a["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| &w["podAffinityTerm"]);
        required.chain(preferred).any(|t| {
            t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                || !t["namespaceSelector"].is_null()
        })
    })
}

/// `Constraints`: when a quota limits cpu or memory, every container must declare them (a
/// backward-compatible rule upstream keeps); the message lists, per missing name, the
/// containers without it.
pub(crate) fn constraints(required: &[String], pod: &Value) -> Result<(), String> {
    let required: BTreeSet<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|r| MUST_DECLARE.contains(r))
        .collect();
    if required.is_empty() {
        return Ok(());
    }
    let mut missing: std::collections::BTreeMap<&str, BTreeSet<String>> = Default::default();
    let spec = &pod["spec"];
    for c in ["containers", "initContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
    {
        let res = &c["resources"];
        let declared = compute_usage(
            &resources::from_json(&res["requests"]),
            &resources::from_json(&res["limits"]),
        );
        for r in &required {
            if !declared.contains_key(*r) {
                let name = c["name"].as_str().unwrap_or_default().to_owned();
                missing.entry(r).or_default().insert(name);
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn container(name: &str, requests: Value, limits: Value) -> Value {
        json!({"name": name, "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn requests_sum_containers_and_take_the_init_maximum_plus_overhead() {
        let pod = json!({"spec": {
            "containers": [
                container("a", json!({"cpu": "100m", "memory": "64Mi"}), json!({"memory": "128Mi"})),
                container("b", json!({"cpu": "200m"}), json!({})),
            ],
            "initContainers": [container("init", json!({"cpu": "1"}), json!({"memory": "1Gi"}))],
            "overhead": {"cpu": "10m", "memory": "1Mi"},
        }});
        let u = resources::to_json(&usage(&pod, now()));
        assert_eq!(
            u,
            json!({
                "count/pods": "1", "pods": "1",
                "cpu": "1010m", "requests.cpu": "1010m",
                "memory": "1025Mi", "requests.memory": "1025Mi",
                "limits.memory": "1025Mi",
            })
        );
    }

    #[test]
    fn sidecars_add_up_and_raise_later_init_containers() {
        let mut sidecar = container("s", json!({"cpu": "500m"}), json!({}));
        sidecar["restartPolicy"] = json!("Always");
        let pod = json!({"spec": {
            "containers": [container("a", json!({"cpu": "100m"}), json!({}))],
            "initContainers": [sidecar, container("i", json!({"cpu": "700m"}), json!({}))],
        }});
        // Sum 600m; the init container needs 700m + 500m of the sidecar.
        assert_eq!(usage(&pod, now())["requests.cpu"].to_string(), "1200m");
    }

    #[test]
    fn ended_pods_count_only_as_objects() {
        let pod = json!({"spec": {"containers": [container("a", json!({"cpu": "1"}), json!({}))]},
            "status": {"phase": "Succeeded"}});
        assert_eq!(
            resources::to_json(&usage(&pod, now())),
            json!({"count/pods": "1"})
        );
        let gone = json!({"metadata": {"deletionTimestamp": "2025-12-31T23:59:00Z",
            "deletionGracePeriodSeconds": 30}, "spec": {}});
        assert_eq!(
            resources::to_json(&usage(&gone, now())),
            json!({"count/pods": "1"})
        );
        let going = json!({"metadata": {"deletionTimestamp": "2025-12-31T23:59:50Z",
            "deletionGracePeriodSeconds": 30}, "spec": {}});
        assert!(usage(&going, now()).contains_key("pods"));
    }

    #[test]
    fn scopes() {
        let sel = |scope: &str, op, values: &[&str]| Selector {
            scope: scope.into(),
            operator: op,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        let best = json!({"spec": {"containers": [{"name": "a"}]}});
        let burst = json!({"spec": {"containers": [container("a", json!({"cpu": "1"}), json!({}))],
            "activeDeadlineSeconds": 10, "priorityClassName": "high"}});
        let e = Operator::Exists;
        assert!(matches_scope(&sel(scope::BEST_EFFORT, e, &[]), &best));
        assert!(!matches_scope(&sel(scope::BEST_EFFORT, e, &[]), &burst));
        assert!(matches_scope(&sel(scope::NOT_BEST_EFFORT, e, &[]), &burst));
        assert!(matches_scope(&sel(scope::TERMINATING, e, &[]), &burst));
        assert!(matches_scope(&sel(scope::NOT_TERMINATING, e, &[]), &best));
        assert!(matches_scope(&sel(scope::PRIORITY_CLASS, e, &[]), &burst));
        assert!(!matches_scope(&sel(scope::PRIORITY_CLASS, e, &[]), &best));
        let high = sel(scope::PRIORITY_CLASS, Operator::In, &["high"]);
        assert!(matches_scope(&high, &burst));
        assert!(!matches_scope(&high, &best));
        let not_high = sel(scope::PRIORITY_CLASS, Operator::NotIn, &["high"]);
        assert!(matches_scope(&not_high, &best));
        let none = sel(scope::PRIORITY_CLASS, Operator::DoesNotExist, &[]);
        assert!(!matches_scope(&none, &best));
    }

    #[test]
    fn quotas_on_cpu_need_every_container_to_declare_it() {
        let pod = json!({"spec": {"containers": [
            container("a", json!({"cpu": "1"}), json!({})),
            {"name": "b"},
        ], "initContainers": [{"name": "c"}]}});
        let req = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(constraints(&req(&["pods"]), &pod), Ok(()));
        assert_eq!(
            constraints(&req(&["requests.cpu", "limits.memory", "pods"]), &pod),
            Err("must specify limits.memory for: a,b,c; requests.cpu for: b,c".to_owned())
        );
    }
}
