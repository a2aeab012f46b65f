//! The default RBAC policy kube-apiserver creates on start.

use serde_json::Value;

/// The bootstrap ClusterRoles and ClusterRoleBindings, as JSON objects ready to create.
pub fn bootstrap_policy() -> Vec<Value> {
    Vec::new()
}
