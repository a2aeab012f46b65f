//! Namespaces: lifecycle admission, the first DELETE that marks a namespace Terminating, and the
//! controller that deletes its content and then finalizes it (kubernetes
//! `pkg/registry/core/namespace/storage/storage.go`,
//! `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`).

use kgc_meta::deletion::deletion_finalizers;
use kgc_meta::status::Cause;
use kgc_meta::{DeleteOptions, GroupResource, ResourceInfo, Status};
use serde_json::{Value, json};

use crate::object::{Meta, str_list};
use crate::{Clock, State};
use kgc_meta::time::format_time;

/// The `spec.finalizers` entry that the namespace controller removes once the namespace is empty.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// Namespaces that exist from the start.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that may never be deleted (NamespaceLifecycle admission).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

pub(crate) fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

/// NamespaceLifecycle admission for creates: the namespace must exist and not be terminating.
pub(crate) fn admit_create(
    st: &State,
    gr: &GroupResource,
    name: &str,
    namespace: &str,
) -> Result<(), Status> {
    match st.get(&namespaces(), "", namespace) {
        None => Err(Status::not_found(&namespaces(), namespace)),
        Some(ns) if ns.deleting => {
            let mut s = Status::forbidden(
                gr,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            );
            s.causes.push(Cause {
                kind: "NamespaceTerminating".into(),
                message: format!("namespace {namespace} is being terminated"),
                field: "metadata.namespace".into(),
            });
            Err(s)
        }
        Some(_) => Ok(()),
    }
}

/// What the namespace-specific part of a DELETE decided.
pub(crate) enum NamespaceDelete {
    /// `spec.finalizers` is empty: continue with the ordinary deletion.
    Proceed,
    /// Keep (and persist) the namespace as it now is: Terminating until its content is gone.
    Keep,
}

/// The namespace registry's DELETE: the first one sets `deletionTimestamp` and phase
/// `Terminating`; the namespace goes only when `spec.finalizers` is empty.
pub(crate) fn prepare_delete(
    ns: &mut Value,
    info: &ResourceInfo,
    opts: &DeleteOptions,
    clock: Clock,
) -> Result<NamespaceDelete, Status> {
    let name = ns.name().to_owned();
    if IMMORTAL.contains(&name.as_str()) {
        return Err(Status::forbidden(
            &namespaces(),
            &name,
            "this namespace may not be deleted",
        ));
    }
    if ns.deletion_timestamp().is_none() {
        ns.set("deletionTimestamp", format_time(clock.now()));
        ns.set("deletionGracePeriodSeconds", 0);
        if !ns["status"].is_object() {
            ns["status"] = json!({});
        }
        ns["status"]["phase"] = json!("Terminating");
    }
    if let Some(next) = deletion_finalizers(info.gc_policy, opts, &ns.finalizers()) {
        ns.set_finalizers(next);
    }
    if str_list(ns.pointer("/spec/finalizers")).is_empty() {
        Ok(NamespaceDelete::Proceed)
    } else {
        Ok(NamespaceDelete::Keep)
    }
}
