//! `namespace:` (kustomize's `api/filters/namespace` through its `NamespaceTransformer`):
//! every namespaced object's `metadata.namespace` set, the fields the namespace table names
//! (a `Namespace` object's own name, APIService and CRD webhook services), and the subjects
//! named `default` of (Cluster)RoleBindings. Cluster-scoped objects keep no namespace.

use std::collections::HashSet;

use serde_json::Value;

use crate::fieldspec::FieldSpec;
use crate::resource::Resource;

/// Sets `namespace` on `resources`; two objects ending with the same id is kustomize's error.
pub fn apply(
    resources: &mut [Resource],
    namespace: &str,
    specs: &[FieldSpec],
) -> Result<(), String> {
    if namespace.is_empty() {
        return Ok(());
    }
    let created = Value::String(String::new());
    let mut set = |v: &mut Value| {
        *v = Value::String(namespace.to_owned());
        Ok(())
    };
    for r in resources.iter_mut() {
        if !r.object.is_object() {
            continue;
        }
        r.store_previous_id();
        let id = r.id();
        let api_version = id.api_version();
        if !id.is_cluster_scoped() {
            FieldSpec {
                path: "metadata/namespace".into(),
                create: true,
                ..FieldSpec::default()
            }
            .apply(&mut r.object, Some(&created), &mut set)?;
        }
        let binding = id.kind == "RoleBinding" || id.kind == "ClusterRoleBinding";
        for spec in specs {
            // kustomize's `removeUnneededMetaFieldSpecs`/`removeRoleBindingSubjectFieldSpecs`.
            let skip = spec.path == "metadata/namespace"
                || (spec.path == "metadata/name" && api_version != "v1")
                || (binding
                    && spec.path == "subjects/namespace"
                    && (spec.kind == "RoleBinding" || spec.kind == "ClusterRoleBinding"));
            if !skip {
                spec.apply(&mut r.object, Some(&created), &mut set)
                    .map_err(|e| format!("namespace transformation failed: {e}"))?;
            }
        }
        if binding {
            set_default_subjects(&mut r.object, namespace);
        }
    }
    // kustomize checks after each resource; every namespaced resource ends in the same
    // namespace, so a conflict met on the way is still one at the end.
    let mut seen = HashSet::new();
    for r in resources.iter() {
        let id = r.id();
        if !seen.insert(id.key()) {
            return Err(format!(
                "namespace transformation produces ID conflict: {}",
                id.display()
            ));
        }
    }
    Ok(())
}

/// kustomize's default `setRoleBindingSubjects: defaultOnly`: a subject named `default` is
/// the namespace's default ServiceAccount, which moves with the namespace.
fn set_default_subjects(object: &mut Value, namespace: &str) {
    let Some(Value::Array(subjects)) = object.get_mut("subjects") else {
        return;
    };
    for subject in subjects {
        if let Some(s) = subject.as_object_mut()
            && s.get("name").and_then(Value::as_str) == Some("default")
        {
            s.insert("namespace".into(), Value::String(namespace.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use serde_json::json;

    fn run(objects: Vec<Value>) -> Vec<Value> {
        let mut rs: Vec<Resource> = objects.into_iter().map(Resource::new).collect();
        apply(&mut rs, "prod", &TransformerConfig::builtin().namespace).unwrap();
        rs.into_iter().map(|r| r.object).collect()
    }

    #[test]
    fn namespaced_set_cluster_kept_default_subjects_moved() {
        let out = run(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "dev"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "b"},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "x"},
                             {"kind": "ServiceAccount", "name": "other", "namespace": "y"}]}),
        ]);
        assert_eq!(out[0]["metadata"]["namespace"], "prod");
        assert!(out[1]["metadata"].get("namespace").is_none());
        assert_eq!(out[2]["subjects"][0]["namespace"], "prod");
        assert_eq!(out[2]["subjects"][1]["namespace"], "y");
    }

    #[test]
    fn namespace_object_is_renamed_and_conflicts_are_errors() {
        let out = run(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}}),
        ]);
        assert_eq!(out[0]["metadata"]["name"], "prod");
        let mut rs = vec![
            Resource::new(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}),
            ),
            Resource::new(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "b"}}),
            ),
        ];
        let err = apply(&mut rs, "prod", &[]).unwrap_err();
        assert!(err.contains("ID conflict"), "{err}");
    }
}
