//! TLS, authentication and RBAC of `kgc serve` as users run it (no `--insecure-http`), driven by
//! kube-rs and kubectl with real credentials: client certificates, static tokens and
//! service-account tokens.

mod support;

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::Value;
use support::{Server, assert_status, raw};

/// The server's kubeconfig with its user replaced by `user` (a YAML `user:` mapping body).
fn kubeconfig_as(server: &Server, user_yaml: &str) -> Kubeconfig {
    let mut kc = Kubeconfig::read_from(server.kubeconfig_path()).expect("reading the kubeconfig");
    let user: Value = serde_json::from_str(user_yaml).expect("a user as JSON");
    let mut auth = serde_json::to_value(&kc.auth_infos[0]).expect("an auth info");
    auth["user"] = user;
    kc.auth_infos[0] = serde_json::from_value(auth).expect("an auth info");
    kc
}

async fn client_of(kc: Kubeconfig) -> Client {
    let opts = KubeConfigOptions {
        context: Some("kgc".into()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kc, &opts)
        .await
        .expect("loading a kubeconfig");
    Client::try_from(config).expect("building a client")
}

/// A client presenting no credentials (it still trusts the server's CA).
async fn anonymous(server: &Server) -> Client {
    client_of(kubeconfig_as(server, "{}")).await
}

async fn with_token(server: &Server, token: &str) -> Client {
    client_of(kubeconfig_as(server, &format!(r#"{{"token": "{token}"}}"#))).await
}

#[tokio::test]
async fn no_credentials_or_bad_ones_get_401_but_health_is_public() {
    let server = Server::start_secure(&[]).await;
    let anon = anonymous(&server).await;
    for path in [
        "/api/v1/namespaces",
        "/api",
        "/apis",
        "/metrics",
        "/openapi/v2",
    ] {
        let r = raw(&anon, "GET", path, None, Vec::new()).await;
        assert_status(&r, 401, "Unauthorized", "Unauthorized");
    }
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        let r = raw(&anon, "GET", path, None, Vec::new()).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // A token nobody issued, a malformed JWT, and a bad scheme.
    for token in ["not-a-token", "eyJhbGciOiJFUzI1NiJ9.e30.AAAA", "a.b.c.d"] {
        let c = with_token(&server, token).await;
        let r = raw(&c, "GET", "/api/v1/namespaces", None, Vec::new()).await;
        assert_status(&r, 401, "Unauthorized", "Unauthorized");
        // Bad credentials are refused even where anonymous requests are allowed.
        let r = raw(&c, "GET", "/healthz", None, Vec::new()).await;
        assert_eq!(r.status, 401);
    }
    // The admin's client certificate works.
    let r = server
        .raw("GET", "/api/v1/namespaces", None, Vec::new())
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn tls_verification_fails_with_a_wrong_ca() {
    let server = Server::start_secure(&[]).await;
    let other = Server::start_secure(&[]).await;
    // Trust the other server's CA: the handshake must fail before any request.
    let mut kc = Kubeconfig::read_from(server.kubeconfig_path()).unwrap();
    let theirs = Kubeconfig::read_from(other.kubeconfig_path()).unwrap();
    kc.clusters[0]
        .cluster
        .as_mut()
        .unwrap()
        .certificate_authority_data = theirs.clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .certificate_authority_data
        .clone();
    let c = client_of(kc).await;
    let err = c
        .request_text(http::Request::get("/version").body(Vec::new()).unwrap())
        .await
        .expect_err("a server certificate from another CA is refused");
    assert!(
        format!("{err:?}").to_lowercase().contains("certificate"),
        "{err:?}"
    );
    // A client certificate from another CA is refused by the server.
    let mut kc = Kubeconfig::read_from(server.kubeconfig_path()).unwrap();
    kc.auth_infos[0] = theirs.auth_infos[0].clone();
    kc.auth_infos[0].name = "kgc".into();
    let c = client_of(kc).await;
    let r = c
        .request_text(
            http::Request::get("/api/v1/namespaces")
                .body(Vec::new())
                .unwrap(),
        )
        .await;
    assert!(r.is_err(), "a certificate from another CA authenticated");
    // kubectl with the right CA verifies the server (no --insecure-skip-tls-verify).
    let out = server
        .kubectl_ok(&["get", "namespaces", "-o", "name"])
        .await;
    assert!(out.contains("namespace/default"), "{out}");
}

#[tokio::test]
async fn insecure_http_is_refused_off_loopback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kgc"))
        .args([
            "serve",
            "--in-memory",
            "--insecure-http",
            "--listen",
            "0.0.0.0:0",
        ])
        .output()
        .expect("running kgc serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused on 0.0.0.0:0"), "{err}");
}
