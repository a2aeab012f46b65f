//! Events that expire and do not multiply, against `kgc serve`: one storage served as core/v1
//! and events.k8s.io/v1 (each reads what the other wrote; `kubectl get events` and
//! `kubectl events`), `--event-ttl` removing Events from memory and disk without a start-up
//! scan, and the scheduler's FailedScheduling events going through the correlator.

kgc_testsupport::bind_kgc!();

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::events::v1::Event as EventV1;
use kgc_testsupport::*;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(30);

fn core_event(name: &str, message: &str) -> Event {
    typed(json!({
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "will-be-set", "apiVersion": "v1"},
        "reason": "Started", "message": message, "type": "Normal",
        "source": {"component": "test"}, "count": 1,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
    }))
}

#[tokio::test]
async fn both_versions_serve_the_same_events() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "ev").await;
    let core: Api<Event> = Api::namespaced(s.client(), &ns);
    let v1: Api<EventV1> = Api::namespaced(s.client(), &ns);

    // Written as core/v1, read as events.k8s.io/v1.
    let mut e = core_event("through-core", "pulled the image");
    e.involved_object.namespace = Some(ns.clone());
    core.create(&PostParams::default(), &e).await.unwrap();
    let read = v1.get("through-core").await.unwrap();
    assert_eq!(read.note.as_deref(), Some("pulled the image"));
    assert_eq!(
        read.regarding.as_ref().unwrap().name.as_deref(),
        Some("web-0")
    );
    assert_eq!(read.deprecated_count, Some(1));
    assert_eq!(
        read.deprecated_source
            .as_ref()
            .unwrap()
            .component
            .as_deref(),
        Some("test")
    );

    // Written as events.k8s.io/v1, read as core/v1.
    let written: EventV1 = typed(json!({
        "metadata": {"name": "through-events"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "web-1", "namespace": ns, "apiVersion": "v1"},
        "reason": "Killing", "note": "stopping container", "type": "Normal",
        "action": "Kill", "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
    }));
    v1.create(&PostParams::default(), &written).await.unwrap();
    let read = core.get("through-events").await.unwrap();
    assert_eq!(read.message.as_deref(), Some("stopping container"));
    assert_eq!(read.involved_object.name.as_deref(), Some("web-1"));
    assert_eq!(read.reporting_component.as_deref(), Some("example.com/ctl"));

    // A patch through one version is seen through the other (events.k8s.io/v1 keeps an
    // Event's note, as upstream's validation does; its metadata may change).
    core.patch(
        "through-core",
        &PatchParams::default(),
        &Patch::Merge(json!({"message": "pulled again", "count": 2})),
    )
    .await
    .unwrap();
    let read = v1.get("through-core").await.unwrap();
    assert_eq!(read.note.as_deref(), Some("pulled again"));
    assert_eq!(read.deprecated_count, Some(2));
    v1.patch(
        "through-events",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
    )
    .await
    .unwrap();
    let read = core.get("through-events").await.unwrap();
    assert_eq!(read.metadata.labels.unwrap()["seen"], "yes");
    let names = |items: Vec<String>| {
        let mut n = items;
        n.sort();
        n
    };
    let core_list = core.list(&ListParams::default()).await.unwrap();
    let v1_list = v1.list(&ListParams::default()).await.unwrap();
    let expected = vec!["through-core".to_owned(), "through-events".to_owned()];
    assert_eq!(
        names(
            core_list
                .items
                .iter()
                .filter_map(|e| e.metadata.name.clone())
                .collect()
        ),
        expected
    );
    assert_eq!(
        names(
            v1_list
                .items
                .iter()
                .filter_map(|e| e.metadata.name.clone())
                .collect()
        ),
        expected
    );

    // kubectl reads them both ways.
    let got = s.kubectl_ok(&["get", "events", "-n", &ns]).await;
    assert!(
        got.contains("pulled again") && got.contains("stopping container"),
        "{got}"
    );
    let got = s.kubectl_ok(&["events", "-n", &ns]).await;
    assert!(
        got.contains("pulled again") && got.contains("stopping container"),
        "{got}"
    );
    let got = s
        .kubectl_ok(&["get", "events.events.k8s.io", "-n", &ns, "-o", "name"])
        .await;
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        [
            "event.events.k8s.io/through-core",
            "event.events.k8s.io/through-events"
        ]
    );

    each_version_validates_by_its_own_rules(&core, &v1).await;
}

/// Upstream's `ValidateEventCreate`/`ValidateEventUpdate` by request version: events.k8s.io/v1
/// adds its strict rules to the legacy ones core/v1 keeps, naming the internal fields.
async fn each_version_validates_by_its_own_rules(core: &Api<Event>, v1: &Api<EventV1>) {
    let ns = core.namespace().unwrap().to_owned();
    // A legacy Event's fields (a count, a source) and a bad type and series are refused
    // through events.k8s.io. (Without an `eventTime` kgc's typed decoding refuses it first:
    // a required field that would print as `null`.)
    let legacy: EventV1 = typed(json!({
        "metadata": {"name": "legacy"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "web-0", "namespace": ns, "apiVersion": "v1"},
        "reason": "Started", "note": "m", "type": "Info", "deprecatedCount": 3,
        "action": "Start", "reportingController": "example.com/ctl", "reportingInstance": "i",
        "deprecatedSource": {"component": "test"},
        "series": {"count": 1, "lastObservedTime": "2026-01-01T00:00:00.000000Z"},
    }));
    let status = api_error(v1.create(&PostParams::default(), &legacy).await);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Event \"legacy\" is invalid: [series.count: Invalid value: \"\": should be at least 2, \
         type: Invalid value: \"\": has invalid value: Info, count: Invalid value: \"\": needs \
         to be unset, source: Invalid value: \"\": needs to be unset]"
    );
    // The lengths of a new Event's fields, with events.k8s.io's field names for the legacy
    // rules too.
    let long: EventV1 = typed(json!({
        "metadata": {"name": "long"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "web-0", "namespace": ns, "apiVersion": "v1"},
        "reason": "Started", "note": "n".repeat(1025), "type": "Normal",
        "reportingController": "example.com/ctl", "reportingInstance": "i".repeat(129),
    }));
    let status = api_error(v1.create(&PostParams::default(), &long).await);
    assert_eq!(
        status.message,
        "Event \"long\" is invalid: [reportingInstance: Invalid value: \"\": can have at most \
         128 characters, action: Required value, message: Invalid value: \"\": can have at most \
         1024 characters]"
    );
    // Through core/v1 an Event with an eventTime and no reporter names `source`.
    let mut unreported = core_event("unreported", "m");
    unreported.involved_object.namespace = Some(ns.clone());
    unreported.event_time = Some(typed(json!("2026-01-01T00:00:00.000000Z")));
    unreported.source = None;
    unreported.action = Some("Start".into());
    unreported.reporting_instance = Some("i".into());
    let status = api_error(core.create(&PostParams::default(), &unreported).await);
    assert!(
        status
            .message
            .starts_with("Event \"unreported\" is invalid: [source: Required value, "),
        "{}",
        status.message
    );

    // Updates through events.k8s.io change only the series; core/v1 changes anything.
    let status = api_error(
        v1.patch(
            "through-events",
            &PatchParams::default(),
            &Patch::Merge(json!({"note": "changed", "action": "Restart"})),
        )
        .await,
    );
    assert_eq!(
        status.message,
        "Event \"through-events\" is invalid: [message: Invalid value: \"changed\": field is \
         immutable, action: Invalid value: \"Restart\": field is immutable]"
    );
    let status = api_error(
        v1.patch(
            "through-events",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"series": {"count": 1, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}}),
            ),
        )
        .await,
    );
    assert_eq!(
        status.message,
        "Event \"through-events\" is invalid: series.count: Invalid value: \"\": should be at \
         least 2"
    );
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}});
    v1.patch(
        "through-events",
        &PatchParams::default(),
        &Patch::Merge(series),
    )
    .await
    .unwrap();
    core.patch(
        "through-events",
        &PatchParams::default(),
        &Patch::Merge(json!({"message": "changed", "count": 5})),
    )
    .await
    .unwrap();
    assert_eq!(
        v1.get("through-events").await.unwrap().note.as_deref(),
        Some("changed")
    );
}

#[tokio::test]
async fn events_expire_after_the_ttl_and_stay_gone_after_a_restart() {
    let mut s = Server::start_with(&["--event-ttl=2s"]).await;
    let ns = fresh_namespace(&s.client(), "ttl").await;
    let core: Api<Event> = Api::namespaced(s.client(), &ns);
    let mut e = core_event("short-lived", "m");
    e.involved_object.namespace = Some(ns.clone());
    core.create(&PostParams::default(), &e).await.unwrap();
    let deadline = Instant::now() + T;
    while core.get_opt("short-lived").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the event did not expire");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.restart().await;
    let core: Api<Event> = Api::namespaced(s.client(), &ns);
    assert!(core.get_opt("short-lived").await.unwrap().is_none());
}

/// The `elapsed_ms` of the last "store opened" line of the server's log.
fn store_open_ms(log: &str) -> u64 {
    let line = log
        .lines()
        .rfind(|l| l.contains("store opened"))
        .expect("a store opened line");
    let at = line.find("elapsed_ms=").expect("elapsed_ms") + "elapsed_ms=".len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a number of milliseconds")
}

fn file_size(s: &Server) -> u64 {
    ["kgc.db", "kgc.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(s.data_dir().join(f)).ok())
        .map(|m| m.len())
        .sum()
}

#[tokio::test]
async fn a_start_with_many_expired_events_does_not_load_them() {
    const EVENTS: usize = 20_000;
    let mut s = Server::start_with(&["--event-ttl=1h"]).await;
    let ns = fresh_namespace(&s.client(), "many").await;
    let core: Api<Event> = Api::namespaced(s.client(), &ns);
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (core, ns) = (core.clone(), ns.clone());
            tokio::spawn(async move {
                for i in (w..EVENTS).step_by(16) {
                    let mut e = core_event(&format!("e-{i}"), &"x".repeat(200));
                    e.involved_object.namespace = Some(ns.clone());
                    core.create(&PostParams::default(), &e).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    s.terminate();
    let full = file_size(&s);

    // Two hours on, every one of them expired an hour ago.
    s.restart_with(&["--event-ttl=1h", "--clock-offset=2h"])
        .await;
    let opened = store_open_ms(&s.log_tail(400));
    assert!(opened < 3_000, "the store took {opened} ms to open");
    let core: Api<Event> = Api::namespaced(s.client(), &ns);
    assert!(
        core.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // The expired rows are purged in the background, and the file gives their space back.
    let db = rusqlite::Connection::open_with_flags(
        s.data_dir().join("kgc.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left: i64 = db
            .query_row("SELECT count(*) FROM leased_objects", [], |r| r.get(0))
            .unwrap();
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{left} expired rows are left");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(db);
    s.terminate();
    let purged = file_size(&s);
    assert!(
        purged < full / 4,
        "the database is {purged} bytes, from {full}"
    );
}

#[tokio::test]
async fn unschedulable_pods_leave_at_most_two_events_each() {
    const PODS: usize = 300;
    let s = Server::living(&["--in-memory", "--nodes=0"]).await;
    let ns = fresh_namespace(&s.client(), "unsched").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    for i in 0..PODS {
        let pod: Pod = typed(json!({"metadata": {"name": format!("p-{i}")},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}));
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(40)).await;
    let events: Api<Event> = Api::namespaced(s.client(), &ns);
    let mut per_pod: HashMap<String, usize> = HashMap::new();
    for e in events.list(&ListParams::default()).await.unwrap().items {
        if e.reason.as_deref() == Some("FailedScheduling") {
            *per_pod
                .entry(e.involved_object.name.unwrap_or_default())
                .or_default() += 1;
        }
    }
    assert_eq!(
        per_pod.len(),
        PODS,
        "every pod has its FailedScheduling event"
    );
    let worst = per_pod.values().max().copied().unwrap_or_default();
    assert!(worst <= 2, "a pod has {worst} FailedScheduling events");
}
