//! ClusterRole aggregation.

use serde_json::Value;

use crate::PolicyRule;

/// The new `rules` of each aggregated ClusterRole whose rules change.
pub fn aggregate(cluster_roles: &[Value]) -> Vec<(String, Vec<PolicyRule>)> {
    let _ = cluster_roles;
    Vec::new()
}
