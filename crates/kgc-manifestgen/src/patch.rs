//! A `patchUpdated` config's patch file (`fluxcd/flux pkg/cluster/kubernetes/patch.go`,
//! `applyManifestPatch`): a YAML stream of strategic merge patches, each naming the object it
//! patches by kind, namespace and name (fluxd's resource id, the kind's case ignored). A kind
//! with strategic-merge metadata is patched strategically, any other (a custom resource) with
//! a JSON merge patch, as fluxd does for kinds outside its scheme.
//!
//! As fluxd: a missing patch file is no patches (fluxd creates it on its first image update),
//! provided its directory exists; a patch for an object the generators did not produce is an
//! error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

/// fluxd's resource id: namespace, lower-case kind, name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Id {
    namespace: String,
    kind: String,
    name: String,
}

impl Id {
    fn of(v: &Value) -> Option<Id> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (kind, name) = (s("/kind"), s("/metadata/name"));
        if kind.is_empty() || name.is_empty() {
            return None;
        }
        Some(Id {
            namespace: s("/metadata/namespace").to_owned(),
            kind: kind.to_ascii_lowercase(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for Id {
    /// `namespace:kind/name`, `<cluster>` for no namespace, as fluxd writes ids.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = if self.namespace.is_empty() {
            "<cluster>"
        } else {
            &self.namespace
        };
        write!(f, "{ns}:{}/{}", self.kind, self.name)
    }
}

/// The patches of one patch file, by the id of the object each patches.
#[derive(Debug, Default)]
pub struct Patches {
    by_id: BTreeMap<Id, Value>,
    file: PathBuf,
    patch_file: PathBuf,
}

impl Patches {
    /// Reads `patch_file` (relative to `working_dir`) for the config shown as `config`.
    pub(crate) fn read(
        working_dir: &Path,
        patch_file: &Path,
        config: &Path,
    ) -> Result<Patches, Error> {
        let bad = |message: String| Error::Patch {
            file: config.to_owned(),
            patch_file: patch_file.to_owned(),
            message,
        };
        let path = working_dir.join(patch_file);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let dir = path.parent().unwrap_or(working_dir);
                if !dir.is_dir() {
                    return Err(bad("its directory does not exist".into()));
                }
                String::new()
            }
            Err(e) => return Err(bad(e.to_string())),
        };
        Patches::parse(&text, config, patch_file)
    }

    pub(crate) fn parse(text: &str, config: &Path, patch_file: &Path) -> Result<Patches, Error> {
        let bad = |message: String| Error::Patch {
            file: config.to_owned(),
            patch_file: patch_file.to_owned(),
            message,
        };
        let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| bad(e.to_string()))?;
        let mut by_id = BTreeMap::new();
        for (i, doc) in docs.into_iter().enumerate() {
            if doc.is_null() {
                continue;
            }
            if !doc.is_object() {
                return Err(bad(format!(
                    "patch {}: must be a mapping, not {}",
                    i + 1,
                    crate::config::type_name(&doc)
                )));
            }
            let Some(id) = Id::of(&doc) else {
                return Err(bad(format!(
                    "patch {}: needs kind and metadata.name to name the object it patches",
                    i + 1
                )));
            };
            if by_id.contains_key(&id) {
                return Err(bad(format!("two patches for {id}")));
            }
            by_id.insert(id, doc);
        }
        Ok(Patches {
            by_id,
            file: config.to_owned(),
            patch_file: patch_file.to_owned(),
        })
    }

    /// Patches each object its patch names; every patch must name one of them.
    pub(crate) fn apply<'a>(
        &self,
        objects: impl IntoIterator<Item = &'a mut Value>,
    ) -> Result<(), Error> {
        if self.by_id.is_empty() {
            return Ok(());
        }
        let bad = |message: String| Error::Patch {
            file: self.file.clone(),
            patch_file: self.patch_file.clone(),
            message,
        };
        let mut used = std::collections::BTreeSet::new();
        for object in objects {
            let Some(id) = Id::of(object) else { continue };
            let Some(patch) = self.by_id.get(&id) else {
                continue;
            };
            let api_version = object
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
            let applied = match kgc_patch::strategic::schema_for(group, kind) {
                Some(schema) => kgc_patch::strategic::apply(object, patch, schema),
                None => {
                    let mut merged = object.clone();
                    kgc_patch::merge(&mut merged, patch).map(|()| merged)
                }
            };
            *object = applied.map_err(|e| bad(format!("cannot patch {id}: {e}")))?;
            used.insert(id);
        }
        match self.by_id.keys().find(|id| !used.contains(*id)) {
            Some(id) => Err(bad(format!("patch refers to missing resource ({id})"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patches(text: &str) -> Result<Patches, String> {
        Patches::parse(text, Path::new(".flux.yaml"), Path::new("flux-patch.yaml"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn patches_merge_strategically_by_kind_namespace_and_name() {
        let mut objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"replicas": 1, "template": {"spec": {"containers": [
                       {"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"}]}}}}),
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w"}, "spec": {"list": [1, 2], "keep": true}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "shop"}}),
        ];
        let p = patches(
            "apiVersion: apps/v1\nkind: deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 3\n  template: {spec: {containers: [{name: app, image: app:2}]}}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {list: [3]}\n",
        )
        .unwrap();
        p.apply(objects.iter_mut()).unwrap();
        assert_eq!(objects[0]["spec"]["replicas"], 3);
        // Containers merge by name: the side container stays.
        assert_eq!(
            objects[0]["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "app:2"}, {"name": "side", "image": "side:1"}])
        );
        // A custom resource: a JSON merge patch replaces the list, keeps the rest.
        assert_eq!(objects[1]["spec"], json!({"list": [3], "keep": true}));
        assert_eq!(
            objects[2],
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "shop"}})
        );
    }

    #[test]
    fn a_patch_for_a_missing_object_or_a_bad_patch_is_an_error() {
        let mut objects =
            [json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})];
        let p = patches("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: v}\n")
            .unwrap();
        let err = p.apply(objects.iter_mut()).unwrap_err().to_string();
        assert_eq!(
            err,
            ".flux.yaml: patchFile flux-patch.yaml: patch refers to missing resource (<cluster>:configmap/b)"
        );
        let err = patches(
            "kind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\nmetadata: {name: a}\n",
        )
        .unwrap_err();
        assert!(
            err.ends_with("two patches for <cluster>:configmap/a"),
            "{err}"
        );
        let err = patches("kind: ConfigMap\n").unwrap_err();
        assert!(
            err.contains("patch 1: needs kind and metadata.name"),
            "{err}"
        );
        let err = patches("- 1\n").unwrap_err();
        assert!(
            err.contains("patch 1: must be a mapping, not a list"),
            "{err}"
        );
        assert!(patches("kind: [\n").is_err());
    }
}
