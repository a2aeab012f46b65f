//! Upstream's per-kind validation of built-in objects, worded as kube-apiserver words it.
//!
//! kube-apiserver refuses a Deployment whose selector does not match its template, a Pod
//! without containers or a CronJob whose schedule does not parse — with a 422 whose causes name
//! the field (`spec.template.spec.containers[0].image`) and say what is wrong in a fixed
//! sentence. Clients (kubectl, Helm, Argo CD, kube-rs users) show and match those sentences,
//! and kgc's own controllers rely on never reading back an object upstream would have refused.
//! This crate holds those rules so the API server can apply them before it stores an object.
//!
//! It follows kubernetes/kubernetes at 1.32 with its default feature gates:
//! `pkg/apis/core/validation/validation.go` and `events.go`, `pkg/apis/apps/validation`,
//! `pkg/apis/batch/validation`, `pkg/apis/certificates/validation`,
//! `pkg/apis/storage/validation` and `pkg/apis/coordination/validation`, plus the parts of the
//! registry strategies that decide what validation sees (immutable apps/v1 selectors, the
//! Service cluster-IP bookkeeping, the Job status options). Errors are [`FieldError`]s from
//! `kgc_meta`, so they render exactly as upstream's `field.Error`, in upstream's order.
//!
//! `metadata` is not validated here (the store does that with `kgc_meta::validation`), except
//! for the kind-specific metadata rules upstream keeps in the kind validators (a CronJob name
//! of at most 52 characters, an Indexed Job's pod host names, an Event's namespace).
//!
//! | kind | create | update | subresources |
//! |---|---|---|---|
//! | ConfigMap, Secret | keys, 1 MiB payload, Secret types | `immutable`, Secret `type` | — |
//! | Pod | spec, containers, volumes, ports, env, resources, probes, tolerations, DNS | updatable fields only, tolerations, deadline | `status` |
//! | PodTemplate | template | template | — |
//! | ReplicationController | selector, template, replicas | same | `status` |
//! | apps Deployment, ReplicaSet | selector, template, strategy, limits | immutable selector | `status` |
//! | apps StatefulSet | policies, strategy, retention policy, selector | only mutable fields change | `status` |
//! | apps DaemonSet | selector, template, update strategy | immutable selector | `status` |
//! | batch Job | counts, selector (generated or manual), modes, failure and success policies | immutable fields, elastic indexed jobs | `status` |
//! | batch CronJob | schedule (robfig/cron), time zone, policies, job template | TZ-in-schedule rules | — |
//! | Service | ports, types, cluster IPs, traffic policies, affinity | cluster IPs | `status` |
//! | Namespace | finalizer names | — | `status`, `finalize` |
//! | Node | taints, pod CIDRs, resources | pod CIDRs, provider ID | — |
//! | PersistentVolume | capacity, access modes, one source, reclaim policy | immutable source | — |
//! | PersistentVolumeClaim | access modes, storage request, class | spec fixed but resources | — |
//! | storage StorageClass | provisioner, parameters, policies | immutable fields | — |
//! | coordination Lease | durations | same | — |
//! | Event, events.k8s.io Event | namespaces, reporting fields | events.k8s.io immutables | — |
//! | certificates CertificateSigningRequest | PEM request, signer, usages, expiry | conditions, certificate | `status`, `approval` |
//!
//! ServiceAccounts have no rules beyond metadata upstream. RBAC kinds are validated in
//! `kgc-auth`. Any other kind (and any other subresource) yields no errors.
//!
//! Two renderings differ from upstream by necessity: a "may not change" error on a Pod, a
//! PersistentVolume or a PersistentVolumeClaim ends with upstream's `cmp.Diff` of internal Go
//! structs, which is rendered here as a diff of the changed JSON fields (the first line, which
//! clients match, is upstream's); and values upstream prints as internal Go structs (such as a
//! whole pod template) are printed with their JSON field names.
#![forbid(unsafe_code)]

use kgc_meta::FieldError;
use serde_json::Value;

mod config;
mod container;
mod cron;
mod cronjob;
mod csr;
mod daemonset;
mod deployment;
mod diff;
mod event;
mod field;
mod job;
mod json;
mod json_syntax;
mod labels;
mod lease;
mod namespace;
mod net;
mod node;
mod pod;
mod quantity;
mod replica_set;
mod resources;
mod service;
mod statefulset;
mod storage;
mod taint;
#[cfg(test)]
mod testutil;
mod volume;
mod workload;

/// The errors upstream's validation finds in `obj`, a built-in object of `group`/`kind` (core
/// is `""`), in upstream's order; empty when it is valid or the kind is not covered.
///
/// `old` is the stored object on an update (`None` on create) and `subresource` the
/// subresource written (`Some("status")`, `Some("approval")`, `Some("finalize")`, ...; `None`
/// for the object itself). `obj` should have been decoded and defaulted
/// (`kgc_meta::defaults::apply`) and, where upstream's registry prepares the object before
/// validating it (a Job's generated selector, allocated Service IPs), prepared likewise.
/// Values of unexpected JSON types read as Go's zero value; nothing here panics.
pub fn validate(
    group: &str,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<FieldError> {
    let mut errs = field::Errors::default();
    let e = &mut errs;
    let main = subresource.is_none();
    match (group, kind) {
        ("", "ConfigMap") if main => config::config_map(obj, old, e),
        ("", "Secret") if main => config::secret(obj, old, e),
        ("", "Pod") => pod::pod(obj, old, subresource, e),
        ("", "PodTemplate") if main => pod::pod_template(obj, e),
        ("", "ReplicationController") => {
            replica_set::replication_controller(obj, old, subresource, e)
        }
        ("", "Service") => service::service(obj, old, subresource, e),
        ("", "Namespace") => namespace::namespace(obj, old, subresource, e),
        ("", "Node") if main || subresource == Some("status") => node::node(obj, old, e),
        ("", "PersistentVolume") => storage::persistent_volume(obj, old, subresource, e),
        ("", "PersistentVolumeClaim") => storage::persistent_volume_claim(obj, old, subresource, e),
        ("", "Event") if main => event::event(obj, old, false, e),
        ("events.k8s.io", "Event") if main => event::event(obj, old, true, e),
        ("apps", "Deployment") => deployment::deployment(obj, old, subresource, e),
        ("apps", "ReplicaSet") => replica_set::replica_set(obj, old, subresource, e),
        ("apps", "StatefulSet") => statefulset::stateful_set(obj, old, subresource, e),
        ("apps", "DaemonSet") => daemonset::daemon_set(obj, old, subresource, e),
        ("batch", "Job") => job::job(obj, old, subresource, e),
        ("batch", "CronJob") => cronjob::cron_job(obj, old, subresource, e),
        ("storage.k8s.io", "StorageClass") if main => storage::storage_class(obj, old, e),
        ("coordination.k8s.io", "Lease") if main => lease::lease(obj, e),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            csr::certificate_signing_request(obj, old, subresource, e);
        }
        _ => {}
    }
    errs.into_vec()
}
