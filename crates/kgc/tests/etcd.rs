//! `kgc serve --datastore-endpoint` on a 3-member etcd cluster on loopback (issue 33): the
//! objects are etcd keys laid out as kube-apiserver lays them out, `resourceVersion` is their
//! `mod_revision`, the garbage collector cascades over them, a watch resumes across a restart of
//! kgc, and losing one member of three changes nothing; losing two (etcd's quorum) refuses
//! writes with 5xx and fails `/readyz` with the reason while reads go on, until quorum returns
//! with every acknowledged write. One server per scenario (each kills members and restarts
//! kgc, which tests sharing it would see); the bad-input cases start no server that gets ready.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use etcd_client::Client;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(30);

/// The `mod_revision` of `key`, if it exists. The client may route a read to the member the
/// test killed and does not retry through another: a refused connection is tried again.
async fn mod_revision(etcd: &mut Client, key: &str) -> Option<u64> {
    let deadline = tokio::time::Instant::now() + T;
    let got = loop {
        match etcd.get(key, None).await {
            Err(etcd_client::Error::GRpcStatus(s))
                if s.message() == "tcp connect error" && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            r => break r.expect("reading etcd"),
        }
    };
    got.kvs().first().map(|kv| kv.mod_revision() as u64)
}

fn rv_of(cm: &ConfigMap) -> u64 {
    let rv = cm.metadata.resource_version.as_deref().unwrap_or_default();
    rv.parse().expect("a numeric resourceVersion")
}

async fn create(cms: &Api<ConfigMap>, name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let mut body = json!({"metadata": {"name": name}, "data": {"v": "1"}});
    if let Some(o) = owner {
        body["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name,
            "uid": o.metadata.uid, "blockOwnerDeletion": true,
        }]);
    }
    cms.create(&PostParams::default(), &typed(body))
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e}"))
}

/// The next watch event naming `name`, as (type, resourceVersion).
async fn next_event(lines: &mut WatchLines, name: &str) -> (String, u64) {
    loop {
        let e: Value = next_within(lines, T, &format!("a watch event of {name}")).await;
        if e["object"]["metadata"]["name"] == name {
            let rv = e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or_default();
            return (e["type"].as_str().unwrap_or_default().to_owned(), rv);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kgc_serves_from_a_three_member_etcd_cluster() {
    let Some(mut cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let mut s = Server::start_with(&["--datastore-endpoint", &endpoints]).await;
    let mut etcd = Client::connect(cluster.endpoint_list(), None)
        .await
        .expect("connecting to etcd");
    let ns = fresh_namespace(&s.client(), "etcd").await;
    let key = |name: &str| format!("/registry/configmaps/{ns}/{name}");

    // CRUD: each write's resourceVersion is its key's mod_revision.
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let a = create(&cms, "a", None).await;
    assert_eq!(mod_revision(&mut etcd, &key("a")).await, Some(rv_of(&a)));
    s.kubectl_ok(&["-n", &ns, "label", "configmap", "a", "x=y"])
        .await;
    let a = cms.get("a").await.unwrap();
    assert_eq!(a.metadata.labels.as_ref().unwrap()["x"], "y");
    assert_eq!(mod_revision(&mut etcd, &key("a")).await, Some(rv_of(&a)));
    s.kubectl_ok(&["-n", &ns, "delete", "configmap", "a"]).await;
    assert_eq!(mod_revision(&mut etcd, &key("a")).await, None);

    // The collector cascades: in the background, then in the foreground.
    let owner = create(&cms, "owner-bg", None).await;
    create(&cms, "child-bg", Some(&owner)).await;
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    cms.delete("owner-bg", &background).await.unwrap();
    eventually("the background child collected", T, || async {
        cms.get_opt("child-bg").await.unwrap().is_none()
    })
    .await;
    let owner = create(&cms, "owner-fg", None).await;
    create(&cms, "child-fg", Some(&owner)).await;
    cms.delete("owner-fg", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually("the foreground owner and child gone", T, || async {
        cms.get_opt("owner-fg").await.unwrap().is_none()
            && cms.get_opt("child-fg").await.unwrap().is_none()
    })
    .await;
    assert_eq!(mod_revision(&mut etcd, &key("child-fg")).await, None);

    // One member of three killed: writes and watches go on.
    let from = rv_of(&create(&cms, "w0", None).await);
    let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={from}");
    let mut lines = s.raw_watch(&path).await;
    cluster.kill(0);
    // Killing the leader makes etcd elect another; a write meanwhile may get a 5xx
    // ("request timed out, possibly due to previous leader failure"), as kube-apiserver's
    // does, and writes go on once a leader is elected.
    let deadline = tokio::time::Instant::now() + T;
    let w1 = loop {
        let body = typed(json!({"metadata": {"name": "w1"}, "data": {"v": "1"}}));
        match cms.create(&PostParams::default(), &body).await {
            Ok(cm) => break cm,
            Err(kube::Error::Api(e)) if e.code >= 500 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("creating w1 after a member was killed: {e}"),
        }
    };
    assert_eq!(
        next_event(&mut lines, "w1").await,
        ("ADDED".into(), rv_of(&w1))
    );
    drop(lines);

    // A watch resumes after kgc restarts, from the last revision it saw.
    let seen = rv_of(&w1);
    s.restart().await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    assert_eq!(rv_of(&cms.get("w1").await.unwrap()), seen);
    let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={seen}");
    let mut lines = s.raw_watch(&path).await;
    let w2 = create(&cms, "w2", None).await;
    assert_eq!(
        next_event(&mut lines, "w2").await,
        ("ADDED".into(), rv_of(&w2))
    );
    assert_eq!(mod_revision(&mut etcd, &key("w2")).await, Some(rv_of(&w2)));

    // An Event expires a TTL after its last write, also across a restart (etcd keeps no
    // expiry): two hours later by the server's clock, the one-hour-old Event goes at once.
    let events: Api<Event> = Api::namespaced(s.client(), &ns);
    let now = kgc_meta::time::format_time(kgc_meta::time::Timestamp::now());
    let event: Event = typed(json!({
        "metadata": {"name": "old"},
        "involvedObject": {"kind": "ConfigMap", "name": "w2", "namespace": ns, "apiVersion": "v1"},
        "reason": "Seen", "message": "m", "type": "Normal", "source": {"component": "test"},
        "count": 1, "firstTimestamp": now, "lastTimestamp": now,
    }));
    events.create(&PostParams::default(), &event).await.unwrap();
    s.restart_with(&["--datastore-endpoint", &endpoints, "--clock-offset", "2h"])
        .await;
    let events: Api<Event> = Api::namespaced(s.client(), &ns);
    eventually("the Event expired after the restart", T, || async {
        events.get_opt("old").await.unwrap().is_none()
    })
    .await;

    // A data directory whose cluster is in etcd does not start on SQLite.
    s.terminate();
    let err = serve_fails(&s.data_dir(), &[]).await;
    assert!(
        err.contains("belongs to a cluster kept in etcd http://"),
        "{err}"
    );
    assert!(!s.data_dir().join("kgc.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_etcds_quorum_writes_fail_reads_go_on_and_all_resumes_after() {
    let Some(mut cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let mut s = Server::start_with(&["--datastore-endpoint", &cluster.endpoints()]).await;
    let ns = fresh_namespace(&s.client(), "quorum").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), &ns);
    let mut acknowledged = Vec::new();
    for i in 0..3 {
        acknowledged.push(create(&cms, &format!("before-{i}"), None).await);
    }

    // Two members of three down: no quorum. A write is refused with a 5xx (etcd times the
    // proposal out, or has no leader), never acknowledged.
    cluster.kill(1);
    cluster.kill(2);
    let body = typed(json!({"metadata": {"name": "during"}, "data": {"v": "1"}}));
    let refused = tokio::time::timeout(T, cms.create(&PostParams::default(), &body))
        .await
        .expect("a write without quorum is answered within 30 s");
    let status = api_error(refused);
    assert!(status.code >= 500, "{status:?}");
    // /readyz says the storage is failing, and its etcd check says why.
    let r = s.raw("GET", "/readyz?verbose", None, Vec::new()).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("[-]etcd failed: reason withheld"),
        "{}",
        r.text()
    );
    let r = s.raw("GET", "/readyz/etcd", None, Vec::new()).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().starts_with("internal server error: "),
        "{}",
        r.text()
    );
    // Reads go on, from what the server holds.
    assert_eq!(
        rv_of(&cms.get("before-0").await.expect("a read without quorum")),
        rv_of(&acknowledged[0])
    );
    let listed = cms
        .list(&Default::default())
        .await
        .expect("a list without quorum");
    assert!(listed.items.len() >= 3);

    // Quorum back: writes resume, /readyz is ready again, nothing acknowledged was lost.
    cluster.restart(1);
    cluster.restart(2);
    cluster.wait_healthy().await;
    // The refused write may still be applied once quorum returns (its proposal was in the
    // leader's log, as kube-apiserver's timed-out writes may be): the server then cannot tell
    // what etcd holds and asks, in /readyz/etcd, for a restart, which loads it.
    let deadline = tokio::time::Instant::now() + T;
    let mut cms = cms;
    let after = loop {
        let body = typed(json!({"metadata": {"name": "after"}, "data": {"v": "1"}}));
        match cms.create(&PostParams::default(), &body).await {
            Ok(cm) => break cm,
            Err(kube::Error::Api(e)) if e.code >= 500 && tokio::time::Instant::now() < deadline => {
                let why = s.raw("GET", "/readyz/etcd", None, Vec::new()).await.text();
                if why.contains("restart kgc to load what etcd holds") {
                    s.restart().await;
                    cms = Api::namespaced(s.client(), &ns);
                } else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            Err(e) => panic!("creating a ConfigMap after quorum returned: {e}"),
        }
    };
    acknowledged.push(after);
    eventually("/readyz ready again", T, || async {
        s.raw("GET", "/readyz", None, Vec::new()).await.status == 200
    })
    .await;
    let mut etcd = Client::connect(cluster.endpoint_list(), None)
        .await
        .expect("connecting to etcd");
    for cm in &acknowledged {
        let name = cm.metadata.name.as_deref().unwrap();
        assert_eq!(rv_of(&cms.get(name).await.unwrap()), rv_of(cm), "{name}");
        let key = format!("/registry/configmaps/{ns}/{name}");
        assert_eq!(
            mod_revision(&mut etcd, &key).await,
            Some(rv_of(cm)),
            "{key}"
        );
    }
}

/// `kgc serve` run to its exit: its status and stderr.
async fn serve_fails(data_dir: &std::path::Path, args: &[&str]) -> String {
    let out = tokio::process::Command::from(Kgc::command())
        .args([
            "serve",
            "--insecure-http",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
        ])
        .arg(data_dir)
        .args(args)
        .env("RUST_LOG", "off")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("running kgc serve");
    assert!(!out.status.success(), "kgc serve {args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn a_wrong_endpoint_or_another_datastore_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let err = serve_fails(dir.path(), &["--datastore-endpoint", "http://127.0.0.1:1"]).await;
    assert!(err.contains("etcd at http://127.0.0.1:1: "), "{err}");

    // A SQLite data directory does not move to etcd.
    let sqlite = dir.path().join("sqlite");
    std::fs::create_dir_all(&sqlite).unwrap();
    std::fs::write(sqlite.join("kgc.db"), "").unwrap();
    let err = serve_fails(&sqlite, &["--datastore-endpoint", "http://127.0.0.1:1"]).await;
    assert!(
        err.contains(&format!(
            "the data directory {} holds a SQLite database (kgc.db)",
            sqlite.display()
        )),
        "{err}"
    );

    // A start that never reached etcd does not mark the data directory as etcd's.
    let unreached = dir.path().join("unreached");
    std::fs::create_dir_all(&unreached).unwrap();
    serve_fails(&unreached, &["--datastore-endpoint", "http://127.0.0.1:1"]).await;
    assert!(!unreached.join("datastore").exists());
}

/// The `p`-th percentile of `samples` (sorted here).
fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort();
    samples[(samples.len() * p / 100).min(samples.len() - 1)]
}

/// Two `kgc serve` replicas on one 3-member etcd cluster (issue 33, several replicas): a write
/// on one is seen by a GET (consistent read, no waiting in the test) and a WATCH on the other;
/// concurrent read-modify-write updates of one object from both lose nothing (each 409 is
/// retried by the client); a cascade started on one finishes with the other's view the same.
/// Both replicas run the collector until leader election lands: the cascade tolerates it, each
/// delete carrying its uid precondition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_etcd_cluster() {
    let Some(cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let a = Server::start_with(&["--datastore-endpoint", &endpoints]).await;
    let a_dir = a.data_dir();
    let b = Server::start_prepared(&["--datastore-endpoint", &endpoints], |dir| {
        copy_pki(&a_dir, dir)
    })
    .await;
    let ns = fresh_namespace(&a.client(), "replicas").await;
    let on_a: Api<ConfigMap> = Api::namespaced(a.client(), &ns);
    let on_b: Api<ConfigMap> = Api::namespaced(b.client(), &ns);
    // The encryption key is shared: a Secret written through A (encrypted in etcd) reads
    // back through B.
    let secrets_a: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(a.client(), &ns);
    let secrets_b: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(b.client(), &ns);
    let secret = typed(json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}));
    secrets_a
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let read = secrets_b.get("s").await.unwrap();
    assert_eq!(read.data.unwrap()["k"].0, b"v");

    // A write on A: a GET on B sees it at once (B waits for its cache to reach etcd's
    // revision), and B's watch delivers it; the delivery latency is measured.
    let from = rv_of(&create(&on_a, "first", None).await);
    assert_eq!(rv_of(&on_b.get("first").await.unwrap()), from);
    let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={from}");
    let mut lines = b.raw_watch(&path).await;
    let mut latencies = Vec::new();
    for i in 0..100 {
        let name = format!("w{i}");
        let written = std::time::Instant::now();
        let cm = create(&on_a, &name, None).await;
        assert_eq!(
            next_event(&mut lines, &name).await,
            ("ADDED".into(), rv_of(&cm))
        );
        latencies.push(written.elapsed());
        // Read-your-writes across replicas.
        assert_eq!(rv_of(&on_b.get(&name).await.unwrap()), rv_of(&cm));
    }
    let p50 = percentile(&mut latencies, 50);
    let p99 = percentile(&mut latencies, 99);
    println!(
        "watch delivery across replicas (create on A to event on B): p50 {p50:?}, p99 {p99:?}"
    );
    // A LIST on B right after a delete on A.
    on_a.delete("w0", &DeleteParams::default()).await.unwrap();
    let names: Vec<String> = on_b
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert!(!names.contains(&"w0".to_owned()) && names.contains(&"w1".to_owned()));
    drop(lines);

    // Concurrent read-modify-write updates of one counter from both replicas: every update
    // that read an old version is refused 409 and retried, none is lost.
    create(&on_a, "counter", None).await;
    const EACH: usize = 25;
    let bump = |cms: Api<ConfigMap>| async move {
        let mut conflicts = 0;
        for _ in 0..EACH {
            loop {
                let mut cm = cms.get("counter").await.unwrap();
                let data = cm.data.get_or_insert_default();
                let n: usize = data.get("n").map_or(0, |n| n.parse().unwrap());
                data.insert("n".into(), (n + 1).to_string());
                match cms.replace("counter", &PostParams::default(), &cm).await {
                    Ok(_) => break,
                    Err(kube::Error::Api(e)) if e.code == 409 => conflicts += 1,
                    Err(e) => panic!("updating the counter: {e}"),
                }
            }
        }
        conflicts
    };
    let (ca, cb) = tokio::join!(bump(on_a.clone()), bump(on_b.clone()));
    println!(
        "concurrent updates from two replicas: {} conflicts (409) retried",
        ca + cb
    );
    for cms in [&on_a, &on_b] {
        let cm = cms.get("counter").await.unwrap();
        assert_eq!(cm.data.unwrap()["n"], (2 * EACH).to_string());
    }

    // A foreground cascade started on A finishes, and B's view is the same.
    let owner = create(&on_a, "owner", None).await;
    for i in 0..20 {
        create(&on_a, &format!("child{i}"), Some(&owner)).await;
    }
    on_a.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let gone = |cms: Api<ConfigMap>| async move {
        let left = cms.list(&Default::default()).await.unwrap().items;
        !left.iter().any(|cm| {
            let name = cm.metadata.name.as_deref().unwrap_or_default();
            name == "owner" || name.starts_with("child")
        })
    };
    eventually("the cascade finished, seen from B", T, || {
        gone(on_b.clone())
    })
    .await;
    assert!(gone(on_a.clone()).await);
}
