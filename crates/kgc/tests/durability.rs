//! Restart durability of the SQLite store (issue 2, points 2 and 3): every acknowledged write
//! survives `kill -9`, the revision counter continues above the old maximum, and SIGTERM/SIGINT
//! shut down cleanly with everything on disk.

kgc_testsupport::bind_kgc!();

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(20);

/// A durable server: no `--in-memory`.
async fn durable() -> Server {
    Server::start_with(&[]).await
}

fn configmap(name: &str) -> ConfigMap {
    typed(
        json!({"metadata": {"name": name, "labels": {"stream": "yes"}}, "data": {"payload": name}}),
    )
}

fn rv_of(o: &ConfigMap) -> u64 {
    o.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// (namespace, name) → (uid, resourceVersion) of every configmap in the given namespaces.
async fn snapshot(s: &Server, namespaces: &[String]) -> BTreeMap<(String, String), (String, u64)> {
    let mut out = BTreeMap::new();
    for ns in namespaces {
        let api: Api<ConfigMap> = Api::namespaced(s.client(), ns);
        for o in api.list(&ListParams::default()).await.unwrap().items {
            out.insert(
                (ns.clone(), o.metadata.name.clone().unwrap()),
                (o.metadata.uid.clone().unwrap(), rv_of(&o)),
            );
        }
    }
    out
}

/// An acknowledged create: (namespace, name, uid, resourceVersion).
type Acked = (String, String, String, u64);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_a_stream_of_writes_loses_no_acknowledged_write() {
    let mut s = durable().await;
    let namespaces = vec![
        fresh_namespace(&s.client(), "dur-a").await,
        fresh_namespace(&s.client(), "dur-b").await,
    ];
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for t in 0..8 {
        let client = s.client();
        let ns = namespaces[t % 2].clone();
        let (acked, count, stop) = (acked.clone(), count.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let api: Api<ConfigMap> = Api::namespaced(client, &ns);
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let name = format!("t{t}-{i}");
                match api.create(&PostParams::default(), &configmap(&name)).await {
                    Ok(o) => {
                        acked.lock().unwrap().push((
                            ns.clone(),
                            name,
                            o.metadata.uid.clone().unwrap(),
                            rv_of(&o),
                        ));
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    // The server died: every later request fails too.
                    Err(_) => break,
                }
            }
        }));
    }
    // Kill once a good number of writes are acknowledged, while the writers are mid-stream.
    eventually("1000 acknowledged creates", Duration::from_secs(60), || {
        let c = count.clone();
        async move { c.load(Ordering::Relaxed) >= 1000 }
    })
    .await;
    let pid = s.pid();
    let status = s.kill9();
    assert!(
        !status.success(),
        "kgc serve (pid {pid}) was killed with SIGKILL: {status}"
    );
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        tokio::time::timeout(T, t)
            .await
            .expect("writer tasks stop")
            .unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 1000);
    let max_acked = acked.iter().map(|a| a.3).max().unwrap();

    s.restart().await;
    let stored = snapshot(&s, &namespaces).await;
    let mut missing = Vec::new();
    for (ns, name, uid, rv) in &acked {
        match stored.get(&(ns.clone(), name.clone())) {
            Some((u, r)) => {
                assert_eq!(u, uid, "{ns}/{name}: uid changed across the restart");
                assert_eq!(
                    r, rv,
                    "{ns}/{name}: resourceVersion changed across the restart"
                );
            }
            None => missing.push(format!("{ns}/{name} (rv {rv})")),
        }
    }
    assert!(
        missing.is_empty(),
        "{} acknowledged creates lost after kill -9: {missing:?}",
        missing.len()
    );
    // Nothing half-written: every stored object is whole.
    for ns in &namespaces {
        let api: Api<ConfigMap> = Api::namespaced(s.client(), ns);
        for o in api.list(&ListParams::default()).await.unwrap().items {
            let name = o.metadata.name.clone().unwrap();
            assert_eq!(o.data.as_ref().unwrap()["payload"], name);
        }
    }
    // The namespaces themselves survived.
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(s.client());
    for ns in &namespaces {
        nss.get(ns).await.unwrap();
    }

    // The revision counter continues above everything stored before the crash.
    let max_stored = stored.values().map(|v| v.1).max().unwrap();
    assert!(max_stored >= max_acked);
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &namespaces[0]);
    let list_rv: u64 = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        list_rv >= max_stored,
        "list RV {list_rv} < stored max {max_stored}"
    );
    let fresh = api
        .create(&PostParams::default(), &configmap("after-restart"))
        .await
        .unwrap();
    assert!(
        rv_of(&fresh) > max_stored,
        "a new write got resourceVersion {} after a restart whose maximum was {max_stored}",
        rv_of(&fresh)
    );
    // An acknowledged object can be updated with its pre-crash resourceVersion.
    let (ns, name, _, rv) = &acked[0];
    let api: Api<ConfigMap> = Api::namespaced(s.client(), ns);
    let updated = api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": rv.to_string()}, "data": {"x": "1"}}),
            ),
        )
        .await
        .unwrap();
    assert!(rv_of(&updated) > rv_of(&fresh));
}

#[tokio::test]
async fn sigterm_shuts_down_cleanly_with_everything_on_disk() {
    let mut s = durable().await;
    let ns = fresh_namespace(&s.client(), "term").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    for i in 0..20 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}")))
            .await
            .unwrap();
    }
    api.patch(
        "c0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"payload": "c0", "updated": "yes"}})),
    )
    .await
    .unwrap();
    api.delete("c1", &DeleteParams::default()).await.unwrap();
    // Kept by a finalizer, deleting.
    let held: ConfigMap = typed(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}, "data": {"payload": "held"}}),
    );
    api.create(&PostParams::default(), &held).await.unwrap();
    let marked = api
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    let before = snapshot(&s, std::slice::from_ref(&ns)).await;
    let max_before = before.values().map(|v| v.1).max().unwrap();
    // An open watch must not keep the server from stopping.
    let _watch = s
        .raw_watch(&format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=600"
        ))
        .await;

    let status = s.terminate();
    assert!(status.success(), "SIGTERM: kgc serve exited with {status}");
    assert_eq!(status.code(), Some(0));

    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let after = snapshot(&s, std::slice::from_ref(&ns)).await;
    assert_eq!(after, before, "the store after a clean restart differs");
    assert!(!after.contains_key(&(ns.clone(), "c1".to_owned())));
    assert_eq!(api.get("c0").await.unwrap().data.unwrap()["updated"], "yes");
    let held = api.get("held").await.unwrap();
    assert_eq!(
        held.metadata.deletion_timestamp,
        marked.metadata.deletion_timestamp
    );
    assert_eq!(held.metadata.finalizers.unwrap(), ["example.com/x"]);
    let fresh = api
        .create(&PostParams::default(), &configmap("fresh"))
        .await
        .unwrap();
    assert!(rv_of(&fresh) > max_before);

    // SIGINT is a clean shutdown too.
    let status = s.interrupt();
    assert_eq!(
        status.code(),
        Some(0),
        "SIGINT: kgc serve exited with {status}"
    );
    s.restart().await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    assert_eq!(
        api.get("fresh").await.unwrap().metadata.uid,
        fresh.metadata.uid
    );
    // Removing the finalizer after the restarts still completes the deletion.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(api.get("held").await).code, 404);
}

#[tokio::test]
async fn in_memory_server_keeps_nothing_across_restarts() {
    let mut s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "mem").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    api.create(&PostParams::default(), &configmap("c"))
        .await
        .unwrap();
    s.restart().await;
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(s.client());
    assert_eq!(api_error(nss.get(&ns).await).code, 404);
    // The system namespaces are recreated.
    nss.get("default").await.unwrap();
    nss.get("kube-node-lease").await.unwrap();
}

#[tokio::test]
async fn a_pod_grace_period_survives_a_crash() {
    let mut s = durable().await;
    let ns = fresh_namespace(&s.client(), "podcrash").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let pod: Pod = typed(json!({
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let kept = pods
        .delete("p", &DeleteParams::default().grace_period(2))
        .await
        .unwrap();
    assert!(kept.left().unwrap().metadata.deletion_timestamp.is_some());
    s.kill9();
    s.restart().await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    eventually(
        "the pod to go once its grace period has ended",
        T,
        || async { pods.get_opt("p").await.unwrap().is_none() },
    )
    .await;
}
