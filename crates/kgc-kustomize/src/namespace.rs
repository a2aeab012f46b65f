//! `namespace:` (kustomize's `api/filters/namespace` through its `NamespaceTransformer`):
//! every namespaced object's `metadata.namespace` set, the fields the namespace table names
//! (a `Namespace` object's own name, APIService and CRD webhook services), and the subjects
//! named `default` of (Cluster)RoleBindings. Cluster-scoped objects keep no namespace.

use std::collections::HashSet;

use serde_json::Value;

use crate::fieldspec::FieldSpec;
use crate::resource::Resource;

/// What happens to (Cluster)RoleBinding subjects (kustomize's `RoleBindingSubjectMode`, the
/// `setRoleBindingSubjects` of a configured `NamespaceTransformer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subjects {
    /// Subjects named `default` (kustomize's default, `defaultOnly`).
    #[default]
    DefaultOnly,
    /// `none`.
    None,
    /// `allServiceAccounts`.
    AllServiceAccounts,
}

impl Subjects {
    pub fn parse(mode: &str) -> Result<Subjects, String> {
        match mode {
            "" | "defaultOnly" => Ok(Subjects::DefaultOnly),
            "none" => Ok(Subjects::None),
            "allServiceAccounts" => Ok(Subjects::AllServiceAccounts),
            other => Err(format!(
                "invalid value \"{other}\" for setRoleBindingSubjects: must be one of \"defaultOnly\", \"none\" or \"allServiceAccounts\""
            )),
        }
    }
}

/// A configured `NamespaceTransformer`'s options; a kustomization's `namespace:` uses the
/// defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Only set namespaces where none is set.
    pub unset_only: bool,
    pub subjects: Subjects,
}

/// Sets `namespace` on `resources`; two objects ending with the same id is kustomize's error.
pub fn apply(
    resources: &mut [Resource],
    namespace: &str,
    specs: &[FieldSpec],
    options: Options,
) -> Result<(), String> {
    if namespace.is_empty() {
        return Ok(());
    }
    let created = Value::String(String::new());
    let mut set = |v: &mut Value| {
        if !options.unset_only || v.as_str().is_none_or(str::is_empty) {
            *v = Value::String(namespace.to_owned());
        }
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
            set_subjects(&mut r.object, options.subjects, &mut set)?;
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

/// kustomize's `roleBindingHack`: by default a subject named `default` (the namespace's
/// default ServiceAccount, which moves with the namespace); or every ServiceAccount subject.
fn set_subjects(
    object: &mut Value,
    mode: Subjects,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    let Some(Value::Array(subjects)) = object.get_mut("subjects") else {
        return Ok(());
    };
    for subject in subjects {
        let Some(s) = subject.as_object_mut() else {
            continue;
        };
        let chosen = match mode {
            Subjects::None => false,
            Subjects::DefaultOnly => s.get("name").and_then(Value::as_str) == Some("default"),
            Subjects::AllServiceAccounts => {
                s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
            }
        };
        if chosen {
            set(s.entry("namespace").or_insert(Value::String(String::new())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use serde_json::json;

    fn run(objects: Vec<Value>) -> Vec<Value> {
        let mut rs: Vec<Resource> = objects.into_iter().map(Resource::new).collect();
        apply(
            &mut rs,
            "prod",
            &TransformerConfig::builtin().namespace,
            Options::default(),
        )
        .unwrap();
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
        let err = apply(&mut rs, "prod", &[], Options::default()).unwrap_err();
        assert!(err.contains("ID conflict"), "{err}");
    }
}
