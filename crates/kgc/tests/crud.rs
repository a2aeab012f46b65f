//! CRUD through kube-rs and kubectl: system metadata, optimistic concurrency, no-op writes,
//! generateName, and the upstream error bodies (kubernetes/kubernetes
//! `staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`).

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

const STALE: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

fn configmap(name: &str, data: Value) -> ConfigMap {
    typed(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}),
    )
}

fn deployment(name: &str, image: &str) -> Deployment {
    typed(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }
        }
    }))
}

fn rv(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("resourceVersion is set")
        .parse()
        .expect("resourceVersion is a decimal integer")
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[tokio::test]
async fn configmap_typed_crud_and_system_metadata() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "crud").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);

    let created = api
        .create(&PostParams::default(), &configmap("c1", json!({"a": "1"})))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.name.as_deref(), Some("c1"));
    assert_eq!(meta.namespace.as_deref(), Some(ns.as_str()));
    assert!(is_uuid(meta.uid.as_deref().unwrap()), "uid {:?}", meta.uid);
    let created_at = meta.creation_timestamp.as_ref().expect("creationTimestamp");
    let age = k8s_openapi::jiff::Timestamp::now().duration_since(created_at.0);
    assert!(
        age.as_secs().abs() < 60,
        "creationTimestamp {created_at:?} is not now"
    );
    let rv1 = rv(meta);
    assert!(rv1 > 0);

    let got = api.get("c1").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(got.data, created.data);
    assert_eq!(rv(&got.metadata), rv1);

    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(list_rv >= rv1);

    // Replace (PUT) with the current resourceVersion.
    let mut changed = got.clone();
    changed.data = Some([("a".to_owned(), "2".to_owned())].into());
    let replaced = api
        .replace("c1", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2 = rv(&replaced.metadata);
    assert!(rv2 > rv1, "an update gets a larger resourceVersion");
    assert_eq!(
        replaced.metadata.uid, created.metadata.uid,
        "uid survives updates"
    );
    assert_eq!(
        replaced.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );

    // Merge patch.
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "3"}})),
        )
        .await
        .unwrap();
    let rv3 = rv(&patched.metadata);
    assert!(rv3 > rv2);
    let data = patched.data.unwrap();
    assert_eq!((data["a"].as_str(), data["b"].as_str()), ("2", "3"));

    // JSON patch.
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::<Value>::Json(
                serde_json::from_value(json!([{"op": "replace", "path": "/data/a", "value": "9"}]))
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "9");
    assert!(rv(&patched.metadata) > rv3);

    // Delete: a ConfigMap goes at once and the body is a Status.
    let deleted = api.delete("c1", &DeleteParams::default()).await.unwrap();
    assert!(
        deleted.is_right(),
        "an immediate ConfigMap delete answers a Status"
    );
    let err = api_error(api.get("c1").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, r#"configmaps "c1" not found"#);
}

#[tokio::test]
async fn resource_version_is_cluster_wide_and_monotonic() {
    let s = Server::start().await;
    let c = s.client();
    let ns1 = fresh_namespace(&c, "rva").await;
    let ns2 = fresh_namespace(&c, "rvb").await;
    let cms1: Api<ConfigMap> = Api::namespaced(c.clone(), &ns1);
    let cms2: Api<ConfigMap> = Api::namespaced(c.clone(), &ns2);
    let deps: Api<Deployment> = Api::namespaced(c.clone(), &ns2);
    let mut last = 0;
    for i in 0..5 {
        let a = cms1
            .create(
                &PostParams::default(),
                &configmap(&format!("a{i}"), json!({})),
            )
            .await
            .unwrap();
        let b = cms2
            .create(
                &PostParams::default(),
                &configmap(&format!("b{i}"), json!({})),
            )
            .await
            .unwrap();
        let d = deps
            .create(
                &PostParams::default(),
                &deployment(&format!("d{i}"), "nginx"),
            )
            .await
            .unwrap();
        for o in [rv(&a.metadata), rv(&b.metadata), rv(&d.metadata)] {
            assert!(o > last, "resourceVersion {o} is not above {last}");
            last = o;
        }
    }
    // A LIST reports a revision at least as new as every item.
    let all: Api<ConfigMap> = Api::all(c.clone());
    let list = all.list(&ListParams::default()).await.unwrap();
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(list_rv >= last);
    assert_eq!(
        list.items
            .iter()
            .filter(|o| [ns1.as_str(), ns2.as_str()]
                .contains(&o.metadata.namespace.as_deref().unwrap()))
            .count(),
        10
    );
}

#[tokio::test]
async fn generation_starts_at_one_and_bumps_on_spec_change_only() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "gen").await;
    let api: Api<Deployment> = Api::namespaced(s.client(), &ns);
    let d = api
        .create(&PostParams::default(), &deployment("d1", "nginx:1"))
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));

    // Labels and annotations: no bump.
    let d = api
        .patch(
            "d1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"extra": "x"}, "annotations": {"a": "b"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        d.metadata.generation,
        Some(1),
        "a label change is not a spec change"
    );

    // Spec change by patch: bump.
    let d = api
        .patch(
            "d1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2));

    // Spec change by replace: bump.
    let mut v = serde_json::to_value(&d).unwrap();
    v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    let d2: Deployment = typed(v);
    let d = api
        .replace("d1", &PostParams::default(), &d2)
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(3));

    // A client cannot set generation on create.
    let mut d3 = deployment("d3", "nginx");
    d3.metadata.generation = Some(42);
    let d3 = api.create(&PostParams::default(), &d3).await.unwrap();
    assert_eq!(d3.metadata.generation, Some(1));
}

#[tokio::test]
async fn pod_crud_and_status_defaults() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "pods").await;
    let api: Api<Pod> = Api::namespaced(s.client(), &ns);
    let pod: Pod = typed(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p1", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running"}
    }));
    let created = api.create(&PostParams::default(), &pod).await.unwrap();
    assert_eq!(
        created.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending"),
        "status sent on create is replaced by the initial status"
    );
    let got = api.get("p1").await.unwrap();
    assert_eq!(
        got.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx")
    );

    // A write to the main resource ignores status.
    let p = api
        .patch(
            "p1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"b": "2"}}, "status": {"phase": "Failed"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(p.metadata.labels.unwrap()["b"], "2");

    // The status subresource changes status only.
    let p = api
        .patch_status(
            "p1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"c": "3"}}, "status": {"phase": "Running"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
    assert!(!p.metadata.labels.unwrap().contains_key("c"));

    // An unscheduled pod is deleted at once; pods return the deleted object.
    let deleted = api.delete("p1", &DeleteParams::default()).await.unwrap();
    let obj = deleted.left().expect("pods return the deleted object");
    assert_eq!(obj.metadata.name.as_deref(), Some("p1"));
    assert_eq!(api_error(api.get("p1").await).code, 404);
}

#[tokio::test]
async fn cluster_scoped_crud() {
    let s = Server::start().await;
    let api: Api<ClusterRole> = Api::all(s.client());
    let name = unique("role");
    let role: ClusterRole = typed(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    }));
    let created = api.create(&PostParams::default(), &role).await.unwrap();
    assert!(
        created.metadata.namespace.is_none(),
        "cluster-scoped objects have no namespace"
    );
    assert!(created.metadata.uid.is_some());
    let mut got = api.get(&name).await.unwrap();
    got.rules.as_mut().unwrap()[0].verbs.push("list".into());
    let replaced = api
        .replace(&name, &PostParams::default(), &got)
        .await
        .unwrap();
    assert_eq!(replaced.rules.unwrap()[0].verbs, ["get", "list"]);
    assert!(rv(&replaced.metadata) > rv(&created.metadata));
    let list = api.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|r| r.metadata.name.as_deref() == Some(name.as_str()))
    );
    let err = api_error(api.create(&PostParams::default(), &role).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        err.message,
        format!(r#"clusterroles.rbac.authorization.k8s.io "{name}" already exists"#)
    );
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let err = api_error(api.get(&name).await);
    assert_eq!(err.code, 404);
    assert_eq!(
        err.message,
        format!(r#"clusterroles.rbac.authorization.k8s.io "{name}" not found"#)
    );

    // A cluster-scoped resource under a namespace path does not exist.
    let r = s
        .raw(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/clusterroles",
            None,
            vec![],
        )
        .await;
    assert_status(
        &r,
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
}

#[tokio::test]
async fn stale_resource_version_is_a_conflict() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "occ").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let v1 = api
        .create(&PostParams::default(), &configmap("c1", json!({"a": "1"})))
        .await
        .unwrap();
    let mut v2 = v1.clone();
    v2.data = Some([("a".to_owned(), "2".to_owned())].into());
    let v2 = api
        .replace("c1", &PostParams::default(), &v2)
        .await
        .unwrap();

    // Replace carrying the first resourceVersion.
    let mut stale = v1.clone();
    stale.data = Some([("a".to_owned(), "stale".to_owned())].into());
    let err = api_error(api.replace("c1", &PostParams::default(), &stale).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        format!(r#"Operation cannot be fulfilled on configmaps "c1": {STALE}"#)
    );

    // A merge patch carrying a stale resourceVersion is an optimistic lock too.
    let old_rv = v1.metadata.resource_version.clone().unwrap();
    let err = api_error(
        api.patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": old_rv}, "data": {"a": "p"}})),
        )
        .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));

    // Nothing changed.
    let now = api.get("c1").await.unwrap();
    assert_eq!(now.metadata.resource_version, v2.metadata.resource_version);
    assert_eq!(now.data.as_ref().unwrap()["a"], "2");

    // A replace without resourceVersion is unconditional.
    let mut uncond = now.clone();
    uncond.metadata.resource_version = None;
    uncond.data = Some([("a".to_owned(), "3".to_owned())].into());
    let out = api
        .replace("c1", &PostParams::default(), &uncond)
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["a"], "3");

    // Grouped resources name the group in the message.
    let deps: Api<Deployment> = Api::namespaced(s.client(), &ns);
    let d1 = deps
        .create(&PostParams::default(), &deployment("d1", "nginx"))
        .await
        .unwrap();
    deps.patch(
        "d1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .unwrap();
    let err = api_error(deps.replace("d1", &PostParams::default(), &d1).await);
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        format!(r#"Operation cannot be fulfilled on deployments.apps "d1": {STALE}"#)
    );
}

#[tokio::test]
async fn no_op_writes_keep_the_resource_version_and_emit_no_event() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "noop").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let c = api
        .create(&PostParams::default(), &configmap("c1", json!({"a": "1"})))
        .await
        .unwrap();
    let start_rv = c.metadata.resource_version.clone().unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(30), &start_rv)
        .await
        .unwrap()
        .boxed();

    let same = api.replace("c1", &PostParams::default(), &c).await.unwrap();
    assert_eq!(
        same.metadata.resource_version.as_deref(),
        Some(start_rv.as_str())
    );
    let same = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version.as_deref(),
        Some(start_rv.as_str())
    );
    let same = api
        .patch("c1", &PatchParams::default(), &Patch::Merge(json!({})))
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version.as_deref(),
        Some(start_rv.as_str())
    );

    // The first event after the no-ops is the real change.
    let changed = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .unwrap();
    match try_next_within(&mut events, Duration::from_secs(10), "the MODIFIED event").await {
        WatchEvent::Modified(o) => {
            assert_eq!(
                o.metadata.resource_version,
                changed.metadata.resource_version
            );
            assert_eq!(o.data.unwrap()["a"], "2");
        }
        other => panic!("expected MODIFIED for the real change, got {other:?}"),
    }
}

#[tokio::test]
async fn generate_name_makes_unique_names() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "genname").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let tmpl: ConfigMap = typed(json!({"metadata": {"generateName": "gen-"}, "data": {}}));
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..10 {
        let o = api.create(&PostParams::default(), &tmpl).await.unwrap();
        let name = o.metadata.name.unwrap();
        assert!(
            name.starts_with("gen-") && name.len() == "gen-".len() + 5,
            "{name}"
        );
        assert_eq!(o.metadata.generate_name.as_deref(), Some("gen-"));
        names.insert(name);
    }
    assert_eq!(names.len(), 10);
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 10);
}

#[tokio::test]
async fn create_errors_already_exists_and_missing_namespace() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "errs").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let first = api
        .create(&PostParams::default(), &configmap("x", json!({"k": "1"})))
        .await
        .unwrap();
    let err = api_error(
        api.create(&PostParams::default(), &configmap("x", json!({"k": "2"})))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, r#"configmaps "x" already exists"#);
    let details = err.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("x", "configmaps")
    );
    let still = api.get("x").await.unwrap();
    assert_eq!(
        still.metadata.resource_version,
        first.metadata.resource_version
    );
    assert_eq!(still.data.unwrap()["k"], "1");

    let missing: Api<ConfigMap> = Api::namespaced(s.client(), "no-such-ns");
    let err = api_error(
        missing
            .create(&PostParams::default(), &configmap("x", json!({})))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, r#"namespaces "no-such-ns" not found"#);
}

#[tokio::test]
async fn missing_objects_are_not_found() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "nf").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let deps: Api<Deployment> = Api::namespaced(s.client(), &ns);

    let err = api_error(cms.get("nope").await);
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, r#"configmaps "nope" not found"#);
    let err = api_error(deps.get("nope").await);
    assert_eq!(err.message, r#"deployments.apps "nope" not found"#);
    let d = err.details.unwrap();
    assert_eq!(
        (d.group.as_str(), d.kind.as_str(), d.name.as_str()),
        ("apps", "deployments", "nope")
    );

    let err = api_error(
        cms.replace(
            "nope",
            &PostParams::default(),
            &configmap("nope", json!({})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, r#"configmaps "nope" not found"#)
    );
    let err = api_error(
        cms.patch(
            "nope",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {}})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, r#"configmaps "nope" not found"#)
    );
    let err = api_error(cms.delete("nope", &DeleteParams::default()).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, r#"configmaps "nope" not found"#)
    );

    // Raw: the full Status body.
    let r = s
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{ns}/configmaps/nope"),
            None,
            vec![],
        )
        .await;
    assert_status(&r, 404, "NotFound", r#"configmaps "nope" not found"#);
    let v = r.json();
    assert_eq!(v["details"]["name"], "nope");
    assert_eq!(v["details"]["kind"], "configmaps");
}

const CM_YAML: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME
  namespace: NS
  labels:
    app: demo
data:
  key: value
";

#[tokio::test]
async fn kubectl_create_apply_get_replace_label_annotate_patch_delete() {
    let s = Server::start().await;
    let ns = unique("kctl");
    let ns_file = s.write_file(
        "ns.yaml",
        &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"),
    );
    let out = s
        .kubectl_ok(&["apply", "-f", ns_file.to_str().unwrap()])
        .await;
    assert_eq!(out.trim(), format!("namespace/{ns} created"));

    let file = s.write_file("cm.yaml", &CM_YAML.replace("NAME", "c1").replace("NS", &ns));
    let f = file.to_str().unwrap();
    let out = s.kubectl_ok(&["create", "-f", f]).await;
    assert_eq!(out.trim(), "configmap/c1 created");

    // Creating it again: AlreadyExists, as kubectl prints it.
    let out = s.kubectl(&["create", "-f", f]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            r#"Error from server (AlreadyExists): error when creating "{f}": configmaps "c1" already exists"#
        )),
        "stderr: {stderr}"
    );

    // apply: create, then unchanged.
    let file2 = s.write_file(
        "cm2.yaml",
        &CM_YAML.replace("NAME", "c2").replace("NS", &ns),
    );
    let f2 = file2.to_str().unwrap();
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", f2]).await.trim(),
        "configmap/c2 created"
    );
    assert_eq!(
        s.kubectl_ok(&["apply", "-f", f2]).await.trim(),
        "configmap/c2 unchanged"
    );
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let c2 = api.get("c2").await.unwrap();
    let last_applied = &c2.metadata.annotations.as_ref().unwrap()["kubectl.kubernetes.io/last-applied-configuration"];
    assert!(last_applied.contains(r#""name":"c2""#), "{last_applied}");

    // get -o json | yaml | name.
    let json_out = s
        .kubectl_ok(&["get", "cm", "c1", "-n", &ns, "-o", "json"])
        .await;
    let v: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(v["kind"], "ConfigMap");
    assert_eq!(v["data"]["key"], "value");
    let c1 = api.get("c1").await.unwrap();
    assert_eq!(v["metadata"]["uid"].as_str(), c1.metadata.uid.as_deref());
    let yaml_out = s
        .kubectl_ok(&["get", "cm", "c1", "-n", &ns, "-o", "yaml"])
        .await;
    assert!(
        yaml_out.contains("kind: ConfigMap") && yaml_out.contains("name: c1"),
        "{yaml_out}"
    );
    let names = s.kubectl_ok(&["get", "cm", "-n", &ns, "-o", "name"]).await;
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["configmap/c1", "configmap/c2"]
    );
    let list_json = s
        .kubectl_ok(&["get", "configmaps", "-n", &ns, "-o", "json"])
        .await;
    let list: Value = serde_json::from_str(&list_json).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let table = s.kubectl_ok(&["get", "cm", "-n", &ns]).await;
    assert!(table.contains("c1") && table.contains("c2"), "{table}");

    // replace -f with new data.
    let replaced_file = s.write_file(
        "cm-replaced.yaml",
        &CM_YAML
            .replace("NAME", "c1")
            .replace("NS", &ns)
            .replace("key: value", "key: replaced"),
    );
    let out = s
        .kubectl_ok(&["replace", "-f", replaced_file.to_str().unwrap()])
        .await;
    assert_eq!(out.trim(), "configmap/c1 replaced");
    let c1b = api.get("c1").await.unwrap();
    assert_eq!(c1b.data.as_ref().unwrap()["key"], "replaced");
    assert_eq!(c1b.metadata.uid, c1.metadata.uid);

    // replace -f with a stale resourceVersion: Conflict.
    let stale_file = s.write_file(
        "cm-stale.yaml",
        &CM_YAML.replace("NAME", "c1").replace("NS", &ns).replace(
            "  labels:",
            &format!(
                "  resourceVersion: \"{}\"\n  labels:",
                c1.metadata.resource_version.as_deref().unwrap()
            ),
        ),
    );
    let out = s
        .kubectl(&["replace", "-f", stale_file.to_str().unwrap()])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            r#"Error from server (Conflict): error when replacing "{}": Operation cannot be fulfilled on configmaps "c1": {STALE}"#,
            stale_file.display()
        )),
        "stderr: {stderr}"
    );

    // label / annotate.
    assert_eq!(
        s.kubectl_ok(&["label", "cm", "c1", "-n", &ns, "tier=web"])
            .await
            .trim(),
        "configmap/c1 labeled"
    );
    assert_eq!(
        s.kubectl_ok(&["annotate", "cm", "c1", "-n", &ns, "note=hello"])
            .await
            .trim(),
        "configmap/c1 annotated"
    );
    let c1c = api.get("c1").await.unwrap();
    assert_eq!(c1c.metadata.labels.as_ref().unwrap()["tier"], "web");
    assert_eq!(c1c.metadata.annotations.as_ref().unwrap()["note"], "hello");
    assert_eq!(
        s.kubectl_ok(&["label", "cm", "c1", "-n", &ns, "tier-"])
            .await
            .trim(),
        "configmap/c1 unlabeled"
    );
    assert!(
        !api.get("c1")
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap()
            .contains_key("tier")
    );

    // patch --type merge and --type json.
    let out = s
        .kubectl_ok(&[
            "patch",
            "cm",
            "c1",
            "-n",
            &ns,
            "--type",
            "merge",
            "-p",
            r#"{"data":{"m":"1"}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "configmap/c1 patched");
    let out = s
        .kubectl_ok(&[
            "patch",
            "cm",
            "c1",
            "-n",
            &ns,
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels/j","value":"2"}]"#,
        ])
        .await;
    assert_eq!(out.trim(), "configmap/c1 patched");
    // The same merge patch again changes nothing.
    let out = s
        .kubectl_ok(&[
            "patch",
            "cm",
            "c1",
            "-n",
            &ns,
            "--type",
            "merge",
            "-p",
            r#"{"data":{"m":"1"}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "configmap/c1 patched (no change)");
    let c1d = api.get("c1").await.unwrap();
    assert_eq!(c1d.data.as_ref().unwrap()["m"], "1");
    assert_eq!(c1d.metadata.labels.as_ref().unwrap()["j"], "2");

    // delete (waits for the object to be gone).
    let out = s.kubectl_ok(&["delete", "cm", "c1", "-n", &ns]).await;
    assert_eq!(out.trim(), r#"configmap "c1" deleted"#);
    assert_eq!(api_error(api.get("c1").await).code, 404);
    let out = s.kubectl(&["get", "cm", "c1", "-n", &ns]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"Error from server (NotFound): configmaps "c1" not found"#)
    );

    // A manifest into a missing namespace.
    let missing = s.write_file(
        "cm-missing.yaml",
        &CM_YAML.replace("NAME", "c9").replace("NS", "no-such-ns"),
    );
    let out = s
        .kubectl(&["create", "-f", missing.to_str().unwrap()])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"Error from server (NotFound): error when creating"#)
            && stderr.contains(r#"namespaces "no-such-ns" not found"#),
        "stderr: {stderr}"
    );
}

#[tokio::test]
async fn kubectl_apply_deployment_and_pod_from_stdin() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "kapply").await;
    let manifest = format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {ns}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: c
        image: nginx
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: {ns}
spec:
  containers:
  - name: c
    image: nginx
"
    );
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["deployment.apps/web created", "pod/p1 created"]
    );
    let out = s.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["deployment.apps/web unchanged", "pod/p1 unchanged"]
    );
    let deps: Api<Deployment> = Api::namespaced(s.client(), &ns);
    let d = deps.get("web").await.unwrap();
    assert_eq!(serde_json::to_value(&d).unwrap()["spec"]["replicas"], 2);
    assert_eq!(d.metadata.generation, Some(1));
    let out = s
        .kubectl_ok(&["get", "deploy,pods", "-n", &ns, "-o", "name"])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["deployment.apps/web", "pod/p1"]
    );
    let out = s.kubectl_stdin_ok(&["delete", "-f", "-"], &manifest).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [r#"deployment.apps "web" deleted"#, r#"pod "p1" deleted"#]
    );
    assert_eq!(api_error(deps.get("web").await).code, 404);
}
