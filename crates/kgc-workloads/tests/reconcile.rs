//! The workload controllers' reconcile, each controller run alone against an API server in the
//! test process (`kgc-testcluster`), as upstream tests `pkg/controller/{replicaset,deployment,
//! statefulset,daemon,job,cronjob}` against fakes. Named after upstream's tests where one
//! exists (`replica_set_test.go`'s `TestSyncReplicaSetDeletes` → `sync_replica_set_deletes`).

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota};
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

fn pod_template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}})
}

/// A pod that is not being deleted.
fn active(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
}

/// The uid of the controller that `p`'s controller reference names, if any.
fn controller_uid(p: &Pod) -> Option<String> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

async fn pods_of(c: &TestCluster, ns: &str, uid: &str) -> Vec<Pod> {
    c.list::<Pod>(ns)
        .await
        .into_iter()
        .filter(|p| active(p) && controller_uid(p).as_deref() == Some(uid))
        .collect()
}

fn replica_set(name: &str, replicas: i32) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": pod_template(json!({"app": name}))}})
}

async fn with_replica_sets() -> TestCluster {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::replicaset::run(c.context()));
    c
}

/// A ReplicaSet short of replicas creates them from its template, each with a controller
/// reference to it, and reports them in its status.
#[tokio::test]
async fn sync_replica_set_creates() {
    let c = with_replica_sets().await;
    let ns = c.namespace("rs").await;
    let rs: ReplicaSet = c.create(&ns, replica_set("web", 3)).await;
    let uid = rs.metadata.uid.unwrap();
    eventually("3 pods controlled by the ReplicaSet", DEADLINE, || async {
        pods_of(&c, &ns, &uid).await.len() == 3
    })
    .await;
    for p in pods_of(&c, &ns, &uid).await {
        assert_eq!(p.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(p.metadata.labels.unwrap()["app"], "web");
        let r = &p.metadata.owner_references.unwrap()[0];
        assert_eq!((r.kind.as_str(), r.name.as_str()), ("ReplicaSet", "web"));
        assert_eq!(r.block_owner_deletion, Some(true));
    }
    let api = c.api::<ReplicaSet>(&ns);
    eventually("status.replicas 3", DEADLINE, || async {
        let rs = api.get("web").await.unwrap();
        rs.status
            .is_some_and(|s| s.replicas == 3 && s.observed_generation == Some(1))
    })
    .await;
}

/// Upstream `TestSyncReplicaSetDeletes`: more pods than replicas, the surplus is deleted.
#[tokio::test]
async fn sync_replica_set_deletes() {
    let c = with_replica_sets().await;
    let ns = c.namespace("rs").await;
    let rs: ReplicaSet = c.create(&ns, replica_set("web", 3)).await;
    let uid = rs.metadata.uid.unwrap();
    eventually("3 pods", DEADLINE, || async {
        pods_of(&c, &ns, &uid).await.len() == 3
    })
    .await;
    let scale = json!({"spec": {"replicas": 1}});
    c.api::<ReplicaSet>(&ns)
        .patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .unwrap();
    eventually("the surplus pods deleted", DEADLINE, || async {
        pods_of(&c, &ns, &uid).await.len() == 1
    })
    .await;
}

/// Upstream `TestSyncReplicaSetCreateFailures`: a quota admits 10 of 100 pods; the ReplicaSet
/// stops at the refusal (slow-start batches) and reports `ReplicaFailure` / `FailedCreate`
/// with the API server's words.
#[tokio::test]
async fn sync_replica_set_create_failures() {
    let c = with_replica_sets().await;
    let ns = c.namespace("rs").await;
    let quota = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}});
    c.create::<ResourceQuota>(&ns, quota).await;
    // The resource-quota controller's part: the admission plugin judges against status.hard.
    let status = json!({"status": {"hard": {"pods": "10"}, "used": {"pods": "0"}}});
    c.api::<ResourceQuota>(&ns)
        .patch_status("q", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let rs: ReplicaSet = c.create(&ns, replica_set("web", 100)).await;
    let uid = rs.metadata.uid.unwrap();
    let api = c.api::<ReplicaSet>(&ns);
    eventually("a ReplicaFailure condition", DEADLINE, || async {
        let rs = api.get("web").await.unwrap();
        let failure = rs
            .status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .find(|c| c.type_.as_deref() == Some("ReplicaFailure"));
        failure.is_some_and(|f| {
            f.reason.as_deref() == Some("FailedCreate")
                && f.message
                    .as_deref()
                    .is_some_and(|m| m.contains("exceeded quota: q"))
        })
    })
    .await;
    assert_eq!(pods_of(&c, &ns, &uid).await.len(), 10);
}

/// Upstream `TestPatchPodWithOtherOwnerRef`: an orphan the ReplicaSet selects is adopted (a
/// controller reference added beside the owner reference it had) instead of a new pod created.
#[tokio::test]
async fn patch_pod_with_other_owner_ref() {
    let c = with_replica_sets().await;
    let ns = c.namespace("rs").await;
    let other: ConfigMap = c.create(&ns, json!({"metadata": {"name": "other"}})).await;
    let other_uid = other.metadata.uid.unwrap();
    let mut orphan = pod_template(json!({"app": "web"}));
    orphan["metadata"]["name"] = json!("orphan");
    orphan["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": other_uid}]);
    c.create::<Pod>(&ns, orphan).await;
    let rs: ReplicaSet = c.create(&ns, replica_set("web", 1)).await;
    let uid = rs.metadata.uid.unwrap();
    let pods = c.api::<Pod>(&ns);
    eventually("the orphan adopted", DEADLINE, || async {
        controller_uid(&pods.get("orphan").await.unwrap()).as_deref() == Some(uid.as_str())
    })
    .await;
    let refs = pods
        .get("orphan")
        .await
        .unwrap()
        .metadata
        .owner_references
        .unwrap();
    assert_eq!(refs.len(), 2, "{refs:?}");
    assert!(
        refs.iter()
            .any(|r| r.uid == other_uid && r.controller.is_none())
    );
    let api = c.api::<ReplicaSet>(&ns);
    eventually("status.replicas 1", DEADLINE, || async {
        api.get("web")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.replicas == 1)
    })
    .await;
    assert_eq!(
        pods_of(&c, &ns, &uid).await.len(),
        1,
        "no pod created beside the adopted one"
    );
}
