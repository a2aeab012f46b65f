//! The ReplicationController controller (`kubernetes/kubernetes pkg/controller/replication/
//! replication_controller.go`): upstream's ReplicaSet controller run over core/v1
//! ReplicationControllers, each seen as the ReplicaSet it converts to (`conversion.go`). The
//! conversion is this module's whole job; everything else is [`replicaset`](crate::replicaset)'s.
//!
//! A ReplicationController's selector is a plain label map, which the API server defaults from
//! the template's labels (as do its labels: `SetDefaults_ReplicationController`), so the
//! converted selector is that map as `matchLabels`.

use k8s_openapi::api::apps::v1::{
    ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus,
};
use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kgc_client::Cluster;
use kgc_runtime::Context;

use crate::replicaset::{Kind, run_for};

/// The name `--controllers` knows it by (kube-controller-manager's).
pub const NAME: &str = "replicationcontroller";

impl Kind for ReplicationController {
    const NAME: &'static str = NAME;
    const COMPONENT: &'static str = "replication-controller";
    const FIELD_MANAGER: &'static str = "kgc-replication-controller";

    /// Upstream `Convert_v1_ReplicationController_To_apps_ReplicaSet`.
    fn as_replica_set(&self) -> ReplicaSet {
        let spec = self.spec.clone().unwrap_or_default();
        ReplicaSet {
            metadata: self.metadata.clone(),
            spec: ReplicaSetSpec {
                replicas: spec.replicas,
                min_ready_seconds: spec.min_ready_seconds,
                selector: LabelSelector {
                    match_labels: spec.selector,
                    match_expressions: None,
                },
                template: spec.template,
            },
            status: self.status.clone().map(|s| ReplicaSetStatus {
                replicas: s.replicas,
                fully_labeled_replicas: s.fully_labeled_replicas,
                ready_replicas: s.ready_replicas,
                available_replicas: s.available_replicas,
                observed_generation: s.observed_generation,
                conditions: s.conditions.map(|c| c.into_iter().map(condition).collect()),
                terminating_replicas: None,
            }),
        }
    }
}

fn condition(c: ReplicationControllerCondition) -> ReplicaSetCondition {
    ReplicaSetCondition {
        type_: Some(c.type_),
        status: Some(c.status),
        reason: c.reason,
        message: c.message,
        last_transition_time: c.last_transition_time,
    }
}

/// Runs the controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    run_for::<ReplicationController, C>(ctx).await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn converts_the_selector_map_and_the_status() {
        let rc: ReplicationController = serde_json::from_value(json!({
            "metadata": {"name": "rc", "namespace": "ns", "uid": "u"},
            "spec": {"replicas": 3, "selector": {"app": "web"},
                     "template": {"metadata": {"labels": {"app": "web"}}}},
            "status": {"replicas": 2, "readyReplicas": 1, "conditions": [
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"}]},
        }))
        .unwrap();
        let rs = rc.as_replica_set();
        assert_eq!(rs.spec.replicas, Some(3));
        assert_eq!(
            serde_json::to_value(&rs.spec.selector).unwrap(),
            json!({"matchLabels": {"app": "web"}})
        );
        let status = rs.status.unwrap();
        assert_eq!((status.replicas, status.ready_replicas), (2, Some(1)));
        let c = &status.conditions.unwrap()[0];
        assert_eq!(c.type_.as_deref(), Some("ReplicaFailure"));
        assert_eq!(c.reason.as_deref(), Some("FailedCreate"));
        assert_eq!(rs.metadata.uid.as_deref(), Some("u"));
    }
}
