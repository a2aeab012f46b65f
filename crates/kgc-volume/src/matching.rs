//! Which volume a claim binds to: the pure part of the PV controller (kubernetes
//! `staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go` `FindMatchingVolume`,
//! `IsVolumeBoundToClaim`, `CheckAccessModes`; `pkg/controller/volume/persistentvolume/index.go`
//! `findByClaim`, `allPossibleMatchingAccessModes`; `pv_controller.go`
//! `checkVolumeSatisfyClaim`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kgc_meta::quantity::Quantity;

/// The claim's class: `spec.storageClassName`, or the beta annotation older clients set
/// (`GetPersistentVolumeClaimClass`); empty for none.
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(c) = crate::annotation(&claim.metadata, "volume.beta.kubernetes.io/storage-class") {
        return c;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The volume's class (`GetPersistentVolumeClass`).
pub fn volume_class(pv: &PersistentVolume) -> &str {
    if let Some(c) = crate::annotation(&pv.metadata, "volume.beta.kubernetes.io/storage-class") {
        return c;
    }
    pv.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The storage the claim requests (`spec.resources.requests.storage`); zero when unset, as
/// upstream reads a missing quantity. A malformed one is an error naming the field.
pub fn requested(claim: &PersistentVolumeClaim) -> Result<Quantity, String> {
    let q = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    match q {
        None => Ok(Quantity::default()),
        Some(q) => Quantity::parse(&q.0)
            .map_err(|e| format!("spec.resources.requests.storage {:?}: {e}", q.0)),
    }
}

/// The volume's `spec.capacity.storage`; `None` when unset or malformed.
pub fn capacity(pv: &PersistentVolume) -> Option<Quantity> {
    let q = pv.spec.as_ref()?.capacity.as_ref()?.get("storage")?;
    Quantity::parse(&q.0).ok()
}

fn claim_modes(claim: &PersistentVolumeClaim) -> &[String] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

fn volume_modes(pv: &PersistentVolume) -> &[String] {
    pv.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

/// `IsVolumeBoundToClaim`: the volume's `claimRef` names the claim, with its uid or none.
pub fn is_bound_to_claim(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name != claim.metadata.name || r.namespace != claim.metadata.namespace {
        return false;
    }
    r.uid.as_deref().is_none_or(str::is_empty) || r.uid == claim.metadata.uid
}

/// `CheckVolumeModeMismatches`: `Filesystem` unless set.
fn volume_mode_mismatch(claim: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let claim_mode = claim.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    let pv_mode = pv.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    claim_mode.unwrap_or("Filesystem") != pv_mode.unwrap_or("Filesystem")
}

/// `CheckAccessModes`: every mode the claim asks for is one the volume has.
pub fn access_modes_fit(claim: &PersistentVolumeClaim, pv: &PersistentVolume) -> bool {
    let have = volume_modes(pv);
    claim_modes(claim).iter().all(|m| have.contains(m))
}

/// Whether `labels` satisfy a `metav1.LabelSelector` (`LabelSelectorAsSelector`); a malformed
/// selector is an error, never a looser match.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    let mut ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or_default();
        let has = labels.get(&e.key);
        let holds = match e.operator.as_str() {
            "In" if !values.is_empty() => has.is_some_and(|v| values.contains(v)),
            "NotIn" if !values.is_empty() => has.is_none_or(|v| !values.contains(v)),
            "Exists" if values.is_empty() => has.is_some(),
            "DoesNotExist" if values.is_empty() => has.is_none(),
            op => {
                return Err(format!(
                    "spec.selector: invalid requirement on {:?} with operator {op:?} and values {values:?}",
                    e.key
                ));
            }
        };
        ok &= holds;
    }
    Ok(ok)
}

/// The node a volume must be reachable from: the one the scheduler chose for the claim's first
/// consumer (`volume.kubernetes.io/selected-node`).
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// `CheckNodeAffinity`: whether the volume's required node affinity admits the node; a volume
/// without one is reachable from anywhere. Terms are ORed, a term's requirements ANDed; a term
/// with none matches nothing, as `NodeSelectorRequirementsAsSelector` makes it.
pub fn node_affinity_admits(pv: &PersistentVolume, node: Node<'_>) -> bool {
    let Some(required) = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    required.node_selector_terms.iter().any(|term| {
        let exprs = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if exprs.is_empty() && fields.is_empty() {
            return false;
        }
        let name = BTreeMap::from([("metadata.name".to_owned(), node.name.to_owned())]);
        exprs.iter().all(|r| requirement_holds(r, node.labels))
            && fields.iter().all(|r| requirement_holds(r, &name))
    })
}

/// One `NodeSelectorRequirement` against `values` (labels, or fields).
fn requirement_holds(
    r: &k8s_openapi::api::core::v1::NodeSelectorRequirement,
    values: &BTreeMap<String, String>,
) -> bool {
    let want = r.values.as_deref().unwrap_or_default();
    let has = values.get(&r.key);
    let number = |v: &str| v.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => has.is_some_and(|v| want.contains(v)),
        "NotIn" => has.is_none_or(|v| !want.contains(v)),
        "Exists" => has.is_some(),
        "DoesNotExist" => has.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), [limit]) = (has.and_then(|v| number(v)), want) else {
                return false;
            };
            let Some(limit) = number(limit) else {
                return false;
            };
            if r.operator == "Gt" {
                have > limit
            } else {
                have < limit
            }
        }
        _ => false,
    }
}

/// `FindMatchingVolume`: among `volumes`, the one pre-bound to the claim (if reachable from
/// `node`), else the smallest Available one of the claim's class that is large enough, matches
/// its selector and is reachable from `node`. Without a node, a claim whose binding waits for
/// the first consumer takes only a pre-bound volume (the PV controller's path; the scheduler's
/// passes the node).
fn find_matching<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &[&'a PersistentVolume],
    delay_binding: bool,
    node: Option<Node<'_>>,
) -> Result<Option<&'a PersistentVolume>, String> {
    let requested = requested(claim)?;
    let class = claim_class(claim);
    let selector = claim.spec.as_ref().and_then(|s| s.selector.as_ref());
    let mut smallest: Option<(&PersistentVolume, Quantity)> = None;
    for &pv in volumes {
        let claimed = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_some();
        if claimed && !is_bound_to_claim(pv, claim) {
            continue;
        }
        let Some(size) = capacity(pv) else { continue };
        if size < requested
            || volume_mode_mismatch(claim, pv)
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let reachable = node.is_none_or(|n| node_affinity_admits(pv, n));
        if is_bound_to_claim(pv, claim) {
            return Ok(reachable.then_some(pv));
        }
        if delay_binding && node.is_none() {
            // Bound once the node is known.
            continue;
        }
        let available = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
        if !available || volume_class(pv) != class || !reachable {
            continue;
        }
        if let Some(sel) = selector {
            let labels = pv.metadata.labels.clone().unwrap_or_default();
            if !selector_matches(sel, &labels)? {
                continue;
            }
        }
        if smallest.as_ref().is_none_or(|(_, s)| *s > size) {
            smallest = Some((pv, size));
        }
    }
    Ok(smallest.map(|(pv, _)| pv))
}

/// `findByClaim`: volumes are tried by access-mode set, the sets holding every mode the claim
/// asks for, fewest modes first (a ReadWriteOnce claim takes a ReadWriteOnce volume before a
/// ReadWriteOnce+ReadOnlyMany one of the same size); within a set, [`find_matching`].
pub fn find_best_match<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &[&'a PersistentVolume],
    delay_binding: bool,
    node: Option<Node<'_>>,
) -> Result<Option<&'a PersistentVolume>, String> {
    let mut sets: BTreeMap<(usize, Vec<String>), Vec<&'a PersistentVolume>> = BTreeMap::new();
    for &pv in volumes {
        if !access_modes_fit(claim, pv) {
            continue;
        }
        let mut modes = volume_modes(pv).to_vec();
        modes.sort();
        modes.dedup();
        sets.entry((modes.len(), modes)).or_default().push(pv);
    }
    for set in sets.values() {
        if let Some(pv) = find_matching(claim, set, delay_binding, node)? {
            return Ok(Some(pv));
        }
    }
    Ok(None)
}

/// `checkVolumeSatisfyClaim`: why a volume the claim names (`spec.volumeName`) cannot be bound
/// to it.
pub fn check_volume_satisfies_claim(
    pv: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), String> {
    if pv.metadata.deletion_timestamp.is_some() {
        return Err(format!(
            "the volume is marked for deletion {:?}",
            pv.metadata.name.as_deref().unwrap_or_default()
        ));
    }
    let requested = requested(claim)?;
    if capacity(pv).is_none_or(|c| c < requested) {
        return Err("requested PV is too small".into());
    }
    if volume_class(pv) != claim_class(claim) {
        return Err("storageClassName does not match".into());
    }
    if volume_mode_mismatch(claim, pv) {
        return Err("incompatible volumeMode".into());
    }
    if !access_modes_fit(claim, pv) {
        return Err("incompatible accessMode".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(v: serde_json::Value) -> PersistentVolumeClaim {
        let mut c = json!({"metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "slow",
                     "resources": {"requests": {"storage": "1Gi"}}}});
        merge(&mut c, v);
        serde_json::from_value(c).unwrap()
    }

    fn volume(name: &str, size: &str, v: serde_json::Value) -> PersistentVolume {
        let mut p = json!({"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "slow",
                     "capacity": {"storage": size}, "hostPath": {"path": "/x"}},
            "status": {"phase": "Available"}});
        merge(&mut p, v);
        serde_json::from_value(p).unwrap()
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn best(c: &PersistentVolumeClaim, vs: &[PersistentVolume], delay: bool) -> Option<String> {
        let refs: Vec<&PersistentVolume> = vs.iter().collect();
        find_best_match(c, &refs, delay, None)
            .unwrap()
            .and_then(|pv| pv.metadata.name.clone())
    }

    #[test]
    fn the_smallest_volume_that_fits_wins() {
        let vs = [
            volume("big", "10Gi", json!({})),
            volume("small", "500Mi", json!({})),
            volume("fits", "2Gi", json!({})),
            volume("exact", "1024Mi", json!({})),
        ];
        assert_eq!(
            best(&claim(json!({})), &vs, false).as_deref(),
            Some("exact")
        );
        assert_eq!(
            best(
                &claim(json!({"spec": {"resources": {"requests": {"storage": "20Gi"}}}})),
                &vs,
                false
            ),
            None
        );
    }

    #[test]
    fn class_phase_selector_and_modes_filter() {
        let vs = [
            volume(
                "other-class",
                "1Gi",
                json!({"spec": {"storageClassName": "fast"}}),
            ),
            volume("pending", "1Gi", json!({"status": {"phase": "Pending"}})),
            volume(
                "rox",
                "1Gi",
                json!({"spec": {"accessModes": ["ReadOnlyMany"]}}),
            ),
            volume(
                "labelled",
                "5Gi",
                json!({"metadata": {"labels": {"tier": "gold"}}}),
            ),
            volume(
                "taken",
                "1Gi",
                json!({"spec": {"claimRef": {"namespace": "ns", "name": "other"}}}),
            ),
        ];
        assert_eq!(
            best(&claim(json!({})), &vs, false).as_deref(),
            Some("labelled")
        );
        let gold = json!({"spec": {"selector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gold"]}]}}});
        assert_eq!(best(&claim(gold), &vs, false).as_deref(), Some("labelled"));
        let silver = json!({"spec": {"selector": {"matchLabels": {"tier": "silver"}}}});
        assert_eq!(best(&claim(silver), &vs, false), None);
        let bad = json!({"spec": {"selector": {"matchExpressions": [
            {"key": "tier", "operator": "Sideways"}]}}});
        let refs: Vec<&PersistentVolume> = vs.iter().collect();
        assert!(
            find_best_match(&claim(bad), &refs, false, None)
                .unwrap_err()
                .contains("Sideways")
        );
    }

    #[test]
    fn fewer_access_modes_first_then_size() {
        let vs = [
            volume(
                "rwo-rox",
                "1Gi",
                json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}),
            ),
            volume("rwo", "2Gi", json!({})),
        ];
        assert_eq!(best(&claim(json!({})), &vs, false).as_deref(), Some("rwo"));
    }

    #[test]
    fn a_pre_bound_volume_wins_even_when_binding_waits() {
        let vs = [
            volume("any", "1Gi", json!({})),
            volume(
                "mine",
                "8Gi",
                json!({"status": {"phase": "Pending"},
                "spec": {"claimRef": {"namespace": "ns", "name": "c", "uid": "u1"}}}),
            ),
        ];
        assert_eq!(best(&claim(json!({})), &vs, true).as_deref(), Some("mine"));
        assert_eq!(best(&claim(json!({})), &vs[..1], true), None);
        // Another claim of the same name (another uid) does not own it.
        let other = claim(json!({"metadata": {"uid": "u2"}}));
        assert_eq!(best(&other, &vs[1..], false), None);
    }

    #[test]
    fn with_a_selected_node_only_volumes_reachable_from_it_are_bound() {
        let on = |node: &str| {
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
        };
        let vs = [
            volume("elsewhere", "1Gi", on("n2")),
            volume("here", "4Gi", on("n1")),
            volume("anywhere", "8Gi", json!({})),
        ];
        let labels = BTreeMap::from([("kubernetes.io/hostname".to_owned(), "n1".to_owned())]);
        let n1 = Node {
            name: "n1",
            labels: &labels,
        };
        let refs: Vec<&PersistentVolume> = vs.iter().collect();
        let name = |node| {
            find_best_match(&claim(json!({})), &refs, true, node)
                .unwrap()
                .and_then(|pv| pv.metadata.name.clone())
        };
        assert_eq!(name(None), None, "waits for the node");
        assert_eq!(name(Some(n1)).as_deref(), Some("here"));
        let by_field = volume(
            "named",
            "1Gi",
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
            {"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["3"]}]}]}}}}),
        );
        assert!(!node_affinity_admits(&by_field, n1));
        let big = BTreeMap::from([("size".to_owned(), "4".to_owned())]);
        assert!(node_affinity_admits(
            &by_field,
            Node {
                name: "n1",
                labels: &big
            }
        ));
        let empty = volume(
            "empty",
            "1Gi",
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{}]}}}}),
        );
        assert!(!node_affinity_admits(&empty, n1));
    }

    #[test]
    fn a_named_volume_is_checked() {
        let c = claim(json!({}));
        assert!(check_volume_satisfies_claim(&volume("v", "1Gi", json!({})), &c).is_ok());
        let small = volume("v", "1Mi", json!({}));
        assert_eq!(
            check_volume_satisfies_claim(&small, &c).unwrap_err(),
            "requested PV is too small"
        );
        let fast = volume("v", "1Gi", json!({"spec": {"storageClassName": "fast"}}));
        assert_eq!(
            check_volume_satisfies_claim(&fast, &c).unwrap_err(),
            "storageClassName does not match"
        );
    }
}
