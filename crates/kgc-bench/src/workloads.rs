//! The workload controllers at scale (issue 20), against a durable `kgc serve` simulating
//! `--sched-nodes` nodes with everything on: a ReplicaSet of `--pods` replicas — until its
//! pods exist (the controller's `status.replicas`), until all are Running and Ready
//! (`readyReplicas`), and, deleted with background propagation, until the last pod is gone; and
//! a Deployment of `--rollout-replicas` rolled to a new image, until the rollout is complete
//! and the old ReplicaSet, beyond `revisionHistoryLimit: 0`, is deleted. Pods stop at once
//! (`terminationGracePeriodSeconds: 0`): the figures are the controllers', not a grace period.
//! The API is polled every [`POLL`] with cheap requests (one object, or a one-item page).

use std::time::{Duration, Instant};

use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Conn;
use crate::stats::thousands;
use crate::{Bench, create_namespace};

const POLL: Duration = Duration::from_millis(50);
const DEADLINE: Duration = Duration::from_secs(600);
const NS: &str = "workloads";

/// kube-controller-manager creates pods through a client limited to 20 requests a second
/// (`--kube-api-qps`), so about 20 pods a second at best.
const KCM_PODS_PER_SECOND: f64 = 20.0;

fn template(app: &str, image: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": image,
                            "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}],
        },
    })
}

/// GETs `path` and returns the JSON.
async fn get(conn: &mut Conn, path: &str) -> anyhow::Result<Value> {
    let body = conn.expect(StatusCode::OK, Method::GET, path, None).await?;
    Ok(serde_json::from_slice(&body)?)
}

/// Polls `path` until `done` says so; the time it took from `since`.
async fn until(
    conn: &mut Conn,
    path: &str,
    since: Instant,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Duration> {
    loop {
        if done(&get(conn, path).await?) {
            return Ok(since.elapsed());
        }
        anyhow::ensure!(since.elapsed() < DEADLINE, "{what}: not after {DEADLINE:?}");
        tokio::time::sleep(POLL).await;
    }
}

fn int(v: &Value, path: &str) -> i64 {
    v.pointer(path).and_then(Value::as_i64).unwrap_or(0)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

impl Bench {
    pub(crate) async fn workloads(&mut self) -> anyhow::Result<()> {
        let (replicas, nodes) = (self.cli.pods, self.cli.sched_nodes);
        println!(
            "\n== workload controllers: a ReplicaSet of {} replicas on {nodes} simulated nodes, then a Deployment of {} rolled; durable, everything on",
            thousands(replicas as u64),
            thousands(self.cli.rollout_replicas as u64)
        );
        let dir = self.tempdir("workloads")?;
        let per_node = replicas.div_ceil(nodes.max(1)) * 2 + 10;
        let mut args = self.cli.server_args.clone();
        args.extend([
            format!("--nodes={nodes}"),
            format!("--node-capacity=cpu=1000,memory=4000Gi,pods={per_node}"),
        ]);
        let (server, _) = self.start_durable(dir.path(), &args).await?;
        let mut conn = Conn::connect(server.addr).await?;
        create_namespace(&mut conn, NS).await?;
        // The nodes Ready (the scheduler binds only to Ready nodes).
        until(
            &mut conn,
            "/api/v1/nodes",
            Instant::now(),
            "nodes Ready",
            |l| {
                let ready = l["items"].as_array().map_or(0, |a| {
                    a.iter()
                        .filter(|n| {
                            n["status"]["conditions"].as_array().is_some_and(|cs| {
                                cs.iter()
                                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
                            })
                        })
                        .count()
                });
                ready >= nodes
            },
        )
        .await?;

        let rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "big"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "big"}},
                     "template": template("big", "nginx:1.27")},
        });
        let cpu0 = server.cpu_time()?;
        let started = Instant::now();
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            &format!("/apis/apps/v1/namespaces/{NS}/replicasets"),
            Some(Bytes::from(rs.to_string())),
        )
        .await?;
        let path = format!("/apis/apps/v1/namespaces/{NS}/replicasets/big");
        let n = replicas as i64;
        let exist = until(&mut conn, &path, started, "pods created", |v| {
            int(v, "/status/replicas") >= n
        })
        .await?;
        let running = until(&mut conn, &path, started, "pods Running", |v| {
            int(v, "/status/readyReplicas") >= n
        })
        .await?;
        let cpu = server.cpu_time()? - cpu0;
        let kcm = replicas as f64 / KCM_PODS_PER_SECOND;
        let result = format!(
            "pods exist after {} ({} pods/s), all Running and Ready after {}; server CPU {:.1} s",
            secs(exist),
            thousands((replicas as f64 / exist.as_secs_f64()) as u64),
            secs(running),
            cpu.as_secs_f64()
        );
        println!("   {result}");
        let row = self.row(
            format!(
                "ReplicaSet of {} on {nodes} nodes",
                thousands(replicas as u64)
            ),
            result,
        );
        row.target = "≤ 2 s exist, ≤ 4 s Running".into();
        row.met = Some(exist <= Duration::from_secs(2) && running <= Duration::from_secs(4));
        row.reference = format!("kube-controller-manager at 20 qps: ~{kcm:.0} s");

        let started = Instant::now();
        conn.expect(
            StatusCode::OK,
            Method::DELETE,
            &path,
            Some(Bytes::from(
                json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
                    .to_string(),
            )),
        )
        .await?;
        let pods = format!("/api/v1/namespaces/{NS}/pods?limit=1");
        let gone = until(&mut conn, &pods, started, "pods deleted", |l| {
            l["items"].as_array().is_some_and(Vec::is_empty)
        })
        .await?;
        let result = format!(
            "last pod gone after {} ({} pods/s)",
            secs(gone),
            thousands((replicas as f64 / gone.as_secs_f64()) as u64)
        );
        println!("   {result}");
        self.row(
            format!(
                "ReplicaSet of {} deleted, background propagation",
                thousands(replicas as u64)
            ),
            result,
        );

        let r = self.cli.rollout_replicas;
        let mut deploy = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": r, "revisionHistoryLimit": 0,
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": template("web", "nginx:1.27")},
        });
        conn.expect(
            StatusCode::CREATED,
            Method::POST,
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            Some(Bytes::from(deploy.to_string())),
        )
        .await?;
        let path = format!("/apis/apps/v1/namespaces/{NS}/deployments/web");
        let r = r as i64;
        let complete = move |v: &Value| {
            int(v, "/status/observedGeneration") >= int(v, "/metadata/generation")
                && int(v, "/status/updatedReplicas") == r
                && int(v, "/status/availableReplicas") == r
                && int(v, "/status/replicas") == r
        };
        until(&mut conn, &path, Instant::now(), "first rollout", complete).await?;
        let live = get(&mut conn, &path).await?;
        deploy["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"].clone();
        deploy["spec"]["template"] = template("web", "nginx:1.28");
        let started = Instant::now();
        conn.expect(
            StatusCode::OK,
            Method::PUT,
            &path,
            Some(Bytes::from(deploy.to_string())),
        )
        .await?;
        let rolled = until(&mut conn, &path, started, "rollout", complete).await?;
        let sets = format!("/apis/apps/v1/namespaces/{NS}/replicasets");
        let cleaned = until(&mut conn, &sets, started, "old ReplicaSet deleted", |l| {
            l["items"].as_array().is_some_and(|a| a.len() == 1)
        })
        .await?;
        let result = format!(
            "rollout complete after {}, old ReplicaSet deleted after {}",
            secs(rolled),
            secs(cleaned)
        );
        println!("   {result}");
        self.row(
            format!("Deployment of {r} rolled to a new image, revisionHistoryLimit 0"),
            result,
        );
        server.stop().await?;
        Ok(())
    }
}
