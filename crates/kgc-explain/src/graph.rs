//! The ownership graph: every listed object by uid, who names whom as owner, and the collector's
//! rules about each owner reference.
//!
//! Unlike the collector's graph (`kgc-gc`), which keeps the whole cluster compact for as long as
//! it runs, this one is built once for one answer and keeps what an operator reads: creation
//! and deletion times, finalizers, and (for the few objects shown) the `Ready` condition.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
pub use kgc_meta::GroupKind;
use kgc_meta::{OwnerReference, ResourceInfo};
use serde::Serialize;
use serde_json::Value;

/// The `Ready` condition kubectl-tree shows (its READY and REASON columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ready {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
}

impl Ready {
    /// The `Ready` condition of a whole object, if it has one.
    pub fn of(object: &Value) -> Option<Self> {
        let conditions = object.pointer("/status/conditions")?.as_array()?;
        let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
        let s = |k: &str| ready[k].as_str().unwrap_or_default().to_owned();
        Some(Self {
            status: s("status"),
            reason: s("reason"),
        })
    }
}

/// One object, as much of it as the graph needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub uid: String,
    pub api_version: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub owner_references: Vec<OwnerReference>,
    pub finalizers: Vec<String>,
    pub deletion_timestamp: Option<String>,
    pub creation_timestamp: Option<String>,
    /// Read from the whole object, which metadata-only lists do not carry: filled by
    /// [`crate::load::read_ready`] for the objects an answer shows, `None` otherwise.
    pub ready: Option<Ready>,
}

impl Node {
    /// From an object's metadata, as a metadata-only list returns it.
    pub fn from_metadata(api_version: &str, kind: &str, m: &ObjectMeta) -> Self {
        Self {
            uid: m.uid.clone().unwrap_or_default(),
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            owner_references: kgc_client::meta(m).owner_references,
            finalizers: m.finalizers.clone().unwrap_or_default(),
            deletion_timestamp: m.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
            creation_timestamp: m.creation_timestamp.as_ref().map(|t| t.0.to_string()),
            ready: None,
        }
    }

    /// From a whole object (or a `PartialObjectMetadata`); `None` if its metadata is malformed.
    pub fn from_object(object: &Value) -> Option<Self> {
        let meta: ObjectMeta = serde_json::from_value(object.get("metadata")?.clone()).ok()?;
        let s = |k: &str| object[k].as_str().unwrap_or_default();
        let mut node = Self::from_metadata(s("apiVersion"), s("kind"), &meta);
        node.ready = Ready::of(object);
        Some(node)
    }

    pub fn group_kind(&self) -> GroupKind {
        GroupKind::of(&self.api_version, &self.kind)
    }

    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// `Kind/name`, as kubectl-tree names a row.
    pub fn display_name(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// A kind (in one namespace, or everywhere with `None`) whose objects could not be listed:
/// whatever depends on them is unknown, and an answer says so rather than guess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unlisted {
    pub group_kind: GroupKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub reason: String,
}

/// What became of one owner reference, by the collector's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum OwnerState {
    /// The owner exists: the dependent is kept.
    Present,
    /// No object with that uid exists where the reference points: the collector deletes the
    /// dependent once every owner is absent (upstream `isDangling`).
    Absent,
    /// A namespaced owner whose uid belongs to an object of another namespace. Owner references
    /// cannot cross namespaces: the collector takes the owner as absent and records an
    /// `OwnerRefInvalidNamespace` warning (upstream `graph_builder.go`,
    /// `reportInvalidNamespaceOwnerRef`).
    OtherNamespace { namespace: String },
    /// A cluster-scoped object naming a namespaced owner: the collector cannot resolve it and
    /// never collects the object on its account (upstream `attemptToDeleteItem`: "cluster-scoped
    /// resource ... cannot refer to namespace-scoped owner").
    NamespacedOwnerOfClusterScoped,
    /// The owner's kind could not be listed: whether it exists is unknown.
    Unknown { reason: String },
    /// The server does not serve the owner's kind: the collector cannot look it up.
    UnservedKind,
}

impl OwnerState {
    /// Whether the reference breaks the rules about namespaces.
    pub fn is_invalid(&self) -> bool {
        matches!(
            self,
            OwnerState::OtherNamespace { .. } | OwnerState::NamespacedOwnerOfClusterScoped
        )
    }
}

/// One owner reference of an object, resolved.
#[derive(Debug, Clone)]
pub struct Owner<'g> {
    pub reference: &'g OwnerReference,
    /// The object the reference's uid names, wherever it is.
    pub node: Option<&'g Node>,
    pub state: OwnerState,
}

/// The listed objects of a cluster (or of the part of it an answer needs) and their ownership.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    /// Owner uid to the uids of the objects naming it, present or not.
    dependents: HashMap<String, BTreeSet<String>>,
    names: HashMap<(GroupKind, String, String), String>,
    /// Whether each served kind is namespaced, from discovery.
    scopes: HashMap<GroupKind, bool>,
    unlisted: Vec<Unlisted>,
}

impl Graph {
    /// An empty graph of a server serving `resources`.
    pub fn new(resources: &[Arc<ResourceInfo>]) -> Self {
        Self {
            scopes: resources
                .iter()
                .map(|r| (GroupKind::new(&r.group, &r.kind), r.namespaced()))
                .collect(),
            ..Self::default()
        }
    }

    pub fn insert(&mut self, node: Node) {
        for r in &node.owner_references {
            self.dependents
                .entry(r.uid.clone())
                .or_default()
                .insert(node.uid.clone());
        }
        self.names.insert(
            (node.group_kind(), node.namespace.clone(), node.name.clone()),
            node.uid.clone(),
        );
        self.nodes.insert(node.uid.clone(), node);
    }

    /// Records that a kind could not be listed.
    pub fn mark_unlisted(&mut self, unlisted: Unlisted) {
        self.unlisted.push(unlisted);
    }

    pub fn unlisted(&self) -> &[Unlisted] {
        &self.unlisted
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every object, in no particular order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn node_mut(&mut self, uid: &str) -> Option<&mut Node> {
        self.nodes.get_mut(uid)
    }

    /// The object of a kind by namespace (empty for cluster-scoped) and name.
    pub fn find(&self, gk: &GroupKind, namespace: &str, name: &str) -> Option<&Node> {
        let key = (gk.clone(), namespace.to_owned(), name.to_owned());
        self.names.get(&key).and_then(|uid| self.nodes.get(uid))
    }

    /// Whether `gk` is namespaced, `None` if the server does not serve it.
    pub fn is_namespaced(&self, gk: &GroupKind) -> Option<bool> {
        self.scopes.get(gk).copied()
    }

    /// The objects naming `uid` as an owner (validly or not), by kind, namespace and name.
    pub fn dependents(&self, uid: &str) -> Vec<&Node> {
        let mut deps: Vec<&Node> = self
            .dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d))
            .collect();
        deps.sort_by(|a, b| order(a).cmp(&order(b)));
        deps
    }

    /// Each owner reference of `node`, resolved by the collector's rules.
    pub fn owners<'g>(&'g self, node: &'g Node) -> Vec<Owner<'g>> {
        node.owner_references
            .iter()
            .map(|r| {
                let found = self.nodes.get(&r.uid);
                Owner {
                    reference: r,
                    node: found,
                    state: self.owner_state(node, r, found),
                }
            })
            .collect()
    }

    fn owner_state(
        &self,
        dependent: &Node,
        r: &OwnerReference,
        found: Option<&Node>,
    ) -> OwnerState {
        let gk = GroupKind::of(&r.api_version, &r.kind);
        let Some(owner_namespaced) = self
            .is_namespaced(&gk)
            .or_else(|| found.map(|n| !n.namespace.is_empty()))
        else {
            return OwnerState::UnservedKind;
        };
        if owner_namespaced && dependent.namespace.is_empty() {
            return OwnerState::NamespacedOwnerOfClusterScoped;
        }
        let namespace = if owner_namespaced {
            dependent.namespace.as_str()
        } else {
            ""
        };
        match found {
            Some(n) if n.namespace != namespace => OwnerState::OtherNamespace {
                namespace: n.namespace.clone(),
            },
            Some(_) => OwnerState::Present,
            None => match self.unlisted_reason(&gk, namespace) {
                Some(reason) => OwnerState::Unknown {
                    reason: reason.to_owned(),
                },
                None => OwnerState::Absent,
            },
        }
    }

    /// Why objects of `gk` in `namespace` may be missing from the graph, if they may.
    pub fn unlisted_reason(&self, gk: &GroupKind, namespace: &str) -> Option<&str> {
        self.unlisted
            .iter()
            .find(|u| {
                &u.group_kind == gk && u.namespace.as_deref().is_none_or(|ns| ns == namespace)
            })
            .map(|u| u.reason.as_str())
    }
}

/// The order rows and dependents are shown in: kubectl-tree's (kind, then name), the namespace
/// between them so that output is deterministic across namespaces.
fn order(n: &Node) -> (&str, &str, &str, &str) {
    (&n.kind, &n.namespace, &n.name, &n.uid)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kgc_meta::Catalog;
    use serde_json::json;

    /// An object of `api_version`/`kind` with the given owners (`(kind, name, uid)` of the same
    /// `apps/v1` or `v1` group as the kind implies).
    pub(crate) fn object(
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        owners: &[(&str, &str, &str)],
    ) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|(k, n, u)| {
                let av = if ["Deployment", "ReplicaSet", "StatefulSet"].contains(k) {
                    "apps/v1"
                } else {
                    "v1"
                };
                json!({"apiVersion": av, "kind": k, "name": n, "uid": u, "controller": true, "blockOwnerDeletion": true})
            })
            .collect();
        let mut meta = json!({"name": name, "uid": format!("uid-{name}"), "creationTimestamp": "2026-01-01T00:00:00Z"});
        if !namespace.is_empty() {
            meta["namespace"] = json!(namespace);
        }
        if !refs.is_empty() {
            meta["ownerReferences"] = json!(refs);
        }
        json!({"apiVersion": api_version, "kind": kind, "metadata": meta})
    }

    pub(crate) fn graph(objects: &[Value]) -> Graph {
        let resources: Vec<_> = Catalog::builtin().resources().cloned().collect();
        let mut g = Graph::new(&resources);
        for o in objects {
            g.insert(Node::from_object(o).expect("valid object"));
        }
        g
    }

    fn states(g: &Graph, uid: &str) -> Vec<OwnerState> {
        let n = g.node(uid).unwrap();
        g.owners(n).into_iter().map(|o| o.state).collect()
    }

    #[test]
    fn owners_present_absent_and_invalid() {
        let g = graph(&[
            object("apps/v1", "ReplicaSet", "a", "rs", &[]),
            object("apps/v1", "ReplicaSet", "b", "other", &[]),
            object(
                "v1",
                "Pod",
                "a",
                "p",
                &[
                    ("ReplicaSet", "rs", "uid-rs"),
                    ("ReplicaSet", "gone", "uid-gone"),
                    ("ReplicaSet", "other", "uid-other"),
                ],
            ),
            object("v1", "PersistentVolume", "", "pv", &[("Pod", "p", "uid-p")]),
            object("v1", "Namespace", "", "ns", &[]),
            object(
                "v1",
                "ConfigMap",
                "a",
                "cm",
                &[("Namespace", "ns", "uid-ns")],
            ),
        ]);
        assert_eq!(
            states(&g, "uid-p"),
            vec![
                OwnerState::Present,
                OwnerState::Absent,
                OwnerState::OtherNamespace {
                    namespace: "b".into()
                }
            ]
        );
        assert_eq!(
            states(&g, "uid-pv"),
            vec![OwnerState::NamespacedOwnerOfClusterScoped]
        );
        assert_eq!(states(&g, "uid-cm"), vec![OwnerState::Present]);
        let deps: Vec<_> = g
            .dependents("uid-rs")
            .iter()
            .map(|n| n.name.clone())
            .collect();
        assert_eq!(deps, ["p"]);
        assert!(
            g.find(&GroupKind::new("apps", "ReplicaSet"), "b", "other")
                .is_some()
        );
    }

    #[test]
    fn an_unlisted_kind_makes_its_owners_unknown() {
        let mut g = graph(&[object(
            "v1",
            "Pod",
            "a",
            "p",
            &[("ReplicaSet", "rs", "uid-rs")],
        )]);
        g.mark_unlisted(Unlisted {
            group_kind: GroupKind::new("apps", "ReplicaSet"),
            namespace: None,
            reason: "forbidden".into(),
        });
        assert_eq!(
            states(&g, "uid-p"),
            vec![OwnerState::Unknown {
                reason: "forbidden".into()
            }]
        );
    }

    #[test]
    fn ready_condition() {
        let o = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed"}]}});
        assert_eq!(
            Ready::of(&o),
            Some(Ready {
                status: "False".into(),
                reason: "PodFailed".into()
            })
        );
    }
}
