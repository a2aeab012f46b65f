//! A CRD's structural schema is enforced on its custom resources as kube-apiserver enforces it,
//! and kubectl shows upstream's words: every value validation (`pattern`, `format`, bounds,
//! lengths, counts, list types, junctors) refuses a violating object with a 422 naming the
//! field, and a CRD whose schema is itself invalid (a `pattern` that does not compile) is
//! refused. One server; each case its own object.

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use kgc_testsupport::*;

const GROUP: &str = "crdval.example.com";

fn crd(pattern: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gizmos.{GROUP}}}
spec:
  group: {GROUP}
  scope: Namespaced
  names: {{plural: gizmos, singular: gizmo, kind: Gizmo}}
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
            properties:
              name: {{type: string, pattern: '{pattern}', minLength: 2, maxLength: 8}}
              id: {{type: string, format: uuid}}
              size: {{type: integer, minimum: 1, maximum: 10, multipleOf: 2}}
              ratio: {{type: number, exclusiveMaximum: true, maximum: 1}}
              tags:
                type: array
                minItems: 1
                maxItems: 3
                x-kubernetes-list-type: set
                items: {{type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port]
                items:
                  type: object
                  required: [port]
                  properties: {{port: {{type: integer}}, name: {{type: string}}}}
              labels:
                type: object
                maxProperties: 2
                additionalProperties: {{type: string}}
              mode:
                type: string
                anyOf: [{{enum: [fast]}}, {{pattern: '^slow-'}}]
"#
    )
}

fn gizmo(name: &str, spec: &str) -> String {
    format!("apiVersion: {GROUP}/v1\nkind: Gizmo\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

#[tokio::test]
async fn crd_schema_keywords_refuse_violations_in_upstream_words() {
    let s = Server::start().await;
    let ns = fresh_namespace(&s.client(), "crdval").await;

    // A pattern that is not a regular expression refuses the CRD.
    let out = s
        .kubectl_stdin(&["apply", "-f", "-"], &crd("(unclosed"))
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "an invalid pattern was accepted");
    assert!(
        err.contains(
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: \"(unclosed\": must be a valid regular expression, but isn't: error parsing regexp: missing closing )"
        ),
        "{err}"
    );

    s.kubectl_stdin_ok(&["apply", "-f", "-"], &crd("^[a-z]+$"))
        .await;
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/gizmos.{GROUP}"),
        "--timeout=20s",
    ])
    .await;
    // Discovery of the new kind may lag the condition by a moment in kubectl's cache.
    eventually(
        "kubectl to know gizmos",
        Duration::from_secs(20),
        || async {
            s.kubectl(&["get", "gizmos", "-n", &ns])
                .await
                .status
                .success()
        },
    )
    .await;

    s.kubectl_stdin_ok(
        &["apply", "-n", &ns, "-f", "-"],
        &gizmo(
            "ok",
            "{name: abc, id: 6ba7b810-9dad-11d1-80b4-00c04fd430c8, size: 4, ratio: 0.5, tags: [a, b], ports: [{port: 80}, {port: 81}], labels: {a: b}, mode: slow-x}",
        ),
    )
    .await;

    let cases = [
        (
            "{name: ABC}",
            "spec.name: Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            "{name: a}",
            "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
        ),
        (
            "{name: abcdefghij}",
            "spec.name: Too long: may not be more than 8 bytes",
        ),
        (
            "{id: not-a-uuid}",
            "spec.id: Invalid value: \"not-a-uuid\": spec.id in body must be of type uuid: \"not-a-uuid\"",
        ),
        (
            "{size: 12}",
            "spec.size: Invalid value: 12: spec.size in body should be less than or equal to 10",
        ),
        (
            "{size: 0}",
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        ),
        (
            "{size: 3}",
            "spec.size: Invalid value: 3: spec.size in body should be a multiple of 2",
        ),
        (
            "{ratio: 1}",
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
        ),
        (
            "{tags: []}",
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
        ),
        (
            "{tags: [a, b, c, d]}",
            "spec.tags: Too many: 4: must have at most 3 items",
        ),
        ("{tags: [a, a]}", "spec.tags[1]: Duplicate value: \"a\""),
        (
            "{ports: [{port: 80}, {port: 80, name: x}]}",
            "spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80}",
        ),
        ("{ports: [{name: x}]}", "spec.ports[0].port: Required value"),
        (
            "{labels: {a: b, c: d, e: f}}",
            "spec.labels: Too many: 3: must have at most 2 items",
        ),
        (
            "{mode: medium}",
            "spec.mode: Invalid value: \"\": spec.mode in body must validate at least one schema (anyOf)",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (spec, want)) in cases.iter().enumerate() {
        let out = s
            .kubectl_stdin(
                &["apply", "-n", &ns, "-f", "-"],
                &gizmo(&format!("bad-{i}"), spec),
            )
            .await;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success()
            || !err.contains(want)
            || !err.contains(&format!("The Gizmo \"bad-{i}\" is invalid"))
        {
            failures.push(format!(
                "{spec}: want {want}\n  got (success={}): {err}",
                out.status.success()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
