//! Upstream's garbage-collector e2e specs (`test/e2e/apimachinery/garbage_collector.go`,
//! `SIGDescribe("Garbage collector")`; numbered E1–E11 below), against a spawned living
//! `kgc serve` through kube-rs.
//!
//! As upstream's e2e suite runs against a whole cluster, these run against a living one: the
//! ReplicationController, Deployment, ReplicaSet, CronJob and Job controllers create the
//! children, the scheduler binds the pods to the simulated node and its kubelet runs them, and
//! the collector (built in, or `kgc controller` with `KGC_GC_VIA_CONTROLLER`) cleans up beside
//! them. Before deleting an owner whose children must be orphaned, the specs wait until the
//! collector has observed the children (upstream's `GraphHasUID` wait; kubernetes#26120 is the
//! race it avoids).
//!
//! The framework namespace is a fresh `gc-*` namespace per spec (one server per spec); the
//! cluster has its one simulated node, so `estimateMaximumPods(10, 100)` is 55. Deadlines are
//! upstream's (including `gcInformerResyncRetryTimeout`); polls run faster than upstream's
//! where no single check depends on the interval. The 30 s "see if the garbage collector
//! mistakenly deletes" sleeps are 2 s: kgc's collector acts within milliseconds.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kgc_testsupport::*;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, Preconditions, PropagationPolicy,
};
use kube::{Api, Client};
use serde_json::{Value, json};

/// upstream `gcInformerResyncRetryTimeout`.
const GC_INFORMER_RESYNC_RETRY_TIMEOUT: Duration = Duration::from_secs(60);
/// upstream `replicaSyncTimeout`.
const REPLICA_SYNC_TIMEOUT: Duration = Duration::from_secs(120);
/// The "wait for 30 seconds to see if the garbage collector mistakenly deletes" sleeps.
const MISTAKE_WINDOW: Duration = Duration::from_secs(2);
/// How often the faster polls run.
const FAST: Duration = Duration::from_millis(100);

struct Framework {
    _s: Server,
    c: Client,
    ns: String,
}

impl Framework {
    /// `framework.NewDefaultFramework("gc")`: a living server (discovery re-synced every
    /// second) and a fresh namespace.
    async fn new() -> Self {
        let s = Server::start_gc_living(&["--in-memory", "--gc-resync", "1s"]).await;
        let c = s.client();
        let ns = fresh_namespace(&c, "gc").await;
        Framework { _s: s, c, ns }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + k8s_openapi::serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        Api::namespaced(self.c.clone(), &self.ns)
    }
}

fn name_of<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().expect("a name")
}

async fn wait_observed(c: &Client, uids: &[String]) {
    let ok = poll(FAST, Duration::from_secs(60), true, || async {
        for u in uids {
            if !graph_observed(c, u).await {
                return false;
            }
        }
        true
    })
    .await;
    assert!(ok, "the collector did not observe the dependents");
}

/// `getBackgroundOptions` / `getForegroundOptions` / `getOrphanOptions` with
/// `metav1.NewUIDPreconditions(uid)`.
fn options(policy: PropagationPolicy, uid: Option<&str>) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(policy),
        preconditions: uid.map(|u| Preconditions {
            uid: Some(u.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}

static LABEL_COUNT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// upstream `getUniqLabel`.
fn get_uniq_label(key: &str, value: &str) -> Value {
    let count = LABEL_COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    json!({ format!("{key}-{count:05}"): format!("{value}-{count:05}") })
}

/// upstream `getPodTemplateSpec`.
fn pod_template_spec(labels: &Value) -> Value {
    json!({
        "metadata": {"labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "nginx", "image": "registry.k8s.io/e2e-test-images/nginx:1.14-4"}]
        }
    })
}

/// upstream `newOwnerRC`.
fn new_owner_rc(name: &str, replicas: i32, labels: &Value) -> ReplicationController {
    typed(json!({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": labels, "template": pod_template_spec(labels)}
    }))
}

/// upstream `newGCPod`.
fn new_gc_pod(name: &str) -> Pod {
    typed(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "nginx", "image": "registry.k8s.io/e2e-test-images/nginx:1.14-4"}]
        }
    }))
}

/// The uids of the pods of `owner` (its controller reference names its uid).
async fn controlled_pods(f: &Framework, owner_uid: &str) -> Vec<String> {
    f.api::<Pod>()
        .list(&ListParams::default())
        .await
        .expect("listing pods")
        .items
        .iter()
        .filter(|p| kgc_testsupport::pods::controller_uid(p).as_deref() == Some(owner_uid))
        .map(uid_of)
        .collect()
}

/// Waits until `n` pods controlled by `owner_uid` exist (upstream's "wait for rc to create
/// pods"); their uids.
async fn wait_for_controlled_pods(f: &Framework, owner_uid: &str, n: usize) -> Vec<String> {
    let ok = poll(FAST, REPLICA_SYNC_TIMEOUT, false, || async {
        controlled_pods(f, owner_uid).await.len() == n
    })
    .await;
    assert!(ok, "failed to wait for {n} pods of {owner_uid}");
    controlled_pods(f, owner_uid).await
}

/// Waits until the ReplicationController controller has made the RC's pods; their uids.
async fn wait_for_rc_pods(f: &Framework, rc: &ReplicationController) -> Vec<String> {
    let replicas = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    wait_for_controlled_pods(f, &uid_of(rc), replicas as usize).await
}

/// upstream `waitForReplicas`: `status.replicas == spec.replicas`.
async fn wait_for_replicas(f: &Framework, rc: &ReplicationController) {
    let rcs: Api<ReplicationController> = f.api();
    let name = name_of(rc);
    let ok = poll(FAST, REPLICA_SYNC_TIMEOUT, true, || async {
        let rc = rcs.get(&name).await.expect("getting the RC");
        rc.status.map(|s| s.replicas) == rc.spec.and_then(|s| s.replicas)
    })
    .await;
    assert!(
        ok,
        "failed to wait for the rc.Status.Replicas to reach rc.Spec.Replicas"
    );
}

/// upstream `estimateMaximumPods`.
async fn estimate_maximum_pods(c: &Client, min: i32, max: i32) -> i32 {
    let nodes: Api<Node> = Api::all(c.clone());
    let mut available = 0i64;
    for node in nodes
        .list(&ListParams::default())
        .await
        .expect("listing nodes")
        .items
    {
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let schedulable = !node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        if !ready || !schedulable {
            continue;
        }
        let pods = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("pods"))
            .and_then(|q| q.0.parse::<i64>().ok());
        // best guess per node, since default maxPerCore is 10
        available += pods.unwrap_or(10);
    }
    // avoid creating exactly max pods; bound the top and bottom
    ((available as f64 * 0.5) as i32).clamp(min, max)
}

/// upstream `verifyRemainingObjects`.
async fn verify_remaining_objects(f: &Framework, objects: &[(&str, usize)]) -> bool {
    let mut ret = true;
    for (object, num) in objects {
        let lp = ListParams::default();
        let got = match *object {
            "Pods" => f.api::<Pod>().list(&lp).await.unwrap().items.len(),
            "Deployments" => f.api::<Deployment>().list(&lp).await.unwrap().items.len(),
            "ReplicaSets" => f.api::<ReplicaSet>().list(&lp).await.unwrap().items.len(),
            "ReplicationControllers" => f
                .api::<ReplicationController>()
                .list(&lp)
                .await
                .unwrap()
                .items
                .len(),
            "CronJobs" => f.api::<CronJob>().list(&lp).await.unwrap().items.len(),
            "Jobs" => f.api::<Job>().list(&lp).await.unwrap().items.len(),
            other => panic!("object {other} is not supported"),
        };
        if got != *num {
            ret = false;
        }
    }
    ret
}

async fn wait_remaining(
    f: &Framework,
    interval: Duration,
    timeout: Duration,
    objects: &[(&str, usize)],
) {
    let ok = poll(interval, timeout, false, || {
        verify_remaining_objects(f, objects)
    })
    .await;
    if !ok {
        let pods: Vec<String> = f
            .api::<Pod>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(name_of)
            .collect();
        panic!("failed to wait for {objects:?}; remaining pods are {pods:?}");
    }
}

/// E1 [Conformance] Garbage collector should delete pods created by rc when not orphaning.
#[tokio::test]
async fn should_delete_pods_created_by_rc_when_not_orphaning() {
    let f = Framework::new().await;
    let rc_client: Api<ReplicationController> = f.api();
    let pod_client: Api<Pod> = f.api();
    let rc_name = "simpletest.rc";
    let uniq_labels = get_uniq_label("gctest", "delete_pods");
    // create the rc
    let rc = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc_name, 2, &uniq_labels),
        )
        .await
        .expect("Failed to create replication controller");
    wait_for_rc_pods(&f, &rc).await;
    // wait for rc to create some pods (deliberately not waiting for stasis)
    let some = poll(FAST, Duration::from_secs(30), false, || async {
        !pod_client
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    assert!(some, "failed to wait for the rc to create some pods");
    // delete the rc
    rc_client
        .delete(
            rc_name,
            &options(PropagationPolicy::Background, Some(&uid_of(&rc))),
        )
        .await
        .expect("failed to delete the rc");
    // wait for all pods to be garbage collected
    wait_remaining(
        &f,
        FAST,
        Duration::from_secs(60) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        &[("ReplicationControllers", 0), ("Pods", 0)],
    )
    .await;
}

/// E2 [Conformance] Garbage collector should orphan pods created by rc if delete options say so.
#[tokio::test]
async fn should_orphan_pods_created_by_rc_if_delete_options_say_so() {
    let f = Framework::new().await;
    let rc_client: Api<ReplicationController> = f.api();
    let pod_client: Api<Pod> = f.api();
    let rc_name = "simpletest.rc";
    let uniq_labels = get_uniq_label("gctest", "orphan_pods");
    let replicas = estimate_maximum_pods(&f.c, 10, 100).await;
    let rc = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc_name, replicas, &uniq_labels),
        )
        .await
        .expect("Failed to create replication controller");
    // wait for rc to create pods
    let pods = wait_for_rc_pods(&f, &rc).await;
    wait_for_replicas(&f, &rc).await;
    wait_observed(&f.c, &pods).await;
    // delete the rc
    rc_client
        .delete(
            rc_name,
            &options(PropagationPolicy::Orphan, Some(&uid_of(&rc))),
        )
        .await
        .expect("failed to delete the rc");
    // wait for the rc to be deleted
    let gone = poll(
        FAST,
        Duration::from_secs(120) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        false,
        || async {
            rc_client
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        },
    )
    .await;
    assert!(gone, "the orphaning RC was not deleted");
    // wait for 30 seconds to see if the garbage collector mistakenly deletes the pods
    tokio::time::sleep(MISTAKE_WINDOW).await;
    let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(pods.len(), replicas as usize, "expect {replicas} pods");
}

/// E3 Garbage collector should orphan pods created by rc if deleteOptions.OrphanDependents is
/// nil (the RC v1 default policy is orphan; kubernetes#65427).
#[tokio::test]
async fn should_orphan_pods_created_by_rc_if_delete_options_orphan_dependents_is_nil() {
    let f = Framework::new().await;
    let rc_client: Api<ReplicationController> = f.api();
    let pod_client: Api<Pod> = f.api();
    let rc_name = "simpletest.rc";
    let uniq_labels = get_uniq_label("gctest", "orphan_pods_nil_option");
    let rc = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc_name, 2, &uniq_labels),
        )
        .await
        .expect("Failed to create replication controller");
    // wait for rc to create pods
    let pods = wait_for_rc_pods(&f, &rc).await;
    wait_for_replicas(&f, &rc).await;
    wait_observed(&f.c, &pods).await;
    // delete the rc with only a uid precondition
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid_of(&rc)),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    rc_client
        .delete(rc_name, &dp)
        .await
        .expect("failed to delete the rc");
    // wait for 30 seconds to see if the garbage collector mistakenly deletes the pods
    tokio::time::sleep(MISTAKE_WINDOW).await;
    let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(pods.len(), 2, "expect 2 pods");
}

/// The Deployment of E4/E5 and what the Deployment and ReplicaSet controllers make of it:
/// one ReplicaSet and its 2 pods. Returns (deployment, replica set, pod uids).
async fn deployment_with_children(
    f: &Framework,
    labels: &Value,
) -> (Deployment, ReplicaSet, Vec<String>) {
    let deploy_client: Api<Deployment> = f.api();
    let rs_client: Api<ReplicaSet> = f.api();
    let deployment_name = "simpletest.deployment";
    // upstream `e2edeployment.NewDeployment(name, 2, labels, "nginx", nginx, RollingUpdate)`
    let deployment: Deployment = typed(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": deployment_name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "nginx", "image": "registry.k8s.io/e2e-test-images/nginx:1.14-4"}]
                }
            },
        }
    }));
    let deployment = deploy_client
        .create(&PostParams::default(), &deployment)
        .await
        .expect("Failed to create deployment");
    let owned_by = |rs: &ReplicaSet, uid: &str| {
        rs.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.controller == Some(true) && r.uid == uid)
    };
    let uid = uid_of(&deployment);
    let ours = || async {
        let sets = rs_client.list(&ListParams::default()).await.unwrap().items;
        sets.into_iter().find(|rs| owned_by(rs, &uid))
    };
    let ok = poll(FAST, REPLICA_SYNC_TIMEOUT, false, || async {
        ours().await.is_some()
    })
    .await;
    assert!(ok, "the Deployment made no ReplicaSet");
    let rs = ours().await.expect("a ReplicaSet");
    let pods = wait_for_controlled_pods(f, &uid_of(&rs), 2).await;
    (deployment, rs, pods)
}

/// E4 [Conformance] Garbage collector should delete RS created by deployment when not orphaning.
#[tokio::test]
async fn should_delete_rs_created_by_deployment_when_not_orphaning() {
    let f = Framework::new().await;
    let deploy_client: Api<Deployment> = f.api();
    let rs_client: Api<ReplicaSet> = f.api();
    let uniq_labels = get_uniq_label("gctest", "delete_rs");
    let (deployment, _, _) = deployment_with_children(&f, &uniq_labels).await;
    // wait for the Deployment to create new ReplicaSet
    let some = poll(
        Duration::from_millis(500),
        Duration::from_secs(60),
        false,
        || async {
            !rs_client
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        },
    )
    .await;
    assert!(
        some,
        "Failed to wait for the Deployment to create some ReplicaSet"
    );
    // delete the deployment
    deploy_client
        .delete(
            &name_of(&deployment),
            &options(PropagationPolicy::Background, Some(&uid_of(&deployment))),
        )
        .await
        .expect("failed to delete the deployment");
    // wait for all rs to be garbage collected
    wait_remaining(
        &f,
        Duration::from_millis(500),
        Duration::from_secs(60) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        &[("Deployments", 0), ("ReplicaSets", 0), ("Pods", 0)],
    )
    .await;
}

/// E5 [Conformance] Garbage collector should orphan RS created by deployment when
/// deleteOptions.PropagationPolicy is Orphan.
#[tokio::test]
async fn should_orphan_rs_created_by_deployment_when_delete_options_propagation_policy_is_orphan() {
    let f = Framework::new().await;
    let deploy_client: Api<Deployment> = f.api();
    let rs_client: Api<ReplicaSet> = f.api();
    let uniq_labels = get_uniq_label("gctest", "orphan_rs");
    let (deployment, rs, _) = deployment_with_children(&f, &uniq_labels).await;
    // wait for the Deployment to create new ReplicaSet
    let some = poll(
        Duration::from_millis(500),
        Duration::from_secs(60),
        false,
        || async {
            !rs_client
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        },
    )
    .await;
    assert!(
        some,
        "Failed to wait for the Deployment to create some ReplicaSet"
    );
    // wait for replica set to become stable
    let stable = poll(
        Duration::from_millis(100),
        Duration::from_secs(60),
        false,
        || async {
            let rs = rs_client.get(&name_of(&rs)).await.unwrap();
            let status = rs.status.clone().unwrap_or_default();
            status.observed_generation.unwrap_or(0) >= rs.metadata.generation.unwrap_or(0)
                && Some(status.replicas) == rs.spec.replicas
        },
    )
    .await;
    assert!(stable, "failed to wait for replicaset to become stable");
    wait_observed(&f.c, &[uid_of(&rs)]).await;
    // delete the deployment
    deploy_client
        .delete(
            &name_of(&deployment),
            &options(PropagationPolicy::Orphan, Some(&uid_of(&deployment))),
        )
        .await
        .expect("failed to delete the deployment");
    // wait for deployment deletion to see if the garbage collector mistakenly deletes the rs
    wait_remaining(
        &f,
        Duration::from_millis(500),
        Duration::from_secs(60) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        &[("Deployments", 0)],
    )
    .await;
    assert!(
        verify_remaining_objects(&f, &[("Deployments", 0), ("ReplicaSets", 1), ("Pods", 2)]).await,
        "expected 0 Deployments, 1 ReplicaSet and 2 Pods"
    );
    for rs in rs_client.list(&ListParams::default()).await.unwrap().items {
        let controller = rs
            .metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .find(|r| r.controller == Some(true));
        assert!(
            controller.is_none(),
            "rs {:?} has a non-nil controller ref {controller:?}",
            rs.metadata.name
        );
    }
}

/// E6 [Conformance] Garbage collector should keep the rc around until all its pods are deleted
/// if the deleteOptions says so.
#[tokio::test]
async fn should_keep_the_rc_around_until_all_its_pods_are_deleted_if_the_delete_options_says_so() {
    let f = Framework::new().await;
    let rc_client: Api<ReplicationController> = f.api();
    let pod_client: Api<Pod> = f.api();
    let rc_name = "simpletest.rc";
    let uniq_labels = get_uniq_label("gctest", "delete_pods_foreground");
    let replicas = estimate_maximum_pods(&f.c, 10, 100).await;
    let rc = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc_name, replicas, &uniq_labels),
        )
        .await
        .expect("Failed to create replication controller");
    // wait for rc to create pods
    wait_for_rc_pods(&f, &rc).await;
    wait_for_replicas(&f, &rc).await;
    // delete the rc
    rc_client
        .delete(
            rc_name,
            &options(PropagationPolicy::Foreground, Some(&uid_of(&rc))),
        )
        .await
        .expect("failed to delete the rc");
    // wait for the rc to be deleted
    let gone = poll(
        Duration::from_secs(1),
        Duration::from_secs(30) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        false,
        || async { is_not_found(rc_client.get(rc_name).await) },
    )
    .await;
    assert!(gone, "failed to delete the rc");
    // There shouldn't be any pods
    let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
    assert!(
        pods.is_empty(),
        "expected no pods, got {:?}",
        pods.iter().map(name_of).collect::<Vec<_>>()
    );
}

/// E7 [Conformance] Garbage collector should not delete dependents that have both valid owner
/// and owner that's waiting for dependents to be deleted.
#[tokio::test]
async fn should_not_delete_dependents_that_have_both_valid_owner_and_owner_thats_waiting_for_dependents_to_be_deleted()
 {
    let f = Framework::new().await;
    let rc_client: Api<ReplicationController> = f.api();
    let pod_client: Api<Pod> = f.api();
    let rc1_name = "simpletest-rc-to-be-deleted";
    let replicas = estimate_maximum_pods(&f.c, 10, 100);
    let replicas = replicas.await;
    let half_replicas = (replicas / 2) as usize;
    let uniq_labels_deleted = get_uniq_label("gctest_d", "valid_and_pending_owners_d");
    let rc1 = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc1_name, replicas, &uniq_labels_deleted),
        )
        .await
        .expect("Failed to create replication controller");
    let rc2_name = "simpletest-rc-to-stay";
    let uniq_labels_stay = get_uniq_label("gctest_s", "valid_and_pending_owners_s");
    let rc2 = rc_client
        .create(
            &PostParams::default(),
            &new_owner_rc(rc2_name, 0, &uniq_labels_stay),
        )
        .await
        .expect("Failed to create replication controller");
    // wait for rc1 to be stable
    wait_for_rc_pods(&f, &rc1).await;
    wait_for_rc_pods(&f, &rc2).await;
    wait_for_replicas(&f, &rc1).await;

    // set half of pods created by rc simpletest-rc-to-be-deleted to have rc
    // simpletest-rc-to-stay as owner as well
    let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
    let patch = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": rc2_name, "uid": uid_of(&rc2)}
    ]}});
    let mut patched = Vec::new();
    for pod in pods.iter().take(half_replicas) {
        let p = pod_client
            .patch(
                &name_of(pod),
                &PatchParams::default(),
                &Patch::Strategic(patch.clone()),
            )
            .await
            .expect("failed to apply a strategic merge patch");
        assert_eq!(
            p.metadata.owner_references.as_ref().map(Vec::len),
            Some(2),
            "the merge adds a second owner"
        );
        patched.push(uid_of(&p));
    }

    // delete the rc simpletest-rc-to-be-deleted
    rc_client
        .delete(
            rc1_name,
            &options(PropagationPolicy::Foreground, Some(&uid_of(&rc1))),
        )
        .await
        .expect("failed to delete the rc");
    // wait for the rc to be deleted
    let gone = poll(FAST, Duration::from_secs(90), false, || async {
        is_not_found(rc_client.get(rc1_name).await)
    })
    .await;
    assert!(gone, "failed to delete rc {rc1_name}");
    // half of the pods should still exist,
    let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(pods.len(), half_replicas, "expected {half_replicas} pods");
    for pod in &pods {
        assert!(
            patched.contains(&uid_of(pod)),
            "an unpatched pod survived: {:?}",
            pod.metadata.name
        );
        assert!(
            pod.metadata.deletion_timestamp.is_none(),
            "expected pod DeletionTimestamp to be nil, got {:?}",
            pod.metadata
        );
        // they should only have 1 ownerReference left
        let refs = pod.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(
            refs.len(),
            1,
            "expected pod to only have 1 owner, got {refs:?}"
        );
        assert_eq!(refs[0].name, rc2_name);
    }
}

/// E8 [Conformance] Garbage collector should not be blocked by dependency circle.
#[tokio::test]
async fn should_not_be_blocked_by_dependency_circle() {
    let f = Framework::new().await;
    let pod_client: Api<Pod> = f.api();
    let pp = PostParams::default();
    pod_client
        .create(&pp, &new_gc_pod("pod1"))
        .await
        .expect("failed to create pod pod1");
    let pod2 = pod_client
        .create(&pp, &new_gc_pod("pod2"))
        .await
        .expect("failed to create pod pod2");
    let pod3 = pod_client
        .create(&pp, &new_gc_pod("pod3"))
        .await
        .expect("failed to create pod pod3");
    // create circular dependency
    let add_ref_patch = |name: &str, uid: &str| {
        Patch::Strategic(json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}
        ]}}))
    };
    let params = PatchParams::default();
    let pod1 = pod_client
        .patch("pod1", &params, &add_ref_patch("pod3", &uid_of(&pod3)))
        .await
        .expect("patching pod1");
    pod_client
        .patch("pod2", &params, &add_ref_patch("pod1", &uid_of(&pod1)))
        .await
        .expect("patching pod2");
    pod_client
        .patch("pod3", &params, &add_ref_patch("pod2", &uid_of(&pod2)))
        .await
        .expect("patching pod3");
    // delete one pod, should result in the deletion of all pods
    pod_client
        .delete(
            "pod1",
            &options(PropagationPolicy::Foreground, Some(&uid_of(&pod1))),
        )
        .await
        .expect("failed to delete pod pod1");
    let ok = poll(
        FAST,
        Duration::from_secs(90) + GC_INFORMER_RESYNC_RETRY_TIMEOUT,
        false,
        || async {
            pod_client
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        },
    )
    .await;
    if !ok {
        let pods = pod_client.list(&ListParams::default()).await.unwrap().items;
        panic!(
            "failed to wait for all pods to be deleted: {}",
            serde_json::to_string(&pods).unwrap()
        );
    }
}

/// A random name suffix (upstream `names.SimpleNameGenerator`).
fn random_suffix() -> String {
    unique("x").replace('-', "")
}

/// A cluster-scoped random CRD (upstream `NewRandomNameV1CustomResourceDefinition(ClusterScoped)`
/// and `CreateNewV1CustomResourceDefinition`), served once this returns.
async fn create_cluster_scoped_crd(c: &Client) -> (String, ApiResource) {
    let name = format!("foo{}", random_suffix());
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let crd_name = format!("{name}s.mygroup.example.com");
    let crd: CustomResourceDefinition = typed(json!({
        "metadata": {"name": crd_name},
        "spec": {
            "group": "mygroup.example.com",
            "versions": [{
                "name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }],
            "names": {"plural": format!("{name}s"), "singular": name, "kind": name, "listKind": format!("{name}List")},
            "scope": "Cluster",
        }
    }));
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("failed to create CustomResourceDefinition");
    let gvk = GroupVersionKind::gvk("mygroup.example.com", "v1beta1", &name);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &format!("{name}s"));
    let api: Api<DynamicObject> = Api::all_with(c.clone(), &resource);
    eventually(
        "the custom resource to be served",
        Duration::from_secs(30),
        || {
            let api = api.clone();
            async move { api.list(&ListParams::default()).await.is_ok() }
        },
    )
    .await;
    (crd_name, resource)
}

fn cr(resource: &ApiResource, name: &str, owner: Option<&DynamicObject>) -> DynamicObject {
    let mut meta = json!({"name": name});
    if let Some(o) = owner {
        meta["ownerReferences"] = json!([{
            "uid": o.metadata.uid, "apiVersion": resource.api_version,
            "kind": resource.kind, "name": o.metadata.name,
        }]);
    }
    typed(json!({"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta}))
}

/// E9 Garbage collector should support cascading deletion of custom resources.
#[tokio::test]
async fn should_support_cascading_deletion_of_custom_resources() {
    let f = Framework::new().await;
    let (_crd, resource) = create_cluster_scoped_crd(&f.c).await;
    let resource_client: Api<DynamicObject> = Api::all_with(f.c.clone(), &resource);
    let pp = PostParams::default();
    // Create a custom owner resource.
    let owner_name = format!("owner{}", random_suffix());
    let persisted_owner = resource_client
        .create(&pp, &cr(&resource, &owner_name, None))
        .await
        .expect("failed to create owner resource");
    // Create a custom dependent resource.
    let dependent_name = format!("dependent{}", random_suffix());
    resource_client
        .create(&pp, &cr(&resource, &dependent_name, Some(&persisted_owner)))
        .await
        .expect("failed to create dependent resource");
    // Delete the owner.
    resource_client
        .delete(&owner_name, &options(PropagationPolicy::Background, None))
        .await
        .expect("failed to delete owner resource");
    // Create and delete an unrelated instance of the custom resource in foreground deletion
    // mode, so we have a signal when GC is aware of this custom resource type
    let canary_name = format!("canary{}", random_suffix());
    resource_client
        .create(&pp, &cr(&resource, &canary_name, None))
        .await
        .expect("failed to create canary resource");
    resource_client
        .delete(&canary_name, &options(PropagationPolicy::Foreground, None))
        .await
        .expect("failed to delete canary resource");
    // Wait for the canary foreground finalization to complete, which means GC is aware of our
    // new custom resource type (as upstream wrote it, this polls the dependent's name)
    let ok = poll(
        Duration::from_secs(5),
        Duration::from_secs(180),
        true,
        || async { is_not_found(resource_client.get(&dependent_name).await) },
    )
    .await;
    assert!(
        ok,
        "failed waiting for canary resource {canary_name:?} to be deleted"
    );
    // Ensure the dependent is deleted.
    let ok = poll(
        Duration::from_secs(5),
        Duration::from_secs(60),
        false,
        || async { is_not_found(resource_client.get(&dependent_name).await) },
    )
    .await;
    assert!(
        ok,
        "failed waiting for dependent resource {dependent_name:?} to be deleted"
    );
    // Ensure the owner is deleted.
    assert!(
        is_not_found(resource_client.get(&owner_name).await),
        "expected owner resource {owner_name:?} to be deleted"
    );
    // Not asserted upstream: the canary's foreground deletion completed too.
    eventually(
        "the canary to be deleted",
        Duration::from_secs(60),
        || async { is_not_found(resource_client.get(&canary_name).await) },
    )
    .await;
}

/// E10 Garbage collector should support orphan deletion of custom resources.
#[tokio::test]
async fn should_support_orphan_deletion_of_custom_resources() {
    let f = Framework::new().await;
    let (_crd, resource) = create_cluster_scoped_crd(&f.c).await;
    let resource_client: Api<DynamicObject> = Api::all_with(f.c.clone(), &resource);
    let pp = PostParams::default();
    // Create a custom owner resource.
    let owner_name = format!("owner{}", random_suffix());
    let persisted_owner = resource_client
        .create(&pp, &cr(&resource, &owner_name, None))
        .await
        .expect("failed to create owner resource");
    // Create a custom dependent resource.
    let dependent_name = format!("dependent{}", random_suffix());
    let dependent = resource_client
        .create(&pp, &cr(&resource, &dependent_name, Some(&persisted_owner)))
        .await
        .expect("failed to create dependent resource");
    // The dependent must be in the graph before the orphaning starts (see the module comment;
    // upstream's dependent is created by the test too, but its GC needs seconds to discover
    // the new type, which orders the events for it).
    wait_observed(&f.c, &[dependent.metadata.uid.clone().unwrap()]).await;
    // Delete the owner and orphan the dependent.
    resource_client
        .delete(&owner_name, &options(PropagationPolicy::Orphan, None))
        .await
        .expect("failed to delete owner resource");
    // wait for the owner to be deleted
    let ok = poll(
        Duration::from_secs(5),
        Duration::from_secs(120),
        false,
        || async { is_not_found(resource_client.get(&owner_name).await) },
    )
    .await;
    assert!(ok, "timeout in waiting for the owner to be deleted");
    // Wait 30s and ensure the dependent is not deleted (upstream: 30 s + 1 min).
    consistently(
        "the orphaned dependent to exist",
        MISTAKE_WINDOW,
        || async { resource_client.get(&dependent_name).await.is_ok() },
    )
    .await;
}

/// E11 Garbage collector should delete jobs and pods created by cronjob.
#[tokio::test]
async fn should_delete_jobs_and_pods_created_by_cronjob() {
    let f = Framework::new().await;
    let cron_client: Api<CronJob> = f.api();
    let job_client: Api<Job> = f.api();
    // Create the cronjob (upstream `newCronJob("simple", "*/1 * * * ?")`)
    let pod_spec = json!({
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "command": ["sleep", "300"]}]
    });
    let cron_job: CronJob = typed(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "simple"},
        "spec": {
            "schedule": "*/1 * * * ?",
            "jobTemplate": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": pod_spec}}}
        }
    }));
    cron_client
        .create(&PostParams::default(), &cron_job)
        .await
        .expect("failed to create cronjob");
    // Wait for the CronJob to create new Job
    let ok = poll(
        Duration::from_millis(500),
        Duration::from_secs(120),
        false,
        || async {
            !job_client
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        },
    )
    .await;
    assert!(ok, "Failed to wait for the CronJob to create some Jobs");
    // Delete the cronjob
    cron_client
        .delete("simple", &options(PropagationPolicy::Background, None))
        .await
        .expect("Failed to delete the CronJob");
    // Verify if cronjob does not leave jobs nor pods behind
    wait_remaining(
        &f,
        Duration::from_millis(500),
        Duration::from_secs(60),
        &[("CronJobs", 0), ("Jobs", 0), ("Pods", 0)],
    )
    .await;
}
