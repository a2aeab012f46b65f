//! What the Job controller keeps of a pod: what every workload controller keeps
//! ([`Pod`](crate::pods::Pod)), and what Job tracking needs besides — whether the pod still
//! holds the Job's tracking finalizer, its completion index and when it finished
//! (`kubernetes/kubernetes pkg/controller/job/job_controller.go`, `hasJobTrackingFinalizer`,
//! `getCompletionIndex`, `getFinishedTime`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use kgc_runtime::informer::View;
use serde_json::Value;

use crate::controller_ref::Child;
use crate::pods::Pod;

/// The finalizer that keeps a finished pod until its Job has counted it
/// (`batch.JobTrackingFinalizer`).
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The annotation (and label) an Indexed Job's pod carries its index in
/// (`batch.JobCompletionIndexAnnotation`).
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// A pod as the Job controller judges it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPod {
    pub pod: Pod,
    /// It holds [`TRACKING_FINALIZER`]: finished, it has not been counted yet.
    pub tracked: bool,
    /// Its completion index, if it has a valid one.
    pub index: Option<i32>,
    /// When its last container terminated.
    pub finished_at: Option<Timestamp>,
}

impl View for JobPod {
    fn view(obj: &Value) -> Option<Self> {
        let pod = Pod::view(obj)?;
        let m = &obj["metadata"];
        let tracked = m["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == TRACKING_FINALIZER));
        let index = m["annotations"][COMPLETION_INDEX]
            .as_str()
            .and_then(|i| i.parse().ok())
            .filter(|i: &i32| *i >= 0);
        let finished_at = obj["status"]["containerStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                c["state"]["terminated"]["finishedAt"]
                    .as_str()?
                    .parse()
                    .ok()
            })
            .max();
        Some(Self {
            pod,
            tracked,
            index,
            finished_at,
        })
    }
}

impl JobPod {
    pub fn uid(&self) -> &str {
        &self.pod.uid
    }

    pub fn succeeded(&self) -> bool {
        self.pod.phase == "Succeeded"
    }

    /// Upstream `isPodFailed` (no pod failure policy, pods replaced once terminating): failed,
    /// or deleted before it succeeded — a pod deleted while running never reaches `Failed`.
    pub fn failed(&self) -> bool {
        self.pod.phase == "Failed" || (self.pod.deleting && self.pod.phase != "Succeeded")
    }

    /// Being deleted but not finished (upstream `CountTerminatingPods`).
    pub fn terminating(&self) -> bool {
        self.pod.deleting && self.pod.phase != "Succeeded" && self.pod.phase != "Failed"
    }
}

impl Child for JobPod {
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.pod.labels
    }
    fn controller_uid(&self) -> Option<&str> {
        self.pod.controller.as_ref().map(|c| c.uid.as_str())
    }
    fn deleting(&self) -> bool {
        self.pod.deleting
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tracking_index_and_finish() {
        let p = JobPod::view(&json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u",
                         "finalizers": [TRACKING_FINALIZER],
                         "annotations": {COMPLETION_INDEX: "2"}},
            "status": {"phase": "Failed", "containerStatuses": [
                {"state": {"terminated": {"finishedAt": "2026-01-01T00:00:05Z"}}}]},
        }))
        .unwrap();
        assert!(p.tracked && p.failed() && !p.succeeded() && !p.terminating());
        assert_eq!(p.index, Some(2));
        assert_eq!(p.finished_at, "2026-01-01T00:00:05Z".parse().ok());
        let mut deleted = p.clone();
        deleted.pod.phase = "Running".into();
        deleted.pod.deleting = true;
        assert!(deleted.failed() && deleted.terminating());
    }
}
