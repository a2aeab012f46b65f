//! Which evaluator measures a resource, and what all of them share (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/quota/v1/interfaces.go` `Evaluator`, `generic/
//! evaluator.go` `Matches`, `CalculateUsageStats`).

use jiff::Timestamp;
use serde_json::Value;

use crate::admission::Quota;
use crate::resources::{self, ResourceList};
use crate::scope::{self, Selector};
use crate::{object_count, persistent_volume_claims, pods, services};

/// An admission operation, as evaluators tell which they handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
}

/// The usage evaluator of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    Pods,
    Services,
    PersistentVolumeClaims,
    /// Any other resource: one per object.
    ObjectCount {
        name: String,
        alias: Option<&'static str>,
    },
}

/// Resources quota never charges (`pkg/quota/v1/install/registry.go` `ignoredResources`):
/// virtual ones that are not stored, and Events.
const IGNORED: [(&str, &str); 10] = [
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

impl Evaluator {
    /// The evaluator of `group`/`resource`; `None` for the ignored resources.
    pub fn for_resource(group: &str, resource: &str) -> Option<Evaluator> {
        if IGNORED.contains(&(group, resource)) {
            return None;
        }
        Some(match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => Evaluator::ObjectCount {
                name: object_count::resource_name(group, resource),
                alias: object_count::legacy_alias(group, resource),
            },
        })
    }

    /// `Handles`: creates always; updates for claims (a resize) and Services (a type change).
    /// Pods are charged on create only: in-place resize is off by default in 1.32.
    pub fn handles(&self, op: Operation) -> bool {
        match self {
            Evaluator::Services | Evaluator::PersistentVolumeClaims => true,
            Evaluator::Pods | Evaluator::ObjectCount { .. } => op == Operation::Create,
        }
    }

    /// Whether the evaluator charges the quota name `name`.
    pub fn matches_resource(&self, name: &str) -> bool {
        match self {
            Evaluator::Pods => pods::matches_resource(name),
            Evaluator::Services => services::matches_resource(name),
            Evaluator::PersistentVolumeClaims => persistent_volume_claims::matches_resource(name),
            Evaluator::ObjectCount { name: count, alias } => name == count || Some(name) == *alias,
        }
    }

    /// `MatchingResources`: the names of `names` the evaluator charges.
    pub fn matching_resources<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Vec<String> {
        names
            .into_iter()
            .filter(|n| self.matches_resource(n))
            .cloned()
            .collect()
    }

    /// Whether an object is in a scope; only pods have scopes (`MatchesNoScopeFunc` for the
    /// others).
    pub fn matches_scope(&self, sel: &Selector, obj: &Value) -> bool {
        match self {
            Evaluator::Pods => pods::matches_scope(sel, obj),
            _ => false,
        }
    }

    /// Whether an object is in every scope of `selectors` (a quota's).
    pub fn in_scopes(&self, selectors: &[Selector], obj: &Value) -> bool {
        selectors.iter().all(|s| self.matches_scope(s, obj))
    }

    /// `Matches`: the quota limits something the evaluator charges (by its `status.hard`) and
    /// the object is in its scopes.
    pub fn matches(&self, quota: &Quota, obj: &Value) -> bool {
        quota.hard.keys().any(|n| self.matches_resource(n)) && self.in_scopes(&quota.selectors, obj)
    }

    /// `Usage`: what the object charges.
    pub fn usage(&self, obj: &Value, now: Timestamp) -> ResourceList {
        match self {
            Evaluator::Pods => pods::usage(obj, now),
            Evaluator::Services => services::usage(obj),
            Evaluator::PersistentVolumeClaims => persistent_volume_claims::usage(obj),
            Evaluator::ObjectCount { name, alias } => {
                let one = kgc_meta::quantity::Quantity::from_i64(1);
                let mut out = ResourceList::from([(name.clone(), one.clone())]);
                if let Some(a) = alias {
                    out.insert((*a).to_owned(), one);
                }
                out
            }
        }
    }

    /// `Constraints`: what an object must declare to be admitted under `required`.
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        match self {
            Evaluator::Pods => pods::constraints(required, obj),
            _ => Ok(()),
        }
    }

    /// `UsageStats`: the summed usage of `objects` in the quota's scopes, over the names
    /// `names`, each starting at zero.
    pub fn usage_stats<'a>(
        &self,
        quota: &Value,
        names: &[String],
        objects: impl IntoIterator<Item = &'a Value>,
        now: Timestamp,
    ) -> ResourceList {
        let mut used: ResourceList = names
            .iter()
            .map(|n| (n.clone(), kgc_meta::quantity::Quantity::default()))
            .collect();
        let selectors = scope::selectors(quota);
        for obj in objects {
            if self.in_scopes(&selectors, obj) {
                used = resources::add(&used, &self.usage(obj, now));
            }
        }
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluators_by_resource() {
        assert_eq!(Evaluator::for_resource("", "events"), None);
        assert_eq!(Evaluator::for_resource("", "pods"), Some(Evaluator::Pods));
        let cm = Evaluator::for_resource("", "configmaps").unwrap();
        assert!(cm.matches_resource("configmaps"));
        assert!(cm.matches_resource("count/configmaps"));
        assert!(!cm.handles(Operation::Update));
        let deploy = Evaluator::for_resource("apps", "deployments").unwrap();
        assert!(deploy.matches_resource("count/deployments.apps"));
        assert!(!deploy.matches_resource("deployments"));
    }

    #[test]
    fn a_quota_matches_by_its_status_and_scopes() {
        let quota = json!({"spec": {"scopes": ["BestEffort"]}, "status": {"hard": {"pods": "2"}}});
        let best = json!({"spec": {"containers": [{"name": "a"}]}});
        let quota = Quota::parse(&quota);
        assert!(Evaluator::Pods.matches(&quota, &best));
        let cm = Evaluator::for_resource("", "configmaps").unwrap();
        assert!(!cm.matches(&quota, &json!({})));
        let uncomputed = Quota::parse(&json!({"spec": {"hard": {"pods": "2"}}}));
        assert!(!Evaluator::Pods.matches(&uncomputed, &best));
    }
}
