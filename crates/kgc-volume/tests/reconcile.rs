//! The volume controllers' reconcile, each run alone (or the binder with the provisioner it
//! hands claims to) against an API server in the test process (`kgc-testcluster`), as upstream
//! tests `pkg/controller/volume/{persistentvolume,pvcprotection,pvprotection}` against fakes.

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kgc_testcluster::{DEADLINE, TestCluster, consistently, eventually};
use kgc_volume::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, annotations};
use kube::api::DeleteParams;
use serde_json::{Value, json};

fn claim(name: &str, class: &str) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}})
}

fn host_path_volume(name: &str, class: &str) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "2Gi"}, "hostPath": {"path": format!("/tmp/{name}")},
            "persistentVolumeReclaimPolicy": "Retain"}})
}

fn phase_of_claim(c: &PersistentVolumeClaim) -> Option<&str> {
    c.status.as_ref()?.phase.as_deref()
}

fn finalizers(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Vec<String> {
    meta.finalizers.clone().unwrap_or_default()
}

/// Upstream `TestSync` (`persistentvolume/binder_test.go`), "syncClaim binds to a matching
/// unbound volume": the volume gets the claim's reference (bound by the controller) and phase
/// Bound, the claim the volume's name, `bind-completed` and phase Bound with the volume's
/// capacity.
#[tokio::test]
async fn sync_binds_a_claim_to_a_matching_volume() {
    let mut c = TestCluster::start().await;
    c.run(kgc_volume::binder::run(c.context()));
    let ns = c.namespace("pv").await;
    c.create_cluster_scoped::<PersistentVolume>(host_path_volume("pv-small", "manual"))
        .await;
    let pvc: PersistentVolumeClaim = c.create(&ns, claim("data", "manual")).await;
    let claims = c.api::<PersistentVolumeClaim>(&ns);
    eventually("the claim Bound", DEADLINE, || async {
        phase_of_claim(&claims.get("data").await.unwrap()) == Some("Bound")
    })
    .await;
    let pvc_now = claims.get("data").await.unwrap();
    assert_eq!(
        pvc_now.spec.as_ref().unwrap().volume_name.as_deref(),
        Some("pv-small")
    );
    let ann = pvc_now.metadata.annotations.unwrap();
    assert_eq!(
        ann.get(annotations::BIND_COMPLETED).map(String::as_str),
        Some("yes")
    );
    let capacity = pvc_now.status.unwrap().capacity.unwrap();
    assert_eq!(capacity["storage"].0, "2Gi");
    let pv = c.all::<PersistentVolume>().get("pv-small").await.unwrap();
    let claim_ref = pv.spec.as_ref().unwrap().claim_ref.clone().unwrap();
    assert_eq!(claim_ref.uid, pvc.metadata.uid);
    assert_eq!(claim_ref.namespace.as_deref(), Some(ns.as_str()));
    assert_eq!(pv.status.unwrap().phase.as_deref(), Some("Bound"));
    let ann = pv.metadata.annotations.unwrap();
    assert_eq!(
        ann.get(annotations::BOUND_BY_CONTROLLER)
            .map(String::as_str),
        Some("yes")
    );
}

/// A claim of the default class (`standard`, `WaitForFirstConsumer`, which the provisioner
/// creates at start-up) is handed to `kgc.io/host-path` once the scheduler has chosen its node,
/// provisioned as a directory under the volumes root pinned to that node, and bound to it
/// (upstream `TestSync`'s "provision" cases with the external provisioner's
/// `controller_test.go`).
#[tokio::test]
async fn provisions_and_binds_a_claim_once_its_node_is_selected() {
    let root = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start().await;
    let config = kgc_volume::Config {
        root: Some(root.path().to_owned()),
    };
    c.run(kgc_volume::provisioner::run(c.context(), config));
    c.run(kgc_volume::binder::run(c.context()));
    let classes = c.all::<StorageClass>();
    eventually("the default class", DEADLINE, || async {
        classes.get_opt("standard").await.unwrap().is_some()
    })
    .await;
    // Labelled as its kubelet labels it: the volume is pinned to the node by this label.
    let node = json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}});
    c.create_cluster_scoped::<Node>(node).await;
    let ns = c.namespace("pv").await;
    let mut pvc = claim("data", "standard");
    pvc["metadata"]["annotations"] = json!({annotations::SELECTED_NODE: "n1"});
    c.create::<PersistentVolumeClaim>(&ns, pvc).await;
    let claims = c.api::<PersistentVolumeClaim>(&ns);
    eventually("the claim Bound", DEADLINE, || async {
        phase_of_claim(&claims.get("data").await.unwrap()) == Some("Bound")
    })
    .await;
    let pvc = claims.get("data").await.unwrap();
    let ann = pvc.metadata.annotations.unwrap();
    assert_eq!(
        ann.get(annotations::STORAGE_PROVISIONER)
            .map(String::as_str),
        Some(kgc_volume::PROVISIONER)
    );
    let volume = pvc.spec.unwrap().volume_name.unwrap();
    let pv = c.all::<PersistentVolume>().get(&volume).await.unwrap();
    let ann = pv.metadata.annotations.clone().unwrap();
    assert_eq!(
        ann.get(annotations::PROVISIONED_BY).map(String::as_str),
        Some(kgc_volume::PROVISIONER)
    );
    let spec = pv.spec.unwrap();
    let dir = spec.host_path.unwrap().path;
    assert!(std::path::Path::new(&dir).is_dir(), "{dir} made");
    assert!(
        std::path::Path::new(&dir).starts_with(root.path().canonicalize().unwrap()),
        "{dir} under the root"
    );
    let terms = spec
        .node_affinity
        .unwrap()
        .required
        .unwrap()
        .node_selector_terms;
    assert!(
        serde_json::to_string(&terms).unwrap().contains("\"n1\""),
        "{terms:?}"
    );
}

/// Upstream `TestPVCProtectionController`: a claim gets the finalizer; deleted while a
/// scheduled pod uses it, it keeps it; once the pod is gone the finalizer goes, and the claim
/// with it.
#[tokio::test]
async fn pvc_protection_controller() {
    let mut c = TestCluster::start().await;
    c.run(kgc_volume::protection::run_pvc(c.context()));
    let ns = c.namespace("pvc").await;
    // Created without it (the admission plugin would add it): the controller adds it.
    let mut pvc = claim("data", "manual");
    pvc["metadata"]["finalizers"] = json!([]);
    c.create::<PersistentVolumeClaim>(&ns, pvc).await;
    let claims = c.api::<PersistentVolumeClaim>(&ns);
    eventually("the claim protected", DEADLINE, || async {
        finalizers(&claims.get("data").await.unwrap().metadata)
            .contains(&PVC_PROTECTION_FINALIZER.to_owned())
    })
    .await;
    let pod = json!({"metadata": {"name": "user"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "registry.example/app:1"}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}});
    c.create::<Pod>(&ns, pod).await;
    claims
        .delete("data", &DeleteParams::default())
        .await
        .unwrap();
    consistently(
        "the claim in use kept",
        std::time::Duration::from_millis(300),
        || async { claims.get_opt("data").await.unwrap().is_some() },
    )
    .await;
    c.api::<Pod>(&ns)
        .delete("user", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    eventually("the claim gone once unused", DEADLINE, || async {
        claims.get_opt("data").await.unwrap().is_none()
    })
    .await;
}

/// Upstream `TestPVProtectionController`: a volume gets the finalizer, and a deleted volume
/// that is not Bound loses it and goes.
#[tokio::test]
async fn pv_protection_controller() {
    let mut c = TestCluster::start().await;
    c.run(kgc_volume::protection::run_pv(c.context()));
    let mut pv = host_path_volume("pv-free", "manual");
    pv["metadata"]["finalizers"] = json!([]);
    c.create_cluster_scoped::<PersistentVolume>(pv).await;
    let volumes = c.all::<PersistentVolume>();
    eventually("the volume protected", DEADLINE, || async {
        finalizers(&volumes.get("pv-free").await.unwrap().metadata)
            .contains(&PV_PROTECTION_FINALIZER.to_owned())
    })
    .await;
    volumes
        .delete("pv-free", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the unbound volume gone", DEADLINE, || async {
        volumes.get_opt("pv-free").await.unwrap().is_none()
    })
    .await;
}
