//! The prune plan: which live objects of the set to delete, which to keep and why.
//!
//! qbec's five steps (splunk/qbec site/content/reference/garbage-collection.md): the scope comes
//! from the *whole* source plus the inventory; listed objects that controllers created,
//! Endpoints and EndpointSlices are dropped; the local set is subtracted (by canonical key, and
//! by uid for objects applied under another group); component and kind filters come last;
//! deletion runs in reverse apply order. On top of that every rule that keeps an object is
//! recorded with its reason, and the guards refuse the whole plan before any write.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use crate::Error;
use crate::desired::ObjectKey;
use crate::gvk::GroupKind;
use crate::listing::{Listed, Undetermined};
use crate::order;
use crate::ownership::{self, ANNOTATION_COMPONENT, Identity, Owner};

/// Namespaces that are never deleted (kapp's list; qbec protects the first two).
pub const PROTECTED_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Component and kind filters: they narrow the *candidates*, never the scope.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub components: Vec<String>,
    /// Kinds as `Kind` or `Kind.group`, case-insensitive.
    pub kinds: Vec<String>,
}

impl Filters {
    fn admits(&self, gk: &GroupKind, component: Option<&str>) -> bool {
        let component_ok = self.components.is_empty()
            || component.is_some_and(|c| self.components.iter().any(|f| f == c));
        let kind_ok = self.kinds.is_empty()
            || self.kinds.iter().any(|f| {
                f.eq_ignore_ascii_case(&gk.kind) || f.eq_ignore_ascii_case(&gk.to_string())
            });
        component_ok && kind_ok
    }
}

/// Limits that refuse a plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct Guards {
    /// Refuse to delete more than this many objects.
    pub max_deletes: Option<usize>,
    /// Allow an empty source to delete the whole set (`kgc delete`, `--allow-empty`).
    pub allow_empty: bool,
}

/// What the plan is computed from.
pub struct Input<'a> {
    pub identity: &'a Identity,
    pub set_id: &'a str,
    /// The namespace of the set's parent: kept while the source has anything (deleting it
    /// would delete the inventory).
    pub parent_namespace: &'a str,
    /// Every object of the (unfiltered) source.
    pub local: &'a BTreeSet<ObjectKey>,
    pub listed: &'a [Listed],
    pub undetermined: &'a [Undetermined],
    /// Uids of objects applied in this run.
    pub applied_uids: &'a HashSet<String>,
    /// Uids of objects adopted from another tool (`--adopt`): members, whatever their marks.
    pub adopted_uids: &'a HashSet<String>,
    pub filters: &'a Filters,
    pub guards: Guards,
}

/// One object to delete.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Candidate {
    pub key: ObjectKey,
    /// The version and plural to delete through.
    pub version: String,
    pub plural: String,
    pub namespaced: bool,
    pub uid: String,
    pub resource_version: String,
    pub component: Option<String>,
    pub rank: u8,
}

/// A set member (or look-alike) that is not deleted, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Kept {
    pub key: ObjectKey,
    pub reason: String,
}

/// The outcome: deletions in order, what was kept, what could not be determined.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrunePlan {
    pub deletes: Vec<Candidate>,
    pub kept: Vec<Kept>,
    pub undetermined: Vec<Undetermined>,
}

/// Kinds whose objects are always made by controllers from other objects.
fn never_listed(gk: &GroupKind) -> bool {
    matches!(
        (gk.group.as_str(), gk.kind.as_str()),
        ("", "Endpoints") | ("discovery.k8s.io", "EndpointSlice")
    )
}

use crate::str_at;

/// Computes the plan. Guard violations are errors: nothing of the plan may run.
pub fn plan(input: &Input<'_>) -> Result<PrunePlan, Error> {
    let mut seen_uids = HashSet::new();
    let mut mine = Vec::new();
    let mut kept = Vec::new();
    // Namespaces holding objects the set does not own (other sets', unowned, copies).
    let mut occupied: BTreeMap<String, String> = BTreeMap::new();
    let local_namespaces: BTreeSet<&str> = input
        .local
        .iter()
        .map(|k| k.namespace.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let local_gks: BTreeSet<&GroupKind> = input.local.iter().map(|k| &k.gk).collect();

    for listed in input.listed {
        let r = &listed.resource;
        if never_listed(&r.gk) {
            continue;
        }
        for live in &listed.objects {
            let uid = str_at(live, "/metadata/uid");
            if !uid.is_empty() && !seen_uids.insert(uid.to_owned()) {
                continue;
            }
            let key = ObjectKey {
                gk: r.gk.clone(),
                namespace: str_at(live, "/metadata/namespace").to_owned(),
                name: str_at(live, "/metadata/name").to_owned(),
            };
            if live
                .pointer("/metadata/labels")
                .and_then(|l| l.get(ownership::LABEL_APPLYSET_ID))
                .and_then(Value::as_str)
                == Some(input.set_id)
            {
                continue; // the set's own parent
            }
            let owner = if input.adopted_uids.contains(uid) {
                Owner::Ours
            } else {
                ownership::owner(live, &r.gk, input.identity, input.set_id)
            };
            match owner {
                Owner::Ours => {}
                other => {
                    if !key.namespace.is_empty() && !input.local.contains(&key) {
                        let who = match &other {
                            Owner::Other(o) => o.clone(),
                            _ => "no set".to_owned(),
                        };
                        occupied
                            .entry(key.namespace.clone())
                            .or_insert(format!("{key} ({who})"));
                    }
                    if other == Owner::Copy {
                        kept.push(Kept {
                            key,
                            reason: "carries the set's labels but kgc.io/owned-by names another object (a copy)".into(),
                        });
                    }
                    continue;
                }
            }
            if input.local.contains(&key) {
                continue;
            }
            let keep = |reason: &str| Kept {
                key: key.clone(),
                reason: reason.to_owned(),
            };
            if ownership::controller_owned(live) {
                kept.push(keep("owned by a controller"));
                continue;
            }
            if input.applied_uids.contains(uid) {
                kept.push(keep("applied in this run under another group or version"));
                continue;
            }
            mine.push((key, r, live));
        }
    }

    let mut deletes = Vec::new();
    for (key, r, live) in mine {
        let keep = |reason: String| Kept {
            key: key.clone(),
            reason,
        };
        if live.pointer("/metadata/deletionTimestamp").is_some() {
            kept.push(keep("already being deleted".into()));
            continue;
        }
        if ownership::prune_disabled(live) {
            kept.push(keep("annotated kgc.io/prune: disabled".into()));
            continue;
        }
        if key.gk.is_namespace() {
            if PROTECTED_NAMESPACES.contains(&key.name.as_str()) {
                kept.push(keep("a protected namespace".into()));
                continue;
            }
            if key.name == input.parent_namespace && !input.local.is_empty() {
                kept.push(keep("holds the set's parent (its inventory)".into()));
                continue;
            }
            if local_namespaces.contains(key.name.as_str()) {
                kept.push(keep("still holds objects from the source".into()));
                continue;
            }
            if let Some(other) = occupied.get(&key.name) {
                kept.push(keep(format!("holds objects of others, such as {other}")));
                continue;
            }
            if let Some(u) = input
                .undetermined
                .iter()
                .find(|u| u.namespace.as_deref().is_none_or(|n| n == key.name))
            {
                kept.push(keep(format!(
                    "its {} objects could not be listed ({})",
                    u.gk, u.reason
                )));
                continue;
            }
        }
        if key.gk.is_crd() {
            let defined = GroupKind::new(
                str_at(live, "/spec/group"),
                str_at(live, "/spec/names/kind"),
            );
            if local_gks.contains(&defined) {
                kept.push(keep(format!("the source still has {defined} objects")));
                continue;
            }
        }
        let component = live
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_COMPONENT))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if !input.filters.admits(&key.gk, component.as_deref()) {
            continue;
        }
        deletes.push(Candidate {
            rank: order::rank(&key.gk, r.namespaced),
            version: r.version.clone(),
            plural: r.plural.clone(),
            namespaced: r.namespaced,
            uid: str_at(live, "/metadata/uid").to_owned(),
            resource_version: str_at(live, "/metadata/resourceVersion").to_owned(),
            component,
            key,
        });
    }
    deletes.sort_by(|a, b| b.rank.cmp(&a.rank).then_with(|| a.key.cmp(&b.key)));

    if input.local.is_empty() && !deletes.is_empty() && !input.guards.allow_empty {
        return Err(Error::Guard(format!(
            "the source is empty, which would delete all {} objects of the set; pass --allow-empty if that is intended (or use kgc delete)",
            deletes.len()
        )));
    }
    if let Some(max) = input.guards.max_deletes
        && deletes.len() > max
    {
        return Err(Error::Guard(format!(
            "the plan deletes {} objects, more than --max-deletes {max}: {}",
            deletes.len(),
            deletes
                .iter()
                .take(10)
                .map(|c| c.key.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(PrunePlan {
        deletes,
        kept,
        undetermined: input.undetermined.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listing::Resource;
    use serde_json::json;

    const SET: &str = "set-1";

    fn id() -> Identity {
        Identity::new("shop", "prod", None).unwrap()
    }

    fn res(group: &str, kind: &str, namespaced: bool) -> Resource {
        Resource {
            gk: GroupKind::new(group, kind),
            version: "v1".into(),
            plural: format!("{}s", kind.to_lowercase()),
            namespaced,
        }
    }

    fn key(group: &str, kind: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey {
            gk: GroupKind::new(group, kind),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    /// A live member of the set (stamped as kgc would).
    fn member(r: &Resource, ns: &str, name: &str, uid: &str) -> Value {
        let mut obj = json!({"metadata": {"name": name, "uid": uid, "resourceVersion": "7"}});
        if !ns.is_empty() {
            obj["metadata"]["namespace"] = json!(ns);
        }
        ownership::stamp(&mut obj, &id(), SET, &r.gk, ns, "web").unwrap();
        obj
    }

    struct Case {
        local: BTreeSet<ObjectKey>,
        listed: Vec<Listed>,
        undetermined: Vec<Undetermined>,
        applied: HashSet<String>,
        adopted: HashSet<String>,
        filters: Filters,
        guards: Guards,
    }

    impl Case {
        fn new(listed: Vec<(Resource, Vec<Value>)>) -> Self {
            Case {
                local: BTreeSet::new(),
                listed: listed
                    .into_iter()
                    .map(|(resource, objects)| Listed { resource, objects })
                    .collect(),
                undetermined: Vec::new(),
                applied: HashSet::new(),
                adopted: HashSet::new(),
                filters: Filters::default(),
                guards: Guards {
                    allow_empty: true,
                    ..Guards::default()
                },
            }
        }

        fn run(&self) -> Result<PrunePlan, Error> {
            plan(&Input {
                identity: &id(),
                set_id: SET,
                parent_namespace: "prod",
                local: &self.local,
                listed: &self.listed,
                undetermined: &self.undetermined,
                applied_uids: &self.applied,
                adopted_uids: &self.adopted,
                filters: &self.filters,
                guards: self.guards,
            })
        }

        fn deleted(&self) -> Vec<String> {
            self.run()
                .unwrap()
                .deletes
                .into_iter()
                .map(|c| c.key.to_string())
                .collect()
        }
    }

    #[test]
    fn removed_objects_are_deleted_in_reverse_apply_order() {
        let cm = res("", "ConfigMap", true);
        let dep = res("apps", "Deployment", true);
        let ns = res("", "Namespace", false);
        let mut c = Case::new(vec![
            (ns.clone(), vec![member(&ns, "", "gone-ns", "u0")]),
            (
                cm.clone(),
                vec![
                    member(&cm, "prod", "keep", "u1"),
                    member(&cm, "prod", "old", "u2"),
                ],
            ),
            (dep.clone(), vec![member(&dep, "prod", "web", "u3")]),
        ]);
        c.local.insert(key("", "ConfigMap", "prod", "keep"));
        assert_eq!(
            c.deleted(),
            [
                "Deployment.apps prod/web",
                "ConfigMap prod/old",
                "Namespace gone-ns"
            ]
        );
        let p = c.run().unwrap();
        assert_eq!(p.deletes[1].uid, "u2");
        assert_eq!(p.deletes[1].resource_version, "7");
    }

    #[test]
    fn copies_controller_children_endpoints_and_other_sets_are_never_candidates() {
        let cm = res("", "ConfigMap", true);
        let ep = res("", "Endpoints", true);
        let mut copy = member(&cm, "prod", "orig", "u1");
        copy["metadata"]["name"] = json!("copy");
        copy["metadata"]["uid"] = json!("u2");
        let mut child = member(&cm, "prod", "child", "u3");
        child["metadata"]["ownerReferences"] = json!([{"controller": true, "uid": "x"}]);
        let mut other = member(&cm, "prod", "theirs", "u4");
        other["metadata"]["labels"][ownership::LABEL_PART_OF] = json!("set-2");
        let c = Case::new(vec![
            (cm.clone(), vec![copy, child, other]),
            (ep.clone(), vec![member(&ep, "prod", "svc", "u5")]),
        ]);
        assert!(c.deleted().is_empty());
        let kept: Vec<_> = c
            .run()
            .unwrap()
            .kept
            .into_iter()
            .map(|k| k.key.name)
            .collect();
        assert_eq!(kept, ["copy", "child"]);
    }

    #[test]
    fn adopted_objects_are_members_and_the_rest_of_their_namespace_is_not() {
        let cm = res("", "ConfigMap", true);
        let foreign = |name: &str, uid: &str| json!({"metadata": {"name": name, "namespace": "prod", "uid": uid, "labels": {"qbec.io/application": "shop"}}});
        let mut c = Case::new(vec![(
            cm.clone(),
            vec![
                foreign("kept", "u1"),
                foreign("old", "u2"),
                foreign("theirs", "u3"),
            ],
        )]);
        c.local.insert(key("", "ConfigMap", "prod", "kept"));
        c.adopted = ["u1".to_owned(), "u2".to_owned()].into();
        assert_eq!(c.deleted(), ["ConfigMap prod/old"]);
    }

    #[test]
    fn an_object_applied_under_another_group_is_kept_by_uid() {
        let ing = res("networking.k8s.io", "Ingress", true);
        let mut c = Case::new(vec![(ing.clone(), vec![member(&ing, "prod", "web", "u1")])]);
        c.applied.insert("u1".into());
        assert!(c.deleted().is_empty());
        // The same object listed twice (two versions) is considered once.
        let mut c = Case::new(vec![
            (ing.clone(), vec![member(&ing, "prod", "web", "u1")]),
            (ing.clone(), vec![member(&ing, "prod", "web", "u1")]),
        ]);
        c.local.insert(key("", "ConfigMap", "prod", "x"));
        assert_eq!(c.deleted().len(), 1);
    }

    #[test]
    fn protected_and_occupied_namespaces_are_kept() {
        let ns = res("", "Namespace", false);
        let cm = res("", "ConfigMap", true);
        let mut theirs = member(&cm, "shared", "x", "u9");
        theirs["metadata"]["labels"][ownership::LABEL_PART_OF] = json!("set-2");
        let mut disabled = member(&ns, "", "keepme", "u5");
        disabled["metadata"]["annotations"][ownership::ANNOTATION_PRUNE] = json!("disabled");
        let mut c = Case::new(vec![
            (
                ns.clone(),
                vec![
                    member(&ns, "", "default", "u1"),
                    member(&ns, "", "kube-system", "u2"),
                    member(&ns, "", "in-use", "u3"),
                    member(&ns, "", "shared", "u4"),
                    disabled,
                    member(&ns, "", "unknown", "u6"),
                    member(&ns, "", "free", "u7"),
                    member(&ns, "", "prod", "u8"),
                ],
            ),
            (cm, vec![theirs]),
        ]);
        c.local.insert(key("", "ConfigMap", "in-use", "a"));
        c.undetermined.push(Undetermined {
            gk: GroupKind::new("", "Secret"),
            namespace: Some("unknown".into()),
            reason: "forbidden".into(),
        });
        assert_eq!(c.deleted(), ["Namespace free"]);
        let reasons: Vec<_> = c
            .run()
            .unwrap()
            .kept
            .into_iter()
            .map(|k| k.reason)
            .collect();
        assert_eq!(reasons.len(), 7, "{reasons:?}");
        assert!(reasons[6].contains("parent"), "{reasons:?}");
        assert!(
            reasons[3].contains("set-2") || reasons[3].contains("others"),
            "{reasons:?}"
        );
    }

    #[test]
    fn a_crd_whose_resources_are_in_the_source_is_kept() {
        let crd = res("apiextensions.k8s.io", "CustomResourceDefinition", false);
        let mut live = member(&crd, "", "widgets.example.com", "u1");
        live["spec"] = json!({"group": "example.com", "names": {"kind": "Widget"}});
        let mut c = Case::new(vec![(crd, vec![live])]);
        c.local.insert(key("example.com", "Widget", "prod", "w"));
        assert!(c.deleted().is_empty());
    }

    #[test]
    fn filters_narrow_candidates_only() {
        let cm = res("", "ConfigMap", true);
        let sec = res("", "Secret", true);
        let mut c = Case::new(vec![
            (cm.clone(), vec![member(&cm, "prod", "a", "u1")]),
            (sec.clone(), vec![member(&sec, "prod", "b", "u2")]),
        ]);
        c.filters.kinds = vec!["secret".into()];
        assert_eq!(c.deleted(), ["Secret prod/b"]);
        c.filters = Filters {
            components: vec!["other".into()],
            kinds: vec![],
        };
        assert!(c.deleted().is_empty());
    }

    #[test]
    fn guards_refuse_empty_renders_and_too_many_deletes() {
        let cm = res("", "ConfigMap", true);
        let mut c = Case::new(vec![(
            cm.clone(),
            vec![
                member(&cm, "prod", "a", "u1"),
                member(&cm, "prod", "b", "u2"),
            ],
        )]);
        c.guards.allow_empty = false;
        let err = c.run().unwrap_err().to_string();
        assert!(err.contains("--allow-empty"), "{err}");
        c.local.insert(key("", "ConfigMap", "prod", "z"));
        c.guards.max_deletes = Some(1);
        let err = c.run().unwrap_err().to_string();
        assert!(err.contains("--max-deletes 1"), "{err}");
        c.guards.max_deletes = Some(2);
        assert_eq!(c.deleted().len(), 2);
    }
}
