//! A lifecycle collector run alone against an API server in the test process
//! (`kgc-testcluster`), through the informers of the controllers' context as `kgc serve` shares
//! them, as upstream tests `pkg/controller/ttlafterfinished` against fakes.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use kgc_lifecycle::{Metrics, ttl};
use kgc_testcluster::{DEADLINE, TestCluster, eventually};
use serde_json::json;

/// Upstream `processJob` (`ttlafterfinished_controller.go`): a Job finished with
/// `ttlSecondsAfterFinished: 0` is deleted at once; a finished Job without a TTL is kept.
#[tokio::test]
async fn a_finished_job_past_its_ttl_is_deleted() {
    let mut c = TestCluster::start().await;
    let metrics = Arc::new(Metrics::default());
    c.run(ttl::run(c.context(), ttl::Config::default(), metrics));
    let ns = c.namespace("ttl").await;
    let jobs = c.api::<Job>(&ns);
    for (name, ttl) in [("kept", None), ("expired", Some(0))] {
        let mut job = json!({"metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.example/app:1"}]}}}});
        if let Some(ttl) = ttl {
            job["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
        }
        c.create::<Job>(&ns, job).await;
        // As the Job controller writes it: the collector counts from the Complete condition's
        // lastTransitionTime.
        let at = "2026-01-01T00:00:01Z";
        let done = json!({"startTime": "2026-01-01T00:00:00Z", "completionTime": at,
            "succeeded": 1, "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": at},
                {"type": "Complete", "status": "True", "lastTransitionTime": at}]});
        c.set_status(&jobs, name, done).await;
    }
    eventually("the expired Job deleted", DEADLINE, || async {
        jobs.get_opt("expired")
            .await
            .unwrap()
            .is_none_or(|j| j.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        jobs.get("kept")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
}
