//! Webhooks' cost (issue 32), against a durable `kgc serve` and a webhook server this process
//! runs itself over HTTPS (a CA and a certificate for 127.0.0.1 made here with rcgen, served
//! with rustls on a thread and runtime of its own, so that the load generator does not slow it):
//! - `webhook`: ConfigMap creates in a namespace one allowing validating webhook watches,
//!   against creates in a namespace it does not. One client interleaves a create in each with
//!   the webhook's own round trip (the last AdmissionReview the server sent it, replayed on a
//!   keep-alive connection), so that all three are timed under the same conditions: a hook
//!   called once a create idles between calls, and a back-to-back loop of replays timed apart
//!   would understate its round trip (goal: the webhook adds at most twice its own round trip
//!   to a create). Then 16 clients for throughput and server CPU, and the round trip over a new
//!   TLS connection each time;
//! - `conversion`: a LIST of `--small-list` custom resources in the version they are stored in,
//!   against the same LIST in a served version a conversion webhook converts to.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::http::Conn;
use crate::server::Server;
use crate::stats::{Samples, fmt_ms, ms, thousands};
use crate::{Bench, BodyFn, Creates, Kind, create_many, create_namespace, post_many, time_list};

const CLIENTS: usize = 16;
const DEADLINE: Duration = Duration::from_secs(60);
const GROUP: &str = "bench.kgc.io";

/// What the webhook server has answered, shared with its thread.
#[derive(Default)]
struct Seen {
    reviews: AtomicUsize,
    converted: AtomicUsize,
    /// The last AdmissionReview received, replayed to time the round trip alone.
    last_review: Mutex<Option<Bytes>>,
}

/// The webhook server: `https://<addr>/validate` allows everything, `https://<addr>/convert`
/// converts custom resources by rewriting their `apiVersion`. Stops when dropped.
pub(crate) struct Hook {
    addr: SocketAddr,
    /// The CA's PEM, base64-encoded, for a `caBundle`.
    ca_bundle: String,
    client_tls: Arc<rustls::ClientConfig>,
    seen: Arc<Seen>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A CA, a serving certificate for 127.0.0.1 signed by it, and the TLS configurations of both
/// ends.
fn tls() -> anyhow::Result<(String, rustls::ServerConfig, rustls::ClientConfig)> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kgc-bench webhook CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate()?;
    let cert =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &issuer)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let mut server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone())?;
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((ca.pem(), server, client))
}

/// The answer to one review: an AdmissionReview allowed, or a ConversionReview with every
/// object given the desired `apiVersion` (the versions share one schema).
fn answer(path: &str, body: &Bytes, seen: &Seen) -> anyhow::Result<Value> {
    let review: Value = serde_json::from_slice(body)?;
    let req = &review["request"];
    if path.starts_with("/convert") {
        let desired = req["desiredAPIVersion"].clone();
        let objects: Vec<Value> = req["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let mut o = o.clone();
                o["apiVersion"] = desired.clone();
                o
            })
            .collect();
        seen.converted.fetch_add(objects.len(), Ordering::Relaxed);
        seen.reviews.fetch_add(1, Ordering::Relaxed);
        return Ok(
            json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
            "response": {"uid": req["uid"], "convertedObjects": objects,
                "result": {"status": "Success"}}}),
        );
    }
    *seen.last_review.lock().unwrap_or_else(|p| p.into_inner()) = Some(body.clone());
    seen.reviews.fetch_add(1, Ordering::Relaxed);
    Ok(
        json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
        "response": {"uid": req["uid"], "allowed": true}}),
    )
}

async fn respond(req: Request<Incoming>, seen: Arc<Seen>) -> anyhow::Result<Response<Full<Bytes>>> {
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await?.to_bytes();
    let (status, out) = match answer(&path, &body, &seen) {
        Ok(v) => (StatusCode::OK, v.to_string()),
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()),
    };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(out)))?)
}

impl Hook {
    /// Starts the webhook server on a thread of its own.
    pub(crate) fn start() -> anyhow::Result<Self> {
        let (ca_pem, server_tls, client_tls) = tls()?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Seen::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_tls));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let served = Arc::clone(&seen);
        std::thread::Builder::new()
            .name("webhook".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let accept = async {
                        while let Ok((tcp, _)) = listener.accept().await {
                            let _ = tcp.set_nodelay(true);
                            let (acceptor, seen) = (acceptor.clone(), Arc::clone(&served));
                            tokio::spawn(async move {
                                let Ok(tls) = acceptor.accept(tcp).await else {
                                    return;
                                };
                                let service = hyper::service::service_fn(move |req| {
                                    respond(req, Arc::clone(&seen))
                                });
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(tls), service)
                                    .await;
                            });
                        }
                    };
                    tokio::select! {
                        () = accept => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Self {
            addr,
            ca_bundle: crate::base64(ca_pem.as_bytes()),
            client_tls: Arc::new(client_tls),
            seen,
            _stop: stop,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    fn reviews(&self) -> usize {
        self.seen.reviews.load(Ordering::Relaxed)
    }

    /// A new TLS connection to the webhook.
    async fn connect(&self) -> anyhow::Result<Conn> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::IpAddress(self.addr.ip().into());
        let tls = tokio_rustls::TlsConnector::from(Arc::clone(&self.client_tls))
            .connect(name, tcp)
            .await
            .context("TLS handshake with the webhook")?;
        Conn::over(tls, self.addr).await
    }

    /// The last review the webhook received.
    fn last_review(&self) -> anyhow::Result<Bytes> {
        self.seen
            .last_review
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .context("the webhook has received no review")
    }

    /// The webhook's round trip for the last review it received, `runs` times, each on a new
    /// connection (TCP and TLS handshakes included).
    async fn fresh_round_trips(&self, runs: usize) -> anyhow::Result<Samples> {
        let review = self.last_review()?;
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t0 = Instant::now();
            let mut conn = self.connect().await?;
            conn.expect(
                StatusCode::OK,
                Method::POST,
                "/validate",
                Some(review.clone()),
            )
            .await?;
            samples.push(ms(t0.elapsed()));
        }
        Ok(Samples::new(samples))
    }
}

/// `n` rounds of one client's three requests: a create in the plain namespace, a create in the
/// hooked one, and the webhook's last review replayed straight to it on a keep-alive
/// connection (its own round trip), in an order that rotates each round. Returns the three
/// latencies' samples in that order.
async fn interleaved(hook: &Hook, addr: SocketAddr, n: usize) -> anyhow::Result<[Samples; 3]> {
    let mut server = Conn::connect(addr).await?;
    let mut direct = hook.connect().await?;
    let mut samples: [Vec<f64>; 3] = std::array::from_fn(|_| Vec::with_capacity(n));
    for i in 0..n {
        for k in 0..3 {
            let which = (i + k) % 3;
            let t0 = Instant::now();
            match which {
                2 => {
                    let review = hook.last_review()?;
                    direct
                        .expect(StatusCode::OK, Method::POST, "/validate", Some(review))
                        .await?;
                }
                h => {
                    let ns = ["plain", "hooked"][h];
                    let body = crate::object(Kind::Configmaps, &format!("c1-{i:06}"), i);
                    let path = crate::configmaps_path(ns);
                    server
                        .expect(StatusCode::CREATED, Method::POST, &path, Some(body))
                        .await?;
                }
            }
            samples[which].push(ms(t0.elapsed()));
        }
    }
    Ok(samples.map(Samples::new))
}

/// An allowing validating webhook on ConfigMap creates in namespace `ns` alone.
fn validating_configuration(hook: &Hook, ns: &str) -> Bytes {
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kgc-bench-allow"},
        "webhooks": [{
            "name": "allow.bench.kgc.io",
            "clientConfig": {"url": hook.url("/validate"), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
        }],
    });
    Bytes::from(config.to_string())
}

/// Widgets stored in v1 and served in v1 and v2, converted by the hook.
fn crd(hook: &Hook) -> Bytes {
    let schema = json!({"openAPIV3Schema": {"type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle},
                "conversionReviewVersions": ["v1"]}},
        },
    });
    Bytes::from(crd.to_string())
}

fn widget(i: usize) -> Bytes {
    let w = json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
        "metadata": {"name": format!("w-{i:06}"), "labels": {"app": "kgc-bench"}},
        "spec": {"color": "blue", "size": i, "replicas": 3,
            "endpoints": ["http://a.example:8080", "http://b.example:8080"]},
    });
    Bytes::from(w.to_string())
}

/// Fails once [`DEADLINE`] has passed since `started`.
fn check_deadline(started: Instant, what: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        started.elapsed() < DEADLINE,
        "{what}: not within {DEADLINE:?}"
    );
    Ok(())
}

impl Bench {
    pub(crate) async fn webhook(&mut self) -> anyhow::Result<()> {
        let n = (self.cli.creates / 10).max(100);
        println!(
            "\n== validating webhook: ConfigMap creates, {} per run, in a namespace one allowing webhook (HTTPS, served by this process on its own thread) watches, against one it does not; durable",
            thousands(n as u64)
        );
        let hook = Hook::start()?;
        let dir = self.tempdir("webhook")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for ns in ["warmup", "plain", "hooked"] {
            create_namespace(&mut conn, ns).await?;
        }
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            Some(validating_configuration(&hook, "hooked")),
        )
        .await?;
        // The configuration is in force once a create in the namespace reaches the webhook.
        let started = Instant::now();
        for probe in 0.. {
            let body = crate::object(Kind::Configmaps, &format!("probe-{probe}"), probe);
            let path = crate::configmaps_path("hooked");
            conn.expect(StatusCode::CREATED, Method::POST, &path, Some(body))
                .await?;
            if hook.reviews() > 0 {
                break;
            }
            check_deadline(started, "the webhook called")?;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        create_many(server.addr, Kind::Configmaps, "warmup", "w", CLIENTS, 1_000).await?;
        // One client: the three requests interleaved, so that drift on a shared machine and the
        // store's growth fall on all three alike.
        let (cpu0, reviews0) = (server.cpu_time()?, hook.reviews());
        let [plain, hooked, own] = interleaved(&hook, server.addr, n).await?;
        let called = hook.reviews() - reviews0;
        anyhow::ensure!(called >= n, "the webhook saw {called} of {n} creates");
        let cpu = (server.cpu_time()? - cpu0).as_secs_f64() * 1e6 / n as f64;
        println!(
            "    1 client, interleaved: plain p50 {}, p99 {}; hooked p50 {}, p99 {}; the webhook's own round trip (its last review replayed, keep-alive) p50 {}, p99 {}; server CPU {cpu:.0} µs a plain and a hooked create together",
            fmt_ms(plain.median()),
            fmt_ms(plain.pct(99.0)),
            fmt_ms(hooked.median()),
            fmt_ms(hooked.pct(99.0)),
            fmt_ms(own.median()),
            fmt_ms(own.pct(99.0)),
        );
        // Sixteen clients: throughput and CPU a create, each namespace run first in one half.
        let mut runs: [Vec<Creates>; 2] = Default::default();
        let mut cpu = [std::time::Duration::ZERO; 2];
        for (half, order) in [[0, 1], [1, 0]].into_iter().enumerate() {
            for h in order {
                let ns = ["plain", "hooked"][h];
                let reviews0 = hook.reviews();
                let cpu0 = server.cpu_time()?;
                let prefix = format!("c{CLIENTS}-{half}");
                let run =
                    create_many(server.addr, Kind::Configmaps, ns, &prefix, CLIENTS, n / 2).await?;
                cpu[h] += server.cpu_time()? - cpu0;
                if h == 1 {
                    let called = hook.reviews() - reviews0;
                    anyhow::ensure!(
                        called >= n / 2,
                        "the webhook saw {called} of {} creates",
                        n / 2
                    );
                }
                runs[h].push(run);
            }
        }
        let [plain16, hooked16] = runs.map(Creates::merged);
        let [cpu_plain, cpu_hooked] = cpu.map(|c| c.as_secs_f64() * 1e6 / (n / 2 * 2) as f64);
        println!(
            "   {CLIENTS} clients: plain: {}, server CPU {:.0} µs a create; hooked: {}, server CPU {:.0} µs a create",
            plain16.summary(),
            cpu_plain,
            hooked16.summary(),
            cpu_hooked,
        );
        self.row(
            format!("webhook: creates, {CLIENTS} clients, without / with"),
            format!(
                "{} / {} per s (ratio {:.2}); server CPU {:.0} / {:.0} µs a create",
                thousands(plain16.rate().round() as u64),
                thousands(hooked16.rate().round() as u64),
                hooked16.rate() / plain16.rate(),
                cpu_plain,
                cpu_hooked,
            ),
        );
        let fresh = hook.fresh_round_trips(200).await?;
        println!(
            "   the webhook's round trip on a new TLS connection each: p50 {}, p99 {}",
            fmt_ms(fresh.median()),
            fmt_ms(fresh.pct(99.0))
        );
        let added = hooked.median() - plain.median();
        let row = self.row(
            "webhook: p50 added to a create (1 client) / its own round trip",
            format!(
                "{} / {} keep-alive ({:.1}×), interleaved",
                fmt_ms(added),
                fmt_ms(own.median()),
                added / own.median(),
            ),
        );
        row.target = "≤ 2×".into();
        row.met = Some(added <= 2.0 * own.median());
        server.stop().await?;
        Ok(())
    }

    pub(crate) async fn conversion(&mut self) -> anyhow::Result<()> {
        let n = self.cli.small_list;
        println!(
            "\n== conversion webhook: LIST of {} custom resources stored in v1, read in v1 and in v2 (converted by a webhook over HTTPS, served by this process on its own thread); durable",
            thousands(n as u64)
        );
        let hook = Hook::start()?;
        let dir = self.tempdir("conversion")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, "conv").await?;
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(crd(&hook)),
        )
        .await?;
        let path = |v: &str| format!("/apis/{GROUP}/{v}/namespaces/conv/widgets");
        let started = Instant::now();
        let probe = format!("{}?limit=1", path("v2"));
        while conn.call(Method::GET, &probe, None).await?.0 != StatusCode::OK {
            check_deadline(started, "the CRD served")?;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let body: BodyFn = Arc::new(widget);
        let load = post_many(server.addr, &path("v1"), CLIENTS, n, body).await?;
        println!(
            "   {} widgets created in v1: {}; stored object {} bytes",
            thousands(n as u64),
            load.summary(),
            load.stored_bytes
        );
        let runs = 5;
        let (stored, stored_bytes) = time_list(&mut conn, &path("v1"), n, runs).await?;
        let (reviews0, objects0) = (hook.reviews(), hook.seen.converted.load(Ordering::Relaxed));
        let (converted, converted_bytes) = time_list(&mut conn, &path("v2"), n, runs).await?;
        let reviews = (hook.reviews() - reviews0) / (runs + 1);
        let objects = (hook.seen.converted.load(Ordering::Relaxed) - objects0) / (runs + 1);
        anyhow::ensure!(objects == n, "a v2 LIST converted {objects} of {n} objects");
        let ratio = converted.median() / stored.median();
        println!(
            "   LIST v1 (stored): median {} of {runs} ({:.1} MB); LIST v2 (converted): median {} ({:.1} MB), {reviews} ConversionReview(s) per LIST; ratio {ratio:.1}",
            fmt_ms(stored.median()),
            stored_bytes as f64 / 1e6,
            fmt_ms(converted.median()),
            converted_bytes as f64 / 1e6
        );
        self.row(
            format!(
                "conversion: LIST {} CRs, stored v1 / webhook v2",
                thousands(n as u64)
            ),
            format!(
                "{} / {} median of {runs} (ratio {ratio:.1}; {reviews} review(s) a LIST)",
                fmt_ms(stored.median()),
                fmt_ms(converted.median())
            ),
        );
        server.stop().await?;
        Ok(())
    }
}
