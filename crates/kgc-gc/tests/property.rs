//! Property test: random owner graphs, random deletions, the collector running for real against
//! the store, and the whole committed history checked against the rules of owner-reference
//! garbage collection (kubernetes/kubernetes `pkg/controller/garbagecollector`):
//!
//! 1. nothing with a solid owner is ever deleted by the collector (an owner that exists and is
//!    not waiting for its dependents in foreground);
//! 2. every object whose owners are all absent is eventually deleted (unless it is cluster-scoped
//!    and names a namespaced owner, which is never collected);
//! 3. a foreground owner disappears only once no dependent blocks it;
//! 4. orphaned dependents keep every other reference (they are never deleted for the orphaned
//!    owner's sake: rule 1 covers that, since an owner being orphaned is solid).
//!
//! Graphs mix namespaced ConfigMaps in two namespaces with cluster-scoped ClusterRoles, multiple
//! owners, self-references, cycles, references to uids that never existed, cross-namespace
//! references, and extra finalizers that hold objects forever.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kgc_gc::{Config, GarbageCollector};
use kgc_inprocess::InProcess;
use kgc_meta::{DeleteOptions, GroupResource, PropagationPolicy, ResourceInfo};
use kgc_store::{EventType, Store, WatchEvent, WatchFilter};
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    ConfigMapA,
    ConfigMapB,
    ClusterRole,
}

impl Kind {
    fn namespace(self) -> &'static str {
        match self {
            Kind::ConfigMapA => "ns-a",
            Kind::ConfigMapB => "ns-b",
            Kind::ClusterRole => "",
        }
    }
    fn api_version(self) -> &'static str {
        match self {
            Kind::ClusterRole => "rbac.authorization.k8s.io/v1",
            _ => "v1",
        }
    }
    fn kind(self) -> &'static str {
        match self {
            Kind::ClusterRole => "ClusterRole",
            _ => "ConfigMap",
        }
    }
    fn namespaced(self) -> bool {
        self != Kind::ClusterRole
    }
}

#[derive(Debug, Clone)]
enum Target {
    /// Another object of the graph (possibly itself).
    Object(usize),
    /// A uid no object ever had.
    Nowhere,
}

#[derive(Debug, Clone)]
struct Spec {
    kind: Kind,
    extra_finalizer: bool,
    owners: Vec<(Target, bool)>,
}

#[derive(Debug, Clone)]
struct Case {
    objects: Vec<Spec>,
    deletions: Vec<(usize, PropagationPolicy)>,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    let kind = prop_oneof![
        Just(Kind::ConfigMapA),
        Just(Kind::ConfigMapB),
        Just(Kind::ClusterRole)
    ];
    (2usize..10).prop_flat_map(move |n| {
        let target = prop_oneof![
            9 => (0..n).prop_map(Target::Object),
            1 => Just(Target::Nowhere),
        ];
        let spec = (
            kind.clone(),
            prop::bool::weighted(0.1),
            prop::collection::vec((target, any::<bool>()), 0..3),
        )
            .prop_map(|(kind, extra_finalizer, owners)| Spec {
                kind,
                extra_finalizer,
                owners,
            });
        let policy = prop_oneof![
            Just(PropagationPolicy::Background),
            Just(PropagationPolicy::Foreground),
            Just(PropagationPolicy::Orphan),
        ];
        (
            prop::collection::vec(spec, n),
            prop::collection::vec((0..n, policy), 1..4),
        )
            .prop_map(|(objects, mut deletions)| {
                // One explicit deletion per object: a second DELETE with another policy changes
                // the finalizers by the user's hand, which the rules below do not model.
                let mut seen = std::collections::HashSet::new();
                deletions.retain(|(i, _)| seen.insert(*i));
                Case { objects, deletions }
            })
    })
}

/// What the history says about one object at one moment.
#[derive(Debug, Clone)]
struct State {
    kind: String,
    namespace: String,
    name: String,
    deleting: bool,
    finalizers: Vec<String>,
    owners: Vec<Value>,
}

fn state(v: &Value) -> State {
    let m = &v["metadata"];
    let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
    State {
        kind: v["kind"].as_str().unwrap_or_default().to_owned(),
        namespace: s("namespace"),
        name: s("name"),
        deleting: m.get("deletionTimestamp").is_some(),
        finalizers: m["finalizers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        owners: m["ownerReferences"].as_array().cloned().unwrap_or_default(),
    }
}

/// Whether owner reference `r` of `child` names an object present in `world` (uid, kind, name,
/// and namespace: a namespaced owner must be in the child's namespace).
fn resolves(world: &HashMap<String, State>, child: &State, r: &Value) -> Option<State> {
    let uid = r["uid"].as_str()?;
    let owner = world.get(uid)?;
    let ok = owner.kind == r["kind"].as_str()?
        && owner.name == r["name"].as_str()?
        && (owner.namespace.is_empty() || owner.namespace == child.namespace);
    ok.then(|| owner.clone())
}

fn info(store: &Store, group: &str, resource: &str) -> Arc<ResourceInfo> {
    store
        .catalog()
        .get(group, "v1", resource)
        .cloned()
        .expect("built in")
}

async fn run_case(case: Case) -> Result<(), TestCaseError> {
    let store = Store::in_memory().await.expect("store");
    let ns = info(&store, "", "namespaces");
    for n in ["ns-a", "ns-b"] {
        store
            .create(
                &ns,
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}),
                false,
            )
            .await
            .expect("namespace");
    }
    let cm = info(&store, "", "configmaps");
    let cr = info(&store, "rbac.authorization.k8s.io", "clusterroles");
    let info_of = |k: Kind| {
        if k.namespaced() {
            Arc::clone(&cm)
        } else {
            Arc::clone(&cr)
        }
    };
    let start = store.revision();
    let gc = GarbageCollector::new(
        InProcess::new(store.clone()),
        Config {
            workers: 4,
            resync: Duration::from_secs(3600),
            ..Config::default()
        },
    );
    let runner = gc.clone();
    let task = tokio::spawn(async move { runner.run().await });
    while !gc.is_synced() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Create every object without owners, then give each its owners (so cycles are possible).
    let mut uids = Vec::new();
    for (i, spec) in case.objects.iter().enumerate() {
        let mut obj = json!({
            "apiVersion": spec.kind.api_version(),
            "kind": spec.kind.kind(),
            "metadata": {"name": format!("o{i}")},
        });
        if spec.extra_finalizer {
            obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
        }
        let created = store
            .create(&info_of(spec.kind), spec.kind.namespace(), obj, false)
            .await
            .expect("create");
        uids.push(created.uid.clone());
    }
    for (i, spec) in case.objects.iter().enumerate() {
        if spec.owners.is_empty() {
            continue;
        }
        let refs: Vec<Value> = spec
            .owners
            .iter()
            .enumerate()
            .map(|(j, (t, block))| match t {
                Target::Object(k) => {
                    let o = &case.objects[*k];
                    json!({"apiVersion": o.kind.api_version(), "kind": o.kind.kind(), "name": format!("o{k}"),
                           "uid": uids[*k], "blockOwnerDeletion": block})
                }
                Target::Nowhere => json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("ghost{i}-{j}"),
                                          "uid": format!("ghost-{i}-{j}"), "blockOwnerDeletion": block}),
            })
            .collect();
        // Two references to the same uid are one owner: keep the first.
        let mut seen = std::collections::HashSet::new();
        let refs: Vec<Value> = refs
            .into_iter()
            .filter(|r| seen.insert(r["uid"].clone()))
            .collect();
        let _ = store
            .update(
                &info_of(spec.kind),
                spec.kind.namespace(),
                &format!("o{i}"),
                None,
                false,
                move |mut o| {
                    o["metadata"]["ownerReferences"] = Value::Array(refs);
                    Ok(o)
                },
            )
            .await;
    }
    let mut explicit = HashMap::new();
    for (i, policy) in &case.deletions {
        let spec = &case.objects[*i];
        let opts = DeleteOptions {
            propagation_policy: Some(*policy),
            ..DeleteOptions::default()
        };
        if store
            .delete(
                &info_of(spec.kind),
                spec.kind.namespace(),
                &format!("o{i}"),
                &opts,
            )
            .await
            .is_ok()
        {
            explicit.insert(uids[*i].clone(), *policy);
        }
    }
    // Quiescence: no pending work and no new revision for a while.
    let mut last = store.revision();
    let mut quiet = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while quiet < 5 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = store.revision();
        if now == last && gc.pending_work() == 0 {
            quiet += 1;
        } else {
            quiet = 0;
            last = now;
        }
    }
    task.abort();
    prop_assert!(quiet >= 5, "the collector did not settle");

    // The committed history of both resources, in revision order.
    let mut history: Vec<(u64, EventType, Value)> = Vec::new();
    for gr in [
        GroupResource::new("", "configmaps"),
        GroupResource::new("rbac.authorization.k8s.io", "clusterroles"),
    ] {
        let mut w = store.watch(WatchFilter::new(gr), Some(start));
        while let Some(WatchEvent::Event(t, o)) = w.try_next() {
            history.push((o.resource_version, t, o.value()));
        }
    }
    history.sort_by_key(|h| h.0);

    let mut world: HashMap<String, State> = HashMap::new();
    let mut gone_at: BTreeMap<String, u64> = BTreeMap::new();
    // Owners that entered foreground deletion: from then on their non-blocking dependents may be
    // deleted, even after the owner dropped `foregroundDeletion` (upstream deletes them because
    // the owner is waiting, but does not wait for them).
    let mut foreground: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (rv, kind, obj) in &history {
        let uid = obj["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let next = state(obj);
        let before = world.get(&uid).cloned();
        let starts_deleting = match (&before, kind) {
            (Some(b), EventType::Deleted) => !b.deleting,
            (Some(b), _) => !b.deleting && next.deleting,
            _ => false,
        };
        // Rule 1: the collector starts deleting an object only when no owner is solid.
        if starts_deleting && !explicit.contains_key(&uid) {
            let b = before.as_ref().expect("checked");
            for r in &b.owners {
                if let Some(owner) = resolves(&world, b, r) {
                    let owner_uid = r["uid"].as_str().unwrap_or_default();
                    let waiting = owner.deleting && foreground.contains(owner_uid);
                    prop_assert!(
                        waiting,
                        "rv {rv}: {} {}/{} was deleted while its owner {}/{} was solid (history {:#?})",
                        b.kind,
                        b.namespace,
                        b.name,
                        owner.namespace,
                        owner.name,
                        history
                    );
                }
            }
        }
        // Rule 3: an object goes only when nothing still present blocks it.
        if *kind == EventType::Deleted
            && before
                .as_ref()
                .is_some_and(|b| b.finalizers.iter().any(|f| f == "foregroundDeletion"))
        {
            for (other_uid, other) in &world {
                if *other_uid == uid {
                    continue;
                }
                let blocks = other
                    .owners
                    .iter()
                    .any(|r| r["uid"] == uid.as_str() && r["blockOwnerDeletion"] == true);
                prop_assert!(
                    !blocks,
                    "rv {rv}: foreground owner {} went while {}/{} still blocked it",
                    next.name,
                    other.namespace,
                    other.name
                );
            }
        }
        if next.deleting && next.finalizers.iter().any(|f| f == "foregroundDeletion") {
            foreground.insert(uid.clone());
        }
        if *kind == EventType::Deleted {
            world.remove(&uid);
            gone_at.insert(uid, *rv);
        } else {
            world.insert(uid, next);
        }
    }
    // Rule 2: at the end, nothing that is not held is left with only absent owners.
    for (uid, o) in &world {
        if o.deleting || o.owners.is_empty() {
            continue;
        }
        let cluster_child_of_namespaced =
            o.namespace.is_empty() && o.owners.iter().any(|r| r["kind"] == "ConfigMap");
        if cluster_child_of_namespaced {
            continue;
        }
        let any_present = o.owners.iter().any(|r| resolves(&world, o, r).is_some());
        prop_assert!(
            any_present,
            "{}/{} ({uid}) survived with only absent owners {:?}",
            o.namespace,
            o.name,
            o.owners
        );
    }
    // Rule 3, liveness: a foreground owner with nothing left blocking it is gone.
    for (uid, o) in &world {
        let foreground = o.deleting && o.finalizers.iter().any(|f| f == "foregroundDeletion");
        if !foreground {
            continue;
        }
        let blocked = world.iter().any(|(other_uid, other)| {
            other_uid != uid
                && other
                    .owners
                    .iter()
                    .any(|r| r["uid"] == uid.as_str() && r["blockOwnerDeletion"] == true)
        });
        prop_assert!(
            blocked,
            "foreground owner {}/{} is stuck with nothing blocking it",
            o.namespace,
            o.name
        );
    }
    // Orphaning completed: an orphaned owner kept only by the collector's finalizer is gone.
    for (uid, o) in &world {
        if o.deleting && o.finalizers == ["orphan"] {
            prop_assert!(
                false,
                "orphaning of {}/{} ({uid}) never completed",
                o.namespace,
                o.name
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn gc_respects_owner_reference_semantics(case in case_strategy()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run_case(case))?;
    }
}
