//! The schema strategic merge patches consult for list merge keys (kustomize's `openapi:`
//! field, `kubernetes-sigs/kustomize kyaml/openapi/openapi.go`).
//!
//! Without `openapi:`, the built-in kinds' patch metadata is kgc-patch's table (the same
//! `x-kubernetes-patch-strategy`/`-merge-key` the Kubernetes OpenAPI carries). With
//! `openapi: {path: …}`, kustomize *replaces* its built-in schema by the file's (a Swagger
//! document whose `definitions` name their kinds in `x-kubernetes-group-version-kind`): a
//! custom resource then merges lists by key, and built-in kinds not in the file merge like any
//! unknown kind (lists replaced), exactly as `kubectl kustomize` does.
//!
//! The custom schema is kept as the parsed document and walked through its `$ref`s on demand;
//! nothing is leaked or converted into kgc-patch's static tables.

use std::collections::BTreeMap;

use kgc_patch::strategic::{self, FieldMeta, Strategy};
use serde_json::Value;

use crate::Error;
use crate::fs::Loader;

/// The schemas of one build: kgc-patch's built-in table, or the kustomization's own.
#[derive(Debug, Clone, Default)]
pub enum Schemas {
    #[default]
    Builtin,
    Custom(OpenApi),
}

impl Schemas {
    /// The schemas the kustomization's `openapi:` field asks for (`None`: the built-in ones).
    /// `openapi: {version: …}` names one of kustomize's compiled-in Kubernetes versions: kgc
    /// has one table, so only the field's absence or a `path` is accepted.
    pub fn load(loader: &Loader, openapi: Option<&Value>) -> Result<Schemas, Error> {
        let Some(field) = openapi else {
            return Ok(Schemas::Builtin);
        };
        let bad = |message: &str| Error::Invalid {
            file: loader.dir().join("kustomization.yaml"),
            field: "openapi".to_owned(),
            message: message.to_owned(),
        };
        let Some(map) = field.as_object() else {
            return Err(bad("expected a map with `path`"));
        };
        if map.contains_key("version") {
            if map.contains_key("path") {
                return Err(bad(
                    "builtin version and custom schema provided, cannot use both",
                ));
            }
            return Err(bad(
                "a built-in OpenAPI version is not supported; give `path` to a schema file",
            ));
        }
        match map.get("path").and_then(Value::as_str) {
            Some(path) => Ok(Schemas::Custom(OpenApi::load(loader, path)?)),
            None => Err(bad("expected `path` to an OpenAPI schema file")),
        }
    }

    /// The schema of a kind (`api_version` as in the object: `group/version` or `version`),
    /// `None` when the kind has none (lists are then replaced, maps merged).
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<Node<'_>> {
        match self {
            Schemas::Builtin => {
                let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                strategic::schema_for(group, kind).map(Node::Builtin)
            }
            Schemas::Custom(api) => api.for_kind(api_version, kind),
        }
    }
}

/// A custom OpenAPI document: its definitions, and which definition describes which kind.
#[derive(Debug, Clone, Default)]
pub struct OpenApi {
    definitions: serde_json::Map<String, Value>,
    by_kind: BTreeMap<(String, String), String>,
}

impl OpenApi {
    /// Reads the schema file at `path` (JSON or YAML), relative to the kustomization.
    pub fn load(loader: &Loader, path: &str) -> Result<OpenApi, Error> {
        let text = loader.read_to_string(path)?;
        OpenApi::parse(&text).map_err(|message| Error::Invalid {
            file: loader.dir().join(path),
            field: "definitions".to_owned(),
            message,
        })
    }

    /// Parses a Swagger document; definitions naming a group-version-kind index their kind.
    pub fn parse(text: &str) -> Result<OpenApi, String> {
        // The parser's first line; the rest draws the offending line.
        let doc: Value = serde_saphyr::from_str(text)
            .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())?;
        let definitions = match doc.get("definitions") {
            Some(Value::Object(d)) => d.clone(),
            Some(_) => return Err("expected a map of definitions".to_owned()),
            None => return Err("no definitions".to_owned()),
        };
        let mut by_kind = BTreeMap::new();
        for (name, def) in &definitions {
            let gvks = def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for gvk in gvks {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("");
                let api_version = if s("group").is_empty() {
                    s("version").to_owned()
                } else {
                    format!("{}/{}", s("group"), s("version"))
                };
                by_kind.insert((api_version, s("kind").to_owned()), name.clone());
            }
        }
        Ok(OpenApi {
            definitions,
            by_kind,
        })
    }

    fn for_kind(&self, api_version: &str, kind: &str) -> Option<Node<'_>> {
        let name = self
            .by_kind
            .get(&(api_version.to_owned(), kind.to_owned()))?;
        self.definitions
            .get(name)
            .map(|def| Node::OpenApi(self, def))
    }

    /// `schema` with its `$ref` (`#/definitions/<name>`) followed, as kyaml resolves each
    /// field's schema; an unresolvable reference is no schema.
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> Option<&'a Value> {
        // A cycle of references without a schema between them is bounded by the definitions.
        for _ in 0..=self.definitions.len() {
            let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            schema = self.definitions.get(r.strip_prefix("#/definitions/")?)?;
        }
        None
    }
}

/// A position in a schema while merging: a struct or field of kgc-patch's table, or a schema
/// of a custom document.
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    Builtin(strategic::Schema),
    BuiltinField(FieldMeta),
    OpenApi(&'a OpenApi, &'a Value),
}

impl<'a> Node<'a> {
    /// The schema of a map's field (kyaml `ResourceSchema.Field`: a property, or the value
    /// schema of a map with `additionalProperties`).
    pub fn field(self, name: &str) -> Option<Node<'a>> {
        match self {
            Node::Builtin(s) => Some(Node::BuiltinField(s.field(name))),
            Node::BuiltinField(m) => Some(Node::BuiltinField(m.child().field(name))),
            Node::OpenApi(api, s) => {
                let child = s
                    .get("properties")
                    .and_then(|p| p.get(name))
                    .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))?;
                api.resolve(child).map(|c| Node::OpenApi(api, c))
            }
        }
    }

    /// The schema of a list's items (kyaml `ResourceSchema.Elements`: only for `type: array`).
    pub fn elements(self) -> Option<Node<'a>> {
        match self {
            Node::Builtin(_) => None,
            Node::BuiltinField(m) => Some(Node::Builtin(m.child())),
            Node::OpenApi(api, s) => {
                let is_array = match s.get("type") {
                    Some(Value::String(t)) => t == "array",
                    Some(Value::Array(t)) => t.len() == 1 && t[0] == "array",
                    _ => false,
                };
                if !is_array {
                    return None;
                }
                api.resolve(s.get("items")?).map(|c| Node::OpenApi(api, c))
            }
        }
    }

    /// Whether a list here merges (its patch strategy includes `merge`) and, if so, its merge
    /// keys (kyaml `PatchStrategyAndKeyList`: `x-kubernetes-list-map-keys` when present, else
    /// `x-kubernetes-patch-merge-key`; none for a list of scalars merged as a set).
    pub fn merge_keys(self) -> Option<Vec<String>> {
        match self {
            Node::Builtin(_) => None,
            Node::BuiltinField(m) => (m.strategy() == Strategy::Merge)
                .then(|| m.merge_key().map(builtin_list_map_keys).unwrap_or_default()),
            Node::OpenApi(_, s) => {
                let strategy = s.get("x-kubernetes-patch-strategy")?.as_str()?;
                if !strategy.split(',').any(|p| p == "merge") {
                    return None;
                }
                if let Some(keys) = s
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                {
                    return Some(
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect(),
                    );
                }
                Some(
                    s.get("x-kubernetes-patch-merge-key")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .into_iter()
                        .collect(),
                )
            }
        }
    }
}

/// The keys of a built-in merged list, from its merge key: kustomize's bundled schema
/// (Kubernetes 1.21.2, `kyaml/openapi/kubernetesapi`) gives three such lists
/// `x-kubernetes-list-map-keys` of two keys, which kgc-patch's table (one merge key per list)
/// does not carry: container and service ports (by protocol too) and topology spread
/// constraints.
fn builtin_list_map_keys(merge_key: &str) -> Vec<String> {
    let keys: &[&str] = match merge_key {
        "containerPort" => &["containerPort", "protocol"],
        "port" => &["port", "protocol"],
        "topologyKey" => &["topologyKey", "whenUnsatisfiable"],
        other => return vec![other.to_owned()],
    };
    keys.iter().map(|&k| k.to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r##"
definitions:
  com.example.v1.Foo:
    type: object
    x-kubernetes-group-version-kind: [{group: example.com, version: v1, kind: Foo}]
    properties:
      spec: {$ref: "#/definitions/com.example.v1.FooSpec"}
  com.example.v1.FooSpec:
    type: object
    properties:
      items:
        type: array
        items: {$ref: "#/definitions/com.example.v1.Item"}
        x-kubernetes-patch-strategy: merge
        x-kubernetes-patch-merge-key: name
      ports:
        type: array
        x-kubernetes-patch-strategy: merge
        x-kubernetes-patch-merge-key: port
        x-kubernetes-list-map-keys: [port, protocol]
      tags: {type: array, x-kubernetes-patch-strategy: merge}
      plain: {type: array}
      byName:
        type: object
        additionalProperties: {$ref: "#/definitions/com.example.v1.Item"}
  com.example.v1.Item:
    type: object
    properties:
      sub: {type: array, x-kubernetes-patch-strategy: "merge,retainKeys", x-kubernetes-patch-merge-key: id}
  loop: {$ref: "#/definitions/loop"}
"##;

    #[test]
    fn custom_kinds_resolve_through_refs() {
        let s = Schemas::Custom(OpenApi::parse(DOC).unwrap());
        let spec = s
            .for_kind("example.com/v1", "Foo")
            .unwrap()
            .field("spec")
            .unwrap();
        assert_eq!(
            spec.field("items").unwrap().merge_keys(),
            Some(vec!["name".to_owned()])
        );
        assert_eq!(
            spec.field("ports").unwrap().merge_keys(),
            Some(vec!["port".to_owned(), "protocol".to_owned()])
        );
        assert_eq!(spec.field("tags").unwrap().merge_keys(), Some(vec![]));
        assert_eq!(spec.field("plain").unwrap().merge_keys(), None);
        let item = spec.field("items").unwrap().elements().unwrap();
        assert_eq!(
            item.field("sub").unwrap().merge_keys(),
            Some(vec!["id".to_owned()])
        );
        let by_name = spec.field("byName").unwrap().field("anything").unwrap();
        assert!(by_name.field("sub").unwrap().merge_keys().is_some());
        assert!(spec.field("nope").is_none());
        assert!(s.for_kind("example.com/v2", "Foo").is_none());
        // A custom schema replaces the built-in one.
        assert!(s.for_kind("apps/v1", "Deployment").is_none());
        let api = OpenApi::parse(DOC).unwrap();
        assert!(
            api.resolve(&serde_json::json!({"$ref": "#/definitions/loop"}))
                .is_none()
        );
    }

    #[test]
    fn builtin_kinds_come_from_kgc_patch() {
        let s = Schemas::Builtin;
        let containers = s
            .for_kind("apps/v1", "Deployment")
            .unwrap()
            .field("spec")
            .and_then(|n| n.field("template"))
            .and_then(|n| n.field("spec"))
            .and_then(|n| n.field("containers"))
            .unwrap();
        assert_eq!(containers.merge_keys(), Some(vec!["name".to_owned()]));
        let env = containers.elements().unwrap().field("env").unwrap();
        assert_eq!(env.merge_keys(), Some(vec!["name".to_owned()]));
        let args = containers.elements().unwrap().field("args").unwrap();
        assert_eq!(args.merge_keys(), None);
        assert!(s.for_kind("example.com/v1", "Foo").is_none());
    }

    #[test]
    fn bad_documents_are_refused() {
        assert!(OpenApi::parse("definitions: 3").is_err());
        assert!(OpenApi::parse("swagger: '2.0'").is_err());
        assert!(OpenApi::parse("{").is_err());
    }
}
