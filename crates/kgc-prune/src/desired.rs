//! Desired objects: source objects resolved against the server's kinds, defaulted, checked and
//! stamped with ownership, before anything is written.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Error;
use kgc_meta::catalog::split_api_version;

use crate::gvk::GroupKind;
use crate::listing::Resource;
use crate::order;
use crate::ownership::{self, Identity};
use crate::source::SourceObject;

/// A live or desired object's identity within a set: canonical group and kind, namespace
/// (`""` for cluster-scoped) and name.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectKey {
    pub gk: GroupKind,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.gk, self.name)
        } else {
            write!(f, "{} {}/{}", self.gk, self.namespace, self.name)
        }
    }
}

/// One object to apply.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Desired {
    pub key: ObjectKey,
    /// The resource to apply through: the version is the one the source wrote.
    pub resource: Resource,
    pub component: String,
    /// `file:line` of the source.
    pub origin: String,
    /// The stamped manifest.
    pub object: Value,
    pub rank: u8,
}

/// Resolves a group/version/kind to a served resource (the executor asks discovery).
pub trait KindResolver {
    fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<Resource>;

    /// A kind neither served nor defined by a CRD in the source: an error against a server;
    /// a resolver that reads no server may assume instead.
    fn assume(&self, _group: &str, _version: &str, _kind: &str) -> Option<Resource> {
        None
    }
}

/// Resolves, defaults, de-duplicates and stamps `sources`. Kinds the server does not serve
/// are accepted only when a CRD in the same source defines them (qbec's third gotcha: the
/// first apply of a CRD and its resources).
pub fn build(
    sources: Vec<SourceObject>,
    identity: &Identity,
    set_id: &str,
    default_namespace: &str,
    kinds: &impl KindResolver,
) -> Result<Vec<Desired>, Error> {
    let crds: Vec<Resource> = sources
        .iter()
        .filter(|s| crate::gvk::canonical(api_version(&s.object), kind(&s.object)).is_crd())
        .flat_map(|s| crd_resources(&s.object))
        .collect();
    let mut seen: BTreeMap<ObjectKey, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(sources.len());
    for s in sources {
        let origin = s.origin();
        let av = api_version(&s.object).to_owned();
        let k = kind(&s.object).to_owned();
        let (group, version) = split_api_version(&av).map_err(|e| Error::Source {
            file: s.file.clone(),
            line: s.line,
            message: e.to_string(),
        })?;
        let resource = kinds
            .resolve(group, version, &k)
            .or_else(|| {
                crds.iter()
                    .find(|r| r.gk.group == group && r.gk.kind == k && r.version == version)
                    .cloned()
            })
            .or_else(|| kinds.assume(group, version, &k))
            .ok_or_else(|| Error::Source {
                file: s.file.clone(),
                line: s.line,
                message: format!(
                    "unknown kind {k} in {av}: the server does not serve it and no CRD in the source defines it"
                ),
            })?;
        let gk = crate::gvk::canonical(&av, &k);
        let mut object = s.object;
        let namespace = if resource.namespaced {
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or(default_namespace)
                .to_owned();
            if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("namespace".into(), Value::String(ns.clone()));
            }
            ns
        } else {
            if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
            String::new()
        };
        let key = ObjectKey {
            gk: gk.clone(),
            namespace: namespace.clone(),
            name: crate::str_at(&object, "/metadata/name").to_owned(),
        };
        if let Some(first) = seen.insert(key.clone(), origin.clone()) {
            return Err(Error::Invalid(format!(
                "{key} is defined twice: at {first} and at {origin}"
            )));
        }
        ownership::stamp(&mut object, identity, set_id, &gk, &namespace, &s.component)
            .map_err(|e| Error::Invalid(format!("{origin}: {e}")))?;
        out.push(Desired {
            rank: order::rank(&gk, resource.namespaced),
            key,
            resource,
            component: s.component,
            origin,
            object,
        });
    }
    Ok(out)
}

/// The kinds a server would serve, known without one: kgc-meta's built-in catalog, and any
/// other kind taken as namespaced (as most custom resources are). `kgc build` stamps through
/// it, reading no cluster; `kgc apply` asks the server's discovery instead.
pub struct Offline(kgc_meta::catalog::Catalog);

impl Default for Offline {
    fn default() -> Self {
        Offline(kgc_meta::catalog::Catalog::builtin())
    }
}

impl KindResolver for Offline {
    fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<Resource> {
        self.0.by_kind(group, version, kind).map(|info| Resource {
            gk: GroupKind::new(group, kind),
            version: version.to_owned(),
            plural: info.plural.clone(),
            namespaced: info.namespaced(),
        })
    }

    fn assume(&self, group: &str, version: &str, kind: &str) -> Option<Resource> {
        Some(Resource {
            gk: GroupKind::new(group, kind),
            version: version.to_owned(),
            plural: format!("{}s", kind.to_lowercase()),
            namespaced: true,
        })
    }
}

fn api_version(v: &Value) -> &str {
    v.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn kind(v: &Value) -> &str {
    v.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// The resources a CRD manifest or live CRD defines (one per served version).
pub fn crd_resources(crd: &Value) -> Vec<Resource> {
    let spec = crd.get("spec");
    let s = |p: &str| {
        spec.and_then(|s| s.pointer(p))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (group, kind, plural) = (s("/group"), s("/names/kind"), s("/names/plural"));
    let namespaced = s("/scope") != "Cluster";
    spec.and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|version| Resource {
            gk: GroupKind::new(&group, &kind),
            version: version.to_owned(),
            plural: plural.clone(),
            namespaced,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// ConfigMaps, Namespaces and Deployments (also under extensions).
    pub(crate) struct Builtins;

    impl KindResolver for Builtins {
        fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<Resource> {
            let (plural, namespaced) = match (group, kind) {
                ("", "ConfigMap") => ("configmaps", true),
                ("", "Namespace") => ("namespaces", false),
                ("apps" | "extensions", "Deployment") => ("deployments", true),
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    ("customresourcedefinitions", false)
                }
                _ => return None,
            };
            Some(Resource {
                gk: GroupKind::new(group, kind),
                version: version.into(),
                plural: plural.into(),
                namespaced,
            })
        }
    }

    pub(crate) fn src(component: &str, line: usize, object: Value) -> SourceObject {
        SourceObject {
            component: component.into(),
            file: format!("{component}.yaml").into(),
            line,
            object,
        }
    }

    fn id() -> Identity {
        Identity::new("shop", "prod", None).unwrap()
    }

    #[test]
    fn namespaces_default_and_cluster_objects_lose_theirs() {
        let d = build(
            vec![
                src("a", 1, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
                src("a", 5, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": "x"}})),
            ],
            &id(),
            "set",
            "prod",
            &Builtins,
        )
        .unwrap();
        assert_eq!(d[0].key.namespace, "prod");
        assert_eq!(d[0].object["metadata"]["namespace"], "prod");
        assert_eq!(d[1].key.namespace, "");
        assert!(d[1].object["metadata"].get("namespace").is_none());
        assert!(d[1].rank < d[0].rank);
    }

    #[test]
    fn duplicates_across_files_and_aliases_are_rejected() {
        let err = build(
            vec![
                src("a", 1, json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})),
                src("b", 3, json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "prod"}})),
            ],
            &id(),
            "set",
            "prod",
            &Builtins,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("a.yaml:1") && err.contains("b.yaml:3"),
            "{err}"
        );
    }

    #[test]
    fn unknown_kinds_fail_unless_a_source_crd_defines_them() {
        let widget =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let err = build(
            vec![src("a", 2, widget.clone())],
            &id(),
            "set",
            "prod",
            &Builtins,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("a.yaml:2") && err.contains("unknown kind Widget"),
            "{err}"
        );
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]}
        });
        let d = build(
            vec![src("a", 1, crd), src("b", 1, widget)],
            &id(),
            "set",
            "prod",
            &Builtins,
        )
        .unwrap();
        assert_eq!(d[1].resource.plural, "widgets");
        assert_eq!(d[1].key.namespace, "prod");
    }
}
