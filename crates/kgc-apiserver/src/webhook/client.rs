//! Calling a webhook: `clientConfig` (`url`, or `service` resolved to an address), TLS verified
//! against `caBundle`, one POST with a deadline (kubernetes/apiserver `pkg/util/webhook`
//! `client.go`, `pkg/admission/plugin/webhook/config` and the service resolver).
//!
//! A webhook may be any HTTPS server the configuration names, loopback included (this is a
//! single-machine cluster); nothing else is reachable: no proxy, no redirects, no scheme but
//! `https`, and the certificate is always verified (against `caBundle` only: with none, nothing
//! verifies and the call fails saying so).
//!
//! The HTTP/1.1 connections are hyper's own, driven by the task that calls: the request is
//! written and the answer read without handing them to a pool task on another thread and waking
//! the caller back, two thread hops that cost more than the webhook's own round trip on loopback.
//! Idle connections are kept for the next call, as Go's transport keeps them upstream.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::FutureExt;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use kgc_meta::{GroupResource, LabelSelector};
use kgc_store::{ListOptions, Store};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// An idle connection is closed after this long, as Go's `http.DefaultTransport`
/// (`IdleConnTimeout`), whose value kube-apiserver's webhook transport keeps
/// (k8s.io/apimachinery `pkg/util/net/http.go`, `SetOldTransportDefaults`).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Idle connections kept per webhook: enough for the concurrent writers of a busy server; a
/// connection freed beyond them is closed.
const MAX_IDLE: usize = 32;

/// The largest answer read; a longer one fails the call rather than filling memory.
const MAX_ANSWER: usize = 256 << 20;

/// Where a webhook is.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Url(String),
    Service {
        namespace: String,
        name: String,
        port: u16,
        path: String,
    },
}

/// What a call is sent to, parsed once for an address and deadline.
struct Target {
    /// The address a Service resolved to; `None` for a `url`, dialled by its host name.
    addr: Option<SocketAddr>,
    timeout: Duration,
    /// The URL called, the deadline in its query, as written (errors quote it).
    text: Arc<str>,
    /// `host[:port]` for the `Host` header, the host and port dialled, the path and query.
    authority: String,
    host: String,
    port: u16,
    path: String,
    /// The name the certificate must carry.
    server_name: ServerName<'static>,
}

/// One HTTP/1.1 connection over TLS.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    conn: http1::Connection<TokioIo<TlsStream<TcpStream>>, Full<Bytes>>,
    idle_since: Instant,
}

/// The last call's target and the idle connections to it.
#[derive(Default)]
struct Pool {
    target: Option<Arc<Target>>,
    idle: Vec<Connection>,
}

/// A webhook's `clientConfig`, with its TLS configuration built once.
#[derive(Clone)]
pub(crate) struct ClientConfig {
    endpoint: Result<Endpoint, String>,
    tls: Result<Arc<rustls::ClientConfig>, String>,
    /// Shared by the clones, so a webhook called on every write costs a round trip, not a TCP
    /// and TLS handshake each time.
    pool: Arc<Mutex<Pool>>,
}

/// Why a call on one connection failed.
enum Failure {
    /// The request was not written: the connection had closed; another may carry it.
    Unsent(String),
    Failed(String),
}

impl ClientConfig {
    pub fn from_json(cc: &Value) -> Self {
        let endpoint = match (cc["url"].as_str(), cc.get("service")) {
            (Some(url), _) if url.starts_with("https://") => Ok(Endpoint::Url(url.to_owned())),
            (Some(url), _) => Err(format!("the webhook URL {url:?} is not https")),
            (None, Some(svc)) if svc.is_object() => Ok(Endpoint::Service {
                namespace: svc["namespace"].as_str().unwrap_or_default().to_owned(),
                name: svc["name"].as_str().unwrap_or_default().to_owned(),
                port: svc["port"]
                    .as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
                path: svc["path"].as_str().unwrap_or("/").to_owned(),
            }),
            _ => Err("the webhook's clientConfig names neither a url nor a service".into()),
        };
        Self {
            endpoint,
            tls: tls_config(cc["caBundle"].as_str().unwrap_or_default()).map(Arc::new),
            pool: Arc::default(),
        }
    }

    /// POSTs `body` and returns the answer's body; the error is the reason, worded as Go's
    /// HTTP client words it (`Post "<url>": <cause>`).
    pub async fn post(
        &self,
        store: &Store,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<Bytes, String> {
        let endpoint = self.endpoint.as_ref().map_err(Clone::clone)?;
        let tls = self.tls.as_ref().map_err(Clone::clone)?;
        let (url, addr) = match endpoint {
            Endpoint::Url(url) => (url.as_str(), None),
            Endpoint::Service {
                namespace,
                name,
                port,
                path,
            } => {
                // The certificate must name `<service>.<namespace>.svc`, as upstream's service
                // resolver dials it; the connection goes to the address the Service resolves to.
                let addr = resolve_service(store, namespace, name, *port).await?;
                let url = format!("https://{name}.{namespace}.svc:{port}{path}");
                return self.call(tls, &url, Some(addr), timeout, body).await;
            }
        };
        self.call(tls, url, addr, timeout, body).await
    }

    async fn call(
        &self,
        tls: &Arc<rustls::ClientConfig>,
        url: &str,
        addr: Option<SocketAddr>,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<Bytes, String> {
        let target = self.target(url, addr, timeout)?;
        let text = &target.text;
        let (code, answer) =
            // Boxed: a dial's TLS and HTTP handshakes would otherwise live in every write's future,
        // and a debug build's worker stack overflowed.
        tokio::time::timeout(timeout, Box::pin(self.exchange(tls, &target, body.into())))
                .await
                .map_err(|_| format!("Post {text:?}: context deadline exceeded"))?
                .map_err(|cause| format!("Post {text:?}: {cause}"))?;
        if !(200..300).contains(&code) {
            let message = serde_json::from_slice::<Value>(&answer)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| {
                    format!(
                        "the server responded with the status code {code} but did not return more information"
                    )
                });
            return Err(message);
        }
        Ok(answer)
    }

    /// The target of a call of `url` (at `addr`, a Service's address) with `timeout`: the last
    /// one if made for the same, else a new one, kept. Idle connections to another address are
    /// closed. The error is the reason, as [`Self::post`] words it.
    fn target(
        &self,
        url: &str,
        addr: Option<SocketAddr>,
        timeout: Duration,
    ) -> Result<Arc<Target>, String> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = &pool.target
            && t.addr == addr
            && t.timeout == timeout
        {
            return Ok(Arc::clone(t));
        }
        let target = Arc::new(Target::parse(url, addr, timeout)?);
        if pool.target.as_ref().is_some_and(|t| t.addr != addr) {
            pool.idle.clear();
        }
        pool.target = Some(Arc::clone(&target));
        Ok(target)
    }

    /// Sends `body` on an idle connection, or on a new one, and reads the answer; the error is
    /// the cause. A request an idle connection could not carry (it had closed) goes on a new one.
    async fn exchange(
        &self,
        tls: &Arc<rustls::ClientConfig>,
        target: &Target,
        body: Bytes,
    ) -> Result<(u16, Bytes), String> {
        let mut idle = self.take_idle();
        loop {
            let reused = idle.is_some();
            let mut conn = match idle.take() {
                Some(conn) => conn,
                None => dial(tls, target).await?,
            };
            match conn.round_trip(target, body.clone()).await {
                Ok((code, answer, open)) => {
                    if open && !conn.sender.is_closed() {
                        self.give_back(target, conn);
                    }
                    return Ok((code, answer));
                }
                Err(Failure::Unsent(_)) if reused => {}
                Err(Failure::Unsent(cause) | Failure::Failed(cause)) => return Err(cause),
            }
        }
    }

    /// An idle connection still open, if any; the closed and the stale are dropped.
    fn take_idle(&self) -> Option<Connection> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut conn) = pool.idle.pop() {
            if conn.idle_since.elapsed() < IDLE_TIMEOUT
                && !conn.sender.is_closed()
                && (&mut conn.conn).now_or_never().is_none()
            {
                return Some(conn);
            }
        }
        None
    }

    fn give_back(&self, target: &Target, mut conn: Connection) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.idle.len() < MAX_IDLE && pool.target.as_ref().is_some_and(|t| t.addr == target.addr)
        {
            conn.idle_since = Instant::now();
            pool.idle.push(conn);
        }
    }
}

impl Target {
    fn parse(url: &str, addr: Option<SocketAddr>, timeout: Duration) -> Result<Self, String> {
        // Upstream tells the webhook its deadline in the query.
        let sep = if url.contains('?') { '&' } else { '?' };
        let text: Arc<str> = format!("{url}{sep}timeout={}s", timeout.as_secs()).into();
        let invalid = |e: &dyn std::fmt::Display| format!("Post {text:?}: {e}");
        let uri: hyper::Uri = text.parse().map_err(|e| invalid(&e))?;
        let authority = uri
            .authority()
            .ok_or_else(|| invalid(&"no host in the URL"))?;
        let port = authority.port_u16().unwrap_or(443);
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let server_name = ServerName::try_from(host.to_owned()).map_err(|e| invalid(&e))?;
        Ok(Self {
            addr,
            timeout,
            authority: authority.as_str().to_owned(),
            host: host.to_owned(),
            port,
            path: uri
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
            server_name,
            text,
        })
    }
}

/// A new connection to `target`: TCP, TLS, then HTTP/1.1; the error is the cause.
async fn dial(tls: &Arc<rustls::ClientConfig>, target: &Target) -> Result<Connection, String> {
    let tcp = match target.addr {
        Some(addr) => TcpStream::connect(addr).await,
        None => TcpStream::connect((target.host.as_str(), target.port)).await,
    }
    .map_err(|e| format!("dial tcp {}: {e}", target.authority))?;
    // A request is one write: without it the answer waits for the delayed ACK of a small write.
    let _ = tcp.set_nodelay(true);
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(target.server_name.clone(), tcp)
        .await
        .map_err(|e| cause(&e))?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| cause(&e))?;
    Ok(Connection {
        sender,
        conn,
        idle_since: Instant::now(),
    })
}

impl Connection {
    /// One request and its whole answer: the status, the body and whether the connection may
    /// carry another. The connection is driven here, by the caller's task.
    async fn round_trip(
        &mut self,
        target: &Target,
        body: Bytes,
    ) -> Result<(u16, Bytes, bool), Failure> {
        let request = hyper::Request::post(target.path.as_str())
            .header(HOST, target.authority.as_str())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(Full::new(body))
            .map_err(|e| Failure::Failed(e.to_string()))?;
        let Self { sender, conn, .. } = self;
        let exchange = async {
            // A kept connection takes the next request once its task has read the last answer
            // to the end, which it does as it is polled here.
            sender
                .ready()
                .await
                .map_err(|e| Failure::Unsent(cause(&e)))?;
            let answer = sender.try_send_request(request).await.map_err(|mut e| {
                let cause = cause(e.error());
                match e.take_message() {
                    Some(_) => Failure::Unsent(cause),
                    None => Failure::Failed(cause),
                }
            })?;
            let code = answer.status().as_u16();
            let body = Limited::new(answer.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| Failure::Failed(cause(&*e)))?
                .to_bytes();
            Ok((code, body))
        };
        let mut exchange = pin!(exchange);
        let mut closed = false;
        let answer = poll_fn(|cx| {
            if let Poll::Ready(r) = exchange.as_mut().poll(cx) {
                return Poll::Ready(r);
            }
            if !closed && let Poll::Ready(r) = std::pin::Pin::new(&mut *conn).poll(cx) {
                // The connection ended: what it read is the exchange's, which is done now or
                // never will be.
                closed = true;
                if let Poll::Ready(r) = exchange.as_mut().poll(cx) {
                    return Poll::Ready(r);
                }
                let why = r
                    .err()
                    .map_or_else(|| "connection closed".to_owned(), |e| cause(&e));
                return Poll::Ready(Err(Failure::Failed(why)));
            }
            Poll::Pending
        })
        .await;
        let (code, body) = answer?;
        Ok((code, body, !closed))
    }
}

/// The innermost cause of a failed call, as Go's client reports it.
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

/// Roots from `caBundle` (base64 of PEM, as the JSON of a `[]byte` field carries it).
fn tls_config(ca_bundle: &str) -> Result<rustls::ClientConfig, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle)
        .map_err(|e| format!("the webhook's caBundle is not base64: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("the webhook's caBundle is not PEM: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("the webhook's caBundle holds an unusable certificate: {e}"))?;
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .map_err(|e| format!("TLS set-up: {e}"))
}

/// The address of a Service's `port`: a ready endpoint of its EndpointSlices, else of its
/// Endpoints, else its `spec.externalName` or ClusterIP; an error saying why there is none.
async fn resolve_service(
    store: &Store,
    ns: &str,
    name: &str,
    port: u16,
) -> Result<SocketAddr, String> {
    let svc = store
        .get(&GroupResource::new("", "services"), ns, name)
        .ok_or_else(|| format!("service \"{ns}/{name}\" not found"))?;
    let svc: Value = serde_json::from_str(&svc.raw).map_err(|e| e.to_string())?;
    let spec = &svc["spec"];
    let svc_port = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)));
    if spec["type"] == "ExternalName" {
        let host = spec["externalName"].as_str().unwrap_or_default();
        return tokio::net::lookup_host((host, port))
            .await
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                format!("service \"{ns}/{name}\": externalName {host:?} does not resolve")
            });
    }
    let Some(svc_port) = svc_port else {
        return Err(format!("service \"{ns}/{name}\" has no port {port}"));
    };
    let port_name = svc_port["name"].as_str().unwrap_or_default();
    if let Some(addr) = from_endpoint_slices(store, ns, name, port_name) {
        return Ok(addr);
    }
    if let Some(addr) = from_endpoints(store, ns, name, port_name) {
        return Ok(addr);
    }
    match spec["clusterIP"].as_str() {
        Some(ip) if !ip.is_empty() && ip != "None" => format!("{ip}:{port}")
            .parse()
            .map_err(|_| format!("service \"{ns}/{name}\" has an unusable clusterIP {ip:?}")),
        _ => Err(format!(
            "service \"{ns}/{name}\" has no ready endpoint and no cluster IP to reach it at"
        )),
    }
}

fn socket(ip: &str, port: Option<u64>) -> Option<SocketAddr> {
    let port = u16::try_from(port?).ok()?;
    let ip: std::net::IpAddr = ip.parse().ok()?;
    Some(SocketAddr::new(ip, port))
}

fn from_endpoint_slices(
    store: &Store,
    ns: &str,
    name: &str,
    port_name: &str,
) -> Option<SocketAddr> {
    let opts = ListOptions {
        namespace: Some(ns.to_owned()),
        labels: LabelSelector::parse(&format!("kubernetes.io/service-name={name}")).ok()?,
        ..ListOptions::default()
    };
    let list = store
        .list(
            &GroupResource::new("discovery.k8s.io", "endpointslices"),
            &opts,
        )
        .ok()?;
    list.items.iter().find_map(|s| {
        let s: Value = serde_json::from_str(&s.raw).ok()?;
        let port = s["ports"]
            .as_array()?
            .iter()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?["port"]
            .as_u64();
        s["endpoints"].as_array()?.iter().find_map(|e| {
            if e["conditions"]["ready"] == false {
                return None;
            }
            socket(e["addresses"].get(0)?.as_str()?, port)
        })
    })
}

fn from_endpoints(store: &Store, ns: &str, name: &str, port_name: &str) -> Option<SocketAddr> {
    let ep = store.get(&GroupResource::new("", "endpoints"), ns, name)?;
    let ep: Value = serde_json::from_str(&ep.raw).ok()?;
    ep["subsets"].as_array()?.iter().find_map(|subset| {
        let port = subset["ports"]
            .as_array()?
            .iter()
            .find(|p| p["name"].as_str().unwrap_or_default() == port_name)?["port"]
            .as_u64();
        socket(subset["addresses"].get(0)?["ip"].as_str()?, port)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rustls::pki_types::PrivateKeyDer;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A webhook server on 127.0.0.1 answering every POST with `{}`: its URL, its `caBundle`
    /// and the count of connections it accepted. With `close`, it closes each connection after
    /// its first answer without saying so, as a server whose idle timeout struck.
    async fn server(close: bool) -> (String, String, Arc<AtomicUsize>) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/review", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let mut tls = acceptor.accept(tcp).await.unwrap();
                    let mut seen = Vec::new();
                    let mut buf = [0; 4096];
                    // Each request is small and sent whole: its head and its body.
                    while let Ok(n @ 1..) = tls.read(&mut buf).await {
                        seen.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&seen);
                        let Some(end) = text.find("\r\n\r\n") else {
                            continue;
                        };
                        let length: usize = text[..end]
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if seen.len() < end + 4 + length {
                            continue;
                        }
                        seen.clear();
                        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
                        tls.write_all(answer.as_bytes()).await.unwrap();
                        tls.flush().await.unwrap();
                        if close {
                            let _ = tls.shutdown().await;
                            return;
                        }
                    }
                });
            }
        });
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
        (url, ca_bundle, accepted)
    }

    /// Three calls to a [`server`]: each answered, and the connections it accepted.
    async fn three_calls(close: bool) -> usize {
        let (url, ca_bundle, accepted) = server(close).await;
        let client =
            ClientConfig::from_json(&serde_json::json!({"url": url, "caBundle": ca_bundle}));
        let tls = client.tls.as_ref().unwrap();
        for _ in 0..3 {
            let answer = client
                .call(tls, &url, None, Duration::from_secs(10), b"{}".to_vec())
                .await
                .unwrap();
            assert_eq!(&answer[..], b"{}");
        }
        accepted.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn calls_reuse_one_connection() {
        assert_eq!(three_calls(false).await, 1);
    }

    #[tokio::test]
    async fn a_connection_the_webhook_closed_is_replaced() {
        assert_eq!(three_calls(true).await, 3);
    }
}
