//! The graph builder (upstream `graph_builder.go`, `processGraphChanges`;
//! k8s-gc-controller.md §1.3): the only writer of the graph. It turns watch events into graph
//! changes and into work for the collectors' queues.
//!
//! It is a synchronous state machine: [`GraphBuilder::process`] takes one event and returns the
//! [`Effects`] (queue items, events to record). That keeps it deterministic, so upstream's
//! step-by-step scenarios replay exactly in unit tests.

use std::cmp::Ordering;
use std::collections::HashSet;

use kgc_meta::deletion::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use kgc_meta::{ObjectMeta, ObjectRef, OwnerReference};

use crate::graph::{AbsentOwners, Graph, Node, Uid};

/// One change for the graph.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphEvent {
    /// An object observed (added or updated) through the watch of `api_version`/`kind`.
    Apply {
        api_version: String,
        kind: String,
        meta: ObjectMeta,
    },
    /// An object observed deleted.
    Delete {
        api_version: String,
        kind: String,
        meta: ObjectMeta,
    },
    /// The complete set of one resource after a (re)list: apply each, delete the rest.
    Resync {
        api_version: String,
        kind: String,
        items: Vec<ObjectMeta>,
    },
    /// A worker verified that this identity does not exist (404 or another uid).
    VirtualDelete(ObjectRef),
}

/// An `OwnerRefInvalidNamespace` warning to record on `child`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOwnerRef {
    pub child: ObjectRef,
    /// The reference as it reads in the child's namespace.
    pub owner: ObjectRef,
}

impl InvalidOwnerRef {
    /// Upstream's message (`reportInvalidNamespaceOwnerRef`).
    pub fn message(&self) -> String {
        format!(
            "ownerRef {} does not exist in namespace {:?}",
            self.owner, self.child.namespace
        )
    }
}

/// What processing one event asks of the rest of the collector.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Effects {
    pub attempt_to_delete: Vec<Uid>,
    /// Added with rate limiting (alternate-identity probes).
    pub attempt_to_delete_later: Vec<Uid>,
    pub attempt_to_orphan: Vec<Uid>,
    pub invalid_owner_refs: Vec<InvalidOwnerRef>,
}

/// The graph and the absent-owner cache it shares with the workers.
#[derive(Debug)]
pub struct GraphBuilder {
    pub graph: Graph,
    pub absent: AbsentOwners,
}

/// Upstream's absent-owner cache holds 500 entries. Every owner deleted while it still had
/// dependents enters it, so a cascade over more owners than it holds pays a GET (404) per evicted
/// owner; 65,536 covers a 10,000-ReplicaSet cascade at about 200 bytes an entry.
pub const ABSENT_OWNER_CACHE: usize = 65_536;

impl Default for GraphBuilder {
    fn default() -> Self {
        Self {
            graph: Graph::default(),
            absent: AbsentOwners::new(ABSENT_OWNER_CACHE),
        }
    }
}

/// The transition-relevant state of the previous observation (upstream compares old and new
/// objects).
#[derive(Clone, Copy)]
struct Seen {
    deleting: bool,
    orphan: bool,
    foreground: bool,
}

impl GraphBuilder {
    /// Processes one event.
    pub fn process(&mut self, event: GraphEvent) -> Effects {
        let mut fx = Effects::default();
        match event {
            GraphEvent::Apply {
                api_version,
                kind,
                meta,
            } => self.apply(&api_version, &kind, meta, &mut fx),
            GraphEvent::Delete {
                api_version,
                kind,
                meta,
            } => {
                let identity = observed_identity(&api_version, &kind, &meta);
                self.delete(identity, false, &mut fx);
            }
            GraphEvent::Resync {
                api_version,
                kind,
                items,
            } => {
                let present: HashSet<String> = items.iter().map(|m| m.uid.clone()).collect();
                for meta in items {
                    self.apply(&api_version, &kind, meta, &mut fx);
                }
                let group = group_of(&api_version);
                let stale: Vec<ObjectRef> = self
                    .graph
                    .nodes()
                    .filter(|n| {
                        !n.is_virtual
                            && n.identity.kind == kind
                            && group_of(&n.identity.api_version) == group
                            && !present.contains(n.uid())
                    })
                    .map(|n| n.identity.clone())
                    .collect();
                for identity in stale {
                    self.delete(identity, false, &mut fx);
                }
            }
            GraphEvent::VirtualDelete(identity) => self.delete(identity, true, &mut fx),
        }
        fx
    }

    fn apply(&mut self, api_version: &str, kind: &str, meta: ObjectMeta, fx: &mut Effects) {
        if meta.uid.is_empty() {
            return;
        }
        let identity = observed_identity(api_version, kind, &meta);
        let uid = self.graph.key(&meta.uid);
        let old: Option<Seen>;
        if let Some(existing) = self.graph.get(&uid) {
            let was_virtual = existing.is_virtual;
            // Step 0: the first real observation of a virtual node.
            if was_virtual && existing.identity != identity {
                let dependents: Vec<Uid> = existing.dependents.iter().cloned().collect();
                let (_, potentially_invalid) = self.partition_dependents(&dependents, &identity);
                for d in potentially_invalid {
                    if let Some(dep) = self.graph.get(&d)
                        && !identity.namespace.is_empty()
                        && dep.identity.namespace != identity.namespace
                        && let Some(r) = dep.owners.iter().find(|r| r.uid == identity.uid)
                    {
                        fx.invalid_owner_refs.push(InvalidOwnerRef {
                            child: dep.identity.clone(),
                            owner: ObjectRef::from_owner(r, &dep.identity.namespace),
                        });
                    }
                    fx.attempt_to_delete.push(d);
                }
            }
            let node = self.graph.get_mut(&uid).expect("checked above");
            if was_virtual {
                node.identity = identity.clone();
                node.is_virtual = false;
                old = None;
            } else {
                // A different watched version or kind for the same uid.
                node.identity.api_version = identity.api_version.clone();
                node.identity.kind = identity.kind.clone();
                old = Some(Seen {
                    deleting: node.being_deleted,
                    orphan: node.has_orphan_finalizer,
                    foreground: node.has_foreground_finalizer,
                });
            }
            let (added, removed, changed) = references_diffs(&node.owners, &meta.owner_references);
            if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
                // Owners that a removed or unblocked reference no longer holds back re-check.
                for r in &removed {
                    if r.blocks() && self.graph.contains(&r.uid) {
                        fx.attempt_to_delete.push(self.graph.key(&r.uid));
                    }
                }
                for (before, after) in &changed {
                    if before.blocks() && !after.blocks() && self.graph.contains(&before.uid) {
                        fx.attempt_to_delete.push(self.graph.key(&before.uid));
                    }
                }
                let node = self.graph.get_mut(&uid).expect("checked above");
                node.owners = meta.owner_references.clone();
                self.add_dependent_to_owners(&uid, &added, fx);
                for r in &removed {
                    self.graph.remove_dependent(&r.uid, &uid);
                }
            }
            let node = self.graph.get_mut(&uid).expect("checked above");
            if meta.is_deleting() {
                node.being_deleted = true;
            }
            record_observation(node, &meta);
        } else {
            let deleting = meta.is_deleting();
            let mut node = Node::virtual_node(identity);
            node.is_virtual = false;
            node.owners = meta.owner_references.clone();
            node.being_deleted = deleting;
            node.deleting_dependents = deleting && meta.has_finalizer(FINALIZER_FOREGROUND);
            record_observation(&mut node, &meta);
            self.graph.insert(node);
            let refs = meta.owner_references.clone();
            self.add_dependent_to_owners(&uid, &refs, fx);
            old = None;
        }
        self.process_transitions(old, &meta, &uid, fx);
    }

    /// Upstream `processTransitions`: start orphaning or foreground deletion when the object
    /// newly carries the finalizer while being deleted.
    fn process_transitions(
        &mut self,
        old: Option<Seen>,
        meta: &ObjectMeta,
        uid: &Uid,
        fx: &mut Effects,
    ) {
        let starts = |finalizer: &str, had: fn(&Seen) -> bool| {
            meta.is_deleting()
                && meta.has_finalizer(finalizer)
                && old.as_ref().is_none_or(|o| !o.deleting || !had(o))
        };
        if starts(FINALIZER_ORPHAN, |o| o.orphan) {
            fx.attempt_to_orphan.push(Uid::clone(uid));
            return;
        }
        if starts(FINALIZER_FOREGROUND, |o| o.foreground)
            && let Some(node) = self.graph.get_mut(uid)
        {
            node.deleting_dependents = true;
            fx.attempt_to_delete.extend(node.dependents.iter().cloned());
            fx.attempt_to_delete.push(Uid::clone(uid));
        }
    }

    /// Upstream `addDependentToOwners`: link `dependent` to each owner, creating virtual nodes
    /// for unknown owners, and flag references that cannot be right.
    fn add_dependent_to_owners(
        &mut self,
        dependent: &Uid,
        refs: &[OwnerReference],
        fx: &mut Effects,
    ) {
        let Some(child) = self.graph.get(dependent).map(|n| n.identity.clone()) else {
            return;
        };
        let mut flagged = false;
        for r in refs {
            if r.uid.is_empty() {
                continue;
            }
            if !self.graph.contains(&r.uid) {
                let mut owner = Node::virtual_node(ObjectRef::from_owner(r, &child.namespace));
                owner.dependents.insert(Uid::clone(dependent));
                self.graph.insert(owner);
                fx.attempt_to_delete.push(self.graph.key(&r.uid));
                continue;
            }
            self.graph.add_dependent(&r.uid, Uid::clone(dependent));
            if flagged {
                continue;
            }
            let owner = self.graph.get(&r.uid).expect("checked above");
            let owner_ns = &owner.identity.namespace;
            if !owner_ns.is_empty() && *owner_ns != child.namespace {
                // A namespaced owner in another namespace: the reference can only be absent.
                if !owner.is_virtual {
                    fx.invalid_owner_refs.push(InvalidOwnerRef {
                        child: child.clone(),
                        owner: ObjectRef::from_owner(r, &child.namespace),
                    });
                }
                flagged = true;
            } else if !owner.identity.matches(r) {
                // The uid names an object of another kind, version or name.
                flagged = true;
            } else if owner_ns.is_empty() && owner.is_virtual && *owner_ns != child.namespace {
                // A cluster-scoped child's virtual owner named again by a namespaced child
                // (kubernetes#98040): verify.
                flagged = true;
            }
        }
        if flagged {
            fx.attempt_to_delete.push(Uid::clone(dependent));
        }
    }

    /// Upstream `partitionDependents`: which dependents' references agree with `identity`
    /// (matching) and which do not (potentially invalid). A dependent may be in both.
    fn partition_dependents(
        &self,
        dependents: &[Uid],
        identity: &ObjectRef,
    ) -> (Vec<Uid>, Vec<Uid>) {
        let mut matching = Vec::new();
        let mut mismatching = Vec::new();
        let owner_namespaced = !identity.namespace.is_empty();
        for d in dependents {
            let Some(dep) = self.graph.get(d) else {
                continue;
            };
            let (mut found_match, mut found_mismatch) = (false, false);
            if owner_namespaced && identity.namespace != dep.identity.namespace {
                found_mismatch = true;
            } else {
                for r in dep.owners.iter().filter(|r| r.uid == identity.uid) {
                    if identity.matches(r) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(Uid::clone(d));
            }
            if found_mismatch {
                mismatching.push(Uid::clone(d));
            }
        }
        (matching, mismatching)
    }

    /// Case C: a delete event, real or virtual.
    fn delete(&mut self, identity: ObjectRef, is_virtual_event: bool, fx: &mut Effects) {
        let Some(node) = self.graph.get(&identity.uid) else {
            return;
        };
        let uid = self.graph.key(&identity.uid);
        if is_virtual_event {
            let dependents: Vec<Uid> = node.dependents.iter().cloned().collect();
            if node.is_virtual {
                let (matching, mismatching) = self.partition_dependents(&dependents, &identity);
                if !mismatching.is_empty() {
                    // Some dependents name this uid differently: keep the node.
                    if !matching.is_empty() {
                        self.absent.add(identity.clone());
                        fx.attempt_to_delete.extend(matching);
                    }
                    if node.identity == identity
                        && let Some(alt) = self.alternate_owner_identity(&mismatching, &identity)
                    {
                        if let Some(n) = self.graph.get_mut(&uid) {
                            n.identity = alt;
                        }
                        fx.attempt_to_delete_later.push(uid);
                    }
                    return;
                }
            } else if node.identity != identity {
                // The observed object stands; only dependents naming the bad identity lose.
                let (matching, _) = self.partition_dependents(&dependents, &identity);
                if !matching.is_empty() {
                    self.absent.add(identity);
                    fx.attempt_to_delete.extend(matching);
                }
                return;
            }
        }
        let node = self.graph.remove(&uid).expect("checked above");
        for r in &node.owners {
            self.graph.remove_dependent(&r.uid, &uid);
        }
        if !node.dependents.is_empty() {
            self.absent.add(identity);
        }
        fx.attempt_to_delete.extend(node.dependents.iter().cloned());
        for r in &node.owners {
            if self
                .graph
                .get(&r.uid)
                .is_some_and(|o| o.deleting_dependents)
            {
                fx.attempt_to_delete.push(self.graph.key(&r.uid));
            }
        }
    }

    /// Upstream `getAlternateOwnerIdentity`: the next identity (in Kind, APIVersion, Namespace,
    /// Name, UID order) after the verified-absent one among the dependents' references, wrapping
    /// to the first; deterministic round-robin probing of conflicting identities.
    fn alternate_owner_identity(&self, deps: &[Uid], absent: &ObjectRef) -> Option<ObjectRef> {
        let cluster_scoped = absent.namespace.is_empty();
        let mut seen: HashSet<ObjectRef> = HashSet::from([absent.clone()]);
        let mut first: Option<ObjectRef> = None;
        let mut following: Option<ObjectRef> = None;
        for d in deps {
            let Some(dep) = self.graph.get(d) else {
                continue;
            };
            for r in dep.owners.iter().filter(|r| r.uid == absent.uid) {
                let mut candidate = ObjectRef::from_owner(r, &dep.identity.namespace);
                if cluster_scoped
                    && candidate.api_version == absent.api_version
                    && candidate.kind == absent.kind
                {
                    candidate.namespace.clear();
                }
                if !seen.insert(candidate.clone()) {
                    continue;
                }
                if first
                    .as_ref()
                    .is_none_or(|f| reference_order(&candidate, f) == Ordering::Less)
                {
                    first = Some(candidate.clone());
                }
                if reference_order(absent, &candidate) == Ordering::Less
                    && following
                        .as_ref()
                        .is_none_or(|f| reference_order(&candidate, f) == Ordering::Less)
                {
                    following = Some(candidate);
                }
            }
        }
        following.or(first)
    }
}

/// Kind, APIVersion, Namespace, Name, UID (upstream `referenceLessThan`).
fn reference_order(a: &ObjectRef, b: &ObjectRef) -> Ordering {
    (&a.kind, &a.api_version, &a.namespace, &a.name, &a.uid).cmp(&(
        &b.kind,
        &b.api_version,
        &b.namespace,
        &b.name,
        &b.uid,
    ))
}

fn record_observation(node: &mut Node, meta: &ObjectMeta) {
    node.resource_version.clone_from(&meta.resource_version);
    node.has_orphan_finalizer = meta.has_finalizer(FINALIZER_ORPHAN);
    node.has_foreground_finalizer = meta.has_finalizer(FINALIZER_FOREGROUND);
}

fn observed_identity(api_version: &str, kind: &str, meta: &ObjectMeta) -> ObjectRef {
    ObjectRef {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// Added, removed and changed (before, after) references, keyed by uid.
#[allow(clippy::type_complexity)]
fn references_diffs(
    old: &[OwnerReference],
    new: &[OwnerReference],
) -> (
    Vec<OwnerReference>,
    Vec<OwnerReference>,
    Vec<(OwnerReference, OwnerReference)>,
) {
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for n in new {
        match old.iter().find(|o| o.uid == n.uid) {
            None => added.push(n.clone()),
            Some(o) if o != n => changed.push((o.clone(), n.clone())),
            Some(_) => {}
        }
    }
    let removed = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.uid == o.uid))
        .cloned()
        .collect();
    (added, removed, changed)
}
