//! The ResourceQuota admission plugin (kubernetes/kubernetes `staging/src/k8s.io/apiserver/pkg/
//! admission/plugin/resourcequota/admission.go` and `controller.go`), on by default as in
//! kube-apiserver, and last of the admission sequence.
//!
//! A write to a namespace is judged against each of the namespace's quotas (the logic is
//! kgc-quota's): refused with upstream's 403 (`pods "web" is forbidden: exceeded quota: q,
//! requested: pods=1, used: pods=20, limited: pods=20`), or admitted after its usage is charged
//! to every quota it concerns, **before** the object is stored. The charge is a read, check and
//! write of the quota's `status.used` in one step of the store (a guaranteed update: the write
//! applies to exactly the version it checked, as upstream's update with a resourceVersion
//! precondition retried on conflict), so concurrent creates can never together exceed a quota;
//! the charges waiting for one quota are written together (see [`crate::resourcequota_batch`]).
//!
//! Better than upstream: a charged write that the store then refuses (validation, a name taken)
//! gives its charge back at once, where upstream leaves the quota over-charged until the
//! resource-quota controller's next recalculation. A dry run is judged but charges nothing.
//!
//! Creates are judged for every resource but the ignored ones (Events, reviews); updates only
//! for PersistentVolumeClaims (a resize) and Services (a type change), as upstream's evaluators
//! handle them. Subresources and cluster-scoped objects are not judged.

use kgc_meta::{GroupResource, ResourceInfo, Status};
use kgc_quota::resources::ResourceList;
use kgc_quota::{Evaluator, Operation, Request};
use serde_json::Value;

use crate::body::ApiError;
use crate::request::RequestInfo;
use crate::resourcequota_batch;

/// The plugin's name, as `--disable-admission-plugins` takes it.
pub const PLUGIN: &str = "ResourceQuota";

fn quotas_gr() -> GroupResource {
    GroupResource::new("", "resourcequotas")
}

/// What a write charged to its namespace's quotas, given back by [`crate::ApiServer::settle_quota`]
/// if the write then fails. On an update that charged something it also remembers the stored
/// version the charge was computed against: the write must still find it
/// ([`Charge::still_current`]).
#[derive(Debug, Default)]
#[must_use = "a charge is settled once the write is done"]
pub(crate) struct Charge {
    namespace: String,
    charged: Vec<(String, ResourceList)>,
    against: Option<String>,
}

impl Charge {
    /// On an update, a 409 when the object changed since its usage was charged (the client
    /// retries, and the next attempt is charged against the new version).
    pub(crate) fn still_current(&self, info: &ResourceInfo, current: &Value) -> Result<(), Status> {
        match &self.against {
            Some(rv) if current["metadata"]["resourceVersion"].as_str() != Some(rv) => {
                let name = current["metadata"]["name"].as_str().unwrap_or_default();
                Err(Status::stale(&info.group_resource(), name))
            }
            _ => Ok(()),
        }
    }
}

/// How upstream names the object in a refusal (`admission.extractResourceName`): its name, its
/// `generateName` (no name is generated yet), else `Unknown`.
fn display_name(obj: &Value) -> &str {
    let meta = &obj["metadata"];
    [&meta["name"], &meta["generateName"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown")
}

impl crate::ApiServer {
    /// Turns the ResourceQuota admission plugin off.
    pub fn without_resource_quota_admission(mut self) -> Self {
        self.resource_quota_admission = false;
        self
    }

    /// Judges a create of `obj` against the namespace's quotas and charges it.
    pub(crate) async fn charge_quota_create(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &Value,
        dry_run: bool,
    ) -> Result<Charge, ApiError> {
        self.charge_quota(info, req, obj, None, dry_run).await
    }

    /// Judges an update against the namespace's quotas and charges what it adds: `new` makes
    /// the updated object from the stored one (a PUT body, a patch applied to a copy). Only
    /// claims and Services are charged on update; for other resources `new` is not called.
    pub(crate) async fn charge_quota_update(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        dry_run: bool,
        new: impl FnOnce(Value) -> Result<Value, Status>,
    ) -> Result<Charge, ApiError> {
        let Some(ns) = self.quota_namespace(info, req, Operation::Update) else {
            return Ok(Charge::default());
        };
        let name = req.name.as_deref().unwrap_or_default();
        let Some(stored) = self.store.get(&info.group_resource(), ns, name) else {
            return Ok(Charge::default());
        };
        let old = stored.value();
        let updated = new(old.clone())?;
        let mut charge = self
            .charge_quota(info, req, &updated, Some(&old), dry_run)
            .await?;
        if !charge.charged.is_empty() {
            charge.against = Some(stored.resource_version.to_string());
        }
        Ok(charge)
    }

    /// Gives a charge back when the write failed; passes the write's outcome through.
    pub(crate) async fn settle_quota<T, E>(
        &self,
        charge: Charge,
        written: Result<T, E>,
    ) -> Result<T, E> {
        if written.is_ok() || charge.charged.is_empty() {
            return written;
        }
        let Ok(info) = self.quota_info() else {
            return written;
        };
        for (quota, charged) in &charge.charged {
            let refunded =
                resourcequota_batch::refund(&self.store, &info, &charge.namespace, quota, charged)
                    .await;
            if let Err(e) = refunded {
                // The controller's next recalculation corrects it, as upstream relies on.
                tracing::warn!(quota, namespace = charge.namespace, error = %e, "giving back a quota charge");
            }
        }
        written
    }

    /// The namespace whose quotas judge this request, when any do.
    fn quota_namespace<'r>(
        &self,
        info: &ResourceInfo,
        req: &'r RequestInfo,
        op: Operation,
    ) -> Option<&'r str> {
        if !self.resource_quota_admission || req.subresource.is_some() {
            return None;
        }
        let ns = req.namespace.as_deref().filter(|n| !n.is_empty())?;
        Evaluator::for_resource(&info.group, &info.plural)
            .is_some_and(|e| e.handles(op))
            .then_some(ns)
    }

    fn quota_info(&self) -> Result<std::sync::Arc<ResourceInfo>, Status> {
        self.store
            .catalog()
            .get_group_resource(&quotas_gr())
            .cloned()
            .ok_or_else(|| Status::internal("resourcequotas is not served"))
    }

    async fn charge_quota(
        &self,
        info: &ResourceInfo,
        req: &RequestInfo,
        obj: &Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Charge, ApiError> {
        let op = if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let Some(ns) = self.quota_namespace(info, req, op) else {
            return Ok(Charge::default());
        };
        let gr = quotas_gr();
        let quotas = self
            .store
            .list(
                &gr,
                &kgc_store::ListOptions {
                    namespace: Some(ns.to_owned()),
                    ..Default::default()
                },
            )
            .map_err(|e| Status::internal(format!("listing ResourceQuotas: {e}")))?;
        if quotas.items.is_empty() {
            return Ok(Charge::default());
        }
        let Some(evaluator) = Evaluator::for_resource(&info.group, &info.plural) else {
            return Ok(Charge::default());
        };
        let request = Request {
            evaluator: &evaluator,
            operation: op,
            object: obj,
            old,
            now: self.store.clock().now(),
        };
        let refuse = |r: kgc_quota::Refusal| {
            Status::forbidden(&info.group_resource(), display_name(obj), &r.to_string())
        };
        // Every quota is judged before any is charged, so a refusal charges nothing; the
        // write's usage is computed once, for all the quotas it concerns (upstream's
        // `CheckRequest`).
        let mut concerned = Vec::new();
        for q in self.quota_views.read(ns, &quotas.items) {
            if kgc_quota::concerns(&q.quota, &request).map_err(refuse)? {
                concerned.push(q);
            }
        }
        let mut charge = Charge {
            namespace: ns.to_owned(),
            ..Charge::default()
        };
        if dry_run || concerned.is_empty() {
            return Ok(charge);
        }
        let quota_info = self.quota_info()?;
        let delta = request.delta().map_err(refuse)?;
        for quota in concerned {
            let charged = self
                .quota_batches
                .charge(&self.store, &quota_info, &quota, delta.clone())
                .await;
            match charged {
                Ok(Ok(charged)) => charge
                    .charged
                    .extend(charged.map(|c| (quota.quota.name.clone(), c))),
                // Deleted meanwhile: it limits nothing any more.
                Err(s) if s.is(kgc_meta::Reason::NotFound) => {}
                Ok(Err(refusal)) => {
                    let refused = Err::<Charge, _>(ApiError(refuse(refusal)));
                    return self.settle_quota(charge, refused).await;
                }
                Err(s) => {
                    return self
                        .settle_quota(charge, Err::<Charge, _>(ApiError(s)))
                        .await;
                }
            }
        }
        Ok(charge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusals_name_the_object_as_upstream() {
        assert_eq!(display_name(&json!({"metadata": {"name": "web"}})), "web");
        assert_eq!(
            display_name(&json!({"metadata": {"generateName": "web-"}})),
            "web-"
        );
        assert_eq!(display_name(&json!({"metadata": {}})), "Unknown");
    }
}
