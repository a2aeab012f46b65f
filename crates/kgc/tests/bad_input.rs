//! Bad input (issue 2, "Bad input"; apiserver-semantics.md §3.4, §3.5): the matching Status
//! error, never a panic, never a lost or half-written object. After every bad request the server
//! still answers /readyz and a stored object is unchanged.

mod support;

use serde_json::{Value, json};
use support::*;

const NAME_RULE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// A server with one namespace and one stored ConfigMap `keep`, whose state every bad request
/// must leave alone.
struct Fixture {
    s: Server,
    ns: String,
    keep: Value,
}

impl Fixture {
    async fn new() -> Self {
        let s = Server::start().await;
        let ns = fresh_namespace(&s.client(), "bad").await;
        let r = s
            .raw(
                "POST",
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                Some("application/json"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "labels": {"a": "b"}}, "data": {"k": "v"}}).to_string(),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        Fixture {
            keep: r.json(),
            s,
            ns,
        }
    }

    fn cms(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.ns)
    }

    fn keep_path(&self) -> String {
        format!("{}/keep", self.cms())
    }

    /// The server is alive and `keep` is exactly as created.
    async fn intact(&self, after: &str) {
        assert!(self.s.is_ready().await, "/readyz failed after {after}");
        let r = self.s.raw("GET", &self.keep_path(), None, vec![]).await;
        assert_eq!(r.status, 200, "after {after}: {}", r.text());
        assert_eq!(
            r.json(),
            self.keep,
            "the stored object changed after {after}"
        );
    }

    /// Nothing named `name` exists.
    async fn absent(&self, name: &str) {
        let r = self
            .s
            .raw("GET", &format!("{}/{name}", self.cms()), None, vec![])
            .await;
        assert_eq!(r.status, 404, "{name} exists: {}", r.text());
    }
}

#[tokio::test]
async fn malformed_json_is_a_bad_request() {
    let f = Fixture::new().await;
    for body in [
        "{",
        "{\"metadata\": {\"name\": \"x\"",
        "not json",
        "{\"metadata\": {\"name\": \"x\"}} trailing",
        "\u{0}\u{1}\u{2}",
    ] {
        let r =
            f.s.raw("POST", &f.cms(), Some("application/json"), body)
                .await;
        let v = r.json();
        assert_eq!(r.status, 400, "POST {body:?}: {v}");
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["status"], "Failure");
        assert_eq!(v["reason"], "BadRequest", "{v}");
        assert_eq!(v["code"], 400);
        f.intact(&format!("POST {body:?}")).await;
    }
    // Not an object.
    for body in ["[]", "\"x\"", "42", "null"] {
        let r =
            f.s.raw("POST", &f.cms(), Some("application/json"), body)
                .await;
        assert_eq!(r.status, 400, "POST {body}: {}", r.text());
        assert_eq!(r.json()["reason"], "BadRequest");
    }
    // PUT and PATCH with malformed bodies leave the object alone.
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            "{\"data\":",
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    f.intact("a malformed PUT").await;
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/merge-patch+json"),
            "{\"data\":",
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    f.intact("a malformed merge patch").await;
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/json-patch+json"),
            "[{\"op\":",
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    f.intact("a malformed JSON patch").await;
    // A JSON patch whose test fails changes nothing.
    let r = f
        .s
        .raw(
            "PATCH",
            &f.keep_path(),
            Some("application/json-patch+json"),
            json!([{"op": "replace", "path": "/data/k", "value": "changed"}, {"op": "test", "path": "/data/k", "value": "nope"}]).to_string(),
        )
        .await;
    assert!(
        r.status >= 400 && r.status < 500,
        "{} {}",
        r.status,
        r.text()
    );
    f.intact("a failing JSON patch").await;
    // A malformed DeleteOptions body deletes nothing.
    let r =
        f.s.raw(
            "DELETE",
            &f.keep_path(),
            Some("application/json"),
            "{\"propagationPolicy\":",
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    f.intact("a malformed DELETE body").await;
}

#[tokio::test]
async fn yaml_bodies_valid_and_malformed() {
    let f = Fixture::new().await;
    // Valid YAML with Content-Type application/yaml creates.
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n",
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data"]["k"], "v");
    for body in [
        "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
        "metadata:\n  name: x\n bad-indent: 1\n",
        "key: \"unterminated\n",
        ":\n  - :\n    -",
    ] {
        let r =
            f.s.raw("POST", &f.cms(), Some("application/yaml"), body)
                .await;
        let v = r.json();
        assert_eq!(r.status, 400, "YAML {body:?}: {v}");
        assert_eq!(v["reason"], "BadRequest", "{v}");
        f.intact(&format!("YAML {body:?}")).await;
    }
    f.absent("x").await;
    // A malformed YAML PUT leaves the object alone.
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/yaml"),
            "metadata: {name: keep\n",
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    f.intact("a malformed YAML PUT").await;
    // An unsupported media type: 415.
    let r = f.s.raw("POST", &f.cms(), Some("text/plain"), "{}").await;
    let v = r.json();
    assert_eq!(r.status, 415, "{v}");
    assert_eq!(v["reason"], "UnsupportedMediaType");
    f.intact("a text/plain body").await;
}

#[tokio::test]
async fn wrong_api_version_or_kind_is_a_bad_request() {
    let f = Fixture::new().await;
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/json"),
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "wrongv"}})
                .to_string(),
        )
        .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "the API version in the data (apps/v1) does not match the expected API version (v1)",
    );
    f.absent("wrongv").await;
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/json"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrongk"}})
                .to_string(),
        )
        .await;
    let v = r.json();
    assert_eq!(r.status, 400, "{v}");
    assert_eq!(v["reason"], "BadRequest", "{v}");
    f.absent("wrongk").await;
    // On update too.
    let mut body = f.keep.clone();
    body["kind"] = json!("Pod");
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let mut body = f.keep.clone();
    body["apiVersion"] = json!("v2");
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    // A name in the body that differs from the URL.
    let mut body = f.keep.clone();
    body["metadata"]["name"] = json!("other");
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["reason"], "BadRequest");
    // A namespace in the body that differs from the URL.
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/json"),
            json!({"metadata": {"name": "ns-mismatch", "namespace": "default"}}).to_string(),
        )
        .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    f.absent("ns-mismatch").await;
    f.intact("wrong apiVersion/kind").await;
}

// Upstream decodes a PUT body into the typed object first (a type mismatch is a 400 from
// `transformDecodeError`, handlers/update.go), then `checkName` requires the body's name to
// equal the URL's ("the name of the object (%s) does not match the name on the URL (%s)",
// handlers/rest.go). A JSON merge patch whose result does not decode is a 422 on field `patch`
// (handlers/patch.go `applyPatchToCurrentObject`). Either way nothing is written.
#[tokio::test]
async fn update_bodies_must_name_the_object_and_be_well_typed() {
    let f = Fixture::new().await;
    let put = |body: Value| {
        let f = &f;
        async move {
            f.s.raw(
                "PUT",
                &f.keep_path(),
                Some("application/json"),
                body.to_string(),
            )
            .await
        }
    };
    let r =
        put(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {"x": "y"}}))
            .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "the name of the object () does not match the name on the URL (keep)",
    );
    f.intact("a PUT without metadata.name").await;
    let r = put(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "y"}})).await;
    assert_eq!(r.status, 400, "a PUT without metadata: {}", r.text());
    f.intact("a PUT without metadata").await;
    let r = put(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}})).await;
    assert_eq!(r.status, 400, "metadata.name of type number: {}", r.text());
    assert_eq!(r.json()["reason"], "BadRequest");
    f.intact("a PUT with a numeric name").await;
    let r = put(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": []})).await;
    assert_eq!(r.status, 400, "metadata of type array: {}", r.text());
    assert_eq!(r.json()["reason"], "BadRequest");
    f.intact("a PUT with metadata []").await;
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/merge-patch+json"),
            json!({"metadata": {"name": 7}}).to_string(),
        )
        .await;
    let v = r.json();
    assert_eq!(
        r.status, 422,
        "a merge patch setting metadata.name to a number: {v}"
    );
    assert_eq!(v["reason"], "Invalid", "{v}");
    f.intact("a merge patch with a numeric name").await;
}

#[tokio::test]
async fn unknown_resources_are_not_found() {
    let f = Fixture::new().await;
    const MSG: &str = "the server could not find the requested resource";
    for (method, path) in [
        ("GET", format!("/api/v1/namespaces/{}/widgets", f.ns)),
        ("POST", format!("/api/v1/namespaces/{}/widgets", f.ns)),
        ("GET", format!("/api/v1/namespaces/{}/widgets/w1", f.ns)),
        ("GET", "/apis/nope.example.com/v1/things".to_owned()),
        ("GET", "/apis/apps/v9/deployments".to_owned()),
        ("GET", "/apis/nope.example.com".to_owned()),
        ("GET", "/no/such/path".to_owned()),
        (
            "GET",
            format!("/api/v1/namespaces/{}/configmaps/keep/nosuchsub", f.ns),
        ),
    ] {
        let body = if method == "POST" {
            json!({"metadata": {"name": "w"}}).to_string()
        } else {
            String::new()
        };
        let ct = (method == "POST").then_some("application/json");
        let r = f.s.raw(method, &path, ct, body).await;
        assert_status(&r, 404, "NotFound", MSG);
        f.intact(&format!("{method} {path}")).await;
    }
}

#[tokio::test]
async fn bodies_over_3_mib_are_rejected_with_413() {
    let f = Fixture::new().await;
    let big = "x".repeat(3 * 1024 * 1024 + 1024);
    let body = json!({"metadata": {"name": "huge"}, "data": {"blob": big}}).to_string();
    let r =
        f.s.raw("POST", &f.cms(), Some("application/json"), body.clone())
            .await;
    let v = r.json();
    assert_eq!(r.status, 413, "{v}");
    assert_eq!(v["kind"], "Status");
    assert_eq!(v["reason"], "RequestEntityTooLarge", "{v}");
    assert_eq!(v["code"], 413);
    f.absent("huge").await;
    f.intact("a 3 MiB POST").await;
    // An oversized PUT leaves the stored object alone.
    let mut put = f.keep.clone();
    put["data"]["blob"] = json!(big);
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            put.to_string(),
        )
        .await;
    assert_eq!(r.status, 413, "{}", r.text());
    f.intact("a 3 MiB PUT").await;
    let patch = json!({"data": {"blob": big}}).to_string();
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/merge-patch+json"),
            patch,
        )
        .await;
    assert_eq!(r.status, 413, "{}", r.text());
    f.intact("a 3 MiB PATCH").await;
    // Just under the limit is accepted.
    let fits = "y".repeat(3 * 1024 * 1024 - 4096);
    let body = json!({"metadata": {"name": "fits"}, "data": {"blob": fits}}).to_string();
    let r =
        f.s.raw("POST", &f.cms(), Some("application/json"), body)
            .await;
    assert_eq!(
        r.status,
        201,
        "a body under 3 MiB: {}",
        &r.text()[..r.text().len().min(300)]
    );
}

#[tokio::test]
async fn invalid_names_and_labels_are_unprocessable() {
    let f = Fixture::new().await;
    let post = |body: Value| {
        let f = &f;
        async move {
            f.s.raw("POST", &f.cms(), Some("application/json"), body.to_string())
                .await
        }
    };

    let r = post(json!({"metadata": {"name": "Bad_Name"}})).await;
    assert_status(
        &r,
        422,
        "Invalid",
        &format!(
            r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {NAME_RULE}"#
        ),
    );
    let v = r.json();
    assert_eq!(
        v["details"]["kind"], "ConfigMap",
        "details.kind is the Kind for Invalid: {v}"
    );
    assert_eq!(v["details"]["name"], "Bad_Name");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name", "{v}");
    assert_eq!(
        v["details"]["causes"][0]["reason"], "FieldValueInvalid",
        "{v}"
    );
    f.absent("Bad_Name").await;

    let r = post(json!({"metadata": {}})).await;
    assert_status(
        &r,
        422,
        "Invalid",
        r#"ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required"#,
    );
    assert_eq!(
        r.json()["details"]["causes"][0]["reason"],
        "FieldValueRequired"
    );
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.name");

    let long = "a".repeat(254);
    let r = post(json!({"metadata": {"name": long}})).await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.name");

    // Label values and keys.
    let r = post(json!({"metadata": {"name": "badlabel", "labels": {"app": "bad value!"}}})).await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert_eq!(v["reason"], "Invalid");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.labels", "{v}");
    assert!(
        v["message"].as_str().unwrap().starts_with(r#"ConfigMap "badlabel" is invalid: metadata.labels: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"#),
        "{v}"
    );
    f.absent("badlabel").await;
    let r = post(json!({"metadata": {"name": "badkey", "labels": {"bad key": "v"}}})).await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.labels", "{v}");
    let r =
        post(json!({"metadata": {"name": "longlabel", "labels": {"app": "v".repeat(64)}}})).await;
    assert_eq!(r.status, 422, "{}", r.text());
    f.absent("longlabel").await;

    // Namespaces are DNS labels: no dots.
    let r =
        f.s.raw(
            "POST",
            "/api/v1/namespaces",
            Some("application/json"),
            json!({"metadata": {"name": "has.dot"}}).to_string(),
        )
        .await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert_eq!(v["details"]["kind"], "Namespace");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name", "{v}");

    // An update making labels invalid is refused and changes nothing.
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/merge-patch+json"),
            json!({"metadata": {"labels": {"a": "no spaces allowed"}}}).to_string(),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.labels");
    f.intact("invalid labels on update").await;

    // Invalid owner references.
    let r = post(json!({"metadata": {"name": "badowner", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keep"}]}})).await;
    let v = r.json();
    assert_eq!(r.status, 422, "{v}");
    assert!(
        v["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["field"]
                .as_str()
                .unwrap()
                .starts_with("metadata.ownerReferences")),
        "{v}"
    );
    f.absent("badowner").await;
}

#[tokio::test]
async fn create_with_resource_version_is_refused() {
    let f = Fixture::new().await;
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/json"),
            json!({"metadata": {"name": "withrv", "resourceVersion": "5"}}).to_string(),
        )
        .await;
    assert_status(
        &r,
        500,
        "",
        "resourceVersion should not be set on objects to be created",
    );
    f.absent("withrv").await;
    f.intact("a create with resourceVersion").await;
    // Through kube-rs: the same 500 without a reason. (kubectl 1.32 strips the
    // resourceVersion from a manifest before creating, so it never sees this error.)
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(f.s.client(), &f.ns);
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        typed(json!({"metadata": {"name": "withrv2", "resourceVersion": "5"}}));
    let err = api_error(api.create(&kube::api::PostParams::default(), &cm).await);
    assert_eq!(err.code, 500);
    assert_eq!(err.reason, "");
    assert_eq!(
        err.message,
        "resourceVersion should not be set on objects to be created"
    );
    f.absent("withrv2").await;
}

#[tokio::test]
async fn namespaces_have_no_deletecollection() {
    let f = Fixture::new().await;
    let r = f.s.raw("DELETE", "/api/v1/namespaces", None, vec![]).await;
    let v = r.json();
    assert_eq!(r.status, 405, "{v}");
    assert_eq!(v["reason"], "MethodNotAllowed", "{v}");
    f.intact("DELETE /api/v1/namespaces").await;
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let r =
            f.s.raw("GET", &format!("/api/v1/namespaces/{ns}"), None, vec![])
                .await;
        assert_eq!(r.status, 200);
        assert!(r.json()["metadata"]["deletionTimestamp"].is_null());
    }
}

#[tokio::test]
async fn a_burst_of_garbage_never_takes_the_server_down() {
    let f = Fixture::new().await;
    let junk = fresh_namespace(&f.s.client(), "junk").await;
    let junk_cms = format!("/api/v1/namespaces/{junk}/configmaps");
    // (path, whether DELETE may be sent: never on `keep` or its collection, which a plain DELETE
    // legitimately removes)
    let paths = [
        (f.cms(), false),
        (f.keep_path(), false),
        ("/api/v1/namespaces".to_owned(), false),
        (junk_cms.clone(), true),
        (format!("{junk_cms}/victim"), true),
        (
            "/apis/apps/v1/namespaces/default/deployments".to_owned(),
            true,
        ),
        (format!("{}?labelSelector=%ZZ", f.cms()), false),
        (format!("{}?limit=abc", f.cms()), false),
        (
            format!("{}?watch=true&resourceVersion=notanumber", f.cms()),
            false,
        ),
        (format!("{}?continue=garbage", f.cms()), false),
    ];
    let bodies = [
        "",
        "{",
        "[1,2",
        "{\"metadata\":{\"name\":7}}",
        "{\"metadata\":[]}",
        "{\"metadata\":{\"labels\":\"x\"}}",
        "{\"metadata\":{\"finalizers\":{}}}",
        "{\"metadata\":{\"name\":\"keep\",\"ownerReferences\":[{}]}}",
    ];
    for (path, deletable) in &paths {
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if method == "DELETE" && !deletable {
                continue;
            }
            for body in bodies {
                let ct = match method {
                    "PATCH" => Some("application/merge-patch+json"),
                    _ if body.is_empty() => None,
                    _ => Some("application/json"),
                };
                let r = tokio::time::timeout(
                    std::time::Duration::from_secs(10),
                    f.s.raw(method, path, ct, body),
                )
                .await
                .unwrap_or_else(|_| panic!("{method} {path} {body:?} hung"));
                assert!(
                    r.status < 500,
                    "{method} {path} {body:?}: {} {}",
                    r.status,
                    r.text()
                );
                let v: Value = serde_json::from_slice(&r.body).unwrap_or_else(|e| {
                    panic!("{method} {path} {body:?}: not JSON ({e}): {}", r.text())
                });
                if r.status >= 400 {
                    assert_eq!(v["kind"], "Status", "{method} {path} {body:?}: {v}");
                }
            }
        }
    }
    f.intact("the burst").await;
}
