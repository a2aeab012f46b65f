//! A resource as kustomize tracks it while building: the object, and the ids it had before
//! transformers renamed it (kustomize's `resource.Resource` with its `OrgId`/`PrevIds`), so
//! that name references written against the original name can be rewritten.

use serde_json::Value;

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
}

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
}
