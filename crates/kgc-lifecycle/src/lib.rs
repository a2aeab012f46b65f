//! The lifecycle collectors: everything Kubernetes garbage-collects besides owner references
//! (kubernetes/kubernetes `pkg/controller/podgc`, `pkg/controller/ttlafterfinished`,
//! `pkg/controller/certificates/cleaner`, `pkg/controller/volume/persistentvolume`).
//!
//! - [`podgc`]: terminated pods beyond a threshold, pods of nodes that are gone, unscheduled
//!   terminating pods and terminating pods on out-of-service nodes (kube-controller-manager's
//!   PodGC);
//! - [`ttl`]: Jobs whose `ttlSecondsAfterFinished` has passed, each requeued exactly at its
//!   expiry (the TTL-after-finished controller);
//! - [`csr`]: stale CertificateSigningRequests (the CSR cleaner);
//! - [`volume`]: PersistentVolumes whose claim is gone: Released, then reclaimed through a
//!   pluggable [`volume::Deleter`] (kgc ships a host-path one);
//! - [`node`]: departed nodes, by lease age and an operator-supplied existence check (the role a
//!   cloud controller manager plays).
//!
//! Each collector is a pure decision function (objects in, planned deletions out: the upstream
//! unit tests exercise these) and an async loop on the process's runtime
//! [`Context`](kgc_runtime::Context) that watches through, and acts only through,
//! [`kgc_client::Cluster`], so it runs unchanged inside `kgc serve` and against any cluster.
//! Every deletion carries a uid precondition and is logged with its reason.
#![forbid(unsafe_code)]

pub mod csr;
pub mod metrics;
pub mod node;
pub mod podgc;
pub mod ttl;
pub mod volume;

use std::sync::Arc;
use std::time::Duration;

use kgc_client::{Cluster, Deleted};
use kgc_meta::{DeleteOptions, Preconditions, PropagationPolicy, Reason, ResourceInfo};
use kgc_runtime::Context;
use kgc_runtime::decisions::{Action, Record};
use kgc_runtime::informer::{describe, key_of};
pub use metrics::Metrics;
use serde_json::Value;

/// Errors of the lifecycle collectors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cluster(#[from] kgc_client::Error),
    /// An object whose field cannot be judged: logged and skipped, never acted on.
    #[error("{object}: {field}: {reason}")]
    Invalid {
        object: String,
        field: &'static str,
        reason: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Settings of every collector.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The collectors not to run, by the names `--controllers` takes (`podgc`, `ttl`, `csr`,
    /// `pv`, `nodes`).
    pub disabled: Vec<String>,
    pub podgc: podgc::Config,
    pub ttl: ttl::Config,
    pub csr: csr::Config,
    pub volume: volume::Config,
    pub node: node::Config,
}

impl Config {
    pub fn enabled(&self, collector: &str) -> bool {
        !self.disabled.iter().any(|d| d == collector)
    }
}

/// Deletes one object for `collector`, guarded by its uid, counting the outcome in `metrics`,
/// logging it and recording it in the context's decision history. `Ok(false)` when it was
/// gone already or another object now has its name.
pub async fn delete<C: Cluster>(
    ctx: &Context<C>,
    metrics: &Metrics,
    (collector, reason): (&'static str, &'static str),
    target: Target<'_>,
    options: DeleteOptions,
) -> Result<bool> {
    let Target {
        resource,
        namespace,
        name,
        uid,
    } = target;
    let options = DeleteOptions {
        preconditions: Preconditions {
            uid: Some(uid.to_owned()),
            ..options.preconditions
        },
        ..options
    };
    let object = describe(&(namespace.to_owned(), name.to_owned()));
    match ctx
        .cluster()
        .delete(resource, namespace, name, &options)
        .await
    {
        Ok(d) => {
            metrics.deleted(collector, reason);
            let pending = matches!(d, Deleted::Pending(_));
            tracing::info!(collector, reason, kind = %resource.kind, %object, %uid, pending, "deleted");
            ctx.decisions.record(Record {
                time: ctx.clock.now(),
                collector,
                action: Action::Delete,
                api_version: &kgc_meta::catalog::api_version(
                    &resource.group,
                    resource.preferred_version(),
                ),
                kind: &resource.kind,
                namespace,
                name,
                uid,
                propagation_policy: options.propagation_policy.map(|p| p.as_str()),
                reason: &explain(collector, reason),
            });
            Ok(true)
        }
        Err(e) if e.is(Reason::NotFound) || e.is(Reason::Conflict) => {
            tracing::debug!(collector, kind = %resource.kind, %object, error = %e, "already gone or replaced");
            Ok(false)
        }
        Err(e) => {
            metrics.error(collector, reason);
            tracing::warn!(collector, reason, kind = %resource.kind, %object, error = %e, "delete failed");
            Err(e.into())
        }
    }
}

/// A collector's reason label (as counted in its metrics) in words, for the decision history.
fn explain(collector: &str, reason: &'static str) -> &'static str {
    match (collector, reason) {
        ("podgc", "terminated") => {
            "terminated pods exceed --terminated-pod-gc-threshold; the oldest are deleted"
        }
        ("podgc", "orphaned") => "its node no longer exists",
        ("podgc", "unscheduled") => "terminating and never scheduled to a node",
        ("podgc", "out-of-service") => "terminating on a node tainted out-of-service",
        ("ttl", "expired") => "ttlSecondsAfterFinished expired after the Job finished",
        ("csr", "issued-past-deadline") => "approved and issued, and kept past its deadline",
        ("csr", "denied") => "denied longer ago than denied requests are kept",
        ("csr", "failed") => "failed longer ago than failed requests are kept",
        ("csr", "pending") => "pending longer than pending requests are kept",
        ("csr", "expired") => "its issued certificate has expired",
        ("pv", "reclaimed") => "its claim is gone and its reclaim policy is Delete",
        ("nodes", "departed") => {
            "its lease expired and --node-exists-command says the machine is gone"
        }
        _ => reason,
    }
}

/// The object a collector acts on, by name and uid.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub resource: &'a ResourceInfo,
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

impl<'a> Target<'a> {
    /// A cluster-scoped object.
    pub fn cluster(resource: &'a ResourceInfo, name: &'a str, uid: &'a str) -> Self {
        Self {
            resource,
            namespace: "",
            name,
            uid,
        }
    }
}

/// A ticker for a periodic pass: the first tick at once, and a late pass delays the next
/// instead of bunching them.
pub fn every(period: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// `DeleteOptions` with a propagation policy.
pub fn propagation(policy: PropagationPolicy) -> DeleteOptions {
    DeleteOptions {
        propagation_policy: Some(policy),
        ..DeleteOptions::default()
    }
}

/// `DeleteOptions` with a grace period (PodGC's force delete is 0).
pub fn grace(seconds: i64) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: Some(seconds),
        ..DeleteOptions::default()
    }
}

/// A `metav1.Time`/`MicroTime` field: `Ok(None)` when absent or null, an error naming the field
/// when it is not an RFC 3339 string.
pub fn time_field(
    obj: &Value,
    value: &Value,
    field: &'static str,
) -> Result<Option<jiff::Timestamp>> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => s.parse().map(Some).map_err(|e| Error::Invalid {
            object: describe(&key_of(obj)),
            field,
            reason: format!("{s:?} is not an RFC 3339 time: {e}"),
        }),
        other => Err(Error::Invalid {
            object: describe(&key_of(obj)),
            field,
            reason: format!("expected a time string, got {other}"),
        }),
    }
}

/// A string field: `""` when absent, an error when of another type.
pub fn str_field<'a>(obj: &Value, value: &'a Value, field: &'static str) -> Result<&'a str> {
    match value {
        Value::Null => Ok(""),
        Value::String(s) => Ok(s),
        other => Err(Error::Invalid {
            object: describe(&key_of(obj)),
            field,
            reason: format!("expected a string, got {other}"),
        }),
    }
}

/// Logs an object a collector cannot judge and counts it; it is left alone.
pub fn skip(metrics: &Metrics, collector: &'static str, error: &Error) {
    metrics.skipped(collector, "malformed");
    tracing::warn!(collector, error = %error, "skipping an object that cannot be judged");
}

/// Runs every enabled collector on `ctx` (the process's one runtime context), counting into
/// `metrics`, until the returned future is dropped.
pub async fn run<C: Cluster>(ctx: Context<C>, config: Config, metrics: Arc<Metrics>) {
    let mut tasks = Vec::new();
    let m = || Arc::clone(&metrics);
    if config.enabled("podgc") {
        tasks.push(tokio::spawn(podgc::run(
            ctx.clone(),
            config.podgc.clone(),
            m(),
        )));
    }
    if config.enabled("ttl") {
        tasks.push(tokio::spawn(ttl::run(ctx.clone(), config.ttl.clone(), m())));
    }
    if config.enabled("csr") {
        tasks.push(tokio::spawn(csr::run(ctx.clone(), config.csr.clone(), m())));
    }
    if config.enabled("pv") {
        tasks.push(tokio::spawn(volume::run(
            ctx.clone(),
            config.volume.clone(),
            m(),
        )));
    }
    if config.enabled("nodes") && config.node.gone_after.is_some() {
        tasks.push(tokio::spawn(node::run(
            ctx.clone(),
            config.node.clone(),
            m(),
        )));
    }
    let _guard = AbortAll(tasks);
    std::future::pending::<()>().await;
}

/// Aborts the collector tasks when `run` is dropped (a lost leadership, a shutdown).
struct AbortAll(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortAll {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}
