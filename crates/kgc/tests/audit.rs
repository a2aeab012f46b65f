//! The audit log (issue 32's follow-up item 2) against one spawned, secure `kgc serve` with
//! `--audit-log-path` and `--audit-policy-file`: the events kubectl's requests leave in the
//! file, at the level and stages the policy gives (levels by resource, `omitStages` of a rule),
//! a watch's `ResponseStarted`, the authorizer's decision, and what a ValidatingAdmissionPolicy
//! records there (`Audit` failures and `auditAnnotations`).

kgc_testsupport::bind_kgc!();

use std::path::Path;
use std::time::Duration;

use kgc_testsupport::*;
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

/// The events of the log so far.
fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event per line"))
        .collect()
}

/// Waits for the events matching `pick` to reach `stage`, and returns them all.
async fn wait_for(path: &Path, stage: &str, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    eventually(&format!("a {stage} event"), Duration::from_secs(20), || {
        let found = events(path).iter().any(|e| pick(e) && e["stage"] == stage);
        async move { found }
    })
    .await;
    events(path).into_iter().filter(|e| pick(e)).collect()
}

fn about(e: &Value, ns: &str, resource: &str, verb: &str) -> bool {
    e["objectRef"]["namespace"] == ns && e["objectRef"]["resource"] == resource && e["verb"] == verb
}

#[tokio::test]
async fn audit_log() {
    let dir = std::env::temp_dir().join(unique("kgc-audit"));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.join("audit.log");
    let s = Server::start_secure(&[
        "--in-memory",
        "--audit-log-path",
        log.to_str().unwrap(),
        "--audit-policy-file",
        policy.to_str().unwrap(),
    ])
    .await;
    let c = s.client();
    let ns = fresh_namespace(&c, "audit").await;

    // RequestResponse: both stages, one audit ID, the request and the response objects.
    s.kubectl_ok(&["create", "configmap", "cm", "-n", &ns, "--from-literal=a=b"])
        .await;
    let done = wait_for(&log, "ResponseComplete", |e| {
        about(e, &ns, "configmaps", "create") && e["objectRef"]["name"] == "cm"
    })
    .await
    .remove(0);
    let created: Vec<Value> = events(&log)
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
    for stamp in ["requestReceivedTimestamp", "stageTimestamp"] {
        assert!(done[stamp].as_str().unwrap().ends_with('Z'), "{done}");
    }

    // A failure's status in the event; `Metadata` omits the objects; a rule's omitStages.
    let out = s.kubectl(&["get", "pod", "nope", "-n", &ns]).await;
    assert!(!out.status.success());
    let got = wait_for(&log, "ResponseComplete", |e| about(e, &ns, "pods", "get")).await;
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
    let watched = wait_for(&log, "ResponseComplete", |e| {
        e["auditID"] == audit_id.as_str()
    })
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
    let got = wait_for(&log, "ResponseComplete", |e| {
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
    std::fs::remove_dir_all(dir).ok();
}
