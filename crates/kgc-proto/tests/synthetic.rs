//! Hand-built protobuf bodies for what kubectl's generators never send: timestamps, MicroTime,
//! FieldsV1/RawExtension, quantities, IntOrString strings, inline structs, packed numbers,
//! pointer-versus-value zero values, unknown fields, and every error path.

use kgc_proto::{Error, decode};
use serde_json::json;

// ---- a minimal protobuf encoder -------------------------------------------------------------

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
fn v(number: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(number) << 3, &mut out);
    varint(value, &mut out);
    out
}

/// A length-delimited field.
fn b(number: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint((u64::from(number) << 3) | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

/// A string field.
fn s(number: u32, text: &str) -> Vec<u8> {
    b(number, text.as_bytes())
}

/// A message field from its encoded parts.
fn m(number: u32, parts: &[Vec<u8>]) -> Vec<u8> {
    b(number, &parts.concat())
}

/// A `map<string, …>` entry field.
fn entry(number: u32, key: &str, value: Vec<u8>) -> Vec<u8> {
    m(number, &[s(1, key), value])
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut body = b"k8s\0".to_vec();
    body.extend(m(1, &[s(1, api_version), s(2, kind)]));
    body.extend(b(2, raw));
    body
}

const T: u64 = 1_767_323_045; // 2026-01-02T03:04:05Z

// ---- tests ------------------------------------------------------------------------------------

#[test]
fn pod_with_every_special_type() {
    let metadata = m(
        1,
        &[
            s(1, "p"),
            s(3, "ns"),
            v(7, 3),
            m(8, &[v(1, T), v(2, 999)]), // creationTimestamp: nanos are dropped
            m(9, &[v(1, T + 60)]),       // deletionTimestamp (pointer)
            v(10, 0),                    // deletionGracePeriodSeconds: *int64 zero is kept
            entry(11, "app", s(2, "web")),
            entry(11, "empty", vec![]), // absent value: ""
            m(
                13,
                &[
                    s(5, "apps/v1"),
                    s(1, "ReplicaSet"),
                    s(3, "rs"),
                    s(4, "u1"),
                    v(6, 1),
                ],
            ),
            m(
                17,
                &[
                    s(1, "kubectl"),
                    s(2, "Apply"),
                    s(3, "v1"),
                    m(4, &[v(1, T)]),
                    s(6, "FieldsV1"),
                    m(7, &[b(1, br#"{"f:metadata":{"f:labels":{}}}"#)]),
                ],
            ),
        ],
    );
    let container = m(
        2,
        &[
            s(1, "c"),
            s(2, "nginx"),
            m(6, &[s(1, ""), v(2, 0), v(3, 80), s(4, "TCP"), s(5, "")]), // zero hostPort omitted
            m(
                8,
                &[
                    entry(1, "cpu", m(2, &[s(1, "500m")])),
                    entry(1, "memory", m(2, &[s(1, "1Gi")])),
                    entry(2, "cpu", vec![]), // absent quantity: "0"
                ],
            ),
            m(
                10,
                &[
                    m(
                        1,
                        &[m(2, &[s(1, "/healthz"), m(2, &[v(1, 1), s(3, "http")])])],
                    ),
                    v(2, 0),
                    v(3, 1),
                ],
            ),
            v(16, 0), // stdin false: omitted
            v(18, 1), // tty true
        ],
    );
    let volume = m(
        1,
        &[
            s(1, "cfg"),
            m(2, &[m(19, &[m(1, &[s(1, "cm")]), v(3, 0o644)])]),
        ],
    );
    let security = m(14, &[v(2, 0), b(4, &[1, 2, 0x80, 0x01]), v(4, 7)]); // packed + unpacked
    let spec = m(
        2,
        &[
            volume,
            container,
            v(4, 0),
            v(11, 0),
            security,
            b(999, b"unknown field"),
        ],
    );
    let body = envelope("v1", "Pod", &[metadata, spec].concat());
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "generation": 3,
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "deletionTimestamp": "2026-01-02T03:05:05Z",
                "deletionGracePeriodSeconds": 0,
                "labels": {"app": "web", "empty": ""},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true}
                ],
                "managedFields": [{
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "time": "2026-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {}}}
                }]
            },
            "spec": {
                "volumes": [{"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}}],
                "containers": [{
                    "name": "c",
                    "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "0"}},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "timeoutSeconds": 1},
                    "tty": true
                }],
                "terminationGracePeriodSeconds": 0,
                "securityContext": {"runAsUser": 0, "supplementalGroups": [1, 2, 128, 7]}
            },
            "status": {}
        })
    );
}

#[test]
fn micro_time_raw_extension_and_string_lists() {
    let event = [
        m(1, &[s(1, "e")]),
        m(2, &[v(1, T), v(2, 123_456_789)]),
        s(7, "Started"),
        m(8, &[s(1, "Pod"), s(3, "p")]),
    ]
    .concat();
    assert_eq!(
        decode(&envelope("events.k8s.io/v1", "Event", &event)).unwrap(),
        json!({
            "kind": "Event",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e", "creationTimestamp": null},
            "eventTime": "2026-01-02T03:04:05.123456Z",
            "reason": "Started",
            "regarding": {"kind": "Pod", "name": "p"},
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null
        })
    );

    let revision = [
        m(1, &[s(1, "r")]),
        m(2, &[b(1, br#"{"spec":{"x":[1,"a"]}}"#)]),
        v(3, 2),
    ]
    .concat();
    assert_eq!(
        decode(&envelope("apps/v1", "ControllerRevision", &revision)).unwrap(),
        json!({
            "kind": "ControllerRevision",
            "apiVersion": "apps/v1",
            "metadata": {"name": "r", "creationTimestamp": null},
            "data": {"spec": {"x": [1, "a"]}},
            "revision": 2
        })
    );

    // authentication/v1 UserInfo.extra is map<string, ExtraValue{repeated string items = 1}>.
    let review = m(
        2,
        &[
            s(3, "alice"),
            entry(5, "scopes", m(2, &[s(1, "a"), s(1, "b")])),
            entry(5, "none", vec![]),
        ],
    );
    let decoded = decode(&envelope(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &review,
    ))
    .unwrap();
    assert_eq!(decoded["spec"]["user"], "alice");
    assert_eq!(
        decoded["spec"]["extra"],
        json!({"scopes": ["a", "b"], "none": null})
    );
}

#[test]
fn repeated_occurrences_of_a_message_merge() {
    // metadata split in two occurrences, as protobuf allows.
    let raw = [
        m(1, &[s(1, "a")]),
        m(1, &[s(3, "ns")]),
        entry(2, "k", s(2, "v")),
    ]
    .concat();
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)).unwrap(),
        json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a", "namespace": "ns", "creationTimestamp": null},
            "data": {"k": "v"}})
    );
}

#[test]
fn an_empty_packed_run_leaves_the_slice_nil() {
    // PodSecurityContext.supplementalGroups (omitempty) as an empty packed run.
    let raw = m(2, &[m(14, &[b(4, &[])])]);
    let decoded = decode(&envelope("v1", "Pod", &raw)).unwrap();
    assert_eq!(decoded["spec"]["securityContext"], json!({}));
}

#[test]
fn delete_options_are_known_in_every_group_version() {
    let raw = [v(1, 30), s(4, "Foreground"), s(5, "All")].concat();
    for api_version in ["v1", "apps/v1", "meta.k8s.io/v1"] {
        assert_eq!(
            decode(&envelope(api_version, "DeleteOptions", &raw)).unwrap(),
            json!({"kind": "DeleteOptions", "apiVersion": api_version,
                "gracePeriodSeconds": 30, "propagationPolicy": "Foreground", "dryRun": ["All"]})
        );
    }
}

#[test]
fn every_kind_decodes_from_an_empty_message() {
    let kinds: Vec<_> = kgc_proto::supported_kinds().collect();
    assert!(kinds.len() > 300, "{}", kinds.len());
    for wanted in [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Namespace"),
        ("v1", "Pod"),
        ("v1", "Service"),
        ("v1", "ServiceAccount"),
        ("v1", "ResourceQuota"),
        ("apps/v1", "Deployment"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("policy/v1", "PodDisruptionBudget"),
        ("networking.k8s.io/v1", "Ingress"),
        ("authentication.k8s.io/v1", "TokenRequest"),
    ] {
        assert!(kinds.contains(&wanted), "{wanted:?}");
    }
    for (api_version, kind) in kinds {
        let decoded = decode(&envelope(api_version, kind, &[])).unwrap();
        assert_eq!(decoded["kind"], kind);
        assert_eq!(decoded["apiVersion"], api_version);
    }
}

#[test]
fn envelope_errors_are_clear() {
    assert_eq!(decode(b""), Err(Error::Empty));
    assert_eq!(decode(b"k8s\0"), Err(Error::Empty));
    assert_eq!(decode(br#"{"kind":"Pod"}"#), Err(Error::MissingMagic));
    assert_eq!(decode(b"k8s"), Err(Error::MissingMagic));
    assert!(matches!(
        decode(b"k8s\0\x0a\x05ab"),
        Err(Error::Envelope(_))
    ));
    assert!(matches!(decode(b"k8s\0\x08\x01"), Err(Error::Envelope(_))));

    let unknown = decode(&envelope("example.com/v1", "Widget", &[])).unwrap_err();
    assert_eq!(
        unknown,
        Error::UnknownKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        }
    );
    let message = unknown.to_string();
    assert!(
        message.contains("\"Widget\"") && message.contains("\"example.com/v1\""),
        "{message}"
    );
    assert!(
        decode(&envelope("v1", "Deployment", &[])).is_err(),
        "Deployment is not in v1"
    );

    let mut no_kind = b"k8s\0".to_vec();
    no_kind.extend(m(1, &[s(1, "v1")]));
    assert_eq!(decode(&no_kind), Err(Error::MissingTypeMeta("kind")));
    let mut no_version = b"k8s\0".to_vec();
    no_version.extend(m(1, &[s(2, "Pod")]));
    assert_eq!(
        decode(&no_version),
        Err(Error::MissingTypeMeta("apiVersion"))
    );

    let mut gzip = envelope("v1", "ConfigMap", &[]);
    gzip.extend(s(3, "gzip"));
    assert_eq!(decode(&gzip), Err(Error::ContentEncoding("gzip".into())));
    let mut json_raw = envelope("v1", "ConfigMap", &[]);
    json_raw.extend(s(4, "application/json"));
    assert_eq!(
        decode(&json_raw),
        Err(Error::ContentType("application/json".into()))
    );
    let mut explicit = envelope("v1", "ConfigMap", &[]);
    explicit.extend(s(4, kgc_proto::MEDIA_TYPE));
    assert!(decode(&explicit).is_ok());
}

#[test]
fn malformed_objects_name_the_field() {
    let err = |raw: &[u8]| match decode(&envelope("v1", "Pod", raw)) {
        Err(Error::Malformed { path, reason, .. }) => format!("{path}: {reason}"),
        other => panic!("{other:?}"),
    };
    // containers[0].name as a varint
    let e = err(&m(2, &[m(2, &[v(1, 5)])]));
    assert!(
        e.starts_with("spec.containers[0].name: wrong wire type varint"),
        "{e}"
    );
    // a truncated nested message
    let e = err(&[0x12, 0x03, 0x12, 0x05, 0x0a]);
    assert!(e.starts_with("spec:"), "{e}");
    // an invalid quantity
    let e = err(&m(
        2,
        &[m(
            2,
            &[s(1, "c"), m(8, &[entry(1, "cpu", m(2, &[s(1, "lots")]))])],
        )],
    ));
    assert!(
        e.starts_with(r#"spec.containers[0].resources.limits["cpu"]: invalid quantity "lots""#),
        "{e}"
    );
    // an IntOrString with an impossible type
    let e = err(&m(
        2,
        &[m(
            2,
            &[s(1, "c"), m(10, &[m(1, &[m(2, &[m(2, &[v(1, 7)])])])])],
        )],
    ));
    assert!(
        e.contains("livenessProbe.httpGet.port: impossible IntOrString.Type 7"),
        "{e}"
    );
    // a FieldsV1 that is not JSON
    let e = err(&m(1, &[m(17, &[m(7, &[b(1, b"{nope")])])]));
    assert!(
        e.starts_with("metadata.managedFields[0].fieldsV1: metav1.FieldsV1 does not hold JSON"),
        "{e}"
    );

    let message = decode(&envelope("v1", "Pod", &m(2, &[m(2, &[v(1, 5)])])))
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "malformed protobuf v1/Pod object at spec.containers[0].name: wrong wire type varint for a string field"
    );
}

#[test]
fn content_type_helper() {
    assert!(kgc_proto::is_protobuf_content_type(
        "application/vnd.kubernetes.protobuf"
    ));
    assert!(kgc_proto::is_protobuf_content_type(
        "Application/Vnd.Kubernetes.Protobuf; charset=utf-8"
    ));
    assert!(!kgc_proto::is_protobuf_content_type(""));
    assert!(!kgc_proto::is_protobuf_content_type("application/json"));
}
