//! Apply order by kind rank; deletion runs in exact reverse.
//!
//! The ranks merge qbec's (splunk/qbec internal/objsort/sort.go) and Flux's
//! (fluxcd/pkg ssa/sort.go): definitions and namespaces first, then cluster-wide policy, then
//! what pods consume (service accounts, config), then workloads, then what routes to them,
//! webhooks late (they must not intercept the objects they depend on), custom resources last
//! (after their CRDs and any webhook that serves them).

use crate::gvk::GroupKind;

/// The rank CRDs get: applied first and waited on until Established.
pub const RANK_CRD: u8 = 0;
/// The rank Namespaces get: applied second and waited on until Active.
pub const RANK_NAMESPACE: u8 = 1;

/// The apply rank of a kind (lower first). `namespaced` comes from discovery.
pub fn rank(gk: &GroupKind, namespaced: bool) -> u8 {
    match (gk.group.as_str(), gk.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => RANK_CRD,
        ("", "Namespace") => RANK_NAMESPACE,
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding",
        )
        | ("apiregistration.k8s.io", "APIService") => 8,
        (g, _) if !builtin_group(g) => 9,
        _ if !namespaced => 2,
        ("", "ServiceAccount" | "LimitRange" | "ResourceQuota") => 3,
        ("", "ConfigMap" | "Secret") => 4,
        (
            "apps" | "batch" | "",
            "Deployment"
            | "DaemonSet"
            | "StatefulSet"
            | "ReplicaSet"
            | "Job"
            | "CronJob"
            | "Pod"
            | "ReplicationController",
        )
        | ("autoscaling", "HorizontalPodAutoscaler") => 6,
        ("", "Service") | ("networking.k8s.io", "Ingress") | ("policy", "PodDisruptionBudget") => 7,
        _ => 5,
    }
}

/// Whether a group is one of Kubernetes' own (everything else is a custom resource).
fn builtin_group(group: &str) -> bool {
    group.is_empty()
        || group.ends_with(".k8s.io")
        || matches!(group, "apps" | "batch" | "autoscaling" | "policy")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_dependencies() {
        let r = |g: &str, k: &str, ns: bool| rank(&GroupKind::new(g, k), ns);
        let order = [
            r("apiextensions.k8s.io", "CustomResourceDefinition", false),
            r("", "Namespace", false),
            r("rbac.authorization.k8s.io", "ClusterRole", false),
            r("", "ServiceAccount", true),
            r("", "ConfigMap", true),
            r("rbac.authorization.k8s.io", "RoleBinding", true),
            r("apps", "Deployment", true),
            r("", "Service", true),
            r(
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                false,
            ),
            r("example.com", "Widget", true),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }
}
