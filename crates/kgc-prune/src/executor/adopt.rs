//! Finding the objects to adopt on the cluster: the old tool's inventory is read (an ApplySet
//! parent, a kapp app's ConfigMap), then one label-selected LIST per kind of the scope and of
//! that inventory, filtered by [`Rule::selects`].

use std::collections::{BTreeSet, HashSet};

use crate::Error;
use crate::adopt::{Adopt, KAPP_APP_SUFFIX, Rule, Target};
use crate::desired::ObjectKey;
use crate::gvk::GroupKind;
use crate::inventory::Inventory;
use crate::listing::{self, Listed, Resource, Undetermined};
use crate::ownership::{self, Identity};
use crate::str_at;

use super::client::ApiServer;

/// The old set's objects, found.
pub(super) struct Found {
    pub(super) describe: String,
    pub(super) listed: Vec<Listed>,
    pub(super) undetermined: Vec<Undetermined>,
    pub(super) uids: HashSet<String>,
    pub(super) keys: Vec<ObjectKey>,
}

fn configmaps() -> Resource {
    Resource {
        gk: GroupKind::new("", "ConfigMap"),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// Reads the old tool's inventory, where it has one.
async fn rule(cluster: &ApiServer, target: &Target) -> Result<Rule, Error> {
    match target {
        Target::ApplySet {
            resource,
            group,
            namespace,
            name,
        } => {
            let r = cluster
                .catalog
                .preferred
                .values()
                .find(|r| {
                    r.gk.group == *group
                        && (r.plural == *resource || r.gk.kind.to_ascii_lowercase() == *resource)
                })
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "--adopt applyset: the server serves no resource {resource:?} in group {group:?}"
                    ))
                })?
                .clone();
            let ns = if r.namespaced { namespace.as_str() } else { "" };
            let describe = if ns.is_empty() {
                format!("{}/{name}", r.plural)
            } else {
                format!("{}/{name} in {ns}", r.plural)
            };
            let parent = cluster.get(&r, ns, name).await?.ok_or_else(|| {
                Error::Invalid(format!(
                    "--adopt applyset: the ApplySet parent {describe} does not exist"
                ))
            })?;
            let id = ownership::applyset_id(name, ns, &r.gk.kind, &r.gk.group);
            Rule::of_applyset_parent(&parent, &id, &describe)
        }
        Target::Kapp { namespace, app } => {
            let cm = configmaps();
            let found = match cluster.get(&cm, namespace, app).await? {
                Some(c) => Some(c),
                None => {
                    cluster
                        .get(&cm, namespace, &format!("{app}{KAPP_APP_SUFFIX}"))
                        .await?
                }
            };
            let describe = format!("{namespace}/{app}");
            let app = found.ok_or_else(|| {
                Error::Invalid(format!(
                    "--adopt kapp: there is no kapp app {app:?} in namespace {namespace} (no ConfigMap {app} or {app}{KAPP_APP_SUFFIX})"
                ))
            })?;
            Rule::of_kapp_app(&app, &describe)
        }
        other => Rule::of_labels(other)
            .ok_or_else(|| Error::Invalid(format!("--adopt: {other:?} has no label rule"))),
    }
}

/// Lists the old set's objects over the set's `scope` and the old tool's inventory.
pub(super) async fn find(
    cluster: &ApiServer,
    adopt: &Adopt,
    identity: &Identity,
    namespace: &str,
    scope: &Inventory,
    set_id: &str,
) -> Result<Found, Error> {
    let target = adopt.target(identity, namespace)?;
    let rule = rule(cluster, &target).await?;
    let group_kinds: BTreeSet<&GroupKind> =
        scope.group_kinds.iter().chain(&rule.group_kinds).collect();
    let namespaces: BTreeSet<String> = scope
        .namespaces
        .iter()
        .chain(&rule.namespaces)
        .cloned()
        .collect();
    let resources: Vec<Resource> = group_kinds
        .into_iter()
        .filter_map(|gk| cluster.catalog().preferred(gk).cloned())
        .collect();
    let (mut listed, undetermined) =
        listing::list_scope(cluster, &resources, &namespaces, &rule.selector).await;
    let mut uids = HashSet::new();
    let mut keys = Vec::new();
    for l in &mut listed {
        let gk = l.resource.gk.clone();
        l.objects.retain(|o| {
            let key = ObjectKey {
                gk: gk.clone(),
                namespace: str_at(o, "/metadata/namespace").to_owned(),
                name: str_at(o, "/metadata/name").to_owned(),
            };
            match rule.selects(o, &gk, set_id) {
                Ok(()) => {
                    uids.insert(str_at(o, "/metadata/uid").to_owned());
                    keys.push(key);
                    true
                }
                Err(why) => {
                    tracing::debug!(%key, "not adopted from {}: {why}", rule.describe);
                    false
                }
            }
        });
    }
    keys.sort();
    Ok(Found {
        describe: rule.describe,
        listed,
        undetermined,
        uids,
        keys,
    })
}
