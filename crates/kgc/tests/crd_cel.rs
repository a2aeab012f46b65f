//! A CRD's `x-kubernetes-validations` CEL rules, as kube-apiserver runs them: custom resources
//! refused on the rule's place in upstream's words (`message`, `messageExpression`, `reason`,
//! `failed rule: …`), transition rules (`oldSelf`) only on update, and CRDs refused whose rules
//! do not compile or whose estimated cost is over the limit. One server.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use kgc_testsupport::*;

const GROUP: &str = "celtest.example.com";

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.celtest.example.com}
spec:
  group: celtest.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas"
              message: minReplicas must not exceed maxReplicas
            - rule: "!has(oldSelf.replicas) || !has(self.replicas) || self.replicas >= oldSelf.replicas"
              messageExpression: "'replicas may not shrink below ' + string(oldSelf.replicas)"
            properties:
              minReplicas: {type: integer}
              maxReplicas: {type: integer}
              replicas: {type: integer}
              name:
                type: string
                maxLength: 20
                x-kubernetes-validations:
                - {rule: "self.startsWith('w-')", reason: FieldValueForbidden}
              tags:
                type: array
                maxItems: 10
                items: {type: string, maxLength: 10}
                x-kubernetes-validations:
                - {rule: "self.all(t, t.size() > 1) && self.isSorted()", message: tags are sorted words}
"#;

fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: {GROUP}/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

/// A one-version CRD whose `spec` carries `rule`.
fn crd_with_rule(plural: &str, spec_schema: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{GROUP}}}
spec:
  group: {GROUP}
  scope: Namespaced
  names: {{plural: {plural}, kind: K{plural}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {spec_schema}
"#
    )
}

#[tokio::test]
async fn cel_rules_admit_and_refuse_as_kube_apiserver() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "cel").await;

    // A rule that does not compile refuses the CRD, on the rule's place.
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &crd_with_rule(
                "brokens",
                r#"{type: object, x-kubernetes-validations: [{rule: "self.x >"}]}"#,
            ),
        )
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "a rule that does not compile was accepted"
    );
    assert!(
        err.contains(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.x >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"
        ),
        "{err}"
    );
    // So does one that reads what is not declared.
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &crd_with_rule(
                "strangers",
                r#"{type: object, x-kubernetes-validations: [{rule: "other == 1"}]}"#,
            ),
        )
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("compilation failed: ERROR: <input>:1:1: undeclared reference to 'other' (in container '')"),
        "{err}"
    );

    // A quadratic rule over a list without maxItems costs too much to be admitted.
    let out = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &crd_with_rule(
                "quadratics",
                r#"{type: object, properties: {items: {type: array, items: {type: string},
                    x-kubernetes-validations: [{rule: "self.all(x, self.all(y, x == y))"}]}}}"#,
            ),
        )
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "an expensive rule was accepted");
    assert!(
        err.contains(
            "spec.validation.openAPIV3Schema.properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        ),
        "{err}"
    );

    s.kubectl_stdin_ok(&["apply", "-f", "-"], CRD).await;
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/widgets.{GROUP}"),
        "--timeout=20s",
    ])
    .await;
    eventually(
        "kubectl to know widgets",
        Duration::from_secs(20),
        || async {
            s.kubectl(&["get", "widgets", "-n", &ns])
                .await
                .status
                .success()
        },
    )
    .await;

    let apply = |name: &'static str, spec: &'static str| {
        let s = &s;
        let ns = ns.clone();
        async move {
            s.kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], &widget(name, spec))
                .await
        }
    };
    let refused = |out: std::process::Output, want: &str| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "accepted; wanted {want}");
        assert!(err.contains(want), "wanted {want}, got {err}");
    };

    let out = apply(
        "w",
        "{minReplicas: 1, maxReplicas: 3, replicas: 3, name: w-one, tags: [ab, cd]}",
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    refused(
        apply("bad", "{minReplicas: 4, maxReplicas: 3}").await,
        "The Widget \"bad\" is invalid: spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas",
    );
    refused(
        apply("bad", "{name: x-one}").await,
        "spec.name: Forbidden: failed rule: self.startsWith('w-')",
    );
    refused(
        apply("bad", "{tags: [b, a]}").await,
        "spec.tags: Invalid value: \"array\": tags are sorted words",
    );

    // The transition rule runs on update only, with the stored object as oldSelf.
    refused(
        apply(
            "w",
            "{minReplicas: 1, maxReplicas: 3, replicas: 1, name: w-one, tags: [ab, cd]}",
        )
        .await,
        "spec: Invalid value: \"object\": replicas may not shrink below 3",
    );
    let out = apply(
        "w",
        "{minReplicas: 1, maxReplicas: 3, replicas: 5, name: w-one, tags: [ab, cd]}",
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replicas = s
        .kubectl_ok(&[
            "get",
            "widget",
            "w",
            "-n",
            &ns,
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await;
    assert_eq!(replicas.trim(), "5");
    // A new object has no old one: the transition rule does not run.
    let out = apply("fresh", "{replicas: 0}").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    ratcheting(&s, &ns).await;
}

/// CRDValidationRatcheting: an object stored before its schema tightened can still be updated
/// where it is valid; its unchanged invalid value passes the schema, and its rule's failure is
/// a `Warning`; changing that value is refused.
async fn ratcheting(s: &Server, ns: &str) {
    let loose = crd_with_rule(
        "ratchets",
        "{type: object, properties: {name: {type: string}, size: {type: integer}}}",
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &loose).await;
    let object = |name: &str, size: u32| {
        format!(
            "apiVersion: {GROUP}/v1\nkind: Kratchets\nmetadata: {{name: r}}\nspec: {{name: {name}, size: {size}}}\n"
        )
    };
    eventually(
        "the ratchets CRD to serve",
        Duration::from_secs(20),
        || async {
            s.kubectl_stdin(&["apply", "-n", ns, "-f", "-"], &object("toolong", 1))
                .await
                .status
                .success()
        },
    )
    .await;
    let strict = crd_with_rule(
        "ratchets",
        r#"{type: object, properties: {size: {type: integer},
            name: {type: string, maxLength: 3, x-kubernetes-validations: [{rule: "self.startsWith('a')"}]}}}"#,
    );
    s.kubectl_stdin_ok(&["apply", "-f", "-"], &strict).await;
    eventually(
        "the stricter schema to apply",
        Duration::from_secs(20),
        || async {
            let out = s
                .kubectl_stdin(
                    &["create", "-n", ns, "-f", "-", "--dry-run=server"],
                    &object("toolong", 1).replace("name: r}", "name: r2}"),
                )
                .await;
            !out.status.success()
        },
    )
    .await;
    let out = s
        .kubectl_stdin(&["apply", "-n", ns, "-f", "-"], &object("toolong", 2))
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "Warning: spec.name: Invalid value: \"string\": failed rule: self.startsWith('a')"
        ),
        "{err}"
    );
    let out = s
        .kubectl_stdin(&["apply", "-n", ns, "-f", "-"], &object("toolonger", 2))
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "a changed invalid value was accepted"
    );
    assert!(
        err.contains("spec.name: Too long: may not be more than 3 bytes"),
        "{err}"
    );
}
