//! DELETE exactly as kube-apiserver performs it (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`): every row of the
//! finalizer tables (`shouldOrphanDependents` and `shouldDeleteDependents`, whose checks are rules
//! 1–5 below), the outcome matrix, finalizer removal, per-kind defaults, preconditions, 200 vs 202,
//! Status bodies, pod grace periods and DELETECOLLECTION.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ReplicationController};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{
    DeleteParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(15);

const JOB_WARNING: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// A namespaced resource kind for raw requests.
#[derive(Clone, Copy)]
struct Kind {
    /// `/api/v1` or `/apis/G/V`.
    prefix: &'static str,
    plural: &'static str,
    kind: &'static str,
    group: &'static str,
}

const CONFIGMAP: Kind = Kind {
    prefix: "/api/v1",
    plural: "configmaps",
    kind: "ConfigMap",
    group: "",
};
const EVENT: Kind = Kind {
    prefix: "/api/v1",
    plural: "events",
    kind: "Event",
    group: "",
};
const RC: Kind = Kind {
    prefix: "/api/v1",
    plural: "replicationcontrollers",
    kind: "ReplicationController",
    group: "",
};
const JOB: Kind = Kind {
    prefix: "/apis/batch/v1",
    plural: "jobs",
    kind: "Job",
    group: "batch",
};
const DEPLOYMENT: Kind = Kind {
    prefix: "/apis/apps/v1",
    plural: "deployments",
    kind: "Deployment",
    group: "apps",
};
const POD: Kind = Kind {
    prefix: "/api/v1",
    plural: "pods",
    kind: "Pod",
    group: "",
};

/// A valid object of `kind` in namespace `ns`: workloads restart their pods as their kind
/// requires (Always, a Job's Never).
fn body_for(kind: Kind, ns: &str, name: &str, finalizers: &[&str]) -> Value {
    let mut meta = json!({"name": name});
    if !finalizers.is_empty() {
        meta["finalizers"] = json!(finalizers);
    }
    let restart = if matches!(kind.kind, "Job" | "Pod") {
        "Never"
    } else {
        "Always"
    };
    let template = json!({
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": restart}
    });
    let mut o = json!({"kind": kind.kind, "metadata": meta});
    match kind.kind {
        "ConfigMap" => o["data"] = json!({"k": "v"}),
        "Event" => {
            o["involvedObject"] =
                json!({"kind": "Pod", "name": "p", "apiVersion": "v1", "namespace": ns});
            o["reason"] = json!("Test");
            o["message"] = json!("m");
        }
        "ReplicationController" => {
            o["spec"] = json!({"replicas": 1, "selector": {"app": name}, "template": template})
        }
        "Job" => o["spec"] = json!({"template": template}),
        "Deployment" => {
            o["spec"] = json!({"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template})
        }
        "Pod" => o["spec"] = template["spec"].clone(),
        other => panic!("no template for {other}"),
    }
    o
}

struct Ctx {
    s: Server,
    ns: String,
}

impl Ctx {
    async fn new(prefix: &str) -> Self {
        // The owner-reference garbage collector would act on `orphan` and `foregroundDeletion`
        // at once; these tests pin what the API server itself persists, so it is off here.
        let s = Server::start_with(&["--in-memory", "--disable", "gc"]).await;
        let ns = fresh_namespace(&s.client(), prefix).await;
        Ctx { s, ns }
    }

    fn collection(&self, kind: Kind) -> String {
        format!("{}/namespaces/{}/{}", kind.prefix, self.ns, kind.plural)
    }

    fn path(&self, kind: Kind, name: &str) -> String {
        format!("{}/{name}", self.collection(kind))
    }

    async fn create(&self, kind: Kind, name: &str, finalizers: &[&str]) -> Value {
        let r = self
            .s
            .raw(
                "POST",
                &self.collection(kind),
                Some("application/json"),
                body_for(kind, &self.ns, name, finalizers).to_string(),
            )
            .await;
        assert_eq!(r.status, 201, "creating {} {name}: {}", kind.kind, r.text());
        r.json()
    }

    async fn get(&self, kind: Kind, name: &str) -> Option<Value> {
        let r = self
            .s
            .raw("GET", &self.path(kind, name), None, vec![])
            .await;
        match r.status {
            200 => Some(r.json()),
            404 => None,
            other => panic!("GET {} {name}: {other} {}", kind.kind, r.text()),
        }
    }

    /// DELETE with a JSON DeleteOptions body (`None`: no body at all).
    async fn delete(&self, kind: Kind, name: &str, opts: Option<Value>) -> RawResponse {
        let body = opts.map(|o| o.to_string()).unwrap_or_default();
        let ct = if body.is_empty() {
            None
        } else {
            Some("application/json")
        };
        self.s.raw("DELETE", &self.path(kind, name), ct, body).await
    }

    async fn merge_patch(&self, kind: Kind, name: &str, patch: Value) -> RawResponse {
        self.s
            .raw(
                "PATCH",
                &self.path(kind, name),
                Some("application/merge-patch+json"),
                patch.to_string(),
            )
            .await
    }
}

fn finalizers(o: &Value) -> Vec<String> {
    o["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// The body of an immediate delete of a kind without ReturnDeletedObject.
#[track_caller]
fn assert_success_status(r: &RawResponse, kind: Kind, name: &str, uid: &str) {
    let v = r.json();
    assert_eq!(r.status, 200, "{v}");
    assert_eq!(v["kind"], "Status", "{v}");
    assert_eq!(v["apiVersion"], "v1", "{v}");
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["details"]["name"], name, "{v}");
    assert_eq!(v["details"]["group"], kind.group, "{v}");
    assert_eq!(
        v["details"]["kind"], kind.plural,
        "details.kind is the resource: {v}"
    );
    assert_eq!(v["details"]["uid"], uid, "{v}");
}

/// A kept object: 200 (or 202) with the object, deleting, with exactly these finalizers.
#[track_caller]
fn assert_kept(r: &RawResponse, code: u16, kind: Kind, want: &[&str]) -> Value {
    let v = r.json();
    assert_eq!(r.status, code, "{v}");
    assert_eq!(v["kind"], kind.kind, "the body is the object: {v}");
    assert!(
        v["metadata"]["deletionTimestamp"].is_string(),
        "deletionTimestamp: {v}"
    );
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 0, "{v}");
    assert_eq!(finalizers(&v), want, "finalizers: {v}");
    v
}

/// One row: create `kind` with `initial` finalizers, DELETE with `opts`, check the outcome
/// (`None`: deleted at once; `Some(list)`: kept with exactly `list`, answering `code`).
async fn row(
    cx: &Ctx,
    kind: Kind,
    initial: &[&str],
    opts: Option<Value>,
    want: Option<(&[&str], u16)>,
) {
    let name = unique(&kind.kind.to_ascii_lowercase());
    let created = cx.create(kind, &name, initial).await;
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let what = format!(
        "{} created with {initial:?}, deleted with {opts:?}",
        kind.kind
    );
    let r = cx.delete(kind, &name, opts.clone()).await;
    match want {
        None => {
            assert_success_status(&r, kind, &name, uid);
            assert!(cx.get(kind, &name).await.is_none(), "{what}: still stored");
        }
        Some((fins, code)) => {
            assert_kept(&r, code, kind, fins);
            let stored = cx
                .get(kind, &name)
                .await
                .unwrap_or_else(|| panic!("{what}: gone"));
            assert_eq!(finalizers(&stored), fins, "{what}: stored finalizers");
            assert!(
                stored["metadata"]["deletionTimestamp"].is_string(),
                "{what}"
            );
            // Clean up: drop every finalizer, which completes the deletion.
            let r = cx
                .merge_patch(kind, &name, json!({"metadata": {"finalizers": null}}))
                .await;
            assert_eq!(r.status, 200, "{what}: {}", r.text());
            assert!(
                cx.get(kind, &name).await.is_none(),
                "{what}: removing the finalizers deletes it"
            );
        }
    }
}

// shouldOrphanDependents rule 1 and shouldDeleteDependents rule 1: the kind's default
// policy is Unsupported (core Event): no GC finalizer is ever added, and existing ones are
// dropped.
#[tokio::test]
async fn unsupported_kind_event_never_gets_gc_finalizers() {
    let cx = Ctx::new("evt").await;
    row(
        &cx,
        EVENT,
        &[],
        Some(json!({"propagationPolicy": "Orphan"})),
        None,
    )
    .await;
    row(
        &cx,
        EVENT,
        &[],
        Some(json!({"propagationPolicy": "Foreground"})),
        None,
    )
    .await;
    row(
        &cx,
        EVENT,
        &[],
        Some(json!({"orphanDependents": true})),
        None,
    )
    .await;
    row(&cx, EVENT, &[], None, None).await;
    row(&cx, EVENT, &["orphan"], None, None).await;
    row(
        &cx,
        EVENT,
        &["foregroundDeletion"],
        Some(json!({"propagationPolicy": "Foreground"})),
        None,
    )
    .await;
    row(
        &cx,
        EVENT,
        &["example.com/x"],
        Some(json!({"propagationPolicy": "Orphan"})),
        Some((&["example.com/x"], 200)),
    )
    .await;
}

// shouldOrphanDependents rule 2: `orphanDependents` decides when set.
#[tokio::test]
async fn orphan_dependents_field_decides() {
    let cx = Ctx::new("orphdep").await;
    row(
        &cx,
        CONFIGMAP,
        &[],
        Some(json!({"orphanDependents": true})),
        Some((&["orphan"], 200)),
    )
    .await;
    // orphanDependents=false beats the kind's orphan default.
    row(&cx, RC, &[], Some(json!({"orphanDependents": false})), None).await;
    row(
        &cx,
        JOB,
        &[],
        Some(json!({"orphanDependents": false})),
        None,
    )
    .await;
    // ...and beats an existing orphan finalizer.
    row(
        &cx,
        CONFIGMAP,
        &["orphan"],
        Some(json!({"orphanDependents": false})),
        None,
    )
    .await;
    // shouldDeleteDependents rule 2: orphanDependents set (either value) means no foreground.
    row(
        &cx,
        CONFIGMAP,
        &["foregroundDeletion"],
        Some(json!({"orphanDependents": true})),
        Some((&["orphan"], 200)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["foregroundDeletion"],
        Some(json!({"orphanDependents": false})),
        None,
    )
    .await;
    // Kept by another finalizer with orphanDependents=false: 202 Accepted.
    row(
        &cx,
        CONFIGMAP,
        &["example.com/x"],
        Some(json!({"orphanDependents": false})),
        Some((&["example.com/x"], 202)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["example.com/x"],
        Some(json!({"orphanDependents": true})),
        Some((&["example.com/x", "orphan"], 200)),
    )
    .await;
    // The query parameter form.
    let name = unique("q");
    cx.create(CONFIGMAP, &name, &[]).await;
    let r =
        cx.s.raw(
            "DELETE",
            &format!("{}?orphanDependents=true", cx.path(CONFIGMAP, &name)),
            None,
            vec![],
        )
        .await;
    assert_kept(&r, 200, CONFIGMAP, &["orphan"]);
    cx.merge_patch(CONFIGMAP, &name, json!({"metadata": {"finalizers": null}}))
        .await;
}

// shouldOrphanDependents / shouldDeleteDependents rule 3: propagationPolicy.
#[tokio::test]
async fn propagation_policy_decides() {
    let cx = Ctx::new("policy").await;
    row(
        &cx,
        CONFIGMAP,
        &[],
        Some(json!({"propagationPolicy": "Orphan"})),
        Some((&["orphan"], 200)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &[],
        Some(json!({"propagationPolicy": "Foreground"})),
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &[],
        Some(json!({"propagationPolicy": "Background"})),
        None,
    )
    .await;
    // Background beats the kind's orphan default.
    row(
        &cx,
        RC,
        &[],
        Some(json!({"propagationPolicy": "Background"})),
        None,
    )
    .await;
    row(
        &cx,
        JOB,
        &[],
        Some(json!({"propagationPolicy": "Background"})),
        None,
    )
    .await;
    // An explicit policy replaces an existing GC finalizer.
    row(
        &cx,
        CONFIGMAP,
        &["orphan"],
        Some(json!({"propagationPolicy": "Background"})),
        None,
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["foregroundDeletion"],
        Some(json!({"propagationPolicy": "Background"})),
        None,
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["foregroundDeletion"],
        Some(json!({"propagationPolicy": "Orphan"})),
        Some((&["orphan"], 200)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["orphan"],
        Some(json!({"propagationPolicy": "Foreground"})),
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    row(
        &cx,
        RC,
        &[],
        Some(json!({"propagationPolicy": "Foreground"})),
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    row(
        &cx,
        DEPLOYMENT,
        &[],
        Some(json!({"propagationPolicy": "Orphan"})),
        Some((&["orphan"], 200)),
    )
    .await;
    // Query parameter form.
    let name = unique("q");
    cx.create(CONFIGMAP, &name, &[]).await;
    let r =
        cx.s.raw(
            "DELETE",
            &format!("{}?propagationPolicy=Foreground", cx.path(CONFIGMAP, &name)),
            None,
            vec![],
        )
        .await;
    assert_kept(&r, 200, CONFIGMAP, &["foregroundDeletion"]);
    cx.merge_patch(CONFIGMAP, &name, json!({"metadata": {"finalizers": null}}))
        .await;
}

// Rule 4: with no options, existing GC finalizers decide, before the kind's default.
#[tokio::test]
async fn existing_finalizers_decide_without_options() {
    let cx = Ctx::new("existing").await;
    row(&cx, CONFIGMAP, &["orphan"], None, Some((&["orphan"], 200))).await;
    row(
        &cx,
        CONFIGMAP,
        &["foregroundDeletion"],
        None,
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    // RC defaults to orphan, but an existing foregroundDeletion wins (orphan rule 4 → false,
    // foreground rule 4 → true).
    row(
        &cx,
        RC,
        &["foregroundDeletion"],
        None,
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    row(
        &cx,
        JOB,
        &["foregroundDeletion"],
        Some(json!({})),
        Some((&["foregroundDeletion"], 200)),
    )
    .await;
    // Deployment defaults to background, but an existing orphan wins.
    row(&cx, DEPLOYMENT, &["orphan"], None, Some((&["orphan"], 200))).await;
    // Non-GC finalizers are kept, in order, with the GC finalizer appended.
    row(
        &cx,
        RC,
        &["example.com/a", "example.com/b"],
        None,
        Some((&["example.com/a", "example.com/b", "orphan"], 200)),
    )
    .await;
}

// Rule 5: the kind's default policy (`DefaultGarbageCollectionPolicy`).
#[tokio::test]
async fn per_kind_default_policies() {
    let cx = Ctx::new("defaults").await;
    // core/v1 ReplicationController: orphan.
    row(&cx, RC, &[], None, Some((&["orphan"], 200))).await;
    row(&cx, RC, &[], Some(json!({})), Some((&["orphan"], 200))).await;
    // batch/v1 Job: orphan.
    row(&cx, JOB, &[], None, Some((&["orphan"], 200))).await;
    // apps/v1 Deployment and ConfigMap: background (deleted at once).
    row(&cx, DEPLOYMENT, &[], None, None).await;
    row(&cx, CONFIGMAP, &[], None, None).await;
    row(&cx, CONFIGMAP, &[], Some(json!({})), None).await;
    // No kind defaults to foreground; a non-GC finalizer alone keeps the object.
    row(
        &cx,
        DEPLOYMENT,
        &["example.com/x"],
        None,
        Some((&["example.com/x"], 200)),
    )
    .await;
    row(
        &cx,
        CONFIGMAP,
        &["example.com/x"],
        Some(json!({"propagationPolicy": "Background"})),
        Some((&["example.com/x"], 200)),
    )
    .await;
}

#[tokio::test]
async fn job_delete_without_policy_carries_the_warning() {
    let cx = Ctx::new("jobwarn").await;
    let check = |r: &RawResponse, want: bool| {
        let w = r.header("warning");
        if want {
            let w = w.unwrap_or_else(|| panic!("no Warning header: {:?}", r.headers));
            assert!(w.starts_with("299 - "), "{w}");
            assert!(w.contains(JOB_WARNING), "{w}");
        } else {
            assert!(w.is_none(), "unexpected Warning {w:?}");
        }
    };
    cx.create(JOB, "j1", &[]).await;
    let r = cx.delete(JOB, "j1", None).await;
    check(&r, true);
    assert_kept(&r, 200, JOB, &["orphan"]);
    cx.create(JOB, "j2", &[]).await;
    let r = cx
        .delete(JOB, "j2", Some(json!({"propagationPolicy": "Orphan"})))
        .await;
    check(&r, false);
    assert_kept(&r, 200, JOB, &["orphan"]);
    cx.create(JOB, "j3", &[]).await;
    let r = cx
        .delete(JOB, "j3", Some(json!({"propagationPolicy": "Background"})))
        .await;
    check(&r, false);
    cx.create(JOB, "j4", &[]).await;
    let r = cx
        .delete(JOB, "j4", Some(json!({"orphanDependents": true})))
        .await;
    check(&r, false);
    // DELETECOLLECTION warns too.
    cx.create(JOB, "j5", &[]).await;
    let r =
        cx.s.raw(
            "DELETE",
            &format!("{}?labelSelector=app%3Dj5", cx.collection(JOB)),
            None,
            vec![],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    check(&r, true);
    // kube-rs sees the Job kept with the orphan finalizer.
    let jobs: Api<Job> = Api::namespaced(cx.s.client(), &cx.ns);
    let j = jobs.get("j1").await.unwrap();
    assert_eq!(j.metadata.finalizers.unwrap(), ["orphan"]);
}

#[tokio::test]
async fn kube_rs_delete_params_with_each_policy() {
    let cx = Ctx::new("kubers").await;
    let rcs: Api<ReplicationController> = Api::namespaced(cx.s.client(), &cx.ns);
    for (name, params, want) in [
        ("rc-default", DeleteParams::default(), Some(vec!["orphan"])),
        ("rc-orphan", DeleteParams::orphan(), Some(vec!["orphan"])),
        (
            "rc-foreground",
            DeleteParams::foreground(),
            Some(vec!["foregroundDeletion"]),
        ),
        ("rc-background", DeleteParams::background(), None),
    ] {
        cx.create(RC, name, &[]).await;
        let out = rcs.delete(name, &params).await.unwrap();
        match want {
            Some(fins) => {
                let o = out
                    .left()
                    .unwrap_or_else(|| panic!("{name}: expected the object"));
                assert_eq!(o.metadata.finalizers.unwrap(), fins, "{name}");
                assert!(o.metadata.deletion_timestamp.is_some(), "{name}");
                assert_eq!(o.metadata.deletion_grace_period_seconds, Some(0), "{name}");
            }
            None => {
                let st = out
                    .right()
                    .unwrap_or_else(|| panic!("{name}: expected a Status"));
                assert_eq!(st.details.unwrap().kind, "replicationcontrollers");
                assert_eq!(api_error(rcs.get(name).await).code, 404);
            }
        }
    }
    // A second DELETE on a deleting object can switch the GC finalizer
    // (`updateForGracefulDeletionAndFinalizers` in `store.go`).
    let out = rcs
        .delete("rc-orphan", &DeleteParams::foreground())
        .await
        .unwrap();
    let o = out.left().unwrap();
    assert_eq!(o.metadata.finalizers.unwrap(), ["foregroundDeletion"]);
    let out = rcs
        .delete("rc-foreground", &DeleteParams::orphan())
        .await
        .unwrap();
    assert_eq!(out.left().unwrap().metadata.finalizers.unwrap(), ["orphan"]);
    // And Background on a deleting object drops the GC finalizer: gone.
    let out = rcs
        .delete("rc-default", &DeleteParams::background())
        .await
        .unwrap();
    assert!(out.is_right());
    assert_eq!(api_error(rcs.get("rc-default").await).code, 404);
}

#[tokio::test]
async fn first_deletion_marks_and_bumps_generation_once() {
    let cx = Ctx::new("mark").await;
    let created = cx.create(DEPLOYMENT, "d1", &[]).await;
    assert_eq!(created["metadata"]["generation"], 1);
    let before = jiff_now();
    let r = cx
        .delete(
            DEPLOYMENT,
            "d1",
            Some(json!({"propagationPolicy": "Orphan"})),
        )
        .await;
    let v = assert_kept(&r, 200, DEPLOYMENT, &["orphan"]);
    assert_eq!(
        v["metadata"]["generation"], 2,
        "the first deletion bumps generation"
    );
    let ts = v["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    let parsed: k8s_openapi::jiff::Timestamp = ts.parse().unwrap();
    assert!(
        (parsed.as_second() - before.as_second()).abs() <= 2,
        "deletionTimestamp {ts} is not now"
    );
    let rv1: u64 = v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        rv1 > created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    );

    // A second DELETE switching the policy: deletionTimestamp and generation stay.
    let r = cx
        .delete(
            DEPLOYMENT,
            "d1",
            Some(json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    let v2 = assert_kept(&r, 200, DEPLOYMENT, &["foregroundDeletion"]);
    assert_eq!(v2["metadata"]["generation"], 2);
    assert_eq!(v2["metadata"]["deletionTimestamp"], ts.as_str());

    // A second DELETE changing nothing: the object unchanged, same resourceVersion.
    let r = cx.delete(DEPLOYMENT, "d1", None).await;
    let v3 = assert_kept(&r, 200, DEPLOYMENT, &["foregroundDeletion"]);
    assert_eq!(
        v3["metadata"]["resourceVersion"],
        v2["metadata"]["resourceVersion"]
    );
    assert_eq!(v3["metadata"]["generation"], 2);

    // A spec change while deleting still bumps generation; deletionTimestamp cannot be changed.
    let r = cx
        .merge_patch(DEPLOYMENT, "d1", json!({"spec": {"replicas": 5}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["metadata"]["generation"], 3);
    assert_eq!(r.json()["metadata"]["deletionTimestamp"], ts.as_str());
    cx.merge_patch(DEPLOYMENT, "d1", json!({"metadata": {"finalizers": null}}))
        .await;
    assert!(cx.get(DEPLOYMENT, "d1").await.is_none());
}

fn jiff_now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}

#[tokio::test]
async fn status_body_for_immediate_deletes_object_for_kept_ones() {
    let cx = Ctx::new("bodies").await;
    let c = cx.create(CONFIGMAP, "c1", &[]).await;
    let r = cx.delete(CONFIGMAP, "c1", None).await;
    assert_success_status(&r, CONFIGMAP, "c1", c["metadata"]["uid"].as_str().unwrap());
    let d = cx.create(DEPLOYMENT, "d1", &[]).await;
    let r = cx
        .delete(
            DEPLOYMENT,
            "d1",
            Some(json!({"propagationPolicy": "Background"})),
        )
        .await;
    assert_success_status(&r, DEPLOYMENT, "d1", d["metadata"]["uid"].as_str().unwrap());
    // Pods return the deleted object (ReturnDeletedObject).
    let p = cx.create(POD, "p1", &[]).await;
    let r = cx.delete(POD, "p1", None).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["kind"], "Pod", "{v}");
    assert_eq!(v["metadata"]["uid"], p["metadata"]["uid"]);
    // Kept: the object, 200; 202 only with orphanDependents=false.
    cx.create(CONFIGMAP, "k1", &["example.com/x"]).await;
    let r = cx
        .delete(
            CONFIGMAP,
            "k1",
            Some(json!({"propagationPolicy": "Background"})),
        )
        .await;
    assert_kept(&r, 200, CONFIGMAP, &["example.com/x"]);
    let r = cx
        .delete(CONFIGMAP, "k1", Some(json!({"orphanDependents": false})))
        .await;
    assert_kept(&r, 202, CONFIGMAP, &["example.com/x"]);
    let r = cx.delete(CONFIGMAP, "k1", Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}))).await;
    assert_kept(&r, 200, CONFIGMAP, &["example.com/x", "foregroundDeletion"]);
}

#[tokio::test]
async fn preconditions_uid_and_resource_version() {
    let cx = Ctx::new("precond").await;
    let c = cx.create(CONFIGMAP, "c1", &[]).await;
    let uid = c["metadata"]["uid"].as_str().unwrap().to_owned();
    let rv = c["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong_uid = "00000000-0000-4000-8000-000000000000";
    let r = cx
        .delete(
            CONFIGMAP,
            "c1",
            Some(json!({"preconditions": {"uid": wrong_uid}})),
        )
        .await;
    assert_status(
        &r,
        409,
        "Conflict",
        &format!(
            r#"Operation cannot be fulfilled on configmaps "c1": the UID in the precondition ({wrong_uid}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"#
        ),
    );
    let r = cx
        .delete(
            CONFIGMAP,
            "c1",
            Some(json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_status(
        &r,
        409,
        "Conflict",
        &format!(
            r#"Operation cannot be fulfilled on configmaps "c1": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"#
        ),
    );
    // Nothing happened.
    let still = cx.get(CONFIGMAP, "c1").await.expect("still there");
    assert_eq!(still["metadata"]["resourceVersion"], rv.as_str());
    // Matching preconditions: deleted (kube-rs this time).
    let api: Api<ConfigMap> = Api::namespaced(cx.s.client(), &cx.ns);
    let stale = Preconditions {
        uid: Some(wrong_uid.into()),
        resource_version: None,
    };
    let err = api_error(
        api.delete("c1", &DeleteParams::default().preconditions(stale))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let ok = Preconditions {
        uid: Some(uid.clone()),
        resource_version: Some(rv.clone()),
    };
    let out = api
        .delete("c1", &DeleteParams::default().preconditions(ok))
        .await
        .unwrap();
    assert!(out.is_right());
    assert!(cx.get(CONFIGMAP, "c1").await.is_none());
    // A recreated object with the same name does not match the old uid.
    cx.create(CONFIGMAP, "c1", &[]).await;
    let r = cx
        .delete(
            CONFIGMAP,
            "c1",
            Some(json!({"preconditions": {"uid": uid}})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(cx.get(CONFIGMAP, "c1").await.is_some());
}

#[tokio::test]
async fn invalid_delete_options_and_finalizer_combinations() {
    let cx = Ctx::new("invalid").await;
    cx.create(CONFIGMAP, "c1", &[]).await;
    // orphanDependents together with propagationPolicy: 422.
    let r = cx
        .delete(
            CONFIGMAP,
            "c1",
            Some(json!({"orphanDependents": true, "propagationPolicy": "Orphan"})),
        )
        .await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert_eq!(v["reason"], "Invalid", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("orphanDependents and deletionPropagation cannot be both set"),
        "{v}"
    );
    // An unknown propagation policy: 422.
    let r = cx
        .delete(
            CONFIGMAP,
            "c1",
            Some(json!({"propagationPolicy": "Sideways"})),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["reason"], "Invalid");
    assert!(
        cx.get(CONFIGMAP, "c1").await.is_some(),
        "invalid options delete nothing"
    );

    // Finalizers orphan and foregroundDeletion together: invalid on create and on update.
    let r =
        cx.s.raw(
            "POST",
            &cx.collection(CONFIGMAP),
            Some("application/json"),
            body_for(CONFIGMAP, &cx.ns, "both", &["orphan", "foregroundDeletion"]).to_string(),
        )
        .await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert_eq!(v["reason"], "Invalid");
    assert_eq!(v["details"]["kind"], "ConfigMap", "{v}");
    assert_eq!(
        v["details"]["causes"][0]["field"], "metadata.finalizers",
        "{v}"
    );
    let msg = v["message"].as_str().unwrap();
    assert!(
        msg.starts_with(r#"ConfigMap "both" is invalid: metadata.finalizers: Invalid value: "#)
            && msg.ends_with(": finalizer orphan and foregroundDeletion cannot be both set"),
        "{msg}"
    );
    let r = cx
        .merge_patch(
            CONFIGMAP,
            "c1",
            json!({"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
}

#[tokio::test]
async fn removing_the_last_finalizer_deletes_and_watchers_see_deleted() {
    let cx = Ctx::new("finalize").await;
    let api: Api<ConfigMap> = Api::namespaced(cx.s.client(), &cx.ns);
    let c = cx
        .create(CONFIGMAP, "c1", &["example.com/a", "example.com/b"])
        .await;
    let rv0 = c["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut events = api
        .watch(&WatchParams::default().timeout(60), &rv0)
        .await
        .unwrap()
        .boxed();

    let r = cx.delete(CONFIGMAP, "c1", None).await;
    assert_kept(&r, 200, CONFIGMAP, &["example.com/a", "example.com/b"]);
    match try_next_within(&mut events, T, "MODIFIED (marked)").await {
        WatchEvent::Modified(o) => assert!(o.metadata.deletion_timestamp.is_some()),
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    // Removing one finalizer (JSON patch): still there.
    let r =
        cx.s.raw(
            "PATCH",
            &cx.path(CONFIGMAP, "c1"),
            Some("application/json-patch+json"),
            json!([{"op": "remove", "path": "/metadata/finalizers/0"}]).to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(finalizers(&r.json()), ["example.com/b"]);
    match try_next_within(&mut events, T, "MODIFIED (one finalizer left)").await {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.finalizers.unwrap(), ["example.com/b"]),
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    // Adding a finalizer to a deleting object is refused.
    let r = cx
        .merge_patch(
            CONFIGMAP,
            "c1",
            json!({"metadata": {"finalizers": ["example.com/b", "example.com/new"]}}),
        )
        .await;
    assert_status(
        &r,
        422,
        "Invalid",
        r#"ConfigMap "c1" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/new"}"#,
    );
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "metadata.finalizers"
    );
    assert_eq!(
        r.json()["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );

    // Removing the last finalizer with a PUT: 200 with the object, then it is gone.
    let mut current = api.get("c1").await.unwrap();
    current.metadata.finalizers = None;
    let out = api
        .replace("c1", &PostParams::default(), &current)
        .await
        .unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("c1"));
    let err = api_error(api.get("c1").await);
    assert_eq!(err.code, 404);
    match try_next_within(&mut events, T, "DELETED").await {
        WatchEvent::Deleted(o) => {
            assert_eq!(o.metadata.name.as_deref(), Some("c1"));
            assert!(o.metadata.finalizers.unwrap_or_default().is_empty());
        }
        other => panic!("expected DELETED, got {other:?}"),
    }

    // The same through a merge patch, on a Deployment kept by orphan.
    cx.create(DEPLOYMENT, "d1", &[]).await;
    let r = cx
        .delete(
            DEPLOYMENT,
            "d1",
            Some(json!({"propagationPolicy": "Orphan"})),
        )
        .await;
    assert_kept(&r, 200, DEPLOYMENT, &["orphan"]);
    let r = cx
        .merge_patch(DEPLOYMENT, "d1", json!({"metadata": {"finalizers": []}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(cx.get(DEPLOYMENT, "d1").await.is_none());

    // Removing a finalizer from an object that is not deleting just updates it.
    cx.create(CONFIGMAP, "live", &["example.com/a"]).await;
    let r = cx
        .merge_patch(CONFIGMAP, "live", json!({"metadata": {"finalizers": null}}))
        .await;
    assert_eq!(r.status, 200);
    assert!(cx.get(CONFIGMAP, "live").await.is_some());
}

fn scheduled_pod(name: &str, extra_meta: Value, grace: Option<i64>) -> Value {
    let mut meta = json!({"name": name});
    if let Some(m) = extra_meta.as_object() {
        for (k, v) in m {
            meta[k] = v.clone();
        }
    }
    let mut spec = json!({"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    json!({"kind": "Pod", "metadata": meta, "spec": spec})
}

async fn create_pod(cx: &Ctx, body: Value) -> Value {
    let r =
        cx.s.raw(
            "POST",
            &cx.collection(POD),
            Some("application/json"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn seconds_between(a: &str, b: &str) -> i64 {
    let a: k8s_openapi::jiff::Timestamp = a.parse().unwrap();
    let b: k8s_openapi::jiff::Timestamp = b.parse().unwrap();
    b.as_second() - a.as_second()
}

#[tokio::test]
async fn pods_unscheduled_go_at_once_scheduled_after_their_grace_period() {
    let cx = Ctx::new("podgrace").await;
    let pods: Api<Pod> = Api::namespaced(cx.s.client(), &cx.ns);
    // Unscheduled: grace 0 regardless of the request.
    cx.create(POD, "unscheduled", &[]).await;
    let r = cx
        .delete(POD, "unscheduled", Some(json!({"gracePeriodSeconds": 30})))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "Pod");
    assert!(cx.get(POD, "unscheduled").await.is_none());

    // Scheduled, gracePeriodSeconds=1: stays with deletionTimestamp = now + 1, then goes.
    let created = create_pod(&cx, scheduled_pod("sched", json!({}), None)).await;
    assert_eq!(created["metadata"]["generation"], 1);
    let rv0 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut events = pods
        .watch(&WatchParams::default().timeout(60), &rv0)
        .await
        .unwrap()
        .boxed();
    let before = jiff_now();
    let r = cx
        .delete(POD, "sched", Some(json!({"gracePeriodSeconds": 1})))
        .await;
    let v = r.json();
    assert_eq!(r.status, 200, "{v}");
    assert_eq!(v["kind"], "Pod");
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 1, "{v}");
    assert_eq!(
        v["metadata"]["generation"], 2,
        "graceful deletion bumps generation: {v}"
    );
    let ts: k8s_openapi::jiff::Timestamp = v["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let ahead = ts.as_second() - before.as_second();
    assert!(
        (0..=2).contains(&ahead),
        "deletionTimestamp should be now+1s, is {ahead}s ahead"
    );
    match try_next_within(&mut events, T, "MODIFIED (graceful)").await {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.deletion_grace_period_seconds, Some(1)),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    match try_next_within(&mut events, T, "DELETED after the grace period").await {
        WatchEvent::Deleted(o) => assert_eq!(o.metadata.name.as_deref(), Some("sched")),
        other => panic!("expected DELETED, got {other:?}"),
    }
    assert!(cx.get(POD, "sched").await.is_none());

    // Succeeded (or Failed) pods: grace 0 even when scheduled.
    create_pod(&cx, scheduled_pod("done", json!({}), None)).await;
    pods.patch_status(
        "done",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    let r = cx
        .delete(POD, "done", Some(json!({"gracePeriodSeconds": 30})))
        .await;
    assert_eq!(r.status, 200);
    assert!(cx.get(POD, "done").await.is_none());

    // gracePeriodSeconds=0: immediate.
    create_pod(&cx, scheduled_pod("now", json!({}), None)).await;
    let r = cx
        .delete(POD, "now", Some(json!({"gracePeriodSeconds": 0})))
        .await;
    assert_eq!(r.status, 200);
    assert!(cx.get(POD, "now").await.is_none());

    // No gracePeriodSeconds: the pod's terminationGracePeriodSeconds.
    create_pod(&cx, scheduled_pod("spec-grace", json!({}), Some(7))).await;
    let r = cx.delete(POD, "spec-grace", None).await;
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 7);
    // ...default 30.
    create_pod(&cx, scheduled_pod("default-grace", json!({}), None)).await;
    let r = cx.delete(POD, "default-grace", Some(json!({}))).await;
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 30);
    // A negative grace period counts as 1.
    create_pod(&cx, scheduled_pod("negative", json!({}), None)).await;
    let r = cx
        .delete(POD, "negative", Some(json!({"gracePeriodSeconds": -5})))
        .await;
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 1);
    eventually("the negative-grace pod to go", T, || async {
        cx.get(POD, "negative").await.is_none()
    })
    .await;
}

#[tokio::test]
async fn second_pod_delete_with_shorter_grace_shortens_it() {
    let cx = Ctx::new("shorten").await;
    create_pod(&cx, scheduled_pod("p", json!({}), None)).await;
    let r = cx
        .delete(POD, "p", Some(json!({"gracePeriodSeconds": 60})))
        .await;
    let first = r.json();
    assert_eq!(first["metadata"]["deletionGracePeriodSeconds"], 60);
    let ts1 = first["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    // A longer (or equal) one changes nothing.
    let r = cx
        .delete(POD, "p", Some(json!({"gracePeriodSeconds": 120})))
        .await;
    assert_eq!(r.status, 200);
    let same = r.json();
    assert_eq!(
        same["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert_eq!(same["metadata"]["deletionTimestamp"], ts1.as_str());
    // A shorter one moves deletionTimestamp earlier: the original request time + the new period.
    let r = cx
        .delete(POD, "p", Some(json!({"gracePeriodSeconds": 2})))
        .await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 2, "{v}");
    let ts2 = v["metadata"]["deletionTimestamp"].as_str().unwrap();
    assert_eq!(seconds_between(ts2, &ts1), 58, "{ts1} → {ts2}");
    assert_eq!(
        v["metadata"]["generation"], 2,
        "generation bumps only on the first deletion"
    );
    eventually(
        "the pod to go after the shortened grace period",
        T,
        || async { cx.get(POD, "p").await.is_none() },
    )
    .await;
}

#[tokio::test]
async fn graceful_pod_with_finalizer_waits_for_both() {
    let cx = Ctx::new("podfin").await;
    create_pod(
        &cx,
        scheduled_pod("p", json!({"finalizers": ["example.com/hold"]}), None),
    )
    .await;
    // Long enough that the patch and the read below fall inside it on a loaded machine
    // (1 s did not, once, under the full suite).
    let r = cx
        .delete(POD, "p", Some(json!({"gracePeriodSeconds": 5})))
        .await;
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 5);
    // Removing the finalizer while the grace period runs does not delete it
    // (`ShouldDeleteDuringUpdate` in `store.go`).
    let r = cx
        .merge_patch(POD, "p", json!({"metadata": {"finalizers": null}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        cx.get(POD, "p").await.is_some(),
        "deletionGracePeriodSeconds > 0: the pod stays"
    );
    // The grace period ends: the final grace-0 delete removes it.
    eventually("the pod to go", T, || async {
        cx.get(POD, "p").await.is_none()
    })
    .await;

    // With the finalizer still present when the grace period ends: kept at grace 0.
    create_pod(
        &cx,
        scheduled_pod("q", json!({"finalizers": ["example.com/hold"]}), None),
    )
    .await;
    cx.delete(POD, "q", Some(json!({"gracePeriodSeconds": 1})))
        .await;
    eventually("the grace period to end", T, || async {
        cx.get(POD, "q")
            .await
            .is_some_and(|p| p["metadata"]["deletionGracePeriodSeconds"] == 0)
    })
    .await;
    let p = cx.get(POD, "q").await.unwrap();
    assert_eq!(finalizers(&p), ["example.com/hold"]);
    let r = cx
        .merge_patch(POD, "q", json!({"metadata": {"finalizers": null}}))
        .await;
    assert_eq!(r.status, 200);
    assert!(cx.get(POD, "q").await.is_none());
}

#[tokio::test]
async fn delete_collection_with_a_label_selector() {
    let cx = Ctx::new("collection").await;
    cx.create(CONFIGMAP, "a", &[]).await;
    cx.create(CONFIGMAP, "b", &[]).await;
    cx.create(CONFIGMAP, "held", &["example.com/x"]).await;
    cx.create(CONFIGMAP, "other", &[]).await;
    for n in ["a", "b", "held"] {
        let r = cx
            .merge_patch(
                CONFIGMAP,
                n,
                json!({"metadata": {"labels": {"batch": "yes"}}}),
            )
            .await;
        assert_eq!(r.status, 200);
    }
    let r =
        cx.s.raw(
            "DELETE",
            &format!("{}?labelSelector=batch%3Dyes", cx.collection(CONFIGMAP)),
            None,
            vec![],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["kind"], "ConfigMapList", "{v}");
    let mut listed: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    listed.sort();
    assert_eq!(listed, ["a", "b", "held"]);
    assert!(cx.get(CONFIGMAP, "a").await.is_none());
    assert!(cx.get(CONFIGMAP, "b").await.is_none());
    let held = cx
        .get(CONFIGMAP, "held")
        .await
        .expect("held by its finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    assert!(cx.get(CONFIGMAP, "other").await.is_some(), "not selected");

    // With a propagation policy in the body: each selected object gets the finalizer.
    cx.create(RC, "r1", &[]).await;
    cx.create(RC, "r2", &[]).await;
    let r =
        cx.s.raw(
            "DELETE",
            &cx.collection(RC),
            Some("application/json"),
            json!({"propagationPolicy": "Foreground"}).to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    for n in ["r1", "r2"] {
        let o = cx.get(RC, n).await.unwrap();
        assert_eq!(finalizers(&o), ["foregroundDeletion"]);
    }
}
