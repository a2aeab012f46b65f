//! A resource as kustomize tracks it while building: the object, and the ids it had before
//! transformers renamed it (kustomize's `resource.Resource` with its `OrgId`/`PrevIds`), so
//! that name references written against the original name can be rewritten.

use serde_json::{Map, Value};

use crate::scope;

/// [`ResId::key`]: group, version, kind, name, effective namespace.
pub type IdKey = (String, String, String, String, String);

/// kustomize's `resid.ResId`: group, version, kind, name and namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ResId {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    /// Empty for cluster-scoped kinds and for namespaced objects that name none.
    pub namespace: String,
}

impl ResId {
    /// The id of `object` as it is now.
    pub fn of(object: &Value) -> ResId {
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (group, version) = match s("/apiVersion").split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), s("/apiVersion").to_owned()),
        };
        ResId {
            group,
            version,
            kind: s("/kind").to_owned(),
            name: s("/metadata/name").to_owned(),
            namespace: s("/metadata/namespace").to_owned(),
        }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// kustomize's `Gvk.IsSelected`: every non-empty part of the selector equals ours.
    pub fn is_selected(&self, group: &str, version: &str, kind: &str) -> bool {
        (group.is_empty() || group == self.group)
            && (version.is_empty() || version == self.version)
            && (kind.is_empty() || kind == self.kind)
    }

    pub fn is_cluster_scoped(&self) -> bool {
        scope::is_cluster_scoped(&self.api_version(), &self.kind)
    }

    /// kustomize's `ResId.EffectiveNamespace`: none for cluster-scoped kinds, `default` for
    /// namespaced objects that name none.
    pub fn effective_namespace(&self) -> &str {
        if self.is_cluster_scoped() {
            "_non_namespaceable_"
        } else if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }

    /// kustomize's `ResId.Equals` as a key: ids with equal keys are the same resource (the
    /// same kind and name in the same effective namespace; no namespace is `default`).
    pub fn key(&self) -> IdKey {
        (
            self.group.clone(),
            self.version.clone(),
            self.kind.clone(),
            self.name.clone(),
            self.effective_namespace().to_owned(),
        )
    }

    /// kustomize's `ResId.Equals`.
    pub fn same(&self, other: &ResId) -> bool {
        self.key() == other.key()
    }

    /// kustomize's `ResId.String`, as its messages print ids (`Service.v1.[noGrp]/web.[noNs]`).
    pub fn display(&self) -> String {
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_owned()
            } else {
                s.to_owned()
            }
        };
        format!(
            "{}.{}.{}/{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]"),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]"),
        )
    }
}

/// The internal annotations kustomize keeps the name prefixes and suffixes in (its
/// `utils.BuildAnnotationPrefixes`/`Suffixes`); removed before output.
pub const PREFIXES: &str = "internal.config.kubernetes.io/prefixes";
pub const SUFFIXES: &str = "internal.config.kubernetes.io/suffixes";

/// One resource of a build.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    pub object: Value,
    /// The ids this resource had before each rename, oldest first (the first is its original
    /// id, as read or generated).
    pub previous: Vec<ResId>,
}

impl Resource {
    pub fn new(object: Value) -> Resource {
        Resource {
            object,
            previous: Vec::new(),
        }
    }

    /// Its id now.
    pub fn id(&self) -> ResId {
        ResId::of(&self.object)
    }

    /// Its id as read or generated, before any prefix, suffix, hash or namespace.
    pub fn original_id(&self) -> ResId {
        self.previous.first().cloned().unwrap_or_else(|| self.id())
    }

    /// Records the current id before a transformer changes it (kustomize's
    /// `StorePreviousId`).
    pub fn store_previous_id(&mut self) {
        let id = self.id();
        self.previous.push(id);
    }

    /// A string annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    }

    /// Sets an annotation, creating `metadata.annotations` as needed.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        if !self.object.is_object() {
            return;
        }
        let metadata = self.object.as_object_mut().map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()))
        });
        let Some(Value::Object(metadata)) = metadata else {
            return;
        };
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(Map::new());
        }
        if let Value::Object(a) = annotations {
            a.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }

    /// The values of a comma-separated internal annotation ([`PREFIXES`], [`SUFFIXES`]).
    pub fn csv_annotation(&self, key: &str) -> Vec<String> {
        match self.annotation(key) {
            Some(v) if !v.is_empty() => v.split(',').map(str::to_owned).collect(),
            _ => Vec::new(),
        }
    }

    /// Appends to a comma-separated internal annotation (nothing for an empty value, as
    /// kustomize's `appendCsvAnnotation`).
    pub fn append_csv_annotation(&mut self, key: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let mut values = self.csv_annotation(key);
        values.push(value.to_owned());
        self.set_annotation(key, &values.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_and_effective_namespace() {
        let r = Resource::new(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}}));
        let id = r.id();
        assert_eq!(id.api_version(), "apps/v1");
        assert_eq!(id.effective_namespace(), "default");
        assert!(id.is_selected("apps", "", "Deployment"));
        assert!(!id.is_selected("", "", "Service"));
        let ns =
            ResId::of(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}));
        assert!(ns.is_cluster_scoped());
    }

    #[test]
    fn csv_annotations_append() {
        let mut r = Resource::new(json!({"kind": "ConfigMap", "metadata": {"name": "c"}}));
        r.append_csv_annotation(PREFIXES, "a-");
        r.append_csv_annotation(PREFIXES, "");
        r.append_csv_annotation(PREFIXES, "b-");
        assert_eq!(r.csv_annotation(PREFIXES), ["a-", "b-"]);
    }
}
