//! Cost of typed decoding per write: µs per body for `typed::decode` against the walk it
//! replaces (`prune_unknown_fields`), on the realistic Deployment, Pod and ConfigMap bodies of the
//! tests (and a kubectl-sized Deployment).
//!
//! `cargo run --release -p kgc-proto --example typed_bench [iterations]`
//!
//! Each figure is the fastest of 15 rounds of `iterations` decodes, each of a fresh copy of the
//! body made just before the clock starts (hot in the cache, as a body just parsed is) and
//! dropped after it stops.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MANIFESTS: &str = include_str!("../tests/manifests.json");

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let manifests: Value = serde_json::from_str(MANIFESTS).unwrap();
    let small_deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}
    });
    let bodies = [
        ("Deployment (kubectl create)", small_deployment),
        ("Deployment (rich)", manifests["deployment"].clone()),
        ("Pod (rich, with status)", manifests["pod"].clone()),
        ("ConfigMap", manifests["configmap"].clone()),
    ];
    println!(
        "{:<30} {:>6} {:>10} {:>10} {:>10}",
        "body", "bytes", "parse µs", "prune µs", "typed µs"
    );
    for (name, body) in bodies {
        let api_version = body["apiVersion"].as_str().unwrap().to_owned();
        let kind = body["kind"].as_str().unwrap().to_owned();
        let text = body.to_string();
        let parse = fastest(&body, iterations, |obj| {
            *obj = serde_json::from_str(&text).unwrap();
        });
        let prune = fastest(&body, iterations, |obj| {
            black_box(kgc_proto::prune_unknown_fields(&api_version, &kind, obj));
        });
        let typed = fastest(&body, iterations, |obj| {
            let decoded = kgc_proto::typed::decode(&api_version, &kind, obj);
            assert!(matches!(decoded, Some(Ok(_))), "{name}: {decoded:?}");
        });
        println!(
            "{name:<30} {:>6} {parse:>10.2} {prune:>10.2} {typed:>10.2}",
            text.len()
        );
    }
}

/// The fastest of 15 rounds (the least disturbed by other work on the machine): µs per call of
/// `f` on a copy of `body`.
fn fastest(body: &Value, iterations: u32, mut f: impl FnMut(&mut Value)) -> f64 {
    let rounds: Vec<f64> = (0..15)
        .map(|_| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let mut obj = body.clone();
                let start = Instant::now();
                f(&mut obj);
                total += start.elapsed();
                black_box(obj);
            }
            total.as_secs_f64() * 1e6 / f64::from(iterations)
        })
        .collect();
    rounds.into_iter().fold(f64::INFINITY, f64::min)
}
