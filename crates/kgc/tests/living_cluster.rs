//! `kgc serve` as a new user runs it: nothing forged. The default simulated node, the scheduler,
//! the simulated kubelet, the provisioner and the workload controllers together turn plain
//! objects into running pods, bound volumes and completed rollouts.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ServiceAccount};
use kgc_testsupport::pods::phase;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_plain_pod_is_scheduled_onto_the_default_node_and_runs() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "plain").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    eventually("the default ServiceAccount", T, || async {
        let sa: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
        sa.get_opt("default").await.unwrap().is_some()
    })
    .await;
    s.kubectl_ok(&["run", "-n", &ns, "web", "--image=nginx"])
        .await;
    eventually("the pod Running on kgc-node-0", T, || async {
        let p = pods.get("web").await.unwrap();
        phase(&p) == "Running"
            && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("kgc-node-0")
    })
    .await;
    let p = pods.get("web").await.unwrap();
    let ip = p.status.unwrap().pod_ip.unwrap_or_default();
    assert!(ip.starts_with("10.244.0."), "{ip}");
}

#[tokio::test]
async fn a_deployment_completes_its_rollout_on_the_simulated_node() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "work").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    s.kubectl_ok(&[
        "create",
        "deployment",
        "-n",
        &ns,
        "web",
        "--image=nginx:1",
        "--replicas=2",
    ])
    .await;
    s.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/web",
        "--timeout=60s",
    ])
    .await;
    let d: Api<Deployment> = Api::namespaced(s.client(), &ns);
    let status = d.get("web").await.unwrap().status.unwrap();
    assert_eq!(status.available_replicas, Some(2));
    let running = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| phase(p) == "Running")
        .count();
    assert_eq!(running, 2);
}

#[tokio::test]
async fn a_claim_of_the_default_class_is_provisioned_for_the_pod_that_uses_it() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "volume").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    claims
        .create(
            &PostParams::default(),
            &typed(json!({
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Mi"}}},
            })),
        )
        .await
        .unwrap();
    pods.create(
        &PostParams::default(),
        &typed(json!({
            "metadata": {"name": "db"},
            "spec": {
                "containers": [{"name": "c", "image": "postgres", "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        })),
    )
    .await
    .unwrap();
    eventually("the claim Bound and the pod Running", T, || async {
        let c = claims.get("data").await.unwrap();
        let bound = c.status.and_then(|s| s.phase).as_deref() == Some("Bound");
        bound && phase(&pods.get("db").await.unwrap()) == "Running"
    })
    .await;
    let c = claims.get("data").await.unwrap();
    assert_eq!(
        c.spec.unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
}
