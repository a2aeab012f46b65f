//! The Kubernetes REST API over the kgc store.
//!
//! Real clients (kubectl, kube-rs, the official Python client) talk to `kgc serve` unchanged, so
//! this crate speaks their protocol as kube-apiserver does: discovery in both forms, an OpenAPI
//! stub sufficient for kubectl's validation, CRUD with exact `metav1.Status` errors, list paging,
//! and watches as newline-delimited JSON.
#![forbid(unsafe_code)]

mod admission;
mod admission_policy;
mod apply;
pub mod audit;
pub mod authn;
pub mod authz;
mod body;
mod consistency;
mod conversion;
mod conversion_webhook;
#[cfg(test)]
mod decoders_fuzz;
mod discovery;
mod handlers;
mod health;
pub mod inflight;
pub mod ipallocator;
pub mod limitranger;
pub mod loopback;
mod matchconditions;
pub mod owner_references;
mod pod_connect;
pub mod pod_log;
pub mod portallocator;
mod request;
pub mod resourcequota_admission;
mod resourcequota_batch;
mod reviews;
mod scale;
mod service_alloc;
pub mod serviceaccount;
pub mod serviceaccount_admission;
pub mod storage_admission;
mod strict;
mod table;
pub mod tls;
mod validation_rules;
mod watch;
mod webhook;
pub mod x509;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kgc_meta::Status;
use kgc_runtime::decisions::{Decisions, Filter};
use kgc_runtime::metrics::{Format, GaugeFn, Registry};
use kgc_store::Store;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::{Value, json};
use tokio::sync::watch as notify;

use body::ApiError;
use request::Query;

/// The Kubernetes version kgc reports. kubectl dispatchers pick their client by its minor.
pub const GIT_VERSION: &str = "v1.32.0";

/// Renders the garbage collector's graph for `/debug/controllers/garbagecollector/graph`:
/// `(uid, as_json) -> body`, `None` where this replica runs no collector.
pub type GraphHook = Arc<dyn Fn(Option<&str>, bool) -> Option<String> + Send + Sync>;

/// What can go wrong setting the server up (requests answer with a `Status` instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("TLS set-up: {0}")]
    Tls(String),
    #[error("the service-account signing key: {0}")]
    SigningKey(String),
    #[error("the token file {path}: {reason}")]
    TokenFile { path: String, reason: String },
    #[error("the audit log: {0}")]
    Audit(String),
}

/// The API server: the store plus what the HTTP layer needs.
#[derive(Clone)]
pub struct ApiServer {
    store: Store,
    shutdown: notify::Receiver<bool>,
    address: String,
    metrics: Arc<Metrics>,
    /// What `/metrics` exposes: the API server's metrics and whatever else the process
    /// registered there.
    registry: Registry,
    graph: Option<GraphHook>,
    /// The collectors' decision history (`/debug/gc/decisions`), when they run in-process.
    decisions: Option<Decisions>,
    /// Authentication (and authorization); `None` on the insecure port, where every request is
    /// served as kube-apiserver's old insecure port did.
    authn: Option<Arc<authn::Authenticator>>,
    /// RBAC; set with authentication.
    rbac: Option<Arc<authz::Rbac>>,
    /// `--max-requests-inflight` / `--max-mutating-requests-inflight`; `None`: unlimited.
    inflight: Option<Arc<inflight::Limits>>,
    /// `--audit-log-path` with `--audit-policy-file`.
    audit: Option<Arc<audit::AuditLog>>,
    /// The OwnerReferencesPermissionEnforcement admission plugin (on unless disabled).
    owner_references_enforced: bool,
    /// The ServiceAccount admission plugin (on unless disabled).
    service_account_admission: bool,
    /// DefaultStorageClass and StorageObjectInUseProtection (on unless disabled).
    storage_plugins: storage_admission::StoragePlugins,
    /// The admission webhooks' configurations, cached (see [`webhook`]).
    webhooks: Arc<webhook::Webhooks>,
    /// The CRDs' conversion webhook clients (see [`conversion_webhook`]).
    conversion_clients: Arc<conversion_webhook::Clients>,
    /// `--service-cluster-ip-range`, `--service-node-port-range` and their allocation lock.
    service_ranges: Arc<service_alloc::ServiceRanges>,
    /// The ResourceQuota admission plugin (on unless disabled).
    resource_quota_admission: bool,
    /// Its charges waiting for their quota's write (see [`resourcequota_batch`]).
    quota_batches: Arc<resourcequota_batch::Batches>,
    /// The quotas the admission last read, parsed (see [`resourcequota_batch::QuotaViews`]).
    quota_views: Arc<resourcequota_batch::QuotaViews>,
}

/// Request counters by status code, as kube-apiserver's `apiserver_request_total` counts them
/// (`code="403"`, not a class), so that one refusal can be told from another; and the store's
/// size and revision, read at scrape time.
struct Metrics {
    requests: Family<[(&'static str, u16); 1], Counter>,
}

impl Metrics {
    fn new(registry: &Registry, store: &Store) -> Self {
        let requests = Family::<[(&'static str, u16); 1], Counter>::default();
        registry.register(
            "kgc_apiserver_requests",
            "API requests served, by status code.",
            requests.clone(),
        );
        let s = store.clone();
        registry.register(
            "kgc_store_objects",
            "Objects currently stored.",
            GaugeFn::new(move || i64::try_from(s.len()).unwrap_or(i64::MAX)),
        );
        let s = store.clone();
        registry.register(
            "kgc_store_revision",
            "The latest resourceVersion.",
            GaugeFn::new(move || i64::try_from(s.revision()).unwrap_or(i64::MAX)),
        );
        Self { requests }
    }

    fn count(&self, code: StatusCode) {
        self.requests
            .get_or_create(&[("code", code.as_u16())])
            .inc();
    }
}

impl ApiServer {
    /// `address` is the `host:port` clients reach the server at (for `/api`'s
    /// `serverAddressByClientCIDRs`); flipping `shutdown` to true ends every open watch.
    pub fn new(store: Store, address: String, shutdown: notify::Receiver<bool>) -> Self {
        let registry = Registry::default();
        Self {
            metrics: Arc::new(Metrics::new(&registry, &store)),
            webhooks: Arc::new(webhook::Webhooks::new(store.clone())),
            conversion_clients: Arc::default(),
            registry,
            store,
            shutdown,
            address,
            graph: None,
            decisions: None,
            authn: None,
            rbac: None,
            inflight: None,
            audit: None,
            owner_references_enforced: true,
            service_account_admission: true,
            storage_plugins: Default::default(),
            service_ranges: Default::default(),
            resource_quota_admission: true,
            quota_batches: Arc::default(),
            quota_views: Arc::default(),
        }
    }

    /// Turns the OwnerReferencesPermissionEnforcement admission plugin off (see
    /// [`owner_references`]).
    pub fn without_owner_references_enforcement(mut self) -> Self {
        self.owner_references_enforced = false;
        self
    }

    /// Turns the ServiceAccount admission plugin off (see [`serviceaccount_admission`]).
    pub fn without_service_account_admission(mut self) -> Self {
        self.service_account_admission = false;
        self
    }

    /// Writes the audit log (see [`audit`]).
    pub fn with_audit(mut self, log: audit::AuditLog) -> Self {
        self.audit = Some(Arc::new(log));
        self
    }

    /// Answers 429 beyond `read` requests (GET) and `mutating` requests (every other method) in
    /// flight at once, as kube-apiserver's max-in-flight filter does; 0 lifts a limit.
    pub fn with_inflight_limits(mut self, read: usize, mutating: usize) -> Self {
        self.inflight = Some(Arc::new(inflight::Limits::new(read, mutating)));
        self
    }

    /// Authenticates every request (see [`authn`]): anonymous requests reach only the health
    /// and version endpoints.
    pub fn with_authentication(mut self, authn: authn::Authenticator) -> Self {
        self.authn = Some(Arc::new(authn));
        self
    }

    /// Authorizes every authenticated request with RBAC (see [`authz`]), and checks RBAC
    /// writes for privilege escalation.
    pub fn with_authorization(mut self, rbac: Arc<authz::Rbac>) -> Self {
        self.rbac = Some(rbac);
        self
    }

    /// Registers the API server's metrics in the process's `registry` and serves all of it on
    /// `/metrics` (without it, `/metrics` shows the API server's own).
    pub fn with_metrics(mut self, registry: Registry) -> Self {
        self.metrics = Arc::new(Metrics::new(&registry, &self.store));
        self.registry = registry;
        self
    }

    /// Serves the collectors' decision history on `/debug/gc/decisions`.
    pub fn with_decisions(mut self, decisions: Decisions) -> Self {
        self.decisions = Some(decisions);
        self
    }

    /// Serves the garbage collector's graph dump.
    pub fn with_graph(mut self, hook: GraphHook) -> Self {
        self.graph = Some(hook);
        self
    }

    /// The axum router serving every path.
    pub fn router(self) -> Router {
        Router::new().fallback(handle).with_state(self)
    }
}

async fn handle(State(api): State<ApiServer>, req: Request) -> Response {
    let started = std::time::Instant::now();
    let method = req.method().clone();
    // Routing, authorization and storage all see the decoded path, as upstream's do.
    let path = match request::percent_decode(req.uri().path()) {
        Ok(p) => p,
        Err(e) => {
            api.metrics.count(StatusCode::BAD_REQUEST);
            return ApiError(e).into_response();
        }
    };
    let uri = req.uri().to_string();
    let query = Query::parse(req.uri().query());
    let (parts, body) = req.into_parts();
    let loopback = parts
        .extensions
        .get::<loopback::LoopbackUser>()
        .map(|u| Arc::clone(&u.0));
    let mut authenticated = None;
    // The authorizer's decision and reason, for the audit event.
    let mut authorization = None;
    let admitted = match &api.authn {
        _ if loopback.is_some() => {
            // The loopback user is in `system:masters`: allowed, with no reason.
            if api.rbac.is_some() {
                authorization = Some(("allow", String::new()));
            }
            Ok(loopback.clone())
        }
        None => Ok(None),
        Some(authn) => admit(
            &api,
            authn,
            &method,
            &path,
            &query,
            &parts,
            &mut authenticated,
            api.audit.is_some().then_some(&mut authorization),
        )
        .map(Some),
    };
    // The audit filter runs once the request is authenticated (upstream's `WithAudit` is inside
    // `WithAuthentication`, outside impersonation and authorization).
    let incoming = Incoming {
        method: &method,
        path: &path,
        uri: &uri,
        query: &query,
        parts: &parts,
    };
    let mut audited = match &api.audit {
        // A request whose credentials fail gets one event of its own
        // (`WithFailedAuthenticationAudit`).
        Some(log) if matches!(&admitted, Err(e) if e.0.code == 401) => {
            audit_unauthenticated(log, &incoming).await;
            None
        }
        Some(log) => audit_begin(
            log,
            &incoming,
            authenticated.as_ref(),
            &admitted,
            authorization,
        )
        .await
        .map(|e| (Arc::clone(log), e)),
        None => None,
    };
    let user = match admitted {
        Ok(user) => user,
        Err(e) => {
            let resp = e.into_response();
            api.metrics.count(resp.status());
            tracing::debug!(%method, %path, status = resp.status().as_u16(), "refused");
            body::discard(body).await;
            return audit_end(audited, resp, false).await;
        }
    };
    let _permit = match &api.inflight {
        Some(_) if loopback.is_some() => None,
        Some(limits) => match limits.admit(&method, &path, &query, user.as_deref()) {
            Ok(permit) => permit,
            Err(resp) => {
                api.metrics.count(resp.status());
                body::discard(body).await;
                return audit_end(audited, resp, false).await;
            }
        },
        None => None,
    };
    let body = match &mut audited {
        Some((_, ev)) if ev.level() >= kgc_audit::Level::Request && method != Method::GET => {
            match body::read(body).await {
                Ok(bytes) => {
                    let decoded = match body::decode(&body::media_type(&parts.headers), &bytes) {
                        Ok(d) => Some(d.value),
                        // A patch: JSON of its own media type.
                        Err(_) => serde_json::from_slice(&bytes).ok(),
                    };
                    ev.request_object(decoded.filter(|v| !v.is_null()));
                    Body::from(bytes)
                }
                Err(e) => {
                    let resp = ApiError(e).into_response();
                    api.metrics.count(resp.status());
                    return audit_end(audited, resp, false).await;
                }
            }
        }
        _ => body,
    };
    let routed = authz::scope(
        api.rbac.clone(),
        authn::scope(
            user,
            route(&api, &method, &path, &query, &parts.headers, body),
        ),
    );
    let resp = match &audited {
        None => routed.await,
        Some((log, ev)) => {
            use futures::FutureExt;
            match ev
                .scope(std::panic::AssertUnwindSafe(routed).catch_unwind())
                .await
            {
                Ok(r) => r,
                Err(panic) => {
                    let (log, mut ev) = (Arc::clone(log), audited.take().map(|(_, e)| e));
                    if let Some(ev) = ev.as_mut() {
                        let message = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        ev.panicked(&message);
                        log.emit(ev, kgc_audit::Stage::Panic).await;
                    }
                    std::panic::resume_unwind(panic);
                }
            }
        }
    };
    let resp = match resp {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    api.metrics.count(resp.status());
    tracing::debug!(%method, %path, status = resp.status().as_u16(), elapsed_us = started.elapsed().as_micros() as u64, "request");
    // Upstream's `LongRunningRequestCheck`: watches, and the log, exec, attach, port-forward
    // and proxy subresources.
    let long_running = query.get("watch").is_some_and(|w| w == "true" || w == "1")
        || path.split('/').any(|p| p == "watch")
        || matches!(
            path.trim_end_matches('/').rsplit('/').next(),
            Some("log" | "exec" | "attach" | "portforward" | "proxy")
        );
    audit_end(audited, resp, long_running).await
}

/// A request as the audit filter sees it when it arrives.
struct Incoming<'a> {
    method: &'a Method,
    path: &'a str,
    uri: &'a str,
    query: &'a Query,
    parts: &'a axum::http::request::Parts,
}

/// The request's audit event, if the policy audits it, written at `RequestReceived`, with the
/// authorizer's decision and reason (filters/authorization.go: `authorization.k8s.io/decision`
/// and `authorization.k8s.io/reason` on every request it decided).
async fn audit_begin(
    log: &audit::AuditLog,
    r: &Incoming<'_>,
    authenticated: Option<&Arc<authn::UserInfo>>,
    admitted: &Result<Option<Arc<authn::UserInfo>>, ApiError>,
    authorization: Option<(&'static str, String)>,
) -> Option<audit::Event> {
    let unsecured = authn::UserInfo {
        name: "system:unsecured".into(),
        groups: vec![
            kgc_auth::SYSTEM_MASTERS.into(),
            kgc_auth::SYSTEM_AUTHENTICATED.into(),
        ],
        ..authn::UserInfo::default()
    };
    let effective = admitted.as_ref().ok().and_then(|u| u.clone());
    let user = authenticated
        .or(effective.as_ref())
        .map_or(&unsecured, |u| u.as_ref());
    let impersonated = effective
        .as_deref()
        .filter(|e| authenticated.is_some_and(|a| a.name != e.name || a.groups != e.groups));
    let ev = begin_event(log, r, user, impersonated)?;
    if let Some((decision, reason)) = authorization {
        ev.annotate("authorization.k8s.io/decision", decision);
        ev.annotate("authorization.k8s.io/reason", &reason);
    }
    log.emit(&ev, kgc_audit::Stage::RequestReceived).await;
    Some(ev)
}

/// The request's event for `user`, if the policy audits it: its audit ID (the client's
/// `Audit-Id`, else a new one) and its source IPs (`X-Forwarded-For`, then the peer).
fn begin_event(
    log: &audit::AuditLog,
    r: &Incoming<'_>,
    user: &authn::UserInfo,
    impersonated: Option<&authn::UserInfo>,
) -> Option<audit::Event> {
    let parts = r.parts;
    let audit_id = parts
        .headers
        .get("audit-id")
        .and_then(|h| h.to_str().ok())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut source_ips: Vec<String> = parts
        .headers
        .get("x-forwarded-for")
        .and_then(|h| h.to_str().ok())
        .into_iter()
        .flat_map(|h| h.split(','))
        .map(|ip| ip.trim().to_owned())
        .filter(|ip| !ip.is_empty())
        .collect();
    if let Some(peer) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<tls::Peer>>()
    {
        source_ips.push(peer.0.addr.ip().to_string());
    }
    log.begin(audit::Received {
        audit_id: &audit_id,
        method: r.method,
        path: r.path,
        uri: r.uri,
        query: r.query,
        headers: &parts.headers,
        source_ips,
        user,
        impersonated,
    })
}

/// The one event of a request whose credentials failed (filters/authn_audit.go
/// `WithFailedAuthenticationAudit`): the policy's level for a request of no user, stage
/// `ResponseStarted` only, its status the 401 and the credentials tried.
async fn audit_unauthenticated(log: &audit::AuditLog, r: &Incoming<'_>) {
    let nobody = authn::UserInfo::default();
    let Some(mut ev) = begin_event(log, r, &nobody, None) else {
        return;
    };
    let peer_cert = r
        .parts
        .extensions
        .get::<axum::extract::ConnectInfo<tls::Peer>>()
        .is_some_and(|p| p.0.cert.is_some());
    ev.unauthenticated(&authn::attempted_methods(
        &r.parts.headers,
        r.query,
        peer_cert,
    ));
    log.emit(&ev, kgc_audit::Stage::ResponseStarted).await;
}

/// Writes the event of an answered request: `ResponseComplete` with its status (and body at
/// `RequestResponse`); for a watch `ResponseStarted` now and `ResponseComplete` when its stream
/// ends or the client goes. Every audited response carries its `Audit-Id`.
async fn audit_end(
    audited: Option<(Arc<audit::AuditLog>, audit::Event)>,
    resp: Response,
    long_running: bool,
) -> Response {
    let Some((log, mut ev)) = audited else {
        return resp;
    };
    let code = resp.status().as_u16();
    let (mut parts, body) = resp.into_parts();
    if let Ok(id) = HeaderValue::from_str(ev.audit_id()) {
        parts.headers.insert("audit-id", id);
    }
    if long_running && code < 300 {
        ev.response(code, None);
        log.emit(&ev, kgc_audit::Stage::ResponseStarted).await;
        let guard = audit::CompleteOnDrop::new(log, ev);
        use futures::StreamExt;
        let stream = body.into_data_stream().map(move |chunk| {
            let _ = &guard;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let wants_body = code >= 400 || ev.level() >= kgc_audit::Level::RequestResponse;
    let body = if wants_body {
        match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => {
                ev.response(code, Some(&bytes));
                Body::from(bytes)
            }
            Err(_) => {
                ev.response(code, None);
                Body::empty()
            }
        }
    } else {
        ev.response(code, None);
        body
    };
    log.emit(&ev, kgc_audit::Stage::ResponseComplete).await;
    Response::from_parts(parts, body)
}

/// Paths anyone may read without credentials: upstream's `system:public-info-viewer` grants
/// exactly these (not `/readyz/etcd`, whose failure text names the storage's trouble).
const PUBLIC_PATHS: [&str; 5] = ["/healthz", "/livez", "/readyz", "/version", "/version/"];

/// Authenticates and authorizes a request: its user, or the 401 or 403 it gets.
/// `authenticated` is the user the credentials name, before impersonation (the audit event's
/// `user`); `authorization`, when given, the authorizer's decision and reason.
#[allow(clippy::too_many_arguments)]
fn admit(
    api: &ApiServer,
    authn: &authn::Authenticator,
    method: &Method,
    path: &str,
    query: &Query,
    parts: &axum::http::request::Parts,
    authenticated: &mut Option<Arc<authn::UserInfo>>,
    authorization: Option<&mut Option<(&'static str, String)>>,
) -> Result<Arc<authn::UserInfo>, ApiError> {
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<tls::Peer>>()
        .map(|c| &c.0);
    let user = authn.authenticate(&parts.headers, peer)?;
    match user {
        Some(u) => {
            *authenticated = Some(Arc::clone(&u));
            let u = match &api.rbac {
                Some(rbac) => {
                    let u = authz::impersonate(rbac, u, &parts.headers)?;
                    let attrs = authz::attributes(&u, method, path, query);
                    match authorization {
                        Some(out) => {
                            let (decided, reason) = rbac.check_with_reason(&attrs);
                            let decision = if decided.is_ok() { "allow" } else { "forbid" };
                            *out = Some((decision, reason));
                            decided?;
                        }
                        None => rbac.check(&attrs)?,
                    }
                    u
                }
                None => u,
            };
            Ok(u)
        }
        None => {
            if *method == Method::GET && PUBLIC_PATHS.contains(&path) {
                Ok(Arc::new(authn::UserInfo {
                    name: "system:anonymous".into(),
                    groups: vec!["system:unauthenticated".into()],
                    ..authn::UserInfo::default()
                }))
            } else {
                Err(Status::unauthorized().into())
            }
        }
    }
}

/// A JSON discovery document with an ETag, answering `If-None-Match` with 304.
fn cached_json(headers: &HeaderMap, v: &Value, content_type: Option<String>) -> Response {
    let text = v.to_string();
    let tag = format!("\"{}\"", discovery::etag(text.as_bytes()));
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| h == tag)
    {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let mut resp = body::raw_json(StatusCode::OK, text);
    if let Some(ct) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    if let Ok(t) = HeaderValue::from_str(&tag) {
        resp.headers_mut().insert(header::ETAG, t);
    }
    resp
}

async fn route(
    api: &ApiServer,
    method: &Method,
    path: &str,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // `/version/` and `/apis/` name the same documents (the Python client asks for them so).
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let get_only = |r: Response| -> Result<Response, ApiError> {
        if method == Method::GET {
            Ok(r)
        } else {
            Err(Status::method_not_allowed("only GET is supported here").into())
        }
    };
    match segments.as_slice() {
        ["version"] => get_only(body::json(StatusCode::OK, &version())),
        [endpoint @ ("healthz" | "livez" | "readyz"), rest @ ..] => {
            get_only(health::serve(api, endpoint, rest, query)?)
        }
        ["metrics"] => get_only(metrics(api, accept)),
        ["debug", "controllers", "garbagecollector", "graph"] => {
            let hook = api.graph.as_ref().ok_or_else(Status::no_such_resource)?;
            let json = query.get("format") == Some("json");
            // None: the collector runs on another replica (the holder of the lease), and
            // this one has no graph, as a standby kube-controller-manager registers no debug
            // handler.
            let body = hook(query.get("uid"), json).ok_or_else(Status::no_such_resource)?;
            let mut resp = Response::new(Body::from(body));
            let ct = if json {
                "application/json"
            } else {
                "text/vnd.graphviz"
            };
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            get_only(resp)
        }
        ["debug", "gc", "decisions"] => {
            let decisions = api
                .decisions
                .as_ref()
                .ok_or_else(Status::no_such_resource)?;
            let filter = Filter::from_query(|k| query.get(k));
            get_only(body::json(StatusCode::OK, &decisions.to_json(&filter)))
        }
        ["openapi", "v2"] => {
            let protobuf = discovery::OPENAPI_V2_PROTOBUF_ACCEPT
                .iter()
                .any(|t| accept.contains(t));
            let mut resp = Response::new(Body::from(discovery::openapi_v2(protobuf)));
            let ct = if protobuf {
                discovery::OPENAPI_V2_PROTOBUF
            } else {
                "application/json"
            };
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            get_only(resp)
        }
        ["openapi", "v3"] => {
            let root = discovery::openapi_root(&api.store.catalog());
            get_only(cached_json(headers, &root, None))
        }
        ["openapi", "v3", rest @ ..] => {
            let (group, version) = match rest {
                ["api", v] => ("", *v),
                ["apis", g, v] => (*g, *v),
                _ => return Err(Status::no_such_resource().into()),
            };
            let doc = discovery::openapi_doc(&api.store.catalog(), group, version)
                .ok_or_else(Status::no_such_resource)?;
            get_only(cached_json(headers, &doc, None))
        }
        ["api"] => {
            let doc = match discovery::wants_aggregated(accept) {
                Some(v) => (
                    discovery::aggregated(&api.store.catalog(), true, v),
                    Some(discovery::aggregated_content_type(v)),
                ),
                None => (discovery::legacy_core(&api.address), None),
            };
            get_only(cached_json(headers, &doc.0, doc.1))
        }
        ["apis"] => {
            let doc = match discovery::wants_aggregated(accept) {
                Some(v) => (
                    discovery::aggregated(&api.store.catalog(), false, v),
                    Some(discovery::aggregated_content_type(v)),
                ),
                None => (discovery::legacy_groups(&api.store.catalog()), None),
            };
            get_only(cached_json(headers, &doc.0, doc.1))
        }
        ["apis", group] => {
            let doc = discovery::legacy_group(&api.store.catalog(), group)
                .ok_or_else(Status::no_such_resource)?;
            get_only(cached_json(headers, &doc, None))
        }
        ["api", version, rest @ ..] => {
            resource(api, method, "", version, rest, query, headers, body).await
        }
        ["apis", group, version, rest @ ..] => {
            resource(api, method, group, version, rest, query, headers, body).await
        }
        _ => Err(Status::no_such_resource().into()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    api: &ApiServer,
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &Query,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    match request::parse(method, group, version, rest, query)? {
        Some(info) if reviews::handles(&info) => {
            reviews::serve(api, &info, query, headers, body).await
        }
        Some(info) => handlers::serve(api, info, query, headers, body).await,
        None => {
            let doc = discovery::legacy_resources(&api.store.catalog(), group, version)
                .ok_or_else(Status::no_such_resource)?;
            if method != Method::GET {
                return Err(Status::method_not_allowed("only GET is supported here").into());
            }
            Ok(cached_json(headers, &doc, None))
        }
    }
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "kgc",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": concat!("kgc ", env!("CARGO_PKG_VERSION")),
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

/// Every registered metric, in the text format the scraper prefers.
fn metrics(api: &ApiServer, accept: &str) -> Response {
    let format = Format::negotiate(accept);
    let mut resp = Response::new(Body::from(api.registry.encode(format)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    resp
}
