//! The simulated kubelet's pod sync, run alone against an API server in the test process
//! (`kgc-testcluster`), as upstream tests `pkg/kubelet` against a fake runtime: the status a
//! bound pod gets, its phase when its containers exit, and its graceful deletion finished.

use k8s_openapi::api::core::v1::Pod;
use kgc_kubelet::annotations::{EXIT_CODE, RUN_FOR};
use kgc_testcluster::pods::phase;
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use kube::api::DeleteParams;
use serde_json::{Value, json};

/// A cluster running the kubelet of one simulated node `sim-0` (registered here as the node
/// simulator would: annotated, with a pod CIDR and an internal address).
async fn with_kubelet() -> (TestCluster, String) {
    let mut c = TestCluster::start().await;
    c.run(kgc_kubelet::run(
        c.context(),
        kgc_kubelet::Config::default(),
        kgc_kubelet::Metrics::default(),
    ));
    let node = json!({"metadata": {"name": "sim-0", "annotations": {kgc_kubelet::SIMULATED: "true"}},
        "spec": {"podCIDR": "10.244.7.0/24"}});
    c.create_cluster_scoped::<k8s_openapi::api::core::v1::Node>(node)
        .await;
    let status = json!({"conditions": [{"type": "Ready", "status": "True"}],
        "addresses": [{"type": "InternalIP", "address": "172.18.0.7"}]});
    c.set_status(
        &c.all::<k8s_openapi::api::core::v1::Node>(),
        "sim-0",
        status,
    )
    .await;
    let ns = c.namespace("kubelet").await;
    (c, ns)
}

fn bound_pod(name: &str, annotations: Value, restart: &str) -> Value {
    json!({"metadata": {"name": name, "annotations": annotations},
        "spec": {"nodeName": "sim-0", "restartPolicy": restart,
            "containers": [{"name": "c", "image": "registry.example/app:1"}]}})
}

/// Upstream `TestSyncPodsStartPod` with the status manager's `TestNewStatus`: a pod bound to
/// the node runs, ready, with an address from the node's pod CIDR and the node's address as
/// its host's.
#[tokio::test]
async fn sync_pods_start_pod() {
    let (c, ns) = with_kubelet().await;
    c.create::<Pod>(&ns, bound_pod("web", json!({}), "Always"))
        .await;
    let pods = c.api::<Pod>(&ns);
    eventually("the pod Running and Ready", DEADLINE, || async {
        let p = pods.get("web").await.unwrap();
        let ready = p
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True");
        phase(&p) == "Running" && ready
    })
    .await;
    let status = pods.get("web").await.unwrap().status.unwrap();
    assert!(
        status
            .pod_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.244.7.")),
        "{:?}",
        status.pod_ip
    );
    assert_eq!(status.host_ip.as_deref(), Some("172.18.0.7"));
    let containers = status.container_statuses.unwrap();
    assert_eq!(containers.len(), 1);
    assert!(containers[0].ready && containers[0].state.as_ref().unwrap().running.is_some());
}

/// Upstream `TestPodPhaseWithRestartNever` (`kubelet_pods_test.go`): with `restartPolicy:
/// Never` a container that exits 0 makes the pod Succeeded, one that exits non-zero Failed.
#[tokio::test]
async fn pod_phase_with_restart_never() {
    let (c, ns) = with_kubelet().await;
    c.create::<Pod>(&ns, bound_pod("ok", json!({RUN_FOR: "100ms"}), "Never"))
        .await;
    c.create::<Pod>(
        &ns,
        bound_pod("bad", json!({RUN_FOR: "100ms", EXIT_CODE: "3"}), "Never"),
    )
    .await;
    let pods = c.api::<Pod>(&ns);
    eventually("both pods finished", DEADLINE, || async {
        phase(&pods.get("ok").await.unwrap()) == "Succeeded"
            && phase(&pods.get("bad").await.unwrap()) == "Failed"
    })
    .await;
    let bad = pods
        .get("bad")
        .await
        .unwrap()
        .status
        .unwrap()
        .container_statuses
        .unwrap();
    let terminated = bad[0].state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(terminated.exit_code, 3);
}

/// A pod deleted gracefully is removed once its containers have stopped (upstream
/// `status_manager.go` `canBeDeleted` and the final delete with grace period 0).
#[tokio::test]
async fn graceful_deletion_completes() {
    let (c, ns) = with_kubelet().await;
    c.create::<Pod>(&ns, bound_pod("web", json!({}), "Always"))
        .await;
    let pods = c.api::<Pod>(&ns);
    eventually("the pod Running", DEADLINE, || async {
        phase(&pods.get("web").await.unwrap()) == "Running"
    })
    .await;
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("the pod gone", DEADLINE, || async {
        pods.get_opt("web").await.unwrap().is_none()
    })
    .await;
}
