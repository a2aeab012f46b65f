//! The disruption controller on kgc-runtime (kubernetes/kubernetes
//! `pkg/controller/disruption/disruption.go`).
//!
//! Its work is keyed by namespace: a change to a budget, a pod or a workload of a namespace
//! queues the namespace, and its sync recomputes every budget there from the caches, writing
//! the statuses that changed. A namespace's budgets are few, and a burst of pod changes
//! collapses into one queued key.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::ObjectReference;
use kgc_client::Cluster;
use kgc_meta::disruption::{self, SYNC_FAILED};
use kgc_meta::time::format_time;
use kgc_meta::{LabelSelector, ResourceInfo};
use kgc_runtime::Context;
use kgc_runtime::events::Recorder;
use kgc_runtime::informer::{Cache, Key, View};
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::budget::{self, Member};
use crate::{Error, Result};

/// The name `--controllers` knows it by.
pub const NAME: &str = "disruption";
const WORKERS: usize = 2;
/// The source of its events, as upstream names it.
const COMPONENT: &str = "controllermanager";

/// The controller reference of an object (`metav1.GetControllerOf`).
#[derive(Debug, Clone, PartialEq)]
struct ControllerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
}

impl ControllerRef {
    fn of(obj: &Value) -> Option<Self> {
        let r = obj["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .find(|r| r["controller"] == true)?;
        let s = |f: &str| r[f].as_str().unwrap_or_default().to_owned();
        Some(Self {
            api_version: s("apiVersion"),
            kind: s("kind"),
            name: s("name"),
            uid: s("uid"),
        })
    }

    fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// `verifyGroupKind`: the kind, in one of the groups it is served by.
    fn is(&self, kind: &str, groups: &[&str]) -> bool {
        self.kind == kind && groups.contains(&self.group())
    }
}

/// What the controller keeps of a pod.
#[derive(Debug, Clone, PartialEq)]
struct PodView {
    labels: BTreeMap<String, String>,
    controller: Option<ControllerRef>,
    deleting: bool,
    ready: bool,
}

impl View for PodView {
    fn view(obj: &Value) -> Option<Self> {
        Some(Self {
            labels: obj["metadata"]["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect(),
            controller: ControllerRef::of(obj),
            deleting: obj["metadata"]["deletionTimestamp"].is_string(),
            ready: disruption::pod_ready(obj),
        })
    }
}

/// What the controller keeps of a workload: its identity, its scale and its own controller.
#[derive(Debug, Clone, PartialEq)]
struct Workload {
    uid: String,
    replicas: i64,
    controller: Option<ControllerRef>,
}

impl View for Workload {
    fn view(obj: &Value) -> Option<Self> {
        Some(Self {
            uid: obj["metadata"]["uid"].as_str()?.to_owned(),
            // Upstream reads `*spec.replicas`, which defaulting always sets.
            replicas: obj["spec"]["replicas"].as_i64().unwrap_or(1),
            controller: ControllerRef::of(obj),
        })
    }
}

/// The caches a sync reads.
#[derive(Clone)]
struct Caches {
    budgets: Cache<Value>,
    pods: Cache<PodView>,
    replica_sets: Cache<Workload>,
    deployments: Cache<Workload>,
    stateful_sets: Cache<Workload>,
    controllers: Cache<Workload>,
    budget_info: Arc<ResourceInfo>,
    /// Upstream's recorder (`EventSource{Component: "controllermanager"}`).
    recorder: Recorder,
}

/// Runs the disruption controller until dropped.
pub async fn run<C: Cluster>(ctx: Context<C>) {
    let informers = &ctx.informers;
    let budget_info = informers.resource("policy", "poddisruptionbudgets").await;
    let workload = |group: &'static str, plural: &'static str| async move {
        informers.cache::<Workload>(informers.resource(group, plural).await)
    };
    let caches = Caches {
        budgets: informers.cache::<Value>(Arc::clone(&budget_info)),
        pods: informers.cache::<PodView>(informers.resource("", "pods").await),
        replica_sets: workload("apps", "replicasets").await,
        deployments: workload("apps", "deployments").await,
        stateful_sets: workload("apps", "statefulsets").await,
        controllers: workload("", "replicationcontrollers").await,
        budget_info,
        recorder: Recorder::new(ctx.client.clone(), COMPONENT, ctx.clock),
    };
    // Upstream's handlers (`addDb`, `addPod`, … of `pkg/controller/disruption`) queue the
    // budget; here a change anywhere in a namespace has its budgets judged again.
    kgc_runtime::Controller::named(&ctx, NAME)
        .watches(&caches.budgets, namespace_of::<Value>)
        .watches(&caches.pods, namespace_of::<PodView>)
        .watches(&caches.replica_sets, namespace_of::<Workload>)
        .watches(&caches.deployments, namespace_of::<Workload>)
        .watches(&caches.stateful_sets, namespace_of::<Workload>)
        .watches(&caches.controllers, namespace_of::<Workload>)
        .run_with(
            WORKERS,
            (ctx.clone(), caches.clone()),
            |(ctx, caches), ns: String| async move { sync_namespace(&ctx, &caches, &ns).await },
        )
        .await;
}

/// The queue key of any object's change: its namespace.
fn namespace_of<V>(key: &Key, _: Option<&V>) -> Option<String> {
    Some(key.0.clone())
}

/// Every budget of `ns`; looks again when the first pending eviction expires.
async fn sync_namespace<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
) -> Result<Option<Duration>> {
    let budgets: Vec<Value> = caches.budgets.read(|m| {
        m.iter()
            .filter(|(k, _)| k.0 == ns)
            .map(|(_, v)| v.clone())
            .collect()
    });
    let mut recheck: Option<Timestamp> = None;
    let mut failed = None;
    for pdb in budgets {
        match sync_budget(ctx, caches, ns, &pdb).await {
            Ok(Some(at)) => recheck = Some(recheck.map_or(at, |r| r.min(at))),
            Ok(None) => {}
            // The budget changed since it was cached (an eviction spent a disruption): its
            // watch event queues the namespace again, with the newer budget.
            Err(Error::Cluster(e)) if e.is(kgc_meta::Reason::Conflict) => {
                tracing::debug!(
                    controller = NAME,
                    namespace = ns,
                    "budget changed meanwhile"
                );
            }
            Err(e) => {
                let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
                tracing::warn!(controller = NAME, budget = %format!("{ns}/{name}"), error = %e, "sync failed");
                if matches!(e, Error::Invalid(_)) {
                    fail_safe(ctx, caches, ns, &pdb, &e.to_string()).await?;
                }
                failed = Some(e);
            }
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let now = ctx.clock.now();
    Ok(recheck.map(|at| {
        let wait = at.duration_since(now).unsigned_abs();
        // Just past the expiry, so that the entry is gone when looked at.
        wait + Duration::from_millis(100)
    }))
}

/// `trySync` of one budget: returns when its first pending eviction expires.
async fn sync_budget<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
    pdb: &Value,
) -> Result<Option<Timestamp>> {
    let spec = &pdb["spec"];
    let recorder = &caches.recorder;
    // A missing selector selects nothing, `{}` every pod (`LabelSelectorAsSelector`).
    let selector = match &spec["selector"] {
        Value::Null => None,
        s => match LabelSelector::from_json(s) {
            Ok(s) => Some(s),
            Err(e) => {
                let message = format!("Failed to get pods: {e}");
                recorder.warning(reference(pdb), "NoPods", message);
                return Err(Error::Invalid(e.to_string()));
            }
        },
    };
    let pods: Vec<(String, PodView)> = caches.pods.read(|m| {
        m.iter()
            .filter(|(k, p)| k.0 == ns && selector.as_ref().is_some_and(|s| s.matches(&p.labels)))
            .map(|(k, p)| (k.1.clone(), p.clone()))
            .collect()
    });
    if pods.is_empty() {
        let message = "No matching pods found".to_owned();
        recorder.normal(reference(pdb), "NoPods", message);
    }
    // `getExpectedPodCount`.
    let expected = async {
        let (scale, unmanaged) = match budget::needs_scale(spec) {
            true => {
                let (scale, unmanaged) = expected_scale(ctx, caches, ns, &pods).await?;
                (Some(scale), unmanaged)
            }
            false => (None, Vec::new()),
        };
        let (expected, desired) = budget::expected_and_desired(spec, pods.len(), scale)?;
        Ok::<_, Error>((expected, desired, unmanaged))
    };
    let (expected, desired, unmanaged) = match expected.await {
        Ok(counts) => counts,
        Err(e) => {
            let message = format!("Failed to calculate the number of expected pods: {e}");
            recorder.warning(reference(pdb), "CalculateExpectedPodCountFailed", message);
            return Err(e);
        }
    };
    if !unmanaged.is_empty() {
        tracing::debug!(controller = NAME, namespace = ns, pods = ?unmanaged, "pods without a controller left out of a budget's expected pods");
        let message = format!(
            "Pods selected by this PodDisruptionBudget (selector: {}) were found to be \
             unmanaged. As a result, the status of the PDB cannot be calculated correctly, which \
             may result in undefined behavior. To account for these pods please set \
             \".spec.minAvailable\" field of the PDB to an integer value.",
            go_selector(&spec["selector"])
        );
        recorder.warning(reference(pdb), "UnmanagedPods", message);
    }
    let members: Vec<Member> = pods
        .into_iter()
        .map(|(name, p)| Member {
            name,
            deleting: p.deleting,
            ready: p.ready,
        })
        .collect();
    let now = ctx.clock.now();
    let (pending, recheck) =
        budget::pending_evictions(&pdb["status"]["disruptedPods"], &members, now);
    let healthy = budget::current_healthy(&members, &pending);
    let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(0);
    let mut status = budget::status(healthy, desired, expected, pending, generation);
    status["conditions"] = pdb["status"]["conditions"].clone();
    disruption::update_disruption_allowed(&mut status, &format_time(now));
    write_status(ctx, caches, ns, pdb, status).await?;
    Ok(recheck)
}

/// `failSafe`: a budget whose numbers cannot be computed allows no disruption, and says why.
async fn fail_safe<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
    pdb: &Value,
    message: &str,
) -> Result<()> {
    let mut status = pdb["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    status["disruptionsAllowed"] = json!(0);
    status["observedGeneration"] = pdb["metadata"]["generation"].clone();
    let now = format_time(ctx.clock.now());
    disruption::set_condition(&mut status, "False", SYNC_FAILED, message, &now);
    write_status(ctx, caches, ns, pdb, status).await
}

/// Writes `status` unless the budget already has it; the budget's resourceVersion guards the
/// write (a conflict retries the namespace with the newer budget).
async fn write_status<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
    pdb: &Value,
    status: Value,
) -> Result<()> {
    if same_status(&pdb["status"], &status) {
        return Ok(());
    }
    let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
    let mut new = pdb.clone();
    new["status"] = status;
    ctx.cluster()
        .replace_status(&caches.budget_info, ns, name, new)
        .await?;
    Ok(())
}

/// Whether two statuses say the same, `0`s and empty maps being absent ones (Go's
/// `omitempty`).
fn same_status(old: &Value, new: &Value) -> bool {
    let fields = [
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
        "disruptionsAllowed",
        "observedGeneration",
    ];
    let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(|m| m.is_empty());
    fields
        .iter()
        .all(|f| old[f].as_i64().unwrap_or(0) == new[f].as_i64().unwrap_or(0))
        && (old["disruptedPods"] == new["disruptedPods"]
            || (empty(&old["disruptedPods"]) && empty(&new["disruptedPods"])))
        && old["conditions"] == new["conditions"]
}

/// `getExpectedScale`: the replicas the pods' controllers ask for, each controller counted
/// once, and the pods without a controller, which are left out (the sync records an
/// `UnmanagedPods` event); a pod whose controller cannot be found fails the sync.
async fn expected_scale<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
    pods: &[(String, PodView)],
) -> Result<(i64, Vec<String>)> {
    let mut scales: HashMap<String, (String, i64)> = HashMap::new();
    let mut unmanaged = Vec::new();
    for (name, pod) in pods {
        let Some(r) = &pod.controller else {
            unmanaged.push(name.clone());
            continue;
        };
        if scales.contains_key(&r.uid) {
            continue;
        }
        let Some(found) = controller_scale(ctx, caches, ns, r).await? else {
            return Err(Error::Invalid(format!(
                "found no controllers for pod {name:?}"
            )));
        };
        scales.insert(r.uid.clone(), found);
    }
    // Two ReplicaSets of one Deployment count the Deployment once.
    let by_controller: HashMap<&str, i64> = scales
        .values()
        .map(|(uid, replicas)| (uid.as_str(), *replicas))
        .collect();
    Ok((by_controller.values().sum(), unmanaged))
}

/// The finders of `getExpectedScale`: a pod's controller and its scale, `(uid, replicas)`, or
/// `None` when it is not (or no longer) there.
async fn controller_scale<C: Cluster>(
    ctx: &Context<C>,
    caches: &Caches,
    ns: &str,
    r: &ControllerRef,
) -> Result<Option<(String, i64)>> {
    let get = |cache: &Cache<Workload>, name: &str, uid: &str| {
        cache
            .get(&(ns.to_owned(), name.to_owned()))
            .filter(|w| w.uid == uid)
    };
    const APPS: &[&str] = &["apps", "extensions"];
    if r.is("ReplicaSet", APPS) {
        let Some(rs) = get(&caches.replica_sets, &r.name, &r.uid) else {
            return Ok(None);
        };
        // A Deployment's ReplicaSet counts as its Deployment (`getPodDeployment`).
        return Ok(match &rs.controller {
            Some(d) if d.is("Deployment", APPS) => {
                get(&caches.deployments, &d.name, &d.uid).map(|d| (d.uid, d.replicas))
            }
            Some(d) if d.kind == "Deployment" => None,
            _ => Some((rs.uid, rs.replicas)),
        });
    }
    if r.is("StatefulSet", &["apps"]) {
        return Ok(get(&caches.stateful_sets, &r.name, &r.uid).map(|s| (s.uid, s.replicas)));
    }
    if r.is("ReplicationController", &[""]) {
        return Ok(get(&caches.controllers, &r.name, &r.uid).map(|c| (c.uid, c.replicas)));
    }
    custom_scale(ctx, ns, r).await
}

/// `getScaleController`: any other controller through its `scale` subresource.
async fn custom_scale<C: Cluster>(
    ctx: &Context<C>,
    ns: &str,
    r: &ControllerRef,
) -> Result<Option<(String, i64)>> {
    let resources = ctx.cluster().resources().await?;
    let Some(info) = resources
        .iter()
        .find(|i| i.group == r.group() && i.kind == r.kind)
    else {
        return Err(Error::Invalid(format!(
            "no matches for kind {:?} in version {:?}",
            r.kind, r.api_version
        )));
    };
    if info.subresource("scale").is_none() {
        return Err(Error::Invalid(format!(
            "{} does not implement the scale subresource",
            info.group_resource()
        )));
    }
    let version = r
        .api_version
        .rsplit_once('/')
        .map_or(r.api_version.as_str(), |(_, v)| v);
    let resource = ApiResource {
        group: info.group.clone(),
        version: version.to_owned(),
        api_version: r.api_version.clone(),
        kind: info.kind.clone(),
        plural: info.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &resource);
    let scale: Scale = match api.get_scale(&r.name).await {
        Ok(s) => s,
        Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if scale.metadata.uid.as_deref() != Some(r.uid.as_str()) {
        return Ok(None);
    }
    let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
    Ok(Some((r.uid.clone(), i64::from(replicas))))
}

/// The reference the budget's events name it by.
fn reference(pdb: &Value) -> ObjectReference {
    let meta = &pdb["metadata"];
    let text = |v: &Value| v.as_str().map(str::to_owned);
    ObjectReference {
        api_version: Some("policy/v1".to_owned()),
        kind: Some("PodDisruptionBudget".to_owned()),
        namespace: text(&meta["namespace"]),
        name: text(&meta["name"]),
        uid: text(&meta["uid"]),
        resource_version: text(&meta["resourceVersion"]),
        field_path: None,
    }
}

/// A label selector as Go's `%v` prints a `*metav1.LabelSelector` (its generated `String`),
/// which upstream's `UnmanagedPods` message quotes.
fn go_selector(selector: &Value) -> String {
    if selector.is_null() {
        return "nil".to_owned();
    }
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    // The keys sorted, as the generated code sorts them.
    let labels: BTreeMap<&String, String> = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, text(v)))
        .collect();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<String> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(&e["key"]),
                text(&e["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_references_name_their_group() {
        let pod = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "0"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1",
             "controller": true}]}});
        let r = ControllerRef::of(&pod).unwrap();
        assert!(r.is("ReplicaSet", &["apps", "extensions"]));
        assert!(!r.is("ReplicaSet", &[""]));
        assert_eq!((r.name.as_str(), r.uid.as_str()), ("rs", "1"));
        assert!(ControllerRef::of(&json!({"metadata": {}})).is_none());
    }

    #[test]
    fn unchanged_statuses_are_not_written() {
        let old = json!({"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
                         "disruptionsAllowed": 1, "observedGeneration": 1, "conditions": []});
        let mut new = old.clone();
        new["disruptedPods"] = json!({});
        assert!(same_status(&old, &new));
        new["disruptionsAllowed"] = json!(0);
        assert!(!same_status(&old, &new));
        assert!(same_status(
            &json!({"conditions": []}),
            &json!({"expectedPods": 0, "conditions": []})
        ));
    }

    #[test]
    fn selectors_print_as_go_prints_them() {
        assert_eq!(
            go_selector(&json!({"matchLabels": {"foo": "bar", "app": "web"}})),
            "&LabelSelector{MatchLabels:map[string]string{app: web,foo: bar,},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
        assert_eq!(
            go_selector(
                &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]})
            ),
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},},}"
        );
        assert_eq!(go_selector(&Value::Null), "nil");
    }
}
