//! One GC pass over a snapshot, in the kubelet's order: dead containers, then sandboxes (with
//! the containers that survive), then pod log directories, then images (in use = referenced by
//! a surviving container, so a removed container's image becomes eligible in the same pass).

use crate::hash::FxHashSet as HashSet;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::containers::{
    ContainerGcPolicy, ContainerRemoval, LogDirRemoval, PodUids, PodView, SandboxRefs,
    SandboxRemoval, Units, container_removal, evict_log_dirs, evict_sandboxes, evict_units,
    log_dir_uids,
};
use crate::fetch::fetched;
use crate::images::{ImageGcPolicy, ImagePlan, ImageRecords, plan_images};
use crate::intern::Interner;
use crate::snapshot::{Container, Snapshot, check_unique, id_hash};

/// The whole node GC policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub images: ImageGcPolicy,
    pub containers: ContainerGcPolicy,
    /// The eviction manager's mode (`DeleteAllUnusedContainers`): containers and sandboxes of
    /// terminated pods go too, not only deleted pods'.
    pub evict_non_deleted_pods: bool,
}

/// What persists between passes: the kubelet's in-memory image records and the time its GC
/// loop started (MaxAge's warm-up). kgc can keep it in a state file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GcState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_gc: Option<Timestamp>,
    #[serde(default)]
    pub images: ImageRecords,
}

/// Everything one pass removes, in execution order. Containers, sandboxes and log directories
/// are named by the snapshot's strings (borrowed, not copied).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan<'a> {
    pub time: Timestamp,
    pub containers: Vec<ContainerRemoval<'a>>,
    pub sandboxes: Vec<SandboxRemoval<'a>>,
    pub pod_log_dirs: Vec<LogDirRemoval<'a>>,
    pub images: ImagePlan,
    /// Doubts that made the plan hold back (objects named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Plan<'_> {
    /// Bytes the planned image removals free, by the sizes the runtime reported.
    pub fn image_bytes(&self) -> u64 {
        self.images
            .removals
            .iter()
            .filter_map(|r| r.size)
            .fold(0u64, u64::saturating_add)
    }

    pub fn is_empty(&self) -> bool {
        self.containers.is_empty()
            && self.sandboxes.is_empty()
            && self.pod_log_dirs.is_empty()
            && self.images.removals.is_empty()
    }
}

/// Plans one pass. Pure: the snapshot's `time` is "now"; `state` carries image history in and
/// out (removed images are forgotten, as after a successful RemoveImage).
///
/// The lists are read in order, never looked up one item at a time: a container's id is hashed
/// (uniqueness, by sorting the hashes), its name numbered in a small map, and its pod uid,
/// sandbox id and image id numbered together with the listed pods', sandboxes' and images'
/// ([`crate::intern`]), so that every later step works on numbers and bitmaps. Only images
/// are copied into the plan (the records and the image removals); it borrows every other name
/// from the snapshot.
pub fn plan<'a>(
    snapshot: &'a Snapshot,
    policy: &Policy,
    state: &mut GcState,
) -> Result<Plan<'a>, Error> {
    policy.images.validate()?;
    snapshot.validate_images()?;
    let now = snapshot.time;
    let containers = &snapshot.containers;
    let (images, sandboxes, dirs) = (
        &snapshot.images,
        &snapshot.sandboxes,
        &snapshot.pod_log_dirs,
    );
    let mut uids = PodUids::new(
        PodView::new(snapshot.pods.as_deref()),
        containers.len() + sandboxes.len() + dirs.len(),
    )?;
    let mut sandbox_refs = SandboxRefs::new(sandboxes, &mut uids, containers.len())?;
    // The containers are read once, feeding all three numberings. A runtime's answer leaves
    // each container's strings scattered among freed labels and annotations, and reading them
    // once per numbering measured slower (×1: 112 → 96 ms) than writing to three sets of
    // partitions at once (up to 48 write streams; docs/BENCHMARKS.md).
    // Each list's numbering read goes a batch at a time, the batch's strings fetched
    // together first ([`crate::fetch`]).
    // Listed image ids and the containers' image ids, numbered together; an image may be
    // listed once per tag.
    let mut image_ids = Interner::with_capacity(images.len() + containers.len())?;
    for image in fetched(images, |image| [image.id.as_str()]) {
        image_ids.push(&image.id);
    }
    let mut without_image = Vec::new();
    let mut units = Units::new(&policy.containers, now, containers);
    let mut id_hashes = Vec::with_capacity(containers.len());
    let strings = |c: &'a Container| {
        let uid = c.pod_uid.as_deref().unwrap_or_default();
        [c.id.as_str(), &c.sandbox_id, &c.image_id, &c.name, uid]
    };
    for (i, c) in fetched(containers, strings).enumerate() {
        sandbox_refs.refer(&c.sandbox_id);
        image_ids.push(&c.image_id);
        if c.image_id.is_empty() {
            without_image.push(i);
        }
        id_hashes.push(id_hash("containers", i, &c.id)?);
        units.add(i, c, &mut uids);
    }
    check_unique("containers", id_hashes, |i| &containers[i].id)?;
    let dir_uids = log_dir_uids(dirs, &mut uids);
    let numbers = uids.finish();
    let sandbox_index = sandbox_refs.finish(sandboxes)?;
    let image_ids = image_ids.finish();

    let evicted = evict_units(
        &policy.containers,
        units,
        &numbers,
        policy.evict_non_deleted_pods,
    );
    let mut removed = vec![false; containers.len()];
    for &(i, _) in &evicted {
        removed[i] = true;
    }
    // What the surviving containers hold on to: their sandboxes and images.
    let referenced = sandbox_index.referenced(|i| !removed[i]);
    let used = image_ids.listed_held(images.len(), |i| !removed[i]);
    let without_image: Vec<&str> = without_image
        .into_iter()
        .filter(|&i| !removed[i])
        .map(|i| containers[i].id.as_str())
        .collect();
    let containers: Vec<ContainerRemoval<'a>> = evicted
        .into_iter()
        .map(|(i, reason)| container_removal(&containers[i], reason))
        .collect();
    let sandboxes = evict_sandboxes(
        sandboxes,
        &sandbox_index,
        &referenced,
        &numbers,
        policy.evict_non_deleted_pods,
    );
    let pod_log_dirs = evict_log_dirs(dirs, &dir_uids, &numbers);

    let mut warnings = Vec::new();
    let began_gc = *state.began_gc.get_or_insert(now);
    // Only listed images matter to image GC (the records are of listed images), and a set
    // keyed by the images' own strings stays small and close together.
    let in_use: HashSet<&str> = images
        .iter()
        .enumerate()
        .filter(|&(k, _)| used[k])
        .map(|(_, image)| image.id.as_str())
        .collect();
    state.images.detect(images, &in_use, now, now);
    let image_plan = if without_image.is_empty() {
        plan_images(
            &policy.images,
            &mut state.images,
            &in_use,
            snapshot.image_fs.as_ref(),
            now,
            began_gc,
        )
    } else {
        // An image in use could not be told apart from an unused one.
        ImagePlan {
            error: Some(format!(
                "image GC skipped: container {} reports no image id, so the images in use \
                 are unknown",
                without_image.join(", ")
            )),
            ..ImagePlan::default()
        }
    };
    let no_size: Vec<&str> = images
        .iter()
        .filter(|i| i.size.is_none_or(|s| s == 0))
        .map(|i| i.id.as_str())
        .collect();
    if !no_size.is_empty() {
        warnings.push(format!(
            "image {} reports no size: never removed to free space",
            no_size.join(", ")
        ));
    }
    Ok(Plan {
        time: now,
        containers,
        sandboxes,
        pod_log_dirs,
        images: image_plan,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Container, ContainerState, FsStats, Image, Pod};

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid")
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            time: at(3600),
            image_fs: Some(FsStats {
                mountpoint: "/var/lib/containerd".into(),
                capacity_bytes: 1000,
                available_bytes: 100,
            }),
            images: vec![
                Image {
                    id: "sha256:old".into(),
                    size: Some(300),
                    first_detected: Some(at(0)),
                    ..Image::default()
                },
                Image {
                    id: "sha256:used".into(),
                    size: Some(300),
                    first_detected: Some(at(0)),
                    ..Image::default()
                },
            ],
            containers: vec![
                Container {
                    id: "dead".into(),
                    name: "app".into(),
                    pod_uid: Some("gone".into()),
                    image_id: "sha256:old".into(),
                    state: ContainerState::Exited,
                    created_at: at(0),
                    ..Container::default()
                },
                Container {
                    id: "live".into(),
                    name: "app".into(),
                    pod_uid: Some("here".into()),
                    image_id: "sha256:used".into(),
                    state: ContainerState::Running,
                    created_at: at(0),
                    ..Container::default()
                },
            ],
            pods: Some(vec![Pod {
                uid: "here".into(),
                ..Pod::default()
            }]),
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_deleted_pods_container_frees_its_image_in_the_same_pass() {
        let mut state = GcState::default();
        let snapshot = snapshot();
        let plan = plan(&snapshot, &Policy::default(), &mut state).expect("plan");
        assert_eq!(plan.containers.len(), 1);
        assert_eq!(plan.containers[0].id, "dead");
        let ids: Vec<&str> = plan.images.removals.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["sha256:old"]);
        assert_eq!(plan.images.error, None);
        assert_eq!(state.began_gc, Some(at(3600)));
    }

    #[test]
    fn a_container_without_image_id_stops_image_gc() {
        let mut s = snapshot();
        s.containers[1].image_id.clear();
        let plan = plan(&s, &Policy::default(), &mut GcState::default()).expect("plan");
        assert!(plan.images.removals.is_empty());
        assert!(plan.images.error.expect("error").contains("live"));
    }

    #[test]
    fn bad_policy_and_snapshot_are_refused() {
        let mut policy = Policy::default();
        policy.images.low_threshold_percent = 90;
        assert!(plan(&snapshot(), &policy, &mut GcState::default()).is_err());
        let mut s = snapshot();
        s.containers[1].id = "dead".into();
        let err = plan(&s, &Policy::default(), &mut GcState::default()).expect_err("dup");
        assert!(
            err.to_string().contains("containers[1].id \"dead\""),
            "{err}"
        );
    }
}
