//! Drift: whether the cluster changed since a reviewed plan (`kgc plan` then `--plan`).

use std::collections::HashMap;

use crate::Error;
use crate::desired::ObjectKey;
use crate::plan::Candidate;

use super::{Change, Prepared};

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
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::desired::Desired;
    use crate::executor::Action;
    use crate::gvk::GroupKind;
    use crate::inventory::Inventory;
    use crate::listing::Resource;
    use crate::ownership::Identity;
    use crate::plan::PrunePlan;

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
            adoption: None,
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
}
