//! The workload controllers that set owner references, against a spawned `kgc serve` with
//! every controller on: the Kubernetes garbage-collection page's ReplicaSet example
//! (`my-repset`, 3 replicas) run with kubectl as the page runs it — the pods' owner
//! references, scaling, `--cascade=orphan` and re-adoption of the same pods, foreground deletion.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kgc_testsupport::*;
use kube::Api;
use kube::api::ListParams;

const T: Duration = Duration::from_secs(30);

/// The page's `replicaset.yaml`.
const MY_REPSET: &str = "apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: my-repset
spec:
  replicas: 3
  selector:
    matchLabels:
      pod-is-for: garbage-collection-example
  template:
    metadata:
      labels:
        pod-is-for: garbage-collection-example
    spec:
      containers:
      - name: nginx
        image: nginx
";

/// The pods not being deleted.
async fn active(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default())
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn controller_uid(p: &Pod) -> Option<String> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

#[tokio::test]
async fn replicaset_pods_carry_its_controller_reference_and_are_adopted_again_after_orphaning() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "my-repset").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);

    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], MY_REPSET)
        .await;
    let rs = sets.get("my-repset").await.expect("the ReplicaSet");
    let rs_uid = rs.metadata.uid.clone().expect("uid");
    eventually("three pods", T, || async { active(&pods).await.len() == 3 }).await;
    for p in active(&pods).await {
        let refs = p.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 1, "{refs:?}");
        let r = &refs[0];
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str(), r.name.as_str()),
            ("apps/v1", "ReplicaSet", "my-repset")
        );
        assert_eq!(r.uid, rs_uid);
        assert_eq!(r.controller, Some(true));
        assert_eq!(r.block_owner_deletion, Some(true));
        let name = p.metadata.name.clone().unwrap_or_default();
        assert!(name.starts_with("my-repset-"), "{name}");
    }
    eventually("the status counts them", T, || async {
        let rs = sets.get("my-repset").await.unwrap();
        let st = rs.status.unwrap_or_default();
        st.replicas == 3 && st.observed_generation == rs.metadata.generation
    })
    .await;

    // Scaling down deletes pods; scaling up creates them.
    s.kubectl_ok(&["scale", "-n", &ns, "replicaset/my-repset", "--replicas=1"])
        .await;
    eventually("one pod", T, || async { active(&pods).await.len() == 1 }).await;
    s.kubectl_ok(&["scale", "-n", &ns, "replicaset/my-repset", "--replicas=2"])
        .await;
    eventually("two pods", T, || async { active(&pods).await.len() == 2 }).await;

    // `--cascade=orphan`: the ReplicaSet goes, its pods stay without the reference.
    s.kubectl_ok(&[
        "delete",
        "-n",
        &ns,
        "replicaset",
        "my-repset",
        "--cascade=orphan",
    ])
    .await;
    eventually("orphaned pods", T, || async {
        let p = active(&pods).await;
        p.len() == 2 && p.iter().all(|p| controller_uid(p).is_none())
    })
    .await;
    let orphans: Vec<String> = active(&pods)
        .await
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();

    // Applying it again adopts the same pods and creates one more.
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], MY_REPSET)
        .await;
    let again = sets.get("my-repset").await.expect("the new ReplicaSet");
    let again_uid = again.metadata.uid.clone().expect("uid");
    assert_ne!(again_uid, rs_uid);
    eventually("the orphans adopted and a third pod", T, || async {
        let p = active(&pods).await;
        p.len() == 3
            && p.iter()
                .all(|p| controller_uid(p).as_deref() == Some(again_uid.as_str()))
    })
    .await;
    let uids: Vec<String> = active(&pods)
        .await
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    for o in &orphans {
        assert!(uids.contains(o), "orphan {o} was adopted, not replaced");
    }

    // Foreground deletion takes the pods, then the ReplicaSet.
    s.kubectl_ok(&[
        "delete",
        "-n",
        &ns,
        "replicaset",
        "my-repset",
        "--cascade=foreground",
    ])
    .await;
    eventually("no pods and no ReplicaSet", T, || async {
        active(&pods).await.is_empty() && sets.get_opt("my-repset").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn a_pod_that_stops_matching_is_released_and_replaced() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "release").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], MY_REPSET)
        .await;
    eventually("three pods", T, || async { active(&pods).await.len() == 3 }).await;
    let first = active(&pods).await[0].metadata.name.clone().unwrap();
    s.kubectl_ok(&[
        "label",
        "-n",
        &ns,
        "pod",
        &first,
        "pod-is-for=something-else",
        "--overwrite",
    ])
    .await;
    eventually("the pod released and a replacement made", T, || async {
        let p = active(&pods).await;
        let released = p
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(first.as_str()));
        p.len() == 4 && released.is_some_and(|r| controller_uid(r).is_none())
    })
    .await;
}
