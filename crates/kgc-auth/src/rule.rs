//! `PolicyRule` and the matchers that decide whether one rule covers a request, as upstream's
//! `pkg/apis/rbac/v1/evaluation_helpers.go` and `plugin/pkg/auth/authorizer/rbac/rbac.go`
//! (`RuleAllows`) define them.
//!
//! A rule is parsed strictly: a field that is present but not a list of strings makes the whole
//! rule unparseable, and an unparseable rule grants nothing. A lenient parse (say, treating the
//! string `"*"` as the list `["*"]`) could widen access beyond what the author wrote.

use serde_json::{Map, Value, json};

use crate::Attributes;

/// `*`: every verb, API group, resource or non-resource URL (`rbacv1.VerbAll` and friends).
pub const ALL: &str = "*";

/// One RBAC rule (`rbac.authorization.k8s.io/v1` `PolicyRule`).
///
/// Empty lists mean "none", except `resource_names`, where empty means "any name".
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Parses one element of `rules`. The error names the offending field (relative to the
    /// rule, e.g. `verbs`) and what was wrong with it.
    pub fn from_json(v: &Value) -> Result<Self, (String, String)> {
        let Some(o) = v.as_object() else {
            return Err((String::new(), "must be an object".to_owned()));
        };
        Ok(Self {
            verbs: string_list(o, "verbs")?,
            api_groups: string_list(o, "apiGroups")?,
            resources: string_list(o, "resources")?,
            resource_names: string_list(o, "resourceNames")?,
            non_resource_urls: string_list(o, "nonResourceURLs")?,
        })
    }

    /// The JSON form, with empty lists omitted as upstream's `omitempty` does (except `verbs`,
    /// which upstream always writes).
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        let mut put = |k: &str, v: &[String]| {
            if !v.is_empty() {
                o.insert(k.to_owned(), json!(v));
            }
        };
        put("apiGroups", &self.api_groups);
        put("nonResourceURLs", &self.non_resource_urls);
        put("resourceNames", &self.resource_names);
        put("resources", &self.resources);
        o.insert("verbs".to_owned(), json!(self.verbs));
        Value::Object(o)
    }

    /// `RuleAllows`: whether this rule admits the request.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !verb_matches(self, &attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return non_resource_url_matches(self, &attrs.path);
        }
        api_group_matches(self, &attrs.api_group)
            && resource_matches(self, &attrs.resource, &attrs.subresource)
            && resource_name_matches(self, &attrs.name)
    }

    /// `CompactString` (`evaluation_helpers.go`): the form escalation errors list missing rules
    /// in, e.g. `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let parts: Vec<String> = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}:{}", go_quote_list(v)))
        .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quote_list(v: &[String]) -> String {
    let quoted: Vec<String> = v.iter().map(|s| kgc_meta::gojson::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A list-of-strings field: absent or `null` is empty; anything else must be a list of strings.
fn string_list(o: &Map<String, Value>, key: &str) -> Result<Vec<String>, (String, String)> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err((format!("{key}[{i}]"), "must be a string".to_owned())),
            })
            .collect(),
        Some(_) => Err((key.to_owned(), "must be a list of strings".to_owned())),
    }
}

/// Parses `rules` of a Role or ClusterRole. Unparseable rules are dropped (they grant nothing)
/// and reported as `(field path, problem)`.
pub(crate) fn parse_rules(obj: &Value) -> (Vec<PolicyRule>, Vec<(String, String)>) {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    match obj.get("rules") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match PolicyRule::from_json(item) {
                    Ok(r) => rules.push(r),
                    Err((field, why)) => {
                        let path = if field.is_empty() {
                            format!("rules[{i}]")
                        } else {
                            format!("rules[{i}].{field}")
                        };
                        problems.push((path, why));
                    }
                }
            }
        }
        Some(_) => problems.push(("rules".to_owned(), "must be a list".to_owned())),
    }
    (rules, problems)
}

/// `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource` or `resource/subresource`, or `*/subresource`
/// for a subresource request. There is no `resource/*` form upstream, so there is none here:
/// `pods/*` only matches a subresource literally named `*`.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == ALL {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        match r.split_once('/') {
            Some((res, sub)) => sub == subresource && (res == resource || res == ALL),
            None => false,
        }
    })
}

/// `ResourceNameMatches`: an empty list admits every name.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `NonResourceURLMatches`: `*`, an exact path, or a prefix ending in `*` (every trailing `*` is
/// trimmed, as Go's `strings.TrimRight` does).
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls
        .iter()
        .any(|u| u == ALL || u == path || url_prefix_covers(u, path))
}

/// `/apis/*` covers `/apis/apps` (and `/apis` does not cover `/apis/apps`).
pub(crate) fn url_prefix_covers(owner: &str, path: &str) -> bool {
    owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v).unwrap()
    }

    fn res(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            resource_request: true,
            ..Attributes::default()
        }
    }

    fn url(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Attributes::default()
        }
    }

    // Table ported from upstream's rbac_test.go `TestRuleMatches`.
    #[test]
    fn rule_matches() {
        let cases: &[(&str, Value, Attributes, bool)] = &[
            (
                "star verb, exact match other",
                json!({"verbs": ["*"], "apiGroups": ["group1"], "resources": ["resource1"]}),
                res("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "star verb, exact match other, wrong group",
                json!({"verbs": ["*"], "apiGroups": ["group1"], "resources": ["resource1"]}),
                res("get", "group2", "resource1", "", ""),
                false,
            ),
            (
                "star verb, exact match other, wrong resource",
                json!({"verbs": ["*"], "apiGroups": ["group1"], "resources": ["resource1"]}),
                res("get", "group1", "resource2", "", ""),
                false,
            ),
            (
                "star group, exact match other",
                json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["resource1"]}),
                res("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "star group, exact match other, wrong verb",
                json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["resource1"]}),
                res("list", "group1", "resource1", "", ""),
                false,
            ),
            (
                "star resource, exact match other",
                json!({"verbs": ["get"], "apiGroups": ["group1"], "resources": ["*"]}),
                res("get", "group1", "resource1", "", ""),
                true,
            ),
            (
                "tuple expansion",
                json!({"verbs": ["get", "list"], "apiGroups": ["group1", "group2"],
                       "resources": ["resource1", "resource2"]}),
                res("list", "group2", "resource2", "", ""),
                true,
            ),
            (
                "subresource expansion",
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["resource1/subresource1"]}),
                res("get", "group1", "resource1", "subresource1", ""),
                true,
            ),
            (
                "subresource expansion, the resource alone does not match",
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["resource1/subresource1"]}),
                res("get", "group1", "resource1", "", ""),
                false,
            ),
            (
                "star nonresource, exact match other",
                json!({"verbs": ["get"], "nonResourceURLs": ["*"]}),
                url("get", "/foo"),
                true,
            ),
            (
                "star nonresource subpath",
                json!({"verbs": ["get"], "nonResourceURLs": ["/foo/*"]}),
                url("get", "/foo/bar"),
                true,
            ),
            (
                "star nonresource subpath, exact prefix",
                json!({"verbs": ["get"], "nonResourceURLs": ["/foo/*"]}),
                url("get", "/foo/"),
                true,
            ),
            (
                "star nonresource subpath, parent does not match",
                json!({"verbs": ["get"], "nonResourceURLs": ["/foo/*"]}),
                url("get", "/foo"),
                false,
            ),
            (
                "star verb, exact nonresource",
                json!({"verbs": ["*"], "nonResourceURLs": ["/foo", "/bar"]}),
                url("get", "/bar"),
                true,
            ),
            (
                "nonresource rule does not match resource request",
                json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
                res("get", "", "pods", "", ""),
                false,
            ),
            (
                "resource rule does not match nonresource request",
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                url("get", "/healthz"),
                false,
            ),
            (
                "resource names, match",
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                       "resourceNames": ["a", "b"]}),
                res("get", "", "pods", "", "b"),
                true,
            ),
            (
                "resource names, no match",
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                       "resourceNames": ["a"]}),
                res("get", "", "pods", "", "c"),
                false,
            ),
            (
                "resource names, list has no name",
                json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"],
                       "resourceNames": ["a"]}),
                res("list", "", "pods", "", ""),
                false,
            ),
        ];
        for (name, r, attrs, want) in cases {
            assert_eq!(rule(r.clone()).allows(attrs), *want, "{name}");
        }
    }

    // evaluation_helpers_test.go `TestResourceMatches`.
    #[test]
    fn resource_matches_table() {
        let cases: &[(&str, &[&str], &str, &str, bool)] = &[
            ("all matches 01", &["*"], "foo", "", true),
            ("checks all rules", &["doe", "*"], "foo", "", true),
            ("matches exact rule", &["foo/bar"], "foo", "bar", true),
            ("matches exact rule 02", &["foo/bar"], "foo", "", false),
            ("matches subresource", &["*/scale"], "foo", "scale", true),
            (
                "doesn't match partial subresource hit",
                &["foo/bar", "*/other"],
                "foo",
                "other/segment",
                false,
            ),
            (
                "matches subresource with multiple slashes",
                &["*/other/segment"],
                "foo",
                "other/segment",
                true,
            ),
            (
                "doesn't fail on empty",
                &[""],
                "foo",
                "other/segment",
                false,
            ),
            (
                "doesn't fail on slash",
                &["/"],
                "foo",
                "other/segment",
                false,
            ),
            (
                "doesn't fail on missing subresource",
                &["*/"],
                "foo",
                "other/segment",
                false,
            ),
            (
                "doesn't match on not star",
                &["*something/other/segment"],
                "foo",
                "other/segment",
                false,
            ),
            (
                "doesn't match on something else",
                &["something/other/segment"],
                "foo",
                "other/segment",
                false,
            ),
            (
                "resource/* is not a wildcard",
                &["foo/*"],
                "foo",
                "scale",
                false,
            ),
            (
                "*/subresource does not match the parent",
                &["*/scale"],
                "foo",
                "",
                false,
            ),
        ];
        for (name, rules, resource, sub, want) in cases {
            let r = PolicyRule {
                resources: rules.iter().map(|s| s.to_string()).collect(),
                ..PolicyRule::default()
            };
            assert_eq!(resource_matches(&r, resource, sub), *want, "{name}");
        }
    }

    #[test]
    fn non_resource_url_trailing_stars_are_all_trimmed() {
        let r = PolicyRule {
            non_resource_urls: vec!["/api**".into()],
            ..PolicyRule::default()
        };
        assert!(non_resource_url_matches(&r, "/api"));
        assert!(non_resource_url_matches(&r, "/apis/apps"));
        assert!(!non_resource_url_matches(&r, "/ap"));
    }

    #[test]
    fn malformed_rules_do_not_parse() {
        for bad in [
            json!("*"),
            json!({"verbs": "*", "apiGroups": ["*"], "resources": ["*"]}),
            json!({"verbs": ["*"], "apiGroups": "*", "resources": ["*"]}),
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": [1]}),
            json!({"verbs": ["*"], "nonResourceURLs": {"*": true}}),
        ] {
            assert!(PolicyRule::from_json(&bad).is_err(), "{bad}");
        }
        let (rules, problems) = parse_rules(&json!({"rules": [
            {"verbs": "*", "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        ]}));
        assert_eq!(rules.len(), 1);
        assert_eq!(
            problems,
            [("rules[0].verbs".into(), "must be a list of strings".into())]
        );
    }

    #[test]
    fn compact_string_is_upstreams() {
        let r = rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
                            "resourceNames": ["a"]}),
        );
        assert_eq!(
            r.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}"#
        );
        let r = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}));
        assert_eq!(
            r.compact_string(),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
    }

    #[test]
    fn json_round_trip() {
        let v = json!({"apiGroups": [""], "resourceNames": ["x"], "resources": ["pods"], "verbs": ["get"]});
        assert_eq!(rule(v.clone()).to_json(), v);
    }

    proptest! {
        // `*/sub` and `res/sub` agree with upstream's length-and-affix formulation.
        #[test]
        fn resource_matches_agrees_with_upstream_formula(
            rule_res in "[a-z*/]{0,6}", resource in "[a-z]{1,3}", sub in "[a-z/]{0,3}",
        ) {
            let combined = if sub.is_empty() { resource.clone() } else { format!("{resource}/{sub}") };
            let upstream = rule_res == "*" || rule_res == combined || (!sub.is_empty()
                && rule_res.len() == sub.len() + 2 && rule_res.starts_with("*/") && rule_res.ends_with(&sub));
            let r = PolicyRule { resources: vec![rule_res], ..PolicyRule::default() };
            prop_assert_eq!(resource_matches(&r, &resource, &sub), upstream);
        }

        // A rule never matches a verb it does not list (unless it lists `*`).
        #[test]
        fn verbs_never_widen(verbs in proptest::collection::vec("[a-z]{1,4}", 0..4), verb in "[a-z]{1,4}") {
            let r = PolicyRule { verbs: verbs.clone(), ..PolicyRule::default() };
            prop_assert_eq!(verb_matches(&r, &verb), verbs.contains(&verb));
        }
    }
}
