//! The fault cases of issue 33 (item 5) against real `kgc serve` replicas on a real 3-member
//! etcd cluster on loopback: the replica that runs the collectors is killed (`kill -9`) in the
//! middle of a 500-dependent foreground cascade and the other takes the lease and finishes it;
//! each etcd member in turn is killed while writes and watches go on across the replicas; a
//! replica cut off from etcd while the other writes and etcd is compacted past those writes
//! re-lists, serves the latest state and answers a watch from before the cut 410 `Expired`;
//! the replica that runs the collectors is paused (SIGSTOP) past its lease and, resumed once
//! the other took over, steps down before its collector writes anything.
//! One etcd cluster and two replicas per scenario: each kills or cuts off what the others'
//! would see.

kgc_testsupport::bind_kgc!();

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{Client, CompactionOptions};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const T: Duration = Duration::from_secs(30);

/// Two replicas and a namespace of the test's, with a ConfigMap client on each.
struct Replicas {
    a: Server,
    b: Server,
    ns: String,
    on_a: Api<ConfigMap>,
    on_b: Api<ConfigMap>,
}

/// Two replicas on `endpoints` (`b_endpoints` for the second: a partition's proxies), both
/// electing their controllers' leader with short timings ([`ELECTION_TIMINGS`]); B joins with
/// A's `pki/`.
async fn replicas(endpoints: &str, b_endpoints: &str, namespace: &str) -> Replicas {
    replicas_electing(endpoints, b_endpoints, namespace, &ELECTION_TIMINGS).await
}

/// A 6 s lease, 4 s renew deadline and 500 ms retry, for a scenario that judges who wrote what
/// by exact counts: a term that lapses on a busy machine aborts its writes in flight, which
/// land uncounted, so the new leader's renewals get more slack than [`ELECTION_TIMINGS`]'.
const PATIENT_TIMINGS: [&str; 6] = [
    "--leader-elect-lease-duration",
    "6s",
    "--leader-elect-renew-deadline",
    "4s",
    "--leader-elect-retry-period",
    "500ms",
];

/// [`replicas`] electing with `timings`.
async fn replicas_electing(
    endpoints: &str,
    b_endpoints: &str,
    namespace: &str,
    timings: &[&str],
) -> Replicas {
    let args = |e| [["--datastore-endpoint", e].as_slice(), timings].concat();
    let a = Server::start_with(&args(endpoints)).await;
    let a_dir = a.data_dir();
    let b = Server::start_prepared(&args(b_endpoints), |dir| copy_pki(&a_dir, dir)).await;
    let ns = fresh_namespace(&a.client(), namespace).await;
    Replicas {
        on_a: Api::namespaced(a.client(), &ns),
        on_b: Api::namespaced(b.client(), &ns),
        a,
        b,
        ns,
    }
}

/// The identity prefix of a replica's leases: its listen address (see `kgc serve`'s identity,
/// `<address>_<uuid>`).
fn identity_prefix(s: &Server) -> String {
    format!("{}_", s.url().trim_start_matches("http://"))
}

/// Lease `kube-system/kube-controller-manager`, once someone holds it.
async fn controller_manager_lease(client: kube::Client) -> Lease {
    let leases: Api<Lease> = Api::namespaced(client, "kube-system");
    let deadline = tokio::time::Instant::now() + T;
    loop {
        if let Ok(Some(lease)) = leases.get_opt("kube-controller-manager").await
            && !lease_holder(&lease).is_empty()
        {
            return lease;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody took the controller manager's lease within {T:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The two replicas as (the one `lease` names as its holder, the other).
fn by_holder(a: Server, b: Server, lease: &Lease) -> (Server, Server) {
    let holder = lease_holder(lease);
    if holder.starts_with(&identity_prefix(&a)) {
        (a, b)
    } else {
        assert!(
            holder.starts_with(&identity_prefix(&b)),
            "the lease is held by {holder:?}, neither replica"
        );
        (b, a)
    }
}

/// The controller manager's lease, read on `server`, once `server` holds it.
async fn taken_by(server: &Server) -> Lease {
    let prefix = identity_prefix(server);
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let lease = controller_manager_lease(server.client()).await;
        if lease_holder(&lease).starts_with(&prefix) {
            return lease;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{prefix}* did not take the lease within {T:?}: {lease:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn transitions(lease: &Lease) -> i32 {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or_default()
}

fn rv_of(cm: &ConfigMap) -> u64 {
    let rv = cm.metadata.resource_version.as_deref().unwrap_or_default();
    rv.parse().expect("a numeric resourceVersion")
}

fn name_of(cm: &ConfigMap) -> String {
    cm.metadata.name.clone().unwrap_or_default()
}

/// A ConfigMap `name`, dependent (blocking its deletion) of `owner` if given.
fn configmap(name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let mut body = json!({"metadata": {"name": name}, "data": {"v": "1"}});
    if let Some(o) = owner {
        body["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name,
            "uid": o.metadata.uid, "blockOwnerDeletion": true,
        }]);
    }
    typed(body)
}

async fn create(cms: &Api<ConfigMap>, name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    cms.create(&PostParams::default(), &configmap(name, owner))
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e}"))
}

/// Creates `name`, trying again while the answer is a 5xx: etcd electing a new leader after a
/// member was killed answers "request timed out, possibly due to previous leader failure", as
/// kube-apiserver's writes then are.
async fn create_through_an_election(cms: &Api<ConfigMap>, name: &str) -> ConfigMap {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        match cms
            .create(&PostParams::default(), &configmap(name, None))
            .await
        {
            Ok(cm) => return cm,
            Err(kube::Error::Api(e)) if e.code >= 500 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating {name}: {e}"),
        }
    }
}

/// Every ConfigMap of the namespace, by name, as (uid, resourceVersion), and the list's
/// resourceVersion.
async fn listed(cms: &Api<ConfigMap>) -> (BTreeMap<String, (String, u64)>, u64) {
    let list = cms.list(&ListParams::default()).await.expect("listing");
    let rv = list.metadata.resource_version.as_deref().unwrap_or("0");
    let items = list
        .items
        .iter()
        .map(|cm| {
            let uid = cm.metadata.uid.clone().unwrap_or_default();
            (name_of(cm), (uid, rv_of(cm)))
        })
        .collect();
    (items, rv.parse().expect("a numeric list resourceVersion"))
}

/// The next watch event, as (type, name, resourceVersion) of its object.
async fn next_event(lines: &mut WatchLines, what: &str) -> (String, String, u64) {
    let e: Value = next_within(lines, T, what).await;
    let meta = &e["object"]["metadata"];
    let rv = meta["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok());
    (
        e["type"].as_str().unwrap_or_default().to_owned(),
        meta["name"].as_str().unwrap_or_default().to_owned(),
        rv.unwrap_or_default(),
    )
}

/// The next watch event naming `name`, as (type, resourceVersion).
async fn next_event_of(lines: &mut WatchLines, name: &str) -> (String, u64) {
    loop {
        let (kind, named, rv) = next_event(lines, &format!("a watch event of {name}")).await;
        if named == name {
            return (kind, rv);
        }
    }
}

/// `kill -9` of the replica that holds the controller manager's lease while its collector is
/// deleting the 500 dependents of an owner deleted in the foreground: the other replica takes
/// the lease within the lease's duration (the fail-over time is printed: from the kill to the
/// new holder's `acquireTime`), finishes the cascade, and deletes nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leading_replica_mid_cascade_hands_the_cascade_over() {
    let Some(cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let r = replicas(&endpoints, &endpoints, "failover").await;

    // Bystanders: unowned, and a dependent of an owner that stays.
    let mut bystanders = Vec::new();
    for i in 0..3 {
        bystanders.push(create(&r.on_a, &format!("bystander-{i}"), None).await);
    }
    let kept = create(&r.on_a, "kept-owner", None).await;
    bystanders.push(create(&r.on_b, "kept-dependent", Some(&kept)).await);
    bystanders.push(kept);
    // The owner and its 500 dependents, written through both replicas, 16 at a time.
    const DEPENDENTS: usize = 500;
    let owner = create(&r.on_a, "owner", None).await;
    let dependents: BTreeSet<String> = futures::stream::iter(0..DEPENDENTS)
        .map(|i| {
            let cms = if i % 2 == 0 { &r.on_a } else { &r.on_b };
            let owner = &owner;
            async move { name_of(&create(cms, &format!("dep-{i:03}"), Some(owner)).await) }
        })
        .buffer_unordered(16)
        .collect()
        .await;

    // Who leads now (the burst of writes may have moved the lease).
    let lease = controller_manager_lease(r.a.client()).await;
    let transitions = transitions(&lease);
    let (mut leader, survivor) = by_holder(r.a, r.b, &lease);
    let on_survivor: Api<ConfigMap> = Api::namespaced(survivor.client(), &r.ns);
    let (before, from) = listed(&on_survivor).await;
    assert_eq!(before.len(), DEPENDENTS + 1 + bystanders.len());

    // The cascade, seen from the survivor.
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?watch=1&resourceVersion={from}",
        r.ns
    );
    let mut lines = survivor.raw_watch(&path).await;
    on_survivor
        .delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let mut deleted = BTreeSet::new();
    while deleted.is_empty() {
        let (kind, name, _) = next_event(&mut lines, "the first deletion of the cascade").await;
        if kind == "DELETED" {
            deleted.insert(name);
        }
    }
    // The leader's collector has started: kill it.
    let killed_at = k8s_openapi::jiff::Timestamp::now();
    leader.kill9();
    let (left, _) = listed(&on_survivor).await;
    let left_behind = left.keys().filter(|n| dependents.contains(*n)).count();
    println!("the leading replica killed with {left_behind} of {DEPENDENTS} dependents left");
    assert!(
        left_behind > 0,
        "the cascade finished before the leader was killed: nothing was handed over"
    );

    // The survivor takes the lease.
    let spec = taken_by(&survivor).await.spec.expect("a lease spec");
    let acquired = spec
        .acquire_time
        .clone()
        .expect("the new holder's acquireTime")
        .0;
    let failover = killed_at.duration_until(acquired);
    println!(
        "controllers' fail-over (kill -9 of the leader to the new holder's acquireTime): {failover:#}"
    );
    // Issue 33's goal with the default 15 s lease; this 3 s one takes 3–4 s.
    assert!(
        failover > k8s_openapi::jiff::SignedDuration::ZERO
            && failover <= k8s_openapi::jiff::SignedDuration::from_secs(15),
        "fail-over took {failover:#}"
    );
    assert_eq!(
        spec.lease_transitions,
        Some(transitions + 1),
        "one hand-over: {spec:?}"
    );

    // The cascade finishes on the survivor: the owner's DELETED ends it.
    while !deleted.contains("owner") {
        let (kind, name, _) = next_event(&mut lines, "the rest of the cascade").await;
        if kind == "DELETED" {
            deleted.insert(name);
        }
    }
    let mut expected = dependents.clone();
    expected.insert("owner".into());
    assert_eq!(deleted, expected, "what the cascade deleted");
    let (after, _) = listed(&on_survivor).await;
    let kept: BTreeMap<String, String> = after
        .into_iter()
        .map(|(name, (uid, _))| (name, uid))
        .collect();
    let bystanders: BTreeMap<String, String> = bystanders
        .iter()
        .map(|cm| (name_of(cm), cm.metadata.uid.clone().unwrap_or_default()))
        .collect();
    assert_eq!(kept, bystanders, "what is left: the bystanders, as created");
}

/// One etcd member of three killed, each in turn (so whichever member a replica's watch or
/// requests went to dies once): writes through either replica go on (a write that meets
/// etcd's leader election is answered 5xx and tried again), the other replica's watch
/// delivers each, and a GET there reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_watches_go_on_across_replicas_whichever_etcd_member_dies() {
    let Some(mut cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let r = replicas(&endpoints, &endpoints, "member").await;
    let from = rv_of(&create(&r.on_a, "start", None).await);
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?watch=1&resourceVersion={from}",
        r.ns
    );
    let (mut watch_a, mut watch_b) = (r.a.raw_watch(&path).await, r.b.raw_watch(&path).await);
    for member in 0..3 {
        cluster.kill(member);
        for (writer, watch, reader, side) in [
            (&r.on_a, &mut watch_b, &r.on_b, "a"),
            (&r.on_b, &mut watch_a, &r.on_a, "b"),
        ] {
            let name = format!("m{member}-from-{side}");
            let cm = create_through_an_election(writer, &name).await;
            assert_eq!(
                next_event_of(watch, &name).await,
                ("ADDED".into(), rv_of(&cm)),
                "{name} on the other replica's watch"
            );
            let read = reader.get(&name).await.unwrap_or_else(|e| {
                panic!("reading {name} on the other replica with member {member} down: {e}")
            });
            assert_eq!(rv_of(&read), rv_of(&cm), "{name}");
        }
        cluster.restart(member);
        cluster.wait_member_healthy(member).await;
    }
}

/// TCP proxies in front of every etcd member, through which one replica reaches etcd: cutting
/// them closes its connections and refuses new ones (a network partition between that replica
/// and etcd), while the other replica and the test still reach etcd.
struct Partition {
    endpoints: String,
    cut: watch::Sender<bool>,
    /// Connections forwarded right now.
    open: Arc<AtomicUsize>,
}

impl Partition {
    async fn new(members: &[String]) -> Self {
        let (cut, _) = watch::channel(false);
        let open = Arc::new(AtomicUsize::new(0));
        let mut endpoints = Vec::new();
        for member in members {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("binding");
            endpoints.push(format!("http://{}", listener.local_addr().unwrap()));
            let upstream = member.trim_start_matches("http://").to_owned();
            tokio::spawn(forward(
                listener,
                upstream,
                cut.subscribe(),
                Arc::clone(&open),
            ));
        }
        Self {
            endpoints: endpoints.join(","),
            cut,
            open,
        }
    }

    /// Cuts the replica off: returns once every connection it had is closed.
    async fn cut(&self) {
        self.cut.send_replace(true);
        eventually("every proxied connection closed", T, || async {
            self.open.load(Ordering::SeqCst) == 0
        })
        .await;
    }

    fn heal(&self) {
        self.cut.send_replace(false);
    }
}

/// Forwards each connection accepted on `listener` to `upstream` until the partition is cut;
/// while it is, connections are closed as soon as they are accepted.
async fn forward(
    listener: TcpListener,
    upstream: String,
    cut: watch::Receiver<bool>,
    open: Arc<AtomicUsize>,
) {
    while let Ok((mut down, _)) = listener.accept().await {
        if *cut.borrow() {
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (mut cut, open, upstream) = (cut.clone(), Arc::clone(&open), upstream.clone());
        tokio::spawn(async move {
            if let Ok(mut up) = TcpStream::connect(&upstream).await {
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {}
                    _ = cut.wait_for(|c| *c) => {}
                }
            }
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// A replica cut off from etcd while the other writes and etcd is compacted past those writes:
/// once it reaches etcd again, its watch of etcd is answered "compacted" and it re-lists. It
/// then serves the latest state (GET and LIST show the writes it missed, deletions included),
/// a watch from a resourceVersion before the cut is answered 410 `Expired` in-stream as
/// kube-apiserver's watch cache answers it, and a watch from the LIST's resourceVersion sees
/// a later write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_past_etcds_compaction_relists() {
    let Some(cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let partition = Partition::new(&cluster.endpoint_list()).await;
    let r = replicas(&cluster.endpoints(), &partition.endpoints, "relist").await;
    for i in 0..10 {
        create(&r.on_a, &format!("cm-{i}"), None).await;
    }
    let (seen, old_rv) = listed(&r.on_b).await;
    assert_eq!(seen.len(), 10);
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?watch=1&resourceVersion={old_rv}",
        r.ns
    );
    let mut open_across = r.b.raw_watch(&path).await;

    // Cut off, B misses updates, a deletion and a create, and etcd forgets them.
    partition.cut().await;
    for round in 0..5 {
        for i in 0..9 {
            let mut cm = r.on_a.get(&format!("cm-{i}")).await.unwrap();
            cm.data
                .get_or_insert_default()
                .insert("v".into(), round.to_string());
            r.on_a
                .replace(&name_of(&cm), &PostParams::default(), &cm)
                .await
                .unwrap();
        }
    }
    r.on_a
        .delete("cm-9", &DeleteParams::default())
        .await
        .unwrap();
    create(&r.on_a, "while-cut-off", None).await;
    let (latest, latest_rv) = listed(&r.on_a).await;
    let mut etcd = Client::connect(cluster.endpoint_list(), None)
        .await
        .expect("connecting to etcd");
    etcd.compact(
        latest_rv as i64,
        Some(CompactionOptions::new().with_physical()),
    )
    .await
    .expect("compacting etcd");
    partition.heal();

    // B serves the latest state once its watch is back, re-listed: a read before that is
    // answered 504 (its cache is behind etcd's revision), as kube-apiserver's cache answers.
    let deadline = tokio::time::Instant::now() + T;
    let cm0 = loop {
        match r.on_b.get("cm-0").await {
            Ok(cm) => break cm,
            Err(kube::Error::Api(e)) if e.code >= 500 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("reading cm-0 on the replica back from the cut: {e}"),
        }
    };
    assert_eq!(rv_of(&cm0), latest["cm-0"].1);
    eventually("B ready again after the cut", T, || r.b.is_ready()).await;
    assert_eq!(cm0.data.unwrap()["v"], "4");
    let (relisted, list_rv) = listed(&r.on_b).await;
    assert_eq!(relisted, latest, "B's LIST after the cut, against A's");
    assert!(list_rv >= latest_rv);

    // A watch open across the cut cannot go on as if nothing was missed: it is answered 410
    // at once, and its client re-lists (kube-apiserver's cacher ends its watchers instead when
    // it re-lists, `terminateAllWatchers` in `staging/src/k8s.io/apiserver/pkg/storage/cacher/
    // cacher.go`; client-go's reflector then re-watches, is answered 410 and re-lists too).
    let e: Value = next_within(
        &mut open_across,
        T,
        "the ERROR of a watch open across the cut",
    )
    .await;
    assert_eq!(
        (&e["type"], &e["object"]["code"]),
        (&json!("ERROR"), &json!(410)),
        "{e}"
    );
    assert_eq!(e["object"]["reason"], "Expired", "{e}");
    drop(open_across);

    // A watch from before the cut: B no longer holds those revisions.
    let mut lines = r.b.raw_watch(&path).await;
    let e: Value = next_within(&mut lines, T, "the ERROR of a watch from before the cut").await;
    assert_eq!(e["type"], "ERROR", "{e}");
    let status = &e["object"];
    assert_eq!(
        (&status["code"], &status["reason"]),
        (&json!(410), &json!("Expired")),
        "{e}"
    );
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("too old resource version: {old_rv} (")),
        "{e}"
    );
    drop(lines);

    // A watch from the LIST's resourceVersion sees what A writes next.
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?watch=1&resourceVersion={list_rv}",
        r.ns
    );
    let mut lines = r.b.raw_watch(&path).await;
    let later = create(&r.on_a, "later", None).await;
    assert_eq!(
        next_event_of(&mut lines, "later").await,
        ("ADDED".into(), rv_of(&later))
    );
}

/// Objects a replica's garbage collector has written: deleted, freed of owner references or
/// of a finalizer (`kgc_gc_objects_total`, counted once the write succeeded, across terms).
/// A write whose answer came after its term was aborted is not counted: the other replica's
/// count of what it wrote tells that one.
async fn gc_writes(server: &Server) -> f64 {
    let text = metrics_text(&server.client()).await;
    text.lines()
        .filter(|l| l.starts_with("kgc_gc_objects_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// `kgc_leader` of the controller manager's lease on `server`: 1 while its controllers run.
async fn leads(server: &Server) -> bool {
    let series = r#"kgc_leader{lease="kube-system/kube-controller-manager"}"#;
    metrics_counter(&server.client(), series).await == 1.0
}

/// Terms `server` has led the controller manager's lease (`kgc_leader_terms_total`).
async fn terms(server: &Server) -> f64 {
    let series = r#"kgc_leader_terms_total{lease="kube-system/kube-controller-manager"}"#;
    metrics_counter(&server.client(), series).await
}

/// SIGSTOP of the replica that runs the collectors, until the other replica takes the lease
/// (a lease duration, 6 s here, after the last renewal it saw) and collects the dependents of
/// an owner deleted during the pause. The paused replica is resumed the moment the lease changes hands, its collector's graph
/// still holding every dependent and the owner's deletion waiting on its watch, so that if it
/// still acted as the leader it would collect at once, before the new leader's collector has
/// even synced. It must instead step down before writing anything, as client-go's elector
/// stops leading once it has not renewed within its renew deadline (`kubernetes/kubernetes
/// staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go`, `renew`): the new
/// leader's collector deleted every dependent itself (a dependent the resumed one deleted
/// first would be a NotFound to it), the resumed one's write count did not move from before
/// the pause, the lease changed hands once and stays with the new holder. Without the fence
/// (the step-down judged by a round trip to the lease, as before), the resumed replica
/// deleted from 1 to 20 of the 100 dependents in 4 runs of 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_paused_past_its_lease_steps_down_before_writing() {
    let Some(cluster) = EtcdCluster::start(3).await else {
        return;
    };
    let endpoints = cluster.endpoints();
    let r = replicas_electing(&endpoints, &endpoints, "paused", &PATIENT_TIMINGS).await;
    const DEPENDENTS: usize = 100;
    let owner = create(&r.on_a, "owner", None).await;
    let dependents: Vec<ConfigMap> = futures::stream::iter(0..DEPENDENTS)
        .map(|i| {
            let cms = if i % 2 == 0 { &r.on_a } else { &r.on_b };
            let owner = &owner;
            async move { create(cms, &format!("dep-{i:03}"), Some(owner)).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;

    let lease = controller_manager_lease(r.a.client()).await;
    let handed_over = transitions(&lease) + 1;
    let (leader, standby) = by_holder(r.a, r.b, &lease);
    let on_standby: Api<ConfigMap> = Api::namespaced(standby.client(), &r.ns);
    let on_leader = leader.client();
    for d in &dependents {
        let uid = uid_of(d);
        eventually("the leader's collector has every dependent", T, || {
            graph_observed(&on_leader, &uid)
        })
        .await;
    }
    assert!(leads(&leader).await && !leads(&standby).await);
    let (written_by_leader, written_by_standby) =
        (gc_writes(&leader).await, gc_writes(&standby).await);
    let terms_before = (terms(&leader).await, terms(&standby).await);
    let (_, from) = listed(&on_standby).await;
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?watch=1&resourceVersion={from}",
        r.ns
    );
    let mut lines = standby.raw_watch(&path).await;

    // Frozen with nothing in flight; the owner goes meanwhile, leaving its dependents to
    // whoever collects next.
    leader.pause().await;
    let paused = tokio::time::Instant::now();
    on_standby
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    let taken = taken_by(&standby).await;
    leader.resume();
    println!("the leader was paused for {:?}", paused.elapsed());
    assert_eq!(transitions(&taken), handed_over, "one hand-over");

    // The new leader collects every dependent.
    let mut left: BTreeSet<String> = dependents.iter().map(name_of).collect();
    while !left.is_empty() {
        let (kind, name, _) = next_event(&mut lines, "the dependents' deletions").await;
        if kind == "DELETED" {
            left.remove(&name);
        }
    }
    eventually("the resumed replica stepped down", T, || async {
        !leads(&leader).await
    })
    .await;
    let lease_now = controller_manager_lease(standby.client()).await;
    let terms_now = (terms(&leader).await, terms(&standby).await);
    let story = |s: &Server| {
        let tail = s.log_tail(400);
        let lines = tail.lines().filter(|l| {
            l.contains("lease") || l.contains("leader") || l.contains("deleting object")
        });
        lines.collect::<Vec<_>>().join("\n")
    };
    let why = || {
        format!(
            "lease now {:?}; terms (resumed, new leader) {terms_now:?}, before the pause \
             {terms_before:?}; the resumed replica:\n{}\nthe new leader:\n{}",
            lease_now.spec,
            story(&leader),
            story(&standby)
        )
    };
    assert_eq!(
        gc_writes(&leader).await,
        written_by_leader,
        "objects the resumed replica's collector wrote after its pause; {}",
        why()
    );
    assert_eq!(
        gc_writes(&standby).await - written_by_standby,
        DEPENDENTS as f64,
        "objects the new leader's collector wrote; {}",
        why()
    );
    // For a lease duration and more, while the resumed replica campaigns again.
    let holder = (lease_holder(&taken), handed_over);
    consistently("the new holder's lease", Duration::from_secs(7), || async {
        let now = controller_manager_lease(standby.client()).await;
        (lease_holder(&now), transitions(&now)) == holder
            && leads(&standby).await
            && !leads(&leader).await
    })
    .await;
}
