//! The set's parent object (KEP-3659 ApplySet parent): a ConfigMap in the environment's
//! namespace that records which kinds and namespaces the set's members may be in.
//!
//! Labels on the members stay the truth; the parent only says *where to look*. Before an apply
//! it is widened to the union of the recorded and the new kinds and namespaces, so that a run
//! interrupted after creating objects in a new namespace or of a new kind still finds them next
//! time; after a successful prune it is trimmed to what the source holds plus whatever could not
//! be deleted (kubectl applyset.go `BeforeApply`/`AfterPrune`, kapp's usedGKs).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::Error;
use crate::gvk::GroupKind;
use crate::ownership::{
    ANNOTATION_GROUP_KINDS, ANNOTATION_NAMESPACES, ANNOTATION_TOOLING, Identity, LABEL_APP,
    LABEL_APPLYSET_ID, LABEL_ENV, LABEL_TAG, TOOLING,
};

/// Where a set's members may be.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Inventory {
    pub group_kinds: BTreeSet<GroupKind>,
    /// Every namespace, the parent's own included.
    pub namespaces: BTreeSet<String>,
}

impl Inventory {
    /// Reads a live parent. A parent written by other tooling, or whose id label is not the
    /// one its name and namespace imply, is refused (KEP-3659: tools must not mutate sets they
    /// do not own).
    pub fn from_parent(parent: &Value, set_id: &str) -> Result<Self, Error> {
        let name = crate::str_at(parent, "/metadata/name");
        let ns = crate::str_at(parent, "/metadata/namespace");
        let get = |field: &str, key: &str| {
            parent
                .get("metadata")
                .and_then(|m| m.get(field))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
        };
        let refuse = |why: String| {
            Error::Ownership(format!(
                "the set's parent ConfigMap {ns}/{name} {why}; refusing to change it"
            ))
        };
        match get("annotations", ANNOTATION_TOOLING) {
            Some(t) if t.starts_with("kgc/") => {}
            Some(t) => return Err(refuse(format!("is managed by {t:?}"))),
            None => return Err(refuse("is not an ApplySet parent written by kgc".into())),
        }
        if get("labels", LABEL_APPLYSET_ID) != Some(set_id) {
            return Err(refuse(format!(
                "does not carry {LABEL_APPLYSET_ID}={set_id}"
            )));
        }
        let mut inv = Inventory::default();
        if let Some(gks) = get("annotations", ANNOTATION_GROUP_KINDS) {
            inv.group_kinds = gks.split(',').filter_map(GroupKind::parse).collect();
        }
        if let Some(nss) = get("annotations", ANNOTATION_NAMESPACES) {
            inv.namespaces = nss
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        inv.namespaces.insert(ns.to_owned());
        Ok(inv)
    }

    /// Both inventories' kinds and namespaces.
    pub fn union(&self, other: &Inventory) -> Inventory {
        Inventory {
            group_kinds: self
                .group_kinds
                .union(&other.group_kinds)
                .cloned()
                .collect(),
            namespaces: self.namespaces.union(&other.namespaces).cloned().collect(),
        }
    }

    /// The parent ConfigMap to server-side apply, in `namespace`.
    pub fn parent(&self, identity: &Identity, namespace: &str, set_id: &str) -> Value {
        let gks: Vec<String> = self.group_kinds.iter().map(GroupKind::to_string).collect();
        let nss: Vec<&str> = self
            .namespaces
            .iter()
            .map(String::as_str)
            .filter(|n| *n != namespace)
            .collect();
        let mut labels = json!({
            LABEL_APPLYSET_ID: set_id,
            LABEL_APP: identity.app,
            LABEL_ENV: identity.env,
        });
        if let Some(t) = &identity.tag {
            labels[LABEL_TAG] = json!(t);
        }
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": identity.parent_name(),
                "namespace": namespace,
                "labels": labels,
                "annotations": {
                    ANNOTATION_TOOLING: TOOLING,
                    ANNOTATION_GROUP_KINDS: gks.join(","),
                    ANNOTATION_NAMESPACES: nss.join(","),
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_round_trips_and_widens() {
        let id = Identity::new("shop", "prod", None).unwrap();
        let inv = Inventory {
            group_kinds: [
                GroupKind::new("", "ConfigMap"),
                GroupKind::new("apps", "Deployment"),
            ]
            .into(),
            namespaces: ["prod".to_owned(), "extra".to_owned()].into(),
        };
        let parent = inv.parent(&id, "prod", "set-1");
        assert_eq!(
            parent["metadata"]["annotations"][ANNOTATION_GROUP_KINDS],
            "ConfigMap,Deployment.apps"
        );
        assert_eq!(
            parent["metadata"]["annotations"][ANNOTATION_NAMESPACES],
            "extra"
        );
        assert_eq!(Inventory::from_parent(&parent, "set-1").unwrap(), inv);
        let other = Inventory {
            group_kinds: [GroupKind::new("", "Secret")].into(),
            namespaces: ["prod".to_owned()].into(),
        };
        let wide = inv.union(&other);
        assert_eq!(wide.group_kinds.len(), 3);
        assert_eq!(wide.namespaces.len(), 2);
    }

    #[test]
    fn foreign_parents_are_refused() {
        let id = Identity::new("shop", "prod", None).unwrap();
        let mut parent = Inventory::default().parent(&id, "prod", "set-1");
        assert!(Inventory::from_parent(&parent, "set-2").is_err());
        parent["metadata"]["annotations"][ANNOTATION_TOOLING] = json!("kubectl/v1.32");
        let err = Inventory::from_parent(&parent, "set-1").unwrap_err();
        assert!(err.to_string().contains("kubectl/v1.32"), "{err}");
    }
}
