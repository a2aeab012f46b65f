//! `prune_unknown_fields`: the unknown fields kube-apiserver's strict decoding reports for JSON
//! objects of built-in kinds, with upstream's paths, and their removal.

use std::path::Path;

use kgc_proto::prune_unknown_fields;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Runs the function on a copy of `obj` and returns the paths and the pruned copy.
fn prune(obj: &Value) -> (Vec<String>, Value) {
    let api_version = obj["apiVersion"].as_str().unwrap().to_owned();
    let kind = obj["kind"].as_str().unwrap().to_owned();
    let mut pruned = obj.clone();
    let unknown = prune_unknown_fields(&api_version, &kind, &mut pruned)
        .unwrap_or_else(|| panic!("{api_version} {kind} is not a known built-in"));
    (unknown, pruned)
}

/// Asserts that `obj` has no unknown fields and comes back unchanged.
fn assert_clean(name: &str, obj: &Value) {
    let (unknown, pruned) = prune(obj);
    assert!(
        unknown.is_empty(),
        "{name}: unexpected unknown fields {unknown:?}"
    );
    assert_eq!(
        &pruned, obj,
        "{name}: a valid object must come back unchanged"
    );
}

/// Asserts the unknown fields of `obj`, and that pruning removed them (and nothing else).
fn assert_unknown(obj: Value, expected: &[&str], expected_pruned: Value) {
    let (unknown, pruned) = prune(&obj);
    assert_eq!(unknown, expected);
    assert_eq!(pruned, expected_pruned);
    // Pruning is idempotent: what is left is clean.
    assert_clean("pruned", &pruned);
}

/// Every kind kgc serves (kgc-meta's built-in catalog), apiextensions aside.
const SERVED: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ReplicationController"),
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Endpoints"),
    ("v1", "ServiceAccount"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Node"),
    ("v1", "Event"),
    ("v1", "LimitRange"),
    ("v1", "ResourceQuota"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("coordination.k8s.io/v1", "Lease"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("networking.k8s.io/v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("policy/v1", "PodDisruptionBudget"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("events.k8s.io/v1", "Event"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
];

/// Realistic, fully valid objects of every served kind (Kubernetes 1.32 field sets), rich enough
/// to touch most of each type: `kubectl create … --dry-run=client -o json` shapes plus the
/// optional fields users and controllers set, `status` included.
const MANIFESTS: &str = include_str!("manifests.json");

fn manifests() -> Vec<(String, Value)> {
    let Value::Object(map) = serde_json::from_str::<Value>(MANIFESTS).unwrap() else {
        panic!("MANIFESTS is an object");
    };
    map.into_iter().collect()
}

#[test]
fn every_served_kind_is_known() {
    for &(api_version, kind) in SERVED {
        let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
        assert_eq!(
            prune_unknown_fields(api_version, kind, &mut obj),
            Some(vec![]),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn every_served_kind_has_a_realistic_manifest_without_unknown_fields() {
    let manifests = manifests();
    for &(api_version, kind) in SERVED {
        assert!(
            manifests
                .iter()
                .any(|(_, m)| m["apiVersion"] == api_version && m["kind"] == kind),
            "no manifest for {api_version} {kind}"
        );
    }
    for (name, manifest) in &manifests {
        assert_clean(name, manifest);
    }
}

#[test]
fn every_kubectl_fixture_has_no_unknown_fields() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "json") {
            let obj: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_clean(&path.display().to_string(), &obj);
            count += 1;
        }
    }
    assert!(count >= 30, "only {count} fixtures");
}

#[test]
fn custom_resources_and_unknown_kinds_are_not_handled() {
    for (api_version, kind) in [
        ("example.com/v1", "Widget"),
        // Not in kubectl 1.32's binary, so not in the schema: callers get `None` for CRDs.
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apps/v2", "Deployment"),
        ("v1", "Deployment"),
        ("v1", "pod"),
        ("", ""),
    ] {
        let mut obj = json!({"apiVersion": api_version, "kind": kind, "bogus": 1});
        let before = obj.clone();
        assert_eq!(prune_unknown_fields(api_version, kind, &mut obj), None);
        assert_eq!(obj, before, "untouched");
    }
}

#[test]
fn unknown_top_level_field() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}, "bogus": {"x": 1}}),
        &["bogus"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}),
    );
}

#[test]
fn unknown_fields_are_reported_whatever_their_value() {
    for value in [
        json!(null),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
        json!([{"a": 1}]),
    ] {
        assert_unknown(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "bogus": value}),
            &["bogus"],
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
        );
    }
}

#[test]
fn unknown_fields_nested_in_spec_and_in_list_items() {
    // The error kube-apiserver gives for this body: `Deployment in version "v1" cannot be handled
    // as a Deployment: strict decoding error: unknown field "spec.bogus", unknown field
    // "spec.template.spec.containers[0].bogus"`.
    assert_unknown(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "bogus": true,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "a", "image": "nginx", "bogus": 1},
                        {"name": "b", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 81, "bogus": 2}]}
                    ]}
                }
            }
        }),
        &[
            "spec.bogus",
            "spec.template.spec.containers[0].bogus",
            "spec.template.spec.containers[1].ports[1].bogus",
        ],
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "a", "image": "nginx"},
                        {"name": "b", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 81}]}
                    ]}
                }
            }
        }),
    );
}

#[test]
fn upstream_field_validation_integration_body() {
    // kubernetes test/integration/apiserver/field_validation_test.go's `invalidBodyJSON`
    // (duplicates aside: a serde_json value has none left).
    assert_unknown(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "nginx"}},
            "spec": {
                "unknown1": "val1", "unknownDupe": "valDupe2", "paused": false,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:latest", "unknownNested": "val1", "imagePullPolicy": "Never"}
                ]}}
            }
        }),
        &[
            "spec.template.spec.containers[0].unknownNested",
            "spec.unknown1",
            "spec.unknownDupe",
        ],
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "nginx"}},
            "spec": {
                "paused": false,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "Never"}
                ]}}
            }
        }),
    );
}

#[test]
fn unknown_field_inside_a_map_value_struct() {
    // map[QualifiedName]DeviceAttribute / map[QualifiedName]DeviceCapacity: the map key joins the
    // path like a field name.
    assert_unknown(
        json!({
            "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "basic": {
                    "attributes": {"gpu.example.com/model": {"string": "a100", "bogus": 1}, "index": {"int": 0}},
                    "capacity": {"memory": {"value": "40Gi", "valu": "x"}}
                }}]}
        }),
        &[
            "spec.devices[0].basic.attributes.gpu.example.com/model.bogus",
            "spec.devices[0].basic.capacity.memory.valu",
        ],
        json!({
            "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "basic": {
                    "attributes": {"gpu.example.com/model": {"string": "a100"}, "index": {"int": 0}},
                    "capacity": {"memory": {"value": "40Gi"}}
                }}]}
        }),
    );
}

#[test]
fn maps_of_scalars_have_no_unknown_fields() {
    assert_clean(
        "labels",
        &json!({
            "apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "labels": {"bogus": "x"}, "annotations": {"spec.bogus": "y"}},
            "spec": {"hard": {"bogus": "1", "requests.storage": "0.5Ti"}}
        }),
    );
}

#[test]
fn inline_structs_contribute_their_fields() {
    assert_unknown(
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "volumes": [
                    {"name": "a", "configMap": {"name": "cm"}},
                    {"name": "b", "bogus": {}, "secret": {"secretName": "s", "bogus": 1}},
                    // The Go name of the embedded struct is not a JSON field.
                    {"name": "c", "VolumeSource": {"emptyDir": {}}}
                ],
                "containers": [{
                    "name": "c", "image": "i",
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "bogus": 1}}}],
                    "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5, "bogus": 1, "ProbeHandler": {}},
                    "lifecycle": {"preStop": {"exec": {"command": ["x"]}, "bogus": 1}}
                }],
                "ephemeralContainers": [{"name": "dbg", "image": "busybox", "targetContainerName": "c", "bogus": 1}]
            }
        }),
        &[
            "spec.containers[0].env[0].valueFrom.secretKeyRef.bogus",
            "spec.containers[0].lifecycle.preStop.bogus",
            "spec.containers[0].livenessProbe.ProbeHandler",
            "spec.containers[0].livenessProbe.bogus",
            "spec.ephemeralContainers[0].bogus",
            "spec.volumes[1].bogus",
            "spec.volumes[1].secret.bogus",
            "spec.volumes[2].VolumeSource",
        ],
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "volumes": [
                    {"name": "a", "configMap": {"name": "cm"}},
                    {"name": "b", "secret": {"secretName": "s"}},
                    {"name": "c"}
                ],
                "containers": [{
                    "name": "c", "image": "i",
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                    "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5},
                    "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}
                }],
                "ephemeralContainers": [{"name": "dbg", "image": "busybox", "targetContainerName": "c"}]
            }
        }),
    );
}

#[test]
fn inline_structs_of_other_kinds() {
    assert_clean(
        "pv hostPath, ingress http",
        &json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
                "spec": {"hostPath": {"path": "/x"}, "capacity": {"storage": "1Gi"}}}),
    );
    assert_unknown(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
               "spec": {"rules": [{"host": "a", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80, "nmber": 1}}}}]}, "IngressRuleValue": {}}]}}),
        &[
            "spec.rules[0].IngressRuleValue",
            "spec.rules[0].http.paths[0].backend.service.port.nmber",
        ],
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
               "spec": {"rules": [{"host": "a", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}),
    );
}

#[test]
fn opaque_fields_allow_anything() {
    assert_clean(
        "controllerrevision data (RawExtension)",
        &json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "revision": 2,
                "data": {"bogus": {"nested": [{"anything": true}]}, "spec": {"template": {"spec": {"bogus": 1}}}}}),
    );
    assert_clean(
        "managedFields fieldsV1",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:a": {}}, "bogus": [1, 2]}}]}}),
    );
    // Quantity, IntOrString, Time, MicroTime and []byte are scalars: a wrong JSON type there is a
    // type error for others to report, never an unknown field.
    assert_clean(
        "scalars holding objects",
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "creationTimestamp": {"bogus": 1}, "labels": {"a": {"bogus": 1}}},
                "spec": {"strategy": {"rollingUpdate": {"maxSurge": {"bogus": 1}}},
                         "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": {"bogus": 1}}}, "command": [{"bogus": 1}]}]}}}}),
    );
    assert_clean(
        "lease microtime",
        &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"renewTime": {"bogus": 1}}}),
    );
    assert_clean(
        "csr extra (map of []string)",
        &json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
                "spec": {"request": "", "signerName": "s", "extra": {"k": [{"bogus": 1}], "j": {"bogus": 1}}}}),
    );
}

#[test]
fn metadata_typos() {
    assert_unknown(
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "ds", "labelz": {"a": "b"}, "namespace": "default", "clusterName": "c"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}, "annotation": {}, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controler": true}]}, "spec": {"containers": []}}}}),
        &[
            "metadata.clusterName",
            "metadata.labelz",
            "spec.template.metadata.annotation",
            "spec.template.metadata.ownerReferences[0].controler",
        ],
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "ds", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u"}]}, "spec": {"containers": []}}}}),
    );
}

#[test]
fn type_meta_is_known_only_where_go_embeds_it() {
    assert_unknown(
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"selector": {"matchLabels": {"a": "b"}},
                        "template": {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
                        // A PersistentVolumeClaim embeds TypeMeta wherever it appears.
                        "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}]}}),
        &["spec.template.apiVersion", "spec.template.kind"],
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"selector": {"matchLabels": {"a": "b"}},
                        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
                        "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}]}}),
    );
}

#[test]
fn names_match_case_sensitively() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "Namespace", "Metadata": {"name": "x"}, "metadata": {"Name": "y"}, "Kind": "Namespace"}),
        &["Kind", "Metadata", "metadata.Name"],
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {}}),
    );
}

#[test]
fn odd_keys_are_reported_verbatim() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "": 1, "a.b": 2, "metadata": {"": 3, "x\"y": 4}}),
        &["", "a.b", "metadata.", "metadata.x\"y"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    );
}

#[test]
fn status_is_known_where_the_kind_has_it() {
    assert_clean(
        "pod status",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
    );
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "status": {}, "spec": {}}),
        &["spec", "status"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    );
}

#[test]
fn wrong_json_types_are_not_unknown_fields() {
    for obj in [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": "x", "spec": [1, {"bogus": 1}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": {"bogus": {"bogus": 1}}}}}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [null, 1, "x", [{"bogus": 1}]]}}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeSelector": [{"bogus": 1}], "overhead": "x"}}),
    ] {
        assert_clean("type errors", &obj);
    }
    for mut obj in [json!(null), json!([{"bogus": 1}]), json!("x"), json!(1)] {
        let before = obj.clone();
        assert_eq!(prune_unknown_fields("v1", "Pod", &mut obj), Some(vec![]));
        assert_eq!(obj, before);
    }
}

#[test]
fn a_fixture_with_typos_everywhere() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pod-debug-copy.json");
    let clean: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut dirty = clean.clone();
    dirty["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    dirty["spec"]["bogus"] = json!(1);
    dirty["status"]["bogus"] = json!(1);
    let (unknown, pruned) = prune(&dirty);
    assert_eq!(
        unknown,
        [
            "spec.bogus",
            "spec.containers[0].imagePullPolicyy",
            "status.bogus"
        ]
    );
    assert_eq!(pruned, clean);
}

/// Arbitrary JSON, objects keyed by a mix of real field names and junk.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("metadata".to_owned()),
        Just("spec".to_owned()),
        Just("status".to_owned()),
        Just("template".to_owned()),
        Just("containers".to_owned()),
        Just("volumes".to_owned()),
        Just("labels".to_owned()),
        Just("data".to_owned()),
        Just("apiVersion".to_owned()),
        Just("kind".to_owned()),
        Just("name".to_owned()),
        Just("configMap".to_owned()),
        Just("httpGet".to_owned()),
        Just("jobTemplate".to_owned()),
        Just("rules".to_owned()),
        Just("subjects".to_owned()),
        "[a-zA-Z.]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z]{0,5}".prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 128, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Never panics; what is left after pruning is clean and unchanged by a second pass; every
    /// reported path is distinct.
    #[test]
    fn arbitrary_json_never_panics(kind in 0..SERVED.len(), obj in arbitrary_json()) {
        let (api_version, kind) = SERVED[kind];
        let mut pruned = obj.clone();
        let unknown = prune_unknown_fields(api_version, kind, &mut pruned).unwrap();
        let mut distinct = unknown.clone();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(distinct.len(), unknown.len());
        prop_assert_eq!(unknown.is_empty(), pruned == obj);
        let mut again = pruned.clone();
        prop_assert_eq!(prune_unknown_fields(api_version, kind, &mut again), Some(vec![]));
        prop_assert_eq!(again, pruned);
    }

    /// Arbitrary JSON grafted anywhere into a valid manifest never panics either.
    #[test]
    fn grafts_into_valid_manifests_never_panic(
        which in any::<prop::sample::Index>(),
        path in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        key in "[a-zA-Z]{1,8}",
        graft in arbitrary_json(),
    ) {
        let manifests = manifests();
        let (_, manifest) = &manifests[which.index(manifests.len())];
        let mut obj = manifest.clone();
        // Walk down by the sampled indices, building a JSON pointer.
        let mut pointer = String::new();
        let mut at = &obj;
        for step in &path {
            let next = match at {
                Value::Object(map) if !map.is_empty() => {
                    map.iter().nth(step.index(map.len())).map(|(k, v)| {
                        (k.replace('~', "~0").replace('/', "~1"), v)
                    })
                }
                Value::Array(items) if !items.is_empty() => {
                    let i = step.index(items.len());
                    Some((i.to_string(), &items[i]))
                }
                _ => None,
            };
            let Some((segment, next)) = next else { break };
            pointer.push('/');
            pointer.push_str(&segment);
            at = next;
        }
        let target = obj.pointer_mut(&pointer).unwrap();
        if let Value::Object(map) = target {
            map.insert(key, graft);
        }
        let (unknown, pruned) = prune(&obj);
        prop_assert_eq!(unknown.is_empty(), pruned == obj);
        let mut again = pruned.clone();
        let api_version = pruned["apiVersion"].as_str().unwrap().to_owned();
        let kind = pruned["kind"].as_str().unwrap().to_owned();
        prop_assert_eq!(prune_unknown_fields(&api_version, &kind, &mut again), Some(vec![]));
    }
}
