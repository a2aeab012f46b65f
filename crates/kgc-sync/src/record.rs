//! What a Flux Kustomization keeps in its status (`lastAppliedRevision`,
//! `lastAttemptedRevision`, the Ready condition's reason and message; `fluxcd/kustomize-controller
//! api/v1/kustomization_types.go`), kept as annotations on the set's parent ConfigMap: the parent
//! is the set's one object, and annotations are readable with `kubectl get -o yaml`.
//!
//! The record is written by server-side apply under its own field manager ([`FIELD_MANAGER`]),
//! so the engine's applies of the parent (manager `kgc`) and the record never undo each other,
//! and an annotation the record no longer carries (an old error message) is removed by the apply
//! itself. [`ANNOTATION_SUSPENDED`] is not part of it: people and `kgc sync suspend` set it.

use std::collections::BTreeMap;

use kgc_prune::executor::{Action, DeleteOutcome, Report};

pub const ANNOTATION_SOURCE: &str = "kgc.io/sync-source";
/// The revision last applied completely (`main@sha1:<hex>`), kept across failed runs.
pub const ANNOTATION_REVISION: &str = "kgc.io/sync-revision";
/// The revision of the last recorded run, whatever its outcome.
pub const ANNOTATION_ATTEMPTED_REVISION: &str = "kgc.io/sync-attempted-revision";
/// When the record last changed: a run that changes nothing and ends as the last one did
/// leaves the record alone (Flux's Ready condition keeps its `lastTransitionTime` too), so an
/// unchanged re-sync writes nothing; the daemon's `/metrics` has every attempt.
pub const ANNOTATION_LAST_CHANGE: &str = "kgc.io/sync-last-change";
pub const ANNOTATION_OUTCOME: &str = "kgc.io/sync-outcome";
pub const ANNOTATION_MESSAGE: &str = "kgc.io/sync-message";
pub const ANNOTATION_COUNTS: &str = "kgc.io/sync-counts";
/// Whether the applied objects were ready when the run ended (Flux's `Healthy` condition):
/// `True`, `False` or `Unknown`; only recorded by runs that wait (`--wait`, as Flux checks
/// health only with `spec.wait` or `spec.healthChecks`).
pub const ANNOTATION_HEALTHY: &str = "kgc.io/sync-healthy";
/// Which objects were not ready, and why.
pub const ANNOTATION_HEALTH_MESSAGE: &str = "kgc.io/sync-health-message";
/// `"true"`: the loop applies and prunes nothing (Flux's `spec.suspend`).
pub const ANNOTATION_SUSPENDED: &str = "kgc.io/sync-suspended";

/// The field manager of the record's applies.
pub const FIELD_MANAGER: &str = "kgc-sync";

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// Everything applied and pruned (Flux: Ready, `ReconciliationSucceeded`).
    Succeeded,
    /// Applied, but some kind could not be listed or a pruned object is still held by
    /// finalizers: done as far as it could be judged.
    Incomplete,
    /// The source could not be read completely, or the engine refused or failed: nothing
    /// applied or pruned when the error came before the first write, and the previous revision
    /// stays the applied one (Flux: `ReconciliationFailed`).
    Failed,
    /// Suspended: nothing was done.
    Suspended,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "Succeeded",
            Outcome::Incomplete => "Incomplete",
            Outcome::Failed => "Failed",
            Outcome::Suspended => "Suspended",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Outcome::Succeeded,
            Outcome::Incomplete,
            Outcome::Failed,
            Outcome::Suspended,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }

    /// The exit code of `kgc sync --once`, as `kgc apply`'s: 0 done, 1 error, 2 changed (only
    /// with `--exit-code`), 3 done but undetermined, held by finalizers, or suspended.
    pub fn exit_code(self, changed: bool, exit_code_on_change: bool) -> i32 {
        match self {
            Outcome::Failed => 1,
            Outcome::Incomplete | Outcome::Suspended => 3,
            Outcome::Succeeded if changed && exit_code_on_change => 2,
            Outcome::Succeeded => 0,
        }
    }
}

/// Flux's `Healthy` condition status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Health {
    /// Every applied object was ready (kstatus Current).
    True,
    /// Some were not ready at the deadline, or Failed.
    False,
    /// The run did not get to check (it failed before or while applying).
    Unknown,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::True => "True",
            Health::False => "False",
            Health::Unknown => "Unknown",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Health::True, Health::False, Health::Unknown]
            .into_iter()
            .find(|h| h.as_str() == s)
    }

    /// The health a waiting run found: `report` is the engine's, when the run got that far.
    /// Returns the health and, unless healthy, why.
    pub fn of(report: Option<&Report>) -> (Self, Option<String>) {
        match report {
            Some(r) if r.apply_errors.is_empty() && r.not_ready.is_empty() => (Health::True, None),
            Some(r) if r.apply_errors.is_empty() => (
                Health::False,
                Some(
                    r.not_ready
                        .iter()
                        .map(|n| format!("{} is {}: {}", n.key, n.status, n.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            ),
            _ => (
                Health::Unknown,
                Some("not checked: the run did not apply everything".into()),
            ),
        }
    }
}

/// What a run did, by action.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub created: usize,
    pub configured: usize,
    pub unchanged: usize,
    pub deleted: usize,
    pub kept: usize,
    pub undetermined: usize,
}

impl Counts {
    pub fn of(report: &Report) -> Self {
        let applied = |a: Action| report.applied.iter().filter(|(_, x)| *x == a).count();
        Counts {
            created: applied(Action::Create),
            configured: applied(Action::Update),
            unchanged: applied(Action::Unchanged),
            deleted: report
                .deleted
                .iter()
                .filter(|(_, o)| matches!(o, DeleteOutcome::Deleted | DeleteOutcome::Gone))
                .count(),
            kept: report.kept.len(),
            undetermined: report.undetermined.len(),
        }
    }

    /// `created=1,configured=0,...`.
    fn encode(&self) -> String {
        self.fields()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn decode(s: &str) -> Self {
        let mut c = Counts::default();
        for (k, v) in s.split(',').filter_map(|kv| kv.split_once('=')) {
            let v = v.trim().parse().unwrap_or(0);
            match k.trim() {
                "created" => c.created = v,
                "configured" => c.configured = v,
                "unchanged" => c.unchanged = v,
                "deleted" => c.deleted = v,
                "kept" => c.kept = v,
                "undetermined" => c.undetermined = v,
                _ => {}
            }
        }
        c
    }

    fn fields(&self) -> [(&'static str, usize); 6] {
        [
            ("created", self.created),
            ("configured", self.configured),
            ("unchanged", self.unchanged),
            ("deleted", self.deleted),
            ("kept", self.kept),
            ("undetermined", self.undetermined),
        ]
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .fields()
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// A set's sync record, as read from or written to its parent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Record {
    /// The source: URL (without credentials), reference and paths.
    pub source: String,
    /// The revision last applied (`main@sha1:<hex>`).
    pub revision: Option<String>,
    pub attempted_revision: Option<String>,
    /// When the record last changed (RFC 3339; see [`ANNOTATION_LAST_CHANGE`]).
    pub last_change: Option<String>,
    pub outcome: Option<Outcome>,
    /// The error of a failed run, or what held an incomplete one.
    pub message: Option<String>,
    pub counts: Counts,
    pub suspended: bool,
    /// Recorded by runs that wait (see [`ANNOTATION_HEALTHY`]).
    pub health: Option<Health>,
    pub health_message: Option<String>,
}

impl Record {
    pub fn from_annotations(a: &BTreeMap<String, String>) -> Self {
        let get = |k: &str| a.get(k).filter(|v| !v.is_empty()).cloned();
        Record {
            source: get(ANNOTATION_SOURCE).unwrap_or_default(),
            revision: get(ANNOTATION_REVISION),
            attempted_revision: get(ANNOTATION_ATTEMPTED_REVISION),
            last_change: get(ANNOTATION_LAST_CHANGE),
            outcome: get(ANNOTATION_OUTCOME).and_then(|o| Outcome::parse(&o)),
            message: get(ANNOTATION_MESSAGE),
            counts: get(ANNOTATION_COUNTS)
                .map(|c| Counts::decode(&c))
                .unwrap_or_default(),
            suspended: is_suspended(a),
            health: get(ANNOTATION_HEALTHY).and_then(|h| Health::parse(&h)),
            health_message: get(ANNOTATION_HEALTH_MESSAGE),
        }
    }

    /// Whether a run that wrote nothing would record just what is already recorded (all but
    /// the time and the counts, which describe the run that last changed something).
    pub fn says_the_same_as(&self, other: &Record) -> bool {
        self.source == other.source
            && self.revision == other.revision
            && self.attempted_revision == other.attempted_revision
            && self.outcome == other.outcome
            && self.message == other.message
            && self.health == other.health
            && self.health_message == other.health_message
    }

    /// The annotations the record applies (every one, so that the apply owns exactly these).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut a = BTreeMap::new();
        let mut put = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                a.insert(k.to_owned(), v.to_owned());
            }
        };
        put(ANNOTATION_SOURCE, Some(&self.source));
        put(ANNOTATION_REVISION, self.revision.as_deref());
        put(
            ANNOTATION_ATTEMPTED_REVISION,
            self.attempted_revision.as_deref(),
        );
        put(ANNOTATION_LAST_CHANGE, self.last_change.as_deref());
        put(ANNOTATION_OUTCOME, self.outcome.map(Outcome::as_str));
        put(ANNOTATION_MESSAGE, self.message.as_deref());
        put(ANNOTATION_COUNTS, Some(&self.counts.encode()));
        put(ANNOTATION_HEALTHY, self.health.map(Health::as_str));
        put(ANNOTATION_HEALTH_MESSAGE, self.health_message.as_deref());
        a
    }
}

/// Whether the parent's annotations suspend the sync (`"true"`, as Flux's `spec.suspend`; any
/// other value is not).
pub fn is_suspended(a: &BTreeMap<String, String>) -> bool {
    a.get(ANNOTATION_SUSPENDED)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_annotations() {
        let r = Record {
            source: "https://example.com/r.git branch=main paths=deploy".into(),
            revision: Some("main@sha1:abc".into()),
            attempted_revision: Some("main@sha1:def".into()),
            last_change: Some("2026-11-27T02:00:00Z".into()),
            outcome: Some(Outcome::Failed),
            message: Some("deploy/x.yaml:3: bad".into()),
            counts: Counts {
                created: 1,
                configured: 2,
                unchanged: 3,
                deleted: 4,
                kept: 5,
                undetermined: 6,
            },
            suspended: false,
            health: Some(Health::False),
            health_message: Some("Deployment ns/web is InProgress: Available: 0/1".into()),
        };
        let a = r.annotations();
        assert_eq!(
            a[ANNOTATION_COUNTS],
            "created=1,configured=2,unchanged=3,deleted=4,kept=5,undetermined=6"
        );
        assert_eq!(Record::from_annotations(&a), r);
        // A successful run carries no message: the apply of the record removes the old one.
        let ok = Record {
            message: None,
            outcome: Some(Outcome::Succeeded),
            ..r
        };
        assert!(!ok.annotations().contains_key(ANNOTATION_MESSAGE));
        let mut a = ok.annotations();
        a.insert(ANNOTATION_SUSPENDED.into(), "True".into());
        assert!(Record::from_annotations(&a).suspended);
        a.insert(ANNOTATION_SUSPENDED.into(), "no".into());
        assert!(!Record::from_annotations(&a).suspended);
        assert_eq!(
            Record::from_annotations(&BTreeMap::new()),
            Record::default()
        );
    }

    #[test]
    fn health_is_what_the_wait_found() {
        use kgc_prune::desired::ObjectKey;
        use kgc_prune::executor::NotReady;
        use kgc_prune::gvk::GroupKind;
        use kgc_prune::readiness::Status;
        assert_eq!(Health::of(Some(&Report::default())), (Health::True, None));
        let stuck = Report {
            not_ready: vec![NotReady {
                key: ObjectKey {
                    gk: GroupKind::new("apps", "Deployment"),
                    namespace: "shop".into(),
                    name: "web".into(),
                },
                status: Status::InProgress,
                message: "Available: 0/1".into(),
            }],
            ..Report::default()
        };
        assert_eq!(
            Health::of(Some(&stuck)),
            (
                Health::False,
                Some("Deployment.apps shop/web is InProgress: Available: 0/1".into())
            )
        );
        assert_eq!(Health::of(None).0, Health::Unknown);
    }

    #[test]
    fn exit_codes_are_kgc_applys() {
        assert_eq!(Outcome::Succeeded.exit_code(true, false), 0);
        assert_eq!(Outcome::Succeeded.exit_code(true, true), 2);
        assert_eq!(Outcome::Succeeded.exit_code(false, true), 0);
        assert_eq!(Outcome::Failed.exit_code(false, false), 1);
        assert_eq!(Outcome::Incomplete.exit_code(true, true), 3);
        assert_eq!(Outcome::Suspended.exit_code(false, false), 3);
    }

    #[test]
    fn a_run_that_says_the_same_leaves_the_record_alone() {
        let first = Record {
            source: "file:///r branch=main".into(),
            revision: Some("main@sha1:ab".into()),
            attempted_revision: Some("main@sha1:ab".into()),
            last_change: Some("2026-11-27T02:00:00Z".into()),
            outcome: Some(Outcome::Succeeded),
            ..Record::default()
        };
        let later = Record {
            last_change: Some("2026-11-27T02:01:00Z".into()),
            ..first.clone()
        };
        assert!(later.says_the_same_as(&first));
        let unhealthy = Record {
            health: Some(Health::False),
            health_message: Some("Job ns/j is Failed: Job Failed. failed: 1/1".into()),
            ..later.clone()
        };
        assert!(!unhealthy.says_the_same_as(&first));
        let failed = Record {
            outcome: Some(Outcome::Failed),
            message: Some("fetching file:///r: gone".into()),
            ..later.clone()
        };
        assert!(!failed.says_the_same_as(&first));
    }
}
