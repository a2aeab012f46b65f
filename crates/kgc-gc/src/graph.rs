//! The dependency graph (upstream `graph.go`): one node per object uid, real (observed through a
//! watch) or virtual (only named by some dependent's owner reference).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kgc_meta::{ObjectRef, OwnerReference};

/// Object uids are the graph's keys; shared, since they recur in owner and dependent sets.
pub type Uid = Arc<str>;

/// One object in the graph.
#[derive(Debug, Clone)]
pub struct Node {
    /// For a real node: the watched resource's apiVersion/kind and the object's
    /// namespace/name/uid. For a virtual node: a dependent's owner-reference coordinates plus
    /// the dependent's namespace.
    pub identity: ObjectRef,
    /// The object's owner references as last observed.
    pub owners: Vec<OwnerReference>,
    /// The nodes whose owner references name this uid.
    pub dependents: BTreeSet<Uid>,
    /// Observed with a deletionTimestamp; never goes back.
    pub being_deleted: bool,
    /// Observed with a deletionTimestamp and the `foregroundDeletion` finalizer.
    pub deleting_dependents: bool,
    /// Known only from an owner reference; no watch has shown it yet.
    pub is_virtual: bool,
    /// What the last observation carried, to detect transitions and to delete without a GET.
    pub resource_version: String,
    pub has_orphan_finalizer: bool,
    pub has_foreground_finalizer: bool,
}

impl Node {
    pub fn virtual_node(identity: ObjectRef) -> Self {
        Self {
            identity,
            owners: Vec::new(),
            dependents: BTreeSet::new(),
            being_deleted: false,
            deleting_dependents: false,
            is_virtual: true,
            resource_version: String::new(),
            has_orphan_finalizer: false,
            has_foreground_finalizer: false,
        }
    }

    pub fn uid(&self) -> &str {
        &self.identity.uid
    }
}

/// The graph: uid → node.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<Uid, Node>,
}

impl Graph {
    pub fn get(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn get_mut(&mut self, uid: &str) -> Option<&mut Node> {
        self.nodes.get_mut(uid)
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The shared key for `uid`, reusing the graph's allocation when the node exists.
    pub fn key(&self, uid: &str) -> Uid {
        self.nodes
            .get_key_value(uid)
            .map(|(k, _)| Arc::clone(k))
            .unwrap_or_else(|| Arc::from(uid))
    }

    pub fn insert(&mut self, node: Node) {
        let key = self.key(node.uid());
        self.nodes.insert(key, node);
    }

    pub fn remove(&mut self, uid: &str) -> Option<Node> {
        self.nodes.remove(uid)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// Adds `dependent` to `owner`'s dependents.
    pub fn add_dependent(&mut self, owner: &str, dependent: Uid) {
        if let Some(n) = self.nodes.get_mut(owner) {
            n.dependents.insert(dependent);
        }
    }

    pub fn remove_dependent(&mut self, owner: &str, dependent: &str) {
        if let Some(n) = self.nodes.get_mut(owner) {
            n.dependents.remove(dependent);
        }
    }

    /// Whether a dependent still blocks `uid`'s foreground deletion (its reference to `uid` has
    /// `blockOwnerDeletion: true`; a self-reference never blocks, since an object cannot wait
    /// for its own deletion, where upstream would wait forever), and up to `limit` blocking
    /// dependents that are not on their way out yet (to delete next). Stops scanning once it
    /// has both answers, so a foreground owner re-checked after each of its 100,000 dependents
    /// goes costs a few lookups per check, not a scan of every remaining dependent (upstream's
    /// `blockingDependents` makes the cascade quadratic).
    pub fn blocking_progress(&self, uid: &str, limit: usize) -> (bool, Vec<Uid>) {
        let Some(n) = self.nodes.get(uid) else {
            return (false, Vec::new());
        };
        let mut blocked = false;
        let mut next = Vec::new();
        for d in n.dependents.iter().filter(|d| &***d != uid) {
            let Some(dn) = self.nodes.get(&**d) else {
                continue;
            };
            if !dn.owners.iter().any(|r| r.uid == *uid && r.blocks()) {
                continue;
            }
            blocked = true;
            if !dn.being_deleted && !dn.deleting_dependents {
                next.push(Uid::clone(d));
                if next.len() == limit {
                    break;
                }
            }
        }
        (blocked, next)
    }

    /// Approximate bytes held per node, for the benchmark's "graph bytes per tracked object".
    pub fn approximate_bytes(&self) -> usize {
        let s = |x: &str| x.len();
        self.nodes
            .values()
            .map(|n| {
                std::mem::size_of::<Node>()
                    + std::mem::size_of::<Uid>()
                    + 16
                    + s(&n.identity.api_version)
                    + s(&n.identity.kind)
                    + s(&n.identity.namespace)
                    + s(&n.identity.name)
                    + s(&n.identity.uid)
                    + s(&n.resource_version)
                    + n.owners
                        .iter()
                        .map(|o| {
                            std::mem::size_of::<OwnerReference>()
                                + s(&o.api_version)
                                + s(&o.kind)
                                + s(&o.name)
                                + s(&o.uid)
                        })
                        .sum::<usize>()
                    + n.dependents.len() * (std::mem::size_of::<Uid>() + 16)
            })
            .sum()
    }
}

/// Objects verified absent (upstream `ReferenceCache`): keyed by full identity, because a uid
/// that is absent under one kind or namespace may be valid under another (kubernetes#65200).
/// Uids are never reused, so an entry never goes stale; the cache is bounded (oldest out).
#[derive(Debug)]
pub struct AbsentOwners {
    /// Each identity is held once, shared by the set and the eviction order.
    set: std::collections::HashSet<Arc<ObjectRef>>,
    order: std::collections::VecDeque<Arc<ObjectRef>>,
    capacity: usize,
}

impl AbsentOwners {
    pub fn new(capacity: usize) -> Self {
        Self {
            set: Default::default(),
            order: Default::default(),
            capacity: capacity.max(1),
        }
    }

    pub fn add(&mut self, r: ObjectRef) {
        if self.set.contains(&r) {
            return;
        }
        if self.order.len() == self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        let r = Arc::new(r);
        self.set.insert(Arc::clone(&r));
        self.order.push_back(r);
    }

    pub fn has(&self, r: &ObjectRef) -> bool {
        self.set.contains(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(uid: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: "ns".into(),
            name: uid.into(),
            uid: uid.into(),
        }
    }

    #[test]
    fn absent_cache_is_bounded_and_keyed_by_identity() {
        let mut c = AbsentOwners::new(2);
        c.add(r("a"));
        c.add(r("b"));
        c.add(r("c"));
        assert!(!c.has(&r("a")) && c.has(&r("b")) && c.has(&r("c")));
        let mut other_ns = r("b");
        other_ns.namespace = "elsewhere".into();
        assert!(!c.has(&other_ns));
    }

    #[test]
    fn blocking_dependents_need_block_owner_deletion() {
        let mut g = Graph::default();
        g.insert(Node::virtual_node(r("owner")));
        for (uid, block) in [("d1", Some(true)), ("d2", Some(false)), ("d3", None)] {
            let mut n = Node::virtual_node(r(uid));
            n.owners.push(OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "owner".into(),
                uid: "owner".into(),
                controller: None,
                block_owner_deletion: block,
            });
            g.insert(n);
            let key = g.key(uid);
            g.add_dependent("owner", key);
        }
        assert_eq!(
            g.blocking_progress("owner", 10),
            (true, vec![Arc::from("d1")])
        );
        g.get_mut("d1").unwrap().being_deleted = true;
        assert_eq!(g.blocking_progress("owner", 10), (true, vec![]));
        g.remove("d1");
        assert_eq!(g.blocking_progress("owner", 10), (false, vec![]));
    }
}
