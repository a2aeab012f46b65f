//! The kubelet's container, sandbox and pod-log garbage collection, as pure functions.
//!
//! Faithful to kubernetes/kubernetes `pkg/kubelet/kuberuntime/kuberuntime_gc.go`
//! (`evictContainers`, `evictSandboxes`, `evictPodLogsDirectories`) and the policy of
//! `pkg/kubelet/container/container_gc.go`. One deliberate difference: a container without the
//! `io.kubernetes.pod.uid` label is not the kubelet's and is never collected (upstream would
//! file it under pod uid "" and, once synced, treat it as a deleted pod's).

use crate::hash::FxHashMap as HashMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::fetch::fetched;
use crate::intern::{Interned, Interner};
use crate::snapshot::{
    Container, ContainerState, Pod, Sandbox, SandboxState, empty_id, repeated_id,
};

/// The kubelet's `GCPolicy` for dead containers, with its defaults
/// (`cmd/kubelet/app/options/options.go`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerGcPolicy {
    /// A dead container must have been *created* more than this long ago
    /// (`--minimum-container-ttl-duration`).
    pub min_age: Duration,
    /// Dead containers kept per (pod, container name); negative: no limit
    /// (`--maximum-dead-containers-per-container`).
    pub max_per_pod_container: i64,
    /// Dead containers kept on the node; negative: no limit (`--maximum-dead-containers`).
    pub max_containers: i64,
}

impl Default for ContainerGcPolicy {
    fn default() -> Self {
        ContainerGcPolicy {
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// What the kubelet's pod workers say about pod uids (`pkg/kubelet/pod_workers.go`): the pods
/// it knows, or `None` before its sources are ready.
#[derive(Clone, Copy, Debug)]
pub struct PodView<'p> {
    /// `None`: not all config sources seen and pods synced; nothing counts as a deleted pod's.
    pods: Option<&'p [Pod]>,
}

/// What may be removed of one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fate {
    /// `ShouldPodContentBeRemoved`.
    content: bool,
    /// `ShouldPodRuntimeBeRemoved`.
    runtime: bool,
}

impl Fate {
    /// The pod counts as deleted: its containers and inactive sandboxes all go.
    pub(crate) fn gone(self, evict_non_deleted_pods: bool) -> bool {
        self.content || (evict_non_deleted_pods && self.runtime)
    }
}

impl<'p> PodView<'p> {
    /// `None`: the pods are unknown (sources not ready).
    pub fn new(pods: Option<&'p [Pod]>) -> Self {
        PodView { pods }
    }

    pub fn sources_ready(&self) -> bool {
        self.pods.is_some()
    }

    /// A uid the kubelet does not know: removable once synced.
    fn unknown(&self) -> Fate {
        Fate {
            content: self.sources_ready(),
            runtime: self.sources_ready(),
        }
    }
}

/// The pod uids one pass meets (the listed pods' first, then the sandboxes', containers' and
/// log directories' in any order), numbered together ([`Interner`]): a pass groups and judges
/// by pod number, and a uid no listed pod has still gets a number, so its containers group
/// together.
pub(crate) struct PodUids<'p> {
    view: PodView<'p>,
    uids: Interner,
}

impl<'p> PodUids<'p> {
    /// Room for `more` uids besides the listed pods'.
    pub(crate) fn new(view: PodView<'p>, more: usize) -> Result<Self, Error> {
        let pods = view.pods.unwrap_or_default();
        let mut uids = Interner::with_capacity(pods.len().saturating_add(more))?;
        for p in fetched(pods, |p| [p.uid.as_str()]) {
            uids.push(&p.uid);
        }
        Ok(PodUids { view, uids })
    }

    /// Adds a uid met; its number comes from [`PodNumbers::of`].
    pub(crate) fn push(&mut self, uid: &str) -> UidRef {
        // Fewer than `u32::MAX` occurrences: the interner refuses more.
        UidRef(u32::try_from(self.uids.push(uid)).unwrap_or(u32::MAX))
    }

    pub(crate) fn finish(self) -> PodNumbers {
        let uids = self.uids.finish();
        let mut fates = vec![self.view.unknown(); uids.distinct()];
        // A uid listed twice: the last listing wins.
        for (k, p) in self.view.pods.unwrap_or_default().iter().enumerate() {
            fates[uids.number(k)] = Fate {
                content: p.evicted || (p.deleted && p.terminated),
                runtime: p.terminated,
            };
        }
        PodNumbers {
            sources_ready: self.view.sources_ready(),
            uids,
            fates,
        }
    }
}

/// A uid added to [`PodUids`], to be numbered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UidRef(u32);

/// Dense numbers for the pod uids of one pass, and each number's [`Fate`].
pub(crate) struct PodNumbers {
    sources_ready: bool,
    uids: Interned,
    fates: Vec<Fate>,
}

impl PodNumbers {
    pub(crate) fn of(&self, uid: UidRef) -> usize {
        self.uids.number(uid.0 as usize)
    }

    /// How many numbers were given out.
    pub(crate) fn len(&self) -> usize {
        self.fates.len()
    }

    pub(crate) fn fate(&self, number: usize) -> Fate {
        self.fates[number]
    }
}

/// Why a container is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContainerReason {
    /// Its pod was deleted (or, with `evict_non_deleted_pods`, terminated).
    DeletedPod,
    /// More dead containers of this (pod, name) than MaxPerPodContainer.
    MaxPerPodContainer,
    /// More dead containers on the node than MaxContainers.
    MaxContainers,
}

/// One container the plan removes. Its strings are borrowed from the snapshot: a plan over
/// 100,000 containers copies none of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRemoval<'a> {
    pub id: &'a str,
    pub pod_uid: &'a str,
    pub name: &'a str,
    /// The image it was created from: kept if removing the container fails.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub image_id: &'a str,
    pub created_at: Timestamp,
    /// In `unknown` state: stopped (StopContainer) first; if that fails it is skipped.
    pub stop_first: bool,
    pub reason: ContainerReason,
}

/// Why a sandbox is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxReason {
    /// Its pod was deleted.
    DeletedPod,
    /// An older, inactive sandbox of a pod that has a newer one.
    Superseded,
}

/// One sandbox the plan removes (StopPodSandbox, then RemovePodSandbox), borrowed from the
/// snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxRemoval<'a> {
    pub id: &'a str,
    pub pod_uid: &'a str,
    pub created_at: Timestamp,
    pub reason: SandboxReason,
}

/// One pod log directory the plan removes, borrowed from the snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogDirRemoval<'a> {
    pub name: &'a str,
    pub pod_uid: &'a str,
}

/// A container or sandbox as the eviction sorts and removes it: its creation time and its
/// index in the snapshot's list, in 16 bytes. Grouping and sorting move these records around
/// tens of megabytes on a large node, and their size is what that costs: the id is not
/// carried, only read through the index when two creation times tie (nanosecond times
/// seldom do).
#[derive(Clone, Copy, Debug)]
struct Aged {
    second: i64,
    /// Of the same sign as `second` (jiff's), so that (second, nanosecond) orders as time.
    nanosecond: i32,
    i: u32,
}

impl Aged {
    /// `i` is below `u32::MAX`: every list a pass reads was counted into an [`Interner`],
    /// which refuses more.
    fn new(created_at: Timestamp, i: usize) -> Self {
        Aged {
            second: created_at.as_second(),
            nanosecond: created_at.subsec_nanosecond(),
            i: u32::try_from(i).unwrap_or(u32::MAX),
        }
    }

    fn i(self) -> usize {
        self.i as usize
    }

    /// The removal order: created first, removed first; ties by id (`id` of a list index),
    /// so that plans are deterministic. Upstream's `byCreated` is its reverse.
    fn age_order<'a>(self, other: Self, id: impl Fn(usize) -> &'a str) -> std::cmp::Ordering {
        (self.second, self.nanosecond)
            .cmp(&(other.second, other.nanosecond))
            .then_with(|| id(self.i()).cmp(id(other.i())))
    }
}

/// Items grouped by a key in one flat array, so that grouping 100,000 containers allocates
/// two vectors instead of one per group. The items themselves are moved into place (not
/// indices to them), so that everything after grouping reads memory in order.
struct Groups<K, T> {
    /// Per group: its key and its range in `items`.
    groups: Vec<(K, std::ops::Range<usize>)>,
    items: Vec<T>,
}

impl<T: Copy> Groups<usize, T> {
    /// Groups items by a dense key (below `keys`, like a pod number) with a counting sort:
    /// no hashing, two linear passes, the first over the keys alone (`key_of` is iterated
    /// twice; it and `items` go in step). Groups come in key order, items in their order.
    /// No list of pairs is made: over 400,000 containers that would be tens of megabytes
    /// of fresh memory.
    fn dense(
        key_of: impl Iterator<Item = usize> + Clone,
        items: impl Iterator<Item = T>,
        keys: usize,
    ) -> Self {
        let mut start = vec![0usize; keys + 1];
        for key in key_of.clone() {
            start[key + 1] += 1;
        }
        for key in 0..keys {
            start[key + 1] += start[key];
        }
        let mut next = start.clone();
        let mut pairs = key_of.zip(items).peekable();
        // Every slot is overwritten: the counts made room for exactly the items.
        let mut grouped = match pairs.peek() {
            Some(&(_, fill)) => vec![fill; start[keys]],
            None => Vec::new(),
        };
        for (key, item) in pairs {
            grouped[next[key]] = item;
            next[key] += 1;
        }
        Groups {
            groups: (0..keys)
                .filter(|&key| start[key] < start[key + 1])
                .map(|key| (key, start[key]..start[key + 1]))
                .collect(),
            items: grouped,
        }
    }
}

impl Groups<(usize, u32), (u32, Aged)> {
    /// Evict units: the collected `(name, container)`s grouped by pod number (dense), then by
    /// name number within each pod, in place.
    fn units(members: &[Member], numbers: &PodNumbers) -> Self {
        let mut by_pod = Groups::dense(
            members.iter().map(|m| numbers.of(m.uid)),
            members.iter().map(|m| (m.name, m.age)),
            numbers.len(),
        );
        let mut groups = Vec::with_capacity(by_pod.groups.len());
        for (pod, range) in by_pod.groups {
            let of_pod = &mut by_pod.items[range.clone()];
            of_pod.sort_unstable_by_key(|&(name, _)| name);
            let mut start = range.start;
            for unit in of_pod.chunk_by(|a, b| a.0 == b.0) {
                groups.push(((pod, unit[0].0), start..start + unit.len()));
                start += unit.len();
            }
        }
        Groups {
            groups,
            items: by_pod.items,
        }
    }
}

/// Upstream `removeOldestN` over one evict unit (all kept so far): sorts newest first only
/// when something is kept, and removes from the end, assuming the removals succeed. Returns
/// how many are kept.
fn remove_oldest_n(
    unit: &mut [(u32, Aged)],
    to_remove: usize,
    reason: ContainerReason,
    containers: &[Container],
    out: &mut Vec<(Aged, ContainerReason)>,
) -> usize {
    let keep = unit.len().saturating_sub(to_remove);
    if keep > 0 {
        unit.sort_unstable_by(|a, b| b.1.age_order(a.1, |i| &containers[i].id));
    }
    out.extend(unit[keep..].iter().map(|&(_, c)| (c, reason)));
    keep
}

/// Every unit's kept part down to `max`.
fn enforce_per_unit(
    units: &mut Groups<(usize, u32), (u32, Aged)>,
    kept: &mut [usize],
    max: usize,
    reason: ContainerReason,
    containers: &[Container],
    out: &mut Vec<(Aged, ContainerReason)>,
) {
    for ((_, range), kept) in units.groups.iter().zip(kept) {
        if *kept > max {
            let unit = &mut units.items[range.start..range.start + *kept];
            *kept = remove_oldest_n(unit, *kept - max, reason, containers, out);
        }
    }
}

/// Upstream `evictContainers`: dead containers (not running) created more than MinAge ago,
/// grouped into evict units (pod uid, container name); all of a deleted pod's go; then
/// MaxPerPodContainer per unit; then, over MaxContainers, first an even share per unit
/// (`MaxContainers / units`, at least 1) and then the oldest across the node.
pub fn plan_containers<'a>(
    policy: &ContainerGcPolicy,
    containers: &'a [Container],
    pods: PodView<'_>,
    now: Timestamp,
    evict_non_deleted_pods: bool,
) -> Result<Vec<ContainerRemoval<'a>>, Error> {
    let mut uids = PodUids::new(pods, containers.len())?;
    let mut units = Units::new(policy, now, containers);
    for (i, c) in containers.iter().enumerate() {
        units.add(i, c, &mut uids);
    }
    Ok(
        evict_units(policy, units, &uids.finish(), evict_non_deleted_pods)
            .into_iter()
            .map(|(i, reason)| container_removal(&containers[i], reason))
            .collect(),
    )
}

/// A removal naming the container by the snapshot's strings.
pub(crate) fn container_removal(c: &Container, reason: ContainerReason) -> ContainerRemoval<'_> {
    ContainerRemoval {
        id: &c.id,
        pod_uid: c.pod_uid.as_deref().unwrap_or_default(),
        name: &c.name,
        image_id: &c.image_id,
        created_at: c.created_at,
        stop_first: c.state == ContainerState::Unknown,
        reason,
    }
}

/// The evict units (pod uid, container name) of one pass, collected container by container in
/// list order. Names are numbered in a small map (a node runs few distinct container names);
/// uids go to [`PodUids`].
pub(crate) struct Units<'c> {
    /// Containers created after this are too young (MinAge); `None`: all are.
    newest_gc_time: Option<Timestamp>,
    names: HashMap<&'c str, u32>,
    /// Every collectable container.
    members: Vec<Member>,
    /// The containers visited, whose ids break ties of creation time.
    containers: &'c [Container],
}

/// A collectable container, in 24 bytes: a large node has hundreds of thousands.
#[derive(Clone, Copy, Debug)]
struct Member {
    uid: UidRef,
    /// Its name's number.
    name: u32,
    age: Aged,
}

impl<'c> Units<'c> {
    /// Units over `containers`, which [`Units::add`] then visits.
    pub(crate) fn new(
        policy: &ContainerGcPolicy,
        now: Timestamp,
        containers: &'c [Container],
    ) -> Self {
        Units {
            // A MinAge beyond the time range keeps everything.
            newest_gc_time: SignedDuration::try_from(policy.min_age)
                .ok()
                .and_then(|d| now.checked_sub(d).ok()),
            names: HashMap::default(),
            members: Vec::with_capacity(containers.len()),
            containers,
        }
    }

    /// Files container `i` (`c`, as the caller read it) under its unit if it is dead, old
    /// enough and the kubelet's.
    pub(crate) fn add(&mut self, i: usize, c: &'c Container, uids: &mut PodUids<'_>) {
        if c.state == ContainerState::Running
            || self.newest_gc_time.is_none_or(|t| c.created_at > t)
        {
            return;
        }
        let Some(uid) = c.pod_uid.as_deref() else {
            return;
        };
        let uid = uids.push(uid);
        // Fewer names than containers, which are fewer than `u32::MAX` (see [`Aged::new`]).
        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let name = *self.names.entry(&c.name).or_insert(next);
        self.members.push(Member {
            uid,
            name,
            age: Aged::new(c.created_at, i),
        });
    }
}

/// [`plan_containers`] by index into `containers`, oldest first, over the units collected:
/// the whole pass works on indices and numbers, and copies none of the containers' strings.
pub(crate) fn evict_units(
    policy: &ContainerGcPolicy,
    units: Units<'_>,
    numbers: &PodNumbers,
    evict_non_deleted_pods: bool,
) -> Vec<(usize, ContainerReason)> {
    let containers = units.containers;
    let mut units = Groups::units(&units.members, numbers);
    let mut kept: Vec<usize> = units.groups.iter().map(|(_, r)| r.len()).collect();
    let mut out = Vec::with_capacity(units.items.len());
    // Units of deleted pods are gone, not emptied: they no longer count as evict units.
    let mut live_units = units.groups.len();
    if numbers.sources_ready {
        for (((pod, _), range), kept) in units.groups.iter().zip(&mut kept) {
            if numbers.fate(*pod).gone(evict_non_deleted_pods) {
                out.extend(
                    units.items[range.clone()]
                        .iter()
                        .map(|&(_, c)| (c, ContainerReason::DeletedPod)),
                );
                *kept = 0;
                live_units -= 1;
            }
        }
    }
    if let Ok(max) = usize::try_from(policy.max_per_pod_container) {
        enforce_per_unit(
            &mut units,
            &mut kept,
            max,
            ContainerReason::MaxPerPodContainer,
            containers,
            &mut out,
        );
    }
    if let Ok(max) = usize::try_from(policy.max_containers) {
        let total: usize = kept.iter().sum();
        if total > max {
            // Units emptied above still count, as upstream's NumEvictUnits.
            let per_unit = (max / live_units.max(1)).max(1);
            enforce_per_unit(
                &mut units,
                &mut kept,
                per_unit,
                ContainerReason::MaxContainers,
                containers,
                &mut out,
            );
            let total: usize = kept.iter().sum();
            if total > max {
                let mut flat: Vec<(u32, Aged)> = units
                    .groups
                    .iter()
                    .zip(&kept)
                    .flat_map(|((_, r), &k)| units.items[r.start..r.start + k].iter().copied())
                    .collect();
                remove_oldest_n(
                    &mut flat,
                    total - max,
                    ContainerReason::MaxContainers,
                    containers,
                    &mut out,
                );
            }
        }
    }
    // The plan lists removals oldest first; ids are unique, so the order is total.
    out.sort_unstable_by(|a, b| a.0.age_order(b.0, |i| &containers[i].id));
    out.into_iter().map(|(c, reason)| (c.i(), reason)).collect()
}

/// Upstream `evictSandboxes` (MinAge does not apply): a sandbox is active when READY or still
/// referenced by a container (`containers`: those left after container GC). A deleted pod
/// loses every inactive sandbox; an existing pod keeps its newest and loses the older
/// inactive ones. Sandbox ids must be present and unique.
pub fn plan_sandboxes<'a>(
    sandboxes: &'a [Sandbox],
    containers: impl IntoIterator<Item = &'a Container>,
    pods: PodView<'_>,
    evict_non_deleted_pods: bool,
) -> Result<Vec<SandboxRemoval<'a>>, Error> {
    let refs: Vec<&str> = containers
        .into_iter()
        .map(|c| c.sandbox_id.as_str())
        .collect();
    let mut uids = PodUids::new(pods, sandboxes.len())?;
    let mut index = SandboxRefs::new(sandboxes, &mut uids, refs.len())?;
    for id in refs {
        index.refer(id);
    }
    let index = index.finish(sandboxes)?;
    let referenced = index.referenced(|_| true);
    Ok(evict_sandboxes(
        sandboxes,
        &index,
        &referenced,
        &uids.finish(),
        evict_non_deleted_pods,
    ))
}

/// The sandboxes of one pass and the containers' references to them, collected as each is
/// read: sandbox ids and the ids containers name are numbered together ([`Interner`]), which
/// also checks the sandboxes' ids unique.
pub(crate) struct SandboxRefs {
    ids: Interner,
    sandboxes: usize,
    /// Each sandbox's pod uid.
    uids: Vec<UidRef>,
}

impl SandboxRefs {
    /// Reads the sandboxes; `containers` is about how many references will follow.
    pub(crate) fn new(
        sandboxes: &[Sandbox],
        pod_uids: &mut PodUids<'_>,
        containers: usize,
    ) -> Result<Self, Error> {
        let mut ids = Interner::with_capacity(sandboxes.len().saturating_add(containers))?;
        let mut uids = Vec::with_capacity(sandboxes.len());
        for (i, s) in fetched(sandboxes, |s| [s.id.as_str(), &s.pod_uid]).enumerate() {
            if s.id.is_empty() {
                return Err(empty_id("sandboxes", i));
            }
            ids.push(&s.id);
            uids.push(pod_uids.push(&s.pod_uid));
        }
        Ok(SandboxRefs {
            ids,
            sandboxes: sandboxes.len(),
            uids,
        })
    }

    /// Adds the sandbox id of the next container (in container order, from the first).
    pub(crate) fn refer(&mut self, sandbox_id: &str) {
        self.ids.push(sandbox_id);
    }

    /// Numbers the ids (of `sandboxes`, those read by [`SandboxRefs::new`]); a sandbox id
    /// listed twice is refused.
    pub(crate) fn finish(self, sandboxes: &[Sandbox]) -> Result<SandboxIndex, Error> {
        let ids = self.ids.finish();
        if let Some(k) = ids.first_repeat(self.sandboxes) {
            return Err(repeated_id("sandboxes", k, &sandboxes[k].id));
        }
        Ok(SandboxIndex {
            ids,
            sandboxes: self.sandboxes,
            uids: self.uids,
        })
    }
}

/// The sandboxes of one pass, numbered with the containers' references to them. Its pod uid
/// references are to the [`PodUids`] that [`SandboxRefs::new`] was given.
pub(crate) struct SandboxIndex {
    ids: Interned,
    sandboxes: usize,
    uids: Vec<UidRef>,
}

impl SandboxIndex {
    /// Which sandboxes a referring container for which `holds(container index)` names: the
    /// active ones, besides READY.
    pub(crate) fn referenced(&self, holds: impl Fn(usize) -> bool) -> Vec<bool> {
        self.ids.listed_held(self.sandboxes, holds)
    }
}

/// [`plan_sandboxes`] with the referenced sandboxes marked by index.
pub(crate) fn evict_sandboxes<'a>(
    sandboxes: &'a [Sandbox],
    index: &SandboxIndex,
    referenced: &[bool],
    numbers: &PodNumbers,
    evict_non_deleted_pods: bool,
) -> Vec<SandboxRemoval<'a>> {
    // Each sandbox read in order: its pod, whether it is active, its age.
    let mut by_pod = Groups::dense(
        index.uids.iter().map(|&uid| numbers.of(uid)),
        sandboxes.iter().enumerate().map(|(j, s)| {
            let active = s.state == SandboxState::Ready || referenced[j];
            (active, Aged::new(s.created_at, j))
        }),
        numbers.len(),
    );
    let mut out = Vec::new();
    for (pod, range) in &by_pod.groups {
        let list = &mut by_pod.items[range.clone()];
        let (keep, reason) = if numbers.fate(*pod).gone(evict_non_deleted_pods) {
            (0, SandboxReason::DeletedPod)
        } else {
            (1, SandboxReason::Superseded)
        };
        if keep > 0 {
            list.sort_unstable_by(|a, b| b.1.age_order(a.1, |j| &sandboxes[j].id));
        }
        for &(active, sandbox) in list.iter().skip(keep) {
            if !active {
                out.push((sandbox, reason));
            }
        }
    }
    // Oldest first; ids are unique, so the order is total.
    out.sort_unstable_by(|a, b| a.0.age_order(b.0, |j| &sandboxes[j].id));
    out.into_iter()
        .map(|(sandbox, reason)| {
            let s = &sandboxes[sandbox.i()];
            SandboxRemoval {
                id: &s.id,
                pod_uid: &s.pod_uid,
                created_at: s.created_at,
                reason,
            }
        })
        .collect()
}

/// The pod uid of a pod log directory: the last `_`-separated field of
/// `NAMESPACE_NAME_UID`, or the whole name for legacy `UID` directories.
pub fn pod_uid_of_log_dir(name: &str) -> &str {
    name.rsplit('_').next().unwrap_or(name)
}

/// Upstream `evictPodLogsDirectories`: only once the pods are known, every directory of a pod
/// whose content may be removed.
pub fn plan_log_dirs<'a>(
    dirs: &'a [String],
    pods: PodView<'_>,
) -> Result<Vec<LogDirRemoval<'a>>, Error> {
    let mut uids = PodUids::new(pods, dirs.len())?;
    let refs = log_dir_uids(dirs, &mut uids);
    Ok(evict_log_dirs(dirs, &refs, &uids.finish()))
}

/// The pod uid of each log directory, added to `uids`.
pub(crate) fn log_dir_uids(dirs: &[String], uids: &mut PodUids<'_>) -> Vec<UidRef> {
    fetched(dirs, |name| [name.as_str()])
        .map(|name| uids.push(pod_uid_of_log_dir(name)))
        .collect()
}

/// [`plan_log_dirs`] with the directories' uids numbered.
pub(crate) fn evict_log_dirs<'a>(
    dirs: &'a [String],
    uids: &[UidRef],
    numbers: &PodNumbers,
) -> Vec<LogDirRemoval<'a>> {
    if !numbers.sources_ready {
        return Vec::new();
    }
    dirs.iter()
        .zip(uids)
        .filter(|&(_, &uid)| numbers.fate(numbers.of(uid)).content)
        .map(|(name, _)| LogDirRemoval {
            name,
            pod_uid: pod_uid_of_log_dir(name),
        })
        .collect()
}

#[cfg(test)]
mod tests;
