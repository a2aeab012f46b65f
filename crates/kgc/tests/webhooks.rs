//! Admission webhooks (issue 32 item 4) against one spawned `kgc serve`: a webhook server
//! written here (axum over rustls, its CA made with rcgen) answers AdmissionReviews, and kubectl
//! sees what kube-apiserver's users see. Each scenario has its own namespace, and its webhook
//! configuration selects that namespace alone, so the scenarios do not meet.

kgc_testsupport::bind_kgc!();

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kgc_testsupport::*;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// What the test's webhook server saw: (path, request) for each review.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// The webhook server: `https://127.0.0.1:<port>/<behaviour>`, and its CA for `caBundle`.
struct Webhook {
    base: String,
    ca_bundle: String,
    seen: Seen,
}

fn allow(req: &Value) -> Value {
    json!({"uid": req["uid"], "allowed": true})
}

/// The client the `race` webhook writes with, once, while it judges an update: set by
/// [`update_raced_by_another_writer`].
static RACER: Mutex<Option<kube::Client>> = Mutex::new(None);

/// The `race` webhook: on the first update it judges after [`RACER`] is set, it writes the
/// object itself (`data.raced: "yes"`, through the API, which calls it again for that write)
/// before it allows, so the update it judges is stale by the time it answers.
async fn race(req: &Value) {
    let racer = RACER.lock().unwrap().take();
    let (Some(client), Some(ns), Some(name)) =
        (racer, req["namespace"].as_str(), req["name"].as_str())
    else {
        return;
    };
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, ns);
    let patch = json!({"data": {"raced": "yes"}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the concurrent write");
}

/// Answers a review as `behaviour` says.
async fn review(
    State(seen): State<Seen>,
    Path(behaviour): Path<String>,
    Json(review): Json<Value>,
) -> Json<Value> {
    let req = review["request"].clone();
    seen.lock().unwrap().push((behaviour.clone(), req.clone()));
    let name = req["name"].as_str().unwrap_or_default().to_owned();
    let response = match behaviour.as_str() {
        "deny-bad" if name.starts_with("bad") => json!({"uid": req["uid"], "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": format!("configmap {name} is not allowed")}}),
        "warn" => {
            json!({"uid": req["uid"], "allowed": true, "warnings": ["be careful with configmaps"]})
        }
        "label" => {
            let patch = if req["object"]["metadata"]["labels"].is_object() {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            json!({"uid": req["uid"], "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
        }
        "break" => {
            let patch = json!([{"op": "add", "path": "/data", "value": 42}]);
            json!({"uid": req["uid"], "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
        }
        "slow" => {
            tokio::time::sleep(Duration::from_secs(8)).await;
            allow(&req)
        }
        "deny-big-scale" if req["object"]["spec"]["replicas"].as_i64() > Some(5) => {
            json!({"uid": req["uid"], "allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": "at most 5 replicas"}})
        }
        "scale-at-least-two" if req["object"]["spec"]["replicas"].as_i64() < Some(2) => {
            let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 2}]);
            json!({"uid": req["uid"], "allowed": true, "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
        }
        "deny-keep"
            if req["oldObject"]["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("keep")) =>
        {
            json!({"uid": req["uid"], "allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": "keep-* stays"}})
        }
        "annotate" => json!({"uid": req["uid"], "allowed": true,
            "auditAnnotations": {"checked": format!("configmap {name}")}}),
        "race" if req["operation"] == "UPDATE" => {
            race(&req).await;
            allow(&req)
        }
        "garbage" => return Json(json!({"not": "a review"})),
        _ => allow(&req),
    };
    Json(
        json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}),
    )
}

/// Converts Widgets between v1 (`spec.color`) and v2 (`spec.colour`); `fail` refuses.
async fn convert(Path(behaviour): Path<String>, Json(review): Json<Value>) -> Json<Value> {
    let req = &review["request"];
    let desired = req["desiredAPIVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let result = if behaviour == "fail" {
        json!({"status": "Failure", "message": "conversion is broken"})
    } else {
        json!({"status": "Success"})
    };
    let converted: Vec<Value> = req["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let mut o = o.clone();
            let spec = o["spec"].as_object_mut().expect("a spec");
            let (from, to) = if desired.ends_with("/v2") {
                ("color", "colour")
            } else {
                ("colour", "color")
            };
            if let Some(v) = spec.remove(from) {
                spec.insert(to.into(), v);
            }
            o["apiVersion"] = json!(desired);
            o
        })
        .collect();
    Json(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": req["uid"], "convertedObjects": converted, "result": result}}),
    )
}

/// Starts the webhook server with a fresh CA and a certificate for 127.0.0.1.
async fn webhook_server() -> Webhook {
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook test CA");
    let ca_pem = ca_params.self_signed(&ca_key).expect("the CA").pem();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("a key");
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    let cert = params
        .signed_by(&key, &issuer)
        .expect("the serving certificate");
    let tls =
        kgc_apiserver::tls::server_config(&cert.pem(), &key.serialize_pem(), &ca_pem).expect("TLS");
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = tcp.local_addr().expect("an address").port();
    let listener = kgc_apiserver::tls::TlsListener::new(tcp, tls).expect("a TLS listener");
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route("/{behaviour}", post(review))
        .route("/conversion/{behaviour}", post(convert))
        .with_state(Arc::clone(&seen));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Webhook {
        base: format!("https://127.0.0.1:{port}"),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(&ca_pem),
        seen,
    }
}

/// A webhook configuration of `kind` with one webhook `name` for `operations` on configmaps in
/// namespace `ns`, calling `url`; `extra` is merged into the webhook.
fn configuration(kind: &str, name: &str, ns: &str, url: &str, ca: &str, extra: Value) -> String {
    let mut hook = json!({
        "name": format!("{name}.kgc.test"),
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        hook[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": format!("{name}-{ns}")}, "webhooks": [hook]})
    .to_string()
}

const T: Duration = Duration::from_secs(30);

/// Applies a webhook configuration `name` of `kind` calling the test's webhook at `path`, for
/// namespace `ns` alone.
async fn register(
    s: &Server,
    hook: &Webhook,
    kind: &str,
    name: &str,
    ns: &str,
    path: &str,
    extra: Value,
) {
    let url = format!("{}/{path}", hook.base);
    let config = configuration(kind, name, ns, &url, &hook.ca_bundle, extra);
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &config).await;
}

/// `kubectl get KIND -n NS NAME -o PATH` (a `jsonpath=` template).
async fn jsonpath(s: &Server, kind: &str, ns: &str, name: &str, path: &str) -> String {
    s.kubectl_ok(&["get", kind, "-n", ns, name, "-o", path])
        .await
}

/// One server and one webhook server for every scenario.
#[tokio::test]
async fn admission_and_conversion_webhooks() {
    // Patches are recorded from level Request, so configmaps are audited at Request but their
    // updates at Metadata.
    let log = AuditLog::new(
        "apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  verbs: [update, patch]
  resources:
  - resources: [configmaps]
- level: Request
  resources:
  - resources: [configmaps]
",
    );
    let s = Server::start_with(&log.args(&["--in-memory"])).await;
    let hook = webhook_server().await;
    audit_annotations(&s, &hook, &log).await;
    update_raced_by_another_writer(&s, &hook).await;
    admission(&s, &hook).await;
    subresources(&s, &hook).await;
    conversion(&s, &hook).await;
}

/// An update whose object another writer changes while its webhook judges it is admitted
/// again on the fresh object, as kube-apiserver's `GuaranteedUpdate` runs the patcher's
/// admission again: a patch is not answered 409 for a version it never named, and what it
/// writes keeps the other writer's change; an update naming the old resourceVersion is
/// still a 409.
async fn update_raced_by_another_writer(s: &Server, hook: &Webhook) {
    let ns = fresh_namespace(&s.client(), "race").await;
    register(
        s,
        hook,
        "ValidatingWebhookConfiguration",
        "race",
        &ns,
        "race",
        json!({}),
    )
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "cm", "--from-literal=a=1"])
        .await;
    let before: ConfigMap = kube::Api::namespaced(s.client(), &ns)
        .get("cm")
        .await
        .unwrap();
    let updates = || reviews(hook, "race", &ns, "", "UPDATE").len();
    let seen = updates();

    *RACER.lock().unwrap() = Some(s.client());
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "-n",
        &ns,
        "cm",
        "--type=merge",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ])
    .await;
    let data = jsonpath(s, "configmap", &ns, "cm", "jsonpath={.data}").await;
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data, json!({"a": "1", "b": "2", "raced": "yes"}));
    // The patch judged twice (stale, then on the fresh object), the other writer's once.
    assert_eq!(updates() - seen, 3);

    // A write that names the version the other writer replaced is refused, webhooks or not.
    let mut stale = before;
    stale
        .data
        .get_or_insert_default()
        .insert("c".into(), "3".into());
    let err = kube::Api::<ConfigMap>::namespaced(s.client(), &ns)
        .replace("cm", &Default::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 409),
        "{err}"
    );
}

/// A webhook's `auditAnnotations` go into the request's audit event as `<webhook>/<key>`; a
/// mutating webhook's call and patch are recorded as upstream's dispatcher records them.
async fn audit_annotations(s: &Server, hook: &Webhook, log: &AuditLog) {
    let ns = fresh_namespace(&s.client(), "annotate").await;
    register(
        s,
        hook,
        "ValidatingWebhookConfiguration",
        "annotate",
        &ns,
        "annotate",
        json!({}),
    )
    .await;
    register(
        s,
        hook,
        "MutatingWebhookConfiguration",
        "label",
        &ns,
        "label",
        json!({}),
    )
    .await;
    // After `label` in name order (index 1); it answers garbage, which Ignore lets through.
    register(
        s,
        hook,
        "MutatingWebhookConfiguration",
        "open",
        &ns,
        "garbage",
        json!({"failurePolicy": "Ignore"}),
    )
    .await;
    s.kubectl_ok(&["create", "configmap", "cm", "-n", &ns])
        .await;
    let of = |verb: &'static str| {
        let ns = ns.clone();
        move |e: &Value| {
            e["objectRef"]["namespace"] == ns.as_str()
                && e["objectRef"]["name"] == "cm"
                && e["verb"] == verb
        }
    };
    let created = log.wait_for("ResponseComplete", of("create")).await;
    let annotations = &created.last().unwrap()["annotations"];
    assert_eq!(
        annotations["annotate.kgc.test/checked"], "configmap cm",
        "{annotations}"
    );
    // The first mutating webhook: index 0 of round 0.
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
        format!(r#"{{"configuration":"label-{ns}","webhook":"label.kgc.test","mutated":true}}"#),
        "{annotations}"
    );
    assert_eq!(
        annotations["patch.webhook.admission.k8s.io/round_0_index_0"],
        format!(
            r#"{{"configuration":"label-{ns}","webhook":"label.kgc.test","patch":[{{"op":"add","path":"/metadata/labels","value":{{"mutated":"yes"}}}}],"patchType":"JSONPatch"}}"#
        ),
        "{annotations}"
    );
    assert_eq!(
        annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_1"],
        "open.kgc.test",
        "{annotations}"
    );
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_1"],
        format!(r#"{{"configuration":"open-{ns}","webhook":"open.kgc.test","mutated":false}}"#),
        "{annotations}"
    );
    // At Metadata the patch is left out; a patch that changes nothing did not mutate.
    s.kubectl_ok(&["label", "configmap", "cm", "-n", &ns, "x=y"])
        .await;
    let patched = log.wait_for("ResponseComplete", of("patch")).await;
    let annotations = &patched.last().unwrap()["annotations"];
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
        format!(r#"{{"configuration":"label-{ns}","webhook":"label.kgc.test","mutated":false}}"#),
        "{annotations}"
    );
    assert!(
        annotations
            .get("patch.webhook.admission.k8s.io/round_0_index_0")
            .is_none(),
        "{annotations}"
    );
}

/// The reviews the webhook at `path` got for namespace `ns` with `subResource` `sub` (`""`
/// for none) and `operation`.
fn reviews(hook: &Webhook, path: &str, ns: &str, sub: &str, operation: &str) -> Vec<Value> {
    hook.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, r)| {
            p == path
                && r["namespace"] == ns
                && r["subResource"].as_str().unwrap_or_default() == sub
                && r["operation"] == operation
        })
        .map(|(_, r)| r.clone())
        .collect()
}

/// The writes that are not a plain create, update or delete (issue 32's follow-up item 1):
/// `deployments/scale` (the webhooks see `autoscaling/v1 Scale`s, may change and refuse them),
/// `pods/binding` and `pods/eviction` (their Binding and Eviction), and DELETECOLLECTION (each
/// object admitted as its `oldObject`, with no name; a refusal stops the deletion there), through
/// webhooks and through a ValidatingAdmissionPolicy.
async fn subresources(s: &Server, hook: &Webhook) {
    let c = s.client();
    let ns = fresh_namespace(&c, "sub").await;
    let rule = |ops: &[&str], group: &str, resources: &[&str]| json!({"operations": ops, "apiGroups": [group], "apiVersions": ["v1"], "resources": resources});
    let hook_on = |kind: &str, name: &str, path: &str, rules: Value| {
        configuration(
            kind,
            name,
            &ns,
            &format!("{}/{path}", hook.base),
            &hook.ca_bundle,
            json!({"rules": rules}),
        )
    };
    let validating = "ValidatingWebhookConfiguration";
    let scale_rule = json!([rule(&["UPDATE"], "apps", &["deployments/scale"])]);
    for doc in [
        hook_on(
            validating,
            "record",
            "record",
            json!([
                rule(&["UPDATE"], "apps", &["deployments/scale"]),
                rule(&["CREATE"], "", &["pods/binding", "pods/eviction"]),
                rule(&["DELETE"], "", &["configmaps"]),
            ]),
        ),
        hook_on(validating, "big", "deny-big-scale", scale_rule.clone()),
        hook_on(
            "MutatingWebhookConfiguration",
            "two",
            "scale-at-least-two",
            scale_rule,
        ),
        hook_on(
            validating,
            "keep",
            "deny-keep",
            json!([rule(&["DELETE"], "", &["configmaps"])]),
        ),
        hook_on(
            validating,
            "evict",
            "deny-bad",
            json!([rule(&["CREATE"], "", &["pods/eviction"])]),
        ),
    ] {
        s.kubectl_stdin_ok(&["apply", "-f", "-"], &doc).await;
    }

    // Scale: the review is of an autoscaling/v1 Scale of apps/v1 deployments; a refusal keeps
    // the replicas, a mutating webhook's patch of the Scale is what is written.
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        &ns,
        "--image=nginx",
        "--replicas=3",
    ])
    .await;
    s.kubectl_ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=4"])
        .await;
    let replicas = || async {
        s.kubectl_ok(&[
            "get",
            "deployment",
            "web",
            "-n",
            &ns,
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await
        .trim()
        .to_owned()
    };
    assert_eq!(replicas().await, "4");
    let req = reviews(hook, "record", &ns, "scale", "UPDATE")
        .pop()
        .expect("a review of the scale");
    let scale = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
    assert_eq!(req["kind"], scale);
    assert_eq!(req["requestKind"], scale);
    assert_eq!(
        req["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(req["requestSubResource"], "scale");
    assert_eq!(req["name"], "web");
    assert_eq!(req["object"]["kind"], "Scale");
    assert_eq!(req["object"]["spec"]["replicas"], 4);
    assert_eq!(req["oldObject"]["spec"]["replicas"], 3);
    assert_eq!(req["options"]["kind"], "UpdateOptions");
    let out = s
        .kubectl(&["scale", "deployment", "web", "-n", &ns, "--replicas=9"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains("admission webhook \"big.kgc.test\" denied the request: at most 5 replicas"),
        "{stderr}"
    );
    assert_eq!(replicas().await, "4");
    s.kubectl_ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=0"])
        .await;
    assert_eq!(
        replicas().await,
        "2",
        "the mutating webhook's Scale is written"
    );

    // Binding and eviction: the webhooks see the Binding and the Eviction.
    s.kubectl_ok(&["run", "p", "-n", &ns, "--image=nginx"])
        .await;
    let pod = |name: &str| format!("/api/v1/namespaces/{ns}/pods/{name}");
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "node-1"}});
    let resp = s
        .raw(
            "POST",
            &format!("{}/binding", pod("p")),
            Some("application/json"),
            binding.to_string(),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", resp.text());
    let req = reviews(hook, "record", &ns, "binding", "CREATE")
        .pop()
        .expect("a review of the binding");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "Binding"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"})
    );
    assert_eq!(req["object"]["target"]["name"], "node-1");
    assert_eq!(req["options"]["kind"], "CreateOptions");
    let eviction = |name: &str| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
            .to_string()
    };
    s.kubectl_ok(&["run", "bad-pod", "-n", &ns, "--image=nginx"])
        .await;
    let resp = s
        .raw(
            "POST",
            &format!("{}/eviction", pod("bad-pod")),
            Some("application/json"),
            eviction("bad-pod"),
        )
        .await;
    assert_status(
        &resp,
        403,
        "Forbidden",
        "admission webhook \"evict.kgc.test\" denied the request: configmap bad-pod is not allowed",
    );
    assert_eq!(s.raw("GET", &pod("bad-pod"), None, "").await.status, 200);
    let resp = s
        .raw(
            "POST",
            &format!("{}/eviction", pod("p")),
            Some("application/json"),
            eviction("p"),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", resp.text());
    let req = reviews(hook, "record", &ns, "eviction", "CREATE")
        .pop()
        .expect("a review of the eviction");
    assert_eq!(
        req["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(req["name"], "p");

    // DELETECOLLECTION: each object is admitted with no name; the refusal of keep-1 stops the
    // deletion after a-1 and a-2 (listed before it), and keep-1 stays.
    for name in ["a-1", "a-2", "keep-1"] {
        s.kubectl_ok(&["create", "configmap", name, "-n", &ns])
            .await;
        s.kubectl_ok(&["label", "configmap", name, "-n", &ns, "set=dc"])
            .await;
    }
    let collection = format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=set%3Ddc");
    let resp = s.raw("DELETE", &collection, None, "").await;
    assert_status(
        &resp,
        403,
        "Forbidden",
        "admission webhook \"keep.kgc.test\" denied the request: keep-* stays",
    );
    let left = s.raw("GET", &collection, None, "").await.json();
    let names: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["keep-1"]);
    let deletes = reviews(hook, "record", &ns, "", "DELETE");
    let old: Vec<&str> = deletes
        .iter()
        .filter_map(|r| r["oldObject"]["metadata"]["name"].as_str())
        .collect();
    assert_eq!(old, ["a-1", "a-2", "keep-1"]);
    assert!(
        deletes
            .iter()
            .all(|r| r["name"] == "" && r["options"]["kind"] == "DeleteOptions")
    );

    subresource_policies(s).await;
}

/// A ValidatingAdmissionPolicy over `deployments/scale` and over configmap deletions: it sees
/// the Scale, and a DELETECOLLECTION's objects one by one, refused in upstream's words.
async fn subresource_policies(s: &Server) {
    let c = s.client();
    let ns = fresh_namespace(&c, "sub-vap").await;
    let policy = format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: sub-{ns}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [UPDATE]
      resources: [deployments/scale]
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [DELETE]
      resources: [configmaps]
  validations:
  - expression: \"request.operation != 'UPDATE' || (object.kind == 'Scale' && object.spec.replicas <= 5)\"
    message: at most 5
  - expression: \"request.operation != 'DELETE' || !oldObject.metadata.name.startsWith('keep')\"
    message: keep stays
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: sub-{ns}-binding
spec:
  policyName: sub-{ns}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {ns}
"
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &policy).await;
    s.kubectl_ok(&["create", "deployment", "web", "-n", &ns, "--image=nginx"])
        .await;
    s.kubectl_ok(&["scale", "deployment", "web", "-n", &ns, "--replicas=5"])
        .await;
    let out = s
        .raw(
            "PATCH",
            &format!("/apis/apps/v1/namespaces/{ns}/deployments/web/scale"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"replicas":6}}"#,
        )
        .await;
    assert_status(
        &out,
        422,
        "Invalid",
        &format!(
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'sub-{ns}' with binding 'sub-{ns}-binding' denied request: at most 5"
        ),
    );
    for name in ["a-1", "keep-1"] {
        s.kubectl_ok(&["create", "configmap", name, "-n", &ns])
            .await;
    }
    let resp = s
        .raw(
            "DELETE",
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            None,
            "",
        )
        .await;
    assert_status(
        &resp,
        422,
        "Invalid",
        &format!(
            "configmaps is forbidden: ValidatingAdmissionPolicy 'sub-{ns}' with binding 'sub-{ns}-binding' denied request: keep stays"
        ),
    );
}

/// A CRD `<plural>.conv.kgc.test` stored in v1 and served in v1 and v2, converted by the test's
/// webhook at `path`.
/// `v2`: v2's schema, where v1's takes anything.
fn crd(kind: &str, plural: &str, hook: &Webhook, path: &str, v2: Value) -> String {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.conv.kgc.test")},
        "spec": {"group": "conv.kgc.test", "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase()},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": format!("{}/conversion/{path}", hook.base), "caBundle": hook.ca_bundle},
                "conversionReviewVersions": ["v1"]}}}})
    .to_string()
}

/// Conversion webhooks: objects written in v2 are stored in v1 and read in both; when the
/// webhook fails, reads of v2 fail and the garbage collector still collects a dependent of such
/// an object (the owner-reference suite's scenario i14).
async fn conversion(s: &Server, hook: &Webhook) {
    let c = s.client();
    let ns = fresh_namespace(&c, "conv").await;
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &crd("Widget", "widgets", hook, "ok", anything()),
    )
    .await;
    eventually("widgets served in v2", T, || async {
        s.kubectl(&["get", "--raw", "/apis/conv.kgc.test/v2"])
            .await
            .status
            .success()
    })
    .await;
    let widget = json!({"apiVersion": "conv.kgc.test/v2", "kind": "Widget",
        "metadata": {"name": "w", "namespace": ns}, "spec": {"colour": "red"}});
    let created = s
        .kubectl_stdin_ok(&["create", "-f", "-", "-o", "json"], &widget.to_string())
        .await;
    let created: Value = serde_json::from_str(&created).expect("JSON");
    assert_eq!(created["apiVersion"], "conv.kgc.test/v2");
    assert_eq!(created["spec"]["colour"], "red");
    let raw = |v: &str, rest: &str| format!("/apis/conv.kgc.test/{v}/namespaces/{ns}/{rest}");
    let get = |path: String| async move {
        serde_json::from_str::<Value>(&s.kubectl_ok(&["get", "--raw", &path]).await).expect("JSON")
    };
    let v1 = get(raw("v1", "widgets/w")).await;
    assert_eq!(
        (v1["apiVersion"].as_str(), v1["spec"]["color"].as_str()),
        (Some("conv.kgc.test/v1"), Some("red"))
    );
    let list = get(raw("v2", "widgets")).await;
    assert_eq!(list["apiVersion"], "conv.kgc.test/v2");
    assert_eq!(list["items"][0]["spec"]["colour"], "red");
    assert_eq!(list["items"][0]["metadata"]["uid"], v1["metadata"]["uid"]);
    conversion_patches_and_watches(s, &ns).await;
    converted_writes_are_admitted_in_their_version(s, hook, &ns).await;
    converted_writes_record_their_version(s, &ns).await;
    converted_writes_are_checked_as_any_write(s, &ns).await;

    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &crd("Broken", "brokens", hook, "fail", anything()),
    )
    .await;
    eventually("brokens served", T, || async {
        s.kubectl(&["get", "--raw", &raw("v1", "brokens")])
            .await
            .status
            .success()
    })
    .await;
    let owner = json!({"apiVersion": "conv.kgc.test/v1", "kind": "Broken",
        "metadata": {"name": "b", "namespace": ns}, "spec": {"color": "blue"}});
    let owner = s
        .kubectl_stdin_ok(&["create", "-f", "-", "-o", "json"], &owner.to_string())
        .await;
    let owner: Value = serde_json::from_str(&owner).expect("JSON");
    let out = s.kubectl(&["get", "--raw", &raw("v2", "brokens/b")]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("conversion webhook for conv.kgc.test/v1, Kind=Broken returned failure: conversion is broken"),
        "{stderr}"
    );
    // A PATCH or a WATCH in v2 of an object the webhook fails to convert: the PATCH gets the
    // read's error, the watch ends with it.
    let patched = s
        .raw(
            "PATCH",
            &raw("v2", "brokens/b"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"colour":"green"}}"#,
        )
        .await;
    assert_status(
        &patched,
        500,
        "InternalError",
        "Internal error occurred: conversion webhook for conv.kgc.test/v1, Kind=Broken returned failure: conversion is broken",
    );
    let mut events = s
        .raw_watch(&format!("{}?watch=true", raw("v2", "brokens")))
        .await;
    let error = next_within(&mut events, T, "the watch's ERROR event").await;
    assert_eq!(error["type"], "ERROR", "{error}");
    assert_eq!(error["object"]["code"], 500, "{error}");
    assert_eq!(
        error["object"]["message"],
        "Internal error occurred: conversion webhook for conv.kgc.test/v1, Kind=Broken returned failure: conversion is broken"
    );
    assert!(
        tokio::time::timeout(T, futures::StreamExt::next(&mut events))
            .await
            .expect("the watch ends")
            .is_none(),
        "nothing after the ERROR event"
    );
    let dependent = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "dependent", "namespace": ns, "ownerReferences": [{
            "apiVersion": "conv.kgc.test/v2", "kind": "Broken", "name": "b",
            "uid": owner["metadata"]["uid"]}]}});
    s.kubectl_stdin_ok(&["create", "-f", "-"], &dependent.to_string())
        .await;
    s.kubectl_ok(&["delete", "--raw", &raw("v1", "brokens/b")])
        .await;
    eventually("the dependent collected", T, || async {
        !s.kubectl(&["get", "configmap", "-n", &ns, "dependent"])
            .await
            .status
            .success()
    })
    .await;
}

fn anything() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// A write in v2 is pruned, defaulted and validated by v2's schema before the webhook converts
/// it to v1, whose schema takes anything, as upstream's handler admits it in the version it was
/// written in: a create, a PUT and a PATCH in v2 are refused naming v2's field, a v1 write of
/// the same value is not.
async fn converted_writes_are_admitted_in_their_version(s: &Server, hook: &Webhook, ns: &str) {
    let v2 = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "colour": {"type": "string", "maxLength": 5},
            "size": {"type": "integer", "default": 1}}}}});
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &crd("Gadget", "gadgets", hook, "ok", v2),
    )
    .await;
    let path =
        |v: &str, rest: &str| format!("/apis/conv.kgc.test/{v}/namespaces/{ns}/gadgets{rest}");
    eventually("gadgets served in v2", T, || async {
        s.kubectl(&["get", "--raw", &path("v2", "")])
            .await
            .status
            .success()
    })
    .await;
    let gadget = |name: &str, version: &str, spec: Value| {
        json!({"apiVersion": format!("conv.kgc.test/{version}"), "kind": "Gadget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec})
        .to_string()
    };
    let post = |version: &str, body: String| {
        let path = path(version, "");
        async move { s.raw("POST", &path, Some("application/json"), body).await }
    };
    let created = post(
        "v2",
        gadget("g", "v2", json!({"colour": "red", "unknown": 1})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.json());
    // Defaulted and pruned in v2, then stored in v1 as converted.
    let stored: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", &path("v1", "/g")]).await)
            .expect("JSON");
    assert_eq!(
        stored["spec"],
        json!({"color": "red", "size": 1}),
        "{stored}"
    );
    let too_long = "Gadget.conv.kgc.test \"g\" is invalid: spec.colour: Too long: may not be more than 5 bytes";
    let refused = post("v2", gadget("g2", "v2", json!({"colour": "purple"}))).await;
    assert_status(
        &refused,
        422,
        "Invalid",
        &too_long.replace("\"g\"", "\"g2\""),
    );
    let mut put: Value =
        serde_json::from_str(&gadget("g", "v2", json!({"colour": "purple"}))).expect("JSON");
    put["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
    let refused = s
        .raw(
            "PUT",
            &path("v2", "/g"),
            Some("application/json"),
            put.to_string(),
        )
        .await;
    assert_status(&refused, 422, "Invalid", too_long);
    let refused = s
        .raw(
            "PATCH",
            &path("v2", "/g"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"colour":"purple"}}"#,
        )
        .await;
    assert_status(&refused, 422, "Invalid", too_long);
    let allowed = post("v1", gadget("g3", "v1", json!({"color": "purple"}))).await;
    assert_eq!(allowed.status, 201, "{}", allowed.json());
}

/// A create, a PATCH and a PUT in v2 record their managedFields in v2 (its `apiVersion`, its
/// field names), as upstream's field manager tracks a write in the request's version before
/// the object is converted to the storage version (v1, where `colour` is `color`).
async fn converted_writes_record_their_version(s: &Server, ns: &str) {
    let path = |rest: &str| format!("/apis/conv.kgc.test/v2/namespaces/{ns}/gadgets{rest}");
    // Each write by its own manager, answered `status`.
    let write = |method: &'static str, rest: &str, media: &'static str, body: String, status| {
        let path = path(rest);
        async move {
            let answer = s.raw(method, &path, Some(media), body).await;
            assert_eq!(answer.status, status, "{method} {path}: {}", answer.text());
            answer.json()
        }
    };
    let body = json!({"apiVersion": "conv.kgc.test/v2", "kind": "Gadget",
        "metadata": {"name": "m"}, "spec": {"colour": "red"}});
    let json = "application/json";
    write("POST", "?fieldManager=maker", json, body.to_string(), 201).await;
    let merge = "application/merge-patch+json";
    let size = r#"{"spec":{"size":3}}"#.to_owned();
    let mut put = write("PATCH", "/m?fieldManager=patcher", merge, size, 200).await;
    put["spec"]["colour"] = json!("blue");
    write("PUT", "/m?fieldManager=putter", json, put.to_string(), 200).await;
    let stored = s
        .raw(
            "GET",
            &format!("/apis/conv.kgc.test/v1/namespaces/{ns}/gadgets/m"),
            None,
            "",
        )
        .await
        .json();
    assert_eq!(
        stored["spec"],
        json!({"color": "blue", "size": 3}),
        "{stored}"
    );
    let entries: Vec<(String, String, Value)> = stored["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|e| {
            let spec = e["fieldsV1"]["f:spec"].clone();
            let fields: Vec<&String> = spec.as_object().expect("f:spec").keys().collect();
            (
                e["manager"].as_str().unwrap_or_default().to_owned(),
                e["apiVersion"].as_str().unwrap_or_default().to_owned(),
                json!(fields),
            )
        })
        .collect();
    // The maker keeps `spec` itself (`"f:spec": {}`): what it set inside went to the others.
    let v2 = "conv.kgc.test/v2".to_owned();
    assert_eq!(
        entries,
        [
            ("maker".to_owned(), v2.clone(), json!([])),
            ("patcher".to_owned(), v2.clone(), json!(["f:size"])),
            ("putter".to_owned(), v2, json!(["f:colour"])),
        ],
        "{stored}"
    );
}

/// A write in a converted version is checked as any write is before it is admitted there: a
/// subresource the CRD does not serve, a body of another kind or not an object are refused; an
/// update without a resourceVersion is made over the object as it is.
async fn converted_writes_are_checked_as_any_write(s: &Server, ns: &str) {
    let path = format!("/apis/conv.kgc.test/v2/namespaces/{ns}/gadgets");
    let json = Some("application/json");
    let body = |kind: &str, spec: Value| {
        json!({"apiVersion": "conv.kgc.test/v2", "kind": kind,
            "metadata": {"name": "checked"}, "spec": spec})
        .to_string()
    };
    let red = json!({"colour": "red"});
    let sub = s
        .raw(
            "POST",
            &format!("{path}/checked/status"),
            json,
            body("Gadget", red.clone()),
        )
        .await;
    assert_eq!(sub.status, 404, "{}", sub.text());
    let kind = s
        .raw("POST", &path, json, body("Widget", red.clone()))
        .await;
    assert_status(
        &kind,
        400,
        "BadRequest",
        "the kind in the data (Widget) does not match the expected kind (Gadget)",
    );
    let array = s.raw("POST", &path, json, "[]".to_owned()).await;
    assert_eq!(array.status, 400, "{}", array.text());
    let created = s.raw("POST", &path, json, body("Gadget", red)).await;
    assert_eq!(created.status, 201, "{}", created.text());
    let blue = body("Gadget", json!({"colour": "blue"}));
    let put = s.raw("PUT", &format!("{path}/checked"), json, blue).await;
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(put.json()["spec"]["colour"], "blue");
}

/// PATCH (merge, JSON, server-side apply; strategic refused) and WATCH of widgets in v2, the
/// version the webhook converts to: the stored v1 object converted, patched in v2, converted
/// back; each watch event converted.
async fn conversion_patches_and_watches(s: &Server, ns: &str) {
    let path =
        |v: &str, rest: &str| format!("/apis/conv.kgc.test/{v}/namespaces/{ns}/widgets{rest}");
    let stored = |name: &str| {
        let p = path("v1", &format!("/{name}"));
        async move { s.raw("GET", &p, None, "").await.json() }
    };
    let mut events = s.raw_watch(&format!("{}?watch=true", path("v2", ""))).await;
    let added = next_within(&mut events, T, "the widget's ADDED event").await;
    assert_eq!(
        (
            added["type"].as_str(),
            added["object"]["apiVersion"].as_str()
        ),
        (Some("ADDED"), Some("conv.kgc.test/v2")),
        "{added}"
    );
    assert_eq!(added["object"]["spec"]["colour"], "red", "{added}");

    let merged = s
        .raw(
            "PATCH",
            &path("v2", "/w"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"colour":"blue"}}"#,
        )
        .await;
    assert_eq!(merged.status, 200, "{}", merged.text());
    let merged = merged.json();
    assert_eq!(
        (
            merged["apiVersion"].as_str(),
            merged["spec"]["colour"].as_str()
        ),
        (Some("conv.kgc.test/v2"), Some("blue")),
        "{merged}"
    );
    assert_eq!(stored("w").await["spec"], json!({"color": "blue"}));
    let modified = next_within(&mut events, T, "the widget's MODIFIED event").await;
    assert_eq!(modified["type"], "MODIFIED", "{modified}");
    assert_eq!(modified["object"]["apiVersion"], "conv.kgc.test/v2");
    assert_eq!(modified["object"]["spec"]["colour"], "blue", "{modified}");

    let jsonpatch = s
        .raw(
            "PATCH",
            &path("v2", "/w"),
            Some("application/json-patch+json"),
            r#"[{"op":"test","path":"/spec/colour","value":"blue"},{"op":"replace","path":"/spec/colour","value":"green"}]"#,
        )
        .await;
    assert_eq!(jsonpatch.status, 200, "{}", jsonpatch.text());
    assert_eq!(stored("w").await["spec"], json!({"color": "green"}));
    // A stale resourceVersion in the patch is its precondition: 409, nothing written.
    let stale = s
        .raw(
            "PATCH",
            &path("v2", "/w"),
            Some("application/merge-patch+json"),
            r#"{"metadata":{"resourceVersion":"1"},"spec":{"colour":"grey"}}"#,
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.text());
    assert_eq!(stored("w").await["spec"], json!({"color": "green"}));
    let strategic = s
        .raw(
            "PATCH",
            &path("v2", "/w"),
            Some("application/strategic-merge-patch+json"),
            r#"{"spec":{"colour":"grey"}}"#,
        )
        .await;
    assert_status(
        &strategic,
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );

    // Server-side apply in v2: merged with the v2 object, owned by its manager; creates too.
    // The patches above were recorded in v2, so their manager's `colour` is a conflict.
    let apply = |force: &str| {
        let path = format!("{}?fieldManager=painter{force}", path("v2", "/w"));
        async move {
            s.raw(
                "PATCH",
                &path,
                Some("application/apply-patch+yaml"),
                "apiVersion: conv.kgc.test/v2\nkind: Widget\nmetadata:\n  name: w\nspec:\n  colour: pink\n  size: 3\n",
            )
            .await
        }
    };
    let conflict = apply("").await;
    assert_status(
        &conflict,
        409,
        "Conflict",
        "Apply failed with 1 conflict: conflict with \"unknown\" using conv.kgc.test/v2: .spec.colour",
    );
    let applied = apply("&force=true").await;
    assert_eq!(applied.status, 200, "{}", applied.text());
    let applied = applied.json();
    assert_eq!(applied["apiVersion"], "conv.kgc.test/v2");
    assert_eq!(applied["spec"], json!({"colour": "pink", "size": 3}));
    let w = stored("w").await;
    assert_eq!(w["spec"], json!({"color": "pink", "size": 3}));
    let entry = w["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "painter")
        .cloned()
        .unwrap_or_else(|| panic!("painter's entry: {w}"));
    assert_eq!(
        (entry["operation"].as_str(), entry["apiVersion"].as_str()),
        (Some("Apply"), Some("conv.kgc.test/v2")),
        "{entry}"
    );
    assert!(
        entry["fieldsV1"]["f:spec"].get("f:colour").is_some(),
        "{entry}"
    );
    let created = s
        .raw(
            "PATCH",
            &format!("{}?fieldManager=painter", path("v2", "/w2")),
            Some("application/apply-patch+yaml"),
            "apiVersion: conv.kgc.test/v2\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  colour: teal\n",
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["spec"]["colour"], "teal");
    assert_eq!(stored("w2").await["spec"], json!({"color": "teal"}));
    let added = loop {
        let e = next_within(&mut events, T, "w2's ADDED event").await;
        if e["type"] == "ADDED" {
            break e;
        }
    };
    assert_eq!(added["object"]["metadata"]["name"], "w2");
    assert_eq!(added["object"]["spec"]["colour"], "teal", "{added}");
}

async fn admission(s: &Server, hook: &Webhook) {
    let c = s.client();
    let apply = |doc: String| {
        let s = &s;
        async move { s.kubectl_stdin_ok(&["apply", "-f", "-"], &doc).await }
    };
    let url = |path: &str| format!("{}/{path}", hook.base);
    let validating = |name: &str, ns: &str, path: &str, extra: Value| {
        configuration(
            "ValidatingWebhookConfiguration",
            name,
            ns,
            &url(path),
            &hook.ca_bundle,
            extra,
        )
    };

    // A validating webhook denies: kubectl shows its message in upstream's words; other
    // namespaces (namespaceSelector) and other names pass.
    let ns = fresh_namespace(&c, "deny").await;
    let other = fresh_namespace(&c, "other").await;
    apply(validating("deny", &ns, "deny-bad", json!({}))).await;
    let out = s
        .kubectl(&["create", "configmap", "-n", &ns, "bad-one"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("admission webhook \"deny.kgc.test\" denied the request: configmap bad-one is not allowed"),
        "{stderr}"
    );
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "good-one"])
        .await;
    s.kubectl_ok(&["create", "configmap", "-n", &other, "bad-elsewhere"])
        .await;
    assert!(
        s.kubectl(&["get", "configmap", "-n", &ns, "bad-one"])
            .await
            .status
            .code()
            != Some(0)
    );

    // Allowed with warnings: kubectl prints them.
    let ns = fresh_namespace(&c, "warn").await;
    apply(validating("warn", &ns, "warn", json!({}))).await;
    let out = s.kubectl(&["create", "configmap", "-n", &ns, "cm"]).await;
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Warning: be careful with configmaps"),
        "{stderr}"
    );

    // A mutating webhook's JSON patch is applied, on create and on update; the review carries
    // the request's fields.
    let ns = fresh_namespace(&c, "mutate").await;
    apply(configuration(
        "MutatingWebhookConfiguration",
        "label",
        &ns,
        &url("label"),
        &hook.ca_bundle,
        json!({}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "cm", "--from-literal=a=b"])
        .await;
    let mutated = || {
        jsonpath(
            s,
            "configmap",
            &ns,
            "cm",
            "jsonpath={.metadata.labels.mutated}",
        )
    };
    let labels = mutated().await;
    assert_eq!(labels.trim(), "yes");
    s.kubectl_ok(&["label", "configmap", "-n", &ns, "cm", "mutated-"])
        .await;
    let labels = mutated().await;
    assert_eq!(labels.trim(), "yes", "the update was mutated too");
    let (path, req) = hook
        .seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(p, r)| p == "label" && r["operation"] == "UPDATE")
        .cloned()
        .expect("an UPDATE review");
    assert_eq!(path, "label");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(
        (req["name"].as_str(), req["namespace"].as_str()),
        (Some("cm"), Some(ns.as_str()))
    );
    assert_eq!(req["oldObject"]["data"]["a"], "b");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "UpdateOptions");
    assert!(req["userInfo"]["username"].is_string());

    // A patch that makes the object invalid: refused, nothing stored.
    let ns = fresh_namespace(&c, "break").await;
    apply(configuration(
        "MutatingWebhookConfiguration",
        "break",
        &ns,
        &url("break"),
        &hook.ca_bundle,
        json!({}),
    ))
    .await;
    let out = s.kubectl(&["create", "configmap", "-n", &ns, "cm"]).await;
    assert!(
        !out.status.success(),
        "an invalid patched object was stored"
    );
    assert!(
        s.kubectl(&["get", "configmap", "-n", &ns, "cm"])
            .await
            .status
            .code()
            != Some(0)
    );

    // Unreachable: Ignore lets the request through, Fail refuses it in upstream's words.
    let ns = fresh_namespace(&c, "ignore").await;
    apply(configuration(
        "ValidatingWebhookConfiguration",
        "down",
        &ns,
        "https://127.0.0.1:1/x",
        &hook.ca_bundle,
        json!({"failurePolicy": "Ignore"}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "cm"])
        .await;
    let ns = fresh_namespace(&c, "fail").await;
    apply(configuration(
        "ValidatingWebhookConfiguration",
        "down",
        &ns,
        "https://127.0.0.1:1/x",
        &hook.ca_bundle,
        json!({"failurePolicy": "Fail"}),
    ))
    .await;
    let out = s.kubectl(&["create", "configmap", "-n", &ns, "cm"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("Internal error occurred: failed calling webhook \"down.kgc.test\": failed to call webhook: Post \"https://127.0.0.1:1/x?timeout=10s\""),
        "{stderr}"
    );

    // A webhook answering garbage fails the request (failurePolicy Fail).
    let ns = fresh_namespace(&c, "garbage").await;
    apply(validating("garbage", &ns, "garbage", json!({}))).await;
    let out = s.kubectl(&["create", "configmap", "-n", &ns, "cm"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("received invalid webhook response"),
        "{stderr}"
    );

    // A hanging webhook: timeoutSeconds honoured.
    let ns = fresh_namespace(&c, "slow").await;
    apply(validating(
        "slow",
        &ns,
        "slow",
        json!({"timeoutSeconds": 1}),
    ))
    .await;
    let started = Instant::now();
    let out = s.kubectl(&["create", "configmap", "-n", &ns, "cm"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("context deadline exceeded"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );

    // objectSelector: only labelled objects are sent.
    let ns = fresh_namespace(&c, "objsel").await;
    apply(validating(
        "guard",
        &ns,
        "deny-bad",
        json!({"objectSelector": {"matchLabels": {"guard": "on"}}}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "bad-unlabelled"])
        .await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bad-labelled", "namespace": ns, "labels": {"guard": "on"}}});
    let out = s
        .kubectl_stdin(&["create", "-f", "-"], &cm.to_string())
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("denied the request"), "{stderr}");

    // A Service through a mutating webhook: its ClusterIP is allocated after the webhook (the
    // allocation lock is not held across the call), kept by an update planned, reviewed and
    // then written, and a requested address another Service holds is still refused.
    let ns = fresh_namespace(&c, "svc").await;
    apply(configuration(
        "MutatingWebhookConfiguration",
        "svc-label",
        &ns,
        &url("label"),
        &hook.ca_bundle,
        json!({"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
            "apiVersions": ["v1"], "resources": ["services"]}]}),
    ))
    .await;
    s.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "-n",
        &ns,
        "--tcp=80:80",
    ])
    .await;
    let get = |what: &'static str| {
        let ns = ns.clone();
        async move {
            s.kubectl_ok(&["get", "service", "-n", &ns, "web", "-o", what])
                .await
                .trim()
                .to_owned()
        }
    };
    let ip = get("jsonpath={.spec.clusterIP}").await;
    assert!(ip.parse::<std::net::Ipv4Addr>().is_ok(), "{ip:?}");
    assert_eq!(get("jsonpath={.metadata.labels.mutated}").await, "yes");
    s.kubectl_ok(&["label", "service", "-n", &ns, "web", "tier=front"])
        .await;
    assert_eq!(get("jsonpath={.metadata.labels.tier}").await, "front");
    assert_eq!(get("jsonpath={.spec.clusterIP}").await, ip);
    let taken = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "copy", "namespace": ns},
        "spec": {"clusterIP": ip, "ports": [{"port": 80}]}});
    let out = s
        .kubectl_stdin(&["create", "-f", "-"], &taken.to_string())
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("provided IP is already allocated"),
        "{stderr}"
    );

    // Dry run: admissionregistration/v1 admits only webhooks without side effects (`Some` and
    // `Unknown` were v1beta1's), as upstream's validation; such a webhook is called on a dry
    // run, told so, and nothing is stored.
    let ns = fresh_namespace(&c, "dry").await;
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &validating("effects", &ns, "allow", json!({"sideEffects": "Some"})),
        )
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
        ),
        "{stderr}"
    );
    apply(validating(
        "dry",
        &ns,
        "allow",
        json!({"sideEffects": "NoneOnDryRun"}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "cm", "--dry-run=server"])
        .await;
    let dry = hook
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|(p, r)| p == "allow" && r["namespace"] == json!(ns))
        .map(|(_, r)| r["dryRun"].clone())
        .expect("a review of the dry run");
    assert_eq!(dry, json!(true));
    assert!(
        !s.kubectl(&["get", "configmap", "-n", &ns, "cm"])
            .await
            .status
            .success()
    );

    // DELETE is sent with the stored object as oldObject.
    let ns = fresh_namespace(&c, "delete").await;
    apply(validating(
        "del",
        &ns,
        "deny-bad",
        json!({"rules": [{"operations": ["DELETE"],
        "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "bad-keep"])
        .await;
    let out = s
        .kubectl(&["delete", "configmap", "-n", &ns, "bad-keep"])
        .await;
    assert!(!out.status.success());
    eventually("the configmap still there", T, || async {
        s.kubectl(&["get", "configmap", "-n", &ns, "bad-keep"])
            .await
            .status
            .success()
    })
    .await;

    // matchConditions: a webhook is skipped when one is false; an evaluation error refuses
    // the request under failurePolicy: Fail (403, upstream's words), and skips it under Ignore.
    let ns = fresh_namespace(&c, "conditions").await;
    let conditions = |exprs: &[&str]| -> Value {
        exprs
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
            .collect()
    };
    apply(validating(
        "cond",
        &ns,
        "deny-bad",
        json!({"matchConditions": conditions(&[
            "request.operation == 'CREATE'",
            "!has(object.metadata.labels) || !('skip' in object.metadata.labels)",
        ])}),
    ))
    .await;
    let labelled = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"skip": "yes"}}})
        .to_string()
    };
    s.kubectl_stdin_ok(&["create", "-f", "-"], &labelled("bad-skipped"))
        .await;
    let out = s
        .kubectl(&["create", "configmap", "-n", &ns, "bad-called"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("admission webhook \"cond.kgc.test\" denied the request"),
        "{stderr}"
    );
    let ns = fresh_namespace(&c, "condfail").await;
    apply(validating(
        "condfail",
        &ns,
        "allow",
        json!({"matchConditions": conditions(&["object.data.x == 'y'"])}),
    ))
    .await;
    let out = s
        .kubectl(&["create", "configmap", "-n", &ns, "nodata"])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("configmaps \"nodata\" is forbidden: expression 'object.data.x == 'y'' resulted in error: no such key: data"),
        "{stderr}"
    );
    apply(validating(
        "condfail",
        &ns,
        "allow",
        json!({"failurePolicy": "Ignore", "matchConditions": conditions(&["object.data.x == 'y'"])}),
    ))
    .await;
    s.kubectl_ok(&["create", "configmap", "-n", &ns, "nodata"])
        .await;
    // Validation refuses a condition that does not compile, in upstream's words.
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &validating(
                "badcond",
                &ns,
                "allow",
                json!({"matchConditions": conditions(&["object.x =="])}),
            ),
        )
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("webhooks[0].matchConditions[0].expression: Invalid value: \"object.x ==\": compilation failed: ERROR: <input>:1:"),
        "{stderr}"
    );
}
