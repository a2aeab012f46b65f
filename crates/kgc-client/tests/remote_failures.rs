//! `Remote` against a fake API server that fails: watches answered with an error Status are
//! re-opened with back-off, not as fast as the server answers; writes whose answers lack fields
//! a typed decoding wants still succeed. The fake server is an axum router serving kube-rs
//! in process (no socket), so paused time drives it exactly.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use kgc_client::{Cluster, Remote};
use kgc_meta::{Catalog, ResourceInfo};
use serde_json::json;

/// How the fake server answers watches.
#[derive(Clone, Copy)]
enum Watches {
    /// The watch request itself fails: 403, as RBAC answers.
    Refused,
    /// The watch opens, sends one ERROR event with a 500 Status and ends, as a failing storage
    /// answers.
    ErrorEvent,
    /// The watch opens and ends at once, without an event or an error, as a server short of
    /// watch capacity or a proxy may close it.
    ClosedAtOnce,
}

#[derive(Clone)]
struct Fake {
    watches: Watches,
    opened: Arc<AtomicUsize>,
    lists: Arc<AtomicUsize>,
}

fn json_response(code: StatusCode, body: serde_json::Value) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn status(code: u16, reason: &str) -> serde_json::Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("fake {reason}"), "reason": reason, "code": code})
}

async fn answer(State(fake): State<Fake>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    match *request.method() {
        Method::GET if query.split('&').any(|kv| kv == "watch=true") => {
            fake.opened.fetch_add(1, Ordering::SeqCst);
            match fake.watches {
                Watches::Refused => json_response(StatusCode::FORBIDDEN, status(403, "Forbidden")),
                Watches::ErrorEvent => {
                    let event = json!({"type": "ERROR", "object": status(500, "InternalError")});
                    Response::builder()
                        .status(StatusCode::OK)
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(format!("{event}\n")))
                        .unwrap()
                }
                Watches::ClosedAtOnce => Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::empty())
                    .unwrap(),
            }
        }
        Method::GET => {
            fake.lists.fetch_add(1, Ordering::SeqCst);
            json_response(
                StatusCode::OK,
                json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                       "metadata": {"resourceVersion": "7"}, "items": []}),
            )
        }
        // An answer without apiVersion: a typed decoding of it fails.
        Method::PATCH | Method::DELETE => json_response(
            StatusCode::OK,
            json!({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns", "uid": "u"}}),
        ),
        _ => json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            status(405, "MethodNotAllowed"),
        ),
    }
}

fn remote(watches: Watches) -> (Remote, Fake) {
    let fake = Fake {
        watches,
        opened: Arc::default(),
        lists: Arc::default(),
    };
    let router = axum::Router::new()
        .fallback(answer)
        .with_state(fake.clone());
    (Remote::new(kube::Client::new(router, "default")), fake)
}

fn configmaps() -> Arc<ResourceInfo> {
    Catalog::builtin()
        .get("", "v1", "configmaps")
        .cloned()
        .unwrap()
}

/// Watches opened and errors seen in 20 s of a watch the server keeps failing.
async fn failing_watch(watches: Watches) -> (usize, usize, Fake) {
    let (cluster, fake) = remote(watches);
    let mut stream = cluster.watch(configmaps());
    let mut errors = 0;
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = stream.next().await {
            errors += usize::from(event.is_err());
        }
    })
    .await;
    (fake.opened.load(Ordering::SeqCst), errors, fake)
}

// The reflector's back-off waits 0.8-1.6 s, 1.6-3.2 s, 3.2-6.4 s, 6.4-12.8 s, 12.8-25.6 s
// between attempts: 20 s hold the first attempt and 3 or 4 more. Unpaced, the watch was
// re-opened as fast as the server answered.

#[tokio::test(start_paused = true)]
async fn a_refused_watch_is_reopened_with_back_off() {
    let (opened, errors, fake) = failing_watch(Watches::Refused).await;
    assert!((4..=5).contains(&opened), "{opened} watches in 20 s");
    assert_eq!(errors, opened, "each failed attempt is reported");
    // A refused watch start is retried from the same list.
    assert_eq!(fake.lists.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_watch_ending_in_an_error_status_is_reopened_with_back_off() {
    let (opened, errors, _) = failing_watch(Watches::ErrorEvent).await;
    assert!((4..=5).contains(&opened), "{opened} watches in 20 s");
    assert_eq!(errors, opened, "each failed attempt is reported");
}

#[tokio::test(start_paused = true)]
async fn a_watch_closed_at_once_without_an_event_is_reopened_with_back_off() {
    let (opened, errors, fake) = failing_watch(Watches::ClosedAtOnce).await;
    assert!((4..=5).contains(&opened), "{opened} watches in 20 s");
    assert_eq!(errors, opened, "each very short watch is reported");
    // Nothing says the list is stale: the watch resumes from it.
    assert_eq!(fake.lists.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn writes_succeed_whatever_their_answer_holds() {
    let (cluster, _) = remote(Watches::Refused);
    let cm = configmaps();
    cluster
        .remove_owner_references(&cm, "ns", "x", "u", &["owner".to_owned()])
        .await
        .expect("an orphaning patch answered 200 without apiVersion is done");
    let deleted = cluster
        .delete(&cm, "ns", "x", &kgc_meta::DeleteOptions::default())
        .await
        .expect("a delete answered 200 without apiVersion is done");
    assert_eq!(deleted, kgc_client::Deleted::Gone);
}
