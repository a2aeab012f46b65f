//! What one create costs the API server itself, without HTTP or disk: N creates of the same
//! kind through the router of an in-memory `kgc serve`, in one thread. Run under
//! `valgrind --tool=callgrind` twice (say N=200 and N=1200) and divide the difference of the
//! instruction totals by the difference of N: instructions per create, repeatable on a busy
//! machine, where timings are not. docs/BENCHMARKS.md has the commands.
//!
//! Usage: create_cost [configmaps|deployments|pods] N

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use tower::ServiceExt;

fn body(kind: &str, i: usize) -> (String, Value) {
    let name = format!("o-{i}");
    match kind {
        "deployments" => (
            "/apis/apps/v1/namespaces/default/deployments".into(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "labels": {"app": "web"}},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "name": "http"}],
                            "env": [{"name": "MODE", "value": "production"}],
                            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                "limits": {"cpu": "500m", "memory": "128Mi"}},
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}}}]}}}}),
        ),
        "pods" => (
            "/api/v1/namespaces/default/pods".into(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}}),
        ),
        _ => (
            "/api/v1/namespaces/default/configmaps".into(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"app": "kgc-bench", "tier": "backend"}},
                "data": {"APP_MODE": "production", "CACHE_TTL_SECONDS": "300",
                    "config.yaml": "log-level: info\nlisten: 0.0.0.0:8080\nworkers: 4\n"}}),
        ),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "configmaps".into());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let store = kgc_store::Store::in_memory().await.expect("a store");
        let (_stop, stopped) = tokio::sync::watch::channel(false);
        let router = kgc_apiserver::ApiServer::new(store, "127.0.0.1:1".into(), stopped).router();
        for i in 0..n {
            let (path, obj) = body(&kind, i);
            let req = Request::post(path)
                .header("content-type", "application/json")
                .body(Body::from(obj.to_string()))
                .expect("a request");
            let resp = router.clone().oneshot(req).await.expect("infallible");
            assert_eq!(resp.status(), 201, "create {i} of {kind}");
        }
    });
}
