//! TLS, authentication and RBAC of `kgc serve` as users run it (no `--insecure-http`), driven by
//! kube-rs and kubectl with real credentials: client certificates, static tokens and
//! service-account tokens.

kgc_testsupport::bind_kgc!();

use std::path::Path;

use kgc_testsupport::{Controller, KgcBinary, add_user, assert_status, raw};
use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::Value;

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
    assert_admin_is_served(&server).await;
}

/// The server's own kubeconfig (the `system:masters` client certificate) lists namespaces.
async fn assert_admin_is_served(server: &Server) {
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
    // A client certificate from another CA completes the handshake and is refused with
    // kube-apiserver's 401, for kube-rs and kubectl alike.
    let mut kc = Kubeconfig::read_from(server.kubeconfig_path()).unwrap();
    kc.auth_infos[0] = theirs.auth_infos[0].clone();
    kc.auth_infos[0].name = "kgc".into();
    assert_refused_certificate(&server, kc, "theirs").await;
    // kubectl with the right CA verifies the server (no --insecure-skip-tls-verify).
    let out = server
        .kubectl_ok(&["get", "namespaces", "-o", "name"])
        .await;
    assert!(out.contains("namespace/default"), "{out}");
}

/// A kubeconfig whose client certificate authenticates nobody gets 401 `Unauthorized` from every
/// path, and kubectl reports it as upstream's does.
async fn assert_refused_certificate(server: &Server, kc: Kubeconfig, name: &str) {
    let path = server.scratch().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, serde_json::to_string(&kc).unwrap()).unwrap();
    let c = client_of(kc).await;
    for p in ["/api/v1/namespaces", "/healthz"] {
        let r = raw(&c, "GET", p, None, Vec::new()).await;
        assert_status(&r, 401, "Unauthorized", "Unauthorized");
    }
    let (ok, _, stderr) = kubectl_with(server, &path, &["get", "namespaces"]).await;
    assert!(!ok);
    // kubectl's words for a 401: the Status message, or client-go's generic one when the 401
    // comes from discovery (a cold cache), as against kube-apiserver.
    assert!(
        stderr.contains("error: You must be logged in to the server (Unauthorized)")
            || stderr.contains(
                "error: You must be logged in to the server (the server has asked for the client \
                 to provide credentials)"
            ),
        "{stderr}"
    );
}

/// A client certificate signed by the server's CA for `kgc-admin` in `system:masters` that
/// expired years ago.
fn expired_admin_cert(server: &Server) -> Kubeconfig {
    let pki = server.data_dir().join("pki");
    let ca_cert = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    let ca_key =
        rcgen::KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key")).unwrap()).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, ca_key).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kgc-admin");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let (crt, keyf) = (
        server.scratch().join("expired.crt"),
        server.scratch().join("expired.key"),
    );
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&keyf, key.serialize_pem()).unwrap();
    kubeconfig_as(
        server,
        &serde_json::json!({"client-certificate": crt, "client-key": keyf}).to_string(),
    )
}

#[tokio::test]
async fn expired_client_certificate_gets_401() {
    let server = Server::start_secure(&[]).await;
    // The right CA, the admin's name and group, but expired.
    assert_refused_certificate(&server, expired_admin_cert(&server), "expired").await;
    assert_admin_is_served(&server).await;
}

#[tokio::test]
async fn insecure_http_is_refused_off_loopback() {
    let out = Kgc::command()
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

/// kubectl with another kubeconfig; returns (success, stdout, stderr).
async fn kubectl_with(server: &Server, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = server
        .kubectl_command(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("running kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl auth can-i VERB RESOURCE` as the given kubeconfig's user: yes or no.
async fn can_i(server: &Server, kubeconfig: &Path, args: &[&str]) -> bool {
    let mut full = vec!["auth", "can-i"];
    full.extend_from_slice(args);
    let (_, stdout, stderr) = kubectl_with(server, kubeconfig, &full).await;
    match stdout.trim() {
        "yes" => true,
        "no" => false,
        other => panic!("kubectl {full:?}: {other:?} / {stderr}"),
    }
}

/// `status.userInfo` of a SelfSubjectReview (`kubectl auth whoami`) made by `c`.
async fn whoami(c: &Client) -> Value {
    let r = raw(
        c,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some("application/json"),
        r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["status"]["userInfo"].clone()
}

async fn client_from(path: &Path) -> Client {
    client_of(Kubeconfig::read_from(path).expect("reading a kubeconfig")).await
}

#[tokio::test]
async fn namespace_user_is_forbidden_cluster_wide_and_allowed_in_its_namespace() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "team").await;
    let alice = add_user(
        &server,
        "alice",
        &["-n", &ns, "--role", "edit", "--group", "devs"],
    );
    let c = client_from(&alice).await;
    let r = raw(&c, "GET", "/api/v1/pods", None, Vec::new()).await;
    assert_status(
        &r,
        403,
        "Forbidden",
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
    );
    assert_eq!(r.json()["details"]["kind"], "pods");
    let r = raw(
        &c,
        "GET",
        &format!("/api/v1/namespaces/{ns}/pods"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = raw(
        &c,
        "GET",
        "/api/v1/namespaces/default/secrets/x",
        None,
        Vec::new(),
    )
    .await;
    assert_status(
        &r,
        403,
        "Forbidden",
        "secrets \"x\" is forbidden: User \"alice\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\"",
    );
    // kubectl prints the same sentence, and whoami shows the certificate's identity.
    let (ok, _, err) = kubectl_with(&server, &alice, &["get", "pods", "-A"]).await;
    assert!(!ok);
    assert!(
        err.contains("Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\""),
        "{err}"
    );
    let (ok, out, err) = kubectl_with(&server, &alice, &["auth", "whoami", "-o", "json"]).await;
    assert!(ok, "{err}");
    let who: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );
    // kubectl works in the namespace (discovery included).
    let (ok, _, err) = kubectl_with(
        &server,
        &alice,
        &["-n", &ns, "create", "configmap", "c", "--from-literal=a=b"],
    )
    .await;
    assert!(ok, "{err}");
}

#[tokio::test]
async fn kubectl_auth_can_i_matrix() {
    let server = Server::start_secure(&[]).await;
    let admin = server.kubeconfig_path();
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "matrix").await;
    let editor = add_user(&server, "ed", &["-n", &ns, "--role", "edit"]);
    let viewer = add_user(&server, "vi", &["-n", &ns, "--role", "view"]);
    server
        .kubectl_ok(&["-n", &ns, "create", "serviceaccount", "bot"])
        .await;
    server
        .kubectl_ok(&[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "bot-view",
            "--clusterrole=view",
            "--serviceaccount",
            &format!("{ns}:bot"),
        ])
        .await;
    let sa = format!("--as=system:serviceaccount:{ns}:bot");
    let n = format!("--namespace={ns}");
    // (kubeconfig, args, expected)
    let rows: Vec<(&Path, Vec<&str>, bool)> = vec![
        (&admin, vec!["create", "clusterrolebindings"], true),
        (&admin, vec!["delete", "nodes"], true),
        (&editor, vec!["create", "deployments.apps", &n], true),
        (&editor, vec!["delete", "pods", &n], true),
        (&editor, vec!["get", "secrets", &n], true),
        (&editor, vec!["create", "rolebindings", &n], false),
        (&editor, vec!["list", "pods", "--all-namespaces"], false),
        (&editor, vec!["create", "pods", "-n", "default"], false),
        (&viewer, vec!["list", "pods", &n], true),
        (&viewer, vec!["watch", "deployments.apps", &n], true),
        (&viewer, vec!["get", "secrets", &n], false),
        (&viewer, vec!["create", "configmaps", &n], false),
        (&admin, vec!["get", "pods", &n, &sa], true),
        (&admin, vec!["delete", "pods", &n, &sa], false),
        (&admin, vec!["list", "secrets", &n, &sa], false),
    ];
    for (kc, args, want) in &rows {
        assert_eq!(
            can_i(&server, kc, args).await,
            *want,
            "can-i {args:?} as {}",
            kc.display()
        );
    }
    // `--list` (SelfSubjectRulesReview).
    let list = |kc: &Path, extra: Vec<String>| {
        let server = &server;
        let kc = kc.to_owned();
        async move {
            let mut args: Vec<&str> = vec!["auth", "can-i", "--list"];
            args.extend(extra.iter().map(String::as_str));
            let (ok, out, err) = kubectl_with(server, &kc, &args).await;
            assert!(ok, "{args:?}: {err}");
            out
        }
    };
    let out = list(&admin, vec![]).await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("*.*") && l.contains("[*]")),
        "{out}"
    );
    let out = list(&editor, vec![n.clone()]).await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("deployments.apps ") && l.contains("create")),
        "{out}"
    );
    assert!(!out.lines().any(|l| l.starts_with("rolebindings")), "{out}");
    let out = list(&viewer, vec![n.clone()]).await;
    let pods = out
        .lines()
        .find(|l| l.starts_with("pods "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(pods.contains("[get list watch]"), "{pods}");
    assert!(!out.lines().any(|l| l.starts_with("secrets ")), "{out}");
    let out = list(&admin, vec![n.clone(), sa.clone()]).await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list watch]")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")),
        "{out}"
    );
    // Without impersonation rights `--as` is refused.
    let (ok, _, err) = kubectl_with(
        &server,
        &viewer,
        &["auth", "can-i", "get", "pods", "--as=admin"],
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("users \\\"admin\\\" is forbidden")
            || err.contains("users \"admin\" is forbidden"),
        "{err}"
    );
}

#[tokio::test]
async fn escalation_and_invalid_rbac_objects_are_refused() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "esc").await;
    let carol = add_user(&server, "carol", &["-n", &ns, "--role", "admin"]);
    // A namespace admin may bind `edit` (it holds every permission of it)...
    let (ok, _, err) = kubectl_with(
        &server,
        &carol,
        &[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "e",
            "--clusterrole=edit",
            "--user=dave",
        ],
    )
    .await;
    assert!(ok, "{err}");
    // ...but not `cluster-admin`, nor write a Role granting more than it holds.
    let (ok, _, err) = kubectl_with(
        &server,
        &carol,
        &[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "x",
            "--clusterrole=cluster-admin",
            "--user=carol",
        ],
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io \"x\" is forbidden: user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    let role = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"all","namespace":"{ns}"}},"rules":[{{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]}}"#
    );
    let c = client_from(&carol).await;
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles");
    let r = raw(&c, "POST", &path, Some("application/json"), role.clone()).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("is attempting to grant RBAC permissions not currently held")
    );
    // The admin may (system:masters).
    let r = server
        .raw("POST", &path, Some("application/json"), role)
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Invalid rules are a 422 naming the field, for everyone.
    let bad = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"bad","namespace":"{ns}"}},"rules":[{{"apiGroups":[""],"resources":["pods"]}}]}}"#
    );
    let r = server
        .raw("POST", &path, Some("application/json"), bad)
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["reason"], "Invalid");
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("rules[0].verbs"),
        "{}",
        r.text()
    );
    // A binding's roleRef cannot change.
    let r = server
        .raw(
            "PATCH",
            &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/e"),
            Some("application/merge-patch+json"),
            r#"{"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}"#,
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
}

#[tokio::test]
async fn service_account_tokens() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "sa").await;
    server
        .kubectl_ok(&["-n", &ns, "create", "serviceaccount", "bot"])
        .await;
    let token = server
        .kubectl_ok(&["-n", &ns, "create", "token", "bot"])
        .await;
    let token = token.trim();
    let bot = with_token(&server, token).await;
    let info = whoami(&bot).await;
    assert_eq!(info["username"], format!("system:serviceaccount:{ns}:bot"));
    assert_eq!(
        info["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ])
    );
    // No rights yet: 403; bound to `view`: 200, once the authorizer has seen the binding.
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    assert_eq!(raw(&bot, "GET", &pods, None, Vec::new()).await.status, 403);
    server
        .kubectl_ok(&[
            "-n",
            &ns,
            "create",
            "rolebinding",
            "bot",
            "--clusterrole=view",
            "--serviceaccount",
            &format!("{ns}:bot"),
        ])
        .await;
    kgc_testsupport::eventually(
        "the binding takes effect",
        std::time::Duration::from_secs(10),
        || async { raw(&bot, "GET", &pods, None, Vec::new()).await.status == 200 },
    )
    .await;
    // Too short a duration is refused as upstream refuses it.
    let out = server
        .kubectl(&["-n", &ns, "create", "token", "bot", "--duration=1m"])
        .await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("may not specify a duration less than 10 minutes")
    );
    // A token for a missing account is a 404.
    let out = server
        .kubectl(&["-n", &ns, "create", "token", "nobody"])
        .await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("serviceaccounts \"nobody\" not found"));

    // An expired token (signed with the server's own key) is a 401.
    let key = std::fs::read_to_string(server.data_dir().join("pki/sa.key")).unwrap();
    let der = rcgen::KeyPair::from_pem(&key).unwrap().serialize_der();
    let signer = kgc_apiserver::serviceaccount::ServiceAccountTokens::new(
        &der,
        kgc_apiserver::serviceaccount::DEFAULT_ISSUER,
    )
    .unwrap();
    let uid = bot_uid(&server, &ns).await;
    let claims = kgc_apiserver::serviceaccount::Claims {
        namespace: ns.clone(),
        name: "bot".into(),
        uid: uid.clone(),
        jti: "j".into(),
        ..Default::default()
    };
    let aud = vec![kgc_apiserver::serviceaccount::DEFAULT_ISSUER.to_owned()];
    let now = jiff::Timestamp::now().as_second();
    let expired = signer.issue(&claims, &aud, now - 7200, 3600).unwrap();
    let r = raw(
        &with_token(&server, &expired).await,
        "GET",
        &pods,
        None,
        Vec::new(),
    )
    .await;
    assert_status(&r, 401, "Unauthorized", "Unauthorized");
    // The same claims, valid now, work: the key is the server's.
    let fresh = signer.issue(&claims, &aud, now, 3600).unwrap();
    assert_eq!(
        raw(
            &with_token(&server, &fresh).await,
            "GET",
            &pods,
            None,
            Vec::new()
        )
        .await
        .status,
        200
    );
    // Deleting the account revokes its tokens, and a new account of that name is another uid.
    server.kubectl_ok(&["-n", &ns, "delete", "sa", "bot"]).await;
    let r = raw(&bot, "GET", &pods, None, Vec::new()).await;
    assert_status(&r, 401, "Unauthorized", "Unauthorized");
    server
        .kubectl_ok(&["-n", &ns, "create", "serviceaccount", "bot"])
        .await;
    let r = raw(&bot, "GET", &pods, None, Vec::new()).await;
    assert_status(&r, 401, "Unauthorized", "Unauthorized");
}

#[tokio::test]
async fn static_tokens_and_restart_reuse_the_pki() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "s3cret,tok-user,u-1,\"ops,dev\"\n").unwrap();
    let mut server = Server::start_secure(&["--token-auth-file", file.to_str().unwrap()]).await;
    let c = with_token(&server, "s3cret").await;
    let info = whoami(&c).await;
    assert_eq!(info["username"], "tok-user");
    assert_eq!(info["uid"], "u-1");
    assert_eq!(
        info["groups"],
        serde_json::json!(["ops", "dev", "system:authenticated"])
    );
    // A static token has no audience of its own: a TokenReview accepts it for the API
    // server's audience only (upstream's audagnostic.go), so a webhook checking its own
    // audience cannot be handed it.
    let api = kgc_apiserver::serviceaccount::DEFAULT_ISSUER;
    let path = "/apis/authentication.k8s.io/v1/tokenreviews";
    for (audiences, authenticated, matched) in [
        (serde_json::json!(null), true, serde_json::json!([api])),
        (
            serde_json::json!(["my-webhook"]),
            false,
            serde_json::Value::Null,
        ),
        (
            serde_json::json!(["my-webhook", api]),
            true,
            serde_json::json!([api]),
        ),
    ] {
        let review = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": "s3cret", "audiences": audiences},
        });
        let r = post_review(&server.client(), path, review).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let status = &r.json()["status"];
        assert_eq!(
            status["authenticated"] == true,
            authenticated,
            "{audiences}: {status}"
        );
        assert_eq!(status["audiences"], matched, "{audiences}: {status}");
    }
    let ca = std::fs::read_to_string(server.data_dir().join("pki/ca.crt")).unwrap();
    let alice = add_user(&server, "alice", &[]);
    server.restart().await;
    assert_eq!(
        ca,
        std::fs::read_to_string(server.data_dir().join("pki/ca.crt")).unwrap()
    );
    // A kubeconfig made before the restart still verifies the server and authenticates
    // (the port changed, so point it at the new one).
    let mut kc = Kubeconfig::read_from(&alice).unwrap();
    kc.clusters[0].cluster.as_mut().unwrap().server = Some(server.url().to_owned());
    let r = raw(&client_of(kc).await, "GET", "/api", None, Vec::new()).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// deploy/kgc-controller.yaml applied to `kgc serve`: its service account may do what the
/// collector does and nothing more, and a `kgc controller` running as it elects itself leader
/// and collects.
#[tokio::test]
async fn deploy_manifests_grant_the_collector_exactly_what_it_needs() {
    // The built-in collector is off: the one running as the service account must do the work.
    let server = Server::start_secure(&["--disable", "gc"]).await;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kgc-controller.yaml");
    server
        .kubectl_ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "gc").await;
    let admin = server.kubeconfig_path();
    let sa = "--as=system:serviceaccount:kgc-system:kgc-controller";
    let n = format!("--namespace={ns}");
    let rows: Vec<(Vec<&str>, bool)> = vec![
        (vec!["list", "configmaps", "--all-namespaces"], true),
        (vec!["watch", "deployments.apps", "--all-namespaces"], true),
        (
            vec!["list", "customresourcedefinitions.apiextensions.k8s.io"],
            true,
        ),
        (vec!["delete", "pods", &n], true),
        (vec!["patch", "replicasets.apps", &n], true),
        (vec!["create", "events", &n], true),
        (
            vec!["create", "leases.coordination.k8s.io", "-n", "kgc-system"],
            true,
        ),
        (
            vec![
                "get",
                "leases.coordination.k8s.io/kgc-controller",
                "-n",
                "kgc-system",
            ],
            true,
        ),
        (
            vec![
                "update",
                "leases.coordination.k8s.io/kgc-controller",
                "-n",
                "kgc-system",
            ],
            true,
        ),
        // Read access includes Secrets (RBAC has no metadata-only grant; see the manifest).
        (vec!["get", "secrets", &n], true),
        (
            vec![
                "update",
                "leases.coordination.k8s.io/other",
                "-n",
                "kgc-system",
            ],
            false,
        ),
        (vec!["create", "leases.coordination.k8s.io", &n], false),
        (vec!["create", "pods", &n], false),
        (vec!["create", "secrets", &n], false),
        (vec!["update", "deployments.apps", &n], false),
        (vec!["create", "serviceaccounts/token", &n], false),
        (vec!["create", "pods/exec", &n], false),
        (vec!["create", "clusterrolebindings"], false),
        (vec!["escalate", "clusterroles"], false),
        (vec!["impersonate", "users"], false),
    ];
    for (args, want) in &rows {
        let mut args = args.clone();
        args.push(sa);
        assert_eq!(can_i(&server, &admin, &args).await, *want, "can-i {args:?}");
    }

    // Run the collector with the service account's token.
    let token = server
        .kubectl_ok(&["-n", "kgc-system", "create", "token", "kgc-controller"])
        .await;
    let kc = kubeconfig_as(&server, &format!(r#"{{"token": "{}"}}"#, token.trim()));
    let kc_path = server.scratch().join("controller.kubeconfig");
    std::fs::write(&kc_path, serde_json::to_string(&kc).unwrap()).unwrap();
    let _controller = Controller::start_as(
        &server,
        &kc_path,
        &[
            "--lease-namespace",
            "kgc-system",
            "--lease-name",
            "kgc-controller",
        ],
    )
    .await;
    let cm = |name: &str, owner: Option<&str>| {
        let refs = owner
            .map(|uid| format!(r#","ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"{uid}"}}]"#))
            .unwrap_or_default();
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"{refs}}}}}"#)
    };
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let owner = server
        .raw("POST", &path, Some("application/json"), cm("owner", None))
        .await;
    assert_eq!(owner.status, 201, "{}", owner.text());
    let uid = owner.json()["metadata"]["uid"].as_str().unwrap().to_owned();
    let dep = server
        .raw(
            "POST",
            &path,
            Some("application/json"),
            cm("dep", Some(&uid)),
        )
        .await;
    assert_eq!(dep.status, 201, "{}", dep.text());
    let lease = "/apis/coordination.k8s.io/v1/namespaces/kgc-system/leases/kgc-controller";
    kgc_testsupport::eventually(
        "the controller holds the lease",
        std::time::Duration::from_secs(30),
        || async {
            let r = server.raw("GET", lease, None, Vec::new()).await;
            r.status == 200 && r.json()["spec"]["holderIdentity"].is_string()
        },
    )
    .await;
    assert_eq!(
        server
            .raw("DELETE", &format!("{path}/owner"), None, Vec::new())
            .await
            .status,
        200
    );
    kgc_testsupport::eventually(
        "the dependent is collected",
        std::time::Duration::from_secs(30),
        || async {
            server
                .raw("GET", &format!("{path}/dep"), None, Vec::new())
                .await
                .status
                == 404
        },
    )
    .await;
}

#[tokio::test]
async fn a_brought_serving_certificate_is_served_and_trusted_by_the_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let server = Server::start_secure(&[
        "--in-memory",
        "--tls-cert-file",
        cert_file.to_str().unwrap(),
        "--tls-private-key-file",
        key_file.to_str().unwrap(),
    ])
    .await;
    let kc = Kubeconfig::read_from(server.kubeconfig_path()).unwrap();
    let ca = kc.clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .certificate_authority_data
        .clone();
    assert_eq!(
        ca.as_deref(),
        Some(kgc_meta::encoding::base64(cert.pem().as_bytes()).as_str())
    );
    // The admin (a client certificate from kgc's own CA) is served over the brought certificate.
    assert_admin_is_served(&server).await;
}

/// With a tiny watch log, the authorizer's watches fall behind bursts of writes and re-list:
/// a binding deleted meanwhile must stop granting, one created meanwhile must start.
#[tokio::test]
async fn the_authorizer_stays_current_when_its_watch_falls_behind() {
    let server = Server::start_secure(&["--in-memory", "--watch-cache-size", "2"]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "lag").await;
    let rb = |name: &str, user: &str| {
        format!(
            r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{{"name":"{name}"}},"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}},"subjects":[{{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"{user}"}}]}}"#
        )
    };
    let rbs = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
    let r = server
        .raw(
            "POST",
            &rbs,
            Some("application/json"),
            rb("old", "old-user"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let allowed = |user: &'static str| {
        let server = &server;
        let ns = ns.clone();
        async move {
            let sar = format!(
                r#"{{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{{"user":"{user}","resourceAttributes":{{"namespace":"{ns}","verb":"list","resource":"pods"}}}}}}"#
            );
            let r = server
                .raw(
                    "POST",
                    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                    Some("application/json"),
                    sar,
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.text());
            r.json()["status"]["allowed"] == true
        }
    };
    kgc_testsupport::eventually(
        "old-user is allowed",
        std::time::Duration::from_secs(10),
        || allowed("old-user"),
    )
    .await;
    // A burst of writes from many clients (group-committed together), with the RBAC changes in
    // the middle of it.
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut burst = Vec::new();
    for i in 0..40 {
        let client = server.client();
        let cms = cms.clone();
        burst.push(tokio::spawn(async move {
            let cm = format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}}}}"#
            );
            kgc_testsupport::raw(&client, "POST", &cms, Some("application/json"), cm)
                .await
                .status
        }));
    }
    assert_eq!(
        server
            .raw("DELETE", &format!("{rbs}/old"), None, Vec::new())
            .await
            .status,
        200
    );
    assert_eq!(
        server
            .raw(
                "POST",
                &rbs,
                Some("application/json"),
                rb("new", "new-user")
            )
            .await
            .status,
        201
    );
    for b in burst {
        assert_eq!(b.await.unwrap(), 201);
    }
    kgc_testsupport::eventually(
        "new-user is allowed",
        std::time::Duration::from_secs(10),
        || allowed("new-user"),
    )
    .await;
    kgc_testsupport::eventually(
        "old-user is no longer allowed",
        std::time::Duration::from_secs(10),
        || async { !allowed("old-user").await },
    )
    .await;
}

/// The uid of the service account `NS/bot`.
async fn bot_uid(server: &Server, ns: &str) -> String {
    server
        .kubectl_ok(&[
            "-n",
            ns,
            "get",
            "sa",
            "bot",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await
}

/// POSTs a review as JSON with `c`.
async fn post_review(c: &Client, path: &str, body: Value) -> kgc_testsupport::RawResponse {
    raw(c, "POST", path, Some("application/json"), body.to_string()).await
}

#[tokio::test]
async fn local_subject_access_reviews() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "lsar").await;
    let alice = client_from(&add_user(&server, "alice", &["-n", &ns, "--role", "edit"])).await;
    let path = format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews");
    let review = |resource: &str, group: &str, namespace: &str| {
        serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "LocalSubjectAccessReview",
            "spec": {"user": "alice", "resourceAttributes":
                {"namespace": namespace, "verb": "create", "group": group, "resource": resource}},
        })
    };
    // The namespace editor may create pods there, not roles.
    let admin = server.client();
    kgc_testsupport::eventually(
        "alice's binding takes effect",
        std::time::Duration::from_secs(10),
        || async {
            post_review(&admin, &path, review("pods", "", &ns))
                .await
                .json()["status"]["allowed"]
                == true
        },
    )
    .await;
    let r = post_review(&admin, &path, review("pods", "", &ns)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["kind"], "LocalSubjectAccessReview");
    assert_eq!(r.json()["metadata"]["namespace"], ns.as_str());
    let r = post_review(
        &admin,
        &path,
        review("roles", "rbac.authorization.k8s.io", &ns),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"]["allowed"], false, "{}", r.text());
    // It only asks about its own namespace.
    let r = post_review(&admin, &path, review("pods", "", "default")).await;
    assert_status(
        &r,
        422,
        "Invalid",
        "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: \
         spec.resourceAttributes.namespace: Invalid value: \"default\": must match metadata.namespace",
    );
    let mut other = review("pods", "", &ns);
    other["metadata"] = serde_json::json!({"namespace": "default"});
    let r = post_review(&admin, &path, other).await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    // Editors may not ask about others (only `admin` grants localsubjectaccessreviews).
    let r = post_review(&alice, &path, review("pods", "", &ns)).await;
    assert_eq!(r.status, 403, "{}", r.text());
    // Listed in discovery, namespaced.
    let out = server
        .kubectl_ok(&[
            "api-resources",
            "--api-group=authorization.k8s.io",
            "--namespaced=true",
            "-o",
            "name",
        ])
        .await;
    assert!(
        out.contains("localsubjectaccessreviews.authorization.k8s.io"),
        "{out}"
    );
}

#[tokio::test]
async fn token_reviews() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "tr").await;
    server
        .kubectl_ok(&["-n", &ns, "create", "serviceaccount", "bot"])
        .await;
    let uid = bot_uid(&server, &ns).await;
    let token = server
        .kubectl_ok(&["-n", &ns, "create", "token", "bot"])
        .await;
    let path = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = |token: &str, audiences: &[&str]| {
        let mut r = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        });
        if !audiences.is_empty() {
            r["spec"]["audiences"] = serde_json::json!(audiences);
        }
        r
    };
    let admin = server.client();
    let r = post_review(&admin, path, review(token.trim(), &[])).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let status = &r.json()["status"];
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        format!("system:serviceaccount:{ns}:bot")
    );
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated"
        ])
    );
    assert_eq!(
        status["audiences"],
        serde_json::json!([kgc_apiserver::serviceaccount::DEFAULT_ISSUER])
    );
    // An invalid token is a review that says so, not an error.
    let r = post_review(&admin, path, review("not-a-token", &[])).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let status = &r.json()["status"];
    assert!(status["authenticated"].is_null(), "{status}");
    assert_eq!(status["user"], serde_json::json!({}));
    assert_eq!(status["error"], "invalid bearer token");
    // A token for another audience is only good for that audience.
    let vault = server
        .kubectl_ok(&["-n", &ns, "create", "token", "bot", "--audience", "vault"])
        .await;
    let r = post_review(&admin, path, review(vault.trim(), &[])).await;
    assert!(
        r.json()["status"]["authenticated"].is_null(),
        "{}",
        r.text()
    );
    assert!(
        r.json()["status"]["error"]
            .as_str()
            .unwrap()
            .contains("vault"),
        "{}",
        r.text()
    );
    let r = post_review(&admin, path, review(vault.trim(), &["other", "vault"])).await;
    assert_eq!(r.json()["status"]["authenticated"], true, "{}", r.text());
    assert_eq!(
        r.json()["status"]["audiences"],
        serde_json::json!(["vault"])
    );
    // Nor does the API server itself accept it.
    let c = with_token(&server, vault.trim()).await;
    assert_eq!(raw(&c, "GET", "/api", None, Vec::new()).await.status, 401);
    // No token is a bad request.
    let r = post_review(&admin, path, review("", &[])).await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "token is required for TokenReview in authentication",
    );
    // Reviewing tokens takes `system:auth-delegator`.
    let bot = with_token(&server, token.trim()).await;
    let r = post_review(&bot, path, review(token.trim(), &[])).await;
    assert_eq!(r.status, 403, "{}", r.text());
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            &format!("{ns}-delegator"),
            "--clusterrole=system:auth-delegator",
            "--serviceaccount",
            &format!("{ns}:bot"),
        ])
        .await;
    kgc_testsupport::eventually(
        "the delegator binding takes effect",
        std::time::Duration::from_secs(10),
        || async {
            post_review(&bot, path, review(token.trim(), &[]))
                .await
                .status
                == 201
        },
    )
    .await;
    let out = server
        .kubectl_ok(&[
            "api-resources",
            "--api-group=authentication.k8s.io",
            "-o",
            "name",
        ])
        .await;
    assert!(out.contains("tokenreviews.authentication.k8s.io"), "{out}");
}

/// A client with a token of `NS/bot` bound to the object `kind/name`.
async fn bound_client(server: &Server, ns: &str, kind: &str, name: &str) -> Client {
    let token = server
        .kubectl_ok(&[
            "-n",
            ns,
            "create",
            "token",
            "bot",
            "--bound-object-kind",
            kind,
            "--bound-object-name",
            name,
        ])
        .await;
    with_token(server, token.trim()).await
}

/// `c`'s credentials authenticate nobody: even a SelfSubjectReview is a 401.
async fn assert_unauthenticated(c: &Client) {
    let body =
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r = post_review(c, "/apis/authentication.k8s.io/v1/selfsubjectreviews", body).await;
    assert_status(&r, 401, "Unauthorized", "Unauthorized");
}

#[tokio::test]
async fn bound_service_account_tokens() {
    let server = Server::start_secure(&[]).await;
    let admin = server.client();
    let ns = kgc_testsupport::fresh_namespace(&admin, "bound").await;
    server
        .kubectl_ok(&["-n", &ns, "create", "serviceaccount", "bot"])
        .await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let create_pod = |name: &str, sa: &str| {
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "nginx"}]}});
        let (admin, pods) = (admin.clone(), pods.clone());
        async move {
            let r = post_review(&admin, &pods, pod).await;
            assert_eq!(r.status, 201, "{}", r.text());
            r.json()["metadata"]["uid"].clone()
        }
    };
    let pod_uid = create_pod("p", "bot").await;
    let c = bound_client(&server, &ns, "Pod", "p").await;
    let info = whoami(&c).await;
    assert_eq!(info["username"], format!("system:serviceaccount:{ns}:bot"));
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/pod-name"],
        serde_json::json!(["p"])
    );
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/pod-uid"],
        serde_json::json!([pod_uid])
    );
    // Deleting the pod revokes the token at once, although its signature is cached; a new pod
    // of the same name is another uid, so it stays revoked.
    server.kubectl_ok(&["-n", &ns, "delete", "pod", "p"]).await;
    assert_unauthenticated(&c).await;
    create_pod("p", "bot").await;
    assert_unauthenticated(&c).await;
    // Secrets too.
    server
        .kubectl_ok(&["-n", &ns, "create", "secret", "generic", "s"])
        .await;
    let c = bound_client(&server, &ns, "Secret", "s").await;
    assert_eq!(
        whoami(&c).await["username"],
        format!("system:serviceaccount:{ns}:bot")
    );
    server
        .kubectl_ok(&["-n", &ns, "delete", "secret", "s"])
        .await;
    assert_unauthenticated(&c).await;

    // Bad references: a pod of another account, a stale uid, a missing object, another kind.
    create_pod("q", "default").await;
    let token_path = format!("/api/v1/namespaces/{ns}/serviceaccounts/bot/token");
    let request = |bound: Value| {
        let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest", "spec": {"boundObjectRef": bound}});
        let (admin, token_path) = (admin.clone(), token_path.clone());
        async move { post_review(&admin, &token_path, body).await }
    };
    let r = request(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "name": "q"})).await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "cannot bind token for serviceaccount \"bot\" to pod running with different serviceaccount name.",
    );
    let r = request(
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "stale"}),
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("does not match the UID in record")
    );
    let r =
        request(serde_json::json!({"apiVersion": "v1", "kind": "Secret", "name": "gone"})).await;
    assert_status(&r, 404, "NotFound", "secrets \"gone\" not found");
    let r =
        request(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "x"})).await;
    assert_status(
        &r,
        422,
        "Invalid",
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.boundObjectRef.kind: \
         Unsupported value: \"ConfigMap\": supported values: \"Pod\", \"Secret\", \"Node\"",
    );
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "spec.boundObjectRef.kind"
    );
}

/// OwnerReferencesPermissionEnforcement (on by default in kgc): a namespace `edit` user cannot
/// make a ConfigMap block the deletion of its Namespace (they cannot update `namespaces/finalizers`),
/// nor point an owner reference from an object they cannot delete; a plain (non-blocking)
/// reference to an owner in their namespace is fine; an admin may do all of it; and the plugin
/// turns off with `--disable-admission-plugins`.
#[tokio::test]
async fn owner_references_need_delete_and_blocking_needs_the_owners_finalizers() {
    let server = Server::start_secure(&[]).await;
    let ns = kgc_testsupport::fresh_namespace(&server.client(), "orpe").await;
    let editor = client_from(&add_user(&server, "ed", &["-n", &ns, "--role", "edit"])).await;
    let admin = server.client();
    let ns_uid = admin_get_uid(&admin, "/api/v1/namespaces", &ns).await;
    let owner_cm = raw(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        Some("application/json"),
        serde_json::json!({"metadata": {"name": "owner"}}).to_string(),
    )
    .await;
    assert_eq!(owner_cm.status, 201, "{}", owner_cm.text());
    let owner_uid = owner_cm.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let cm = |name: &str, owner: serde_json::Value| {
        serde_json::json!({"metadata": {"name": name, "ownerReferences": [owner]}}).to_string()
    };
    let ns_ref = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "name": ns,
        "uid": ns_uid, "blockOwnerDeletion": true});
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let r = raw(
        &editor,
        "POST",
        &path,
        Some("application/json"),
        cm("hostage", ns_ref.clone()),
    )
    .await;
    assert_status(
        &r,
        403,
        "Forbidden",
        "configmaps \"hostage\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>",
    );
    // Not blocking, and the owner in their own namespace: allowed.
    let plain = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner_uid});
    let r = raw(
        &editor,
        "POST",
        &path,
        Some("application/json"),
        cm("child", plain.clone()),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Blocking an owner whose finalizers the editor may not update (edit has no
    // configmaps/finalizers): refused on update too, and the object is left as it was.
    let mut blocking = plain.clone();
    blocking["blockOwnerDeletion"] = serde_json::json!(true);
    let r = raw(
        &editor,
        "PATCH",
        &format!("{path}/child"),
        Some("application/merge-patch+json"),
        serde_json::json!({"metadata": {"ownerReferences": [blocking]}}).to_string(),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let stored = raw(&admin, "GET", &format!("{path}/child"), None, vec![])
        .await
        .json();
    assert!(
        stored["metadata"]["ownerReferences"][0]
            .get("blockOwnerDeletion")
            .is_none()
    );
    // The cluster admin may.
    let r = raw(
        &admin,
        "POST",
        &path,
        Some("application/json"),
        cm("admin-set", ns_ref.clone()),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Changing references needs `delete` on the object itself: a viewer-with-update role.
    let updater = add_user(&server, "up", &["-n", &ns, "--role", "view"]);
    raw(
        &admin,
        "POST",
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
        Some("application/json"),
        serde_json::json!({"metadata": {"name": "cm-update"}, "rules": [{"apiGroups": [""],
            "resources": ["configmaps"], "verbs": ["get", "update", "patch"]}]})
        .to_string(),
    )
    .await;
    raw(
        &admin,
        "POST",
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        Some("application/json"),
        serde_json::json!({"metadata": {"name": "cm-update"}, "subjects": [{"kind": "User",
            "name": "up", "apiGroup": "rbac.authorization.k8s.io"}], "roleRef": {"kind": "Role",
            "name": "cm-update", "apiGroup": "rbac.authorization.k8s.io"}})
        .to_string(),
    )
    .await;
    let updater = client_from(&updater).await;
    kgc_testsupport::eventually(
        "the binding to take effect",
        std::time::Duration::from_secs(10),
        || {
            let updater = updater.clone();
            let path = format!("{path}/owner");
            async move {
                let r = raw(
                    &updater,
                    "PATCH",
                    &path,
                    Some("application/merge-patch+json"),
                    r#"{"metadata":{"labels":{"touched":"yes"}}}"#,
                )
                .await;
                r.status == 200
            }
        },
    )
    .await;
    let r = raw(
        &updater,
        "PATCH",
        &format!("{path}/owner"),
        Some("application/merge-patch+json"),
        serde_json::json!({"metadata": {"ownerReferences": [plain]}}).to_string(),
    )
    .await;
    assert_status(
        &r,
        403,
        "Forbidden",
        "configmaps \"owner\" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>",
    );
    // Turned off, the editor's blocking reference is stored.
    let off =
        Server::start_secure(&["--disable-admission-plugins=OwnerReferencesPermissionEnforcement"])
            .await;
    let ns = kgc_testsupport::fresh_namespace(&off.client(), "orpe-off").await;
    let editor = client_from(&add_user(&off, "ed", &["-n", &ns, "--role", "edit"])).await;
    let ns_uid = admin_get_uid(&off.client(), "/api/v1/namespaces", &ns).await;
    let ns_ref = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "name": ns,
        "uid": ns_uid, "blockOwnerDeletion": true});
    let r = raw(
        &editor,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        Some("application/json"),
        cm("hostage", ns_ref),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

async fn admin_get_uid(admin: &Client, collection: &str, name: &str) -> String {
    let r = raw(admin, "GET", &format!("{collection}/{name}"), None, vec![]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["metadata"]["uid"].as_str().unwrap().to_owned()
}

/// `add-user -n NS` into a namespace that does not exist fails naming it, through the running
/// server and into a stopped server's store alike, and leaves no kubeconfig (nor its temporary
/// file) behind; once the namespace exists the same command writes a private, working one.
#[tokio::test]
async fn add_user_into_a_missing_namespace_fails_and_writes_no_kubeconfig() {
    use std::os::unix::fs::PermissionsExt;
    let mut server = Server::start_secure(&[]).await;
    let out = server.scratch().join("dana.kubeconfig");
    let add = |server: &Server, ns: &str| {
        let o = Kgc::command()
            .args(["serve", "add-user", "dana", "--data-dir"])
            .arg(server.data_dir())
            .args(["-n", ns, "--role", "edit", "--write-kubeconfig"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr,
        )
    };
    let scratch = server.scratch().to_owned();
    let no_file_left = |what: &str| {
        let left: Vec<_> = std::fs::read_dir(&scratch)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with("dana"))
            .collect();
        assert!(left.is_empty(), "{what}: left behind {left:?}");
    };
    let missing = "kgc: error: creating RoleBinding kgc-user:dana:edit: namespace \"nowhere\" does \
                   not exist (add-user does not create it: `kubectl create namespace nowhere` first)";
    let (ok, stdout, stderr) = add(&server, "nowhere");
    assert!(!ok, "add-user into a missing namespace succeeded");
    assert_eq!(stderr.trim_end(), missing);
    assert_eq!(stdout, "");
    no_file_left("through the server");
    assert!(
        !server
            .kubectl_ok(&["get", "namespaces", "-o", "name"])
            .await
            .contains("namespace/nowhere"),
        "add-user created the namespace"
    );

    // A stopped server's store refuses it the same way.
    server.terminate();
    let (ok, _, stderr) = add(&server, "nowhere");
    assert!(
        !ok,
        "add-user into a missing namespace of a stopped store succeeded"
    );
    // (kube-client logs the refused connection before add-user turns to the store.)
    assert_eq!(stderr.lines().last(), Some(missing), "{stderr}");
    no_file_left("into the stopped store");

    server.restart().await;
    server.kubectl_ok(&["create", "namespace", "nowhere"]).await;
    let (ok, stdout, stderr) = add(&server, "nowhere");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "", "the kubeconfig went to the file, not stdout");
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600,
        "a kubeconfig holds a private key"
    );
    let (ok, _, err) = kubectl_with(&server, &out, &["get", "pods"]).await;
    assert!(ok, "dana's kubeconfig (namespace nowhere): {err}");
}
