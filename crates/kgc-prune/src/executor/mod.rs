//! The executor: runs a deploy against any API server through kube-rs (`kgc serve` and a real
//! cluster alike), using the pure modules for every decision.
//!
//! One run costs: two discovery requests (aggregated discovery), one GET of the parent, one
//! LIST per kind of the scope (cluster-wide; per namespace only after a 403), one server-side
//! apply per object that changed, one apply of the parent before and after, and one DELETE per
//! pruned object. An unchanged re-apply therefore writes nothing at all: the parent is only
//! re-applied when its kinds or namespaces change.

mod adopt;
mod apply;
mod client;
mod drift;
mod prune;
mod wait;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

use crate::Error;
use crate::adopt::Adopt;
use crate::desired::{self, Desired, ObjectKey};
use crate::gvk::GroupKind;
use crate::inventory::Inventory;
use crate::listing::{self, Resource, Undetermined};
use crate::order;
use crate::ownership::{self, Identity, LABEL_APP, Owner};
use crate::plan::{self, Candidate, Filters, Guards, Kept, PrunePlan};
use crate::source::SourceObject;
use crate::str_at;

pub use apply::contains;
pub use client::{ApiServer, ServerCatalog};
pub use drift::check_drift;
pub use prune::{DeleteOutcome, delete_parent, prepare_delete};
pub use wait::NotReady;

use apply::{as_stored, wait_ready, write_parent};
use prune::prune;

/// How many writes run at once within a rank.
const CONCURRENCY: usize = 16;

/// How long CRDs and Namespaces may take to become Established/Active.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What applying an object does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    Unchanged,
}

/// One object of the apply step, with the live state it was planned against.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Change {
    pub desired: Desired,
    pub action: Action,
    /// The live object's uid and resourceVersion when planned (for `--plan` drift checks).
    pub live_uid: Option<String>,
    pub live_resource_version: Option<String>,
}

/// Everything decided before the first write: the reviewed unit of `kgc plan`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    pub identity: Identity,
    pub namespace: String,
    pub set_id: String,
    /// The parent as found (None: first run).
    pub previous: Option<Inventory>,
    /// The set's kinds and namespaces according to the source.
    pub current: Inventory,
    pub changes: Vec<Change>,
    pub prune: PrunePlan,
    /// What `--adopt` took over from another tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption: Option<Adoption>,
    /// Live objects of the set, by key (for diffs), not serialised.
    #[serde(skip)]
    pub live: BTreeMap<ObjectKey, Value>,
}

impl Prepared {
    /// The set's parent ConfigMap (its inventory).
    pub fn parent_key(&self) -> ObjectKey {
        ObjectKey {
            gk: GroupKind::new("", "ConfigMap"),
            namespace: self.namespace.clone(),
            name: self.identity.parent_name(),
        }
    }

    /// Whether this run creates the Namespace `name` (a dry run cannot: objects in it are
    /// judged as if it existed).
    fn creates_namespace(&self, name: &str) -> bool {
        self.changes.iter().any(|c| {
            c.action == Action::Create
                && c.desired.key.gk.is_namespace()
                && c.desired.key.name == name
        })
    }

    /// Whether a server-side dry run's 404 is one the real run would not meet: an object in a
    /// namespace this run creates, or a custom resource whose CRD this run creates (a dry run
    /// writes neither). Any other missing namespace fails the dry run as it fails the apply.
    fn dry_run_only_404(&self, s: &kube::core::Status) -> bool {
        match s.details.as_ref() {
            Some(d) if d.kind == "namespaces" && d.group.is_empty() => {
                self.creates_namespace(&d.name)
            }
            _ => true,
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub filters: Filters,
    pub guards: Guards,
    /// Take over objects another set owns.
    pub force_ownership: bool,
    /// Take over the objects another tool applied for this set (`--adopt`), on every run that
    /// asks: adopting is idempotent, and a first run interrupted before its prune is finished
    /// by the next one.
    pub adopt: Option<Adopt>,
}

/// The objects a run adopts from another tool: those the source has are applied as the set's,
/// the others are pruned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Adoption {
    pub adopt: Adopt,
    /// The old set, for messages (`qbec app=shop env=prod`).
    pub from: String,
    pub objects: Vec<ObjectKey>,
}

/// Reads the parent, lists the scope and computes changes and the prune plan; writes nothing.
pub async fn prepare(
    cluster: &ApiServer,
    sources: Vec<SourceObject>,
    identity: &Identity,
    namespace: &str,
    options: &Options,
) -> Result<Prepared, Error> {
    let parent_name = identity.parent_name();
    let set_id = ownership::applyset_id(&parent_name, namespace, "ConfigMap", "");
    let desired = desired::build(sources, identity, &set_id, namespace, cluster.catalog())?;

    let cm = Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let previous = match cluster.get(&cm, namespace, &parent_name).await? {
        Some(p) => Some(Inventory::from_parent(&p, &set_id)?),
        None => None,
    };
    let mut current = Inventory::default();
    current.namespaces.insert(namespace.to_owned());
    for d in &desired {
        current.group_kinds.insert(d.key.gk.clone());
        if !d.key.namespace.is_empty() {
            current.namespaces.insert(d.key.namespace.clone());
        }
    }
    let scope = previous
        .as_ref()
        .map_or_else(|| current.clone(), |p| p.union(&current));
    // Kinds the server does not serve: new CRDs' kinds (created by this apply) or kinds whose
    // CRD is gone (nothing left to prune). Neither is an error.
    let resources: Vec<Resource> = scope
        .group_kinds
        .iter()
        .filter_map(|gk| cluster.catalog().preferred(gk).cloned())
        .collect();
    let (mut listed, mut undetermined) =
        listing::list_scope(cluster, &resources, &scope.namespaces, LABEL_APP).await;
    let mut adopted_uids = HashSet::new();
    let adoption = match &options.adopt {
        Some(a) => {
            let found = adopt::find(cluster, a, identity, namespace, &scope, &set_id).await?;
            listed.extend(found.listed);
            undetermined.extend(found.undetermined);
            adopted_uids = found.uids;
            Some(Adoption {
                adopt: a.clone(),
                from: found.describe,
                objects: found.keys,
            })
        }
        None => None,
    };

    let mut live: BTreeMap<ObjectKey, Value> = BTreeMap::new();
    for l in &listed {
        for o in &l.objects {
            let key = ObjectKey {
                gk: l.resource.gk.clone(),
                namespace: str_at(o, "/metadata/namespace").to_owned(),
                name: str_at(o, "/metadata/name").to_owned(),
            };
            live.insert(key, o.clone());
        }
    }

    let mut conflicts = Vec::new();
    let mut changes = Vec::with_capacity(desired.len());
    for d in desired {
        let l = live.get(&d.key);
        if let Some(l) = l
            && let Owner::Other(other) = ownership::owner(l, &d.key.gk, identity, &set_id)
            && !options.force_ownership
            && !adopted_uids.contains(str_at(l, "/metadata/uid"))
        {
            conflicts.push(format!("{} ({}) belongs to {other}", d.key, d.origin));
        }
        let action = match l {
            None => Action::Create,
            Some(l) if contains(l, &as_stored(&d.object)) => Action::Unchanged,
            Some(_) => Action::Update,
        };
        changes.push(Change {
            action,
            live_uid: l.map(|l| str_at(l, "/metadata/uid").to_owned()),
            live_resource_version: l.map(|l| str_at(l, "/metadata/resourceVersion").to_owned()),
            desired: d,
        });
    }
    if !conflicts.is_empty() {
        return Err(Error::Ownership(format!(
            "{} object(s) belong to another set (pass --force-ownership to take them over): {}",
            conflicts.len(),
            conflicts.join("; ")
        )));
    }
    let local: BTreeSet<ObjectKey> = changes.iter().map(|c| c.desired.key.clone()).collect();
    let known_uids: HashSet<String> = changes.iter().filter_map(|c| c.live_uid.clone()).collect();
    let prune = plan::plan(&plan::Input {
        identity,
        set_id: &set_id,
        parent_namespace: namespace,
        local: &local,
        listed: &listed,
        undetermined: &undetermined,
        applied_uids: &known_uids,
        adopted_uids: &adopted_uids,
        filters: &options.filters,
        guards: options.guards,
    })?;
    Ok(Prepared {
        identity: identity.clone(),
        namespace: namespace.to_owned(),
        set_id,
        previous,
        current,
        changes,
        prune,
        adoption,
        live,
    })
}

/// Progress callbacks (the CLI draws a bar).
pub trait Progress: Sync {
    /// A new phase with `total` steps.
    fn phase(&self, name: &str, total: usize);
    /// One step done.
    fn step(&self);
    /// While waiting for readiness: how many objects are ready, and `Deployment 3/4, Job
    /// 1/1` (ready of each kind).
    fn waiting(&self, _ready: usize, _by_kind: &str) {}
}
/// No progress output.
pub struct Quiet;

impl Progress for Quiet {
    fn phase(&self, _: &str, _: usize) {}
    fn step(&self) {}
}

/// The outcome of a run.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub applied: Vec<(ObjectKey, Action)>,
    pub apply_errors: Vec<String>,
    pub deleted: Vec<(ObjectKey, DeleteOutcome)>,
    pub kept: Vec<Kept>,
    pub undetermined: Vec<Undetermined>,
    /// Prune did not run (`--prune=false`, or an apply failed).
    pub prune_skipped: Option<String>,
    pub dry_run: bool,
    /// What `--adopt` took over (the pruned ones are in `deleted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption: Option<Adoption>,
    /// With `--wait`: applied objects that were not ready (kstatus Current) at the deadline,
    /// or Failed before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_ready: Vec<NotReady>,
}
impl Report {
    /// Whether anything was (or, in a dry run, would be) written.
    pub fn changed(&self) -> bool {
        self.applied.iter().any(|(_, a)| *a != Action::Unchanged)
            || self.deleted.iter().any(|(_, o)| {
                matches!(
                    o,
                    DeleteOutcome::Deleted
                        | DeleteOutcome::Gone
                        | DeleteOutcome::Waiting { .. }
                        | DeleteOutcome::WouldDelete
                )
            })
    }

    /// Whether the run failed.
    pub fn failed(&self) -> bool {
        !self.apply_errors.is_empty()
            || self
                .deleted
                .iter()
                .any(|(_, o)| matches!(o, DeleteOutcome::Failed { .. }))
    }

    /// How many members of the set were kept: by the plan, or by a rule found at delete time
    /// (a namespace holding others' objects, a CRD with custom resources left, an object
    /// replaced since it was listed).
    pub fn kept_count(&self) -> usize {
        self.kept.len()
            + self
                .deleted
                .iter()
                .filter(|(_, o)| matches!(o, DeleteOutcome::Kept { .. } | DeleteOutcome::Changed))
                .count()
    }

    /// Whether something was left undecided or unfinished (undetermined kinds, deletes held by
    /// finalizers, applied objects not ready; see `Execution::wait`).
    pub fn incomplete(&self) -> bool {
        !self.undetermined.is_empty()
            || !self.not_ready.is_empty()
            || self
                .deleted
                .iter()
                .any(|(_, o)| matches!(o, DeleteOutcome::Waiting { .. }))
    }
}

/// What to do in [`execute`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Execution {
    pub apply: bool,
    pub prune: bool,
    pub dry_run: bool,
    /// Wait until deleted objects are gone and applied ones ready, up to this long from the
    /// start of the run. Without it an accepted DELETE is `Deleted`, as `kubectl delete
    /// --wait=false` counts it: whether finalizers hold the object is only known by waiting.
    pub wait: Option<Duration>,
    /// Deletes carry the listed resourceVersion as a precondition too (`--plan`).
    pub exact: bool,
}

/// Applies and prunes a prepared run; with `how.wait`, then waits until what it applied
/// (changed or not: an unchanged Deployment may still be rolling out) is ready.
pub async fn execute(
    cluster: &ApiServer,
    prepared: &Prepared,
    how: Execution,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let started = Instant::now();
    let mut report = apply_and_prune(cluster, prepared, how, progress).await?;
    if let Some(wait) = how.wait
        && how.apply
        && !how.dry_run
        && report.apply_errors.is_empty()
    {
        let applied: HashSet<&ObjectKey> = report.applied.iter().map(|(k, _)| k).collect();
        let targets: Vec<&Desired> = prepared
            .changes
            .iter()
            .map(|c| &c.desired)
            .filter(|d| applied.contains(&d.key))
            .collect();
        report.not_ready = wait::until_ready(cluster, &targets, started + wait, progress).await;
    }
    Ok(report)
}

async fn apply_and_prune(
    cluster: &ApiServer,
    prepared: &Prepared,
    how: Execution,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let mut report = Report {
        dry_run: how.dry_run,
        kept: prepared.prune.kept.clone(),
        undetermined: prepared.prune.undetermined.clone(),
        adoption: prepared.adoption.clone(),
        ..Report::default()
    };
    let widened = prepared
        .previous
        .as_ref()
        .map_or_else(|| prepared.current.clone(), |p| p.union(&prepared.current));
    let mut applied_uids: HashSet<String> = HashSet::new();

    if how.apply {
        let todo: Vec<&Change> = prepared
            .changes
            .iter()
            .filter(|c| c.action != Action::Unchanged)
            .collect();
        for c in &prepared.changes {
            if c.action == Action::Unchanged {
                report
                    .applied
                    .push((c.desired.key.clone(), Action::Unchanged));
                applied_uids.extend(c.live_uid.clone());
            }
        }
        // The parent is widened before anything else is written, so an interrupted run never
        // loses track of what it created; if its namespace does not exist yet, the CRDs and
        // Namespaces go first.
        let parent_needed = prepared.previous.as_ref() != Some(&widened);
        if how.dry_run {
            // The real run writes the parent first: a dry run fails where that would.
            if parent_needed
                && !write_parent(cluster, prepared, &widened, true).await?
                && !prepared.creates_namespace(&prepared.namespace)
            {
                return Err(missing_parent_namespace(prepared));
            }
        }
        let parent_needed = parent_needed && !how.dry_run;
        let mut parent_written = !parent_needed;
        if parent_needed {
            parent_written = write_parent(cluster, prepared, &widened, false).await?;
        }
        let mut by_rank: BTreeMap<u8, Vec<&Change>> = BTreeMap::new();
        for c in todo {
            by_rank.entry(c.desired.rank).or_default().push(c);
        }
        progress.phase("apply", by_rank.values().map(Vec::len).sum());
        for (rank, changes) in by_rank {
            if rank > order::RANK_NAMESPACE && !parent_written {
                parent_written = write_parent(cluster, prepared, &widened, false).await?;
                if !parent_written {
                    return Err(missing_parent_namespace(prepared));
                }
            }
            let results: Vec<_> = futures::stream::iter(changes)
                .map(|c| async move {
                    let r = cluster
                        .apply(&c.desired.resource, &c.desired.object, how.dry_run)
                        .await;
                    progress.step();
                    (c, r)
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
            let mut ready = Vec::new();
            for (c, r) in results {
                match r {
                    Ok(v) => {
                        applied_uids.insert(str_at(&v, "/metadata/uid").to_owned());
                        report.applied.push((c.desired.key.clone(), c.action));
                        ready.push(c);
                    }
                    // Server-side dry runs go through the same admission as the apply
                    // (NamespaceLifecycle included), so they fail where it would, except for
                    // what this very run creates first. kgc is kinder here than `kubectl apply
                    // --dry-run=server`, which fails on objects in a namespace the same apply
                    // creates.
                    Err(Error::Kube {
                        source: kube::Error::Api(s),
                        ..
                    }) if how.dry_run && s.code == 404 && prepared.dry_run_only_404(&s) => {
                        report.applied.push((c.desired.key.clone(), c.action));
                    }
                    Err(e) => report
                        .apply_errors
                        .push(format!("{} ({}): {e}", c.desired.key, c.desired.origin)),
                }
            }
            if !report.apply_errors.is_empty() {
                break;
            }
            if !how.dry_run && rank <= order::RANK_NAMESPACE {
                for c in ready {
                    wait_ready(cluster, &c.desired).await?;
                }
            }
        }
        report.applied.sort_by(|a, b| a.0.cmp(&b.0));
        if !report.apply_errors.is_empty() {
            report.prune_skipped = Some("an apply failed; nothing is pruned".into());
            return Ok(report);
        }
        if !parent_written {
            write_parent(cluster, prepared, &widened, false).await?;
        }
    }
    if !how.prune {
        report.prune_skipped = Some("--prune=false".into());
        return Ok(report);
    }
    let deletes: Vec<&Candidate> = prepared
        .prune
        .deletes
        .iter()
        .filter(|c| {
            if applied_uids.contains(&c.uid) {
                report.kept.push(Kept {
                    key: c.key.clone(),
                    reason: "applied in this run under another group or version".into(),
                });
                false
            } else {
                true
            }
        })
        .collect();
    let parent = prepared.parent_key();
    prune(cluster, &deletes, &parent, how, progress, &mut report).await;

    // A deleted namespace takes the parent in it along (`kgc delete`, or an empty source with
    // `--allow-empty`): there is nothing left to trim, and it could not be written.
    let parent_namespace_deleted = report.deleted.iter().any(|(k, o)| {
        k.gk.is_namespace()
            && k.name == prepared.namespace
            && matches!(
                o,
                DeleteOutcome::Deleted | DeleteOutcome::Gone | DeleteOutcome::Waiting { .. }
            )
    });
    if !how.dry_run && !report.failed() && !parent_namespace_deleted {
        // Trim: what the source holds, plus wherever members are left (kept, failed,
        // undetermined), so the next run still looks there.
        let mut trimmed = prepared.current.clone();
        let mut keep = |gk: &GroupKind, ns: &str| {
            trimmed.group_kinds.insert(gk.clone());
            if !ns.is_empty() {
                trimmed.namespaces.insert(ns.to_owned());
            }
        };
        for k in &report.kept {
            keep(&k.key.gk, &k.key.namespace);
        }
        for u in &report.undetermined {
            keep(&u.gk, u.namespace.as_deref().unwrap_or(""));
        }
        for (key, o) in &report.deleted {
            if !matches!(
                o,
                DeleteOutcome::Gone | DeleteOutcome::NotFound | DeleteOutcome::Deleted
            ) {
                keep(&key.gk, &key.namespace);
            }
        }
        if trimmed != widened {
            write_parent(cluster, prepared, &trimmed, false).await?;
        }
    }
    Ok(report)
}

fn missing_parent_namespace(prepared: &Prepared) -> Error {
    Error::Invalid(format!(
        "the namespace {} of the set's parent does not exist and the source does not create it",
        prepared.namespace
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use serde_json::json;

    fn prepared(creates: &[(&str, &str, Action)]) -> Prepared {
        let identity = Identity::new("shop", "prod", None).unwrap();
        let changes = creates
            .iter()
            .map(|(kind, name, action)| {
                let gk = GroupKind::new("", kind);
                Change {
                    desired: Desired {
                        key: ObjectKey {
                            gk: gk.clone(),
                            namespace: String::new(),
                            name: (*name).to_owned(),
                        },
                        resource: Resource {
                            gk: gk.clone(),
                            version: "v1".into(),
                            plural: format!("{}s", kind.to_lowercase()),
                            namespaced: false,
                        },
                        component: "web".into(),
                        origin: "web.yaml:1".into(),
                        object: Value::Null,
                        rank: order::rank(&gk, false),
                    },
                    action: *action,
                    live_uid: None,
                    live_resource_version: None,
                }
            })
            .collect();
        Prepared {
            set_id: "set-1".into(),
            namespace: "shop".into(),
            identity,
            previous: None,
            current: Inventory::default(),
            changes,
            prune: PrunePlan::default(),
            adoption: None,
            live: BTreeMap::new(),
        }
    }

    /// A 404 as the API server sends it.
    fn status(details: Value) -> Status {
        serde_json::from_value(json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
            "reason": "NotFound", "message": "not found", "details": details,
        }))
        .unwrap()
    }

    fn not_found(kind: &str, name: &str) -> Status {
        status(json!({"name": name, "kind": kind}))
    }

    #[test]
    fn a_dry_run_fails_on_a_missing_namespace_the_run_does_not_create() {
        let p = prepared(&[
            ("Namespace", "new", Action::Create),
            ("Namespace", "old", Action::Unchanged),
        ]);
        assert!(p.dry_run_only_404(&not_found("namespaces", "new")));
        assert!(!p.dry_run_only_404(&not_found("namespaces", "elsewhere")));
        assert!(!p.dry_run_only_404(&not_found("namespaces", "old")));
        // The resource itself is not served yet: its CRD is in the same run.
        assert!(p.dry_run_only_404(&status(json!({}))));
        assert_eq!(p.parent_key().to_string(), "ConfigMap shop/kgc-shop-prod");
    }
}
