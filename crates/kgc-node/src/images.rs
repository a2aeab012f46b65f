//! The kubelet's image garbage collector, as pure functions.
//!
//! Faithful to kubernetes/kubernetes `pkg/kubelet/images/image_gc_manager.go`:
//! `detectImages` keeps per-image records (first detected, last used); candidates are images
//! not used by any container and not pinned, least recently used first (ties: first detected);
//! `freeOldImages` removes images unused for longer than MaxAge once the collector has run
//! longer than MaxAge; `freeSpace` removes candidates older than MinAge until the bytes needed
//! to reach the low threshold are freed.

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::snapshot::{FsStats, Image};

/// The kubelet's `ImageGCPolicy` with its defaults
/// (`pkg/kubelet/apis/config/v1beta1/defaults.go`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageGcPolicy {
    /// Usage percent at or above which space-based GC runs (`imageGCHighThresholdPercent`).
    pub high_threshold_percent: i32,
    /// Usage percent space-based GC frees down to (`imageGCLowThresholdPercent`).
    pub low_threshold_percent: i32,
    /// An image first detected less than this long ago is never freed for space
    /// (`imageMinimumGCAge`).
    pub min_age: Duration,
    /// An image unused for longer than this is removed whatever the disk usage
    /// (`imageMaximumGCAge`); zero disables it.
    pub max_age: Duration,
}

impl Default for ImageGcPolicy {
    fn default() -> Self {
        ImageGcPolicy {
            high_threshold_percent: 85,
            low_threshold_percent: 80,
            min_age: Duration::from_secs(120),
            max_age: Duration::ZERO,
        }
    }
}

impl ImageGcPolicy {
    /// Upstream's checks: `NewImageGCManager` (ranges, low > high) and the kubelet config
    /// validation (low must be strictly below high; MaxAge, when set, above MinAge).
    pub fn validate(&self) -> Result<(), Error> {
        let (high, low) = (self.high_threshold_percent, self.low_threshold_percent);
        if !(0..=100).contains(&high) {
            return Err(Error::Policy(format!(
                "invalid HighThresholdPercent {high}, must be in range [0-100]"
            )));
        }
        if !(0..=100).contains(&low) {
            return Err(Error::Policy(format!(
                "invalid LowThresholdPercent {low}, must be in range [0-100]"
            )));
        }
        if low > high {
            return Err(Error::Policy(format!(
                "LowThresholdPercent {low} can not be higher than HighThresholdPercent {high}"
            )));
        }
        if low == high {
            // kubelet config validation (pkg/kubelet/apis/config/validation/validation.go):
            // with equal thresholds every pass would free to exactly the trigger point.
            return Err(Error::Policy(format!(
                "LowThresholdPercent {low} must be less than HighThresholdPercent {high}"
            )));
        }
        if !self.max_age.is_zero() && self.max_age <= self.min_age {
            return Err(Error::Policy(format!(
                "ImageMaximumGCAge {:?} must be greater than ImageMinimumGCAge {:?}",
                self.max_age, self.min_age
            )));
        }
        Ok(())
    }
}

/// What the kubelet remembers about an image between passes (`imageRecord`). Upstream keeps
/// this in memory only; kgc can persist it (`kgc node gc --state-file`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRecord {
    pub first_detected: Timestamp,
    /// `None`: never seen in use (upstream's zero time, which sorts first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repo_tags: Vec<String>,
}

/// The image records, keyed by image id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ImageRecords {
    records: HashMap<String, ImageRecord>,
}

/// Why an image is removed; the `reason` label of upstream's
/// `image_garbage_collected_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageReason {
    /// Unused for longer than MaxAge.
    Age,
    /// Freed to bring disk usage down to the low threshold.
    Space,
}

/// One image the plan removes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRemoval {
    pub id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repo_tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub reason: ImageReason,
    pub first_detected: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<Timestamp>,
}

/// The image filesystem figures a space-based pass decided on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFsUsage {
    pub capacity_bytes: u64,
    pub available_bytes: u64,
    pub usage_percent: u64,
    /// Zero when usage is below the high threshold.
    pub bytes_to_free: u64,
    /// What the planned space removals free, by the sizes `ListImages` reported.
    pub bytes_freed: u64,
}

/// The image part of a plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePlan {
    pub removals: Vec<ImageRemoval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<ImageFsUsage>,
    /// Upstream's GC error: invalid capacity, or not enough eligible images to reach the low
    /// threshold (the `FreeDiskSpaceFailed` event). The removals are still planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A removal candidate: an image not in use and not pinned, borrowed from the records (only
/// the images actually removed are copied into the plan).
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub id: &'a str,
    pub record: &'a ImageRecord,
}

fn elapsed(later: Timestamp, earlier: Timestamp) -> SignedDuration {
    later.duration_since(earlier)
}

fn longer_than(d: SignedDuration, limit: Duration) -> bool {
    // A limit beyond SignedDuration's range is never exceeded.
    SignedDuration::try_from(limit).is_ok_and(|limit| d > limit)
}

impl ImageRecords {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn get(&self, id: &str) -> Option<&ImageRecord> {
        self.records.get(id)
    }

    /// Overrides a record's last-used time (tests and simulations that set history).
    pub fn set_last_used(&mut self, id: &str, at: Option<Timestamp>) {
        if let Some(r) = self.records.get_mut(id) {
            r.last_used = at;
        }
    }

    /// Forgets an image (after it was removed).
    pub fn remove(&mut self, id: &str) {
        self.records.remove(id);
    }

    /// Upstream `detectImages`: new images get `first_detected = detect_time`, images in use
    /// get `last_used = now`, size and pinned are refreshed, records of images no longer
    /// listed are dropped. History carried by the snapshot (`firstDetected`, `lastUsed`)
    /// seeds new records and moves `last_used` forward.
    pub fn detect(
        &mut self,
        images: &[Image],
        in_use: &HashSet<&str>,
        detect_time: Timestamp,
        now: Timestamp,
    ) {
        let mut listed: HashSet<&str> =
            HashSet::with_capacity_and_hasher(images.len(), Default::default());
        // A first pass records every image: growing the map one image at a time rehashes it
        // again and again.
        self.records
            .reserve(images.len().saturating_sub(self.records.len()));
        for image in images {
            let first_listing = listed.insert(image.id.as_str());
            let refresh = |record: &mut ImageRecord| {
                if image.last_used > record.last_used {
                    record.last_used = image.last_used;
                }
                if in_use.contains(image.id.as_str()) {
                    record.last_used = Some(now);
                }
                record.size = image.size.filter(|s| *s > 0);
                // An id listed twice with different `pinned` (upstream's
                // TestDeletePinnedImage): upstream keeps the last listing; kgc keeps the image
                // if any listing pins it.
                record.pinned = image.pinned || (!first_listing && record.pinned);
                record.repo_tags.clone_from(&image.repo_tags);
            };
            // Looked up by `&str` first: a known image costs no copy of its id.
            if let Some(record) = self.records.get_mut(image.id.as_str()) {
                refresh(record);
            } else {
                let mut record = ImageRecord {
                    first_detected: image.first_detected.unwrap_or(detect_time),
                    last_used: None,
                    size: None,
                    pinned: false,
                    repo_tags: Vec::new(),
                };
                refresh(&mut record);
                self.records.insert(image.id.clone(), record);
            }
        }
        // Every listed image has a record now: only more records than listed ids means some
        // are of images gone.
        if self.records.len() > listed.len() {
            self.records.retain(|id, _| listed.contains(id.as_str()));
        }
    }

    /// Upstream `imagesInEvictionOrder` (after detection): images not in use and not pinned,
    /// least recently used first, ties broken by first detection, then by id (upstream's sort
    /// is unstable; kgc's order is deterministic).
    pub fn eviction_order(&self, in_use: &HashSet<&str>) -> Vec<Candidate<'_>> {
        let mut out: Vec<Candidate<'_>> = self
            .records
            .iter()
            .filter(|(id, r)| !r.pinned && !in_use.contains(id.as_str()))
            .map(|(id, record)| Candidate { id, record })
            .collect();
        out.sort_unstable_by(|a, b| {
            (a.record.last_used, a.record.first_detected, a.id).cmp(&(
                b.record.last_used,
                b.record.first_detected,
                b.id,
            ))
        });
        out
    }
}

fn removal(c: &Candidate<'_>, reason: ImageReason) -> ImageRemoval {
    ImageRemoval {
        id: c.id.to_owned(),
        repo_tags: c.record.repo_tags.clone(),
        size: c.record.size,
        reason,
        first_detected: c.record.first_detected,
        last_used: c.record.last_used,
    }
}

/// Upstream `freeOldImages`: with MaxAge set and the collector running for longer than MaxAge
/// (`began_gc`), removes candidates unused for longer than MaxAge. Only `last_used` counts; an
/// image never used goes on the first pass after the warm-up. Returns (removed, remaining).
pub fn free_old_images(
    candidates: Vec<Candidate<'_>>,
    free_time: Timestamp,
    began_gc: Timestamp,
    max_age: Duration,
) -> (Vec<ImageRemoval>, Vec<Candidate<'_>>) {
    if max_age.is_zero() || !longer_than(elapsed(free_time, began_gc), max_age) {
        return (Vec::new(), candidates);
    }
    let mut removed = Vec::new();
    let mut remaining = Vec::with_capacity(candidates.len());
    for c in candidates {
        let too_old = match c.record.last_used {
            None => true,
            Some(t) => longer_than(elapsed(free_time, t), max_age),
        };
        if too_old {
            removed.push(removal(&c, ImageReason::Age));
        } else {
            remaining.push(c);
        }
    }
    (removed, remaining)
}

/// Upstream `freeSpace`: walks candidates in eviction order, skipping images used at or after
/// `free_time` and images first detected less than MinAge ago (exactly MinAge is eligible),
/// until `bytes_to_free` is reached. kgc also skips images with no size: removing them could
/// not be counted. Returns (removed, bytes freed).
pub fn free_space(
    candidates: &[Candidate<'_>],
    bytes_to_free: u64,
    free_time: Timestamp,
    min_age: Duration,
) -> (Vec<ImageRemoval>, u64) {
    let mut removed = Vec::new();
    let mut freed: u64 = 0;
    for c in candidates {
        if freed >= bytes_to_free {
            break;
        }
        if c.record.last_used.is_some_and(|t| t >= free_time) {
            continue;
        }
        let age = elapsed(free_time, c.record.first_detected);
        if SignedDuration::try_from(min_age).is_ok_and(|min| age < min) {
            continue;
        }
        let Some(size) = c.record.size else {
            continue;
        };
        removed.push(removal(c, ImageReason::Space));
        freed = freed.saturating_add(size);
    }
    (removed, freed)
}

/// Upstream's usage arithmetic: `usage = 100 - available*100/capacity` (integer, so usage
/// rounds up) and, at or above the high threshold,
/// `amountToFree = capacity*(100-low)/100 - available`.
pub fn fs_usage(policy: &ImageGcPolicy, fs: &FsStats) -> Result<ImageFsUsage, String> {
    let capacity = fs.capacity_bytes;
    if capacity == 0 {
        return Err("invalid capacity 0 on image filesystem".to_string());
    }
    let available = fs.available_bytes.min(capacity);
    let capacity_w = u128::from(capacity);
    let available_w = u128::from(available);
    let usage_percent = 100 - available_w * 100 / capacity_w;
    // Thresholds are validated to [0, 100].
    let high = u128::from(policy.high_threshold_percent.unsigned_abs());
    let low = u128::from(policy.low_threshold_percent.unsigned_abs());
    let bytes_to_free = if usage_percent >= high {
        (capacity_w * (100 - low.min(100)) / 100).saturating_sub(available_w)
    } else {
        0
    };
    Ok(ImageFsUsage {
        capacity_bytes: capacity,
        available_bytes: available,
        usage_percent: u64::try_from(usage_percent).unwrap_or(100),
        bytes_to_free: u64::try_from(bytes_to_free).unwrap_or(u64::MAX),
        bytes_freed: 0,
    })
}

/// Upstream `GarbageCollect` over records already refreshed by [`ImageRecords::detect`]:
/// age-based removals first, then space-based ones when usage is at or above the high
/// threshold. Removed images are dropped from `records` (the plan assumes success, as the
/// kubelet does).
pub fn plan_images(
    policy: &ImageGcPolicy,
    records: &mut ImageRecords,
    in_use: &HashSet<&str>,
    fs: Option<&FsStats>,
    free_time: Timestamp,
    began_gc: Timestamp,
) -> ImagePlan {
    let candidates = records.eviction_order(in_use);
    let (mut removals, remaining) =
        free_old_images(candidates, free_time, began_gc, policy.max_age);
    let mut plan = ImagePlan::default();
    match fs.map(|fs| fs_usage(policy, fs)) {
        None => plan.error = Some("no image filesystem stats".to_string()),
        Some(Err(e)) => plan.error = Some(e),
        Some(Ok(mut usage)) => {
            if usage.bytes_to_free > 0 {
                let (space, freed) =
                    free_space(&remaining, usage.bytes_to_free, free_time, policy.min_age);
                usage.bytes_freed = freed;
                removals.extend(space);
                if freed < usage.bytes_to_free {
                    plan.error = Some(format!(
                        "insufficient free disk space on the image filesystem ({}% of {} \
                         bytes used): failed to free {} bytes by deleting unused images \
                         (freed {freed} bytes)",
                        usage.usage_percent, usage.capacity_bytes, usage.bytes_to_free
                    ));
                }
            }
            plan.fs = Some(usage);
        }
    }
    for r in &removals {
        records.remove(&r.id);
    }
    plan.removals = removals;
    plan
}

#[cfg(test)]
mod tests;
