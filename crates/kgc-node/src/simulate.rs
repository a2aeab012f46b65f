//! Replays a snapshot under a policy over days: what goes when, and the image filesystem's
//! usage over time, so a policy can be judged before it is rolled out.
//!
//! Time advances in steps of the kubelet's image GC period (5 min); each step runs one whole
//! pass ([`crate::plan`]) and assumes its removals succeed. A hand-written snapshot describes
//! the future too: an image whose `firstDetected` is after the snapshot's `time` is pulled
//! then, a container whose `createdAt` is later appears then (re-pulling its image if GC had
//! removed it), and a container with `finishedAt` runs until then.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::Error;
use crate::plan::{GcState, Policy, plan};
use crate::snapshot::{ContainerState, Snapshot};

/// The kubelet's `ImageGCPeriod`.
pub const STEP: Duration = Duration::from_secs(300);

/// Something the simulated collector did (or the simulated node pulled).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub time: Timestamp,
    /// `container`, `sandbox`, `podLogDir`, `image`, or `pull` (an image re-pulled because
    /// GC had removed it and a new container needed it).
    pub kind: &'static str,
    pub id: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// The image filesystem at one step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub time: Timestamp,
    pub used_bytes: u64,
    pub usage_percent: f64,
}

/// The result of a simulation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Simulation {
    pub start: Timestamp,
    pub end: Timestamp,
    pub capacity_bytes: u64,
    pub high_threshold_percent: i32,
    pub low_threshold_percent: i32,
    pub events: Vec<Event>,
    pub samples: Vec<Sample>,
    /// GC errors (e.g. not enough could be freed): first time seen and how many steps had it.
    pub errors: Vec<(Timestamp, u64, String)>,
}

/// Runs the simulation for `duration` from the snapshot's time.
pub fn simulate(
    snapshot: &Snapshot,
    policy: &Policy,
    duration: Duration,
) -> Result<Simulation, Error> {
    policy.images.validate()?;
    snapshot.validate()?;
    let fs = snapshot
        .image_fs
        .clone()
        .ok_or_else(|| Error::Snapshot("imageFs is required to simulate disk usage".to_string()))?;
    if fs.capacity_bytes == 0 {
        return Err(Error::Snapshot("imageFs.capacityBytes is 0".to_string()));
    }
    let start = snapshot.time;
    let end = SignedDuration::try_from(duration)
        .ok()
        .and_then(|d| start.checked_add(d).ok())
        .ok_or_else(|| Error::Snapshot(format!("{duration:?} from {start} is out of range")))?;
    let size_of: HashMap<&str, u64> = snapshot
        .images
        .iter()
        .map(|i| (i.id.as_str(), i.size.unwrap_or(0)))
        .collect();
    // Used bytes: what the snapshot says is used now, plus pulls, minus removals.
    let mut used = fs.capacity_bytes - fs.available_bytes.min(fs.capacity_bytes);
    let mut pulled: HashSet<&str> = snapshot
        .images
        .iter()
        .filter(|i| i.first_detected.is_none_or(|t| t <= start))
        .map(|i| i.id.as_str())
        .collect();
    let mut pulled_at: HashMap<&str, Timestamp> = HashMap::new();
    let mut removed_containers: HashSet<String> = HashSet::new();
    let mut removed_sandboxes: HashSet<String> = HashSet::new();
    let mut removed_dirs: HashSet<String> = HashSet::new();
    let mut seen_containers: HashSet<&str> = HashSet::new();
    let mut state = GcState::default();
    let mut sim = Simulation {
        start,
        end,
        capacity_bytes: fs.capacity_bytes,
        high_threshold_percent: policy.images.high_threshold_percent,
        low_threshold_percent: policy.images.low_threshold_percent,
        events: Vec::new(),
        samples: Vec::new(),
        errors: Vec::new(),
    };
    let step = SignedDuration::try_from(STEP).unwrap_or(SignedDuration::from_secs(300));
    let mut now = start;
    while now <= end {
        // Arrivals: images pulled, containers created (re-pulling a collected image).
        for i in &snapshot.images {
            if let Some(t) = i.first_detected
                && t <= now
                && t > start
                && !pulled_at.contains_key(i.id.as_str())
                && !pulled.contains(i.id.as_str())
            {
                pulled.insert(i.id.as_str());
                pulled_at.insert(i.id.as_str(), t);
                used = used.saturating_add(i.size.unwrap_or(0));
            }
        }
        for c in &snapshot.containers {
            if c.created_at <= now && seen_containers.insert(c.id.as_str()) {
                let image = c.image_id.as_str();
                if c.created_at > start && size_of.contains_key(image) && !pulled.contains(image) {
                    pulled.insert(image);
                    pulled_at.insert(image, c.created_at);
                    let bytes = size_of.get(image).copied().unwrap_or(0);
                    used = used.saturating_add(bytes);
                    sim.events.push(Event {
                        time: now,
                        kind: "pull",
                        id: image.to_string(),
                        reason: format!("needed by container {}", c.id),
                        bytes: Some(bytes),
                    });
                }
            }
        }
        let sample = |used: u64| Sample {
            time: now,
            used_bytes: used,
            usage_percent: used as f64 * 100.0 / fs.capacity_bytes as f64,
        };
        // Usage before this pass's removals (so the plot shows the peak) and, if it frees
        // anything, after.
        sim.samples.push(sample(used));
        let used_before = used;
        let view = Snapshot {
            time: now,
            image_fs: Some(crate::snapshot::FsStats {
                mountpoint: fs.mountpoint.clone(),
                capacity_bytes: fs.capacity_bytes,
                available_bytes: fs.capacity_bytes.saturating_sub(used),
            }),
            images: snapshot
                .images
                .iter()
                .filter(|i| pulled.contains(i.id.as_str()))
                .map(|i| {
                    let mut i = i.clone();
                    if let Some(t) = pulled_at.get(i.id.as_str()) {
                        i.first_detected = Some(*t);
                    }
                    i
                })
                .collect(),
            containers: snapshot
                .containers
                .iter()
                .filter(|c| c.created_at <= now && !removed_containers.contains(&c.id))
                .map(|c| {
                    let mut c = c.clone();
                    match c.finished_at {
                        Some(f) if f <= now => c.state = ContainerState::Exited,
                        Some(_) => c.state = ContainerState::Running,
                        None => {}
                    }
                    c
                })
                .collect(),
            sandboxes: snapshot
                .sandboxes
                .iter()
                .filter(|s| s.created_at <= now && !removed_sandboxes.contains(&s.id))
                .cloned()
                .collect(),
            pods: snapshot.pods.clone(),
            pod_log_dirs: snapshot
                .pod_log_dirs
                .iter()
                .filter(|d| !removed_dirs.contains(*d))
                .cloned()
                .collect(),
        };
        let p = plan(&view, policy, &mut state)?;
        let mut removed = |kind: &'static str, id: &str, reason: String| {
            sim.events.push(Event {
                time: now,
                kind,
                id: id.to_string(),
                reason,
                bytes: None,
            });
        };
        for c in p.containers {
            removed("container", c.id, format!("{:?}", c.reason));
            removed_containers.insert(c.id.to_owned());
        }
        for s in p.sandboxes {
            removed("sandbox", s.id, format!("{:?}", s.reason));
            removed_sandboxes.insert(s.id.to_owned());
        }
        for d in p.pod_log_dirs {
            removed("podLogDir", d.name, "DeletedPod".to_string());
            removed_dirs.insert(d.name.to_owned());
        }
        for i in p.images.removals {
            used = used.saturating_sub(i.size.unwrap_or(0));
            if let Some((id, _)) = size_of.get_key_value(i.id.as_str()) {
                pulled.remove(id);
                pulled_at.remove(id);
            }
            sim.events.push(Event {
                time: now,
                kind: "image",
                id: i.id,
                reason: format!("{:?}", i.reason),
                bytes: i.size,
            });
        }
        if let Some(e) = p.images.error {
            match sim.errors.iter_mut().find(|(_, _, m)| *m == e) {
                Some(entry) => entry.1 += 1,
                None => sim.errors.push((now, 1, e)),
            }
        }
        if used != used_before {
            sim.samples.push(sample(used));
        }
        now = match now.checked_add(step) {
            Ok(t) => t,
            Err(_) => break,
        };
    }
    Ok(sim)
}

/// A plot of image filesystem usage over time with the two thresholds and a tick per image
/// removal: hand-written SVG, viewable in any browser.
pub fn svg(sim: &Simulation) -> String {
    const W: f64 = 900.0;
    const H: f64 = 360.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 30.0;
    const BOTTOM: f64 = 40.0;
    let span = sim.end.duration_since(sim.start).as_secs_f64().max(1.0);
    let x =
        |t: Timestamp| LEFT + (W - LEFT - RIGHT) * t.duration_since(sim.start).as_secs_f64() / span;
    let y = |pct: f64| TOP + (H - TOP - BOTTOM) * (1.0 - pct.clamp(0.0, 100.0) / 100.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="18">Image filesystem usage, {} to {} (kgc node simulate)</text>"#,
        sim.start.strftime("%Y-%m-%d %H:%M"),
        sim.end.strftime("%Y-%m-%d %H:%M")
    );
    for pct in [0.0, 25.0, 50.0, 75.0, 100.0] {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{pct}%</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y(pct) + 4.0,
            y = y(pct),
        );
    }
    let days = (span / 86_400.0).ceil() as i64;
    let every = (days / 10).max(1);
    for d in (0..=days).step_by(usize::try_from(every).unwrap_or(1)) {
        let t = sim.start + SignedDuration::from_hours(24 * d);
        if t > sim.end {
            break;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">day {d}</text>"#,
            x(t),
            H - BOTTOM + 18.0
        );
    }
    for (pct, colour, label) in [
        (sim.high_threshold_percent, "#c0392b", "high"),
        (sim.low_threshold_percent, "#e67e22", "low"),
    ] {
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="{colour}" stroke-dasharray="6 4"/><text x="{}" y="{:.1}" fill="{colour}" text-anchor="end">{label} {pct}%</text>"#,
            W - RIGHT,
            W - RIGHT - 4.0,
            y(f64::from(pct)) - 4.0,
            yy = y(f64::from(pct)),
        );
    }
    for e in sim.events.iter().filter(|e| e.kind == "image") {
        let _ = writeln!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{}" y2="{}" stroke="#7f8c8d"><title>{} removed ({})</title></line>"##,
            H - BOTTOM,
            H - BOTTOM - 8.0,
            xml_escape(&e.id),
            e.reason,
            xx = x(e.time),
        );
    }
    let mut points = String::new();
    for p in &sim.samples {
        let _ = write!(points, "{:.1},{:.1} ", x(p.time), y(p.usage_percent));
    }
    let _ = writeln!(
        s,
        r##"<polyline fill="none" stroke="#2c3e50" stroke-width="1.5" points="{}"/>"##,
        points.trim_end()
    );
    s.push_str("</svg>\n");
    s
}

fn xml_escape(v: &str) -> String {
    v.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Container, FsStats, Image, Pod};

    fn at(h: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + h * 3600).expect("valid")
    }

    #[test]
    fn unused_images_go_when_pulls_cross_the_high_threshold() {
        let gb = 1_000_000_000u64;
        let image = |id: &str, pulled: i64| Image {
            id: id.into(),
            size: Some(gb),
            first_detected: Some(at(pulled)),
            ..Image::default()
        };
        let snapshot = Snapshot {
            time: at(0),
            image_fs: Some(FsStats {
                mountpoint: String::new(),
                capacity_bytes: 10 * gb,
                available_bytes: 3 * gb,
            }),
            images: vec![
                image("a", -48),
                image("b", -24),
                image("c", 24),
                image("d", 48),
            ],
            containers: vec![Container {
                id: "web".into(),
                name: "web".into(),
                pod_uid: Some("p".into()),
                image_id: "b".into(),
                state: ContainerState::Running,
                created_at: at(-24),
                ..Container::default()
            }],
            pods: Some(vec![Pod {
                uid: "p".into(),
                ..Pod::default()
            }]),
            ..Snapshot::default()
        };
        let sim = simulate(
            &snapshot,
            &Policy::default(),
            Duration::from_secs(3 * 86_400),
        )
        .expect("simulate");
        // Pulling c (80%) stays below 85; pulling d (90%) triggers GC, which frees the least
        // recently used unused image (a, never used) to get back to 80%.
        let removed: Vec<&str> = sim
            .events
            .iter()
            .filter(|e| e.kind == "image")
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(removed, ["a"]);
        let first = sim
            .events
            .iter()
            .find(|e| e.kind == "image")
            .expect("event");
        assert!(
            first.time >= at(48) && first.time < at(49),
            "{}",
            first.time
        );
        let last = sim.samples.last().expect("samples");
        assert!(last.usage_percent <= 80.0, "{}", last.usage_percent);
        let svg = svg(&sim);
        assert!(svg.starts_with("<svg") && svg.contains("polyline") && svg.contains("high 85%"));
    }
}
