//! What tests of the living cluster ask of pods.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

/// The pods not being deleted.
pub async fn active(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default())
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The uid of the pod's controller, if it has one.
pub fn controller_uid(p: &Pod) -> Option<String> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// `status.phase`, empty when unset.
pub fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub fn running(p: &Pod) -> bool {
    phase(p) == "Running"
}
