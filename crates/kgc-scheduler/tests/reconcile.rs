//! The scheduler's scheduling and binding cycles, run alone against an API server in the test
//! process (`kgc-testcluster`), as upstream tests `pkg/scheduler/schedule_one_test.go` against
//! fakes: pods bound through `pods/binding`, or told why not.

use k8s_openapi::api::core::v1::Pod;
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use serde_json::{Value, json};

async fn with_scheduler() -> (TestCluster, String) {
    let mut c = TestCluster::start().await;
    c.run(kgc_scheduler::run(c.context()));
    let ns = c.namespace("sched").await;
    (c, ns)
}

fn pod(name: &str, spec: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
            "resources": {"requests": {"cpu": "1"}}}]}});
    for (k, v) in spec.as_object().unwrap() {
        pod["spec"][k] = v.clone();
    }
    pod
}

fn node_of(p: &Pod) -> Option<String> {
    p.spec.as_ref()?.node_name.clone()
}

/// The `PodScheduled` condition's (status, reason, message).
fn scheduled(p: &Pod) -> Option<(String, String, String)> {
    let c = p
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled")?;
    Some((c.status.clone(), c.reason.clone()?, c.message.clone()?))
}

/// Upstream `TestSchedulerScheduleOne`'s "bind assumed pod scheduled": a pending pod is bound to
/// the node its node selector selects.
#[tokio::test]
async fn scheduler_schedule_one() {
    let (c, ns) = with_scheduler().await;
    c.ready_node("ssd", json!({"disk": "ssd"})).await;
    c.ready_node("hdd", json!({"disk": "hdd"})).await;
    c.create::<Pod>(&ns, pod("p", json!({"nodeSelector": {"disk": "ssd"}})))
        .await;
    let pods = c.api::<Pod>(&ns);
    eventually("the pod bound", DEADLINE, || async {
        node_of(&pods.get("p").await.unwrap()).is_some()
    })
    .await;
    assert_eq!(
        node_of(&pods.get("p").await.unwrap()).as_deref(),
        Some("ssd")
    );
}

/// Upstream `TestSchedulerFailedSchedulingReasons`: a pod that fits no node is left unbound
/// with `PodScheduled=False`, reason `Unschedulable` and upstream's message (its double full
/// stop included: the preemption message ends in one and `FitError` adds another); the pods
/// that fit are bound, each counted against the node's CPU.
#[tokio::test]
async fn scheduler_failed_scheduling_reasons() {
    let (c, ns) = with_scheduler().await;
    // 4 CPUs: four pods of one CPU fit, the fifth does not.
    c.ready_node("n1", json!({})).await;
    for i in 0..5 {
        c.create::<Pod>(&ns, pod(&format!("p{i}"), json!({}))).await;
    }
    eventually("four bound and one unschedulable", DEADLINE, || async {
        let all = c.list::<Pod>(&ns).await;
        let bound = all.iter().filter(|p| node_of(p).is_some()).count();
        // Judged against the node (a pod judged before the node was seen is judged again).
        let refused = all
            .iter()
            .filter(|p| scheduled(p).is_some_and(|s| s.0 == "False" && s.2.contains("cpu")))
            .count();
        bound == 4 && refused == 1
    })
    .await;
    let all = c.list::<Pod>(&ns).await;
    let refused = all.iter().find(|p| node_of(p).is_none()).unwrap();
    let (_, reason, message) = scheduled(refused).unwrap();
    assert_eq!(reason, "Unschedulable");
    assert_eq!(
        message,
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
    );
}

/// Upstream `TestTaintTolerationFilter` (`plugins/tainttoleration`): a NoSchedule taint keeps
/// pods that do not tolerate it off the node; a pod that tolerates it may go there.
#[tokio::test]
async fn taint_toleration_filter() {
    let (c, ns) = with_scheduler().await;
    let taint = json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    c.ready_tainted_node("dedicated", json!({"pool": "db"}), taint)
        .await;
    c.ready_node("general", json!({"pool": "general"})).await;
    // Both pods ask for the tainted node's pool only; one tolerates the taint.
    let pin = json!({"nodeSelector": {"pool": "db"}});
    c.create::<Pod>(&ns, pod("intolerant", pin.clone())).await;
    let mut tolerant = pin;
    tolerant["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]);
    c.create::<Pod>(&ns, pod("tolerant", tolerant)).await;
    let pods = c.api::<Pod>(&ns);
    eventually(
        "the tolerant pod bound, the other refused",
        DEADLINE,
        || async {
            let tolerant = pods.get("tolerant").await.unwrap();
            let intolerant = pods.get("intolerant").await.unwrap();
            node_of(&tolerant).as_deref() == Some("dedicated")
                && scheduled(&intolerant).is_some_and(|s| s.0 == "False" && s.2.contains("taint"))
        },
    )
    .await;
    let (_, reason, message) = scheduled(&pods.get("intolerant").await.unwrap()).unwrap();
    assert_eq!(reason, "Unschedulable");
    assert!(
        message.contains("1 node(s) had untolerated taint {dedicated: db}"),
        "{message}"
    );
    assert!(node_of(&pods.get("intolerant").await.unwrap()).is_none());
}
