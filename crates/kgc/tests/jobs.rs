//! The Job controller against a spawned `kgc serve` with everything on: pods created with the
//! tracking finalizer, counted and released, the Job finishing with upstream's conditions and
//! events; backoffLimit, activeDeadlineSeconds, suspend, Indexed Jobs, the TTL collector and a
//! `kubectl create job`. Scenario names follow upstream's `test/integration/job/job_test.go`
//! where they port one.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);
const TRACKING: &str = "batch.kubernetes.io/job-tracking";

async fn server() -> Server {
    Server::living(&["--in-memory", "--job-pod-duration", "300ms"]).await
}

/// A Job of one busybox container; `extra` is merged into its spec, `annotations` into its
/// pod template's.
fn job(name: &str, spec: Value, annotations: Value) -> Job {
    let mut j = json!({
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": "busybox"}]}}},
    });
    for (k, v) in spec.as_object().cloned().unwrap_or_default() {
        j["spec"][k] = v;
    }
    typed(j)
}

/// The True condition of `type_`, if the Job has one: its reason.
fn condition(j: &Job, type_: &str) -> Option<String> {
    j.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| c.reason.clone().unwrap_or_default())
}

async fn finished(jobs: &Api<Job>, name: &str, type_: &str, deadline: Duration) -> Job {
    eventually(&format!("job {name} {type_}"), deadline, || async {
        jobs.get(name)
            .await
            .is_ok_and(|j| condition(&j, type_).is_some())
    })
    .await;
    jobs.get(name).await.unwrap()
}

async fn job_pods(pods: &Api<Pod>, job: &str) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .unwrap()
        .items
}

fn tracked(p: &Pod) -> bool {
    p.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING)
}

async fn reasons(client: &kube::Client, ns: &str, job: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some("Job")
                && e.involved_object.name.as_deref() == Some(job)
        })
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn test_parallel_job_with_completions() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-parallel").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let j = jobs
        .create(
            &PostParams::default(),
            &job("pi", json!({"completions": 3, "parallelism": 2}), json!({})),
        )
        .await
        .unwrap();
    let uid = j.metadata.uid.clone().unwrap();
    // Never more than parallelism at once, each pod tracked while it runs.
    eventually("the first pods", T, || async {
        !job_pods(&pods, "pi").await.is_empty()
    })
    .await;
    let first = job_pods(&pods, "pi").await;
    // A pod may already have finished and its successor started by now: count those running.
    let running = first
        .iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .count();
    assert!(running <= 2, "{running} running");
    for p in &first {
        let labels = p.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["job-name"], "pi");
        assert_eq!(labels["batch.kubernetes.io/controller-uid"], uid);
        assert_eq!(labels["controller-uid"], uid);
        let r = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((r.kind.as_str(), r.uid.as_str()), ("Job", uid.as_str()));
        assert_eq!(
            (r.controller, r.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert!(p.metadata.name.as_deref().unwrap().starts_with("pi-"));
    }
    let done = finished(&jobs, "pi", "Complete", T).await;
    let st = done.status.clone().unwrap();
    assert_eq!(
        (st.succeeded, st.failed.unwrap_or(0), st.active.unwrap_or(0)),
        (Some(3), 0, 0)
    );
    assert_eq!(
        condition(&done, "SuccessCriteriaMet").as_deref(),
        Some("CompletionsReached")
    );
    assert_eq!(
        condition(&done, "Complete").as_deref(),
        Some("CompletionsReached")
    );
    assert!(st.start_time.is_some() && st.completion_time.is_some());
    let u = st.uncounted_terminated_pods.unwrap_or_default();
    assert!(u.succeeded.unwrap_or_default().is_empty() && u.failed.unwrap_or_default().is_empty());
    let all = job_pods(&pods, "pi").await;
    assert_eq!(all.len(), 3);
    for p in &all {
        assert_eq!(
            p.status.as_ref().unwrap().phase.as_deref(),
            Some("Succeeded")
        );
        assert!(!tracked(p), "{:?}", p.metadata.finalizers);
    }
    eventually("SuccessfulCreate and Completed events", T, || async {
        let r = reasons(&client, &ns, "pi").await;
        r.iter().filter(|r| *r == "SuccessfulCreate").count() == 3
            && r.iter().any(|r| r == "Completed")
    })
    .await;
}

#[tokio::test]
async fn test_job_fails_past_its_backoff_limit() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-backoff").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job(
            "fail",
            json!({"backoffLimit": 1}),
            json!({"kgc.io/exit-code": "1"}),
        ),
    )
    .await
    .unwrap();
    // The second pod waits out the first back-off (10 s).
    let done = finished(&jobs, "fail", "Failed", T).await;
    assert_eq!(
        condition(&done, "FailureTarget").as_deref(),
        Some("BackoffLimitExceeded")
    );
    assert_eq!(
        condition(&done, "Failed").as_deref(),
        Some("BackoffLimitExceeded")
    );
    let st = done.status.unwrap();
    assert_eq!((st.failed, st.succeeded.unwrap_or(0)), (Some(2), 0));
    let all = job_pods(&pods, "fail").await;
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|p| !tracked(p)));
    eventually("a BackoffLimitExceeded event", T, || async {
        reasons(&client, &ns, "fail")
            .await
            .iter()
            .any(|r| r == "BackoffLimitExceeded")
    })
    .await;
}

#[tokio::test]
async fn test_active_deadline_seconds() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-deadline").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job(
            "slow",
            json!({"activeDeadlineSeconds": 2, "parallelism": 2}),
            json!({"kgc.io/run-for": "1h"}),
        ),
    )
    .await
    .unwrap();
    let done = finished(&jobs, "slow", "Failed", T).await;
    assert_eq!(
        condition(&done, "Failed").as_deref(),
        Some("DeadlineExceeded")
    );
    let st = done.status.unwrap();
    assert_eq!(
        (
            st.active.unwrap_or(0),
            st.terminating.unwrap_or(0),
            st.failed
        ),
        (0, 0, Some(2))
    );
    eventually("its pods gone or finished, untracked", T, || async {
        job_pods(&pods, "slow").await.iter().all(|p| !tracked(p))
    })
    .await;
    eventually("a DeadlineExceeded event", T, || async {
        reasons(&client, &ns, "slow")
            .await
            .iter()
            .any(|r| r == "DeadlineExceeded")
    })
    .await;
}

#[tokio::test]
async fn test_finished_job_is_deleted_by_ttl_with_its_pods() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-ttl").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job("brief", json!({"ttlSecondsAfterFinished": 0}), json!({})),
    )
    .await
    .unwrap();
    eventually("a pod", T, || async {
        !job_pods(&pods, "brief").await.is_empty()
    })
    .await;
    eventually("the Job deleted", T, || async {
        jobs.get_opt("brief").await.unwrap().is_none()
    })
    .await;
    eventually("its pods deleted", T, || async {
        job_pods(&pods, "brief").await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn test_suspend_and_resume() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-suspend").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job(
            "later",
            json!({"suspend": true, "parallelism": 2, "completions": 2}),
            json!({}),
        ),
    )
    .await
    .unwrap();
    let j = finished(&jobs, "later", "Suspended", T).await;
    assert!(j.status.unwrap().start_time.is_none());
    assert!(job_pods(&pods, "later").await.is_empty());
    jobs.patch(
        "later",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .unwrap();
    let done = finished(&jobs, "later", "Complete", T).await;
    assert_eq!(done.status.unwrap().succeeded, Some(2));
    let events = reasons(&client, &ns, "later").await;
    assert!(
        events.iter().any(|r| r == "Suspended") && events.iter().any(|r| r == "Resumed"),
        "{events:?}"
    );
}

#[tokio::test]
async fn test_indexed_job() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-indexed").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job(
            "idx",
            json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3}),
            json!({}),
        ),
    )
    .await
    .unwrap();
    let done = finished(&jobs, "idx", "Complete", T).await;
    let st = done.status.unwrap();
    assert_eq!(
        (st.succeeded, st.completed_indexes.as_deref()),
        (Some(3), Some("0-2"))
    );
    let mut seen: Vec<String> = job_pods(&pods, "idx")
        .await
        .iter()
        .map(|p| {
            let i = p.metadata.annotations.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"].clone();
            assert_eq!(p.metadata.labels.as_ref().unwrap()["batch.kubernetes.io/job-completion-index"], i);
            assert_eq!(p.spec.as_ref().unwrap().hostname.as_deref(), Some(format!("idx-{i}").as_str()));
            assert!(p.metadata.name.as_deref().unwrap().starts_with(&format!("idx-{i}-")));
            i
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["0", "1", "2"]);
}

/// `kubectl create job` sends no selector: the API server generates it, and the Job runs.
#[tokio::test]
async fn kubectl_create_job_runs() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-kubectl").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    s.kubectl_ok(&[
        "create",
        "job",
        "hello",
        "-n",
        &ns,
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ])
    .await;
    let done = finished(&jobs, "hello", "Complete", T).await;
    let uid = done.metadata.uid.clone().unwrap();
    let selector = done.spec.unwrap().selector.unwrap().match_labels.unwrap();
    assert_eq!(selector["batch.kubernetes.io/controller-uid"], uid);
    assert_eq!(done.status.unwrap().succeeded, Some(1));
}

/// A Job deleted with its pods orphaned: the pods lose the tracking finalizer, so deleting one
/// later is not held up (upstream `TestOrphanPodsFinalizersClearedWithGC`).
#[tokio::test]
async fn test_orphan_pods_finalizers_cleared() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-orphan").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job("left", json!({}), json!({"kgc.io/run-for": "1h"})),
    )
    .await
    .unwrap();
    eventually("a tracked pod", T, || async {
        job_pods(&pods, "left").await.iter().any(tracked)
    })
    .await;
    jobs.delete("left", &kube::api::DeleteParams::orphan())
        .await
        .unwrap();
    eventually("the pod orphaned and untracked", T, || async {
        let p = job_pods(&pods, "left").await;
        p.len() == 1
            && !tracked(&p[0])
            && p[0]
                .metadata
                .owner_references
                .iter()
                .flatten()
                .next()
                .is_none()
    })
    .await;
}

/// A running pod deleted by hand counts as failed (upstream `isPodFailed`): it loses the
/// finalizer once counted, so its deletion completes.
#[tokio::test]
async fn test_deleted_pod_counts_as_failed() {
    let s = server().await;
    let client = s.client();
    let ns = fresh_namespace(&client, "job-deleted-pod").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    jobs.create(
        &PostParams::default(),
        &job("long", json!({}), json!({"kgc.io/run-for": "1h"})),
    )
    .await
    .unwrap();
    eventually("a running pod", T, || async {
        job_pods(&pods, "long")
            .await
            .iter()
            .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;
    let victim = job_pods(&pods, "long").await.remove(0);
    let name = victim.metadata.name.clone().unwrap();
    pods.delete(&name, &Default::default()).await.unwrap();
    eventually("the pod gone and counted failed", T, || async {
        pods.get_opt(&name).await.unwrap().is_none()
            && jobs
                .get("long")
                .await
                .unwrap()
                .status
                .unwrap_or_default()
                .failed
                == Some(1)
    })
    .await;
}
