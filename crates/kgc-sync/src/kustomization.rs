//! One set synced from one git source: Flux's Kustomization (`fluxcd/kustomize-controller
//! internal/controller/kustomization_controller.go`, `reconcile`), on kgc's prune engine.
//!
//! A run is all or nothing before its first write: the artifact is fetched and every manifest
//! read and planned ([`kgc_prune::executor::prepare`]) before anything is applied, so a failed
//! fetch, an unparsable file, an unknown kind or a refused plan applies and prunes nothing and
//! leaves the previous revision the applied one, as Flux's `lastAppliedRevision` stays when a
//! build fails. Drift needs nothing of its own: `prepare` compares every field the source sets
//! with the live object, and the engine's server-side apply with force takes back the fields
//! someone else changed, leaving fields only other managers set alone (kustomize-controller's
//! `ssa.ResourceManager` does the same with `Force`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::jiff::Timestamp;
use kgc_prune::executor::{self, ApiServer, Execution, Options, Quiet, Report};
use kgc_prune::inventory::Inventory;
use kgc_prune::ownership::{self, Identity};
use kgc_source::{GitRepository, Reference};
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;

use crate::record::{self, Counts, Health, Outcome, Record};
use crate::{Error, event};

/// A git source synced into a set.
#[derive(Debug, Clone)]
pub struct Kustomization {
    pub source: GitRepository,
    pub identity: Identity,
    /// The set's namespace: its parent's, and that of objects that name none.
    pub namespace: String,
    pub options: Options,
    /// Where fetched repositories are kept between runs.
    pub cache_dir: PathBuf,
    /// How often the loop runs (said in the success Event, as Flux says it).
    pub interval: Duration,
    /// Wait for pruned objects to be gone and applied ones ready, up to this long; a run that
    /// waits records the set's health.
    pub wait: Option<Duration>,
    /// How long a fetch may take (Flux's GitRepository `spec.timeout`, 60 s by default): a
    /// stalled transfer fails the run, which then prunes nothing, instead of hanging the loop.
    pub fetch_timeout: Duration,
    /// Run the generators of `.flux.yaml` files (Flux v1's `--manifest-generation`), in a
    /// temporary work tree of the revision; without it a path that one applies to is refused.
    pub manifest_generation: bool,
}

/// What one run did.
#[derive(Debug)]
pub struct Run {
    pub outcome: Outcome,
    /// Whether anything was written (apart from the record).
    pub changed: bool,
    /// The record as written on the parent.
    pub record: Record,
    /// The engine's report, when the run got that far.
    pub report: Option<Report>,
    /// Why the run failed or was incomplete.
    pub error: Option<Error>,
    pub started: Timestamp,
    pub duration: Duration,
}

impl Kustomization {
    /// The source for records and messages: `URL branch=B paths=P,Q`, credentials removed.
    pub fn describe_source(&self) -> String {
        let reference = match &self.source.reference {
            Reference::Branch(b) => format!("branch={b}"),
            Reference::Tag(t) => format!("tag={t}"),
            Reference::Commit(c) => format!("commit={c}"),
        };
        let mut s = format!("{} {reference}", kgc_source::redact(&self.source.url));
        if !self.source.paths.is_empty() {
            s.push_str(&format!(" paths={}", self.source.paths.join(",")));
        }
        s
    }

    fn parents(&self, client: &kube::Client) -> Api<ConfigMap> {
        Api::namespaced(client.clone(), &self.namespace)
    }

    /// One run: read the record, fetch, apply and prune, record, announce. `next_run` is when
    /// the loop runs again, said in the success Event as Flux says it; `None` for a single run
    /// (`kgc sync --once`), which has no next.
    pub async fn reconcile(&self, client: &kube::Client, next_run: Option<Duration>) -> Run {
        let started = Timestamp::now();
        let clock = Instant::now();
        let name = self.identity.parent_name();
        let set_id = ownership::applyset_id(&name, &self.namespace, "ConfigMap", "");
        let (previous, ours) = match self.parents(client).get_opt(&name).await {
            Ok(Some(cm)) => {
                let annotations = cm.metadata.annotations.clone().unwrap_or_default();
                let value = serde_json::to_value(&cm).unwrap_or(Value::Null);
                (
                    Record::from_annotations(&annotations),
                    Inventory::from_parent(&value, &set_id).is_ok(),
                )
            }
            Ok(None) => (Record::default(), true),
            Err(e) => {
                let error = Error::Kube {
                    context: format!(
                        "reading the set's parent ConfigMap {}/{name}",
                        self.namespace
                    ),
                    source: e,
                };
                let record = Record {
                    outcome: Some(Outcome::Failed),
                    message: Some(crate::chain(&error)),
                    ..Record::default()
                };
                return Run {
                    outcome: Outcome::Failed,
                    changed: false,
                    record,
                    report: None,
                    error: Some(error),
                    started,
                    duration: clock.elapsed(),
                };
            }
        };
        if previous.suspended {
            tracing::info!(set = %self.identity.describe(), "suspended; nothing applied or pruned");
            return Run {
                outcome: Outcome::Suspended,
                changed: false,
                record: previous,
                report: None,
                error: None,
                started,
                duration: clock.elapsed(),
            };
        }

        let attempt = self.attempt(client).await;
        let (outcome, attempted, report, error) = match attempt {
            Ok((revision, report)) => {
                let outcome = if report.failed() {
                    Outcome::Failed
                } else if report.incomplete() {
                    Outcome::Incomplete
                } else {
                    Outcome::Succeeded
                };
                (outcome, Some(revision), Some(report), None)
            }
            Err((revision, e)) => (Outcome::Failed, revision, None, Some(e)),
        };
        let message = match (&error, &report) {
            (Some(e), _) => Some(crate::chain(e)),
            (None, Some(r)) => problems(r),
            (None, None) => None,
        };
        let applied = matches!(outcome, Outcome::Succeeded | Outcome::Incomplete);
        let (health, health_message) = match self.wait {
            Some(_) => {
                let (h, m) = Health::of(report.as_ref());
                (Some(h), m)
            }
            None => (None, None),
        };
        let record = Record {
            source: self.describe_source(),
            revision: if applied {
                attempted.clone()
            } else {
                previous.revision.clone()
            },
            attempted_revision: attempted,
            last_change: Some(
                started
                    .round(k8s_openapi::jiff::Unit::Second)
                    .unwrap_or(started)
                    .to_string(),
            ),
            outcome: Some(outcome),
            message,
            counts: report.as_ref().map(Counts::of).unwrap_or_default(),
            suspended: false,
            health,
            health_message,
        };
        let changed = report.as_ref().is_some_and(Report::changed);
        let duration = clock.elapsed();
        // This run's counts, for its log line: an unchanged run keeps the record (and its
        // counts, of the run that last changed something) as it is.
        let counts = record.counts;

        let unchanged = !changed && record.says_the_same_as(&previous);
        let record = if unchanged { previous.clone() } else { record };
        let written = if ours && !unchanged {
            self.write_record(client, &record).await
        } else {
            None
        };
        let said = Said {
            changed,
            duration,
            next_run,
        };
        self.announce(client, &previous, &record, said, written)
            .await;
        tracing::info!(
            set = %self.identity.describe(),
            revision = record.attempted_revision.as_deref().unwrap_or(""),
            outcome = outcome.as_str(),
            counts = %counts,
            message = record.message.as_deref().unwrap_or(""),
            "Reconciliation finished in {duration:.1?}"
        );
        Run {
            outcome,
            changed,
            record,
            report,
            error,
            started,
            duration,
        }
    }

    /// Fetches, reads and runs the engine. The error carries the revision when it was known.
    async fn attempt(
        &self,
        client: &kube::Client,
    ) -> Result<(String, Report), (Option<String>, Error)> {
        let repo = self.source.clone();
        let cache = self.cache_dir.clone();
        let url = kgc_source::redact(&self.source.url).into_owned();
        // The revision is read from its files on disk, removed when the run ends: kustomizations
        // read files beside their manifests, and generators run commands in the tree. The same
        // reader as `kgc apply DIR`, so what `kgc build` prints of a checkout is what syncs.
        let work = tempfile::tempdir().map_err(|source| (None, Error::WorkTree { source }))?;
        let into = work.path().to_owned();
        // A blocking fetch cannot be cancelled: on a timeout its thread is left to finish or
        // fail on its own (holding the URL's cache lock, so the next fetch waits behind it).
        let fetch = tokio::task::spawn_blocking(move || repo.fetch_into(&cache, &into));
        let artifact = match tokio::time::timeout(self.fetch_timeout, fetch).await {
            Ok(Ok(Ok(a))) => a,
            Ok(Ok(Err(source))) => return Err((None, Error::Fetch { url, source })),
            Ok(Err(source)) => return Err((None, Error::FetchTask { url, source })),
            Err(_) => {
                return Err((
                    None,
                    Error::FetchTimeout {
                        url,
                        after: self.fetch_timeout,
                    },
                ));
            }
        };
        let revision = artifact.revision.clone();
        let deploy = |source| {
            (
                Some(revision.clone()),
                Error::Deploy {
                    revision: revision.clone(),
                    source,
                },
            )
        };
        // Generators and kustomize builds block for as long as they run: off the runtime's
        // threads.
        let paths = self.source.paths.clone();
        let generate = self.manifest_generation;
        let read = tokio::task::spawn_blocking(move || {
            crate::work_tree::read(work.path(), &paths, generate)
        });
        let sources = read
            .await
            .map_err(|source| {
                let revision = revision.clone();
                (Some(revision.clone()), Error::ReadTask { revision, source })
            })?
            .map_err(deploy)?;
        let cluster = ApiServer::connect(client.clone()).await.map_err(deploy)?;
        let prepared = executor::prepare(
            &cluster,
            sources,
            &self.identity,
            &self.namespace,
            &self.options,
        )
        .await
        .map_err(deploy)?;
        let how = Execution {
            apply: true,
            prune: true,
            dry_run: false,
            wait: self.wait,
            exact: false,
        };
        let report = executor::execute(&cluster, &prepared, how, &Quiet)
            .await
            .map_err(deploy)?;
        Ok((revision, report))
    }

    /// Applies the record on the parent (creating the parent, with the set's identity only,
    /// when the first run failed before the engine wrote it). Returns the parent written.
    async fn write_record(&self, client: &kube::Client, record: &Record) -> Option<ConfigMap> {
        let name = self.identity.parent_name();
        let set_id = ownership::applyset_id(&name, &self.namespace, "ConfigMap", "");
        let mut parent = Inventory::default().parent(&self.identity, &self.namespace, &set_id);
        if let Some(a) = parent
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            // The kinds and namespaces are the engine's to keep.
            a.remove(ownership::ANNOTATION_GROUP_KINDS);
            a.remove(ownership::ANNOTATION_NAMESPACES);
            for (k, v) in record.annotations() {
                a.insert(k, Value::String(v));
            }
        }
        let params = PatchParams::apply(record::FIELD_MANAGER).force();
        match self
            .parents(client)
            .patch(&name, &params, &Patch::Apply(&parent))
            .await
        {
            Ok(cm) => Some(cm),
            Err(e) => {
                tracing::warn!(error = %e, parent = %name, "recording the sync on the set's parent failed");
                None
            }
        }
    }

    /// The Event of a run: every failure whose message is new, and every success that changed
    /// something, applied a new revision or ended a failure; an unchanged re-sync files none.
    async fn announce(
        &self,
        client: &kube::Client,
        previous: &Record,
        record: &Record,
        said: Said,
        written: Option<ConfigMap>,
    ) {
        let failed = record.outcome == Some(Outcome::Failed);
        let news = if failed {
            previous.outcome != record.outcome || previous.message != record.message
        } else {
            said.changed
                || previous.outcome != record.outcome
                || previous.revision != record.revision
        };
        if !news {
            return;
        }
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.identity.parent_name()),
            uid: written.as_ref().and_then(|cm| cm.metadata.uid.clone()),
            resource_version: written.and_then(|cm| cm.metadata.resource_version),
            field_path: None,
        };
        let (reason, message) = if failed {
            (event::FAILED, event::failed(record))
        } else {
            (
                event::SUCCEEDED,
                event::succeeded(record, said.duration, said.next_run),
            )
        };
        event::emit(client, reference, failed, reason, message).await;
    }
}

/// What a run's Event says beyond the record.
struct Said {
    changed: bool,
    duration: Duration,
    next_run: Option<Duration>,
}

/// What kept a completed run from being clean: apply errors, failed or held deletions,
/// undetermined kinds.
fn problems(report: &Report) -> Option<String> {
    use kgc_prune::executor::DeleteOutcome;
    let mut p: Vec<String> = report.apply_errors.clone();
    for (key, o) in &report.deleted {
        match o {
            DeleteOutcome::Failed { error } => p.push(format!("deleting {key}: {error}")),
            DeleteOutcome::Waiting { finalizers } => p.push(format!(
                "{key} is held by finalizers {}",
                finalizers.join(", ")
            )),
            _ => {}
        }
    }
    for n in &report.not_ready {
        p.push(format!("{} is {}: {}", n.key, n.status, n.message));
    }
    for u in &report.undetermined {
        p.push(format!(
            "{} in {} undetermined: {}",
            u.gk,
            u.namespace.as_deref().unwrap_or("all namespaces"),
            u.reason
        ));
    }
    (!p.is_empty()).then(|| p.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_described_without_credentials() {
        let k = Kustomization {
            source: GitRepository {
                url: "https://u:tok@h/r.git".into(),
                reference: Reference::Branch("main".into()),
                paths: vec!["a".into(), "b".into()],
                auth: kgc_source::Auth::Default,
            },
            identity: Identity::new("a", "e", None).unwrap(),
            namespace: "ns".into(),
            options: Options::default(),
            fetch_timeout: Duration::from_secs(60),
            cache_dir: PathBuf::new(),
            interval: Duration::from_secs(60),
            wait: None,
            manifest_generation: false,
        };
        assert_eq!(
            k.describe_source(),
            "https://u:***@h/r.git branch=main paths=a,b"
        );
    }
}
