//! The disruption controller's reconcile, run alone against an API server in the test process
//! (`kgc-testcluster`), as upstream tests `pkg/controller/disruption/disruption_test.go`
//! against fakes: the PodDisruptionBudget status it writes from the pods it selects.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use serde_json::{Value, json};

async fn with_disruption() -> (TestCluster, String) {
    let mut c = TestCluster::start().await;
    c.run(kgc_disruption::run(c.context()));
    let ns = c.namespace("pdb").await;
    (c, ns)
}

/// Pod `name` of `app: web`, with `owner` as its owner references, run and ready as `ready`.
async fn pod(c: &TestCluster, ns: &str, name: &str, owner: Value, ip: &str, ready: bool) {
    let pod = json!({"metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": owner},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "registry.example/app:1"}]}});
    c.create::<Pod>(ns, pod).await;
    c.run_pod(ns, name, ip, ready).await;
}

fn budget(spec: Value) -> Value {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": "web"}});
    json!({"metadata": {"name": "web"}, "spec": spec})
}

async fn status(c: &TestCluster, ns: &str) -> PodDisruptionBudgetStatus {
    let pdb = c.api::<PodDisruptionBudget>(ns).get("web").await.unwrap();
    pdb.status.unwrap_or_default()
}

/// (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed).
fn counts(s: &PodDisruptionBudgetStatus) -> (i32, i32, i32, i32) {
    (
        s.current_healthy.unwrap_or_default(),
        s.desired_healthy.unwrap_or_default(),
        s.expected_pods.unwrap_or_default(),
        s.disruptions_allowed.unwrap_or_default(),
    )
}

/// The `DisruptionAllowed` condition's (status, reason).
fn allowed(s: &PodDisruptionBudgetStatus) -> Option<(String, String)> {
    let c = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionAllowed")?;
    Some((c.status.clone(), c.reason.clone()))
}

/// Upstream `TestUnavailable`: an integer `minAvailable` over the selected pods; a pod that
/// stops being ready takes the allowed disruption away.
#[tokio::test]
async fn unavailable() {
    let (c, ns) = with_disruption().await;
    for (i, name) in ["web-0", "web-1", "web-2"].into_iter().enumerate() {
        pod(&c, &ns, name, json!([]), &format!("10.0.0.{i}"), true).await;
    }
    c.create::<PodDisruptionBudget>(&ns, budget(json!({"minAvailable": 2})))
        .await;
    eventually("one disruption allowed", DEADLINE, || async {
        let s = status(&c, &ns).await;
        counts(&s) == (3, 2, 3, 1) && s.observed_generation == Some(1)
    })
    .await;
    assert_eq!(
        allowed(&status(&c, &ns).await),
        Some(("True".into(), "SufficientPods".into()))
    );
    c.run_pod(&ns, "web-2", "10.0.0.2", false).await;
    eventually("no disruption allowed", DEADLINE, || async {
        counts(&status(&c, &ns).await) == (2, 2, 3, 0)
    })
    .await;
    assert_eq!(
        allowed(&status(&c, &ns).await),
        Some(("False".into(), "InsufficientPods".into()))
    );
}

/// Upstream `TestReplicaSet`: a percentage `minAvailable` counts against the scale of the pods'
/// controller (read through its `scale` subresource), not the pods found.
#[tokio::test]
async fn replica_set() {
    let (c, ns) = with_disruption().await;
    // The ReplicaSet controller is not running: the pods are made here, controlled by it.
    let rs = json!({"metadata": {"name": "web"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}}}});
    let rs: ReplicaSet = c.create(&ns, rs).await;
    let owner = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
        "uid": rs.metadata.uid, "controller": true}]);
    for (i, name) in ["web-0", "web-1", "web-2"].into_iter().enumerate() {
        pod(&c, &ns, name, owner.clone(), &format!("10.0.0.{i}"), true).await;
    }
    c.create::<PodDisruptionBudget>(&ns, budget(json!({"minAvailable": "50%"})))
        .await;
    eventually(
        "expected pods from the ReplicaSet's scale",
        DEADLINE,
        || async { counts(&status(&c, &ns).await) == (3, 2, 4, 1) },
    )
    .await;
}

/// Upstream `TestNakedPod`: a percentage counts against the pods' controllers; a pod with
/// none is left out of the expected pods (and reported as `UnmanagedPods`), so no disruption is
/// allowed.
#[tokio::test]
async fn naked_pod() {
    let (c, ns) = with_disruption().await;
    pod(&c, &ns, "web-0", json!([]), "10.0.0.1", true).await;
    c.create::<PodDisruptionBudget>(&ns, budget(json!({"minAvailable": "28%"})))
        .await;
    eventually(
        "the naked pod healthy but not expected",
        DEADLINE,
        || async {
            let s = status(&c, &ns).await;
            counts(&s) == (1, 0, 0, 0) && s.observed_generation == Some(1)
        },
    )
    .await;
    eventually("an UnmanagedPods event", DEADLINE, || async {
        c.list::<Event>(&ns)
            .await
            .iter()
            .any(|e| e.reason.as_deref() == Some("UnmanagedPods"))
    })
    .await;
}
