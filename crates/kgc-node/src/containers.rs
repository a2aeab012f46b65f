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

use crate::snapshot::{Container, ContainerState, Pod, Sandbox, SandboxState};

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

/// What the kubelet's pod workers say about pod uids (`pkg/kubelet/pod_workers.go`).
pub struct PodView<'a> {
    /// All config sources seen and pods synced. False: nothing counts as a deleted pod's.
    sources_ready: bool,
    pods: HashMap<&'a str, &'a Pod>,
}

impl<'a> PodView<'a> {
    /// `None`: the pods are unknown (sources not ready).
    pub fn new(pods: Option<&'a [Pod]>) -> Self {
        PodView {
            sources_ready: pods.is_some(),
            pods: pods
                .unwrap_or_default()
                .iter()
                .map(|p| (p.uid.as_str(), p))
                .collect(),
        }
    }

    pub fn sources_ready(&self) -> bool {
        self.sources_ready
    }

    /// `ShouldPodContentBeRemoved`: evicted, or deleted and terminated; a uid the kubelet does
    /// not know, once synced.
    pub fn content_removable(&self, uid: &str) -> bool {
        match self.pods.get(uid) {
            Some(p) => p.evicted || (p.deleted && p.terminated),
            None => self.sources_ready,
        }
    }

    /// `ShouldPodRuntimeBeRemoved`: terminated; a uid the kubelet does not know, once synced.
    pub fn runtime_removable(&self, uid: &str) -> bool {
        match self.pods.get(uid) {
            Some(p) => p.terminated,
            None => self.sources_ready,
        }
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

/// One container the plan removes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRemoval {
    pub id: String,
    pub pod_uid: String,
    pub name: String,
    /// The image it was created from: kept if removing the container fails.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_id: String,
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

/// One sandbox the plan removes (StopPodSandbox, then RemovePodSandbox).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxRemoval {
    pub id: String,
    pub pod_uid: String,
    pub created_at: Timestamp,
    pub reason: SandboxReason,
}

/// One pod log directory the plan removes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogDirRemoval {
    pub name: String,
    pub pod_uid: String,
}

/// Newest first, as upstream's `byCreated`; ties by id so that plans are deterministic.
fn newest_first(a: &Container, b: &Container) -> std::cmp::Ordering {
    b.created_at
        .cmp(&a.created_at)
        .then_with(|| b.id.cmp(&a.id))
}

/// Items grouped by a key in one flat array (a counting sort over group numbers), so that
/// grouping 100,000 containers allocates two vectors instead of one per group, and each
/// string key is hashed exactly once.
struct Groups<K> {
    /// Per group: its key and its range in `items`.
    groups: Vec<(K, std::ops::Range<usize>)>,
    items: Vec<usize>,
}

impl<K: Copy + Eq + std::hash::Hash> Groups<K> {
    /// Groups `items` (indices) by `key`, groups in order of first appearance.
    fn new(items: impl Iterator<Item = (K, usize)>) -> Self {
        let items = items.collect::<Vec<_>>();
        let mut number: HashMap<K, usize> =
            HashMap::with_capacity_and_hasher(items.len(), Default::default());
        let mut groups: Vec<(K, std::ops::Range<usize>)> = Vec::new();
        let mut of_item = Vec::with_capacity(items.len());
        for &(key, _) in &items {
            let g = *number.entry(key).or_insert_with(|| {
                groups.push((key, 0..0));
                groups.len() - 1
            });
            groups[g].1.end += 1;
            of_item.push(g);
        }
        let mut next = 0;
        for (_, range) in &mut groups {
            let len = range.end;
            *range = next..next;
            next += len;
        }
        let mut flat = vec![0; items.len()];
        for (&(_, item), &g) in items.iter().zip(&of_item) {
            let range = &mut groups[g].1;
            flat[range.end] = item;
            range.end += 1;
        }
        Groups {
            groups,
            items: flat,
        }
    }
}

/// Upstream `removeOldestN` over one evict unit (container indices, all kept so far): sorts
/// newest first only when something is kept, and removes from the end, assuming the removals
/// succeed. Returns how many are kept.
fn remove_oldest_n(
    containers: &[Container],
    unit: &mut [usize],
    to_remove: usize,
    reason: ContainerReason,
    out: &mut Vec<(usize, ContainerReason)>,
) -> usize {
    let keep = unit.len().saturating_sub(to_remove);
    if keep > 0 {
        unit.sort_unstable_by(|&a, &b| newest_first(&containers[a], &containers[b]));
    }
    out.extend(unit[keep..].iter().map(|&i| (i, reason)));
    keep
}

/// Every unit's kept part down to `max`.
fn enforce_per_unit(
    containers: &[Container],
    units: &mut Groups<(&str, &str)>,
    kept: &mut [usize],
    max: usize,
    reason: ContainerReason,
    out: &mut Vec<(usize, ContainerReason)>,
) {
    for ((_, range), kept) in units.groups.iter().zip(kept) {
        if *kept > max {
            let unit = &mut units.items[range.start..range.start + *kept];
            *kept = remove_oldest_n(containers, unit, *kept - max, reason, out);
        }
    }
}

/// Upstream `evictContainers`: dead containers (not running) created more than MinAge ago,
/// grouped into evict units (pod uid, container name); all of a deleted pod's go; then
/// MaxPerPodContainer per unit; then, over MaxContainers, first an even share per unit
/// (`MaxContainers / units`, at least 1) and then the oldest across the node.
pub fn plan_containers(
    policy: &ContainerGcPolicy,
    containers: &[Container],
    pods: &PodView<'_>,
    now: Timestamp,
    evict_non_deleted_pods: bool,
) -> Vec<ContainerRemoval> {
    evict_containers(policy, containers, pods, now, evict_non_deleted_pods)
        .into_iter()
        .map(|(i, reason)| container_removal(&containers[i], reason))
        .collect()
}

/// A removal naming the container, from the snapshot's strings.
pub(crate) fn container_removal(c: &Container, reason: ContainerReason) -> ContainerRemoval {
    ContainerRemoval {
        id: c.id.clone(),
        pod_uid: c.pod_uid.clone().unwrap_or_default(),
        name: c.name.clone(),
        image_id: c.image_id.clone(),
        created_at: c.created_at,
        stop_first: c.state == ContainerState::Unknown,
        reason,
    }
}

/// [`plan_containers`] by index into `containers`, oldest first: the whole pass works on
/// indices, so that it hashes each container's strings once and copies none of them.
pub(crate) fn evict_containers(
    policy: &ContainerGcPolicy,
    containers: &[Container],
    pods: &PodView<'_>,
    now: Timestamp,
    evict_non_deleted_pods: bool,
) -> Vec<(usize, ContainerReason)> {
    let newest_gc_time = SignedDuration::try_from(policy.min_age)
        .ok()
        .and_then(|d| now.checked_sub(d).ok());
    let mut units = Groups::new(containers.iter().enumerate().filter_map(|(i, c)| {
        if c.state == ContainerState::Running {
            return None;
        }
        // A MinAge beyond the time range keeps everything.
        if newest_gc_time.is_none_or(|t| c.created_at > t) {
            return None;
        }
        let pod_uid = c.pod_uid.as_deref()?;
        Some(((pod_uid, c.name.as_str()), i))
    }));
    let mut kept: Vec<usize> = units.groups.iter().map(|(_, r)| r.len()).collect();
    let mut out = Vec::with_capacity(containers.len() / 2);
    // Units of deleted pods are gone, not emptied: they no longer count as evict units.
    let mut live_units = units.groups.len();
    if pods.sources_ready() {
        for (((uid, _), range), kept) in units.groups.iter().zip(&mut kept) {
            if pods.content_removable(uid)
                || (evict_non_deleted_pods && pods.runtime_removable(uid))
            {
                out.extend(
                    units.items[range.clone()]
                        .iter()
                        .map(|&i| (i, ContainerReason::DeletedPod)),
                );
                *kept = 0;
                live_units -= 1;
            }
        }
    }
    if let Ok(max) = usize::try_from(policy.max_per_pod_container) {
        enforce_per_unit(
            containers,
            &mut units,
            &mut kept,
            max,
            ContainerReason::MaxPerPodContainer,
            &mut out,
        );
    }
    if let Ok(max) = usize::try_from(policy.max_containers) {
        let total: usize = kept.iter().sum();
        if total > max {
            // Units emptied above still count, as upstream's NumEvictUnits.
            let per_unit = (max / live_units.max(1)).max(1);
            enforce_per_unit(
                containers,
                &mut units,
                &mut kept,
                per_unit,
                ContainerReason::MaxContainers,
                &mut out,
            );
            let total: usize = kept.iter().sum();
            if total > max {
                let mut flat: Vec<usize> = units
                    .groups
                    .iter()
                    .zip(&kept)
                    .flat_map(|((_, r), &k)| units.items[r.start..r.start + k].iter().copied())
                    .collect();
                remove_oldest_n(
                    containers,
                    &mut flat,
                    total - max,
                    ContainerReason::MaxContainers,
                    &mut out,
                );
            }
        }
    }
    // Units are hashed (planning stays linear); the plan lists removals oldest first. The
    // keys are copied out so that the sort does not chase each index into the snapshot.
    let mut keyed: Vec<_> = out
        .into_iter()
        .map(|(i, reason)| {
            let c = &containers[i];
            ((c.created_at, c.id.as_str()), i, reason)
        })
        .collect();
    // Ids are unique, so the order is total.
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    keyed
        .into_iter()
        .map(|(_, i, reason)| (i, reason))
        .collect()
}

/// Upstream `evictSandboxes` (MinAge does not apply): a sandbox is active when READY or still
/// referenced by a container (`containers`: those left after container GC). A deleted pod
/// loses every inactive sandbox; an existing pod keeps its newest and loses the older
/// inactive ones.
pub fn plan_sandboxes<'a>(
    sandboxes: &'a [Sandbox],
    containers: impl IntoIterator<Item = &'a Container>,
    pods: &PodView<'_>,
    evict_non_deleted_pods: bool,
) -> Vec<SandboxRemoval> {
    let newest_first = |&a: &usize, &b: &usize| {
        let (a, b): (&Sandbox, &Sandbox) = (&sandboxes[a], &sandboxes[b]);
        b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id))
    };
    let mut by_pod = Groups::new(
        sandboxes
            .iter()
            .enumerate()
            .map(|(i, s)| (s.pod_uid.as_str(), i)),
    );
    // Candidates first (not READY, not a live pod's newest), then one pass over the
    // containers drops those still referenced: probing a small set of candidates is cheaper
    // than building a set of every container's sandbox id.
    let mut candidates: HashMap<&str, (usize, SandboxReason)> = HashMap::default();
    for (uid, range) in &by_pod.groups {
        let list = &mut by_pod.items[range.clone()];
        let deleted =
            pods.content_removable(uid) || (evict_non_deleted_pods && pods.runtime_removable(uid));
        let (keep, reason) = if deleted {
            (0, SandboxReason::DeletedPod)
        } else {
            (1, SandboxReason::Superseded)
        };
        if keep > 0 {
            list.sort_unstable_by(newest_first);
        }
        for &i in list.iter().skip(keep) {
            let s = &sandboxes[i];
            if s.state != SandboxState::Ready {
                candidates.insert(s.id.as_str(), (i, reason));
            }
        }
    }
    if !candidates.is_empty() {
        for c in containers {
            candidates.remove(c.sandbox_id.as_str());
        }
    }
    let mut out: Vec<(usize, SandboxReason)> = candidates.into_values().collect();
    // Oldest first; ids are unique, so the order is total.
    out.sort_unstable_by(|a, b| newest_first(&b.0, &a.0));
    out.into_iter()
        .map(|(i, reason)| {
            let s = &sandboxes[i];
            SandboxRemoval {
                id: s.id.clone(),
                pod_uid: s.pod_uid.clone(),
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
pub fn plan_log_dirs(dirs: &[String], pods: &PodView<'_>) -> Vec<LogDirRemoval> {
    if !pods.sources_ready() {
        return Vec::new();
    }
    dirs.iter()
        .filter_map(|name| {
            let uid = pod_uid_of_log_dir(name);
            pods.content_removable(uid).then(|| LogDirRemoval {
                name: name.clone(),
                pod_uid: uid.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
