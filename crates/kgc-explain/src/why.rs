//! `kgc why`: one verdict about one object, with its reasons, from the rules the collectors run.
//!
//! - kept: an owner exists; or a cluster-scoped object names a namespaced owner, which the
//!   collector can never resolve (kubernetes/kubernetes
//!   `pkg/controller/garbagecollector/garbagecollector.go`, `attemptToDeleteItem`); or it has no
//!   owner references;
//! - will be collected: no owner is solid (each absent by uid, invalid, or deleting its own
//!   dependents in the foreground), so `attemptToDeleteItem` deletes it;
//! - being deleted: each finalizer that holds it and who removes it (the collector for
//!   `foregroundDeletion` and `orphan`, `pkg/controller/volume/pvcprotection` and
//!   `pvprotection`, `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`,
//!   apiextensions' `finalizer/crd_finalizer.go`), with what it waits for;
//! - collected: the object is gone, and the collectors' history says when, by whom and why.
//!
//! Pure: the caller loads the graph and the few facts the graph cannot hold ([`Facts`]).

use std::collections::BTreeMap;

use kgc_meta::deletion::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
use kgc_runtime::decisions::Decision;
use serde::Serialize;
use serde_json::Value;

use crate::graph::{GroupKind, Node, OwnerState};
use crate::{Graph, exit};

/// `kubernetes.io/pvc-protection`: the claim is in use by a pod.
pub const FINALIZER_PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// `kubernetes.io/pv-protection`: the volume is bound to a claim.
pub const FINALIZER_PV_PROTECTION: &str = "kubernetes.io/pv-protection";
/// A namespace's `spec.finalizers` entry: its content is being deleted.
pub const FINALIZER_NAMESPACE: &str = "kubernetes";
/// A CustomResourceDefinition's: its custom resources are being deleted.
pub const FINALIZER_CRD: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What the graph cannot say about an object: read from the whole object and, for a claim,
/// from the pods of its namespace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// A namespace's `spec.finalizers`.
    pub namespace_finalizers: Vec<String>,
    /// A namespace's `status.conditions` whose type starts with `Namespace` and is `True`.
    pub namespace_conditions: Vec<Condition>,
    /// A PersistentVolume's `spec.claimRef`, as `namespace/name`.
    pub bound_claim: Option<String>,
    /// A CustomResourceDefinition's kind.
    pub defines: Option<GroupKind>,
    /// The pods whose `spec.volumes` name this claim (a PersistentVolumeClaim only).
    pub claim_users: Vec<String>,
}

impl Facts {
    /// The facts a whole object carries (its `spec` and `status`).
    pub fn of_object(kind: &str, object: &Value) -> Self {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let mut facts = Self::default();
        match kind {
            "Namespace" => {
                facts.namespace_finalizers = strings(&object["spec"]["finalizers"]);
                facts.namespace_conditions = object["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["status"] == "True")
                    .map(|c| Condition {
                        type_: c["type"].as_str().unwrap_or("").to_owned(),
                        reason: c["reason"].as_str().unwrap_or("").to_owned(),
                        message: c["message"].as_str().unwrap_or("").to_owned(),
                    })
                    .collect();
            }
            "PersistentVolume" if !s("/spec/claimRef/name").is_empty() => {
                facts.bound_claim = Some(format!(
                    "{}/{}",
                    s("/spec/claimRef/namespace"),
                    s("/spec/claimRef/name")
                ));
            }
            "CustomResourceDefinition" => {
                facts.defines = Some(GroupKind::new(s("/spec/group"), s("/spec/names/kind")));
            }
            _ => {}
        }
        facts
    }

    /// The names of the pods in `pods` (whole objects) that hold claim `claim`: scheduled,
    /// not finished, naming it in `spec.volumes` (kubernetes/kubernetes
    /// `pkg/controller/volume/pvcprotection/pvc_protection_controller.go`).
    pub fn pods_using_claim<'a>(
        pods: impl IntoIterator<Item = &'a Value>,
        claim: &str,
    ) -> Vec<String> {
        let mut users: Vec<String> = pods
            .into_iter()
            .filter(|p| {
                let scheduled = p["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty());
                let finished =
                    matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
                scheduled
                    && !finished
                    && p["spec"]["volumes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|v| v["persistentVolumeClaim"]["claimName"].as_str() == Some(claim))
            })
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
            .collect();
        users.sort();
        users
    }
}

/// A namespace condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub message: String,
}

/// The object an answer is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Its finalizers, when it has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

impl Object {
    fn of(n: &Node) -> Self {
        Self {
            api_version: n.api_version.clone(),
            kind: n.kind.clone(),
            namespace: n.namespace.clone(),
            name: n.name.clone(),
            uid: n.uid.clone(),
            finalizers: n.finalizers.clone(),
            deletion_timestamp: n.deletion_timestamp.clone(),
        }
    }
}

/// One owner reference and what the collector makes of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerCheck {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(flatten)]
    pub state: OwnerState,
    /// The owner is deleting its dependents in the foreground (it waits for this object).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleting_dependents: bool,
    /// How it was checked, in words.
    pub checked: String,
}

/// Why an object the collector leaves alone is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum KeptBecause {
    /// At least one owner exists.
    OwnerExists,
    /// A cluster-scoped object naming a namespaced owner: never collectable.
    NamespacedOwnerOfClusterScoped,
    /// An owner's kind is not served: the collector retries and never collects.
    OwnerKindNotServed,
    /// No owner references: only an explicit DELETE removes it.
    NoOwnerReferences,
}

/// One finalizer holding a deletion, who removes it and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    pub finalizer: String,
    /// Who removes it, and when, in words.
    pub removed_by: String,
    /// The objects it waits for (blocking dependents, pods using a claim, remaining content).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<Waiting>,
}

/// An object a finalizer waits for, and what holds that object in turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Its own finalizers and who removes each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<Hold>,
}

impl Waiting {
    fn of(n: &Node) -> Self {
        Self {
            api_version: n.api_version.clone(),
            kind: n.kind.clone(),
            namespace: n.namespace.clone(),
            name: n.name.clone(),
            uid: n.uid.clone(),
            deletion_timestamp: n.deletion_timestamp.clone(),
            held_by: n
                .finalizers
                .iter()
                .map(|f| Hold {
                    finalizer: f.clone(),
                    removed_by: remover(f).to_owned(),
                    waiting_for: Vec::new(),
                })
                .collect(),
        }
    }
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "camelCase")]
pub enum Verdict {
    /// The collector leaves it alone.
    #[serde(rename_all = "camelCase")]
    Kept {
        because: KeptBecause,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        owners: Vec<OwnerCheck>,
    },
    /// No owner is solid: the collector deletes it (soon, if it has not yet).
    #[serde(rename_all = "camelCase")]
    WillBeCollected { owners: Vec<OwnerCheck> },
    /// Whether it is kept depends on owners whose kinds could not be listed.
    #[serde(rename_all = "camelCase")]
    Undetermined { owners: Vec<OwnerCheck> },
    /// It has a deletionTimestamp; `holds` are what keeps it (none: it goes once its grace
    /// period ends).
    #[serde(rename_all = "camelCase")]
    BeingDeleted {
        /// The deletionTimestamp: when the deletion was asked for, or, for a graceful deletion
        /// (a pod's), when its grace period ends.
        since: String,
        /// How long ago `since` was (0 while a grace period runs).
        for_seconds: i64,
        /// A graceful deletion: the seconds left of its grace period, after which the kubelet's
        /// confirmation (or the collector) completes it.
        #[serde(skip_serializing_if = "Option::is_none")]
        grace_ends_in_seconds: Option<i64>,
        holds: Vec<Hold>,
        /// A namespace's `Namespace*` conditions that are true.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        conditions: Vec<Condition>,
    },
    /// It is gone; the collectors' history says why.
    #[serde(rename_all = "camelCase")]
    Collected { decisions: Vec<Decision> },
}

/// `kgc why`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub object: Object,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Parts of the answer that could not be known (kinds that could not be listed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

impl Answer {
    /// The exit code: [`exit::BLOCKED`] while a finalizer holds a deletion, [`exit::INCOMPLETE`]
    /// when parts are unknown, else [`exit::OK`] (kept, will be collected, collected: the
    /// question is answered and nothing is stuck).
    pub fn exit_code(&self) -> i32 {
        match &self.verdict {
            Verdict::BeingDeleted { holds, .. } if !holds.is_empty() => exit::BLOCKED,
            _ if !self.unknown.is_empty() => exit::INCOMPLETE,
            Verdict::Undetermined { .. } => exit::INCOMPLETE,
            _ => exit::OK,
        }
    }
}

/// Who removes finalizer `f`, in words.
pub fn remover(f: &str) -> &'static str {
    match f {
        FINALIZER_FOREGROUND => {
            "the garbage collector, once no dependent with blockOwnerDeletion=true remains"
        }
        FINALIZER_ORPHAN => {
            "the garbage collector, after removing this owner from its dependents' owner references"
        }
        FINALIZER_PVC_PROTECTION => "the PVC protection controller, once no pod uses the claim",
        FINALIZER_PV_PROTECTION => {
            "the PV protection controller, once the volume is bound to no claim"
        }
        FINALIZER_NAMESPACE => {
            "the namespace controller, once every object in the namespace is gone"
        }
        FINALIZER_CRD => {
            "the apiextensions server, once every custom resource of the definition is gone"
        }
        _ => "the controller that added it (it is not a Kubernetes finalizer)",
    }
}

/// The verdict about `node` (which `graph` holds), at `now`.
pub fn explain(graph: &Graph, node: &Node, facts: &Facts, now: jiff::Timestamp) -> Answer {
    let verdict = match &node.deletion_timestamp {
        Some(since) => being_deleted(graph, node, facts, since, now),
        None => judged(graph, node),
    };
    // Kinds that could not be listed matter where the verdict rests on what the graph lacks:
    // owners of those kinds, or dependents and content (of any kind) a finalizer waits for.
    let depends_on_listing = match &verdict {
        Verdict::Undetermined { .. } => true,
        Verdict::BeingDeleted { holds, .. } => holds.iter().any(|h| {
            [
                FINALIZER_FOREGROUND,
                FINALIZER_ORPHAN,
                FINALIZER_NAMESPACE,
                FINALIZER_CRD,
            ]
            .contains(&h.finalizer.as_str())
        }),
        _ => false,
    };
    let unknown = graph
        .unlisted()
        .iter()
        .filter(|_| depends_on_listing)
        .map(|u| {
            let scope = u
                .namespace
                .as_deref()
                .map(|n| format!(" in namespace {n}"))
                .unwrap_or_default();
            format!("{}{scope} could not be listed ({})", u.group_kind, u.reason)
        })
        .collect();
    Answer {
        object: Object::of(node),
        verdict,
        unknown,
    }
}

/// The answer about an object that is gone: what the collectors recorded about it.
pub fn collected(object: Object, decisions: Vec<Decision>) -> Answer {
    Answer {
        object,
        verdict: Verdict::Collected { decisions },
        unknown: Vec::new(),
    }
}

/// Upstream `attemptToDeleteItem`'s judgement of an object not being deleted.
fn judged(graph: &Graph, node: &Node) -> Verdict {
    if node.owner_references.is_empty() {
        return Verdict::Kept {
            because: KeptBecause::NoOwnerReferences,
            owners: Vec::new(),
        };
    }
    let owners: Vec<OwnerCheck> = graph
        .owners(node)
        .into_iter()
        .map(|o| {
            let r = o.reference;
            let deleting_dependents = o.state == OwnerState::Present
                && o.node.is_some_and(|n| {
                    n.is_deleting() && n.finalizers.iter().any(|f| f == FINALIZER_FOREGROUND)
                });
            let checked = match (&o.state, o.node) {
                (OwnerState::Present, Some(n)) if deleting_dependents => format!(
                    "{} {} exists with uid {} and is deleting its dependents in the foreground",
                    r.kind, n.name, r.uid
                ),
                (OwnerState::Present, _) => format!("an object with uid {} exists", r.uid),
                (OwnerState::Absent, _) => match graph.find(
                    &GroupKind::of(&r.api_version, &r.kind),
                    &owner_namespace(graph, node, r),
                    &r.name,
                ) {
                    Some(other) => format!(
                        "no object has uid {}; {} {} has another uid ({}), so it is not the owner",
                        r.uid, r.kind, r.name, other.uid
                    ),
                    None => format!("no object has uid {}", r.uid),
                },
                (OwnerState::OtherNamespace { namespace }, _) => format!(
                    "uid {} belongs to an object in namespace {namespace}; owner references cannot \
                     cross namespaces, so the owner counts as absent",
                    r.uid
                ),
                (OwnerState::NamespacedOwnerOfClusterScoped, _) => format!(
                    "{} is namespaced and this object is cluster-scoped: the reference can never \
                     be resolved",
                    r.kind
                ),
                (OwnerState::Unknown { reason }, _) => {
                    format!("{} could not be listed: {reason}", r.kind)
                }
                (OwnerState::UnservedKind, _) => format!(
                    "the server does not serve {}/{}; the collector retries, never collects",
                    r.api_version, r.kind
                ),
            };
            OwnerCheck {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
                state: o.state,
                deleting_dependents,
                checked,
            }
        })
        .collect();
    let any = |f: &dyn Fn(&OwnerCheck) -> bool| owners.iter().any(f);
    if any(&|o| o.state == OwnerState::NamespacedOwnerOfClusterScoped) {
        return Verdict::Kept {
            because: KeptBecause::NamespacedOwnerOfClusterScoped,
            owners,
        };
    }
    if any(&|o| o.state == OwnerState::Present && !o.deleting_dependents) {
        return Verdict::Kept {
            because: KeptBecause::OwnerExists,
            owners,
        };
    }
    if any(&|o| matches!(o.state, OwnerState::Unknown { .. })) {
        return Verdict::Undetermined { owners };
    }
    if any(&|o| o.state == OwnerState::UnservedKind) {
        return Verdict::Kept {
            because: KeptBecause::OwnerKindNotServed,
            owners,
        };
    }
    Verdict::WillBeCollected { owners }
}

/// Where the collector looks for the owner `r` of `node`.
fn owner_namespace(graph: &Graph, node: &Node, r: &kgc_meta::OwnerReference) -> String {
    match graph.is_namespaced(&GroupKind::of(&r.api_version, &r.kind)) {
        Some(true) => node.namespace.clone(),
        _ => String::new(),
    }
}

fn being_deleted(
    graph: &Graph,
    node: &Node,
    facts: &Facts,
    since: &str,
    now: jiff::Timestamp,
) -> Verdict {
    // A graceful deletion's timestamp is when its grace period ends: in the future.
    let ago = since
        .parse::<jiff::Timestamp>()
        .map(|t| now.duration_since(t).as_secs())
        .unwrap_or(0);
    let for_seconds = ago.max(0);
    let grace_ends_in_seconds = (ago < 0).then_some(-ago);
    let namespace_content = || -> Vec<Waiting> {
        let mut content: Vec<Waiting> = graph
            .nodes()
            .filter(|n| n.namespace == node.name)
            .map(Waiting::of)
            .collect();
        content.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
        content
    };
    let mut finalizers: Vec<&String> = node.finalizers.iter().collect();
    if node.kind == "Namespace" && node.api_version == "v1" {
        finalizers.extend(&facts.namespace_finalizers);
    }
    let holds = finalizers
        .into_iter()
        .map(|f| {
            let waiting_for = match f.as_str() {
                FINALIZER_FOREGROUND => graph
                    .dependents(&node.uid)
                    .into_iter()
                    .filter(|d| {
                        d.owner_references
                            .iter()
                            .any(|r| r.uid == node.uid && r.block_owner_deletion == Some(true))
                    })
                    .map(Waiting::of)
                    .collect(),
                FINALIZER_ORPHAN => graph
                    .dependents(&node.uid)
                    .into_iter()
                    .map(Waiting::of)
                    .collect(),
                FINALIZER_PVC_PROTECTION => facts
                    .claim_users
                    .iter()
                    .map(|p| named("Pod", &node.namespace, p))
                    .collect(),
                FINALIZER_PV_PROTECTION => facts
                    .bound_claim
                    .iter()
                    .map(|c| {
                        let (ns, name) = c.split_once('/').unwrap_or(("", c));
                        named("PersistentVolumeClaim", ns, name)
                    })
                    .collect(),
                FINALIZER_NAMESPACE if node.kind == "Namespace" => namespace_content(),
                FINALIZER_CRD => facts
                    .defines
                    .as_ref()
                    .map(|gk| {
                        let mut left: Vec<Waiting> = graph
                            .nodes()
                            .filter(|n| &n.group_kind() == gk)
                            .map(Waiting::of)
                            .collect();
                        left.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
                        left
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            Hold {
                finalizer: f.clone(),
                removed_by: remover(f).to_owned(),
                waiting_for,
            }
        })
        .collect();
    Verdict::BeingDeleted {
        since: since.to_owned(),
        for_seconds,
        grace_ends_in_seconds,
        holds,
        conditions: facts
            .namespace_conditions
            .iter()
            .filter(|c| c.type_.starts_with("Namespace"))
            .cloned()
            .collect(),
    }
}

/// An object known by name only (not in the graph).
fn named(kind: &str, namespace: &str, name: &str) -> Waiting {
    Waiting {
        api_version: String::new(),
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: String::new(),
        deletion_timestamp: None,
        held_by: Vec::new(),
    }
}

/// The answer in words, as `kgc why` prints it.
pub fn render(a: &Answer) -> String {
    let o = &a.object;
    let mut out = String::new();
    let what = if o.namespace.is_empty() {
        format!("{} {}", o.kind, o.name)
    } else {
        format!("{} {}/{}", o.kind, o.namespace, o.name)
    };
    let owner_lines = |out: &mut String, owners: &[OwnerCheck]| {
        for c in owners {
            out.push_str(&format!("  owner {} {}: {}\n", c.kind, c.name, c.checked));
        }
    };
    match &a.verdict {
        Verdict::Kept { because, owners } => {
            let why = match because {
                KeptBecause::OwnerExists => "an owner exists",
                KeptBecause::NamespacedOwnerOfClusterScoped => {
                    "it is cluster-scoped and names a namespaced owner, which the garbage \
                     collector can never resolve: it is never collected"
                }
                KeptBecause::OwnerKindNotServed => "an owner's kind is not served",
                KeptBecause::NoOwnerReferences => {
                    "it has no owner references; only an explicit delete removes it"
                }
            };
            out.push_str(&format!("{what} is kept: {why}.\n"));
            owner_lines(&mut out, owners);
        }
        Verdict::WillBeCollected { owners } => {
            out.push_str(&format!(
                "{what} will be collected: no owner remains, so the garbage collector deletes it.\n"
            ));
            owner_lines(&mut out, owners);
        }
        Verdict::Undetermined { owners } => {
            out.push_str(&format!(
                "{what}: whether it is kept is unknown (an owner's kind could not be listed).\n"
            ));
            owner_lines(&mut out, owners);
        }
        Verdict::BeingDeleted {
            since,
            for_seconds,
            grace_ends_in_seconds,
            holds,
            conditions,
        } => {
            // As `kgc tree` shows a graceful deletion: when it completes (`in 26s`).
            let when = match grace_ends_in_seconds {
                Some(left) => format!(
                    "in its grace period, which ends at {since} (in {})",
                    age(*left)
                ),
                None => format!("since {since} ({})", age(*for_seconds)),
            };
            if holds.is_empty() {
                out.push_str(&format!(
                    "{what} is being deleted {when}; no finalizer holds it.\n"
                ));
            } else {
                out.push_str(&format!(
                    "{what} is being deleted {when} and is held by {} finalizer{}:\n",
                    holds.len(),
                    if holds.len() == 1 { "" } else { "s" }
                ));
            }
            for h in holds {
                out.push_str(&format!("  {}: removed by {}\n", h.finalizer, h.removed_by));
                render_waiting(&mut out, &h.waiting_for);
            }
            for c in conditions {
                out.push_str(&format!("  condition {}: {}\n", c.type_, c.message));
            }
        }
        Verdict::Collected { decisions } => {
            out.push_str(&format!("{what} is gone: it was collected.\n"));
            for d in decisions {
                let policy = d
                    .propagation_policy
                    .as_deref()
                    .map(|p| format!(", propagationPolicy {p}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "  {} by {} ({:?}{policy}, uid {}): {}\n",
                    d.time, d.collector, d.action, d.uid, d.reason
                ));
            }
        }
    }
    for u in &a.unknown {
        out.push_str(&format!("  unknown: {u}\n"));
    }
    out
}

/// The objects a hold waits for, grouped by kind.
fn render_waiting(out: &mut String, waiting: &[Waiting]) {
    let mut by_kind: BTreeMap<&str, Vec<&Waiting>> = BTreeMap::new();
    for w in waiting {
        by_kind.entry(&w.kind).or_default().push(w);
    }
    for (kind, objects) in by_kind {
        out.push_str(&format!("    waiting for {} {kind}:\n", objects.len()));
        for w in objects {
            let name = if w.namespace.is_empty() {
                w.name.clone()
            } else {
                format!("{}/{}", w.namespace, w.name)
            };
            let deleting = if w.deletion_timestamp.is_some() {
                " (deleting)"
            } else {
                ""
            };
            out.push_str(&format!("      {kind} {name}{deleting}\n"));
            for h in &w.held_by {
                out.push_str(&format!(
                    "        held by {}, removed by {}\n",
                    h.finalizer, h.removed_by
                ));
            }
        }
    }
}

/// An age as kubectl and `kgc tree` print one (`45s`, `3m10s`, `2h`, `5d`).
fn age(seconds: i64) -> String {
    kgc_meta::duration::human_duration(jiff::SignedDuration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{graph, object};
    use serde_json::json;

    const NOW: &str = "2026-01-01T00:10:00Z";

    fn now() -> jiff::Timestamp {
        NOW.parse().unwrap()
    }

    fn deleting(mut o: Value, finalizers: &[&str]) -> Value {
        o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        o["metadata"]["finalizers"] = json!(finalizers);
        o
    }

    fn answer(objects: &[Value], uid: &str, facts: &Facts) -> Answer {
        let g = graph(objects);
        explain(&g, g.node(uid).unwrap(), facts, now())
    }

    #[test]
    fn kept_while_an_owner_exists_collected_once_none_does() {
        let rs = object("apps/v1", "ReplicaSet", "a", "rs", &[]);
        let pod = object("v1", "Pod", "a", "p", &[("ReplicaSet", "rs", "uid-rs")]);
        let a = answer(&[rs, pod.clone()], "uid-p", &Facts::default());
        assert!(matches!(
            a.verdict,
            Verdict::Kept {
                because: KeptBecause::OwnerExists,
                ..
            }
        ));
        assert_eq!(a.exit_code(), exit::OK);
        let a = answer(&[pod], "uid-p", &Facts::default());
        let Verdict::WillBeCollected { owners } = &a.verdict else {
            panic!("{a:?}")
        };
        assert_eq!(owners[0].checked, "no object has uid uid-rs");
    }

    #[test]
    fn an_owner_deleting_its_dependents_in_the_foreground_is_no_solid_owner() {
        let rs = deleting(
            object("apps/v1", "ReplicaSet", "a", "rs", &[]),
            &["foregroundDeletion"],
        );
        let pod = object("v1", "Pod", "a", "p", &[("ReplicaSet", "rs", "uid-rs")]);
        let a = answer(&[rs, pod], "uid-p", &Facts::default());
        let Verdict::WillBeCollected { owners } = &a.verdict else {
            panic!("{a:?}")
        };
        assert!(owners[0].deleting_dependents);
    }

    #[test]
    fn a_cluster_scoped_object_with_a_namespaced_owner_is_kept() {
        let pv = object("v1", "PersistentVolume", "", "pv", &[("Pod", "p", "uid-p")]);
        let a = answer(&[pv], "uid-pv", &Facts::default());
        assert!(matches!(
            a.verdict,
            Verdict::Kept {
                because: KeptBecause::NamespacedOwnerOfClusterScoped,
                ..
            }
        ));
    }

    #[test]
    fn foreground_waits_for_blocking_dependents_only() {
        let rs = deleting(
            object("apps/v1", "ReplicaSet", "a", "rs", &[]),
            &["foregroundDeletion"],
        );
        let blocking = deleting(
            object("v1", "Pod", "a", "p", &[("ReplicaSet", "rs", "uid-rs")]),
            &["example.com/x"],
        );
        let mut loose = object("v1", "Pod", "a", "q", &[("ReplicaSet", "rs", "uid-rs")]);
        loose["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(false);
        let a = answer(&[rs, blocking, loose], "uid-rs", &Facts::default());
        assert_eq!(a.exit_code(), exit::BLOCKED);
        let Verdict::BeingDeleted {
            holds, for_seconds, ..
        } = &a.verdict
        else {
            panic!("{a:?}")
        };
        assert_eq!(*for_seconds, 600);
        assert_eq!(holds[0].waiting_for.len(), 1);
        assert_eq!(holds[0].waiting_for[0].name, "p");
        assert_eq!(
            holds[0].waiting_for[0].held_by[0].removed_by,
            remover("example.com/x")
        );
        let text = render(&a);
        assert!(
            text.contains("is being deleted since 2026-01-01T00:00:00Z (10m)"),
            "{text}"
        );
        assert!(
            text.contains(
                "held by example.com/x, removed by the controller that added it (it is not a \
                 Kubernetes finalizer)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_finalizer_kubernetes_does_not_know_is_said_in_a_sentence() {
        let cm = deleting(
            object("v1", "ConfigMap", "a", "cm", &[]),
            &["example.com/x"],
        );
        let text = render(&answer(&[cm], "uid-cm", &Facts::default()));
        assert!(
            text.contains(
                "\n  example.com/x: removed by the controller that added it (it is not a \
                 Kubernetes finalizer)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_pod_in_its_grace_period_says_when_its_deletion_completes() {
        let mut pod = object("v1", "Pod", "a", "p", &[]);
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:10:26Z");
        let a = answer(&[pod], "uid-p", &Facts::default());
        let Verdict::BeingDeleted {
            for_seconds,
            grace_ends_in_seconds,
            ..
        } = &a.verdict
        else {
            panic!("{a:?}")
        };
        assert_eq!((*for_seconds, *grace_ends_in_seconds), (0, Some(26)));
        assert_eq!(
            render(&a),
            "Pod a/p is being deleted in its grace period, which ends at 2026-01-01T00:10:26Z \
             (in 26s); no finalizer holds it.\n"
        );
        assert_eq!(serde_json::to_value(&a).unwrap()["graceEndsInSeconds"], 26);
    }

    #[test]
    fn a_terminating_namespace_waits_for_its_content() {
        let ns = deleting(object("v1", "Namespace", "", "a", &[]), &[]);
        let cm = deleting(
            object("v1", "ConfigMap", "a", "cm", &[]),
            &["example.com/x"],
        );
        let other = object("v1", "ConfigMap", "b", "elsewhere", &[]);
        let facts = Facts::of_object(
            "Namespace",
            &json!({"spec": {"finalizers": ["kubernetes"]}, "status": {"conditions": [
                {"type": "NamespaceFinalizersRemaining", "status": "True", "reason": "SomeFinalizersRemain", "message": "m"},
                {"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "r", "message": "ok"}]}}),
        );
        let a = answer(&[ns, cm, other], "uid-a", &facts);
        let Verdict::BeingDeleted {
            holds, conditions, ..
        } = &a.verdict
        else {
            panic!("{a:?}")
        };
        assert_eq!(holds[0].finalizer, "kubernetes");
        let names: Vec<&str> = holds[0]
            .waiting_for
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(names, ["cm"]);
        assert_eq!(conditions.len(), 1);
        assert_eq!(a.exit_code(), exit::BLOCKED);
    }

    #[test]
    fn claims_are_held_by_scheduled_running_pods_only() {
        let pod = |name: &str, node: &str, phase: &str| {
            json!({"metadata": {"name": name}, "spec": {"nodeName": node,
                "volumes": [{"persistentVolumeClaim": {"claimName": "data"}}]}, "status": {"phase": phase}})
        };
        let pods = [
            pod("b", "n", "Running"),
            pod("a", "n", "Pending"),
            pod("c", "", "Pending"),
            pod("d", "n", "Succeeded"),
        ];
        assert_eq!(Facts::pods_using_claim(&pods, "data"), ["a", "b"]);
        assert!(Facts::pods_using_claim(&pods, "other").is_empty());
    }

    #[test]
    fn a_gone_object_is_answered_from_the_history() {
        let object = Object {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "a".into(),
            name: "c".into(),
            uid: String::new(),
            finalizers: Vec::new(),
            deletion_timestamp: None,
        };
        let a = collected(object, Vec::new());
        assert_eq!(a.exit_code(), exit::OK);
        assert_eq!(serde_json::to_value(&a).unwrap()["verdict"], "collected");
    }
}
