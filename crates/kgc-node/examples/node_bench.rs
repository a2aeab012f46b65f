//! Planning cost over a large node: 10,000 images and 100,000 containers (×1, ×2, ×4), to
//! check the < 100 ms target and linear growth. The node looks like a real one where it
//! matters to speed: ids are random hex and UUIDs, creation times have nanoseconds, and the
//! runtime lists containers and sandboxes in no particular order.
//!
//! `cargo run --release -p kgc-node --example node_bench [SCALE]`

use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use kgc_node::snapshot::{
    Container, ContainerState, FsStats, Image, Pod, Sandbox, SandboxState, Snapshot,
};
use kgc_node::{GcState, Policy, plan};

/// SplitMix64: a well-spread stream of numbers from a counter, so the ids look like a
/// runtime's (random hex) instead of counting up, which would flatter hash tables with
/// accidental locality.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A 64-hex-digit id, as containerd's container and sandbox ids and image digests.
fn hex_id(kind: u64, i: usize) -> String {
    let seed = mix(kind << 40 ^ i as u64);
    (0..4u64)
        .map(|k| format!("{:016x}", mix(seed ^ k)))
        .collect()
}

/// A pod uid as the API server assigns it (a UUID).
fn pod_uid(p: usize) -> String {
    let a = mix(3 << 40 ^ p as u64);
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn snapshot(scale: usize) -> Snapshot {
    let now = Timestamp::from_second(1_800_000_000).expect("valid");
    let ago = |secs: usize| now - SignedDuration::from_secs(i64::try_from(secs).unwrap_or(0));
    let images = 10_000 * scale;
    let pods = 20_000 * scale;
    let image = |i: usize| format!("sha256:{}", hex_id(0, i));
    let sandbox = |p: usize, n: usize| hex_id(1, p * 2 + n);
    let mut s = Snapshot {
        time: now,
        image_fs: Some(FsStats {
            mountpoint: "/var/lib/containerd".into(),
            capacity_bytes: 1 << 40,
            available_bytes: 1 << 36, // 94% used: space-based GC runs
        }),
        images: (0..images)
            .map(|i| Image {
                id: image(i),
                repo_tags: vec![format!("registry.example/app-{i}:v1")],
                size: Some(50_000_000 + (i as u64 % 1000) * 100_000),
                pinned: i % 997 == 0,
                first_detected: Some(ago(86_400 + i)),
                last_used: Some(ago(i * 7 % 86_400)),
            })
            .collect(),
        pods: Some(
            (0..pods)
                .map(|p| Pod {
                    uid: pod_uid(p),
                    terminated: p % 10 == 0,
                    deleted: p % 20 == 0,
                    evicted: false,
                })
                .collect(),
        ),
        ..Snapshot::default()
    };
    for p in 0..pods {
        // Five containers per pod: one running, four dead attempts of two names.
        for c in 0..5 {
            let id = p * 5 + c;
            s.containers.push(Container {
                id: hex_id(2, id),
                sandbox_id: sandbox(p, c % 2),
                name: format!("ctr-{}", c % 2),
                attempt: u32::try_from(c).unwrap_or(0),
                pod_uid: Some(pod_uid(p)),
                image_id: image((p * 3 + c) % (images / 2)),
                state: if c == 4 {
                    ContainerState::Running
                } else {
                    ContainerState::Exited
                },
                created_at: ago(3600 * (5 - c) + p % 600) + nanos(2, id),
                finished_at: None,
            });
        }
        for n in 0..2 {
            s.sandboxes.push(Sandbox {
                id: sandbox(p, n as usize),
                pod_uid: pod_uid(p),
                name: format!("app-{p}"),
                namespace: "default".into(),
                attempt: n,
                state: if n == 1 {
                    SandboxState::Ready
                } else {
                    SandboxState::NotReady
                },
                created_at: ago(7200 * (2 - n as usize)) + nanos(1, p * 2 + n as usize),
            });
        }
        s.pod_log_dirs
            .push(format!("default_app-{p}_{}", pod_uid(p)));
    }
    // A runtime lists containers and sandboxes in no particular order (containerd walks a
    // map), and its client allocates each one's strings as it decodes it: shuffle, then copy
    // each list so that its strings lie in listing order.
    // (Both copies are made before the originals are freed: the copies' strings must not
    // land in the holes the originals leave.)
    shuffle(&mut s.containers, 4);
    shuffle(&mut s.sandboxes, 5);
    let containers = s.containers.clone();
    let sandboxes = s.sandboxes.clone();
    s.containers = containers;
    s.sandboxes = sandboxes;
    s
}

/// A fixed Fisher–Yates shuffle.
fn shuffle<T>(items: &mut [T], seed: u64) {
    for i in (1..items.len()).rev() {
        let j = usize::try_from(mix(seed << 40 ^ i as u64) % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

/// Sub-second nanoseconds, as a runtime's creation times have.
fn nanos(kind: u64, i: usize) -> SignedDuration {
    SignedDuration::from_nanos(
        i64::try_from(mix(kind << 40 ^ i as u64) % 1_000_000_000).unwrap_or(0),
    )
}

fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn main() {
    let policy = Policy::default();
    println!(
        "| scale | images | containers | sandboxes | wall (median of 5) | CPU (median of 5) | CPU (least of 5) | CPU (first pass) | removals |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // `bench 1` runs one scale only (for profiling).
    let scales: Vec<usize> = match std::env::args().nth(1) {
        Some(arg) => vec![arg.parse().expect("scale: a number")],
        None => vec![1, 2, 4],
    };
    for scale in scales {
        let s = snapshot(scale);
        // Building the node freed millions of small temporaries; the allocator merges them
        // on its next large request. Make that request now, so that it is not charged to
        // the first pass.
        drop(std::hint::black_box(Vec::<u8>::with_capacity(1 << 20)));
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        let mut removals = 0;
        for _ in 0..5 {
            let mut state = GcState::default();
            let start = Instant::now();
            let start_cpu = cpu_time();
            let p = plan(&s, &policy, &mut state).expect("plan");
            cpu.push(cpu_time().saturating_sub(start_cpu));
            times.push(start.elapsed());
            removals = p.containers.len()
                + p.sandboxes.len()
                + p.pod_log_dirs.len()
                + p.images.removals.len();
        }
        // The first pass touches all of its memory for the first time (page faults, at every
        // scale); later ones reuse what the allocator kept, which is all of it for a small node
        // and little of it for a large one (glibc returns large free areas to the kernel).
        let first = cpu[0];
        times.sort();
        cpu.sort();
        println!(
            "| ×{scale} | {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {removals} |",
            s.images.len(),
            s.containers.len(),
            s.sandboxes.len(),
            times[2].as_secs_f64() * 1000.0,
            cpu[2].as_secs_f64() * 1000.0,
            cpu[0].as_secs_f64() * 1000.0,
            first.as_secs_f64() * 1000.0,
        );
    }
}
