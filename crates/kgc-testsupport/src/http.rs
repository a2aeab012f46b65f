//! Requests below kube-rs's typed API: raw requests through a kube client (any status is an
//! answer), raw watches, plain HTTP/1.1 `GET`s, and assertions on `metav1.Status` bodies.

use std::io::{Read, Write};
use std::time::Duration;

use futures::{AsyncBufReadExt, Stream, StreamExt};
use kube::Client;
use serde_json::Value;

use crate::server::Server;

/// A raw HTTP response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The body as JSON; panics naming the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the response ({}) is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }
}

/// One raw request through a kube client; any status is returned, never an error.
pub async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> RawResponse {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    let req = req
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body.into()))
        .expect("building a request");
    let resp = client
        .send(req)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect_bytes()
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}"))
        .to_vec();
    RawResponse {
        status,
        headers,
        body,
    }
}

/// The lines of a raw watch, each parsed as JSON.
pub type WatchLines = std::pin::Pin<Box<dyn Stream<Item = Value> + Send>>;

impl<B> Server<B> {
    /// One raw request through the kube client; any status is returned, never an error.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<Vec<u8>>,
    ) -> RawResponse {
        raw(&self.client(), method, path, content_type, body).await
    }

    /// A raw watch: each line of the response body parsed as JSON.
    pub async fn raw_watch(&self, path_and_query: &str) -> WatchLines {
        let req = http::Request::get(path_and_query)
            .body(Vec::new())
            .expect("building a request");
        let body = self
            .client()
            .request_stream(req)
            .await
            .unwrap_or_else(|e| panic!("GET {path_and_query}: {e}"));
        Box::pin(body.lines().map(|l| {
            let line = l.expect("reading a watch line");
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("a watch line is not one JSON document ({e}): {line}"))
        }))
    }
}

/// A plain `GET` (HTTP/1.1, `Connection: close`): status and body.
pub fn http_get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut conn = std::net::TcpStream::connect(host).expect("connecting");
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("writing");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("reading");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// A minimal `GET` over a fresh TCP connection: the status code, or `None` if the server does
/// not answer (yet).
pub(crate) async fn http_get_status(addr: &str, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fut = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf);
        text.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(2), fut)
        .await
        .ok()
        .flatten()
}

/// One series of the server's `/metrics` (e.g. `workqueue_retries_total{name="replicaset"}`),
/// 0 until it first counts.
pub async fn metrics_counter(client: &Client, series: &str) -> f64 {
    counter_in(&metrics_text(client).await, series)
}

/// The value of `series` in a `/metrics` text (0 when absent): several counters read from one
/// scrape are read at one instant.
pub fn counter_in(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

/// A `GET /metrics` of the server, as text.
pub async fn metrics_text(client: &Client) -> String {
    raw(client, "GET", "/metrics", None, Vec::new())
        .await
        .text()
}

/// `kgc_store_revision` from the server's `/metrics`: every write bumps it, so a test asserts
/// that something wrote nothing by comparing two readings.
pub async fn store_revision(client: &Client) -> u64 {
    metrics_text(client)
        .await
        .lines()
        .find_map(|l| l.strip_prefix("kgc_store_revision "))
        .and_then(|v| v.trim().parse().ok())
        .expect("kgc_store_revision on /metrics")
}

/// Asserts a `metav1.Status` failure body: code, reason and exact message.
#[track_caller]
pub fn assert_status(resp: &RawResponse, code: u16, reason: &str, message: &str) {
    let v = resp.json();
    assert_eq!(resp.status, code, "HTTP status; body: {v}");
    assert_eq!(v["kind"], "Status", "body: {v}");
    assert_eq!(v["apiVersion"], "v1", "body: {v}");
    assert_eq!(v["status"], "Failure", "body: {v}");
    assert_eq!(v["code"], code, "body: {v}");
    if reason.is_empty() {
        assert!(
            v.get("reason").is_none_or(|r| r == "" || r.is_null()),
            "no reason expected; body: {v}"
        );
    } else {
        assert_eq!(v["reason"], reason, "body: {v}");
    }
    assert_eq!(v["message"], message, "body: {v}");
}

/// The `metav1.Status` of a kube-rs API error; panics on any other outcome.
#[track_caller]
pub fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}
