//! Leader election among replicas on a coordination.k8s.io/v1 Lease, the way client-go's
//! `tools/leaderelection` does it (`kubernetes/client-go tools/leaderelection/leaderelection.go`):
//! a candidate takes the lease only once it has seen it unchanged for its whole duration; the
//! leader renews every retry period and steps down when it could not renew within the renew
//! deadline; a clean shutdown releases the lease so that a standby takes over at its next retry.
//! Writes carry the resourceVersion read, so two candidates cannot both win.
//!
//! The term's work writes through a [`Fence`] that each renewal opens until the renew deadline
//! ([`Leading::start`]): a leader paused or starved past its deadline steps down before its
//! controllers write anything, instead of running them until its elector next looks at the
//! lease (see `kgc_client::Fence`).
//!
//! It talks kube-rs, so the same elector runs against any cluster (`kgc controller`, `kgc
//! sync`) and inside `kgc serve` over its loopback client, where the replicas of one etcd
//! elect who runs the controllers and who the scheduler ([`LeaderElector::lead`]).

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kgc_client::{Fence, LeaseHolder};
use kube::api::{Api, PostParams};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::Registry;

/// Where and as whom to campaign, and the timings (`--leader-elect-*`).
#[derive(Clone, Debug)]
pub struct Config {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long a standby waits, after the lease was last renewed, before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// How often candidates try to take, and the leader to renew, the lease.
    pub retry_period: Duration,
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

/// Why a leadership term ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// `stop` fired: shutting down.
    Stopped,
    /// Another replica took the lease, or it could not be renewed in time.
    Lost,
}

/// client-go `LeaderElector` over a Lease, with optimistic locking on resourceVersion.
pub struct LeaderElector {
    api: Api<Lease>,
    config: Config,
    /// `namespace/name`, for logs.
    lease: String,
    /// The record last seen and when it was first seen: expiry is judged by the local clock
    /// since the record last changed, never by comparing clocks across machines.
    observed: Option<(Record, Instant)>,
    /// Take a lease held by another identity at the first try, without waiting for it to
    /// expire ([`LeaderElector::sole_candidate`]).
    sole_candidate: bool,
    /// Open until the renew deadline after the last successful round's start; the term's
    /// writes go through it.
    fence: Fence,
}

/// Why a round could not tell who holds the lease.
#[derive(Debug)]
enum RoundError {
    Api(kube::Error),
    Timeout(Duration),
}

impl fmt::Display for RoundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api(e) => e.fmt(f),
            Self::Timeout(d) => write!(f, "no answer from the API server within {d:?}"),
        }
    }
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl LeaderElector {
    pub fn new(client: kube::Client, config: Config) -> Self {
        // The term's writes name the lease, for the store to guard them with it.
        let fence = Fence::closed().on_lease(LeaseHolder {
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            identity: config.identity.clone(),
        });
        Self {
            api: Api::namespaced(client, &config.namespace),
            lease: format!("{}/{}", config.namespace, config.name),
            config,
            observed: None,
            sole_candidate: false,
            fence,
        }
    }

    /// Declares that no other candidate can be alive when this one starts (a `kgc serve` on
    /// SQLite: its data directory is locked to one process), so a holder found at the first
    /// try is this replica's own previous run, killed before it released the lease: it is
    /// taken over at once instead of after the lease duration. A holder that appears later is
    /// still respected.
    pub fn sole_candidate(mut self, sole: bool) -> Self {
        self.sole_candidate = sole;
        self
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Upstream `acquire`: the first try at once, then one every retry period, until this
    /// replica holds the lease (true) or `stop` fires (false).
    pub async fn acquire(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        let lease = self.lease.clone();
        let mut first = true;
        loop {
            if *stop.borrow() || (!first && pause(self.config.retry_period, stop).await) {
                return false;
            }
            first = false;
            match self.round().await {
                Ok(Round::Held) => return true,
                Ok(Round::HeldByOther(holder)) => {
                    tracing::debug!(%lease, %holder, "the lease is held by another replica")
                }
                Ok(Round::Conflict) => tracing::debug!(%lease, "lost a race for the lease"),
                Err(e) => tracing::warn!(%lease, error = %e, "error taking the lease"),
            }
        }
    }

    /// Upstream `renew`: renews every retry period while leading, until `stop` fires or the
    /// lease is lost (taken, or not renewed within the renew deadline). The deadline is
    /// judged before each round as well as after it: a leader that wakes from a pause longer
    /// than its deadline steps down at once, without waiting for an answer about a lease that
    /// may be another's by now. Either way the fence is closed first.
    pub async fn renew(&mut self, stop: &mut watch::Receiver<bool>) -> Ended {
        let ended = self.renewing(stop).await;
        self.fence.close();
        ended
    }

    async fn renewing(&mut self, stop: &mut watch::Receiver<bool>) -> Ended {
        let lease = self.lease.clone();
        let deadline = self.config.renew_deadline;
        loop {
            if pause(self.config.retry_period, stop).await {
                return Ended::Stopped;
            }
            if !self.fence.is_open() {
                tracing::warn!(%lease, ?deadline, "the lease was not renewed in time");
                return Ended::Lost;
            }
            match self.round().await {
                Ok(Round::Held) => {}
                Ok(Round::HeldByOther(holder)) => {
                    tracing::warn!(%lease, %holder, "another replica took the lease");
                    return Ended::Lost;
                }
                Ok(Round::Conflict) => tracing::debug!(%lease, "conflict renewing the lease"),
                Err(e) => tracing::warn!(%lease, error = %e, "error renewing the lease"),
            }
            if !self.fence.is_open() {
                tracing::warn!(%lease, ?deadline, "could not renew the lease in time");
                return Ended::Lost;
            }
        }
    }

    /// Upstream `release`, bounded by the renew deadline: empty holder, 1 s duration, so a
    /// standby takes over at once. Failures are logged; the lease then expires on its own.
    pub async fn release(&mut self) {
        let lease = self.lease.clone();
        let deadline = self.config.renew_deadline;
        match tokio::time::timeout(deadline, self.try_release()).await {
            Ok(Ok(())) => tracing::info!(%lease, "released the lease"),
            Ok(Err(e)) => tracing::warn!(%lease, error = %e, "releasing the lease failed"),
            Err(_) => tracing::warn!(%lease, "releasing the lease timed out"),
        }
    }

    fn observe(&mut self, lease: &Lease) {
        let record = Record::of(lease);
        if self.observed.as_ref().is_none_or(|(r, _)| *r != record) {
            self.observed = Some((record, Instant::now()));
        }
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// Upstream `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Result<Round, kube::Error> {
        let name = self.config.name.clone();
        let identity = self.config.identity.clone();
        // Only the first round may find this replica's previous run.
        let stale_own_run = std::mem::take(&mut self.sole_candidate);
        let Some(mut lease) = self.api.get_opt(&name).await? else {
            let lease = Lease {
                metadata: kube::core::ObjectMeta {
                    name: Some(name),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(identity),
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
        let mine = record.holder == identity;
        let valid_for = Duration::from_secs(u64::try_from(record.duration_seconds).unwrap_or(0));
        if !record.holder.is_empty() && !mine && !stale_own_run && seen + valid_for > Instant::now()
        {
            return Ok(Round::HeldByOther(record.holder));
        }
        let mut spec = lease.spec.take().unwrap_or_default();
        let stamp = now();
        if mine {
            spec.renew_time = Some(stamp);
        } else {
            spec.holder_identity = Some(identity);
            spec.acquire_time = Some(stamp.clone());
            spec.renew_time = Some(stamp);
            spec.lease_transitions = Some(record.transitions + 1);
        }
        spec.lease_duration_seconds = Some(self.lease_seconds());
        lease.spec = Some(spec);
        // `replace` sends the resourceVersion read above: a concurrent writer makes it a 409.
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
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
    /// A round that holds the lease opens the fence until the renew deadline after the round
    /// started: the lease was written after that instant, so no candidate takes it before
    /// the lease duration (longer than the deadline) has passed since.
    async fn round(&mut self) -> Result<Round, RoundError> {
        let deadline = self.config.renew_deadline;
        let started = std::time::Instant::now();
        let round = match tokio::time::timeout(deadline, self.try_acquire_or_renew()).await {
            Ok(r) => r.map_err(RoundError::Api),
            Err(_) => Err(RoundError::Timeout(deadline)),
        };
        if let Ok(Round::Held) = round {
            self.fence.open_until(started + deadline);
        }
        round
    }

    async fn try_release(&mut self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(());
        };
        let mut spec = lease.spec.take().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        let stamp = now();
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(stamp.clone());
        spec.renew_time = Some(stamp);
        lease.spec = Some(spec);
        self.api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
    }
}

/// What a leader does while it leads: client-go's `LeaderCallbacks`.
pub trait Leading: Send {
    /// `OnStartedLeading`: starts this term's work (fresh controllers each term), which
    /// writes only through `fence` (`InProcess::fenced`, [`Fence::client`]).
    fn start(&mut self, fence: Fence) -> JoinHandle<()>;
    /// `OnStoppedLeading`, after the term's task was aborted and has ended.
    fn stopped(&mut self) {}
}

impl LeaderElector {
    /// client-go's `LeaderElector.Run` in a loop: campaigns, runs `leading`'s work while the
    /// lease is held, aborts it when the lease is lost and campaigns again, until `stop`; then
    /// the lease is released so that another replica takes over at its next retry.
    pub async fn lead(
        mut self,
        mut leading: impl Leading,
        metrics: LeaderMetrics,
        mut stop: watch::Receiver<bool>,
    ) {
        let lease = self.lease.clone();
        loop {
            if !self.acquire(&mut stop).await {
                return;
            }
            tracing::info!(%lease, identity = %self.identity(), "became the leader");
            metrics.leader.set(1);
            metrics.terms.inc();
            let task = leading.start(self.fence.clone());
            let ended = self.renew(&mut stop).await;
            task.abort();
            let _ = task.await;
            metrics.leader.set(0);
            leading.stopped();
            if ended == Ended::Stopped {
                self.release().await;
                return;
            }
            tracing::warn!(%lease, "leadership lost; this term's work stopped");
        }
    }
}

/// Runs `leading`'s work as one term until `stop`, for a process told not to elect
/// (`--leader-elect=false`): the single replica leads from the start.
pub async fn run_unelected(
    mut leading: impl Leading,
    metrics: LeaderMetrics,
    mut stop: watch::Receiver<bool>,
) {
    metrics.leader.set(1);
    metrics.terms.inc();
    let task = leading.start(Fence::open());
    let _ = stop.wait_for(|s| *s).await;
    task.abort();
    let _ = task.await;
    metrics.leader.set(0);
    leading.stopped();
}

/// `kgc_leader` and `kgc_leader_terms_total`, of one lease.
#[derive(Clone, Default)]
pub struct LeaderMetrics {
    /// 1 while this replica holds the lease and runs its work.
    pub leader: Gauge,
    /// Times this replica became the leader.
    pub terms: Counter,
}

const LEADER_HELP: &str = "Whether this replica holds the leader lease and runs its work.";
const TERMS_HELP: &str = "Times this replica became the leader.";

impl LeaderMetrics {
    /// The metrics of a process that campaigns for one lease (`kgc controller`).
    pub fn register(registry: &Registry) -> Self {
        let m = Self::default();
        registry.register("kgc_leader", LEADER_HELP, m.leader.clone());
        registry.register("kgc_leader_terms", TERMS_HELP, m.terms.clone());
        m
    }

    /// The metrics of a process that campaigns for several leases (`kgc serve`), one series
    /// per lease, labelled `lease="namespace/name"`.
    pub fn register_each(registry: &Registry, leases: &[&str]) -> Vec<Self> {
        let leader = Family::<[(&'static str, String); 1], Gauge>::default();
        let terms = Family::<[(&'static str, String); 1], Counter>::default();
        let each = leases
            .iter()
            .map(|l| Self {
                leader: leader.get_or_create_owned(&[("lease", (*l).to_owned())]),
                terms: terms.get_or_create_owned(&[("lease", (*l).to_owned())]),
            })
            .collect();
        registry.register("kgc_leader", LEADER_HELP, leader);
        registry.register("kgc_leader_terms", TERMS_HELP, terms);
        each
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
