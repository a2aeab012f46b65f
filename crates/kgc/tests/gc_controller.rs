//! `kgc controller`: the garbage collector running remotely, through kube-rs, against a real
//! HTTP API server (`kgc serve --disable gc`, so that nothing is collected in-process), with
//! leader election among replicas, `/metrics`, `/healthz` and the graph dump
//! (`kgc gc graph`).
//!
//! Each test starts its own server and controller(s). The controllers re-run discovery every
//! second (`--gc-resync 1s`) so that new custom resources are picked up quickly; leader
//! election uses short leases (a few seconds) so that take-overs fit in a test.

kgc_testsupport::bind_kgc!();

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kgc_testsupport::*;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Short leases for the election tests: a standby takes an abandoned lease after 6 s.
const LEASE: [&str; 6] = [
    "--leader-elect-lease-duration",
    "6s",
    "--leader-elect-renew-deadline",
    "4s",
    "--leader-elect-retry-period",
    "500ms",
];

/// `/metrics` of a controller.
async fn metrics(c: &Controller) -> String {
    let r = c.get("/metrics").await;
    assert_eq!(r.status, 200, "/metrics: {}", r.text());
    r.text()
}

/// `kgc_leader` from `/metrics`.
async fn is_leader(c: &Controller) -> bool {
    let m = metrics(c).await;
    match metric(&m, "kgc_leader") {
        Some(v) => v == 1.0,
        None => panic!("no kgc_leader in /metrics:\n{m}"),
    }
}

/// Whether the controller's collector graph holds `uid` (upstream `GraphHasUID`).
async fn graph_has_uid(c: &Controller, uid: &str) -> bool {
    let r = c
        .get(&format!(
            "/debug/controllers/garbagecollector/graph?uid={uid}&format=json"
        ))
        .await;
    r.status == 200
        && r.json()["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["uid"] == uid && n["virtual"] == false))
}

/// The value of an unlabelled metric, or of `name{labels}` when `name` carries labels.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A controller against `server`, re-running discovery every second, with `extra` arguments.
async fn controller(server: &Server, extra: &[&str]) -> Controller {
    let args = [&["--gc-resync", "1s", "--gc-workers", "5"][..], extra].concat();
    Controller::start(server, &args).await
}

/// A server whose built-in collector is off: only the controller collects.
async fn server() -> Server {
    Server::start_with(&["--in-memory", "--disable", "gc"]).await
}

fn oref(kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid})
}

fn config_map(ns: &str, name: &str, refs: Vec<Value>, finalizers: &[&str]) -> ConfigMap {
    typed(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": refs, "finalizers": finalizers},
    }))
}

fn secret(ns: &str, name: &str, refs: Vec<Value>, finalizers: &[&str]) -> Secret {
    typed(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": refs, "finalizers": finalizers},
    }))
}

async fn create<K>(api: &Api<K>, o: &K) -> K
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + k8s_openapi::serde::Serialize
        + std::fmt::Debug,
{
    api.create(&PostParams::default(), o)
        .await
        .unwrap_or_else(|e| panic!("creating {:?}: {e}", o.meta().name))
}

async fn gone<K>(api: &Api<K>, name: &str) -> bool
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.expect("GET").is_none()
}

/// Waits until `name` is gone.
async fn wait_gone<K>(api: &Api<K>, name: &str, deadline: Duration)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} to be deleted"), deadline, || {
        gone(api, name)
    })
    .await;
}

#[tokio::test]
async fn background_cascade_deletes_dependents_of_every_kind() {
    let s = server().await;
    let c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-background").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    let keeper = create(&cms, &config_map(&ns, "keeper", vec![], &[])).await;
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    let owner_ref = oref("ConfigMap", "owner", &uid_of(&owner));
    let keeper_ref = oref("ConfigMap", "keeper", &uid_of(&keeper));
    create(
        &cms,
        &config_map(&ns, "dep-cm", vec![owner_ref.clone()], &[]),
    )
    .await;
    create(
        &secrets,
        &secret(&ns, "dep-secret", vec![owner_ref.clone()], &[]),
    )
    .await;
    // Two owners: only the deleted one's reference goes.
    create(
        &cms,
        &config_map(&ns, "two-owners", vec![owner_ref, keeper_ref.clone()], &[]),
    )
    .await;

    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "dep-cm", Duration::from_secs(30)).await;
    wait_gone(&secrets, "dep-secret", Duration::from_secs(30)).await;
    eventually(
        "the dangling reference to be removed",
        Duration::from_secs(30),
        || async {
            let o = cms.get("two-owners").await.expect("two-owners exists");
            o.metadata.owner_references.unwrap_or_default().len() == 1
        },
    )
    .await;
    let o = cms.get("two-owners").await.expect("two-owners exists");
    let refs = o.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        refs[0].uid,
        uid_of(&keeper),
        "the live owner's reference stays"
    );
    assert!(!gone(&cms, "keeper").await);
    drop(c);
}

#[tokio::test]
async fn foreground_cascade_waits_for_blocking_dependents() {
    let s = server().await;
    let c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-foreground").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    let mut blocking = oref("ConfigMap", "owner", &uid_of(&owner));
    blocking["blockOwnerDeletion"] = json!(true);
    // Held by a finalizer nobody handles: it blocks the owner until the test releases it.
    let held = create(
        &secrets,
        &secret(&ns, "held", vec![blocking.clone()], &["x/y"]),
    )
    .await;
    create(&cms, &config_map(&ns, "plain", vec![blocking], &[])).await;
    let held_uid = uid_of(&held);
    eventually(
        "the collector to observe the dependents",
        Duration::from_secs(30),
        || graph_has_uid(&c, &held_uid),
    )
    .await;

    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "plain", Duration::from_secs(30)).await;
    eventually(
        "the held dependent to be deleted (pending its finalizer)",
        Duration::from_secs(30),
        || async {
            secrets
                .get("held")
                .await
                .expect("held exists")
                .metadata
                .deletion_timestamp
                .is_some()
        },
    )
    .await;
    // blockOwnerDeletion: the owner waits for the held dependent.
    consistently("the owner to wait", Duration::from_secs(2), || async {
        cms.get_opt("owner").await.expect("GET").is_some_and(|o| {
            o.metadata.deletion_timestamp.is_some()
                && o.metadata
                    .finalizers
                    .unwrap_or_default()
                    .contains(&"foregroundDeletion".to_owned())
        })
    })
    .await;

    secrets
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("releasing the held dependent");
    wait_gone(&secrets, "held", Duration::from_secs(30)).await;
    wait_gone(&cms, "owner", Duration::from_secs(30)).await;
}

#[tokio::test]
async fn orphan_cascade_keeps_dependents_and_their_other_owners() {
    let s = server().await;
    let c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-orphan").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    let keeper = create(&cms, &config_map(&ns, "keeper", vec![], &[])).await;
    let mut owner_ref = oref("ConfigMap", "owner", &uid_of(&owner));
    owner_ref["controller"] = json!(true);
    owner_ref["blockOwnerDeletion"] = json!(true);
    let keeper_ref = oref("ConfigMap", "keeper", &uid_of(&keeper));
    let d1 = create(
        &cms,
        &config_map(&ns, "dep-1", vec![owner_ref.clone()], &[]),
    )
    .await;
    let d2 = create(
        &secrets,
        &secret(&ns, "dep-2", vec![owner_ref, keeper_ref], &[]),
    )
    .await;
    // Upstream TestOrphaning waits for the graph to hold the dependents before deleting.
    for uid in [uid_of(&d1), uid_of(&d2)] {
        eventually(
            "the collector to observe a dependent",
            Duration::from_secs(30),
            || graph_has_uid(&c, &uid),
        )
        .await;
    }

    cms.delete("owner", &DeleteParams::orphan())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "owner", Duration::from_secs(30)).await;
    let d1 = cms
        .get("dep-1")
        .await
        .expect("dep-1 is orphaned, not deleted");
    assert!(
        d1.metadata.owner_references.unwrap_or_default().is_empty(),
        "dep-1 keeps no reference to the deleted owner"
    );
    let d2 = secrets
        .get("dep-2")
        .await
        .expect("dep-2 is orphaned, not deleted");
    let refs = d2.metadata.owner_references.unwrap_or_default();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].uid, uid_of(&keeper));
    // And nothing collects them afterwards.
    consistently("the orphans to stay", Duration::from_secs(2), || async {
        !gone(&cms, "dep-1").await && !gone(&secrets, "dep-2").await
    })
    .await;
}

/// A namespaced custom resource, created and `Established`.
async fn widget_crd(client: &Client) -> ApiResource {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = format!("w{}", unique("idget").replace('-', ""));
    let crd: CustomResourceDefinition = typed(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}s.gc.example.com")},
        "spec": {
            "group": "gc.example.com",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            "names": {"plural": format!("{name}s"), "singular": name, "kind": name, "listKind": format!("{name}List")},
            "scope": "Namespaced",
        }
    }));
    let crd_name = crd.metadata.name.clone().expect("named");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("creating the CRD");
    eventually(
        "the CRD to be Established",
        Duration::from_secs(30),
        || async {
            crds.get(&crd_name)
                .await
                .expect("GET crd")
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        },
    )
    .await;
    let ar = ApiResource {
        group: "gc.example.com".into(),
        version: "v1".into(),
        api_version: "gc.example.com/v1".into(),
        kind: name.clone(),
        plural: format!("{name}s"),
    };
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    eventually(
        "the custom resource to be served",
        Duration::from_secs(30),
        || {
            let all = all.clone();
            async move { all.list(&ListParams::default()).await.is_ok() }
        },
    )
    .await;
    ar
}

#[tokio::test]
async fn custom_resource_cascade() {
    let s = server().await;
    let _c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "crd-cascading").await;
    let ar = widget_crd(&s.client()).await;
    let widgets: Api<DynamicObject> = Api::namespaced_with(s.client(), &ns, &ar);
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let instance = |name: &str, refs: Vec<Value>| -> DynamicObject {
        typed(json!({
            "apiVersion": ar.api_version, "kind": ar.kind,
            "metadata": {"name": name, "namespace": ns, "ownerReferences": refs},
        }))
    };
    let owner = create(&widgets, &instance("owner", vec![])).await;
    let keeper = create(&cms, &config_map(&ns, "keeper", vec![], &[])).await;
    let owner_ref = json!({"apiVersion": ar.api_version, "kind": ar.kind, "name": "owner",
                           "uid": uid_of(&owner)});
    create(&widgets, &instance("dependent", vec![owner_ref.clone()])).await;
    // A custom resource with a live owner too: its dangling reference is removed with the
    // JSON merge patch custom resources need (they answer a strategic merge patch with 415).
    create(
        &widgets,
        &instance(
            "two-owners",
            vec![
                owner_ref.clone(),
                oref("ConfigMap", "keeper", &uid_of(&keeper)),
            ],
        ),
    )
    .await;
    // A core dependent of the custom owner (upstream TestMixedRelationships).
    create(
        &cms,
        &config_map(&ns, "core-dependent", vec![owner_ref], &[]),
    )
    .await;

    widgets
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleting the owner");
    wait_gone(&widgets, "owner", Duration::from_secs(60)).await;
    // Upstream TestCustomResourceCascadingDeletion checks the dependent once, after polling
    // for the owner every second. Without `blockOwnerDeletion` a dependent does not hold up
    // its owner's foreground deletion (garbagecollector.go `processDeletingDependentsItem`
    // waits only for `blockingDependents`), so the owner may go first and its dependents a
    // moment later: they must go, in any order.
    wait_gone(&widgets, "dependent", Duration::from_secs(30)).await;
    wait_gone(&cms, "core-dependent", Duration::from_secs(30)).await;
    eventually(
        "the dangling reference to be removed from the custom resource",
        Duration::from_secs(30),
        || async {
            let o = widgets.get("two-owners").await.expect("two-owners exists");
            let refs = o.metadata.owner_references.unwrap_or_default();
            refs.len() == 1 && refs[0].uid == uid_of(&keeper)
        },
    )
    .await;
}

/// Upstream TestCreateWithNonExistentOwner (I4).
#[tokio::test]
async fn dependent_of_a_non_existent_owner_is_collected() {
    let s = server().await;
    let _c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-non-existing-owner").await;
    let secrets: Api<Secret> = Api::namespaced(s.client(), &ns);
    create(
        &secrets,
        &secret(
            &ns,
            "test.secret.1",
            vec![oref("ConfigMap", "test.cm.1", "doesn't matter")],
            &[],
        ),
    )
    .await;
    wait_gone(&secrets, "test.secret.1", Duration::from_secs(30)).await;
}

/// Upstream TestClusterScopedOwners (I15), without the delayed PV watch: a namespaced
/// dependent of a live PersistentVolume stays (the PV is looked up cluster-scoped), one of a
/// missing PV goes, one of an unknown kind is never collected.
#[tokio::test]
async fn cluster_scoped_owner_keeps_its_namespaced_dependent() {
    let s = server().await;
    let _c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-cluster-scope-deletion").await;
    let pvs: Api<PersistentVolume> = Api::all(s.client());
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let pv_name = unique("pv-valid");
    let pv: PersistentVolume = typed(json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {"accessModes": ["ReadWriteMany"], "capacity": {"storage": "1Gi"},
                 "hostPath": {"path": "/foo"}},
    }));
    let pv = create(&pvs, &pv).await;
    create(
        &cms,
        &config_map(
            &ns,
            "cm-valid",
            vec![oref("PersistentVolume", &pv_name, &uid_of(&pv))],
            &[],
        ),
    )
    .await;
    create(
        &cms,
        &config_map(
            &ns,
            "cm-missing",
            vec![oref("PersistentVolume", "missing-name", "missing-uid")],
            &[],
        ),
    )
    .await;
    create(
        &cms,
        &config_map(
            &ns,
            "cm-invalid",
            vec![
                json!({"apiVersion": "unknown.group/v1", "kind": "UnknownType",
                        "name": "invalid-name", "uid": "invalid-uid"}),
            ],
            &[],
        ),
    )
    .await;
    wait_gone(&cms, "cm-missing", Duration::from_secs(60)).await;
    consistently(
        "cm-valid and cm-invalid to stay",
        Duration::from_secs(3),
        || async { !gone(&cms, "cm-valid").await && !gone(&cms, "cm-invalid").await },
    )
    .await;
}

#[tokio::test]
async fn metrics_and_the_graph_dump() {
    let s = server().await;
    let c = controller(&s, &[]).await;
    let ns = fresh_namespace(&s.client(), "gc-metrics").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    let owner_uid = uid_of(&owner);
    let dep = create(
        &cms,
        &config_map(
            &ns,
            "dep",
            vec![oref("ConfigMap", "owner", &owner_uid)],
            &[],
        ),
    )
    .await;
    let dep_uid = uid_of(&dep);
    eventually(
        "the collector to observe the dependent",
        Duration::from_secs(30),
        || graph_has_uid(&c, &dep_uid),
    )
    .await;

    // `kgc gc graph` against the controller, JSON and DOT.
    let (ok, stdout, stderr) = Kgc::run(&[
        "gc",
        "graph",
        "--server-url",
        c.url(),
        "-o",
        "json",
        "--uid",
        &owner_uid,
    ]);
    assert!(ok, "kgc gc graph failed: {stderr}");
    let graph: Value = serde_json::from_str(&stdout).expect("JSON output");
    let uids: Vec<&str> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["uid"].as_str())
        .collect();
    assert!(uids.contains(&owner_uid.as_str()), "{uids:?}");
    assert!(uids.contains(&uid_of(&dep).as_str()), "{uids:?}");
    let (ok, stdout, stderr) = Kgc::run(&["gc", "graph", "--server-url", c.url()]);
    assert!(ok, "kgc gc graph failed: {stderr}");
    assert!(stdout.starts_with("digraph"), "{stdout}");
    assert!(
        stdout.contains(&format!("{:?} -> {:?}", uid_of(&dep), owner_uid)),
        "{stdout}"
    );
    // The server's own endpoint has no graph with its collector disabled: a clear error.
    let kubeconfig = s.kubeconfig_path();
    let (ok, _, stderr) = Kgc::run(&[
        "gc",
        "graph",
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8 path"),
    ]);
    assert!(!ok);
    assert!(stderr.contains("--server-url"), "{stderr}");

    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "dep", Duration::from_secs(30)).await;
    // The collector counts a deletion once the DELETE's response reaches it, which can be
    // after the object is already gone for everyone else.
    eventually(
        "the collector to count its deletion",
        Duration::from_secs(30),
        || async {
            metric(
                &metrics(&c).await,
                "kgc_gc_objects_total{outcome=\"deleted\"}",
            )
            .is_some_and(|v| v >= 1.0)
        },
    )
    .await;
    let m = metrics(&c).await;
    for line in [
        "kgc_gc_queue_depth{queue=\"attempt_to_delete\"}",
        "kgc_gc_queue_depth{queue=\"attempt_to_orphan\"}",
        "kgc_gc_api_requests_total{verb=\"get\"}",
        "kgc_gc_api_requests_total{verb=\"patch\"}",
        "kgc_gc_errors_total",
        "kgc_gc_graph_nodes",
        // Every work queue reports client-go's series under upstream's queue name.
        "workqueue_adds_total{name=\"garbage_collector_attempt_to_delete\"}",
        "workqueue_depth{name=\"garbage_collector_attempt_to_orphan\"}",
        "workqueue_depth{name=\"ttl_jobs_to_delete\"}",
        "workqueue_depth{name=\"orphaned_pods_nodes\"}",
    ] {
        assert!(metric(&m, line).is_some(), "no {line} in:\n{m}");
    }
    assert!(
        metric(&m, "kgc_gc_api_requests_total{verb=\"delete\"}").is_some_and(|v| v >= 1.0),
        "{m}"
    );
    assert!(
        metric(&m, "kgc_gc_objects_total{outcome=\"deleted\"}").is_some_and(|v| v >= 1.0),
        "{m}"
    );
    assert_eq!(metric(&m, "kgc_leader"), Some(1.0), "{m}");
    // Every request the process sent, by verb: the collector's DELETE, its watches, the
    // leader-election Lease it created.
    for (verb, at_least) in [
        ("delete", 1.0),
        ("watch", 1.0),
        ("get", 1.0),
        ("create", 1.0),
    ] {
        let name = format!("kgc_controller_api_requests_total{{verb=\"{verb}\"}}");
        assert!(
            metric(&m, &name).is_some_and(|v| v >= at_least),
            "{name} below {at_least}:\n{m}"
        );
    }
    assert_eq!(c.get("/readyz").await.status, 200);
}

#[tokio::test]
async fn graph_of_the_built_in_collector_through_the_kubeconfig() {
    // `kgc serve` with its collector on serves the graph itself.
    let s = Server::start_with(&["--in-memory", "--gc-resync", "1s"]).await;
    let ns = fresh_namespace(&s.client(), "gc-graph").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let cm = create(&cms, &config_map(&ns, "lonely", vec![], &[])).await;
    let uid = uid_of(&cm);
    let kubeconfig = s.kubeconfig_path();
    let kubeconfig = kubeconfig.to_str().expect("utf-8 path").to_owned();
    let listed = || {
        let (ok, stdout, stderr) =
            Kgc::run(&["gc", "graph", "--kubeconfig", &kubeconfig, "-o", "json"]);
        assert!(ok, "{stderr}");
        let v: Value = serde_json::from_str(&stdout).expect("JSON output");
        v["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["uid"] == uid.as_str()))
    };
    eventually(
        "the graph to list the ConfigMap",
        Duration::from_secs(30),
        || {
            let l = listed();
            async move { l }
        },
    )
    .await;
    // KUBECONFIG works as well as --kubeconfig.
    let out = Kgc::command()
        .args(["gc", "graph", "--uid", &uid])
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("running kgc gc graph");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&uid));
}

/// Leader election: one replica of two leads; SIGTERM releases the lease and the standby takes
/// over at its next retry; SIGKILL leaves the lease held, and the standby takes over once it
/// has seen it unrenewed for the lease duration; the new leader collects.
#[tokio::test]
async fn only_one_replica_leads_and_a_standby_takes_over() {
    let s = server().await;
    let mut a = controller(&s, &[&LEASE[..], &["--identity", "replica-a"]].concat()).await;
    eventually("replica a to lead", Duration::from_secs(20), || {
        is_leader(&a)
    })
    .await;
    let mut b = controller(&s, &[&LEASE[..], &["--identity", "replica-b"]].concat()).await;
    consistently(
        "a to lead and b to stand by",
        Duration::from_secs(2),
        || async { is_leader(&a).await && !is_leader(&b).await },
    )
    .await;
    let r = b.get("/debug/controllers/garbagecollector/graph").await;
    assert_eq!(r.status, 404, "a standby has no graph: {}", r.text());
    assert_eq!(b.get("/readyz").await.status, 200);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(s.client(), "kube-system");
    let holder = |l: k8s_openapi::api::coordination::v1::Lease| {
        l.spec.and_then(|s| s.holder_identity).unwrap_or_default()
    };
    assert_eq!(
        holder(leases.get("kgc-controller").await.expect("the lease")),
        "replica-a"
    );

    // SIGTERM: a clean exit that hands over well within the lease duration (6 s).
    let a_pid = a.pid();
    let stopped = Instant::now();
    let status = a.terminate();
    assert!(
        status.success(),
        "replica a (pid {a_pid}) exited with {status}"
    );
    eventually("replica b to take over", Duration::from_secs(4), || {
        is_leader(&b)
    })
    .await;
    assert!(stopped.elapsed() < Duration::from_secs(5));
    assert_eq!(
        holder(leases.get("kgc-controller").await.expect("the lease")),
        "replica-b"
    );

    // SIGKILL: the lease stays held until it expires.
    let mut c = controller(&s, &[&LEASE[..], &["--identity", "replica-c"]].concat()).await;
    assert!(!is_leader(&c).await);
    b.kill9();
    let killed = Instant::now();
    eventually(
        "replica c to take over the abandoned lease",
        Duration::from_secs(6 + 6),
        || is_leader(&c),
    )
    .await;
    let took = killed.elapsed();
    assert!(
        took >= Duration::from_secs(4),
        "replica c took a lease that was still valid, after {took:?}"
    );
    assert_eq!(
        holder(leases.get("kgc-controller").await.expect("the lease")),
        "replica-c"
    );

    // The new leader collects.
    let ns = fresh_namespace(&s.client(), "gc-after-failover").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    create(
        &cms,
        &config_map(
            &ns,
            "dep",
            vec![oref("ConfigMap", "owner", &uid_of(&owner))],
            &[],
        ),
    )
    .await;
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "dep", Duration::from_secs(30)).await;
    let status = c.terminate();
    assert!(status.success());
    assert_eq!(
        holder(leases.get("kgc-controller").await.expect("the lease")),
        ""
    );
}

#[tokio::test]
async fn without_leader_election_the_controller_collects_at_once() {
    let s = server().await;
    let c = controller(&s, &["--leader-elect=false"]).await;
    assert!(is_leader(&c).await);
    let ns = fresh_namespace(&s.client(), "gc-no-election").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let owner = create(&cms, &config_map(&ns, "owner", vec![], &[])).await;
    create(
        &cms,
        &config_map(
            &ns,
            "dep",
            vec![oref("ConfigMap", "owner", &uid_of(&owner))],
            &[],
        ),
    )
    .await;
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deleting the owner");
    wait_gone(&cms, "dep", Duration::from_secs(30)).await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(s.client(), "kube-system");
    assert!(
        leases
            .get_opt("kgc-controller")
            .await
            .expect("GET")
            .is_none(),
        "no lease without leader election"
    );
}
