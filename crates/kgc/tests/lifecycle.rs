//! The lifecycle collectors end to end: a spawned `kgc serve`, driven over HTTP with kube-rs.
//!
//! Durations pass without waiting: a durable server is restarted with a larger hidden
//! `--clock-offset`, which moves both the timestamps the server writes and the ages the
//! collectors judge. PodGC's period and quarantine are shortened by flags.

kgc_testsupport::bind_kgc!();

use std::time::{Duration, Instant};

use futures::StreamExt;
use kgc_meta::encoding::base64;
use kgc_testsupport::{Controller, consistently, eventually, fresh_namespace, metrics_text};
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

fn api(
    client: &Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

fn pods(c: &Client, ns: &str) -> Api<DynamicObject> {
    api(c, "v1", "Pod", "pods", Some(ns))
}
fn nodes(c: &Client) -> Api<DynamicObject> {
    api(c, "v1", "Node", "nodes", None)
}
fn jobs(c: &Client, ns: &str) -> Api<DynamicObject> {
    api(c, "batch/v1", "Job", "jobs", Some(ns))
}
fn leases(c: &Client) -> Api<DynamicObject> {
    api(
        c,
        "coordination.k8s.io/v1",
        "Lease",
        "leases",
        Some("kube-node-lease"),
    )
}
fn csrs(c: &Client) -> Api<DynamicObject> {
    api(
        c,
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        None,
    )
}
fn pvs(c: &Client) -> Api<DynamicObject> {
    api(c, "v1", "PersistentVolume", "persistentvolumes", None)
}
fn pvcs(c: &Client, ns: &str) -> Api<DynamicObject> {
    api(
        c,
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        Some(ns),
    )
}

async fn create(api: &Api<DynamicObject>, obj: Value) -> DynamicObject {
    let o: DynamicObject = serde_json::from_value(obj).expect("an object");
    api.create(&PostParams::default(), &o)
        .await
        .unwrap_or_else(|e| panic!("creating {:?}: {e}", o.metadata.name))
}

async fn set_status(api: &Api<DynamicObject>, name: &str, status: Value) {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap_or_else(|e| panic!("setting the status of {name}: {e}"));
}

async fn exists(api: &Api<DynamicObject>, name: &str) -> bool {
    api.get_opt(name).await.expect("GET").is_some()
}

async fn gone(api: &Api<DynamicObject>, name: &str) {
    eventually(&format!("{name} to be deleted"), DEADLINE, || async {
        !exists(api, name).await
    })
    .await;
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn pod(name: &str, node: &str) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    if !node.is_empty() {
        p["spec"]["nodeName"] = json!(node);
    }
    p
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

fn node_lease(node: &DynamicObject) -> Value {
    let name = node.metadata.name.clone().unwrap_or_default();
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                 "uid": node.metadata.uid}]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}})
}

/// Upstream `TestGCTerminated` and `TestGCOrphaned` against the real server: exactly the
/// threshold of terminated pods stays (oldest go first), and a pod bound to a node that does
/// not exist is marked Failed and deleted after the quarantine, while a pod on a live node
/// stays.
#[tokio::test]
async fn podgc_keeps_the_threshold_and_deletes_orphaned_pods() {
    let s = Server::start_with(&[
        "--in-memory",
        "--terminated-pod-gc-threshold",
        "2",
        "--pod-gc-period",
        "200ms",
        "--pod-gc-quarantine",
        "1s",
    ])
    .await;
    let c = s.client();
    let ns = fresh_namespace(&c, "podgc").await;
    create(&nodes(&c), node("node-a")).await;
    let api = pods(&c, &ns);
    for name in ["t0", "t1", "t2", "t3"] {
        create(&api, pod(name, "node-a")).await;
    }
    create(&api, pod("running", "node-a")).await;
    create(&api, pod("orphan", "ghost")).await;
    for name in ["t0", "t1", "t2", "t3"] {
        set_status(&api, name, json!({"phase": "Succeeded"})).await;
    }
    gone(&api, "t0").await;
    gone(&api, "t1").await;
    gone(&api, "orphan").await;
    consistently(
        "the threshold's pods and the running pod stay",
        Duration::from_secs(1),
        || async {
            exists(&api, "t2").await && exists(&api, "t3").await && exists(&api, "running").await
        },
    )
    .await;
    let m = metrics_text(&c).await;
    assert!(
        m.contains("kgc_lifecycle_deleted_total{collector=\"podgc\",reason=\"terminated\"} 2"),
        "{m}"
    );
    assert!(
        m.contains("kgc_lifecycle_deleted_total{collector=\"podgc\",reason=\"orphaned\"} 1"),
        "{m}"
    );
}

/// TTL after finished: a Job is deleted exactly when its finish time plus TTL passes (a timer,
/// no polling), a Job with a long TTL is deleted once the clock has moved past it, and Jobs
/// without a TTL, not finished, or with a negative TTL are never touched.
#[tokio::test]
async fn ttl_after_finished_deletes_expired_jobs() {
    let mut s = Server::start_with(&[]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "ttl").await;
    let api = jobs(&c, &ns);
    let job = |name: &str, ttl: Option<i64>| {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}});
        if let Some(t) = ttl {
            j["spec"]["ttlSecondsAfterFinished"] = json!(t);
        }
        j
    };
    // What the Job controller writes (1.32): the interim condition first, then the final one.
    let complete = || {
        json!({"conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now()},
            {"type": "Complete", "status": "True", "lastTransitionTime": now()}],
            "startTime": now(), "completionTime": now()})
    };
    for (name, ttl) in [
        ("now", Some(0)),
        ("exact", Some(2)),
        ("later", Some(3600)),
        ("no-ttl", None),
        ("running", Some(0)),
    ] {
        create(&api, job(name, ttl)).await;
    }
    // A negative TTL is rejected by upstream validation; if this server stores it, the
    // collector must still leave the Job alone.
    let negative = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(job("negative", Some(-5))).unwrap(),
        )
        .await
        .is_ok();
    let failed = json!({"conditions": [
        {"type": "FailureTarget", "status": "True", "lastTransitionTime": now()},
        {"type": "Failed", "status": "True", "lastTransitionTime": now()}],
        "startTime": now()});
    set_status(&api, "now", failed).await;
    let finished = Instant::now();
    set_status(&api, "exact", complete()).await;
    set_status(&api, "later", complete()).await;
    set_status(&api, "no-ttl", complete()).await;
    if negative {
        set_status(&api, "negative", complete()).await;
    }
    gone(&api, "now").await;
    gone(&api, "exact").await;
    // lastTransitionTime has second precision: the expiry is at most 1 s early.
    assert!(
        finished.elapsed() >= Duration::from_secs(1),
        "deleted before its TTL: {:?}",
        finished.elapsed()
    );
    consistently(
        "the long TTL is not reached",
        Duration::from_secs(1),
        || async { exists(&api, "later").await },
    )
    .await;

    s.restart_with(&["--clock-offset", "2h"]).await;
    let c = s.client();
    let api = jobs(&c, &ns);
    gone(&api, "later").await;
    consistently(
        "Jobs that need no cleanup stay",
        Duration::from_secs(1),
        || async {
            exists(&api, "no-ttl").await
                && exists(&api, "running").await
                && (!negative || exists(&api, "negative").await)
        },
    )
    .await;
    let m = metrics_text(&c).await;
    assert!(
        m.contains("kgc_lifecycle_deleted_total{collector=\"ttl\",reason=\"expired\"} 1"),
        "{m}"
    );
}

/// The CSR cleaner: denied and issued CSRs go after 1 h, pending ones after 24 h, an approved
/// but never issued one stays.
#[tokio::test]
async fn csr_cleaner_removes_stale_requests() {
    let mut s = Server::start_with(&[]).await;
    let c = s.client();
    let api = csrs(&c);
    let request = kgc_request();
    for name in ["denied", "issued", "pending", "unissued"] {
        create(&api, json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": request, "signerName": "example.com/signer", "usages": ["client auth"]}}))
        .await;
    }
    let condition = |t: &str| {
        json!([{"type": t, "status": "True", "lastUpdateTime": now(),
        "lastTransitionTime": now(), "reason": "Test", "message": "test"}])
    };
    // Approval and denial go through `/approval`, the certificate through `/status`, as upstream
    // requires.
    for (name, verdict) in [
        ("denied", "Denied"),
        ("unissued", "Approved"),
        ("issued", "Approved"),
    ] {
        api.patch_subresource(
            "approval",
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": condition(verdict)}})),
        )
        .await
        .unwrap_or_else(|e| panic!("setting the approval of {name}: {e}"));
    }
    let cert = base64(include_bytes!("../../kgc-lifecycle/src/testdata/valid.pem"));
    set_status(&api, "issued", json!({"certificate": cert})).await;

    s.restart_with(&["--clock-offset", "2h"]).await;
    let api = csrs(&s.client());
    gone(&api, "denied").await;
    gone(&api, "issued").await;
    consistently(
        "pending and unissued CSRs stay",
        Duration::from_secs(1),
        || async { exists(&api, "pending").await && exists(&api, "unissued").await },
    )
    .await;

    s.restart_with(&["--clock-offset", "25h"]).await;
    let api = csrs(&s.client());
    gone(&api, "pending").await;
    consistently(
        "an approved, never issued CSR stays",
        Duration::from_secs(1),
        || async { exists(&api, "unissued").await },
    )
    .await;
}

/// A real PKCS#10 request (upstream validation parses it and checks its signature).
fn kgc_request() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kgc-e2e");
    let csr = params.serialize_request(&key).expect("a request");
    base64(csr.pem().expect("PEM").as_bytes())
}

/// Node leases carry an owner reference to their Node, so deleting the Node removes its lease
/// through the owner-reference collector.
#[tokio::test]
async fn node_lease_is_removed_with_its_node() {
    let s = Server::start().await;
    let c = s.client();
    let n = create(&nodes(&c), node("lease-node")).await;
    create(&leases(&c), node_lease(&n)).await;
    nodes(&c)
        .delete("lease-node", &DeleteParams::default())
        .await
        .expect("deleting the node");
    gone(&leases(&c), "lease-node").await;
}

/// Volume reclaim: with its claim deleted, a `Delete` host-path volume inside the root is
/// removed from disk and from the API; one outside the root is refused (Failed, Warning event,
/// files intact); a `Retain` volume becomes Released and stays.
#[tokio::test]
async fn released_volumes_are_reclaimed_by_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("volumes");
    let outside = dir.path().join("outside");
    for d in [root.join("vol-del"), root.join("vol-ret"), outside.clone()] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("data"), "x").unwrap();
    }
    let s =
        Server::start_with(&["--in-memory", "--pv-host-path-root", root.to_str().unwrap()]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "pv").await;
    let claims = pvcs(&c, &ns);
    let cases = [
        ("pv-del", "Delete", root.join("vol-del")),
        ("pv-ret", "Retain", root.join("vol-ret")),
        ("pv-out", "Delete", outside.clone()),
    ];
    for (pv, policy, path) in &cases {
        let claim = create(
            &claims,
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": format!("claim-{pv}")},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv,
                     "resources": {"requests": {"storage": "1Gi"}}}}),
        )
        .await;
        create(
            &pvs(&c),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": path},
                     "claimRef": {"namespace": ns, "name": format!("claim-{pv}"),
                                  "uid": claim.metadata.uid}}}),
        )
        .await;
        set_status(&pvs(&c), pv, json!({"phase": "Bound"})).await;
    }
    consistently("bound volumes stay", Duration::from_millis(500), || async {
        exists(&pvs(&c), "pv-del").await && root.join("vol-del/data").exists()
    })
    .await;
    for (pv, _, _) in &cases {
        claims
            .delete(&format!("claim-{pv}"), &DeleteParams::default())
            .await
            .expect("deleting a claim");
    }
    gone(&pvs(&c), "pv-del").await;
    assert!(
        !root.join("vol-del").exists(),
        "the volume's directory is removed"
    );
    let phase = |name: &'static str| {
        let c = c.clone();
        async move {
            pvs(&c)
                .get(name)
                .await
                .ok()
                .and_then(|o| o.data["status"]["phase"].as_str().map(str::to_owned))
        }
    };
    eventually("pv-ret Released", DEADLINE, || async {
        phase("pv-ret").await.as_deref() == Some("Released")
    })
    .await;
    eventually("pv-out Failed", DEADLINE, || async {
        phase("pv-out").await.as_deref() == Some("Failed")
    })
    .await;
    assert!(
        outside.join("data").exists(),
        "nothing outside the root is touched"
    );
    assert!(
        root.join("vol-ret/data").exists(),
        "a retained volume is kept"
    );
    let events = api(&c, "v1", "Event", "events", Some("default"));
    eventually("a VolumeFailedDelete event", DEADLINE, || async {
        events
            .list(&Default::default())
            .await
            .expect("events")
            .items
            .iter()
            .any(|e| {
                e.data["reason"] == "VolumeFailedDelete"
                    && e.data["involvedObject"]["name"] == "pv-out"
            })
    })
    .await;
}

/// Departed nodes: with the clock two hours on, a node without heartbeat that the operator's
/// command reports gone is deleted, its lease follows through its owner reference and its pod
/// through PodGC; a node the command reports present stays.
#[tokio::test]
async fn departed_nodes_are_deleted_and_their_pods_and_leases_follow() {
    let flags = [
        "--node-gone-after",
        "1h",
        "--node-exists-command",
        "test \"$1\" != departed #",
        "--pod-gc-period",
        "200ms",
        "--pod-gc-quarantine",
        "1s",
    ];
    let mut s = Server::start_with(&flags).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "nodes").await;
    let departed = create(&nodes(&c), node("departed")).await;
    create(&nodes(&c), node("present")).await;
    create(&leases(&c), node_lease(&departed)).await;
    create(&pods(&c, &ns), pod("on-departed", "departed")).await;
    consistently("fresh nodes stay", Duration::from_secs(1), || async {
        exists(&nodes(&c), "departed").await
    })
    .await;

    let mut later = flags.to_vec();
    later.extend(["--clock-offset", "2h"]);
    s.restart_with(&later).await;
    let c = s.client();
    gone(&nodes(&c), "departed").await;
    gone(&leases(&c), "departed").await;
    gone(&pods(&c, &ns), "on-departed").await;
    assert!(exists(&nodes(&c), "present").await);
    // The collector counts a deletion after the store has made it, so poll.
    eventually(
        "the nodes collector to count its deletion",
        Duration::from_secs(30),
        || async {
            metrics_text(&c)
                .await
                .contains("kgc_lifecycle_deleted_total{collector=\"nodes\",reason=\"departed\"} 1")
        },
    )
    .await;
}

/// `--disable` turns collectors off one by one.
#[tokio::test]
async fn disabled_collectors_do_not_run() {
    let s = Server::start_with(&[
        "--in-memory",
        "--disable",
        "podgc,ttl",
        "--terminated-pod-gc-threshold",
        "1",
        "--pod-gc-period",
        "200ms",
    ])
    .await;
    let c = s.client();
    let ns = fresh_namespace(&c, "off").await;
    let api = pods(&c, &ns);
    for name in ["a", "b"] {
        create(&api, pod(name, "")).await;
        set_status(&api, name, json!({"phase": "Failed"})).await;
    }
    consistently(
        "terminated pods stay with PodGC off",
        Duration::from_secs(1),
        || async { exists(&api, "a").await && exists(&api, "b").await },
    )
    .await;
    let m = metrics_text(&c).await;
    assert!(!m.contains("collector=\"podgc\""), "{m}");
    assert!(
        m.contains("kgc_lifecycle_passes_total{collector=\"csr\"} 1"),
        "{m}"
    );
}

/// The same collectors through `kgc controller` (kube-rs against `kgc serve` with them
/// disabled): PodGC's threshold, and an orphaned pod marked Failed through the status
/// subresource before its deletion.
#[tokio::test]
async fn the_controller_runs_the_lifecycle_collectors_remotely() {
    let s = Server::start_with(&["--in-memory", "--disable", "podgc,ttl,csr,pv,nodes"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "remote").await;
    let api = pods(&c, &ns);
    create(&nodes(&c), node("node-r")).await;
    for name in ["r0", "r1", "r2"] {
        create(&api, pod(name, "node-r")).await;
        set_status(&api, name, json!({"phase": "Failed"})).await;
    }
    create(&api, pod("stray", "no-such-node")).await;
    let mut watch = api
        .watch(
            &kube::api::WatchParams::default().fields("metadata.name=stray"),
            "0",
        )
        .await
        .expect("watching the stray pod")
        .boxed();
    let _controller = Controller::start(
        &s,
        &[
            "--leader-elect=false",
            "--disable",
            "gc",
            "--terminated-pod-gc-threshold",
            "1",
            "--pod-gc-period",
            "200ms",
            "--pod-gc-quarantine",
            "1s",
        ],
    )
    .await;
    gone(&api, "r0").await;
    gone(&api, "r1").await;
    gone(&api, "stray").await;
    assert!(exists(&api, "r2").await, "exactly the threshold stays");
    // The stray pod went through Failed with the DisruptionTarget condition first.
    let mut marked = false;
    while let Ok(Some(Ok(event))) = tokio::time::timeout(Duration::from_secs(5), watch.next()).await
    {
        if let kube::api::WatchEvent::Modified(o) = event {
            marked |= o.data["status"]["phase"] == "Failed"
                && o.data["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c["type"] == "DisruptionTarget" && c["reason"] == "DeletionByPodGC"
                    })
                });
        }
        if marked {
            break;
        }
    }
    assert!(
        marked,
        "the orphaned pod was marked Failed with DisruptionTarget before deletion"
    );
}
