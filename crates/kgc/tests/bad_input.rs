//! Bad input (issue 2, "Bad input"): the matching Status
//! error, never a panic, never a lost or half-written object. After every bad request the server
//! still answers /readyz and a stored object is unchanged.

kgc_testsupport::bind_kgc!();

use kgc_testsupport::*;
use serde_json::{Value, json};

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
    // Just under the limit is accepted (in a Pod: a ConfigMap may hold 1 MiB only).
    let fits = "y".repeat(3 * 1024 * 1024 - 4096);
    let body = json!({"metadata": {"name": "fits"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "args": [fits]}]}})
    .to_string();
    let pods = format!("/api/v1/namespaces/{}/pods", f.ns);
    let r = f.s.raw("POST", &pods, Some("application/json"), body).await;
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

/// The server's resident memory, from `/proc` (Linux).
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reading /proc");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib * 1024
}

#[tokio::test]
async fn duplicate_fields_follow_field_validation() {
    let f = Fixture::new().await;
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"first","name":"{name}"}},"data":{{"k":"1","k":"2"}}}}"#
        )
    };
    // Strict: refused, naming every repeated field.
    let r =
        f.s.raw(
            "POST",
            &format!("{}?fieldValidation=Strict", f.cms()),
            Some("application/json"),
            body("strict"),
        )
        .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", duplicate field \"data.k\"",
    );
    f.absent("strict").await;
    f.absent("first").await;
    // Warn (the default): stored, the last value winning, with one warning per repetition.
    let r =
        f.s.raw("POST", &f.cms(), Some("application/json"), body("warned"))
            .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data"]["k"], "2");
    let warnings: Vec<String> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        warnings,
        [
            "299 - \"duplicate field \\\"metadata.name\\\"\"",
            "299 - \"duplicate field \\\"data.k\\\"\""
        ]
    );
    // Ignore: stored, silently.
    let r =
        f.s.raw(
            "POST",
            &format!("{}?fieldValidation=Ignore", f.cms()),
            Some("application/json"),
            body("ignored"),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.header("warning").is_none());
    // A merge patch repeating a key under Strict: 422 on `patch`, as upstream's patch handler.
    let r =
        f.s.raw(
            "PATCH",
            &format!("{}?fieldValidation=Strict", f.keep_path()),
            Some("application/merge-patch+json"),
            r#"{"data":{"k":"a","k":"b"}}"#,
        )
        .await;
    let v = r.json();
    assert_eq!((r.status, &v["reason"]), (422, &json!("Invalid")), "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .ends_with(": strict decoding error: duplicate field \"data.k\""),
        "{v}"
    );
    f.intact("a strict patch with a repeated key").await;
    // The same in YAML.
    let r =
        f.s.raw(
            "POST",
            &format!("{}?fieldValidation=Strict", f.cms()),
            Some("application/yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-dup\ndata:\n  a: '1'\n  a: '2'\n",
        )
        .await;
    assert_status(
        &r,
        400,
        "BadRequest",
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"data.a\"",
    );
}

/// A 2 KB JSON patch of twenty `copy` operations would build a ConfigMap of 2^20 times its size;
/// it is refused before it allocates, and the server does not grow.
#[tokio::test]
async fn json_patch_copy_chain_is_refused_before_it_allocates() {
    let f = Fixture::new().await;
    let seed = json!({"op": "add", "path": "/data/x", "value": "x".repeat(1500)});
    let mut ops = vec![seed];
    for i in 0..20 {
        ops.push(json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}));
    }
    let before = rss_bytes(f.s.pid());
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/json-patch+json"),
            Value::Array(ops).to_string(),
        )
        .await;
    assert_status(
        &r,
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    );
    let grown = rss_bytes(f.s.pid()).saturating_sub(before);
    assert!(grown < 64 << 20, "the server grew by {grown} bytes");
    f.intact("a copy chain").await;
}

#[tokio::test]
async fn json_patch_with_too_many_operations_is_too_large() {
    let f = Fixture::new().await;
    let op = json!({"op": "test", "path": "/data/k", "value": "v"});
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/json-patch+json"),
            Value::Array(vec![op; 10_001]).to_string(),
        )
        .await;
    assert_status(
        &r,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
    );
    f.intact("10,001 operations").await;
}

/// A patch cannot build an object larger than a request may carry either: two patches of 1.5 MiB
/// each would otherwise make a 3 MiB Pod.
#[tokio::test]
async fn patch_results_are_bounded_by_the_request_limit() {
    let f = Fixture::new().await;
    let path = format!("/api/v1/namespaces/{}/pods", f.ns);
    let half = "h".repeat(1024 * 1024 + 512 * 1024);
    let container = |arg: &str| json!({"name": "c", "image": "busybox", "args": [arg]});
    let body = json!({"metadata": {"name": "grow"}, "spec": {"containers": [container(&half)]}});
    let r =
        f.s.raw("POST", &path, Some("application/json"), body.to_string())
            .await;
    assert_eq!(r.status, 201, "{}", &r.text()[..r.text().len().min(300)]);
    let patch = json!({"metadata": {"annotations": {"grown": "yes"}},
        "spec": {"containers": [{"name": "d", "image": "busybox", "args": [half]}]}});
    let r =
        f.s.raw(
            "PATCH",
            &format!("{path}/grow"),
            Some("application/strategic-merge-patch+json"),
            patch.to_string(),
        )
        .await;
    assert_status(
        &r,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    );
    let r = f.s.raw("GET", &format!("{path}/grow"), None, vec![]).await;
    assert!(
        r.json()["metadata"].get("annotations").is_none(),
        "the refused patch was stored"
    );
}

#[tokio::test]
async fn patch_with_a_protobuf_body_is_unsupported_media_type() {
    let f = Fixture::new().await;
    let r =
        f.s.raw(
            "PATCH",
            &f.keep_path(),
            Some("application/vnd.kubernetes.protobuf"),
            b"k8s\0\x0a\x00".to_vec(),
        )
        .await;
    assert_status(
        &r,
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json",
    );
    f.intact("a protobuf patch").await;
}

#[tokio::test]
async fn generate_name_prefixes_are_cut_to_58_characters() {
    let f = Fixture::new().await;
    let prefix = "g".repeat(100);
    let body = json!({"metadata": {"generateName": prefix}, "data": {}});
    let r =
        f.s.raw("POST", &f.cms(), Some("application/json"), body.to_string())
            .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let name = r.json()["metadata"]["name"].as_str().unwrap().to_owned();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"g".repeat(58)), "{name}");
}

/// Upstream's string parser reads `x in ()` as `x in ("")`: it selects objects whose label `x`
/// is present and empty.
#[tokio::test]
async fn label_selector_in_an_empty_set_means_the_empty_value() {
    let f = Fixture::new().await;
    for (name, labels) in [
        ("empty", json!({"x": ""})),
        ("set", json!({"x": "1"})),
        ("none", json!({})),
    ] {
        let body = json!({"metadata": {"name": name, "labels": labels}});
        let r =
            f.s.raw("POST", &f.cms(), Some("application/json"), body.to_string())
                .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let names = |r: RawResponse| -> Vec<String> {
        let v = r.json();
        v["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |sel: &str| format!("{}?labelSelector={}", f.cms(), sel);
    let r = f.s.raw("GET", &list("x%20in%20()"), None, vec![]).await;
    assert_eq!(names(r), ["empty"]);
    let r = f.s.raw("GET", &list("x%20notin%20()"), None, vec![]).await;
    assert_eq!(names(r), ["keep", "none", "set"]);
}

/// `system%3Akgc-colon` names `system:basic-user`: the path is decoded once, before routing,
/// authorization and storage; an escape that does not decode is a 400.
#[tokio::test]
async fn percent_encoded_paths_are_decoded_once() {
    let s = Server::start().await;
    let base = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role = json!({"metadata": {"name": "system:kgc-colon"}, "rules": []});
    let r = s
        .raw("POST", base, Some("application/json"), role.to_string())
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s
        .raw("GET", &format!("{base}/system%3Akgc-colon"), None, vec![])
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["metadata"]["name"], "system:kgc-colon");
    let r = s
        .raw("GET", &format!("{base}/system%253Akgc-colon"), None, vec![])
        .await;
    assert_eq!(r.status, 404, "decoded twice: {}", r.text());
    let r = s
        .raw("DELETE", &format!("{base}/system%3Anobody"), None, vec![])
        .await;
    assert_status(
        &r,
        404,
        "NotFound",
        "clusterroles.rbac.authorization.k8s.io \"system:nobody\" not found",
    );
    let (code, _) = http_get(&format!("{}{base}/a%zz", s.url()));
    assert_eq!(code, 400);
}

/// One request over its own connection (`Connection: close`): the status line and headers, and
/// the body. Plain HTTP, so that no client retries a 429 behind the test's back.
async fn send(addr: &str, method: &str, path: &str, body: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).await.unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

/// Beyond `--max-mutating-requests-inflight` writes in flight, a write is refused at once with
/// upstream's 429; reads have their own budget, and the place comes back when the held request
/// is answered.
#[tokio::test]
async fn writes_beyond_the_inflight_limit_are_told_to_retry() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start_with(&["--in-memory", "--max-mutating-requests-inflight=1"]).await;
    let ns = fresh_namespace(&s.client(), "inflight").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let addr = s.url().trim_start_matches("http://").to_owned();
    // A POST whose body has not arrived yet holds the only place.
    let body = json!({"metadata": {"name": "held"}}).to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let hold = || async {
        let mut held = tokio::net::TcpStream::connect(&addr).await.unwrap();
        held.write_all(head.as_bytes()).await.unwrap();
        held
    };
    let mut held = hold().await;
    let second = json!({"metadata": {"name": "second"}}).to_string();
    let mut refused = None;
    // Poll with a deadline, not a count: on a loaded host the held request can take longer than
    // a hundred quick tries to reach the handler.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let (head, text) = send(&addr, "POST", &path, &second).await;
        if head.starts_with("HTTP/1.1 429") {
            refused = Some((head, text));
            break;
        }
        // The held request had not reached the handler yet: undo and try again.
        assert!(head.starts_with("HTTP/1.1 201"), "{head}\n{text}");
        let (head, text) = send(&addr, "DELETE", &format!("{path}/second"), "").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{text}");
        // Or it arrived while `second` had the place, and was itself refused: answered (once the
        // server has waited a second for its body), it holds nothing; hold the place anew.
        let answered = tokio::time::timeout(
            std::time::Duration::from_millis(1),
            held.peek(&mut [0u8; 1]),
        )
        .await;
        if answered.is_ok() {
            held = hold().await;
        }
    }
    let (head, text) = refused.expect("a second write while the first is held is refused");
    assert!(
        head.to_ascii_lowercase().contains("\r\nretry-after: 1"),
        "{head}"
    );
    assert_eq!(text, "Too many requests, please try again later.\n");
    // Reads are not writes.
    let (head, _) = send(&addr, "GET", &path, "").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // Answering the held request frees the place.
    held.write_all(body.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 12];
    held.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 201");
    let (head, text) = send(&addr, "POST", &path, &second).await;
    assert!(head.starts_with("HTTP/1.1 201"), "{head}\n{text}");
}

/// Annotations may hold 256 KiB in all (keys and values), as upstream's
/// `ValidateAnnotationsSize`; a write just under the limit is stored.
#[tokio::test]
async fn annotations_over_256_kib_are_unprocessable() {
    let f = Fixture::new().await;
    let limit = 256 * 1024;
    let over = json!({"metadata": {"name": "fat", "annotations": {"a": "x".repeat(limit)}}});
    let r =
        f.s.raw("POST", &f.cms(), Some("application/json"), over.to_string())
            .await;
    assert_status(
        &r,
        422,
        "Invalid",
        "ConfigMap \"fat\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes",
    );
    f.absent("fat").await;
    let under = json!({"metadata": {"name": "fit", "annotations": {"a": "x".repeat(limit - 1)}}});
    let r =
        f.s.raw(
            "POST",
            &f.cms(),
            Some("application/json"),
            under.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", &r.text()[..r.text().len().min(300)]);
    // The same limit on update.
    let mut fat = f.keep.clone();
    fat["metadata"]["annotations"] = json!({"b": "y".repeat(limit)});
    let r =
        f.s.raw(
            "PUT",
            &f.keep_path(),
            Some("application/json"),
            fat.to_string(),
        )
        .await;
    assert_eq!(r.status, 422, "{}", &r.text()[..r.text().len().min(300)]);
    f.intact("an oversized annotation update").await;
}

/// `fieldManager` is at most 128 bytes of printable characters on every write, refused with
/// kube-apiserver's 422 before the body is read; the stored object is left alone.
#[tokio::test]
async fn field_managers_must_be_short_and_printable() {
    let f = Fixture::new().await;
    let long = "m".repeat(129);
    let cases = [
        (
            "POST",
            f.cms(),
            "application/json",
            "CreateOptions",
            json!({"metadata": {"name": "managed"}}).to_string(),
        ),
        (
            "PUT",
            f.keep_path(),
            "application/json",
            "UpdateOptions",
            f.keep.to_string(),
        ),
        (
            "PATCH",
            f.keep_path(),
            "application/merge-patch+json",
            "PatchOptions",
            json!({"data": {"k": "changed"}}).to_string(),
        ),
        (
            "PATCH",
            f.keep_path(),
            "application/apply-patch+yaml",
            "PatchOptions",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"},
                   "data": {"k": "changed"}})
            .to_string(),
        ),
    ];
    for (method, path, media, options, body) in &cases {
        let r =
            f.s.raw(
                method,
                &format!("{path}?fieldManager={long}"),
                Some(media),
                body.clone(),
            )
            .await;
        let v = r.json();
        assert_eq!(r.status, 422, "{method} {media}: {v}");
        assert_eq!(v["reason"], "Invalid");
        assert_eq!(
            v["message"],
            format!(
                "{options}.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more \
                 than 128 bytes"
            )
        );
        let r =
            f.s.raw(
                method,
                &format!("{path}?fieldManager=a%01b"),
                Some(media),
                body.clone(),
            )
            .await;
        assert_eq!(r.status, 422, "{method} {media}: {}", r.text());
        assert_eq!(
            r.json()["message"],
            format!(
                "{options}.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \
                 \"a\\x01b\": invalid character U+0001 (at position 1)"
            )
        );
        f.intact(&format!("{method} {media} with a bad fieldManager"))
            .await;
    }
    f.absent("managed").await;
    let r =
        f.s.raw(
            "POST",
            &format!("{}?fieldManager={}", f.cms(), "m".repeat(128)),
            Some("application/json"),
            json!({"metadata": {"name": "managed"}}).to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "128 bytes are allowed: {}", r.text());
}

/// A body over 3 MiB is answered 413 with upstream's Status whatever its size, with or
/// without a Content-Length, and the client still sending it reads the answer: the connection
/// is not reset under it.
#[tokio::test]
async fn oversized_bodies_are_answered_413_whatever_their_size() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let f = Fixture::new().await;
    let addr = f.s.url().trim_start_matches("http://").to_owned();
    for mib in [4usize, 8, 64] {
        for chunked in [false, true] {
            let size = mib << 20;
            let conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let (mut rd, mut wr) = conn.into_split();
            let framing = if chunked {
                "Transfer-Encoding: chunked".to_owned()
            } else {
                format!("Content-Length: {size}")
            };
            let head = format!(
                "POST {} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 {framing}\r\nConnection: close\r\n\r\n",
                f.cms()
            );
            let writer = tokio::spawn(async move {
                wr.write_all(head.as_bytes()).await?;
                let piece = vec![b' '; 64 << 10];
                for _ in 0..size / piece.len() {
                    if chunked {
                        wr.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                            .await?;
                        wr.write_all(&piece).await?;
                        wr.write_all(b"\r\n").await?;
                    } else {
                        wr.write_all(&piece).await?;
                    }
                }
                if chunked {
                    wr.write_all(b"0\r\n\r\n").await?;
                }
                Ok::<_, std::io::Error>(())
            });
            let mut text = Vec::new();
            let read = rd.read_to_end(&mut text).await;
            let text = String::from_utf8_lossy(&text);
            assert!(
                read.is_ok(),
                "{mib} MiB (chunked: {chunked}): {read:?}: {text}"
            );
            assert!(
                text.starts_with("HTTP/1.1 413"),
                "{mib} MiB (chunked: {chunked}): {text}"
            );
            assert!(
                text.contains("\"message\":\"Request entity too large: limit is 3145728\""),
                "{text}"
            );
            let _ = writer.await;
        }
    }
    f.intact("oversized bodies").await;
}
