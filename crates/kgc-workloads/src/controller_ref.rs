//! Upstream's `ControllerRefManager` (`kubernetes/kubernetes pkg/controller/
//! controller_ref_manager.go`): how a controller claims its children. It keeps the children it
//! controls that still match its selector, releases those that stopped matching (removing only
//! its own reference), adopts orphans that match, and never touches a child another controller
//! owns. Neither adoption nor release happens while the controller is being deleted, and an
//! orphan being deleted is not adopted.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kgc_meta::selector::LabelSelector;
use serde_json::{Value, json};

use crate::pods::Pod;
use crate::selector::matches;

/// The owner reference marked `controller` (upstream `metav1.GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// The name of the object's controller if it is a `kind`: the key a child's change queues.
pub fn controller_named(meta: &ObjectMeta, kind: &str) -> Option<String> {
    controller_of(meta)
        .filter(|r| r.kind == kind)
        .map(|r| r.name.clone())
}

/// The controller claiming.
#[derive(Debug, Clone)]
pub struct Owner {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub deleting: bool,
}

impl Owner {
    /// The reference its children carry: `controller` and `blockOwnerDeletion` true
    /// (upstream `metav1.NewControllerRef`).
    pub fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// The strategic merge patch adopting a child whose uid is `child_uid` (the uid in the
    /// patch is a precondition: another object of the same name is left alone).
    pub fn adopt_patch(&self, child_uid: &str) -> Value {
        json!({"metadata": {
            "ownerReferences": [self.controller_ref()],
            "uid": child_uid,
        }})
    }

    /// The strategic merge patch removing only this owner's reference from a child.
    pub fn release_patch(&self, child_uid: &str) -> Value {
        json!({"metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": self.uid}],
            "uid": child_uid,
        }})
    }
}

/// What a claim judges a child by.
pub trait Child {
    fn labels(&self) -> &BTreeMap<String, String>;
    /// The uid of its controller, if it has one.
    fn controller_uid(&self) -> Option<&str>;
    fn deleting(&self) -> bool;
}

impl Child for Pod {
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    fn controller_uid(&self) -> Option<&str> {
        self.controller.as_ref().map(|c| c.uid.as_str())
    }
    fn deleting(&self) -> bool {
        self.deleting
    }
}

/// A cached typed child (a ReplicaSet, a ControllerRevision).
impl<T: kube::Resource> Child for kgc_runtime::informer::Typed<T> {
    fn labels(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.0.meta().labels.as_ref().unwrap_or(&NONE)
    }
    fn controller_uid(&self) -> Option<&str> {
        controller_of(self.0.meta()).map(|r| r.uid.as_str())
    }
    fn deleting(&self) -> bool {
        self.0.meta().deletion_timestamp.is_some()
    }
}

/// What a claim does with one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Ours, and it matches: counted.
    Keep,
    /// An orphan that matches: adopt it, then count it.
    Adopt,
    /// Ours, but it no longer matches: release it.
    Release,
    /// Not ours to count or touch.
    Ignore,
}

/// Upstream `ClaimObject` for one child.
pub fn claim(owner: &Owner, selector: Option<&LabelSelector>, child: &impl Child) -> Claim {
    let matching = matches(selector, child.labels());
    match child.controller_uid() {
        Some(uid) if uid == owner.uid => {
            if matching {
                Claim::Keep
            } else if owner.deleting {
                // Being deleted: release nothing; the GC handles the children.
                Claim::Ignore
            } else {
                Claim::Release
            }
        }
        Some(_) => Claim::Ignore,
        None if owner.deleting || !matching || child.deleting() => Claim::Ignore,
        None => Claim::Adopt,
    }
}

/// Upstream `ClaimObject` over `candidates`, with its writes: the children kept or adopted.
/// Releases and adoptions are strategic merge patches guarded by the child's uid (`id` gives
/// a child's name and uid); `can_adopt` (upstream `RecheckDeletionTimestamp`: a fresh read of
/// the owner) is awaited once, before the first adoption.
pub async fn claim_all<K, T>(
    api: &kube::Api<K>,
    owner: &Owner,
    selector: Option<&LabelSelector>,
    candidates: Vec<T>,
    id: impl Fn(&T) -> (String, String),
    can_adopt: impl std::future::Future<Output = crate::Result<bool>>,
) -> crate::Result<Vec<T>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    T: Child,
{
    let mut can_adopt = Some(can_adopt);
    let mut adopting = false;
    let mut claimed = Vec::new();
    for child in candidates {
        let (name, uid) = id(&child);
        let patch = match claim(owner, selector, &child) {
            Claim::Keep => {
                claimed.push(child);
                continue;
            }
            Claim::Ignore => continue,
            Claim::Release => owner.release_patch(&uid),
            Claim::Adopt => {
                if let Some(check) = can_adopt.take() {
                    adopting = check.await?;
                }
                if !adopting {
                    continue;
                }
                owner.adopt_patch(&uid)
            }
        };
        let adopt = patch["metadata"]["ownerReferences"][0]["controller"] == true;
        let params = kube::api::PatchParams::default();
        match api
            .patch(&name, &params, &kube::api::Patch::Strategic(patch))
            .await
        {
            Ok(_) if adopt => claimed.push(child),
            Ok(_) => {}
            // Gone, or another object of the name: nothing of ours to adopt or release.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(claimed)
}

/// Upstream `RecheckDeletionTimestamp`: whether the owner `name`, read afresh through `api`,
/// is still the one claiming (the same uid) and not being deleted. A cache may be behind a
/// deletion and a re-creation under the same name; an adoption must not be.
pub async fn still_owner<K>(api: &kube::Api<K>, name: &str, owner: &Owner) -> crate::Result<bool>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(api.get_opt(name).await?.is_some_and(|o| {
        o.meta().uid.as_deref() == Some(owner.uid.as_str()) && o.meta().deletion_timestamp.is_none()
    }))
}

#[cfg(test)]
mod tests {
    use kgc_runtime::informer::View;

    use super::*;
    use crate::pods::ControllerRef;

    fn owner(deleting: bool) -> Owner {
        Owner {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "rs-uid".into(),
            deleting,
        }
    }

    fn pod(app: &str, controller: Option<&str>) -> Pod {
        let mut p =
            Pod::view(&json!({"metadata": {"name": "p", "uid": "p-uid", "labels": {"app": app}}}))
                .unwrap();
        p.controller = controller.map(|uid| ControllerRef {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "x".into(),
            uid: uid.into(),
        });
        p
    }

    #[test]
    fn keeps_adopts_releases_and_ignores_as_upstream() {
        let sel = LabelSelector::parse("app=web").unwrap();
        let s = Some(&sel);
        assert_eq!(
            claim(&owner(false), s, &pod("web", Some("rs-uid"))),
            Claim::Keep
        );
        assert_eq!(
            claim(&owner(false), s, &pod("db", Some("rs-uid"))),
            Claim::Release
        );
        assert_eq!(
            claim(&owner(true), s, &pod("db", Some("rs-uid"))),
            Claim::Ignore
        );
        assert_eq!(claim(&owner(false), s, &pod("web", None)), Claim::Adopt);
        assert_eq!(claim(&owner(true), s, &pod("web", None)), Claim::Ignore);
        assert_eq!(
            claim(&owner(false), s, &pod("web", Some("other"))),
            Claim::Ignore
        );
        let mut deleting = pod("web", None);
        deleting.deleting = true;
        assert_eq!(claim(&owner(false), s, &deleting), Claim::Ignore);
        assert_eq!(claim(&owner(false), None, &pod("web", None)), Claim::Ignore);
    }

    #[test]
    fn patches_carry_the_childs_uid() {
        let o = owner(false);
        let adopt = o.adopt_patch("p-uid");
        assert_eq!(adopt["metadata"]["uid"], "p-uid");
        assert_eq!(adopt["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            adopt["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        let release = o.release_patch("p-uid");
        assert_eq!(
            release["metadata"]["ownerReferences"][0]["$patch"],
            "delete"
        );
        assert_eq!(release["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
    }
}
