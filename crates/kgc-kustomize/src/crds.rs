//! `crds:` (kustomize's `api/internal/accumulator/loadconfigfromcrds.go`): OpenAPI
//! definition files (a map from Go type name to `{Schema, Dependencies}`, as
//! `openapi-gen` writes them) whose properties carry kustomize's extensions add to the
//! transformers' tables: `x-kubernetes-object-ref-kind` (with `-api-version` and an
//! optional `-name-key`) a name reference, `x-kubernetes-annotation` an annotations field,
//! `x-kubernetes-label-selector` a labels field, `x-kubernetes-identity` a prefix field.

use serde_json::{Map, Value};

use crate::builtinconfig::{NameBackReference, TransformerConfig};
use crate::fieldspec::FieldSpec;

/// The table entries the definitions in `text` declare.
pub fn config(text: &str) -> Result<TransformerConfig, String> {
    let defs: Value = serde_saphyr::from_str(text)
        .map_err(|e| format!("unable to parse open API definition: {e}"))?;
    let Value::Object(defs) = defs else {
        return Err("unable to parse open API definition: not a map of type names".to_owned());
    };
    let mut config = TransformerConfig::default();
    for (name, def) in &defs {
        let looks_like_k8s_type = properties(def).is_some_and(|p| {
            ["kind", "apiVersion", "metadata"]
                .iter()
                .all(|k| p.contains_key(*k))
        });
        if !looks_like_k8s_type {
            continue;
        }
        // kustomize's `makeGvkFromTypeName`: the kind is the type name after its last dot.
        let kind = name.rsplit('.').next().unwrap_or(name);
        let mut visited = Vec::new();
        let mut one = TransformerConfig::default();
        load(&mut one, kind, &defs, name, &[], &mut visited)?;
        config.merge(&one)?;
    }
    Ok(config)
}

/// A definition's `Schema.properties` (Go's decoder matches `schema` too).
fn properties(def: &Value) -> Option<&Map<String, Value>> {
    def.get("Schema")
        .or_else(|| def.get("schema"))?
        .get("properties")?
        .as_object()
}

/// kustomize's `loadCrdIntoConfig`: walks the properties of `type_name`, following `$ref`s
/// (once each on a path, so a recursive type ends).
fn load(
    config: &mut TransformerConfig,
    kind: &str,
    defs: &Map<String, Value>,
    type_name: &str,
    path: &[&str],
    visited: &mut Vec<String>,
) -> Result<(), String> {
    let Some(props) = defs.get(type_name).and_then(properties) else {
        return Ok(());
    };
    if visited.iter().any(|v| v == type_name) {
        return Ok(());
    }
    visited.push(type_name.to_owned());
    for (prop, schema) in props {
        let ext = |key: &str| schema.get(key).and_then(Value::as_str);
        let mut here = path.to_vec();
        here.push(prop);
        let spec = |steps: &[&str]| FieldSpec {
            kind: kind.to_owned(),
            path: steps.join("/"),
            ..FieldSpec::default()
        };
        let one = |specs: &mut Vec<FieldSpec>| crate::fieldspec::merge(specs, &[spec(&here)]);
        if ext("x-kubernetes-annotation").is_some() {
            one(&mut config.common_annotations)?;
        }
        if ext("x-kubernetes-label-selector").is_some() {
            one(&mut config.common_labels)?;
        }
        if ext("x-kubernetes-identity").is_some() {
            one(&mut config.name_prefix)?;
        }
        if let (Some(version), Some(target)) = (
            ext("x-kubernetes-object-ref-api-version"),
            ext("x-kubernetes-object-ref-kind"),
        ) {
            let key = ext("x-kubernetes-object-ref-name-key").unwrap_or("name");
            let mut steps = here.clone();
            steps.push(key);
            config.merge(&TransformerConfig {
                name_reference: vec![NameBackReference {
                    version: version.to_owned(),
                    kind: target.to_owned(),
                    field_specs: vec![spec(&steps)],
                    ..NameBackReference::default()
                }],
                ..TransformerConfig::default()
            })?;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            load(config, kind, defs, reference, &here, visited)?;
        }
    }
    visited.pop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_ref_extensions_become_name_references() {
        let text = r##"{
          "example.com/v1.Bee": {"Schema": {"properties": {
            "apiVersion": {}, "kind": {}, "metadata": {},
            "spec": {"$ref": "example.com/v1.BeeSpec"}}}},
          "example.com/v1.BeeSpec": {"Schema": {"properties": {
            "secretRef": {"x-kubernetes-object-ref-api-version": "v1",
                          "x-kubernetes-object-ref-kind": "Secret"},
            "selector": {"x-kubernetes-label-selector": ""}}}}
        }"##;
        let c = config(text).unwrap();
        assert_eq!(c.name_reference.len(), 1);
        assert_eq!(c.name_reference[0].kind, "Secret");
        assert_eq!(
            c.name_reference[0].field_specs[0].path,
            "spec/secretRef/name"
        );
        assert_eq!(c.name_reference[0].field_specs[0].kind, "Bee");
        assert_eq!(c.common_labels[0].path, "spec/selector");
    }
}
