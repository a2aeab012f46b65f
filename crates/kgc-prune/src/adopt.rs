//! Adoption: moving a set in from another deploy tool (`--adopt qbec|flux|flux1|applyset|kapp`).
//!
//! An object another tool applied carries that tool's marks, not kgc's, so it is never one of
//! the set's members and never pruned: a user moving to kgc would keep the old tool's leftovers
//! for ever. With `--adopt`, a run also lists (per kind of the scope, plus the kinds the old
//! tool's own inventory names) the objects the old tool marked *for this app and environment*,
//! and treats them as members: those the source still has are applied with kgc's marks, the
//! rest are pruned. Each tool's marks, from its source:
//!
//! - qbec: labels `qbec.io/application`, `qbec.io/environment`, and `qbec.io/tag` only on
//!   tagged runs (splunk/qbec `internal/model/external-names.go`; its GC selects untagged
//!   objects with `!qbec.io/tag`).
//! - Flux (v2): labels `kustomize.toolkit.fluxcd.io/name` and `…/namespace`, the Kustomization's
//!   name and namespace (fluxcd/kustomize-controller).
//! - Flux v1: label `fluxcd.io/sync-gc-mark`, `sha256.` + base64url(sha256(sync set name +
//!   resource id)), where the sync set name is base64url(sha256(git URL + branch + paths)) and
//!   the id `namespace:kind/name` (`<cluster>` for cluster-scoped objects, kind lowercased)
//!   (fluxcd/flux `pkg/cluster/kubernetes/sync.go` `makeGCMark`, `pkg/daemon/sync.go`
//!   `makeGitConfigHash`, `pkg/resource/id.go`). The mark is recomputed per object, so a copied
//!   label, or another fluxd's object, never matches; a mark alone is never enough.
//! - kubectl ApplySet: members' `applyset.kubernetes.io/part-of=<id>`, the parent's
//!   `applyset.kubernetes.io/id` (kubectl `staging/src/k8s.io/kubectl/pkg/cmd/apply/applyset.go`),
//!   whose `contains-group-kinds` and `additional-namespaces` say where to look.
//! - kapp: members' `kapp.k14s.io/app=<value>`, the value recorded in the `spec` of the app's
//!   ConfigMap `<app>` (or `<app>.apps.k14s.io`), labelled `kapp.k14s.io/is-app`, whose `usedGKs`
//!   says which kinds (carvel-dev/kapp `pkg/kapp/app/app_meta.go`, `recorded_app.go`, `apps.go`).
//!
//! Never adopted: objects a controller made (a `controller: true` owner reference), members of
//! any other set (another `part-of`), the old tool's own bookkeeping (an ApplySet parent,
//! kapp's app and app-change ConfigMaps). The old tool's marks stay on adopted objects (kgc's
//! server-side apply leaves fields it does not own; the ApplySet `part-of` label, which kgc
//! sets too, becomes kgc's); once adopted, an object is found through kgc's own marks.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Error;
use crate::gvk::GroupKind;
use crate::ownership::{self, Identity, LABEL_APP, LABEL_APPLYSET_ID, LABEL_PART_OF};
use crate::str_at;

pub const QBEC_APPLICATION: &str = "qbec.io/application";
pub const QBEC_ENVIRONMENT: &str = "qbec.io/environment";
pub const QBEC_TAG: &str = "qbec.io/tag";
pub const FLUX_NAME: &str = "kustomize.toolkit.fluxcd.io/name";
pub const FLUX_NAMESPACE: &str = "kustomize.toolkit.fluxcd.io/namespace";
pub const FLUX1_GC_MARK: &str = "fluxcd.io/sync-gc-mark";
pub const KAPP_APP: &str = "kapp.k14s.io/app";
pub const KAPP_IS_APP: &str = "kapp.k14s.io/is-app";
pub const KAPP_IS_APP_CHANGE: &str = "kapp.k14s.io/is-app-change";
/// The suffix of a kapp app's ConfigMap once kapp migrated its name (kapp `apps.go`).
pub const KAPP_APP_SUFFIX: &str = ".apps.k14s.io";

/// The tool a set moves in from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Qbec,
    /// Flux v2 (kustomize-controller).
    Flux,
    /// Flux v1 (fluxd with `--sync-garbage-collection`).
    Flux1,
    Applyset,
    Kapp,
}

impl FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "qbec" => Tool::Qbec,
            "flux" => Tool::Flux,
            "flux1" => Tool::Flux1,
            "applyset" => Tool::Applyset,
            "kapp" => Tool::Kapp,
            _ => {
                return Err(format!(
                    "unknown tool {s:?} (one of qbec, flux, flux1, applyset, kapp)"
                ));
            }
        })
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tool::Qbec => "qbec",
            Tool::Flux => "flux",
            Tool::Flux1 => "flux1",
            Tool::Applyset => "applyset",
            Tool::Kapp => "kapp",
        })
    }
}

/// What to adopt, as asked (`--adopt TOOL`, `--adopt-name NAME`); kept in a reviewed plan so
/// that `kgc apply --plan` checks the same adoption.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Adopt {
    pub tool: Tool,
    /// The old tool's name of the set; its form depends on the tool (see [`Adopt::target`]).
    pub name: Option<String>,
}

/// The old tool's set, named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Qbec {
        app: String,
        env: String,
        tag: Option<String>,
    },
    Flux {
        namespace: String,
        name: String,
    },
    Flux1 {
        /// fluxd's sync set name.
        sync_set: String,
    },
    /// kubectl's `--applyset` reference: a resource (plural or lowercase kind) and group, in
    /// `namespace` when namespaced.
    ApplySet {
        resource: String,
        group: String,
        namespace: String,
        name: String,
    },
    Kapp {
        namespace: String,
        app: String,
    },
}

/// Whether `v` is a valid label value (so it can go into a selector as it is).
fn label_value(what: &str, v: &str) -> Result<String, Error> {
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(v.to_owned())
    } else {
        Err(Error::Invalid(format!(
            "--adopt-name: {what} {v:?} is not a valid label value"
        )))
    }
}

impl Adopt {
    /// The old tool's set for the set `identity` whose parent is in `namespace`:
    /// - qbec: `--adopt-name APP[/ENV]` [default: kgc's app and environment]; the tag is kgc's.
    /// - flux: `--adopt-name NAMESPACE/NAME` of the Kustomization (required).
    /// - flux1: `--adopt-name URL#BRANCH[#PATH,...]`, fluxd's `--git-url`, `--git-branch` and
    ///   `--git-path` (required).
    /// - applyset: `--adopt-name [RESOURCE[.GROUP]/]NAME` as kubectl's `--applyset` (default
    ///   resource `secrets`), in kgc's namespace (required).
    /// - kapp: `--adopt-name [NAMESPACE/]APP` [default: kgc's namespace and app].
    pub fn target(&self, identity: &Identity, namespace: &str) -> Result<Target, Error> {
        let name = self
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty());
        let required = |form: &str| {
            name.ok_or_else(|| {
                Error::Invalid(format!("--adopt {}: pass --adopt-name {form}", self.tool))
            })
        };
        Ok(match self.tool {
            Tool::Qbec => {
                let (app, env) = match name {
                    Some(n) => n.split_once('/').unwrap_or((n, identity.env.as_str())),
                    None => (identity.app.as_str(), identity.env.as_str()),
                };
                Target::Qbec {
                    app: label_value("the qbec app", app)?,
                    env: label_value("the qbec environment", env)?,
                    tag: identity.tag.clone(),
                }
            }
            Tool::Flux => {
                let n = required("NAMESPACE/NAME (the Kustomization)")?;
                let Some((ns, name)) = n.split_once('/') else {
                    return Err(Error::Invalid(format!(
                        "--adopt-name {n:?}: flux needs the Kustomization's NAMESPACE/NAME"
                    )));
                };
                Target::Flux {
                    namespace: label_value("the Kustomization namespace", ns)?,
                    name: label_value("the Kustomization name", name)?,
                }
            }
            Tool::Flux1 => {
                let n = required(
                    "URL#BRANCH[#PATH,...] (fluxd's --git-url, --git-branch, --git-path)",
                )?;
                let mut parts = n.splitn(3, '#');
                let url = parts.next().unwrap_or("");
                let branch = parts.next().unwrap_or("");
                let paths: Vec<&str> = parts
                    .next()
                    .map(|p| p.split(',').filter(|p| !p.is_empty()).collect())
                    .unwrap_or_default();
                if url.is_empty() || branch.is_empty() {
                    return Err(Error::Invalid(format!(
                        "--adopt-name {n:?}: flux1 needs URL#BRANCH[#PATH,...]"
                    )));
                }
                Target::Flux1 {
                    sync_set: flux1_sync_set(url, branch, &paths),
                }
            }
            Tool::Applyset => {
                let n = required("[RESOURCE[.GROUP]/]NAME (kubectl's --applyset)")?;
                let (resource, name) = n.split_once('/').unwrap_or(("secrets", n));
                let (resource, group) = resource.split_once('.').unwrap_or((resource, ""));
                if resource.is_empty() || name.is_empty() {
                    return Err(Error::Invalid(format!(
                        "--adopt-name {n:?}: applyset needs [RESOURCE[.GROUP]/]NAME"
                    )));
                }
                Target::ApplySet {
                    resource: resource.to_ascii_lowercase(),
                    group: group.to_owned(),
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                }
            }
            Tool::Kapp => {
                let (ns, app) = match name {
                    Some(n) => n.split_once('/').unwrap_or((namespace, n)),
                    None => (namespace, identity.app.as_str()),
                };
                Target::Kapp {
                    namespace: ns.to_owned(),
                    app: app.to_owned(),
                }
            }
        })
    }
}

/// fluxd's sync set name: base64url(sha256(URL + branch + paths)) (`makeGitConfigHash`).
pub fn flux1_sync_set(url: &str, branch: &str, paths: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(url.as_bytes());
    h.update(branch.as_bytes());
    for p in paths {
        h.update(p.as_bytes());
    }
    ownership::base64url(&h.finalize())
}

/// fluxd's `fluxcd.io/sync-gc-mark` of an object (`makeGCMark`): the resource id is
/// `namespace:kind/name`, `<cluster>` for objects without a namespace, the kind lowercased.
pub fn flux1_gc_mark(sync_set: &str, kind: &str, namespace: &str, name: &str) -> String {
    let ns = if namespace.is_empty() {
        "<cluster>"
    } else {
        namespace
    };
    let id = format!("{ns}:{}/{name}", kind.to_lowercase());
    let mut h = Sha256::new();
    h.update(sync_set.as_bytes());
    h.update(id.as_bytes());
    format!("sha256.{}", ownership::base64url(&h.finalize()))
}

/// How a live object shows it is the old set's.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mark {
    /// Every label has the value (`None`: the label is absent).
    Labels(Vec<(&'static str, Option<String>)>),
    /// fluxd's per-object mark.
    Flux1 { sync_set: String },
}

/// The resolved adoption: what to list and which listed objects are the old set's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `qbec app=shop env=prod`, for messages.
    pub describe: String,
    /// The label selector of the LISTs.
    pub selector: String,
    mark: Mark,
    /// Kinds the old tool's inventory names (listed besides the set's own).
    pub group_kinds: BTreeSet<GroupKind>,
    /// Namespaces the old tool's inventory names (for per-namespace fallbacks).
    pub namespaces: BTreeSet<String>,
    /// The old set's ApplySet id: its `part-of` does not make an object another set's.
    applyset_id: Option<String>,
}

fn meta<'a>(live: &'a Value, field: &str, key: &str) -> Option<&'a str> {
    live.get("metadata")?.get(field)?.get(key)?.as_str()
}

impl Rule {
    fn labels(describe: String, labels: Vec<(&'static str, Option<String>)>) -> Rule {
        let selector = labels
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => format!("!{k}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        Rule {
            describe,
            selector,
            mark: Mark::Labels(labels),
            group_kinds: BTreeSet::new(),
            namespaces: BTreeSet::new(),
            applyset_id: None,
        }
    }

    /// The rule of a target known by its labels alone; `None` for those whose inventory must
    /// be read first (ApplySet, kapp).
    pub fn of_labels(target: &Target) -> Option<Rule> {
        Some(match target {
            Target::Qbec { app, env, tag } => Rule::labels(
                match tag {
                    Some(t) => format!("qbec app={app} env={env} tag={t}"),
                    None => format!("qbec app={app} env={env}"),
                },
                vec![
                    (QBEC_APPLICATION, Some(app.clone())),
                    (QBEC_ENVIRONMENT, Some(env.clone())),
                    (QBEC_TAG, tag.clone()),
                ],
            ),
            Target::Flux { namespace, name } => Rule::labels(
                format!("Flux Kustomization {namespace}/{name}"),
                vec![
                    (FLUX_NAME, Some(name.clone())),
                    (FLUX_NAMESPACE, Some(namespace.clone())),
                ],
            ),
            Target::Flux1 { sync_set } => Rule {
                describe: format!("Flux v1 sync set {sync_set}"),
                selector: FLUX1_GC_MARK.to_owned(),
                mark: Mark::Flux1 {
                    sync_set: sync_set.clone(),
                },
                group_kinds: BTreeSet::new(),
                namespaces: BTreeSet::new(),
                applyset_id: None,
            },
            Target::ApplySet { .. } | Target::Kapp { .. } => return None,
        })
    }

    /// The rule of a live ApplySet parent whose id must be `id` (kubectl refuses a parent
    /// whose id label is not the one its reference implies; so does kgc).
    pub fn of_applyset_parent(parent: &Value, id: &str, describe: &str) -> Result<Rule, Error> {
        let refuse = |why: String| Error::Ownership(format!("--adopt applyset: {describe} {why}"));
        if meta(parent, "labels", LABEL_APPLYSET_ID) != Some(id) {
            return Err(refuse(format!(
                "does not carry {LABEL_APPLYSET_ID}={id}: it is not that ApplySet's parent"
            )));
        }
        if let Some(t) = meta(parent, "annotations", ownership::ANNOTATION_TOOLING)
            && t.starts_with("kgc/")
        {
            return Err(refuse(
                "is a kgc set's parent: its objects belong to that set (use --force-ownership to take single objects over)".into(),
            ));
        }
        let mut rule = Rule::labels(
            format!("ApplySet {describe}"),
            vec![(LABEL_PART_OF, Some(id.to_owned()))],
        );
        rule.applyset_id = Some(id.to_owned());
        if let Some(gks) = meta(parent, "annotations", ownership::ANNOTATION_GROUP_KINDS) {
            rule.group_kinds = gks.split(',').filter_map(GroupKind::parse).collect();
        }
        if let Some(nss) = meta(parent, "annotations", ownership::ANNOTATION_NAMESPACES) {
            rule.namespaces = nss
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
        }
        let ns = str_at(parent, "/metadata/namespace");
        if !ns.is_empty() {
            rule.namespaces.insert(ns.to_owned());
        }
        Ok(rule)
    }

    /// The rule of a kapp app's ConfigMap: the member label recorded in its `spec`, and the
    /// kinds kapp recorded as used.
    pub fn of_kapp_app(app: &Value, describe: &str) -> Result<Rule, Error> {
        let bad = |why: &str| Error::Invalid(format!("--adopt kapp: {describe}: {why}"));
        if meta(app, "labels", KAPP_IS_APP).is_none() {
            return Err(bad(&format!(
                "the ConfigMap is not labelled {KAPP_IS_APP}: not a kapp app"
            )));
        }
        let spec: Value = serde_json::from_str(str_at(app, "/data/spec"))
            .map_err(|e| bad(&format!("data.spec is not kapp's app metadata: {e}")))?;
        if str_at(&spec, "/labelKey") != KAPP_APP {
            return Err(bad(&format!("data.spec.labelKey is not {KAPP_APP}")));
        }
        let value = label_value("kapp's app label", str_at(&spec, "/labelValue"))
            .map_err(|_| bad("data.spec.labelValue is not a label value"))?;
        let mut rule = Rule::labels(
            format!("kapp app {describe}"),
            vec![(KAPP_APP, Some(value))],
        );
        // Go's schema.GroupKind has no JSON tags: `{"Group": …, "Kind": …}`.
        for gk in spec
            .get("usedGKs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |k: &str| {
                gk.get(k)
                    .or_else(|| gk.get(k.to_lowercase()))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            if !field("Kind").is_empty() {
                rule.group_kinds
                    .insert(GroupKind::new(field("Group"), field("Kind")));
            }
        }
        for ns in spec
            .pointer("/lastChange/namespaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            rule.namespaces.insert(ns.to_owned());
        }
        Ok(rule)
    }

    /// Whether the listed object `live` (canonical kind `gk`) is the old set's and may be
    /// adopted into the set `set_id`; `Err` says why not.
    pub fn selects(&self, live: &Value, gk: &GroupKind, set_id: &str) -> Result<(), &'static str> {
        let marked = match &self.mark {
            Mark::Labels(labels) => labels
                .iter()
                .all(|(k, v)| meta(live, "labels", k) == v.as_deref()),
            Mark::Flux1 { sync_set } => {
                meta(live, "labels", FLUX1_GC_MARK)
                    == Some(
                        flux1_gc_mark(
                            sync_set,
                            &gk.kind,
                            str_at(live, "/metadata/namespace"),
                            str_at(live, "/metadata/name"),
                        )
                        .as_str(),
                    )
            }
        };
        if !marked {
            return Err("not marked as the old set's (a copied or another set's mark)");
        }
        match meta(live, "labels", LABEL_PART_OF) {
            Some(id) if id == set_id => return Err("already the set's"),
            Some(id) if Some(id) != self.applyset_id.as_deref() => {
                return Err("a member of another set");
            }
            _ => {}
        }
        if self.applyset_id.is_none() && meta(live, "labels", LABEL_APP).is_some() {
            return Err("carries another kgc set's labels");
        }
        if meta(live, "labels", LABEL_APPLYSET_ID).is_some() {
            return Err("an ApplySet parent");
        }
        if meta(live, "labels", KAPP_IS_APP).is_some()
            || meta(live, "labels", KAPP_IS_APP_CHANGE).is_some()
        {
            return Err("kapp's own record");
        }
        if ownership::controller_owned(live) {
            return Err("owned by a controller");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SET: &str = "applyset-kgc-v1";

    fn id(tag: Option<&str>) -> Identity {
        Identity::new("shop", "prod", tag).unwrap()
    }

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    fn rule(tool: Tool, name: Option<&str>, tag: Option<&str>) -> Rule {
        let adopt = Adopt {
            tool,
            name: name.map(str::to_owned),
        };
        Rule::of_labels(&adopt.target(&id(tag), "ns").unwrap()).unwrap()
    }

    fn cm() -> GroupKind {
        GroupKind::new("", "ConfigMap")
    }

    #[test]
    fn qbec_adopts_its_app_and_environment_and_tag_only() {
        let r = rule(Tool::Qbec, None, None);
        assert_eq!(
            r.selector,
            "qbec.io/application=shop,qbec.io/environment=prod,!qbec.io/tag"
        );
        let mine = obj(json!({QBEC_APPLICATION: "shop", QBEC_ENVIRONMENT: "prod"}));
        assert_eq!(r.selects(&mine, &cm(), SET), Ok(()));
        for other in [
            json!({QBEC_APPLICATION: "shop", QBEC_ENVIRONMENT: "dev"}),
            json!({QBEC_APPLICATION: "cart", QBEC_ENVIRONMENT: "prod"}),
            json!({QBEC_APPLICATION: "shop", QBEC_ENVIRONMENT: "prod", QBEC_TAG: "pr-1"}),
            json!({}),
        ] {
            assert!(
                r.selects(&obj(other.clone()), &cm(), SET).is_err(),
                "{other}"
            );
        }
        // A tagged run adopts that tag's objects only; names may differ from kgc's.
        let r = rule(Tool::Qbec, Some("old-shop/production"), Some("pr-1"));
        let tagged = obj(
            json!({QBEC_APPLICATION: "old-shop", QBEC_ENVIRONMENT: "production", QBEC_TAG: "pr-1"}),
        );
        assert_eq!(r.selects(&tagged, &cm(), SET), Ok(()));
        assert!(r.selects(&mine, &cm(), SET).is_err());
    }

    #[test]
    fn controller_children_other_sets_and_kgc_members_are_never_adopted() {
        let r = rule(Tool::Qbec, None, None);
        let mut child = obj(json!({QBEC_APPLICATION: "shop", QBEC_ENVIRONMENT: "prod"}));
        child["metadata"]["ownerReferences"] = json!([{"controller": true, "uid": "x"}]);
        assert_eq!(r.selects(&child, &cm(), SET), Err("owned by a controller"));
        let mut ours = obj(json!({QBEC_APPLICATION: "shop", QBEC_ENVIRONMENT: "prod"}));
        ours["metadata"]["labels"][LABEL_PART_OF] = json!(SET);
        assert_eq!(r.selects(&ours, &cm(), SET), Err("already the set's"));
        ours["metadata"]["labels"][LABEL_PART_OF] = json!("applyset-other-v1");
        assert_eq!(r.selects(&ours, &cm(), SET), Err("a member of another set"));
    }

    #[test]
    fn flux_adopts_its_kustomization_only() {
        let adopt = Adopt {
            tool: Tool::Flux,
            name: None,
        };
        assert!(
            adopt.target(&id(None), "ns").is_err(),
            "the name is required"
        );
        let r = rule(Tool::Flux, Some("flux-system/apps"), None);
        let mine = obj(json!({FLUX_NAME: "apps", FLUX_NAMESPACE: "flux-system"}));
        assert_eq!(r.selects(&mine, &cm(), SET), Ok(()));
        let other = obj(json!({FLUX_NAME: "apps", FLUX_NAMESPACE: "team-b"}));
        assert!(r.selects(&other, &cm(), SET).is_err());
    }

    #[test]
    fn flux1_recomputes_the_per_object_mark() {
        let r = rule(
            Tool::Flux1,
            Some("git@example.com:org/repo#master#deploy,base"),
            None,
        );
        let set = flux1_sync_set("git@example.com:org/repo", "master", &["deploy", "base"]);
        let mark = flux1_gc_mark(&set, "ConfigMap", "ns", "a");
        assert!(mark.starts_with("sha256.") && !mark.contains(['=', '+', '/']));
        let mine = obj(json!({FLUX1_GC_MARK: mark}));
        assert_eq!(r.selects(&mine, &cm(), SET), Ok(()));
        // The same label copied onto another object, or another repository's mark.
        let mut copy = mine.clone();
        copy["metadata"]["name"] = json!("b");
        assert!(r.selects(&copy, &cm(), SET).is_err());
        let other = flux1_gc_mark(&flux1_sync_set("x", "master", &[]), "ConfigMap", "ns", "a");
        assert!(
            r.selects(&obj(json!({FLUX1_GC_MARK: other})), &cm(), SET)
                .is_err()
        );
        // Cluster-scoped objects use `<cluster>`.
        assert_ne!(
            flux1_gc_mark(&set, "Namespace", "", "a"),
            flux1_gc_mark(&set, "Namespace", "x", "a")
        );
    }

    #[test]
    fn applyset_reads_its_parent_and_adopts_its_members() {
        let set = ownership::applyset_id("old", "ns", "ConfigMap", "");
        let parent = json!({"metadata": {"name": "old", "namespace": "ns",
        "labels": {LABEL_APPLYSET_ID: set},
        "annotations": {
            ownership::ANNOTATION_TOOLING: "kubectl/v1.32.0",
            ownership::ANNOTATION_GROUP_KINDS: "ConfigMap,Deployment.apps",
            ownership::ANNOTATION_NAMESPACES: "extra",
        }}});
        let r = Rule::of_applyset_parent(&parent, &set, "configmaps/old").unwrap();
        assert_eq!(r.selector, format!("{LABEL_PART_OF}={set}"));
        assert_eq!(r.group_kinds.len(), 2);
        assert_eq!(r.namespaces, ["extra".to_owned(), "ns".to_owned()].into());
        assert_eq!(
            r.selects(&obj(json!({LABEL_PART_OF: set})), &cm(), SET),
            Ok(())
        );
        let other = obj(json!({LABEL_PART_OF: "applyset-x-v1"}));
        assert!(r.selects(&other, &cm(), SET).is_err());
        // The parent itself, and a parent that is not the one named, or kgc's.
        assert!(
            r.selects(
                &obj(json!({LABEL_PART_OF: set, LABEL_APPLYSET_ID: set})),
                &cm(),
                SET
            )
            .is_err()
        );
        assert!(Rule::of_applyset_parent(&parent, "applyset-y-v1", "x").is_err());
        let mut kgc = parent.clone();
        kgc["metadata"]["annotations"][ownership::ANNOTATION_TOOLING] = json!("kgc/v1");
        assert!(Rule::of_applyset_parent(&kgc, &set, "x").is_err());
        let adopt = Adopt {
            tool: Tool::Applyset,
            name: Some("configmaps/old".into()),
        };
        assert_eq!(
            adopt.target(&id(None), "ns").unwrap(),
            Target::ApplySet {
                resource: "configmaps".into(),
                group: String::new(),
                namespace: "ns".into(),
                name: "old".into()
            }
        );
    }

    #[test]
    fn kapp_reads_the_label_from_its_app_configmap() {
        let app = json!({"metadata": {"name": "shop", "labels": {KAPP_IS_APP: ""}},
            "data": {"spec": r#"{"labelKey":"kapp.k14s.io/app","labelValue":"1641592268838201000","usedGKs":[{"Group":"apps","Kind":"Deployment"}],"lastChange":{"namespaces":["ns"]}}"#}});
        let r = Rule::of_kapp_app(&app, "ns/shop").unwrap();
        assert_eq!(r.selector, "kapp.k14s.io/app=1641592268838201000");
        assert_eq!(r.group_kinds, [GroupKind::new("apps", "Deployment")].into());
        let mine = obj(json!({KAPP_APP: "1641592268838201000"}));
        assert_eq!(r.selects(&mine, &cm(), SET), Ok(()));
        assert!(r.selects(&obj(json!({KAPP_APP: "1"})), &cm(), SET).is_err());
        // kapp's own records are never members.
        let record = obj(json!({KAPP_APP: "1641592268838201000", KAPP_IS_APP_CHANGE: ""}));
        assert!(r.selects(&record, &cm(), SET).is_err());
        let mut plain = app.clone();
        plain["metadata"]["labels"] = json!({});
        assert!(Rule::of_kapp_app(&plain, "ns/shop").is_err());
    }

    #[test]
    fn bad_names_are_refused() {
        for (tool, name) in [
            (Tool::Qbec, "shop,x=y"),
            (Tool::Flux, "apps"),
            (Tool::Flux1, "url-only"),
            (Tool::Applyset, "configmaps/"),
        ] {
            let a = Adopt {
                tool,
                name: Some(name.into()),
            };
            assert!(a.target(&id(None), "ns").is_err(), "{tool} {name}");
        }
        assert!("helm".parse::<Tool>().is_err());
    }
}
