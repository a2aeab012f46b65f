//! Built-in plugins configured by hand in `generators:` and `transformers:` (kustomize's
//! `api/internal/plugins/loader` with `api/internal/builtins`): a config with
//! `apiVersion: builtin` and a plugin's kind (kustomize's `TransformerFactories`) runs the same code as the kustomization fields,
//! with the config's own field specs. Every other config names an external plugin, which
//! kustomize (and kubectl) refuse by default: so does this crate.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;
use crate::fieldspec::FieldSpec;
use crate::fs::Loader;
use crate::generator::{self, GeneratorArgs};
use crate::kustomization::{Image, Replica};
use crate::nameprefix::{self, Affix};
use crate::namespace::{self, Subjects};
use crate::openapi::Schemas;
use crate::patch::{self, Patch, PatchOptions};
use crate::replacement;
use crate::resource::Resource;
use crate::selector::Selector;
use crate::{imagetag, labels, replicacount};

/// A section of a config; a missing one reads as an empty map.
fn section(config: &Value, key: &str) -> Value {
    config
        .get(key)
        .cloned()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
}

/// Where a config came from, for messages: the kustomization and its field.
pub struct Origin<'a> {
    pub file: &'a Path,
    pub field: &'a str,
}

impl Origin<'_> {
    fn error(&self, message: String) -> Error {
        Error::Invalid {
            file: self.file.to_owned(),
            field: self.field.to_owned(),
            message,
        }
    }

    fn decode<T: DeserializeOwned>(&self, config: &Value) -> Result<T, Error> {
        serde_json::from_value(config.clone()).map_err(|e| self.error(e.to_string()))
    }
}

/// The plugin kind of a built-in config; anything else is kustomize's refusal.
fn builtin_kind<'v>(config: &'v Value, origin: &Origin) -> Result<&'v str, Error> {
    let kind = config
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if config.get("apiVersion").and_then(Value::as_str) != Some("builtin") {
        return Err(origin.error(format!(
            "external plugins disabled; unable to load external plugin '{kind}'"
        )));
    }
    Ok(kind)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Fields {
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pairs {
    #[serde(default)]
    labels: BTreeMap<String, Value>,
    #[serde(default)]
    annotations: BTreeMap<String, Value>,
}

/// Plugin configs are read with `sigs.k8s.io/yaml`'s `Unmarshal`, which gives a string field
/// a number's or boolean's text (`area: 51`), unlike the kustomization file.
fn texts(pairs: BTreeMap<String, Value>) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (k, text)
        })
        .collect()
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NamespaceConfig {
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    unset_only: bool,
    #[serde(default)]
    set_role_binding_subjects: String,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Affixes {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    suffix: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PatchConfig {
    #[serde(default)]
    path: String,
    #[serde(default)]
    patch: String,
    #[serde(default)]
    target: Option<Selector>,
    #[serde(default)]
    options: PatchOptions,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StrategicConfig {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    patches: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Json6902Config {
    #[serde(default)]
    target: Option<Selector>,
    #[serde(default)]
    path: String,
    #[serde(default)]
    json_op: String,
}

/// Runs one transformer config over `resources`.
pub fn transform(
    resources: &mut Vec<Resource>,
    config: &Value,
    loader: &Loader,
    schemas: &Schemas,
    origin: &Origin,
) -> Result<(), Error> {
    let kind = builtin_kind(config, origin)?;
    let fields = |c: &Value| -> Result<Vec<FieldSpec>, Error> {
        Ok(origin.decode::<Fields>(c)?.field_specs)
    };
    let failed = |m: String| origin.error(m);
    match kind {
        "LabelTransformer" | "AnnotationsTransformer" => {
            let pairs: Pairs = origin.decode(config)?;
            let pairs = texts(if kind == "LabelTransformer" {
                pairs.labels
            } else {
                pairs.annotations
            });
            labels::apply(resources, &pairs, &fields(config)?).map_err(failed)
        }
        "NamespaceTransformer" => {
            let c: NamespaceConfig = origin.decode(config)?;
            let options = namespace::Options {
                unset_only: c.unset_only,
                subjects: Subjects::parse(&c.set_role_binding_subjects).map_err(failed)?,
            };
            namespace::apply(resources, &c.metadata.namespace, &fields(config)?, options)
                .map_err(failed)
        }
        // kustomize's legacy `PrefixSuffixTransformer` is the two, prefix first.
        "PrefixTransformer" | "SuffixTransformer" | "PrefixSuffixTransformer" => {
            let a: Affixes = origin.decode(config)?;
            if config.get("fieldSpecs").is_none_or(Value::is_null) {
                return Err(origin.error("fieldSpecs is not expected to be nil".into()));
            }
            let specs = fields(config)?;
            if kind != "SuffixTransformer" {
                nameprefix::apply(resources, Affix::Prefix, &a.prefix, &specs).map_err(failed)?;
            }
            if kind != "PrefixTransformer" {
                nameprefix::apply(resources, Affix::Suffix, &a.suffix, &specs).map_err(failed)?;
            }
            Ok(())
        }
        "ImageTagTransformer" => {
            let image: Image = origin.decode(&section(config, "imageTag"))?;
            imagetag::apply(resources, &image, &fields(config)?).map_err(failed)
        }
        "ReplicaCountTransformer" => {
            let replica: Replica = origin.decode(&section(config, "replica"))?;
            replicacount::apply(resources, &replica, &fields(config)?).map_err(failed)
        }
        "PatchTransformer" => {
            let c: PatchConfig = origin.decode(config)?;
            let p = Patch {
                path: c.path,
                patch: c.patch,
                target: c.target,
                options: c.options,
            };
            patch::apply_patches(resources, &[p], loader, schemas)
        }
        "PatchStrategicMergeTransformer" => {
            let c: StrategicConfig = origin.decode(config)?;
            let mut entries = c.paths;
            if !c.patches.trim().is_empty() {
                entries.push(c.patches);
            }
            patch::apply_patches_strategic_merge(resources, &entries, loader, schemas)
        }
        "PatchJson6902Transformer" => {
            let c: Json6902Config = origin.decode(config)?;
            let p = Patch {
                path: c.path,
                patch: c.json_op,
                target: c.target,
                options: PatchOptions::default(),
            };
            patch::apply_patches_json6902(resources, &[p], loader)
        }
        "ReplacementTransformer" => {
            let list = config
                .get("replacements")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            let list: Vec<Value> = origin.decode(&list)?;
            let replacements = replacement::load(loader, origin.file, &list)?;
            replacement::apply(resources, &replacements)
        }
        "HashTransformer" => generator::add_hash_suffixes(resources),
        other => Err(origin.error(format!(
            "the built-in plugin '{other}' is not supported as a transformer"
        ))),
    }
}

/// Runs one generator config, its objects absorbed into `resources`.
pub fn generate(
    resources: &mut Vec<Resource>,
    config: &Value,
    loader: &Loader,
    origin: &Origin,
    index: usize,
) -> Result<(), Error> {
    let kind = match builtin_kind(config, origin)? {
        "ConfigMapGenerator" => generator::Kind::ConfigMap,
        "SecretGenerator" => generator::Kind::Secret,
        other => {
            return Err(origin.error(format!(
                "the built-in plugin '{other}' is not supported as a generator"
            )));
        }
    };
    let mut args: GeneratorArgs = origin.decode(config)?;
    // kustomize's generator plugins take the name and namespace from the config's metadata
    // when their arguments give none.
    let meta: Meta = origin.decode(&section(config, "metadata"))?;
    if args.name.is_empty() {
        args.name = meta.name;
    }
    if args.namespace.is_empty() {
        args.namespace = meta.namespace;
    }
    let generated = generator::generate(loader, origin.file, kind, index, &args, None)?;
    generator::absorb(resources, generated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::Disk;
    use serde_json::json;

    fn origin() -> Origin<'static> {
        Origin {
            file: Path::new("k/kustomization.yaml"),
            field: "transformers[0]",
        }
    }

    #[test]
    fn external_plugins_are_refused_as_kubectl_does() {
        let mut rs = Vec::new();
        let config = json!({"apiVersion": "someteam.example.com/v1", "kind": "ChartInflator"});
        let loader = Loader::new(&Disk, Path::new("k"));
        let err = transform(&mut rs, &config, &loader, &Schemas::Builtin, &origin()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "k/kustomization.yaml: transformers[0]: external plugins disabled; unable to load external plugin 'ChartInflator'"
        );
    }

    #[test]
    fn label_plugin_uses_its_own_field_specs_and_stringifies_values() {
        let mut rs = vec![Resource::new(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s"}, "spec": {}}))];
        let config = json!({"apiVersion": "builtin", "kind": "LabelTransformer",
            "labels": {"area": 51},
            "fieldSpecs": [{"path": "spec/selector", "create": true}]});
        let loader = Loader::new(&Disk, Path::new("k"));
        transform(&mut rs, &config, &loader, &Schemas::Builtin, &origin()).unwrap();
        assert_eq!(rs[0].object["spec"]["selector"]["area"], "51");
        assert!(rs[0].object["metadata"].get("labels").is_none());
    }
}
