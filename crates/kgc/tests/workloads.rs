//! The workload controllers that set owner references, against a spawned `kgc serve` with
//! every controller on: the Kubernetes garbage-collection page's ReplicaSet example
//! (`my-repset`, 3 replicas) run with kubectl as the page runs it — the pods' owner
//! references, scaling, `--cascade=orphan` and re-adoption of the same pods, foreground deletion;
//! Deployments timing out, rolled back with `kubectl rollout undo`, resized mid-rollout, paused;
//! and the API server refusing bad input.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kgc_testsupport::pods::{active, controller_uid};
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

/// `kubectl rollout status deployment/web`, which must report the rollout complete within
/// 30 s; its output.
async fn rollout_complete(s: &Server, ns: &str) -> String {
    s.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        ns,
        "deployment/web",
        "--timeout=30s",
    ])
    .await
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

/// A RollingUpdate Deployment `app` of `replicas` running `image`.
fn rolling(name: &str, replicas: i32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  strategy:
    rollingUpdate: {{maxSurge: 3, maxUnavailable: 2}}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: nginx
        image: {image}
"
    )
}

fn progressing(d: &Deployment) -> (String, String) {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some("Progressing")))
        .map(|c| {
            (
                c.status.clone().unwrap_or_default(),
                c.reason.clone().unwrap_or_default(),
            )
        })
        .unwrap_or_default()
}

/// The ReplicaSets' (revision, replicas), by revision.
async fn revisions(sets: &Api<ReplicaSet>) -> Vec<(String, i32)> {
    let mut v: Vec<(String, i32)> = sets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|rs| {
            (
                revision_of(rs).unwrap_or_default(),
                rs.spec.replicas.unwrap_or(0),
            )
        })
        .collect();
    v.sort_by_key(|(r, _)| r.parse::<i64>().unwrap_or(0));
    v
}

#[tokio::test]
async fn test_progress_deadline_exceeded_when_no_node_can_run_the_pods() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "stuck").await;
    let manifest = rolling("stuck", 2, "nginx").replace(
        "    spec:\n      containers:",
        "    spec:\n      nodeSelector: {disk: none}\n      containers:",
    ) + "  progressDeadlineSeconds: 2\n";
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], &manifest)
        .await;
    let deployments: Api<Deployment> = Api::namespaced(s.client(), &ns);
    eventually("Progressing False ProgressDeadlineExceeded", T, || async {
        progressing(&deployments.get("stuck").await.unwrap())
            == ("False".into(), "ProgressDeadlineExceeded".into())
    })
    .await;
    let d = deployments.get("stuck").await.unwrap();
    let c = d.status.unwrap().conditions.unwrap();
    let c = c
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert!(
        c.message
            .as_deref()
            .unwrap_or_default()
            .ends_with("has timed out progressing."),
        "{c:?}"
    );
    let out = s
        .kubectl(&[
            "rollout",
            "status",
            "-n",
            &ns,
            "deployment/stuck",
            "--timeout=10s",
        ])
        .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("deployment \"stuck\" exceeded its progress deadline"),
        "{err}"
    );
}

#[tokio::test]
async fn kubectl_rollout_history_undo_and_status_work() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "undo").await;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(s.client(), &ns);
    let image = || async {
        deployments
            .get("web")
            .await
            .unwrap()
            .spec
            .template
            .spec
            .unwrap()
            .containers[0]
            .image
            .clone()
            .unwrap_or_default()
    };
    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        &rolling("web", 3, "nginx:1"),
    )
    .await;
    let status = rollout_complete(&s, &ns).await;
    assert!(status.contains("successfully rolled out"), "{status}");
    s.kubectl_ok(&["set", "image", "-n", &ns, "deployment/web", "nginx=nginx:2"])
        .await;
    s.kubectl_ok(&[
        "annotate",
        "-n",
        &ns,
        "deployment/web",
        "kubernetes.io/change-cause=to nginx 2",
    ])
    .await;
    rollout_complete(&s, &ns).await;
    let history = s
        .kubectl_ok(&["rollout", "history", "-n", &ns, "deployment/web"])
        .await;
    assert!(
        history.contains("to nginx 2"),
        "the change cause copied: {history}"
    );

    // Back to revision 1's template, as revision 3; its ReplicaSet remembers it was 1.
    let undo = s
        .kubectl_ok(&["rollout", "undo", "-n", &ns, "deployment/web"])
        .await;
    assert!(undo.contains("rolled back"), "{undo}");
    rollout_complete(&s, &ns).await;
    assert_eq!(image().await, "nginx:1");
    eventually("revision 3 is the first ReplicaSet", T, || async {
        revisions(&sets).await == [("2".to_owned(), 0), ("3".to_owned(), 3)]
    })
    .await;
    let rs = sets.list(&ListParams::default()).await.unwrap().items;
    let third = rs
        .iter()
        .find(|r| revision_of(r).as_deref() == Some("3"))
        .unwrap();
    assert_eq!(
        third
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("deployment.kubernetes.io/revision-history"),
        Some(&"1".to_owned())
    );

    // To a named revision.
    s.kubectl_ok(&[
        "rollout",
        "undo",
        "-n",
        &ns,
        "deployment/web",
        "--to-revision=2",
    ])
    .await;
    rollout_complete(&s, &ns).await;
    assert_eq!(image().await, "nginx:2");
    eventually("revision 4 is the second ReplicaSet", T, || async {
        revisions(&sets).await == [("3".to_owned(), 0), ("4".to_owned(), 3)]
    })
    .await;
    let history = s
        .kubectl_ok(&["rollout", "history", "-n", &ns, "deployment/web"])
        .await;
    assert!(history.contains("4         to nginx 2"), "{history}");
    let skipped = s
        .kubectl_ok(&[
            "rollout",
            "undo",
            "-n",
            &ns,
            "deployment/web",
            "--to-revision=4",
        ])
        .await;
    assert!(skipped.contains("skipped rollback"), "{skipped}");
}

#[tokio::test]
async fn test_scaled_rollout_deployment_scales_in_proportion() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "proportional").await;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        &rolling("web", 10, "nginx:1"),
    )
    .await;
    rollout_complete(&s, &ns).await;
    // A template no node can run: the rollout stops at 8 old and 5 new (surge 3, 2 unavailable).
    s.kubectl_ok(&[
        "patch",
        "-n",
        &ns,
        "deployment/web",
        "-p",
        r#"{"spec":{"template":{"spec":{"nodeSelector":{"disk":"none"}}}}}"#,
    ])
    .await;
    eventually("the rollout stuck at 8 old and 5 new", T, || async {
        revisions(&sets).await == [("1".to_owned(), 8), ("2".to_owned(), 5)]
    })
    .await;
    // 20 (23 with the surge): the 10 more shared 8:5.
    s.kubectl_ok(&["scale", "-n", &ns, "deployment/web", "--replicas=20"])
        .await;
    eventually("14 old and 9 new", T, || async {
        revisions(&sets).await == [("1".to_owned(), 14), ("2".to_owned(), 9)]
    })
    .await;
    for rs in sets.list(&ListParams::default()).await.unwrap().items {
        let a = rs.metadata.annotations.unwrap_or_default();
        assert_eq!(
            a.get("deployment.kubernetes.io/desired-replicas")
                .map(String::as_str),
            Some("20")
        );
        assert_eq!(
            a.get("deployment.kubernetes.io/max-replicas")
                .map(String::as_str),
            Some("23")
        );
    }
}

#[tokio::test]
async fn a_paused_deployment_makes_no_replica_set_until_resumed() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "pause").await;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(s.client(), &ns);
    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        &rolling("web", 2, "nginx:1"),
    )
    .await;
    rollout_complete(&s, &ns).await;
    s.kubectl_ok(&["rollout", "pause", "-n", &ns, "deployment/web"])
        .await;
    s.kubectl_ok(&["set", "image", "-n", &ns, "deployment/web", "nginx=nginx:2"])
        .await;
    eventually("Progressing Unknown DeploymentPaused", T, || async {
        progressing(&deployments.get("web").await.unwrap())
            == ("Unknown".into(), "DeploymentPaused".into())
    })
    .await;
    // Scaling while paused scales the one ReplicaSet there is.
    s.kubectl_ok(&["scale", "-n", &ns, "deployment/web", "--replicas=3"])
        .await;
    eventually("still one ReplicaSet, of 3", T, || async {
        revisions(&sets).await == [("1".to_owned(), 3)]
    })
    .await;
    let out = s
        .kubectl(&["rollout", "undo", "-n", &ns, "deployment/web"])
        .await;
    assert!(!out.status.success(), "no undo while paused");
    s.kubectl_ok(&["rollout", "resume", "-n", &ns, "deployment/web"])
        .await;
    rollout_complete(&s, &ns).await;
    eventually("revision 2 rolled out", T, || async {
        revisions(&sets).await == [("1".to_owned(), 0), ("2".to_owned(), 3)]
            && progressing(&deployments.get("web").await.unwrap())
                == ("True".into(), "NewReplicaSetAvailable".into())
    })
    .await;
}

#[tokio::test]
async fn replica_sets_and_deployments_with_bad_input_are_refused() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "bad").await;
    let mismatch = "  template:\n    metadata:\n      labels:\n        pod-is-for: garbage-collection-example\n";
    let cases = [
        (
            MY_REPSET.replace(
                mismatch,
                "  template:\n    metadata:\n      labels:\n        pod-is-for: other\n",
            ),
            "spec.template.metadata.labels: Invalid value: {\"pod-is-for\":\"other\"}: `selector` does not match template `labels`",
        ),
        (
            MY_REPSET.replace("replicas: 3", "replicas: -1"),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            rolling("web", 1, "nginx").replace(
                "        app: web\n    spec:",
                "        app: other\n    spec:",
            ),
            "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
        ),
        (
            rolling("web", -1, "nginx"),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
    ];
    for (manifest, message) in cases {
        let out = s
            .kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], &manifest)
            .await;
        assert!(!out.status.success(), "{manifest}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{err}");
    }
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    assert!(active(&pods).await.is_empty());
}

/// Two ReplicaSets whose selectors overlap: each keeps its own pods and never touches the
/// other's (a pod with a controller is never adopted), so neither creates nor deletes in a
/// storm (upstream's ControllerRefManager; kubernetes#26120 is the storm it ended).
#[tokio::test]
async fn overlapping_selectors_keep_their_own_pods_without_a_storm() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "overlap").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    let rs = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: {name}}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: shared}}}}\n  template:\n    metadata: {{labels: {{app: shared, set: {name}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
        )
    };
    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        &(rs("a") + "---\n" + &rs("b")),
    )
    .await;
    let uid = |name: &'static str| {
        let sets = sets.clone();
        async move { sets.get(name).await.unwrap().metadata.uid.unwrap() }
    };
    let (a, b) = (uid("a").await, uid("b").await);
    let owned = |owner: &str, all: &[Pod]| {
        all.iter()
            .filter(|p| controller_uid(p).as_deref() == Some(owner))
            .count()
    };
    eventually("two pods each", T, || async {
        let all = active(&pods).await;
        all.len() == 4 && owned(&a, &all) == 2 && owned(&b, &all) == 2
    })
    .await;
    // Settled: no pod more is made or deleted, and each set counts its own two.
    let names = |all: Vec<Pod>| {
        let mut v: Vec<String> = all.into_iter().filter_map(|p| p.metadata.name).collect();
        v.sort();
        v
    };
    let settled = names(active(&pods).await);
    consistently("the same four pods", Duration::from_secs(2), || async {
        names(active(&pods).await) == settled
    })
    .await;
    for name in ["a", "b"] {
        let status = sets.get(name).await.unwrap().status.unwrap();
        assert_eq!(status.replicas, 2, "{name}");
    }
}
