//! core/v1 Namespace, following kubernetes/kubernetes `pkg/apis/core/validation/validation.go`
//! (`ValidateNamespace`, `validateFinalizerName`, `validateKubeFinalizerName`,
//! `ValidateNamespaceStatusUpdate`, `ValidateNamespaceFinalizeUpdate`).

use kgc_meta::validation::is_qualified_name;
use serde_json::Value;

use crate::Op;
use crate::field::{Errors, Path};
use crate::json::{Json, strings};

/// `validateFinalizerName`: a qualified name, and unprefixed names must be standard ones.
fn finalizer_name(name: &str, path: &Path<'_>, errs: &mut Errors) {
    errs.invalid_each(path, name, is_qualified_name(name));
    if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
        errs.invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        );
    }
}

/// A Namespace create or update, or its `status` / `finalize` subresource.
pub(crate) fn namespace(obj: &Value, op: Op<'_>, errs: &mut Errors) {
    let finalizers = strings(obj.at("spec"), "finalizers");
    match op {
        Op::Subresource("status", _) => {
            let phase = obj.at("status").str_of("phase");
            if obj.at("metadata").at("deletionTimestamp").is_null() {
                if phase != "Active" {
                    errs.invalid_typed(
                        "status.Phase",
                        phase,
                        "may only be 'Active' if `deletionTimestamp` is empty",
                    );
                }
            } else if phase != "Terminating" {
                errs.invalid_typed(
                    "status.Phase",
                    phase,
                    "may only be 'Terminating' if `deletionTimestamp` is not empty",
                );
            }
        }
        Op::Subresource("finalize", _) => {
            for (i, f) in finalizers.iter().enumerate() {
                finalizer_name(f, &Path::new("spec.finalizers").index(i), errs);
            }
        }
        // A plain update keeps the stored spec and status (the strategy copies them), so only
        // a create checks the finalizer names, reported on the list as upstream does.
        Op::Create => {
            for f in finalizers {
                finalizer_name(f, &Path::new("spec.finalizers"), errs);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(obj: &Value, old: Option<&Value>, sub: Option<&str>) -> Vec<String> {
        crate::testutil::check(namespace, obj, old, sub)
    }

    /// `TestValidateNamespace`, `TestValidateNamespaceFinalizeUpdate`,
    /// `TestValidateNamespaceStatusUpdate`.
    #[test]
    fn test_validate_namespace() {
        assert!(
            run(
                &json!({"spec": {"finalizers": ["kubernetes", "example.com/f"]}}),
                None,
                None
            )
            .is_empty()
        );
        assert_eq!(
            run(&json!({"spec": {"finalizers": ["custom"]}}), None, None),
            vec![
                "spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        let old = json!({});
        assert_eq!(
            run(
                &json!({"spec": {"finalizers": ["ok/one", "bad"]}}),
                Some(&old),
                Some("finalize")
            ),
            vec![
                "spec.finalizers[1]: Invalid value: \"bad\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
        assert_eq!(
            run(
                &json!({"status": {"phase": "Terminating"}}),
                Some(&old),
                Some("status")
            ),
            vec![
                "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
            ]
        );
        assert!(
            run(&json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Terminating"}}), Some(&old), Some("status")).is_empty()
        );
    }
}
