//! Ownership: who a live object belongs to, recorded on the object itself.
//!
//! Every applied object carries `kgc.io/app`, `kgc.io/env` (and `kgc.io/tag` for tagged runs),
//! the KEP-3659 member label `applyset.kubernetes.io/part-of=<set id>`, the annotation
//! `kgc.io/component`, and `kgc.io/owned-by`, which binds the ownership to the object's own
//! group, kind, namespace and name (Flux v1's per-object mark, Argo CD's tracking id): labels
//! copied onto another object by an operator, a controller or `kubectl get -o yaml | kubectl
//! apply` do not carry a matching annotation, so the copy is never a prune candidate
//! (fluxcd/kustomize-controller#192, #315).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::Error;
use crate::gvk::GroupKind;

pub const LABEL_APP: &str = "kgc.io/app";
pub const LABEL_ENV: &str = "kgc.io/env";
pub const LABEL_TAG: &str = "kgc.io/tag";
pub const ANNOTATION_COMPONENT: &str = "kgc.io/component";
pub const ANNOTATION_OWNED_BY: &str = "kgc.io/owned-by";
/// A digest of the object as kgc last applied it: an unchanged re-apply is skipped when it
/// still matches and the live fields still carry the desired values.
pub const ANNOTATION_APPLIED_HASH: &str = "kgc.io/applied-hash";
/// `kgc.io/prune: disabled` on a live object keeps it out of every prune and delete.
pub const ANNOTATION_PRUNE: &str = "kgc.io/prune";
pub const LABEL_PART_OF: &str = "applyset.kubernetes.io/part-of";
pub const LABEL_APPLYSET_ID: &str = "applyset.kubernetes.io/id";
pub const ANNOTATION_TOOLING: &str = "applyset.kubernetes.io/tooling";
pub const ANNOTATION_GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
pub const ANNOTATION_NAMESPACES: &str = "applyset.kubernetes.io/additional-namespaces";
/// The ApplySet tooling value kgc writes and accepts (other tools must not mutate the set).
pub const TOOLING: &str = "kgc/v1";
/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "kgc";

/// The identity of a set: app + environment (+ tag). Never a path, URL or branch, so moving
/// or removing files keeps the ownership (the Flux v1 table's gotcha).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    pub app: String,
    pub env: String,
    pub tag: Option<String>,
}

impl Identity {
    /// Validates the parts as label values that also form a DNS name.
    pub fn new(app: &str, env: &str, tag: Option<&str>) -> Result<Self, Error> {
        for (what, v) in [("app", Some(app)), ("env", Some(env)), ("tag", tag)] {
            let Some(v) = v else { continue };
            let ok = !v.is_empty()
                && v.len() <= 40
                && v.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !v.starts_with('-')
                && !v.ends_with('-');
            if !ok {
                return Err(Error::Invalid(format!(
                    "{what} {v:?} must be 1-40 lowercase letters, digits or '-', starting and ending alphanumeric"
                )));
            }
        }
        Ok(Self {
            app: app.to_owned(),
            env: env.to_owned(),
            tag: tag.map(str::to_owned),
        })
    }

    /// The name of the set's parent (inventory) ConfigMap.
    pub fn parent_name(&self) -> String {
        match &self.tag {
            Some(t) => format!("kgc-{}-{}-{t}", self.app, self.env),
            None => format!("kgc-{}-{}", self.app, self.env),
        }
    }

    /// `app=A,env=E[,tag=T]`, for messages.
    pub fn describe(&self) -> String {
        match &self.tag {
            Some(t) => format!("app={},env={},tag={t}", self.app, self.env),
            None => format!("app={},env={}", self.app, self.env),
        }
    }

    /// The `kgc.io/owned-by` value of the object `gk` `namespace/name` in this set.
    pub fn owned_by(&self, gk: &GroupKind, namespace: &str, name: &str) -> String {
        let tag = self
            .tag
            .as_deref()
            .map(|t| format!(".{t}"))
            .unwrap_or_default();
        format!("{}.{}{tag}:{}:{namespace}/{name}", self.app, self.env, gk)
    }
}

/// The KEP-3659 ApplySet id of a parent: `applyset-` + base64url(sha256(name.namespace.kind.group))
/// + `-v1` (kubectl staging/src/k8s.io/kubectl/pkg/cmd/apply/applyset.go, `ID()`).
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!("applyset-{}-v1", base64url(&digest))
}

/// Unpadded URL-safe base64 (Go's `base64.RawURLEncoding`), the form of label values that
/// other tools derive from digests.
pub(crate) fn base64url(bytes: &[u8]) -> String {
    kgc_meta::encoding::base64(bytes)
        .chars()
        .filter(|c| *c != '=')
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect()
}

/// A hex sha256 of a JSON value (serde_json writes maps in a fixed order).
pub fn digest(v: &Value) -> String {
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds the set's labels and annotations to a desired object (canonical `gk`, effective
/// `namespace`), then the digest of the result. Input that already claims a different owner is
/// rejected instead of being silently relabelled.
pub fn stamp(
    object: &mut Value,
    identity: &Identity,
    set_id: &str,
    gk: &GroupKind,
    namespace: &str,
    component: &str,
) -> Result<(), Error> {
    let name = crate::str_at(object, "/metadata/name").to_owned();
    let mut labels = vec![
        (LABEL_APP, identity.app.clone()),
        (LABEL_ENV, identity.env.clone()),
        (LABEL_PART_OF, set_id.to_owned()),
    ];
    if let Some(t) = &identity.tag {
        labels.push((LABEL_TAG, t.clone()));
    }
    let annotations = [
        (ANNOTATION_COMPONENT, component.to_owned()),
        (ANNOTATION_OWNED_BY, identity.owned_by(gk, namespace, &name)),
    ];
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(Error::Invalid(format!(
            "{gk} {name}: metadata must be an object"
        )));
    };
    for (field, pairs) in [("labels", &labels[..]), ("annotations", &annotations[..])] {
        let map = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(map) = map.as_object_mut() else {
            return Err(Error::Invalid(format!(
                "{gk} {name}: metadata.{field} must be an object"
            )));
        };
        for (k, v) in pairs {
            match map.get(*k).and_then(Value::as_str) {
                Some(old) if old != v && *k != ANNOTATION_COMPONENT => {
                    return Err(Error::Invalid(format!(
                        "{gk} {name}: metadata.{field}.{k} is {old:?} in the source; kgc sets it to {v:?} (remove it from the source)"
                    )));
                }
                _ => {
                    map.insert((*k).to_owned(), Value::String(v.clone()));
                }
            }
        }
        if identity.tag.is_none() && field == "labels" && map.contains_key(LABEL_TAG) {
            return Err(Error::Invalid(format!(
                "{gk} {name}: metadata.labels.{LABEL_TAG} is set in the source of an untagged run"
            )));
        }
    }
    let hash = digest(object);
    if let Some(a) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(ANNOTATION_APPLIED_HASH.to_owned(), Value::String(hash));
    }
    Ok(())
}

/// Who a live object belongs to, seen from the set `identity`/`set_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A member of this set, bound to its own identity.
    Ours,
    /// Carries this set's labels without the matching `kgc.io/owned-by`: a copy.
    Copy,
    /// Another set's member (`app=…,env=…[,tag=…]` or another ApplySet id).
    Other(String),
    /// No set claims it.
    Unowned,
}

fn meta_str<'a>(live: &'a Value, field: &str, key: &str) -> Option<&'a str> {
    live.get("metadata")?.get(field)?.get(key)?.as_str()
}

/// Classifies a live object of canonical kind `gk`.
pub fn owner(live: &Value, gk: &GroupKind, identity: &Identity, set_id: &str) -> Owner {
    let ns = crate::str_at(live, "/metadata/namespace");
    let name = crate::str_at(live, "/metadata/name");
    match meta_str(live, "labels", LABEL_PART_OF) {
        Some(id) if id == set_id => {
            if meta_str(live, "annotations", ANNOTATION_OWNED_BY)
                == Some(identity.owned_by(gk, ns, name).as_str())
            {
                Owner::Ours
            } else {
                Owner::Copy
            }
        }
        Some(other) => {
            let app = meta_str(live, "labels", LABEL_APP);
            let env = meta_str(live, "labels", LABEL_ENV);
            Owner::Other(match (app, env) {
                (Some(a), Some(e)) => match meta_str(live, "labels", LABEL_TAG) {
                    Some(t) => format!("app={a},env={e},tag={t}"),
                    None => format!("app={a},env={e}"),
                },
                _ => format!("ApplySet {other}"),
            })
        }
        None => Owner::Unowned,
    }
}

/// Whether a live object is marked `kgc.io/prune: disabled`.
pub fn prune_disabled(live: &Value) -> bool {
    meta_str(live, "annotations", ANNOTATION_PRUNE) == Some("disabled")
}

/// Whether a live object has an owner reference with `controller: true` (a controller made
/// it; its labels may be copies of its owner's).
pub fn controller_owned(live: &Value) -> bool {
    live.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id() -> Identity {
        Identity::new("shop", "prod", None).unwrap()
    }

    #[test]
    fn applyset_id_has_the_kep_shape() {
        let id = applyset_id("my-set", "test", "Secret", "");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"), "{id}");
        assert!(!id.contains(['+', '/', '=']));
        assert_eq!(id.len(), "applyset-".len() + 43 + 3);
    }

    #[test]
    fn identity_parts_are_validated() {
        assert!(Identity::new("Shop", "prod", None).is_err());
        assert!(Identity::new("shop", "", None).is_err());
        assert!(Identity::new("shop", "prod", Some("-x")).is_err());
        assert_eq!(
            Identity::new("shop", "prod", Some("pr-1"))
                .unwrap()
                .parent_name(),
            "kgc-shop-prod-pr-1"
        );
    }

    #[test]
    fn stamped_objects_are_ours_and_copies_are_not() {
        let gk = GroupKind::new("", "ConfigMap");
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}});
        stamp(&mut obj, &id(), "set-1", &gk, "ns", "web").unwrap();
        assert_eq!(obj["metadata"]["labels"][LABEL_APP], "shop");
        assert_eq!(obj["metadata"]["annotations"][ANNOTATION_COMPONENT], "web");
        assert_eq!(owner(&obj, &gk, &id(), "set-1"), Owner::Ours);
        // The same labels on a renamed copy.
        let mut copy = obj.clone();
        copy["metadata"]["name"] = json!("b");
        assert_eq!(owner(&copy, &gk, &id(), "set-1"), Owner::Copy);
        // Another set.
        assert_eq!(
            owner(&obj, &gk, &id(), "set-2"),
            Owner::Other("app=shop,env=prod".into())
        );
        assert_eq!(
            owner(&json!({"metadata": {"name": "x"}}), &gk, &id(), "set-1"),
            Owner::Unowned
        );
    }

    #[test]
    fn the_digest_covers_the_whole_stamped_object() {
        let gk = GroupKind::new("", "ConfigMap");
        let mut a = json!({"metadata": {"name": "a"}, "data": {"k": "1"}});
        let mut b = json!({"metadata": {"name": "a"}, "data": {"k": "2"}});
        stamp(&mut a, &id(), "s", &gk, "ns", "web").unwrap();
        stamp(&mut b, &id(), "s", &gk, "ns", "web").unwrap();
        assert_ne!(
            a["metadata"]["annotations"][ANNOTATION_APPLIED_HASH],
            b["metadata"]["annotations"][ANNOTATION_APPLIED_HASH]
        );
    }

    #[test]
    fn conflicting_ownership_in_the_source_is_rejected() {
        let gk = GroupKind::new("", "ConfigMap");
        let mut obj = json!({"metadata": {"name": "a", "labels": {LABEL_APP: "other"}}});
        let err = stamp(&mut obj, &id(), "s", &gk, "ns", "web").unwrap_err();
        assert!(err.to_string().contains("kgc.io/app"), "{err}");
        let mut obj = json!({"metadata": {"name": "a", "labels": "x"}});
        assert!(stamp(&mut obj, &id(), "s", &gk, "ns", "web").is_err());
    }

    #[test]
    fn controller_children_and_protection() {
        assert!(controller_owned(
            &json!({"metadata": {"ownerReferences": [{"controller": true}]}})
        ));
        assert!(!controller_owned(
            &json!({"metadata": {"ownerReferences": [{"uid": "u"}]}})
        ));
        assert!(prune_disabled(
            &json!({"metadata": {"annotations": {ANNOTATION_PRUNE: "disabled"}}})
        ));
    }
}
