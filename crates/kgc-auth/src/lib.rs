//! Kubernetes RBAC for kgc, pure: no I/O, no HTTP, no store. The API server feeds RBAC objects in
//! as they change and asks questions; everything here answers from memory.
//!
//! - [`Authorizer`]: the RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go`) over the
//!   default rule resolver (`pkg/registry/rbac/validation/rule.go`), with bindings indexed by
//!   subject and namespace so one decision touches only the bindings that can apply; plus
//!   `system:masters`, the superuser group kube-apiserver authorizes before RBAC.
//!   [`Authorizer::rules_for`] answers SelfSubjectRulesReview, [`Authorizer::review`] answers
//!   SubjectAccessReview.
//! - Escalation prevention ([`Authorizer::confirm_no_escalation`], [`Authorizer::can_bind`],
//!   [`Authorizer::can_write_role`]): `pkg/registry/rbac/escalation_check.go` and
//!   `validation.ConfirmNoEscalation`.
//! - [`forbidden_message`]: kube-apiserver's 403 text, word for word.
//! - [`bootstrap_policy`]: the default ClusterRoles and ClusterRoleBindings.
//! - [`aggregate`]: ClusterRole aggregation (`pkg/controller/clusterroleaggregation`).
//! - [`validate`] / [`validate_update`]: `pkg/apis/rbac/validation`.
//!
//! Bad input never widens access: a rule, subject or roleRef that cannot be parsed grants
//! nothing (see [`Authorizer::apply`]).
//!
//! Changes from the first sketch of this API, for callers: `Decision::Deny.reason` is empty
//! unless RBAC met errors (upstream's 403 then appends `": " + reason`, see
//! [`forbidden_message_with_reason`]); [`Authorizer::can_write_role`] and
//! [`Authorizer::review`] were added; [`aggregate`] returns only the roles whose rules change.
#![forbid(unsafe_code)]

mod aggregation;
mod authorizer;
mod bootstrap;
mod escalation;
mod forbidden;
pub mod rule;
mod validation;

use std::collections::BTreeMap;

pub use aggregation::{aggregate, selector_from_json};
pub use authorizer::{AccessReview, Authorizer, NonResourceRule, ResourceRule, RulesReview};
pub use bootstrap::bootstrap_policy;
pub use forbidden::{forbidden_message, forbidden_message_with_reason};
pub use rule::PolicyRule;
pub use validation::{validate, validate_update};

/// The API group of every RBAC object.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The group whose members may do anything, authorized before RBAC is consulted
/// (`user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";
/// Every authenticated user is in this group (`user.AllAuthenticated`).
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// Every anonymous request is in this group (`user.AllUnauthenticated`).
pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user-name prefix of service accounts: `system:serviceaccount:NAMESPACE:NAME`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Who is asking, as the authenticator established it (`user.Info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user name a service account authenticates as.
    pub fn service_account_name(namespace: &str, name: &str) -> String {
        format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
    }

    fn is_superuser(&self) -> bool {
        self.groups.iter().any(|g| g == SYSTEM_MASTERS)
    }
}

/// What is being asked (`authorizer.Attributes`).
///
/// Resource requests fill `namespace` (empty at cluster scope), `api_group`, `resource`,
/// `subresource` and `name`; non-resource requests (`/healthz`, `/apis`, ...) fill `path`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    pub namespace: String,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub resource_request: bool,
    pub path: String,
}

/// The authorizer's answer. RBAC never denies explicitly; `Deny` means "no rule allows it".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// `reason` is what upstream's RBAC authorizer returns: empty, or `RBAC: <errors>` when a
    /// binding that applies to the user references a role that does not exist. It goes into
    /// logs, into `SubjectAccessReview.status.reason` and after the 403 message.
    Deny {
        reason: String,
    },
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// Why an RBAC object was not (fully) taken into account by [`Authorizer::apply`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// `kind` is not Role, ClusterRole, RoleBinding or ClusterRoleBinding.
    #[error("{0:?} is not an RBAC kind (Role, ClusterRole, RoleBinding, ClusterRoleBinding)")]
    UnsupportedKind(String),
    /// The object has no `metadata.name` (or, for a namespaced kind, no `metadata.namespace`),
    /// so it cannot be stored; nothing changed.
    #[error("{kind} without {field}: ignored")]
    MissingIdentity { kind: String, field: &'static str },
    /// Parts of the object could not be parsed. They were dropped, so they grant nothing; the
    /// rest of the object is in effect. `problems` lists `field: what is wrong`.
    #[error("{kind} {name:?}: ignored invalid fields: {}", problems.join("; "))]
    Malformed {
        kind: String,
        name: String,
        problems: Vec<String>,
    },
}

/// Builders shared by the unit tests, in the shape of upstream's test helpers
/// (`newRule("verbs", "groups", "resources", "urls")`, `"User:alice"` subjects).
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::{Value, json};

    use crate::{Attributes, Authorizer, RBAC_GROUP, UserInfo};

    fn split(s: &str) -> Vec<&str> {
        if s.is_empty() {
            Vec::new()
        } else {
            s.split(',').collect()
        }
    }

    /// `newRule`: comma-separated verbs, API groups, resources and non-resource URLs.
    pub fn rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> Value {
        let mut r = json!({"verbs": split(verbs)});
        if !urls.is_empty() {
            r["nonResourceURLs"] = json!(split(urls));
        } else {
            // "" is the core group, so groups are split without dropping the empty one.
            r["apiGroups"] = json!(groups.split(',').collect::<Vec<_>>());
            r["resources"] = json!(split(resources));
        }
        r
    }

    pub fn cluster_role(name: &str, rules: &[Value]) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
    }

    pub fn role(ns: &str, name: &str, rules: &[Value]) -> Value {
        json!({"kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
    }

    /// `"User:alice"`, `"Group:devs"`, `"ServiceAccount:ns:name"` (ns may be empty).
    fn subjects(subjects: &[&str]) -> Vec<Value> {
        subjects
            .iter()
            .map(|s| match s.split(':').collect::<Vec<_>>().as_slice() {
                ["ServiceAccount", ns, name] => {
                    json!({"kind": "ServiceAccount", "namespace": ns, "name": name})
                }
                [kind, rest @ ..] => {
                    json!({"kind": kind, "apiGroup": RBAC_GROUP, "name": rest.join(":")})
                }
                [] => json!({}),
            })
            .collect()
    }

    pub fn cluster_binding(name: &str, role: &str, subj: &[&str]) -> Value {
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
               "subjects": subjects(subj)})
    }

    /// A RoleBinding to a `Role` or a `ClusterRole` (`role_kind`).
    pub fn binding(ns: &str, name: &str, role_kind: &str, role: &str, subj: &[&str]) -> Value {
        json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
               "subjects": subjects(subj)})
    }

    pub fn user(name: &str, groups: &str) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: split(groups).into_iter().map(String::from).collect(),
            ..UserInfo::default()
        }
    }

    /// upstream's `defaultAttributes{user, groups, verb, resource, subresource, ns, apiGroup}`.
    pub fn attrs(
        u: &str,
        groups: &str,
        verb: &str,
        res: &str,
        sub: &str,
        ns: &str,
        group: &str,
    ) -> Attributes {
        Attributes {
            user: user(u, groups),
            verb: verb.into(),
            namespace: ns.into(),
            api_group: group.into(),
            resource: res.into(),
            subresource: sub.into(),
            resource_request: true,
            ..Attributes::default()
        }
    }

    pub fn url(u: &str, groups: &str, verb: &str, path: &str) -> Attributes {
        Attributes {
            user: user(u, groups),
            verb: verb.into(),
            path: path.into(),
            ..Attributes::default()
        }
    }

    pub fn authorizer(objs: &[Value]) -> Authorizer {
        let mut a = Authorizer::new();
        for o in objs {
            a.apply(o).unwrap();
        }
        a
    }
}

/// The bad-input rule, over every entry point: arbitrary JSON never panics, and a corrupted rule
/// never grants more than the rule it was corrupted from.
#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use crate::testing::*;
    use crate::*;

    /// Arbitrary JSON built from the field names RBAC objects use, so random trees reach the
    /// parsers' deep paths.
    fn arb_json() -> impl Strategy<Value = Value> {
        let keys = prop::sample::select(vec![
            "kind",
            "metadata",
            "name",
            "namespace",
            "labels",
            "rules",
            "verbs",
            "apiGroups",
            "resources",
            "resourceNames",
            "nonResourceURLs",
            "roleRef",
            "apiGroup",
            "subjects",
            "aggregationRule",
            "clusterRoleSelectors",
            "matchLabels",
            "matchExpressions",
            "key",
            "operator",
            "values",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec![
                "*",
                "",
                "Role",
                "ClusterRole",
                "RoleBinding",
                "ClusterRoleBinding",
                "User",
                "Group",
                "ServiceAccount",
                "alice",
                "rbac.authorization.k8s.io",
                "In",
                "get",
                "pods",
                "*/scale",
                "/apis/*",
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..5).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    fn kind() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
        ])
    }

    /// A well-formed rule over a small vocabulary, so random requests hit it.
    fn arb_rule() -> impl Strategy<Value = Value> {
        let words = |v: Vec<&'static str>| prop::collection::vec(prop::sample::select(v), 0..3);
        (
            words(vec!["*", "get", "list"]),
            words(vec!["*", "", "apps"]),
            words(vec!["*", "pods", "pods/log", "*/scale", "deployments"]),
            words(vec!["a", "b"]),
            words(vec!["*", "/apis", "/apis/*"]),
        )
            .prop_map(|(v, g, r, n, u)| {
                json!({"verbs": v, "apiGroups": g, "resources": r, "resourceNames": n, "nonResourceURLs": u})
            })
    }

    fn arb_request() -> impl Strategy<Value = Attributes> {
        (
            prop::sample::select(vec!["get", "list", "delete"]),
            prop::sample::select(vec!["", "apps"]),
            prop::sample::select(vec!["pods", "deployments"]),
            prop::sample::select(vec!["", "log", "scale"]),
            prop::sample::select(vec!["", "a", "c"]),
            prop::sample::select(vec!["", "/apis", "/apis/apps", "/api"]),
        )
            .prop_map(|(verb, group, res, sub, name, path)| {
                let mut a = attrs("alice", "", verb, res, sub, "ns1", group);
                a.name = name.into();
                if !path.is_empty() {
                    a.resource_request = false;
                    a.path = path.into();
                }
                a
            })
    }

    proptest! {
        #[test]
        fn arbitrary_objects_never_panic(body in arb_json(), kind in kind(), update in any::<bool>()) {
            let mut obj = body.clone();
            if let Value::Object(m) = &mut obj {
                m.insert("kind".into(), json!(kind));
            }
            let mut a = Authorizer::new();
            let _ = a.apply(&obj);
            let _ = a.apply(&body);
            let _ = validate(&obj);
            let _ = validate_update(&obj, &body);
            let _ = aggregate(&[obj.clone(), body.clone()]);
            let alice = user("alice", "system:authenticated");
            let _ = a.can_bind(&alice, &obj);
            let _ = a.can_write_role(&alice, &obj, update);
            let _ = a.rules_for(&alice, "ns1");
            let _ = a.authorize(&attrs("alice", "system:authenticated", "get", "pods", "", "ns1", ""));
            a.remove(kind, "ns1", "alice");
        }

        #[test]
        fn a_corrupted_rule_never_grants_more(
            rules in prop::collection::vec(arb_rule(), 1..4),
            victim in any::<prop::sample::Index>(),
            field in prop::sample::select(vec!["verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"]),
            junk in prop::sample::select(vec![json!("*"), json!(true), json!({"*": "*"}), json!([1]), json!(["*", null])]),
            req in arb_request(),
        ) {
            let mut corrupted = rules.clone();
            let i = victim.index(corrupted.len());
            corrupted[i][field] = junk;
            let build = |rules: &[Value]| {
                let mut a = Authorizer::new();
                let _ = a.apply(&cluster_role("r", rules));
                a.apply(&binding("ns1", "b", "ClusterRole", "r", &["User:alice"])).unwrap();
                a
            };
            let before = build(&rules).authorize(&req).is_allowed();
            let after = build(&corrupted).authorize(&req).is_allowed();
            prop_assert!(!after || before, "corruption widened access: {corrupted:?} {req:?}");
        }
    }
}
