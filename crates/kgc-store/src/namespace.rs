//! Namespaces: lifecycle admission, the first DELETE that marks a namespace Terminating, and the
//! controller that deletes its content and then finalizes it (kubernetes
//! `pkg/registry/core/namespace/storage/storage.go`,
//! `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`; apiserver-semantics.md §5.2).

use std::collections::BTreeMap;

use kgc_meta::deletion::deletion_finalizers;
use kgc_meta::status::Cause;
use kgc_meta::{DeleteOptions, GroupResource, Reason, ResourceInfo, Status};
use serde_json::{Value, json};

use crate::object::{Meta, str_list};
use crate::read::ListOptions;
use crate::{Clock, State, Store};
use kgc_meta::time::format_time;

/// The `spec.finalizers` entry that the namespace controller removes once the namespace is empty.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";

/// Namespaces that exist from the start.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that may never be deleted (NamespaceLifecycle admission).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

fn namespaces() -> GroupResource {
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

impl Store {
    /// Runs the namespace controller until the store closes: deletes the content of every
    /// Terminating namespace (background propagation, honouring finalizers), reports what
    /// remains in the namespace's conditions, and removes the `kubernetes` finalizer once it is
    /// empty.
    pub async fn run_namespace_controller(self) {
        let store = self.clone();
        self.run_terminating(namespaces(), async move |name: String, uid: String| {
            store.finalize_namespace(&name, &uid).await
        })
        .await;
    }

    /// One pass over a Terminating namespace.
    async fn finalize_namespace(&self, name: &str, uid: &str) -> crate::Result<()> {
        let resources: Vec<_> = self
            .catalog()
            .resources()
            .filter(|r| r.namespaced() && r.supports("delete") && r.supports("list"))
            .cloned()
            .collect();
        let list = ListOptions {
            namespace: Some(name.to_owned()),
            ..ListOptions::default()
        };
        let background = DeleteOptions {
            propagation_policy: Some(kgc_meta::PropagationPolicy::Background),
            ..DeleteOptions::default()
        };
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for info in &resources {
            let gr = info.group_resource();
            for o in self.list(&gr, &list)?.items {
                if !o.deleting {
                    let opts = DeleteOptions {
                        preconditions: kgc_meta::Preconditions {
                            uid: Some(o.uid.clone()),
                            resource_version: None,
                        },
                        ..background.clone()
                    };
                    match self.delete(info, name, &o.name, &opts).await {
                        Ok(d) if d.gone => continue,
                        Ok(_) => {}
                        Err(crate::Error::Api(s))
                            if s.is(Reason::NotFound) || s.is(Reason::Conflict) =>
                        {
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                if let Some(o) = self.get(&gr, name, &o.name) {
                    *remaining.entry(gr.to_string()).or_default() += 1;
                    for f in o.value().finalizers() {
                        *finalizers.entry(f).or_default() += 1;
                    }
                }
            }
        }
        let info = self
            .catalog()
            .get("", "v1", "namespaces")
            .cloned()
            .expect("namespaces are built in");
        let uid = uid.to_owned();
        if remaining.is_empty() {
            let result = self
                .update(&info, "", name, Some("finalize"), false, |mut ns| {
                    if ns.uid() != uid {
                        return Err(Status::conflict(
                            &namespaces(),
                            "",
                            "namespace was recreated",
                        ));
                    }
                    let fins: Vec<String> = str_list(ns.pointer("/spec/finalizers"))
                        .into_iter()
                        .filter(|f| f != FINALIZER_KUBERNETES)
                        .collect();
                    ns["spec"]["finalizers"] = Value::from(fins);
                    Ok(ns)
                })
                .await;
            return match result {
                Err(crate::Error::Api(s)) if s.is(Reason::NotFound) || s.is(Reason::Conflict) => {
                    Ok(())
                }
                other => other.map(|_| ()),
            };
        }
        let content = remaining
            .iter()
            .map(|(r, n)| format!("{r} has {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ");
        let held = finalizers
            .iter()
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ");
        let now = format_time(self.clock().now());
        let result = self
            .update(&info, "", name, Some("status"), false, |mut ns| {
                let mut conditions: Vec<Value> = ns["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                set_condition(
                    &mut conditions,
                    "NamespaceContentRemaining",
                    "SomeResourcesRemain",
                    &format!("Some resources are remaining: {content}"),
                    &now,
                );
                if held.is_empty() {
                    conditions.retain(|c| c["type"] != "NamespaceFinalizersRemaining");
                } else {
                    set_condition(
                        &mut conditions,
                        "NamespaceFinalizersRemaining",
                        "SomeFinalizersRemain",
                        &format!("Some content in the namespace has finalizers remaining: {held}"),
                        &now,
                    );
                }
                ns["status"]["conditions"] = Value::from(conditions);
                Ok(ns)
            })
            .await;
        match result {
            Err(crate::Error::Api(s)) if s.is(Reason::NotFound) => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

/// Sets a condition, keeping its transition time when only the time would change.
fn set_condition(conditions: &mut Vec<Value>, kind: &str, reason: &str, message: &str, now: &str) {
    if let Some(c) = conditions.iter_mut().find(|c| c["type"] == kind) {
        if c["message"] != message || c["status"] != "True" {
            *c = json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now});
        }
    } else {
        conditions.push(json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now}));
    }
}
