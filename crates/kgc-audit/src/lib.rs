//! kube-apiserver's audit policy (`audit.k8s.io/v1 Policy`, `--audit-policy-file`): which level
//! a request is audited at and which stages are left out (kubernetes/kubernetes
//! `staging/src/k8s.io/apiserver/pkg/audit/policy/checker.go`, `reader.go`; the types in
//! `staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go`).
//!
//! The first rule that matches a request decides its level and stages; a request no rule
//! matches is not audited (level `None`). The policy's own `omitStages` are added to every
//! rule's. Pure: the API server reads the file and writes the events.

#![forbid(unsafe_code)]

use serde::Deserialize;

/// Why a policy file is refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed decoding: {0}")]
    Decode(String),
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
    #[error("{0}")]
    Invalid(String),
}

/// How much of a request is recorded (`audit.Level`), in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Metadata => "Metadata",
            Self::Request => "Request",
            Self::RequestResponse => "RequestResponse",
        }
    }
}

/// A stage of a request's handling an event is written at (`audit.Stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RequestReceived => "RequestReceived",
            Self::ResponseStarted => "ResponseStarted",
            Self::ResponseComplete => "ResponseComplete",
            Self::Panic => "Panic",
        }
    }
}

/// `GroupResources`: resources of one API group, optionally only some names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// `PolicyRule`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// `audit.k8s.io/v1 Policy`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// What a request is audited at (`RequestAuditConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Decision {
    /// Whether an event is written at `stage`.
    pub fn records(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

/// The request a policy is evaluated for (the authorizer's attributes).
#[derive(Debug, Clone, Default)]
pub struct Attributes<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    /// The API verb (`get`, `list`, `watch`, `create`, …) of a resource request, the lowercase
    /// HTTP method of another.
    pub verb: &'a str,
    /// Set on a resource request.
    pub resource: Option<ResourceAttributes<'a>>,
    pub path: &'a str,
}

/// What a resource request is about.
#[derive(Debug, Clone, Default)]
pub struct ResourceAttributes<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl Policy {
    /// Decodes (YAML or JSON) and validates a policy file's text (`LoadPolicyFromBytes`).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let policy: Self =
            serde_saphyr::from_str(text).map_err(|e| Error::Decode(e.to_string()))?;
        if policy.kind != "Policy"
            || !matches!(
                policy.api_version.as_str(),
                "audit.k8s.io/v1" | "audit.k8s.io/v1beta1" | "audit.k8s.io/v1alpha1"
            )
        {
            return Err(Error::Decode(format!(
                "no kind {:?} is registered for version {:?}",
                policy.kind, policy.api_version
            )));
        }
        policy.validate()?;
        if policy.rules.is_empty() {
            return Err(Error::NoRules);
        }
        Ok(policy)
    }

    /// `ValidatePolicy`: a rule names either resources or non-resource URLs, a group's
    /// resource names go with resources, a non-resource URL ends with `*` only as its last
    /// character.
    fn validate(&self) -> Result<(), Error> {
        let mut errs = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            let at = format!("rules[{i}]");
            if !r.non_resource_urls.is_empty()
                && (!r.resources.is_empty() || !r.namespaces.is_empty())
            {
                errs.push(format!(
                    "{at}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    r.non_resource_urls
                ));
            }
            for (j, url) in r.non_resource_urls.iter().enumerate() {
                if url.find('*').is_some_and(|p| p != url.len() - 1) {
                    errs.push(format!(
                        "{at}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules may only use wildcards ('*') at the end"
                    ));
                }
            }
            for (j, g) in r.resources.iter().enumerate() {
                if !g.resource_names.is_empty() && g.resources.is_empty() {
                    errs.push(format!(
                        "{at}.resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                        g.resource_names
                    ));
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(errs.join(", ")))
        }
    }

    /// The level and stages of a request (`EvaluatePolicyRule`): the first rule matching,
    /// with the policy's `omitStages` added; none matching, `None`.
    pub fn evaluate(&self, attrs: &Attributes<'_>) -> Decision {
        match self.rules.iter().find(|r| r.matches(attrs)) {
            Some(r) => {
                let mut omit = self.omit_stages.clone();
                omit.extend(
                    r.omit_stages
                        .iter()
                        .filter(|s| !self.omit_stages.contains(s)),
                );
                Decision {
                    level: r.level,
                    omit_stages: omit,
                    omit_managed_fields: r.omit_managed_fields.unwrap_or(self.omit_managed_fields),
                }
            }
            None => Decision {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

impl Rule {
    /// `ruleMatches`.
    fn matches(&self, a: &Attributes<'_>) -> bool {
        if !self.users.is_empty() && !self.users.iter().any(|u| u == a.user) {
            return false;
        }
        if !self.user_groups.is_empty() && !a.groups.iter().any(|g| self.user_groups.contains(g)) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return a.resource.is_none()
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(a.path, spec));
        }
        true
    }

    /// `ruleMatchesResource`: `resource/subresource`, `*`, `*/subresource` and `resource/*`.
    fn matches_resource(&self, a: &Attributes<'_>) -> bool {
        let Some(r) = &a.resource else {
            return false;
        };
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if r.subresource.is_empty() {
            r.resource.to_owned()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.resources
            .iter()
            .filter(|g| g.group == r.group)
            .any(|g| {
                if g.resources.is_empty() {
                    return true;
                }
                if !g.resource_names.is_empty() && !g.resource_names.iter().any(|n| n == r.name) {
                    return false;
                }
                g.resources.iter().any(|res| {
                    res == &combined
                        || res == "*"
                        || (!r.subresource.is_empty()
                            && res.strip_prefix("*/") == Some(r.subresource))
                        || res.strip_suffix("/*") == Some(r.resource)
                })
            })
    }
}

/// `pathMatches`: `*`, the path itself, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-proxy]
  verbs: [watch]
- level: RequestResponse
  resources:
  - group: ''
    resources: [pods/log, configmaps]
    resourceNames: [cm]
- level: Request
  userGroups: [team]
  namespaces: [prod]
  omitStages: [ResponseStarted]
- level: None
  nonResourceURLs: [/healthz*, /version]
- level: Metadata
  resources:
  - group: apps
    resources: ['*/scale', 'deployments/*']
- level: Metadata
  omitManagedFields: true
";

    fn resource<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: "alice",
            groups: &[],
            verb,
            resource: Some(ResourceAttributes {
                group,
                resource,
                subresource: sub,
                namespace: ns,
                name,
            }),
            path: "/api",
        }
    }

    #[test]
    fn first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let level = |a: &Attributes<'_>| p.evaluate(a).level;
        let proxy = Attributes {
            user: "system:kube-proxy",
            verb: "watch",
            ..resource("watch", "", "pods", "", "", "")
        };
        assert_eq!(level(&proxy), Level::None);
        assert_eq!(
            level(&resource("get", "", "configmaps", "", "a", "cm")),
            Level::RequestResponse
        );
        assert_eq!(
            level(&resource("get", "", "configmaps", "", "a", "other")),
            Level::Metadata
        );
        assert_eq!(
            level(&resource("get", "", "pods", "log", "a", "cm")),
            Level::RequestResponse
        );
        let team = ["team".to_owned()];
        let in_prod = Attributes {
            groups: &team,
            ..resource("create", "", "secrets", "", "prod", "s")
        };
        let d = p.evaluate(&in_prod);
        assert_eq!(d.level, Level::Request);
        assert_eq!(
            d.omit_stages,
            [Stage::RequestReceived, Stage::ResponseStarted]
        );
        assert!(!d.records(Stage::RequestReceived) && d.records(Stage::ResponseComplete));
        let healthz = Attributes {
            verb: "get",
            path: "/healthz/etcd",
            ..Attributes::default()
        };
        assert_eq!(level(&healthz), Level::None);
        assert_eq!(
            level(&resource(
                "update",
                "apps",
                "statefulsets",
                "scale",
                "a",
                "x"
            )),
            Level::Metadata
        );
        assert_eq!(
            level(&resource("get", "apps", "deployments", "status", "a", "x")),
            Level::Metadata
        );
        let d = p.evaluate(&resource("get", "batch", "jobs", "", "a", "x"));
        assert!(d.omit_managed_fields);
    }

    #[test]
    fn no_rule_is_none_and_bad_policies_are_refused() {
        let p = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  users: [bob]\n",
        )
        .unwrap();
        let d = p.evaluate(&resource("get", "", "pods", "", "", ""));
        assert!(!d.records(Stage::ResponseComplete));
        assert!(matches!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\n"),
            Err(Error::NoRules)
        ));
        assert!(Policy::parse("apiVersion: v1\nkind: Policy\nrules: []\n").is_err());
        assert!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
                .is_err()
        );
        let both = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  namespaces: [a]\n  nonResourceURLs: ['/x']\n";
        assert!(matches!(Policy::parse(both), Err(Error::Invalid(_))));
    }
}
