//! The WATCH response: newline-delimited JSON events over a chunked body
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go`). One event per line, because
//! kube-rs splits on `\n`.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::stream;
use kgc_meta::Status;
use kgc_store::{WatchEvent, Watcher};
use serde_json::{Value, json};
use tokio::sync::watch as notify;
use tokio::time::Instant;

/// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// What a watch stream needs besides its cursor.
pub struct WatchParams {
    pub kind: String,
    pub api_version: String,
    pub info: std::sync::Arc<kgc_meta::ResourceInfo>,
    /// Set when stored objects must be converted to another version.
    pub version: Option<String>,
    /// Set when the client asked for Table rows (`kubectl get -w`).
    pub table: Option<TableParams>,
    pub timeout: Duration,
    pub bookmarks: bool,
    /// `sendInitialEvents=true` with `allowWatchBookmarks`: end the initial ADDED events with
    /// the `k8s.io/initial-events-end` bookmark.
    pub initial_events_end: bool,
}

/// How to render events as one-row Tables; only the first carries the column definitions.
pub struct TableParams {
    pub info: std::sync::Arc<kgc_meta::ResourceInfo>,
    pub version: &'static str,
    pub include: crate::table::IncludeObject,
    /// The server clock, for the AGE cells.
    pub clock: kgc_meta::time::Clock,
}

struct StreamState {
    watcher: Watcher,
    params: WatchParams,
    initial_left: usize,
    deadline: Instant,
    next_bookmark: Instant,
    shutdown: notify::Receiver<bool>,
    done: bool,
    sent_columns: bool,
}

impl StreamState {
    fn bookmark(&self, initial_end: bool) -> Bytes {
        let mut object = json!({
            "kind": self.params.kind,
            "apiVersion": self.params.api_version,
            "metadata": {"resourceVersion": self.watcher.resource_version().to_string()},
        });
        if initial_end {
            object["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(&json!({"type": "BOOKMARK", "object": object}).to_string())
    }

    async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        if self.initial_left == 0 && self.params.initial_events_end {
            self.params.initial_events_end = false;
            return Some(self.bookmark(true));
        }
        loop {
            tokio::select! {
                biased;
                e = self.watcher.next() => match e {
                    WatchEvent::Event(kind, obj) => {
                        self.initial_left = self.initial_left.saturating_sub(1);
                        let served = crate::handlers::served_text(&self.params.info, &obj.raw, self.params.version.as_deref());
                        let body = match &self.params.table {
                            Some(t) => {
                                let value: Value = serde_json::from_str(&served).unwrap_or(Value::Null);
                                let with_columns = !self.sent_columns;
                                self.sent_columns = true;
                                crate::table::table_of_values(&t.info, [&value], t.version, &obj.resource_version.to_string(), None, &t.include, with_columns, t.clock.now()).to_string()
                            }
                            None => served.into_owned(),
                        };
                        let mut text = String::with_capacity(body.len() + 32);
                        text.push_str("{\"type\":\"");
                        text.push_str(kind.as_str());
                        text.push_str("\",\"object\":");
                        text.push_str(&body);
                        text.push('}');
                        return Some(line(&text));
                    }
                    WatchEvent::Expired { requested, oldest } => {
                        self.done = true;
                        let status = Status::expired(format!("too old resource version: {requested} ({oldest})"));
                        return Some(error_line(&status));
                    }
                    WatchEvent::Closed => return None,
                },
                _ = tokio::time::sleep_until(self.deadline) => return None,
                _ = tokio::time::sleep_until(self.next_bookmark), if self.params.bookmarks => {
                    self.next_bookmark = next_bookmark(Instant::now(), self.deadline);
                    return Some(self.bookmark(false));
                }
                r = self.shutdown.changed() => {
                    if r.is_err() || *self.shutdown.borrow() {
                        return None;
                    }
                }
            }
        }
    }
}

/// When to send the next bookmark (apiserver `cacheWatcher.nextBookmarkTime`): every minute, and
/// 2 s before the watch times out, so that a client resumes from a fresh resourceVersion. None
/// once that moment has passed (a far-future instant, since the deadline ends the stream first).
fn next_bookmark(now: Instant, deadline: Instant) -> Instant {
    let heartbeat = now + BOOKMARK_EVERY;
    let pre_timeout = deadline
        .checked_sub(Duration::from_secs(2))
        .unwrap_or(deadline);
    let next = heartbeat.min(pre_timeout);
    if next < now {
        deadline + Duration::from_secs(3600)
    } else {
        next
    }
}

/// An `ERROR` event carrying `status`.
pub(crate) fn error_line(status: &Status) -> Bytes {
    line(&json!({"type": "ERROR", "object": status.to_json()}).to_string())
}

fn line(text: &str) -> Bytes {
    let mut s = String::with_capacity(text.len() + 1);
    s.push_str(text);
    s.push('\n');
    Bytes::from(s)
}

/// A watch that fails once accepted: 200 and a single `ERROR` event, as upstream reports every
/// error after the request was parsed (`cacher.Watch`, `newErrWatcher`).
pub fn respond_error(status: &Status) -> Response {
    watch_response(Body::from(error_line(status)))
}

/// A 200 JSON watch response with `body`.
fn watch_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// Streams a watcher's events until the timeout, an expired cursor, or shutdown.
pub fn respond(
    watcher: Watcher,
    params: WatchParams,
    shutdown: notify::Receiver<bool>,
) -> Response {
    let now = Instant::now();
    let state = StreamState {
        initial_left: watcher.buffered(),
        deadline: now + params.timeout,
        next_bookmark: next_bookmark(now, now + params.timeout),
        watcher,
        params,
        shutdown,
        done: false,
        sent_columns: false,
    };
    let body = stream::unfold(state, |mut st| async move {
        st.next_chunk()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), st))
    });
    watch_response(Body::from_stream(body))
}
