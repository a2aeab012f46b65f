//! `qbec.yaml` and the components it finds (splunk/qbec `internal/model/app.go`, `types.go`,
//! the schema `swagger.yaml`). qbec runs from the app's root, so every path in the file is
//! relative to the directory holding it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Error;

/// The app file qbec looks for.
pub const FILE_NAME: &str = "qbec.yaml";
const API_VERSION: &str = "qbec.io/v1alpha1";
/// qbec's `DefaultComponentsDir`.
const DEFAULT_COMPONENTS_DIR: &str = "components";
/// qbec's `Baseline`: an environment name with a special meaning.
const BASELINE: &str = "_";

/// The file as qbec's schema has it: every object refuses fields it does not know.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct QbecApp {
    api_version: String,
    kind: String,
    metadata: AppMeta,
    spec: AppSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppMeta {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppSpec {
    components_dir: Option<String>,
    /// Read by `qbec param` only; nothing kgc renders uses it.
    #[serde(default, rename = "paramsFile")]
    _params_file: Option<String>,
    post_processor: Option<String>,
    #[serde(default)]
    vars: Variables,
    #[serde(default)]
    data_sources: Vec<String>,
    /// Examples for `qbec alpha` commands; unused when rendering.
    #[serde(default, rename = "dsExamples")]
    _ds_examples: Option<Value>,
    #[serde(default)]
    environments: BTreeMap<String, Environment>,
    #[serde(default)]
    env_files: Vec<String>,
    #[serde(default)]
    excludes: Vec<String>,
    #[serde(default)]
    lib_paths: Vec<String>,
    #[serde(default)]
    namespace_tag_suffix: bool,
    #[serde(default)]
    base_properties: Map<String, Value>,
    /// How qbec lists the cluster; kgc lists its own way.
    #[serde(default, rename = "clusterScopedLists")]
    _cluster_scoped_lists: bool,
    /// qbec's own component label; kgc labels what it applies itself.
    #[serde(default, rename = "addComponentLabel")]
    _add_component_label: bool,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Environment {
    #[serde(default)]
    default_namespace: String,
    #[serde(default)]
    server: String,
    #[serde(default)]
    context: String,
    #[serde(default)]
    includes: Vec<String>,
    #[serde(default)]
    excludes: Vec<String>,
    #[serde(default)]
    properties: Map<String, Value>,
}

/// An env file (`spec.envFiles`): `kind: EnvironmentMap`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnvironmentMap {
    api_version: String,
    kind: String,
    spec: EnvironmentsSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvironmentsSpec {
    environments: BTreeMap<String, Environment>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Variables {
    #[serde(default)]
    external: Vec<ExternalVar>,
    #[serde(default)]
    top_level: Vec<TopLevelVar>,
    #[serde(default)]
    computed: Vec<ComputedVar>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExternalVar {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) default: Option<Value>,
    #[serde(default, rename = "secret")]
    _secret: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopLevelVar {
    name: String,
    components: Vec<String>,
    #[serde(default, rename = "secret")]
    _secret: bool,
}

/// A variable whose value is jsonnet code evaluated once per environment, in order, after
/// the others are set.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ComputedVar {
    pub(crate) name: String,
    pub(crate) code: String,
    #[serde(default, rename = "secret")]
    _secret: bool,
}

/// A component: its name and the files it is made of (one jsonnet file, or the YAML and
/// JSON files of a directory with an `index.yaml`).
#[derive(Debug, Clone)]
pub(crate) struct Component {
    pub(crate) name: String,
    pub(crate) files: Vec<PathBuf>,
    /// The top-level arguments `spec.vars.topLevel` gives this component.
    pub(crate) tlas: Vec<String>,
}

/// A loaded qbec app.
pub struct App {
    pub(crate) root: PathBuf,
    file: PathBuf,
    name: String,
    environments: BTreeMap<String, Environment>,
    excludes: Vec<String>,
    pub(crate) lib_paths: Vec<PathBuf>,
    namespace_tag_suffix: bool,
    base_properties: Map<String, Value>,
    pub(crate) external: Vec<ExternalVar>,
    pub(crate) top_level: BTreeSet<String>,
    pub(crate) computed: Vec<ComputedVar>,
    pub(crate) components: BTreeMap<String, Component>,
}

/// qbec's `reLabelValue`: what an environment, app or tag name must match.
fn is_label_value(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    !s.is_empty()
        && s.chars().all(ok)
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl App {
    /// Loads `dir/qbec.yaml`, its env files and its components, checking what qbec checks
    /// when it loads an app.
    pub fn load(dir: &Path) -> Result<App, Error> {
        // Absolute and canonical, as the files jsonnet imports are: messages show paths
        // relative to it.
        let dir = &dir.canonicalize().map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        let file = dir.join(FILE_NAME);
        let text = std::fs::read_to_string(&file).map_err(|source| Error::Io {
            path: file.clone(),
            source,
        })?;
        let bad = |message: String| Error::App {
            file: file.clone(),
            message,
        };
        let app: QbecApp = serde_saphyr::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if app.api_version != API_VERSION || app.kind != "App" {
            return Err(bad(format!(
                "apiVersion {:?}, kind {:?}: expected apiVersion {API_VERSION}, kind App",
                app.api_version, app.kind
            )));
        }
        if !is_label_value(&app.metadata.name) {
            return Err(bad(format!(
                "metadata.name {:?} is not a valid label value",
                app.metadata.name
            )));
        }
        let spec = app.spec;
        // Not rendered by kgc: refused rather than silently rendering something else.
        if !spec.data_sources.is_empty() {
            return Err(bad(
                "spec.dataSources: data sources are not supported by kgc".to_owned(),
            ));
        }
        if spec
            .post_processor
            .as_deref()
            .is_some_and(|p| !p.is_empty())
        {
            return Err(bad(
                "spec.postProcessor: post-processors are not supported by kgc".to_owned(),
            ));
        }
        let mut environments = spec.environments;
        for env_file in &spec.env_files {
            load_env_file(dir, env_file, &mut environments)?;
        }
        if environments.is_empty() {
            return Err(bad("no environments defined for app".to_owned()));
        }
        for (name, env) in &environments {
            let problem = if name == BASELINE {
                Some("cannot use _ as an environment name since it has a special meaning")
            } else if !is_label_value(name) {
                Some("invalid environment name, it must be a valid label value")
            } else if env.server.is_empty() && env.context.is_empty() {
                Some("neither server nor context was set")
            } else if !env.server.is_empty() && !env.context.is_empty() {
                Some("only one of server or context may be set")
            } else if env.context.starts_with("__") {
                Some("context may not start with __")
            } else {
                None
            };
            if let Some(p) = problem {
                return Err(bad(format!("environment {name}: {p}")));
            }
        }
        let components_dir = spec
            .components_dir
            .unwrap_or_else(|| DEFAULT_COMPONENTS_DIR.to_owned());
        let mut components = load_components(&dir.join(&components_dir))?;
        let mut top_level = BTreeSet::new();
        for tla in &spec.vars.top_level {
            if !top_level.insert(tla.name.clone()) {
                return Err(bad(format!("duplicate top-level variable {}", tla.name)));
            }
        }
        let mut seen = BTreeSet::new();
        let external_names = spec.vars.external.iter().map(|v| &v.name);
        for name in external_names.chain(spec.vars.computed.iter().map(|v| &v.name)) {
            if !seen.insert(name) {
                return Err(bad(format!("duplicate external variable {name}")));
            }
        }
        let mut references = vec![("default exclusions".to_owned(), &spec.excludes)];
        for (name, env) in &environments {
            references.push((format!("{name} inclusions"), &env.includes));
            references.push((format!("{name} exclusions"), &env.excludes));
            if let Some(c) = env.includes.iter().find(|c| env.excludes.contains(c)) {
                return Err(bad(format!(
                    "env {name}: component {c} present in both include and exclude sections"
                )));
            }
        }
        for tla in &spec.vars.top_level {
            references.push((format!("components for TLA {}", tla.name), &tla.components));
        }
        for (what, list) in references {
            let unknown: Vec<&str> = list
                .iter()
                .filter(|c| !components.contains_key(*c))
                .map(String::as_str)
                .collect();
            if !unknown.is_empty() {
                return Err(bad(format!(
                    "{what}: bad component reference(s): {}",
                    unknown.join(",")
                )));
            }
        }
        for tla in &spec.vars.top_level {
            for c in &tla.components {
                if let Some(component) = components.get_mut(c) {
                    component.tlas.push(tla.name.clone());
                }
            }
        }
        Ok(App {
            root: dir.to_owned(),
            file,
            name: app.metadata.name,
            environments,
            excludes: spec.excludes,
            lib_paths: spec.lib_paths.iter().map(|p| dir.join(p)).collect(),
            namespace_tag_suffix: spec.namespace_tag_suffix,
            base_properties: spec.base_properties,
            external: spec.vars.external,
            top_level,
            computed: spec.vars.computed,
            components,
        })
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The app file, for messages.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The environments' names, sorted.
    pub fn environments(&self) -> Vec<&str> {
        self.environments.keys().map(String::as_str).collect()
    }

    fn env(&self, env: &str) -> Result<&Environment, Error> {
        self.environments
            .get(env)
            .ok_or_else(|| Error::UnknownEnvironment {
                env: env.to_owned(),
                known: self.environments.keys().cloned().collect(),
            })
    }

    /// The environment's namespace for objects that name none (qbec's `DefaultNamespace`):
    /// `defaultNamespace`, else `default`; with `namespaceTagSuffix`, `-TAG` appended when
    /// there is a tag.
    pub fn default_namespace(&self, env: &str, tag: Option<&str>) -> Result<String, Error> {
        let e = self.env(env)?;
        let mut ns = if e.default_namespace.is_empty() {
            "default".to_owned()
        } else {
            e.default_namespace.clone()
        };
        if let Some(tag) = tag.filter(|_| self.namespace_tag_suffix) {
            ns = format!("{ns}-{tag}");
        }
        Ok(ns)
    }

    /// The environment's kubeconfig context, when it names one.
    pub fn context(&self, env: &str) -> Result<Option<&str>, Error> {
        let e = self.env(env)?;
        Ok(Some(e.context.as_str()).filter(|c| !c.is_empty()))
    }

    /// The environment's API server URL, when it names one instead of a context (qbec picks
    /// the kubeconfig context whose cluster has that server).
    pub fn server(&self, env: &str) -> Result<Option<&str>, Error> {
        let e = self.env(env)?;
        Ok(Some(e.server.as_str()).filter(|s| !s.is_empty()))
    }

    /// The environment's properties (`qbec.io/envProperties`): `baseProperties` with the
    /// environment's `properties` merged in, objects key by key (qbec's `deepMerge`).
    pub(crate) fn properties(&self, env: &str) -> Result<Value, Error> {
        let e = self.env(env)?;
        Ok(Value::Object(deep_merge(
            self.base_properties.clone(),
            &e.properties,
        )))
    }

    /// The components of an environment (qbec's `ComponentsForEnvironment`): every
    /// component but the top-level `excludes` and the environment's `excludes`, plus the
    /// environment's `includes`; by name.
    pub fn components(&self, env: &str) -> Result<Vec<&str>, Error> {
        let e = self.env(env)?;
        Ok(self
            .components
            .keys()
            .filter(|c| {
                e.includes.contains(c) || !(self.excludes.contains(c) || e.excludes.contains(c))
            })
            .map(String::as_str)
            .collect())
    }
}

fn deep_merge(mut base: Map<String, Value>, overrides: &Map<String, Value>) -> Map<String, Value> {
    for (k, v) in overrides {
        let merged = match (base.remove(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => Value::Object(deep_merge(b, o)),
            _ => v.clone(),
        };
        base.insert(k.clone(), merged);
    }
    base
}

/// Adds the environments of an env file; a later definition replaces an earlier one, as in
/// qbec. Only local files: qbec's URLs and glob patterns are refused by name.
fn load_env_file(
    root: &Path,
    name: &str,
    environments: &mut BTreeMap<String, Environment>,
) -> Result<(), Error> {
    let file = root.join(name);
    let bad = |message: String| Error::App {
        file: file.clone(),
        message,
    };
    if name.contains("://") || name.contains(['*', '?', '[']) {
        return Err(bad(
            "spec.envFiles: only local file names are supported by kgc (no URLs or patterns)"
                .to_owned(),
        ));
    }
    let text = std::fs::read_to_string(&file).map_err(|source| Error::Io {
        path: file.clone(),
        source,
    })?;
    let map: EnvironmentMap = serde_saphyr::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if map.api_version != API_VERSION || map.kind != "EnvironmentMap" {
        return Err(bad(format!(
            "apiVersion {:?}, kind {:?}: expected apiVersion {API_VERSION}, kind EnvironmentMap",
            map.api_version, map.kind
        )));
    }
    environments.extend(map.spec.environments);
    Ok(())
}

/// The components of a components directory (qbec's `loadComponents`): each `.jsonnet`,
/// `.yaml` and `.json` file is a component named by its stem; a subdirectory is a component
/// named by the directory when it has an `index.jsonnet` (that file is the component) or an
/// `index.yaml` (all its `.yaml` and `.json` files are); other subdirectories, and deeper
/// ones, are not read (they hold libraries and data).
fn load_components(dir: &Path) -> Result<BTreeMap<String, Component>, Error> {
    if !dir.is_dir() {
        return Err(Error::App {
            file: dir.to_owned(),
            message: "no component directory found".to_owned(),
        });
    }
    let mut list = Vec::new();
    for entry in sorted_entries(dir)? {
        if entry.is_dir() {
            let files = sorted_entries(&entry)?;
            let has = |n: &str| files.iter().any(|f| f.file_name() == Some(n.as_ref()));
            let name = file_name(&entry);
            if has("index.jsonnet") {
                list.push((name, vec![entry.join("index.jsonnet")]));
            } else if has("index.yaml") {
                let statics = files
                    .into_iter()
                    .filter(|f| !f.is_dir() && matches!(extension(f), "yaml" | "json"))
                    .collect();
                list.push((name, statics));
            }
            continue;
        }
        let ext = extension(&entry);
        if matches!(ext, "jsonnet" | "yaml" | "json") {
            let name = file_name(&entry);
            let stem = name.strip_suffix(&format!(".{ext}")).unwrap_or(&name);
            list.push((stem.to_owned(), vec![entry.clone()]));
        }
    }
    let mut out: BTreeMap<String, Component> = BTreeMap::new();
    for (name, files) in list {
        if let Some(old) = out.get(&name) {
            return Err(Error::App {
                file: dir.to_owned(),
                message: format!(
                    "duplicate component {name}, found {} and {}",
                    old.files
                        .first()
                        .map(|f| f.display().to_string())
                        .unwrap_or_default(),
                    files
                        .first()
                        .map(|f| f.display().to_string())
                        .unwrap_or_default()
                ),
            });
        }
        out.insert(
            name.clone(),
            Component {
                name,
                files,
                tlas: Vec::new(),
            },
        );
    }
    Ok(out)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |source| Error::Io {
        path: dir.to_owned(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort();
    Ok(entries)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn extension(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes `files` (path, text) under a new temporary directory.
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    const APP: &str = "apiVersion: qbec.io/v1alpha1
kind: App
metadata: {name: shop}
spec:
  excludes: [extra]
  environments:
    dev: {context: kind-dev, defaultNamespace: shop-dev, includes: [extra], excludes: [db]}
    prod: {server: 'https://prod:6443'}
";

    #[test]
    fn components_are_selected_per_environment() {
        let dir = tree(&[
            ("qbec.yaml", APP),
            ("components/web.jsonnet", "{}"),
            ("components/db.yaml", ""),
            ("components/extra.json", "{}"),
            ("components/lib.libsonnet", "{}"),
            ("components/notes.txt", ""),
            ("components/svc/index.jsonnet", "{}"),
            ("components/svc/helper.libsonnet", "{}"),
            ("components/static/index.yaml", ""),
            ("components/static/more.json", "{}"),
            ("components/static/skip.txt", ""),
            ("components/data/x.yaml", ""),
        ]);
        let app = App::load(dir.path()).unwrap();
        assert_eq!(app.name(), "shop");
        assert_eq!(app.environments(), ["dev", "prod"]);
        assert_eq!(
            app.components("dev").unwrap(),
            ["extra", "static", "svc", "web"]
        );
        assert_eq!(
            app.components("prod").unwrap(),
            ["db", "static", "svc", "web"]
        );
        let statics: Vec<String> = app.components["static"]
            .files
            .iter()
            .map(|f| file_name(f))
            .collect();
        assert_eq!(statics, ["index.yaml", "more.json"]);
        assert_eq!(app.default_namespace("dev", None).unwrap(), "shop-dev");
        assert_eq!(app.default_namespace("prod", Some("t")).unwrap(), "default");
        assert_eq!(app.context("dev").unwrap(), Some("kind-dev"));
        assert_eq!(app.context("prod").unwrap(), None);
        assert_eq!(app.server("prod").unwrap(), Some("https://prod:6443"));
        let err = app.components("qa").unwrap_err().to_string();
        assert_eq!(err, "invalid environment \"qa\": the app has dev, prod");
    }

    #[test]
    fn invalid_apps_are_refused_naming_the_field() {
        let load = |app: &str| {
            let dir = tree(&[("qbec.yaml", app), ("components/a.jsonnet", "{}")]);
            App::load(dir.path())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let head = "apiVersion: qbec.io/v1alpha1\nkind: App\nmetadata: {name: a}\n";
        let err = load(&format!(
            "{head}spec:\n  environments: {{dev: {{context: c}}}}\n  componentDir: x\n"
        ));
        assert!(
            err.contains("qbec.yaml") && err.contains("componentDir"),
            "{err}"
        );
        let err = load(&format!(
            "{head}spec:\n  environments: {{dev: {{context: c, namespace: x}}}}\n"
        ));
        assert!(err.contains("namespace"), "{err}");
        let err = load(&format!("{head}spec:\n  environments: {{dev: {{}}}}\n"));
        assert!(err.contains("neither server nor context"), "{err}");
        let err = load(&format!(
            "{head}spec:\n  excludes: [b]\n  environments: {{dev: {{context: c}}}}\n"
        ));
        assert!(
            err.contains("default exclusions: bad component reference(s): b"),
            "{err}"
        );
        let err = load(&format!("{head}spec: {{}}\n"));
        assert!(err.contains("no environments"), "{err}");
        let err = load("apiVersion: v1\nkind: App\nmetadata: {name: a}\nspec: {}\n");
        assert!(
            err.contains("expected apiVersion qbec.io/v1alpha1"),
            "{err}"
        );
    }

    #[test]
    fn env_files_add_and_replace_environments_and_properties_merge() {
        let dir = tree(&[
            (
                "qbec.yaml",
                "apiVersion: qbec.io/v1alpha1\nkind: App\nmetadata: {name: a}\nspec:\n  envFiles: [envs.yaml]\n  baseProperties: {a: {x: 1, y: 2}, b: 1}\n  environments:\n    dev: {context: old}\n",
            ),
            (
                "envs.yaml",
                "apiVersion: qbec.io/v1alpha1\nkind: EnvironmentMap\nspec:\n  environments:\n    dev: {context: new, properties: {a: {y: 3}}}\n    qa: {context: qa}\n",
            ),
            ("components/a.jsonnet", "{}"),
        ]);
        let app = App::load(dir.path()).unwrap();
        assert_eq!(app.environments(), ["dev", "qa"]);
        assert_eq!(app.context("dev").unwrap(), Some("new"));
        assert_eq!(
            app.properties("dev").unwrap(),
            serde_json::json!({"a": {"x": 1, "y": 3}, "b": 1})
        );
    }
}
