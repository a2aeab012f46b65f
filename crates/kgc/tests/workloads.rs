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
/// Waits that include pods' graceful termination (the default 30 s, all of which the simulated
/// kubelet's containers use).
const GONE: Duration = Duration::from_secs(90);

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
    eventually("no pods and no ReplicaSet", GONE, || async {
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

/// A Deployment with the Recreate strategy and a history of one old ReplicaSet.
const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  revisionHistoryLimit: 1
  strategy:
    type: Recreate
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1
";

fn revision_of(rs: &ReplicaSet) -> Option<String> {
    rs.metadata
        .annotations
        .as_ref()?
        .get("deployment.kubernetes.io/revision")
        .cloned()
}

#[tokio::test]
async fn deployment_rolls_out_replica_sets_by_template_and_keeps_its_revision_history_limit() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "web").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], WEB)
        .await;
    eventually("one ReplicaSet with two pods", T, || async {
        let rs = sets.list(&ListParams::default()).await.unwrap().items;
        rs.len() == 1 && active(&pods).await.len() == 2
    })
    .await;
    let first = sets.list(&ListParams::default()).await.unwrap().items[0].clone();
    let first_name = first.metadata.name.clone().unwrap();
    let hash = first
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"))
        .cloned()
        .expect("the pod-template-hash label");
    assert_eq!(first_name, format!("web-{hash}"));
    assert_eq!(revision_of(&first).as_deref(), Some("1"));
    for p in active(&pods).await {
        assert_eq!(
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("pod-template-hash")),
            Some(&hash)
        );
    }

    // Two new templates: each a ReplicaSet of the next revision; Recreate empties the old.
    for (image, revision) in [("nginx:2", "2"), ("nginx:3", "3")] {
        s.kubectl_ok(&[
            "set",
            "image",
            "-n",
            &ns,
            "deployment/web",
            &format!("nginx={image}"),
        ])
        .await;
        eventually(&format!("revision {revision} running alone"), T, || async {
            let rs = sets.list(&ListParams::default()).await.unwrap().items;
            let newest = rs
                .iter()
                .find(|r| revision_of(r).as_deref() == Some(revision));
            let old_empty = rs
                .iter()
                .filter(|r| revision_of(r).as_deref() != Some(revision))
                .all(|r| r.spec.replicas == Some(0));
            newest.is_some_and(|n| n.spec.replicas == Some(2)) && old_empty
        })
        .await;
    }
    // Old ReplicaSets go only once the rollout is complete or paused (upstream
    // `cleanupDeployment`); nothing makes these pods ready here, so pause it.
    s.kubectl_ok(&["rollout", "pause", "-n", &ns, "deployment/web"])
        .await;
    eventually(
        "revision 1 deleted, 2 kept as the one old ReplicaSet",
        T,
        || async {
            let rs = sets.list(&ListParams::default()).await.unwrap().items;
            let mut revisions: Vec<String> = rs.iter().filter_map(revision_of).collect();
            revisions.sort();
            revisions == ["2", "3"]
        },
    )
    .await;
    let d: serde_json::Value = serde_json::from_str(
        &s.kubectl_ok(&["get", "-n", &ns, "deployment/web", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    let history = s
        .kubectl_ok(&["rollout", "history", "-n", &ns, "deployment/web"])
        .await;
    assert!(
        history.contains("2 ") && history.contains("3 "),
        "{history}"
    );
}
