//! The kubelet's container, sandbox and pod-log garbage collection, as pure functions.
//!
//! Faithful to kubernetes/kubernetes `pkg/kubelet/kuberuntime/kuberuntime_gc.go`
//! (`evictContainers`, `evictSandboxes`, `evictPodLogsDirectories`) and the policy of
//! `pkg/kubelet/container/container_gc.go`. One deliberate difference: a container without the
//! `io.kubernetes.pod.uid` label is not the kubelet's and is never collected (upstream would
//! file it under pod uid "" and, once synced, treat it as a deleted pod's).

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
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

/// A dead container in an evict unit (`containerGCInfo`).
struct GcInfo<'a> {
    container: &'a Container,
    pod_uid: &'a str,
}

/// Newest first, as upstream's `byCreated`; ties by id so that plans are deterministic.
fn newest_first(a: &GcInfo<'_>, b: &GcInfo<'_>) -> std::cmp::Ordering {
    b.container
        .created_at
        .cmp(&a.container.created_at)
        .then_with(|| b.container.id.cmp(&a.container.id))
}

/// Upstream `removeOldestN`: sorts newest first only when something is kept, removes from the
/// end, and assumes the removals succeed.
fn remove_oldest_n<'a>(
    mut unit: Vec<GcInfo<'a>>,
    to_remove: usize,
    reason: ContainerReason,
    out: &mut Vec<ContainerRemoval>,
) -> Vec<GcInfo<'a>> {
    let keep = unit.len().saturating_sub(to_remove);
    if keep > 0 {
        unit.sort_by(newest_first);
    }
    for info in unit.drain(keep..).rev() {
        out.push(ContainerRemoval {
            id: info.container.id.clone(),
            pod_uid: info.pod_uid.to_string(),
            name: info.container.name.clone(),
            image_id: info.container.image_id.clone(),
            created_at: info.container.created_at,
            stop_first: info.container.state == ContainerState::Unknown,
            reason,
        });
    }
    unit
}

fn enforce_per_unit(
    units: &mut HashMap<(&str, &str), Vec<GcInfo<'_>>>,
    max: usize,
    reason: ContainerReason,
    out: &mut Vec<ContainerRemoval>,
) {
    for unit in units.values_mut() {
        if unit.len() > max {
            let n = unit.len() - max;
            *unit = remove_oldest_n(std::mem::take(unit), n, reason, out);
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
    let newest_gc_time = SignedDuration::try_from(policy.min_age)
        .ok()
        .and_then(|d| now.checked_sub(d).ok());
    let mut units: HashMap<(&str, &str), Vec<GcInfo<'_>>> =
        HashMap::with_capacity_and_hasher(containers.len(), Default::default());
    for c in containers {
        if c.state == ContainerState::Running {
            continue;
        }
        // A MinAge beyond the time range keeps everything.
        if newest_gc_time.is_none_or(|t| c.created_at > t) {
            continue;
        }
        let Some(pod_uid) = c.pod_uid.as_deref() else {
            continue;
        };
        units
            .entry((pod_uid, c.name.as_str()))
            .or_default()
            .push(GcInfo {
                container: c,
                pod_uid,
            });
    }
    let mut out = Vec::with_capacity(containers.len() / 2);
    if pods.sources_ready() {
        units.retain(|(uid, _), unit| {
            let removable = pods.content_removable(uid)
                || (evict_non_deleted_pods && pods.runtime_removable(uid));
            if removable {
                let n = unit.len();
                remove_oldest_n(
                    std::mem::take(unit),
                    n,
                    ContainerReason::DeletedPod,
                    &mut out,
                );
            }
            !removable
        });
    }
    if let Ok(max) = usize::try_from(policy.max_per_pod_container) {
        enforce_per_unit(
            &mut units,
            max,
            ContainerReason::MaxPerPodContainer,
            &mut out,
        );
    }
    if let Ok(max) = usize::try_from(policy.max_containers) {
        let total: usize = units.values().map(Vec::len).sum();
        if total > max {
            // Units emptied above still count, as upstream's NumEvictUnits.
            let per_unit = (max / units.len().max(1)).max(1);
            enforce_per_unit(
                &mut units,
                per_unit,
                ContainerReason::MaxContainers,
                &mut out,
            );
            let total: usize = units.values().map(Vec::len).sum();
            if total > max {
                let flat: Vec<GcInfo<'_>> =
                    std::mem::take(&mut units).into_values().flatten().collect();
                remove_oldest_n(flat, total - max, ContainerReason::MaxContainers, &mut out);
            }
        }
    }
    // Units are hashed (planning stays linear); the plan lists removals oldest first.
    out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    out
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
    let containers = containers.into_iter();
    let mut referenced: HashSet<&str> =
        HashSet::with_capacity_and_hasher(containers.size_hint().0, Default::default());
    referenced.extend(containers.map(|c| c.sandbox_id.as_str()));
    let mut by_pod: HashMap<&str, Vec<&Sandbox>> =
        HashMap::with_capacity_and_hasher(sandboxes.len(), Default::default());
    for s in sandboxes {
        by_pod.entry(s.pod_uid.as_str()).or_default().push(s);
    }
    let mut out = Vec::new();
    for (uid, mut list) in by_pod {
        let deleted =
            pods.content_removable(uid) || (evict_non_deleted_pods && pods.runtime_removable(uid));
        let (keep, reason) = if deleted {
            (0, SandboxReason::DeletedPod)
        } else {
            (1, SandboxReason::Superseded)
        };
        if keep > 0 {
            list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        }
        for s in list.iter().skip(keep).rev() {
            let active = s.state == SandboxState::Ready || referenced.contains(s.id.as_str());
            if !active {
                out.push(SandboxRemoval {
                    id: s.id.clone(),
                    pod_uid: uid.to_string(),
                    created_at: s.created_at,
                    reason,
                });
            }
        }
    }
    out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    out
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
