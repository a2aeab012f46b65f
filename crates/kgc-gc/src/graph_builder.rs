//! The graph builder (kubernetes/kubernetes `pkg/controller/garbagecollector/graph_builder.go`,
//! `processGraphChanges`): the only writer of the graph. It turns watch events into graph
//! changes and into work for the collectors' queues.
//!
//! It is a synchronous state machine: [`GraphBuilder::process`] takes one event and returns the
//! [`Effects`] (queue items, events to record). That keeps it deterministic, so upstream's
//! step-by-step scenarios replay exactly in unit tests.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use kgc_meta::catalog::group_of;
use kgc_meta::deletion::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use kgc_meta::{GroupResource, ObjectMeta, ObjectRef};

use crate::graph::{AbsentOwners, Entry, Graph, Ref, Uid, UidKey};

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
    /// A (re)list of the resource of `api_version`/`kind` begins: its objects follow as
    /// `Apply`, then `ListDone`.
    ListBegin { api_version: String, kind: String },
    /// The list is complete: objects of the resource that the graph holds but the list did not
    /// name are gone (their deletion was missed while the watch was down).
    ListDone { api_version: String, kind: String },
    /// A worker verified that this identity does not exist (404 or another uid).
    VirtualDelete(ObjectRef),
    /// The watch of `resource` has delivered every change up to `revision`.
    Bookmark {
        resource: GroupResource,
        revision: u64,
    },
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
    /// Per watched resource, the revision up to which the graph holds its changes (the last
    /// bookmark processed; only clusters with comparable revisions send them).
    bookmarks: HashMap<GroupResource, u64>,
    /// The lists being received: the group and kind listed, and the uids seen so far.
    listing: Vec<Listing>,
}

/// One list being received.
#[derive(Debug)]
struct Listing {
    group: String,
    kind: String,
    seen: HashSet<UidKey>,
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
            bookmarks: HashMap::new(),
            listing: Vec::new(),
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
    /// The revision up to which the graph holds every change to `resource` (0: not known).
    pub fn bookmark(&self, resource: &GroupResource) -> u64 {
        self.bookmarks.get(resource).copied().unwrap_or(0)
    }

    /// Processes one event.
    pub fn process(&mut self, event: GraphEvent) -> Effects {
        let mut fx = Effects::default();
        match event {
            GraphEvent::Apply {
                api_version,
                kind,
                meta,
            } => {
                if !self.listing.is_empty() {
                    let group = group_of(&api_version);
                    if let Some(l) = self
                        .listing
                        .iter_mut()
                        .find(|l| l.group == group && l.kind == kind)
                    {
                        l.seen.insert(UidKey::new(&meta.uid));
                    }
                }
                self.apply(&api_version, &kind, meta, &mut fx)
            }
            GraphEvent::Delete {
                api_version,
                kind,
                meta,
            } => {
                let identity = observed_identity(&api_version, &kind, &meta);
                self.delete(identity, false, &mut fx);
            }
            GraphEvent::ListBegin { api_version, kind } => {
                let group = group_of(&api_version);
                self.listing
                    .retain(|l| !(l.group == group && l.kind == kind));
                self.listing.push(Listing {
                    group: group.to_owned(),
                    kind,
                    seen: HashSet::new(),
                });
            }
            GraphEvent::ListDone { api_version, kind } => {
                let group = group_of(&api_version);
                let Some(at) = self
                    .listing
                    .iter()
                    .position(|l| l.group == group && l.kind == kind)
                else {
                    return fx;
                };
                let present = self.listing.swap_remove(at).seen;
                let g = &self.graph;
                let stale: Vec<ObjectRef> = g
                    .keys()
                    .filter_map(|k| {
                        let n = g.entry(k)?;
                        (!n.is_virtual()
                            && g.kind(n) == kind
                            && group_of(g.api_version(n)) == group
                            && !present.contains(k))
                        .then(|| g.identity(k, n))
                    })
                    .collect();
                for identity in stale {
                    self.delete(identity, false, &mut fx);
                }
            }
            GraphEvent::VirtualDelete(identity) => self.delete(identity, true, &mut fx),
            GraphEvent::Bookmark { resource, revision } => {
                let at = self.bookmarks.entry(resource).or_default();
                *at = (*at).max(revision);
            }
        }
        fx
    }

    fn apply(&mut self, api_version: &str, kind: &str, meta: ObjectMeta, fx: &mut Effects) {
        if meta.uid.is_empty() {
            return;
        }
        let uid = UidKey::new(&meta.uid);
        let new_refs = self.graph.refs(&meta.owner_references);
        let old: Option<Seen>;
        if let Some(existing) = self.graph.entry(&uid) {
            let was_virtual = existing.is_virtual();
            // Step 0: the first real observation of a virtual node.
            if was_virtual {
                let identity = observed_identity(api_version, kind, &meta);
                if !self.graph.has_identity(&uid, existing, &identity) {
                    let dependents = existing.sorted_dependents();
                    let (_, potentially_invalid) =
                        self.partition_dependents(&dependents, &identity);
                    for d in potentially_invalid {
                        if let Some(dep) = self.graph.entry(&d)
                            && !identity.namespace.is_empty()
                            && self.graph.namespace(dep) != identity.namespace
                            && let Some(r) = dep.owners().iter().find(|r| r.uid == uid)
                        {
                            let child = self.graph.identity(&d, dep);
                            let owner = ObjectRef::from_owner(
                                &self.graph.owner_reference(r),
                                &child.namespace,
                            );
                            fx.invalid_owner_refs.push(InvalidOwnerRef { child, owner });
                        }
                        fx.attempt_to_delete.push(d.to_uid());
                    }
                }
                self.graph.set_identity(&uid, &identity);
                self.graph.set_virtual(&uid, false);
                old = None;
            } else {
                // A different watched version or kind for the same uid.
                old = Some(Seen {
                    deleting: existing.being_deleted(),
                    orphan: existing.has_orphan_finalizer(),
                    foreground: existing.has_foreground_finalizer(),
                });
                self.graph.set_type(&uid, api_version, kind);
            }
            let current = self.graph.entry(&uid).map_or(&[][..], |e| e.owners());
            let (added, removed, changed) = references_diffs(current, &new_refs);
            if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
                // Owners that a removed or unblocked reference no longer holds back re-check.
                for r in &removed {
                    if r.blocks() && self.graph.contains_key(&r.uid) {
                        fx.attempt_to_delete.push(r.uid.to_uid());
                    }
                }
                for (before, after) in &changed {
                    if before.blocks() && !after.blocks() && self.graph.contains_key(&before.uid) {
                        fx.attempt_to_delete.push(before.uid.to_uid());
                    }
                }
                let list = self.graph.owner_list(&new_refs);
                self.graph.set_owners(&uid, list);
                self.add_dependent_to_owners(&uid, &added, fx);
                for r in &removed {
                    self.graph.remove_dependent(&r.uid, &uid);
                }
                // Better than upstream, which never looks at the object itself again: one
                // that lost a reference but keeps others is judged again. The reference that
                // went may have been all that stopped a judgement (a cluster-scoped object's
                // namespaced owner, which an orphaning removes), and the owners left may all
                // be gone already, with nothing else to bring the object back to a worker.
                if !removed.is_empty() && !new_refs.is_empty() {
                    fx.attempt_to_delete.push(uid.to_uid());
                }
            }
            if meta.is_deleting() {
                self.graph.set_being_deleted(&uid);
            }
        } else {
            let identity = observed_identity(api_version, kind, &meta);
            let list = self.graph.owner_list(&new_refs);
            self.graph.insert(uid.clone(), &identity, list, false);
            if meta.is_deleting() {
                self.graph.set_being_deleted(&uid);
                if meta.has_finalizer(FINALIZER_FOREGROUND) {
                    self.graph.set_deleting_dependents(&uid);
                }
            }
            self.add_dependent_to_owners(&uid, &new_refs, fx);
            old = None;
        }
        self.graph.record_observation(
            &uid,
            &meta.resource_version,
            meta.has_finalizer(FINALIZER_ORPHAN),
            meta.has_finalizer(FINALIZER_FOREGROUND),
        );
        self.process_transitions(old, &meta, &uid, fx);
    }

    /// Upstream `processTransitions`: start orphaning or foreground deletion when the object
    /// newly carries the finalizer while being deleted.
    fn process_transitions(
        &mut self,
        old: Option<Seen>,
        meta: &ObjectMeta,
        uid: &UidKey,
        fx: &mut Effects,
    ) {
        let starts = |finalizer: &str, had: fn(&Seen) -> bool| {
            meta.is_deleting()
                && meta.has_finalizer(finalizer)
                && old.as_ref().is_none_or(|o| !o.deleting || !had(o))
        };
        if starts(FINALIZER_ORPHAN, |o| o.orphan) {
            fx.attempt_to_orphan.push(uid.to_uid());
            return;
        }
        if starts(FINALIZER_FOREGROUND, |o| o.foreground)
            && let Some(node) = self.graph.entry(uid)
        {
            let dependents = node.sorted_dependents();
            self.graph.set_deleting_dependents(uid);
            fx.attempt_to_delete
                .extend(dependents.iter().map(UidKey::to_uid));
            fx.attempt_to_delete.push(uid.to_uid());
        }
    }

    /// Upstream `addDependentToOwners`: link `dependent` to each owner, creating virtual nodes
    /// for unknown owners, and flag references that cannot be right.
    fn add_dependent_to_owners(&mut self, dependent: &UidKey, refs: &[Ref], fx: &mut Effects) {
        let Some(child_ns) = self.graph.entry(dependent).map(Entry::namespace_id) else {
            return;
        };
        let mut flagged = false;
        for r in refs {
            if r.uid.is_empty() {
                continue;
            }
            if !self.graph.contains_key(&r.uid) {
                self.graph
                    .insert_virtual_owner(r, child_ns, dependent.clone());
                fx.attempt_to_delete.push(r.uid.to_uid());
                continue;
            }
            self.graph.add_dependent(&r.uid, dependent.clone());
            if flagged {
                continue;
            }
            let Some(owner) = self.graph.entry(&r.uid) else {
                continue;
            };
            let owner_ns = owner.namespace_id();
            if !Graph::is_cluster_scoped(owner) && owner_ns != child_ns {
                // A namespaced owner in another namespace: the reference can only be absent.
                if !owner.is_virtual()
                    && let Some(c) = self.graph.entry(dependent)
                {
                    let child = self.graph.identity(dependent, c);
                    let owner =
                        ObjectRef::from_owner(&self.graph.owner_reference(r), &child.namespace);
                    fx.invalid_owner_refs.push(InvalidOwnerRef { child, owner });
                }
                flagged = true;
            } else if !Graph::ref_matches_entry(r, owner) {
                // The uid names an object of another kind, version or name.
                flagged = true;
            } else if Graph::is_cluster_scoped(owner) && owner.is_virtual() && owner_ns != child_ns
            {
                // A cluster-scoped child's virtual owner named again by a namespaced child
                // (kubernetes#98040): verify.
                flagged = true;
            }
        }
        if flagged {
            fx.attempt_to_delete.push(dependent.to_uid());
        }
    }

    /// Upstream `partitionDependents`: which dependents' references agree with `identity`
    /// (matching) and which do not (potentially invalid). A dependent may be in both.
    fn partition_dependents(
        &self,
        dependents: &[UidKey],
        identity: &ObjectRef,
    ) -> (Vec<UidKey>, Vec<UidKey>) {
        let mut matching = Vec::new();
        let mut mismatching = Vec::new();
        let owner_namespaced = !identity.namespace.is_empty();
        let owner_uid = UidKey::new(&identity.uid);
        for d in dependents {
            let Some(dep) = self.graph.entry(d) else {
                continue;
            };
            let (mut found_match, mut found_mismatch) = (false, false);
            if owner_namespaced && identity.namespace != self.graph.namespace(dep) {
                found_mismatch = true;
            } else {
                for r in dep.owners().iter().filter(|r| r.uid == owner_uid) {
                    if self.graph.ref_matches(r, identity) {
                        found_match = true;
                    } else {
                        found_mismatch = true;
                    }
                }
            }
            if found_match {
                matching.push(d.clone());
            }
            if found_mismatch {
                mismatching.push(d.clone());
            }
        }
        (matching, mismatching)
    }

    /// Case C: a delete event, real or virtual.
    fn delete(&mut self, identity: ObjectRef, is_virtual_event: bool, fx: &mut Effects) {
        let uid = UidKey::new(&identity.uid);
        let Some(node) = self.graph.entry(&uid) else {
            return;
        };
        if is_virtual_event {
            let dependents = node.sorted_dependents();
            if node.is_virtual() {
                let (matching, mismatching) = self.partition_dependents(&dependents, &identity);
                if !mismatching.is_empty() {
                    // Some dependents name this uid differently: keep the node.
                    let same_identity = self
                        .graph
                        .entry(&uid)
                        .is_some_and(|n| self.graph.has_identity(&uid, n, &identity));
                    if !matching.is_empty() {
                        self.absent.add(identity.clone());
                        fx.attempt_to_delete
                            .extend(matching.iter().map(UidKey::to_uid));
                    }
                    if same_identity
                        && let Some(alt) = self.alternate_owner_identity(&mismatching, &identity)
                    {
                        self.graph.set_identity(&uid, &alt);
                        fx.attempt_to_delete_later.push(uid.to_uid());
                    }
                    return;
                }
            } else if !self.graph.has_identity(&uid, node, &identity) {
                // The observed object stands; only dependents naming the bad identity lose.
                let (matching, _) = self.partition_dependents(&dependents, &identity);
                if !matching.is_empty() {
                    self.absent.add(identity);
                    fx.attempt_to_delete
                        .extend(matching.iter().map(UidKey::to_uid));
                }
                return;
            }
        }
        let Some(node) = self.graph.remove(&uid) else {
            return;
        };
        for r in node.owners() {
            self.graph.remove_dependent(&r.uid, &uid);
        }
        if node.has_dependents() {
            self.absent.add(identity);
        }
        fx.attempt_to_delete
            .extend(node.sorted_dependents().iter().map(UidKey::to_uid));
        for r in node.owners() {
            if self
                .graph
                .entry(&r.uid)
                .is_some_and(Entry::deleting_dependents)
            {
                fx.attempt_to_delete.push(r.uid.to_uid());
            }
        }
    }

    /// Upstream `getAlternateOwnerIdentity`: the next identity (in Kind, APIVersion, Namespace,
    /// Name, UID order) after the verified-absent one among the dependents' references, wrapping
    /// to the first; deterministic round-robin probing of conflicting identities.
    fn alternate_owner_identity(&self, deps: &[UidKey], absent: &ObjectRef) -> Option<ObjectRef> {
        let cluster_scoped = absent.namespace.is_empty();
        let absent_uid = UidKey::new(&absent.uid);
        let mut seen: HashSet<ObjectRef> = HashSet::from([absent.clone()]);
        let mut first: Option<ObjectRef> = None;
        let mut following: Option<ObjectRef> = None;
        for d in deps {
            let Some(dep) = self.graph.entry(d) else {
                continue;
            };
            for r in dep.owners().iter().filter(|r| r.uid == absent_uid) {
                let mut candidate = ObjectRef::from_owner(
                    &self.graph.owner_reference(r),
                    self.graph.namespace(dep),
                );
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

fn observed_identity(api_version: &str, kind: &str, meta: &ObjectMeta) -> ObjectRef {
    ObjectRef {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
    }
}

/// Added, removed and changed (before, after) references, keyed by uid.
#[allow(clippy::type_complexity)]
fn references_diffs(old: &[Ref], new: &[Ref]) -> (Vec<Ref>, Vec<Ref>, Vec<(Ref, Ref)>) {
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
