//! The kustomization file (kustomize's `api/types/kustomization.go`): every field of v5,
//! deprecated ones included, read strictly as kustomize does (an unknown field is an error).
//! The fields other modules interpret (`patches`, generators, `vars`, `replacements`, …) are
//! kept as JSON here and decoded by their owners, so each owner's errors name its field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::fieldspec::FieldSpec;
use crate::fs::FileSystem;

/// kustomize's `konfig.RecognizedKustomizationFileNames`, in its order.
pub const FILE_NAMES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The kustomization file of `dir`, if it has one; more than one is kustomize's error.
pub fn find(fs: &dyn FileSystem, dir: &Path) -> Result<Option<PathBuf>, Error> {
    let found: Vec<PathBuf> = FILE_NAMES
        .iter()
        .map(|name| dir.join(name))
        .filter(|path| fs.exists(path) && !fs.is_dir(path))
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        [first, ..] => Err(Error::Invalid {
            file: first.clone(),
            field: String::new(),
            message: format!(
                "Found multiple kustomization files under: {}",
                dir.display()
            ),
        }),
    }
}

/// `kind: Kustomization` or `kind: Component`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Kustomization,
    Component,
}

/// One `labels:` entry (kustomize's `types.Label`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Label {
    #[serde(default)]
    pub pairs: BTreeMap<String, String>,
    #[serde(default)]
    pub include_selectors: bool,
    #[serde(default)]
    pub include_templates: bool,
    #[serde(default, rename = "fields")]
    pub field_specs: Vec<FieldSpec>,
}

/// One `images:` entry (kustomize's `types.Image`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub new_name: String,
    #[serde(default)]
    pub tag_suffix: String,
    #[serde(default)]
    pub new_tag: String,
    #[serde(default)]
    pub digest: String,
}

/// One `replicas:` entry (kustomize's `types.Replica`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Replica {
    #[serde(default)]
    pub name: String,
    pub count: i64,
}

/// `sortOptions` (kustomize's `types.SortOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SortOptions {
    #[serde(default)]
    pub order: String,
    pub legacy_sort_options: Option<LegacySortOptions>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    #[serde(default)]
    pub order_first: Vec<String>,
    #[serde(default)]
    pub order_last: Vec<String>,
}

/// The file, as written (deprecated fields folded in by [`Kustomization::parse`]).
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kustomization {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub openapi: Option<Value>,
    #[serde(default)]
    pub name_prefix: String,
    #[serde(default)]
    pub name_suffix: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub common_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub common_annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub patches_strategic_merge: Vec<Value>,
    #[serde(default)]
    pub patches_json6902: Vec<Value>,
    #[serde(default)]
    pub patches: Vec<Value>,
    #[serde(default)]
    pub images: Vec<Image>,
    /// Deprecated: folded into `images`.
    #[serde(default)]
    pub image_tags: Vec<Image>,
    #[serde(default)]
    pub replacements: Vec<Value>,
    #[serde(default)]
    pub replicas: Vec<Replica>,
    #[serde(default)]
    pub vars: Vec<Value>,
    #[serde(default)]
    pub sort_options: Option<SortOptions>,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub components: Vec<String>,
    #[serde(default)]
    pub crds: Vec<String>,
    /// Deprecated: folded into `resources`.
    #[serde(default)]
    pub bases: Vec<String>,
    #[serde(default)]
    pub config_map_generator: Vec<Value>,
    #[serde(default)]
    pub secret_generator: Vec<Value>,
    #[serde(default)]
    pub helm_globals: Option<Value>,
    #[serde(default)]
    pub helm_charts: Vec<Value>,
    #[serde(default)]
    pub helm_chart_inflation_generator: Vec<Value>,
    #[serde(default)]
    pub generator_options: Option<Value>,
    #[serde(default)]
    pub configurations: Vec<String>,
    #[serde(default)]
    pub generators: Vec<String>,
    #[serde(default)]
    pub transformers: Vec<String>,
    #[serde(default)]
    pub validators: Vec<String>,
    #[serde(default)]
    pub build_metadata: Vec<String>,
}

impl Kustomization {
    /// Parses the file at `path` (its text `text`) strictly, checks `kind`/`apiVersion` as
    /// kustomize's `EnforceFields`, and folds the deprecated fields in as its
    /// `FixKustomization` (`bases` after `resources`, `imageTags` after `images`).
    pub fn parse(path: &Path, text: &str) -> Result<Kustomization, Error> {
        let invalid = |field: &str, message: String| Error::Invalid {
            file: path.to_owned(),
            field: field.to_owned(),
            message,
        };
        let value: Value = if text.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            // sigs.k8s.io/yaml (go-yaml v2) keeps the last of repeated keys.
            let options = serde_saphyr::options! {
                duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
            };
            serde_saphyr::from_str_with_options(text, options).map_err(|e| {
                let e = crate::error::first_line(&e.to_string());
                invalid("", format!("invalid Kustomization: {e}"))
            })?
        };
        let value = match value {
            Value::Null => Value::Object(Default::default()),
            v @ Value::Object(_) => v,
            _ => {
                return Err(invalid(
                    "",
                    "invalid Kustomization: not a YAML mapping".to_owned(),
                ));
            }
        };
        let value = fold_field_names(value);
        let mut k: Kustomization = serde_json::from_value(value).map_err(|e| {
            let e = e.to_string();
            match unknown_field(&e) {
                // kustomize's (Go's encoding/json) wording.
                Some(name) => invalid(
                    name,
                    format!("invalid Kustomization: json: unknown field \"{name}\""),
                ),
                None => invalid("", format!("invalid Kustomization: {e}")),
            }
        })?;
        let (kind, version) = match k.kind.as_str() {
            "" | "Kustomization" => (Kind::Kustomization, "kustomize.config.k8s.io/v1beta1"),
            "Component" => (Kind::Component, "kustomize.config.k8s.io/v1alpha1"),
            _ => {
                return Err(invalid(
                    "kind",
                    "kind should be Kustomization or Component".to_owned(),
                ));
            }
        };
        if !k.api_version.is_empty() && k.api_version != version {
            let kind = if kind == Kind::Component {
                "Component"
            } else {
                "Kustomization"
            };
            return Err(invalid(
                "apiVersion",
                format!("apiVersion for {kind} should be {version}"),
            ));
        }
        k.resources.append(&mut k.bases);
        k.images.append(&mut k.image_tags);
        // kustomize's `CheckEmpty`: nothing but apiVersion and kind is an error.
        let bare = Kustomization {
            api_version: k.api_version.clone(),
            kind: k.kind.clone(),
            ..Kustomization::default()
        };
        if k == bare {
            return Err(invalid("", "kustomization.yaml is empty".to_owned()));
        }
        Ok(k)
    }

    /// `kind: Component` or not.
    pub fn kind(&self) -> Kind {
        if self.kind == "Component" {
            Kind::Component
        } else {
            Kind::Kustomization
        }
    }
}

/// The kustomization's fields, as written in v5.
const FIELDS: [&str; 34] = [
    "apiVersion",
    "kind",
    "metadata",
    "openapi",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesStrategicMerge",
    "patchesJson6902",
    "patches",
    "images",
    "imageTags",
    "replacements",
    "replicas",
    "vars",
    "sortOptions",
    "resources",
    "components",
    "crds",
    "bases",
    "configMapGenerator",
    "secretGenerator",
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "generatorOptions",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "buildMetadata",
];

/// kustomize decodes with Go's `encoding/json`, which takes a key differing from a field's
/// name only in case (`patchesJSON6902`) as that field: such keys are renamed.
fn fold_field_names(value: Value) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let folded = map
        .into_iter()
        .map(|(key, v)| {
            let known = FIELDS.iter().find(|f| {
                **f != key && f.eq_ignore_ascii_case(&key) && !FIELDS.contains(&key.as_str())
            });
            match known {
                Some(f) => ((*f).to_owned(), v),
                None => (key, v),
            }
        })
        .collect();
    Value::Object(folded)
}

/// The field name in serde's "unknown field `x`, expected …".
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Kustomization, Error> {
        Kustomization::parse(Path::new("k/kustomization.yaml"), text)
    }

    #[test]
    fn empty_kustomization_is_kustomizes_error() {
        for text in [
            "",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(
                err.to_string(),
                "k/kustomization.yaml: kustomization.yaml is empty"
            );
        }
    }

    #[test]
    fn deprecated_fields_fold_in() {
        let k =
            parse("resources: [a.yaml]\nbases: [../base]\nimageTags: [{name: x, newTag: v2}]\n")
                .unwrap();
        assert_eq!(k.resources, ["a.yaml", "../base"]);
        assert_eq!(k.images[0].new_tag, "v2");
        assert_eq!(k.kind(), Kind::Kustomization);
    }

    #[test]
    fn field_names_match_regardless_of_case_as_in_go() {
        let k = parse("patchesJSON6902: []\nNamePrefix: p-\n").unwrap();
        assert_eq!(k.name_prefix, "p-");
    }

    #[test]
    fn repeated_keys_keep_the_last_as_go_yaml_does() {
        let k = parse("namePrefix: a-\nnamePrefix: b-\n").unwrap();
        assert_eq!(k.name_prefix, "b-");
    }

    #[test]
    fn unknown_field_is_kustomizes_error() {
        let err = parse("resources: [a.yaml]\nnamePrefx: x-\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "k/kustomization.yaml: namePrefx: invalid Kustomization: json: unknown field \"namePrefx\""
        );
    }

    #[test]
    fn component_kind_and_wrong_api_version() {
        let k = parse(
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [a.yaml]\n",
        )
        .unwrap();
        assert_eq!(k.kind(), Kind::Component);
        let err = parse("apiVersion: v1\nkind: Kustomization\nresources: [a.yaml]\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("apiVersion for Kustomization should be"),
            "{err}"
        );
    }
}
