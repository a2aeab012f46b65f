//! The admin endpoints of the commands that run without an API server of their own
//! (`kgc controller`, `kgc node gc --every`), as kube-controller-manager serves them
//! (`kubernetes/kubernetes cmd/kube-controller-manager/app/controllermanager.go`): `/metrics`
//! (the process's one registry), `/healthz` and `/livez` (the process answers), `/readyz` (the
//! command's own check) and the command's `/debug/...` handlers. `kgc serve` answers these on
//! its API server instead.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use kgc_runtime::metrics::{Format, Registry};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A readiness check: `Ok` with the body of a 200, or `Err` with the reason of a 503.
type Check =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync>;

/// The admin server of one process.
pub(crate) struct Admin {
    registry: Registry,
    ready: Check,
    debug: Router,
}

impl Admin {
    /// Serves `registry` on `/metrics`, and `ready`'s verdict on `/readyz`.
    pub(crate) fn new<F>(registry: Registry, ready: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<String, String>> + Send + 'static,
    {
        Self {
            registry,
            ready: Arc::new(move || Box::pin(ready())),
            debug: Router::new(),
        }
    }

    /// Serves `handler` at `/debug/{path}`.
    pub(crate) fn debug(mut self, path: &str, handler: MethodRouter) -> Self {
        self.debug = self.debug.route(&format!("/debug/{path}"), handler);
        self
    }

    /// Serves on `listener` until `stop` turns true.
    pub(crate) async fn serve(
        self,
        listener: TcpListener,
        mut stop: watch::Receiver<bool>,
    ) -> std::io::Result<()> {
        let Admin {
            registry,
            ready,
            debug,
        } = self;
        let app = debug
            .route("/healthz", get(|| async { text(StatusCode::OK, "ok") }))
            .route("/livez", get(|| async { text(StatusCode::OK, "ok") }))
            .route(
                "/readyz",
                get(move || {
                    let check = ready();
                    async move {
                        match check.await {
                            Ok(body) => text(StatusCode::OK, body),
                            Err(reason) => text(StatusCode::SERVICE_UNAVAILABLE, reason),
                        }
                    }
                }),
            )
            .route(
                "/metrics",
                get(move |headers: HeaderMap| async move { metrics(&registry, &headers) }),
            );
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
    }
}

/// A plain-text answer.
pub(crate) fn text(code: StatusCode, body: impl Into<String>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

/// The registry in the text format the scraper prefers.
fn metrics(registry: &Registry, headers: &HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let format = Format::negotiate(accept);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        registry.encode(format),
    )
        .into_response()
}
