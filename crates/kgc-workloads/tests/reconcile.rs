//! The workload controllers' reconcile, each controller run alone against an API server in the
//! test process (`kgc-testcluster`), as upstream tests `pkg/controller/{replicaset,deployment,
//! statefulset,daemon,job,cronjob}` against fakes. Named after upstream's tests where one
//! exists (`replica_set_test.go`'s `TestSyncReplicaSetDeletes` → `sync_replica_set_deletes`).

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota,
};
use kgc_meta::time::{Clock, SignedDuration};
use kgc_testcluster::pods::{self, controller_uid};
use kgc_testcluster::{DEADLINE, InProcess, TestCluster, eventually};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

fn pod_template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}})
}

async fn pods_of(c: &TestCluster, ns: &str, uid: &str) -> Vec<Pod> {
    pods::active(&c.api::<Pod>(ns))
        .await
        .into_iter()
        .filter(|p| controller_uid(p).as_deref() == Some(uid))
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
    let status = json!({"hard": {"pods": "10"}, "used": {"pods": "0"}});
    c.set_status(&c.api::<ResourceQuota>(&ns), "q", status)
        .await;
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
    let mut c = TestCluster::start().await;
    let ns = c.namespace("rs").await;
    let other: ConfigMap = c.create(&ns, json!({"metadata": {"name": "other"}})).await;
    let other_uid = other.metadata.uid.unwrap();
    let mut orphan = pod_template(json!({"app": "web"}));
    orphan["metadata"]["name"] = json!("orphan");
    orphan["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": other_uid}]);
    c.create::<Pod>(&ns, orphan).await;
    // Started once the orphan exists, so the controller's first list holds it: adopting it
    // does not race a creation.
    c.run(kgc_workloads::replicaset::run(c.context()));
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

// Deployments (`pkg/controller/deployment/deployment_controller_test.go`, `sync_test.go`).

fn deployment(name: &str, replicas: i32) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": pod_template(json!({"app": name}))}})
}

/// The ReplicaSets the Deployment with `uid` controls.
async fn replica_sets_of(c: &TestCluster, ns: &str, uid: &str) -> Vec<ReplicaSet> {
    c.list::<ReplicaSet>(ns)
        .await
        .into_iter()
        .filter(|rs| {
            rs.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.uid == uid)
        })
        .collect()
}

/// Upstream `TestSyncDeploymentCreatesReplicaSet`: a new Deployment gets one ReplicaSet at its
/// replica count, its template labelled with the template's hash, which the selector adds.
#[tokio::test]
async fn sync_deployment_creates_replica_set() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::deployment::run(c.context()));
    let ns = c.namespace("deploy").await;
    let d: Deployment = c.create(&ns, deployment("web", 3)).await;
    let uid = d.metadata.uid.unwrap();
    eventually("a ReplicaSet of the Deployment", DEADLINE, || async {
        !replica_sets_of(&c, &ns, &uid).await.is_empty()
    })
    .await;
    let sets = replica_sets_of(&c, &ns, &uid).await;
    assert_eq!(sets.len(), 1);
    let rs = &sets[0];
    assert_eq!(rs.spec.replicas, Some(3));
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    let spec = &rs.spec;
    assert_eq!(
        spec.selector.match_labels.as_ref().unwrap()["pod-template-hash"],
        hash
    );
    let template_labels = spec
        .template
        .as_ref()
        .unwrap()
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .as_ref()
        .unwrap();
    assert_eq!(template_labels["pod-template-hash"], hash);
}

/// Upstream `TestScale` (`sync_test.go`): a Deployment scaled outside a rollout scales its one
/// ReplicaSet.
#[tokio::test]
async fn scale() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::deployment::run(c.context()));
    let ns = c.namespace("deploy").await;
    let d: Deployment = c.create(&ns, deployment("web", 2)).await;
    let uid = d.metadata.uid.unwrap();
    eventually("a ReplicaSet of 2", DEADLINE, || async {
        replica_sets_of(&c, &ns, &uid)
            .await
            .iter()
            .any(|rs| rs.spec.replicas == Some(2))
    })
    .await;
    let scale = json!({"spec": {"replicas": 5}});
    c.api::<Deployment>(&ns)
        .patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .unwrap();
    eventually("the ReplicaSet scaled to 5", DEADLINE, || async {
        let sets = replica_sets_of(&c, &ns, &uid).await;
        sets.len() == 1 && sets[0].spec.replicas == Some(5)
    })
    .await;
}

/// Upstream `rolloutRecreate` (`recreate.go`; `TestOldPodsRunning`): a new template under the
/// Recreate strategy scales the old ReplicaSet to 0 and makes the new one full size only once
/// the old one reports no pods left.
#[tokio::test]
async fn recreate_old_pods_running() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::deployment::run(c.context()));
    let ns = c.namespace("deploy").await;
    let mut d = deployment("web", 3);
    d["spec"]["strategy"] = json!({"type": "Recreate"});
    let d: Deployment = c.create(&ns, d).await;
    let uid = d.metadata.uid.unwrap();
    eventually("the first ReplicaSet", DEADLINE, || async {
        replica_sets_of(&c, &ns, &uid).await.len() == 1
    })
    .await;
    let old = replica_sets_of(&c, &ns, &uid).await.remove(0);
    let old_name = old.metadata.name.unwrap();
    let sets = c.api::<ReplicaSet>(&ns);
    // Its pods run, as the ReplicaSet controller would report.
    c.set_status(&sets, &old_name, json!({"replicas": 3})).await;
    let change = json!({"spec": {"template": {"metadata": {"labels": {"version": "2"}}}}});
    c.api::<Deployment>(&ns)
        .patch("web", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    eventually("the old ReplicaSet scaled to 0", DEADLINE, || async {
        sets.get(&old_name).await.unwrap().spec.replicas == Some(0)
    })
    .await;
    let early: Vec<Option<i32>> = replica_sets_of(&c, &ns, &uid)
        .await
        .into_iter()
        .filter(|rs| rs.metadata.name.as_deref() != Some(old_name.as_str()))
        .map(|rs| rs.spec.replicas)
        .collect();
    assert!(
        early.iter().all(|r| r.unwrap_or(0) == 0),
        "a new ReplicaSet scaled up while the old pods run: {early:?}"
    );
    c.set_status(&sets, &old_name, json!({"replicas": 0})).await;
    eventually("the new ReplicaSet at full size", DEADLINE, || async {
        replica_sets_of(&c, &ns, &uid).await.iter().any(|rs| {
            rs.metadata.name.as_deref() != Some(old_name.as_str()) && rs.spec.replicas == Some(3)
        })
    })
    .await;
}

// StatefulSets (`pkg/controller/statefulset/stateful_set_test.go`).

fn running_and_ready() -> Value {
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
}

/// Upstream `TestStatefulSetControllerCreates`: pods named by ordinal with their claims from
/// `volumeClaimTemplates`, one at a time (OrderedReady): `web-1` is made only once `web-0`
/// runs and is ready.
#[tokio::test]
async fn stateful_set_controller_creates() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::statefulset::run(c.context()));
    let ns = c.namespace("sts").await;
    let sts = json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(json!({"app": "web"})),
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
    let sts: StatefulSet = c.create(&ns, sts).await;
    let uid = sts.metadata.uid.unwrap();
    let pods = c.api::<Pod>(&ns);
    eventually("pod web-0", DEADLINE, || async {
        pods.get_opt("web-0").await.unwrap().is_some()
    })
    .await;
    let web0 = pods.get("web-0").await.unwrap();
    assert_eq!(controller_uid(&web0).as_deref(), Some(uid.as_str()));
    let volumes = web0.spec.unwrap().volumes.unwrap();
    let claim = volumes.iter().find(|v| v.name == "data").unwrap();
    assert_eq!(
        claim.persistent_volume_claim.as_ref().unwrap().claim_name,
        "data-web-0"
    );
    let claims = c.api::<PersistentVolumeClaim>(&ns);
    eventually("claim data-web-0", DEADLINE, || async {
        claims.get_opt("data-web-0").await.unwrap().is_some()
    })
    .await;
    assert!(
        pods.get_opt("web-1").await.unwrap().is_none(),
        "web-1 before web-0 is ready"
    );
    let ready = c.set_status(&pods, "web-0", running_and_ready()).await;
    let ready_at: u64 = ready.metadata.resource_version.unwrap().parse().unwrap();
    eventually("pod web-1", DEADLINE, || async {
        pods.get_opt("web-1").await.unwrap().is_some()
    })
    .await;
    let web1 = pods.get("web-1").await.unwrap();
    let created_at: u64 = web1.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        created_at > ready_at,
        "web-1 ({created_at}) made before web-0 was ready ({ready_at})"
    );
}

/// Upstream `TestStatefulSetControllerDeletes`: scaled down, the highest ordinal goes first.
#[tokio::test]
async fn stateful_set_controller_deletes() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::statefulset::run(c.context()));
    let ns = c.namespace("sts").await;
    let sts = json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "serviceName": "web", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(json!({"app": "web"}))}});
    c.create::<StatefulSet>(&ns, sts).await;
    let pods = c.api::<Pod>(&ns);
    eventually("pods web-0 and web-1", DEADLINE, || async {
        pods.get_opt("web-0").await.unwrap().is_some()
            && pods.get_opt("web-1").await.unwrap().is_some()
    })
    .await;
    for name in ["web-0", "web-1"] {
        c.set_status(&pods, name, running_and_ready()).await;
    }
    let scale = json!({"spec": {"replicas": 1}});
    c.api::<StatefulSet>(&ns)
        .patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .unwrap();
    eventually("web-1 deleted", DEADLINE, || async {
        pods.get_opt("web-1")
            .await
            .unwrap()
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        pods.get("web-0")
            .await
            .is_ok_and(|p| p.metadata.deletion_timestamp.is_none()),
        "web-0 kept"
    );
}

// DaemonSets (`pkg/controller/daemon/daemon_controller_test.go`).

/// The node a daemon pod is pinned to by its required node affinity on `metadata.name`.
fn pinned_node(p: &Pod) -> String {
    let affinity = p.spec.as_ref().unwrap().affinity.as_ref().unwrap();
    let terms = &affinity
        .node_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()
        .node_selector_terms;
    let field = &terms[0].match_fields.as_ref().unwrap()[0];
    assert_eq!(field.key, "metadata.name");
    field.values.as_ref().unwrap()[0].clone()
}

async fn daemon_pods(c: &TestCluster, ns: &str, uid: &str) -> Vec<String> {
    let mut nodes: Vec<String> = pods_of(c, ns, uid).await.iter().map(pinned_node).collect();
    nodes.sort();
    nodes
}

/// Upstream `TestSimpleDaemonSetLaunchesPods`: one pod per node, pinned to it.
#[tokio::test]
async fn simple_daemon_set_launches_pods() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::daemonset::run(c.context()));
    for n in ["n1", "n2", "n3"] {
        c.ready_node(n, json!({})).await;
    }
    let ns = c.namespace("ds").await;
    let ds = json!({"metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": pod_template(json!({"app": "agent"}))}});
    let ds: DaemonSet = c.create(&ns, ds).await;
    let uid = ds.metadata.uid.unwrap();
    eventually("a pod on each of the 3 nodes", DEADLINE, || async {
        daemon_pods(&c, &ns, &uid).await == ["n1", "n2", "n3"]
    })
    .await;
    let api = c.api::<DaemonSet>(&ns);
    eventually("status.desiredNumberScheduled 3", DEADLINE, || async {
        api.get("agent")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.desired_number_scheduled == 3)
    })
    .await;
}

/// Upstream `TestSelectorDaemonLaunchesPods`: only nodes the template's `nodeSelector`
/// selects get a pod, and a node labelled later gets its own.
#[tokio::test]
async fn selector_daemon_launches_pods() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::daemonset::run(c.context()));
    c.ready_node("ssd-1", json!({"disk": "ssd"})).await;
    c.ready_node("hdd-1", json!({"disk": "hdd"})).await;
    let ns = c.namespace("ds").await;
    let mut template = pod_template(json!({"app": "agent"}));
    template["spec"]["nodeSelector"] = json!({"disk": "ssd"});
    let ds = json!({"metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template}});
    let ds: DaemonSet = c.create(&ns, ds).await;
    let uid = ds.metadata.uid.unwrap();
    eventually("a pod on ssd-1 only", DEADLINE, || async {
        daemon_pods(&c, &ns, &uid).await == ["ssd-1"]
    })
    .await;
    c.ready_node("ssd-2", json!({"disk": "ssd"})).await;
    eventually("a pod on the new ssd node", DEADLINE, || async {
        daemon_pods(&c, &ns, &uid).await == ["ssd-1", "ssd-2"]
    })
    .await;
}

/// Upstream `TestTaintedNodeDaemonDoesNotLaunchIntolerantPod`: a node tainted NoSchedule gets
/// no pod of a template that does not tolerate the taint; the untainted one does.
#[tokio::test]
async fn tainted_node_daemon_does_not_launch_intolerant_pod() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::daemonset::run(c.context()));
    c.ready_node("plain", json!({})).await;
    let taint = json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    c.ready_tainted_node("tainted", json!({}), taint).await;
    let ns = c.namespace("ds").await;
    let ds = json!({"metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": pod_template(json!({"app": "agent"}))}});
    let ds: DaemonSet = c.create(&ns, ds).await;
    let uid = ds.metadata.uid.unwrap();
    let api = c.api::<DaemonSet>(&ns);
    // The status counts the nodes judged, so once it says one is wanted both were judged.
    eventually("one node wants the daemon", DEADLINE, || async {
        api.get("agent")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.desired_number_scheduled == 1)
    })
    .await;
    eventually("the pod on the untainted node", DEADLINE, || async {
        daemon_pods(&c, &ns, &uid).await == ["plain"]
    })
    .await;
}

// Jobs (`pkg/controller/job/job_controller_test.go`).

/// Upstream `TestControllerSyncJob`'s "job start" then "correct # of pods" cases: a Job runs
/// `parallelism` pods, each with the tracking finalizer; once they succeed they are counted
/// (the finalizer removed) and the Job is Complete.
#[tokio::test]
async fn controller_sync_job_runs_pods_to_completion() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::job::run(c.context()));
    let ns = c.namespace("job").await;
    let mut template = pod_template(json!({}));
    template["spec"]["restartPolicy"] = json!("Never");
    let job = json!({"metadata": {"name": "pi"},
        "spec": {"completions": 2, "parallelism": 2, "template": template}});
    let job: Job = c.create(&ns, job).await;
    let uid = job.metadata.uid.unwrap();
    eventually("2 pods of the Job", DEADLINE, || async {
        pods_of(&c, &ns, &uid).await.len() == 2
    })
    .await;
    let pods = c.api::<Pod>(&ns);
    for p in pods_of(&c, &ns, &uid).await {
        let finalizers = p.metadata.finalizers.clone().unwrap_or_default();
        assert!(
            finalizers
                .iter()
                .any(|f| f == kgc_workloads::job::TRACKING_FINALIZER),
            "{finalizers:?}"
        );
        c.set_status(
            &pods,
            p.metadata.name.as_deref().unwrap(),
            json!({"phase": "Succeeded"}),
        )
        .await;
    }
    let jobs = c.api::<Job>(&ns);
    eventually("the Job Complete with 2 succeeded", DEADLINE, || async {
        let status = jobs.get("pi").await.unwrap().status.unwrap_or_default();
        status.succeeded == Some(2)
            && status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True")
    })
    .await;
    for p in c.list::<Pod>(&ns).await {
        let finalizers = p.metadata.finalizers.unwrap_or_default();
        assert!(
            !finalizers
                .iter()
                .any(|f| f == kgc_workloads::job::TRACKING_FINALIZER),
            "{finalizers:?}"
        );
    }
}

/// Upstream `TestControllerSyncJob`'s "too many job failures": with `backoffLimit: 0` the first
/// failed pod fails the Job (`FailureTarget`, then `Failed`, reason `BackoffLimitExceeded`), and
/// no pod replaces it.
#[tokio::test]
async fn controller_sync_job_too_many_job_failures() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::job::run(c.context()));
    let ns = c.namespace("job").await;
    let mut template = pod_template(json!({}));
    template["spec"]["restartPolicy"] = json!("Never");
    let job = json!({"metadata": {"name": "once"},
        "spec": {"backoffLimit": 0, "template": template}});
    let job: Job = c.create(&ns, job).await;
    let uid = job.metadata.uid.unwrap();
    eventually("the Job's pod", DEADLINE, || async {
        pods_of(&c, &ns, &uid).await.len() == 1
    })
    .await;
    let pod = pods_of(&c, &ns, &uid).await.remove(0);
    let pods = c.api::<Pod>(&ns);
    c.set_status(
        &pods,
        pod.metadata.name.as_deref().unwrap(),
        json!({"phase": "Failed"}),
    )
    .await;
    let jobs = c.api::<Job>(&ns);
    eventually("the Job Failed", DEADLINE, || async {
        let status = jobs.get("once").await.unwrap().status.unwrap_or_default();
        status.failed == Some(1)
            && status.conditions.iter().flatten().any(|c| {
                c.type_ == "Failed"
                    && c.status == "True"
                    && c.reason.as_deref() == Some("BackoffLimitExceeded")
            })
    })
    .await;
    let owned: Vec<Pod> = c
        .list::<Pod>(&ns)
        .await
        .into_iter()
        .filter(|p| controller_uid(p).as_deref() == Some(uid.as_str()))
        .collect();
    assert_eq!(owned.len(), 1, "no replacement pod");
}

// CronJobs (`pkg/controller/cronjob/cronjob_controllerv2_test.go`).

/// The controller's clock `minutes` ahead of the API server's: a schedule time has passed since
/// a CronJob was created, without waiting for it.
fn ahead(c: &TestCluster, minutes: i64) -> kgc_runtime::Context<InProcess> {
    kgc_runtime::Context {
        clock: Clock::with_offset(SignedDuration::from_mins(minutes)),
        ..c.context()
    }
}

fn cron_job(name: &str, spec: Value) -> Value {
    let mut template = pod_template(json!({}));
    template["spec"]["restartPolicy"] = json!("Never");
    let mut cj = json!({"metadata": {"name": name},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}});
    for (k, v) in spec.as_object().unwrap() {
        cj["spec"][k] = v.clone();
    }
    cj
}

/// Upstream `TestControllerV2SyncCronJob`'s "never ran, is time": a Job for the scheduled
/// minute, controlled by the CronJob, listed active, and `lastScheduleTime` set.
#[tokio::test]
async fn controller_v2_sync_cron_job_never_ran_is_time() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::cronjob::run(ahead(&c, 2)));
    let ns = c.namespace("cj").await;
    let cj: CronJob = c.create(&ns, cron_job("tick", json!({}))).await;
    let uid = cj.metadata.uid.unwrap();
    let api = c.api::<CronJob>(&ns);
    eventually("an active Job and lastScheduleTime", DEADLINE, || async {
        let status = api.get("tick").await.unwrap().status.unwrap_or_default();
        status.last_schedule_time.is_some() && status.active.is_some_and(|a| !a.is_empty())
    })
    .await;
    // The Job of the latest scheduled minute (the test may cross a minute of the controller's
    // clock, and the next minute gets a Job of its own).
    let status = api.get("tick").await.unwrap().status.unwrap();
    let scheduled = status.last_schedule_time.unwrap().0;
    let created = cj.metadata.creation_timestamp.unwrap().0;
    assert!(
        scheduled > created,
        "{scheduled} is a time after the CronJob was made ({created})"
    );
    let name = format!("tick-{}", scheduled.as_second() / 60);
    let active: Vec<String> = status
        .active
        .unwrap()
        .into_iter()
        .filter_map(|r| r.name)
        .collect();
    assert!(active.contains(&name), "{name} in {active:?}");
    let job = c.api::<Job>(&ns).get(&name).await.unwrap();
    let r = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (r.kind.as_str(), r.uid.as_str(), r.controller),
        ("CronJob", uid.as_str(), Some(true))
    );
    let annotations = job.metadata.annotations.as_ref().unwrap();
    let at = &annotations[kgc_workloads::cronjob::SCHEDULED_TIMESTAMP];
    assert_eq!(at.parse::<kgc_meta::time::Timestamp>().unwrap(), scheduled);
}

/// Upstream `TestControllerV2CleanupFinishedJobs`: finished Jobs beyond
/// `successfulJobsHistoryLimit` are deleted, oldest first.
#[tokio::test]
async fn controller_v2_cleanup_finished_jobs() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::cronjob::run(c.context()));
    let ns = c.namespace("cj").await;
    // Suspended: the controller makes no Job of its own, only cleans up.
    let spec = json!({"suspend": true, "successfulJobsHistoryLimit": 1});
    let cj: CronJob = c.create(&ns, cron_job("tick", spec)).await;
    let uid = cj.metadata.uid.unwrap();
    let jobs = c.api::<Job>(&ns);
    for (name, started) in [
        ("tick-1", "2026-01-01T00:01:00Z"),
        ("tick-2", "2026-01-01T00:02:00Z"),
        ("tick-3", "2026-01-01T00:03:00Z"),
    ] {
        let mut template = pod_template(json!({}));
        template["spec"]["restartPolicy"] = json!("Never");
        let job = json!({"metadata": {"name": name, "ownerReferences": [{"apiVersion": "batch/v1",
                "kind": "CronJob", "name": "tick", "uid": uid, "controller": true}]},
            "spec": {"template": template}});
        c.create::<Job>(&ns, job).await;
        let done = json!({"startTime": started, "completionTime": started, "succeeded": 1,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"}]});
        c.set_status(&jobs, name, done).await;
    }
    // The controller wakes for the Jobs' changes.
    eventually("only the newest finished Job kept", DEADLINE, || async {
        let names: Vec<String> = c
            .list::<Job>(&ns)
            .await
            .into_iter()
            .filter(|j| j.metadata.deletion_timestamp.is_none())
            .filter_map(|j| j.metadata.name)
            .collect();
        names == ["tick-3"]
    })
    .await;
}

// ReplicationControllers (`pkg/controller/replication`: the ReplicaSet controller's tests run
// over ReplicationControllers too).

/// Upstream `TestSyncReplicationControllerCreates` (`replication_controller_test.go`, from
/// before the controller became the ReplicaSet controller over a conversion): pods from the
/// template, controlled by the ReplicationController (`v1`), counted in its status.
#[tokio::test]
async fn sync_replication_controller_creates() {
    let mut c = TestCluster::start().await;
    c.run(kgc_workloads::replicationcontroller::run(c.context()));
    let ns = c.namespace("rc").await;
    let rc = json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"app": "web"},
            "template": pod_template(json!({"app": "web"}))}});
    let rc: ReplicationController = c.create(&ns, rc).await;
    let uid = rc.metadata.uid.unwrap();
    eventually(
        "2 pods controlled by the ReplicationController",
        DEADLINE,
        || async { pods_of(&c, &ns, &uid).await.len() == 2 },
    )
    .await;
    let r = &pods_of(&c, &ns, &uid).await[0]
        .metadata
        .owner_references
        .clone()
        .unwrap()[0];
    assert_eq!(
        (r.api_version.as_str(), r.kind.as_str()),
        ("v1", "ReplicationController")
    );
    let api = c.api::<ReplicationController>(&ns);
    eventually("status.replicas 2", DEADLINE, || async {
        api.get("web")
            .await
            .unwrap()
            .status
            .is_some_and(|s| s.replicas == 2)
    })
    .await;
}
