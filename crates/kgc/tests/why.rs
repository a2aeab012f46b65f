//! `kgc why` (issue 22) against a spawned `kgc serve`: one scenario per verdict, each comparing
//! the whole `-o json` answer (uids, the namespace and times replaced by placeholders) and the
//! exit code. The collector and the namespace and volume protection controllers are those
//! built into `kgc serve`; where a scenario needs a hold nobody releases, the collector is off.

kgc_testsupport::bind_kgc!();

use std::collections::BTreeMap;
use std::time::Duration;

use kgc_testsupport::*;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams, PropagationPolicy,
};
use kube::{Api, Client};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `kgc why ARGS -o json` against `s`; the exit code and the answer with every uid of
/// `names` replaced by `<NAME>`, `ns` by `<ns>` and times by `<time>`.
async fn why(
    s: &Server,
    args: &[&str],
    ns: &str,
    names: &BTreeMap<String, String>,
) -> (i32, Value) {
    let mut c = tokio::process::Command::from(Kgc::command());
    c.arg("why")
        .args(args)
        .args(["-o", "json", "--kubeconfig"])
        .arg(s.kubeconfig_path())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .expect("kgc why finished within 60 s")
        .expect("running kgc why");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "kgc why {args:?}: not JSON ({e})\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.code().unwrap_or(-1),
        normalise(answer, ns, names),
    )
}

fn normalise(v: Value, ns: &str, names: &BTreeMap<String, String>) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "since" | "deletionTimestamp" | "time" => json!("<time>"),
                        "forSeconds" => json!(0),
                        _ => normalise(v, ns, names),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| normalise(v, ns, names)).collect()),
        Value::String(mut s) => {
            for (uid, name) in names {
                s = s.replace(uid.as_str(), &format!("<{name}>"));
            }
            Value::String(s.replace(ns, "<ns>"))
        }
        other => other,
    }
}

fn configmaps(c: &Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
    Api::namespaced_with(c.clone(), ns, &ar)
}

/// Creates a ConfigMap; its uid.
async fn configmap(c: &Client, ns: &str, metadata: Value) -> String {
    let object: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}),
    )
    .expect("a ConfigMap");
    configmaps(c, ns)
        .create(&PostParams::default(), &object)
        .await
        .expect("creating a ConfigMap")
        .metadata
        .uid
        .expect("a uid")
}

fn owner_ref(name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid, "blockOwnerDeletion": block})
}

fn uids(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(uid, name)| ((*uid).to_owned(), format!("{name}-uid")))
        .collect()
}

async fn deleting(api: &Api<DynamicObject>, name: &str) -> bool {
    matches!(api.get_opt(name).await, Ok(Some(o)) if o.metadata.deletion_timestamp.is_some())
}

#[tokio::test]
async fn a_foreground_deletion_held_by_a_dependents_finalizer() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-fg").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "finalizers": ["example.com/hold"], "ownerReferences": [owner_ref("owner", &owner, true)]}),
    )
    .await;
    let cms = configmaps(&c, &ns);
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleting the owner in the foreground");
    eventually("the collector deletes the child", DEADLINE, || {
        deleting(&cms, "child")
    })
    .await;
    let names = uids(&[(&owner, "owner"), (&child, "child")]);
    let (code, answer) = why(&s, &["configmap/owner", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 4, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "owner",
                "uid": "<owner-uid>", "finalizers": ["foregroundDeletion"], "deletionTimestamp": "<time>"},
            "verdict": "beingDeleted",
            "since": "<time>",
            "forSeconds": 0,
            "holds": [{
                "finalizer": "foregroundDeletion",
                "removedBy": "the garbage collector, once no dependent with blockOwnerDeletion=true remains",
                "waitingFor": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child",
                    "uid": "<child-uid>", "deletionTimestamp": "<time>",
                    "heldBy": [{
                        "finalizer": "example.com/hold",
                        "removedBy": "the controller that added it (it is not a Kubernetes finalizer)"
                    }]
                }]
            }]
        })
    );
}

#[tokio::test]
async fn a_namespace_stuck_on_a_custom_resource_with_a_custom_finalizer() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-ns").await;
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
              "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
              "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#,
    )
    .await;
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
    ])
    .await;
    let widget = format!(
        r#"{{"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {{"name": "w1", "namespace": "{ns}", "finalizers": ["example.com/hold"]}}}}"#
    );
    eventually("the Widget is served", DEADLINE, || async {
        s.kubectl_stdin(&["create", "-f", "-"], &widget)
            .await
            .status
            .success()
    })
    .await;
    let widget_uid = s
        .kubectl_ok(&[
            "get",
            "widget",
            "w1",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    let ns_uid = s
        .kubectl_ok(&["get", "ns", &ns, "-o", "jsonpath={.metadata.uid}"])
        .await;
    s.kubectl_ok(&["delete", "ns", &ns, "--wait=false"]).await;
    // Held once everything else is gone and the conditions say what remains.
    eventually("only the Widget remains", DEADLINE, || async {
        let out = s
            .kubectl(&[
                "get",
                "ns",
                &ns,
                "-o",
                "jsonpath={.status.conditions[*].message}",
            ])
            .await;
        let remaining = s
            .kubectl(&["get", "configmaps,serviceaccounts", "-n", &ns, "-o", "name"])
            .await;
        let messages = String::from_utf8_lossy(&out.stdout);
        messages.contains("Some content in the namespace has finalizers remaining")
            && messages.contains("widgets.example.com has 1 resource instances")
            && remaining.stdout.is_empty()
    })
    .await;
    let names = uids(&[(&ns_uid, "namespace"), (&widget_uid, "widget")]);
    let (code, answer) = why(&s, &["ns", &ns], &ns, &names).await;
    assert_eq!(code, 4, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "Namespace", "name": "<ns>", "uid": "<namespace-uid>",
                "deletionTimestamp": "<time>"},
            "verdict": "beingDeleted",
            "since": "<time>",
            "forSeconds": 0,
            "holds": [{
                "finalizer": "kubernetes",
                "removedBy": "the namespace controller, once every object in the namespace is gone",
                "waitingFor": [{
                    "apiVersion": "example.com/v1", "kind": "Widget", "namespace": "<ns>", "name": "w1",
                    "uid": "<widget-uid>", "deletionTimestamp": "<time>",
                    "heldBy": [{
                        "finalizer": "example.com/hold",
                        "removedBy": "the controller that added it (it is not a Kubernetes finalizer)"
                    }]
                }]
            }],
            "conditions": [
                {"type": "NamespaceContentRemaining", "reason": "SomeResourcesRemain",
                 "message": "Some resources are remaining: widgets.example.com has 1 resource instances"},
                {"type": "NamespaceFinalizersRemaining", "reason": "SomeFinalizersRemain",
                 "message": "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"}
            ]
        })
    );
}

#[tokio::test]
async fn a_claim_held_by_the_pod_using_it() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-pvc").await;
    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
             "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}],
                      "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}]}"#,
    )
    .await;
    let uid = s
        .kubectl_ok(&[
            "get",
            "pvc",
            "data",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    s.kubectl_ok(&["delete", "pvc", "data", "-n", &ns, "--wait=false"])
        .await;
    let names = uids(&[(&uid, "claim")]);
    let (code, answer) = why(&s, &["pvc/data", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 4, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "<ns>", "name": "data",
                "uid": "<claim-uid>", "finalizers": ["kubernetes.io/pvc-protection"], "deletionTimestamp": "<time>"},
            "verdict": "beingDeleted",
            "since": "<time>",
            "forSeconds": 0,
            "holds": [{
                "finalizer": "kubernetes.io/pvc-protection",
                "removedBy": "the PVC protection controller, once no pod uses the claim",
                "waitingFor": [{"kind": "Pod", "namespace": "<ns>", "name": "user"}]
            }]
        })
    );
}

#[tokio::test]
async fn an_owner_held_while_its_dependents_are_orphaned() {
    // No collector: nobody removes `orphan`.
    let s = Server::start_with(&["--in-memory", "--disable", "gc"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-orphan").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", &owner, false)]}),
    )
    .await;
    let cms = configmaps(&c, &ns);
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    cms.delete("owner", &orphan)
        .await
        .expect("deleting the owner");
    let names = uids(&[(&owner, "owner"), (&child, "child")]);
    let (code, answer) = why(&s, &["cm/owner", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 4, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "owner",
                "uid": "<owner-uid>", "finalizers": ["orphan"], "deletionTimestamp": "<time>"},
            "verdict": "beingDeleted",
            "since": "<time>",
            "forSeconds": 0,
            "holds": [{
                "finalizer": "orphan",
                "removedBy": "the garbage collector, after removing this owner from its dependents' owner references",
                "waitingFor": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child",
                    "uid": "<child-uid>"}]
            }]
        })
    );
}

#[tokio::test]
async fn kept_by_an_owner_and_kept_without_owners() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-kept").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", &owner, true)]}),
    )
    .await;
    let names = uids(&[(&owner, "owner"), (&child, "child")]);
    let (code, answer) = why(&s, &["configmaps/child", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child", "uid": "<child-uid>"},
            "verdict": "kept",
            "because": "ownerExists",
            "owners": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "<owner-uid>",
                "state": "present", "checked": "an object with uid <owner-uid> exists"}]
        })
    );
    let (code, answer) = why(&s, &["configmap", "owner", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "owner", "uid": "<owner-uid>"},
            "verdict": "kept",
            "because": "noOwnerReferences"
        })
    );
}

#[tokio::test]
async fn will_be_collected_when_the_owner_of_that_name_has_another_uid() {
    // No collector, or it would collect the object before the question is asked.
    let s = Server::start_with(&["--in-memory", "--disable", "gc"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-collect").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let stale = "00000000-0000-0000-0000-000000000001";
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", stale, false)]}),
    )
    .await;
    let names = uids(&[(&owner, "owner"), (&child, "child"), (stale, "stale")]);
    let (code, answer) = why(&s, &["cm/child", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child", "uid": "<child-uid>"},
            "verdict": "willBeCollected",
            "owners": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "<stale-uid>",
                "state": "absent",
                "checked": "no object has uid <stale-uid>; ConfigMap owner has another uid (<owner-uid>), so it is not the owner"}]
        })
    );
}

#[tokio::test]
async fn a_cluster_scoped_object_naming_a_namespaced_owner_is_never_collected() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-scope").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let role = format!(
        r#"{{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {{"name": "why-role", "ownerReferences": [
              {{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "{owner}"}}]}}}}"#
    );
    s.kubectl_stdin_ok(&["create", "-f", "-"], &role).await;
    let role_uid = s
        .kubectl_ok(&[
            "get",
            "clusterrole",
            "why-role",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    let names = uids(&[(&owner, "owner"), (&role_uid, "role")]);
    let (code, answer) = why(&s, &["clusterrole/why-role"], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "why-role",
                "uid": "<role-uid>"},
            "verdict": "kept",
            "because": "namespacedOwnerOfClusterScoped",
            "owners": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "<owner-uid>",
                "state": "namespacedOwnerOfClusterScoped",
                "checked": "ConfigMap is namespaced and this object is cluster-scoped: the reference can never be resolved"}]
        })
    );
}

#[tokio::test]
async fn recently_collected_by_the_garbage_collector() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-gone").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", &owner, false)]}),
    )
    .await;
    let cms = configmaps(&c, &ns);
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deleting the owner");
    eventually("the collector deletes the child", DEADLINE, || async {
        matches!(cms.get_opt("child").await, Ok(None))
    })
    .await;
    let names = uids(&[(&owner, "owner"), (&child, "child")]);
    let (code, answer) = why(&s, &["cm/child", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child"},
            "verdict": "collected",
            "decisions": [{
                "time": "<time>", "collector": "garbagecollector", "action": "Delete",
                "apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child",
                "uid": "<child-uid>", "propagationPolicy": "Background",
                "reason": "all owners absent: not found by uid: ConfigMap owner (uid <owner-uid>)"
            }]
        })
    );
    // An object nobody collected: not found, and the history says it was not collected.
    let mut cmd = tokio::process::Command::from(Kgc::command());
    let out = cmd
        .args(["why", "cm/never", "-n", &ns, "--kubeconfig"])
        .arg(s.kubeconfig_path())
        .output()
        .await
        .expect("running kgc why");
    assert_eq!(out.status.code(), Some(6));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not collected recently"), "{stderr}");
}

#[tokio::test]
async fn recently_collected_by_a_lifecycle_collector() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-ttl").await;
    s.kubectl_stdin_ok(
        &["create", "-n", &ns, "-f", "-"],
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "done"},
            "spec": {"ttlSecondsAfterFinished": 0, "template": {"spec": {"restartPolicy": "Never",
              "containers": [{"name": "c", "image": "busybox"}]}}}}"#,
    )
    .await;
    let uid = s
        .kubectl_ok(&[
            "get",
            "job",
            "done",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await;
    // What the Job controller writes once the Job has finished.
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"status": {"startTime": now, "completionTime": now, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
        {"type": "Complete", "status": "True", "lastTransitionTime": now}]}});
    s.kubectl_ok(&[
        "patch",
        "job",
        "done",
        "-n",
        &ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])
    .await;
    eventually("the TTL collector deletes the Job", DEADLINE, || async {
        let out = s
            .kubectl(&["get", "job", "done", "-n", &ns, "-o", "name"])
            .await;
        !out.status.success()
    })
    .await;
    let names = uids(&[(&uid, "job")]);
    let (code, answer) = why(&s, &["job/done", "-n", &ns], &ns, &names).await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "batch/v1", "kind": "Job", "namespace": "<ns>", "name": "done"},
            "verdict": "collected",
            "decisions": [{
                "time": "<time>", "collector": "ttl", "action": "Delete",
                "apiVersion": "batch/v1", "kind": "Job", "namespace": "<ns>", "name": "done",
                "uid": "<job-uid>", "propagationPolicy": "Foreground",
                "reason": "ttlSecondsAfterFinished expired after the Job finished"
            }]
        })
    );
}

#[tokio::test]
async fn recently_collected_by_a_kgc_controller() {
    // The collector runs in `kgc controller`; its history is on the controller's address.
    let s = Server::start_with(&["--in-memory", "--disable", "gc"]).await;
    let controller = Controller::start(&s, &["--leader-elect=false", "--gc-resync", "1s"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-ctl").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    let child = configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", &owner, false)]}),
    )
    .await;
    let cms = configmaps(&c, &ns);
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleting the owner");
    eventually("the controller collects the child", DEADLINE, || async {
        matches!(cms.get_opt("child").await, Ok(None))
    })
    .await;
    let names = uids(&[(&owner, "owner"), (&child, "child")]);
    let (code, answer) = why(
        &s,
        &["cm/child", "-n", &ns, "--server-url", controller.url()],
        &ns,
        &names,
    )
    .await;
    assert_eq!(code, 0, "{answer:#}");
    assert_eq!(
        answer,
        json!({
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child"},
            "verdict": "collected",
            "decisions": [{
                "time": "<time>", "collector": "garbagecollector", "action": "Delete",
                "apiVersion": "v1", "kind": "ConfigMap", "namespace": "<ns>", "name": "child",
                "uid": "<child-uid>", "propagationPolicy": "Background",
                "reason": "no owner remains: deleting its dependents in the foreground: ConfigMap owner (uid <owner-uid>)"
            }]
        })
    );
}

/// A user who may read only one namespace, and not its Secrets: an answer that rests on what
/// could not be listed names it; one that does not, does not.
#[tokio::test]
async fn kinds_that_could_not_be_listed_are_named_where_they_matter() {
    let s = Server::start_secure(&["--disable", "gc"]).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-rbac").await;
    let owner = configmap(&c, &ns, json!({"name": "owner"})).await;
    configmap(
        &c,
        &ns,
        json!({"name": "child", "ownerReferences": [owner_ref("owner", &owner, true)]}),
    )
    .await;
    configmaps(&c, &ns)
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("deleting the owner in the foreground");
    let user = add_user(&s, "viewer", &["-n", &ns, "--role", "view"]);
    let run = |target: &'static str| {
        let mut cmd = tokio::process::Command::from(Kgc::command());
        cmd.args(["why", target, "-n", &ns, "-o", "json", "--kubeconfig"])
            .arg(&user);
        async move { cmd.output().await.expect("running kgc why") }
    };
    // The owner waits for its blocking dependents, of any kind: Secrets could be among them.
    let out = run("cm/owner").await;
    assert_eq!(out.status.code(), Some(4));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let unknown = answer["unknown"].as_array().expect("unknown parts").clone();
    assert!(
        unknown.iter().any(|u| u.as_str().is_some_and(|u| {
            u.starts_with(&format!(
                "Secret in namespace {ns} could not be listed (forbidden"
            ))
        })),
        "{answer:#}"
    );
    // The child's verdict rests on its owner alone, which could be read.
    let out = run("cm/child").await;
    assert_eq!(out.status.code(), Some(0));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(answer["verdict"], "willBeCollected", "{answer:#}");
    assert!(answer.get("unknown").is_none(), "{answer:#}");
}

/// A pod on a node (none answers for it) deleted with a grace period: its deletionTimestamp is
/// when the grace period ends, and `kgc why` says when that is, as `kgc tree` does.
#[tokio::test]
async fn a_pod_in_its_grace_period_says_when_its_deletion_completes() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "why-grace").await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(c.clone(), &ns);
    let pod = typed(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"nodeName": "far-away", "containers": [{"name": "c", "image": "busybox"}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let params = DeleteParams {
        grace_period_seconds: Some(300),
        ..DeleteParams::default()
    };
    pods.delete("p", &params).await.unwrap();
    let out = tokio::process::Command::from(Kgc::command())
        .args(["why", "pod/p", "-n", &ns, "--kubeconfig"])
        .arg(s.kubeconfig_path())
        .kill_on_drop(true)
        .output()
        .await
        .expect("running kgc why");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prefix = format!("Pod {ns}/p is being deleted in its grace period, which ends at ");
    assert!(text.starts_with(&prefix), "{text}");
    // 300 s from the delete, less the time the test took: `in 4m5xs`.
    assert!(text.contains(" (in 4m"), "{text}");
    assert!(text.ends_with("); no finalizer holds it.\n"), "{text}");
}
