//! The field-spec tables the built-in transformers walk (kustomize's
//! `api/internal/plugins/builtinconfig` `TransformerConfig`): kustomize's own tables for the
//! built-in kinds (`builtin/`, from `api/internal/konfig/builtinpluginconsts`), merged with a
//! kustomization's `configurations:` files and the references its `crds:` declare.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::fieldspec::{self, FieldSpec};

/// One `nameReference` entry: the kind whose name others refer to, and the fields that refer
/// to it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NameBackReference {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub field_specs: Vec<FieldSpec>,
}

/// kustomize's `TransformerConfig`: one list of field specs per transformer; also the format
/// of a `configurations:` file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransformerConfig {
    #[serde(default)]
    pub name_prefix: Vec<FieldSpec>,
    #[serde(default)]
    pub name_suffix: Vec<FieldSpec>,
    #[serde(default, rename = "namespace")]
    pub namespace: Vec<FieldSpec>,
    #[serde(default)]
    pub common_labels: Vec<FieldSpec>,
    #[serde(default)]
    pub labels: Vec<FieldSpec>,
    #[serde(default)]
    pub template_labels: Vec<FieldSpec>,
    #[serde(default)]
    pub common_annotations: Vec<FieldSpec>,
    #[serde(default)]
    pub name_reference: Vec<NameBackReference>,
    #[serde(default)]
    pub var_reference: Vec<FieldSpec>,
    #[serde(default)]
    pub images: Vec<FieldSpec>,
    #[serde(default)]
    pub replicas: Vec<FieldSpec>,
}

/// kustomize's default tables, in `builtinpluginconsts/defaultconfig.go`'s order. The label
/// tables share the metadata-labels list, as upstream concatenates it.
const BUILTIN: &[&str] = &[
    include_str!("builtin/nameprefix.yaml"),
    include_str!("builtin/namesuffix.yaml"),
    concat!(
        include_str!("builtin/commonlabels.yaml"),
        include_str!("builtin/metadatalabels.yaml")
    ),
    concat!(
        "templateLabels:\n",
        include_str!("builtin/metadatalabels.yaml")
    ),
    include_str!("builtin/commonannotations.yaml"),
    include_str!("builtin/namespace.yaml"),
    include_str!("builtin/varreference.yaml"),
    include_str!("builtin/namereference.yaml"),
    include_str!("builtin/images.yaml"),
    include_str!("builtin/replicas.yaml"),
];

impl TransformerConfig {
    /// kustomize's built-in tables, parsed once.
    pub fn builtin() -> &'static TransformerConfig {
        static CONFIG: OnceLock<TransformerConfig> = OnceLock::new();
        CONFIG.get_or_init(|| {
            let mut config = TransformerConfig::default();
            for text in BUILTIN {
                // The tables are this crate's own data: a parse failure is a build defect
                // that every test catches.
                let part: TransformerConfig = match serde_saphyr::from_str(text) {
                    Ok(part) => part,
                    Err(e) => panic!("builtin field-spec table does not parse: {e}"),
                };
                config.merge(&part);
            }
            config
        })
    }

    /// `other` merged in (kustomize's `TransformerConfig.Merge`): field specs deduplicated,
    /// name references of one kind pooled.
    pub fn merge(&mut self, other: &TransformerConfig) {
        fieldspec::merge(&mut self.name_prefix, &other.name_prefix);
        fieldspec::merge(&mut self.name_suffix, &other.name_suffix);
        fieldspec::merge(&mut self.namespace, &other.namespace);
        fieldspec::merge(&mut self.common_labels, &other.common_labels);
        fieldspec::merge(&mut self.labels, &other.labels);
        fieldspec::merge(&mut self.template_labels, &other.template_labels);
        fieldspec::merge(&mut self.common_annotations, &other.common_annotations);
        fieldspec::merge(&mut self.var_reference, &other.var_reference);
        fieldspec::merge(&mut self.images, &other.images);
        fieldspec::merge(&mut self.replicas, &other.replicas);
        for backref in &other.name_reference {
            let same = |b: &&mut NameBackReference| {
                b.group == backref.group && b.version == backref.version && b.kind == backref.kind
            };
            match self.name_reference.iter_mut().find(same) {
                Some(mine) => fieldspec::merge(&mut mine.field_specs, &backref.field_specs),
                None => self.name_reference.push(backref.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tables_parse_with_upstreams_entries() {
        let c = TransformerConfig::builtin();
        assert_eq!(c.name_prefix.len(), 1);
        assert!(
            c.common_labels
                .iter()
                .any(|f| f.path == "spec/selector/matchLabels"
                    && f.kind == "Deployment"
                    && f.create)
        );
        assert!(
            c.template_labels
                .iter()
                .all(|f| !f.path.contains("selector"))
        );
        let cm = c
            .name_reference
            .iter()
            .find(|b| b.kind == "ConfigMap")
            .expect("ConfigMap references");
        assert!(cm.field_specs.iter().any(
            |f| f.kind == "Deployment" && f.path == "spec/template/spec/volumes/configMap/name"
        ));
        assert_eq!(c.images.len(), 4);
    }
}
