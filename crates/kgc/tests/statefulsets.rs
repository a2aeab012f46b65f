//! The StatefulSet controller against a spawned `kgc serve` with every controller on (simulated
//! nodes, scheduler, kubelet, volume provisioner and binder, the owner-reference GC), nothing
//! forged: upstream's e2e scenarios (`test/e2e/apps/statefulset.go`) for ordered identity,
//! scaling order, `persistentVolumeClaimRetentionPolicy` (StatefulSetAutoDeletePVC: the
//! controller sets owner references on the claims, the GC deletes them) and rolling updates
//! with their ControllerRevision history, and kubectl's rollout commands over them.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// The e2e suite's `web` set: nginx behind the headless service `test`, one claim template
/// `www`; pods end within a second of their deletion.
fn web(replicas: i32, spec: Value) -> StatefulSet {
    let mut set = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "test",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "nginx", "image": "nginx:1.25",
                                    "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}],
                },
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    });
    for (k, v) in spec.as_object().into_iter().flatten() {
        set["spec"][k] = v.clone();
    }
    typed(set)
}

struct Fixture {
    server: Server,
    ns: String,
    sets: Api<StatefulSet>,
    pods: Api<Pod>,
    claims: Api<PersistentVolumeClaim>,
    revisions: Api<ControllerRevision>,
    events: Api<Event>,
}

async fn fixture(prefix: &str) -> Fixture {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, prefix).await;
    Fixture {
        sets: Api::namespaced(c.clone(), &ns),
        pods: Api::namespaced(c.clone(), &ns),
        claims: Api::namespaced(c.clone(), &ns),
        revisions: Api::namespaced(c.clone(), &ns),
        events: Api::namespaced(c, &ns),
        ns,
        server: s,
    }
}

impl Fixture {
    async fn create(&self, set: &StatefulSet) -> StatefulSet {
        self.sets
            .create(&PostParams::default(), set)
            .await
            .expect("creating the StatefulSet")
    }

    async fn scale(&self, replicas: i32) {
        self.sets
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("scaling");
    }

    /// The names of the pods not being deleted, sorted.
    async fn pod_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .pods
            .list(&ListParams::default())
            .await
            .expect("pods")
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name)
            .collect();
        names.sort();
        names
    }

    async fn claim_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .claims
            .list(&ListParams::default())
            .await
            .expect("claims")
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        names.sort();
        names
    }

    async fn ready(&self, name: &str) -> bool {
        self.pods
            .get_opt(name)
            .await
            .unwrap()
            .is_some_and(|p| running_and_ready(&p))
    }

    async fn all_ready(&self, n: i32) {
        let names: Vec<String> = (0..n).map(|i| format!("web-{i}")).collect();
        eventually(&format!("{names:?} running and ready"), T, || async {
            for n in &names {
                if !self.ready(n).await {
                    return false;
                }
            }
            true
        })
        .await;
    }

    async fn status(&self) -> k8s_openapi::api::apps::v1::StatefulSetStatus {
        self.sets
            .get("web")
            .await
            .unwrap()
            .status
            .unwrap_or_default()
    }

    async fn event_messages(&self, reason: &str) -> Vec<String> {
        self.events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect()
    }
}

fn running_and_ready(p: &Pod) -> bool {
    let status = p.status.clone().unwrap_or_default();
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn claim_owner_kinds(c: &PersistentVolumeClaim) -> Vec<String> {
    c.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.kind.clone())
        .collect()
}

/// Upstream e2e "should provide basic identity", with OrderedReady's guarantee checked on the
/// way: a pod of ordinal N is never seen before N-1 is Running and Ready.
#[tokio::test]
async fn should_provide_basic_identity() {
    let f = fixture("identity").await;
    let set = f.create(&web(3, json!({}))).await;
    let set_uid = set.metadata.uid.clone().unwrap();
    eventually("web-0..2 created in order", T, || async {
        let names = f.pod_names().await;
        for i in 1..names.len() {
            let earlier = format!("web-{}", i - 1);
            assert!(
                names.contains(&earlier),
                "web-{i} exists before {earlier}: {names:?}"
            );
        }
        if let Some(last) = names.last() {
            let n: usize = last.trim_start_matches("web-").parse().unwrap();
            for i in 0..n {
                // Pods do not become unready here: the earlier ones must be ready already.
                assert!(
                    f.ready(&format!("web-{i}")).await,
                    "{last} before web-{i} was ready"
                );
            }
        }
        names == ["web-0", "web-1", "web-2"]
    })
    .await;
    f.all_ready(3).await;

    for i in 0..3 {
        let name = format!("web-{i}");
        let p = f.pods.get(&name).await.unwrap();
        let refs = p.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(
            (
                refs[0].kind.as_str(),
                refs[0].name.as_str(),
                refs[0].uid.as_str()
            ),
            ("StatefulSet", "web", set_uid.as_str())
        );
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].block_owner_deletion, Some(true));
        let labels = p.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["statefulset.kubernetes.io/pod-name"], name);
        assert_eq!(labels["apps.kubernetes.io/pod-index"], i.to_string());
        assert!(labels["controller-revision-hash"].starts_with("web-"));
        let spec = p.spec.clone().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some(name.as_str()));
        assert_eq!(spec.subdomain.as_deref(), Some("test"));
        let claim = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "www")
            .and_then(|v| v.persistent_volume_claim.clone())
            .expect("the www volume is a claim");
        assert_eq!(claim.claim_name, format!("www-{name}"));
    }
    eventually("www-web-0..2 bound", T, || async {
        let claims = f.claims.list(&ListParams::default()).await.unwrap().items;
        claims.len() == 3
            && claims
                .iter()
                .all(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await;
    assert_eq!(
        f.claim_names().await,
        ["www-web-0", "www-web-1", "www-web-2"]
    );
    for c in f.claims.list(&ListParams::default()).await.unwrap().items {
        assert!(claim_owner_kinds(&c).is_empty(), "Retain/Retain: {c:?}");
        assert_eq!(c.metadata.labels.unwrap_or_default()["app"], "web");
    }
    eventually("the status counts them", T, || async {
        let st = f.status().await;
        st.replicas == 3
            && st.ready_replicas == Some(3)
            && st.available_replicas == Some(3)
            && st.current_replicas == Some(3)
            && st.updated_replicas == Some(3)
            && st.current_revision.is_some()
            && st.current_revision == st.update_revision
            && st.observed_generation == Some(1)
            && st.collision_count == Some(0)
    })
    .await;
    let created = f.event_messages("SuccessfulCreate").await;
    for m in [
        "create Pod web-0 in StatefulSet web successful",
        "create Claim www-web-0 Pod web-0 in StatefulSet web success",
        "create Pod web-2 in StatefulSet web successful",
    ] {
        assert!(created.iter().any(|c| c == m), "{m:?} in {created:?}");
    }
}

/// Upstream e2e "Scaling should happen in predictable order": scale-down removes the highest
/// ordinal first, one at a time; the claims stay (Retain, the default) and are used again.
#[tokio::test]
async fn scaling_should_happen_in_predictable_order_and_retain_claims_by_default() {
    let f = fixture("scaling").await;
    f.create(&web(3, json!({}))).await;
    f.all_ready(3).await;
    f.scale(1).await;
    eventually("web-2 goes first, then web-1", T, || async {
        let names = f.pod_names().await;
        assert!(
            !names.contains(&"web-2".to_owned()) || names.contains(&"web-1".to_owned()),
            "web-1 removed before web-2: {names:?}"
        );
        names == ["web-0"]
    })
    .await;
    let deleted = f.event_messages("SuccessfulDelete").await;
    assert!(
        deleted.contains(&"delete Pod web-2 in StatefulSet web successful".to_owned()),
        "{deleted:?}"
    );
    assert_eq!(
        f.claim_names().await,
        ["www-web-0", "www-web-1", "www-web-2"],
        "Retain keeps the claims"
    );
    f.scale(2).await;
    f.all_ready(2).await;
    assert_eq!(
        f.claim_names().await,
        ["www-web-0", "www-web-1", "www-web-2"],
        "web-1 uses its claim again"
    );
}

/// Upstream e2e "should delete PVCs with a OnScaledown policy": scaling 3 → 1 gives the claims
/// of web-1 and web-2 to their pods, and the GC deletes them with the pods; www-web-0 stays.
#[tokio::test]
async fn should_delete_pvcs_with_a_on_scaledown_policy() {
    let f = fixture("onscaledown").await;
    f.create(&web(
        3,
        json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete", "whenDeleted": "Retain"}}),
    ))
    .await;
    f.all_ready(3).await;
    eventually("three claims", T, || async {
        f.claim_names().await.len() == 3
    })
    .await;
    for c in f.claims.list(&ListParams::default()).await.unwrap().items {
        assert!(
            claim_owner_kinds(&c).is_empty(),
            "in range: no reference {c:?}"
        );
    }
    f.scale(1).await;
    eventually("the scaled-down claims collected", T, || async {
        f.claim_names().await == ["www-web-0"] && f.pod_names().await == ["web-0"]
    })
    .await;
    let kept = f.claims.get("www-web-0").await.unwrap();
    assert!(claim_owner_kinds(&kept).is_empty());
}

/// Upstream e2e "should delete PVCs with a WhenDeleted policy": every claim gets a controller
/// reference to the set, and deleting the set deletes them; a later scale-down under
/// `whenScaled: Retain` keeps the claim.
#[tokio::test]
async fn should_delete_pvcs_with_a_when_deleted_policy() {
    let f = fixture("whendeleted").await;
    let set = f
        .create(&web(
            2,
            json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}}),
        ))
        .await;
    let set_uid = set.metadata.uid.unwrap();
    f.all_ready(2).await;
    eventually("both claims owned by the set", T, || async {
        let claims = f.claims.list(&ListParams::default()).await.unwrap().items;
        claims.len() == 2
            && claims.iter().all(|c| {
                c.metadata.owner_references.iter().flatten().any(|r| {
                    r.kind == "StatefulSet"
                        && r.uid == set_uid
                        && r.controller == Some(true)
                        && r.block_owner_deletion == Some(true)
                })
            })
    })
    .await;
    f.scale(1).await;
    eventually("web-1 gone", T, || async {
        f.pod_names().await == ["web-0"]
    })
    .await;
    assert_eq!(
        f.claim_names().await,
        ["www-web-0", "www-web-1"],
        "whenScaled: Retain"
    );

    f.sets
        .delete("web", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the set's pods and claims collected", T, || async {
        f.claim_names().await.is_empty() && f.pod_names().await.is_empty()
    })
    .await;
}

/// Changing the policy to Retain removes the references an earlier policy set (upstream
/// `updateClaimOwnerRefForSetAndPod` scrubs them), so deleting the set keeps the claims.
#[tokio::test]
async fn a_retain_policy_removes_earlier_references_and_keeps_the_claims() {
    let f = fixture("retain").await;
    f.create(&web(
        1,
        json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}),
    ))
    .await;
    f.all_ready(1).await;
    eventually("the claim owned by the set", T, || async {
        f.claims
            .get_opt("www-web-0")
            .await
            .unwrap()
            .is_some_and(|c| claim_owner_kinds(&c) == ["StatefulSet"])
    })
    .await;
    f.sets
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}})),
        )
        .await
        .unwrap();
    eventually("the reference removed", T, || async {
        claim_owner_kinds(&f.claims.get("www-web-0").await.unwrap()).is_empty()
    })
    .await;
    f.sets
        .delete("web", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the pod collected", T, || async {
        f.pod_names().await.is_empty()
    })
    .await;
    assert_eq!(f.claim_names().await, ["www-web-0"]);
}

/// Upstream e2e "should perform rolling updates and roll backs of template modifications",
/// with the history limit: each image gets a ControllerRevision, pods are replaced from the
/// highest ordinal down, and no more than `revisionHistoryLimit` old revisions remain.
#[tokio::test]
async fn should_perform_rolling_updates_and_roll_backs_of_template_modifications() {
    let f = fixture("rolling").await;
    let mut set = web(3, json!({"revisionHistoryLimit": 1}));
    // Each old pod takes its 1 s grace period to stop (simulated pods stop at once by
    // default), so that the order of replacement can be observed.
    set.spec
        .template
        .metadata
        .get_or_insert_default()
        .annotations = Some(
        [("kgc.io/stop-after".to_owned(), "1s".to_owned())]
            .into_iter()
            .collect(),
    );
    f.create(&set).await;
    f.all_ready(3).await;
    let first = f.status().await.update_revision.expect("a revision");

    let image = |tag: &str| {
        Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": format!("nginx:{tag}")}]}}}}))
    };
    f.sets
        .patch("web", &PatchParams::default(), &image("1.26"))
        .await
        .unwrap();
    let order = std::cell::RefCell::new(Vec::<String>::new());
    eventually("every pod at the new revision", T, || async {
        let st = f.status().await;
        let Some(update) = st.update_revision.clone().filter(|u| *u != first) else {
            return false;
        };
        let pods = f.pods.list(&ListParams::default()).await.unwrap().items;
        let mut updated = Vec::new();
        for p in &pods {
            let labels = p.metadata.labels.clone().unwrap_or_default();
            if labels.get("controller-revision-hash") == Some(&update) {
                updated.push(p.metadata.name.clone().unwrap());
            }
        }
        let mut order = order.borrow_mut();
        for name in updated {
            if !order.contains(&name) {
                order.push(name);
            }
        }
        st.current_revision.as_ref() == Some(&update)
            && st.updated_replicas == Some(3)
            && st.ready_replicas == Some(3)
    })
    .await;
    assert_eq!(
        order.into_inner(),
        ["web-2", "web-1", "web-0"],
        "highest ordinal first"
    );
    for p in f.pods.list(&ListParams::default()).await.unwrap().items {
        let image = p.spec.unwrap().containers[0].image.clone();
        assert_eq!(image.as_deref(), Some("nginx:1.26"));
    }

    // Two more templates: the oldest revision beyond the limit goes.
    for tag in ["1.27", "1.26"] {
        let before = f.status().await.update_revision;
        f.sets
            .patch("web", &PatchParams::default(), &image(tag))
            .await
            .unwrap();
        eventually(&format!("rolled to {tag}"), T, || async {
            let st = f.status().await;
            st.update_revision != before
                && st.current_revision == st.update_revision
                && st.updated_replicas == Some(3)
                && st.ready_replicas == Some(3)
        })
        .await;
    }
    let rolled_back = f.status().await.update_revision.unwrap();
    eventually("one old revision kept besides the current", T, || async {
        let revs = f
            .revisions
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        revs.len() == 2
    })
    .await;
    let revs = f
        .revisions
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let names: Vec<String> = revs
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    assert!(
        !names.contains(&first),
        "the first revision went: {names:?}"
    );
    let current = revs
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(rolled_back.as_str()))
        .expect("the current revision");
    assert_eq!(
        current.revision,
        revs.iter().map(|r| r.revision).max().unwrap(),
        "rolling back to 1.26 gives its revision the next number"
    );
    for r in &revs {
        let owner = &r.metadata.owner_references.clone().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("StatefulSet", Some(true))
        );
    }
}

/// Upstream e2e "should not delete PVC with OnScaledown policy if another controller owns the
/// PVC": a claim another controller holds is left to that controller (upstream
/// `isClaimOwnerUpToDate` counts it as up to date) and outlives its scaled-down pod, while the
/// other scaled-down claim is collected.
#[tokio::test]
async fn should_not_delete_pvc_with_on_scaledown_policy_if_another_controller_owns_the_pvc() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let f = fixture("conflict").await;
    f.create(&web(
        3,
        json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}),
    ))
    .await;
    f.all_ready(3).await;
    let maps: Api<ConfigMap> = Api::namespaced(f.server.client(), &f.ns);
    let owner = maps
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "owner"}})),
        )
        .await
        .unwrap();
    f.claims
        .patch(
            "www-web-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner.metadata.uid, "controller": true}]}})),
        )
        .await
        .unwrap();
    f.scale(1).await;
    eventually("web-1 and web-2 gone, www-web-2 collected", T, || async {
        f.pod_names().await == ["web-0"] && f.claim_names().await == ["www-web-0", "www-web-1"]
    })
    .await;
    let kept = f.claims.get("www-web-1").await.expect("the claim stays");
    assert_eq!(claim_owner_kinds(&kept), ["ConfigMap"]);
}

/// Upstream e2e "should implement legacy replacement when the update strategy is OnDelete": a
/// new template replaces no pod until the pod is deleted, which comes back at the new revision.
#[tokio::test]
async fn should_implement_legacy_replacement_when_the_update_strategy_is_on_delete() {
    let f = fixture("ondelete").await;
    f.create(&web(2, json!({"updateStrategy": {"type": "OnDelete"}})))
        .await;
    f.all_ready(2).await;
    let uid_of = |p: Pod| p.metadata.uid.unwrap();
    let before = uid_of(f.pods.get("web-1").await.unwrap());
    f.sets
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.26"}]}}}})),
        )
        .await
        .unwrap();
    eventually("a new update revision", T, || async {
        let st = f.status().await;
        st.update_revision.is_some() && st.update_revision != st.current_revision
    })
    .await;
    let update = f.status().await.update_revision.unwrap();
    assert_eq!(
        uid_of(f.pods.get("web-1").await.unwrap()),
        before,
        "not replaced"
    );
    f.pods
        .delete("web-1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("web-1 back at the update revision", T, || async {
        f.pods.get_opt("web-1").await.unwrap().is_some_and(|p| {
            p.metadata.uid.as_deref() != Some(before.as_str())
                && p.metadata.labels.clone().unwrap_or_default()["controller-revision-hash"]
                    == update
                && running_and_ready(&p)
        })
    })
    .await;
    // The controller counts the new pod in its next status write, after the pod went Ready.
    eventually("one updated and one current replica", T, || async {
        let st = f.status().await;
        (st.updated_replicas, st.current_replicas) == (Some(1), Some(1))
    })
    .await;
}

/// Upstream e2e "Burst scaling should run to completion even with unhealthy pods": Parallel
/// creates every pod without waiting for the others to be ready, and deletes them all at once.
#[tokio::test]
async fn burst_scaling_should_run_to_completion_even_with_unhealthy_pods() {
    let f = fixture("burst").await;
    // A readiness gate nothing sets: Running, never Ready.
    let mut set = web(3, json!({"podManagementPolicy": "Parallel"}));
    if let Some(spec) = set.spec.template.spec.as_mut() {
        spec.readiness_gates = Some(vec![typed(json!({"conditionType": "example.com/never"}))]);
    }
    f.create(&set).await;
    eventually("three pods, none ready", T, || async {
        f.pod_names().await == ["web-0", "web-1", "web-2"]
    })
    .await;
    for i in 0..3 {
        assert!(!f.ready(&format!("web-{i}")).await);
    }
    f.scale(0).await;
    eventually("no pods", T, || async { f.pod_names().await.is_empty() }).await;
}

/// kubectl's rollout commands read what the controller writes: `rollout status` waits on the
/// status, `rollout history` lists the ControllerRevisions, `rollout undo` applies the previous
/// revision's data back to the set, which rolls the pods back.
#[tokio::test]
async fn kubectl_rollout_status_history_and_undo() {
    let f = fixture("rollout").await;
    let s = &f.server;
    f.create(&web(2, json!({}))).await;
    let status = s
        .kubectl_ok(&[
            "rollout",
            "status",
            "-n",
            &f.ns,
            "statefulset/web",
            "--timeout=30s",
        ])
        .await;
    assert!(
        status.contains("partitioned roll out complete: 2 new pods have been updated"),
        "{status}"
    );
    s.kubectl_ok(&[
        "set",
        "image",
        "-n",
        &f.ns,
        "statefulset/web",
        "nginx=nginx:1.26",
    ])
    .await;
    s.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        &f.ns,
        "statefulset/web",
        "--timeout=30s",
    ])
    .await;
    let history = s
        .kubectl_ok(&["rollout", "history", "-n", &f.ns, "statefulset/web"])
        .await;
    assert!(history.contains('1') && history.contains('2'), "{history}");
    s.kubectl_ok(&["rollout", "undo", "-n", &f.ns, "statefulset/web"])
        .await;
    s.kubectl_ok(&[
        "rollout",
        "status",
        "-n",
        &f.ns,
        "statefulset/web",
        "--timeout=30s",
    ])
    .await;
    eventually("the pods back at nginx:1.25", T, || async {
        let pods = f.pods.list(&ListParams::default()).await.unwrap().items;
        pods.len() == 2
            && pods.iter().all(|p| {
                p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:1.25")
            })
    })
    .await;
}
