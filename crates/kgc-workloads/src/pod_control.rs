//! Creating and deleting a controller's pods as upstream's controllers do
//! (`kubernetes/kubernetes pkg/controller/controller_utils.go` `RealPodControl`, and
//! `replica_set.go` `slowStartBatch`, used by the ReplicaSet, Job and DaemonSet controllers
//! alike): creations in batches of 1, 2, 4, … made at once, stopping after a batch with a
//! failure, so a template the API refuses fails once, not a thousand times; deletions all at
//! once, each guarded by the pod's uid. Each write is a `SuccessfulCreate`/`SuccessfulDelete`
//! Event or a `FailedCreate`/`FailedDelete` Warning; a write that failed or was never tried is
//! no longer expected.

use std::hash::Hash;

use futures::future::join_all;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kgc_controllers::events::Recorder;
use kube::Api;
use kube::api::{DeleteParams, PostParams, Preconditions};

use crate::expectations::Expectations;

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
    /// Creates `pods` in slow-start batches: how many were made, and the first failure.
    pub async fn create(&self, pods: &[Pod]) -> (usize, Option<kube::Error>) {
        let (mut done, mut batch, mut made) = (0, 1, 0);
        while done < pods.len() {
            let size = batch.min(pods.len() - done);
            let results = join_all(
                pods[done..done + size]
                    .iter()
                    .map(|p| self.api.create(self.params, p)),
            )
            .await;
            done += size;
            let mut error = None;
            for r in results {
                match r {
                    Ok(created) => {
                        made += 1;
                        let name = created.metadata.name.unwrap_or_default();
                        self.recorder.normal(
                            self.involved.clone(),
                            "SuccessfulCreate",
                            format!("Created pod: {name}"),
                        );
                    }
                    Err(e) => {
                        self.expectations.creation_observed(self.key);
                        self.recorder.warning(
                            self.involved.clone(),
                            "FailedCreate",
                            format!("Error creating: {e}"),
                        );
                        error.get_or_insert(e);
                    }
                }
            }
            if error.is_some() {
                for _ in done..pods.len() {
                    self.expectations.creation_observed(self.key);
                }
                return (made, error);
            }
            batch *= 2;
        }
        (made, None)
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
                        format!("Error deleting: {e}"),
                    );
                    error = Some(e);
                }
            }
        }
        error
    }
}
