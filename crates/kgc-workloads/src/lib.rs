//! The workload controllers of kube-controller-manager that create pods and set their owner
//! references (`kubernetes/kubernetes pkg/controller/replicaset`, …), on kgc-runtime:
//!
//! - [`replicaset`]: ReplicaSets keep their replica count of pods, adopting and releasing
//!   pods by selector;
//! - [`replicationcontroller`]: the ReplicaSet controller over core/v1 ReplicationControllers,
//!   each converted to a ReplicaSet as upstream does;
//! - [`deployment`]: a ReplicaSet per pod template, rolled out by strategy, and old ones
//!   deleted beyond `revisionHistoryLimit`;
//! - [`statefulset`]: pods with stable names and claims from `volumeClaimTemplates`, in
//!   ordinal order, the claims' owner references set by `persistentVolumeClaimRetentionPolicy`;
//! - [`cronjob`]: a Job per schedule time of each CronJob, within its concurrency policy and
//!   starting deadline, and finished Jobs deleted beyond the history limits;
//! - [`job`]: Jobs run their pods to completion, tracked with a finalizer until counted,
//!   replaced after back-off until `backoffLimit`, stopped at `activeDeadlineSeconds`;
//! - [`daemonset`]: a pod on every eligible node, placed by node affinity for the scheduler
//!   to bind, rolled by RollingUpdate or OnDelete over ControllerRevisions;
//! - [`history`]: the ControllerRevisions StatefulSets and DaemonSets record their templates
//!   in;
//! - [`controller_ref`]: upstream's `ControllerRefManager`, which every such controller claims
//!   its children with;
//! - [`expectations`]: upstream's `ControllerExpectations`, so a controller does not act again
//!   on a cache that has not seen its own last writes;
//! - [`pods`]: what these controllers keep of a pod, and how they rank pods;
//! - [`pod_control`], [`slow_start`]: how they create and delete pods, in upstream's slow-start
//!   batches, so that refused creations cost one request per sync, not hundreds.
//!
//! They read through the shared caches and write typed objects through the process's
//! `kube::Client` (the loopback client inside `kgc serve`).
#![forbid(unsafe_code)]

pub mod controller_ref;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod expectations;
pub mod history;
pub mod job;
pub mod pod_control;
pub mod pods;
pub mod replicaset;
pub mod replicationcontroller;
pub mod selector;
pub mod slow_start;
pub mod statefulset;

/// Errors of a workload controller's sync; the key is retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failed request, shown as [`api_message`] words it.
    #[error("{}", api_message(.0))]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
    /// An object the controller cannot act on as it is written (a selector that does not
    /// parse): reported, not retried.
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a failed request says: for an error the API server answered, its Status message, as a
/// Go `StatusError` prints (so a `FailedCreate` Event reads `Error creating: pods "web-" is
/// forbidden: …` and a `ReplicaFailure` condition carries the same words, as upstream's);
/// the client's own error otherwise.
pub fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Writes a controller's whole status with a merge patch: the status is the controller's alone,
/// so a write needs no resourceVersion and never conflicts with the spec or metadata changes
/// that made the controller look again. An object gone meanwhile has no status to write.
pub(crate) async fn patch_status<K, S>(api: &kube::Api<K>, name: &str, status: &S) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    S: serde::Serialize,
{
    let mut status = serde_json::to_value(status).map_err(|e| Error::Invalid(e.to_string()))?;
    // Conditions left out are conditions removed.
    if let Some(s) = status.as_object_mut() {
        s.entry("conditions").or_insert(serde_json::Value::Null);
    }
    let patch = kube::api::Patch::Merge(serde_json::json!({ "status": status }));
    match api
        .patch_status(name, &kube::api::PatchParams::default(), &patch)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
