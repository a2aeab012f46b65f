//! What one simulated node holds: its pod address range, the images it pulled, the dead
//! containers it keeps, and the kubelet's image records; its image and container garbage
//! collection run kgc-node's planner (`kgc_node::plan`, the code `kgc node gc` runs against a
//! real runtime) over a snapshot of this state.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ContainerImage;
use kgc_node::containers::ContainerGcPolicy;
use kgc_node::images::{ImageGcPolicy, ImageRemoval};
use kgc_node::snapshot::{Container, FsStats, Image, Pod, Snapshot};
use kgc_node::{GcState, Policy};

use crate::image::ImageRef;
use crate::ipam::Range;
use crate::runtime::PodRuntime;

/// An image the node pulled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    pub image: ImageRef,
    pub size: u64,
    pub pulled: Timestamp,
}

/// The runtime state of one node.
#[derive(Debug, Default)]
pub struct NodeRuntime {
    /// The pod range of `spec.podCIDR` (with the CIDR it came from).
    pub range: Option<(String, Range)>,
    /// By image id.
    pub images: HashMap<String, Pulled>,
    /// Exited attempts of live pods, and every container of pods that are gone.
    pub dead: Vec<Container>,
    /// The pods running here (their keys in the kubelet's table).
    pub pods: HashSet<(String, String)>,
    pub records: GcState,
}

/// What one image GC pass did.
#[derive(Debug, Default)]
pub struct ImagePass {
    pub removed: Vec<ImageRemoval>,
    /// Upstream's GC error (not enough could be freed): the `FreeDiskSpaceFailed` event.
    pub error: Option<String>,
    pub usage_percent: Option<u64>,
}

impl NodeRuntime {
    /// Records `image` as present (pulled now unless it already is).
    pub fn pull(&mut self, image: &ImageRef, size: u64, now: Timestamp) -> bool {
        if self.images.contains_key(&image.id) {
            return false;
        }
        self.images.insert(
            image.id.clone(),
            Pulled {
                image: image.clone(),
                size,
                pulled: now,
            },
        );
        true
    }

    pub fn used_bytes(&self) -> u64 {
        self.images.values().map(|i| i.size).sum()
    }

    /// The runtime's listing: images, the pods' containers and the dead ones; `pods` (the
    /// pods the kubelet knows: a dead container of any other pod belongs to a deleted pod).
    fn snapshot<'a>(
        &self,
        live: impl Iterator<Item = &'a PodRuntime>,
        capacity: Option<u64>,
        now: Timestamp,
    ) -> Snapshot {
        let mut containers = self.dead.clone();
        let mut pods = Vec::new();
        for p in live {
            containers.extend(p.containers.iter().map(|c| c.as_cri(&p.uid)));
            pods.push(Pod {
                uid: p.uid.clone(),
                terminated: p.terminal,
                ..Pod::default()
            });
        }
        let images = self
            .images
            .values()
            .map(|i| Image {
                id: i.image.id.clone(),
                repo_tags: vec![i.image.name.clone()],
                size: Some(i.size),
                first_detected: Some(i.pulled),
                ..Image::default()
            })
            .collect();
        Snapshot {
            time: now,
            image_fs: capacity.map(|capacity_bytes| FsStats {
                mountpoint: String::new(),
                capacity_bytes,
                available_bytes: capacity_bytes.saturating_sub(self.used_bytes()),
            }),
            images,
            containers,
            pods: Some(pods),
            ..Snapshot::default()
        }
    }

    /// The kubelet's container GC (`kuberuntime_gc.go` `evictContainers`, every minute):
    /// removes dead containers by the policy; returns their ids.
    pub fn collect_containers<'a>(
        &mut self,
        live: impl Iterator<Item = &'a PodRuntime>,
        policy: &ContainerGcPolicy,
        now: Timestamp,
    ) -> Result<Vec<String>, kgc_node::Error> {
        let snapshot = self.snapshot(live, None, now);
        let policy = Policy {
            containers: policy.clone(),
            // Image GC has its own period: nothing is removed for age here.
            images: ImageGcPolicy {
                max_age: std::time::Duration::ZERO,
                ..ImageGcPolicy::default()
            },
            evict_non_deleted_pods: false,
        };
        let plan = kgc_node::plan(&snapshot, &policy, &mut self.records)?;
        let removed: Vec<String> = plan.containers.iter().map(|c| c.id.to_owned()).collect();
        let gone: HashSet<&str> = removed.iter().map(String::as_str).collect();
        self.dead.retain(|c| !gone.contains(c.id.as_str()));
        Ok(removed)
    }

    /// The kubelet's image GC (`image_gc_manager.go` `GarbageCollect`, every five minutes)
    /// over an image filesystem of `capacity` bytes: images used by no container (running
    /// or dead), least recently used first, until usage is back under the low threshold.
    pub fn collect_images<'a>(
        &mut self,
        live: impl Iterator<Item = &'a PodRuntime>,
        policy: &ImageGcPolicy,
        capacity: u64,
        now: Timestamp,
    ) -> Result<ImagePass, kgc_node::Error> {
        let snapshot = self.snapshot(live, Some(capacity), now);
        let policy = Policy {
            images: policy.clone(),
            // Container GC has its own period: this pass keeps every container.
            containers: ContainerGcPolicy {
                min_age: std::time::Duration::ZERO,
                max_per_pod_container: -1,
                max_containers: -1,
            },
            evict_non_deleted_pods: false,
        };
        let mut unsynced = snapshot;
        // Without the pod list nothing counts as a deleted pod's: no container goes.
        unsynced.pods = None;
        let plan = kgc_node::plan(&unsynced, &policy, &mut self.records)?;
        let removed = plan.images.removals;
        for r in &removed {
            self.images.remove(&r.id);
        }
        Ok(ImagePass {
            removed,
            error: plan.images.error,
            usage_percent: plan.images.fs.map(|f| f.usage_percent),
        })
    }

    /// `status.images` as the kubelet reports them (`nodestatus.Images`): largest first, at
    /// most `max` (`nodeStatusMaxImages`, 50), each named by its digests then its tags.
    pub fn status_images(&self, max: usize) -> Vec<ContainerImage> {
        let mut images: Vec<&Pulled> = self.images.values().collect();
        images.sort_by(|a, b| b.size.cmp(&a.size).then(a.image.id.cmp(&b.image.id)));
        images
            .into_iter()
            .take(max)
            .map(|i| ContainerImage {
                names: Some(vec![i.image.repo_digest.clone(), i.image.name.clone()]),
                size_bytes: i64::try_from(i.size).ok(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::resolve;
    use crate::runtime::Spec;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn running(uid: &str, image: &str, now: Timestamp) -> PodRuntime {
        let spec = Spec {
            name: "c".into(),
            image: resolve(image),
            init: false,
            sidecar: false,
        };
        PodRuntime::start(uid, &[spec], now)
    }

    #[test]
    fn image_gc_removes_unused_images_oldest_first_and_keeps_used_ones() {
        let mut node = NodeRuntime::default();
        let mi = 1 << 20;
        // 100 MiB filesystem: 30 + 30 + 30 used = 90% ≥ 85% → free to 80%, 10 MiB.
        node.pull(&resolve("old"), 30 * mi, at(0));
        node.pull(&resolve("newer"), 30 * mi, at(100));
        node.pull(&resolve("used"), 30 * mi, at(0));
        let live = [running("p", "used", at(0))];
        let pass = node
            .collect_images(live.iter(), &ImageGcPolicy::default(), 100 * mi, at(1000))
            .unwrap();
        let ids: Vec<&str> = pass.removed.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [resolve("old").id.as_str()]);
        assert_eq!(pass.error, None);
        assert_eq!(pass.usage_percent, Some(90));
        assert!(node.images.contains_key(&resolve("used").id));
        assert_eq!(node.status_images(50).len(), 2);
    }

    #[test]
    fn young_images_are_kept_and_the_shortfall_reported() {
        let mut node = NodeRuntime::default();
        node.pull(&resolve("fresh"), 95, at(0));
        let pass = node
            .collect_images(std::iter::empty(), &ImageGcPolicy::default(), 100, at(60))
            .unwrap();
        assert!(pass.removed.is_empty(), "younger than MinAge (2 min)");
        assert!(pass.error.unwrap().contains("failed to free"));
    }

    #[test]
    fn container_gc_keeps_one_dead_container_per_container_and_drops_deleted_pods() {
        let mut node = NodeRuntime::default();
        let live = running("p", "app", at(0));
        let dead = |id: &str, uid: &str, t: i64| Container {
            id: id.into(),
            name: "c".into(),
            pod_uid: Some(uid.into()),
            image_id: resolve("app").id,
            created_at: at(t),
            ..Container::default()
        };
        node.dead = vec![
            dead("a1", "p", 1),
            dead("a2", "p", 2),
            dead("g1", "gone", 1),
        ];
        let removed = node
            .collect_containers(
                std::iter::once(&live),
                &ContainerGcPolicy::default(),
                at(100),
            )
            .unwrap();
        let mut removed = removed;
        removed.sort();
        assert_eq!(removed, ["a1", "g1"]);
        assert_eq!(node.dead.len(), 1);
    }
}
