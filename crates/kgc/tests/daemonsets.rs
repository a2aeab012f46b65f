//! The DaemonSet controller against a spawned `kgc serve` with every controller on and three
//! simulated nodes: a pod per node, bound by the scheduler through the node affinity the
//! controller pins it with; a node that joins gets one; node selectors and taints restrict the
//! nodes; a new template rolls the pods and keeps the ControllerRevisions within
//! `revisionHistoryLimit`; deleting the DaemonSet takes its pods and revisions with it.

kgc_testsupport::bind_kgc!();

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

fn daemon_set(name: &str, spec: Value) -> DaemonSet {
    let mut pod_spec = json!({
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "agent", "image": "agent:1"}],
    });
    if let (Some(p), Some(extra)) = (pod_spec.as_object_mut(), spec.as_object()) {
        p.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }))
    .unwrap()
}

/// The DaemonSet's pods not being deleted.
async fn pods_of(pods: &Api<Pod>, name: &str) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(&format!("app={name}")))
        .await
        .expect("listing pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn running(p: &Pod) -> bool {
    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// The nodes the DaemonSet's running pods are on, once there is exactly one per node.
async fn running_on(pods: &Api<Pod>, name: &str) -> Option<BTreeSet<String>> {
    let p = pods_of(pods, name).await;
    let nodes: BTreeSet<String> = p.iter().map(node_of).collect();
    (p.iter().all(running) && nodes.len() == p.len()).then_some(nodes)
}

fn set(names: &[&str]) -> Option<BTreeSet<String>> {
    Some(names.iter().map(|n| (*n).to_owned()).collect())
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_per_node_and_a_new_node_gets_one() {
    let s = Server::living(&["--in-memory", "--nodes", "3"]).await;
    let ns = fresh_namespace(&s.client(), "ds-per-node").await;
    let sets: Api<DaemonSet> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let ds = sets
        .create(&PostParams::default(), &daemon_set("agent", json!({})))
        .await
        .unwrap();
    let uid = ds.metadata.uid.clone().unwrap();
    eventually("a running pod on each node", T, || async {
        running_on(&pods, "agent").await == set(&["kgc-node-0", "kgc-node-1", "kgc-node-2"])
    })
    .await;
    for p in pods_of(&pods, "agent").await {
        let refs = p.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(
            (refs[0].kind.as_str(), refs[0].uid.as_str()),
            ("DaemonSet", uid.as_str())
        );
        assert_eq!(refs[0].controller, Some(true));
        let labels = p.metadata.labels.clone().unwrap_or_default();
        assert!(
            labels.contains_key("controller-revision-hash"),
            "{labels:?}"
        );
        assert!(labels.contains_key("pod-template-generation"), "{labels:?}");
        // Pinned by node affinity, bound by the scheduler.
        let spec = serde_json::to_value(p.spec.clone().unwrap()).unwrap();
        let term = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0];
        assert_eq!(term["key"], "metadata.name");
        assert_eq!(term["values"][0].as_str().unwrap(), node_of(&p));
    }
    eventually("the status counts them", T, || async {
        let ds = sets.get("agent").await.unwrap();
        let st = ds.status.unwrap_or_default();
        st.desired_number_scheduled == 3
            && st.current_number_scheduled == 3
            && st.number_ready == 3
            && st.number_available == Some(3)
            && st.updated_number_scheduled == Some(3)
            && st.number_misscheduled == 0
            && st.observed_generation == ds.metadata.generation
    })
    .await;

    // A node joins: it gets a pod too.
    let nodes: Api<Node> = Api::all(s.client());
    let extra: Node = serde_json::from_value(json!({
        "metadata": {"name": "joined", "annotations": {"kgc.io/simulated": "true"}},
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &extra).await.unwrap();
    eventually("a pod on the new node", T, || async {
        running_on(&pods, "agent").await
            == set(&["joined", "kgc-node-0", "kgc-node-1", "kgc-node-2"])
    })
    .await;
}

#[tokio::test]
async fn node_selectors_and_untolerated_taints_keep_daemon_pods_off_nodes() {
    let s = Server::living(&["--in-memory", "--nodes", "3"]).await;
    let ns = fresh_namespace(&s.client(), "ds-placement").await;
    let sets: Api<DaemonSet> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let nodes: Api<Node> = Api::all(s.client());
    let merge = |v: Value| Patch::Merge(v);
    nodes
        .patch(
            "kgc-node-1",
            &PatchParams::default(),
            &merge(json!({"metadata": {"labels": {"disk": "ssd"}}})),
        )
        .await
        .unwrap();
    nodes
        .patch(
            "kgc-node-2",
            &PatchParams::default(),
            &merge(json!({"spec": {"taints": [
                {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}})),
        )
        .await
        .unwrap();
    for ds in [
        daemon_set("ssd", json!({"nodeSelector": {"disk": "ssd"}})),
        daemon_set("plain", json!({})),
        daemon_set(
            "tolerant",
            json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
        ),
    ] {
        sets.create(&PostParams::default(), &ds).await.unwrap();
    }
    eventually("each on the nodes it may run on", T, || async {
        running_on(&pods, "ssd").await == set(&["kgc-node-1"])
            && running_on(&pods, "plain").await == set(&["kgc-node-0", "kgc-node-1"])
            && running_on(&pods, "tolerant").await
                == set(&["kgc-node-0", "kgc-node-1", "kgc-node-2"])
    })
    .await;
    eventually("the selector's status", T, || async {
        let st = sets.get("ssd").await.unwrap().status.unwrap_or_default();
        st.desired_number_scheduled == 1 && st.number_ready == 1
    })
    .await;

    // The label goes: so does the pod it placed.
    nodes
        .patch(
            "kgc-node-1",
            &PatchParams::default(),
            &merge(json!({"metadata": {"labels": {"disk": null}}})),
        )
        .await
        .unwrap();
    eventually("no node for the selector", T, || async {
        pods_of(&pods, "ssd").await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_new_template_rolls_the_pods_within_the_revision_history_limit_and_deletion_takes_them_all()
 {
    let s = Server::living(&["--in-memory", "--nodes", "3"]).await;
    let ns = fresh_namespace(&s.client(), "ds-rollout").await;
    let sets: Api<DaemonSet> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let revisions: Api<ControllerRevision> = Api::namespaced(s.client(), &ns);
    let mut ds = daemon_set("roll", json!({}));
    ds.spec.revision_history_limit = Some(1);
    sets.create(&PostParams::default(), &ds).await.unwrap();
    let image_everywhere = |image: String| {
        let pods = pods.clone();
        async move {
            let p = pods_of(&pods, "roll").await;
            p.len() == 3
                && p.iter().all(running)
                && p.iter().all(|p| {
                    p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some(image.as_str())
                })
        }
    };
    eventually("the first pods", T, || image_everywhere("agent:1".into())).await;
    for v in 2..=4 {
        let image = format!("agent:{v}");
        sets.patch(
            "roll",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "agent", "image": image}]}}}})),
        )
        .await
        .unwrap();
        eventually(&format!("every pod on {image}"), T, || {
            image_everywhere(image.clone())
        })
        .await;
    }
    eventually("the current revision and one more", T, || async {
        let r = revisions.list(&ListParams::default()).await.unwrap().items;
        let mut numbers: Vec<i64> = r.iter().filter_map(|r| r.revision).collect();
        numbers.sort_unstable();
        numbers == [3, 4]
    })
    .await;
    let st = sets.get("roll").await.unwrap().status.unwrap_or_default();
    assert_eq!(st.updated_number_scheduled, Some(3));
    let uid = sets.get("roll").await.unwrap().metadata.uid.unwrap();
    for r in revisions.list(&ListParams::default()).await.unwrap().items {
        let refs = r.metadata.owner_references.unwrap_or_default();
        assert_eq!(refs[0].uid, uid);
        assert_eq!(refs[0].controller, Some(true));
    }

    // Background deletion: the garbage collector takes the pods and the revisions.
    sets.delete("roll", &DeleteParams::background())
        .await
        .unwrap();
    eventually("pods and revisions gone", T, || async {
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
            && revisions
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_failed_daemon_pod_is_deleted_and_made_again() {
    let s = Server::living(&["--in-memory", "--nodes", "1"]).await;
    let ns = fresh_namespace(&s.client(), "ds-failed").await;
    let sets: Api<DaemonSet> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    sets.create(&PostParams::default(), &daemon_set("agent", json!({})))
        .await
        .unwrap();
    eventually("a running pod", T, || async {
        running_on(&pods, "agent").await == set(&["kgc-node-0"])
    })
    .await;
    let first = pods_of(&pods, "agent").await.remove(0);
    let first_uid = first.metadata.uid.clone().unwrap();
    pods.patch_status(
        first.metadata.name.as_deref().unwrap(),
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Failed"}})),
    )
    .await
    .unwrap();
    eventually("a new pod in its place", T, || async {
        let p = pods_of(&pods, "agent").await;
        p.len() == 1 && p[0].metadata.uid.as_deref() != Some(first_uid.as_str()) && running(&p[0])
    })
    .await;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(s.client(), &ns);
    eventually("the events", T, || async {
        let reasons: BTreeSet<String> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect();
        ["FailedDaemonPod", "SuccessfulCreate", "SuccessfulDelete"]
            .iter()
            .all(|r| reasons.contains(*r))
    })
    .await;
}
