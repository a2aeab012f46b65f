//! Group/kind identity of source and live objects.
//!
//! Objects are compared by *canonical* group and kind, never by apiVersion: the same live
//! Deployment is served as `extensions/v1beta1` and `apps/v1`, and a tool that keys on the
//! written group deletes the object it just applied after a group migration
//! (fluxcd/kustomize-controller#510). The alias table is qbec's (splunk/qbec
//! internal/remote/k8smeta/meta.go); the executor adds the uid cross-check on top.

use std::fmt;

use kgc_meta::catalog::group_of;
use serde::{Deserialize, Serialize};

/// A group and kind (`""` is the core group).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        Self {
            group: group.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// The group and kind of an `apiVersion` and `kind` pair, folded through the alias table.
    pub fn canonical(api_version: &str, kind: &str) -> Self {
        Self::new(canonical_group(group_of(api_version), kind), kind)
    }

    /// Parses the ApplySet `contains-group-kinds` element form, `Kind.group` (`Kind` for core).
    pub fn parse_applyset(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        Some(match s.split_once('.') {
            Some((kind, group)) => Self::new(group, kind),
            None => Self::new("", s),
        })
    }

    /// The ApplySet `contains-group-kinds` element form (KEP-3659): `Kind.group`, or `Kind`.
    pub fn applyset_form(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }

    pub fn is_crd(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.kind == "CustomResourceDefinition"
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.applyset_form())
    }
}

/// The group an object of `kind` served under `group` is canonically known by.
pub fn canonical_group<'a>(group: &'a str, kind: &str) -> &'a str {
    match (group, kind) {
        ("extensions", "Deployment" | "DaemonSet" | "ReplicaSet") => "apps",
        ("extensions", "Ingress" | "NetworkPolicy") => "networking.k8s.io",
        ("extensions", "PodSecurityPolicy") => "policy",
        ("events.k8s.io", "Event") => "",
        _ => group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_fold_to_their_current_groups() {
        assert_eq!(
            GroupKind::canonical("extensions/v1beta1", "Deployment"),
            GroupKind::new("apps", "Deployment")
        );
        assert_eq!(
            GroupKind::canonical("extensions/v1beta1", "Ingress"),
            GroupKind::new("networking.k8s.io", "Ingress")
        );
        assert_eq!(
            GroupKind::canonical("extensions/v1beta1", "NetworkPolicy"),
            GroupKind::new("networking.k8s.io", "NetworkPolicy")
        );
        assert_eq!(
            GroupKind::canonical("extensions/v1beta1", "PodSecurityPolicy"),
            GroupKind::new("policy", "PodSecurityPolicy")
        );
        assert_eq!(
            GroupKind::canonical("events.k8s.io/v1", "Event"),
            GroupKind::new("", "Event")
        );
        assert_eq!(
            GroupKind::canonical("v1", "ConfigMap"),
            GroupKind::new("", "ConfigMap")
        );
        // Only the listed kinds move: an extensions group of a CRD stays.
        assert_eq!(
            GroupKind::canonical("extensions/v1", "Widget"),
            GroupKind::new("extensions", "Widget")
        );
    }

    #[test]
    fn applyset_form_round_trips() {
        for gk in [
            GroupKind::new("", "ConfigMap"),
            GroupKind::new("apps", "Deployment"),
            GroupKind::new("example.com", "Widget"),
        ] {
            assert_eq!(GroupKind::parse_applyset(&gk.applyset_form()), Some(gk));
        }
        assert_eq!(GroupKind::parse_applyset(" "), None);
    }
}
