//! Object metadata as the collectors see it: identity, finalizers, owner references.
//!
//! Collectors work on metadata only (upstream's GC uses `PartialObjectMetadata`), so this is the
//! one typed view of an object they share, whichever cluster it came from.

use serde_json::{Value, json};

/// A `metadata.ownerReferences` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: Option<bool>,
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// Reads one entry; missing fields are empty (validation rejects such references on write,
    /// but a collector must never panic on what a cluster hands it).
    pub fn from_json(v: &Value) -> Self {
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Self {
            api_version: s("apiVersion"),
            kind: s("kind"),
            name: s("name"),
            uid: s("uid"),
            controller: v.get("controller").and_then(Value::as_bool),
            block_owner_deletion: v.get("blockOwnerDeletion").and_then(Value::as_bool),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        });
        if let Some(c) = self.controller {
            v["controller"] = json!(c);
        }
        if let Some(b) = self.block_owner_deletion {
            v["blockOwnerDeletion"] = json!(b);
        }
        v
    }

    /// `blockOwnerDeletion: true`.
    pub fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }

    /// Same coordinates (uid, name, kind, apiVersion): upstream
    /// `ownerReferenceMatchesCoordinates`.
    pub fn matches_coordinates(&self, other: &OwnerReference) -> bool {
        self.uid == other.uid
            && self.name == other.name
            && self.kind == other.kind
            && self.api_version == other.api_version
    }
}

/// The identity of an object as the garbage collector keys it (upstream `objectReference`):
/// owner-reference coordinates plus a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl ObjectRef {
    /// The identity an owner reference names, taken to live in `namespace`.
    pub fn from_owner(r: &OwnerReference, namespace: &str) -> Self {
        Self {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: namespace.to_owned(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        }
    }

    /// Whether an owner reference names these coordinates (namespace aside).
    pub fn matches(&self, r: &OwnerReference) -> bool {
        self.uid == r.uid
            && self.name == r.name
            && self.kind == r.kind
            && self.api_version == r.api_version
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version, self.kind, self.namespace, self.name, self.uid
        )
    }
}

/// The metadata of one object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub deletion_timestamp: Option<String>,
    pub finalizers: Vec<String>,
    pub owner_references: Vec<OwnerReference>,
}

impl ObjectMeta {
    /// Reads `metadata` of a whole object (or of a `PartialObjectMetadata`).
    pub fn from_object(obj: &Value) -> Self {
        let m = &obj["metadata"];
        let s = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Self {
            namespace: s("namespace"),
            name: s("name"),
            uid: s("uid"),
            resource_version: s("resourceVersion"),
            deletion_timestamp: m
                .get("deletionTimestamp")
                .and_then(Value::as_str)
                .map(str::to_owned),
            finalizers: m
                .get("finalizers")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            owner_references: m
                .get("ownerReferences")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(OwnerReference::from_json).collect())
                .unwrap_or_default(),
        }
    }

    pub fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }

    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metadata_and_owner_references() {
        let obj = json!({"metadata": {
            "name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "9",
            "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan", 3],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "o1",
                                 "controller": true, "blockOwnerDeletion": true}, {"bogus": 1}]}});
        let m = ObjectMeta::from_object(&obj);
        assert_eq!(m.uid, "u1");
        assert!(m.is_deleting() && m.has_finalizer("orphan"));
        assert_eq!(m.finalizers, ["orphan"]);
        assert_eq!(m.owner_references.len(), 2);
        assert!(m.owner_references[0].blocks());
        assert_eq!(m.owner_references[1].uid, "");
        assert_eq!(
            OwnerReference::from_json(&m.owner_references[0].to_json()),
            m.owner_references[0]
        );
        assert_eq!(ObjectMeta::from_object(&json!(null)), ObjectMeta::default());
    }

    #[test]
    fn identities_print_like_upstream() {
        let r = ObjectRef::from_owner(
            &OwnerReference::from_json(
                &json!({"apiVersion": "v1", "kind": "Pod", "name": "invalid", "uid": "u"}),
            ),
            "a",
        );
        assert_eq!(
            r.to_string(),
            "[v1/Pod, namespace: a, name: invalid, uid: u]"
        );
    }
}
