//! Volumes end to end, nothing forged: a spawned `kgc serve` with every controller on
//! ([`Server::living`]) provisions host-path volumes under `DATA_DIR/volumes`, binds claims,
//! protects claims in use, and the `pv` collector reclaims what was released.

kgc_testsupport::bind_kgc!();

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kgc_testsupport::{consistently, eventually, fresh_namespace, typed};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

async fn class(c: &Client, name: &str, mode: &str, policy: &str) {
    let sc: StorageClass = typed(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": "kgc.io/host-path",
        "reclaimPolicy": policy, "volumeBindingMode": mode,
    }));
    Api::<StorageClass>::all(c.clone())
        .create(&PostParams::default(), &sc)
        .await
        .expect("creating a StorageClass");
}

async fn claim(
    c: &Client,
    ns: &str,
    name: &str,
    class: Option<&str>,
    size: &str,
) -> PersistentVolumeClaim {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"],
                          "resources": {"requests": {"storage": size}}});
    if let Some(class) = class {
        spec["storageClassName"] = json!(class);
    }
    let pvc: PersistentVolumeClaim = typed(json!({"metadata": {"name": name}, "spec": spec}));
    Api::<PersistentVolumeClaim>::namespaced(c.clone(), ns)
        .create(&PostParams::default(), &pvc)
        .await
        .expect("creating a claim")
}

async fn get_claim(c: &Client, ns: &str, name: &str) -> Option<PersistentVolumeClaim> {
    Api::<PersistentVolumeClaim>::namespaced(c.clone(), ns)
        .get_opt(name)
        .await
        .expect("GET claim")
}

async fn get_pv(c: &Client, name: &str) -> Option<PersistentVolume> {
    Api::<PersistentVolume>::all(c.clone())
        .get_opt(name)
        .await
        .expect("GET volume")
}

fn phase_of(c: &PersistentVolumeClaim) -> &str {
    c.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn pv_phase(v: &PersistentVolume) -> &str {
    v.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Waits for the claim to be Bound; returns it.
async fn bound(c: &Client, ns: &str, name: &str) -> PersistentVolumeClaim {
    eventually(&format!("claim {ns}/{name} Bound"), DEADLINE, || async {
        get_claim(c, ns, name)
            .await
            .is_some_and(|p| phase_of(&p) == "Bound")
    })
    .await;
    get_claim(c, ns, name).await.expect("the claim")
}

fn annotation<'a>(
    m: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    k: &str,
) -> Option<&'a str> {
    m.annotations.as_ref()?.get(k).map(String::as_str)
}

fn volume_name(pvc: &PersistentVolumeClaim) -> String {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .expect("spec.volumeName")
}

fn host_path(pv: &PersistentVolume) -> PathBuf {
    PathBuf::from(
        &pv.spec
            .as_ref()
            .and_then(|s| s.host_path.as_ref())
            .expect("hostPath")
            .path,
    )
}

async fn events_of(c: &Client, ns: &str, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(c.clone(), ns)
        .list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .collect()
}

async fn has_event(c: &Client, ns: &str, name: &str, reason: &str) -> bool {
    events_of(c, ns, name)
        .await
        .iter()
        .any(|e| e.reason.as_deref() == Some(reason))
}

/// An Immediate claim is provisioned and bound at once, with upstream's annotations, phases
/// and finalizers; deleting it releases the volume, and the `pv` collector deletes the
/// directory and the volume (Delete), or keeps both (Retain).
#[tokio::test]
async fn immediate_claims_are_provisioned_bound_and_reclaimed_by_policy() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "vol").await;
    class(&c, "fast", "Immediate", "Delete").await;
    class(&c, "keep", "Immediate", "Retain").await;
    let created = claim(&c, &ns, "data", Some("fast"), "64Mi").await;
    let uid = created.metadata.uid.clone().unwrap();
    let pvc = bound(&c, &ns, "data").await;
    let name = volume_name(&pvc);
    assert_eq!(name, format!("pvc-{uid}"));
    assert_eq!(
        annotation(&pvc.metadata, "pv.kubernetes.io/bind-completed"),
        Some("yes")
    );
    assert_eq!(
        annotation(&pvc.metadata, "pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );
    for a in [
        "volume.kubernetes.io/storage-provisioner",
        "volume.beta.kubernetes.io/storage-provisioner",
    ] {
        assert_eq!(
            annotation(&pvc.metadata, a),
            Some("kgc.io/host-path"),
            "{a}"
        );
    }
    assert_eq!(
        pvc.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pvc-protection".to_owned()][..])
    );
    let status = pvc.status.as_ref().unwrap();
    assert_eq!(status.capacity.as_ref().unwrap()["storage"].0, "64Mi");
    assert_eq!(
        status.access_modes.as_deref(),
        Some(&["ReadWriteOnce".to_owned()][..])
    );

    let pv = get_pv(&c, &name).await.expect("the provisioned volume");
    assert_eq!(pv_phase(&pv), "Bound");
    assert_eq!(
        annotation(&pv.metadata, "pv.kubernetes.io/provisioned-by"),
        Some("kgc.io/host-path")
    );
    assert_eq!(
        annotation(&pv.metadata, "pv.kubernetes.io/bound-by-controller"),
        None
    );
    assert_eq!(
        pv.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pv-protection".to_owned()][..])
    );
    let spec = pv.spec.as_ref().unwrap();
    assert_eq!(
        spec.claim_ref.as_ref().unwrap().uid.as_deref(),
        Some(uid.as_str())
    );
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(spec.capacity.as_ref().unwrap()["storage"].0, "64Mi");
    assert!(spec.node_affinity.is_none(), "Immediate: no node chosen");
    let dir = host_path(&pv);
    let root = s.data_dir().join("volumes").canonicalize().unwrap();
    assert_eq!(dir, root.join(&name));
    assert!(dir.is_dir(), "the volume's directory exists");
    for reason in [
        "ExternalProvisioning",
        "Provisioning",
        "ProvisioningSucceeded",
    ] {
        eventually(&format!("a {reason} event"), DEADLINE, || {
            has_event(&c, &ns, "data", reason)
        })
        .await;
    }

    let kept = claim(&c, &ns, "kept", Some("keep"), "16Mi").await;
    let kept_name = volume_name(&bound(&c, &ns, "kept").await);
    assert_eq!(kept_name, format!("pvc-{}", kept.metadata.uid.unwrap()));
    let kept_dir = root.join(&kept_name);
    std::fs::write(kept_dir.join("file"), "x").unwrap();

    let claims = Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns);
    for n in ["data", "kept"] {
        claims
            .delete(n, &DeleteParams::default())
            .await
            .expect("deleting a claim");
    }
    eventually("the Delete volume to go", DEADLINE, || async {
        get_pv(&c, &name).await.is_none()
    })
    .await;
    assert!(!dir.exists(), "its directory is removed");
    eventually("the Retain volume to be Released", DEADLINE, || async {
        get_pv(&c, &kept_name)
            .await
            .is_some_and(|v| pv_phase(&v) == "Released")
    })
    .await;
    assert!(
        kept_dir.join("file").exists(),
        "a retained volume keeps its data"
    );
    eventually("the claims to go", DEADLINE, || async {
        get_claim(&c, &ns, "data").await.is_none() && get_claim(&c, &ns, "kept").await.is_none()
    })
    .await;
}

/// The default class `standard` exists (WaitForFirstConsumer); DefaultStorageClass gives it to
/// a claim naming no class (not to one naming `""`). Such a claim stays Pending, told why,
/// until the scheduler's annotation `volume.kubernetes.io/selected-node` appears (set by hand
/// here); then it is provisioned with node affinity to that node and bound.
#[tokio::test]
async fn wait_for_first_consumer_claims_are_provisioned_on_the_selected_node() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "wffc").await;
    // The volume controllers create it once they start, just after the server serves.
    let classes = Api::<StorageClass>::all(c.clone());
    eventually("the default class", Duration::from_secs(30), || async {
        classes.get_opt("standard").await.unwrap().is_some()
    })
    .await;
    let sc = classes.get("standard").await.expect("the default class");
    assert_eq!(
        annotation(&sc.metadata, "storageclass.kubernetes.io/is-default-class"),
        Some("true")
    );
    assert_eq!(sc.provisioner, "kgc.io/host-path");
    assert_eq!(sc.reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(
        sc.volume_binding_mode.as_deref(),
        Some("WaitForFirstConsumer")
    );

    let pvc = claim(&c, &ns, "later", None, "8Mi").await;
    assert_eq!(
        pvc.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    // Server-side apply creating a claim is admitted the same way.
    let applied = Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
        .patch(
            "applied",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "applied"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Mi"}}}})),
        )
        .await
        .expect("applying a claim");
    assert_eq!(
        applied.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    assert_eq!(
        applied.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pvc-protection".to_owned()][..])
    );
    let none = claim(&c, &ns, "classless", Some(""), "8Mi").await;
    assert_eq!(
        none.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("")
    );

    eventually("a WaitForFirstConsumer event", DEADLINE, || {
        has_event(&c, &ns, "later", "WaitForFirstConsumer")
    })
    .await;
    consistently("the claim to wait", Duration::from_secs(1), || async {
        get_claim(&c, &ns, "later")
            .await
            .is_some_and(|p| phase_of(&p) == "Pending")
    })
    .await;
    let name = format!("pvc-{}", pvc.metadata.uid.unwrap());
    assert!(get_pv(&c, &name).await.is_none());

    Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
        .patch(
            "later",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "kgc-node-0"}}})),
        )
        .await
        .expect("selecting a node");
    let pvc = bound(&c, &ns, "later").await;
    assert_eq!(volume_name(&pvc), name);
    let pv = get_pv(&c, &name).await.unwrap();
    let affinity =
        serde_json::to_value(pv.spec.as_ref().unwrap().node_affinity.as_ref().unwrap()).unwrap();
    assert_eq!(
        affinity,
        json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["kgc-node-0"]}]}]}})
    );
    assert!(host_path(&pv).is_dir());
    assert_eq!(
        phase_of(&get_claim(&c, &ns, "classless").await.unwrap()),
        "Pending"
    );
    eventually(
        "a FailedBinding event for the claim of no class",
        DEADLINE,
        || has_event(&c, &ns, "classless", "FailedBinding"),
    )
    .await;
}

/// A claim a scheduled pod uses keeps `kubernetes.io/pvc-protection` after its deletion until the
/// pod is gone; then the claim goes, and its volume with it.
#[tokio::test]
async fn a_claim_in_use_is_kept_until_its_pod_is_deleted() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "inuse").await;
    class(&c, "fast", "Immediate", "Delete").await;
    claim(&c, &ns, "data", Some("fast"), "8Mi").await;
    let name = volume_name(&bound(&c, &ns, "data").await);
    let pod: Pod = typed(json!({"metadata": {"name": "user"}, "spec": {
        "nodeName": "kgc-node-0",
        "containers": [{"name": "c", "image": "busybox",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}));
    let pods = Api::<Pod>::namespaced(c.clone(), &ns);
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
    let claims = Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns);
    claims
        .delete("data", &DeleteParams::default())
        .await
        .expect("deleting the claim");
    consistently(
        "the claim in use to stay",
        Duration::from_secs(2),
        || async {
            get_claim(&c, &ns, "data").await.is_some_and(|p| {
                p.metadata.deletion_timestamp.is_some()
                    && p.metadata.finalizers.as_deref()
                        == Some(&["kubernetes.io/pvc-protection".to_owned()][..])
            })
        },
    )
    .await;
    assert_eq!(
        get_pv(&c, &name)
            .await
            .map(|v| pv_phase(&v).to_owned())
            .as_deref(),
        Some("Bound")
    );
    pods.delete(
        "user",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .expect("deleting the pod");
    eventually("the claim to go", DEADLINE, || async {
        get_claim(&c, &ns, "data").await.is_none()
    })
    .await;
    eventually("its volume to go", DEADLINE, || async {
        get_pv(&c, &name).await.is_none()
    })
    .await;
}

/// A claim larger than the free space of the volumes root: a ProvisioningFailed Warning naming
/// the claim and the sizes, the claim stays Pending, nothing is created.
#[tokio::test]
async fn a_claim_larger_than_the_disk_is_refused() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "huge").await;
    class(&c, "fast", "Immediate", "Delete").await;
    let pvc = claim(&c, &ns, "huge", Some("fast"), "1Ei").await;
    let name = format!("pvc-{}", pvc.metadata.uid.unwrap());
    let failed = |e: &Event| {
        e.reason.as_deref() == Some("ProvisioningFailed") && e.type_.as_deref() == Some("Warning")
    };
    eventually("a ProvisioningFailed event", DEADLINE, || async {
        events_of(&c, &ns, "huge").await.iter().any(failed)
    })
    .await;
    let events = events_of(&c, &ns, "huge").await;
    let msg = events
        .iter()
        .find(|e| failed(e))
        .and_then(|e| e.message.clone())
        .unwrap();
    assert!(
        msg.contains(&format!("claim {ns}/huge requests 1Ei of storage")),
        "{msg}"
    );
    assert!(msg.contains("free in the volumes root"), "{msg}");
    consistently(
        "the claim to stay Pending",
        Duration::from_secs(1),
        || async {
            get_claim(&c, &ns, "huge")
                .await
                .is_some_and(|p| phase_of(&p) == "Pending")
        },
    )
    .await;
    assert!(get_pv(&c, &name).await.is_none(), "no volume");
    assert!(
        !s.data_dir().join("volumes").join(&name).exists(),
        "no directory"
    );
    assert_eq!(
        events.iter().filter(|e| failed(e)).count(),
        1,
        "the failure is told once"
    );
}

/// A pre-created volume is bound to a matching claim: the smallest of its class that fits,
/// marked bound by the controller.
#[tokio::test]
async fn a_pre_created_volume_is_bound_to_a_matching_claim() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "static").await;
    let pvs = Api::<PersistentVolume>::all(c.clone());
    for (name, size, class) in [
        ("static-big", "5Gi", "manual"),
        ("static-fit", "2Gi", "manual"),
        ("static-small", "512Mi", "manual"),
        ("static-other", "2Gi", "other"),
    ] {
        let pv: PersistentVolume = typed(json!({"metadata": {"name": name}, "spec": {
            "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": class, "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": format!("/tmp/{name}")}}}));
        pvs.create(&PostParams::default(), &pv)
            .await
            .expect("creating a volume");
    }
    eventually("the volumes Available", DEADLINE, || async {
        pvs.list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|v| pv_phase(v) == "Available")
    })
    .await;
    claim(&c, &ns, "wants-1g", Some("manual"), "1Gi").await;
    let pvc = bound(&c, &ns, "wants-1g").await;
    assert_eq!(volume_name(&pvc), "static-fit");
    let pv = get_pv(&c, "static-fit").await.unwrap();
    assert_eq!(pv_phase(&pv), "Bound");
    assert_eq!(
        annotation(&pv.metadata, "pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );
    let r = pv.spec.unwrap().claim_ref.unwrap();
    assert_eq!(
        (r.namespace.as_deref(), r.name.as_deref()),
        (Some(ns.as_str()), Some("wants-1g"))
    );
    assert_eq!(r.uid, pvc.metadata.uid);
    assert_eq!(pvc.status.unwrap().capacity.unwrap()["storage"].0, "2Gi");
    assert_eq!(
        pv_phase(&get_pv(&c, "static-big").await.unwrap()),
        "Available"
    );
}

/// With the DefaultStorageClass plugin off, a claim is created with no class; the binder gives
/// it the default class afterwards (upstream's retroactive default class). A claim naming `""`
/// is left without.
#[tokio::test]
async fn the_binder_assigns_the_default_class_admission_did_not() {
    let s = Server::living(&[
        "--in-memory",
        "--disable-admission-plugins",
        "DefaultStorageClass",
    ])
    .await;
    let c = s.client();
    let ns = fresh_namespace(&c, "retro").await;
    let pvc = claim(&c, &ns, "plain", None, "8Mi").await;
    assert_eq!(
        pvc.spec.as_ref().unwrap().storage_class_name,
        None,
        "admission is off"
    );
    assert_eq!(
        pvc.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pvc-protection".to_owned()][..]),
        "StorageObjectInUseProtection is still on"
    );
    claim(&c, &ns, "classless", Some(""), "8Mi").await;
    eventually("the default class to be assigned", DEADLINE, || async {
        get_claim(&c, &ns, "plain").await.is_some_and(|p| {
            p.spec.as_ref().unwrap().storage_class_name.as_deref() == Some("standard")
        })
    })
    .await;
    let classless = get_claim(&c, &ns, "classless").await.unwrap();
    assert_eq!(
        classless.spec.unwrap().storage_class_name.as_deref(),
        Some("")
    );
}

/// A WaitForFirstConsumer claim with a pre-created volume of its class: once a node is
/// selected, the volume reachable from that node is bound (the static binding upstream's
/// scheduler does), not one pinned elsewhere, and nothing is provisioned.
#[tokio::test]
async fn a_selected_node_binds_a_pre_created_volume_reachable_from_it() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "static-wffc").await;
    let node: k8s_openapi::api::core::v1::Node = typed(json!({"metadata": {"name": "static-node",
        "labels": {"kubernetes.io/hostname": "static-node"}}}));
    Api::<k8s_openapi::api::core::v1::Node>::all(c.clone())
        .create(&PostParams::default(), &node)
        .await
        .expect("creating a node");
    let pvs = Api::<PersistentVolume>::all(c.clone());
    for (name, host) in [("local-there", "other-node"), ("local-here", "static-node")] {
        let pv: PersistentVolume = typed(json!({"metadata": {"name": name}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard", "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": format!("/tmp/{name}")},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}}}));
        pvs.create(&PostParams::default(), &pv)
            .await
            .expect("creating a volume");
    }
    eventually("the volumes Available", DEADLINE, || async {
        pvs.list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|v| pv_phase(v) == "Available")
    })
    .await;
    claim(&c, &ns, "local", None, "512Mi").await;
    consistently(
        "the claim to wait for its consumer",
        Duration::from_millis(500),
        || async {
            get_claim(&c, &ns, "local")
                .await
                .is_some_and(|p| phase_of(&p) == "Pending")
        },
    )
    .await;
    Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
        .patch(
            "local",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "static-node"}}})),
        )
        .await
        .expect("selecting a node");
    let pvc = bound(&c, &ns, "local").await;
    assert_eq!(volume_name(&pvc), "local-here");
    assert_eq!(
        pv_phase(&get_pv(&c, "local-there").await.unwrap()),
        "Available"
    );
    assert!(
        !has_event(&c, &ns, "local", "ProvisioningSucceeded").await,
        "nothing provisioned"
    );
}

/// A claim whose `volume.kubernetes.io/selected-node` names no Node is not provisioned: the
/// provisioner reads the node first and reports `ProvisioningFailed`, as
/// sig-storage-lib-external-provisioner does.
#[tokio::test]
async fn a_selected_node_that_names_no_node_gets_no_volume() {
    let s = Server::living(&["--in-memory"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "ghost-node").await;
    let pvc = claim(&c, &ns, "orphan", None, "8Mi").await;
    Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
        .patch(
            "orphan",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "no-such-node"}}})),
        )
        .await
        .expect("selecting a node");
    let refused = "failed to get target node: node \"no-such-node\" not found";
    eventually(
        "a ProvisioningFailed event naming the node",
        DEADLINE,
        || async {
            events_of(&c, &ns, "orphan").await.iter().any(|e| {
                e.reason.as_deref() == Some("ProvisioningFailed")
                    && e.message.as_deref() == Some(refused)
            })
        },
    )
    .await;
    let name = format!("pvc-{}", pvc.metadata.uid.unwrap());
    consistently("no volume", Duration::from_secs(1), || async {
        get_pv(&c, &name).await.is_none()
    })
    .await;
    assert_eq!(
        phase_of(&get_claim(&c, &ns, "orphan").await.unwrap()),
        "Pending"
    );
}
