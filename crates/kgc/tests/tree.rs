//! `kgc tree` (issue 22) against a spawned `kgc serve`: the tree of a Deployment made by the real
//! workload controllers, hand-built graphs with every kind of reference the collector judges
//! (invalid, absent, blocking, deleting), `--owners`, bad input and forbidden kinds, each with
//! its exit code. Outputs are compared whole (`-o json`), uids, times and generated names
//! normalised.

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kgc_testsupport::pods::active;
use kgc_testsupport::*;
use kube::Api;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// Runs `kgc tree ARGS --kubeconfig KUBECONFIG`.
async fn kgc_tree(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.arg("tree")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("RUST_BACKTRACE", "0")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .expect("kgc tree finished within 60 s")
        .expect("running kgc tree")
}

/// `kgc tree ARGS -o json`, expecting exit code `code`; the tree, normalised.
async fn tree_json(s: &Server, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = kgc_tree(&s.kubeconfig_path(), &all).await;
    assert_eq!(
        out.status.code(),
        Some(code),
        "kgc tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).expect("kgc tree -o json is JSON");
    normalise(&mut v);
    v
}

/// Uids and times replaced by placeholders; names a controller generated (`web-<hash>`,
/// `web-<hash>-<hash>`) by their shape.
fn normalise(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x.as_str()) {
                    ("uid", Some(_)) => *x = json!("<uid>"),
                    ("creationTimestamp" | "deletionTimestamp", Some(_)) => *x = json!("<time>"),
                    ("name", Some(n)) if n.starts_with("web-") => {
                        let hashes = n.split('-').count() - 1;
                        *x = json!(format!("web{}", "-<hash>".repeat(hashes)));
                    }
                    _ => normalise(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalise),
        _ => {}
    }
}

/// Creates an object from JSON with kubectl; returns its uid.
async fn create(s: &Server, object: Value) -> String {
    let out = s
        .kubectl_stdin_ok(
            &["create", "-o", "jsonpath={.metadata.uid}", "-f", "-"],
            &object.to_string(),
        )
        .await;
    out.trim().to_owned()
}

fn configmap(ns: &str, name: &str, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"namespace": ns, "name": name, "ownerReferences": owners}})
}

fn owner(kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": uid,
           "controller": true, "blockOwnerDeletion": true})
}

const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
";

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Deployment → ReplicaSet → Pods, made by the living cluster's controllers; READY from the
/// pods' conditions; the same tree upwards from a pod.
#[tokio::test]
async fn deployment_replicaset_pods() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "tree-web").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], WEB)
        .await;
    eventually("two ready pods", T, || async {
        let p = active(&pods).await;
        p.len() == 2 && p.iter().all(ready)
    })
    .await;

    let pod = |_: ()| {
        json!({"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "web-<hash>-<hash>",
               "uid": "<uid>", "ready": {"status": "True", "reason": ""}, "creationTimestamp": "<time>",
               "reference": {"controller": true, "blockOwnerDeletion": true, "state": "present"}})
    };
    assert_eq!(
        tree_json(&s, &["deploy/web", "-n", &ns], 0).await,
        json!({
            "direction": "dependents",
            "root": {
                "apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web",
                "uid": "<uid>", "creationTimestamp": "<time>",
                "children": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": ns,
                    "name": "web-<hash>", "uid": "<uid>", "creationTimestamp": "<time>",
                    "reference": {"controller": true, "blockOwnerDeletion": true, "state": "present"},
                    "children": [pod(()), pod(())]
                }]
            }
        })
    );

    // The collector's graph narrowed the lists above; listing every kind finds the same tree.
    assert_eq!(
        tree_json(&s, &["deploy/web", "-n", &ns, "--list-all-kinds"], 0).await,
        tree_json(&s, &["deploy/web", "-n", &ns], 0).await
    );

    let name = active(&pods).await[0].metadata.name.clone().unwrap();
    let up = tree_json(&s, &["pod", &name, "-n", &ns, "--owners"], 0).await;
    let kinds = |b: &Value| -> Vec<String> {
        let mut out = vec![b["kind"].as_str().unwrap().to_owned()];
        let mut at = b;
        while let Some(c) = at["children"].get(0) {
            out.push(c["kind"].as_str().unwrap().to_owned());
            at = c;
        }
        out
    };
    assert_eq!(up["direction"], "owners");
    assert_eq!(kinds(&up["root"]), ["Pod", "ReplicaSet", "Deployment"]);

    let table = kgc_tree(&s.kubeconfig_path(), &["deployments.apps/web", "-n", &ns]).await;
    assert_eq!(table.status.code(), Some(0));
    let text = String::from_utf8_lossy(&table.stdout);
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "READY", "REASON", "AGE", "REFERENCE"]
    );
    assert!(text.contains("└─ReplicaSet/web-"), "{text}");
    assert!(
        text.contains("  ├─Pod/web-") && text.contains("  └─Pod/web-"),
        "{text}"
    );
}

/// Hand-built (no collector running, so the scene stays as built): a deleting dependent held by
/// a finalizer, a dependent in another namespace (invalid), a cluster-scoped dependent of a
/// namespaced owner (invalid), and an object whose owner is absent.
#[tokio::test]
async fn finalizers_deletions_and_invalid_references() {
    let s = Server::start_with(&["--in-memory", "--disable", "gc"]).await;
    let ns = fresh_namespace(&s.client(), "tree-hand").await;
    let other = fresh_namespace(&s.client(), "tree-other").await;
    let root = create(&s, configmap(&ns, "root", json!([]))).await;
    let mut held = configmap(&ns, "held", json!([owner("ConfigMap", "root", &root)]));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&s, held).await;
    s.kubectl_ok(&["delete", "configmap", "held", "-n", &ns, "--wait=false"])
        .await;
    create(
        &s,
        configmap(&other, "stray", json!([owner("ConfigMap", "root", &root)])),
    )
    .await;
    let role = format!("{ns}-role");
    create(&s, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": role, "ownerReferences": [owner("ConfigMap", "root", &root)]}}))
    .await;
    create(
        &s,
        configmap(&ns, "orphan", json!([owner("ConfigMap", "gone", "0000")])),
    )
    .await;

    let reference = |state: Value| {
        let mut r = json!({"controller": true, "blockOwnerDeletion": true});
        r.as_object_mut()
            .unwrap()
            .extend(state.as_object().unwrap().clone());
        r
    };
    assert_eq!(
        tree_json(&s, &["cm/root", "-n", &ns, "-A"], 0).await,
        json!({
            "direction": "dependents",
            "root": {
                "apiVersion": "v1", "kind": "ConfigMap", "namespace": ns, "name": "root",
                "uid": "<uid>", "creationTimestamp": "<time>",
                "children": [
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "name": role, "uid": "<uid>", "creationTimestamp": "<time>",
                     "reference": reference(json!({"state": "namespacedOwnerOfClusterScoped"}))},
                    {"apiVersion": "v1", "kind": "ConfigMap", "namespace": ns, "name": "held",
                     "uid": "<uid>", "creationTimestamp": "<time>", "deletionTimestamp": "<time>",
                     "finalizers": ["example.com/hold"],
                     "reference": reference(json!({"state": "present"}))},
                    {"apiVersion": "v1", "kind": "ConfigMap", "namespace": other, "name": "stray",
                     "uid": "<uid>", "creationTimestamp": "<time>",
                     "reference": reference(json!({"state": "otherNamespace", "namespace": ns}))},
                ]
            }
        })
    );
    // Without -A only the object's namespace (and cluster-scoped kinds) is listed.
    let in_ns = tree_json(&s, &["configmap", "root", "-n", &ns], 0).await;
    assert_eq!(in_ns["root"]["children"].as_array().unwrap().len(), 2);

    assert_eq!(
        tree_json(&s, &["cm/orphan", "-n", &ns, "--owners"], 0).await,
        json!({
            "direction": "owners",
            "root": {
                "apiVersion": "v1", "kind": "ConfigMap", "namespace": ns, "name": "orphan",
                "uid": "<uid>", "creationTimestamp": "<time>",
                "children": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": ns,
                              "name": "gone", "uid": "<uid>",
                              "reference": reference(json!({"state": "absent"}))}]
            }
        })
    );

    let table = kgc_tree(&s.kubeconfig_path(), &["cm/root", "-n", &ns, "-A"]).await;
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("example.com/hold"), "{text}");
    assert!(
        text.contains(&format!("INVALID: owner is in namespace {ns}")),
        "{text}"
    );
    assert!(
        text.contains("INVALID: namespaced owner of a cluster-scoped object"),
        "{text}"
    );

    let svg = kgc_tree(
        &s.kubeconfig_path(),
        &["cm/root", "-n", &ns, "-A", "-o", "svg"],
    )
    .await;
    let svg = String::from_utf8_lossy(&svg.stdout);
    assert!(
        svg.starts_with("<svg ") && svg.contains("box deleting") && svg.contains("edge invalid")
    );
}

/// Unknown kind, ambiguous short name, missing object, malformed argument: one line, and the
/// exit code the help documents.
#[tokio::test]
async fn bad_input() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "tree-bad").await;
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [cm]}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
",
    )
    .await;
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gizmos.example.com",
    ])
    .await;
    let kc = s.kubeconfig_path();
    let err = |o: &Output| String::from_utf8_lossy(&o.stderr).trim().to_owned();

    let o = kgc_tree(&kc, &["widgets/x", "-n", &ns]).await;
    assert_eq!(
        (o.status.code(), err(&o).as_str()),
        (
            Some(5),
            "kgc: error: the server doesn't have a resource type \"widgets\""
        )
    );

    // Discovery may lag the CRD by a moment.
    eventually("cm is ambiguous", T, || async {
        kgc_tree(&kc, &["cm/x", "-n", &ns]).await.status.code() == Some(5)
    })
    .await;
    let o = kgc_tree(&kc, &["cm/x", "-n", &ns]).await;
    assert_eq!(
        err(&o),
        "kgc: error: \"cm\" is ambiguous: it could be configmaps, gizmos.example.com"
    );

    let o = kgc_tree(&kc, &["configmap/missing", "-n", &ns]).await;
    assert_eq!(
        (o.status.code(), err(&o)),
        (
            Some(6),
            format!("kgc: error: configmaps \"missing\" not found in namespace \"{ns}\"")
        )
    );

    // A kind without a name: a usage error, as kubectl's (exit 1, with the usage line).
    let o = kgc_tree(&kc, &["missing"]).await;
    assert_eq!(
        (o.status.code(), err(&o).as_str()),
        (
            Some(1),
            "error: \"missing\": expected KIND/NAME (or KIND NAME)\n\nUsage: kgc tree [OPTIONS] \
             <KIND/NAME>...\n\nFor more information, try '--help'."
        )
    );
}

/// A user who may list only one namespace: the tree is drawn from what could be listed, the
/// kinds that could not are named, and the exit code says the answer is incomplete.
#[tokio::test]
async fn forbidden_kinds_are_named() {
    let s = Server::start_secure(&["--disable", "gc"]).await;
    let ns = fresh_namespace(&s.client(), "tree-rbac").await;
    let root = create(&s, configmap(&ns, "root", json!([]))).await;
    create(
        &s,
        configmap(&ns, "child", json!([owner("ConfigMap", "root", &root)])),
    )
    .await;
    let user = add_user(&s, "viewer", &["-n", &ns, "--role", "view"]);
    let o = kgc_tree(&user, &["cm/root", "-n", &ns]).await;
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(7),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("└─ConfigMap/child"), "{text}");
    assert!(
        text.contains("warning: could not list ClusterRole.rbac.authorization.k8s.io (forbidden"),
        "{text}"
    );
}
