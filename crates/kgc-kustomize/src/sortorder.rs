//! The output order (kustomize's `SortOrderTransformer`): `legacy` (the default, also of
//! `kubectl kustomize`) puts kinds in kustomize's install order (namespaces and CRDs first,
//! webhooks last), then by namespace and name; `fifo` keeps the order resources were read.

use std::cmp::Ordering;

use crate::kustomization::SortOptions;
use crate::resource::{ResId, Resource};

/// kustomize's `defaultOrderFirst`.
const ORDER_FIRST: [&str; 22] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// kustomize's `defaultOrderLast`.
const ORDER_LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts `resources` as `options` says (none: legacy with kustomize's kind lists).
pub fn apply(resources: &mut [Resource], options: Option<&SortOptions>) -> Result<(), String> {
    let order = options.map(|o| o.order.as_str()).unwrap_or("legacy");
    match order {
        "fifo" => {
            if options.is_some_and(|o| o.legacy_sort_options.is_some()) {
                return Err("legacySortOptions is not allowed with the fifo sort order".into());
            }
            Ok(())
        }
        "legacy" => {
            let legacy = options.and_then(|o| o.legacy_sort_options.as_ref());
            let first: Vec<&str> = match legacy {
                Some(l) => l.order_first.iter().map(String::as_str).collect(),
                None => ORDER_FIRST.to_vec(),
            };
            let last: Vec<&str> = match legacy {
                Some(l) => l.order_last.iter().map(String::as_str).collect(),
                None => ORDER_LAST.to_vec(),
            };
            let lists = (first.as_slice(), last.as_slice());
            resources.sort_by_cached_key(|r| {
                let id = r.id();
                let rank = kind_rank(&id.kind, Some(lists));
                LegacyKey { rank, id }
            });
            Ok(())
        }
        other => Err(format!(
            "the field 'sortOptions.order' must be one of [fifo, legacy], got {other:?}"
        )),
    }
}

/// A kind's place: negative for the kinds that go first, positive for those that go last,
/// 0 for the rest (kustomize's `typeOrders`); `lists` are (first, last), kustomize's
/// defaults when `None`.
pub fn kind_rank(kind: &str, lists: Option<(&[&str], &[&str])>) -> i64 {
    let (first, last) = lists.unwrap_or((&ORDER_FIRST, &ORDER_LAST));
    if let Some(i) = first.iter().position(|k| *k == kind) {
        return i as i64 - first.len() as i64;
    }
    match last.iter().position(|k| *k == kind) {
        Some(i) => 1 + i as i64,
        None => 0,
    }
}

#[derive(PartialEq, Eq)]
struct LegacyKey {
    rank: i64,
    id: ResId,
}

impl Ord for LegacyKey {
    /// kustomize's `legacyIDSorter.Less`: kind rank, then the group/version/kind string, then
    /// the `gvk|namespace|name` string (`~X` for no namespace).
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.id, &other.id);
        let same_gvk = a.group == b.group && a.version == b.version && a.kind == b.kind;
        if !same_gvk {
            if self.rank != other.rank {
                return self.rank.cmp(&other.rank);
            }
            let ord = gvk_string(a).cmp(&gvk_string(b));
            if a.kind == "Namespace"
                && b.kind == "Namespace"
                && (a.group.is_empty() || b.group.is_empty())
            {
                return ord.reverse();
            }
            return ord;
        }
        id_string(a).cmp(&id_string(b))
    }
}

impl PartialOrd for LegacyKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn or<'a>(s: &'a str, empty: &'a str) -> &'a str {
    if s.is_empty() { empty } else { s }
}

/// kustomize's `legacyGVKSortString`.
fn gvk_string(id: &ResId) -> String {
    format!(
        "{}_{}_{}",
        or(&id.group, "~G"),
        or(&id.version, "~V"),
        or(&id.kind, "~K")
    )
}

/// kustomize's `legacyResIDSortString` (`Gvk.String()` is the same for both sides).
fn id_string(id: &ResId) -> String {
    format!("{}|{}", or(&id.namespace, "~X"), or(&id.name, "~N"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(rs: &[Resource]) -> Vec<String> {
        rs.iter()
            .map(|r| format!("{}/{}", r.id().kind, r.id().name))
            .collect()
    }

    #[test]
    fn legacy_order_puts_namespaces_first_and_webhooks_last() {
        let mut rs: Vec<Resource> = [
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                "w",
            ),
            ("apps/v1", "Deployment", "b"),
            ("v1", "Pod", "p"),
            ("apps/v1", "Deployment", "a"),
            ("v1", "Namespace", "n"),
        ]
        .into_iter()
        .map(|(a, k, n)| {
            Resource::new(json!({"apiVersion": a, "kind": k, "metadata": {"name": n}}))
        })
        .collect();
        let fifo = SortOptions {
            order: "fifo".into(),
            legacy_sort_options: None,
        };
        let before = kinds(&rs);
        apply(&mut rs, Some(&fifo)).unwrap();
        assert_eq!(kinds(&rs), before);
        apply(&mut rs, None).unwrap();
        assert_eq!(
            kinds(&rs),
            [
                "Namespace/n",
                "Deployment/a",
                "Deployment/b",
                "Pod/p",
                "ValidatingWebhookConfiguration/w"
            ]
        );
    }
}
