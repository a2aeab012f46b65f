//! ValidatingAdmissionPolicy (issue 32 item 6) against one spawned `kgc serve`, with kubectl:
//! policies and bindings applied from YAML, Deployments refused or warned about in upstream's
//! words, params from a ConfigMap, a missing param under both `parameterNotFoundAction`s, and
//! `matchConditions` skipping a policy. Each scenario binds its policy to its own namespace.

kgc_testsupport::bind_kgc!();

use kgc_testsupport::*;

/// A policy `name` over Deployment creates and updates, with `spec` lines appended under
/// `spec:` (YAML, indented by two spaces), and its binding to namespace `ns`, with
/// `binding` lines appended under the binding's `spec:`.
fn policy(name: &str, ns: &str, spec: &str, binding: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {name}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
{spec}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {name}-binding
spec:
  policyName: {name}
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {ns}
{binding}
"
    )
}

const MAX_FIVE: &str = "  validations:
  - expression: object.spec.replicas <= 5";

/// `kubectl create deployment web --replicas=N`: its output.
async fn deployment(s: &Server, ns: &str, name: &str, replicas: u32) -> std::process::Output {
    s.kubectl(&[
        "create",
        "deployment",
        name,
        "-n",
        ns,
        "--image=nginx",
        &format!("--replicas={replicas}"),
    ])
    .await
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn validating_admission_policies() {
    let s = Server::start().await;
    let c = s.client();

    // Deny: too many replicas refused in upstream's words (422 Invalid); few enough pass; other
    // namespaces are not bound.
    let ns = fresh_namespace(&c, "vap-deny").await;
    let other = fresh_namespace(&c, "vap-other").await;
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy("max-five", &ns, MAX_FIVE, "  validationActions: [Deny]"),
    )
    .await;
    let out = deployment(&s, &ns, "big", 6).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-five' with binding 'max-five-binding' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{}",
        stderr(&out)
    );
    let raw = s
        .kubectl_stdin(
            &["create", "-f", "-", "-v=6"],
            &format!(
                "{{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{{\"name\":\"big2\",\"namespace\":\"{ns}\"}},\"spec\":{{\"replicas\":9,\"selector\":{{\"matchLabels\":{{\"a\":\"b\"}}}},\"template\":{{\"metadata\":{{\"labels\":{{\"a\":\"b\"}}}},\"spec\":{{\"containers\":[{{\"name\":\"c\",\"image\":\"nginx\"}}]}}}}}}}}"
            ),
        )
        .await;
    assert!(
        stderr(&raw).contains("422 Unprocessable Entity"),
        "{}",
        stderr(&raw)
    );
    assert!(deployment(&s, &ns, "small", 2).await.status.success());
    assert!(deployment(&s, &other, "big", 6).await.status.success());
    // An update is checked too.
    let patch = s
        .kubectl(&[
            "patch",
            "deployment",
            "small",
            "-n",
            &ns,
            "-p",
            "{\"spec\":{\"replicas\":7}}",
        ])
        .await;
    assert!(!patch.status.success(), "{}", stderr(&patch));
    assert!(
        stderr(&patch).contains("denied request"),
        "{}",
        stderr(&patch)
    );

    // Warn: allowed, and kubectl prints the warning.
    let ns = fresh_namespace(&c, "vap-warn").await;
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy("warn-five", &ns, MAX_FIVE, "  validationActions: [Warn]"),
    )
    .await;
    let out = deployment(&s, &ns, "big", 6).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'warn-five' with binding 'warn-five-binding': failed expression: object.spec.replicas <= 5"
        ),
        "{}",
        stderr(&out)
    );

    // A ConfigMap param, its limit in the message (messageExpression).
    let ns = fresh_namespace(&c, "vap-param").await;
    s.kubectl_ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        &ns,
        "--from-literal=max=3",
    ])
    .await;
    let param_spec = "  paramKind:
    apiVersion: v1
    kind: ConfigMap
  validations:
  - expression: object.spec.replicas <= int(params.data.max)
    messageExpression: \"'at most ' + params.data.max + ' replicas'\"
    reason: Forbidden";
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy(
            "param-max",
            &ns,
            param_spec,
            &format!(
                "  validationActions: [Deny]
  paramRef:
    name: limits
    namespace: {ns}
    parameterNotFoundAction: Deny"
            ),
        ),
    )
    .await;
    let out = deployment(&s, &ns, "four", 4).await;
    assert!(
        stderr(&out).contains(
            "ValidatingAdmissionPolicy 'param-max' with binding 'param-max-binding' denied request: at most 3 replicas"
        ),
        "{}",
        stderr(&out)
    );
    assert!(deployment(&s, &ns, "three", 3).await.status.success());

    // A binding to a missing param: refused under Deny, allowed (and not evaluated) under Allow.
    let ns = fresh_namespace(&c, "vap-missing").await;
    let missing = |action: &str| {
        policy(
            "missing-param",
            &ns,
            &param_spec.replace("params.data.max)", "params.data.max) && false"),
            &format!(
                "  validationActions: [Deny]
  paramRef:
    name: absent
    parameterNotFoundAction: {action}"
            ),
        )
    };
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &missing("Deny"))
        .await;
    let out = deployment(&s, &ns, "one", 1).await;
    assert!(
        stderr(&out).contains(
            "ValidatingAdmissionPolicy 'missing-param' with binding 'missing-param-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        stderr(&out)
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &missing("Allow"))
        .await;
    assert!(deployment(&s, &ns, "one", 1).await.status.success());

    // matchConditions: an exempt Deployment skips the policy.
    let ns = fresh_namespace(&c, "vap-cond").await;
    let cond_spec = format!(
        "  matchConditions:
  - name: not-exempt
    expression: \"!has(object.metadata.labels) || !('exempt' in object.metadata.labels)\"
{MAX_FIVE}"
    );
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy("cond-five", &ns, &cond_spec, "  validationActions: [Deny]"),
    )
    .await;
    let exempt = format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: exempt
  namespace: {ns}
  labels: {{exempt: \"yes\"}}
spec:
  replicas: 9
  selector: {{matchLabels: {{app: exempt}}}}
  template:
    metadata: {{labels: {{app: exempt}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
"
    );
    s.kubectl_stdin_ok(&["create", "-f", "-"], &exempt).await;
    assert!(!deployment(&s, &ns, "big", 6).await.status.success());

    // Validation: an expression that does not compile, a binding without actions.
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &policy(
                "broken",
                &ns,
                "  validations:\n  - expression: object.spec.replicas <=",
                "  validationActions: []",
            ),
        )
        .await;
    let err = stderr(&out);
    assert!(
        err.contains("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:"),
        "{err}"
    );
    assert!(
        err.contains("spec.validationActions: Required value"),
        "{err}"
    );

    // Runtime cost: an expression that would cost more than a call may is cancelled, and the
    // error follows failurePolicy (Fail); the same expression on a small object runs.
    let ns = fresh_namespace(&c, "vap-cost").await;
    let dear =
        "object.metadata.annotations.all(k, object.metadata.annotations.all(j, k == j || k != j))";
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy(
            "dear",
            &ns,
            &format!("  validations:\n  - expression: \"{dear}\""),
            "  validationActions: [Deny]",
        ),
    )
    .await;
    let with_annotations = |name: &str, n: usize| {
        let annotations: serde_json::Map<String, serde_json::Value> = (0..n)
            .map(|i| (format!("a{i}"), serde_json::Value::from("x")))
            .collect();
        serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
        .to_string()
    };
    s.kubectl_stdin_ok(&["create", "-f", "-"], &with_annotations("cheap", 5))
        .await;
    let out = s
        .kubectl_stdin(&["create", "-f", "-"], &with_annotations("dear", 1_500))
        .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!(
            "ValidatingAdmissionPolicy 'dear' with binding 'dear-binding' denied request: expression '{dear}' resulted in error: operation cancelled: actual cost limit exceeded"
        )),
        "{}",
        stderr(&out)
    );
}

/// `authorizer` in a policy asks RBAC about the requesting user (issue 32 item 6, kgc's
/// authz library): a namespace `edit` user, who may not list Nodes, is refused where the
/// `system:masters` admin is not; `authorizer.requestResource` is the request's own resource
/// (the editor may delete Deployments); `serviceAccount(ns, name)` asks about that account (the
/// namespace's `default` account may not read Secrets), with RBAC's decision in a message.
#[tokio::test]
async fn authorizer_checks_ask_rbac_for_the_requesting_user() {
    let s = Server::start_secure(&[]).await;
    let ns = fresh_namespace(&s.client(), "vap-authz").await;
    let editor = add_user(&s, &unique("editor"), &["-n", &ns, "--role", "edit"]);
    let editor = editor.to_string_lossy().into_owned();
    let spec = format!(
        "  validations:
  - expression: authorizer.group('').resource('nodes').check('list').allowed()
    message: only who may list nodes
  - expression: authorizer.requestResource.check('delete').allowed()
    message: only who may delete it
  - expression: \"!authorizer.serviceAccount('{ns}', 'default').group('').resource('secrets').namespace('{ns}').check('get').allowed()\"
    message: the default account reads secrets"
    );
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &policy("nodes-listers", &ns, &spec, "  validationActions: [Deny]"),
    )
    .await;
    let as_editor = s
        .kubectl(&[
            "--kubeconfig",
            &editor,
            "create",
            "deployment",
            "web",
            "-n",
            &ns,
            "--image=nginx",
        ])
        .await;
    assert!(
        stderr(&as_editor).contains(
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'nodes-listers' with binding 'nodes-listers-binding' denied request: only who may list nodes"
        ),
        "{}",
        stderr(&as_editor)
    );
    assert!(deployment(&s, &ns, "web", 1).await.status.success());
}
