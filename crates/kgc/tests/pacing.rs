//! Controller pacing (issue 30): workload controllers whose pods the API refuses create in
//! upstream's slow-start batches and back off, so a ReplicaSet short of 1,000 refused pods
//! costs one failed request per sync, not 500; each refusal is a `FailedCreate` Event, and the
//! ReplicaSet's `ReplicaFailure` condition (its Deployment's too), cleared once creations
//! succeed again.
//!
//! The refusal: a pod template naming a ServiceAccount that does not exist. The ReplicaSet (or
//! Job, DaemonSet, StatefulSet) is admitted, its pods are refused by the ServiceAccount
//! admission plugin (403 `error looking up service account NS/ghost: serviceaccount "ghost"
//! not found`), and creating the account fixes it.
//!
//! One server runs every scenario, each in its own namespace. The first phase runs alone, as it
//! counts the server's refused requests (`kgc_apiserver_requests_total{code="403"}`) against
//! the ReplicaSet controller's failed syncs (`workqueue_retries_total{name="replicaset"}`).

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod, ReplicationController, ServiceAccount};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Long enough for a retry after the work queue's back-off has grown for a few seconds.
const T: Duration = Duration::from_secs(60);
/// The account the templates name and no namespace has until a test creates it.
const GHOST: &str = "ghost";

/// A pod template of one container running as `ghost`.
fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {
            "serviceAccountName": GHOST,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "nginx"}],
        },
    })
}

/// The workload `kind` named `name` with `replicas` (if any) over [`template`].
fn workload<W: serde::de::DeserializeOwned>(name: &str, replicas: Option<i64>, extra: Value) -> W {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": name}},
        "template": template(name),
    });
    if let Some(r) = replicas {
        spec["replicas"] = json!(r);
    }
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        spec[k] = v;
    }
    typed(json!({"metadata": {"name": name}, "spec": spec}))
}

/// The refusal's words for a pod of namespace `ns`.
fn refusal(ns: &str) -> String {
    format!(
        "is forbidden: error looking up service account {ns}/{GHOST}: serviceaccount \"{GHOST}\" not found"
    )
}

/// Refused requests, and failed ReplicaSet syncs (each retried after the queue's back-off).
async fn refusals_and_failed_syncs(s: &Server) -> (f64, f64) {
    (
        metrics_counter(&s.client(), r#"kgc_apiserver_requests_total{code="403"}"#).await,
        metrics_counter(&s.client(), r#"workqueue_retries_total{name="replicaset"}"#).await,
    )
}

/// The messages of the events of `reason` about the object named `name`.
async fn events(s: &Server, ns: &str, name: &str, reason: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(s.client(), ns);
    api.list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .map(|e| e.message.unwrap_or_default())
        .collect()
}

/// Polls `f` every 50 ms until it gives a value, up to [`T`].
async fn wait_for<V, F, Fut>(what: &str, mut f: F) -> V
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<V>>,
{
    let deadline = tokio::time::Instant::now() + T;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {T:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits for a `reason` event about `name` and returns its message.
async fn event(s: &Server, ns: &str, name: &str, reason: &str) -> String {
    wait_for(&format!("a {reason} event about {name}"), || async {
        events(s, ns, name, reason).await.into_iter().next()
    })
    .await
}

async fn pods_in(s: &Server, ns: &str) -> usize {
    let api: Api<Pod> = Api::namespaced(s.client(), ns);
    api.list(&ListParams::default())
        .await
        .expect("listing pods")
        .items
        .len()
}

async fn create_ghost(s: &Server, ns: &str) {
    let api: Api<ServiceAccount> = Api::namespaced(s.client(), ns);
    api.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": GHOST}})),
    )
    .await
    .expect("creating the ServiceAccount");
}

/// A `ReplicaFailure` condition's status, reason and message, as JSON (the same shape on a
/// ReplicaSet, a ReplicationController and a Deployment).
fn replica_failure(status: Option<Value>) -> Option<(String, String, String)> {
    let conditions = status?.get("conditions")?.as_array()?.clone();
    let c = conditions.iter().find(|c| c["type"] == "ReplicaFailure")?;
    let field = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    Some((field("status"), field("reason"), field("message")))
}

async fn status_of<K>(api: &Api<K>, name: &str) -> Option<Value>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let o = api.get(name).await.expect("reading the workload");
    serde_json::to_value(&o).ok()?.get("status").cloned()
}

async fn scale<K>(api: &Api<K>, name: &str, replicas: i64)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .expect("scaling");
}

/// A ReplicaSet of 1,000 refused pods and a Deployment of 1,000,000: one failed create per
/// sync, the syncs spaced by the back-off; the condition on both, the event on the set.
async fn refused_at_scale(s: &Server, rs_ns: &str, d_ns: &str) {
    let (refused0, syncs0) = refusals_and_failed_syncs(s).await;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), rs_ns);
    sets.create(
        &PostParams::default(),
        &workload("web", Some(1000), json!({})),
    )
    .await
    .expect("creating the ReplicaSet");
    let deployments: Api<Deployment> = Api::namespaced(s.client(), d_ns);
    deployments
        .create(
            &PostParams::default(),
            &workload("big", Some(1_000_000), json!({})),
        )
        .await
        .expect("creating the Deployment");

    let (status, reason, message) = wait_for("the ReplicaSet's ReplicaFailure", || async {
        replica_failure(status_of(&sets, "web").await)
    })
    .await;
    assert_eq!((status.as_str(), reason.as_str()), ("True", "FailedCreate"));
    assert!(
        message.starts_with("pods ") && message.ends_with(&refusal(rs_ns)),
        "the API's message, as upstream's condition carries it: {message}"
    );
    let created = event(s, rs_ns, "web", "FailedCreate").await;
    assert!(
        created.starts_with("Error creating: pods ") && created.ends_with(&refusal(rs_ns)),
        "{created}"
    );
    eventually("the Deployment's ReplicaFailure", T, || async {
        replica_failure(status_of(&deployments, "big").await).is_some_and(|(st, r, m)| {
            st == "True" && r == "FailedCreate" && m.ends_with(&refusal(d_ns))
        })
    })
    .await;

    // A measuring window: what the controllers do while nothing changes.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (refused1, syncs1) = refusals_and_failed_syncs(s).await;
    let (refused, syncs) = (refused1 - refused0, syncs1 - syncs0);
    assert!(refused >= 2.0, "both sets were refused: {refused}");
    assert!(syncs >= 2.0, "both sets' failed syncs are counted: {syncs}");
    // Without slow start each failed sync of the 1,000-pod set would make 500 requests.
    assert!(
        refused <= syncs + 2.0,
        "one refused create per failed sync: {refused} refused, {syncs} failed syncs"
    );
    // The queue's back-off (5 ms doubling) spaces the syncs: about a dozen each in these
    // seconds, not a hot loop.
    assert!(syncs <= 40.0, "{syncs} failed syncs in ~5 s");
    assert_eq!(pods_in(s, rs_ns).await + pods_in(s, d_ns).await, 0);
    let failed = events(s, rs_ns, "web", "FailedCreate").await.len();
    assert!(
        failed as f64 <= refused,
        "{failed} events for {refused} refusals"
    );
}

/// The cause fixed, the next retry creates the pods and clears the conditions. Both are
/// scaled down first so the recovery does not start a thousand pods on the simulated node.
async fn recovers(s: &Server, rs_ns: &str, d_ns: &str) {
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), rs_ns);
    let deployments: Api<Deployment> = Api::namespaced(s.client(), d_ns);
    scale(&sets, "web", 20).await;
    scale(&deployments, "big", 2).await;
    create_ghost(s, rs_ns).await;
    create_ghost(s, d_ns).await;
    eventually("the ReplicaSet recovered", T, || async {
        let st = status_of(&sets, "web").await;
        replica_failure(st.clone()).is_none() && st.is_some_and(|s| s["replicas"] == 20)
    })
    .await;
    assert!(!events(s, rs_ns, "web", "SuccessfulCreate").await.is_empty());
    eventually("the Deployment recovered", T, || async {
        let st = status_of(&deployments, "big").await;
        replica_failure(st.clone()).is_none() && st.is_some_and(|s| s["replicas"] == 2)
    })
    .await;
}

/// A Job's refused pods: `FailedCreate` events, no pod.
async fn job_refused(s: &Server) {
    let ns = fresh_namespace(&s.client(), "job").await;
    let mut job: Value = json!({"metadata": {"name": "batch"}, "spec": {"parallelism": 50, "completions": 100, "template": template("batch")}});
    job["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    let jobs: Api<Job> = Api::namespaced(s.client(), &ns);
    jobs.create(&PostParams::default(), &typed(job))
        .await
        .expect("creating the Job");
    let m = event(s, &ns, "batch", "FailedCreate").await;
    assert!(
        m.starts_with("Error creating: pods ") && m.ends_with(&refusal(&ns)),
        "{m}"
    );
    assert_eq!(pods_in(s, &ns).await, 0);
}

/// A DaemonSet's refused pod: a `FailedCreate` event.
async fn daemon_set_refused(s: &Server) {
    let ns = fresh_namespace(&s.client(), "ds").await;
    let api: Api<DaemonSet> = Api::namespaced(s.client(), &ns);
    api.create(&PostParams::default(), &workload("agent", None, json!({})))
        .await
        .expect("creating the DaemonSet");
    let m = event(s, &ns, "agent", "FailedCreate").await;
    assert!(
        m.starts_with("Error creating: pods ") && m.ends_with(&refusal(&ns)),
        "{m}"
    );
}

/// A StatefulSet's refused pod: upstream's `FailedCreate` message, the first ordinal only (in
/// order, one at a time); and a Parallel one stops after its first batch of one.
async fn stateful_set_refused(s: &Server) {
    let ns = fresh_namespace(&s.client(), "sts").await;
    let api: Api<StatefulSet> = Api::namespaced(s.client(), &ns);
    for (name, extra) in [
        ("db", json!({"serviceName": "db"})),
        (
            "cache",
            json!({"serviceName": "cache", "podManagementPolicy": "Parallel"}),
        ),
    ] {
        api.create(&PostParams::default(), &workload(name, Some(5), extra))
            .await
            .expect("creating the StatefulSet");
        let m = event(s, &ns, name, "FailedCreate").await;
        assert_eq!(
            m,
            format!(
                "create Pod {name}-0 in StatefulSet {name} failed error: pods \"{name}-0\" {}",
                refusal(&ns)
            )
        );
    }
    for name in ["db", "cache"] {
        let all = events(s, &ns, name, "FailedCreate").await;
        assert!(
            all.iter()
                .all(|m| m.starts_with(&format!("create Pod {name}-0 "))),
            "only the first ordinal is tried while it is refused: {all:?}"
        );
    }
}

/// A ReplicationController's refused pods: the same condition and event as a ReplicaSet's.
async fn replication_controller_refused(s: &Server) {
    let ns = fresh_namespace(&s.client(), "rc").await;
    let api: Api<ReplicationController> = Api::namespaced(s.client(), &ns);
    let rc = json!({"metadata": {"name": "legacy"}, "spec": {"replicas": 300, "selector": {"app": "legacy"}, "template": template("legacy")}});
    api.create(&PostParams::default(), &typed(rc))
        .await
        .expect("creating the RC");
    eventually("the ReplicationController's ReplicaFailure", T, || async {
        replica_failure(status_of(&api, "legacy").await).is_some_and(|(st, r, m)| {
            st == "True" && r == "FailedCreate" && m.ends_with(&refusal(&ns))
        })
    })
    .await;
    let m = event(s, &ns, "legacy", "FailedCreate").await;
    assert!(
        m.starts_with("Error creating: pods ") && m.ends_with(&refusal(&ns)),
        "{m}"
    );
}

#[tokio::test]
async fn refused_pods_are_paced_reported_and_retried() {
    let s = Server::living(&["--in-memory"]).await;
    let rs_ns = fresh_namespace(&s.client(), "rs").await;
    let d_ns = fresh_namespace(&s.client(), "deploy").await;
    refused_at_scale(&s, &rs_ns, &d_ns).await;
    tokio::join!(
        recovers(&s, &rs_ns, &d_ns),
        job_refused(&s),
        daemon_set_refused(&s),
        stateful_set_refused(&s),
        replication_controller_refused(&s),
    );
}
