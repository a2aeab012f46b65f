//! ResourceQuota's cost per create (issue 30): pods created by 16 clients in a namespace under
//! a ResourceQuota (`pods`, `requests.cpu`, `count/configmaps`) against a namespace without
//! one, in rounds on one durable server that alternate which goes first; pods/s and the
//! server's CPU per create (`/proc/PID/stat`), and their ratios (goal: ≤ 10% over the create
//! without a quota). The
//! pods are bound to a node that does not exist, so no kubelet or scheduler works on them,
//! and PodGC, which would delete such orphans, is off for this measurement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::stats::{fmt_ms, thousands};
use crate::{Bench, BodyFn, create_namespace, post_many};

const CLIENTS: usize = 16;
const ROUNDS: usize = 2;
const QUOTA_NS: &str = "quota";
const PLAIN_NS: &str = "plain";
const DEADLINE: Duration = Duration::from_secs(60);

/// A pod with a CPU request (a quota on `requests.cpu` refuses a pod without one), bound to a
/// node that does not exist.
fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"run": "bench"}},
        "spec": {
            "nodeName": "kgc-bench-absent",
            "containers": [{"name": "app", "image": "nginx:1.27",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        },
    })
}

fn pods_path(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/pods")
}

/// The quota's `status.used.pods`, once the controller has filled `status.hard`.
async fn used_pods(conn: &mut Conn) -> anyhow::Result<Option<u64>> {
    let body = conn
        .expect(
            StatusCode::OK,
            Method::GET,
            &format!("/api/v1/namespaces/{QUOTA_NS}/resourcequotas/q"),
            None,
        )
        .await?;
    let q: Value = serde_json::from_slice(&body)?;
    if q["status"]["hard"]["pods"].is_null() {
        return Ok(None);
    }
    Ok(q["status"]["used"]["pods"].as_str().and_then(count))
}

/// A count as a quantity writes it in canonical form (`10k` for 10,000).
fn count(quantity: &str) -> Option<u64> {
    let (digits, scale) = match quantity.as_bytes().last()? {
        b'k' => (&quantity[..quantity.len() - 1], 1_000),
        b'M' => (&quantity[..quantity.len() - 1], 1_000_000),
        b'G' => (&quantity[..quantity.len() - 1], 1_000_000_000),
        _ => (quantity, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// Waits until the quota's `status.used.pods` is `want`.
async fn wait_used(conn: &mut Conn, want: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    while used_pods(conn).await? != Some(want) {
        anyhow::ensure!(
            started.elapsed() < DEADLINE,
            "the quota's status.used.pods is not {want} after {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

impl Bench {
    pub(crate) async fn quota(&mut self) -> anyhow::Result<()> {
        let n = (self.cli.creates / 4).max(100);
        println!(
            "\n== ResourceQuota: {ROUNDS} rounds of {} pod creates by {CLIENTS} clients in a namespace without a quota, then one under a quota on pods, requests.cpu and count/configmaps; durable, PodGC off",
            thousands(n as u64)
        );
        let dir = self.tempdir("quota")?;
        let mut args = self.cli.server_args.clone();
        args.push("--disable=podgc".into());
        let (server, _) = self.start_durable(dir.path(), &args).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for ns in ["warmup", PLAIN_NS, QUOTA_NS] {
            create_namespace(&mut conn, ns).await?;
        }
        let quota = json!({
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"pods": "1000000", "requests.cpu": "100000",
                "count/configmaps": "1000000"}},
        });
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            &format!("/api/v1/namespaces/{QUOTA_NS}/resourcequotas"),
            Some(Bytes::from(quota.to_string())),
        )
        .await?;
        // The admission refuses creates until the controller has written the quota's status.
        wait_used(&mut conn, 0).await?;
        let body = |prefix: &'static str| -> BodyFn {
            Arc::new(move |i| Bytes::from(pod(&format!("{prefix}-{i:06}")).to_string()))
        };
        post_many(server.addr, &pods_path("warmup"), CLIENTS, 1_000, body("w")).await?;
        // [plain, quota]: creates, seconds, server CPU seconds, p99s.
        let mut total = [(0usize, 0.0f64, 0.0f64); 2];
        let mut p99 = [Vec::new(), Vec::new()];
        for round in 0..ROUNDS {
            // Plain first, then quota first (ABBA): a namespace measured second would be
            // charged the store's growth and the work the round before left to its watchers.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let ns = [PLAIN_NS, QUOTA_NS][k];
                let prefixes = [["p0", "p1"], ["q0", "q1"]];
                let cpu0 = server.cpu_time()?;
                let run = post_many(
                    server.addr,
                    &pods_path(ns),
                    CLIENTS,
                    n,
                    body(prefixes[k][round % 2]),
                )
                .await?;
                let cpu = (server.cpu_time()? - cpu0).as_secs_f64();
                println!(
                    "   round {}, {ns}: {}; server CPU {:.0} µs a create",
                    round + 1,
                    run.summary(),
                    cpu * 1e6 / n as f64
                );
                total[k].0 += n;
                total[k].1 += run.elapsed.as_secs_f64();
                total[k].2 += cpu;
                p99[k].push(run.latencies.pct(99.0));
            }
        }
        wait_used(&mut conn, (ROUNDS * n) as u64).await?;
        let rate = |k: usize| total[k].0 as f64 / total[k].1;
        let cpu = |k: usize| total[k].2 * 1e6 / total[k].0 as f64;
        let cpu_ratio = cpu(1) / cpu(0);
        println!(
            "   without / with the quota: {} / {} pods/s (ratio {:.2}); server CPU {:.0} / {:.0} µs a create (ratio {cpu_ratio:.2}); status.used.pods = {} as created",
            thousands(rate(0).round() as u64),
            thousands(rate(1).round() as u64),
            rate(1) / rate(0),
            cpu(0),
            cpu(1),
            ROUNDS * n
        );
        self.row(
            format!("quota: pod creates/s, {CLIENTS} clients, without / with"),
            format!(
                "{} / {} (ratio {:.2}); p99 {} / {}",
                thousands(rate(0).round() as u64),
                thousands(rate(1).round() as u64),
                rate(1) / rate(0),
                fmt_ms(p99[0].iter().copied().fold(0.0, f64::max)),
                fmt_ms(p99[1].iter().copied().fold(0.0, f64::max))
            ),
        );
        let row = self.row(
            "quota: server CPU per pod create, without / with",
            format!("{:.0} / {:.0} µs (ratio {cpu_ratio:.2})", cpu(0), cpu(1)),
        );
        row.target = "≤ 1.10".into();
        row.met = Some(cpu_ratio <= 1.10);
        server.stop().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_in_canonical_form() {
        assert_eq!(super::count("10k"), Some(10_000));
        assert_eq!(super::count("2500"), Some(2_500));
        assert_eq!(super::count("3M"), Some(3_000_000));
        assert_eq!(super::count("1.5k"), None);
    }
}
