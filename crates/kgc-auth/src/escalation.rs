//! Privilege-escalation prevention: nobody grants permissions they do not hold.
//!
//! Upstream: `pkg/registry/rbac/escalation_check.go` (`EscalationAllowed`,
//! `RoleEscalationAuthorized`, `BindingAuthorized`), `pkg/registry/rbac/validation/rule.go`
//! (`ConfirmNoEscalation`), `policy_comparator.go` (`Covers`) and `compact.go`
//! (`CompactRules`), as the policy-based storages of roles and bindings call them.
//!
//! The caller turns an `Err(message)` into
//! `Status::forbidden(gr, object name, message)` (`NewForbidden`), e.g.
//! `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.

use std::collections::{BTreeSet, HashMap};

use kgc_meta::gojson::go_quote;
use serde_json::Value;

use crate::authorizer::{aggregate_errors, resolve_role_ref};
use crate::rule::{ALL, PolicyRule, go_quote_list, parse_rules, url_prefix_covers};
use crate::{Attributes, Authorizer, RBAC_GROUP, UserInfo};

impl Authorizer {
    /// `ConfirmNoEscalation`: Ok when the rules `user` holds in `namespace` ("" for
    /// cluster-wide) cover every one of `rules`; otherwise upstream's message listing the
    /// missing permissions. Members of `system:masters` are never refused (`EscalationAllowed`).
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), String> {
        if user.is_superuser() {
            return Ok(());
        }
        let (owner, errors) = self.policy_rules_for(user, namespace);
        let missing = uncovered(&owner, rules);
        if missing.is_empty() {
            return Ok(());
        }
        let descriptions: BTreeSet<String> = compact_rules(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        let mut msg = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&user.name),
            go_quote_list(&user.groups),
            descriptions.into_iter().collect::<Vec<_>>().join("\n")
        );
        if !errors.is_empty() {
            // `%v` of a `[]error` holding the one aggregate error.
            msg.push_str(&format!(
                "; resolution errors: [{}]",
                aggregate_errors(&errors)
            ));
        }
        Err(msg)
    }

    /// Whether `user` may create or update this Role or ClusterRole (by `kind`): as a member of
    /// `system:masters`, with the `escalate` verb on the role resource, or because it already
    /// holds every permission the role grants.
    ///
    /// `update` says whether this is an update: upstream checks `escalate` against the request's
    /// name, which a create does not have (so `escalate` limited by `resourceNames` only helps
    /// updates). An update that only touches the fields the garbage collector writes
    /// (`IsOnlyMutatingGCFields`) should skip this check; that comparison is the caller's.
    pub fn can_write_role(
        &self,
        user: &UserInfo,
        role: &Value,
        update: bool,
    ) -> Result<(), String> {
        if user.is_superuser() {
            return Ok(());
        }
        let (resource, namespace) = match role.get("kind").and_then(Value::as_str) {
            Some("Role") => ("roles", meta_str(role, "namespace")),
            Some("ClusterRole") => ("clusterroles", ""),
            other => return Err(format!("not a Role or ClusterRole: kind {other:?}")),
        };
        let escalate = Attributes {
            user: user.clone(),
            verb: "escalate".into(),
            namespace: namespace.to_owned(),
            api_group: RBAC_GROUP.into(),
            resource: resource.into(),
            name: if update {
                meta_str(role, "name").to_owned()
            } else {
                String::new()
            },
            resource_request: true,
            ..Attributes::default()
        };
        if self.authorize(&escalate).is_allowed() {
            return Ok(());
        }
        // Unparseable rules are rejected by validation; the parseable ones must be held.
        let (rules, _) = parse_rules(role);
        self.confirm_no_escalation(user, namespace, &rules)
    }

    /// Whether `user` may create or update this RoleBinding or ClusterRoleBinding (by `kind`):
    /// as a member of `system:masters`, with the `bind` verb on the referenced role (checked in
    /// the binding's namespace, or cluster-wide for a ClusterRoleBinding), or because it already
    /// holds every permission of the referenced role there.
    ///
    /// A RoleBinding's `metadata.namespace` must already hold the request's namespace (a
    /// create may omit it in the body). Updates are checked too, except when they change only
    /// the fields the garbage collector writes (`IsOnlyMutatingGCFields`); that comparison is
    /// the caller's.
    pub fn can_bind(&self, user: &UserInfo, binding: &Value) -> Result<(), String> {
        if user.is_superuser() {
            return Ok(());
        }
        let namespace = match binding.get("kind").and_then(Value::as_str) {
            Some("RoleBinding") => meta_str(binding, "namespace"),
            Some("ClusterRoleBinding") => "",
            other => {
                return Err(format!(
                    "not a RoleBinding or ClusterRoleBinding: kind {other:?}"
                ));
            }
        };
        let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
        let ref_str = |k: &str| role_ref.get(k).and_then(Value::as_str).unwrap_or_default();
        let resource = match ref_str("kind") {
            "ClusterRole" => Some("clusterroles"),
            "Role" => Some("roles"),
            _ => None,
        };
        if let Some(resource) = resource {
            let bind = Attributes {
                user: user.clone(),
                verb: "bind".into(),
                namespace: namespace.to_owned(),
                api_group: ref_str("apiGroup").to_owned(),
                resource: resource.into(),
                name: ref_str("name").to_owned(),
                resource_request: true,
                ..Attributes::default()
            };
            if self.authorize(&bind).is_allowed() {
                return Ok(());
            }
        }
        let rules = resolve_role_ref(self, role_ref, namespace)?;
        self.confirm_no_escalation(user, namespace, rules)
    }
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `Covers`: the atomic pieces of `servant` that no rule of `owner` covers.
pub(crate) fn uncovered(owner: &[&PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// `BreakdownRule`: one rule per (group, resource, verb[, name]) and per (URL, verb).
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: one(verb),
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: one(verb),
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], e: &str) -> bool {
    set.iter().any(|s| s == e)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

/// `resourceCoversAll`: `*`, exact names, or `*/sub` for `res/sub`.
fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// `nonResourceURLsCoversAll`.
fn urls_cover_all(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|p| owner.iter().any(|o| o == p || url_prefix_covers(o, p)))
}

/// `ruleCovers`: whether `owner` covers the atomic `sub`.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = urls_cover_all(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && has_all(&owner.resource_names, &sub.resource_names));
    verbs && groups && resources && names && urls
}

/// `CompactRules`: merges rules that name one group, one resource and at most one name, and
/// differ only in verbs, so the missing-permission list reads as upstream's does.
fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let mut simple: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    let mut simple_rules: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        );
        match simple.get(&key) {
            Some(&i) => {
                let existing = &mut simple_rules[i];
                for v in rule.verbs {
                    if !existing.verbs.contains(&v) {
                        existing.verbs.push(v);
                    }
                }
            }
            None => {
                simple.insert(key, simple_rules.len());
                simple_rules.push(rule);
            }
        }
    }
    out.extend(simple_rules);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use serde_json::json;

    fn rules(v: &[Value]) -> Vec<PolicyRule> {
        v.iter()
            .map(|r| PolicyRule::from_json(r).unwrap())
            .collect()
    }

    fn covers(owner: &[Value], servant: &[Value]) -> (bool, Vec<PolicyRule>) {
        let owner = rules(owner);
        let refs: Vec<&PolicyRule> = owner.iter().collect();
        let missing = uncovered(&refs, &rules(servant));
        (missing.is_empty(), missing)
    }

    fn with_names(mut r: Value, names: &[&str]) -> Value {
        r["resourceNames"] = json!(names);
        r
    }

    // policy_comparator_test.go.
    #[test]
    fn covers_exact_match() {
        let r = rule("get", "v1", "builds", "");
        let same = std::slice::from_ref(&r);
        assert_eq!(covers(same, same), (true, vec![]));
    }

    #[test]
    fn covers_subresource_wildcard() {
        assert!(
            covers(
                &[rule("get", "v1", "*/scale", "")],
                &[rule("get", "v1", "foo/scale", "")]
            )
            .0
        );
        assert!(
            !covers(
                &[rule("get", "v1", "*/scale", "")],
                &[rule("get", "v1", "foo", "")]
            )
            .0
        );
    }

    #[test]
    fn covers_multiple_rules_covering_single_rule() {
        let owner = [
            rule("delete", "v1", "deployments", ""),
            rule("delete", "v1", "builds", ""),
            rule("update", "v1", "builds,deployments", ""),
        ];
        assert!(
            covers(
                &owner,
                &[rule("delete,update", "v1", "builds,deployments", "")]
            )
            .0
        );
    }

    #[test]
    fn covers_multiple_api_groups() {
        let owner = [
            rule("delete", "group1", "deployments", ""),
            rule("delete", "group2", "deployments", ""),
        ];
        assert!(
            covers(
                &owner,
                &[rule("delete", "group1,group2", "deployments", "")]
            )
            .0
        );
        let (ok, missing) = covers(
            &owner,
            &[rule("delete", "group1,group3", "deployments", "")],
        );
        assert!(!ok);
        assert_eq!(
            missing,
            rules(&[rule("delete", "group3", "deployments", "")])
        );
    }

    #[test]
    fn covers_star_api_group_and_verb() {
        assert!(
            covers(
                &[rule("*", "*", "deployments", "")],
                &[rule("delete,get", "a,b", "deployments", "")]
            )
            .0
        );
    }

    #[test]
    fn covers_resource_names() {
        let any = rule("get", "", "pods", "");
        let foo = with_names(rule("get", "", "pods", ""), &["foo"]);
        let foobar = with_names(rule("get", "", "pods", ""), &["foo", "bar"]);
        // No names in the owner covers any names; names in the owner cover only those names.
        assert!(covers(std::slice::from_ref(&any), std::slice::from_ref(&foo)).0);
        assert!(covers(std::slice::from_ref(&foobar), std::slice::from_ref(&foo)).0);
        let (ok, missing) = covers(std::slice::from_ref(&foo), &[foobar]);
        assert!(!ok);
        assert_eq!(
            missing,
            rules(&[with_names(rule("get", "", "pods", ""), &["bar"])])
        );
        assert_eq!(
            covers(&[foo], std::slice::from_ref(&any)),
            (false, rules(&[any]))
        );
    }

    #[test]
    fn covers_non_resource_urls() {
        assert!(
            covers(
                &[rule("get", "", "", "/apis")],
                &[rule("get", "", "", "/apis")]
            )
            .0
        );
        assert!(
            covers(
                &[rule("get", "", "", "*")],
                &[rule("get", "", "", "/apis/foo")]
            )
            .0
        );
        assert!(
            covers(
                &[rule("get", "", "", "/apis/*")],
                &[rule("get", "", "", "/apis/foo,/apis/bar")]
            )
            .0
        );
        assert!(
            !covers(
                &[rule("get", "", "", "/apis/*")],
                &[rule("get", "", "", "/api")]
            )
            .0
        );
        assert!(
            !covers(
                &[rule("get", "", "", "/apis")],
                &[rule("post", "", "", "/apis")]
            )
            .0
        );
        // Resource rules never cover URLs, nor the other way round.
        assert!(!covers(&[rule("*", "*", "*", "")], &[rule("get", "", "", "/apis")]).0);
    }

    #[test]
    fn compact_merges_verbs_of_simple_rules() {
        let broken = uncovered(&[], &rules(&[rule("get,list", "", "pods,secrets", "")]));
        assert_eq!(broken.len(), 4);
        assert_eq!(
            compact_rules(broken),
            rules(&[
                rule("get,list", "", "pods", ""),
                rule("get,list", "", "secrets", "")
            ])
        );
    }

    #[test]
    fn escalation_is_refused_with_upstreams_message() {
        let a = authorizer(&[
            role("ns1", "pods", &[rule("get,list", "", "pods", "")]),
            binding("ns1", "b", "Role", "pods", &["User:alice"]),
            binding("ns1", "ghost", "Role", "missing", &["User:alice"]),
        ]);
        let alice = user("alice", "system:authenticated,devs");
        assert_eq!(
            a.confirm_no_escalation(&alice, "ns1", &rules(&[rule("get", "", "pods", "")])),
            Ok(())
        );
        assert_eq!(
            a.confirm_no_escalation(&alice, "ns1", &rules(&[rule("get,delete", "", "pods,secrets", "")])),
            Err(concat!(
                r#"user "alice" (groups=["system:authenticated" "devs"]) is attempting to grant RBAC permissions not currently held:"#,
                "\n",
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#,
                "\n",
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}"#,
                r#"; resolution errors: [role.rbac.authorization.k8s.io "missing" not found]"#,
            )
            .to_owned())
        );
        // What alice holds in ns1 she does not hold in ns2.
        assert!(
            a.confirm_no_escalation(&alice, "ns2", &rules(&[rule("get", "", "pods", "")]))
                .is_err()
        );
        assert_eq!(
            a.confirm_no_escalation(
                &user("root", "system:masters"),
                "",
                &rules(&[rule("*", "*", "*", "")])
            ),
            Ok(())
        );
    }

    #[test]
    fn can_bind_needs_the_roles_rules_or_bind() {
        let a = authorizer(&[
            cluster_role("view", &[rule("get,list", "", "pods", "")]),
            cluster_role("edit", &[rule("*", "", "pods", "")]),
            cluster_role(
                "binder",
                &[with_names(
                    rule("bind", "rbac.authorization.k8s.io", "clusterroles", ""),
                    &["edit"],
                )],
            ),
            cluster_role(
                "rb-writer",
                &[rule(
                    "create",
                    "rbac.authorization.k8s.io",
                    "rolebindings",
                    "",
                )],
            ),
            binding(
                "ns1",
                "v",
                "ClusterRole",
                "view",
                &["User:alice", "User:bob"],
            ),
            binding("ns1", "b", "ClusterRole", "binder", &["User:bob"]),
        ]);
        let alice = user("alice", "");
        let bob = user("bob", "");
        // Holding every permission of the role is enough.
        assert_eq!(
            a.can_bind(
                &alice,
                &binding("ns1", "x", "ClusterRole", "view", &["User:carol"])
            ),
            Ok(())
        );
        // Not holding them is an escalation.
        let err = a
            .can_bind(
                &alice,
                &binding("ns1", "x", "ClusterRole", "edit", &["User:carol"]),
            )
            .unwrap_err();
        assert!(err.starts_with(r#"user "alice" (groups=[]) is attempting to grant RBAC permissions not currently held:"#), "{err}");
        // `bind` on that very role (in the binding's namespace) allows it.
        assert_eq!(
            a.can_bind(
                &bob,
                &binding("ns1", "x", "ClusterRole", "edit", &["User:carol"])
            ),
            Ok(())
        );
        assert!(
            a.can_bind(
                &bob,
                &binding("ns2", "x", "ClusterRole", "edit", &["User:carol"])
            )
            .is_err()
        );
        assert!(
            a.can_bind(&bob, &cluster_binding("x", "edit", &["User:carol"]))
                .is_err()
        );
        // A missing role is reported as upstream reports it.
        assert_eq!(
            a.can_bind(
                &alice,
                &binding("ns1", "x", "Role", "nope", &["User:carol"])
            ),
            Err(r#"role.rbac.authorization.k8s.io "nope" not found"#.to_owned())
        );
        let mut weird = binding("ns1", "x", "ClusterRole", "view", &[]);
        weird["roleRef"]["kind"] = json!("Bogus");
        assert_eq!(
            a.can_bind(&alice, &weird),
            Err(r#"unsupported role reference kind: "Bogus""#.to_owned())
        );
        assert_eq!(a.can_bind(&user("root", "system:masters"), &weird), Ok(()));
    }

    #[test]
    fn can_write_role_needs_the_rules_or_escalate() {
        let a = authorizer(&[
            cluster_role("view", &[rule("get,list", "", "pods", "")]),
            cluster_role(
                "escalator",
                &[rule("escalate", "rbac.authorization.k8s.io", "roles", "")],
            ),
            cluster_role(
                "named",
                &[with_names(
                    rule("escalate", "rbac.authorization.k8s.io", "roles", ""),
                    &["r"],
                )],
            ),
            binding(
                "ns1",
                "v",
                "ClusterRole",
                "view",
                &["User:alice", "User:bob", "User:carol"],
            ),
            binding("ns1", "e", "ClusterRole", "escalator", &["User:bob"]),
            binding("ns1", "n", "ClusterRole", "named", &["User:carol"]),
        ]);
        let reader = role("ns1", "r", &[rule("get", "", "pods", "")]);
        let writer = role("ns1", "r", &[rule("delete", "", "pods", "")]);
        assert_eq!(a.can_write_role(&user("alice", ""), &reader, false), Ok(()));
        assert!(
            a.can_write_role(&user("alice", ""), &writer, false)
                .is_err()
        );
        assert_eq!(a.can_write_role(&user("bob", ""), &writer, false), Ok(()));
        // `escalate` limited to a name helps updates only: a create has no name yet.
        assert!(
            a.can_write_role(&user("carol", ""), &writer, false)
                .is_err()
        );
        assert_eq!(a.can_write_role(&user("carol", ""), &writer, true), Ok(()));
        // Roles in ns1 do not make a cluster role writable.
        let cluster = cluster_role("c", &[rule("get", "", "pods", "")]);
        assert!(
            a.can_write_role(&user("alice", ""), &cluster, false)
                .is_err()
        );
        assert!(
            a.can_write_role(&user("alice", ""), &json!({"kind": "Pod"}), false)
                .is_err()
        );
    }
}
