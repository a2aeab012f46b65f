//! How a Service's EndpointSlices become what its pods say (kubernetes
//! `staging/src/k8s.io/endpointslice/reconciler.go` `reconcileByAddressType`, `utils.go`): pure,
//! from the desired endpoints grouped by port set and the existing slices to the slices to
//! create, update and delete.
//!
//! Per port set, as upstream: an existing slice keeps the endpoints still desired (in their new
//! state) and drops the others; a slice left empty is deleted; the endpoints left over fill the
//! slices being updated, then the unchanged ones with room, then new slices of at most `max`
//! endpoints. Slices of port sets no longer desired are deleted. A Service with no endpoints
//! keeps one empty placeholder slice, as upstream does.

use std::collections::BTreeMap;

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// What every slice of the Service carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub namespace: String,
    /// The Service's name: the slices' `generateName` is `<service>-`.
    pub service: String,
    pub labels: BTreeMap<String, String>,
    pub owner: OwnerReference,
    pub address_type: String,
}

/// Desired endpoints: by port set (its JSON, the grouping key), the ports and the endpoints.
pub type Desired = BTreeMap<String, (Vec<EndpointPort>, Vec<Endpoint>)>;

/// What to write.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    pub create: Vec<EndpointSlice>,
    pub update: Vec<EndpointSlice>,
    /// Names of slices to delete.
    pub delete: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// The key of a port set.
pub fn port_key(ports: &[EndpointPort]) -> String {
    serde_json::to_string(ports).unwrap_or_default()
}

/// An endpoint's identity across syncs: its pod (`targetRef.uid`), else its first address.
fn identity(ep: &Endpoint) -> String {
    ep.target_ref
        .as_ref()
        .and_then(|r| r.uid.clone())
        .unwrap_or_else(|| ep.addresses.first().cloned().unwrap_or_default())
}

/// A slice's endpoints (`null` when it has none).
pub fn endpoints_of(s: &EndpointSlice) -> &[Endpoint] {
    s.endpoints.as_deref().unwrap_or_default()
}

/// The plan that turns `existing` (the Service's slices) into `desired`, at most `max`
/// endpoints a slice.
pub fn reconcile(t: &Template, existing: &[EndpointSlice], desired: &Desired, max: usize) -> Plan {
    let max = max.max(1);
    let mut plan = Plan::default();
    // Slices of another address type, or of a port set no longer desired, go.
    let (mine, gone): (Vec<&EndpointSlice>, Vec<&EndpointSlice>) = existing.iter().partition(|s| {
        s.address_type == t.address_type
            && desired.contains_key(&port_key(s.ports.as_deref().unwrap_or_default()))
    });
    let mut placeholder: Option<&EndpointSlice> = None;
    for s in gone {
        let empty = endpoints_of(s).is_empty() && s.ports.as_deref().unwrap_or_default().is_empty();
        if desired.is_empty() && placeholder.is_none() && empty && s.address_type == t.address_type
        {
            placeholder = Some(s);
        } else {
            plan.delete.extend(s.metadata.name.clone());
        }
    }
    for (key, (ports, endpoints)) in desired {
        let mut wanted: BTreeMap<String, &Endpoint> =
            endpoints.iter().map(|e| (identity(e), e)).collect();
        let mut updated: Vec<EndpointSlice> = Vec::new();
        let mut unchanged: Vec<EndpointSlice> = Vec::new();
        for s in mine
            .iter()
            .filter(|s| port_key(s.ports.as_deref().unwrap_or_default()) == *key)
        {
            let kept: Vec<Endpoint> = endpoints_of(s)
                .iter()
                .filter_map(|e| wanted.remove(&identity(e)).cloned())
                .collect();
            if kept.is_empty() {
                plan.delete.extend(s.metadata.name.clone());
                continue;
            }
            let labelled = s.metadata.labels.as_ref() == Some(&t.labels);
            let mut s = (*s).clone();
            if kept == endpoints_of(&s) && labelled {
                unchanged.push(s);
            } else {
                s.endpoints = Some(kept);
                s.metadata.labels = Some(t.labels.clone());
                updated.push(s);
            }
        }
        let mut left: Vec<Endpoint> = wanted.into_values().cloned().collect();
        for s in &mut updated {
            take_into(s.endpoints.get_or_insert_default(), &mut left, max);
        }
        // An unchanged slice with room becomes an update.
        for mut s in unchanged {
            if !left.is_empty() && endpoints_of(&s).len() < max {
                take_into(s.endpoints.get_or_insert_default(), &mut left, max);
                updated.push(s);
            }
        }
        while !left.is_empty() {
            let rest = left.split_off(left.len().min(max));
            plan.create.push(new_slice(t, ports.clone(), left));
            left = rest;
        }
        plan.update.extend(updated);
    }
    if desired.is_empty() && placeholder.is_none() && plan.create.is_empty() {
        plan.create.push(new_slice(t, vec![], vec![]));
    }
    plan
}

/// Moves endpoints from `from` into `to` while it has room.
fn take_into(to: &mut Vec<Endpoint>, from: &mut Vec<Endpoint>, max: usize) {
    let room = max.saturating_sub(to.len()).min(from.len());
    to.extend(from.drain(..room));
}

/// `newEndpointSlice`.
fn new_slice(t: &Template, ports: Vec<EndpointPort>, endpoints: Vec<Endpoint>) -> EndpointSlice {
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", t.service)),
            namespace: Some(t.namespace.clone()),
            labels: Some(t.labels.clone()),
            owner_references: Some(vec![t.owner.clone()]),
            ..ObjectMeta::default()
        },
        address_type: t.address_type.clone(),
        endpoints: (!endpoints.is_empty()).then_some(endpoints),
        ports: Some(ports),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::discovery::v1::EndpointConditions;

    fn template() -> Template {
        Template {
            namespace: "ns".into(),
            service: "web".into(),
            labels: [("kubernetes.io/service-name".to_owned(), "web".to_owned())].into(),
            owner: OwnerReference::default(),
            address_type: "IPv4".into(),
        }
    }

    fn ep(i: usize, ready: bool) -> Endpoint {
        Endpoint {
            addresses: vec![format!("10.0.{}.{}", i / 250, i % 250)],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                ..EndpointConditions::default()
            }),
            target_ref: Some(ObjectReference {
                uid: Some(format!("u{i}")),
                ..ObjectReference::default()
            }),
            ..Endpoint::default()
        }
    }

    fn ports() -> Vec<EndpointPort> {
        vec![EndpointPort {
            name: Some("http".into()),
            port: Some(8080),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]
    }

    fn desired(n: usize) -> Desired {
        let ps = ports();
        [(port_key(&ps), (ps, (0..n).map(|i| ep(i, true)).collect()))].into()
    }

    /// The slices after the plan is written (created ones named `new-N`).
    fn apply(existing: &[EndpointSlice], plan: Plan) -> Vec<EndpointSlice> {
        let mut out: Vec<EndpointSlice> = existing
            .iter()
            .filter(|s| !plan.delete.contains(s.metadata.name.as_ref().unwrap()))
            .filter(|s| {
                !plan
                    .update
                    .iter()
                    .any(|u| u.metadata.name == s.metadata.name)
            })
            .cloned()
            .collect();
        out.extend(plan.update);
        for (i, mut s) in plan.create.into_iter().enumerate() {
            s.metadata.name = Some(format!("new-{i}"));
            out.push(s);
        }
        out
    }

    #[test]
    fn two_hundred_fifty_endpoints_make_three_slices() {
        let plan = reconcile(&template(), &[], &desired(250), 100);
        let sizes: Vec<usize> = plan.create.iter().map(|s| endpoints_of(s).len()).collect();
        assert_eq!(sizes, [100, 100, 50]);
        let s = &plan.create[0];
        assert_eq!(s.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(s.address_type, "IPv4");
        assert_eq!(s.ports, Some(ports()));
    }

    #[test]
    fn a_second_pass_changes_nothing() {
        let plan = reconcile(&template(), &[], &desired(250), 100);
        let slices = apply(&[], plan);
        assert!(reconcile(&template(), &slices, &desired(250), 100).is_empty());
    }

    #[test]
    fn a_readiness_change_updates_only_its_slice() {
        let slices = apply(&[], reconcile(&template(), &[], &desired(250), 100));
        let mut d = desired(250);
        d.values_mut().next().unwrap().1[120] = ep(120, false);
        let plan = reconcile(&template(), &slices, &d, 100);
        assert_eq!(
            (plan.create.len(), plan.update.len(), plan.delete.len()),
            (0, 1, 0)
        );
        let after = apply(&slices, plan);
        assert!(reconcile(&template(), &after, &d, 100).is_empty());
    }

    #[test]
    fn new_endpoints_fill_slices_with_room_before_new_ones() {
        let slices = apply(&[], reconcile(&template(), &[], &desired(150), 100));
        let plan = reconcile(&template(), &slices, &desired(190), 100);
        assert!(plan.create.is_empty());
        assert_eq!(plan.update.len(), 1);
        assert_eq!(endpoints_of(&plan.update[0]).len(), 90);
    }

    #[test]
    fn emptied_slices_go_and_a_placeholder_stays() {
        let slices = apply(&[], reconcile(&template(), &[], &desired(150), 100));
        let plan = reconcile(&template(), &slices, &Desired::new(), 100);
        assert_eq!(plan.delete.len(), 2);
        assert_eq!(plan.create.len(), 1);
        assert!(endpoints_of(&plan.create[0]).is_empty());
        let after = apply(&slices, plan);
        assert!(reconcile(&template(), &after, &Desired::new(), 100).is_empty());
        // Endpoints again: the placeholder goes.
        let plan = reconcile(&template(), &after, &desired(1), 100);
        assert_eq!((plan.create.len(), plan.delete.len()), (1, 1));
    }

    #[test]
    fn relabelled_services_update_their_slices() {
        let slices = apply(&[], reconcile(&template(), &[], &desired(10), 100));
        let mut t = template();
        t.labels.insert("team".into(), "a".into());
        let plan = reconcile(&t, &slices, &desired(10), 100);
        assert_eq!(plan.update.len(), 1);
        assert_eq!(plan.update[0].metadata.labels.as_ref(), Some(&t.labels));
    }
}
