//! `kgc controller`: the owner-reference garbage collector against any Kubernetes API server.
//!
//! The same collector `kgc serve` runs in-process, here over kube-rs ([`kgc_client::Remote`]).
//! Several replicas may run: they elect a leader on a coordination.k8s.io/v1 Lease the way
//! client-go's `leaderelection` does (a candidate takes the lease only once it has seen it
//! unchanged for its whole duration; the leader renews every retry period and stops collecting
//! when it could not renew within the renew deadline), and only the leader collects. A clean
//! shutdown releases the lease so that a standby takes over at its next retry.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kgc_client::Remote;
use kgc_gc::{Config as GcConfig, GarbageCollector};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The kubeconfig to use [default: $KUBECONFIG, else ~/.kube/config, else in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: the current context].
    #[arg(long)]
    context: Option<String>,
    /// Address of the health, metrics and debug endpoints (`:0` picks a free port; the address
    /// is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:9443")]
    listen: SocketAddr,
    /// Owner-reference GC workers per queue (`--concurrent-gc-syncs`).
    #[arg(long, default_value_t = 20)]
    gc_workers: usize,
    /// How often the garbage collector re-runs discovery anyway: a CRD change makes it re-run
    /// at once, this is the safety net.
    #[arg(long, default_value = "30s", value_parser = crate::parse_duration)]
    gc_resync: Duration,
    /// Elect a leader among replicas on a Lease; only the leader collects.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    leader_elect: bool,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "kube-system")]
    lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "kgc-controller")]
    lease_name: String,
    /// This replica's identity in the Lease [default: HOSTNAME-PID].
    #[arg(long)]
    identity: Option<String>,
    /// How long a standby waits, after the lease was last renewed, before taking it.
    #[arg(long, default_value = "15s", value_parser = crate::parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops collecting.
    #[arg(long, default_value = "10s", value_parser = crate::parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to take, and the leader to renew, the lease.
    #[arg(long, default_value = "2s", value_parser = crate::parse_duration)]
    leader_elect_retry_period: Duration,
    /// Collectors to turn off (comma-separated): `gc` is the owner-reference garbage collector;
    /// `podgc`, `ttl`, `csr`, `pv` and `nodes` are the lifecycle collectors.
    #[arg(long, value_delimiter = ',', value_parser = crate::lifecycle::DISABLE)]
    disable: Vec<String>,
    #[command(flatten)]
    lifecycle: crate::lifecycle::LifecycleArgs,
}

/// Client configuration kubectl-style: `--kubeconfig`, else `$KUBECONFIG` (merged), else
/// `~/.kube/config`, else the in-cluster service account; `--context` picks the context.
pub(crate) async fn kube_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<kube::Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("loading the kubeconfig {}", path.display()))?
        }
        None => match Kubeconfig::read() {
            Ok(kc) => kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .context("loading the kubeconfig")?,
            Err(e) if context.is_none() => kube::Config::incluster().map_err(|ic| {
                anyhow::anyhow!(
                    "no kubeconfig ({e}) and not running in a cluster ({ic}): pass --kubeconfig"
                )
            })?,
            Err(e) => return Err(e).context("reading the kubeconfig"),
        },
    };
    Ok(config)
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "kgc".to_owned());
    format!("{host}-{}", std::process::id())
}

/// Requests this process sent to the API server, by verb (every request: the collector's,
/// its watches and discovery, and leader election's).
#[derive(Default)]
struct Requests {
    counts: [AtomicU64; VERBS.len()],
}

/// `get` counts every non-watch GET, LISTs and discovery included.
const VERBS: [&str; 6] = ["get", "watch", "create", "update", "patch", "delete"];

impl Requests {
    fn count(&self, method: &http::Method, uri: &http::Uri) {
        let verb = match *method {
            http::Method::GET
                if uri.query().is_some_and(|q| {
                    q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1")
                }) =>
            {
                "watch"
            }
            http::Method::GET => "get",
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => return,
        };
        if let Some(i) = VERBS.iter().position(|v| *v == verb) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn render(&self, out: &mut String) {
        out.push_str(
            "# HELP kgc_controller_api_requests_total HTTP requests sent to the API server, by verb (get includes lists).\n\
             # TYPE kgc_controller_api_requests_total counter\n",
        );
        for (verb, n) in VERBS.iter().zip(&self.counts) {
            out.push_str(&format!(
                "kgc_controller_api_requests_total{{verb=\"{verb}\"}} {}\n",
                n.load(Ordering::Relaxed)
            ));
        }
    }
}

/// A kube client whose every request is counted.
fn counting_client(config: kube::Config, requests: Arc<Requests>) -> anyhow::Result<kube::Client> {
    let builder =
        kube::client::ClientBuilder::try_from(config).context("building the Kubernetes client")?;
    let layer = tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
        requests.count(req.method(), req.uri());
        req
    });
    Ok(builder.with_layer(&layer).build())
}

/// What the HTTP endpoints read.
struct Shared {
    client: kube::Client,
    requests: Arc<Requests>,
    /// The collector of the current leadership term.
    gc: RwLock<Option<GarbageCollector<Remote>>>,
    leader: AtomicBool,
    /// Times this replica became leader.
    terms: AtomicU64,
    lease: String,
    /// Collectors turned off.
    disable: Vec<String>,
    lifecycle: crate::lifecycle::LifecycleArgs,
    /// The lifecycle collectors' counters, kept across leadership terms.
    lifecycle_metrics: Arc<kgc_lifecycle::Metrics>,
}

impl Shared {
    fn gc(&self) -> Option<GarbageCollector<Remote>> {
        self.gc.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_gc(&self, gc: Option<GarbageCollector<Remote>>) {
        *self.gc.write().unwrap_or_else(|p| p.into_inner()) = gc;
    }
}

fn text(code: StatusCode, body: impl Into<String>) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

async fn healthz() -> Response {
    text(StatusCode::OK, "ok")
}

/// Ready when the API server answers; the body says whether this replica leads and, if so,
/// whether every resource has synced.
async fn readyz(State(s): State<Arc<Shared>>) -> Response {
    match tokio::time::timeout(Duration::from_secs(5), s.client.apiserver_version()).await {
        Ok(Ok(_)) => {
            let role = match s.gc() {
                Some(gc) if gc.is_synced() => "ok: leading, synced",
                Some(_) => "ok: leading, syncing",
                None => "ok: standing by",
            };
            text(StatusCode::OK, role)
        }
        Ok(Err(e)) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the API server is unreachable: {e}"),
        ),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the API server did not answer within 5 s",
        ),
    }
}

async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    let mut out = s.gc().map(|gc| gc.render_metrics()).unwrap_or_default();
    out.push_str(&s.lifecycle_metrics.render());
    s.requests.render(&mut out);
    out.push_str(&format!(
        "# HELP kgc_leader Whether this replica holds the leader lease and runs the collector.\n\
         # TYPE kgc_leader gauge\nkgc_leader {}\n\
         # HELP kgc_leader_terms_total Times this replica became the leader.\n\
         # TYPE kgc_leader_terms_total counter\nkgc_leader_terms_total {}\n",
        u8::from(s.leader.load(Ordering::Relaxed)),
        s.terms.load(Ordering::Relaxed),
    ));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        out,
    )
        .into_response()
}

async fn graph(State(s): State<Arc<Shared>>, Query(q): Query<HashMap<String, String>>) -> Response {
    // A standby has no collector, like a standby kube-controller-manager, which registers no
    // debug handler: 404 (not 503, which clients such as kube-rs retry).
    let Some(gc) = s.gc() else {
        return text(
            StatusCode::NOT_FOUND,
            format!(
                "this replica is not the leader; the garbage collector runs on the holder of lease {}",
                s.lease
            ),
        );
    };
    let uid = q.get("uid").map(String::as_str).filter(|u| !u.is_empty());
    match q.get("format").map(String::as_str) {
        Some("json") => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            gc.dump_json(uid).to_string(),
        )
            .into_response(),
        None | Some("" | "dot") => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/vnd.graphviz")],
            gc.dump_dot(uid),
        )
            .into_response(),
        Some(other) => text(
            StatusCode::BAD_REQUEST,
            format!("unknown format {other:?}: use dot or json"),
        ),
    }
}

/// The lease fields leader election compares, as observed.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: String,
    duration_seconds: i32,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    transitions: i32,
}

impl Record {
    fn of(lease: &Lease) -> Self {
        let spec = lease.spec.clone().unwrap_or_default();
        Self {
            holder: spec.holder_identity.unwrap_or_default(),
            duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time,
            renew_time: spec.renew_time,
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }
}

/// What one acquire-or-renew round found.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// This replica holds the lease (acquired or renewed).
    Held,
    /// Another replica holds a lease that has not expired.
    HeldByOther(String),
    /// Someone else wrote the lease first (409): try again next round.
    Conflict,
}

/// client-go `LeaderElector` over a Lease, with optimistic locking on resourceVersion.
struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    /// The record last seen and when it was first seen: expiry is judged by the local clock
    /// since the record last changed, never by comparing clocks across machines.
    observed: Option<(Record, Instant)>,
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl Elector {
    fn observe(&mut self, lease: &Lease) {
        let record = Record::of(lease);
        if self.observed.as_ref().is_none_or(|(r, _)| *r != record) {
            self.observed = Some((record, Instant::now()));
        }
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// Upstream `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Result<Round, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: kube::core::ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.lease_seconds()),
                    acquire_time: Some(now()),
                    renew_time: Some(now()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(&created);
                    Ok(Round::Held)
                }
                Err(e) if is_conflict(&e) => Ok(Round::Conflict),
                Err(e) => Err(e),
            };
        };
        self.observe(&lease);
        let (record, seen) = self.observed.clone().expect("just observed");
        let mine = record.holder == self.identity;
        let valid_for = Duration::from_secs(u64::try_from(record.duration_seconds).unwrap_or(0));
        if !record.holder.is_empty() && !mine && seen + valid_for > Instant::now() {
            return Ok(Round::HeldByOther(record.holder));
        }
        let mut spec = lease.spec.take().unwrap_or_default();
        let stamp = now();
        if mine {
            spec.renew_time = Some(stamp);
        } else {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(stamp.clone());
            spec.renew_time = Some(stamp);
            spec.lease_transitions = Some(record.transitions + 1);
        }
        spec.lease_duration_seconds = Some(self.lease_seconds());
        lease.spec = Some(spec);
        // `replace` sends the resourceVersion read above: a concurrent writer makes it a 409.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(&updated);
                Ok(Round::Held)
            }
            Err(e) if is_conflict(&e) => Ok(Round::Conflict),
            Err(e) => Err(e),
        }
    }

    /// One round, bounded by the renew deadline so a hung connection cannot outlive a lease.
    async fn round(&mut self) -> anyhow::Result<Round> {
        let deadline = self.renew_deadline;
        match tokio::time::timeout(deadline, self.try_acquire_or_renew()).await {
            Ok(r) => Ok(r?),
            Err(_) => anyhow::bail!("no answer from the API server within {deadline:?}"),
        }
    }

    /// Upstream `release`: empty holder, 1 s duration, so a standby takes over at once.
    async fn release(&mut self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let mut spec = lease.spec.take().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        let stamp = now();
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(stamp.clone());
        spec.renew_time = Some(stamp);
        lease.spec = Some(spec);
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
    }
}

/// Sleeps `d` with up to 20 % jitter (client-go `wait.JitterUntil` with factor 1.2 adds up
/// to 120 %; less keeps tests snappy). Returns true if `stop` fired first.
async fn pause(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    let d = d + d.mul_f64(f64::from(nanos % 1000) / 5000.0);
    let stopped = tokio::select! {
        _ = tokio::time::sleep(d) => false,
        r = stop.wait_for(|s| *s) => r.is_ok(),
    };
    stopped || *stop.borrow()
}

/// Starts the collectors for a leadership term.
fn start_gc(shared: &Shared, config: &GcConfig) -> tokio::task::JoinHandle<()> {
    let cluster = Remote::new(shared.client.clone());
    let gc = (!shared.disable.iter().any(|d| d == "gc"))
        .then(|| GarbageCollector::new(cluster.clone(), config.clone()));
    shared.set_gc(gc.clone());
    shared.leader.store(true, Ordering::Relaxed);
    shared.terms.fetch_add(1, Ordering::Relaxed);
    let lifecycle = shared.lifecycle.clone().run(
        cluster,
        shared.disable.clone(),
        Arc::clone(&shared.lifecycle_metrics),
    );
    tokio::spawn(async move {
        let gc = async {
            match gc {
                Some(gc) => gc.run().await,
                None => std::future::pending().await,
            }
        };
        tokio::join!(gc, lifecycle);
    })
}

async fn stop_gc(shared: &Shared, task: tokio::task::JoinHandle<()>) {
    task.abort();
    let _ = task.await;
    shared.leader.store(false, Ordering::Relaxed);
    shared.set_gc(None);
}

/// Campaigns, leads while the lease is held, and campaigns again when it is lost, until `stop`.
async fn run_elected(
    mut elector: Elector,
    shared: Arc<Shared>,
    config: GcConfig,
    mut stop: watch::Receiver<bool>,
) {
    let lease = shared.lease.clone();
    loop {
        // Candidate: the first try at once, then every retry period.
        let mut first = true;
        loop {
            if *stop.borrow() || (!first && pause(elector.retry_period, &mut stop).await) {
                return;
            }
            first = false;
            match elector.round().await {
                Ok(Round::Held) => break,
                Ok(Round::HeldByOther(holder)) => {
                    tracing::debug!(%lease, %holder, "the lease is held by another replica")
                }
                Ok(Round::Conflict) => tracing::debug!(%lease, "lost a race for the lease"),
                Err(e) => tracing::warn!(%lease, error = %e, "error taking the lease"),
            }
        }
        tracing::info!(%lease, identity = %elector.identity, "became the leader; starting the garbage collector");
        let task = start_gc(&shared, &config);
        // Leader.
        let mut renewed = Instant::now();
        let stopped = loop {
            if pause(elector.retry_period, &mut stop).await {
                break true;
            }
            match elector.round().await {
                Ok(Round::Held) => renewed = Instant::now(),
                Ok(Round::HeldByOther(holder)) => {
                    tracing::warn!(%lease, %holder, "another replica took the lease");
                    break false;
                }
                Ok(Round::Conflict) => tracing::debug!(%lease, "conflict renewing the lease"),
                Err(e) => tracing::warn!(%lease, error = %e, "error renewing the lease"),
            }
            if renewed.elapsed() > elector.renew_deadline {
                tracing::warn!(%lease, deadline = ?elector.renew_deadline, "could not renew the lease in time");
                break false;
            }
        };
        stop_gc(&shared, task).await;
        if stopped {
            let deadline = elector.renew_deadline;
            match tokio::time::timeout(deadline, elector.release()).await {
                Ok(Ok(())) => tracing::info!(%lease, "released the lease"),
                Ok(Err(e)) => tracing::warn!(%lease, error = %e, "releasing the lease failed"),
                Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
            }
            return;
        }
        tracing::warn!(%lease, "leadership lost; garbage collector stopped");
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let config = kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let requests = Arc::new(Requests::default());
    let client = counting_client(config, Arc::clone(&requests))?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let lease = format!("{}/{}", args.lease_namespace, args.lease_name);
    anyhow::ensure!(
        !args.leader_elect || args.leader_elect_renew_deadline < args.leader_elect_lease_duration,
        "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
    );
    anyhow::ensure!(
        !args.leader_elect || args.leader_elect_retry_period < args.leader_elect_renew_deadline,
        "--leader-elect-retry-period must be shorter than --leader-elect-renew-deadline"
    );
    let shared = Arc::new(Shared {
        client: client.clone(),
        requests,
        gc: RwLock::new(None),
        leader: AtomicBool::new(false),
        terms: AtomicU64::new(0),
        lease: lease.clone(),
        disable: args.disable.clone(),
        lifecycle: args.lifecycle.clone(),
        lifecycle_metrics: Arc::default(),
    });
    let config = GcConfig {
        workers: args.gc_workers,
        resync: args.gc_resync,
        ..GcConfig::default()
    };

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let local = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/debug/controllers/garbagecollector/graph", get(graph))
        .with_state(Arc::clone(&shared));

    let (stop_tx, stop_rx) = watch::channel(false);
    let work = if args.leader_elect {
        let elector = Elector {
            api: Api::namespaced(client.clone(), &args.lease_namespace),
            name: args.lease_name.clone(),
            identity: identity.clone(),
            lease_duration: args.leader_elect_lease_duration,
            renew_deadline: args.leader_elect_renew_deadline,
            retry_period: args.leader_elect_retry_period,
            observed: None,
        };
        tokio::spawn(run_elected(
            elector,
            Arc::clone(&shared),
            config,
            stop_rx.clone(),
        ))
    } else {
        let shared = Arc::clone(&shared);
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            tracing::info!("leader election disabled; starting the garbage collector");
            let task = start_gc(&shared, &config);
            let _ = stop.wait_for(|s| *s).await;
            stop_gc(&shared, task).await;
        })
    };

    let signalled = crate::signals::shutdown()?;
    tracing::info!(listen = %local, %identity, %lease, leader_elect = args.leader_elect, "kgc controller started");
    println!("kgc controller: listening on http://{local}");
    let mut http_stop = stop_rx.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = http_stop.wait_for(|s| *s).await;
            })
            .await
    });
    signalled.await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    work.await.context("the leader-election task")?;
    server
        .await
        .context("the HTTP server task")?
        .context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
}
