//! `kgc controller`: the owner-reference garbage collector against any Kubernetes API server.
//!
//! The same collector `kgc serve` runs in-process, here over kube-rs ([`kgc_client::Remote`]).
//! Several replicas may run: they elect a leader on a Lease ([`kgc_runtime::leader_election`]), and
//! only the leader collects, with a fresh collector each leadership term. Health, metrics and
//! the graph dump are on the admin server ([`crate::admin`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kgc_client::Remote;
use kgc_gc::{Config as GcConfig, GarbageCollector};
use kgc_runtime::leader_election::{self, LeaderElector, LeaderMetrics, Leading};
use kgc_runtime::metrics::Registry;
use kube::config::{KubeConfigOptions, Kubeconfig};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::sync::watch;

use kgc_runtime::decisions::Filter;

use crate::admin::{Admin, text};

#[derive(clap::Args)]
pub struct Args {
    /// The kubeconfig to use [default: $KUBECONFIG, else ~/.kube/config, else in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: the current context].
    #[arg(long)]
    context: Option<String>,
    #[command(flatten)]
    rate_limit: crate::rate_limit::Flags,
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
    #[command(flatten)]
    election: crate::election::ElectionArgs,
    /// Namespace of the leader-election Lease.
    #[arg(long, default_value = "kube-system")]
    lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "kgc-controller")]
    lease_name: String,
    /// This replica's identity in the Lease [default: HOSTNAME-PID].
    #[arg(long)]
    identity: Option<String>,
    /// (namespace, crd-cleanup, pod-termination and scheduler are off unless named: the cluster's own
    /// components do their jobs.)
    #[command(flatten)]
    selection: crate::controllers::Selection,
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

/// DER certificates as one PEM bundle.
fn pem_bundle(certs: &[Vec<u8>]) -> Arc<str> {
    let mut pem = String::new();
    for der in certs {
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = kgc_meta::encoding::base64(der);
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem.into()
}

pub(crate) fn default_identity() -> String {
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
struct Requests {
    /// One counter per verb of [`VERBS`], held rather than looked up per request.
    counts: [Counter; VERBS.len()],
}

/// `get` counts every non-watch GET, LISTs and discovery included.
const VERBS: [&str; 6] = ["get", "watch", "create", "update", "patch", "delete"];

impl Requests {
    fn new(registry: &Registry) -> Self {
        let family = Family::<[(&'static str, &'static str); 1], Counter>::default();
        let counts = VERBS.map(|verb| family.get_or_create_owned(&[("verb", verb)]));
        registry.register(
            "kgc_controller_api_requests",
            "HTTP requests sent to the API server, by verb (get includes lists).",
            family,
        );
        Self { counts }
    }

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
            self.counts[i].inc();
        }
    }
}

/// A kube client whose every request is counted.
/// What the leadership terms and the admin endpoints share.
struct Shared {
    client: kube::Client,
    /// The collector of the current leadership term.
    gc: RwLock<Option<GarbageCollector<Remote>>>,
    lease: String,
    /// Collectors turned off.
    disable: Vec<String>,
    lifecycle: crate::lifecycle::LifecycleArgs,
    /// The collectors' metrics, registered once and kept across leadership terms.
    gc_metrics: Option<kgc_gc::Metrics>,
    lifecycle_metrics: Arc<kgc_lifecycle::Metrics>,
    /// The controllers' work-queue metrics, likewise.
    queue_metrics: kgc_runtime::queue::QueueMetrics,
    /// The kubeconfig's CA, which the root-CA publisher (off unless named) publishes, as
    /// kube-controller-manager does without `--root-ca-file`.
    root_ca: Option<Arc<str>>,
}

impl Shared {
    fn gc(&self) -> Option<GarbageCollector<Remote>> {
        self.gc.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_gc(&self, gc: Option<GarbageCollector<Remote>>) {
        *self.gc.write().unwrap_or_else(|p| p.into_inner()) = gc;
    }
}

/// Ready when the API server answers; the body says whether this replica leads and, if so,
/// whether every resource has synced.
async fn readyz(s: Arc<Shared>) -> Result<String, String> {
    match tokio::time::timeout(Duration::from_secs(5), s.client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(match s.gc() {
            Some(gc) if gc.is_synced() => "ok: leading, synced",
            Some(_) => "ok: leading, syncing",
            None => "ok: standing by",
        }
        .to_owned()),
        Ok(Err(e)) => Err(format!("the API server is unreachable: {e}")),
        Err(_) => Err("the API server did not answer within 5 s".to_owned()),
    }
}

fn graph(s: &Shared, q: &HashMap<String, String>) -> Response {
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

/// Starts the collectors for a leadership term.
fn start_gc(
    shared: &Shared,
    config: &GcConfig,
    fence: &kgc_client::Fence,
) -> tokio::task::JoinHandle<()> {
    // One set of watches for the term, shared by every controller and collector, and one
    // client whose writes go only while the term's fence is open.
    let client = fence.client(shared.client.clone());
    let informers = kgc_runtime::informer::Informers::new(Remote::new(client.clone()));
    let gc = shared
        .gc_metrics
        .clone()
        .map(|metrics| GarbageCollector::with_metrics(informers.clone(), config.clone(), metrics));
    shared.set_gc(gc.clone());
    let ctx = kgc_runtime::Context {
        informers,
        client,
        clock: shared.lifecycle.clock(),
        queues: Some(shared.queue_metrics.clone()),
        root_ca: shared.root_ca.clone(),
        decisions: config.decisions.clone(),
    };
    let lifecycle = shared.lifecycle.clone().run(
        ctx.clone(),
        shared.disable.clone(),
        Arc::clone(&shared.lifecycle_metrics),
    );
    let controllers = {
        let disabled = shared.disable.clone();
        let (volumes, endpoints, quota) = (
            shared.lifecycle.volumes(),
            shared.lifecycle.endpoints(),
            shared.lifecycle.resource_quota(),
        );
        async move { crate::controllers::run(ctx, &disabled, volumes, endpoints, quota).await }
    };
    tokio::spawn(async move {
        let gc = async {
            match gc {
                Some(gc) => gc.run().await,
                None => std::future::pending().await,
            }
        };
        tokio::join!(gc, lifecycle, controllers);
    })
}

/// A leadership term: the collectors run while the lease is held.
struct Term {
    shared: Arc<Shared>,
    config: GcConfig,
}

impl Leading for Term {
    fn start(&mut self, fence: kgc_client::Fence) -> tokio::task::JoinHandle<()> {
        tracing::info!("starting the garbage collector");
        start_gc(&self.shared, &self.config, &fence)
    }

    fn stopped(&mut self) {
        self.shared.set_gc(None);
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let config = kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let registry = Registry::default();
    let requests = Arc::new(Requests::new(&registry));
    let root_ca = config.root_cert.as_deref().map(pem_bundle);
    let count: crate::rate_limit::Observer =
        Arc::new(move |method, uri| requests.count(method, uri));
    let throttle = args.rate_limit.throttle(crate::rate_limit::CONTROLLER);
    let client = crate::rate_limit::client(config, throttle, Some(count))?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let lease = format!("{}/{}", args.lease_namespace, args.lease_name);
    args.election.check()?;
    let disabled = args
        .selection
        .disabled(&crate::controllers::off_against_a_cluster())
        .map_err(anyhow::Error::msg)?;
    let leader = LeaderMetrics::register(&registry);
    let shared = Arc::new(Shared {
        client: client.clone(),
        gc: RwLock::new(None),
        lease: lease.clone(),
        lifecycle: args.lifecycle.clone(),
        gc_metrics: (!disabled.iter().any(|d| d == "gc")).then(|| kgc_gc::Metrics::new(&registry)),
        lifecycle_metrics: Arc::new(kgc_lifecycle::Metrics::new(&registry)),
        queue_metrics: registry.queues(),
        disable: disabled,
        root_ca,
    });
    let config = GcConfig {
        workers: args.gc_workers,
        resync: args.gc_resync,
        clock: args.lifecycle.clock(),
        ..GcConfig::default()
    };

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let local = listener.local_addr()?;
    let ready = Arc::clone(&shared);
    let dump = Arc::clone(&shared);
    let decisions = config.decisions.clone();
    let admin = Admin::new(registry, move || readyz(Arc::clone(&ready)))
        .debug(
            "controllers/garbagecollector/graph",
            get(move |Query(q): Query<HashMap<String, String>>| {
                std::future::ready(graph(&dump, &q))
            }),
        )
        .debug(
            "gc/decisions",
            get(move |Query(q): Query<HashMap<String, String>>| {
                let filter = Filter::from_query(|k| q.get(k).map(String::as_str));
                std::future::ready(axum::Json(decisions.to_json(&filter)))
            }),
        );

    let (stop_tx, stop_rx) = watch::channel(false);
    let term = Term {
        shared: Arc::clone(&shared),
        config,
    };
    let work = if args.election.leader_elect {
        let elector = LeaderElector::new(
            client.clone(),
            args.election
                .config(&args.lease_namespace, &args.lease_name, &identity),
        );
        tokio::spawn(elector.lead(term, leader, stop_rx.clone()))
    } else {
        tracing::info!("leader election disabled; starting the garbage collector");
        tokio::spawn(leader_election::run_unelected(
            term,
            leader,
            stop_rx.clone(),
        ))
    };

    let signalled = crate::signals::shutdown()?;
    tracing::info!(listen = %local, %identity, %lease, leader_elect = args.election.leader_elect, "kgc controller started");
    println!("kgc controller: listening on http://{local}");
    let server = tokio::spawn(admin.serve(listener, stop_rx.clone()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_bundle_wraps_each_certificate_at_64_columns() {
        let pem = pem_bundle(&[vec![0u8; 60], vec![1, 2, 3]]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines[2].len(), 80 - 64);
        assert_eq!(lines[3], "-----END CERTIFICATE-----");
        assert_eq!(
            &lines[4..],
            [
                "-----BEGIN CERTIFICATE-----",
                "AQID",
                "-----END CERTIFICATE-----"
            ]
        );
    }
}
