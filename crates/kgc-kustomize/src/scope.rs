//! Which kinds are cluster-scoped (kustomize's `openapi.IsCertainlyClusterScoped`): the
//! built-in kinds kustomize knows to be, by `apiVersion` and `kind`; every other kind (custom
//! resources included) is taken as namespaced, as kustomize does without a schema.

use std::collections::HashSet;
use std::sync::OnceLock;

pub fn is_cluster_scoped(api_version: &str, kind: &str) -> bool {
    static KINDS: OnceLock<HashSet<(&'static str, &'static str)>> = OnceLock::new();
    KINDS
        .get_or_init(|| {
            include_str!("builtin/clusterscoped.txt")
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.split_once(' '))
                .collect()
        })
        .contains(&(api_version, kind))
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_cluster_kinds() {
        assert!(super::is_cluster_scoped("v1", "Namespace"));
        assert!(super::is_cluster_scoped(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole"
        ));
        assert!(!super::is_cluster_scoped("v1", "ConfigMap"));
        assert!(!super::is_cluster_scoped("example.com/v1", "Widget"));
    }
}
