//! The default RBAC policy kube-apiserver creates on start: the user-facing roles
//! `cluster-admin`, `admin`, `edit` and `view` (the last three aggregated from
//! `system:aggregate-to-*`), the discovery roles every authenticated user holds, and their
//! bindings. Controller and node roles are left out: kgc runs no kubelets and its collectors run
//! in-process.
//!
//! Source of truth: upstream's golden output of `bootstrappolicy/policy.go`,
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml` (kubernetes/
//! kubernetes commit 025f2834a128798cef30018a5e6a6ae82b5ad885) and `cluster-role-bindings.yaml`;
//! `policy_test.go` asserts `policy.go` produces exactly those, and they are what
//! `kubectl get clusterrole edit -o yaml` shows on a real cluster (with the aggregated rules
//! filled in). Every rule, label, annotation, selector and subject here matches them, down to
//! the sorted order of each rule's lists.

use serde_json::{Value, json};

use crate::{RBAC_GROUP, SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED, aggregate};

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The label every bootstrap object carries, so operators (and `kubectl auth reconcile`) can
/// tell the defaults apart.
pub const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// Upstream re-applies objects with this annotation on every start.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// Upstream's `PolicyRuleBuilder.Rule()` sorts every list of a rule
/// (`pkg/apis/rbac/v1/helpers.go`), so that is the order a real cluster serves.
fn sorted<'a>(items: &[&'a str]) -> Vec<&'a str> {
    let mut v = items.to_vec();
    v.sort_unstable();
    v
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"apiGroups": sorted(groups), "resources": sorted(resources), "verbs": sorted(verbs)})
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"nonResourceURLs": sorted(urls), "verbs": sorted(verbs)})
}

fn metadata(name: &str, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAP_LABEL.0.into(), json!(BOOTSTRAP_LABEL.1));
    for (k, v) in extra_labels {
        labels.insert((*k).into(), json!(v));
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    })
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": format!("{RBAC_GROUP}/v1"),
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules,
    })
}

/// A ClusterRole whose rules are the union of the roles labelled `selector_label=true`.
fn aggregated_role(name: &str, labels: &[(&str, &str)], selector_label: &str) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {selector_label: "true"}}]});
    role
}

fn cluster_binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": format!("{RBAC_GROUP}/v1"),
        "kind": "ClusterRoleBinding",
        "metadata": metadata(role, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The bootstrap ClusterRoles, then the ClusterRoleBindings, as JSON objects ready to create,
/// all labelled `kubernetes.io/bootstrapping=rbac-defaults`.
///
/// `admin`, `edit` and `view` come with their aggregated rules already filled in, so they grant
/// what they should from the first request instead of after the aggregation pass.
pub fn bootstrap_policy() -> Vec<Value> {
    let mut roles = vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        // For servers that delegate authentication and authorization to this one (bound by
        // their operators; upstream binds it to nobody by default).
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        aggregated_role("admin", &[], TO_ADMIN),
        aggregated_role("edit", &[(TO_ADMIN, "true")], TO_EDIT),
        aggregated_role("view", &[(TO_EDIT, "true")], TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[(TO_ADMIN, "true")],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC_GROUP], &["roles", "rolebindings"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(TO_EDIT, "true")],
            edit_rules(),
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(TO_VIEW, "true")],
            view_rules(),
        ),
    ];
    for (name, rules) in aggregate(&roles) {
        if let Some(role) = roles.iter_mut().find(|r| r["metadata"]["name"] == name) {
            role["rules"] = rules.iter().map(|r| r.to_json()).collect();
        }
    }
    roles.extend([
        cluster_binding("cluster-admin", &[SYSTEM_MASTERS]),
        cluster_binding("system:discovery", &[SYSTEM_AUTHENTICATED]),
        cluster_binding("system:basic-user", &[SYSTEM_AUTHENTICATED]),
        cluster_binding(
            "system:public-info-viewer",
            &[SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED],
        ),
    ]);
    roles
}

/// `system:aggregate-to-edit`: writes on user workloads, reads of the escalating ones (secrets,
/// exec). Endpoints are deliberately absent (CVE-2021-25740, removed upstream in 1.22).
fn edit_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            &[""],
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], &[""], &["serviceaccounts"]),
        rule(
            WRITE,
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], &[""], &["pods/eviction"]),
        rule(
            WRITE,
            &[""],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], &[""], &["serviceaccounts/token"]),
        rule(
            WRITE,
            &["apps"],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
        rule(
            WRITE,
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
        rule(
            WRITE,
            &["networking.k8s.io"],
            &["networkpolicies", "ingresses"],
        ),
        rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
    ]
}

/// `system:aggregate-to-view`: reads of everything but secrets and the exec-like subresources.
fn view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            &[""],
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            &[""],
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, &[""], &["namespaces"]),
        rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
        rule(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &["batch"],
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            &["networking.k8s.io"],
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::bootstrap_policy;

    fn find<'a>(policy: &'a [Value], kind: &str, name: &str) -> &'a Value {
        policy
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    /// Objects as upstream's `testdata/cluster-roles.yaml` and `cluster-role-bindings.yaml`
    /// (kubernetes/kubernetes 025f2834) have them, field for field.
    #[test]
    fn objects_match_upstream_testdata() {
        let policy = bootstrap_policy();
        let labels = |extra: &[(&str, &str)]| {
            let mut m = serde_json::Map::new();
            m.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
            for (k, v) in extra {
                m.insert((*k).into(), json!(v));
            }
            Value::Object(m)
        };
        for (name, extra, selector) in [
            ("admin", labels(&[]), "admin"),
            (
                "edit",
                labels(&[("rbac.authorization.k8s.io/aggregate-to-admin", "true")]),
                "edit",
            ),
            (
                "view",
                labels(&[("rbac.authorization.k8s.io/aggregate-to-edit", "true")]),
                "view",
            ),
        ] {
            let role = find(&policy, "ClusterRole", name);
            assert_eq!(role["metadata"]["labels"], extra, "{name}");
            assert_eq!(
                role["aggregationRule"],
                json!({"clusterRoleSelectors": [{"matchLabels":
                    {format!("rbac.authorization.k8s.io/aggregate-to-{selector}"): "true"}}]}),
                "{name}"
            );
        }
        for o in &policy {
            assert_eq!(
                o["metadata"]["annotations"],
                json!({"rbac.authorization.kubernetes.io/autoupdate": "true"}),
                "{o}"
            );
            // PolicyRuleBuilder.Rule() sorts every list; a real cluster serves them sorted.
            for r in o["rules"].as_array().into_iter().flatten() {
                for list in r.as_object().into_iter().flat_map(|m| m.values()) {
                    let items: Vec<&str> = list
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    assert!(items.is_sorted(), "{} {r}", o["metadata"]["name"]);
                }
            }
        }
        assert_eq!(
            find(&policy, "ClusterRole", "system:auth-delegator")["rules"],
            json!([
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ])
        );
        // Upstream's ReadWrite, sorted: the verbs of a fully writable resource.
        let rw = json!(kgc_meta::catalog::ALL_VERBS);
        assert_eq!(
            find(&policy, "ClusterRole", "system:aggregate-to-admin")["rules"],
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"], "verbs": ["create"]},
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"], "verbs": rw},
            ])
        );
        let to_edit = &find(&policy, "ClusterRole", "system:aggregate-to-edit")["rules"];
        assert_eq!(
            to_edit.as_array().and_then(|r| r.last()),
            Some(
                &json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": rw})
            )
        );
        assert_eq!(
            find(&policy, "ClusterRole", "system:basic-user")["rules"],
            json!([
                {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ])
        );
        let group =
            |g: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g});
        for (name, subjects) in [
            ("cluster-admin", json!([group("system:masters")])),
            ("system:discovery", json!([group("system:authenticated")])),
            ("system:basic-user", json!([group("system:authenticated")])),
            (
                "system:public-info-viewer",
                json!([
                    group("system:authenticated"),
                    group("system:unauthenticated")
                ]),
            ),
        ] {
            let b = find(&policy, "ClusterRoleBinding", name);
            assert_eq!(b["subjects"], subjects, "{name}");
            assert_eq!(
                b["roleRef"],
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name})
            );
            assert_eq!(b["metadata"]["labels"], labels(&[]), "{name}");
        }
    }
}
