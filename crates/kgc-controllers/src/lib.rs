//! The cluster's own controllers, which kube-controller-manager and kube-apiserver run and
//! `kgc serve` runs in-process (or `kgc controller` against any cluster), beside the collectors:
//!
//! - [`namespace`]: deletes a terminating namespace's content, reports what remains, and
//!   finalizes it (kubernetes `pkg/controller/namespace`);
//! - [`crd_finalizer`]: deletes a deleted CRD's custom resources, then lets the CRD go
//!   (apiextensions-apiserver `pkg/controller/finalizer/crd_finalizer.go`);
//! - [`pod_termination`]: completes a pod's graceful deletion when its grace period ends, the
//!   final grace-0 DELETE a kubelet sends, for pods on nodes without a simulated kubelet;
//! - [`serviceaccount`]: a `default` ServiceAccount in every active namespace (kubernetes
//!   `pkg/controller/serviceaccount`);
//! - [`root_ca`]: the `kube-root-ca.crt` ConfigMap in every namespace (kubernetes
//!   `pkg/controller/certificates/rootcacertpublisher`);
//! - [`resourcequota`]: every ResourceQuota's `status.hard` and `status.used` (kubernetes
//!   `pkg/controller/resourcequota`).
//!
//! Each runs on kgc-runtime (a shared cache, a work queue) and acts only through
//! [`kgc_client::Cluster`]; the store knows nothing of them.
#![forbid(unsafe_code)]

pub mod crd_finalizer;
pub mod namespace;
pub mod pod_termination;
pub mod resourcequota;
pub mod root_ca;
pub mod serviceaccount;

/// Errors of a controller's sync; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
    /// Content that should be gone is still there and nothing says why (no finalizer, no
    /// grace period): retried with back-off, as upstream does.
    #[error("{0}")]
    Remaining(String),
    /// A typed write through the kube client failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An object read through the kube client did not encode back to JSON.
    #[error("encoding an object: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether a create failed only because the namespace is gone or terminating, which upstream's
/// per-namespace controllers do not retry (the namespace's next change queues it again).
fn namespace_unusable(e: &kube::Error) -> bool {
    let kube::Error::Api(s) = e else {
        return false;
    };
    s.is_not_found()
        || s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
}
