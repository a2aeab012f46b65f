//! The audit log (issue 32's follow-up item 2) against one spawned, secure `kgc serve` with
//! `--audit-log-path` and `--audit-policy-file`: the events kubectl's requests leave in the
//! file, at the level and stages the policy gives (levels by resource, `omitStages` of a rule),
//! a watch's `ResponseStarted`, the authorizer's decision and reason, the one event of a request
//! whose credentials fail, and what a ValidatingAdmissionPolicy records there (`Audit` failures
//! and `auditAnnotations`).

kgc_testsupport::bind_kgc!();

use kgc_testsupport::*;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::Value;

const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ['/healthz*', '/readyz*', '/livez*', '/version', '/api*', '/openapi*']
- level: RequestResponse
  resources:
  - group: ''
    resources: [configmaps]
- level: Metadata
  resources:
  - group: ''
    resources: [pods]
  omitStages: [RequestReceived]
- level: Metadata
";

fn about(e: &Value, ns: &str, resource: &str, verb: &str) -> bool {
    e["objectRef"]["namespace"] == ns && e["objectRef"]["resource"] == resource && e["verb"] == verb
}

#[tokio::test]
async fn audit_log() {
    let log = AuditLog::new(POLICY);
    // Not --in-memory: add-user needs the CA the data directory keeps.
    let s = Server::start_secure(&log.args(&[])).await;
    let c = s.client();
    let ns = fresh_namespace(&c, "audit").await;

    // RequestResponse: both stages, one audit ID, the request and the response objects.
    s.kubectl_ok(&["create", "configmap", "cm", "-n", &ns, "--from-literal=a=b"])
        .await;
    let done = log
        .wait_for("ResponseComplete", |e| {
            about(e, &ns, "configmaps", "create") && e["objectRef"]["name"] == "cm"
        })
        .await
        .remove(0);
    let created: Vec<Value> = log
        .events()
        .into_iter()
        .filter(|e| e["auditID"] == done["auditID"])
        .collect();
    let stages: Vec<&str> = created.iter().filter_map(|e| e["stage"].as_str()).collect();
    assert_eq!(
        stages,
        ["RequestReceived", "ResponseComplete"],
        "{created:?}"
    );
    assert!(
        created[0]["objectRef"].get("name").is_none(),
        "named once the body is read"
    );
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["objectRef"]["apiVersion"], "v1");
    assert_eq!(done["objectRef"]["name"], "cm");
    assert_eq!(done["requestObject"]["data"]["a"], "b");
    assert_eq!(done["responseObject"]["metadata"]["name"], "cm");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert!(
        done["requestURI"]
            .as_str()
            .unwrap()
            .starts_with(&format!("/api/v1/namespaces/{ns}/configmaps"))
    );
    assert!(
        done["user"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "system:masters")
    );
    assert!(done["userAgent"].as_str().unwrap().starts_with("kubectl"));
    assert_eq!(done["sourceIPs"][0], "127.0.0.1");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"], "allow",
        "{done}"
    );
    // `system:masters` is allowed by no binding: no reason.
    assert_eq!(
        done["annotations"]["authorization.k8s.io/reason"], "",
        "{done}"
    );
    for stamp in ["requestReceivedTimestamp", "stageTimestamp"] {
        assert!(done[stamp].as_str().unwrap().ends_with('Z'), "{done}");
    }

    // A failure's status in the event; `Metadata` omits the objects; a rule's omitStages.
    let out = s.kubectl(&["get", "pod", "nope", "-n", &ns]).await;
    assert!(!out.status.success());
    let got = log
        .wait_for("ResponseComplete", |e| about(e, &ns, "pods", "get"))
        .await;
    assert_eq!(got.len(), 1, "RequestReceived is omitted for pods: {got:?}");
    let status = &got[0]["responseStatus"];
    assert_eq!(
        (status["code"].as_u64(), status["reason"].as_str()),
        (Some(404), Some("NotFound"))
    );
    assert_eq!(status["message"], "pods \"nope\" not found");
    assert!(got[0].get("responseObject").is_none() && got[0].get("requestObject").is_none());

    // A watch: ResponseStarted when its headers go, ResponseComplete when it ends.
    let resp = s
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods?watch=true&timeoutSeconds=1"),
            None,
            "",
        )
        .await;
    assert_eq!(resp.status, 200);
    let audit_id = resp.header("audit-id").expect("an Audit-Id header");
    let watched = log
        .wait_for("ResponseComplete", |e| e["auditID"] == audit_id.as_str())
        .await;
    let stages: Vec<&str> = watched.iter().filter_map(|e| e["stage"].as_str()).collect();
    assert_eq!(stages, ["ResponseStarted", "ResponseComplete"]);
    assert_eq!(watched[0]["verb"], "watch");

    // A ValidatingAdmissionPolicy: a failure under `Audit` lets the request through and is
    // recorded, with the policy's auditAnnotations, in upstream's format.
    let vap = format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: audited-{ns}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ['']
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  validations:
  - expression: \"object.data.a != 'bad'\"
    message: a is bad
  auditAnnotations:
  - key: seen
    valueExpression: \"'configmap ' + object.metadata.name\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: audited-{ns}-binding
spec:
  policyName: audited-{ns}
  validationActions: [Audit, Warn]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {ns}
"
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &vap).await;
    let out = s
        .kubectl(&[
            "create",
            "configmap",
            "worse",
            "-n",
            &ns,
            "--from-literal=a=bad",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = log
        .wait_for("ResponseComplete", |e| {
            about(e, &ns, "configmaps", "create") && e["objectRef"]["name"] == "worse"
        })
        .await;
    let annotations = &got.last().unwrap()["annotations"];
    assert_eq!(
        annotations["validation.policy.admission.k8s.io/validation_failure"],
        format!(
            "[{{\"message\":\"a is bad\",\"policy\":\"audited-{ns}\",\"binding\":\"audited-{ns}-binding\",\"expressionIndex\":0,\"validationActions\":[\"Audit\",\"Warn\"]}}]"
        ),
        "{annotations}"
    );
    assert_eq!(
        annotations[format!("audited-{ns}/seen")],
        "configmap worse",
        "{annotations}"
    );
    authorization_and_authentication(&s, &log, &ns).await;
}

/// The authorizer's decision and reason on every request it decided (the binding that allowed
/// it; a refusal's), and the one `ResponseStarted` event of a request whose credentials fail.
async fn authorization_and_authentication(s: &Server, log: &AuditLog, ns: &str) {
    let user = unique("auditee");
    let kubeconfig = add_user(s, &user, &["-n", ns, "--role", "edit"]);
    let kubeconfig = kubeconfig.to_str().unwrap();
    s.kubectl_ok(&["--kubeconfig", kubeconfig, "get", "configmaps", "-n", ns])
        .await;
    let listed = log
        .wait_for("ResponseComplete", |e| {
            about(e, ns, "configmaps", "list") && e["user"]["username"] == user.as_str()
        })
        .await;
    let annotations = &listed.last().unwrap()["annotations"];
    assert_eq!(annotations["authorization.k8s.io/decision"], "allow");
    assert_eq!(
        annotations["authorization.k8s.io/reason"],
        format!(
            "RBAC: allowed by RoleBinding \"kgc-user:{user}:edit/{ns}\" of ClusterRole \"edit\" to User \"{user}\""
        ),
        "{annotations}"
    );
    let out = s
        .kubectl(&["--kubeconfig", kubeconfig, "get", "nodes"])
        .await;
    assert!(!out.status.success());
    let refused = log
        .wait_for("ResponseComplete", |e| {
            e["objectRef"]["resource"] == "nodes" && e["user"]["username"] == user.as_str()
        })
        .await;
    let refused = refused.last().unwrap();
    assert_eq!(refused["responseStatus"]["code"], 403, "{refused}");
    assert_eq!(
        (
            refused["annotations"]["authorization.k8s.io/decision"].as_str(),
            refused["annotations"]["authorization.k8s.io/reason"].as_str()
        ),
        (Some("forbid"), Some("")),
        "{refused}"
    );

    // A token nobody issued: 401, and one event with no user, at stage ResponseStarted.
    let mut kc = Kubeconfig::read_from(s.kubeconfig_path()).expect("the kubeconfig");
    let mut auth = serde_json::to_value(&kc.auth_infos[0]).expect("an auth info");
    auth["user"] = serde_json::json!({"token": "nobody-issued-this"});
    kc.auth_infos[0] = serde_json::from_value(auth).expect("an auth info");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    let stranger = kube::Client::try_from(config).expect("a client");
    let path = format!("/api/v1/namespaces/{ns}/secrets");
    let r = raw(&stranger, "GET", &path, None, Vec::new()).await;
    assert_eq!(r.status, 401, "{}", r.text());
    let got = log
        .wait_for("ResponseStarted", |e| about(e, ns, "secrets", "list"))
        .await;
    assert_eq!(got.len(), 1, "{got:?}");
    let ev = &got[0];
    assert_eq!(ev["user"], serde_json::json!({}), "{ev}");
    assert_eq!(
        ev["responseStatus"],
        serde_json::json!({"metadata": {}, "code": 401,
            "message": "Authentication failed, attempted: bearer"}),
        "{ev}"
    );
    assert_eq!(ev["requestURI"], path);
    assert_eq!(ev["level"], "Metadata");
    assert!(ev.get("annotations").is_none(), "{ev}");
}
