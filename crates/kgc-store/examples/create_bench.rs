//! The store's create path alone (in memory, no HTTP, no fsync): what a create costs the store,
//! with its history and watch log, as `kgc serve` runs it.
//!
//! ```text
//! cargo run --release -p kgc-store --example create_bench -- [--creates 100000] [--rounds 3]
//! ```
//!
//! Creates `--creates` ConfigMaps (the shape `kgc-bench` posts) with one task, then as many with
//! 16 concurrent tasks on a 2-thread runtime, `--rounds` times, and prints the median time and
//! CPU time (this process, `/proc/self/stat`) per create of each.

use std::time::{Duration, Instant};

use kgc_store::Store;
use serde_json::json;

fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    // Linux reports clock ticks of 1/100 s.
    Duration::from_millis(fields.iter().sum::<u64>() * 10)
}

fn configmap(name: &str, i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {"app": "kgc-bench", "tier": "backend", "release": format!("r{}", i % 7)},
            "annotations": {"bench.kgc.io/index": i.to_string()},
        },
        "data": {"config.yaml": "log-level: info\nworkers: 4\n", "APP_MODE": "production"},
    })
}

/// Creates `n` ConfigMaps in `ns` with `tasks` concurrent tasks; wall and CPU time per create.
async fn run(store: &Store, ns: &str, n: usize, tasks: usize) -> (f64, f64) {
    let info = store
        .catalog()
        .get("", "v1", "configmaps")
        .cloned()
        .unwrap();
    let (t0, cpu0) = (Instant::now(), cpu_time());
    let mut set = tokio::task::JoinSet::new();
    for t in 0..tasks {
        let (store, info, ns) = (store.clone(), info.clone(), ns.to_owned());
        set.spawn(async move {
            for i in (t..n).step_by(tasks) {
                let obj = configmap(&format!("cm-{i:07}"), i);
                store.create(&info, &ns, obj, false).await.unwrap();
            }
        });
    }
    while set.join_next().await.is_some() {}
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    (per(t0.elapsed()), per(cpu_time() - cpu0))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut creates = 100_000;
    let mut rounds = 3;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let n = args.next().and_then(|v| v.parse().ok());
        match (flag.as_str(), n) {
            ("--creates", Some(n)) => creates = n,
            ("--rounds", Some(n)) => rounds = n,
            _ => panic!("flags: --creates N --rounds N"),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut results = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        for round in 0..rounds {
            // A fresh store per round, so every round starts from the same state.
            let store = Store::in_memory().await.unwrap();
            let ns = store.catalog().get("", "v1", "namespaces").cloned().unwrap();
            for name in ["one", "many"] {
                store
                    .create(&ns, "", json!({"metadata": {"name": name}}), false)
                    .await
                    .unwrap();
            }
            for (k, (ns, tasks)) in [("one", 1), ("many", 16)].into_iter().enumerate() {
                let (wall, cpu) = run(&store, ns, creates, tasks).await;
                println!("round {round}: {tasks:>2} task(s): {wall:.2} µs per create, CPU {cpu:.2} µs");
                results[k].0.push(wall);
                results[k].1.push(cpu);
            }
        }
        for (tasks, (wall, cpu)) in [1, 16].into_iter().zip(results) {
            println!(
                "median of {rounds}: {tasks:>2} task(s): {:.2} µs per create, CPU {:.2} µs ({creates} creates)",
                median(wall),
                median(cpu)
            );
        }
    });
}
