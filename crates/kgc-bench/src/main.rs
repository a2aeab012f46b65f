//! `kgc-bench`: measures a release build of `kgc serve` over HTTP, as its clients see it.
//!
//! It builds nothing: it starts the `kgc` binary given by `--kgc` (default: the one next to this
//! executable) on a loopback port with a data directory in a temporary directory, drives it with
//! keep-alive HTTP/1.1 connections, and prints one line per measurement and a table at the end.
//! See docs/BENCHMARKS.md.
#![forbid(unsafe_code)]

mod build;
mod controllers;
mod endpoints;
mod etcd;
mod events;
mod http;
mod nodes;
mod pods;
mod quota;
mod replicas;
mod scheduling;
mod server;
mod stats;
mod sync;
mod tree;
mod watches;
mod webhooks;
mod why;
mod workloads;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, ValueEnum};
use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use serde_json::Value;

use http::Conn;
use server::{Launch, Server};
use stats::{Samples, fmt_ms, ms, thousands};

/// Benchmarks `kgc serve`: create throughput, LIST latency, watch delivery latency, memory per
/// object, restart time and what open watches cost.
#[derive(Parser)]
#[command(name = "kgc-bench")]
struct Cli {
    /// The kgc binary to benchmark [default: `kgc` next to this executable].
    #[arg(long)]
    kgc: Option<PathBuf>,
    /// Which measurements to run.
    #[arg(value_enum, default_value = "all")]
    which: Which,
    /// Creates per throughput run (after a warm-up).
    #[arg(long, default_value_t = 20_000)]
    creates: usize,
    /// Objects in the large store (memory, restart, large LIST).
    #[arg(long, default_value_t = 100_000)]
    objects: usize,
    /// Objects in the small LIST.
    #[arg(long, default_value_t = 10_000)]
    small_list: usize,
    /// Watch events measured.
    #[arg(long, default_value_t = 2_000)]
    watch_events: usize,
    /// Watches opened in each watch-memory scenario.
    #[arg(long, default_value_t = 2_000)]
    watches: usize,
    /// ConfigMaps the watches of the watch-memory scenarios watch (about 1 KB each stored).
    #[arg(long, default_value_t = 3_000)]
    watch_objects: usize,
    /// Simulated nodes of the `nodes` measurement.
    #[arg(long, default_value_t = 1_000)]
    nodes: usize,
    /// Pods running on the simulated nodes during the `nodes` measurement (bound to one more
    /// simulated node, created before the window opens).
    #[arg(long, default_value_t = 0)]
    node_pods: usize,
    /// Concurrent clients used to load the large store.
    #[arg(long, default_value_t = 64)]
    load_clients: usize,
    /// Threads of the load generator's runtime (it shares the machine with the server).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Pods created in the scheduling measurement.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Nodes registered in the scheduling and workloads measurements.
    #[arg(long, default_value_t = 100)]
    sched_nodes: usize,
    /// Dependents of the owner the `collector` measurement deletes.
    #[arg(long, default_value_t = 1_000)]
    gc_dependents: usize,
    /// Replicas of the Deployment the workloads measurement rolls.
    #[arg(long, default_value_t = 1_000)]
    rollout_replicas: usize,
    /// Extra argument passed to every `kgc serve` (repeat for several), e.g. `--server-arg=--disable=gc`.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Where the temporary data directories go [default: the system temporary directory].
    #[arg(long)]
    data_root: Option<PathBuf>,
    /// Objects holding the namespace of the `why` measurement.
    #[arg(long, default_value_t = 1_000)]
    held: usize,
    /// Events the `events` measurement posts.
    #[arg(long, default_value_t = 100_000)]
    events: usize,
    /// Events on disk in the `expired-events` measurement.
    #[arg(long, default_value_t = 1_000_000)]
    expired_events: usize,
    /// What the create measurement posts: ConfigMaps, or Secrets carrying the same data
    /// (encrypted at rest by default).
    #[arg(long, value_enum, default_value = "configmaps")]
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    Configmaps,
    Secrets,
    /// A Deployment as `kubectl create deployment` sends it, with a probe, resources and an
    /// env: a typed body with nested structs, quantities and defaults to fill in.
    Deployments,
    /// A pod bound to the simulated node of the `pods` measurement.
    Pods,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Configmaps => "configmaps",
            Kind::Secrets => "secrets",
            Kind::Deployments => "deployments",
            Kind::Pods => "pods",
        }
    }

    fn api_prefix(self) -> &'static str {
        match self {
            Kind::Deployments => "/apis/apps/v1",
            Kind::Configmaps | Kind::Secrets | Kind::Pods => "/api/v1",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    All,
    Create,
    List,
    Watch,
    Memory,
    Restart,
    Watches,
    /// The server's CPU over a minute holding `--small-list` objects (not part of `all`).
    Idle,
    /// The requests `kgc controller`'s namespace controller makes to delete a namespace of
    /// `--small-list` objects (not part of `all`).
    Namespace,
    /// Pods bound per second by the scheduler: `--pods` pods by 16 clients onto `--sched-nodes`
    /// nodes (not part of `all`).
    Scheduling,
    /// A server simulating `--nodes` nodes: CPU at steady state and lease renewal lag (not
    /// part of `all`).
    Nodes,
    /// Pods from creation to Running: `--small-list` pods bound to a simulated node, created
    /// by 16 clients, until the simulated kubelet has written each Running (not part of `all`).
    Pods,
    /// The workload controllers: a ReplicaSet of `--pods` replicas on `--sched-nodes` simulated
    /// nodes created, Running and deleted; a Deployment of `--rollout-replicas` rolled (not
    /// part of `all`).
    Workloads,
    /// `kgc controller`'s owner-reference collector deleting `--gc-dependents` dependents
    /// under its default client rate limit and unthrottled (not part of `all`).
    Collector,
    /// `kgc tree` of one ownership tree of `--small-list` ConfigMaps: time and requests (not
    /// part of `all`).
    Tree,
    /// `kgc why` on a namespace stuck in Terminating on `--held` objects (not part of `all`).
    Why,
    /// `kgc build` of a 2,000-object kustomize tree against `kubectl kustomize`, and of a qbec
    /// app of 500 objects (not part of `all`).
    Build,
    /// `kgc sync --once` of a 2,000-object git repository: first sync, unchanged re-sync, a
    /// commit changing 10% and removing 10%, with `kubectl apply --prune` as the reference (not
    /// part of `all`).
    Sync,
    /// ResourceQuota's cost: pod creates by 16 clients under a quota against without, server
    /// CPU per create (not part of `all`).
    Quota,
    /// `--events` Events by 16 writers, without expiry and with a 10 s `--event-ttl`: p99s,
    /// what is left, RSS, database size (not part of `all`).
    Events,
    /// Start-up with `--expired-events` expired Events on disk (not part of `all`).
    ExpiredEvents,
    /// EndpointSlices of a Service over `--pods` pods: last pod Ready → slices complete, and
    /// the requests served (not part of `all`).
    Endpoints,
    /// One allowing validating webhook on creates: creates/s and latency with and without, and
    /// the webhook's own round trip (not part of `all`).
    Webhook,
    /// A LIST of `--small-list` custom resources through a conversion webhook against the
    /// stored version (not part of `all`).
    Conversion,
    /// Two replicas on the etcd cluster of `--server-arg=--datastore-endpoint=…`: watch
    /// delivery of `--watch-events` creates from one to the other, and a LIST of
    /// `--small-list` ConfigMaps on the other (not part of `all`).
    Replicas,
    /// etcd's own ceiling on the cluster of `--server-arg=--datastore-endpoint=…`: `--creates`
    /// guarded puts of a stored ConfigMap's size by 1 and 16 writers, straight to etcd (not
    /// part of `all`).
    Etcd,
}

/// One row of the final table.
struct Row {
    what: String,
    result: String,
    target: String,
    met: Option<bool>,
    reference: String,
}

struct Bench {
    cli: Cli,
    kgc: PathBuf,
    data_root: PathBuf,
    rows: Vec<Row>,
}

/// A realistic ConfigMap: four labels, one annotation, four data keys (~450 bytes of JSON as
/// sent; the server adds uid, resourceVersion, creationTimestamp and whatever else it stores, and
/// the benchmark prints the stored size).
fn configmap(name: &str, i: usize) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {
                "app": "kgc-bench",
                "tier": "backend",
                "release": format!("r{}", i % 7),
                "app.kubernetes.io/managed-by": "kgc-bench",
            },
            "annotations": {"bench.kgc.io/index": i.to_string()},
        },
        "data": {
            "config.yaml": "log-level: info\nlisten: 0.0.0.0:8080\nworkers: 4\nfeature-flags: [alpha, beta]\n",
            "APP_MODE": "production",
            "CACHE_TTL_SECONDS": "300",
            "SERVICE_URL": "http://backend.default.svc.cluster.local:8080/api/v1/items",
        },
    })
}

/// A Deployment of one nginx container.
fn deployment(name: &str, i: usize) -> Value {
    serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name, "release": format!("r{}", i % 7)}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "env": [{"name": "MODE", "value": "production"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                  "limits": {"cpu": "500m", "memory": "128Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                }]},
            },
        },
    })
}

/// The object a create posts: the ConfigMap above, a Secret with its data base64-encoded, or a
/// Deployment.
fn object(kind: Kind, name: &str, i: usize) -> Bytes {
    if kind == Kind::Deployments {
        return Bytes::from(deployment(name, i).to_string());
    }
    if kind == Kind::Pods {
        return Bytes::from(pods::pod(name).to_string());
    }
    let mut v = configmap(name, i);
    if kind == Kind::Secrets {
        v["kind"] = "Secret".into();
        if let Some(data) = v["data"].as_object_mut() {
            for value in data.values_mut() {
                *value = base64(value.as_str().unwrap_or_default().as_bytes()).into();
            }
        }
    }
    Bytes::from(v.to_string())
}

/// Standard base64 with padding (what a Secret's `data` holds).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn objects_path(kind: Kind, ns: &str) -> String {
    format!("{}/namespaces/{ns}/{}", kind.api_prefix(), kind.plural())
}

fn configmaps_path(ns: &str) -> String {
    objects_path(Kind::Configmaps, ns)
}

async fn create_namespace(conn: &mut Conn, ns: &str) -> anyhow::Result<()> {
    let body =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    conn.expect(
        StatusCode::CREATED,
        Method::POST,
        "/api/v1/namespaces",
        Some(Bytes::from(body.to_string())),
    )
    .await?;
    Ok(())
}

/// The outcome of a batch of creates.
struct Creates {
    elapsed: Duration,
    latencies: Samples,
    /// Size of one stored object, as returned by the create.
    stored_bytes: usize,
}

impl Creates {
    /// Runs of the same creates at different times, as one: their latencies together, their
    /// times added.
    fn merged(runs: Vec<Creates>) -> Self {
        Self {
            elapsed: runs.iter().map(|r| r.elapsed).sum(),
            stored_bytes: runs
                .iter()
                .map(|r| r.stored_bytes)
                .max()
                .unwrap_or_default(),
            latencies: Samples::merged(runs.into_iter().map(|r| r.latencies)),
        }
    }

    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn summary(&self) -> String {
        format!(
            "{} creates/s, p50 {}, p99 {}",
            thousands(self.rate().round() as u64),
            fmt_ms(self.latencies.median()),
            fmt_ms(self.latencies.pct(99.0))
        )
    }
}

/// `total` creates of objects of `kind` named `{prefix}-{i}` in `ns` by `clients` concurrent
/// clients, each on its own keep-alive connection, each sending one request at a time.
async fn create_many(
    addr: SocketAddr,
    kind: Kind,
    ns: &str,
    prefix: &str,
    clients: usize,
    total: usize,
) -> anyhow::Result<Creates> {
    let prefix = prefix.to_owned();
    let body: BodyFn = Arc::new(move |i| object(kind, &format!("{prefix}-{i:06}"), i));
    post_many(addr, &objects_path(kind, ns), clients, total, body).await
}

/// The body of the `i`th create of a [`post_many`].
type BodyFn = Arc<dyn Fn(usize) -> Bytes + Send + Sync>;

/// `total` POSTs of `body(i)` to `path`, each expecting 201, by `clients` concurrent clients,
/// each on its own keep-alive connection, each sending one request at a time.
async fn post_many(
    addr: SocketAddr,
    path: &str,
    clients: usize,
    total: usize,
    body: BodyFn,
) -> anyhow::Result<Creates> {
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(Conn::connect(addr).await?);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let path: Arc<str> = path.into();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(clients);
    for mut conn in conns {
        let (next, path, body) = (Arc::clone(&next), Arc::clone(&path), Arc::clone(&body));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(total / clients + 1);
            let mut stored_bytes = 0;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let body = body(i);
                let t0 = Instant::now();
                let resp = conn
                    .expect(StatusCode::CREATED, Method::POST, &path, Some(body))
                    .await?;
                latencies.push(ms(t0.elapsed()));
                stored_bytes = resp.len();
            }
            anyhow::Ok((latencies, stored_bytes))
        }));
    }
    let mut all = Vec::with_capacity(total);
    let mut stored_bytes = 0;
    for t in tasks {
        let (l, s) = t.await??;
        all.extend(l);
        stored_bytes = stored_bytes.max(s);
    }
    Ok(Creates {
        elapsed: started.elapsed(),
        latencies: Samples::new(all),
        stored_bytes,
    })
}

/// Times `runs` GETs of `path` on one keep-alive connection, from sending the request until the
/// body is fully read (not parsed). One untimed request first warms up and checks the count.
async fn time_list(
    conn: &mut Conn,
    path: &str,
    expect_items: usize,
    runs: usize,
) -> anyhow::Result<(Samples, usize)> {
    let body = conn.expect(StatusCode::OK, Method::GET, path, None).await?;
    let v: Value = serde_json::from_slice(&body).context("parsing the LIST response")?;
    let items = v["items"].as_array().map_or(0, Vec::len);
    if items != expect_items {
        anyhow::bail!("GET {path} returned {items} items, expected {expect_items}");
    }
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t0 = Instant::now();
        let resp = conn.send(Method::GET, path, None).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        let elapsed = t0.elapsed();
        if status != StatusCode::OK {
            anyhow::bail!("GET {path}: {status}");
        }
        std::hint::black_box(&body);
        samples.push(ms(elapsed));
    }
    Ok((Samples::new(samples), body.len()))
}

/// CPU time this process (the load generator) has used so far.
fn own_cpu() -> anyhow::Result<Duration> {
    server::cpu_time("/proc/self/stat")
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn mem_total() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_else(|| "?".into())
}

/// The latencies of a [`watch_delivery`] run.
struct Delivery {
    /// From just before each POST to its event line arriving.
    from_post: Samples,
    /// From the 201 to the event line (negative when the event came first).
    from_201: Samples,
    /// The POSTs' own round trips.
    post_rtt: Samples,
}

impl Delivery {
    fn summary(&self) -> String {
        format!(
            "p50 {}, p99 {} (from the 201: p50 {}, p99 {})",
            fmt_ms(self.from_post.median()),
            fmt_ms(self.from_post.pct(99.0)),
            fmt_ms(self.from_201.median()),
            fmt_ms(self.from_201.pct(99.0))
        )
    }
}

/// `n` ConfigMaps created one at a time in a new namespace `ns` on the server at `writer`
/// (after 100 unmeasured), each awaited on a watch of the namespace opened on the server at
/// `watcher` (the same one, or another replica of its etcd cluster). Prints the result line.
async fn watch_delivery(
    writer: SocketAddr,
    watcher: SocketAddr,
    ns: &str,
    n: usize,
) -> anyhow::Result<Delivery> {
    let mut conn = Conn::connect(writer).await?;
    create_namespace(&mut conn, ns).await?;
    let path = configmaps_path(ns);
    let mut watch_conn = Conn::connect(watcher).await?;
    let list = watch_conn
        .expect(
            StatusCode::OK,
            Method::GET,
            &format!("{path}?limit=1"),
            None,
        )
        .await?;
    let list: Value = serde_json::from_slice(&list)?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .context("no resourceVersion in the list")?
        .to_owned();
    let resp = watch_conn
        .send(
            Method::GET,
            &format!("{path}?watch=true&resourceVersion={rv}"),
            None,
        )
        .await?;
    if resp.status() != StatusCode::OK {
        anyhow::bail!("watch: {}", resp.status());
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Vec<u8>, Instant)>();
    let mut body = resp.into_body();
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { break };
            let now = Instant::now();
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    if tx.send((line, now)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let warmup = 100;
    let mut from_post = Vec::with_capacity(n);
    let mut from_201 = Vec::with_capacity(n);
    let mut post_rtt = Vec::with_capacity(n);
    for i in 0..warmup + n {
        let name = format!("cm-{i:06}");
        let body = object(Kind::Configmaps, &name, i);
        let t0 = Instant::now();
        conn.expect(StatusCode::CREATED, Method::POST, &path, Some(body))
            .await?;
        let t1 = Instant::now();
        let arrived = loop {
            let (line, at) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .with_context(|| format!("no watch event for {name} within 10 s"))?
                .context("the watch stream ended")?;
            let ev: Value = serde_json::from_slice(&line).context("parsing a watch event")?;
            if ev["type"] == "ADDED" && ev["object"]["metadata"]["name"] == name.as_str() {
                break at;
            }
        };
        if i >= warmup {
            from_post.push(ms(arrived.duration_since(t0)));
            post_rtt.push(ms(t1 - t0));
            // Signed: the event may arrive before the client has read the 201.
            from_201.push(if arrived >= t1 {
                ms(arrived - t1)
            } else {
                -ms(t1 - arrived)
            });
        }
    }
    reader.abort();
    let delivery = Delivery {
        from_post: Samples::new(from_post),
        from_201: Samples::new(from_201),
        post_rtt: Samples::new(post_rtt),
    };
    println!(
        "   {}; max {}; the creates' own round trips: p50 {}, p99 {}",
        delivery.summary(),
        fmt_ms(delivery.from_post.max()),
        fmt_ms(delivery.post_rtt.median()),
        fmt_ms(delivery.post_rtt.pct(99.0))
    );
    Ok(delivery)
}

impl Bench {
    /// `kgc serve` on a durable data directory `dir`, with `args`; and how long it took to be
    /// ready.
    async fn start_durable(
        &self,
        dir: &Path,
        args: &[String],
    ) -> anyhow::Result<(Server, Duration)> {
        Server::start(Launch {
            kgc: &self.kgc,
            data_dir: dir,
            in_memory: false,
            extra_args: args,
        })
        .await
    }

    fn tempdir(&self, what: &str) -> anyhow::Result<tempfile::TempDir> {
        tempfile::Builder::new()
            .prefix(&format!("kgc-bench-{what}-"))
            .tempdir_in(&self.data_root)
            .with_context(|| {
                format!(
                    "creating a temporary directory in {}",
                    self.data_root.display()
                )
            })
    }

    /// How long an fdatasync takes in the data directory right now. SQLite's commit waits for
    /// one (WAL, `synchronous=FULL`): an append while the WAL file grows, an overwrite in place
    /// once it wraps around after a checkpoint. Appends also commit the file system's journal,
    /// so they are the slower kind, and the one other writers on the disk slow down most.
    fn fsync_probe(&mut self) -> anyhow::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        let dir = self.tempdir("fsync")?;
        let block = [7u8; 4096];
        let mut results = Vec::new();
        for overwrite in [false, true] {
            let mut f = std::fs::File::create(dir.path().join("probe"))?;
            if overwrite {
                f.write_all(&vec![0u8; 200 * 4096])?;
                f.sync_all()?;
                f.seek(SeekFrom::Start(0))?;
            }
            let mut samples = Vec::with_capacity(200);
            for _ in 0..200 {
                let t0 = Instant::now();
                f.write_all(&block)?;
                f.sync_data()?;
                samples.push(ms(t0.elapsed()));
            }
            let s = Samples::new(samples);
            results.push(format!(
                "{} p50 {}, p99 {}",
                if overwrite { "overwrite" } else { "append" },
                fmt_ms(s.median()),
                fmt_ms(s.pct(99.0))
            ));
        }
        let result = results.join("; ");
        println!(
            "\n== disk: 4 KiB write + fdatasync in {}, 200 times each: {result}",
            self.data_root.display()
        );
        self.row("disk: 4 KiB write + fdatasync", result);
        Ok(())
    }

    fn launch<'a>(&'a self, dir: &'a Path, in_memory: bool) -> Launch<'a> {
        Launch {
            kgc: &self.kgc,
            data_dir: dir,
            in_memory,
            extra_args: &self.cli.server_args,
        }
    }

    fn row(&mut self, what: impl Into<String>, result: impl Into<String>) -> &mut Row {
        self.rows.push(Row {
            what: what.into(),
            result: result.into(),
            target: String::new(),
            met: None,
            reference: String::new(),
        });
        self.rows.last_mut().expect("just pushed")
    }

    /// 1. Create throughput with 1 and 16 clients, durable and in memory.
    async fn create(&mut self, durable: bool) -> anyhow::Result<()> {
        let mode = if durable { "durable" } else { "in-memory" };
        println!(
            "\n== create throughput, {mode}: POST {} over keep-alive HTTP/1.1, each client sequential; \
             {} creates per run after a 2,000-create warm-up{}",
            self.cli.kind.plural(),
            thousands(self.cli.creates as u64),
            if durable {
                " (201 = committed and fsynced)"
            } else {
                ""
            }
        );
        let dir = self.tempdir(mode)?;
        let (server, _) = Server::start(self.launch(dir.path(), !durable)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for ns in ["warmup", "c1", "c16"] {
            create_namespace(&mut conn, ns).await?;
        }
        let kind = self.cli.kind;
        create_many(server.addr, kind, "warmup", "w", 16, 2_000).await?;
        for clients in [1, 16] {
            let (server_cpu0, own_cpu0) = (server.cpu_time()?, own_cpu()?);
            let run = create_many(
                server.addr,
                kind,
                &format!("c{clients}"),
                "cm",
                clients,
                self.cli.creates,
            )
            .await?;
            let per = |d: Duration| d.as_secs_f64() * 1e6 / run.latencies.len() as f64;
            println!(
                "   {clients:>2} client(s): {} ({} creates in {:.2} s; CPU per create: server {:.0} µs, load generator {:.0} µs; stored object {} bytes)",
                run.summary(),
                thousands(run.latencies.len() as u64),
                run.elapsed.as_secs_f64(),
                per(server.cpu_time()? - server_cpu0),
                per(own_cpu()? - own_cpu0),
                run.stored_bytes
            );
            let row = self.row(
                format!(
                    "create, {mode}, {clients} client{}",
                    if clients > 1 { "s" } else { "" }
                ),
                run.summary(),
            );
            if durable {
                row.reference = if clients == 1 { "400/s" } else { "1,480/s" }.into();
                if clients == 16 {
                    row.target = "≥ 5,000/s".into();
                    row.met = Some(run.rate() >= 5_000.0);
                }
            }
        }
        server.stop().await?;
        Ok(())
    }

    /// 3. Watch delivery latency.
    async fn watch(&mut self, durable: bool) -> anyhow::Result<()> {
        let mode = if durable { "durable" } else { "in-memory" };
        let n = self.cli.watch_events;
        println!(
            "\n== watch delivery, {mode}: one watcher on a namespace, one writer creating ConfigMaps one at a time; \
             {} events; latency from just before the POST to the event line arriving, and from the 201 to it",
            thousands(n as u64)
        );
        let dir = self.tempdir("watch")?;
        let (server, _) = Server::start(self.launch(dir.path(), !durable)).await?;
        let delivery = watch_delivery(server.addr, server.addr, "w", n).await?;
        server.stop().await?;
        self.row(
            format!("watch delivery, {mode} (POST → event)"),
            delivery.summary(),
        );
        Ok(())
    }

    /// 2, 4 and 5: the large store (LIST latency, memory per object, restart time).
    async fn large(&mut self, list: bool, memory: bool, restart: bool) -> anyhow::Result<()> {
        let n = self.cli.objects;
        let small = self.cli.small_list;
        println!(
            "\n== large store, durable: {} ConfigMaps in one namespace, loaded by {} concurrent clients",
            thousands(n as u64),
            self.cli.load_clients
        );
        let dir = self.tempdir("large")?;
        let (server, _) = Server::start(self.launch(dir.path(), false)).await?;
        let mut conn = Conn::connect(server.addr).await?;
        for ns in ["warmup", "big", "small"] {
            create_namespace(&mut conn, ns).await?;
        }
        // Warm the allocator, the runtime and SQLite before the memory baseline.
        create_many(
            server.addr,
            Kind::Configmaps,
            "warmup",
            "w",
            self.cli.load_clients,
            1_000,
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss0 = server.rss_kib()?;
        let cpu0 = server.cpu_time()?;
        let load = create_many(
            server.addr,
            Kind::Configmaps,
            "big",
            "cm",
            self.cli.load_clients,
            n,
        )
        .await?;
        println!(
            "   loaded in {:.1} s: {}; server CPU {:.0} µs per create; stored object {} bytes",
            load.elapsed.as_secs_f64(),
            load.summary(),
            (server.cpu_time()? - cpu0).as_secs_f64() * 1e6 / n as f64,
            load.stored_bytes
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss1 = server.rss_kib()?;
        let mut per_object = (rss1.saturating_sub(rss0) * 1024) as f64 / n as f64;
        println!(
            "   RSS {} MiB before, {} MiB after: {:.0} bytes per object (includes the watch cache's {} retained events)",
            rss0 / 1024,
            rss1 / 1024,
            per_object,
            thousands(n.min(100_000) as u64)
        );
        if memory {
            self.row(
                format!("memory per object ({}k loaded)", n / 1000),
                format!(
                    "{per_object:.0} B (RSS {} → {} MiB)",
                    rss0 / 1024,
                    rss1 / 1024
                ),
            );
        }
        if list {
            self.list_rows(&mut conn, "big", n, 5).await?;
        }
        drop(conn);
        let server = if restart {
            let down = server.stop().await?;
            println!("   SIGTERM → exit: {:.2} s", down.as_secs_f64());
            let (server, ready) = Server::start(self.launch(dir.path(), false)).await?;
            let opened = server.opened().await;
            // Let background work that follows the start (controllers listing the store)
            // settle before reading the memory figure.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let rss = server.rss_kib()?;
            per_object = (rss.saturating_sub(rss0) * 1024) as f64 / n as f64;
            let opened_text = opened.map_or("no `store opened` line".into(), |o| {
                format!(
                    "store opened in {} ms ({} objects)",
                    o.elapsed_ms,
                    thousands(o.objects)
                )
            });
            println!(
                "   restart: /readyz 200 after {:.2} s from spawn; {opened_text}; RSS {} MiB 2 s later ({per_object:.0} bytes per object, empty watch cache)",
                ready.as_secs_f64(),
                rss / 1024
            );
            let row = self.row(
                format!("restart with {}k objects (spawn → /readyz 200)", n / 1000),
                format!("{:.2} s", ready.as_secs_f64()),
            );
            if n == 100_000 {
                row.target = "< 3 s".into();
                row.met = Some(ready < Duration::from_secs(3));
            }
            if let Some(o) = opened {
                self.row(
                    "  of which store open (log elapsed_ms)",
                    format!("{:.2} s", o.elapsed_ms as f64 / 1e3),
                );
            }
            self.row(
                "shutdown (SIGTERM → exit)",
                format!("{:.2} s", down.as_secs_f64()),
            );
            if memory {
                self.row(
                    "memory per object after restart",
                    format!("{per_object:.0} B (RSS {} MiB)", rss / 1024),
                );
            }
            server
        } else {
            server
        };
        if list {
            create_many(
                server.addr,
                Kind::Configmaps,
                "small",
                "cm",
                self.cli.load_clients,
                small,
            )
            .await?;
            let mut conn = Conn::connect(server.addr).await?;
            self.list_rows(&mut conn, "small", small, 11).await?;
        }
        server.stop().await?;
        Ok(())
    }

    async fn list_rows(
        &mut self,
        conn: &mut Conn,
        ns: &str,
        count: usize,
        runs: usize,
    ) -> anyhow::Result<()> {
        let path = configmaps_path(ns);
        let (full, bytes) = time_list(conn, &path, count, runs).await?;
        let (page, page_bytes) =
            time_list(conn, &format!("{path}?limit=500"), count.min(500), 11).await?;
        let k = count / 1000;
        println!(
            "   LIST {k}k (request sent → body fully read, not parsed): full {} median of {} (min {}, max {}; {:.1} MB); \
             limit=500 {} median of 11 ({} KB)",
            fmt_ms(full.median()),
            full.len(),
            fmt_ms(full.min()),
            fmt_ms(full.max()),
            bytes as f64 / 1e6,
            fmt_ms(page.median()),
            page_bytes / 1000
        );
        let row = self.row(
            format!("LIST {k}k ConfigMaps, full"),
            format!("{} median of {}", fmt_ms(full.median()), full.len()),
        );
        if count == 10_000 {
            row.target = "< 50 ms".into();
            row.met = Some(full.median() < 50.0);
            row.reference = "143 ms".into();
        }
        self.row(
            format!("LIST {k}k ConfigMaps, limit=500"),
            format!("{} median of {}", fmt_ms(page.median()), page.len()),
        );
        Ok(())
    }

    fn print_table(&self) {
        let header = Row {
            what: "measurement".into(),
            result: "result".into(),
            target: "target".into(),
            met: None,
            reference: "etcd-backed reference".into(),
        };
        let verdict = |r: &Row| match r.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        let rows: Vec<&Row> = std::iter::once(&header).chain(&self.rows).collect();
        let width = |f: &dyn Fn(&Row) -> String| {
            rows.iter().map(|r| f(r).chars().count()).max().unwrap_or(0)
        };
        let target = |r: &Row| format!("{} {}", r.target, verdict(r)).trim().to_owned();
        let w = [
            width(&|r| r.what.clone()),
            width(&|r| r.result.clone()),
            width(&target),
        ];
        println!();
        for (i, r) in rows.iter().enumerate() {
            let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
            println!(
                "{}  {}  {}  {}",
                pad(&r.what, w[0]),
                pad(&r.result, w[1]),
                pad(&target(r), w[2]),
                r.reference
            );
            if i == 0 {
                println!("{}", "-".repeat(w.iter().sum::<usize>() + 6 + 22));
            }
        }
    }
}

fn default_kgc() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating this executable")?;
    Ok(exe.with_file_name("kgc"))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // Absolute: some parts run it from their own working directory.
    let kgc = match &cli.kgc {
        Some(p) => std::path::absolute(p).context("resolving --kgc")?,
        None => default_kgc()?,
    };
    if !kgc.is_file() {
        anyhow::bail!(
            "the kgc binary is missing at {}: build it first with `cargo build --release -p kgc` \
             (or pass --kgc PATH)",
            kgc.display()
        );
    }
    let data_root = cli.data_root.clone().unwrap_or_else(std::env::temp_dir);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "kgc-bench: {} serve{}",
        kgc.display(),
        cli.server_args
            .iter()
            .map(|a| format!(" {a}"))
            .collect::<String>()
    );
    println!(
        "machine: {cores} cores (available_parallelism), {} RAM; load average {}; data in {}; load generator on {} thread(s) of this machine",
        mem_total(),
        loadavg(),
        data_root.display(),
        cli.client_threads
    );
    let which = cli.which;
    let mut bench = Bench {
        cli,
        kgc,
        data_root,
        rows: Vec::new(),
    };
    let started = Instant::now();
    let on = |w: Which| which == Which::All || which == w;
    bench.fsync_probe()?;
    if on(Which::Create) {
        bench.create(true).await?;
        bench.create(false).await?;
    }
    if on(Which::Watch) {
        bench.watch(true).await?;
        bench.watch(false).await?;
    }
    let (list, memory, restart) = (on(Which::List), on(Which::Memory), on(Which::Restart));
    if list || memory || restart {
        bench.large(list, memory, restart).await?;
    }
    if on(Which::Watches) {
        bench.watches().await?;
    }
    if which == Which::Idle {
        bench.idle().await?;
    }
    if which == Which::Namespace {
        bench.namespace().await?;
    }
    if which == Which::Scheduling {
        bench.scheduling().await?;
    }
    if which == Which::Nodes {
        bench.nodes().await?;
    }
    if which == Which::Pods {
        bench.pods().await?;
    }
    if which == Which::Workloads {
        bench.workloads().await?;
    }
    if which == Which::Collector {
        bench.collector_rate().await?;
    }
    if which == Which::Tree {
        bench.tree().await?;
    }
    if which == Which::Why {
        bench.why().await?;
    }
    if which == Which::Sync {
        bench.sync().await?;
    }
    if which == Which::Build {
        bench.build().await?;
    }
    if which == Which::Quota {
        bench.quota().await?;
    }
    if which == Which::Events {
        bench.events().await?;
    }
    if which == Which::ExpiredEvents {
        bench.expired_events().await?;
    }
    if which == Which::Endpoints {
        bench.endpoints().await?;
    }
    if which == Which::Webhook {
        bench.webhook().await?;
    }
    if which == Which::Conversion {
        bench.conversion().await?;
    }
    if which == Which::Replicas {
        bench.replicas().await?;
    }
    if which == Which::Etcd {
        bench.etcd().await?;
    }
    println!(
        "\n{cores} cores; finished in {:.0} s; load average now {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    bench.print_table();
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = if cli.client_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cli.client_threads)
            .enable_all()
            .build()
    };
    let result = runtime
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run(cli)));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // The whole chain, without the backtrace RUST_BACKTRACE would add.
            eprintln!("kgc-bench: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_pads_as_the_standard_encoding() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), encoded);
        }
    }
}
