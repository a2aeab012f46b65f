//! The dependency graph (upstream `graph.go`): one node per object uid, real (observed through a
//! watch) or virtual (only named by some dependent's owner reference).
//!
//! The graph holds every object of the cluster, so its layout is compact (about 150 bytes per
//! object instead of upstream's kilobyte): uids are 16-byte keys (the canonical UUID text
//! parsed; any other uid is kept as text), apiVersions, kinds and namespaces are interned to
//! 4-byte ids, names and resourceVersions are stored inline when short, identical owner-reference
//! lists (every Pod of one ReplicaSet has the same one) are stored once and shared, and a node
//! without dependents pays 8 bytes for its dependent set. [`Node`] is the readable form, built on
//! demand for the workers, the debug endpoint and tests.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use compact_str::CompactString;
use kgc_meta::{ObjectRef, OwnerReference};

/// A uid as the collector's queues and effects carry it.
pub type Uid = Arc<str>;

/// A uid as the graph keys it: the canonical lowercase hyphenated UUID every API server assigns
/// as its 16 bytes; any other text (tests, hand-written references) as text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum UidKey {
    Uuid([u8; 16]),
    Text(Arc<str>),
}

/// Byte offsets of the hyphens in a canonical UUID.
const HYPHENS: [usize; 4] = [8, 13, 18, 23];

impl UidKey {
    pub(crate) fn new(uid: &str) -> Self {
        Self::parse_uuid(uid).map_or_else(|| Self::Text(Arc::from(uid)), Self::Uuid)
    }

    /// The 16 bytes of `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lowercase hex; `None` for any
    /// other text, so that the key always prints back to exactly the uid it was made from.
    fn parse_uuid(s: &str) -> Option<[u8; 16]> {
        let b = s.as_bytes();
        if b.len() != 36 || HYPHENS.iter().any(|&i| b[i] != b'-') {
            return None;
        }
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 16];
        let mut digits = b.iter().enumerate().filter(|(i, _)| !HYPHENS.contains(i));
        for byte in &mut out {
            let (_, hi) = digits.next()?;
            let (_, lo) = digits.next()?;
            *byte = (nibble(*hi)? << 4) | nibble(*lo)?;
        }
        Some(out)
    }

    fn uuid_text(bytes: &[u8; 16]) -> [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut positions = (0..36).filter(|i| !HYPHENS.contains(i));
        for byte in bytes {
            for nibble in [byte >> 4, byte & 0xf] {
                if let Some(p) = positions.next() {
                    out[p] = HEX[usize::from(nibble)];
                }
            }
        }
        out
    }

    /// Runs `f` on the uid's text, without allocating.
    fn with_str<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        match self {
            Self::Uuid(bytes) => {
                let text = Self::uuid_text(bytes);
                f(std::str::from_utf8(&text).unwrap_or_default())
            }
            Self::Text(t) => f(t),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Self::Text(t) if t.is_empty())
    }

    pub(crate) fn to_uid(&self) -> Uid {
        match self {
            Self::Uuid(_) => self.with_str(|s| Arc::from(s)),
            Self::Text(t) => Arc::clone(t),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Self::Uuid(_) => 0,
            Self::Text(t) => malloc_size(16 + t.len()),
        }
    }
}

impl std::fmt::Display for UidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_str(|s| f.write_str(s))
    }
}

/// The order of the uids' text (canonical UUID text sorts as its bytes do).
impl Ord for UidKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Uuid(a), Self::Uuid(b)) => a.cmp(b),
            (Self::Text(a), Self::Text(b)) => a.cmp(b),
            _ => self.with_str(|a| other.with_str(|b| a.cmp(b))),
        }
    }
}

impl PartialOrd for UidKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Short strings that recur across objects (apiVersions, kinds, namespaces), held once each and
/// named by a 4-byte id. Never shrinks: the set of such strings in a cluster is small.
#[derive(Debug)]
struct Interner {
    ids: HashMap<Arc<str>, u32>,
    texts: Vec<Arc<str>>,
}

/// The interned empty string (cluster-scoped namespace, missing fields).
const EMPTY: u32 = 0;

impl Default for Interner {
    fn default() -> Self {
        let mut i = Self {
            ids: HashMap::new(),
            texts: Vec::new(),
        };
        i.id("");
        i
    }
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        // Each entry costs more than 40 bytes, so memory runs out long before 2^32 entries.
        let id = u32::try_from(self.texts.len()).expect("fewer than 2^32 interned strings");
        let text: Arc<str> = Arc::from(s);
        self.texts.push(Arc::clone(&text));
        self.ids.insert(text, id);
        id
    }

    fn get(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", |t| &**t)
    }

    fn bytes(&self) -> usize {
        table_bytes::<(Arc<str>, u32)>(self.ids.capacity())
            + malloc_size(self.texts.capacity() * size_of::<Arc<str>>())
            + self
                .texts
                .iter()
                .map(|t| malloc_size(16 + t.len()))
                .sum::<usize>()
    }
}

/// One owner reference, compact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Ref {
    api_version: u32,
    kind: u32,
    name: CompactString,
    pub(crate) uid: UidKey,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl std::fmt::Debug for UidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl Ref {
    /// `blockOwnerDeletion: true`.
    pub(crate) fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }
}

/// An object's owner references, shared by every object that has the same list.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct OwnerList(Box<[Ref]>);

/// The shared lists, found by content.
#[derive(PartialEq, Eq)]
struct ListKey(Arc<OwnerList>);

impl Hash for ListKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.0.hash(state);
    }
}

impl std::borrow::Borrow<[Ref]> for ListKey {
    fn borrow(&self) -> &[Ref] {
        &self.0.0
    }
}

const VIRTUAL: u8 = 1;
const BEING_DELETED: u8 = 2;
const DELETING_DEPENDENTS: u8 = 4;
const ORPHAN_FINALIZER: u8 = 8;
const FOREGROUND_FINALIZER: u8 = 16;

/// One node as stored.
#[derive(Debug)]
pub(crate) struct Entry {
    name: CompactString,
    resource_version: CompactString,
    owners: Option<Arc<OwnerList>>,
    /// Boxed: 8 bytes in every node, most of which have no dependents, instead of a set's 48.
    #[allow(clippy::box_collection)]
    dependents: Option<Box<HashSet<UidKey>>>,
    api_version: u32,
    kind: u32,
    namespace: u32,
    flags: u8,
}

impl Entry {
    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    pub(crate) fn is_virtual(&self) -> bool {
        self.flag(VIRTUAL)
    }

    pub(crate) fn being_deleted(&self) -> bool {
        self.flag(BEING_DELETED)
    }

    pub(crate) fn deleting_dependents(&self) -> bool {
        self.flag(DELETING_DEPENDENTS)
    }

    pub(crate) fn has_orphan_finalizer(&self) -> bool {
        self.flag(ORPHAN_FINALIZER)
    }

    pub(crate) fn has_foreground_finalizer(&self) -> bool {
        self.flag(FOREGROUND_FINALIZER)
    }

    pub(crate) fn owners(&self) -> &[Ref] {
        self.owners.as_deref().map_or(&[], |l| &l.0)
    }

    pub(crate) fn dependents(&self) -> impl Iterator<Item = &UidKey> {
        self.dependents.iter().flat_map(|d| d.iter())
    }

    pub(crate) fn has_dependents(&self) -> bool {
        self.dependents.as_ref().is_some_and(|d| !d.is_empty())
    }

    /// Dependents in uid order, so that the work they cause is queued deterministically.
    pub(crate) fn sorted_dependents(&self) -> Vec<UidKey> {
        let mut out: Vec<UidKey> = self.dependents().cloned().collect();
        out.sort_unstable();
        out
    }

    pub(crate) fn namespace_id(&self) -> u32 {
        self.namespace
    }
}

/// One object in the graph, readable: a copy built on demand from the compact form.
#[derive(Debug, Clone)]
pub struct Node {
    /// For a real node: the watched resource's apiVersion/kind and the object's
    /// namespace/name/uid. For a virtual node: a dependent's owner-reference coordinates plus
    /// the dependent's namespace.
    pub identity: ObjectRef,
    /// The object's owner references as last observed.
    pub owners: Vec<OwnerReference>,
    /// The nodes whose owner references name this uid (left empty where the caller asked for
    /// the node without them).
    pub dependents: BTreeSet<Uid>,
    /// Observed with a deletionTimestamp (or deleted by the collector); never goes back.
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
    pub fn uid(&self) -> &str {
        &self.identity.uid
    }
}

/// The nodes, uid → node, stored densely: the nodes in one array (a removal moves the last node
/// into the hole), and a hash table of 4-byte positions in it, keyed by the uid the position
/// holds. A hash table's memory doubles at once when it grows; holding only positions, this one
/// costs about 5 to 11 bytes per node whatever its fill, and the array grows by an eighth at a
/// time, so the graph's bytes per node stay about the same at any count (with a table of whole
/// nodes the graph cost 283 bytes per node just past a doubling, 170 before one).
#[derive(Default)]
struct Nodes {
    slots: Vec<(UidKey, Entry)>,
    index: hashbrown::HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl Nodes {
    fn hash(&self, uid: &UidKey) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, uid)
    }

    fn position(&self, uid: &UidKey) -> Option<usize> {
        let slots = &self.slots;
        self.index
            .find(self.hash(uid), |&i| slots[i as usize].0 == *uid)
            .map(|&i| i as usize)
    }

    fn get(&self, uid: &UidKey) -> Option<&Entry> {
        self.position(uid).map(|i| &self.slots[i].1)
    }

    fn get_mut(&mut self, uid: &UidKey) -> Option<&mut Entry> {
        self.position(uid).map(|i| &mut self.slots[i].1)
    }

    fn contains_key(&self, uid: &UidKey) -> bool {
        self.position(uid).is_some()
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn keys(&self) -> impl Iterator<Item = &UidKey> {
        self.slots.iter().map(|(k, _)| k)
    }

    fn iter(&self) -> impl Iterator<Item = (&UidKey, &Entry)> {
        self.slots.iter().map(|(k, e)| (k, e))
    }

    /// Inserts or replaces the node `uid`, returning the one replaced.
    fn insert(&mut self, uid: UidKey, entry: Entry) -> Option<Entry> {
        if let Some(i) = self.position(&uid) {
            return Some(std::mem::replace(&mut self.slots[i].1, entry));
        }
        // More nodes than positions a u32 holds would take hundreds of gigabytes first.
        let at = u32::try_from(self.slots.len()).expect("fewer than 2^32 graph nodes");
        if self.slots.len() == self.slots.capacity() {
            self.slots.reserve_exact((self.slots.len() / 8).max(64));
        }
        let hash = self.hash(&uid);
        self.slots.push((uid, entry));
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index.insert_unique(hash, at, |&i| {
            std::hash::BuildHasher::hash_one(hasher, &slots[i as usize].0)
        });
        None
    }

    /// Removes the node `uid`, moving the last node into its place.
    fn remove(&mut self, uid: &UidKey) -> Option<Entry> {
        let slots = &self.slots;
        let at = match self
            .index
            .find_entry(self.hash(uid), |&i| slots[i as usize].0 == *uid)
        {
            Ok(found) => found.remove().0 as usize,
            Err(_) => return None,
        };
        let (_, entry) = self.slots.swap_remove(at);
        if let Some((moved, _)) = self.slots.get(at) {
            let from = self.slots.len() as u32;
            let hash = self.hash(moved);
            if let Some(i) = self.index.find_mut(hash, |&i| i == from) {
                *i = at as u32;
            }
        }
        // After a cascade, give most of the memory back (amortized: at most once per quarter
        // of the nodes removed).
        if self.slots.capacity() > 1024 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots
                .shrink_to(self.slots.len() + self.slots.len() / 8);
            let (slots, hasher) = (&self.slots, &self.hasher);
            self.index.shrink_to(slots.len(), |&i| {
                std::hash::BuildHasher::hash_one(hasher, &slots[i as usize].0)
            });
        }
        Some(entry)
    }

    /// Heap bytes of the array and the position table (the nodes' own out-of-line parts aside).
    fn bytes(&self) -> usize {
        malloc_size(self.slots.capacity() * size_of::<(UidKey, Entry)>())
            + table_bytes::<u32>(self.index.capacity())
    }
}

/// The graph: uid → node, plus the interned strings and shared owner lists the nodes use.
#[derive(Default)]
pub struct Graph {
    nodes: Nodes,
    strings: Interner,
    owner_lists: HashSet<ListKey>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl Graph {
    pub(crate) fn entry(&self, uid: &UidKey) -> Option<&Entry> {
        self.nodes.get(uid)
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(&UidKey::new(uid))
    }

    pub(crate) fn contains_key(&self, uid: &UidKey) -> bool {
        self.nodes.contains_key(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every uid in the graph.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &UidKey> {
        self.nodes.keys()
    }

    /// The readable form of one node; `with_dependents` fills [`Node::dependents`] (a copy of
    /// up to every object in the cluster, so the workers leave it out).
    pub fn node(&self, uid: &str, with_dependents: bool) -> Option<Node> {
        let key = UidKey::new(uid);
        let e = self.nodes.get(&key)?;
        Some(Node {
            identity: self.identity(&key, e),
            owners: e.owners().iter().map(|r| self.owner_reference(r)).collect(),
            dependents: if with_dependents {
                e.dependents().map(UidKey::to_uid).collect()
            } else {
                BTreeSet::new()
            },
            being_deleted: e.being_deleted(),
            deleting_dependents: e.deleting_dependents(),
            is_virtual: e.is_virtual(),
            resource_version: e.resource_version.to_string(),
            has_orphan_finalizer: e.has_orphan_finalizer(),
            has_foreground_finalizer: e.has_foreground_finalizer(),
        })
    }

    pub(crate) fn identity(&self, uid: &UidKey, e: &Entry) -> ObjectRef {
        ObjectRef {
            api_version: self.strings.get(e.api_version).to_owned(),
            kind: self.strings.get(e.kind).to_owned(),
            namespace: self.strings.get(e.namespace).to_owned(),
            name: e.name.to_string(),
            uid: uid.to_string(),
        }
    }

    pub(crate) fn api_version(&self, e: &Entry) -> &str {
        self.strings.get(e.api_version)
    }

    pub(crate) fn kind(&self, e: &Entry) -> &str {
        self.strings.get(e.kind)
    }

    pub(crate) fn namespace(&self, e: &Entry) -> &str {
        self.strings.get(e.namespace)
    }

    pub(crate) fn name<'a>(&self, e: &'a Entry) -> &'a str {
        &e.name
    }

    /// Whether `e` (keyed `uid`) has exactly `identity`.
    pub(crate) fn has_identity(&self, uid: &UidKey, e: &Entry, identity: &ObjectRef) -> bool {
        self.strings.get(e.api_version) == identity.api_version
            && self.strings.get(e.kind) == identity.kind
            && self.strings.get(e.namespace) == identity.namespace
            && *e.name == *identity.name
            && uid.with_str(|u| u == identity.uid)
    }

    /// Sets the identity of the node `uid` (uid aside).
    pub(crate) fn set_identity(&mut self, uid: &UidKey, identity: &ObjectRef) {
        let (a, k, n) = (
            self.strings.id(&identity.api_version),
            self.strings.id(&identity.kind),
            self.strings.id(&identity.namespace),
        );
        if let Some(e) = self.nodes.get_mut(uid) {
            e.api_version = a;
            e.kind = k;
            e.namespace = n;
            if *e.name != *identity.name {
                e.name = CompactString::from(identity.name.as_str());
            }
        }
    }

    /// Sets the watched apiVersion and kind of the node `uid`.
    pub(crate) fn set_type(&mut self, uid: &UidKey, api_version: &str, kind: &str) {
        let (a, k) = (self.strings.id(api_version), self.strings.id(kind));
        if let Some(e) = self.nodes.get_mut(uid) {
            e.api_version = a;
            e.kind = k;
        }
    }

    pub(crate) fn is_cluster_scoped(e: &Entry) -> bool {
        e.namespace == EMPTY
    }

    /// Inserts a node; `owners` must come from [`Graph::owner_list`].
    pub(crate) fn insert(
        &mut self,
        uid: UidKey,
        identity: &ObjectRef,
        owners: Option<Arc<OwnerList>>,
        is_virtual: bool,
    ) {
        let entry = Entry {
            name: CompactString::from(identity.name.as_str()),
            resource_version: CompactString::default(),
            owners,
            dependents: None,
            api_version: self.strings.id(&identity.api_version),
            kind: self.strings.id(&identity.kind),
            namespace: self.strings.id(&identity.namespace),
            flags: if is_virtual { VIRTUAL } else { 0 },
        };
        if let Some(old) = self.nodes.insert(uid, entry) {
            self.release(old.owners);
        }
    }

    /// A virtual node for the owner `r` names, as seen from a dependent in `namespace` (an
    /// interned id), with that dependent.
    pub(crate) fn insert_virtual_owner(&mut self, r: &Ref, namespace: u32, dependent: UidKey) {
        let entry = Entry {
            name: r.name.clone(),
            resource_version: CompactString::default(),
            owners: None,
            dependents: Some(Box::new(HashSet::from([dependent]))),
            api_version: r.api_version,
            kind: r.kind,
            namespace,
            flags: VIRTUAL,
        };
        if let Some(old) = self.nodes.insert(r.uid.clone(), entry) {
            self.release(old.owners);
        }
    }

    /// Removes a node, returning it (its owner list no longer shared).
    pub(crate) fn remove(&mut self, uid: &UidKey) -> Option<Entry> {
        let e = self.nodes.remove(uid)?;
        if let Some(list) = &e.owners
            && Arc::strong_count(list) == 2
        {
            self.owner_lists.remove(&*list.0);
        }
        Some(e)
    }

    /// Lets go of a node's former owner list (dropping the shared copy when this was its last
    /// user).
    fn release(&mut self, owners: Option<Arc<OwnerList>>) {
        if let Some(list) = owners
            && Arc::strong_count(&list) == 2
        {
            self.owner_lists.remove(&*list.0);
        }
    }

    /// Records the node's observed resourceVersion and finalizer flags.
    pub(crate) fn record_observation(
        &mut self,
        uid: &UidKey,
        resource_version: &str,
        orphan: bool,
        foreground: bool,
    ) {
        if let Some(e) = self.nodes.get_mut(uid) {
            if *e.resource_version != *resource_version {
                e.resource_version = CompactString::from(resource_version);
            }
            e.set_flag(ORPHAN_FINALIZER, orphan);
            e.set_flag(FOREGROUND_FINALIZER, foreground);
        }
    }

    pub(crate) fn set_virtual(&mut self, uid: &UidKey, on: bool) {
        if let Some(e) = self.nodes.get_mut(uid) {
            e.set_flag(VIRTUAL, on);
        }
    }

    pub(crate) fn set_being_deleted(&mut self, uid: &UidKey) {
        if let Some(e) = self.nodes.get_mut(uid) {
            e.set_flag(BEING_DELETED, true);
        }
    }

    pub(crate) fn set_deleting_dependents(&mut self, uid: &UidKey) {
        if let Some(e) = self.nodes.get_mut(uid) {
            e.set_flag(DELETING_DEPENDENTS, true);
        }
    }

    /// The compact form of owner references (interning their strings).
    pub(crate) fn refs(&mut self, refs: &[OwnerReference]) -> Vec<Ref> {
        refs.iter()
            .map(|r| Ref {
                api_version: self.strings.id(&r.api_version),
                kind: self.strings.id(&r.kind),
                name: CompactString::from(r.name.as_str()),
                uid: UidKey::new(&r.uid),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect()
    }

    /// The shared list equal to `refs` (`None` for no references).
    pub(crate) fn owner_list(&mut self, refs: &[Ref]) -> Option<Arc<OwnerList>> {
        if refs.is_empty() {
            return None;
        }
        if let Some(k) = self.owner_lists.get(refs) {
            return Some(Arc::clone(&k.0));
        }
        let list = Arc::new(OwnerList(refs.into()));
        self.owner_lists.insert(ListKey(Arc::clone(&list)));
        Some(list)
    }

    /// Replaces the owner list of the node `uid`.
    pub(crate) fn set_owners(&mut self, uid: &UidKey, owners: Option<Arc<OwnerList>>) {
        let old = self
            .nodes
            .get_mut(uid)
            .and_then(|e| std::mem::replace(&mut e.owners, owners));
        self.release(old);
    }

    /// The readable form of a compact reference.
    pub(crate) fn owner_reference(&self, r: &Ref) -> OwnerReference {
        OwnerReference {
            api_version: self.strings.get(r.api_version).to_owned(),
            kind: self.strings.get(r.kind).to_owned(),
            name: r.name.to_string(),
            uid: r.uid.to_string(),
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }

    /// Whether the reference `r` names `identity`'s coordinates (namespace aside).
    pub(crate) fn ref_matches(&self, r: &Ref, identity: &ObjectRef) -> bool {
        *r.name == *identity.name
            && self.strings.get(r.kind) == identity.kind
            && self.strings.get(r.api_version) == identity.api_version
            && r.uid.with_str(|u| u == identity.uid)
    }

    /// Whether the reference `r` names the node `e`'s coordinates (the uid is the key already).
    pub(crate) fn ref_matches_entry(r: &Ref, e: &Entry) -> bool {
        r.name == e.name && r.kind == e.kind && r.api_version == e.api_version
    }

    /// Adds `dependent` to `owner`'s dependents.
    pub(crate) fn add_dependent(&mut self, owner: &UidKey, dependent: UidKey) {
        if let Some(n) = self.nodes.get_mut(owner) {
            n.dependents.get_or_insert_default().insert(dependent);
        }
    }

    pub(crate) fn remove_dependent(&mut self, owner: &UidKey, dependent: &UidKey) {
        if let Some(n) = self.nodes.get_mut(owner)
            && let Some(d) = n.dependents.as_mut()
        {
            d.remove(dependent);
            if d.is_empty() {
                n.dependents = None;
            } else if d.capacity() > 64 && d.len() < d.capacity() / 4 {
                d.shrink_to_fit();
            }
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
        let key = UidKey::new(uid);
        let Some(n) = self.nodes.get(&key) else {
            return (false, Vec::new());
        };
        let mut blocked = false;
        let mut next = Vec::new();
        for d in n.dependents().filter(|d| **d != key) {
            let Some(dn) = self.nodes.get(d) else {
                continue;
            };
            if !dn.owners().iter().any(|r| r.uid == key && r.blocks()) {
                continue;
            }
            blocked = true;
            if !dn.being_deleted() && !dn.deleting_dependents() {
                next.push(d.to_uid());
                if next.len() == limit {
                    break;
                }
            }
        }
        (blocked, next)
    }

    /// Whether some dependent of `uid` is itself deleting its dependents (a cycle in waiting).
    pub(crate) fn has_dependent_deleting_dependents(&self, uid: &UidKey) -> bool {
        self.nodes.get(uid).is_some_and(|n| {
            n.dependents()
                .any(|d| self.nodes.get(d).is_some_and(Entry::deleting_dependents))
        })
    }

    /// Heap bytes of the whole graph: the uid table at its allocated capacity, every node's
    /// out-of-line strings and dependent sets, the shared owner lists and the interned strings,
    /// each allocation rounded up as glibc's malloc does.
    pub fn approximate_bytes(&self) -> usize {
        let nodes = self.nodes.bytes()
            + self
                .nodes
                .iter()
                .map(|(k, e)| {
                    k.heap_bytes()
                        + compact_heap(&e.name)
                        + compact_heap(&e.resource_version)
                        + e.dependents.as_ref().map_or(0, |d| {
                            malloc_size(size_of::<HashSet<UidKey>>())
                                + table_bytes::<UidKey>(d.capacity())
                                + d.iter().map(UidKey::heap_bytes).sum::<usize>()
                        })
                })
                .sum::<usize>();
        let lists = table_bytes::<ListKey>(self.owner_lists.capacity())
            + self
                .owner_lists
                .iter()
                .map(|l| {
                    malloc_size(16 + size_of::<OwnerList>())
                        + malloc_size(l.0.0.len() * size_of::<Ref>())
                        + l.0
                            .0
                            .iter()
                            .map(|r| compact_heap(&r.name) + r.uid.heap_bytes())
                            .sum::<usize>()
                })
                .sum::<usize>();
        nodes + lists + self.strings.bytes()
    }
}

/// What glibc's malloc takes for a request of `n` bytes: 8 bytes of header, 16-byte granules,
/// 32 bytes at least.
fn malloc_size(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ((n + 8 + 15) & !15).max(32)
    }
}

/// The allocation of a hash table (hashbrown) that can hold `capacity` entries of `T`: a
/// power-of-two number of buckets, 7/8 of them usable, plus one control byte per bucket and a
/// group's worth more.
fn table_bytes<T>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    malloc_size(buckets * size_of::<T>() + buckets + 16)
}

fn compact_heap(s: &CompactString) -> usize {
    if s.is_heap_allocated() {
        malloc_size(s.capacity())
    } else {
        0
    }
}

/// Objects verified absent (upstream `ReferenceCache`): keyed by full identity, because a uid
/// that is absent under one kind or namespace may be valid under another (kubernetes#65200).
/// Uids are never reused, so an entry never goes stale; the cache is bounded (oldest out).
#[derive(Debug)]
pub struct AbsentOwners {
    /// Each identity is held once, shared by the set and the eviction order.
    set: HashSet<Arc<ObjectRef>>,
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
    fn uids_round_trip_and_sort_as_text() {
        let uuid = "0f8e4c1a-9b2d-4e6f-8a1b-2c3d4e5f6a7b";
        for text in [
            uuid,
            "0F8E4C1A-9B2D-4E6F-8A1B-2C3D4E5F6A7B",
            "0f8e4c1a9b2d4e6f8a1b2c3d4e5f6a7b",
            "0f8e4c1a-9b2d-4e6f-8a1b-2c3d4e5f6a7",
            "0f8e4c1a-9b2d-4e6f-8a1b-2c3d4e5f6a7g",
            "poduid1",
            "",
            "ü-ünicode",
        ] {
            assert_eq!(UidKey::new(text).to_string(), text);
            assert_eq!(&*UidKey::new(text).to_uid(), text);
        }
        assert!(matches!(UidKey::new(uuid), UidKey::Uuid(_)));
        assert!(matches!(UidKey::new("poduid1"), UidKey::Text(_)));
        let mut keys: Vec<UidKey> = [
            "b",
            "0f8e4c1a-9b2d-4e6f-8a1b-2c3d4e5f6a7b",
            "a",
            "ffffffff-0000-0000-0000-000000000000",
            "1",
        ]
        .into_iter()
        .map(UidKey::new)
        .collect();
        keys.sort();
        let text: Vec<String> = keys.iter().map(ToString::to_string).collect();
        let mut want = text.clone();
        want.sort();
        assert_eq!(text, want);
    }

    #[test]
    fn identical_owner_lists_are_shared_and_released() {
        let mut g = Graph::default();
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "owner".into(),
            uid: "owner".into(),
            controller: None,
            block_owner_deletion: None,
        };
        let refs = g.refs(&[owner]);
        for uid in ["d1", "d2"] {
            let list = g.owner_list(&refs);
            g.insert(UidKey::new(uid), &r(uid), list, false);
        }
        assert_eq!(g.owner_lists.len(), 1);
        g.remove(&UidKey::new("d1"));
        assert_eq!(g.owner_lists.len(), 1);
        let d2 = g.remove(&UidKey::new("d2")).unwrap();
        assert!(g.owner_lists.is_empty());
        assert_eq!(
            d2.owners().len(),
            1,
            "the removed node keeps its references"
        );
    }

    #[test]
    fn blocking_dependents_need_block_owner_deletion() {
        let mut g = Graph::default();
        g.insert(UidKey::new("owner"), &r("owner"), None, true);
        for (uid, block) in [("d1", Some(true)), ("d2", Some(false)), ("d3", None)] {
            let refs = g.refs(&[OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "owner".into(),
                uid: "owner".into(),
                controller: None,
                block_owner_deletion: block,
            }]);
            let list = g.owner_list(&refs);
            g.insert(UidKey::new(uid), &r(uid), list, true);
            g.add_dependent(&UidKey::new("owner"), UidKey::new(uid));
        }
        assert_eq!(
            g.blocking_progress("owner", 10),
            (true, vec![Arc::from("d1")])
        );
        g.set_being_deleted(&UidKey::new("d1"));
        assert_eq!(g.blocking_progress("owner", 10), (true, vec![]));
        g.remove(&UidKey::new("d1"));
        assert_eq!(g.blocking_progress("owner", 10), (false, vec![]));
    }
}
