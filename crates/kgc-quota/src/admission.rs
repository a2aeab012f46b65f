//! The admission check, kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/admission/
//! plugin/resourcequota/controller.go` `CheckRequest`: which quotas a write concerns, whether it
//! fits each, and the usage each quota records once it is admitted.
//!
//! A quota concerns an object when its `status.hard` names something the object's evaluator
//! charges and the object is in its scopes; a quota whose status was never computed (no
//! `status.hard`) concerns nothing yet, as upstream, and one whose `status.used` lacks a name
//! of its `status.hard` refuses (`status unknown for quota`).

use jiff::Timestamp;
use serde_json::Value;

use crate::evaluator::{Evaluator, Operation};
use crate::resources::{self, ResourceList};
use crate::scope::{self, Selector};

/// Why a quota refuses a write; the text is upstream's, which the API server words as
/// `<resource> "<name>" is forbidden: <refusal>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("exceeded quota: {quota}, requested: {requested}, used: {used}, limited: {limited}")]
    Exceeded {
        quota: String,
        requested: String,
        used: String,
        limited: String,
    },
    /// The object lacks what the quota requires it to declare (`Constraints`).
    #[error("failed quota: {quota}: {reason}")]
    Constraints { quota: String, reason: String },
    #[error("status unknown for quota: {quota}, resources: {resources}")]
    StatusUnknown { quota: String, resources: String },
    #[error("quota usage is negative for resource(s): {0}")]
    NegativeUsage(String),
}

/// A write to judge.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub evaluator: &'a Evaluator,
    pub operation: Operation,
    /// The object as it will be stored.
    pub object: &'a Value,
    /// The stored object, on an update.
    pub old: Option<&'a Value>,
    pub now: Timestamp,
}

/// A quota as the admission judges it: its name, `status.hard`, `status.used` and scopes,
/// read once from its JSON. A quota judges every write to its namespace, and reading it again
/// for each cost more than the judging.
#[derive(Debug, Clone, PartialEq)]
pub struct Quota {
    pub name: String,
    pub hard: ResourceList,
    pub used: ResourceList,
    pub selectors: Vec<Selector>,
}

impl Quota {
    /// Reads a ResourceQuota's JSON.
    pub fn parse(quota: &Value) -> Self {
        let status = &quota["status"];
        Quota {
            name: quota["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            hard: resources::from_json(&status["hard"]),
            used: resources::from_json(&status["used"]),
            selectors: scope::selectors(quota),
        }
    }
}

impl Request<'_> {
    /// The usage the write adds: the object's, less the stored one's on an update (never
    /// below zero), zeros removed; an error when the object's own usage is negative.
    pub fn delta(&self) -> Result<ResourceList, Refusal> {
        let usage = self.evaluator.usage(self.object, self.now);
        let negative = resources::negative(&usage);
        if !negative.is_empty() {
            return Err(Refusal::NegativeUsage(negative.join(",")));
        }
        let delta = match self.old {
            // A stored object has a resourceVersion; without one, this is a create on
            // update and is charged in full.
            Some(old)
                if self.operation == Operation::Update
                    && old["metadata"]["resourceVersion"]
                        .as_str()
                        .is_some_and(|rv| !rv.is_empty()) =>
            {
                resources::subtract_non_negative(&usage, &self.evaluator.usage(old, self.now))
            }
            _ => usage,
        };
        Ok(resources::remove_zeros(delta))
    }
}

/// Whether a write concerns a quota, the first half of upstream's `CheckRequest`: the quota
/// limits something the write's evaluator charges and the object is in its scopes. Refused
/// when the object lacks what the quota requires it to declare, or when the quota's usage of
/// a name it limits was never computed. The second half charges the request's
/// [`Request::delta`], computed once for all the quotas concerned, with [`charge_to`].
pub fn concerns(quota: &Quota, req: &Request<'_>) -> Result<bool, Refusal> {
    if !req.evaluator.handles(req.operation) || !req.evaluator.matches(quota, req.object) {
        return Ok(false);
    }
    let restricted = req.evaluator.matching_resources(quota.hard.keys());
    req.evaluator
        .constraints(&restricted, req.object)
        .map_err(|reason| Refusal::Constraints {
            quota: quota.name.clone(),
            reason,
        })?;
    if restricted.iter().any(|r| !quota.used.contains_key(r)) {
        let mut all: Vec<&str> = restricted.iter().map(String::as_str).collect();
        all.sort_unstable();
        return Err(Refusal::StatusUnknown {
            quota: quota.name.clone(),
            resources: all.join(","),
        });
    }
    Ok(true)
}

/// The `status.used` of `quota` once `delta` (a [`Request::delta`] whose request the quota
/// [`concerns`]) is added: `None` when the quota limits none of it. Apart
/// from `check` so that a batch of admitted writes charges one quota version in turn, as
/// upstream's quota evaluator charges its batch (`checkQuotas`).
pub fn charge(quota: &Value, delta: &ResourceList) -> Result<Option<ResourceList>, Refusal> {
    let name = quota["metadata"]["name"].as_str().unwrap_or_default();
    let status = &quota["status"];
    let hard = resources::from_json(&status["hard"]);
    let used = resources::from_json(&status["used"]);
    charge_to(name, &hard, &used, delta)
}

/// [`charge`] to quota `name` whose `status.hard` and `status.used` are already read (a
/// [`Quota`]): what the admission checks under the store's lock.
pub fn charge_to(
    name: &str,
    hard: &ResourceList,
    used: &ResourceList,
    delta: &ResourceList,
) -> Result<Option<ResourceList>, Refusal> {
    let requested = resources::mask(delta, hard.keys().map(String::as_str));
    if requested.is_empty() {
        return Ok(None);
    }
    let new_used = resources::add(used, &requested);
    let masked = resources::mask(&new_used, requested.keys().map(String::as_str));
    let exceeded = resources::exceeded(&masked, hard);
    if !exceeded.is_empty() {
        let names = || exceeded.iter().map(String::as_str);
        return Err(Refusal::Exceeded {
            quota: name.to_owned(),
            requested: resources::pretty(&resources::mask(&requested, names())),
            used: resources::pretty(&resources::mask(used, names())),
            limited: resources::pretty(&resources::mask(hard, names())),
        });
    }
    Ok(Some(new_used))
}

/// Gives back what [`charge`] charged to a quota's `status.used` when the write it admitted
/// was not stored after all (kgc's addition: upstream leaves the charge until the
/// controller's next recalculation). Names the quota no longer limits are left alone; usage
/// never goes below zero.
pub fn refund(quota: &Value, charged: &ResourceList) -> ResourceList {
    let used = resources::from_json(&quota["status"]["used"]);
    let back = resources::mask(charged, used.keys().map(String::as_str));
    resources::subtract_non_negative(&used, &back)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "q"}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used}})
    }

    fn pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
            "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}}}]}})
    }

    /// Upstream's `CheckRequest` for one quota: the new `status.used`, `None` when the
    /// quota is not concerned or limits none of the write.
    fn check(q: &Value, r: &Request<'_>) -> Result<Option<ResourceList>, String> {
        let q = Quota::parse(q);
        let charged = || {
            if !concerns(&q, r)? {
                return Ok(None);
            }
            charge_to(&q.name, &q.hard, &q.used, &r.delta()?)
        };
        charged().map_err(|e: Refusal| e.to_string())
    }

    fn create<'a>(e: &'a Evaluator, obj: &'a Value) -> Request<'a> {
        Request {
            evaluator: e,
            operation: Operation::Create,
            object: obj,
            old: None,
            now: now(),
        }
    }

    #[test]
    fn the_twenty_first_pod_is_refused_with_upstreams_message() {
        let p = pod();
        let r = create(&Evaluator::Pods, &p);
        let full = quota(json!({"pods": "20"}), json!({"pods": "20"}));
        assert_eq!(
            check(&full, &r),
            Err("exceeded quota: q, requested: pods=1, used: pods=20, limited: pods=20".into())
        );
        let room = quota(
            json!({"pods": "20", "requests.cpu": "2"}),
            json!({"pods": "3", "requests.cpu": "1"}),
        );
        let Ok(Some(used)) = check(&room, &r) else {
            panic!("admitted with a charge");
        };
        assert_eq!(resources::pretty(&used), "pods=4,requests.cpu=1500m");
        assert_eq!(
            resources::pretty(&refund(
                &json!({"status": {"used": resources::to_json(&used)}}),
                &resources::from_json(
                    &json!({"pods": "1", "requests.cpu": "500m", "limits.cpu": "1"})
                )
            )),
            "pods=3,requests.cpu=1"
        );
    }

    #[test]
    fn only_the_exceeded_names_are_printed() {
        let p = pod();
        let q = quota(
            json!({"pods": "20", "limits.cpu": "1500m"}),
            json!({"pods": "1", "limits.cpu": "1"}),
        );
        assert_eq!(
            check(&q, &create(&Evaluator::Pods, &p)),
            Err("exceeded quota: q, requested: limits.cpu=1, used: limits.cpu=1, limited: limits.cpu=1500m".into())
        );
    }

    #[test]
    fn an_uncomputed_quota_concerns_nothing_and_a_partial_one_refuses() {
        let p = pod();
        let r = create(&Evaluator::Pods, &p);
        let fresh = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}});
        assert_eq!(check(&fresh, &r), Ok(None));
        let partial = quota(
            json!({"pods": "1", "requests.cpu": "1"}),
            json!({"pods": "0"}),
        );
        assert_eq!(
            check(&partial, &r),
            Err("status unknown for quota: q, resources: pods,requests.cpu".into())
        );
    }

    #[test]
    fn a_quota_on_memory_needs_the_containers_to_declare_it() {
        let p = pod();
        let q = quota(
            json!({"requests.memory": "1Gi"}),
            json!({"requests.memory": "0"}),
        );
        assert_eq!(
            check(&q, &create(&Evaluator::Pods, &p)),
            Err("failed quota: q: must specify requests.memory for: c".into())
        );
    }

    #[test]
    fn a_claim_resize_is_charged_its_growth() {
        let e = Evaluator::PersistentVolumeClaims;
        let claim = |size: &str| {
            json!({"metadata": {"name": "c", "resourceVersion": "7"},
                "spec": {"resources": {"requests": {"storage": size}}}})
        };
        let (old, new) = (claim("1Gi"), claim("3Gi"));
        let q = quota(
            json!({"requests.storage": "4Gi", "persistentvolumeclaims": "5"}),
            json!({"requests.storage": "2Gi", "persistentvolumeclaims": "2"}),
        );
        let req = Request {
            evaluator: &e,
            operation: Operation::Update,
            object: &new,
            old: Some(&old),
            now: now(),
        };
        let Ok(Some(used)) = check(&q, &req) else {
            panic!("the resize fits");
        };
        assert_eq!(
            resources::pretty(&used),
            "persistentvolumeclaims=2,requests.storage=4Gi"
        );
        let shrink = Request {
            object: &old,
            old: Some(&new),
            ..req
        };
        assert_eq!(check(&q, &shrink), Ok(None));
    }

    #[test]
    fn object_counts_of_any_resource() {
        let e = Evaluator::for_resource("apps", "deployments").unwrap();
        let d = json!({"metadata": {"name": "d"}});
        let q = quota(
            json!({"count/deployments.apps": "1"}),
            json!({"count/deployments.apps": "1"}),
        );
        assert_eq!(
            check(&q, &create(&e, &d)),
            Err("exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1".into())
        );
    }
}
