//! The generic object-count evaluator, kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/
//! quota/v1/generic/evaluator.go` `NewObjectCountEvaluator`: any resource counts one per object
//! in `count/<resource>.<group>` (`count/<resource>` for the core group), and the core kinds
//! that had quota before object counts also in their legacy name (`configmaps`, `secrets`,
//! `replicationcontrollers`, `resourcequotas`; `pkg/quota/v1/evaluator/core/registry.go`).

/// `ObjectCountQuotaResourceNameFor`.
pub fn resource_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The legacy name of a core resource, when it has one.
pub(crate) fn legacy_alias(group: &str, resource: &str) -> Option<&'static str> {
    if !group.is_empty() {
        return None;
    }
    Some(match resource {
        "configmaps" => "configmaps",
        "resourcequotas" => "resourcequotas",
        "replicationcontrollers" => "replicationcontrollers",
        "secrets" => "secrets",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(resource_name("", "configmaps"), "count/configmaps");
        assert_eq!(
            resource_name("apps", "deployments"),
            "count/deployments.apps"
        );
        assert_eq!(legacy_alias("", "secrets"), Some("secrets"));
        assert_eq!(legacy_alias("", "endpoints"), None);
    }
}
