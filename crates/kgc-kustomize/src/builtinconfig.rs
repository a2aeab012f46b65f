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
    /// kustomize's built-in tables (`MakeDefaultConfig`: read as one document, then sorted),
    /// parsed once.
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
                config.extend(part);
            }
            config.sort();
            config
        })
    }

    /// A `configurations:` file's table (kustomize's `makeTransformerConfigFromBytes`).
    pub fn parse(text: &str) -> Result<TransformerConfig, String> {
        let mut config: TransformerConfig =
            serde_saphyr::from_str(text).map_err(|e| crate::error::first_line(&e.to_string()))?;
        config.sort();
        Ok(config)
    }

    fn extend(&mut self, other: TransformerConfig) {
        self.name_prefix.extend(other.name_prefix);
        self.name_suffix.extend(other.name_suffix);
        self.namespace.extend(other.namespace);
        self.common_labels.extend(other.common_labels);
        self.labels.extend(other.labels);
        self.template_labels.extend(other.template_labels);
        self.common_annotations.extend(other.common_annotations);
        self.name_reference.extend(other.name_reference);
        self.var_reference.extend(other.var_reference);
        self.images.extend(other.images);
        self.replicas.extend(other.replicas);
    }

    /// `other` merged in (kustomize's `TransformerConfig.Merge`): field specs as
    /// [`fieldspec::merge`], name references of one kind pooled, then every table sorted as
    /// kustomize sorts it (the order decides which of two overlapping specs a later merge
    /// keeps, so it is kustomize's, not ours).
    pub fn merge(&mut self, other: &TransformerConfig) -> Result<(), String> {
        fieldspec::merge(&mut self.name_prefix, &other.name_prefix)?;
        fieldspec::merge(&mut self.name_suffix, &other.name_suffix)?;
        fieldspec::merge(&mut self.namespace, &other.namespace)?;
        fieldspec::merge(&mut self.common_labels, &other.common_labels)?;
        fieldspec::merge(&mut self.labels, &other.labels)?;
        fieldspec::merge(&mut self.template_labels, &other.template_labels)?;
        fieldspec::merge(&mut self.common_annotations, &other.common_annotations)?;
        fieldspec::merge(&mut self.var_reference, &other.var_reference)?;
        fieldspec::merge(&mut self.images, &other.images)?;
        fieldspec::merge(&mut self.replicas, &other.replicas)?;
        for backref in &other.name_reference {
            let same = |b: &&mut NameBackReference| {
                b.group == backref.group && b.version == backref.version && b.kind == backref.kind
            };
            match self.name_reference.iter_mut().find(same) {
                Some(mine) => fieldspec::merge(&mut mine.field_specs, &backref.field_specs)?,
                None => self.name_reference.push(backref.clone()),
            }
        }
        self.sort();
        Ok(())
    }

    /// kustomize's `sortFields`.
    fn sort(&mut self) {
        for specs in [
            &mut self.name_prefix,
            &mut self.name_suffix,
            &mut self.namespace,
            &mut self.common_labels,
            &mut self.labels,
            &mut self.template_labels,
            &mut self.common_annotations,
            &mut self.var_reference,
            &mut self.images,
            &mut self.replicas,
        ] {
            fieldspec::sort(specs);
        }
        self.name_reference.sort_by(|a, b| {
            fieldspec::gvk_order(
                (&a.group, &a.version, &a.kind),
                (&b.group, &b.version, &b.kind),
            )
        });
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
