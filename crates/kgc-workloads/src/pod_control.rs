//! Creating and deleting a controller's pods as upstream's controllers do
//! (`kubernetes/kubernetes pkg/controller/controller_utils.go` `RealPodControl`): creations in
//! [`slow_start`](crate::slow_start) batches, so a template the API refuses fails once per
//! sync, not a thousand times; deletions all at once, each guarded by the pod's uid. Each write
//! is a `SuccessfulCreate`/`SuccessfulDelete` Event or a `FailedCreate`/`FailedDelete` Warning
//! (`Error creating: <the API's message>`); a write that failed or was never tried is no longer
//! expected, so the next sync (after the work queue's back-off) tries again.
//!
//! A create refused because the namespace is terminating is, as upstream, no failure and no
//! Event: every other create would fail alike, and the namespace's deletion takes the
//! controller with it.

use std::hash::Hash;

use futures::future::join_all;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kgc_runtime::events::Recorder;
use kube::Api;
use kube::api::{DeleteParams, PostParams, Preconditions};

use crate::api_message;
use crate::expectations::Expectations;
use crate::slow_start::slow_start_batch;

/// Who creates, and where.
pub struct PodControl<'a, K> {
    pub api: &'a Api<Pod>,
    pub params: &'a PostParams,
    pub expectations: &'a Expectations<K>,
    pub key: &'a K,
    pub recorder: &'a Recorder,
    /// The controller the events are about.
    pub involved: &'a ObjectReference,
}

impl<K: Hash + Eq + Clone> PodControl<'_, K> {
    /// Creates `pods` in slow-start batches (the ReplicaSet, Job and DaemonSet controllers'
    /// `slowStartBatch`, no cap on a batch: the caller caps the total at its burst): how many
    /// were made, and the first failure.
    pub async fn create(&self, pods: &[Pod]) -> (usize, Option<kube::Error>) {
        let outcome = slow_start_batch(pods, usize::MAX, |p| async move {
            match self.api.create(self.params, p).await {
                Ok(created) => {
                    let name = created.metadata.name.unwrap_or_default();
                    self.recorder.normal(
                        self.involved.clone(),
                        "SuccessfulCreate",
                        format!("Created pod: {name}"),
                    );
                    Ok(())
                }
                Err(e) if namespace_terminating(&e) => Ok(()),
                Err(e) => {
                    self.recorder.warning(
                        self.involved.clone(),
                        "FailedCreate",
                        format!("Error creating: {}", api_message(&e)),
                    );
                    Err(e)
                }
            }
        })
        .await;
        // Failed or skipped: the cache will never show these (upstream lowers the
        // expectations by the skipped creations).
        for _ in outcome.succeeded..pods.len() {
            self.expectations.creation_observed(self.key);
        }
        (outcome.succeeded, outcome.error)
    }

    /// Deletes `victims` (name, uid), each guarded by its uid; the last failure. A pod gone
    /// already, or replaced, has no deletion of ours to wait for.
    pub async fn delete(&self, victims: &[(&str, &str)]) -> Option<kube::Error> {
        let results = join_all(victims.iter().map(|(name, uid)| {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some((*uid).to_owned()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            async move { (name, self.api.delete(name, &params).await) }
        }))
        .await;
        let mut error = None;
        for (name, r) in results {
            match r {
                Ok(_) => self.recorder.normal(
                    self.involved.clone(),
                    "SuccessfulDelete",
                    format!("Deleted pod: {name}"),
                ),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {
                    self.expectations.deletion_observed(self.key);
                }
                Err(e) => {
                    self.expectations.deletion_observed(self.key);
                    self.recorder.warning(
                        self.involved.clone(),
                        "FailedDelete",
                        format!("Error deleting: {}", api_message(&e)),
                    );
                    error = Some(e);
                }
            }
        }
        error
    }
}

/// Whether a create was refused only because its namespace is being deleted (the
/// `NamespaceTerminating` cause of the NamespaceLifecycle admission's refusal).
pub fn namespace_terminating(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.details.as_ref().is_some_and(|d| {
        d.causes.iter().any(|c| c.reason == "NamespaceTerminating")
    }))
}
