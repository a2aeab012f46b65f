//! What the resource-quota controller recalculates, kubernetes/kubernetes `pkg/controller/
//! resourcequota/resource_quota_controller.go` `syncResourceQuota` and `staging/src/k8s.io/
//! apiserver/pkg/quota/v1/resources.go` `CalculateUsage`: which resources a quota needs
//! listed, and its new `status`.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::evaluator::Evaluator;
use crate::resources::{self, ResourceList};

/// The `(group, resource)` pairs whose objects the quota's `spec.hard` needs counted: pods,
/// Services and claims for their evaluators' names, and any `count/<resource>.<group>`.
pub fn resources_to_list(quota: &Value) -> BTreeSet<(String, String)> {
    let hard = resources::from_json(&quota["spec"]["hard"]);
    let mut out = BTreeSet::new();
    for name in hard.keys() {
        for (group, resource) in [
            ("", "pods"),
            ("", "services"),
            ("", "persistentvolumeclaims"),
        ] {
            if Evaluator::for_resource(group, resource).is_some_and(|e| e.matches_resource(name)) {
                out.insert((group.to_owned(), resource.to_owned()));
            }
        }
        if let Some(counted) = name.strip_prefix("count/") {
            let (resource, group) = counted.split_once('.').unwrap_or((counted, ""));
            out.insert((group.to_owned(), resource.to_owned()));
        } else if let Some(alias) = [
            "configmaps",
            "secrets",
            "replicationcontrollers",
            "resourcequotas",
        ]
        .into_iter()
        .find(|a| a == name)
        {
            out.insert((String::new(), alias.to_owned()));
        }
    }
    out
}

/// The quota's recalculated `status` (`hard` from `spec.hard`, `used` over the same names)
/// from the namespace's objects: `objects(group, resource)` lists those of one resource.
pub fn status<'a, F, I>(quota: &Value, objects: F, now: Timestamp) -> Value
where
    F: Fn(&str, &str) -> I,
    I: IntoIterator<Item = &'a Value>,
{
    let hard = resources::from_json(&quota["spec"]["hard"]);
    let mut used = ResourceList::new();
    for (group, resource) in resources_to_list(quota) {
        let Some(e) = Evaluator::for_resource(&group, &resource) else {
            continue;
        };
        let names = e.matching_resources(hard.keys());
        if names.is_empty() {
            continue;
        }
        let stats = e.usage_stats(quota, &names, objects(&group, &resource), now);
        used = resources::add(&used, &stats);
    }
    let used = resources::mask(&used, hard.keys().map(String::as_str));
    json!({
        "hard": quota["spec"]["hard"].clone(),
        "used": resources::to_json(&used),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_counts_the_namespaces_objects_in_scope() {
        let quota = json!({"spec": {"hard": {"pods": "20", "count/pods": "30",
            "requests.cpu": "2", "configmaps": "5", "count/deployments.apps": "2"},
            "scopes": ["NotTerminating"]}});
        let pods = [
            json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m"}}}]}}),
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded"}}),
            json!({"spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "a"}]}}),
        ];
        let cms = [json!({}), json!({})];
        let none: Vec<Value> = Vec::new();
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        let got = status(
            &quota,
            |g, r| match (g, r) {
                ("", "pods") => pods.iter(),
                ("", "configmaps") => cms.iter(),
                _ => none.iter(),
            },
            now,
        );
        // The scoped quota counts no config maps or deployments (only pods have scopes).
        assert_eq!(
            got["used"],
            json!({"pods": "1", "count/pods": "2", "requests.cpu": "250m",
                "configmaps": "0", "count/deployments.apps": "0"})
        );
        assert_eq!(got["hard"], quota["spec"]["hard"]);
    }
}
