//! Calling a webhook: `clientConfig` (`url`, or `service` resolved to an address), TLS verified
//! against `caBundle`, one POST with a deadline (kubernetes/apiserver `pkg/util/webhook`
//! `client.go`, `pkg/admission/plugin/webhook/config` and the service resolver).
//!
//! A webhook may be any HTTPS server the configuration names, loopback included (this is a
//! single-machine cluster); nothing else is reachable: no proxy, no redirects, no scheme but
//! `https`, and the certificate is always verified (against `caBundle` only: with none, nothing
//! verifies and the call fails saying so).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use kgc_meta::{GroupResource, LabelSelector};
use kgc_store::{ListOptions, Store};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

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

/// The HTTP client of the last call, and what it was built for.
struct CachedClient {
    /// The address a Service resolved to; `None` for a `url`.
    addr: Option<SocketAddr>,
    timeout: Duration,
    /// The URL called, the deadline in its query, as written (errors quote it) and parsed.
    text: Arc<str>,
    url: reqwest::Url,
    client: reqwest::Client,
}

/// A webhook's `clientConfig`, with its TLS configuration built once.
#[derive(Clone)]
pub(crate) struct ClientConfig {
    endpoint: Result<Endpoint, String>,
    tls: Result<Arc<rustls::ClientConfig>, String>,
    /// The HTTP client of the last call: its pool keeps the connection, so a webhook called on
    /// every write costs a round trip, not a TCP and TLS handshake each time, as Go's transport
    /// reuses connections upstream; its URL is kept parsed with it.
    client: Arc<Mutex<Option<CachedClient>>>,
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
            client: Arc::default(),
        }
    }

    /// POSTs `body` and returns the answer's body; the error is the reason, worded as Go's
    /// HTTP client words it (`Post "<url>": <cause>`).
    pub async fn post(
        &self,
        store: &Store,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let endpoint = self.endpoint.as_ref().map_err(Clone::clone)?;
        let tls = self.tls.as_ref().map_err(Clone::clone)?;
        let (url, addr) = match endpoint {
            Endpoint::Url(url) => (url.clone(), None),
            Endpoint::Service {
                namespace,
                name,
                port,
                path,
            } => {
                // The certificate must name `<service>.<namespace>.svc`, as upstream's service
                // resolver dials it; the connection goes to the address the Service resolves to.
                let host = format!("{name}.{namespace}.svc");
                let addr = resolve_service(store, namespace, name, *port).await?;
                (format!("https://{host}:{port}{path}"), Some((host, addr)))
            }
        };
        let (client, url, text) = self.client(tls, url, addr, timeout)?;
        let resp = client
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("Post {text:?}: {}", cause(&e)))?;
        let code = resp.status().as_u16();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| format!("Post {text:?}: {}", cause(&e)))?;
        if !(200..300).contains(&code) {
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| {
                    format!(
                        "the server responded with the status code {code} but did not return more information"
                    )
                });
            return Err(message);
        }
        Ok(bytes.to_vec())
    }
}

impl ClientConfig {
    /// The client, URL and URL as written for a call of `url` (its `addr`, a Service's
    /// `(host, address)`) with `timeout`: the last ones if built for the same address and
    /// timeout, else new ones kept for the next call. The error is the reason, as [`Self::post`]
    /// words it.
    fn client(
        &self,
        tls: &Arc<rustls::ClientConfig>,
        url: String,
        addr: Option<(String, SocketAddr)>,
        timeout: Duration,
    ) -> Result<(reqwest::Client, reqwest::Url, Arc<str>), String> {
        let key = addr.as_ref().map(|(_, a)| *a);
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cached.as_ref()
            && c.addr == key
            && c.timeout == timeout
        {
            return Ok((c.client.clone(), c.url.clone(), Arc::clone(&c.text)));
        }
        // Upstream tells the webhook its deadline in the query.
        let sep = if url.contains('?') { '&' } else { '?' };
        let text: Arc<str> = format!("{url}{sep}timeout={}s", timeout.as_secs()).into();
        let parsed = reqwest::Url::parse(&text).map_err(|e| format!("Post {text:?}: {e}"))?;
        // Another deadline alone keeps the client, and with it the open connection.
        let client = match cached.take() {
            Some(c) if c.addr == key => c.client,
            _ => {
                let mut builder = reqwest::Client::builder()
                    .tls_backend_preconfigured((**tls).clone())
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none());
                if let Some((host, addr)) = &addr {
                    builder = builder.resolve(host, *addr);
                }
                builder
                    .build()
                    .map_err(|e| format!("Post {text:?}: {}", cause(&e)))?
            }
        };
        *cached = Some(CachedClient {
            addr: key,
            timeout,
            text: Arc::clone(&text),
            url: parsed.clone(),
            client: client.clone(),
        });
        Ok((client, parsed, text))
    }
}

/// The innermost cause of a failed call, as Go's client reports it (a timeout is the context's
/// deadline).
fn cause(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "context deadline exceeded".into();
    }
    let mut inner: &dyn std::error::Error = e;
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
