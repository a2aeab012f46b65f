//! The owner-reference collector's benchmark, in-process (the collector and the store in one
//! process, as inside `kgc serve`):
//!
//! ```text
//! cargo run --release -p kgc-gc --example gc_bench -- [--dependents 100000] [--workers 20] [--durable]
//!     [--only background|foreground|tree] [--pause SECONDS]
//! cargo run --release -p kgc-gc --example gc_bench -- --http target/release/kgc [--dependents N]
//! ```
//!
//! In-process, it runs a background and a foreground cascade of one owner with `--dependents`
//! dependents, and a three-level tree (1,000 Deployments × 10 ReplicaSets × 10 Pods), and reports
//! collected objects per second, the process's CPU time per collected object (steadier than wall
//! time on a busy machine), API requests per collected object (the collector's GET, DELETE and
//! PATCH calls), graph bytes per tracked object and the process's peak RSS.
//!
//! With `--http KGC`, the same cascades run over HTTP: the objects are written to a store file
//! first, served by `KGC serve --disable gc`, and collected by `KGC controller`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use kgc_gc::{Config, GarbageCollector};
use kgc_inprocess::InProcess;
use kgc_meta::{DeleteOptions, PropagationPolicy, ResourceInfo};
use kgc_store::Store;
use serde_json::{Value, json};

struct Args {
    dependents: usize,
    workers: usize,
    durable: bool,
    http: Option<std::path::PathBuf>,
    /// Run only this in-process scenario (`background`, `foreground` or `tree`).
    only: Option<String>,
    /// Seconds to wait, once the graph is built, before each cascade (to attach a profiler).
    pause: u64,
}

fn args() -> Args {
    let mut a = Args {
        dependents: 100_000,
        workers: 20,
        durable: false,
        http: None,
        only: None,
        pause: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dependents" => {
                a.dependents = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(a.dependents)
            }
            "--workers" => a.workers = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.workers),
            "--durable" => a.durable = true,
            "--http" => a.http = it.next().map(Into::into),
            "--only" => a.only = it.next(),
            "--pause" => a.pause = it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            other => {
                eprintln!(
                    "gc_bench: unknown flag {other}; flags: --dependents N --workers N --durable \
                     --http KGC --only background|foreground|tree --pause SECONDS"
                );
                std::process::exit(2);
            }
        }
    }
    a
}

/// CPU time this process has used (user + system), from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let ticks: u64 = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // After the parenthesised name come fields 3, 4, …; utime and stime are 14 and 15.
            let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn proc_status(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

async fn open(durable: bool) -> (Store, Option<tempfile::TempDir>) {
    if durable {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("kgc.db")).await.expect("open");
        (store, Some(dir))
    } else {
        (Store::in_memory().await.expect("store"), None)
    }
}

fn info(store: &Store, group: &str, version: &str, resource: &str) -> Arc<ResourceInfo> {
    store
        .catalog()
        .get(group, version, resource)
        .cloned()
        .expect("built in")
}

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
           "controller": true, "blockOwnerDeletion": true})
}

/// Creates `objects` (namespace, body) concurrently, returning their uids in order.
async fn create_all(store: &Store, info: &Arc<ResourceInfo>, bodies: Vec<Value>) -> Vec<String> {
    let chunks: Vec<Vec<(usize, Value)>> = {
        let mut chunks: Vec<Vec<(usize, Value)>> = (0..64).map(|_| Vec::new()).collect();
        for (i, b) in bodies.into_iter().enumerate() {
            chunks[i % 64].push((i, b));
        }
        chunks
    };
    let results = join_all(chunks.into_iter().map(|chunk| {
        let store = store.clone();
        let info = Arc::clone(info);
        tokio::spawn(async move {
            let mut out = Vec::with_capacity(chunk.len());
            for (i, b) in chunk {
                let o = store
                    .create(&info, "bench", b, false)
                    .await
                    .expect("create");
                out.push((i, o.uid.clone()));
            }
            out
        })
    }))
    .await;
    let mut all: Vec<(usize, String)> =
        results.into_iter().flat_map(|r| r.expect("task")).collect();
    all.sort();
    all.into_iter().map(|(_, u)| u).collect()
}

struct Run {
    name: String,
    tracked: usize,
    collected: usize,
    elapsed: Duration,
    /// CPU time the whole process used during the cascade (steadier than wall time on a busy
    /// machine).
    cpu: Duration,
    requests: u64,
    graph_bytes: usize,
}

/// `--pause`: announces the cascade and waits, so that a profiler can attach to it alone.
async fn pause(a: &Args) {
    if a.pause > 0 {
        eprintln!(
            "cascade starts in {} s (pid {})",
            a.pause,
            std::process::id()
        );
        tokio::time::sleep(Duration::from_secs(a.pause)).await;
    }
}

/// Starts a collector and waits until its graph holds `expect` nodes and it is idle.
async fn start_gc(
    store: &Store,
    workers: usize,
    expect: usize,
) -> (GarbageCollector<InProcess>, tokio::task::JoinHandle<()>) {
    let gc = GarbageCollector::new(
        InProcess::new(store.clone()),
        Config {
            workers,
            resync: Duration::from_secs(3600),
            ..Config::default()
        },
    );
    let runner = gc.clone();
    let task = tokio::spawn(async move { runner.run().await });
    while gc.graph_len() < expect || gc.pending_work() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (gc, task)
}

fn requests(gc: &GarbageCollector<InProcess>) -> u64 {
    let m = gc.metrics().api_requests();
    m.get + m.delete + m.patch
}

/// Waits until the store holds `n` fewer objects than `before`. (Counting watch events instead
/// would fall behind the watch log's window on a fast cascade.)
async fn wait_deleted(store: &Store, before: usize, n: usize) {
    while store.len() > before - n {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Creates the `bench` namespace every run's objects live in.
async fn create_namespace(store: &Store) {
    let ns = info(store, "", "v1", "namespaces");
    store
        .create(
            &ns,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
            false,
        )
        .await
        .expect("namespace");
}

async fn populate_fan_out(store: &Store, n: usize) -> Arc<ResourceInfo> {
    create_namespace(store).await;
    let cm = info(store, "", "v1", "configmaps");
    let owner = store
        .create(
            &cm,
            "bench",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
            false,
        )
        .await
        .expect("owner");
    let bodies = (0..n)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("dep-{i}"), "labels": {"app": "bench"},
                                "ownerReferences": [owner_ref("v1", "ConfigMap", "owner", &owner.uid)]},
                   "data": {"k": "v"}})
        })
        .collect();
    create_all(store, &cm, bodies).await;
    cm
}

async fn fan_out(a: &Args, policy: PropagationPolicy) -> Run {
    let (store, _dir) = open(a.durable).await;
    let cm = populate_fan_out(&store, a.dependents).await;
    let tracked = store.len();
    let (gc, task) = start_gc(&store, a.workers, tracked).await;
    let graph_bytes = gc.graph_bytes() / gc.graph_len().max(1);
    pause(a).await;
    let before = requests(&gc);
    let cpu = cpu_time();
    let started = Instant::now();
    let opts = DeleteOptions {
        propagation_policy: Some(policy),
        ..DeleteOptions::default()
    };
    store
        .delete(&cm, "bench", "owner", &opts)
        .await
        .expect("delete owner");
    wait_deleted(&store, tracked, a.dependents + 1).await;
    let elapsed = started.elapsed();
    if a.pause > 0 {
        eprintln!("cascade done");
    }
    let run = Run {
        name: format!(
            "{} cascade, 1 owner × {} dependents",
            policy.as_str(),
            a.dependents
        ),
        tracked,
        collected: a.dependents,
        elapsed,
        cpu: cpu_time() - cpu,
        requests: requests(&gc) - before,
        graph_bytes,
    };
    task.abort();
    run
}

async fn tree(a: &Args) -> Run {
    let (store, _dir) = open(a.durable).await;
    create_namespace(&store).await;
    let (deploy, rs, pod) = (
        info(&store, "apps", "v1", "deployments"),
        info(&store, "apps", "v1", "replicasets"),
        info(&store, "", "v1", "pods"),
    );
    let template = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let deployments: Vec<Value> = (0..1000)
        .map(|d| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("d{d}")},
                        "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "x"}}, "template": template}}))
        .collect();
    let d_uids = create_all(&store, &deploy, deployments).await;
    let replicasets: Vec<Value> = (0..10_000)
        .map(|r| {
            let d = r / 10;
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": format!("d{d}-rs{r}"), "ownerReferences": [owner_ref("apps/v1", "Deployment", &format!("d{d}"), &d_uids[d])]},
                   "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "x"}}, "template": template}})
        })
        .collect();
    let rs_uids = create_all(&store, &rs, replicasets).await;
    let pods: Vec<Value> = (0..100_000)
        .map(|p| {
            let r = p / 10;
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": format!("d{}-rs{r}-p{p}", r / 10), "ownerReferences": [owner_ref("apps/v1", "ReplicaSet", &format!("d{}-rs{r}", r / 10), &rs_uids[r])]},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        })
        .collect();
    create_all(&store, &pod, pods).await;
    let tracked = store.len();
    let (gc, task) = start_gc(&store, a.workers, tracked).await;
    let graph_bytes = gc.graph_bytes() / gc.graph_len().max(1);
    pause(a).await;
    let before = requests(&gc);
    let cpu = cpu_time();
    let started = Instant::now();
    let opts = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteOptions::default()
    };
    join_all((0..1000).map(|d| {
        let (store, deploy, opts) = (store.clone(), Arc::clone(&deploy), opts.clone());
        async move {
            store
                .delete(&deploy, "bench", &format!("d{d}"), &opts)
                .await
                .expect("delete")
        }
    }))
    .await;
    wait_deleted(&store, tracked, 111_000).await;
    let elapsed = started.elapsed();
    if a.pause > 0 {
        eprintln!("cascade done");
    }
    let run = Run {
        name: "three-level tree, 1,000 Deployments × 10 ReplicaSets × 10 Pods (background)".into(),
        tracked,
        collected: 110_000,
        elapsed,
        cpu: cpu_time() - cpu,
        requests: requests(&gc) - before,
        graph_bytes,
    };
    task.abort();
    run
}

/// A plain HTTP/1.1 request: status and body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).expect("connecting");
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("writing");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("reading");
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, rest.to_owned())
}

/// A counter or gauge from Prometheus text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Spawns `kgc <args>` and returns it with the address it announced on stdout.
fn spawn(kgc: &std::path::Path, args: &[&str], announce: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(kgc)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawning kgc");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("kgc announced its address")
            .expect("a line");
        if let Some(u) = line.strip_prefix(announce) {
            break u.trim().trim_start_matches("http://").to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

/// The fan-out cascades over HTTP: `kgc serve --disable gc` plus `kgc controller`.
async fn over_http(a: &Args, kgc: &std::path::Path, policy: PropagationPolicy) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = Store::open(&dir.path().join("kgc.db")).await.expect("open");
        populate_fan_out(&store, a.dependents).await;
        store.close();
    }
    let data = dir.path().to_string_lossy().into_owned();
    let (mut serve, api) = spawn(
        kgc,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data,
            "--disable",
            "gc",
            "--insecure-http",
        ],
        "kgc serve: listening on ",
    );
    let kubeconfig = format!("{data}/kubeconfig");
    let workers = a.workers.to_string();
    let (mut controller, ctl) = spawn(
        kgc,
        &[
            "controller",
            "--kubeconfig",
            &kubeconfig,
            "--listen",
            "127.0.0.1:0",
            "--leader-elect=false",
            "--gc-workers",
            &workers,
        ],
        "kgc controller: listening on ",
    );
    let objects =
        |api: &str| metric(&http(api, "GET", "/metrics", "").1, "kgc_store_objects") as usize;
    let tracked = objects(&api);
    while metric(&http(&ctl, "GET", "/metrics", "").1, "kgc_gc_graph_nodes") < tracked as f64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gc_requests = |ctl: &str| {
        let m = http(ctl, "GET", "/metrics", "").1;
        metric(&m, "kgc_gc_api_requests_total")
    };
    let before = gc_requests(&ctl);
    let started = Instant::now();
    let body = format!("{{\"propagationPolicy\":\"{}\"}}", policy.as_str());
    let (status, _) = http(
        &api,
        "DELETE",
        "/api/v1/namespaces/bench/configmaps/owner",
        &body,
    );
    assert!(
        status == 200 || status == 202,
        "deleting the owner: {status}"
    );
    while objects(&api) > tracked - a.dependents - 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    let requests = (gc_requests(&ctl) - before) as u64;
    let _ = controller.kill();
    let _ = serve.kill();
    Run {
        name: format!(
            "{} cascade over HTTP (kgc controller, {} workers)",
            policy.as_str(),
            a.workers
        ),
        tracked,
        collected: a.dependents,
        elapsed,
        cpu: Duration::ZERO,
        requests,
        graph_bytes: 0,
    }
}

#[tokio::main]
async fn main() {
    let a = args();
    if let Some(kgc) = a.http.clone() {
        println!(
            "kgc-gc over HTTP: {} cores",
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        );
        for policy in [PropagationPolicy::Background, PropagationPolicy::Foreground] {
            let r = over_http(&a, &kgc, policy).await;
            println!(
                "{:<64} tracked {:>7}  {:>8.3} s  {:>9.0} objects/s  {:.3} GC requests/object",
                r.name,
                r.tracked,
                r.elapsed.as_secs_f64(),
                r.collected as f64 / r.elapsed.as_secs_f64(),
                r.requests as f64 / r.collected as f64
            );
        }
        return;
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "kgc-gc in-process benchmark: {cores} cores, {} store, {} workers per queue",
        if a.durable {
            "durable (SQLite, group commit)"
        } else {
            "in-memory"
        },
        a.workers
    );
    let wanted = |name: &str| a.only.as_deref().is_none_or(|o| o == name);
    let mut runs = Vec::new();
    if wanted("background") {
        runs.push(fan_out(&a, PropagationPolicy::Background).await);
    }
    if wanted("foreground") {
        runs.push(fan_out(&a, PropagationPolicy::Foreground).await);
    }
    if wanted("tree") {
        runs.push(tree(&a).await);
    }
    println!(
        "{:<78} {:>9} {:>10} {:>12} {:>12} {:>13} {:>12}",
        "run", "tracked", "seconds", "objects/s", "CPU µs/obj", "requests/obj", "graph B/obj"
    );
    for r in &runs {
        println!(
            "{:<78} {:>9} {:>10.3} {:>12.0} {:>12.1} {:>13.3} {:>12}",
            r.name,
            r.tracked,
            r.elapsed.as_secs_f64(),
            r.collected as f64 / r.elapsed.as_secs_f64(),
            r.cpu.as_secs_f64() * 1e6 / r.collected as f64,
            r.requests as f64 / r.collected as f64,
            r.graph_bytes,
        );
    }
    println!(
        "peak RSS of the whole process (store, graph, watch log): {} MiB",
        proc_status("VmHWM:") / 1024
    );
}
