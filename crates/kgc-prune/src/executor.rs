//! The executor: runs a deploy against any API server through kube-rs (`kgc serve` and a real
//! cluster alike), using the pure modules for every decision.
//!
//! One run costs: two discovery requests (aggregated discovery), one GET of the parent, one
//! LIST per kind of the scope (cluster-wide; per namespace only after a 403), one server-side
//! apply per object that changed, one apply of the parent before and after, and one DELETE per
//! pruned object. An unchanged re-apply therefore writes nothing at all: the parent is only
//! re-applied when its kinds or namespaces change.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kgc_client::Cluster as _;
use kgc_meta::ResourceInfo;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, Preconditions,
    PropagationPolicy,
};
use serde_json::Value;

use crate::Error;
use crate::desired::{self, Desired, KindResolver, ObjectKey};
use crate::gvk::GroupKind;
use crate::inventory::Inventory;
use crate::listing::{self, ListError, Lister, Resource, Undetermined};
use crate::order;
use crate::ownership::{self, FIELD_MANAGER, Identity, LABEL_APP, Owner};
use crate::plan::{self, Candidate, Filters, Guards, Kept, PrunePlan};
use crate::source::SourceObject;
use crate::str_at;

/// How many writes run at once within a rank.
const CONCURRENCY: usize = 16;
/// How long CRDs and Namespaces may take to become Established/Active.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

fn kube_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let context = context.into();
    move |source| Error::Kube { context, source }
}

/// The server's kinds, from discovery.
#[derive(Debug, Default)]
pub struct ServerCatalog {
    /// (group, version, kind) → resource.
    exact: HashMap<(String, String, String), Resource>,
    /// Canonical group/kind → the resource at its most stable served version.
    preferred: HashMap<GroupKind, Resource>,
}

impl KindResolver for ServerCatalog {
    fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<Resource> {
        self.exact
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
            .cloned()
    }
}

impl ServerCatalog {
    /// The resource to list and delete `gk` through.
    pub fn preferred(&self, gk: &GroupKind) -> Option<&Resource> {
        self.preferred.get(gk)
    }

    /// The kinds of discovery's resources: every served version of each resource that can be
    /// listed, read, deleted and patched, and each listable kind at its preferred version.
    fn from_resources(resources: &[Arc<ResourceInfo>]) -> Self {
        let mut c = ServerCatalog::default();
        for r in resources {
            let namespaced = r.namespaced();
            if ["list", "get", "delete", "patch"]
                .iter()
                .all(|v| r.supports(v))
            {
                for version in &r.versions {
                    c.exact.insert(
                        (r.group.clone(), version.clone(), r.kind.clone()),
                        Resource {
                            gk: GroupKind::new(&r.group, &r.kind),
                            version: version.clone(),
                            plural: r.plural.clone(),
                            namespaced,
                        },
                    );
                }
            }
            if !r.supports("list") {
                continue;
            }
            let canonical = GroupKind::new(crate::gvk::canonical_group(&r.group, &r.kind), &r.kind);
            // An alias group never shadows the canonical one.
            if canonical.group != r.group && c.preferred.contains_key(&canonical) {
                continue;
            }
            c.preferred.insert(
                canonical.clone(),
                Resource {
                    gk: canonical,
                    version: r.preferred_version().to_owned(),
                    plural: r.plural.clone(),
                    namespaced,
                },
            );
        }
        c
    }
}

/// The API server a deploy runs against: a client and the kinds the server serves.
pub struct ApiServer {
    client: Client,
    catalog: ServerCatalog,
}

fn api_resource(r: &Resource) -> ApiResource {
    ApiResource {
        group: r.gk.group.clone(),
        version: r.version.clone(),
        api_version: if r.gk.group.is_empty() {
            r.version.clone()
        } else {
            format!("{}/{}", r.gk.group, r.version)
        },
        kind: r.gk.kind.clone(),
        plural: r.plural.clone(),
    }
}

impl ApiServer {
    /// Discovers the server's kinds, through the discovery every kgc collector uses
    /// (aggregated discovery: two requests; the per-group documents for servers without it).
    pub async fn connect(client: Client) -> Result<Self, Error> {
        let resources = kgc_client::Remote::new(client.clone())
            .resources()
            .await
            .map_err(Error::Discovery)?;
        Ok(ApiServer {
            catalog: ServerCatalog::from_resources(&resources),
            client,
        })
    }

    pub fn catalog(&self) -> &ServerCatalog {
        &self.catalog
    }

    fn api(&self, r: &Resource, namespace: &str) -> Api<DynamicObject> {
        let ar = api_resource(r);
        if r.namespaced && !namespace.is_empty() {
            Api::namespaced_with(self.client.clone(), namespace, &ar)
        } else {
            Api::all_with(self.client.clone(), &ar)
        }
    }

    async fn get(&self, r: &Resource, namespace: &str, name: &str) -> Result<Option<Value>, Error> {
        self.api(r, namespace)
            .get_opt(name)
            .await
            .map(|o| o.map(to_value))
            .map_err(kube_err(format!("getting {} {namespace}/{name}", r.gk)))
    }

    /// What the server would make of `d` (a server-side dry-run apply), for diffs.
    pub async fn dry_run_apply(&self, d: &Desired) -> Result<Value, Error> {
        self.apply(&d.resource, &d.object, true).await
    }

    /// Server-side applies `object` through `r` (force: kgc owns what it deploys).
    async fn apply(&self, r: &Resource, object: &Value, dry_run: bool) -> Result<Value, Error> {
        let name = crate::str_at(object, "/metadata/name");
        let ns = crate::str_at(object, "/metadata/namespace");
        let pp = PatchParams {
            dry_run,
            force: true,
            field_manager: Some(FIELD_MANAGER.to_owned()),
            field_validation: None,
        };
        self.api(r, ns)
            .patch(name, &pp, &Patch::Apply(object))
            .await
            .map(to_value)
            .map_err(kube_err(format!("applying {} {}", r.gk, display(ns, name))))
    }
}

fn display(ns: &str, name: &str) -> String {
    if ns.is_empty() {
        name.to_owned()
    } else {
        format!("{ns}/{name}")
    }
}

fn to_value(o: DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

impl Lister for ApiServer {
    async fn list(
        &self,
        resource: &Resource,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<Value>, ListError> {
        let api = self.api(resource, namespace.unwrap_or(""));
        let mut params = ListParams::default().labels(selector).limit(500);
        let mut out = Vec::new();
        loop {
            match api.list(&params).await {
                Ok(list) => {
                    let next = list.metadata.continue_.clone().filter(|c| !c.is_empty());
                    out.extend(list.items.into_iter().map(to_value));
                    match next {
                        Some(c) => params = params.continue_token(&c),
                        None => return Ok(out),
                    }
                }
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    return Err(ListError::Forbidden(s.message.clone()));
                }
                Err(kube::Error::Api(s)) if s.code == 404 => return Err(ListError::NotFound),
                Err(e) => return Err(ListError::Failed(e.to_string())),
            }
        }
    }
}

/// Whether every field of `desired` has the same value in `live` (lists element-wise, same
/// length). Fields only `live` has (server defaults, other managers) do not matter.
pub fn contains(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| l.get(k).is_some_and(|lv| contains(lv, dv))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| contains(lv, dv))
        }
        (l, d) => l == d,
    }
}

/// A desired object as the server stores it, where that differs in a way a comparison can
/// undo: a Secret's write-only `stringData` is stored base64-encoded in `data`.
fn as_stored(desired: &Value) -> std::borrow::Cow<'_, Value> {
    let Some(Value::Object(string_data)) = desired.get("stringData") else {
        return std::borrow::Cow::Borrowed(desired);
    };
    let mut v = desired.clone();
    let mut data = v
        .get("data")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, s) in string_data {
        if let Some(s) = s.as_str() {
            data.insert(
                k.clone(),
                Value::String(kgc_meta::encoding::base64(s.as_bytes())),
            );
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("stringData");
        o.insert("data".into(), Value::Object(data));
    }
    std::borrow::Cow::Owned(v)
}

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
    /// Live objects of the set, by key (for diffs), not serialised.
    #[serde(skip)]
    pub live: BTreeMap<ObjectKey, Value>,
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub filters: Filters,
    pub guards: Guards,
    /// Take over objects another set owns.
    pub force_ownership: bool,
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
    let (listed, undetermined) =
        listing::list_scope(cluster, &resources, &scope.namespaces, LABEL_APP).await;

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
        live,
    })
}

/// Progress callbacks (the CLI draws a bar).
pub trait Progress: Sync {
    /// A new phase with `total` steps.
    fn phase(&self, name: &str, total: usize);
    /// One step done.
    fn step(&self);
}

/// No progress output.
pub struct Quiet;

impl Progress for Quiet {
    fn phase(&self, _: &str, _: usize) {}
    fn step(&self) {}
}

/// What happened to one deletion.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteOutcome {
    Deleted,
    /// Deleted, and seen gone (`--wait`).
    Gone,
    /// Still there after `--wait`'s deadline, held by these finalizers.
    Waiting {
        finalizers: Vec<String>,
    },
    /// Already gone.
    NotFound,
    /// Replaced or changed since it was listed (the precondition failed): not deleted.
    Changed,
    /// Kept by a rule discovered at delete time.
    Kept {
        reason: String,
    },
    Failed {
        error: String,
    },
    /// Dry run: would be deleted.
    WouldDelete,
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

    /// Whether something was left undecided or unfinished (undetermined kinds, deletes held by
    /// finalizers).
    pub fn incomplete(&self) -> bool {
        !self.undetermined.is_empty()
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
    /// Wait until deleted objects are gone, up to this long.
    pub wait: Option<Duration>,
    /// Deletes carry the listed resourceVersion as a precondition too (`--plan`).
    pub exact: bool,
}

/// Applies and prunes a prepared run.
pub async fn execute(
    cluster: &ApiServer,
    prepared: &Prepared,
    how: Execution,
    progress: &dyn Progress,
) -> Result<Report, Error> {
    let mut report = Report {
        dry_run: how.dry_run,
        kept: prepared.prune.kept.clone(),
        undetermined: prepared.prune.undetermined.clone(),
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
        let parent_needed = !how.dry_run && prepared.previous.as_ref() != Some(&widened);
        let mut parent_written = !parent_needed;
        if parent_needed {
            parent_written = write_parent(cluster, prepared, &widened).await?;
        }
        let mut by_rank: BTreeMap<u8, Vec<&Change>> = BTreeMap::new();
        for c in todo {
            by_rank.entry(c.desired.rank).or_default().push(c);
        }
        progress.phase("apply", by_rank.values().map(Vec::len).sum());
        for (rank, changes) in by_rank {
            if rank > order::RANK_NAMESPACE && !parent_written {
                parent_written = write_parent(cluster, prepared, &widened).await?;
                if !parent_written {
                    return Err(Error::Invalid(format!(
                        "the namespace {} of the set's parent does not exist and the source does not create it",
                        prepared.namespace
                    )));
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
                    // A custom resource whose CRD this very run creates cannot be dry-run.
                    Err(Error::Kube {
                        source: kube::Error::Api(s),
                        ..
                    }) if how.dry_run && s.code == 404 => {
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
            write_parent(cluster, prepared, &widened).await?;
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
    prune(cluster, &deletes, how, progress, &mut report).await;

    if !how.dry_run && !report.failed() {
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
            write_parent(cluster, prepared, &trimmed).await?;
        }
    }
    Ok(report)
}

/// Applies the parent with `inventory`; `false` when its namespace does not exist yet.
async fn write_parent(
    cluster: &ApiServer,
    prepared: &Prepared,
    inventory: &Inventory,
) -> Result<bool, Error> {
    let cm = Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let parent = inventory.parent(&prepared.identity, &prepared.namespace, &prepared.set_id);
    match cluster.apply(&cm, &parent, false).await {
        Ok(_) => Ok(true),
        Err(Error::Kube {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waits until an applied CRD is Established or a Namespace is Active.
async fn wait_ready(cluster: &ApiServer, d: &Desired) -> Result<(), Error> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let live = cluster
            .get(&d.resource, &d.key.namespace, &d.key.name)
            .await?
            .unwrap_or(Value::Null);
        let ready = if d.key.gk.is_crd() {
            live.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        str_at(c, "/type") == "Established" && str_at(c, "/status") == "True"
                    })
                })
        } else if d.key.gk.is_namespace() {
            // A server that does not report a phase is taken at its word.
            matches!(str_at(&live, "/status/phase"), "Active" | "")
        } else {
            true
        };
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Invalid(format!(
                "{} did not become ready within {READY_TIMEOUT:?}",
                d.key
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn candidate_resource(c: &Candidate) -> Resource {
    Resource {
        gk: c.key.gk.clone(),
        version: c.version.clone(),
        plural: c.plural.clone(),
        namespaced: c.namespaced,
    }
}

/// Deletes in reverse apply order, a rank at a time, in parallel within a rank. CRDs go only
/// after the set's custom resources are gone and none of anyone else's remain.
async fn prune(
    cluster: &ApiServer,
    deletes: &[&Candidate],
    how: Execution,
    progress: &dyn Progress,
    report: &mut Report,
) {
    let mut by_rank: BTreeMap<std::cmp::Reverse<u8>, Vec<&Candidate>> = BTreeMap::new();
    for c in deletes {
        by_rank
            .entry(std::cmp::Reverse(c.rank))
            .or_default()
            .push(c);
    }
    progress.phase("prune", deletes.len());
    for batch in by_rank.into_values() {
        if how.dry_run {
            for c in batch {
                report
                    .deleted
                    .push((c.key.clone(), DeleteOutcome::WouldDelete));
            }
            continue;
        }
        let results: Vec<_> = futures::stream::iter(batch)
            .map(|c| async move {
                let outcome = delete_one(cluster, c, how.exact, how.wait).await;
                progress.step();
                (c.key.clone(), outcome)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        report.deleted.extend(results);
    }
    report.deleted.sort_by(|a, b| a.0.cmp(&b.0));
}

async fn delete_one(
    cluster: &ApiServer,
    c: &Candidate,
    exact: bool,
    wait: Option<Duration>,
) -> DeleteOutcome {
    let r = candidate_resource(c);
    if c.key.gk.is_crd()
        && let Some(outcome) = crd_blocked(cluster, c).await
    {
        return outcome;
    }
    if c.key.gk.is_namespace()
        && let Some(outcome) = namespace_blocked(cluster, &c.key.name).await
    {
        return outcome;
    }
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: Some(c.uid.clone()),
            resource_version: exact.then(|| c.resource_version.clone()),
        }),
        ..DeleteParams::default()
    };
    match cluster
        .api(&r, &c.key.namespace)
        .delete(&c.key.name, &dp)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return DeleteOutcome::NotFound,
        Err(kube::Error::Api(s)) if s.code == 409 => return DeleteOutcome::Changed,
        Err(e) => {
            return DeleteOutcome::Failed {
                error: e.to_string(),
            };
        }
    }
    let Some(timeout) = wait else {
        return DeleteOutcome::Deleted;
    };
    let deadline = Instant::now() + timeout;
    loop {
        match cluster.get(&r, &c.key.namespace, &c.key.name).await {
            Ok(None) => return DeleteOutcome::Gone,
            Ok(Some(live)) if str_at(&live, "/metadata/uid") != c.uid => {
                return DeleteOutcome::Gone;
            }
            Ok(Some(live)) if Instant::now() > deadline => {
                let finalizers = live
                    .pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .map(|f| {
                        f.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                return DeleteOutcome::Waiting { finalizers };
            }
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => {
                return DeleteOutcome::Failed {
                    error: e.to_string(),
                };
            }
        }
    }
}

/// A CRD is kept while any custom resource of it remains (the set's own were deleted in an
/// earlier rank; deleting the CRD would take everyone else's with it).
async fn crd_blocked(cluster: &ApiServer, c: &Candidate) -> Option<DeleteOutcome> {
    let r = candidate_resource(c);
    let live = match cluster.get(&r, "", &c.key.name).await {
        Ok(Some(l)) => l,
        Ok(None) => return Some(DeleteOutcome::NotFound),
        Err(e) => {
            return Some(DeleteOutcome::Failed {
                error: e.to_string(),
            });
        }
    };
    let defined = desired::crd_resources(&live);
    let resource = defined.first()?;
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let list = cluster
            .api(resource, "")
            .list_metadata(&ListParams::default().limit(1))
            .await;
        match list {
            Ok(l) if l.items.is_empty() => return None,
            // Only objects already being deleted (the set's own, a rank earlier) are waited for.
            Ok(l)
                if Instant::now() < deadline
                    && l.items
                        .iter()
                        .all(|i| i.metadata.deletion_timestamp.is_some()) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(l) => {
                let first = &l.items[0].metadata;
                return Some(DeleteOutcome::Kept {
                    reason: format!(
                        "{} objects remain, such as {}",
                        resource.gk,
                        display(
                            first.namespace.as_deref().unwrap_or(""),
                            first.name.as_deref().unwrap_or("")
                        )
                    ),
                });
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return None,
            Err(e) => {
                return Some(DeleteOutcome::Failed {
                    error: e.to_string(),
                });
            }
        }
    }
}

/// Kinds whose objects a namespace holds without anyone having put them there (events,
/// metrics, endpoints that services make).
fn incidental(gk: &GroupKind) -> bool {
    matches!(
        (gk.group.as_str(), gk.kind.as_str()),
        ("" | "events.k8s.io", "Event") | ("", "Endpoints") | ("discovery.k8s.io", "EndpointSlice")
    ) || gk.group == "metrics.k8s.io"
}

/// A Namespace is kept while it holds anything that is not being deleted, not made by a
/// controller and not one of the objects every namespace gets (the `default` ServiceAccount,
/// the `kube-root-ca.crt` ConfigMap): deleting it would take others' objects with it (the gap
/// behind argoproj/argo-cd#22607 and kubernetes-sigs/cli-utils#274). The set's own members
/// were deleted a rank earlier. A kind that cannot be listed keeps the namespace.
async fn namespace_blocked(cluster: &ApiServer, namespace: &str) -> Option<DeleteOutcome> {
    let resources: Vec<&Resource> = cluster
        .catalog
        .preferred
        .values()
        .filter(|r| r.namespaced && !incidental(&r.gk))
        .collect();
    let found: Vec<Option<String>> = futures::stream::iter(resources)
        .map(|r| async move {
            let list = cluster
                .api(r, namespace)
                .list_metadata(&ListParams::default().limit(100))
                .await;
            match list {
                Ok(l) => l
                    .items
                    .iter()
                    .find(|o| {
                        let m = &o.metadata;
                        let name = m.name.as_deref().unwrap_or("");
                        m.deletion_timestamp.is_none()
                            && !m
                                .owner_references
                                .iter()
                                .flatten()
                                .any(|r| r.controller == Some(true))
                            && !matches!(
                                (r.gk.group.as_str(), r.gk.kind.as_str(), name),
                                ("", "ServiceAccount", "default")
                                    | ("", "ConfigMap", "kube-root-ca.crt")
                            )
                    })
                    .map(|o| format!("{} {}", r.gk, o.metadata.name.as_deref().unwrap_or(""))),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => None,
                Err(e) => Some(format!("{} (which could not be listed: {e})", r.gk)),
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut found: Vec<String> = found.into_iter().flatten().collect();
    found.sort();
    let first = found.first()?;
    Some(DeleteOutcome::Kept {
        reason: format!("it still holds objects, such as {first}"),
    })
}

/// The set's live parent and members, for `kgc delete`: a prepared run with an empty source.
pub async fn prepare_delete(
    cluster: &ApiServer,
    identity: &Identity,
    namespace: &str,
    options: &Options,
) -> Result<Prepared, Error> {
    let mut options = options.clone();
    options.guards.allow_empty = true;
    prepare(cluster, Vec::new(), identity, namespace, &options).await
}

/// Deletes the set's parent (after `kgc delete` removed every member).
pub async fn delete_parent(cluster: &ApiServer, prepared: &Prepared) -> Result<(), Error> {
    let cm = Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let name = prepared.identity.parent_name();
    let Some(parent) = cluster.get(&cm, &prepared.namespace, &name).await? else {
        return Ok(());
    };
    // Only the parent that was read, and only while it is still kgc's.
    Inventory::from_parent(&parent, &prepared.set_id)?;
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(str_at(&parent, "/metadata/uid").to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match cluster
        .api(&cm, &prepared.namespace)
        .delete(&name, &dp)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(kube_err("deleting the set's parent")(e)),
    }
}

/// Checks a reviewed plan against the live objects: every object it applies or deletes must
/// still have the uid and resourceVersion it was planned against (absent stays absent).
pub fn check_drift(reviewed: &Prepared, fresh: &Prepared) -> Result<(), Error> {
    let mut drift = Vec::new();
    if reviewed.previous != fresh.previous {
        drift.push(format!(
            "the set's parent ConfigMap {}/{} changed",
            reviewed.namespace,
            reviewed.identity.parent_name()
        ));
    }
    let fresh_changes: HashMap<&ObjectKey, &Change> =
        fresh.changes.iter().map(|c| (&c.desired.key, c)).collect();
    for c in &reviewed.changes {
        let now = fresh_changes.get(&c.desired.key);
        let (uid, rv) = now.map_or((None, None), |n| {
            (n.live_uid.as_ref(), n.live_resource_version.as_ref())
        });
        if now.is_none() || uid != c.live_uid.as_ref() || rv != c.live_resource_version.as_ref() {
            drift.push(format!("{} changed", c.desired.key));
        }
    }
    let fresh_deletes: HashMap<&ObjectKey, &Candidate> =
        fresh.prune.deletes.iter().map(|c| (&c.key, c)).collect();
    for d in &reviewed.prune.deletes {
        match fresh_deletes.get(&d.key) {
            Some(n) if n.uid == d.uid && n.resource_version == d.resource_version => {}
            _ => drift.push(format!("{} (to delete) changed", d.key)),
        }
    }
    for d in &fresh.prune.deletes {
        if !reviewed.prune.deletes.iter().any(|r| r.key == d.key) {
            drift.push(format!("{} would now be deleted too", d.key));
        }
    }
    if drift.is_empty() {
        Ok(())
    } else {
        drift.sort();
        Err(Error::Drift(format!(
            "{}; make a new plan",
            drift.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prepared(live_rv: Option<&str>, delete_rv: &str) -> Prepared {
        let key = |name: &str| ObjectKey {
            gk: GroupKind::new("", "ConfigMap"),
            namespace: "ns".into(),
            name: name.into(),
        };
        let resource = Resource {
            gk: GroupKind::new("", "ConfigMap"),
            version: "v1".into(),
            plural: "configmaps".into(),
            namespaced: true,
        };
        Prepared {
            identity: Identity::new("shop", "prod", None).unwrap(),
            namespace: "ns".into(),
            set_id: "set".into(),
            previous: None,
            current: Inventory::default(),
            changes: vec![Change {
                desired: Desired {
                    key: key("a"),
                    resource,
                    component: "web".into(),
                    origin: "web.yaml:1".into(),
                    object: json!({}),
                    rank: 4,
                },
                action: Action::Update,
                live_uid: live_rv.map(|_| "u-a".to_owned()),
                live_resource_version: live_rv.map(str::to_owned),
            }],
            prune: PrunePlan {
                deletes: vec![Candidate {
                    key: key("b"),
                    version: "v1".into(),
                    plural: "configmaps".into(),
                    namespaced: true,
                    uid: "u-b".into(),
                    resource_version: delete_rv.into(),
                    component: None,
                    rank: 4,
                }],
                ..PrunePlan::default()
            },
            live: BTreeMap::new(),
        }
    }

    #[test]
    fn drift_is_any_change_to_what_the_plan_touches() {
        let reviewed = prepared(Some("1"), "2");
        assert!(check_drift(&reviewed, &prepared(Some("1"), "2")).is_ok());
        let err = check_drift(&reviewed, &prepared(Some("5"), "2")).unwrap_err();
        assert!(err.to_string().contains("ConfigMap ns/a changed"), "{err}");
        let err = check_drift(&reviewed, &prepared(None, "3")).unwrap_err();
        assert!(
            err.to_string().contains("ns/b (to delete) changed"),
            "{err}"
        );
        let mut fresh = prepared(Some("1"), "2");
        fresh.previous = Some(Inventory::default());
        assert!(
            check_drift(&reviewed, &fresh)
                .unwrap_err()
                .to_string()
                .contains("parent")
        );
        let mut fresh = prepared(Some("1"), "2");
        let mut extra = fresh.prune.deletes[0].clone();
        extra.key.name = "c".into();
        fresh.prune.deletes.push(extra);
        assert!(
            check_drift(&reviewed, &fresh)
                .unwrap_err()
                .to_string()
                .contains("ns/c would now be deleted")
        );
    }

    #[test]
    fn secret_string_data_compares_as_stored() {
        let live = json!({"kind": "Secret", "data": {"a": "eA==", "b": "eQ=="}});
        let desired = json!({"kind": "Secret", "stringData": {"a": "x"}, "data": {"b": "eQ=="}});
        assert!(contains(&live, &as_stored(&desired)));
        let changed = json!({"kind": "Secret", "stringData": {"a": "z"}});
        assert!(!contains(&live, &as_stored(&changed)));
    }

    #[test]
    fn containment_ignores_server_additions_only() {
        let live = json!({"spec": {"replicas": 1, "template": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}]}}, "status": {}});
        assert!(contains(
            &live,
            &json!({"spec": {"template": {"containers": [{"name": "a", "image": "x"}]}}})
        ));
        assert!(!contains(&live, &json!({"spec": {"replicas": 2}})));
        assert!(!contains(
            &live,
            &json!({"spec": {"template": {"containers": [{"name": "a"}, {"name": "b"}]}}})
        ));
        assert!(!contains(
            &live,
            &json!({"metadata": {"labels": {"a": "b"}}})
        ));
    }
}
