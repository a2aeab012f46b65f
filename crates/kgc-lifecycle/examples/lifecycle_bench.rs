//! The lifecycle collectors' benchmark, in-process (collectors and store in one process, as
//! inside `kgc serve`):
//!
//! ```text
//! cargo run --release -p kgc-lifecycle --example lifecycle_bench -- [--pods 100000] [--terminated 20000] [--jobs 10000] [--ttl-workers 5]
//! ```
//!
//! PodGC: one pass over `--pods` pods of which `--terminated` are Succeeded, with the default
//! threshold (12,500): the time to decide, the whole pass with its deletions, a second pass with
//! nothing to delete, and the memory of the pod cache.
//!
//! TTL: `--jobs` Jobs that all finished in the same second with the same TTL, so they expire
//! in the same second; the time from their expiry until every one is gone (Foreground deletion,
//! so the owner-reference collector runs too).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kgc_inprocess::InProcess;
use kgc_lifecycle::{Metrics, podgc, ttl};
use kgc_meta::ResourceInfo;
use kgc_store::{ListOptions, Store};
use kgc_testcluster::TestCluster;
use serde_json::{Value, json};

struct Args {
    pods: usize,
    terminated: usize,
    jobs: usize,
    ttl_workers: usize,
}

fn args() -> Args {
    let mut a = Args {
        pods: 100_000,
        terminated: 20_000,
        jobs: 10_000,
        ttl_workers: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let n = it.next().and_then(|v| v.parse().ok());
        match (flag.as_str(), n) {
            ("--pods", Some(n)) => a.pods = n,
            ("--terminated", Some(n)) => a.terminated = n,
            ("--jobs", Some(n)) => a.jobs = n,
            ("--ttl-workers", Some(n)) => a.ttl_workers = n,
            _ => panic!("flags: --pods N --terminated N --jobs N --ttl-workers N"),
        }
    }
    a
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn info(store: &Store, group: &str, plural: &str) -> Arc<ResourceInfo> {
    store
        .catalog()
        .resources()
        .find(|r| r.group == group && r.plural == plural)
        .cloned()
        .expect("a built-in resource")
}

/// Creates `objects` (namespace "bench") 256 at a time, then sets `status` on those given one.
async fn load(store: &Store, resource: &Arc<ResourceInfo>, objects: Vec<(Value, Option<Value>)>) {
    futures::stream::iter(objects)
        .map(|(obj, status)| {
            let (store, resource) = (store.clone(), Arc::clone(resource));
            async move {
                let name = obj["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                store
                    .create(&resource, "bench", obj, false)
                    .await
                    .expect("create");
                if let Some(status) = status {
                    store
                        .update(&resource, "bench", &name, Some("status"), false, |mut o| {
                            o["status"] = status;
                            Ok(o)
                        })
                        .await
                        .expect("status");
                }
            }
        })
        .buffer_unordered(256)
        .collect::<()>()
        .await;
}

fn count(store: &Store, resource: &ResourceInfo) -> usize {
    store
        .list(&resource.group_resource(), &ListOptions::default())
        .map(|l| l.items.len())
        .unwrap_or(0)
}

async fn namespace(store: &Store) {
    let ns = info(store, "", "namespaces");
    let _ = store
        .create(
            &ns,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
            false,
        )
        .await;
}

async fn bench_podgc(a: &Args) {
    let store = Store::in_memory().await.expect("store");
    namespace(&store).await;
    let pods = info(&store, "", "pods");
    let started = Instant::now();
    let objects = (0..a.pods)
        .map(|i| {
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("pod-{i:06}"), "namespace": "bench"},
                "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "busybox"}]}});
            let status = (i % (a.pods / a.terminated.max(1)).max(1) == 0)
                .then(|| json!({"phase": "Succeeded"}))
                .or(Some(json!({"phase": "Running"})));
            (pod, status)
        })
        .collect();
    load(&store, &pods, objects).await;
    let nodes = info(&store, "", "nodes");
    store
        .create(
            &nodes,
            "",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}}),
            false,
        )
        .await
        .expect("node");
    println!(
        "podgc: loaded {} pods in {:.1?}",
        count(&store, &pods),
        started.elapsed()
    );

    let before = rss_kib();
    let cluster = TestCluster::over(store.clone());
    let started = Instant::now();
    let metrics = Arc::new(Metrics::default());
    let gc = podgc::PodGc::start(cluster.context(), podgc::Config::default(), metrics).await;
    let synced = started.elapsed();
    let after = rss_kib();
    println!(
        "podgc: cache of {} pods synced in {synced:.1?}; RSS +{} MiB ({} bytes per pod)",
        gc.cached_pods(),
        after.saturating_sub(before) / 1024,
        after.saturating_sub(before) * 1024 / gc.cached_pods().max(1) as u64
    );
    let started = Instant::now();
    let report = gc.pass().await;
    println!(
        "podgc: pass 1: decided in {:.1?}, deleted {} terminated pods, whole pass {:.1?}",
        report.plan_time,
        report.terminated,
        started.elapsed()
    );
    let started = Instant::now();
    let report = gc.pass().await;
    println!(
        "podgc: pass 2 (nothing to delete): decided in {:.1?}, whole pass {:.1?}; {} pods remain",
        report.plan_time,
        started.elapsed(),
        count(&store, &pods)
    );
}

async fn bench_ttl(a: &Args) {
    let store = Store::in_memory().await.expect("store");
    namespace(&store).await;
    let jobs = info(&store, "batch", "jobs");
    let started = Instant::now();
    // They all finish in the current second and expire together, a few seconds on.
    let finished = jiff::Timestamp::now();
    let ttl_secs: i64 = 3 + (a.jobs as i64 / 2_000);
    let stamp = kgc_meta::time::format_time(finished);
    let objects = (0..a.jobs)
        .map(|i| {
            let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("job-{i:05}"), "namespace": "bench"},
                "spec": {"ttlSecondsAfterFinished": ttl_secs, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
            let status = json!({"conditions": [{"type": "Complete", "status": "True",
                "lastTransitionTime": stamp}], "completionTime": stamp});
            (job, Some(status))
        })
        .collect();
    load(&store, &jobs, objects).await;
    println!(
        "ttl: loaded {} Jobs in {:.1?}",
        count(&store, &jobs),
        started.elapsed()
    );

    let cluster = InProcess::new(store.clone());
    let gc = kgc_gc::GarbageCollector::new(cluster.clone(), kgc_gc::Config::default());
    let gc_task = tokio::spawn(async move { gc.run().await });
    let api = TestCluster::over(store.clone());
    let ttl_task = tokio::spawn(ttl::run(
        api.context(),
        ttl::Config {
            workers: a.ttl_workers,
        },
        Arc::new(Metrics::default()),
    ));
    let second: jiff::Timestamp = stamp.parse().expect("time");
    let expire_at = second + jiff::SignedDuration::from_secs(ttl_secs);
    let wait = expire_at.duration_since(jiff::Timestamp::now());
    if wait.is_positive() {
        tokio::time::sleep(Duration::try_from(wait).unwrap_or_default()).await;
    } else {
        println!("ttl: setup overran the expiry by {:.1?}", -wait);
    }
    let started = Instant::now();
    let mut remaining = count(&store, &jobs);
    while remaining > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        remaining = count(&store, &jobs);
        if started.elapsed() > Duration::from_secs(120) {
            println!("ttl: gave up with {remaining} Jobs left");
            break;
        }
    }
    println!(
        "ttl: {} Jobs expiring in the same second gone {:.2?} after their expiry ({} workers)",
        a.jobs,
        started.elapsed(),
        a.ttl_workers
    );
    ttl_task.abort();
    gc_task.abort();
}

#[tokio::main]
async fn main() {
    let a = args();
    println!(
        "cores: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    bench_podgc(&a).await;
    bench_ttl(&a).await;
}
