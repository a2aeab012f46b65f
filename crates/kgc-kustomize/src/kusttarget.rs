//! A build (kustomize's `api/krusty/kustomizer.go` over `api/internal/target/kusttarget.go`):
//! a kustomization's resources are read (files, and directories built as kustomizations in
//! turn), its `configurations` and `crds` merged into the field-spec tables, its generators
//! run, its components applied, then the transformers its fields configure run in
//! kustomize's fixed order, and its vars are marked. At the top only: generator hashes
//! appended to names, name references fixed, vars resolved, resources marked local dropped,
//! the output sorted, and the build's internal annotations removed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::builtinconfig::TransformerConfig;
use crate::factory::parse_resources;
use crate::fieldspec::{self, FieldSpec};
use crate::fs::{FileSystem, Loader, normalize};
use crate::generator::{self, GeneratorArgs, GeneratorOptions};
use crate::kustomization::{self, Kind, Kustomization, Label};
use crate::nameprefix::Affix;
use crate::openapi::Schemas;
use crate::patch::{self, Patch};
use crate::resource::{IdKey, Resource};
use crate::var::{self, Var};
use crate::{Error, imagetag, labels, nameprefix, nameref, namespace, replicacount, sortorder};
use crate::{plugins, replacement};

/// Builds the kustomization in `dir` into the objects `kubectl kustomize dir` prints, in its
/// order.
pub fn build(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<Value>, Error> {
    // Absolute, so that confinement to a root compares real prefixes (a relative `.` would
    // normalize to nothing, which every path starts with), and messages name full paths as
    // kustomize's do.
    let dir = if dir.is_relative() {
        let cwd = std::env::current_dir().map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        normalize(&cwd.join(dir))
    } else {
        normalize(dir)
    };
    let mut stack = Vec::new();
    let mut acc = Accumulator::default();
    let target = Target::load(fs, &dir)?;
    if target.k.kind() == Kind::Component {
        return Err(target.invalid(
            "kind",
            "a Component can only be built as part of a Kustomization's components".into(),
        ));
    }
    target.accumulate(&mut acc, &mut stack, &Schemas::Builtin)?;
    // kustomize's `makeCustomizedResMap`: these run once, over the whole build.
    generator::add_hash_suffixes(&mut acc.resources)?;
    nameref::apply(&mut acc.resources, &acc.config.name_reference)
        .map_err(|m| target.invalid("resources", m))?;
    // kustomize's `ResolveVars`; a var nothing refers to is not an error.
    var::resolve(&mut acc.resources, &acc.vars, &acc.config.var_reference)
        .map_err(|m| target.invalid("vars", m))?;
    acc.resources
        .retain(|r| r.annotation(LOCAL_CONFIG) != Some("true"));
    sortorder::apply(&mut acc.resources, target.k.sort_options.as_ref())
        .map_err(|m| target.invalid("sortOptions", m))?;
    Ok(acc.resources.into_iter().map(|r| clean(r.object)).collect())
}

/// kustomize's `config.kubernetes.io/local-config`: a resource for the tools, not the cluster.
const LOCAL_CONFIG: &str = "config.kubernetes.io/local-config";

/// What a build has gathered so far (kustomize's `accumulator.ResAccumulator`).
#[derive(Default)]
struct Accumulator {
    resources: Vec<Resource>,
    config: TransformerConfig,
    /// The vars declared so far, resolved once at the top.
    vars: Vec<Var>,
}

impl Accumulator {
    /// Adds resources; an id already present is kustomize's error.
    fn append(&mut self, more: Vec<Resource>) -> Result<(), String> {
        let mut seen: HashSet<IdKey> = self.resources.iter().map(|r| r.id().key()).collect();
        for r in more {
            let id = r.id();
            if !seen.insert(id.key()) {
                return Err(format!(
                    "may not add resource with an already registered id: {}",
                    id.display()
                ));
            }
            self.resources.push(r);
        }
        Ok(())
    }
}

/// One kustomization being built.
struct Target<'a> {
    fs: &'a dyn FileSystem,
    dir: PathBuf,
    file: PathBuf,
    k: Kustomization,
}

impl<'a> Target<'a> {
    fn load(fs: &'a dyn FileSystem, dir: &Path) -> Result<Target<'a>, Error> {
        let file = kustomization::find(fs, dir)?.ok_or_else(|| Error::Invalid {
            file: dir.to_owned(),
            field: String::new(),
            message: missing_kustomization(dir),
        })?;
        let text = Loader::new(fs, dir).read_to_string(
            file.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
        )?;
        let k = Kustomization::parse(&file, &text)?;
        Ok(Target {
            fs,
            dir: dir.to_owned(),
            file,
            k,
        })
    }

    /// A field kept as JSON by [`Kustomization`], decoded into its owner's type.
    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        field: &str,
        value: &Value,
    ) -> Result<T, Error> {
        serde_json::from_value(value.clone())
            .map_err(|e| self.invalid(field, format!("invalid Kustomization: {e}")))
    }

    /// A file the kustomization names in `field`; failing to read it is an error naming both.
    fn read(&self, field: &str, rel: &str) -> Result<String, Error> {
        self.loader().read_to_string(rel).map_err(|e| match e {
            Error::Io { source, .. } => self.invalid(field, format!("{rel}: {source}")),
            e => e,
        })
    }

    fn invalid(&self, field: &str, message: String) -> Error {
        Error::Invalid {
            file: self.file.clone(),
            field: field.to_owned(),
            message,
        }
    }

    fn loader(&self) -> Loader<'_> {
        Loader::new(self.fs, &self.dir)
    }

    /// kustomize's `accumulateTarget`.
    /// `schemas` is the parent's (a kustomization without `openapi:` keeps it).
    fn accumulate(
        &self,
        acc: &mut Accumulator,
        stack: &mut Vec<PathBuf>,
        schemas: &Schemas,
    ) -> Result<(), Error> {
        stack.push(self.dir.clone());
        let own;
        let schemas = match &self.k.openapi {
            Some(field) => {
                own = Schemas::load(&self.loader(), Some(field))?;
                &own
            }
            None => schemas,
        };
        for (i, entry) in self.k.resources.iter().enumerate() {
            let field = format!("resources[{i}]");
            match self.entry(entry, &field, stack)? {
                Entry::Directory(sub) => {
                    if sub.k.kind() == Kind::Component {
                        return Err(self.invalid(
                            &field,
                            format!(
                                "expected kind != 'Component' for path '{}'",
                                sub.dir.display()
                            ),
                        ));
                    }
                    let mut inner = Accumulator::default();
                    sub.accumulate(&mut inner, stack, schemas)?;
                    acc.config
                        .merge(&inner.config)
                        .map_err(|m| self.invalid(&field, m))?;
                    var::declare(&mut acc.vars, &inner.vars)
                        .map_err(|m| self.invalid(&field, m))?;
                    acc.append(inner.resources)
                        .map_err(|m| self.invalid(&field, m))?;
                }
                Entry::File(path) => {
                    let rel = path.strip_prefix(&self.dir).unwrap_or(&path);
                    let text = self.read(&field, &rel.to_string_lossy())?;
                    let resources = parse_resources(&path, &text)?;
                    acc.append(resources).map_err(|m| self.invalid(&field, m))?;
                }
            }
        }
        // kustomize's `MakeTransformerConfig`: the defaults, merged with the `configurations`
        // files (merged with each other first); then the tables the `crds` declare.
        let mut tables = TransformerConfig::builtin().clone();
        if !self.k.configurations.is_empty() {
            let mut files = TransformerConfig::default();
            for (i, rel) in self.k.configurations.iter().enumerate() {
                let field = format!("configurations[{i}]");
                let text = self.read(&field, rel)?;
                let config = TransformerConfig::parse(&text)
                    .and_then(|c| files.merge(&c))
                    .map_err(|m| self.invalid(&field, format!("{rel}: {m}")));
                config?;
            }
            tables
                .merge(&files)
                .map_err(|m| self.invalid("configurations", m))?;
        }
        acc.config
            .merge(&tables)
            .map_err(|m| self.invalid("configurations", m))?;
        let mut crds = TransformerConfig::default();
        for (i, rel) in self.k.crds.iter().enumerate() {
            let field = format!("crds[{i}]");
            let text = self.read(&field, rel)?;
            crate::crds::config(&text)
                .and_then(|c| crds.merge(&c))
                .map_err(|m| self.invalid(&field, format!("{rel}: {m}")))?;
        }
        acc.config
            .merge(&crds)
            .map_err(|m| self.invalid("crds", m))?;
        self.generate(acc, stack)?;
        for (i, entry) in self.k.components.iter().enumerate() {
            let field = format!("components[{i}]");
            match self.entry(entry, &field, stack)? {
                Entry::Directory(sub) if sub.k.kind() == Kind::Component => {
                    sub.accumulate(acc, stack, schemas)?;
                }
                Entry::Directory(sub) => {
                    return Err(self.invalid(
                        &field,
                        format!(
                            "expected kind 'Component' for path '{}' but got '{}'",
                            sub.dir.display(),
                            if sub.k.kind.is_empty() {
                                "Kustomization"
                            } else {
                                &sub.k.kind
                            }
                        ),
                    ));
                }
                Entry::File(path) => {
                    return Err(self.invalid(
                        &field,
                        format!("component '{}' must be a directory", path.display()),
                    ));
                }
            }
        }
        self.transform(acc, schemas, stack)?;
        let vars: Vec<Var> = self.decode("vars", &Value::from(self.k.vars.clone()))?;
        var::mark(&mut acc.resources, &mut acc.vars, &vars).map_err(|m| self.invalid("vars", m))?;
        stack.pop();
        Ok(())
    }

    /// A `resources`/`components` entry: a directory holding a kustomization, or a file.
    fn entry(&self, entry: &str, field: &str, stack: &[PathBuf]) -> Result<Entry<'a>, Error> {
        let path = normalize(&self.dir.join(entry));
        if !self.fs.exists(&path) {
            if is_remote(entry) {
                return Err(
                    self.invalid(field, format!("remote bases are not supported: {entry:?}"))
                );
            }
            return Err(self.invalid(field, format!("{entry}: no such file or directory")));
        }
        if !self.fs.is_dir(&path) {
            // A file must lie under the kustomization's directory (kustomize's
            // `LoadRestrictionsRootOnly`); a directory may be anywhere.
            return match self.loader().resolve(entry) {
                Ok(path) => Ok(Entry::File(path)),
                Err(Error::Io { source, .. }) => Err(self.invalid(field, source.to_string())),
                Err(e) => Err(e),
            };
        }
        if let Some(visited) = stack.iter().find(|v| v.starts_with(&path)) {
            return Err(self.invalid(
                field,
                format!(
                    "cycle detected: candidate root '{}' contains visited root '{}'",
                    path.display(),
                    visited.display()
                ),
            ));
        }
        if kustomization::find(self.fs, &path)?.is_none() {
            return Err(self.invalid(field, missing_kustomization(&path)));
        }
        Ok(Entry::Directory(Box::new(Target::load(self.fs, &path)?)))
    }

    /// The generators (`configMapGenerator`, `secretGenerator`); helm and plugin generators
    /// are refused.
    fn generate(&self, acc: &mut Accumulator, stack: &mut Vec<PathBuf>) -> Result<(), Error> {
        let k = &self.k;
        if !k.build_metadata.is_empty() {
            return Err(self.invalid(
                "buildMetadata",
                "origin, transformer and managed-by annotations are not supported".into(),
            ));
        }
        if !k.helm_charts.is_empty()
            || !k.helm_chart_inflation_generator.is_empty()
            || k.helm_globals.is_some()
        {
            return Err(self.invalid(
                "helmCharts",
                "helm charts are not supported: render the chart and list its output in resources"
                    .into(),
            ));
        }
        if !k.validators.is_empty() {
            return Err(self.invalid(
                "validators",
                "external plugins disabled; validators are not supported".into(),
            ));
        }
        let global: Option<GeneratorOptions> = match &k.generator_options {
            Some(v) => Some(self.decode("generatorOptions", v)?),
            None => None,
        };
        // kustomize's `configureBuiltinGenerators`: ConfigMaps, then Secrets.
        for (kind, field, list) in [
            (
                generator::Kind::ConfigMap,
                "configMapGenerator",
                &k.config_map_generator,
            ),
            (
                generator::Kind::Secret,
                "secretGenerator",
                &k.secret_generator,
            ),
        ] {
            for (i, entry) in list.iter().enumerate() {
                let args: GeneratorArgs = self.decode(&format!("{field}[{i}]"), entry)?;
                let generated = generator::generate(
                    &self.loader(),
                    &self.file,
                    kind,
                    i,
                    &args,
                    global.as_ref(),
                )?;
                generator::absorb(&mut acc.resources, generated)?;
            }
        }
        let configs = self.plugin_configs("generators", &k.generators, stack)?;
        for (i, (field, config)) in configs.iter().enumerate() {
            let origin = plugins::Origin {
                file: &self.file,
                field,
            };
            plugins::generate(&mut acc.resources, config, &self.loader(), &origin, i)?;
        }
        Ok(())
    }

    /// The plugin configs a `generators:`/`transformers:` list names (kustomize's
    /// `configureExternalTransformers`): entries that are YAML objects themselves first, then
    /// the files and kustomization directories named, in order.
    fn plugin_configs(
        &self,
        field: &str,
        entries: &[String],
        stack: &mut Vec<PathBuf>,
    ) -> Result<Vec<(String, Value)>, Error> {
        let mut configs = Vec::new();
        let mut named = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let here = format!("{field}[{i}]");
            let docs: Vec<Value> = serde_saphyr::from_multiple(entry).unwrap_or_default();
            if docs.iter().any(Value::is_object)
                && docs.iter().all(|d| d.is_object() || d.is_null())
            {
                configs.extend(
                    docs.into_iter()
                        .filter(Value::is_object)
                        .map(|d| (here.clone(), d)),
                );
            } else {
                named.push((here, entry));
            }
        }
        for (here, entry) in named {
            let objects: Vec<Resource> = match self.entry(entry, &here, stack)? {
                Entry::Directory(sub) => {
                    let mut inner = Accumulator::default();
                    sub.accumulate(&mut inner, stack, &Schemas::Builtin)?;
                    inner.resources
                }
                Entry::File(path) => {
                    let rel = path.strip_prefix(&self.dir).unwrap_or(&path);
                    parse_resources(&path, &self.read(&here, &rel.to_string_lossy())?)?
                }
            };
            configs.extend(objects.into_iter().map(|r| (here.clone(), clean(r.object))));
        }
        Ok(configs)
    }

    /// kustomize's `runTransformers`, the built-in ones in `configureBuiltinTransformers`'s
    /// order.
    fn transform(
        &self,
        acc: &mut Accumulator,
        schemas: &Schemas,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), Error> {
        let k = &self.k;
        let config = &acc.config;
        let rs = &mut acc.resources;
        let loader = self.loader();
        let strategic: Vec<String> = self.decode(
            "patchesStrategicMerge",
            &Value::from(k.patches_strategic_merge.clone()),
        )?;
        patch::apply_patches_strategic_merge(rs, &strategic, &loader, schemas)?;
        let patches: Vec<Patch> = self.decode("patches", &Value::from(k.patches.clone()))?;
        patch::apply_patches(rs, &patches, &loader, schemas)?;
        namespace::apply(rs, &k.namespace, &config.namespace, Default::default())
            .map_err(|m| self.invalid("namespace", m))?;
        nameprefix::apply(rs, Affix::Prefix, &k.name_prefix, &config.name_prefix)
            .map_err(|m| self.invalid("namePrefix", m))?;
        nameprefix::apply(rs, Affix::Suffix, &k.name_suffix, &config.name_suffix)
            .map_err(|m| self.invalid("nameSuffix", m))?;
        for (i, label) in k.labels.iter().enumerate() {
            let field = format!("labels[{i}]");
            let specs = label_specs(label, config)
                .map_err(|m| self.invalid(&field, format!("failed to merge labels: {m}")))?;
            labels::apply(rs, &label.pairs, &specs).map_err(|m| self.invalid(&field, m))?;
        }
        labels::apply(rs, &k.common_labels, &config.common_labels)
            .map_err(|m| self.invalid("commonLabels", m))?;
        labels::apply(rs, &k.common_annotations, &config.common_annotations)
            .map_err(|m| self.invalid("commonAnnotations", m))?;
        let json6902: Vec<Patch> =
            self.decode("patchesJson6902", &Value::from(k.patches_json6902.clone()))?;
        patch::apply_patches_json6902(rs, &json6902, &loader)?;
        for (i, replica) in k.replicas.iter().enumerate() {
            replicacount::apply(rs, replica, &config.replicas)
                .map_err(|m| self.invalid(&format!("replicas[{i}]"), m))?;
        }
        for (i, image) in k.images.iter().enumerate() {
            imagetag::apply(rs, image, &config.images)
                .map_err(|m| self.invalid(&format!("images[{i}]"), m))?;
        }
        let replacements = replacement::load(&loader, &self.file, &k.replacements)?;
        replacement::apply(rs, &replacements)?;
        // kustomize's `configureExternalTransformers`: after the built-in ones.
        for (field, config) in self.plugin_configs("transformers", &k.transformers, stack)? {
            let origin = plugins::Origin {
                file: &self.file,
                field: &field,
            };
            plugins::transform(&mut acc.resources, &config, &loader, schemas, &origin)?;
        }
        Ok(())
    }
}

/// kustomize's `ErrMissingKustomization`.
fn missing_kustomization(dir: &Path) -> String {
    format!(
        "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
        dir.display()
    )
}

/// The fields a `labels` entry sets (kustomize's LabelTransformer configurator): its own
/// `fields`, the configured label fields, and the selectors (`includeSelectors`), or the
/// pod templates (`includeTemplates`) and `metadata/labels`.
fn label_specs(label: &Label, config: &TransformerConfig) -> Result<Vec<FieldSpec>, String> {
    let mut specs = label.field_specs.clone();
    fieldspec::merge(&mut specs, &config.labels)?;
    if label.include_selectors {
        fieldspec::merge(&mut specs, &config.common_labels)?;
    } else {
        if label.include_templates {
            fieldspec::merge(&mut specs, &config.template_labels)?;
        }
        let metadata = FieldSpec {
            path: "metadata/labels".into(),
            create: true,
            ..FieldSpec::default()
        };
        fieldspec::merge(&mut specs, &[metadata])?;
    }
    Ok(specs)
}

enum Entry<'a> {
    Directory(Box<Target<'a>>),
    File(PathBuf),
}

/// Whether a `resources` entry names a remote base (kustomize's repo specs: URLs, `git::`,
/// scp-like `git@host:`, and the hosts it knows without a scheme).
fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git::")
        || entry.starts_with("git@")
        || ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|h| entry.starts_with(h))
        || entry.contains("?ref=")
}

/// The build's bookkeeping annotations removed (kustomize's `RemoveBuildAnnotations`, and
/// its origin and transformer annotations, which no `buildMetadata` asked for); an
/// empty annotations map goes too.
fn clean(mut object: Value) -> Value {
    let internal = |k: &str| {
        k.starts_with("internal.config.kubernetes.io/")
            || matches!(
                k,
                "config.kubernetes.io/path"
                    | "config.kubernetes.io/index"
                    | "config.kubernetes.io/id"
                    | "config.kubernetes.io/origin"
                    | "alpha.config.kubernetes.io/transformations"
                    | "kustomize.config.k8s.io/id"
                    | "kustomize.config.k8s.io/needs-hash"
                    | "kustomize.config.k8s.io/behavior"
            )
    };
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
            annotations.retain(|k, _| !internal(k));
        }
        // kyaml drops an annotations map left empty, even one written as `{}`.
        if metadata
            .get("annotations")
            .is_some_and(|a| a.as_object().is_some_and(Map::is_empty))
        {
            metadata.remove("annotations");
        }
    }
    object
}
