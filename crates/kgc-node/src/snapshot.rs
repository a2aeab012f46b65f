//! A runtime snapshot: what the CRI reports about a node at one instant (images, containers,
//! sandboxes, image filesystem) plus what the kubelet would know (which pods exist, the pod log
//! directories). It is the only input of the policies, and the file format of
//! `kgc node snapshot` / `kgc node simulate` (JSON or YAML, camelCase like Kubernetes).

use std::hash::BuildHasher;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::containers::{PodUids, PodView, SandboxRefs};
use crate::hash::{FxBuild, FxHashSet};

/// One observation of a node's container runtime.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Snapshot {
    /// When the snapshot was taken; the policies' "now".
    pub time: Timestamp,
    /// The image filesystem's capacity and free space (statfs of its mountpoint, since CRI's
    /// ImageFsInfo reports only used bytes). Absent: space-based image GC cannot run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_fs: Option<FsStats>,
    #[serde(default)]
    pub images: Vec<Image>,
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default)]
    pub sandboxes: Vec<Sandbox>,
    /// The pods the kubelet knows for this node. Absent means "sources not ready": nothing is
    /// treated as belonging to a deleted pod, exactly as the kubelet before its first sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<Vec<Pod>>,
    /// Entry names in the pod logs directory (`/var/log/pods`): `NAMESPACE_NAME_UID` or `UID`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_log_dirs: Vec<String>,
}

/// Capacity and free space of the filesystem holding images, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FsStats {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mountpoint: String,
    pub capacity_bytes: u64,
    pub available_bytes: u64,
}

/// An image as `ListImages` reports it, plus optional history (from a state file, or a
/// hand-written snapshot) that the kubelet would otherwise keep in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// The runtime's image id (for containerd, the config digest `sha256:…`).
    pub id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repo_tags: Vec<String>,
    /// Size in bytes. CRI requires > 0; an image without one is never removed to free space,
    /// because the plan could not count what removing it frees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The runtime recommends keeping this image (e.g. the sandbox image): never removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// First time the image was seen. Absent: the snapshot time (so MinAge protects it).
    /// In `kgc node simulate`, a time after the snapshot's is when the image gets pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_detected: Option<Timestamp>,
    /// Last time a container used the image. Absent: never seen in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<Timestamp>,
}

/// Container states, as CRI's `ContainerState`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    Created,
    Running,
    #[default]
    Exited,
    Unknown,
}

/// A container as `ListContainers` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Container {
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox_id: String,
    /// `metadata.name`: the container's name in the pod spec.
    pub name: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// The `io.kubernetes.pod.uid` label. Absent: not a kubelet container, never collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// `image_id`: the image the container was created from (image GC's in-use key).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_id: String,
    #[serde(default)]
    pub state: ContainerState,
    pub created_at: Timestamp,
    /// Only for `kgc node simulate`: when the container exits (running until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
}

/// Sandbox states, as CRI's `PodSandboxState`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxState {
    Ready,
    #[default]
    NotReady,
}

/// A pod sandbox as `ListPodSandbox` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sandbox {
    pub id: String,
    /// `metadata.uid`.
    pub pod_uid: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    #[serde(default)]
    pub state: SandboxState,
    pub created_at: Timestamp,
}

/// What the kubelet's pod workers know about a pod (`pkg/kubelet/pod_workers.go`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pod {
    pub uid: String,
    /// All its containers have stopped and will not restart.
    #[serde(default)]
    pub terminated: bool,
    /// The pod was deleted from the API.
    #[serde(default)]
    pub deleted: bool,
    /// The pod was evicted.
    #[serde(default)]
    pub evicted: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Snapshot {
    /// Checks what serde cannot: ids present and unique, so that a plan never names an
    /// ambiguous object. A snapshot that fails this is refused as a whole.
    pub fn validate(&self) -> Result<(), Error> {
        self.validate_images()?;
        let mut hashes = Vec::with_capacity(self.containers.len());
        for (i, c) in self.containers.iter().enumerate() {
            hashes.push(id_hash("containers", i, &c.id)?);
        }
        check_unique("containers", hashes, |i| &self.containers[i].id)?;
        let mut no_pods = PodUids::new(PodView::new(None), self.sandboxes.len())?;
        SandboxRefs::new(&self.sandboxes, &mut no_pods, 0)?.finish(&self.sandboxes)?;
        Ok(())
    }

    /// Images may repeat (the same id listed per tag by some runtimes); the last one wins,
    /// as in the kubelet's record map. Only a missing id is refused.
    pub(crate) fn validate_images(&self) -> Result<(), Error> {
        match self.images.iter().position(|image| image.id.is_empty()) {
            Some(i) => Err(empty_id("images", i)),
            None => Ok(()),
        }
    }
}

pub(crate) fn empty_id(kind: &str, i: usize) -> Error {
    Error::Snapshot(format!("{kind}[{i}].id is empty"))
}

pub(crate) fn repeated_id(kind: &str, i: usize, id: &str) -> Error {
    Error::Snapshot(format!("{kind}[{i}].id {id:?} appears twice"))
}

/// The hash of `id`, the id of `kind[i]`, for [`check_unique`]; an empty id is refused.
pub(crate) fn id_hash(kind: &str, i: usize, id: &str) -> Result<u64, Error> {
    if id.is_empty() {
        return Err(empty_id(kind, i));
    }
    Ok(FxBuild::default().hash_one(id))
}

/// Checks that the ids of a `kind` list are unique, given their hashes in list order (taken
/// while each id was read for other reasons). Sorting 400,000 hashes streams through a few
/// megabytes; a set of the ids would probe a table of that size at random once per id. Equal
/// hashes (a repeated id, or by chance) are settled by reading the ids again and comparing
/// them. The error names the first id, in list order, that repeats an earlier one.
pub(crate) fn check_unique<'a>(
    kind: &str,
    mut hashes: Vec<u64>,
    id_at: impl Fn(usize) -> &'a str,
) -> Result<(), Error> {
    let n = hashes.len();
    hashes.sort_unstable();
    let shared: FxHashSet<u64> = hashes
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    if shared.is_empty() {
        return Ok(());
    }
    drop(hashes);
    let hasher = FxBuild::default();
    let mut seen = FxHashSet::default();
    for i in 0..n {
        let id = id_at(i);
        if shared.contains(&hasher.hash_one(id)) && !seen.insert(id) {
            return Err(repeated_id(kind, i, id));
        }
    }
    Ok(())
}
