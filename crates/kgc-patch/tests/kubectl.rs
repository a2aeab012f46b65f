//! Strategic merge patches as kubectl and the garbage collector send them (kubectl's
//! `staging/src/k8s.io/kubectl/pkg/cmd/apply/patcher.go` and
//! `staging/src/k8s.io/kubectl/pkg/polymorphichelpers/objectrestarter.go`, the collector's
//! `pkg/controller/garbagecollector/patch.go`), applied with the built-in schema table.

use kgc_patch::Error;
use kgc_patch::strategic::{Schema, apply, schema_for};
use serde_json::{Value, json};

fn deployment() -> Schema {
    schema_for("apps", "Deployment").unwrap()
}

fn pod() -> Schema {
    schema_for("", "Pod").unwrap()
}

/// A strategic merge patch as `kubectl apply` generates it, using every directive: removes a
/// container, an env var, a finalizer and the rollingUpdate block, and switches a volume source.
#[test]
fn kubectl_apply_patch_with_every_directive() {
    let live = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "d", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
            "finalizers": ["example.com/a", "example.com/b"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "old"},
            "labels": {"app": "d"}
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "nginx", "env": [{"name": "FOO", "value": "1"}, {"name": "BAR", "value": "2"}]},
                        {"name": "b", "image": "busybox", "command": ["sleep", "1d"]}
                    ],
                    "volumes": [{"name": "v", "emptyDir": {}}],
                    "restartPolicy": "Always"
                }
            }
        },
        "status": {"replicas": 2}
    });
    let patch = json!({
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
            "$setElementOrder/finalizers": ["example.com/a"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "new"}
        },
        "spec": {
            "strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}],
                "$setElementOrder/volumes": [{"name": "v"}],
                "containers": [
                    {"$setElementOrder/env": [{"name": "BAR"}], "env": [{"$patch": "delete", "name": "FOO"}], "name": "a"},
                    {"$patch": "delete", "name": "b"}
                ],
                "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}, "emptyDir": null, "name": "v"}]
            }}
        }
    });
    let got = apply(&live, &patch, deployment()).unwrap();
    let mut want = live.clone();
    want["metadata"]["finalizers"] = json!(["example.com/a"]);
    want["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": "new"});
    want["spec"]["strategy"] = json!({"type": "Recreate"});
    want["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "image": "nginx", "env": [{"name": "BAR", "value": "2"}]}]);
    want["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "v", "configMap": {"name": "cm"}}]);
    assert_eq!(got, want);
}

/// `kubectl apply`'s update path: a label added and a container image changed, with
/// `$setElementOrder`.
#[test]
fn kubectl_apply_update_pod() {
    let live = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "ns", "labels": {"app": "x"}, "annotations": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                                {"name": "sidecar", "image": "envoy"}]}
    });
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}, "labels": {"extra": "1"}},
        "spec": {"$setElementOrder/containers": [{"name": "c"}], "containers": [{"image": "nginx:2", "name": "c"}]}
    });
    let got = apply(&live, &patch, pod()).unwrap();
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "ns", "labels": {"app": "x", "extra": "1"},
                         "annotations": {"a": "1", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:2", "ports": [{"containerPort": 80}]},
                                    {"name": "sidecar", "image": "envoy"}]}
        })
    );
}

/// `kubectl rollout restart` patches a template annotation (`objectrestarter.go`).
#[test]
fn kubectl_rollout_restart() {
    let live = json!({"spec": {"template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}}}});
    let patch = json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"}}}}});
    let got = apply(&live, &patch, deployment()).unwrap();
    assert_eq!(
        got["spec"]["template"]["metadata"],
        json!({"labels": {"app": "d"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2025-01-01T00:00:00Z"}})
    );
}

/// The garbage collector's `GenerateDeleteOwnerRefStrategicMergeBytes` form (`patch.go`). The
/// dependent's `uid` is merged like any other field (the server compares it as a precondition).
#[test]
fn garbage_collector_deletes_an_owner_reference() {
    let live = json!({"metadata": {"name": "rs", "uid": "dep-uid", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d1", "uid": "U1", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "U2"}
    ]}});
    let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "U1"}], "uid": "dep-uid"}});
    for (group, kind) in [
        ("apps", "ReplicaSet"),
        ("", "Pod"),
        ("", "ConfigMap"),
        ("batch", "Job"),
    ] {
        let got = apply(&live, &patch, schema_for(group, kind).unwrap()).unwrap();
        assert_eq!(
            got,
            json!({"metadata": {"name": "rs", "uid": "dep-uid", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "U2"}
            ]}}),
            "{group}/{kind}"
        );
    }
    // Deleting the last reference leaves an empty list; a missing one is a no-op.
    let got = apply(&got_one(), &patch, pod()).unwrap();
    assert_eq!(got["metadata"]["ownerReferences"], json!([]));
    let got = apply(&json!({"metadata": {"uid": "dep-uid"}}), &patch, pod()).unwrap();
    assert_eq!(got, json!({"metadata": {"uid": "dep-uid"}}));
}

fn got_one() -> Value {
    json!({"metadata": {"uid": "dep-uid", "ownerReferences": [{"uid": "U1", "name": "d1"}]}})
}

/// Finalizers are a set: adding merges (de-duplicated), removing uses the parallel list.
#[test]
fn finalizers_are_a_set() {
    let live = json!({"metadata": {"finalizers": ["a", "b"]}});
    let got = apply(
        &live,
        &json!({"metadata": {"finalizers": ["b", "c"]}}),
        pod(),
    )
    .unwrap();
    assert_eq!(got["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let got = apply(
        &live,
        &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zz"]}}),
        pod(),
    )
    .unwrap();
    assert_eq!(got["metadata"]["finalizers"], json!(["b"]));
}

/// Fields without a strategy (`command`, `args`, `tolerations`, `envFrom`) are replaced, maps merge,
/// `null` deletes.
#[test]
fn lists_without_strategy_are_replaced() {
    let live = json!({"spec": {
        "tolerations": [{"key": "a", "operator": "Exists"}],
        "nodeSelector": {"zone": "a", "disk": "ssd"},
        "containers": [{"name": "c", "command": ["a", "b"], "args": ["x"], "envFrom": [{"configMapRef": {"name": "x"}}]}]
    }});
    let patch = json!({"spec": {
        "tolerations": [{"key": "b", "operator": "Exists"}],
        "nodeSelector": {"disk": null, "gpu": "yes"},
        "containers": [{"name": "c", "command": ["z"], "args": null}]
    }});
    let got = apply(&live, &patch, pod()).unwrap();
    assert_eq!(
        got,
        json!({"spec": {
            "tolerations": [{"key": "b", "operator": "Exists"}],
            "nodeSelector": {"zone": "a", "gpu": "yes"},
            "containers": [{"name": "c", "command": ["z"], "envFrom": [{"configMapRef": {"name": "x"}}]}]
        }})
    );
}

/// Merge keys of the table: ports by containerPort, volumeMounts by mountPath, env by name,
/// service ports by port, node addresses by type, conditions by type.
#[test]
fn merge_keys_of_the_table() {
    let live = json!({"spec": {"containers": [{"name": "c",
        "ports": [{"containerPort": 80, "name": "http"}],
        "volumeMounts": [{"mountPath": "/a", "name": "v1"}],
        "env": [{"name": "A", "value": "1"}]}]}});
    let patch = json!({"spec": {"containers": [{"name": "c",
        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
        "volumeMounts": [{"mountPath": "/a", "readOnly": true}],
        "env": [{"name": "B", "value": "2"}]}]}});
    let got = apply(&live, &patch, pod()).unwrap();
    assert_eq!(
        got,
        json!({"spec": {"containers": [{"name": "c",
            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}],
            "volumeMounts": [{"mountPath": "/a", "name": "v1", "readOnly": true}],
            // New items go before the live-only ones when no `$setElementOrder` says otherwise
            // (upstream `mergeSortedSlice`).
            "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}]}})
    );

    let svc = schema_for("", "Service").unwrap();
    let got = apply(
        &json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
        &json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 81}]}}),
        svc,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080, "name": "http"}, {"port": 81}]}})
    );

    let node = schema_for("", "Node").unwrap();
    let got = apply(
        &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "DiskPressure", "status": "False"}],
                           "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
        &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}],
                           "addresses": [{"type": "Hostname", "address": "n1"}]}}),
        node,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
                          "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.1"}]}})
    );
}

/// CronJob templates reach the shared PodSpec through `jobTemplate.spec.template`.
#[test]
fn cron_job_template_reaches_pod_spec() {
    let live = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
        {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}}}}});
    let patch = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
        {"name": "b", "image": "z"}]}}}}}});
    let got = apply(&live, &patch, schema_for("batch", "CronJob").unwrap()).unwrap();
    assert_eq!(
        got["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}])
    );
}

/// `$patch: replace` on a map and within a list; `$patch: delete` on a map.
#[test]
fn replace_and_delete_directives() {
    let live = json!({"spec": {"nodeSelector": {"a": "1"}, "affinity": {"nodeAffinity": {}},
        "containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {"nodeSelector": {"$patch": "replace", "b": "2"}, "affinity": {"$patch": "delete"},
        "containers": [{"$patch": "replace"}, {"name": "c", "image": "i"}]}});
    let got = apply(&live, &patch, pod()).unwrap();
    assert_eq!(
        got,
        json!({"spec": {"nodeSelector": {"b": "2"}, "affinity": {}, "containers": [{"name": "c", "image": "i"}]}})
    );
    // The whole object.
    let got = apply(&live, &json!({"$patch": "replace", "kind": "X"}), pod()).unwrap();
    assert_eq!(got, json!({"kind": "X"}));
}

/// New values are taken from the patch stripped of their directives and `null`s.
#[test]
fn new_values_are_stripped_of_directives() {
    let patch = json!({"spec": {
        "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null},
        "template": {"spec": {"$setElementOrder/containers": [{"name": "a"}],
                              "containers": [{"name": "a", "env": [{"$patch": "delete", "name": "X"}], "image": null}]}}
    }});
    let got = apply(&json!({"metadata": {"name": "d"}}), &patch, deployment()).unwrap();
    assert_eq!(
        got,
        json!({"metadata": {"name": "d"}, "spec": {"strategy": {"type": "Recreate"},
            "template": {"spec": {"containers": [{"name": "a", "env": []}]}}}})
    );
}

fn malformed_at(e: Error, field: &str, text: &str) {
    assert!(e.is_malformed(), "{e}");
    match &e {
        Error::StrategicMalformed { field: f, reason } => {
            assert_eq!(f, field, "{e}");
            assert!(reason.contains(text), "{e}");
        }
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn errors_name_the_offending_field() {
    let live = json!({"spec": {"strategy": {"type": "RollingUpdate"},
        "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});

    // A key set by the patch but missing from `$retainKeys`.
    let e = apply(&live, &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}), deployment())
        .unwrap_err();
    malformed_at(e, "spec.strategy.rollingUpdate", "retainKeys");

    // `$patch: merge` on a list.
    let e = apply(
        &live,
        &json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(
        e,
        "spec.template.spec.containers[0]",
        "merging lists cannot yet be specified",
    );

    // Unknown directive values, on a map and in a list.
    let e = apply(
        &live,
        &json!({"spec": {"strategy": {"$patch": "bogus"}}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(e, "spec.strategy.$patch", "unknown patch type");
    let e = apply(
        &live,
        &json!({"spec": {"template": {"spec": {"containers": [{"$patch": "zap", "name": "a"}]}}}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(e, "spec.template.spec.containers[0]", "unknown patch type");

    // A patch item of a merge list without its merge key (upstream's wording).
    let e = apply(
        &live,
        &json!({"spec": {"template": {"spec": {"containers": [{"image": "y"}]}}}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(
        e,
        "spec.template.spec.containers",
        "does not contain declared merge key: name",
    );

    // Nested: an env item without its name, inside container "a".
    let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"name": "X"}]}]}}}});
    let e = apply(&live, &json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"value": "1"}]}]}}}}), deployment())
        .unwrap_err();
    malformed_at(
        e,
        "spec.template.spec.containers[name=\"a\"].env",
        "does not contain declared merge key: name",
    );

    // `$setElementOrder` that contradicts the patch list.
    let e = apply(
        &live,
        &json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "b"}]}}}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(e, "spec.template.spec.containers", "doesn't match");

    // Malformed parallel-list keys.
    let live = json!({"metadata": {"name": "d", "finalizers": ["a"]}});
    let e = apply(
        &live,
        &json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(e, "metadata.$deleteFromPrimitiveList", "primitive list");
    let e = apply(
        &live,
        &json!({"metadata": {"$setElementOrder/finalizers": "a"}}),
        deployment(),
    )
    .unwrap_err();
    malformed_at(e, "metadata.$setElementOrder/finalizers", "setElementOrder");

    // Not an object at all.
    assert!(
        apply(&live, &json!([1]), deployment())
            .unwrap_err()
            .is_malformed()
    );
}

#[test]
fn objects_that_do_not_fit_are_unprocessable() {
    // A live list item without the merge key: 422, naming the list.
    let live = json!({"spec": {"containers": [{"image": "x"}]}});
    let e = apply(
        &live,
        &json!({"spec": {"containers": [{"name": "a"}]}}),
        pod(),
    )
    .unwrap_err();
    assert!(!e.is_malformed(), "{e}");
    assert!(
        matches!(&e, Error::StrategicInapplicable { field, .. } if field == "spec.containers"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("does not contain declared merge key: name"),
        "{e}"
    );

    // Lists of lists.
    let e = apply(
        &json!({"metadata": {"finalizers": [["a"]]}}),
        &json!({"metadata": {"finalizers": [["b"]]}}),
        pod(),
    )
    .unwrap_err();
    assert!(!e.is_malformed(), "{e}");
    assert!(e.to_string().contains("lists of lists"), "{e}");
}

#[test]
fn schema_table_covers_the_catalog() {
    let kinds = [
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "Node"),
        ("", "Namespace"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Endpoints"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("coordination.k8s.io", "Lease"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("storage.k8s.io", "StorageClass"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ];
    let patch = json!({"metadata": {"finalizers": ["b"], "ownerReferences": [{"uid": "2"}]}});
    let live = json!({"metadata": {"finalizers": ["a"], "ownerReferences": [{"uid": "1"}]}});
    for (group, kind) in kinds {
        let schema = schema_for(group, kind).unwrap_or_else(|| panic!("{group}/{kind}"));
        let got = apply(&live, &patch, schema).unwrap();
        assert_eq!(
            got,
            // New items first, as upstream's `mergeSortedSlice` orders them.
            json!({"metadata": {"finalizers": ["b", "a"], "ownerReferences": [{"uid": "2"}, {"uid": "1"}]}}),
            "{group}/{kind}"
        );
    }
    // Custom resources have no table: the API server answers 415.
    assert!(schema_for("example.com", "Widget").is_none());
    assert!(schema_for("apps", "Widget").is_none());
}

#[test]
fn pod_disruption_budget_and_hpa_conditions_merge_on_type() {
    for (g, k) in [
        ("policy", "PodDisruptionBudget"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("apps", "Deployment"),
        ("batch", "Job"),
    ] {
        let got = apply(
            &json!({"status": {"conditions": [{"type": "A", "status": "True"}]}}),
            &json!({"status": {"conditions": [{"type": "B", "status": "True"}]}}),
            schema_for(g, k).unwrap(),
        )
        .unwrap();
        assert_eq!(
            got["status"]["conditions"].as_array().unwrap().len(),
            2,
            "{g}/{k}"
        );
    }
    // CSR conditions have no strategy upstream: replaced.
    let got = apply(
        &json!({"status": {"conditions": [{"type": "Approved"}]}}),
        &json!({"status": {"conditions": [{"type": "Denied"}]}}),
        schema_for("certificates.k8s.io", "CertificateSigningRequest").unwrap(),
    )
    .unwrap();
    assert_eq!(got["status"]["conditions"], json!([{"type": "Denied"}]));
}

/// A 200-container pod: one container changed, one env var added, order kept from
/// `$setElementOrder`, every other container untouched.
#[test]
fn two_hundred_container_pod() {
    let containers: Vec<Value> = (0..200)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": format!("img:{i}"),
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 8000 + i}]})
        })
        .collect();
    let live = json!({"metadata": {"name": "big"}, "spec": {"containers": containers}});
    let order: Vec<Value> = (0..200).map(|i| json!({"name": format!("c{i}")})).collect();
    let patch = json!({"spec": {
        "$setElementOrder/containers": order,
        "containers": [{"name": "c100", "image": "img:new", "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
                        "env": [{"name": "C", "value": "3"}]}]
    }});
    let got = apply(&live, &patch, pod()).unwrap();
    let got_containers = got["spec"]["containers"].as_array().unwrap();
    assert_eq!(got_containers.len(), 200);
    for (i, c) in got_containers.iter().enumerate() {
        assert_eq!(c["name"], format!("c{i}"));
        if i == 100 {
            assert_eq!(c["image"], "img:new");
            assert_eq!(
                c["env"],
                json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}])
            );
        } else {
            assert_eq!(c, &live["spec"]["containers"][i]);
        }
    }
    // Reversing the order through `$setElementOrder` alone.
    let reversed: Vec<Value> = (0..200)
        .rev()
        .map(|i| json!({"name": format!("c{i}")}))
        .collect();
    let got = apply(
        &live,
        &json!({"spec": {"$setElementOrder/containers": reversed}}),
        pod(),
    )
    .unwrap();
    assert_eq!(got["spec"]["containers"][0]["name"], "c199");
    assert_eq!(got["spec"]["containers"][199]["name"], "c0");
}
