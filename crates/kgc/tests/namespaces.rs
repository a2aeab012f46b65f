//! Namespace termination (kubernetes/kubernetes `pkg/registry/core/namespace/storage/storage.go`,
//! `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`): DELETE marks the namespace
//! Terminating, creates inside are refused, the namespace controller deletes the content
//! (honouring finalizers) and then the namespace goes; system namespaces stay.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(20);

fn configmap(name: &str, finalizers: &[&str]) -> ConfigMap {
    typed(json!({"metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}}))
}

async fn populate(s: &Server, ns: &str) {
    let c = s.client();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
    for n in ["c1", "c2", "c3"] {
        cms.create(&PostParams::default(), &configmap(n, &[]))
            .await
            .unwrap();
    }
    let secrets: Api<Secret> = Api::namespaced(c.clone(), ns);
    secrets
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "s1"}, "stringData": {"a": "b"}})),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(c.clone(), ns);
    pods.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})),
    )
    .await
    .unwrap();
    let deps: Api<Deployment> = Api::namespaced(c.clone(), ns);
    deps.create(
        &PostParams::default(),
        &typed(json!({
            "metadata": {"name": "d1"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        })),
    )
    .await
    .unwrap();
}

fn condition<'a>(ns: &'a Value, kind: &str) -> Option<&'a Value> {
    ns["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

#[tokio::test]
async fn new_namespaces_carry_the_kubernetes_finalizer_and_are_active() {
    let s = Server::start().await;
    let name = fresh_namespace(&s.client(), "fresh").await;
    let api: Api<Namespace> = Api::all(s.client());
    let ns = api.get(&name).await.unwrap();
    assert_eq!(ns.spec.unwrap().finalizers.unwrap(), ["kubernetes"]);
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    // The system namespaces exist from the start.
    let list = api.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = list
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    for sys in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            names.iter().any(|n| n == sys),
            "{sys} missing from {names:?}"
        );
    }
}

#[tokio::test]
async fn delete_marks_terminating_removes_content_then_the_namespace() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "term").await;
    populate(&s, &ns).await;
    let nss: Api<Namespace> = Api::all(s.client());
    let rv = nss
        .get(&ns)
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = nss
        .watch(
            &WatchParams::default()
                .fields(&format!("metadata.name={ns}"))
                .timeout(60),
            &rv,
        )
        .await
        .unwrap()
        .boxed();

    let r = s
        .raw("DELETE", &format!("/api/v1/namespaces/{ns}"), None, vec![])
        .await;
    let v = r.json();
    assert_eq!(r.status, 200, "{v}");
    assert_eq!(v["kind"], "Namespace", "the body is the namespace: {v}");
    assert_eq!(v["status"]["phase"], "Terminating", "{v}");
    assert_eq!(v["spec"]["finalizers"], json!(["kubernetes"]), "{v}");
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");

    // Watchers see it Terminating, then DELETED once its content is gone.
    let mut saw_terminating = false;
    loop {
        match try_next_within(&mut events, T, "the namespace to be deleted").await {
            WatchEvent::Modified(n) => {
                saw_terminating |= n.status.and_then(|s| s.phase).as_deref() == Some("Terminating");
            }
            WatchEvent::Deleted(n) => {
                assert_eq!(n.metadata.name.as_deref(), Some(ns.as_str()));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(saw_terminating);
    let err = api_error(nss.get(&ns).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, format!(r#"namespaces "{ns}" not found"#).as_str())
    );
    // Every object in it is gone.
    let cms: Api<ConfigMap> = Api::all(s.client());
    let left = cms
        .list(&ListParams::default().fields(&format!("metadata.namespace={ns}")))
        .await
        .unwrap();
    assert!(left.items.is_empty());
    let pods: Api<Pod> = Api::all(s.client());
    let left = pods
        .list(&ListParams::default().fields(&format!("metadata.namespace={ns}")))
        .await
        .unwrap();
    assert!(left.items.is_empty());

    // The name can be used again, for a brand-new namespace.
    create_namespace(&s.client(), &ns).await;
    let again = nss.get(&ns).await.unwrap();
    assert_eq!(again.status.unwrap().phase.as_deref(), Some("Active"));
    let cms_in: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    assert!(
        cms_in
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_finalizer_holds_the_namespace_and_creates_are_forbidden_meanwhile() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "held").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    cms.create(
        &PostParams::default(),
        &configmap("held", &["example.com/hold"]),
    )
    .await
    .unwrap();
    cms.create(&PostParams::default(), &configmap("free", &[]))
        .await
        .unwrap();
    let nss: Api<Namespace> = Api::all(s.client());

    let r = s
        .raw("DELETE", &format!("/api/v1/namespaces/{ns}"), None, vec![])
        .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Creates inside a Terminating namespace: 403.
    let r = s
        .raw(
            "POST",
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Some("application/json"),
            json!({"metadata": {"name": "late"}}).to_string(),
        )
        .await;
    assert_status(
        &r,
        403,
        "Forbidden",
        &format!(
            r#"configmaps "late" is forbidden: unable to create new content in namespace {ns} because it is being terminated"#
        ),
    );
    assert_eq!(
        r.json()["details"]["causes"][0]["reason"],
        "NamespaceTerminating",
        "{}",
        r.text()
    );
    let err = api_error(
        cms.create(&PostParams::default(), &configmap("late2", &[]))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    let out = s
        .kubectl_stdin(
            &["create", "-f", "-"],
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late3\n  namespace: {ns}\n"
            ),
        )
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error from server (Forbidden)")
            && stderr.contains(&format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            )),
        "{stderr}"
    );

    // The controller deletes what it can and reports what remains.
    eventually(
        "the conditions naming the remaining content and finalizer",
        T,
        || async {
            let r = s
                .raw("GET", &format!("/api/v1/namespaces/{ns}"), None, vec![])
                .await;
            let v = r.json();
            condition(&v, "NamespaceContentRemaining").is_some()
                && condition(&v, "NamespaceFinalizersRemaining").is_some()
        },
    )
    .await;
    let v = s
        .raw("GET", &format!("/api/v1/namespaces/{ns}"), None, vec![])
        .await
        .json();
    assert_eq!(v["status"]["phase"], "Terminating");
    let content = condition(&v, "NamespaceContentRemaining").unwrap();
    assert_eq!(content["status"], "True");
    assert_eq!(content["reason"], "SomeResourcesRemain");
    assert_eq!(
        content["message"], "Some resources are remaining: configmaps has 1 resource instances",
        "{v}"
    );
    let fins = condition(&v, "NamespaceFinalizersRemaining").unwrap();
    assert_eq!(fins["status"], "True");
    assert_eq!(fins["reason"], "SomeFinalizersRemain");
    assert_eq!(
        fins["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
        "{v}"
    );
    assert!(
        api_error(cms.get("free").await).code == 404,
        "unheld content is deleted"
    );
    let held = cms.get("held").await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "held content is marked deleting"
    );

    // A second DELETE returns the namespace, still Terminating, deletionTimestamp unchanged.
    let before = s
        .raw("GET", &format!("/api/v1/namespaces/{ns}"), None, vec![])
        .await
        .json();
    let r = s
        .raw("DELETE", &format!("/api/v1/namespaces/{ns}"), None, vec![])
        .await;
    let again = r.json();
    assert_eq!(r.status, 200, "{again}");
    assert_eq!(again["kind"], "Namespace");
    assert_eq!(again["status"]["phase"], "Terminating");
    assert_eq!(
        again["metadata"]["deletionTimestamp"],
        before["metadata"]["deletionTimestamp"]
    );
    assert!(nss.get(&ns).await.is_ok());

    // Removing the finalizer lets the object, and then the namespace, go.
    release_and_wait_gone(&cms, &nss, &ns).await;
    let err = api_error(nss.get(&ns).await);
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn kubectl_delete_namespace_waits_until_it_is_gone() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "kdel").await;
    populate(&s, &ns).await;
    let out = s
        .kubectl_ok(&["delete", "namespace", &ns, "--timeout=60s"])
        .await;
    assert_eq!(out.trim(), format!(r#"namespace "{ns}" deleted"#));
    // kubectl waited: it is gone now, not merely Terminating.
    let nss: Api<Namespace> = Api::all(s.client());
    assert_eq!(api_error(nss.get(&ns).await).code, 404);
    let out = s.kubectl(&["get", "ns", &ns]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(r#"namespaces "{ns}" not found"#)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn system_namespaces_cannot_be_deleted() {
    let s = Server::start().await;
    for name in ["default", "kube-system", "kube-public"] {
        let r = s
            .raw(
                "DELETE",
                &format!("/api/v1/namespaces/{name}"),
                None,
                vec![],
            )
            .await;
        assert_status(
            &r,
            403,
            "Forbidden",
            &format!(r#"namespaces "{name}" is forbidden: this namespace may not be deleted"#),
        );
        let ns = s
            .raw("GET", &format!("/api/v1/namespaces/{name}"), None, vec![])
            .await
            .json();
        assert_eq!(ns["status"]["phase"], "Active", "{ns}");
        assert!(ns["metadata"]["deletionTimestamp"].is_null(), "{ns}");
    }
    let out = s.kubectl(&["delete", "ns", "default"]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted"#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Content can still be created in them.
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    cms.create(&PostParams::default(), &configmap("still-works", &[]))
        .await
        .unwrap();
}

/// LISTs the namespace controller, run as `kgc controller`, has sent (its request counter).
async fn controller_lists(c: &Controller) -> u64 {
    let metrics = c.get("/metrics").await.text();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("kgc_controller_api_requests_total{verb=\"get\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no GET counter in:\n{metrics}"))
}

/// The namespace controller requeues a namespace whose content is held by a finalizer after
/// upstream's estimate, never on other commits: while 200 writes land in another namespace it
/// sends less than one pass of LISTs (before, every commit anywhere cost a LIST of every
/// namespaced resource). Run as `kgc controller --controllers=-*,namespace` against a server
/// that runs every controller but it, so its requests can be counted.
#[tokio::test]
async fn the_namespace_controller_lists_per_pass_not_per_commit() {
    let s = Server::start_with(&["--in-memory", "--controllers=*,-namespace"]).await;
    let c = Controller::start(&s, &["--leader-elect=false", "--controllers=-*,namespace"]).await;
    let ns = fresh_namespace(&s.client(), "quiet").await;
    let busy = fresh_namespace(&s.client(), "busy").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    cms.create(
        &PostParams::default(),
        &configmap("held", &["example.com/hold"]),
    )
    .await
    .unwrap();
    for i in 0..20 {
        cms.create(&PostParams::default(), &configmap(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let nss: Api<Namespace> = Api::all(s.client());
    nss.delete(&ns, &Default::default()).await.unwrap();
    eventually("the controller to report the held content", T, || async {
        let v = s
            .raw("GET", &format!("/api/v1/namespaces/{ns}"), None, vec![])
            .await
            .json();
        condition(&v, "NamespaceFinalizersRemaining").is_some()
    })
    .await;
    // The conditions it just wrote queue the namespace once more; let that pass end.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = controller_lists(&c).await;
    let busy_cms: Api<ConfigMap> = Api::namespaced(s.client(), &busy);
    for i in 0..200 {
        busy_cms
            .create(&PostParams::default(), &configmap(&format!("w{i}"), &[]))
            .await
            .unwrap();
    }
    let during = controller_lists(&c).await - before;
    // One pass lists each namespaced resource once (about 30); 200 commits cost none.
    assert!(
        during < 30,
        "{during} GETs while 200 unrelated writes committed: the controller is not to look at the namespace again before its estimate"
    );
    // Releasing the content lets the namespace go at the next requeue (8 s after the last pass).
    release_and_wait_gone(&cms, &nss, &ns).await;
}

/// Removes the finalizer of the ConfigMap `held` and waits until the namespace is gone.
async fn release_and_wait_gone(cms: &Api<ConfigMap>, nss: &Api<Namespace>, ns: &str) {
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the namespace to disappear", T, || async {
        nss.get(ns).await.is_err()
    })
    .await;
}

/// `kgc serve --controllers=-*` runs no controller at all (an external `kgc controller` is then
/// the only one): a deleted namespace stays Terminating with its content, and a dependent whose
/// owner never existed is not collected.
#[tokio::test]
async fn serve_with_no_controllers_collects_nothing() {
    let s = Server::start_with(&["--in-memory", "--controllers=-*"]).await;
    let ns = fresh_namespace(&s.client(), "idle").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    cms.create(&PostParams::default(), &configmap("kept", &[]))
        .await
        .unwrap();
    let orphan: ConfigMap = typed(json!({"metadata": {"name": "orphan", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "never", "uid": "00000000-0000-0000-0000-000000000001"}
    ]}}));
    cms.create(&PostParams::default(), &orphan).await.unwrap();
    let nss: Api<Namespace> = Api::all(s.client());
    nss.delete(&ns, &Default::default()).await.unwrap();
    consistently("nothing is collected", Duration::from_secs(3), || async {
        cms.get("kept").await.is_ok()
            && cms.get("orphan").await.is_ok()
            && nss
                .get(&ns)
                .await
                .is_ok_and(|n| n.status.and_then(|s| s.phase).as_deref() == Some("Terminating"))
    })
    .await;
}
