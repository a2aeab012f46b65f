//! A runtime snapshot: what the CRI reports about a node at one instant (images, containers,
//! sandboxes, image filesystem) plus what the kubelet would know (which pods exist, the pod log
//! directories). It is the only input of the policies, and the file format of
//! `kgc node snapshot` / `kgc node simulate` (JSON or YAML, camelCase like Kubernetes).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Error;
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
        let mut seen =
            FxHashSet::with_capacity_and_hasher(self.containers.len(), Default::default());
        for (i, c) in self.containers.iter().enumerate() {
            check_id("containers", i, &c.id, &mut seen)?;
        }
        IdIndex::new("sandboxes", self.sandboxes.iter().map(|s| s.id.as_str()))?;
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

fn empty_id(kind: &str, i: usize) -> Error {
    Error::Snapshot(format!("{kind}[{i}].id is empty"))
}

fn repeated_id(kind: &str, i: usize, id: &str) -> Error {
    Error::Snapshot(format!("{kind}[{i}].id {id:?} appears twice"))
}

/// Checks that `id`, the id of `kind[i]`, is present and not in `seen` (then added).
pub(crate) fn check_id<'a>(
    kind: &str,
    i: usize,
    id: &'a str,
    seen: &mut FxHashSet<&'a str>,
) -> Result<(), Error> {
    if id.is_empty() {
        return Err(empty_id(kind, i));
    }
    if !seen.insert(id) {
        return Err(repeated_id(kind, i, id));
    }
    Ok(())
}

/// Ids numbered in the order first met (for a list checked unique: by index), copied into
/// one buffer. Each id of a snapshot is its own allocation, scattered over the heap; a lookup
/// that finds an id must compare it, and over 100,000 ids those reads miss the cache. Packed,
/// the ids and the table of their numbers take a few megabytes, close together.
pub(crate) struct IdIndex {
    bytes: String,
    /// Where each id ends in `bytes` (it starts where the previous one ends).
    ends: Vec<usize>,
    table: HashTable<usize>,
}

impl IdIndex {
    /// An empty index with room for `n` ids.
    pub(crate) fn with_capacity(n: usize) -> Self {
        IdIndex {
            bytes: String::new(),
            ends: Vec::with_capacity(n),
            table: HashTable::with_capacity(n),
        }
    }

    /// Checks that the ids of a `kind` list are present and unique.
    pub(crate) fn new<'a>(
        kind: &str,
        ids: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<Self, Error> {
        let mut index = IdIndex::with_capacity(ids.len());
        for (i, id) in ids.enumerate() {
            if id.is_empty() {
                return Err(empty_id(kind, i));
            }
            if index.insert(id).is_err() {
                return Err(repeated_id(kind, i, id));
            }
        }
        Ok(index)
    }

    /// Numbers `id` (`Ok`: the number of ids before it), or `Err` with its number if it is
    /// there already.
    pub(crate) fn insert(&mut self, id: &str) -> Result<usize, usize> {
        let hasher = FxBuild::default();
        let IdIndex { bytes, ends, table } = self;
        match table.entry(
            hasher.hash_one(id),
            |&j| id_at(bytes, ends, j) == id,
            |&j| hasher.hash_one(id_at(bytes, ends, j)),
        ) {
            hashbrown::hash_table::Entry::Occupied(e) => Err(*e.get()),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let n = ends.len();
                e.insert(n);
                bytes.push_str(id);
                ends.push(bytes.len());
                Ok(n)
            }
        }
    }

    /// The number of `id`.
    pub(crate) fn get(&self, id: &str) -> Option<usize> {
        self.table
            .find(FxBuild::default().hash_one(id), |&j| {
                id_at(&self.bytes, &self.ends, j) == id
            })
            .copied()
    }
}

/// Id number `j` of an [`IdIndex`] buffer.
fn id_at<'b>(bytes: &'b str, ends: &[usize], j: usize) -> &'b str {
    let start = j.checked_sub(1).map_or(0, |k| ends[k]);
    &bytes[start..ends[j]]
}
