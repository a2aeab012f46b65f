//! `replicas:` (kustomize's `ReplicaCountTransformer`): the replica count of the resources
//! named (by current or any previous name) whose kind the replicas table lists.

use serde_json::Value;

use crate::fieldspec::FieldSpec;
use crate::kustomization::Replica;
use crate::resource::Resource;

pub fn apply(
    resources: &mut [Resource],
    replica: &Replica,
    specs: &[FieldSpec],
) -> Result<(), String> {
    let mut found = false;
    for spec in specs {
        for r in resources.iter_mut() {
            let ids = std::iter::once(r.id()).chain(r.previous.iter().cloned());
            let mut ids = ids;
            if !ids.any(|id| {
                id.name == replica.name && id.is_selected(&spec.group, &spec.version, &spec.kind)
            }) {
                continue;
            }
            found = true;
            let count = Value::from(replica.count);
            spec.apply(&mut r.object, Some(&count), &mut |v| {
                *v = count.clone();
                Ok(())
            })?;
        }
    }
    if !found {
        let kinds: Vec<String> = specs.iter().map(|s| s.kind.clone()).collect();
        return Err(format!(
            "resource with name {} does not match a config with the following GVK [{}]",
            replica.name,
            kinds.join(" ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtinconfig::TransformerConfig;
    use serde_json::json;

    #[test]
    fn sets_count_and_errors_on_unknown_name() {
        let mut rs = vec![Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": 1}}),
        )];
        let specs = &TransformerConfig::builtin().replicas;
        apply(
            &mut rs,
            &Replica {
                name: "web".into(),
                count: 4,
            },
            specs,
        )
        .unwrap();
        assert_eq!(rs[0].object["spec"]["replicas"], 4);
        let err = apply(
            &mut rs,
            &Replica {
                name: "nope".into(),
                count: 4,
            },
            specs,
        )
        .unwrap_err();
        assert!(
            err.starts_with("resource with name nope does not match"),
            "{err}"
        );
    }
}
