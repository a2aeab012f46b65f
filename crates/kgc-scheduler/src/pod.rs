//! A Pod as the scheduler sees it: what it asks of a node, whether it waits for this scheduler,
//! and where it is bound.

use std::sync::Arc;

use kgc_runtime::informer::View;
use serde_json::Value;

use crate::resources::{PodRequests, pod_requests};
use crate::selector::RequiredAffinity;
use crate::taints::Toleration;

/// The scheduler a pod without `schedulerName` gets (the API's defaulting).
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// What scheduling reads of a pod's spec; a change of it (not of its status) is what makes a
/// pending pod worth another attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub requests: PodRequests,
    pub affinity: RequiredAffinity,
    pub tolerations: Vec<Toleration>,
    /// The PersistentVolumeClaims its volumes name.
    pub claims: Vec<String>,
    /// `preemptionPolicy: Never`: such a pod may not preempt (reported in the message).
    pub never_preempts: bool,
    /// A malformed request: the pod cannot be judged, and this says why.
    pub problem: Option<String>,
}

/// The `PodScheduled` condition as last written, to write it only when it changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Condition {
    pub status: String,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub uid: String,
    pub node_name: String,
    /// Waits for this scheduler: `schedulerName` is the default one, no scheduling gates.
    pub ours: bool,
    /// Being deleted, or finished (Succeeded, Failed): a bound one no longer holds resources.
    pub deleting: bool,
    pub terminal: bool,
    pub spec: Arc<Spec>,
    pub scheduled: Option<Condition>,
}

impl Pod {
    /// Whether the scheduler should place it.
    pub fn pending(&self) -> bool {
        self.node_name.is_empty() && self.ours && !self.deleting && !self.terminal
    }

    /// Whether it holds resources on its node.
    pub fn holds_resources(&self) -> bool {
        !self.node_name.is_empty() && !self.terminal
    }
}

impl View for Pod {
    fn view(obj: &Value) -> Option<Self> {
        let spec = &obj["spec"];
        let status = &obj["status"];
        let (requests, problem) = match pod_requests(spec) {
            Ok(r) => (r, None),
            Err(e) => (PodRequests::default(), Some(format!("spec: {e}"))),
        };
        let claims = spec["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
            .map(str::to_owned)
            .collect();
        let scheduler = spec["schedulerName"].as_str().unwrap_or_default();
        let gated = spec["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty());
        let scheduled = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "PodScheduled")
            .map(|c| {
                let s = |f: &str| c[f].as_str().unwrap_or_default().to_owned();
                Condition {
                    status: s("status"),
                    reason: s("reason"),
                    message: s("message"),
                }
            });
        Some(Pod {
            uid: obj["metadata"]["uid"].as_str()?.to_owned(),
            node_name: spec["nodeName"].as_str().unwrap_or_default().to_owned(),
            ours: (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER) && !gated,
            deleting: !obj["metadata"]["deletionTimestamp"].is_null(),
            terminal: matches!(status["phase"].as_str(), Some("Succeeded" | "Failed")),
            spec: Arc::new(Spec {
                requests,
                affinity: RequiredAffinity::of(spec),
                tolerations: Toleration::list(&spec["tolerations"]),
                claims,
                never_preempts: spec["preemptionPolicy"] == "Never",
                problem,
            }),
            scheduled,
        })
    }
}
