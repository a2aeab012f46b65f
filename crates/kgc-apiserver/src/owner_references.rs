//! The OwnerReferencesPermissionEnforcement admission plugin (kubernetes/kubernetes
//! `plugin/pkg/admission/gc/gc_admission.go`).
//!
//! An owner reference is a lever on the garbage collector: it can get an object deleted (its
//! owner goes) and, with `blockOwnerDeletion: true`, hold up the foreground deletion of the
//! owner. So whoever changes an object's `ownerReferences` must be allowed to delete that object,
//! and whoever makes a reference blocking must be allowed to update the owner's `finalizers`
//! (which is what blocking amounts to). Otherwise a namespace `edit` user could point a ConfigMap
//! at a Namespace or a ResourceQuota they cannot touch and hold its deletion hostage.
//!
//! Upstream leaves the plugin off by default; kgc turns it on (`--disable-admission-plugins
//! OwnerReferencesPermissionEnforcement` turns it off). Only requests that carry a user are
//! checked: the collectors built into `kgc serve` write through the store, not through here.

use std::collections::HashMap;

use kgc_auth::{Attributes, Decision};
use kgc_meta::catalog::split_api_version;
use kgc_meta::gojson::go_quote;
use kgc_meta::{Catalog, GroupResource, ResourceInfo, Status};
use serde_json::Value;

use crate::authn::UserInfo;
use crate::authz::Rbac;
use crate::request::RequestInfo;

/// The plugin's name, as `--disable-admission-plugins` takes it.
pub const PLUGIN: &str = "OwnerReferencesPermissionEnforcement";

impl crate::ApiServer {
    /// Runs the plugin on a create (`old` is `None`) or an update, when it is on and requests
    /// are authorized.
    pub(crate) fn admit_owner_references(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        old: Option<&Value>,
        new: &Value,
    ) -> Result<(), Status> {
        match &self.rbac {
            Some(rbac) if self.owner_references_enforced => {
                admit(rbac, &self.store.catalog(), info, req, old, new)
            }
            _ => Ok(()),
        }
    }
}

/// Checks a create (`old` is `None`) or an update of `info` to `new` by the current user.
fn admit(
    rbac: &Rbac,
    catalog: &Catalog,
    info: &ResourceInfo,
    req: &RequestInfo,
    old: Option<&Value>,
    new: &Value,
) -> Result<(), Status> {
    let Some(user) = crate::authn::current_user() else {
        return Ok(());
    };
    // Upstream's white list: old kubelets corrupt owner references in pod status writes, and
    // the pod status strategy keeps them from changing anyway.
    if info.group.is_empty()
        && info.plural == "pods"
        && req.subresource.as_deref() == Some("status")
    {
        return Ok(());
    }
    let new_refs = owner_references(new);
    let old_refs = old.map(owner_references).unwrap_or_default();
    if old.is_some_and(|_| old_refs == new_refs) || (old.is_none() && new_refs.is_empty()) {
        return Ok(());
    }
    let namespace = req.namespace.clone().unwrap_or_default();
    let name = new["metadata"]["name"].as_str().unwrap_or_default();
    let forbidden = |why: String| {
        let gr = info.group_resource();
        Status::forbidden_by_policy(&gr, name, forbidden_message(&gr, name, &why))
    };
    let delete = Attributes {
        user: (*user).clone(),
        verb: "delete".into(),
        namespace: namespace.clone(),
        api_group: info.group.clone(),
        resource: info.plural.clone(),
        subresource: req.subresource.clone().unwrap_or_default(),
        name: name.to_owned(),
        resource_request: true,
        path: String::new(),
    };
    if let Decision::Deny { reason } = rbac.read().authorize(&delete) {
        return Err(forbidden(format!(
            "cannot set an ownerRef on a resource you can't delete: {reason}, <nil>"
        )));
    }
    for owner in newly_blocking(&old_refs, &new_refs) {
        let finalizers = finalizers_update(catalog, &user, &namespace, owner).map_err(|e| {
            forbidden(format!(
                "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {} Kind {}: {e}",
                str_of(&owner["apiVersion"]),
                str_of(&owner["kind"])
            ))
        })?;
        if let Decision::Deny { reason } = rbac.read().authorize(&finalizers) {
            return Err(forbidden(format!(
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {reason}, <nil>"
            )));
        }
    }
    Ok(())
}

/// apimachinery `NewForbidden`: the resource, the name when there is one, the reason.
fn forbidden_message(gr: &GroupResource, name: &str, why: &str) -> String {
    if name.is_empty() {
        format!("{gr} is forbidden: {why}")
    } else {
        format!("{gr} {} is forbidden: {why}", go_quote(name))
    }
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn owner_references(obj: &Value) -> Vec<Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn blocks(reference: &Value) -> bool {
    reference["blockOwnerDeletion"].as_bool() == Some(true)
}

/// The references of `new` that block and either are new (by uid) or did not block before.
fn newly_blocking<'a>(old: &[Value], new: &'a [Value]) -> Vec<&'a Value> {
    let before: HashMap<&str, &Value> = old.iter().map(|r| (str_of(&r["uid"]), r)).collect();
    new.iter()
        .filter(|r| blocks(r))
        .filter(|r| before.get(str_of(&r["uid"])).is_none_or(|was| !blocks(was)))
        .collect()
}

/// `update` on the owner's `finalizers` subresource: in the dependent's namespace when the
/// owner is namespaced (a reference can only name an owner there), at cluster scope otherwise.
fn finalizers_update(
    catalog: &Catalog,
    user: &UserInfo,
    namespace: &str,
    owner: &Value,
) -> Result<Attributes, String> {
    let api_version = str_of(&owner["apiVersion"]);
    let kind = str_of(&owner["kind"]);
    let no_match = || {
        format!(
            "no matches for kind {} in version {}",
            go_quote(kind),
            go_quote(api_version)
        )
    };
    let (group, version) = split_api_version(api_version).map_err(|_| no_match())?;
    let info = catalog.by_kind(group, version, kind).ok_or_else(no_match)?;
    Ok(Attributes {
        user: user.clone(),
        verb: "update".into(),
        namespace: if info.namespaced() {
            namespace.to_owned()
        } else {
            String::new()
        },
        api_group: info.group.clone(),
        resource: info.plural.clone(),
        subresource: "finalizers".into(),
        name: str_of(&owner["name"]).to_owned(),
        resource_request: true,
        path: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_references_that_start_blocking_count() {
        let r = |uid: &str, block: Option<bool>| {
            let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": uid, "uid": uid});
            if let Some(b) = block {
                v["blockOwnerDeletion"] = json!(b);
            }
            v
        };
        let old = [r("a", Some(true)), r("b", None), r("c", Some(false))];
        let new = [
            r("a", Some(true)),
            r("b", Some(true)),
            r("c", Some(true)),
            r("d", Some(true)),
            r("e", Some(false)),
        ];
        let uids: Vec<&str> = newly_blocking(&old, &new)
            .into_iter()
            .map(|v| str_of(&v["uid"]))
            .collect();
        assert_eq!(uids, ["b", "c", "d"]);
    }

    #[test]
    fn the_owners_finalizers_are_namespaced_as_the_owner_is() {
        let catalog = Catalog::builtin();
        let user = UserInfo::default();
        let ns_owner = json!({"apiVersion": "v1", "kind": "Namespace", "name": "prod"});
        let a = finalizers_update(&catalog, &user, "team", &ns_owner).unwrap();
        assert_eq!(
            (
                a.namespace.as_str(),
                a.resource.as_str(),
                a.subresource.as_str()
            ),
            ("", "namespaces", "finalizers")
        );
        let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "name": "q"});
        let a = finalizers_update(&catalog, &user, "team", &quota).unwrap();
        assert_eq!((a.namespace.as_str(), a.name.as_str()), ("team", "q"));
        let unknown = json!({"apiVersion": "example.com/v1", "kind": "Thing", "name": "t"});
        assert_eq!(
            finalizers_update(&catalog, &user, "team", &unknown).unwrap_err(),
            "no matches for kind \"Thing\" in version \"example.com/v1\""
        );
    }
}
