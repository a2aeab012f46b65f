//! LIST with pagination and selectors, and WATCH: resume, expiry (410), bookmarks, streaming
//! lists, kube-runtime's watcher, `kubectl get -w` and `kubectl delete --wait`
//! (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go`,
//! `handlers/watch.go`, `staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go`).

kgc_testsupport::bind_kgc!();

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const T: Duration = Duration::from_secs(15);

fn configmap(name: &str, labels: Value) -> ConfigMap {
    typed(json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}))
}

fn names<I: IntoIterator<Item = ConfigMap>>(items: I) -> Vec<String> {
    items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn pagination_with_limit_and_continue() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "page").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let all: Vec<String> = (0..7).map(|i| format!("cm-{i}")).collect();
    for n in &all {
        api.create(&PostParams::default(), &configmap(n, json!({})))
            .await
            .unwrap();
    }

    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    let mut list_rv = None;
    loop {
        let mut lp = ListParams::default().limit(3);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        pages.push(page.items.len());
        let rv = page.metadata.resource_version.clone().unwrap();
        // The list revision stays that of the first page.
        assert_eq!(*list_rv.get_or_insert(rv.clone()), rv);
        seen.extend(names(page.items));
        // A write between pages must not change the pages' revision or order.
        if token.is_none() {
            api.patch(
                "cm-6",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"x": "y"}})),
            )
            .await
            .unwrap();
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages, [3, 3, 1]);
    assert_eq!(seen, all, "every object once, in name order");

    // A limit larger than the collection: one page, no continue token.
    let page = api.list(&ListParams::default().limit(50)).await.unwrap();
    assert_eq!(page.items.len(), 7);
    assert!(page.metadata.continue_.as_deref().unwrap_or("").is_empty());

    // Pagination combined with a label selector.
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("sel-{i}"), json!({"pick": "yes"})),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(2).labels("pick=yes");
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        assert!(page.items.len() <= 2);
        seen.extend(names(page.items));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    assert_eq!(seen, ["sel-0", "sel-1", "sel-2", "sel-3", "sel-4"]);

    // kubectl pages with --chunk-size.
    let out = s
        .kubectl_ok(&["get", "cm", "-n", &ns, "--chunk-size=2", "-o", "name"])
        .await;
    assert_eq!(out.lines().count(), 12, "{out}");
    assert!(out.lines().all(|l| l.starts_with("configmap/")));
    let out = s
        .kubectl(&["get", "cm", "-n", &ns, "--chunk-size=2", "-v=6"])
        .await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.matches("configmaps?continue=").count() + log.matches("&continue=").count() >= 5,
        "kubectl did not page through continue tokens:\n{log}"
    );
}

/// A page without a selector says how many items remain after it (`remainingItemCount`), as
/// kube-apiserver's does, in JSON and in a Table; through a selector it says nothing.
#[tokio::test]
async fn pages_without_a_selector_carry_the_remaining_item_count() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "remaining").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("cm-{i}"), json!({"n": "x"})),
        )
        .await
        .unwrap();
    }
    let mut counts = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(2);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        counts.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    assert_eq!(counts, [Some(3), Some(1), None]);
    let selected = api
        .list(&ListParams::default().limit(2).labels("n=x"))
        .await
        .unwrap();
    assert!(selected.metadata.continue_.is_some());
    assert_eq!(selected.metadata.remaining_item_count, None);
    let path = format!("/api/v1/namespaces/{ns}/configmaps?limit=1");
    let table = s
        .client()
        .request::<Value>(
            http::Request::get(&path)
                .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["metadata"]["remainingItemCount"], 4, "{table}");
}

#[tokio::test]
async fn label_selectors_with_every_operator() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "labels").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for (name, labels) in [
        ("a", json!({"app": "web", "tier": "front"})),
        ("b", json!({"app": "web", "tier": "back"})),
        ("c", json!({"app": "db"})),
        ("d", json!({})),
        ("e", json!({"app": "cache", "tier": "front", "env": "prod"})),
    ] {
        api.create(&PostParams::default(), &configmap(name, labels))
            .await
            .unwrap();
    }
    let cases: &[(&str, &[&str])] = &[
        ("app=web", &["a", "b"]),
        ("app==web", &["a", "b"]),
        ("app!=web", &["c", "d", "e"]),
        ("app in (web,db)", &["a", "b", "c"]),
        ("app in (web, db)", &["a", "b", "c"]),
        ("app notin (web,db)", &["d", "e"]),
        ("tier", &["a", "b", "e"]),
        ("!tier", &["c", "d"]),
        ("app=web,tier!=back", &["a"]),
        ("env in (prod),tier", &["e"]),
        // notin (like !=) also matches objects without the key.
        ("app,!env,tier notin (back)", &["a", "c"]),
        ("app=nothing", &[]),
        ("", &["a", "b", "c", "d", "e"]),
    ];
    for (selector, want) in cases {
        let got = names(
            api.list(&ListParams::default().labels(selector))
                .await
                .unwrap()
                .items,
        );
        assert_eq!(
            got.iter().cloned().collect::<BTreeSet<_>>(),
            set(want),
            "selector {selector:?}"
        );
    }
    // kubectl passes the selector verbatim.
    for (selector, want) in cases.iter().filter(|(s, _)| !s.is_empty()) {
        let out = s
            .kubectl(&["get", "cm", "-n", &ns, "-l", selector, "-o", "name"])
            .await;
        assert!(
            out.status.success(),
            "kubectl -l {selector:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_start_matches("configmap/").to_owned())
            .collect();
        assert_eq!(got, set(want), "kubectl -l {selector:?}");
    }
}

#[tokio::test]
async fn label_selector_gt_and_lt() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "gtlt").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for (name, labels) in [
        ("one", json!({"n": "1"})),
        ("five", json!({"n": "5"})),
        ("nine", json!({"n": "9"})),
        ("none", json!({})),
    ] {
        api.create(&PostParams::default(), &configmap(name, labels))
            .await
            .unwrap();
    }
    let got = names(
        api.list(&ListParams::default().labels("n>4"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(
        got.into_iter().collect::<BTreeSet<_>>(),
        set(&["five", "nine"])
    );
    let got = names(
        api.list(&ListParams::default().labels("n<5"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), set(&["one"]));
}

#[tokio::test]
async fn field_selectors() {
    let s = Server::start().await;
    let c = s.client();
    let ns = fresh_namespace(&c, "fields").await;
    let other = fresh_namespace(&c, "fields-other").await;
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &ns);
    let cms_other: Api<ConfigMap> = Api::namespaced(c.clone(), &other);
    for n in ["x", "y", "z"] {
        cms.create(&PostParams::default(), &configmap(n, json!({})))
            .await
            .unwrap();
    }
    cms_other
        .create(&PostParams::default(), &configmap("x", json!({})))
        .await
        .unwrap();

    let got = names(
        cms.list(&ListParams::default().fields("metadata.name=y"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(got, ["y"]);
    let got = names(
        cms.list(&ListParams::default().fields("metadata.name!=y"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(got, ["x", "z"]);
    let got = names(
        cms.list(&ListParams::default().fields("metadata.name==z"))
            .await
            .unwrap()
            .items,
    );
    assert_eq!(got, ["z"]);

    // Cluster-wide with metadata.namespace.
    let all: Api<ConfigMap> = Api::all(c.clone());
    let got = all
        .list(&ListParams::default().fields(&format!("metadata.namespace={other}")))
        .await
        .unwrap();
    assert_eq!(got.items.len(), 1);
    assert_eq!(
        got.items[0].metadata.namespace.as_deref(),
        Some(other.as_str())
    );
    let got = all
        .list(&ListParams::default().fields(&format!("metadata.name=x,metadata.namespace!={ns}")))
        .await
        .unwrap();
    assert!(
        got.items
            .iter()
            .all(|o| o.metadata.namespace.as_deref() != Some(ns.as_str()))
    );
    assert!(
        got.items
            .iter()
            .any(|o| o.metadata.namespace.as_deref() == Some(other.as_str()))
    );

    // Pods: spec.nodeName and status.phase (set through /status).
    let pods: Api<Pod> = Api::namespaced(c.clone(), &ns);
    for (name, node) in [("p1", Some("node-a")), ("p2", Some("node-b")), ("p3", None)] {
        let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        let pod: Pod = typed(json!({"metadata": {"name": name}, "spec": spec}));
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    pods.patch_status(
        "p1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    pods.patch_status(
        "p2",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    let pod_names = |l: kube::core::ObjectList<Pod>| -> Vec<String> {
        l.items
            .into_iter()
            .map(|p| p.metadata.name.unwrap())
            .collect()
    };
    let got = pod_names(
        pods.list(&ListParams::default().fields("spec.nodeName=node-a"))
            .await
            .unwrap(),
    );
    assert_eq!(got, ["p1"]);
    let got = pod_names(
        pods.list(&ListParams::default().fields("spec.nodeName="))
            .await
            .unwrap(),
    );
    assert_eq!(got, ["p3"], "an empty value selects unscheduled pods");
    let got = pod_names(
        pods.list(&ListParams::default().fields("status.phase=Running"))
            .await
            .unwrap(),
    );
    assert_eq!(got, ["p1"]);
    let got = pod_names(
        pods.list(&ListParams::default().fields("status.phase!=Running"))
            .await
            .unwrap(),
    );
    assert_eq!(got, ["p2", "p3"]);
    let got = pod_names(
        pods.list(&ListParams::default().fields("status.phase=Succeeded,spec.nodeName=node-b"))
            .await
            .unwrap(),
    );
    assert_eq!(got, ["p2"]);
    let out = s
        .kubectl_ok(&[
            "get",
            "pods",
            "-n",
            &ns,
            "--field-selector",
            "status.phase=Pending",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out.trim(), "pod/p3");
    let out = s
        .kubectl_ok(&[
            "get",
            "pods",
            "-A",
            "--field-selector",
            &format!("metadata.namespace={ns},spec.nodeName=node-b"),
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out.trim(), "pod/p2");

    // Events: involvedObject.*.
    let events: Api<Event> = Api::namespaced(c.clone(), &ns);
    for (name, target) in [("e1", "p1"), ("e2", "p2"), ("e3", "p1")] {
        let ev: Event = typed(json!({
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": target, "namespace": ns, "apiVersion": "v1"},
            "reason": "Test", "message": "m", "type": "Normal"
        }));
        events.create(&PostParams::default(), &ev).await.unwrap();
    }
    let got: Vec<String> = events
        .list(&ListParams::default().fields("involvedObject.name=p1"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.metadata.name.unwrap())
        .collect();
    assert_eq!(got, ["e1", "e3"]);
    let got = events
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind=Pod,involvedObject.namespace={ns},involvedObject.name=p2"
        )))
        .await
        .unwrap();
    assert_eq!(got.items.len(), 1);
}

#[tokio::test]
async fn bad_selectors_are_bad_requests() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "badsel").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    for sel in ["app%20in%20(a", "app%20%3D%3D%3D%20x", "!", "a%3Db%3Dc"] {
        let r = s
            .raw("GET", &format!("{base}?labelSelector={sel}"), None, vec![])
            .await;
        let v = r.json();
        assert_eq!(r.status, 400, "labelSelector={sel}: {v}");
        assert_eq!(v["reason"], "BadRequest", "{v}");
        assert_eq!(v["kind"], "Status");
    }
    let r = s
        .raw(
            "GET",
            &format!("{base}?fieldSelector=spec.foo%3Dbar"),
            None,
            vec![],
        )
        .await;
    assert_status(&r, 400, "BadRequest", "field label not supported: spec.foo");
    // Pod fields are not ConfigMap fields.
    let r = s
        .raw(
            "GET",
            &format!("{base}?fieldSelector=status.phase%3DRunning"),
            None,
            vec![],
        )
        .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "field label not supported: status.phase",
    );
    // Field selectors support only =, == and !=.
    let r = s
        .raw(
            "GET",
            &format!("{base}?fieldSelector=metadata.name%20in%20(a)"),
            None,
            vec![],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    // A watch validates the same way.
    let r = s
        .raw(
            "GET",
            &format!("{base}?watch=true&fieldSelector=spec.foo%3Dbar"),
            None,
            vec![],
        )
        .await;
    assert_status(&r, 400, "BadRequest", "field label not supported: spec.foo");
    let out = s
        .kubectl(&["get", "cm", "-n", &ns, "-l", "app in (a"])
        .await;
    assert!(!out.status.success());
    assert!(s.is_ready().await);
}

#[tokio::test]
async fn watch_from_list_resource_version_sees_later_changes_in_order() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "watch").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    api.create(&PostParams::default(), &configmap("before", json!({})))
        .await
        .unwrap();
    let list = api.list(&ListParams::default()).await.unwrap();
    let list_rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(60), &list_rv)
        .await
        .unwrap()
        .boxed();

    let created = api
        .create(&PostParams::default(), &configmap("w1", json!({"a": "b"})))
        .await
        .unwrap();
    let modified = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v2"}})),
        )
        .await
        .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    // A change elsewhere (another namespace) is not part of this watch.
    let other_ns = fresh_namespace(&s.client(), "watch-other").await;
    Api::<ConfigMap>::namespaced(s.client(), &other_ns)
        .create(&PostParams::default(), &configmap("elsewhere", json!({})))
        .await
        .unwrap();
    let marker = api
        .create(&PostParams::default(), &configmap("marker", json!({})))
        .await
        .unwrap();

    let mut rvs = Vec::new();
    let e = try_next_within(&mut stream, T, "ADDED").await;
    let WatchEvent::Added(o) = e else {
        panic!("expected ADDED, got {e:?}")
    };
    assert_eq!(o.metadata.name.as_deref(), Some("w1"));
    assert_eq!(
        o.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(o.metadata.uid, created.metadata.uid);
    rvs.push(o.metadata.resource_version.unwrap());
    let e = try_next_within(&mut stream, T, "MODIFIED").await;
    let WatchEvent::Modified(o) = e else {
        panic!("expected MODIFIED, got {e:?}")
    };
    assert_eq!(
        o.metadata.resource_version,
        modified.metadata.resource_version
    );
    assert_eq!(o.data.as_ref().unwrap()["k"], "v2");
    rvs.push(o.metadata.resource_version.unwrap());
    let e = try_next_within(&mut stream, T, "DELETED").await;
    let WatchEvent::Deleted(o) = e else {
        panic!("expected DELETED, got {e:?}")
    };
    assert_eq!(o.metadata.name.as_deref(), Some("w1"));
    assert_eq!(
        o.data.as_ref().unwrap()["k"],
        "v2",
        "DELETED carries the last state"
    );
    rvs.push(o.metadata.resource_version.unwrap());
    let e = try_next_within(&mut stream, T, "ADDED marker").await;
    let WatchEvent::Added(o) = e else {
        panic!("expected ADDED marker, got {e:?}")
    };
    assert_eq!(o.metadata.name.as_deref(), Some("marker"));
    assert_eq!(
        o.metadata.resource_version,
        marker.metadata.resource_version
    );
    rvs.push(o.metadata.resource_version.unwrap());
    let nums: Vec<u64> = rvs.iter().map(|r| r.parse().unwrap()).collect();
    assert!(
        nums.windows(2).all(|w| w[0] < w[1]),
        "RVs must increase: {nums:?}"
    );
    assert!(nums[0] > list_rv.parse::<u64>().unwrap());
}

#[tokio::test]
async fn watch_resumes_from_an_older_resource_version() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "resume").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let a = api
        .create(&PostParams::default(), &configmap("a", json!({})))
        .await
        .unwrap();
    let b = api
        .create(&PostParams::default(), &configmap("b", json!({})))
        .await
        .unwrap();
    let a2 = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"n": "2"}})),
        )
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();

    // From a's creation: b ADDED, a MODIFIED, b DELETED, in that order; a's ADDED is not resent.
    let from = a.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(60), &from)
        .await
        .unwrap()
        .boxed();
    let mut got = Vec::new();
    for _ in 0..3 {
        let e = try_next_within(&mut stream, T, "a replayed event").await;
        got.push(match e {
            WatchEvent::Added(o) => (
                "ADDED",
                o.metadata.name.unwrap(),
                o.metadata.resource_version.unwrap(),
            ),
            WatchEvent::Modified(o) => (
                "MODIFIED",
                o.metadata.name.unwrap(),
                o.metadata.resource_version.unwrap(),
            ),
            WatchEvent::Deleted(o) => (
                "DELETED",
                o.metadata.name.unwrap(),
                o.metadata.resource_version.unwrap(),
            ),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(got[0].0, "ADDED");
    assert_eq!(got[0].1, "b");
    assert_eq!(Some(&got[0].2), b.metadata.resource_version.as_ref());
    assert_eq!((got[1].0, got[1].1.as_str()), ("MODIFIED", "a"));
    assert_eq!(Some(&got[1].2), a2.metadata.resource_version.as_ref());
    assert_eq!((got[2].0, got[2].1.as_str()), ("DELETED", "b"));
    // Then live events continue on the same stream.
    api.create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap();
    let e = try_next_within(&mut stream, T, "live ADDED").await;
    assert!(
        matches!(&e, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("c")),
        "{e:?}"
    );

    // Without a resourceVersion (and with "0"): synthetic ADDED for the current state first.
    for rv in ["0"] {
        let mut stream = api
            .watch(&WatchParams::default().timeout(60), rv)
            .await
            .unwrap()
            .boxed();
        let mut initial = BTreeSet::new();
        for _ in 0..2 {
            match try_next_within(&mut stream, T, "initial ADDED").await {
                WatchEvent::Added(o) => initial.insert(o.metadata.name.unwrap()),
                other => panic!("expected ADDED, got {other:?}"),
            };
        }
        assert_eq!(initial, set(&["a", "c"]));
    }
    let mut raw = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=60"
        ))
        .await;
    let mut initial = BTreeSet::new();
    for _ in 0..2 {
        let e = next_within(&mut raw, T, "initial ADDED").await;
        assert_eq!(e["type"], "ADDED", "{e}");
        assert_eq!(e["object"]["kind"], "ConfigMap", "events carry kind: {e}");
        assert_eq!(
            e["object"]["apiVersion"], "v1",
            "events carry apiVersion: {e}"
        );
        initial.insert(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(initial, set(&["a", "c"]));
}

#[tokio::test]
async fn watch_from_a_compacted_resource_version_is_expired_410() {
    let s = Server::start_with(&["--in-memory", "--watch-cache-size", "5"]).await;
    let ns = fresh_namespace(&s.client(), "expired").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let first = api
        .create(&PostParams::default(), &configmap("c0", json!({})))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.clone().unwrap();
    for i in 1..=20 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("c{i}"), json!({})),
        )
        .await
        .unwrap();
    }
    // kube-rs: an ERROR event carrying a 410 Expired Status, in-stream.
    let mut stream = api
        .watch(&WatchParams::default().timeout(30), &old_rv)
        .await
        .unwrap()
        .boxed();
    match try_next_within(&mut stream, T, "the ERROR event").await {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410, "{status:?}");
            assert_eq!(status.reason, "Expired", "{status:?}");
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {old_rv} (")),
                "{status:?}"
            );
        }
        other => panic!("expected ERROR 410, got {other:?}"),
    }

    // Raw: HTTP 200, then the ERROR line, then the stream ends.
    let req = http::Request::get(format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={old_rv}&timeoutSeconds=30"
    ))
    .body(kube::client::Body::empty())
    .unwrap();
    let resp = s.client().send(req).await.unwrap();
    assert_eq!(resp.status(), 200, "an expired watch is reported in-stream");
    let body = tokio::time::timeout(T, resp.into_body().collect_bytes())
        .await
        .expect("the stream ends after the ERROR")
        .unwrap();
    let text = String::from_utf8_lossy(&body);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let e: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["kind"], "Status");
    assert_eq!(e["object"]["apiVersion"], "v1");
    assert_eq!(e["object"]["status"], "Failure");
    assert_eq!(e["object"]["reason"], "Expired");
    assert_eq!(e["object"]["code"], 410);

    // A recent resourceVersion still works.
    let latest = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(30), &latest)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &configmap("fresh", json!({})))
        .await
        .unwrap();
    let e = try_next_within(&mut stream, T, "ADDED fresh").await;
    assert!(
        matches!(&e, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("fresh")),
        "{e:?}"
    );

    // kube-runtime's watcher recovers from a 410 by re-listing (it is never handed an old RV
    // here, but it must work against a small log).
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut names = BTreeSet::new();
    loop {
        match try_next_within(&mut w, T, "watcher init").await {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => {
                names.insert(o.metadata.name.unwrap());
            }
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(names.len(), 22);
}

async fn watcher_cycle(api: Api<ConfigMap>, config: watcher::Config) {
    let mut w = watcher(api.clone(), config).boxed();
    let mut initial = BTreeSet::new();
    assert!(matches!(
        try_next_within(&mut w, T, "Init").await,
        watcher::Event::Init
    ));
    loop {
        match try_next_within(&mut w, T, "InitApply/InitDone").await {
            watcher::Event::InitApply(o) => {
                initial.insert(o.metadata.name.unwrap());
            }
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?} during init"),
        }
    }
    assert_eq!(initial, set(&["existing-1", "existing-2"]));

    api.create(&PostParams::default(), &configmap("live", json!({})))
        .await
        .unwrap();
    match try_next_within(&mut w, T, "Apply (create)").await {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.name.as_deref(), Some("live")),
        other => panic!("expected Apply, got {other:?}"),
    }
    api.patch(
        "live",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    match try_next_within(&mut w, T, "Apply (update)").await {
        watcher::Event::Apply(o) => assert_eq!(o.data.unwrap()["k"], "changed"),
        other => panic!("expected Apply, got {other:?}"),
    }
    api.delete("live", &DeleteParams::default()).await.unwrap();
    match try_next_within(&mut w, T, "Delete").await {
        watcher::Event::Delete(o) => assert_eq!(o.metadata.name.as_deref(), Some("live")),
        other => panic!("expected Delete, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_runtime_watcher_full_cycle() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "watcher").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for n in ["existing-1", "existing-2"] {
        api.create(&PostParams::default(), &configmap(n, json!({})))
            .await
            .unwrap();
    }
    // ListWatch with small pages, so init pages through continue tokens.
    watcher_cycle(api.clone(), watcher::Config::default().page_size(1)).await;
}

#[tokio::test]
async fn kube_runtime_watcher_streaming_list_cycle() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "streaming").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for n in ["existing-1", "existing-2"] {
        api.create(&PostParams::default(), &configmap(n, json!({})))
            .await
            .unwrap();
    }
    watcher_cycle(api.clone(), watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn send_initial_events_ends_with_the_initial_events_end_bookmark() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "initial").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for n in ["i1", "i2", "i3"] {
        api.create(&PostParams::default(), &configmap(n, json!({})))
            .await
            .unwrap();
    }
    let list_rv: u64 = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    let mut raw = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60"
        ))
        .await;
    let mut initial = BTreeSet::new();
    for _ in 0..3 {
        let e = next_within(&mut raw, T, "initial ADDED").await;
        assert_eq!(e["type"], "ADDED", "{e}");
        initial.insert(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(initial, set(&["i1", "i2", "i3"]));
    let b = next_within(&mut raw, T, "the initial-events-end BOOKMARK").await;
    assert_eq!(b["type"], "BOOKMARK", "{b}");
    assert_eq!(b["object"]["kind"], "ConfigMap", "{b}");
    assert_eq!(b["object"]["apiVersion"], "v1", "{b}");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{b}"
    );
    let bookmark_rv: u64 = b["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        bookmark_rv >= list_rv,
        "bookmark RV {bookmark_rv} < list RV {list_rv}"
    );

    // Then live changes follow.
    api.create(&PostParams::default(), &configmap("i4", json!({})))
        .await
        .unwrap();
    let e = next_within(&mut raw, T, "live ADDED").await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("i4"))
    );
    let rv: u64 = e["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv > bookmark_rv);

    // An empty collection: the bookmark comes at once.
    let empty = fresh_namespace(&s.client(), "initial-empty").await;
    let mut raw = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{empty}/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60"
        ))
        .await;
    let b = next_within(&mut raw, T, "the initial-events-end BOOKMARK").await;
    assert_eq!(b["type"], "BOOKMARK", "{b}");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

/// Reads a raw watch until it ends, failing after `deadline`; returns its lines and how long it
/// lasted.
async fn drain(mut raw: WatchLines, deadline: Duration) -> (Vec<Value>, Duration) {
    let started = Instant::now();
    let mut lines = Vec::new();
    loop {
        match tokio::time::timeout_at((started + deadline).into(), raw.next()).await {
            Ok(Some(line)) => lines.push(line),
            Ok(None) => return (lines, started.elapsed()),
            Err(_) => panic!("the watch did not end within {deadline:?}; lines so far: {lines:?}"),
        }
    }
}

#[tokio::test]
async fn watch_timeout_seconds_ends_the_stream_cleanly() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "timeout").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let c = api
        .create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap();
    let rv = c.metadata.resource_version.unwrap();
    // No allowWatchBookmarks and no changes: nothing at all, and the stream ends on time.
    let raw = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=2"
        ))
        .await;
    let (lines, elapsed) = drain(raw, Duration::from_secs(15)).await;
    assert!(
        lines.is_empty(),
        "unexpected watch lines without changes: {lines:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(1500) && elapsed < Duration::from_secs(8),
        "the watch lasted {elapsed:?} with timeoutSeconds=2"
    );
    // kube-rs sees the end of the stream as the end of the event stream.
    let mut stream = api
        .watch(&WatchParams::default().timeout(1).disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
    assert!(matches!(end, Ok(None)), "expected a clean end, got {end:?}");
}

#[tokio::test]
async fn watch_with_bookmarks_gets_one_before_its_timeout() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "bookmark").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let c = api
        .create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap();
    let rv: u64 = c.metadata.resource_version.unwrap().parse().unwrap();
    let raw = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3"
        ))
        .await;
    let (lines, elapsed) = drain(raw, Duration::from_secs(15)).await;
    assert!(
        elapsed >= Duration::from_millis(2500) && elapsed < Duration::from_secs(10),
        "the watch lasted {elapsed:?} with timeoutSeconds=3"
    );
    // Upstream's watch cache sends a BOOKMARK 2 s before a watch's deadline when bookmarks are
    // allowed (apiserver pkg/storage/cacher/cache_watcher.go `nextBookmarkTime`: "(a) right
    // before the watcher timeout - for now we simply set it 2s before the deadline"), so that a
    // client resumes from a fresh resourceVersion.
    assert!(
        lines.iter().any(|l| l["type"] == "BOOKMARK"),
        "no BOOKMARK before the watch timed out: {lines:?}"
    );
    for l in &lines {
        assert_eq!(l["type"], "BOOKMARK", "{l}");
        assert_eq!(l["object"]["kind"], "ConfigMap", "{l}");
        assert_eq!(l["object"]["apiVersion"], "v1", "{l}");
        let b: u64 = l["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(b >= rv, "{l}");
    }
}

#[tokio::test]
async fn single_object_watch_by_name() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "byname").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let a = api
        .create(&PostParams::default(), &configmap("a", json!({})))
        .await
        .unwrap();
    let rv = a.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(
            &WatchParams::default().fields("metadata.name=a").timeout(60),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &configmap("b", json!({})))
        .await
        .unwrap();
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    let e = try_next_within(&mut stream, T, "MODIFIED a").await;
    assert!(
        matches!(&e, WatchEvent::Modified(o) if o.metadata.name.as_deref() == Some("a")),
        "{e:?}"
    );

    // A label-selector watch turns "entered" into ADDED and "left" into DELETED.
    let mut stream = api
        .watch(&WatchParams::default().labels("sel=yes").timeout(60), &rv)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "yes"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"sel": "no"}}})),
    )
    .await
    .unwrap();
    let e = try_next_within(&mut stream, T, "ADDED b").await;
    assert!(
        matches!(&e, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("b")),
        "{e:?}"
    );
    let e = try_next_within(&mut stream, T, "DELETED b").await;
    assert!(
        matches!(&e, WatchEvent::Deleted(o) if o.metadata.name.as_deref() == Some("b")),
        "{e:?}"
    );
}

#[tokio::test]
async fn kubectl_get_watch_sees_a_change() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "kwatch").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    api.create(&PostParams::default(), &configmap("first", json!({})))
        .await
        .unwrap();
    let mut child = s
        .kubectl_command(&["get", "cm", "-n", &ns, "-w", "-o", "name"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawning kubectl get -w");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let next_line = async |lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
                           what: &str| {
        match tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await {
            Ok(Ok(Some(l))) => l,
            other => panic!("kubectl get -w: no line for {what}: {other:?}"),
        }
    };
    assert_eq!(
        next_line(&mut lines, "the initial list").await,
        "configmap/first"
    );
    api.create(&PostParams::default(), &configmap("second", json!({})))
        .await
        .unwrap();
    assert_eq!(next_line(&mut lines, "the ADDED").await, "configmap/second");
    api.patch(
        "first",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"z": "1"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        next_line(&mut lines, "the MODIFIED").await,
        "configmap/first"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn kubectl_delete_wait_returns_when_the_object_is_gone() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "kwait").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let held: ConfigMap = typed(json!({
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {}
    }));
    api.create(&PostParams::default(), &held).await.unwrap();
    let mut child = s
        .kubectl_command(&[
            "delete",
            "cm",
            "held",
            "-n",
            &ns,
            "--wait=true",
            "--timeout=60s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawning kubectl delete");
    eventually("the DELETE to mark the object", T, || async {
        api.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    // The finalizer holds the object, so kubectl keeps waiting.
    assert!(
        tokio::time::timeout(Duration::from_millis(700), child.wait())
            .await
            .is_err(),
        "kubectl delete --wait returned while a finalizer still held the object"
    );
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("kubectl delete --wait returns once the object is gone")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"configmap "held" deleted"#
    );
    assert_eq!(api_error(api.get("held").await).code, 404);

    // A plain object: kubectl delete returns at once.
    api.create(&PostParams::default(), &configmap("plain", json!({})))
        .await
        .unwrap();
    let out = s.kubectl_ok(&["delete", "cm", "plain", "-n", &ns]).await;
    assert_eq!(out.trim(), r#"configmap "plain" deleted"#);
    // And by label, several at once.
    for n in ["l1", "l2"] {
        api.create(&PostParams::default(), &configmap(n, json!({"grp": "x"})))
            .await
            .unwrap();
    }
    let out = s
        .kubectl_ok(&["delete", "cm", "-n", &ns, "-l", "grp=x"])
        .await;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
