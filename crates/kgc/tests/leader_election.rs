//! Leader election inside `kgc serve` (issue 33 item 4): the controllers run while the server
//! holds Lease `kube-system/kube-controller-manager`, the scheduler while it holds
//! `kube-system/kube-scheduler`, each held as `<listen address>_<uuid>` and renewed every retry
//! period. A holder that is not the server (a test writing the lease as another replica would)
//! stops its controllers, and they start afresh once that holder stops renewing. One living
//! server with short timings for the whole scenario (the takeover would stop the controllers
//! of tests sharing it).

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use tokio::sync::watch;

const T: Duration = Duration::from_secs(30);
const KCM: &str = "kube-system/kube-controller-manager";

fn renewed(lease: &Lease) -> Option<MicroTime> {
    lease.spec.as_ref().and_then(|s| s.renew_time.clone())
}

/// `kgc_leader{lease="…"}` from `/metrics`.
async fn leading(s: &Server, lease: &str) -> f64 {
    metrics_counter(&s.client(), &format!("kgc_leader{{lease=\"{lease}\"}}")).await
}

/// Writes `name` as held by `intruder`, renewed now, every 300 ms until `stop`: another
/// replica leading.
async fn hold_as(leases: Api<Lease>, name: &str, intruder: &str, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        let mut lease = leases.get(name).await.expect("the lease");
        let spec = lease.spec.get_or_insert_with(Default::default);
        spec.holder_identity = Some(intruder.to_owned());
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        spec.lease_duration_seconds = Some(3);
        // A conflict (the server renewed in between) is tried again at the next tick.
        let _ = leases.replace(name, &PostParams::default(), &lease).await;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(300)) => {}
            _ = stop.changed() => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_run_only_while_the_server_holds_their_lease() {
    let s = Server::living(&ELECTION_TIMINGS).await;
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-system");
    let port = s.url().rsplit(':').next().unwrap().to_owned();

    // Both leases are taken at once, named after the listen address, and renewed.
    for name in ["kube-controller-manager", "kube-scheduler"] {
        // At once: within 5 s of readiness, not after a lease duration (15 s by default).
        let found = std::sync::Mutex::new(None);
        eventually("the lease taken", Duration::from_secs(5), || async {
            let lease = leases.get_opt(name).await.ok().flatten();
            let held = lease.as_ref().is_some_and(|l| !lease_holder(l).is_empty());
            *found.lock().unwrap() = lease;
            held
        })
        .await;
        let lease = found.into_inner().unwrap().expect("the lease");
        let id = lease_holder(&lease);
        let (address, uuid) = id.split_once('_').expect("address_uuid");
        assert_eq!(address, format!("127.0.0.1:{port}"), "{id}");
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{id}");
        let spec = lease.spec.clone().unwrap();
        assert_eq!(spec.lease_duration_seconds, Some(3));
        let first = renewed(&lease);
        eventually("the lease renewed", T, || async {
            let now = leases.get(name).await.unwrap();
            lease_holder(&now) == id && renewed(&now) > first
        })
        .await;
    }
    assert_eq!(leading(&s, KCM).await, 1.0);
    let ours = lease_holder(&leases.get("kube-controller-manager").await.unwrap());
    // The namespace's ServiceAccount comes from a controller: made while the server leads.
    let ns = fresh_namespace(&s.client(), "leader").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(s.client(), &ns);
    eventually("the default ServiceAccount", T, || async {
        accounts.get_opt("default").await.unwrap().is_some()
    })
    .await;

    // Another replica takes kube-controller-manager: the server stops its controllers.
    let (stop_tx, stop_rx) = watch::channel(false);
    let intruder = tokio::spawn(hold_as(
        leases.clone(),
        "kube-controller-manager",
        "127.0.0.1:1_intruder",
        stop_rx,
    ));
    eventually("the server stepped down", T, || async {
        leading(&s, KCM).await == 0.0
    })
    .await;
    let sets: Api<ReplicaSet> = Api::namespaced(s.client(), &ns);
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let rs = typed(json!({
        "metadata": {"name": "rs"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "rs"}},
            "template": {
                "metadata": {"labels": {"app": "rs"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }));
    sets.create(&PostParams::default(), &rs).await.unwrap();
    // The scheduler has a lease of its own, still the server's: a bare pod is bound.
    let bare = typed(json!({
        "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }));
    pods.create(&PostParams::default(), &bare).await.unwrap();
    eventually("the bare pod bound", T, || async {
        let p = pods.get("bare").await.unwrap();
        p.spec.and_then(|s| s.node_name).is_some()
    })
    .await;
    consistently(
        "the ReplicaSet has no pod",
        Duration::from_secs(3),
        || async {
            let l = pods
                .list(&ListParams::default().labels("app=rs"))
                .await
                .unwrap();
            l.items.is_empty()
        },
    )
    .await;

    // The other replica stops renewing: once its lease expired the server leads again, with
    // fresh controllers that make the ReplicaSet's pod.
    stop_tx.send(true).unwrap();
    intruder.await.unwrap();
    eventually("the ReplicaSet's pod made", T, || async {
        let l = pods
            .list(&ListParams::default().labels("app=rs"))
            .await
            .unwrap();
        l.items.len() == 1
    })
    .await;
    let lease = leases.get("kube-controller-manager").await.unwrap();
    assert_eq!(lease_holder(&lease), ours);
    let spec = lease.spec.unwrap();
    // The intruder wrote no transition of its own; the server's taking it back is one.
    assert_eq!(spec.lease_transitions, Some(1), "{spec:?}");
    assert_eq!(leading(&s, KCM).await, 1.0);
    assert_eq!(
        metrics_counter(
            &s.client(),
            &format!("kgc_leader_terms_total{{lease=\"{KCM}\"}}")
        )
        .await,
        2.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_on_sqlite_leads_at_once_and_a_stopped_one_releases() {
    // Killed: its lease still names it, renewed just now; on SQLite no other server can hold
    // the data directory, so the restarted one takes the lease over at once.
    let mut s = Server::start_with(&["--leader-elect", "--nodes=0"]).await;
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-system");
    // The elector takes the lease just after the server is ready, not before.
    let first = std::sync::Mutex::new(String::new());
    eventually("the server holds the lease", T, || async {
        let lease = leases
            .get_opt("kube-controller-manager")
            .await
            .ok()
            .flatten();
        let now = lease.map(|l| lease_holder(&l)).unwrap_or_default();
        *first.lock().unwrap() = now.clone();
        !now.is_empty()
    })
    .await;
    let before = first.into_inner().unwrap();
    s.kill9();
    s.restart().await;
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-system");
    let address = s.url().trim_start_matches("http://").to_owned();
    // Well within the 15 s the lease would take to expire.
    eventually(
        "the restarted server holds the lease",
        Duration::from_secs(5),
        || async {
            let now = leases.get_opt("kube-controller-manager").await;
            let now = now
                .ok()
                .flatten()
                .map(|l| lease_holder(&l))
                .unwrap_or_default();
            now != before && now.starts_with(&format!("{address}_"))
        },
    )
    .await;
    eventually("kgc_leader 1", T, || async {
        leading(&s, KCM).await == 1.0
    })
    .await;
    // A clean stop releases the lease: an empty holder, for a standby to take at its next
    // retry.
    s.terminate();
    s.restart_with(&["--leader-elect=false", "--nodes=0"]).await;
    let leases: Api<Lease> = Api::namespaced(s.client(), "kube-system");
    let lease = leases.get("kube-controller-manager").await.unwrap();
    assert_eq!(lease_holder(&lease), "", "{lease:?}");
}
