//! Authorization cost per decision with 1,000 RoleBindings in the cluster (issue 5's target:
//! under 5 µs).
//!
//! `cargo run --release -p kgc-auth --example auth_bench [-- ITERATIONS]`
//!
//! The cluster: the bootstrap policy, 100 namespaces with 10 RoleBindings each (users bound to
//! `view`, `edit` or `admin`, a service account and a team group per namespace), plus 20
//! ClusterRoleBindings. Each case is timed over ITERATIONS decisions (default 1,000,000).

use std::hint::black_box;
use std::time::Instant;

use kgc_auth::{Attributes, Authorizer, UserInfo, bootstrap_policy};
use serde_json::{Value, json};

const NAMESPACES: usize = 100;
const BINDINGS_PER_NAMESPACE: usize = 10;

fn binding(ns: &str, name: &str, role: &str, subject: Value) -> Value {
    json!({"kind": "RoleBinding", "metadata": {"namespace": ns, "name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": [subject]})
}

fn cluster() -> Authorizer {
    let mut a = Authorizer::new();
    for obj in bootstrap_policy() {
        a.apply(&obj).expect("bootstrap policy is valid");
    }
    let roles = ["view", "edit", "admin"];
    for n in 0..NAMESPACES {
        let ns = format!("ns-{n}");
        for b in 0..BINDINGS_PER_NAMESPACE {
            let subject = match b {
                0 => json!({"kind": "ServiceAccount", "name": "deployer"}),
                1 => {
                    json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("team-{n}")})
                }
                _ => {
                    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("user-{n}-{b}")})
                }
            };
            let obj = binding(&ns, &format!("b-{b}"), roles[b % roles.len()], subject);
            a.apply(&obj).expect("valid binding");
        }
    }
    for c in 0..20 {
        a.apply(&json!({"kind": "ClusterRoleBinding", "metadata": {"name": format!("crb-{c}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("auditor-{c}")}]}))
            .expect("valid binding");
    }
    a
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn request(u: UserInfo, verb: &str, ns: &str, group: &str, resource: &str) -> Attributes {
    Attributes {
        user: u,
        verb: verb.into(),
        namespace: ns.into(),
        api_group: group.into(),
        resource: resource.into(),
        resource_request: true,
        ..Attributes::default()
    }
}

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let start = Instant::now();
    let a = cluster();
    println!(
        "setup: bootstrap policy + {} RoleBindings + 20 ClusterRoleBindings applied in {:.1} ms",
        NAMESPACES * BINDINGS_PER_NAMESPACE,
        start.elapsed().as_secs_f64() * 1e3
    );
    let authn = "system:authenticated";
    let cases = [
        (
            "allowed: editor creates a deployment in its namespace",
            request(
                user("user-50-4", &[authn]),
                "create",
                "ns-50",
                "apps",
                "deployments",
            ),
            true,
        ),
        (
            "allowed: team group member lists pods",
            request(
                user("someone", &[authn, "team-7"]),
                "list",
                "ns-7",
                "",
                "pods",
            ),
            true,
        ),
        (
            "allowed: service account (RoleBinding, defaulted namespace) gets configmaps",
            request(
                user(
                    "system:serviceaccount:ns-99:deployer",
                    &["system:serviceaccounts", authn],
                ),
                "get",
                "ns-99",
                "",
                "configmaps",
            ),
            true,
        ),
        (
            "allowed: discovery path for any authenticated user",
            Attributes {
                user: user("user-3-2", &[authn]),
                verb: "get".into(),
                path: "/apis/apps/v1".into(),
                ..Attributes::default()
            },
            true,
        ),
        (
            "denied: viewer deletes a secret in its namespace",
            request(
                user("user-50-3", &[authn]),
                "delete",
                "ns-50",
                "",
                "secrets",
            ),
            false,
        ),
        (
            "denied: namespaced user lists pods cluster-wide",
            request(user("user-50-4", &[authn]), "list", "", "", "pods"),
            false,
        ),
        (
            "denied: unknown user",
            request(user("mallory", &[authn]), "get", "ns-1", "", "pods"),
            false,
        ),
    ];
    for (name, attrs, want) in &cases {
        assert_eq!(a.authorize(attrs).is_allowed(), *want, "{name}");
        // Warm up, then time.
        for _ in 0..iterations / 10 {
            black_box(a.authorize(black_box(attrs)));
        }
        let start = Instant::now();
        for _ in 0..iterations {
            black_box(a.authorize(black_box(attrs)));
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(iterations);
        println!("{ns:8.0} ns/decision  {name}");
    }
}
