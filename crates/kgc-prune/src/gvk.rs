//! Group/kind identity of source and live objects.
//!
//! Objects are compared by *canonical* group and kind, never by apiVersion: the same live
//! Deployment is served as `extensions/v1beta1` and `apps/v1`, and a tool that keys on the
//! written group deletes the object it just applied after a group migration
//! (fluxcd/kustomize-controller#510). The alias table is qbec's (splunk/qbec
//! internal/remote/k8smeta/meta.go); the executor adds the uid cross-check on top.

pub use kgc_meta::GroupKind;
use kgc_meta::catalog::group_of;

/// The group and kind of an `apiVersion` and `kind` pair, folded through the alias table.
pub fn canonical(api_version: &str, kind: &str) -> GroupKind {
    GroupKind::new(canonical_group(group_of(api_version), kind), kind)
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
            canonical("extensions/v1beta1", "Deployment"),
            GroupKind::new("apps", "Deployment")
        );
        assert_eq!(
            canonical("extensions/v1beta1", "Ingress"),
            GroupKind::new("networking.k8s.io", "Ingress")
        );
        assert_eq!(
            canonical("extensions/v1beta1", "NetworkPolicy"),
            GroupKind::new("networking.k8s.io", "NetworkPolicy")
        );
        assert_eq!(
            canonical("extensions/v1beta1", "PodSecurityPolicy"),
            GroupKind::new("policy", "PodSecurityPolicy")
        );
        assert_eq!(
            canonical("events.k8s.io/v1", "Event"),
            GroupKind::new("", "Event")
        );
        assert_eq!(
            canonical("v1", "ConfigMap"),
            GroupKind::new("", "ConfigMap")
        );
        // Only the listed kinds move: an extensions group of a CRD stays.
        assert_eq!(
            canonical("extensions/v1", "Widget"),
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
            assert_eq!(GroupKind::parse(&gk.to_string()), Some(gk));
        }
        assert_eq!(GroupKind::parse(" "), None);
    }
}
