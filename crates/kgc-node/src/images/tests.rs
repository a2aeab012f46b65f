//! Ported from kubernetes/kubernetes `pkg/kubelet/images/image_gc_manager_test.go`; test names
//! are upstream's (snake_case). Images are `image-N` (or upstream's literal ids), sizes in bytes.

use super::*;

/// A fake runtime: the images it lists and the image ids its containers use.
struct Fake {
    images: Vec<Image>,
    in_use: Vec<String>,
    records: ImageRecords,
}

fn image_id(n: usize) -> String {
    format!("image-{n}")
}

fn image(n: usize, size: u64) -> Image {
    Image {
        id: image_id(n),
        size: Some(size),
        ..Image::default()
    }
}

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("valid")
}

fn zero() -> Timestamp {
    Timestamp::UNIX_EPOCH
}

impl Fake {
    fn new(images: Vec<Image>, in_use: &[usize]) -> Fake {
        Fake {
            images,
            in_use: in_use.iter().map(|n| image_id(*n)).collect(),
            records: ImageRecords::default(),
        }
    }

    fn in_use(&self) -> HashSet<&str> {
        self.in_use.iter().map(String::as_str).collect()
    }

    fn detect(&mut self, detect_time: Timestamp, now: Timestamp) {
        let in_use: HashSet<&str> = self.in_use.iter().map(String::as_str).collect();
        self.records.detect(&self.images, &in_use, detect_time, now);
    }

    /// `getImagesAndFreeSpace`: detect at `free_time`, free, and apply the removals to the
    /// fake runtime. Returns the bytes freed.
    fn free_space(&mut self, bytes: u64, free_time: Timestamp, min_age: Duration) -> u64 {
        self.detect(free_time, free_time);
        let in_use = self.in_use();
        let candidates = self.records.eviction_order(&in_use);
        let (removed, freed) = free_space(&candidates, bytes, free_time, min_age);
        self.apply(&removed);
        freed
    }

    fn apply(&mut self, removed: &[ImageRemoval]) {
        for r in removed {
            // The fake runtime removes one listing per RemoveImage call.
            if let Some(i) = self.images.iter().position(|img| img.id == r.id) {
                self.images.remove(i);
            }
            self.records.remove(&r.id);
        }
    }

    fn gc(&mut self, policy: &ImageGcPolicy, fs: Option<&FsStats>, now: Timestamp) -> ImagePlan {
        self.detect(now, now);
        let in_use: HashSet<&str> = self.in_use.iter().map(String::as_str).collect();
        let plan = plan_images(policy, &mut self.records, &in_use, fs, now, now);
        let removals = plan.removals.clone();
        self.apply(&removals);
        plan
    }
}

fn policy(high: i32, low: i32) -> ImageGcPolicy {
    ImageGcPolicy {
        high_threshold_percent: high,
        low_threshold_percent: low,
        min_age: Duration::ZERO,
        max_age: Duration::ZERO,
    }
}

fn fs(capacity: u64, available: u64) -> FsStats {
    FsStats {
        mountpoint: String::new(),
        capacity_bytes: capacity,
        available_bytes: available,
    }
}

#[test]
fn detect_images_initial_detect() {
    let mut rt = Fake::new(
        vec![image(0, 1024), image(1, 2048), image(2, 2048)],
        &[1, 2],
    );
    let now = t(0);
    rt.detect(zero(), now);
    assert_eq!(rt.records.len(), 3);
    let r0 = rt.records.get("image-0").expect("image-0");
    assert_eq!(r0.first_detected, zero());
    assert_eq!(r0.last_used, None);
    for id in ["image-1", "image-2"] {
        let r = rt.records.get(id).expect(id);
        assert_eq!(r.first_detected, zero());
        assert_eq!(r.last_used, Some(now), "{id} is matched by image id");
    }
}

#[test]
fn detect_images_with_new_image() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    rt.detect(zero(), t(0));
    rt.images.push(image(2, 1024));
    let detected = zero() + SignedDuration::from_secs(1);
    rt.detect(detected, t(1));
    assert_eq!(rt.records.len(), 3);
    assert_eq!(rt.records.get("image-0").expect("0").first_detected, zero());
    assert_eq!(rt.records.get("image-0").expect("0").last_used, None);
    assert_eq!(rt.records.get("image-1").expect("1").first_detected, zero());
    assert_eq!(
        rt.records.get("image-2").expect("2").first_detected,
        detected
    );
}

#[test]
fn delete_unused_images_exempt_sandbox_image() {
    let mut rt = Fake::new(
        vec![Image {
            pinned: true,
            ..image(0, 1024)
        }],
        &[],
    );
    rt.free_space(u64::MAX, t(0), Duration::ZERO);
    assert_eq!(rt.images.len(), 1);
}

#[test]
fn delete_pinned_image() {
    // The same id listed pinned, then unpinned. Upstream keeps the last listing and deletes
    // it; kgc deliberately keeps an image any listing pins (when in doubt, do not delete).
    let mut rt = Fake::new(
        vec![
            Image {
                pinned: true,
                ..image(0, 1024)
            },
            image(0, 1024),
        ],
        &[],
    );
    let freed = rt.free_space(u64::MAX, t(0), Duration::ZERO);
    assert_eq!(freed, 0);
    assert_eq!(rt.images.len(), 2);
}

/// Upstream's literal ids `"1"`, `"2"` of 1024 bytes.
fn kib(id: &str, pinned: bool) -> Image {
    Image {
        id: id.into(),
        size: Some(1024),
        pinned,
        ..Image::default()
    }
}

#[test]
fn do_not_delete_pinned_image() {
    let mut rt = Fake::new(vec![kib("1", true), kib("2", false)], &[]);
    assert_eq!(rt.free_space(4096, t(0), Duration::ZERO), 1024);
    assert_eq!(rt.images.len(), 1);
}

#[test]
fn delete_un_pinned_image() {
    let mut rt = Fake::new(vec![kib("1", false), kib("2", false)], &[]);
    assert_eq!(rt.free_space(2048, t(0), Duration::ZERO), 2048);
    assert_eq!(rt.images.len(), 0);
}

#[test]
fn all_pinned_images() {
    let mut rt = Fake::new(vec![kib("1", true), kib("2", true)], &[]);
    assert_eq!(rt.free_space(2048, t(0), Duration::ZERO), 0);
    assert_eq!(rt.images.len(), 2);
}

#[test]
fn detect_images_container_stopped() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    let start = t(0);
    rt.detect(zero(), start);
    let with_container = rt.records.get("image-1").expect("1").last_used;
    assert_eq!(with_container, Some(start));
    // The pod goes away: last used is kept, not reset.
    rt.in_use.clear();
    rt.detect(zero(), t(10));
    assert_eq!(rt.records.len(), 2);
    assert_eq!(
        rt.records.get("image-1").expect("1").last_used,
        with_container
    );
}

#[test]
fn detect_images_with_removed_images() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    rt.detect(zero(), t(0));
    rt.images.clear();
    rt.detect(zero(), t(1));
    assert_eq!(rt.records.len(), 0);
}

#[test]
fn free_space_images_in_use_containers_are_ignored() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    assert_eq!(rt.free_space(2048, t(0), Duration::ZERO), 1024);
    assert_eq!(rt.images.len(), 1);
}

#[test]
fn delete_unused_images_remove_all_unused_images() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048), image(2, 2048)], &[2]);
    rt.free_space(u64::MAX, t(0), Duration::ZERO);
    assert_eq!(rt.images.len(), 1);
}

#[test]
fn delete_unused_images_limit_by_image_live_time() {
    let min_age = Duration::from_secs(3);
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048), image(2, 2048)], &[2]);
    // Start(): the first detection happens now.
    rt.detect(t(0), t(0));
    rt.free_space(u64::MAX, t(0), min_age);
    assert_eq!(rt.images.len(), 3, "too young");
    rt.free_space(u64::MAX, t(3), min_age);
    assert_eq!(rt.images.len(), 1, "exactly MinAge old is eligible");
}

#[test]
fn free_space_remove_by_least_recently_used() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[0, 1]);
    rt.detect(zero(), t(0));
    // Only image-1 is still used at t(1).
    rt.in_use = vec![image_id(1)];
    rt.detect(zero(), t(1));
    rt.in_use.clear();
    assert_eq!(rt.free_space(1024, t(60), Duration::ZERO), 1024);
    assert_eq!(rt.images.len(), 1);
    assert_eq!(rt.images[0].id, "image-1");
}

#[test]
fn free_space_ties_broken_by_detected_time() {
    let mut rt = Fake::new(vec![image(0, 1024)], &[0]);
    rt.detect(zero(), t(0));
    // image-1 shows up later and is never used; then no pods.
    rt.images.push(image(1, 2048));
    rt.detect(t(1), t(1));
    rt.in_use.clear();
    // image-1 has a zero last-used time, so it goes first.
    assert_eq!(rt.free_space(1024, t(60), Duration::ZERO), 2048);
    assert_eq!(rt.images.len(), 1);
    assert_eq!(rt.images[0].id, "image-0");
}

#[test]
fn garbage_collect_below_low_threshold() {
    let mut rt = Fake::new(vec![image(0, 450)], &[]);
    let plan = rt.gc(&policy(90, 80), Some(&fs(1000, 600)), t(0));
    assert_eq!(plan.error, None);
    assert!(plan.removals.is_empty());
    assert_eq!(plan.fs.expect("fs").usage_percent, 40);
}

#[test]
fn garbage_collect_cadvisor_failure() {
    let mut rt = Fake::new(vec![image(0, 450)], &[]);
    let plan = rt.gc(&policy(90, 80), None, t(0));
    assert!(plan.error.is_some());
    assert!(plan.removals.is_empty());
}

#[test]
fn garbage_collect_below_success() {
    let mut rt = Fake::new(vec![image(0, 450)], &[]);
    let plan = rt.gc(&policy(90, 80), Some(&fs(1000, 50)), t(0));
    assert_eq!(plan.error, None);
    let usage = plan.fs.expect("fs");
    assert_eq!(usage.usage_percent, 95);
    assert_eq!(usage.bytes_to_free, 150);
    assert_eq!(usage.bytes_freed, 450);
    assert_eq!(rt.images.len(), 0);
}

#[test]
fn garbage_collect_not_enough_freed() {
    let mut rt = Fake::new(vec![image(0, 50)], &[]);
    let plan = rt.gc(&policy(90, 80), Some(&fs(1000, 50)), t(0));
    let error = plan.error.expect("50 < 150 is an error");
    assert!(error.contains("freed 50 bytes"), "{error}");
    assert_eq!(plan.removals.len(), 1, "what can be freed still is");
}

#[test]
fn garbage_collect_image_not_old_enough() {
    let min_age = Duration::from_secs(60);
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    let detect = t(0);
    rt.detect(detect, detect);
    assert_eq!(rt.free_space(1024, detect, min_age), 0);
    assert_eq!(rt.images.len(), 2);
    assert_eq!(rt.free_space(1024, t(60), min_age), 1024);
    assert_eq!(rt.images.len(), 1);
}

#[test]
fn garbage_collect_image_too_old() {
    let policy = ImageGcPolicy {
        max_age: Duration::from_secs(60),
        ..policy(90, 80)
    };
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    let began = t(0);
    rt.detect(began, began);
    rt.records.set_last_used("image-0", Some(began));
    let candidates = rt.records.eviction_order(&rt.in_use());
    assert_eq!(candidates.len(), 1);
    // Warm-up: the collector has not run longer than MaxAge.
    let (removed, remaining) = free_old_images(candidates.clone(), began, began, policy.max_age);
    assert!(removed.is_empty());
    assert_eq!(remaining.len(), 1);
    let later = began + SignedDuration::from_secs(60) + SignedDuration::from_nanos(1);
    let (removed, remaining) = free_old_images(candidates, later, began, policy.max_age);
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].id, "image-0");
    assert_eq!(removed[0].reason, ImageReason::Age);
    assert!(remaining.is_empty());
}

#[test]
fn garbage_collect_image_max_age_disabled() {
    let mut rt = Fake::new(vec![image(0, 1024), image(1, 2048)], &[1]);
    rt.detect(t(0), t(0));
    let candidates = rt.records.eviction_order(&rt.in_use());
    let (removed, remaining) = free_old_images(candidates, Timestamp::MAX, t(0), Duration::ZERO);
    assert!(removed.is_empty());
    assert_eq!(remaining.len(), 1);
}

#[test]
fn validate_image_gc_policy() {
    let cases: [(i32, i32, Option<&str>); 6] = [
        (
            -1,
            80,
            Some("invalid HighThresholdPercent -1, must be in range [0-100]"),
        ),
        (
            101,
            80,
            Some("invalid HighThresholdPercent 101, must be in range [0-100]"),
        ),
        (
            90,
            -1,
            Some("invalid LowThresholdPercent -1, must be in range [0-100]"),
        ),
        (
            90,
            101,
            Some("invalid LowThresholdPercent 101, must be in range [0-100]"),
        ),
        (
            1,
            2,
            Some("LowThresholdPercent 2 can not be higher than HighThresholdPercent 1"),
        ),
        (85, 80, None),
    ];
    for (high, low, want) in cases {
        let got = policy(high, low).validate().err().map(|e| e.to_string());
        assert_eq!(
            got.as_deref(),
            want.map(|w| format!("invalid policy: {w}")).as_deref(),
            "high {high} low {low}"
        );
    }
    // kgc refuses what the kubelet's config validation refuses.
    assert!(policy(80, 80).validate().is_err(), "low == high");
    let max_below_min = ImageGcPolicy {
        min_age: Duration::from_secs(120),
        max_age: Duration::from_secs(60),
        ..policy(85, 80)
    };
    assert!(max_below_min.validate().is_err());
    assert!(ImageGcPolicy::default().validate().is_ok());
}

#[test]
fn usage_rounds_up() {
    let usage = fs_usage(&policy(85, 80), &fs(1000, 149)).expect("usage");
    assert_eq!(usage.usage_percent, 86);
    assert_eq!(usage.bytes_to_free, 200 - 149);
    assert!(fs_usage(&policy(85, 80), &fs(0, 0)).is_err());
    // available > capacity is clamped, as upstream.
    assert_eq!(
        fs_usage(&policy(85, 80), &fs(1000, 5000))
            .expect("usage")
            .usage_percent,
        0
    );
}

#[test]
fn images_without_size_are_not_freed_for_space() {
    let mut rt = Fake::new(
        vec![
            Image {
                size: None,
                ..image(0, 0)
            },
            image(1, 100),
        ],
        &[],
    );
    assert_eq!(rt.free_space(u64::MAX, t(0), Duration::ZERO), 100);
    assert_eq!(rt.images.len(), 1);
    assert_eq!(rt.images[0].id, "image-0");
}
