//! Planning cost over a large node: 10,000 images and 100,000 containers (×1, ×2, ×4, ×8),
//! to check the < 100 ms target and linear growth. The node looks like a real one where it
//! matters to speed: ids are random hex and UUIDs, creation times have nanoseconds, the
//! runtime lists containers and sandboxes in no particular order, and the lists are decoded
//! and converted by the CRI client's own code, as `kgc node gc` records them.
//!
//! `cargo run --release -p kgc-node --example node_bench [--no-cpu-clock] [--cold] [SCALE...]`:
//! a SCALE may be a fraction (`0.25`), to see what a container costs while a pass's memory
//! still fits the caches. All the scales' nodes are built first, then their passes take turns,
//! so that the ratio of two scales holds still on a noisy host. `--cold` evicts the caches
//! before every pass, as a pass every few minutes finds them: back to back, a small node's
//! passes find much of the last pass's memory still in the last-level cache, which no pass of
//! `kgc node gc --every` does. Under valgrind, pass `--no-cpu-clock` and count instructions
//! with `--toggle-collect='kgc_node::plan::plan*'`: the work per container, free of the caches.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use kgc_node::cri::api;
use kgc_node::snapshot::{Container, FsStats, Image, Pod, Sandbox, Snapshot};
use kgc_node::{GcState, Policy, plan};
use prost::Message;
use std::hash::BuildHasher;

/// The allocator of the `kgc` binary, so that a pass here allocates and frees as it does in
/// `kgc node gc`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

fn snapshot(scale: f64) -> Snapshot {
    let now = Timestamp::from_second(1_800_000_000).expect("valid");
    let ago = |secs: usize| now - SignedDuration::from_secs(i64::try_from(secs).unwrap_or(0));
    let ns = |t: Timestamp| i64::try_from(t.as_nanosecond()).unwrap_or(0);
    let images = (10_000.0 * scale).round() as usize;
    let pods = (20_000.0 * scale).round() as usize;
    let image = |i: usize| format!("sha256:{}", hex_id(0, i));
    let sandbox = |p: usize, n: usize| hex_id(1, p * 2 + n);
    let map = |pairs: &[(&str, String)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect()
    };
    let listed_images: Vec<api::Image> = (0..images)
        .map(|i| api::Image {
            id: image(i),
            repo_tags: vec![format!("registry.example/app-{i}:v1")],
            repo_digests: vec![format!("registry.example/app-{i}@{}", image(i))],
            size: 50_000_000 + (i as u64 % 1000) * 100_000,
            pinned: i % 997 == 0,
            ..api::Image::default()
        })
        .collect();
    let mut containers = Vec::with_capacity(pods * 5);
    let mut sandboxes = Vec::with_capacity(pods * 2);
    for p in 0..pods {
        let pod = format!("app-{p}");
        let kubelet_labels = |container: Option<&str>| {
            let mut labels = map(&[
                ("io.kubernetes.pod.name", pod.clone()),
                ("io.kubernetes.pod.namespace", "default".into()),
                ("io.kubernetes.pod.uid", pod_uid(p)),
            ]);
            match container {
                Some(name) => {
                    labels.insert("io.kubernetes.container.name".into(), name.into());
                }
                None => {
                    labels.insert("app".into(), "app".into());
                    labels.insert("pod-template-hash".into(), format!("{:x}", mix(p as u64)));
                }
            }
            labels
        };
        // Five containers per pod: one running, four dead attempts of two names.
        for c in 0..5 {
            let id = p * 5 + c;
            let name = format!("ctr-{}", c % 2);
            let created = ago(3600 * (5 - c) + p % 600) + nanos(2, id);
            let image_id = image((p * 3 + c) % (images / 2));
            containers.push(api::Container {
                id: hex_id(2, id),
                pod_sandbox_id: sandbox(p, c % 2),
                metadata: Some(api::ContainerMetadata {
                    name: name.clone(),
                    attempt: u32::try_from(c).unwrap_or(0),
                }),
                image: Some(api::ImageSpec {
                    image: image_id.clone(),
                    ..api::ImageSpec::default()
                }),
                image_ref: image_id.clone(),
                state: if c == 4 {
                    api::ContainerState::ContainerRunning
                } else {
                    api::ContainerState::ContainerExited
                } as i32,
                created_at: ns(created),
                labels: kubelet_labels(Some(&name)),
                annotations: map(&[
                    (
                        "io.kubernetes.container.hash",
                        format!("{:08x}", mix(id as u64) as u32),
                    ),
                    ("io.kubernetes.container.restartCount", c.to_string()),
                    (
                        "io.kubernetes.container.terminationMessagePath",
                        "/dev/termination-log".into(),
                    ),
                    (
                        "io.kubernetes.container.terminationMessagePolicy",
                        "File".into(),
                    ),
                    ("io.kubernetes.pod.terminationGracePeriod", "30".into()),
                ]),
                image_id,
            });
        }
        for n in 0..2 {
            sandboxes.push(api::PodSandbox {
                id: sandbox(p, n),
                metadata: Some(api::PodSandboxMetadata {
                    name: pod.clone(),
                    uid: pod_uid(p),
                    namespace: "default".into(),
                    attempt: u32::try_from(n).unwrap_or(0),
                }),
                state: if n == 1 {
                    api::PodSandboxState::SandboxReady
                } else {
                    api::PodSandboxState::SandboxNotready
                } as i32,
                created_at: ns(ago(7200 * (2 - n)) + nanos(1, p * 2 + n)),
                labels: kubelet_labels(None),
                annotations: map(&[
                    (
                        "kubernetes.io/config.seen",
                        "2027-01-15T08:00:00.000000000Z".into(),
                    ),
                    ("kubernetes.io/config.source", "api".into()),
                ]),
                ..api::PodSandbox::default()
            });
        }
    }
    // A runtime lists containers and sandboxes in no particular order (containerd walks a
    // map). The node is what `kgc node gc` would record: each list encoded as the runtime's
    // answer, decoded and converted as the CRI client does, so that the strings lie where a
    // decoder puts them, among the labels and annotations it then frees.
    shuffle(&mut containers, 4);
    shuffle(&mut sandboxes, 5);
    // As `CriClient::snapshot`: the three answers are received, then converted while all are
    // whole, then freed.
    let images_answer = received(api::ListImagesResponse {
        images: listed_images,
    });
    let containers_answer = received(api::ListContainersResponse { containers });
    let sandboxes_answer = received(api::ListPodSandboxResponse { items: sandboxes });
    let mut images: Vec<Image> = converted(&images_answer.images);
    let containers: Vec<Container> = converted(&containers_answer.containers);
    let sandboxes: Vec<Sandbox> = converted(&sandboxes_answer.items);
    // The image history a GC loop has kept (a recorded snapshot carries it too).
    for (i, image) in images.iter_mut().enumerate() {
        image.first_detected = Some(ago(86_400 + i));
        image.last_used = Some(ago(i * 7 % 86_400));
    }
    let s = Snapshot {
        time: now,
        image_fs: Some(FsStats {
            mountpoint: "/var/lib/containerd".into(),
            capacity_bytes: 1 << 40,
            available_bytes: 1 << 36, // 94% used: space-based GC runs
        }),
        images,
        containers,
        sandboxes,
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
        pod_log_dirs: (0..pods)
            .map(|p| format!("default_app-{p}_{}", pod_uid(p)))
            .collect(),
    };
    drop((images_answer, containers_answer, sandboxes_answer));
    s
}

/// A runtime's answer as the client receives it: encoded, then decoded, so that its strings
/// are allocated in decode order.
fn received<M: Message + Default>(answer: M) -> M {
    M::decode(answer.encode_to_vec().as_slice()).expect("the benchmark's own encoding")
}

/// Converted by the CRI client's own code, while the answer is whole.
fn converted<'a, A, T>(items: &'a [A]) -> Vec<T>
where
    T: TryFrom<&'a A>,
    T::Error: std::fmt::Debug,
{
    items
        .iter()
        .map(|item| T::try_from(item).expect("valid"))
        .collect()
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

/// Set by `--no-cpu-clock`, for valgrind: it cannot run rustix's vDSO lookup, and the CPU time
/// of a pass under it means nothing anyway (count its instructions instead). The CPU columns
/// then show wall time.
static NO_CPU_CLOCK: AtomicBool = AtomicBool::new(false);

fn cpu_time() -> Duration {
    if NO_CPU_CLOCK.load(Ordering::Relaxed) {
        static START: OnceLock<Instant> = OnceLock::new();
        return START.get_or_init(Instant::now).elapsed();
    }
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The floor a pass stands on: every string of every container and sandbox hashed in list
/// order, nothing kept. What a pass costs above this is its own tables'.
fn read_strings(s: &Snapshot) {
    let hasher = kgc_node::hash::FxBuild::default();
    let mut fold = 0u64;
    for c in &s.containers {
        let uid = c.pod_uid.as_deref().unwrap_or_default();
        for id in [c.id.as_str(), &c.sandbox_id, &c.image_id, &c.name, uid] {
            fold ^= hasher.hash_one(id);
        }
    }
    for sandbox in &s.sandboxes {
        fold ^= hasher.hash_one(&sandbox.id) ^ hasher.hash_one(&sandbox.pod_uid);
    }
    std::hint::black_box(fold);
}

/// The median CPU time of five runs of `f`.
fn median_cpu(mut f: impl FnMut()) -> Duration {
    let mut cpu: Vec<Duration> = (0..5)
        .map(|_| {
            let start = cpu_time();
            f();
            cpu_time().saturating_sub(start)
        })
        .collect();
    cpu.sort();
    cpu[2]
}

/// Passes per scale. The scales' passes take turns (one pass of each, round after round), so
/// that a noisy host weighs on every scale alike and their ratio holds still.
const PASSES: usize = 7;

fn main() {
    let policy = Policy::default();
    println!(
        "| scale | images | containers | sandboxes | wall (median of {PASSES}) | CPU (median of {PASSES}) | CPU (least of {PASSES}) | CPU (first pass) | CPU per container (median) | per container, to the first scale's | removals | reading only, per container |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flag = |name: &str| {
        let k = args.iter().position(|a| a == name);
        k.map(|k| args.remove(k)).is_some()
    };
    if flag("--no-cpu-clock") {
        NO_CPU_CLOCK.store(true, Ordering::Relaxed);
    }
    // Twice this EPYC's 32 MiB L3, written line by line: every line a pass left is evicted.
    let mut evict = flag("--cold").then(|| vec![0u8; 64 << 20]);
    // `bench 1` runs one scale only (for profiling, or a fraction of ×1); `bench 1 8` two.
    let scales: Vec<f64> = if args.is_empty() {
        vec![1.0, 2.0, 4.0, 8.0]
    } else {
        args.iter()
            .map(|arg| {
                let scale: f64 = arg.parse().expect("scale: a number");
                // Containers' images are picked among the first half of the images.
                assert!(scale >= 0.001, "scale: 0.001 or more (10 images at least)");
                scale
            })
            .collect()
    };
    let nodes: Vec<(f64, Snapshot, Duration)> = scales
        .into_iter()
        .map(|scale| {
            let s = snapshot(scale);
            let read = median_cpu(|| read_strings(&s));
            (scale, s, read)
        })
        .collect();
    let mut times = vec![Vec::new(); nodes.len()];
    let mut cpu = vec![Vec::new(); nodes.len()];
    let mut removals = vec![0; nodes.len()];
    for _ in 0..PASSES {
        for (k, (_, s, _)) in nodes.iter().enumerate() {
            if let Some(junk) = &mut evict {
                junk.iter_mut()
                    .step_by(64)
                    .for_each(|b| *b = b.wrapping_add(1));
                std::hint::black_box(&junk);
            }
            let mut state = GcState::default();
            let start = Instant::now();
            let start_cpu = cpu_time();
            let p = plan(s, &policy, &mut state).expect("plan");
            cpu[k].push(cpu_time().saturating_sub(start_cpu));
            times[k].push(start.elapsed());
            removals[k] = p.containers.len()
                + p.sandboxes.len()
                + p.pod_log_dirs.len()
                + p.images.removals.len();
        }
    }
    let per_container =
        |k: usize, d: Duration| d.as_secs_f64() * 1e9 / nodes[k].1.containers.len().max(1) as f64;
    let mut base = None;
    for (k, (scale, s, read)) in nodes.iter().enumerate() {
        // The first pass touches all of its memory for the first time (page faults, at every
        // scale); later ones reuse what the allocator kept, which is all of it for a small
        // node and less of it for a large one (the allocator returns large free areas to the
        // kernel).
        let first = cpu[k][0];
        times[k].sort();
        cpu[k].sort();
        let median = PASSES / 2;
        let each = per_container(k, cpu[k][median]);
        let base = *base.get_or_insert(each);
        println!(
            "| ×{scale} | {} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {each:.0} ns | {:.2} | {} | {:.0} ns |",
            s.images.len(),
            s.containers.len(),
            s.sandboxes.len(),
            times[k][median].as_secs_f64() * 1000.0,
            cpu[k][median].as_secs_f64() * 1000.0,
            cpu[k][0].as_secs_f64() * 1000.0,
            first.as_secs_f64() * 1000.0,
            each / base,
            removals[k],
            per_container(k, *read),
        );
    }
}
