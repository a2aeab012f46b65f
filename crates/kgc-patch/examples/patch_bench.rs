//! Strategic-merge-patch benchmark:
//!
//! ```text
//! cargo run --release -p kgc-patch --example patch_bench
//! ```
//!
//! Merges patches into a Pod with 200 containers (10 env vars and 2 ports each): a change of
//! one image, kubectl's apply-style patch with `$setElementOrder` over all 200 containers, and a
//! `$patch: delete` of one container. Reports the median time per merge in microseconds, with
//! and without the copy of the object (`apply` versus `apply_owned`).

use std::time::{Duration, Instant};

use kgc_patch::strategic::{apply, apply_owned, schema_for};
use serde_json::{Value, json};

fn pod() -> Value {
    let containers: Vec<Value> = (0..200)
        .map(|i| {
            json!({
                "name": format!("c{i}"),
                "image": format!("registry.example.com/app-{i}:1.0"),
                "env": (0..10).map(|e| json!({"name": format!("E{e}"), "value": format!("{i}-{e}")})).collect::<Vec<_>>(),
                "ports": [{"containerPort": 8000 + i, "protocol": "TCP"}, {"containerPort": 9000 + i, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
            })
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "bench"},
           "spec": {"containers": containers}})
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let schema = schema_for("", "Pod").expect("Pod has a patch table");
    let original = pod();
    let order: Vec<Value> = (0..200).map(|i| json!({"name": format!("c{i}")})).collect();
    let patches = [
        (
            "one image changed",
            json!({"spec": {"containers": [{"name": "c100", "image": "registry.example.com/app-100:2.0"}]}}),
        ),
        (
            "kubectl apply: $setElementOrder over 200 containers + one image",
            json!({"spec": {"$setElementOrder/containers": order,
                             "containers": [{"name": "c7", "image": "registry.example.com/app-7:2.0"}]}}),
        ),
        (
            "$patch: delete of one container",
            json!({"spec": {"containers": [{"name": "c50", "$patch": "delete"}]}}),
        ),
    ];
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "strategic merge patch into a Pod of 200 containers ({} bytes of JSON), {cores} cores",
        original.to_string().len()
    );
    println!(
        "{:<66} {:>12} {:>14}",
        "patch", "apply µs", "apply_owned µs"
    );
    for (name, patch) in &patches {
        let runs = 300;
        let mut with_copy = Vec::with_capacity(runs);
        let mut owned = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let out = apply(&original, patch, schema).expect("patch applies");
            with_copy.push(t.elapsed());
            std::hint::black_box(out);
            let copy = original.clone();
            let t = Instant::now();
            let out = apply_owned(copy, patch, schema).expect("patch applies");
            owned.push(t.elapsed());
            std::hint::black_box(out);
        }
        println!(
            "{:<66} {:>12.1} {:>14.1}",
            name,
            median(with_copy),
            median(owned)
        );
    }
}
